//! The authorization matrix: every role (and no one) against every route, pages and API.
//! Each role gets its own fresh demo database so successful writes do not interfere.

use axum::http::StatusCode;
use serde_json::json;

use crate::support::{TestApp, demo_password};

const ROLES: [&str; 5] = ["anonymous", "researcher", "lead", "finance", "admin"];

/// Ids the routes refer to, looked up by name.
struct Ids {
    fm: i64,
    pretraining: i64,
    ar: i64,
    weather: i64,
    carbon: i64,
    own_project: i64,
    cluster: i64,
    node: i64,
    researcher: i64,
    /// An account no role signs in as, to disable and enable.
    spare: i64,
    /// A use case of Pretraining with the demo researcher's first project linked.
    use_case: i64,
    /// A use case of Climate, outside the demo lead's subtree.
    other_use_case: i64,
    /// Last month as `YYYY-MM` (tests run in UTC).
    last_month: String,
}

/// Registers two use cases straight in the database (setup, not under test here).
async fn seed_use_case(app: &TestApp, name: &str, owner: &str, project: Option<i64>) -> i64 {
    let owner = app.node_id(owner).await;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO ai_use_cases (name, owner_node_id, bag, allowed_data, ai_action, human_review, monthly_limit_minor, metric, stop_rule) \
         VALUES ($1, $2, 'team', '', '', '', 10000, 'a metric', '') RETURNING id",
    )
    .bind(name)
    .bind(owner)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    if let Some(p) = project {
        sqlx::query("INSERT INTO ai_use_case_projects (use_case_id, project_id) VALUES ($1, $2)")
            .bind(id)
            .bind(p)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    id
}

async fn ids(app: &TestApp) -> Ids {
    let q = |sql: &'static str| async move {
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    Ids {
        fm: app.node_id("Foundation Models").await,
        pretraining: app.node_id("Pretraining").await,
        ar: app.node_id("Applied Research").await,
        weather: app.node_id("ar-weather").await,
        carbon: app.node_id("ar-carbon").await,
        own_project: q("SELECT min(project_id) FROM project_members").await,
        cluster: q("SELECT id FROM clusters WHERE name = 'b300-lab'").await,
        node: q("SELECT min(id) FROM nodes").await,
        researcher: q("SELECT id FROM users WHERE name = 'demo-researcher'").await,
        spare: q("INSERT INTO users (name) VALUES ('spare-account') RETURNING id").await,
        use_case: seed_use_case(
            app,
            "Seeded triage",
            "Pretraining",
            Some(q("SELECT min(project_id) FROM project_members").await),
        )
        .await,
        other_use_case: seed_use_case(app, "Seeded weather", "Climate", None).await,
        last_month: jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .first_of_month()
            .unwrap()
            .yesterday()
            .unwrap()
            .strftime("%Y-%m")
            .to_string(),
    }
}

/// Expected status per role, in the order of [`ROLES`].
type Row = (String, [u16; 5]);

