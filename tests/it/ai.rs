//! The AI use-case register: register, edit and status through the API and the pages, each
//! import format (cents as strings, repeated files, unassigned lines, a wrong currency,
//! malformed files), mapping rules, and GPU spend of linked projects counting towards a use
//! case. Against the demo organisation on a real PostgreSQL.

use axum::http::StatusCode;
use serde_json::{Value, json};
use tranche::config::Site;

use crate::support::{TestApp, demo_password, tomorrow_at};

const FOCUS_SAMPLE: &str = include_str!("../../samples/spend/focus-2026-11.csv");
const OPENAI_SAMPLE: &str = include_str!("../../samples/spend/openai-costs-2026-11.json");
const ANTHROPIC_SAMPLE: &str =
    include_str!("../../samples/spend/anthropic-cost-report-2026-11.json");
const GITHUB_SAMPLE: &str = include_str!("../../samples/spend/github-copilot-usage-2026-11.csv");

/// The demo organisation on a site counting in `currency`.
async fn demo_in(currency: &str) -> (TestApp, Vec<tranche::demo::DemoUser>) {
    let mut site = Site::for_tests();
    site.currency = currency.into();
    let app = TestApp::with_site(site).await;
    let users = tranche::demo::load(&app.pool).await.unwrap().unwrap();
    (app, users)
}

pub(crate) fn use_case(name: &str, owner: i64, limit_minor: i64) -> Value {
    json!({
        "name": name,
        "owner_node_id": owner,
        "bag": "team",
        "allowed_data": "support e-mail and category history",
        "ai_action": "summarise, classify and propose urgency",
        "human_review": "before replying to the customer",
        "monthly_limit_minor": limit_minor,
        "metric": "time to first classification",
        "stop_rule": "",
        "services": ["Azure OpenAI"],
    })
}

async fn count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Sums the `BilledCost` of the FOCUS rows whose `Tags` or `SubAccountId` contain `needle`,
/// in millionths, read with the csv crate independently of the importer.
fn focus_sum(text: &str, needle: &str) -> i64 {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let headers = r.headers().unwrap().clone();
    let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
    let (cost, tags, sub) = (col("BilledCost"), col("Tags"), col("SubAccountId"));
    r.records()
        .map(|rec| rec.unwrap())
        .filter(|rec| rec[tags].contains(needle) || rec[sub].contains(needle))
        .map(|rec| {
            let (whole, frac) = rec[cost].split_once('.').unwrap_or((&rec[cost], ""));
            whole.parse::<i64>().unwrap() * 1_000_000
                + format!("{frac:0<6}").parse::<i64>().unwrap()
        })
        .sum()
}

