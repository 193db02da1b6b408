//! Every kind of change leaves an audit entry with who, what, before and after; leads see
//! their subtree's entries only.

use serde_json::json;

use crate::support::TestApp;

#[tokio::test]
async fn every_kind_of_change_is_audited() {
    let (app, _) = TestApp::with_demo().await;
    let t = app.token_for("demo-admin").await;
    let fm = app.node_id("Foundation Models").await;
    let pre = app.node_id("Pretraining").await;
    let rlhf = app.node_id("fm-rlhf").await;
    let ar = app.node_id("Applied Research").await;
    let researcher: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-researcher'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let calls: Vec<(&str, String, serde_json::Value)> = vec![
        (
            "PUT",
            format!("/api/v1/nodes/{fm}/shares"),
            json!({"shares": [{"node": pre, "share": 25}]}),
        ),
        (
            "POST",
            "/api/v1/nodes".into(),
            json!({"parent": fm, "name": "Agents", "kind": "group", "share": 0}),
        ),
        (
            "PUT",
            format!("/api/v1/projects/{rlhf}/budget"),
            json!({"period_budget_minor": 1000, "money_cap_minor": 500, "self_service_gpu_hours": 10, "alert_thresholds": [50, 75, 90]}),
        ),
        (
            "POST",
            format!("/api/v1/projects/{rlhf}/members"),
            json!({"user": "demo-finance"}),
        ),
        (
            "POST",
            "/api/v1/gpu-models".into(),
            json!({"name": "A100", "billing_weight_milli": 600, "price_per_gpu_hour_minor": 150}),
        ),
        (
            "POST",
            "/api/v1/clusters".into(),
            json!({"name": "a100-lab"}),
        ),
        (
            "POST",
            "/api/v1/users".into(),
            json!({"name": "carol", "role": "researcher"}),
        ),
        (
            "POST",
            format!("/api/v1/users/{researcher}/grants"),
            json!({"role": "lead", "node": "Pretraining"}),
        ),
    ];
    for (method, path, body) in calls {
        let (status, answer) = app.api(method, &path, Some(&t), Some(body)).await;
        assert!(status.is_success(), "{method} {path}: {answer}");
    }
    let agents = app.node_id("Agents").await;
    let a100: i64 = sqlx::query_scalar("SELECT id FROM gpu_models WHERE name = 'A100'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let cluster: i64 = sqlx::query_scalar("SELECT id FROM clusters WHERE name = 'a100-lab'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let more: Vec<(&str, String, Option<serde_json::Value>)> = vec![
        (
            "PATCH",
            format!("/api/v1/nodes/{agents}"),
            Some(json!({"name": "Agentic"})),
        ),
        (
            "PATCH",
            format!("/api/v1/nodes/{agents}"),
            Some(json!({"parent": ar})),
        ),
        (
            "PATCH",
            format!("/api/v1/nodes/{agents}"),
            Some(json!({"archived": true})),
        ),
        (
            "DELETE",
            format!("/api/v1/projects/{rlhf}/members/demo-finance"),
            None,
        ),
        (
            "PATCH",
            format!("/api/v1/gpu-models/{a100}"),
            Some(json!({"billing_weight_milli": 700, "price_per_gpu_hour_minor": 175})),
        ),
        (
            "POST",
            format!("/api/v1/clusters/{cluster}/nodes"),
            Some(json!({"name": "a1", "gpu_model": "A100", "gpu_count": 4})),
        ),
    ];
    for (method, path, body) in more {
        let (status, answer) = app.api(method, &path, Some(&t), body).await;
        assert!(status.is_success(), "{method} {path}: {answer}");
    }
    let node: i64 = sqlx::query_scalar("SELECT id FROM nodes WHERE name = 'a1'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (status, _) = app
        .api(
            "PUT",
            &format!("/api/v1/cluster-nodes/{node}/state"),
            Some(&t),
            Some(json!({"state": "draining"})),
        )
        .await;
    assert!(status.is_success());
    let grant: i64 =
        sqlx::query_scalar("SELECT id FROM role_grants WHERE user_id = $1 AND role = 'lead'")
            .bind(researcher)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let (status, _) = app
        .api(
            "DELETE",
            &format!("/api/v1/users/{researcher}/grants/{grant}"),
            Some(&t),
            None,
        )
        .await;
    assert!(status.is_success());
    tranche::db::users::set_password(&app.pool, None, "carol", "a-long-new-password")
        .await
        .unwrap();

    let expected = [
        (
            "share.update",
            json!({"name": "Pretraining", "share_percent": "30"}),
            json!({"name": "Pretraining", "share_percent": "25"}),
        ),
        (
            "node.create",
            serde_json::Value::Null,
            json!({"name": "Agents", "parent_id": fm, "kind": "group", "share_percent": "0"}),
        ),
        (
            "node.rename",
            json!({"name": "Agents"}),
            json!({"name": "Agentic"}),
        ),
        (
            "node.move",
            json!({"name": "Agentic", "parent_id": fm}),
            json!({"name": "Agentic", "parent_id": ar}),
        ),
        (
            "node.archive",
            json!({"name": "Agentic", "archived": false}),
            json!({"name": "Agentic", "archived": true}),
        ),
        (
            "budget.update",
            json!({"period_budget_minor": null, "money_cap_minor": null, "self_service_gpu_hours": 64, "alert_thresholds": [50, 75, 90]}),
            json!({"period_budget_minor": 1000, "money_cap_minor": 500, "self_service_gpu_hours": 10, "alert_thresholds": [50, 75, 90]}),
        ),
        (
            "member.add",
            serde_json::Value::Null,
            json!({"project_id": rlhf, "user": "demo-finance"}),
        ),
        (
            "member.remove",
            json!({"project_id": rlhf, "user": "demo-finance"}),
            serde_json::Value::Null,
        ),
        (
            "gpu_model.create",
            serde_json::Value::Null,
            json!({"name": "A100", "billing_weight_milli": 600, "price_per_gpu_hour_minor": 150}),
        ),
        (
            "gpu_model.update",
            json!({"name": "A100", "billing_weight_milli": 600, "price_per_gpu_hour_minor": 150}),
            json!({"name": "A100", "billing_weight_milli": 700, "price_per_gpu_hour_minor": 175}),
        ),
        (
            "cluster.create",
            serde_json::Value::Null,
            json!({"name": "a100-lab"}),
        ),
        (
            "node.add",
            serde_json::Value::Null,
            json!({"cluster": "a100-lab", "name": "a1", "gpu_model": "A100", "gpu_count": 4, "state": "up"}),
        ),
        (
            "node.state",
            json!({"name": "a1", "state": "up"}),
            json!({"name": "a1", "state": "draining"}),
        ),
        (
            "user.create",
            serde_json::Value::Null,
            json!({"name": "carol", "role": "researcher", "node_id": null}),
        ),
        (
            "user.grant",
            serde_json::Value::Null,
            json!({"name": "demo-researcher", "role": "lead", "node_id": pre}),
        ),
        (
            "user.revoke",
            json!({"name": "demo-researcher", "role": "lead", "node_id": pre}),
            serde_json::Value::Null,
        ),
        (
            "user.password",
            serde_json::Value::Null,
            json!({"name": "carol", "password": "changed"}),
        ),
    ];
    for (action, before, after) in expected {
        let rows: Vec<(Option<String>, Option<serde_json::Value>, Option<serde_json::Value>)> = sqlx::query_as(
            "SELECT u.name, a.before, a.after FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id WHERE a.action = $1 ORDER BY a.id",
        )
        .bind(action)
        .fetch_all(&app.pool)
        .await
        .unwrap();
        let found = rows.iter().any(|(_, b, a)| {
            b.clone().unwrap_or_default() == before && a.clone().unwrap_or_default() == after
        });
        assert!(
            found,
            "no {action} entry with before {before} and after {after}; have {rows:?}"
        );
        if action != "user.password" {
            assert!(
                rows.iter()
                    .any(|(who, _, _)| who.as_deref() == Some("demo-admin")),
                "{action} names its actor"
            );
        }
    }
    // No secrets in the log.
    let text: String = sqlx::query_scalar("SELECT string_agg(coalesce(before::text, '') || coalesce(after::text, ''), ' ') FROM audit_log").fetch_one(&app.pool).await.unwrap();
    assert!(!text.contains("a-long-new-password") && !text.contains("argon2"));
}

#[tokio::test]
async fn leads_see_only_their_subtrees_entries() {
    let (app, _) = TestApp::with_demo().await;
    let admin = app.token_for("demo-admin").await;
    let fm = app.node_id("Foundation Models").await;
    let ar = app.node_id("Applied Research").await;
    let pre = app.node_id("Pretraining").await;
    let bio = app.node_id("Biology").await;
    app.api(
        "PUT",
        &format!("/api/v1/nodes/{fm}/shares"),
        Some(&admin),
        Some(json!({"shares": [{"node": pre, "share": 20}]})),
    )
    .await;
    app.api(
        "PUT",
        &format!("/api/v1/nodes/{ar}/shares"),
        Some(&admin),
        Some(json!({"shares": [{"node": bio, "share": 20}]})),
    )
    .await;
    let lead = app.token_for("demo-lead").await;
    let (_, answer) = app.api("GET", "/api/v1/audit", Some(&lead), None).await;
    let nodes: Vec<i64> = answer["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node_id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        nodes,
        vec![pre],
        "the lead of Foundation Models sees Pretraining's change only"
    );
    let (_, answer) = app.api("GET", "/api/v1/audit", Some(&admin), None).await;
    let actions: Vec<&str> = answer["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions.iter().filter(|a| **a == "share.update").count(), 2);
}