fn page_rows(i: &Ids) -> Vec<Row> {
    vec![
        ("/".into(), [303, 200, 200, 200, 200]),
        ("/tree".into(), [303, 200, 200, 200, 200]),
        (format!("/tree/nodes/{}", i.fm), [303, 403, 200, 200, 200]),
        // A node outside the reader's view answers as a missing one; its ancestors, shown
        // in the tree for context, are refused.
        (format!("/tree/nodes/{}", i.ar), [303, 404, 404, 200, 200]),
        (
            format!("/projects/{}", i.own_project),
            [303, 200, 200, 200, 200],
        ),
        (
            format!("/projects/{}", i.weather),
            // A project the reader may not see answers as a missing one.
            [303, 404, 404, 200, 200],
        ),
        ("/audit".into(), [303, 403, 200, 200, 200]),
        ("/dashboard".into(), [303, 403, 200, 200, 200]),
        (
            "/dashboard?window=7d&cluster=b300-lab".into(),
            [303, 403, 200, 200, 200],
        ),
        ("/dashboard.csv".into(), [303, 403, 200, 200, 200]),
        // An unknown node answers a lead as a node outside their subtree does (ids do not
        // tell which nodes exist); finance and admins see that it does not exist.
        (
            "/reports.csv?node=99999999".into(),
            [303, 403, 403, 404, 404],
        ),
        (
            format!("/reports.csv?node={}", i.weather),
            [303, 403, 403, 200, 200],
        ),
        // Prometheus' scrape: off without TRANCHE_METRICS_TOKEN, whoever is signed in.
        ("/metrics".into(), [404, 404, 404, 404, 404]),
        // OpenID Connect sign-in: off without TRANCHE_OIDC_ISSUER, whoever asks (with it, the
        // routes are public by nature; tests/it/oidc.rs checks what they let through).
        ("/login/oidc?next=/".into(), [404, 404, 404, 404, 404]),
        (
            "/login/oidc/callback?code=x&state=y".into(),
            [404, 404, 404, 404, 404],
        ),
        ("/admin/inventory".into(), [303, 403, 403, 403, 200]),
        (
            format!("/admin/clusters/{}", i.cluster),
            [303, 403, 403, 403, 200],
        ),
        ("/admin/users".into(), [303, 403, 403, 403, 200]),
        (
            format!("/admin/nodes/{}", i.node),
            [303, 403, 403, 403, 200],
        ),
        ("/account/tokens".into(), [303, 200, 200, 200, 200]),
        ("/runs".into(), [303, 200, 200, 200, 200]),
        ("/runs/new".into(), [303, 200, 200, 200, 200]),
        ("/approvals".into(), [303, 200, 200, 200, 200]),
        ("/ai".into(), [303, 200, 200, 200, 200]),
        ("/ai/new".into(), [303, 403, 200, 403, 200]),
        ("/ai/spend".into(), [303, 403, 403, 200, 200]),
        ("/ai/use-cases.csv".into(), [303, 200, 200, 200, 200]),
        (format!("/ai/{}", i.use_case), [303, 200, 200, 200, 200]),
        (
            format!("/ai/{}", i.other_use_case),
            [303, 404, 404, 200, 200],
        ),
        (
            format!("/ai/{}/edit", i.use_case),
            [303, 403, 200, 403, 200],
        ),
        (
            format!("/ai/{}/edit", i.other_use_case),
            [303, 404, 404, 403, 200],
        ),
    ]
}

type FormRow = (String, Vec<(String, String)>, [u16; 5]);