#[tokio::test]
async fn leads_register_edit_and_change_status_with_audit() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let researcher = app.token_for("demo-researcher").await;
    let finance = app.token_for("demo-finance").await;
    // Post-training: under the lead's node, not above the researcher's projects (they see it
    // through the linked project only).
    let pretraining = app.node_id("Post-training").await;
    let climate = app.node_id("Climate").await;
    let project = app.node_id("fm-pretrain-7b").await;

    let mut body = use_case("Support ticket triage", pretraining, 30_000);
    body["project_ids"] = json!([project]);
    let (status, created) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(body.clone()))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["status"], "proposed");
    assert_eq!(created["owner"], "Post-training");
    assert_eq!(created["projects"], json!(["fm-pretrain-7b"]));
    assert_eq!(app.audit_count("use_case.create").await, 1);

    // The same name again, a bag that does not exist, a team the lead does not lead.
    let (status, answer) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(body.clone()))
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("name_taken")),
        "{answer}"
    );
    // Names are unique whatever their case, also when another use case is renamed to one.
    let mut shouted = body.clone();
    shouted["name"] = json!("SUPPORT TICKET triage");
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(shouted.clone()),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("name_taken")),
        "{answer}"
    );
    let other = use_case("Other triage", pretraining, 100);
    let (status, created_other) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(other))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created_other}");
    let other_id = created_other["id"].as_i64().unwrap();
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/use-cases/{other_id}"),
            Some(&lead),
            Some(shouted),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("name_taken")),
        "{answer}"
    );
    let mut bad = use_case("Other", pretraining, 100);
    bad["bag"] = json!("gold");
    let (status, answer) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(bad))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["error"]["field"], "bag");
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case("Other", pretraining, 0)),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "a limit of 0: {answer}"
    );
    assert_eq!(answer["error"]["field"], "monthly_limit_minor");
    // Errors name the JSON fields sent, not the page form's (`owner`, `projects`).
    let mut bad = use_case("Other", 999_999_999, 100);
    let (status, answer) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(bad.clone()))
        .await;
    assert_eq!(
        (status, answer["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("owner_node_id")),
        "{answer}"
    );
    bad["owner_node_id"] = json!(pretraining);
    bad["project_ids"] = json!([999_999_999]);
    let (status, answer) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(bad))
        .await;
    assert_eq!(
        (status, answer["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("project_ids")),
        "{answer}"
    );
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case("Weather bot", climate, 100)),
        )
        .await;
    // Climate is outside the lead's view: answered as an unknown owner team.
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_input"))
    );
    let mut critical = use_case("Pager", pretraining, 100);
    critical["bag"] = json!("critical");
    let (status, answer) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(critical))
        .await;
    assert_eq!(answer["error"]["field"], "stop_rule", "{status} {answer}");
    assert_eq!(count(&app, "ai_use_cases").await, 2, "nothing half-written");

    // The researcher of the linked project sees it; finance sees it; the researcher cannot change it.
    let (_, list) = app
        .api("GET", "/api/v1/use-cases", Some(&researcher), None)
        .await;
    assert_eq!(list["use_cases"].as_array().unwrap().len(), 1);
    let (status, _) = app
        .api(
            "PUT",
            &format!("/api/v1/use-cases/{id}/status"),
            Some(&researcher),
            Some(json!({"status": "active"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app
        .api(
            "PUT",
            &format!("/api/v1/use-cases/{id}/status"),
            Some(&finance),
            Some(json!({"status": "active"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Edit: a new limit and no linked project.
    let mut edited = use_case("Support ticket triage", pretraining, 45_000);
    // A service named twice, not side by side, is kept once.
    edited["services"] = json!(["Azure OpenAI", "OpenAI API", " Azure OpenAI"]);
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/use-cases/{id}"),
            Some(&lead),
            Some(edited),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["monthly_limit_minor"], 45_000);
    assert_eq!(answer["projects"], json!([]));
    assert_eq!(answer["services"], json!(["Azure OpenAI", "OpenAI API"]));
    let (before, after): (Value, Value) =
        sqlx::query_as("SELECT before, after FROM audit_log WHERE action = 'use_case.update'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (
            before["monthly_limit_minor"].as_i64(),
            after["monthly_limit_minor"].as_i64()
        ),
        (Some(30_000), Some(45_000))
    );
    // Without the link the researcher no longer sees it: to them it is missing.
    let (status, _) = app
        .api(
            "GET",
            &format!("/api/v1/use-cases/{id}"),
            Some(&researcher),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Status: pilot, then pilot again (nothing recorded), then a status that does not exist.
    for (s, expected) in [
        ("pilot", StatusCode::OK),
        ("pilot", StatusCode::OK),
        ("paused", StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let (status, answer) = app
            .api(
                "PUT",
                &format!("/api/v1/use-cases/{id}/status"),
                Some(&lead),
                Some(json!({"status": s})),
            )
            .await;
        assert_eq!(status, expected, "{answer}");
    }
    assert_eq!(app.audit_count("use_case.status").await, 1);
    let (_, one) = app
        .api(
            "GET",
            &format!("/api/v1/use-cases/{id}"),
            Some(&finance),
            None,
        )
        .await;
    assert_eq!(one["status"], "pilot");
}

#[tokio::test]
async fn a_linked_projects_gpu_spend_counts_towards_the_use_case() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let project = app.node_id("fm-pretrain-7b").await;
    let mut body = use_case(
        "Pretraining assistant",
        app.node_id("Pretraining").await,
        1_000,
    );
    body["project_ids"] = json!([project]);
    let (_, created) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(body))
        .await;
    let id = created["id"].as_i64().unwrap();
    let contract = json!({"project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100", "gpus": 1, "start": tomorrow_at(9).to_string(), "end": tomorrow_at(11).to_string()});
    let (status, bought) = app
        .api("POST", "/api/v1/contracts", Some(&lead), Some(contract))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{bought}");
    let price = bought["price_minor"].as_i64().unwrap();
    assert!(price > 0);
    let (_, one) = app
        .api("GET", &format!("/api/v1/use-cases/{id}"), Some(&lead), None)
        .await;
    // The contract is paid in the period it starts in: tomorrow's, the current one unless
    // tomorrow begins a new month.
    let same_period = tranche::ledger::Period::containing(tomorrow_at(9), &app.state.site)
        == tranche::ledger::Period::containing(jiff::Timestamp::now(), &app.state.site);
    let expected = if same_period { price } else { 0 };
    assert_eq!(one["spend"]["gpu_minor"], expected, "{one}");
    assert_eq!(one["spend"]["total_minor"], expected);
    assert_eq!(one["spend"]["over_limit"], expected > 1_000);
}

/// A use case may link projects some of its readers may not see: a researcher reads neither
/// their names nor their spend (found by a new-user check: a researcher read a sibling
/// project's name and month's GPU spend on the register), only how many there are; whether
/// the whole spend is over the limit still counts them. A lead who edits it keeps the links
/// the form did not show.
#[tokio::test]
async fn a_use_case_hides_linked_projects_its_reader_may_not_see() {
    let (app, users) = TestApp::with_demo().await;
    let admin = app.token_for("demo-admin").await;
    let researcher = app.token_for("demo-researcher").await;
    let lead = app.token_for("demo-lead").await;
    let (seen, hidden) = (
        app.node_id("fm-pretrain-7b").await,
        app.node_id("is-kernels").await,
    );
    let mut body = use_case("Kernel assistant", app.node_id("Pretraining").await, 1);
    body["project_ids"] = json!([seen, hidden]);
    let (status, created) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&admin),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_i64().unwrap();
    // A contract on each project, paid this period (tomorrow, unless tomorrow starts a new
    // month: then nothing this period, and the sums are 0).
    let same_period = tranche::ledger::Period::containing(tomorrow_at(9), &app.state.site)
        == tranche::ledger::Period::containing(jiff::Timestamp::now(), &app.state.site);
    let mut prices = Vec::new();
    for project in ["fm-pretrain-7b", "is-kernels"] {
        let contract = json!({"project": project, "cluster": "h100-east", "gpu_model": "H100",
            "gpus": 1, "start": tomorrow_at(9).to_string(), "end": tomorrow_at(11).to_string()});
        let (status, bought) = app
            .api("POST", "/api/v1/contracts", Some(&admin), Some(contract))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{bought}");
        let price = bought["price_minor"].as_i64().unwrap();
        prices.push(if same_period { price } else { 0 });
    }
    let read = |token: String| {
        let app = &app;
        async move {
            let (status, one) = app
                .api(
                    "GET",
                    &format!("/api/v1/use-cases/{id}"),
                    Some(&token),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{one}");
            let (_, list) = app
                .api("GET", "/api/v1/use-cases", Some(&token), None)
                .await;
            let listed = list["use_cases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|u| u["id"] == id)
                .unwrap()
                .clone();
            assert_eq!(listed["spend"], one["spend"]);
            assert_eq!(listed["projects"], one["projects"]);
            one
        }
    };
    let all = read(admin.clone()).await;
    assert_eq!(all["projects"], json!(["fm-pretrain-7b", "is-kernels"]));
    assert_eq!(all["hidden_projects"], 0);
    assert_eq!(all["spend"]["gpu_minor"], prices[0] + prices[1]);
    let part = read(researcher).await;
    assert_eq!(part["projects"], json!(["fm-pretrain-7b"]));
    assert_eq!(part["project_ids"], json!([seen]));
    assert_eq!(part["hidden_projects"], 1);
    assert_eq!(part["spend"]["gpu_minor"], prices[0]);
    assert_eq!(part["spend"]["over_limit"], prices[0] + prices[1] > 1);
    let (name, pw) = demo_password(&users, "researcher");
    let mut c = app.client();
    c.login(&name, &pw).await;
    for path in [format!("/ai/{id}"), "/ai".to_string()] {
        let (status, page, _) = c.get(&path).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!page.contains("is-kernels"), "{path}: {page}");
    }
    // The lead of Foundation Models may not see is-kernels either: an edit of the fields
    // it was shown keeps that link.
    body["project_ids"] = json!([seen]);
    body["monthly_limit_minor"] = json!(2);
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/use-cases/{id}"),
            Some(&lead),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // Its answer is the use case as the lead may see it.
    assert_eq!(answer["project_ids"], json!([seen]), "{answer}");
    assert_eq!(answer["hidden_projects"], 1);
    let all = read(admin).await;
    assert_eq!(all["monthly_limit_minor"], 2);
    assert_eq!(all["project_ids"], json!([seen, hidden]));
    // Linking a project the lead may not see is refused as for a missing one, unnamed.
    for project in [hidden, 99_999_999] {
        body["project_ids"] = json!([seen, project]);
        let (status, answer) = app
            .api(
                "PUT",
                &format!("/api/v1/use-cases/{id}"),
                Some(&lead),
                Some(body.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert!(!answer.to_string().contains("is-kernels"), "{answer}");
    }
}

/// An owner team outside the caller's view is answered as an unknown one, unnamed (found by a
/// new-user check: the refusal "you do not lead ar-protein-folding" listed the whole tree to a
/// researcher counting ids); a team in view that the caller does not lead is refused by name.
#[tokio::test]
async fn a_use_case_owner_outside_the_callers_view_is_unknown() {
    let (app, _) = TestApp::with_demo().await;
    let root: String = sqlx::query_scalar("SELECT name FROM tree_nodes WHERE parent_id IS NULL")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    for (user, hidden, seen_not_led) in [
        ("demo-researcher", "ar-protein-folding", "fm-pretrain-7b"),
        ("demo-lead", "Applied Research", root.as_str()),
    ] {
        let token = app.token_for(user).await;
        let hidden_id = app.node_id(hidden).await;
        let post = |owner: i64| {
            let (app, token) = (&app, token.clone());
            async move {
                app.api(
                    "POST",
                    "/api/v1/use-cases",
                    Some(&token),
                    Some(use_case("Triage bot", owner, 1_000)),
                )
                .await
            }
        };
        let (status, unknown) = post(99_999_999).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{unknown}");
        let (status, answer) = post(hidden_id).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{user}: {answer}");
        assert_eq!(answer, unknown, "{user}");
        assert!(!answer.to_string().contains(hidden), "{answer}");
        let (status, answer) = post(app.node_id(seen_not_led).await).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{user}: {answer}");
        assert!(answer.to_string().contains(seen_not_led), "{answer}");
    }
}

#[tokio::test]
async fn the_register_form_keeps_input_on_error_and_registers() {
    let (app, users) = TestApp::with_demo().await;
    let mut c = app.client();
    let (name, pw) = demo_password(&users, "lead");
    c.login(&name, &pw).await;
    let (status, page, _) = c.get("/ai/new").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Pretraining"), "the lead's nodes are offered");
    let mut fields = vec![
        ("name", "Document RAG"),
        ("owner", "Pretraining"),
        ("bag", "team"),
        ("allowed_data", "approved internal manuals"),
        ("ai_action", "answer with sources"),
        ("human_review", "review by the area lead"),
        ("monthly_limit", "five hundred"),
        ("metric", "useful answers with the correct source"),
        (
            "stop_rule",
            "fewer than half of the answers useful for two months",
        ),
        ("services", "Anthropic API, OpenAI API"),
        ("projects", "fm-tokenizer"),
        ("human_hourly_rate", ""),
    ];
    let (status, page, _) = c.post("/ai", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("monthly limit:"), "{page}");
    assert!(
        page.contains("value=\"approved internal manuals\""),
        "input kept"
    );
    assert!(page.contains("value=\"five hundred\""));
    assert_eq!(count(&app, "ai_use_cases").await, 0);
    // An empty hourly rate is not a rate of zero; a limit of zero is no limit.
    fields[6] = ("monthly_limit", "500");
    let (status, page, _) = c.post("/ai", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("hourly rate: enter the price"), "{page}");
    // A rate above the API's bound is refused by the form too (found by a new-user check:
    // 99,999,999,999 was taken, and a month's human cost wrapped to a negative amount).
    fields[11] = ("human_hourly_rate", "99999999999");
    let (status, page, _) = c.post("/ai", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("hourly rate: from 0 to"), "{page}");
    assert!(page.contains("value=\"99999999999\""), "input kept");
    fields[11] = ("human_hourly_rate", "45");
    fields[6] = ("monthly_limit", "0");
    let (status, page, _) = c.post("/ai", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("above zero"), "{page}");
    assert_eq!(count(&app, "ai_use_cases").await, 0);
    fields[6] = ("monthly_limit", "500");
    // A project the lead does not lead is the form's error, the input kept.
    fields[10] = ("projects", "ar-genomics");
    let (status, page, _) = c.post("/ai", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(page.contains("ar-genomics"), "{page}");
    assert!(
        page.contains("value=\"approved internal manuals\""),
        "input kept: {page}"
    );
    assert_eq!(count(&app, "ai_use_cases").await, 0);
    fields[10] = ("projects", "fm-tokenizer");
    let (status, _, location) = c.post("/ai", &fields).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let location = location.unwrap();
    let (status, page, _) = c.get(&location).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("answer with sources") && page.contains("500.00 USD"),
        "{page}"
    );
    assert!(page.contains("fm-tokenizer"));
    // Edit and status from the pages.
    let (status, page, _) = c.get(&format!("{location}/edit")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("value=\"500.00\""), "{page}");
    let (status, _, _) = c
        .post(&format!("{location}/status"), &[("status", "active")])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, page, _) = c
        .post(&format!("{location}/status"), &[("status", "asleep")])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("is not one of"));
    let st: String = sqlx::query_scalar("SELECT status FROM ai_use_cases")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(st, "active");
    let (_, list, _) = c.get("/ai").await;
    assert!(list.contains("Document RAG") && list.contains("active"));
}

pub(crate) async fn import(
    app: &TestApp,
    token: &str,
    query: &str,
    body: &str,
) -> (StatusCode, Value) {
    app.api_raw(
        "POST",
        &format!("/api/v1/spend-imports?{query}"),
        Some(token),
        "text/plain",
        body.as_bytes().to_vec(),
    )
    .await
}

#[tokio::test]
async fn focus_imports_once_assigns_by_rules_and_lists_unassigned_lines() {
    let (app, _) = demo_in("EUR").await;
    let lead = app.token_for("demo-lead").await;
    let finance = app.token_for("demo-finance").await;
    let pretraining = app.node_id("Pretraining").await;
    let mut ids = Vec::new();
    for name in ["Support ticket triage", "Document RAG"] {
        let (_, u) = app
            .api(
                "POST",
                "/api/v1/use-cases",
                Some(&lead),
                Some(use_case(name, pretraining, 30_000)),
            )
            .await;
        ids.push(u["id"].as_i64().unwrap());
    }
    for (uc, rule) in [
        (ids[0], json!({"source": "focus", "scope": "team=support"})),
        (ids[1], json!({"scope": "sub-techoffice"})),
    ] {
        let mut rule = rule;
        rule["use_case_id"] = json!(uc);
        let (status, answer) = app
            .api("POST", "/api/v1/spend-rules", Some(&finance), Some(rule))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    // Only finance and admins import.
    let (status, _) = import(&app, &lead, "format=focus", FOCUS_SAMPLE).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (status, preview) = import(&app, &finance, "format=focus&dry_run=true", FOCUS_SAMPLE).await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(
        count(&app, "ai_spend_rows").await,
        0,
        "a preview writes nothing"
    );
    let (status, first) = import(
        &app,
        &finance,
        "format=focus&file_name=focus-2026-11.csv",
        FOCUS_SAMPLE,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(
        first["shares"], preview["shares"],
        "the preview showed what was imported"
    );
    let support = focus_sum(FOCUS_SAMPLE, "\"team\":\"support\"");
    let rag = focus_sum(FOCUS_SAMPLE, "sub-techoffice");
    let all = focus_sum(FOCUS_SAMPLE, "");
    assert_eq!(first["lines"], 6);
    assert_eq!(first["new_lines"], 6);
    assert_eq!(first["amount_micro"], all);
    let share = |name: &str| {
        first["shares"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["use_case"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(share("Support ticket triage")["amount_micro"], support);
    assert_eq!(share("Document RAG")["amount_micro"], rag);
    assert_eq!(share("unassigned")["amount_micro"], all - support - rag);
    assert_eq!(share("unassigned")["lines"], 2);
    assert_eq!(app.audit_count("spend.import").await, 1);

    // The same file again adds nothing.
    let (status, again) = import(&app, &finance, "format=focus", FOCUS_SAMPLE).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            again["already_imported"].as_bool(),
            again["new_lines"].as_i64()
        ),
        (Some(true), Some(0))
    );
    assert_eq!(count(&app, "ai_spend_rows").await, 6);
    // A later export with the same lines and one more adds only that one.
    let extra = format!(
        "{FOCUS_SAMPLE}5.00,EUR,2026-11-01T00:00:00Z,2026-12-01T00:00:00Z,2026-11-20T00:00:00Z,2026-11-21T00:00:00Z,Usage,Tokens,Azure OpenAI,AI and Machine Learning,Microsoft,sub-support-prod,Support production,\"{{\"\"team\"\":\"\"support\"\"}}\"\n"
    );
    let (status, more) = import(&app, &finance, "format=focus", &extra).await;
    assert_eq!(status, StatusCode::CREATED, "{more}");
    assert_eq!(
        (more["new_lines"].as_i64(), more["skipped_lines"].as_i64()),
        (Some(1), Some(6))
    );
    assert_eq!(more["shares"][0]["use_case"], "Support ticket triage");

    // Unassigned lines are listed; a rule added later assigns them.
    let (_, listed) = app
        .api("GET", "/api/v1/spend-imports", Some(&finance), None)
        .await;
    assert_eq!(listed["unassigned"]["count"], 2);
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/spend-rules",
            Some(&finance),
            Some(json!({"use_case_id": ids[0], "scope": "team=sales"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(answer["lines_assigned"], 1);
    let (_, listed) = app
        .api("GET", "/api/v1/spend-imports", Some(&finance), None)
        .await;
    assert_eq!(listed["unassigned"]["count"], 1);
    assert_eq!(
        listed["unassigned"]["lines"][0]["service"],
        "Azure AI Speech"
    );
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/spend-rules",
            Some(&finance),
            Some(json!({"use_case_id": ids[0], "scope": "team=sales"})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("rule_exists"))
    );
    let (status, _) = app
        .api("GET", "/api/v1/spend-imports", Some(&lead), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A lead of another subtree cannot take Support's lines with a more specific rule for a
    // use case of their own; a rule on lines of their own is theirs to add.
    let biology = app.node_id("Biology").await;
    tranche::db::users::create(&app.pool, None, "bio-lead", "lead", Some("Biology"))
        .await
        .unwrap();
    let bio = app.token_for("bio-lead").await;
    let (status, mine) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&bio),
            Some(use_case("Protein notes", biology, 10_000)),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{mine}");
    let before = count(&app, "ai_mapping_rules").await;
    let (status, refused) = app
        .api(
            "POST",
            "/api/v1/spend-rules",
            Some(&bio),
            Some(json!({"use_case_id": mine["id"], "source": "focus", "service": "Azure OpenAI", "scope": "team=support"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Support ticket triage"),
        "{refused}"
    );
    assert_eq!(count(&app, "ai_mapping_rules").await, before);
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/spend-rules",
            Some(&bio),
            Some(json!({"use_case_id": mine["id"], "source": "focus", "service": "Azure OpenAI", "scope": "team=biology"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    // Finance may map lines anywhere, also more specifically than a team's rule.
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/spend-rules",
            Some(&finance),
            Some(json!({"use_case_id": mine["id"], "source": "focus", "service": "Azure OpenAI", "scope": "team=support"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test]
async fn a_file_in_another_currency_needs_a_rate() {
    let (app, _) = demo_in("EUR").await;
    let finance = app.token_for("demo-finance").await;
    let (status, answer) = import(&app, &finance, "format=openai", OPENAI_SAMPLE).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["error"]["code"], "currency_mismatch");
    assert_eq!(answer["error"]["field"], "rate");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("USD") && message.contains("EUR"),
        "{message}"
    );
    assert_eq!(count(&app, "ai_spend_imports").await, 0);
    let (status, answer) = import(&app, &finance, "format=openai&rate=zero", OPENAI_SAMPLE).await;
    assert_eq!(
        (status, answer["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("rate"))
    );
    // 0.9 EUR per USD: each line converted, rounded to the millionth.
    let (status, answer) = import(&app, &finance, "format=openai&rate=0.9", OPENAI_SAMPLE).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let usd_micro: [i64; 3] = [18_421_500, 6_050_000, 2_500];
    let expected: i64 = usd_micro.iter().map(|m| m * 9 / 10).sum();
    assert_eq!(answer["amount_micro"], expected);
    assert_eq!(answer["amount_minor"], (expected + 5_000) / 10_000);
    let scopes: Vec<Vec<String>> =
        sqlx::query_scalar("SELECT scopes FROM ai_spend_rows ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(scopes[0], vec!["proj_support_triage".to_string()]);
    // Each line is converted as written and rounded to the millionth once: 1.0000005 USD at
    // 0.92 is 0.92000046 EUR, 920,000 millionths (rounding the USD first gave 920,001);
    // 0.3333333 at 3 is 999,999.9 millionths, 1,000,000 (first rounded: 0.333333 x 3, 999,999);
    // 0.0000005 at 0.92 is 0.46 millionths, 0 (first rounded: 1 x 0.92, 1).
    for (value, rate, micro) in [
        ("1.0000005", "0.92", 920_000),
        ("0.3333333", "3", 1_000_000),
        ("0.0000005", "0.92", 0),
        ("0.0000005", "1.5", 1),
    ] {
        let one = format!(
            r#"{{"object": "page", "data": [{{"object": "bucket", "start_time": 1793491200, "end_time": 1793577600,
                "results": [{{"object": "organization.costs.result", "amount": {{"value": {value}, "currency": "usd"}},
                "line_item": "rate check {value} {rate}", "project_id": "p"}}]}}]}}"#
        );
        let (status, answer) = import(
            &app,
            &finance,
            &format!("format=openai&dry_run=true&rate={rate}"),
            &one,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["amount_micro"], micro, "{value} x {rate}: {answer}");
    }
}

#[tokio::test]
async fn anthropic_cents_and_github_csv_import() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let finance = app.token_for("demo-finance").await;
    let (_, u) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case(
                "Document RAG",
                app.node_id("Pretraining").await,
                50_000,
            )),
        )
        .await;
    let rag = u["id"].as_i64().unwrap();
    let (_, u) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case(
                "B2B leads",
                app.node_id("Pretraining").await,
                25_000,
            )),
        )
        .await;
    let leads = u["id"].as_i64().unwrap();
    app.api(
        "POST",
        "/api/v1/spend-rules",
        Some(&finance),
        Some(json!({"use_case_id": rag, "source": "anthropic", "scope": "wrkspc_document_rag"})),
    )
    .await;
    app.api(
        "POST",
        "/api/v1/spend-rules",
        Some(&finance),
        Some(json!({"use_case_id": leads, "service": "GitHub Copilot", "scope": "Sales"})),
    )
    .await;

    // "2412.5" and "987.25" cents in the workspace, "150" cents outside it.
    let (status, a) = import(&app, &finance, "format=anthropic", ANTHROPIC_SAMPLE).await;
    assert_eq!(status, StatusCode::CREATED, "{a}");
    assert_eq!(a["amount_micro"], (241_250 + 98_725 + 15_000) * 100);
    let share = |o: &Value, name: &str| {
        o["shares"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["use_case"] == name)
            .map(|s| s["amount_micro"].as_i64().unwrap())
    };
    assert_eq!(share(&a, "Document RAG"), Some((241_250 + 98_725) * 100));
    assert_eq!(share(&a, "unassigned"), Some(15_000 * 100));

    let (status, g) = import(&app, &finance, "format=github", GITHUB_SAMPLE).await;
    assert_eq!(status, StatusCode::CREATED, "{g}");
    assert_eq!(g["lines"], 3);
    assert_eq!(share(&g, "B2B leads"), Some(228_000_000));
    assert_eq!(share(&g, "unassigned"), Some(76_000_000));
    let desc: String = sqlx::query_scalar(
        "SELECT description FROM ai_spend_rows WHERE source = 'github' ORDER BY id LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(desc, "Copilot Business (12 user-months)");
}

#[tokio::test]
async fn malformed_files_are_refused_whole_with_a_clear_error() {
    let (app, _) = demo_in("EUR").await;
    let finance = app.token_for("demo-finance").await;
    let bad_line = FOCUS_SAMPLE.replacen("38.75", "38.7.5", 1);
    let no_column = FOCUS_SAMPLE.replacen("BilledCost", "Cost", 1);
    let mixed = FOCUS_SAMPLE.replacen("9.99,EUR", "9.99,USD", 1);
    // A line dated where no report, register page or CSV could show it (it was stored).
    let long_ago = FOCUS_SAMPLE.replacen(
        "2026-11-10T00:00:00Z,2026-11-11T00:00:00Z",
        "2020-01-10T00:00:00Z,2020-01-11T00:00:00Z",
        1,
    );
    let cases: [(&str, &str, &str); 7] = [
        ("format=focus", &bad_line, "line 3: BilledCost"),
        (
            "format=focus",
            &long_ago,
            "cost line 2: its charge period begins 2020-01-10, outside the months reports cover",
        ),
        ("format=focus", &no_column, "no BilledCost column"),
        ("format=focus", &mixed, "mixes currencies"),
        ("format=openai&rate=1", "{\"data\": [", "not valid JSON"),
        (
            "format=anthropic&rate=1",
            "{\"data\": [{\"starting_at\": \"2026-11-01T00:00:00Z\", \"ending_at\": \"2026-11-02T00:00:00Z\", \"results\": [{\"currency\": \"USD\", \"amount\": \"12 cents\"}]}]}",
            "data[0].results[0].amount",
        ),
        (
            "format=github&rate=1",
            "date,product\n2026-11-01,copilot\n",
            "no sku column",
        ),
    ];
    for (query, body, needle) in cases {
        let (status, answer) = import(&app, &finance, query, body).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{query}: {answer}"
        );
        assert_eq!(answer["error"]["code"], "malformed_file", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(needle) && message.contains("nothing was imported"),
            "{query}: {message}"
        );
    }
    let (status, answer) = import(&app, &finance, "format=xls", FOCUS_SAMPLE).await;
    assert_eq!(
        (status, answer["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("format"))
    );
    assert_eq!(count(&app, "ai_spend_imports").await, 0);
    assert_eq!(count(&app, "ai_spend_rows").await, 0);
    assert_eq!(app.audit_count("spend.import").await, 0);
}

#[tokio::test]
async fn finance_uploads_in_the_browser_with_a_preview() {
    let (app, users) = demo_in("EUR").await;
    let mut c = app.client();
    let (name, pw) = demo_password(&users, "finance");
    c.login(&name, &pw).await;
    let (status, page, _) = c.get("/ai/spend").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("enctype=\"multipart/form-data\""));
    // Without the form token: refused.
    let (status, _, _) = c
        .post_multipart(
            "/ai/spend/preview",
            &[("csrf", "forged"), ("format", "focus")],
            "f.csv",
            FOCUS_SAMPLE.as_bytes(),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A file in USD without a rate: the message, the form again, nothing imported.
    let (status, page, _) = c
        .post_multipart(
            "/ai/spend/preview",
            &[("format", "openai"), ("rate", "")],
            "o.json",
            OPENAI_SAMPLE.as_bytes(),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("the file is in USD"), "{page}");
    assert!(
        page.contains("<option value=\"openai\" selected"),
        "the format chosen is kept"
    );
    let (status, page, _) = c
        .post_multipart(
            "/ai/spend/preview",
            &[("format", "focus"), ("rate", "")],
            "focus-2026-11.csv",
            FOCUS_SAMPLE.as_bytes(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(
        page.contains("Confirm import") && page.contains("6 new"),
        "{page}"
    );
    let total = tranche::ai::spend::micro_to_money(focus_sum(FOCUS_SAMPLE, "")).display("EUR");
    assert!(page.contains(&total), "{total} in {page}");
    assert_eq!(count(&app, "ai_spend_rows").await, 0);
    let token = page
        .split("name=\"token\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let (status, _, location) = c.post("/ai/spend/import", &[("token", &token)]).await;
    assert_eq!(
        (status, location.as_deref()),
        (StatusCode::SEE_OTHER, Some("/ai/spend"))
    );
    assert_eq!(count(&app, "ai_spend_rows").await, 6);
    let (_, page, _) = c.get("/ai/spend").await;
    assert!(
        page.contains("Imported 6 new lines") && page.contains("focus-2026-11.csv"),
        "{page}"
    );
    // Confirming twice imports once.
    let (status, page, _) = c.post("/ai/spend/import", &[("token", &token)]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("already used"));
    assert_eq!(count(&app, "ai_spend_imports").await, 1);
}

/// A FOCUS file with one line per (cents, tag) on the first day of the current period.
pub(crate) fn focus_this_month(app: &TestApp, lines: &[(i64, &str)]) -> String {
    let period = tranche::ledger::Period::containing(jiff::Timestamp::now(), &app.state.site);
    let day = period.start.to_zoned(jiff::tz::TimeZone::UTC).date();
    let next = day.tomorrow().unwrap();
    let mut out = String::from(
        "BilledCost,BillingCurrency,ChargePeriodStart,ChargePeriodEnd,ServiceName,SubAccountId,Tags\n",
    );
    for (cents, tag) in lines {
        out.push_str(&format!(
            "{}.{:02},{},{day}T00:00:00Z,{next}T00:00:00Z,Azure OpenAI,sub-1,\"{{\"\"team\"\":\"\"{tag}\"\"}}\"\n",
            cents / 100,
            cents % 100,
            app.state.site.currency
        ));
    }
    out
}

#[tokio::test]
async fn limits_fire_alerts_and_a_critical_use_case_triggers_the_stop_rule() {
    let (app, users) = demo_in("EUR").await;
    let lead = app.token_for("demo-lead").await;
    let finance = app.token_for("demo-finance").await;
    let pretraining = app.node_id("Pretraining").await;
    let mut pager = use_case("Pager triage", pretraining, 10_000);
    pager["bag"] = json!("critical");
    pager["stop_rule"] = json!("any urgent ticket answered without review");
    let (_, p) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(pager))
        .await;
    let pager = p["id"].as_i64().unwrap();
    let (_, d) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case("Docs", pretraining, 100_000)),
        )
        .await;
    let docs = d["id"].as_i64().unwrap();
    for (uc, tag) in [(pager, "support"), (docs, "docs")] {
        app.api(
            "POST",
            "/api/v1/spend-rules",
            Some(&finance),
            Some(json!({"use_case_id": uc, "scope": format!("team={tag}")})),
        )
        .await;
    }
    let file = focus_this_month(&app, &[(12_000, "support"), (1_000, "docs")]);
    // Imported straight (the API would check the alerts at once, at the real time).
    let finance_account = app.account("demo-finance").await;
    tranche::ai::spend::import(
        &app.pool,
        &finance_account,
        &app.state.site,
        tranche::ai::import::Format::Focus,
        "f.csv",
        file.as_bytes(),
        None,
        true,
    )
    .await
    .unwrap();

    // Half-way through the month: pager has spent 120.00 of 100.00, docs 10.00 of 1,000.00.
    let site = &app.state.site;
    let period = tranche::ledger::Period::containing(jiff::Timestamp::now(), site);
    let mid = period.start + jiff::SignedDuration::from_hours(15 * 24);
    let fired = tranche::ledger::alerts::check_use_cases(&app.pool, site, mid)
        .await
        .unwrap();
    let mut pager_alerts: Vec<(i32, &str)> = fired
        .iter()
        .filter(|f| f.use_case_id == pager)
        .map(|f| (f.threshold_pct, f.kind))
        .collect();
    pager_alerts.sort();
    let mut expected: Vec<(i32, &str)> = [50, 75, 90, 100]
        .iter()
        .flat_map(|p| [(*p, "actual"), (*p, "forecast")])
        .collect();
    expected.sort();
    assert_eq!(pager_alerts, expected);
    // Docs' forecast: 10.00 over 15 days of the month is far below 50% of 1,000.00.
    let len_days = (period.end.as_second() - period.start.as_second()) / 86_400;
    assert!(1_000 * len_days / 15 < 50_000);
    assert!(fired.iter().all(|f| f.use_case_id != docs), "{fired:?}");
    assert_eq!(fired.iter().filter(|f| f.stop_rule).count(), 1);
    assert!(
        tranche::ledger::alerts::check_use_cases(&app.pool, site, mid)
            .await
            .unwrap()
            .is_empty(),
        "each fires once"
    );
    let lead_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-lead'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let stop_notes: i64 = sqlx::query_scalar("SELECT count(*) FROM notifications WHERE user_id = $1 AND message LIKE 'Stop rule triggered for Pager triage%'")
        .bind(lead_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stop_notes, 1);
    // The eight alerts fired together make one notice: the highest actual threshold (the
    // forecast, no higher than the spend, says nothing new).
    let limit_notes: Vec<String> = sqlx::query_scalar(
        "SELECT message FROM notifications WHERE user_id = $1 AND message LIKE 'AI use case Pager triage%' ORDER BY id",
    )
    .bind(lead_id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(limit_notes.len(), 1, "{limit_notes:?}");
    // 120.00 of 100.00: past the whole limit, said as such (not "100%").
    assert!(
        limit_notes[0].contains("has spent more than its")
            && limit_notes[0].contains("120.00 EUR of 100.00 EUR"),
        "{limit_notes:?}"
    );

    // The owner's page and home say so; Tranche says it cannot stop the service.
    let mut c = app.client();
    let (name, pw) = demo_password(&users, "lead");
    c.login(&name, &pw).await;
    let (_, page, _) = c.get(&format!("/ai/{pager}")).await;
    assert!(
        page.contains("Stop rule triggered")
            && page.contains("Tranche cannot stop an outside service"),
        "{page}"
    );
    assert!(
        page.contains("Over the monthly limit: 120.00 EUR spent of 100.00 EUR"),
        "{page}"
    );
    let (_, home, _) = c.get("/").await;
    assert!(
        home.contains("stop rule triggered")
            && home.contains("over its monthly limit: 120.00 EUR of 100.00 EUR"),
        "{home}"
    );

    // Only the owner acknowledges, once; audited.
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/use-cases/{pager}/acknowledge"),
            Some(&finance),
            Some(json!({"note": "x"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/use-cases/{pager}/acknowledge"),
            Some(&lead),
            Some(json!({"note": "paused the Azure deployment"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/use-cases/{pager}/acknowledge"),
            Some(&lead),
            Some(json!({"note": "again"})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("nothing_to_acknowledge"))
    );
    assert_eq!(app.audit_count("use_case.stop_acknowledge").await, 1);
    let (_, page, _) = c.get(&format!("/ai/{pager}")).await;
    assert!(
        page.contains("acknowledged by demo-lead") && page.contains("paused the Azure deployment")
    );
    // The criterion can be reported by hand, once a month: this month it is already raised.
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/use-cases/{pager}/stop-criterion"),
            Some(&lead),
            Some(json!({"reason": "a reply went out unreviewed"})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("already_triggered"))
    );
}

#[tokio::test]
async fn the_monthly_review_applies_the_decision_and_keeps_the_history() {
    let (app, users) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let (_, u) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case(
                "B2B leads",
                app.node_id("Pretraining").await,
                25_000,
            )),
        )
        .await;
    let id = u["id"].as_i64().unwrap();
    app.api(
        "PUT",
        &format!("/api/v1/use-cases/{id}/status"),
        Some(&lead),
        Some(json!({"status": "active"})),
    )
    .await;
    // Registered before last month ended (setup): last month waits for a decision.
    sqlx::query("UPDATE ai_use_cases SET created_at = now() - interval '40 days' WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    let site = &app.state.site;
    let now = jiff::Timestamp::now();
    let current = tranche::ledger::Period::containing(now, site);
    let previous = tranche::ledger::Period::containing(
        current.start - jiff::SignedDuration::from_secs(1),
        site,
    );
    let month = |p: tranche::ledger::Period| {
        p.start
            .to_zoned(site.time_zone.clone())
            .strftime("%Y-%m")
            .to_string()
    };
    let label = previous
        .start
        .to_zoned(site.time_zone.clone())
        .strftime("%B %Y")
        .to_string();
    let mut c = app.client();
    let (name, pw) = demo_password(&users, "lead");
    c.login(&name, &pw).await;
    let (_, home, _) = c.get("/").await;
    assert!(
        home.contains(&format!("waits for your decision on {label}")),
        "{home}"
    );

    let review = |decision: &str, limit: Option<i64>, m: String| json!({"month": m, "decision": decision, "new_limit_minor": limit, "metric_value": "12 qualified leads accepted", "comment": "on track"});
    let path = format!("/api/v1/use-cases/{id}/reviews");
    let (status, answer) = app
        .api(
            "POST",
            &path,
            Some(&lead),
            Some(review("continue", None, month(previous))),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (_, home, _) = c.get("/").await;
    assert!(!home.contains("waits for your decision"), "decided");
    for (decision, limit, field) in [
        ("expand", Some(20_000), "new_limit_minor"),
        ("expand", None, "new_limit_minor"),
        // Past the bound every amount has (a limit no form could then save again).
        ("expand", Some(i64::MAX), "new_limit_minor"),
        (
            "expand",
            Some(tranche::domain::Money::MAX.0 + 1),
            "new_limit_minor",
        ),
        ("continue", Some(30_000), "new_limit_minor"),
        ("pause", None, "decision"),
    ] {
        let (status, answer) = app
            .api(
                "POST",
                &path,
                Some(&lead),
                Some(review(decision, limit, month(current))),
            )
            .await;
        assert_eq!(
            (status, answer["error"]["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{decision} {limit:?}: {answer}"
        );
    }
    let next = tranche::ledger::Period::containing(current.end, site);
    let (status, answer) = app
        .api(
            "POST",
            &path,
            Some(&lead),
            Some(review("continue", None, month(next))),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("month"))
    );
    // Nor a month older than the 24 the reports keep.
    let mut old = review("continue", None, month(current));
    old["month"] = json!("1900-01");
    let (status, answer) = app.api("POST", &path, Some(&lead), Some(old)).await;
    assert_eq!(
        (status, answer["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("month")),
        "{answer}"
    );
    let (status, _) = app
        .api(
            "POST",
            &path,
            Some(&lead),
            Some(review("expand", Some(40_000), month(current))),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, one) = app
        .api("GET", &format!("/api/v1/use-cases/{id}"), Some(&lead), None)
        .await;
    assert_eq!(
        (one["monthly_limit_minor"].as_i64(), one["status"].as_str()),
        (Some(40_000), Some("active"))
    );
    // Stop, through the page.
    let (status, _, _) = c
        .post(
            &format!("/ai/{id}/review"),
            &[
                ("month", &month(current)),
                ("decision", "stop"),
                ("new_limit", ""),
                ("metric_value", "3 leads"),
                ("comment", "not worth it"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, page, _) = c
        .post(
            &format!("/ai/{id}/review"),
            &[
                ("month", &month(current)),
                ("decision", "expand"),
                ("new_limit", "lots"),
                ("metric_value", "3 leads"),
                ("comment", "typed"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        page.contains("new limit:") && page.contains("value=\"typed\""),
        "input kept"
    );
    // Stopped, a review that says it goes on is refused: the status reopens it.
    let (status, answer) = app
        .api(
            "POST",
            &path,
            Some(&lead),
            Some(review("continue", None, month(current))),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "decision");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is stopped"),
        "{answer}"
    );
    let (_, history) = app.api("GET", &path, Some(&lead), None).await;
    let decisions: Vec<&str> = history["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["stop", "expand", "continue"]);
    assert_eq!(
        history["reviews"][1]["limit_minor"], 25_000,
        "the limit when decided is kept"
    );
    let (_, one) = app
        .api("GET", &format!("/api/v1/use-cases/{id}"), Some(&lead), None)
        .await;
    assert_eq!(one["status"], "stopped");
    assert_eq!(app.audit_count("use_case.review").await, 3);
    // Finance's table shows the last decision.
    let mut f = app.client();
    let (name, pw) = demo_password(&users, "finance");
    f.login(&name, &pw).await;
    let (_, list, _) = f.get("/ai").await;
    let this_month = current
        .start
        .to_zoned(site.time_zone.clone())
        .strftime("%B %Y")
        .to_string();
    assert!(list.contains(&format!("stop ({this_month})")), "{list}");
}

#[tokio::test]
async fn the_demo_loads_the_three_use_cases_with_a_month_of_spend_once() {
    let (app, _) = demo_in("EUR").await;
    let today = jiff::civil::date(2026, 12, 1);
    let (names, outcome) = tranche::demo::load_use_cases(&app.pool, &app.state.site, today)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        names,
        ["Support ticket triage", "Document RAG", "B2B leads"]
    );
    // 1 November to 1 December: 31 days, four lines a day and a weekly one (5 weeks).
    assert_eq!(outcome.new_lines, 31 * 4 + 5);
    assert_eq!(
        outcome.covers,
        ("2026-11-01".to_string(), "2026-12-01".to_string())
    );
    let unassigned = outcome
        .shares
        .iter()
        .find(|s| s.use_case_id.is_none())
        .unwrap();
    assert_eq!(
        (unassigned.lines, unassigned.amount_micro),
        (5, 5 * 9_990_000)
    );
    assert!(
        tranche::demo::load_use_cases(&app.pool, &app.state.site, today)
            .await
            .unwrap()
            .is_none(),
        "loads once"
    );
    let limits: Vec<i64> =
        sqlx::query_scalar("SELECT monthly_limit_minor FROM ai_use_cases ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(limits, [30_000, 50_000, 25_000]);
}

#[tokio::test]
async fn human_hours_are_priced_beside_the_spend_and_the_csv_has_every_use_case() {
    let (app, users) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let mut body = use_case(
        "Support ticket triage",
        app.node_id("Pretraining").await,
        30_000,
    );
    body["human_hourly_rate_minor"] = json!(4_500);
    let (_, u) = app
        .api("POST", "/api/v1/use-cases", Some(&lead), Some(body))
        .await;
    let id = u["id"].as_i64().unwrap();
    let site = &app.state.site;
    let month = tranche::ledger::Period::containing(jiff::Timestamp::now(), site)
        .start
        .to_zoned(site.time_zone.clone())
        .strftime("%Y-%m")
        .to_string();
    let path = format!("/api/v1/use-cases/{id}/hours");
    // Hours are worked, so a month that has not begun is refused and records nothing.
    let current = tranche::ledger::Period::containing(jiff::Timestamp::now(), site);
    let next = tranche::ledger::Period::containing(current.end, site)
        .start
        .to_zoned(site.time_zone.clone())
        .strftime("%Y-%m")
        .to_string();
    let (status, answer) = app
        .api(
            "POST",
            &path,
            Some(&lead),
            Some(json!({"month": next, "hours": "1", "activity": "review"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "month", "{answer}");
    let recorded: i64 =
        sqlx::query_scalar("SELECT count(*) FROM ai_human_hours WHERE use_case_id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded, 0);
    let (status, answer) = app
        .api(
            "POST",
            &path,
            Some(&lead),
            Some(json!({"month": month, "hours": "1.5", "activity": "review"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (_, answer) = app.api("POST", &path, Some(&lead), Some(json!({"month": month, "hours": 0.25, "activity": "exceptions", "note": "two escalations"}))).await;
    // 1 h 45 min at 45.00 an hour: 78.75.
    assert_eq!(
        (
            answer["month_minutes"].as_i64(),
            answer["month_human_cost_minor"].as_i64()
        ),
        (Some(105), Some(7_875))
    );
    // Nothing is rounded (1.001 hours was 60 minutes) and nothing passes the maximum
    // (74400.0000001 was accepted), as text or as a JSON number.
    for (hours, activity, field, says) in [
        (json!("-1"), "review", "hours", "not a positive number"),
        (json!("0.333"), "review", "hours", "more than two decimals"),
        (json!("1"), "coffee", "activity", ""),
        (json!("x"), "review", "hours", "not a positive number"),
        (json!("1.001"), "review", "hours", "more than two decimals"),
        (json!(1.001), "review", "hours", "more than two decimals"),
        (
            json!("74400.0000001"),
            "review",
            "hours",
            "more than two decimals",
        ),
        (
            json!(74400.0000001),
            "review",
            "hours",
            "more than two decimals",
        ),
        (json!("74400.05"), "review", "hours", "more than 74,400"),
        (json!(74401), "review", "hours", "more than 74,400"),
        // The document's pattern: digits and a decimal point only (the page reads commas).
        (json!("1,500"), "review", "hours", "not a positive number"),
        (json!("1,5"), "review", "hours", "not a positive number"),
        (json!(".5"), "review", "hours", "not a positive number"),
        (json!("1."), "review", "hours", "not a positive number"),
        (
            json!(true),
            "review",
            "hours",
            "\"true\" is not a positive number",
        ),
    ] {
        let (status, answer) = app
            .api(
                "POST",
                &path,
                Some(&lead),
                Some(json!({"month": month, "hours": hours, "activity": activity})),
            )
            .await;
        assert_eq!(
            (status, answer["error"]["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{hours} {activity}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{hours}: {message}");
    }
    assert_eq!(app.audit_count("use_case.hours").await, 2);
    // The page's form too: re-rendered with the message and what was typed.
    let mut lc = app.client();
    let (lead_name, lead_pw) = demo_password(&users, "lead");
    lc.login(&lead_name, &lead_pw).await;
    for (typed, says) in [
        ("1.001", "more than two decimals"),
        ("74400.0000001", "more than two decimals"),
        ("74401", "more than 74,400"),
    ] {
        let (status, page, _) = lc
            .post(
                &format!("/ai/{id}/hours"),
                &[
                    ("month", month.as_str()),
                    ("hours", typed),
                    ("activity", "review"),
                    ("note", ""),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{typed}");
        assert!(page.contains(says), "{typed}");
        assert!(page.contains(&format!("value=\"{typed}\"")), "{typed} kept");
    }
    assert_eq!(app.audit_count("use_case.hours").await, 2);
    let (_, one) = app
        .api("GET", &format!("/api/v1/use-cases/{id}"), Some(&lead), None)
        .await;
    assert_eq!(one["human"]["cost_minor"], 7_875);

    let mut c = app.client();
    let (name, pw) = demo_password(&users, "finance");
    c.login(&name, &pw).await;
    let (_, page, _) = c.get(&format!("/ai/{id}")).await;
    assert!(page.contains("1.75 h × 45.00 USD = 78.75 USD"), "{page}");
    let (status, csv_text, _) = c.get(&format!("/ai/use-cases.csv?period={month}")).await;
    assert_eq!(status, StatusCode::OK);
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 1);
    let get = |col: &str| rows[0][headers.iter().position(|h| h == col).unwrap()].to_string();
    assert_eq!(
        (
            get("use_case"),
            get("monthly_limit"),
            get("human_hours"),
            get("human_cost")
        ),
        (
            "Support ticket triage".into(),
            "300.00".into(),
            "1.75".into(),
            "78.75".into()
        )
    );
    let (status, _, _) = c.get("/ai/use-cases.csv?period=soon").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, reports, _) = c.get("/reports").await;
    assert!(
        reports.contains("/ai/use-cases.csv?period="),
        "the finance reports link to it"
    );
}

/// A FOCUS line for this month: `cost` in USD on day `day`, tagged `team=big`.
fn big_line(cost: &str, day: i8) -> String {
    let month = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .first_of_month();
    let at = |d: i8| format!("{}T00:00:00Z", month.with().day(d).build().unwrap());
    format!(
        "{cost},USD,{},{},{},{},Usage,Tokens,Azure OpenAI,AI and Machine Learning,Microsoft,sub-big,Big,\"{{\"\"team\"\":\"\"big\"\"}}\"\n",
        at(1),
        at(28),
        at(day),
        at(day + 1)
    )
}

/// Imported amounts whose total would leave the 64-bit range are refused (422
/// `malformed_file`, nothing imported): three lines of 4,600,000.00 USD at a rate of
/// 1,000,000 (4.6 x 10^18 millionths each, under the limit alone) in one file, one line too
/// large once converted, and a file that fits alone but not with what is stored. Reads of
/// stored sums beyond the range (left by the old code) answer 200. Before, the import wrapped
/// to a negative amount and `GET /api/v1/spend-imports` and `/api/v1/use-cases` answered 500.
#[tokio::test]
async fn imports_whose_sums_leave_the_range_are_refused_and_reads_never_fail() {
    let (app, _) = demo_in("EUR").await;
    let lead = app.token_for("demo-lead").await;
    let finance = app.token_for("demo-finance").await;
    let pretraining = app.node_id("Pretraining").await;
    let (_, u) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case("Big spender", pretraining, 30_000)),
        )
        .await;
    let uc = u["id"].as_i64().unwrap();
    let (status, _) = app
        .api(
            "POST",
            "/api/v1/spend-rules",
            Some(&finance),
            Some(json!({"use_case_id": uc, "scope": "team=big"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let header = FOCUS_SAMPLE.lines().next().unwrap();
    let file = |lines: &[String]| format!("{header}\n{}", lines.concat());
    let query = "format=focus&rate=1000000&file_name=big.csv";
    let refused = |answer: &Value, needle: &str| {
        assert_eq!(answer["error"]["code"], "malformed_file", "{answer}");
        assert_eq!(answer["error"]["field"], "file");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
        assert!(message.contains("nothing was imported"), "{message}");
    };
    let three = file(&[
        big_line("4600000.00", 2),
        big_line("4600000.00", 3),
        big_line("4600000.00", 4),
    ]);
    for q in [query.to_string(), format!("{query}&dry_run=true")] {
        let (status, answer) = import(&app, &finance, &q, &three).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        refused(&answer, "too large to add up");
    }
    // 10,000,000.00 x 1,000,000 = 10^19 millionths: over the range alone.
    let (status, answer) = import(
        &app,
        &finance,
        query,
        &file(&[big_line("1.00", 5), big_line("10000000.00", 6)]),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    refused(&answer, "cost line 2");
    assert_eq!(count(&app, "ai_spend_rows").await, 0);
    assert_eq!(count(&app, "ai_spend_imports").await, 0);
    assert_eq!(app.audit_count("spend.import").await, 0);

    // Two files of one such line each fit (9.2 x 10^18 together); a third does not.
    let each: i64 = 4_600_000_000_000_000_000;
    for day in [2, 3] {
        let (status, answer) =
            import(&app, &finance, query, &file(&[big_line("4600000.00", day)])).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert_eq!(answer["amount_micro"], each);
    }
    let (status, answer) = import(&app, &finance, query, &file(&[big_line("4600000.00", 4)])).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    refused(&answer, "too large to add up");
    assert_eq!(count(&app, "ai_spend_rows").await, 2);
    let (status, cases) = app
        .api("GET", "/api/v1/use-cases", Some(&finance), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{cases}");
    let big = |cases: &Value| {
        cases
            .as_array()
            .or_else(|| cases["use_cases"].as_array())
            .unwrap()
            .iter()
            .find(|c| c["id"] == uc)
            .cloned()
            .unwrap()
    };
    assert_eq!(big(&cases)["spend"]["imported_micro"], 2 * each);
    assert_eq!(
        big(&cases)["spend"]["total_minor"],
        2 * each / 10_000,
        "no GPU spend: the imported amount in cents"
    );

    // Sums stored beyond the range (the old code let them in) are read without a 500: the
    // lines again, once assigned and twice unassigned.
    sqlx::query(
        "INSERT INTO ai_spend_rows (import_id, row_sha256, source, service, scopes, description, period_start, \
         period_end, amount_micro, original_amount, original_currency, use_case_id) \
         SELECT import_id, sha256(row_sha256 || c::text::bytea), source, service, scopes, description, period_start, \
         period_end, amount_micro, original_amount, original_currency, CASE WHEN c = 1 THEN use_case_id END \
         FROM ai_spend_rows, generate_series(1, 3) c",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let (status, listed) = app
        .api("GET", "/api/v1/spend-imports", Some(&finance), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["unassigned"]["count"], 4);
    assert_eq!(listed["unassigned"]["amount_micro"], i64::MAX);
    let (status, cases) = app
        .api("GET", "/api/v1/use-cases", Some(&finance), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{cases}");
    assert_eq!(big(&cases)["spend"]["imported_micro"], i64::MAX);
    let (status, _) = app
        .api(
            "GET",
            &format!("/api/v1/use-cases/{uc}"),
            Some(&finance),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

/// A use case registered today is not alerted about last month, when its limit was not in
/// force, though its linked project spent far beyond it then (the demo's history).
#[tokio::test]
async fn a_new_use_case_is_not_alerted_about_months_before_it_existed() {
    let (app, _) = TestApp::with_demo().await;
    let admin = app.token_for("demo-admin").await;
    let owner = app.node_id("Organisation").await;
    let site = &app.state.site;
    let now = jiff::Timestamp::now();
    let current = tranche::ledger::Period::containing(now, site);
    let previous = tranche::ledger::Period::containing(
        current.start - jiff::SignedDuration::from_secs(1),
        site,
    );
    // Last month the project ran 8 GPUs for 10 hours (200.00 USD at 2.50 a GPU-hour).
    let project = app.node_id("fm-pretrain-7b").await;
    let pool_ids: (i64, i64) = sqlx::query_as(
        "SELECT c.id, m.id FROM clusters c, gpu_models m WHERE c.name = 'local' AND m.name = 'H100'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let mut conn = app.pool.acquire().await.unwrap();
    tranche::ledger::charge_usage_at(
        &app.pool,
        &mut conn,
        site,
        previous.start + jiff::SignedDuration::from_hours(24),
        project,
        pool_ids,
        8 * 36_000,
        true,
        None,
    )
    .await
    .unwrap();
    drop(conn);
    let mut body = use_case("Late", owner, 5_000);
    body["project_ids"] = json!([project]);
    body["bag"] = json!("critical");
    body["stop_rule"] = json!("stop when over the limit");
    let (status, created) = app
        .api("POST", "/api/v1/use-cases", Some(&admin), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_i64().unwrap();
    let spent_before = tranche::ai::spend::by_use_case(&app.pool, previous)
        .await
        .unwrap()
        .whole(&tranche::ai::get(&app.pool, id).await.unwrap())
        .total()
        .0;
    assert!(spent_before > 5_000, "the premise: {spent_before}");
    tranche::ledger::alerts::check_use_cases(&app.pool, site, now)
        .await
        .unwrap();
    let (alerts, triggers): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM ai_use_case_alerts WHERE use_case_id = $1 AND period_start < $2), \
                (SELECT count(*) FROM ai_stop_triggers WHERE use_case_id = $1 AND period_start < $2)",
    )
    .bind(id)
    .bind(tranche::ledger::to_time(current.start))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((alerts, triggers), (0, 0));
}

/// An imported line is dated in the organisation's zone, as the month it counts in (found by
/// a new-user check in Europe/Madrid: a line charged from 23:30 UTC on 30 November, 00:30 on
/// 1 December in Madrid, counted in December but shown as 30 November).
#[tokio::test]
async fn imported_lines_are_dated_in_the_organisations_zone() {
    let mut site = Site::for_tests();
    site.currency = "EUR".into();
    site.time_zone = jiff::tz::TimeZone::get("Europe/Madrid").unwrap();
    site.time_zone_name = "Europe/Madrid".into();
    site.periods = tranche::domain::PeriodCalendar::new(site.time_zone.clone());
    let app = TestApp::with_site(site).await;
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let finance = app.account("demo-finance").await;
    let header = FOCUS_SAMPLE.lines().next().unwrap();
    let file = format!(
        "{header}\n5.00,EUR,2026-12-01T00:00:00Z,2027-01-01T00:00:00Z,2026-11-30T23:30:00Z,2026-12-01T23:30:00Z,Usage,Tokens,Azure OpenAI,AI and Machine Learning,Microsoft,sub-x,X,\"{{}}\"\n"
    );
    let outcome = tranche::ai::spend::import(
        &app.pool,
        &finance,
        &app.state.site,
        tranche::ai::import::Format::Focus,
        "madrid.csv",
        file.as_bytes(),
        None,
        true,
    )
    .await
    .unwrap();
    // It ends at 00:30 on 2 December in Madrid.
    assert_eq!(
        outcome.covers,
        ("2026-12-01".to_string(), "2026-12-02".to_string())
    );
}
