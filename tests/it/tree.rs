//! The program tree: share validation, effective shares and entitlements against
//! hand-computed values, node administration and bad input.

use axum::http::StatusCode;
use serde_json::json;
use tranche::db::tree::{self as tree_db, NodeKind};
use tranche::domain::{PeriodCalendar, Share};

use crate::support::{TestApp, demo_password};

fn mid_november() -> jiff::Timestamp {
    "2026-11-15T12:00:00Z".parse().unwrap()
}

/// The program tree for November 2026 in UTC.
async fn tree_in_november(app: &TestApp) -> tree_db::TreeView {
    tree_db::load(
        &app.pool,
        mid_november(),
        &PeriodCalendar::new(jiff::tz::TimeZone::UTC),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn demo_entitlements_match_hand_computed_values() {
    let (app, _) = TestApp::with_demo().await;
    let tree = tree_in_november(&app).await;
    assert_eq!(tree.period_seconds(), 30 * 24 * 3600);
    let cols: Vec<(&str, &str, i64)> = tree
        .capacity
        .iter()
        .map(|c| (c.cluster.as_str(), c.gpu_model.as_str(), c.gpus))
        .collect();
    assert_eq!(
        cols,
        [
            ("b200-west", "B200", 256),
            ("b300-lab", "B300", 88),
            ("h100-east", "H100", 1024)
        ]
    );
    // fm-distillation: Foundation Models 50% x Efficiency 10% x 60% = 3% of the organisation.
    let p = tree.node(app.node_id("fm-distillation").await).unwrap();
    assert_eq!(p.effective.percent(), "3");
    // GPU-hours over 720 h: B200 256*720*0.03 = 5,529.6; B300 88*720*0.03 = 1,900.8;
    // H100 1024*720*0.03 = 22,118.4.
    let milli: Vec<i64> = p.entitlements.iter().map(|e| e.milli_gpu_hours).collect();
    assert_eq!(milli, [5_529_600, 1_900_800, 22_118_400]);
    // Money at 2.50 per weighted GPU-hour: B200 5,529.6*1.8*250 = 2,488,320; B300 1,900.8*2.5*250
    // = 1,188,000; H100 22,118.4*1.0*250 = 5,529,600 minor units; total 9,205,920.
    let money: Vec<i64> = p.entitlements.iter().map(|e| e.money.0).collect();
    assert_eq!(money, [2_488_320, 1_188_000, 5_529_600]);
    assert_eq!(p.money_total.0, 9_205_920);
}

#[tokio::test]
async fn effective_share_and_rounding_on_uneven_shares() {
    let (app, _) = TestApp::with_admin().await;
    let admin = tranche::auth::Account::load(&app.pool, 1)
        .await
        .unwrap()
        .unwrap();
    let root = app.node_id("Organisation").await;
    let model = tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1.5", "1.99")
        .await
        .unwrap();
    assert!(model > 0);
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c1")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "n1", "H100", "8")
        .await
        .unwrap();
    let a = tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "A",
        NodeKind::Group,
        Share::parse_percent("33.33").unwrap(),
    )
    .await
    .unwrap();
    let p = tree_db::create_node(
        &app.pool,
        &admin,
        a,
        "p",
        NodeKind::Project,
        Share::parse_percent("33.33").unwrap(),
    )
    .await
    .unwrap();
    let tree = tree_in_november(&app).await;
    let node = tree.node(p).unwrap();
    // 0.3333 * 0.3333 = 0.11108889 -> 11.11% shown.
    assert_eq!(node.effective.percent(), "11.11");
    // 8 GPUs * 720 h * 0.11108889 = 639.8720064 GPU-hours -> 639,872 milli.
    assert_eq!(node.entitlements[0].milli_gpu_hours, 639_872);
    // 639.8720064 * 1.5 * 199 = 191,001.79 -> 191,002 minor units (half up).
    assert_eq!(node.entitlements[0].money.0, 191_002);
}

#[tokio::test]
async fn a_month_with_a_clock_change_has_one_more_hour() {
    let (app, _) = TestApp::with_demo().await;
    let berlin = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
    let tree = tree_db::load(
        &app.pool,
        "2026-10-10T00:00:00Z".parse().unwrap(),
        &PeriodCalendar::new(berlin),
    )
    .await
    .unwrap();
    assert_eq!(tree.period_seconds(), (31 * 24 + 1) * 3600);
    let root = tree.nodes.first().unwrap();
    // 1,024 H100 over 745 h = 762,880 GPU-hours.
    assert_eq!(root.entitlements[2].milli_gpu_hours, 762_880_000);
}

#[tokio::test]
async fn lead_changes_a_childs_share_and_effective_shares_follow() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = demo_password(&users, "lead");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let fm = app.node_id("Foundation Models").await;
    let pretraining = app.node_id("Pretraining").await;
    let post_training = app.node_id("Post-training").await;
    // Move 10 points from Pretraining (30%) to Post-training (25%) in one form.
    let (status, _, location) = c
        .post(
            &format!("/tree/nodes/{fm}/shares"),
            &[
                (&format!("share_{pretraining}"), "20"),
                (&format!("share_{post_training}"), "35"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location, Some(format!("/tree/nodes/{fm}")));
    assert_eq!(app.share_bp("Pretraining").await, 2000);
    assert_eq!(app.share_bp("Post-training").await, 3500);
    let (_, body, _) = c.get(&format!("/tree/nodes/{fm}")).await;
    assert!(body.contains("Shares saved."));
    // Post-training: 50% x 35% = 17.5%.
    let tree = tree_in_november(&app).await;
    assert_eq!(
        tree.node(post_training).unwrap().effective.percent(),
        "17.5"
    );
    assert_eq!(app.audit_count("share.update").await, 2);
}

#[tokio::test]
async fn invalid_shares_rerender_with_the_typed_value_and_change_nothing() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = demo_password(&users, "lead");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let fm = app.node_id("Foundation Models").await;
    let pretraining = app.node_id("Pretraining").await;
    let field = format!("share_{pretraining}");
    for (typed, message) in [
        ("abc", "is not a number"),
        ("-5", "cannot be negative"),
        ("101", "cannot exceed 100%"),
        ("12.345", "at most two decimals"),
        ("45", "would sum to 115%"),
    ] {
        let (status, body, _) = c
            .post(&format!("/tree/nodes/{fm}/shares"), &[(&field, typed)])
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{typed}");
        assert!(body.contains(message), "{typed}: expected {message:?}");
        assert!(
            body.contains(&format!("name=\"{field}\" value=\"{typed}\"")),
            "{typed} is kept in the form"
        );
        assert_eq!(
            app.share_bp("Pretraining").await,
            3000,
            "{typed} changed nothing"
        );
    }
    assert_eq!(app.audit_count("share.update").await, 0);
}

#[tokio::test]
async fn shares_are_checked_in_the_database_too() {
    let (app, _) = TestApp::with_demo().await;
    let pretraining = app.node_id("Pretraining").await;
    let err = sqlx::query("UPDATE tree_nodes SET share_bp = 9000 WHERE id = $1")
        .bind(pretraining)
        .execute(&app.pool)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("over 100%"), "{err}");
    let err = sqlx::query("UPDATE tree_nodes SET share_bp = 10001 WHERE id = $1")
        .bind(pretraining)
        .execute(&app.pool)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("check"), "{err}");
}