fn form_rows(i: &Ids) -> Vec<FormRow> {
    let f = |pairs: &[(&str, String)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect::<Vec<_>>()
    };
    vec![
        (
            // The demo researcher's first project; finance is no member, the lead leads it.
            "/runs/new".into(),
            f(&[
                ("project", "fm-pretrain-7b".into()),
                ("cluster", "h100-east".into()),
                ("gpu_model", "H100".into()),
                ("gpus", "1".into()),
                ("min_runtime", "0".into()),
                ("time_limit", "10".into()),
                ("command", "true".into()),
                ("action", "submit".into()),
            ]),
            [303, 303, 303, 403, 303],
        ),
        (
            format!("/tree/nodes/{}/shares", i.fm),
            f(&[(&format!("share_{}", i.pretraining), "30".into())]),
            [303, 403, 303, 403, 303],
        ),
        (
            format!("/tree/nodes/{}/shares", i.ar),
            f(&[]),
            [303, 404, 404, 403, 303],
        ),
        (
            format!("/tree/nodes/{}/children", i.fm),
            f(&[
                ("name", "New team".into()),
                ("kind", "group".into()),
                ("share", "0".into()),
            ]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/tree/nodes/{}/rename", i.pretraining),
            f(&[("name", "Pretraining 2".into())]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/tree/nodes/{}/archive", i.carbon),
            f(&[]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/projects/{}/budget", i.own_project),
            f(&[
                ("period_budget", "100".into()),
                ("money_cap", "".into()),
                ("self_service_gpu_hours", "8".into()),
            ]),
            [303, 403, 303, 403, 303],
        ),
        (
            format!("/projects/{}/members", i.own_project),
            f(&[("user", "demo-finance".into())]),
            [303, 403, 303, 403, 303],
        ),
        (
            "/admin/gpu-models".into(),
            f(&[
                ("name", "A100".into()),
                ("billing_weight", "0.6".into()),
                ("price", "2".into()),
            ]),
            [303, 403, 403, 403, 303],
        ),
        (
            "/admin/clusters".into(),
            f(&[("name", "new-cluster".into())]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/admin/clusters/{}/nodes", i.cluster),
            f(&[
                ("name", "extra-1".into()),
                ("gpu_model", "B300".into()),
                ("gpu_count", "8".into()),
            ]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/admin/nodes/{}/state", i.node),
            f(&[
                ("state", "draining".into()),
                ("reason", "fan replacement".into()),
            ]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/admin/nodes/{}/drain", i.node),
            f(&[("reason", "fan replacement".into())]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/admin/nodes/{}/return", i.node),
            f(&[]),
            [303, 403, 403, 403, 303],
        ),
        (
            "/admin/users".into(),
            f(&[
                ("name", "newbie".into()),
                ("role", "researcher".into()),
                ("node", "".into()),
            ]),
            [303, 403, 403, 403, 200],
        ),
        (
            format!("/admin/users/{}/grants", i.researcher),
            f(&[("role", "finance".into()), ("node", "".into())]),
            [303, 403, 403, 403, 303],
        ),
        (
            format!("/admin/users/{}/disable", i.spare),
            f(&[]),
            [303, 403, 403, 403, 303],
        ),
        (
            // Turning local password sign-in back on (it is on: nothing changes for admin).
            "/admin/sign-in".into(),
            f(&[("local", "on".into())]),
            [303, 403, 403, 403, 303],
        ),
        (
            "/account/tokens".into(),
            f(&[("label", "mine".into())]),
            [303, 303, 303, 303, 303],
        ),
        (
            "/ai".into(),
            f(&[
                // Not Pretraining: the admin renames it earlier in this list.
                ("name", "Form use case".into()),
                ("owner", "Post-training".into()),
                ("bag", "team".into()),
                ("monthly_limit", "100".into()),
                ("human_hourly_rate", "40".into()),
                ("metric", "answers".into()),
            ]),
            [303, 403, 303, 403, 303],
        ),
        (
            format!("/ai/{}", i.use_case),
            f(&[
                ("name", "Seeded triage".into()),
                ("owner", "Post-training".into()),
                ("bag", "personal".into()),
                ("monthly_limit", "200".into()),
                ("human_hourly_rate", "0".into()),
                ("metric", "answers".into()),
            ]),
            [303, 403, 303, 403, 303],
        ),
        (
            format!("/ai/{}/status", i.use_case),
            f(&[("status", "pilot".into())]),
            [303, 403, 303, 403, 303],
        ),
        (
            format!("/ai/{}/status", i.other_use_case),
            f(&[("status", "pilot".into())]),
            [303, 404, 404, 403, 303],
        ),
        (
            "/ai/rules".into(),
            f(&[
                ("use_case", i.use_case.to_string()),
                ("source", "any".into()),
                ("service", "OpenAI API".into()),
                ("scope", "".into()),
            ]),
            [303, 403, 303, 303, 303],
        ),
        (
            format!("/ai/{}/review", i.use_case),
            f(&[
                ("month", i.last_month.clone()),
                ("decision", "continue".into()),
                ("metric_value", "42 answers".into()),
                ("comment", "".into()),
            ]),
            [303, 403, 303, 403, 303],
        ),
        (
            format!("/ai/{}/hours", i.use_case),
            f(&[
                ("month", i.last_month.clone()),
                ("hours", "1.5".into()),
                ("activity", "review".into()),
                ("note", "".into()),
            ]),
            [303, 403, 303, 403, 303],
        ),
        // Nothing to acknowledge, and a team-bag use case has no stop rule Tranche raises:
        // refused with the page's message once the role may act.
        (
            format!("/ai/{}/acknowledge", i.use_case),
            f(&[("note", "done".into())]),
            [303, 403, 422, 403, 422],
        ),
        (
            format!("/ai/{}/stop-criterion", i.use_case),
            f(&[("reason", "errors".into())]),
            [303, 403, 422, 403, 422],
        ),
        // Not a file upload: refused as malformed once the role may import.
        (
            "/ai/spend/preview".into(),
            f(&[]),
            [303, 403, 403, 400, 400],
        ),
        // No preview to confirm: the spend page with the message.
        (
            "/ai/spend/import".into(),
            f(&[("token", "none".into())]),
            [303, 403, 403, 422, 422],
        ),
    ]
}

type ApiRow = (&'static str, String, Option<serde_json::Value>, [u16; 5]);

fn api_rows(i: &Ids) -> Vec<ApiRow> {
    vec![
        ("GET", "/api/v1/me".into(), None, [401, 200, 200, 200, 200]),
        (
            "GET",
            "/api/v1/tree".into(),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "GET",
            "/api/v1/clusters".into(),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "GET",
            "/api/v1/gpu-models".into(),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "GET",
            format!("/api/v1/projects/{}", i.own_project),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "GET",
            format!("/api/v1/projects/{}", i.weather),
            None,
            [401, 404, 404, 200, 200],
        ),
        (
            "GET",
            "/api/v1/audit".into(),
            None,
            [401, 403, 200, 200, 200],
        ),
        (
            "GET",
            "/api/v1/metrics".into(),
            None,
            [401, 403, 200, 200, 200],
        ),
        (
            "GET",
            "/api/v1/metrics?window=period&cluster=b300-lab".into(),
            None,
            [401, 403, 200, 200, 200],
        ),
        (
            "GET",
            "/api/v1/users".into(),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            "PUT",
            format!("/api/v1/nodes/{}/shares", i.fm),
            Some(json!({"shares": [{"node": i.pretraining, "share": 30}]})),
            [401, 403, 200, 403, 200],
        ),
        (
            "PUT",
            format!("/api/v1/nodes/{}/shares", i.ar),
            Some(json!({"shares": []})),
            [401, 404, 404, 403, 200],
        ),
        (
            "POST",
            "/api/v1/nodes".into(),
            Some(json!({"parent": i.fm, "name": "API team", "kind": "group", "share": 0})),
            [401, 403, 403, 403, 201],
        ),
        (
            "PATCH",
            format!("/api/v1/nodes/{}", i.weather),
            Some(json!({"name": "ar-weather-2"})),
            [401, 403, 403, 403, 200],
        ),
        (
            "PUT",
            format!("/api/v1/projects/{}/budget", i.own_project),
            Some(
                json!({"period_budget_minor": 100, "money_cap_minor": null, "self_service_gpu_hours": 8}),
            ),
            [401, 403, 200, 403, 200],
        ),
        (
            "POST",
            format!("/api/v1/projects/{}/members", i.own_project),
            Some(json!({"user": "demo-admin"})),
            [401, 403, 201, 403, 201],
        ),
        (
            "POST",
            "/api/v1/gpu-models".into(),
            Some(
                json!({"name": "A10", "billing_weight_milli": 600, "price_per_gpu_hour_minor": 200}),
            ),
            [401, 403, 403, 403, 201],
        ),
        (
            "POST",
            "/api/v1/clusters".into(),
            Some(json!({"name": "api-cluster"})),
            [401, 403, 403, 403, 201],
        ),
        (
            "POST",
            format!("/api/v1/clusters/{}/nodes", i.cluster),
            Some(json!({"name": "api-node", "gpu_model": "B300", "gpu_count": 8})),
            [401, 403, 403, 403, 201],
        ),
        (
            "PUT",
            format!("/api/v1/cluster-nodes/{}/state", i.node),
            Some(json!({"state": "down"})),
            [401, 403, 403, 403, 200],
        ),
        (
            "GET",
            format!("/api/v1/cluster-nodes/{}", i.node),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            "POST",
            format!("/api/v1/cluster-nodes/{}/drain", i.node),
            Some(json!({"reason": "PSU swap"})),
            [401, 403, 403, 403, 200],
        ),
        (
            "POST",
            format!("/api/v1/cluster-nodes/{}/return", i.node),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            "GET",
            "/api/v1/idle-flags".into(),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "POST",
            "/api/v1/users".into(),
            Some(json!({"name": "api-user", "role": "researcher"})),
            [401, 403, 403, 403, 201],
        ),
        (
            "POST",
            format!("/api/v1/users/{}/grants", i.researcher),
            Some(json!({"role": "lead", "node": "Climate"})),
            [401, 403, 403, 403, 201],
        ),
        (
            "POST",
            format!("/api/v1/users/{}/enable", i.spare),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            "GET",
            "/api/v1/use-cases".into(),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "GET",
            format!("/api/v1/use-cases/{}", i.use_case),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "GET",
            format!("/api/v1/use-cases/{}", i.other_use_case),
            None,
            [401, 404, 404, 200, 200],
        ),
        (
            "POST",
            "/api/v1/use-cases".into(),
            Some(
                json!({"name": "API use case", "owner_node_id": i.pretraining, "bag": "team", "monthly_limit_minor": 100, "metric": "m"}),
            ),
            [401, 403, 201, 403, 201],
        ),
        (
            "PUT",
            format!("/api/v1/use-cases/{}", i.use_case),
            Some(
                json!({"name": "Seeded triage", "owner_node_id": i.pretraining, "bag": "team", "monthly_limit_minor": 300, "metric": "m"}),
            ),
            [401, 403, 200, 403, 200],
        ),
        (
            "PUT",
            format!("/api/v1/use-cases/{}/status", i.use_case),
            Some(json!({"status": "active"})),
            [401, 403, 200, 403, 200],
        ),
        (
            "PUT",
            format!("/api/v1/use-cases/{}/status", i.other_use_case),
            Some(json!({"status": "active"})),
            [401, 404, 404, 403, 200],
        ),
        (
            "GET",
            format!("/api/v1/use-cases/{}/reviews", i.use_case),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "POST",
            format!("/api/v1/use-cases/{}/reviews", i.use_case),
            Some(
                json!({"month": i.last_month, "decision": "expand", "new_limit_minor": 99_999, "metric_value": "40 answers"}),
            ),
            [401, 403, 201, 403, 201],
        ),
        (
            "POST",
            format!("/api/v1/use-cases/{}/hours", i.use_case),
            Some(json!({"month": i.last_month, "hours": "0.25", "activity": "exceptions"})),
            [401, 403, 201, 403, 201],
        ),
        (
            "POST",
            format!("/api/v1/use-cases/{}/acknowledge", i.use_case),
            Some(json!({"note": "done"})),
            [401, 403, 409, 403, 409],
        ),
        (
            "POST",
            format!("/api/v1/use-cases/{}/stop-criterion", i.use_case),
            Some(json!({"reason": "errors"})),
            [401, 403, 422, 403, 422],
        ),
        (
            "GET",
            "/api/v1/spend-imports".into(),
            None,
            [401, 403, 403, 200, 200],
        ),
        (
            "POST",
            "/api/v1/spend-imports?format=openai".into(),
            Some(
                json!({"data": [{"start_time": 1793491200, "end_time": 1793577600, "results": [{"amount": {"value": 1.5, "currency": "usd"}, "line_item": "x", "project_id": "p"}]}]}),
            ),
            [401, 403, 403, 201, 201],
        ),
        (
            "GET",
            "/api/v1/spend-rules".into(),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            "POST",
            "/api/v1/spend-rules".into(),
            Some(json!({"use_case_id": i.use_case, "service": "Anthropic API"})),
            [401, 403, 201, 201, 201],
        ),
        (
            "POST",
            "/api/v1/spend-rules".into(),
            Some(json!({"use_case_id": i.other_use_case, "service": "Azure OpenAI"})),
            [401, 404, 404, 201, 201],
        ),
    ]
}

#[tokio::test]
async fn every_role_against_every_route() {
    let mut failures = Vec::new();
    for (r, role) in ROLES.iter().enumerate() {
        let (app, users) = TestApp::with_demo().await;
        let i = ids(&app).await;
        let mut c = app.client();
        let token = if *role == "anonymous" {
            c.get("/login").await;
            None
        } else {
            let (name, pw) = demo_password(&users, role);
            c.login(&name, &pw).await;
            Some(app.token_for(&name).await)
        };
        for (path, expected) in page_rows(&i) {
            let (status, _, _) = c.get(&path).await;
            if status.as_u16() != expected[r] {
                failures.push(format!(
                    "{role} GET {path}: {status}, expected {}",
                    expected[r]
                ));
            }
        }
        for (path, fields, expected) in form_rows(&i) {
            c.get("/account/tokens").await;
            let mut all = fields.clone();
            all.push(("csrf".into(), c.csrf().unwrap_or_default()));
            let (status, body, _) = c.post_raw(&path, &all, Some("http://localhost")).await;
            if status.as_u16() != expected[r] {
                failures.push(format!(
                    "{role} POST {path}: {status}, expected {}: {}",
                    expected[r],
                    body.chars().take(300).collect::<String>()
                ));
            }
        }
        for (method, path, body, expected) in api_rows(&i) {
            let (status, answer) = app.api(method, &path, token.as_deref(), body).await;
            if status.as_u16() != expected[r] {
                failures.push(format!(
                    "{role} {method} {path}: {status}, expected {}: {answer}",
                    expected[r]
                ));
            }
            if status.is_client_error() {
                assert!(
                    answer["error"]["code"].is_string(),
                    "{role} {method} {path}: error without a code: {answer}"
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "authorization matrix mismatches:\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn researchers_see_only_their_part_of_the_tree() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = demo_password(&users, "researcher");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let (_, body, _) = c.get("/tree").await;
    assert!(body.contains("fm-pretrain-7b"));
    assert!(body.contains("Foundation Models"), "ancestors give context");
    assert!(
        !body.contains("ar-weather"),
        "other programs' projects are hidden"
    );
    let token = app.token_for(&name).await;
    let (_, tree) = app.api("GET", "/api/v1/tree", Some(&token), None).await;
    let names: Vec<&str> = tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Organisation",
            "Foundation Models",
            "Pretraining",
            "fm-pretrain-70b",
            "fm-pretrain-7b"
        ]
    );
}

#[tokio::test]
async fn a_lead_cannot_set_their_own_nodes_budget() {
    let (app, _) = TestApp::with_demo().await;
    // Make demo-lead also lead of a project outside Foundation Models: leading the project
    // itself does not allow setting its budget (that is for leads above it).
    let weather = app.node_id("ar-weather").await;
    let lead_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-lead'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO role_grants (user_id, role, node_id) VALUES ($1, 'lead', $2)")
        .bind(lead_id)
        .bind(weather)
        .execute(&app.pool)
        .await
        .unwrap();
    let token = app.token_for("demo-lead").await;
    let (status, answer) = app
        .api("PUT", &format!("/api/v1/projects/{weather}/budget"), Some(&token), Some(json!({"period_budget_minor": 1, "money_cap_minor": null, "self_service_gpu_hours": 1})))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
}

/// Runs, approvals and the agent protocol for every role: one fresh demo database per role with
/// a local node, a queued run of the researcher's project, a run waiting for approval and a run
/// of a project of another program.
#[tokio::test]
async fn every_role_against_the_run_routes() {
    let mut failures = Vec::new();
    for (r, role) in ROLES.iter().enumerate() {
        let (app, users) = TestApp::with_demo().await;
        let agent = tranche::runs::agents::create_token(&app.pool, "local")
            .await
            .unwrap();
        app.declare_nodes(&["acl-1"]).await;
        let (status, _) = app
            .api(
                "POST",
                "/api/v1/agent/register",
                Some(&agent),
                Some(json!({"nodes": [{"name": "acl-1", "gpus": 8, "gpu_model": "H100"}]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let researcher = app.token_for("demo-researcher").await;
        let admin = app.token_for("demo-admin").await;
        let run = |project: &str, gpus: i64, min_runtime_s: i64| {
            json!({"project": project, "cluster": "local", "gpu_model": "H100", "gpus": gpus,
                   "min_runtime_s": min_runtime_s, "time_limit_s": 36_000, "command": "true"})
        };
        let submit = async |token: &str, body| {
            let (status, answer) = app
                .api("POST", "/api/v1/runs", Some(token), Some(body))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
            answer["id"].as_i64().unwrap()
        };
        let own = submit(&researcher, run("fm-pretrain-7b", 1, 0)).await;
        // 8 GPUs x 8 h = 64 GPU-hours, above a self-service limit of 10.
        sqlx::query("UPDATE projects SET self_service_gpu_hours = 10 WHERE node_id = $1")
            .bind(app.node_id("fm-pretrain-7b").await)
            .execute(&app.pool)
            .await
            .unwrap();
        let protected = submit(&researcher, run("fm-pretrain-7b", 8, 8 * 3600)).await;
        let foreign = submit(&admin, run("ar-weather", 1, 0)).await;
        // Two runs of the researcher held idle for an hour (set up as the heartbeats and the
        // pass would): one flag for the API, one for the page.
        let idle_flag = async |run: i64| -> i64 {
            sqlx::query(
                "UPDATE runs SET state = 'running', attempt = 1, started_at = now() WHERE id = $1",
            )
            .bind(run)
            .execute(&app.pool)
            .await
            .unwrap();
            sqlx::query_scalar(
                "INSERT INTO idle_flags (run_id, attempt, gpus, idle_since) VALUES ($1, 1, 1, now() - interval '1 hour') RETURNING id",
            )
            .bind(run)
            .fetch_one(&app.pool)
            .await
            .unwrap()
        };
        let api_flag = idle_flag(submit(&researcher, run("fm-pretrain-7b", 1, 0)).await).await;
        let page_flag = idle_flag(submit(&researcher, run("fm-pretrain-7b", 1, 0)).await).await;
        let mut page = app.client();
        if *role == "anonymous" {
            page.get("/login").await;
        } else {
            let (name, pw) = demo_password(&users, role);
            page.login(&name, &pw).await;
        }
        let (status, body, _) = page
            .post(
                &format!("/idle-flags/{page_flag}/stop"),
                &[("reason", "idle all night")],
            )
            .await;
        if status.as_u16() != [303, 403, 303, 403, 303][r] {
            failures.push(format!(
                "{role} POST /idle-flags/{page_flag}/stop: {status}: {}",
                body.chars().take(300).collect::<String>()
            ));
        }
        let token = if *role == "anonymous" {
            None
        } else {
            let (name, _) = demo_password(&users, role);
            Some(app.token_for(&name).await)
        };
        let rows: Vec<ApiRow> = vec![
            (
                "GET",
                "/api/v1/runs".into(),
                None,
                [401, 200, 200, 200, 200],
            ),
            (
                "GET",
                format!("/api/v1/runs/{own}"),
                None,
                [401, 200, 200, 200, 200],
            ),
            (
                "GET",
                format!("/api/v1/runs/{foreign}"),
                None,
                [401, 404, 404, 200, 200],
            ),
            (
                "GET",
                "/api/v1/approvals".into(),
                None,
                [401, 200, 200, 200, 200],
            ),
            (
                "POST",
                "/api/v1/runs".into(),
                Some(run("fm-pretrain-7b", 1, 0)),
                [401, 201, 201, 403, 201],
            ),
            (
                "POST",
                "/api/v1/runs/preview".into(),
                Some(run("fm-pretrain-7b", 1, 60)),
                [401, 200, 200, 403, 200],
            ),
            (
                "POST",
                format!("/api/v1/runs/{protected}/approve"),
                None,
                [401, 403, 200, 403, 200],
            ),
            (
                "POST",
                format!("/api/v1/runs/{foreign}/cancel"),
                None,
                [401, 404, 404, 403, 200],
            ),
            (
                "GET",
                "/api/v1/idle-flags".into(),
                None,
                [401, 200, 200, 200, 200],
            ),
            (
                "POST",
                format!("/api/v1/idle-flags/{api_flag}/stop"),
                Some(json!({"reason": "idle all night"})),
                [401, 403, 200, 403, 200],
            ),
            (
                "POST",
                "/api/v1/agent/register".into(),
                Some(json!({"nodes": [{"name": "acl-2", "gpus": 8, "gpu_model": "H100"}]})),
                [401, 401, 401, 401, 401],
            ),
        ];
        for (method, path, body, expected) in rows {
            let (status, answer) = app.api(method, &path, token.as_deref(), body).await;
            if status.as_u16() != expected[r] {
                failures.push(format!(
                    "{role} {method} {path}: {status}, expected {}: {answer}",
                    expected[r]
                ));
            }
            if status.is_client_error() {
                assert!(answer["error"]["code"].is_string(), "{answer}");
            }
        }
        // Lists show only what the role may see.
        if let Some(t) = token.as_deref() {
            let (_, list) = app.api("GET", "/api/v1/runs", Some(t), None).await;
            let ids: Vec<i64> = list["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["id"].as_i64().unwrap())
                .collect();
            let sees_foreign = ids.contains(&foreign);
            if sees_foreign != matches!(*role, "finance" | "admin") {
                failures.push(format!("{role} run list: {ids:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "authorization matrix mismatches:\n{}",
        failures.join("\n")
    );
}

/// Every link a signed-in page shows its reader opens for that reader: a breadth-first walk
/// from the home page as each demo role (up to 150 pages a role, at most two pages of each
/// shape, digits standing for ids), and every link found answers 2xx or a redirect, never a
/// 404 (a page that does not exist), a 403 (a page the reader may not open) or a 5xx.
#[tokio::test]
async fn every_link_a_page_shows_opens_for_its_reader() {
    let (app, users) = TestApp::with_demo().await;
    // Something on every list: a contract, a run, a use case.
    let lead = app.token_for("demo-lead").await;
    let researcher = app.token_for("demo-researcher").await;
    let (start, end) = (
        crate::support::tomorrow_at(9),
        crate::support::tomorrow_at(11),
    );
    for (token, path, body) in [
        (
            &lead,
            "/api/v1/contracts",
            json!({"project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
                   "gpus": 1, "start": start.to_string(), "end": end.to_string()}),
        ),
        (
            &researcher,
            "/api/v1/runs",
            json!({"project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
                   "gpus": 1, "min_runtime_s": 600, "time_limit_s": 3600, "priority": 0,
                   "resumable": true, "command": "python train.py"}),
        ),
    ] {
        let (status, answer) = app.api("POST", path, Some(token), Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{path}: {answer}");
    }
    let mut failures = Vec::new();
    for role in ["admin", "lead", "researcher", "finance"] {
        let mut c = app.client();
        let (name, pw) = demo_password(&users, role);
        c.login(&name, &pw).await;
        let mut queue = std::collections::VecDeque::from([("/".to_string(), "/".to_string())]);
        let mut seen = std::collections::HashSet::new();
        let mut shapes: std::collections::HashMap<String, usize> = Default::default();
        let mut visited = 0;
        while let Some((path, from)) = queue.pop_front() {
            if visited >= 150 {
                break;
            }
            let shape: String = path
                .split(|ch: char| ch.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("N");
            let n = shapes.entry(shape).or_default();
            if *n >= 2 {
                continue;
            }
            *n += 1;
            visited += 1;
            let (status, body, _) = c.get(&path).await;
            let s = status.as_u16();
            if !(200..400).contains(&s) {
                failures.push(format!("{role}: {path} (linked from {from}): {s}"));
                continue;
            }
            for part in body.split("href=\"").skip(1) {
                let href = part.split('"').next().unwrap_or("").replace("&amp;", "&");
                let href = href.split('#').next().unwrap_or("").to_string();
                if !href.starts_with('/') || href.starts_with("//") || href.starts_with("/static/")
                {
                    continue;
                }
                if seen.insert(href.clone()) {
                    queue.push_back((href, path.clone()));
                }
            }
        }
        assert!(visited > 10, "{role} walked only {visited} pages");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
