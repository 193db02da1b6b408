//! Every kind of change leaves an audit entry with who, what, before and after; leads see
//! their subtree's entries only.

use axum::http::StatusCode;
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
            Some(json!({"state": "draining", "reason": "fan replacement"})),
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

    let drain: i64 = sqlx::query_scalar("SELECT id FROM node_drains WHERE node_id = $1")
        .bind(node)
        .fetch_one(&app.pool)
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
            "node.drain",
            json!({"name": "a1", "state": "up"}),
            json!({"name": "a1", "state": "draining", "drain": drain, "reason": "fan replacement"}),
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

/// The whole audit log can be read, a page at a time (it showed only the newest entries):
/// the API's `limit` and `before`, the page's "Older entries" link; a bad cursor is refused.
#[tokio::test]
async fn the_audit_log_is_read_a_page_at_a_time() {
    let (app, users) = TestApp::with_demo().await;
    let admin = app.token_for("demo-admin").await;
    // A few more entries (token creations), so that pages of 3 and 4 are full.
    for _ in 0..8 {
        app.token_for("demo-admin").await;
    }
    let newest: Vec<i64> = sqlx::query_scalar("SELECT id FROM audit_log ORDER BY id DESC LIMIT 7")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(newest.len(), 7);
    let ids = |answer: &serde_json::Value| -> Vec<i64> {
        answer["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    let (status, first) = app
        .api("GET", "/api/v1/audit?limit=3", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(ids(&first), newest[..3]);
    assert_eq!(first["next_before"], newest[2]);
    let (_, second) = app
        .api(
            "GET",
            &format!("/api/v1/audit?limit=4&before={}", newest[2]),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(ids(&second), newest[3..7]);
    // The oldest page is not full and names no next one.
    let oldest: i64 = sqlx::query_scalar("SELECT min(id) FROM audit_log")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (_, last) = app
        .api(
            "GET",
            &format!("/api/v1/audit?before={}", oldest + 1),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(ids(&last), [oldest]);
    assert!(last["next_before"].is_null());
    for bad in ["abc", "0", "-5"] {
        let (status, answer) = app
            .api(
                "GET",
                &format!("/api/v1/audit?before={bad}"),
                Some(&admin),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {answer}");
        assert_eq!(answer["error"]["field"], "before", "{answer}");
    }
    // The page: 500 a page, a link to the older ones, and back.
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (name, pw) = crate::support::demo_password(&users, "admin");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let (status, page, _) = c.get(&format!("/audit?before={}", newest[2])).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("href=\"/audit\" rel=\"first\""), "{page}");
    assert_eq!(
        page.contains("rel=\"next\""),
        total - 3 > 500,
        "{total} entries"
    );
    let (status, page, _) = c.get("/audit?before=abc").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(
        page.contains("before is the id of an audit entry"),
        "{page}"
    );
}

#[tokio::test]
async fn tokens_and_approval_decisions_are_audited_and_shown_like_every_page() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = crate::support::demo_password(&users, "researcher");
    let mut researcher = app.client();
    researcher.login(&name, &pw).await;
    // An API token made on the account page, then revoked through the API with itself.
    let (status, body, _) = researcher
        .post("/account/tokens", &[("label", "laptop")])
        .await;
    assert_eq!(status, axum::http::StatusCode::SEE_OTHER, "{body}");
    let (_, page, _) = researcher.get("/account/tokens").await;
    let token = page
        .split("tr_")
        .nth(1)
        .map(|rest| format!("tr_{}", &rest[..64]))
        .expect("the new token is shown once");
    let (_, listed) = app.api("GET", "/api/v1/tokens", Some(&token), None).await;
    let id = listed["tokens"][0]["id"].as_i64().unwrap();
    let (status, _) = app
        .api(
            "DELETE",
            &format!("/api/v1/tokens/{id}"),
            Some(&token),
            None,
        )
        .await;
    assert!(status.is_success());
    // A cluster's agent token, made and revoked from the command line's functions.
    tranche::runs::agents::create_token(&app.pool, "local")
        .await
        .unwrap();
    assert_eq!(
        tranche::runs::agents::revoke_tokens(&app.pool, "local")
            .await
            .unwrap(),
        1
    );
    // Two runs above the self-service limit: the lead approves one and denies the other.
    let project = app.node_id("fm-pretrain-7b").await;
    sqlx::query("UPDATE projects SET self_service_gpu_hours = 1 WHERE node_id = $1")
        .bind(project)
        .execute(&app.pool)
        .await
        .unwrap();
    let researcher_token = app.token_for("demo-researcher").await;
    let lead = app.token_for("demo-lead").await;
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let (status, answer) = app
            .api(
                "POST",
                "/api/v1/runs",
                Some(&researcher_token),
                Some(
                    json!({"project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
                    "gpus": 8, "min_runtime_s": 3600, "time_limit_s": 7200, "command": "true"}),
                ),
            )
            .await;
        assert_eq!(answer["state"], "waiting_approval", "{status} {answer}");
        waiting.push(answer["id"].as_i64().unwrap());
    }
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/runs/{}/approve", waiting[0]),
            Some(&lead),
            Some(json!({"reason": "paper deadline"})),
        )
        .await;
    assert!(status.is_success(), "{answer}");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/runs/{}/deny", waiting[1]),
            Some(&lead),
            Some(json!({"reason": "not this month"})),
        )
        .await;
    assert!(status.is_success(), "{answer}");

    let expected = [
        (
            "api_token.create",
            Some("demo-researcher"),
            None,
            serde_json::Value::Null,
            json!({"user": "demo-researcher", "label": "laptop"}),
        ),
        (
            "api_token.revoke",
            Some("demo-researcher"),
            Some(id),
            json!({"user": "demo-researcher", "label": "laptop", "revoked": false}),
            json!({"user": "demo-researcher", "label": "laptop", "revoked": true}),
        ),
        (
            "agent_token.create",
            None,
            None,
            serde_json::Value::Null,
            json!({"cluster": "local"}),
        ),
        (
            "agent_token.revoke",
            None,
            None,
            json!({"cluster": "local", "revoked": false}),
            json!({"cluster": "local", "revoked": true}),
        ),
        (
            "run.approve",
            Some("demo-lead"),
            Some(waiting[0]),
            json!({"state": "waiting_approval"}),
            json!({"state": "queued", "reason": "paper deadline"}),
        ),
        (
            "run.deny",
            Some("demo-lead"),
            Some(waiting[1]),
            json!({"state": "waiting_approval"}),
            json!({"state": "denied", "reason": "not this month"}),
        ),
    ];
    for (action, actor, entity_id, before, after) in expected {
        type Row = (
            Option<String>,
            Option<i64>,
            Option<serde_json::Value>,
            Option<serde_json::Value>,
        );
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT u.name, a.entity_id, a.before, a.after FROM audit_log a \
             LEFT JOIN users u ON u.id = a.actor_id WHERE a.action = $1",
        )
        .bind(action)
        .fetch_all(&app.pool)
        .await
        .unwrap();
        let found = rows.iter().any(|(who, entity, b, a)| {
            who.as_deref() == actor
                && (entity_id.is_none() || *entity == entity_id)
                && b.clone().unwrap_or_default() == before
                && a.clone().unwrap_or_default() == after
        });
        assert!(found, "no {action} entry by {actor:?}; have {rows:?}");
    }
    // No token in the log.
    let text: String = sqlx::query_scalar(
        "SELECT string_agg(coalesce(before::text, '') || coalesce(after::text, ''), ' ') FROM audit_log",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(!text.contains("tr_") && !text.contains("tra_"), "{text}");

    // The page: times in the site's zone like every other page, states as fields and values.
    let (name, pw) = crate::support::demo_password(&users, "admin");
    let mut admin = app.client();
    admin.login(&name, &pw).await;
    let (_, body, _) = admin.get("/audit").await;
    let at: time::OffsetDateTime =
        sqlx::query_scalar("SELECT at FROM audit_log WHERE action = 'run.deny'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let shown = format!(
        "{:04}-{:02}-{:02} {:02}:{:02} +00:00",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute()
    );
    assert!(body.contains(&shown), "{shown} not in {body}");
    let raw = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    assert!(!body.contains(&raw), "raw time {raw} shown");
    assert!(body.contains("When (UTC)"));
    assert!(
        body.contains("<code>reason</code>: not this month"),
        "{body}"
    );
    assert!(
        body.contains("<code>state</code>: waiting_approval"),
        "{body}"
    );
    assert!(body.contains("<code>label</code>: laptop"), "{body}");
    assert!(body.contains("<code>revoked</code>: yes"), "{body}");
    for json_mark in ["{&#34;", "{&quot;", "{\""] {
        assert!(!body.contains(json_mark), "raw JSON on the page: {body}");
    }
}

/// Setting a node to the state it is in changes nothing and writes no entry; opening a drain
/// from the cluster page's state list needs a reason like the drain form.
#[tokio::test]
async fn node_states_change_only_when_they_change_and_drains_say_why() {
    let (app, users) = TestApp::with_demo().await;
    let (name, password) = crate::support::demo_password(&users, "admin");
    let mut admin = app.client();
    admin.login(&name, &password).await;
    let node: i64 = sqlx::query_scalar("SELECT min(id) FROM nodes WHERE state = 'up'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let entries = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM audit_log WHERE entity = 'cluster_node' AND entity_id = $1",
        )
        .bind(node)
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let path = format!("/admin/nodes/{node}/state");
    let (status, _, _) = admin.post(&path, &[("state", "up"), ("reason", "")]).await;
    assert_eq!(status, axum::http::StatusCode::SEE_OTHER);
    assert_eq!(entries().await, 0, "up on an up node is no change");
    let (status, page, _) = admin
        .post(&path, &[("state", "draining"), ("reason", " ")])
        .await;
    assert_eq!(status, axum::http::StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("say why the node is drained"), "{page}");
    let form = format!("action=\"/admin/nodes/{node}/state\"");
    let row = &page[page.find(&form).expect("the node's state form")..];
    let row = &row[..row.find("</form>").unwrap()];
    assert!(
        row.contains("<option value=\"draining\" selected>"),
        "the choice is kept: {row}"
    );

    let drains: i64 = sqlx::query_scalar("SELECT count(*) FROM node_drains WHERE node_id = $1")
        .bind(node)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!((drains, entries().await), (0, 0), "nothing written");
    let (status, _, _) = admin
        .post(&path, &[("state", "draining"), ("reason", "PSU swap")])
        .await;
    assert_eq!(status, axum::http::StatusCode::SEE_OTHER);
    let reason: String = sqlx::query_scalar("SELECT reason FROM node_drains WHERE node_id = $1")
        .bind(node)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(reason, "PSU swap");
    assert_eq!(entries().await, 1, "one node.drain entry");
    // Drained again: the same reason changes nothing, another one replaces it (one entry).
    for (reason, count) in [("PSU swap", 1), ("PSU swap and fans", 2), ("", 2)] {
        let (status, _, _) = admin
            .post(&path, &[("state", "draining"), ("reason", reason)])
            .await;
        assert_eq!(status, axum::http::StatusCode::SEE_OTHER, "{reason:?}");
        assert_eq!(entries().await, count, "{reason:?}");
    }
    let (drains, reason): (i64, String) =
        sqlx::query_as("SELECT count(*), max(reason) FROM node_drains WHERE node_id = $1")
            .bind(node)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((drains, reason.as_str()), (1, "PSU swap and fans"));
    let action: String = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE entity_id = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(node)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(action, "node.drain");
    // Down while draining, then drained again with a new reason: the open drain takes it.
    for (state, reason) in [("down", ""), ("draining", "PSU, fans and a new board")] {
        let (status, _, _) = admin
            .post(&path, &[("state", state), ("reason", reason)])
            .await;
        assert_eq!(status, axum::http::StatusCode::SEE_OTHER, "{state}");
    }
    let (drains, reason): (i64, String) =
        sqlx::query_as("SELECT count(*), max(reason) FROM node_drains WHERE node_id = $1")
            .bind(node)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((drains, reason.as_str()), (1, "PSU, fans and a new board"));
    // Back up with a reason, then down with one: each entry keeps the reason given.
    for (state, reason) in [("up", "board replaced"), ("down", "rack power cut")] {
        let (status, _, _) = admin
            .post(&path, &[("state", state), ("reason", reason)])
            .await;
        assert_eq!(status, axum::http::StatusCode::SEE_OTHER, "{state}");
        let after: serde_json::Value = sqlx::query_scalar(
            "SELECT after FROM audit_log WHERE entity_id = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(node)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(
            (&after["state"], &after["reason"]),
            (&json!(state), &json!(reason)),
            "{after}"
        );
    }

    // An inventory row saved unchanged writes nothing either.
    let (model, weight, price): (i64, i32, i64) = sqlx::query_as(
        "SELECT id, billing_weight_milli, price_per_gpu_hour_minor FROM gpu_models ORDER BY id LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let (weight, price) = (
        tranche::domain::format_milli(i64::from(weight)),
        tranche::domain::Money(price).plain(),
    );
    let (status, _, _) = admin
        .post(
            &format!("/admin/gpu-models/{model}"),
            &[("billing_weight", &weight), ("price", &price)],
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::SEE_OTHER);
    let updates: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'gpu_model.update'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(updates, 0);
}