#[tokio::test]
async fn admin_creates_renames_moves_and_archives_nodes() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = demo_password(&users, "admin");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let fm = app.node_id("Foundation Models").await;
    // Foundation Models' teams already hold 100%: a new child must take 0%.
    let (status, body, _) = c
        .post(
            &format!("/tree/nodes/{fm}/children"),
            &[("name", "Agents"), ("kind", "group"), ("share", "5")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("at most 0% is left"), "{body}");
    assert!(body.contains("value=\"Agents\""));
    let (status, _, _) = c
        .post(
            &format!("/tree/nodes/{fm}/children"),
            &[("name", "Agents"), ("kind", "group"), ("share", "0")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let agents = app.node_id("Agents").await;
    // Duplicate and over-long names.
    let (status, body, _) = c
        .post(
            &format!("/tree/nodes/{fm}/children"),
            &[("name", "Agents"), ("kind", "group"), ("share", "0")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("already exists"));
    let long = "x".repeat(65);
    let (status, body, _) = c
        .post(
            &format!("/tree/nodes/{fm}/children"),
            &[("name", &long), ("kind", "group"), ("share", "0")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("at most 64 characters"));
    let (status, _, _) = c
        .post(
            &format!("/tree/nodes/{agents}/rename"),
            &[("name", "Agentic")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let ar = app.node_id("Applied Research").await;
    let (status, _, _) = c
        .post(
            &format!("/tree/nodes/{agents}/move"),
            &[("parent", &ar.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let parent: i64 = sqlx::query_scalar("SELECT parent_id FROM tree_nodes WHERE id = $1")
        .bind(agents)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(parent, ar);
    // A node cannot move under its own subtree.
    let biology = app.node_id("Biology").await;
    let (status, body, _) = c
        .post(
            &format!("/tree/nodes/{ar}/move"),
            &[("parent", &biology.to_string())],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("own subtree"));
    // A node with live children cannot be archived; an empty one can.
    let (status, body, _) = c.post(&format!("/tree/nodes/{ar}/archive"), &[]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("live children"));
    let (status, _, _) = c.post(&format!("/tree/nodes/{agents}/archive"), &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, body, _) = c.get("/tree").await;
    assert!(!body.contains("Agentic"), "archived nodes leave the tree");
    // The root is the organisation's to name too (a Spanish site: "Organización"); it cannot
    // move or be archived, so those forms are not offered.
    let root = app.node_id("Organisation").await;
    let (_, page, _) = c.get(&format!("/tree/nodes/{root}")).await;
    assert!(
        page.contains(&format!("/tree/nodes/{root}/rename")),
        "{page}"
    );
    assert!(
        !page.contains(&format!("/tree/nodes/{root}/move")),
        "{page}"
    );
    let (status, _, _) = c
        .post(
            &format!("/tree/nodes/{root}/rename"),
            &[("name", "Organización")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, body, _) = c.get("/tree").await;
    assert!(body.contains("Organización"), "{body}");
    // Unknown node ids.
    let (status, _, _) = c.post("/tree/nodes/999999/rename", &[("name", "x")]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = c.get("/tree/nodes/999999").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn project_page_shows_the_budget_bag_and_lead_sets_the_budget() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = demo_password(&users, "lead");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let p = app.node_id("fm-rlhf").await;
    let (status, body, _) = c.get(&format!("/projects/{p}")).await;
    assert_eq!(status, StatusCode::OK);
    for text in [
        "Period budget",
        "Monthly money cap",
        "Self-service limit",
        "64 GPU-hours",
        "Members",
    ] {
        assert!(body.contains(text), "{text}");
    }
    let (status, body, _) = c
        .post(
            &format!("/projects/{p}/budget"),
            &[
                ("period_budget", "-3"),
                ("money_cap", ""),
                ("self_service_gpu_hours", "64"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("cannot be negative") && body.contains("value=\"-3\""));
    let (status, _, _) = c
        .post(
            &format!("/projects/{p}/budget"),
            &[
                ("period_budget", "50,000"),
                ("money_cap", "40000.50"),
                ("self_service_gpu_hours", "128"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row: (Option<i64>, Option<i64>, i32) =
        sqlx::query_as("SELECT period_budget_minor, money_cap_minor, self_service_gpu_hours FROM projects WHERE node_id = $1").bind(p).fetch_one(&app.pool).await.unwrap();
    assert_eq!(row, (Some(5_000_000), Some(4_000_050), 128));
    let (_, body, _) = c.get(&format!("/projects/{p}")).await;
    assert!(body.contains("40,000.50 USD"), "the cap lowers the budget");
    // Members.
    let (status, _, _) = c
        .post(
            &format!("/projects/{p}/members"),
            &[("user", "demo-researcher")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, body, _) = c
        .post(&format!("/projects/{p}/members"), &[("user", "ghost")])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("no user named") && body.contains("value=\"ghost\""));
}

#[tokio::test]
async fn api_share_errors_are_json_4xx() {
    let (app, _) = TestApp::with_demo().await;
    let token = app.token_for("demo-admin").await;
    let fm = app.node_id("Foundation Models").await;
    let pre = app.node_id("Pretraining").await;
    let path = format!("/api/v1/nodes/{fm}/shares");
    for (body, code) in [
        (
            json!({"shares": [{"node": pre, "share": "abc"}]}),
            "invalid_input",
        ),
        (
            json!({"shares": [{"node": pre, "share": -1}]}),
            "invalid_input",
        ),
        (
            json!({"shares": [{"node": pre, "share": 100.5}]}),
            "invalid_input",
        ),
        (
            json!({"shares": [{"node": pre, "share": 80}]}),
            "invalid_input",
        ),
        (
            json!({"shares": [{"node": 999999, "share": 1}]}),
            "not_found",
        ),
        (json!({"shares": "nope"}), "invalid_input"),
    ] {
        let (status, answer) = app
            .api("PUT", &path, Some(&token), Some(body.clone()))
            .await;
        assert!(status.is_client_error(), "{body}: {status}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
    }
    // A share that is neither a number nor a string is named in words, not serde's.
    let (status, answer) = app
        .api(
            "PUT",
            &path,
            Some(&token),
            Some(json!({"shares": [{"node": pre, "share": null}]})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("null is not a share") && !message.contains("variant"),
        "{answer}"
    );
    assert_eq!(app.share_bp("Pretraining").await, 3000);
    let (status, _) = app
        .api(
            "PUT",
            &path,
            Some(&token),
            Some(json!({"shares": [{"node": pre, "share": "25.5%"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(app.share_bp("Pretraining").await, 2550);
}

#[tokio::test]
async fn the_cached_tree_follows_every_change() {
    let (app, _) = TestApp::with_demo().await;
    let t = app.token_for("demo-admin").await;
    let root_h100 = |tree: &serde_json::Value| {
        tree["nodes"][0]["entitlements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["gpu_model"] == "H100")
            .unwrap()["gpu_hours"]
            .as_f64()
            .unwrap()
    };
    let (_, before) = app.api("GET", "/api/v1/tree", Some(&t), None).await;
    let hours = before["period"]["hours"].as_f64().unwrap();
    assert_eq!(root_h100(&before), 1024.0 * hours);
    // Inventory change: one more 8-GPU H100 node.
    let cluster: i64 = sqlx::query_scalar("SELECT id FROM clusters WHERE name = 'h100-east'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/clusters/{cluster}/nodes"),
            Some(&t),
            Some(json!({"name": "h100-east-999", "gpu_model": "H100", "gpu_count": 8})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, after) = app.api("GET", "/api/v1/tree", Some(&t), None).await;
    assert_eq!(root_h100(&after), 1032.0 * hours);
    // A change made directly in the database (another replica, say) is seen too.
    sqlx::query("UPDATE nodes SET gpu_count = 4 WHERE name = 'h100-east-999'")
        .execute(&app.pool)
        .await
        .unwrap();
    let (_, again) = app.api("GET", "/api/v1/tree", Some(&t), None).await;
    assert_eq!(root_h100(&again), 1028.0 * hours);
}

#[tokio::test]
async fn a_lead_budgets_within_their_nodes_entitlement() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let p = app.node_id("fm-rlhf").await;
    let path = format!("/api/v1/projects/{p}/budget");
    let (status, body) = app.api("PUT", &path, Some(&lead), Some(json!({"period_budget_minor": 9_223_372_036_854_775_807_i64, "money_cap_minor": null, "self_service_gpu_hours": 64}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    // The field is the JSON one sent, not the project page form's `period_budget`.
    assert_eq!(body["error"]["field"], "period_budget_minor", "{body}");
    // Foundation Models' entitlement is the sum of its projects' budgets by default, so any
    // raise above fm-rlhf's own entitlement overflows the parent's.
    let (_, project) = app
        .api("GET", &format!("/api/v1/projects/{p}"), Some(&lead), None)
        .await;
    let own = project["entitlement_money_minor"].as_i64().unwrap();
    let (status, body) = app.api("PUT", &path, Some(&lead), Some(json!({"period_budget_minor": own + 100, "money_cap_minor": null, "self_service_gpu_hours": 64}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than its entitlement"),
        "{body}"
    );
    // Lowering a sibling frees room for the raise.
    let sft = app.node_id("fm-sft").await;
    let (status, _) = app.api("PUT", &format!("/api/v1/projects/{sft}/budget"), Some(&lead), Some(json!({"period_budget_minor": 0, "money_cap_minor": null, "self_service_gpu_hours": 64}))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.api("PUT", &path, Some(&lead), Some(json!({"period_budget_minor": own + 100, "money_cap_minor": null, "self_service_gpu_hours": 64}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn names_are_unique_ignoring_case_and_free_of_invisible_characters() {
    let (app, _) = TestApp::with_demo().await;
    let t = app.token_for("demo-admin").await;
    let fm = app.node_id("Foundation Models").await;
    for name in ["FM-TOKENIZER", "\u{202e}evil", "zero\u{200b}width"] {
        let (status, body) = app
            .api(
                "POST",
                "/api/v1/nodes",
                Some(&t),
                Some(json!({"parent": fm, "name": name, "kind": "group", "share": 0})),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name:?}: {body}");
    }
    let (status, _) = app
        .api(
            "POST",
            "/api/v1/users",
            Some(&t),
            Some(json!({"name": "DEMO-LEAD", "role": "researcher"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = app.api("POST", "/api/v1/gpu-models", Some(&t), Some(json!({"name": "h100", "billing_weight_milli": 1000, "price_per_gpu_hour_minor": 1}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let cluster: i64 = sqlx::query_scalar("SELECT id FROM clusters WHERE name = 'h100-east'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/clusters/{cluster}/nodes"),
            Some(&t),
            Some(json!({"name": "b200-west-001", "gpu_model": "H100", "gpu_count": 8})),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "host names are unique across clusters"
    );
}

#[tokio::test]
async fn one_change_per_node_patch_and_no_duplicate_shares() {
    let (app, _) = TestApp::with_demo().await;
    let t = app.token_for("demo-admin").await;
    let pre = app.node_id("Pretraining").await;
    let ar = app.node_id("Applied Research").await;
    let (status, _) = app
        .api(
            "PATCH",
            &format!("/api/v1/nodes/{pre}"),
            Some(&t),
            Some(json!({"name": "PT-A", "parent": ar})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.node_id("Pretraining").await, pre, "nothing renamed");
    assert_eq!(app.audit_count("node.rename").await, 0);
    let fm = app.node_id("Foundation Models").await;
    let eff = app.node_id("Efficiency").await;
    let (status, _) = app
        .api(
            "PUT",
            &format!("/api/v1/nodes/{fm}/shares"),
            Some(&t),
            Some(json!({"shares": [{"node": eff, "share": 5}, {"node": eff, "share": 8}]})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.share_bp("Efficiency").await, 1000);
}

/// A disabled account is not made a project member (it could not use it, and enabling it
/// later would bring a membership nobody saw given): 422 on the field, nothing written.
#[tokio::test]
async fn a_disabled_user_is_not_made_a_member() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let project = app.node_id("fm-pretrain-7b").await;
    sqlx::query("UPDATE users SET disabled = true WHERE name = 'demo-finance'")
        .execute(&app.pool)
        .await
        .unwrap();
    let members = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM project_members WHERE project_id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    let before = (members().await, app.audit_count("member.add").await);
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/projects/{project}/members"),
            Some(&lead),
            Some(json!({"user": "demo-finance"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "user");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is disabled"),
        "{answer}"
    );
    assert_eq!(
        (members().await, app.audit_count("member.add").await),
        before
    );
}
