//! The JSON API: reads, token authentication and JSON errors with stable codes.

use axum::http::StatusCode;
use serde_json::json;

use crate::support::TestApp;

#[tokio::test]
async fn me_tree_and_clusters() {
    let (app, _) = TestApp::with_demo().await;
    let token = app.token_for("demo-researcher").await;
    let (status, me) = app.api("GET", "/api/v1/me", Some(&token), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["name"], "demo-researcher");
    assert_eq!(me["roles"], json!(["researcher"]));
    let projects: Vec<&str> = me["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(projects, ["fm-pretrain-70b", "fm-pretrain-7b"]);
    // The e-mail address for budget alerts: what PUT /me set, trimmed; a bad one is refused
    // and keeps the address; empty clears it.
    let stored: Option<String> =
        sqlx::query_scalar("SELECT email FROM users WHERE name = 'demo-researcher'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(me["email"], json!(stored));
    for (email, status_want, want) in [
        (
            " ada@example.org ",
            StatusCode::OK,
            json!("ada@example.org"),
        ),
        (
            "ada@localhost",
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("ada@example.org"),
        ),
        // A quoted local part with a space, and non-ASCII: outside the document's pattern
        // (the first reached the database's check, answered with its constraint's name).
        (
            "\"a b\"@b.co",
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("ada@example.org"),
        ),
        (
            "\u{fc}@ex\u{e4}mple.de",
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("ada@example.org"),
        ),
        ("", StatusCode::OK, json!(null)),
    ] {
        let body = json!({ "email": email });
        let (status, answer) = app.api("PUT", "/api/v1/me", Some(&token), Some(body)).await;
        assert_eq!(status, status_want, "{email:?}: {answer}");
        if status_want != StatusCode::OK {
            assert_eq!(answer["error"]["field"], "email", "{email:?}: {answer}");
        }
        let (_, me) = app.api("GET", "/api/v1/me", Some(&token), None).await;
        assert_eq!(me["email"], want, "{email:?}");
    }

    let admin = app.token_for("demo-admin").await;
    let (_, tree) = app.api("GET", "/api/v1/tree", Some(&admin), None).await;
    assert_eq!(tree["nodes"].as_array().unwrap().len(), 59);
    let sft = tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "fm-sft")
        .unwrap();
    // Foundation Models 50% x Post-training 25% x 30% = 3.75%.
    assert_eq!(sft["effective_share_percent"], 3.75);
    assert_eq!(sft["share_bp"], 3000);
    assert_eq!(sft["kind"], "project");
    let hours = tree["period"]["hours"].as_f64().unwrap();
    let h100 = sft["entitlements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["gpu_model"] == "H100")
        .unwrap();
    let expected = 1024.0 * hours * 0.0375;
    assert!(
        (h100["gpu_hours"].as_f64().unwrap() - expected).abs() < 0.001,
        "{h100} vs {expected}"
    );

    let (_, clusters) = app.api("GET", "/api/v1/clusters", Some(&token), None).await;
    let summary: Vec<(String, i64, usize)> = clusters["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["gpus"][0]["count"].as_i64().unwrap_or(0),
                c["nodes"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("b200-west".into(), 256, 32),
            ("b300-lab".into(), 88, 11),
            ("h100-east".into(), 1024, 128),
            // Served by `tranche agent` processes; no nodes until one registers.
            ("local".into(), 0, 0)
        ]
    );
    // Nodes in natural order: by name less the trailing number, then that number.
    app.declare_nodes(&["rackB-2", "rackA-10", "rackB-10", "rackA-2", "rackA-1"])
        .await;
    let (_, clusters) = app.api("GET", "/api/v1/clusters", Some(&token), None).await;
    let local: Vec<&str> = clusters["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "local")
        .unwrap()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        local,
        ["rackA-1", "rackA-2", "rackA-10", "rackB-2", "rackB-10"]
    );
}

#[tokio::test]
async fn bad_tokens_are_401_json() {
    let (app, _) = TestApp::with_demo().await;
    for token in [None, Some("tr_00"), Some("")] {
        let (status, body) = app.api("GET", "/api/v1/me", token, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body["error"]["code"], "unauthorized");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("API token"), "{message}");
        // An agent call is told about agent tokens, not to sign in.
        let (status, body) = app
            .api(
                "POST",
                "/api/v1/agent/sync",
                token,
                Some(serde_json::json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body["error"]["code"], "unauthorized");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("agent token"), "{message}");
    }
}

#[tokio::test]
async fn bad_input_is_4xx_json_never_500() {
    let (app, _) = TestApp::with_demo().await;
    let t = app.token_for("demo-admin").await;
    let fm = app.node_id("Foundation Models").await;
    let pretrain = app.node_id("fm-pretrain-7b").await;
    let local: i64 = sqlx::query_scalar("SELECT id FROM clusters WHERE name = 'local'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let cases: Vec<(&str, String, Option<serde_json::Value>, u16, &str)> = vec![
        (
            "POST",
            "/api/v1/nodes".into(),
            Some(json!({"parent": fm, "name": "Pretraining", "kind": "group", "share": 0})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/nodes".into(),
            Some(json!({"parent": 999999, "name": "x", "kind": "group", "share": 0})),
            404,
            "not_found",
        ),
        (
            "POST",
            "/api/v1/nodes".into(),
            Some(json!({"parent": fm, "name": "y".repeat(65), "kind": "group", "share": 0})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/nodes".into(),
            Some(json!({"parent": fm, "name": "z", "kind": "weird", "share": 0})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/nodes".into(),
            Some(json!({"parent": "one"})),
            422,
            "invalid_input",
        ),
        (
            "PATCH",
            "/api/v1/nodes/abc".into(),
            Some(json!({"name": "q"})),
            404,
            "not_found",
        ),
        (
            "PATCH",
            format!("/api/v1/nodes/{fm}"),
            Some(json!({})),
            422,
            "invalid_input",
        ),
        (
            "PATCH",
            format!("/api/v1/nodes/{fm}"),
            Some(json!({"parent": fm})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/gpu-models".into(),
            Some(
                json!({"name": "H100", "billing_weight_milli": 1000, "price_per_gpu_hour_minor": 1}),
            ),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/gpu-models".into(),
            Some(json!({"name": "X1", "billing_weight_milli": 0, "price_per_gpu_hour_minor": 1})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/clusters".into(),
            Some(json!({"name": "bad name!"})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/clusters/999999/nodes".into(),
            Some(json!({"name": "n", "gpu_model": "H100", "gpu_count": 8})),
            404,
            "not_found",
        ),
        (
            "PUT",
            "/api/v1/cluster-nodes/999999/state".into(),
            Some(json!({"state": "up"})),
            404,
            "not_found",
        ),
        (
            "POST",
            "/api/v1/users".into(),
            Some(json!({"name": "demo-lead", "role": "researcher"})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/users".into(),
            Some(json!({"name": "x", "role": "king"})),
            422,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/users".into(),
            // An unknown name is a 404 (docs/api.md), as an unknown id.
            Some(json!({"name": "x", "role": "lead", "node": "Nowhere"})),
            404,
            "not_found",
        ),
        (
            "POST",
            format!("/api/v1/projects/{pretrain}/members"),
            Some(json!({"user": "no-such-user"})),
            404,
            "not_found",
        ),
        (
            "POST",
            format!("/api/v1/clusters/{local}/nodes"),
            Some(json!({"name": "n-x", "gpu_model": "NOPE", "gpu_count": 8})),
            404,
            "not_found",
        ),
        (
            "POST",
            "/api/v1/users/999999/grants".into(),
            Some(json!({"role": "finance"})),
            404,
            "not_found",
        ),
        (
            "GET",
            "/api/v1/projects/999999".into(),
            None,
            404,
            "not_found",
        ),
        ("GET", "/api/v1/nothing-here".into(), None, 404, "not_found"),
        (
            "DELETE",
            "/api/v1/tree".into(),
            None,
            405,
            "method_not_allowed",
        ),
    ];
    for (method, path, body, status, code) in cases {
        let (got, answer) = app.api(method, &path, Some(&t), body.clone()).await;
        assert_eq!(got.as_u16(), status, "{method} {path} {body:?}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{method} {path}: {answer}");
    }
    // A path id that is not a number says so in the API's words (it said "Cannot parse `abc`
    // to a `i64`"); a missing required query parameter is named.
    let (_, answer) = app.api("GET", "/api/v1/runs/abc", Some(&t), None).await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("not a whole number") && !message.contains("i64"),
        "{answer}"
    );
    let (status, answer) = app
        .api("GET", "/api/v1/capacity?gpu_model=H100", Some(&t), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "cluster", "{answer}");
    // A control character in any query, also of an operation that reads none.
    for path in [
        "/api/v1/me?x=%01",
        "/api/v1/tree?lang=%07",
        "/api/v1/runs?x%01=1",
    ] {
        let (status, answer) = app.api("GET", path, Some(&t), None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_text", "{path}: {answer}");
    }
    // Malformed JSON text.
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/api/v1/clusters")
        .header("authorization", format!("Bearer {t}"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{not json"))
        .unwrap();
    let (status, body, _) = app.send(req).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("malformed_request"));
    // Nothing half-written: the failed calls created nothing.
    let clusters: i64 = sqlx::query_scalar("SELECT count(*) FROM clusters")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(clusters, 4, "the demo's four clusters and no more");
}

#[tokio::test]
async fn openapi_document_lists_the_endpoints() {
    let (app, _) = TestApp::with_demo().await;
    let (status, doc) = app.api("GET", "/api/v1/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/me",
        "/tree",
        "/clusters",
        "/nodes/{id}/shares",
        "/projects/{id}/budget",
        "/users",
        "/runs",
        "/runs/{id}",
        "/runs/{id}/approve",
        "/approvals",
        "/agent/register",
        "/agent/sync",
        "/metrics",
        "/cluster-nodes/{id}/drain",
        "/cluster-nodes/{id}/return",
        "/idle-flags",
        "/idle-flags/{id}/stop",
        "/use-cases",
        "/use-cases/{id}",
        "/use-cases/{id}/status",
        "/use-cases/{id}/reviews",
        "/use-cases/{id}/hours",
        "/use-cases/{id}/acknowledge",
        "/use-cases/{id}/stop-criterion",
        "/spend-imports",
        "/spend-rules",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} documented");
    }
}

#[tokio::test]
async fn healthz_answers_when_the_database_does() {
    let app = TestApp::new().await;
    let req = axum::http::Request::builder()
        .uri("/healthz")
        .body(axum::body::Body::empty())
        .unwrap();
    let (status, body, _) = app.send(req).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));
    app.pool.close().await;
    let req = axum::http::Request::builder()
        .uri("/healthz")
        .body(axum::body::Body::empty())
        .unwrap();
    let (status, _, _) = app.send(req).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn a_partial_budget_update_keeps_the_other_settings() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let project = app.node_id("fm-rlhf").await;
    let path = format!("/api/v1/projects/{project}/budget");
    let (status, answer) = app
        .api(
            "PUT",
            &path,
            Some(&lead),
            Some(serde_json::json!({"period_budget_minor": 5_000_000, "money_cap_minor": 6_000_000, "self_service_gpu_hours": 64})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // Only the self-service limit: the budget and the cap stay.
    let (status, answer) = app
        .api(
            "PUT",
            &path,
            Some(&lead),
            Some(serde_json::json!({"self_service_gpu_hours": 32})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let settings = tranche::db::tree::project(&app.pool, project)
        .await
        .unwrap();
    assert_eq!(settings.period_budget_minor, Some(5_000_000));
    assert_eq!(settings.money_cap_minor, Some(6_000_000));
    assert_eq!(settings.self_service_gpu_hours, 32);
    // An explicit null clears the cap.
    let (status, _) = app
        .api(
            "PUT",
            &path,
            Some(&lead),
            Some(serde_json::json!({"money_cap_minor": null})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let settings = tranche::db::tree::project(&app.pool, project)
        .await
        .unwrap();
    assert_eq!(settings.money_cap_minor, None);
    assert_eq!(settings.period_budget_minor, Some(5_000_000));
}

/// A project's ledger comes a page at a time, newest first: following `next_before` from the
/// first page visits every posting of the project exactly once, in descending id order (as the
/// database lists them), each page at most `limit` long; the last page says there is no next.
#[tokio::test]
async fn the_ledger_comes_a_page_at_a_time_newest_first() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let project = "fm-pretrain-7b";
    let (id, cluster, model): (i64, i64, i64) = sqlx::query_as(
        "SELECT t.id, c.id, m.id FROM tree_nodes t, clusters c, gpu_models m \
         WHERE t.name = $1 AND c.name = 'local' AND m.name = 'H100'",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    for k in 1..=20 {
        let mut tx = app.pool.begin().await.unwrap();
        tranche::ledger::charge_usage_at(
            &app.pool,
            &mut tx,
            &app.state.site,
            jiff::Timestamp::now() - jiff::SignedDuration::from_mins(k),
            id,
            (cluster, model),
            60 * k,
            true,
            None,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    let expected: Vec<i64> = sqlx::query_scalar(
        "SELECT p.id FROM ledger_postings p JOIN tree_nodes t ON t.id = p.project_id \
         WHERE t.name = $1 ORDER BY p.id DESC",
    )
    .bind(project)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(expected.len() >= 20, "{expected:?}");
    let mut seen: Vec<i64> = Vec::new();
    let mut before: Option<i64> = None;
    let mut pages = 0;
    loop {
        let path = match before {
            Some(b) => format!("/api/v1/ledger?project={project}&limit=7&before={b}"),
            None => format!("/api/v1/ledger?project={project}&limit=7"),
        };
        let (status, body) = app.api("GET", &path, Some(&lead), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let page: Vec<i64> = body["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect();
        assert!(page.len() <= 7, "{}", page.len());
        seen.extend(&page);
        pages += 1;
        match body["next_before"].as_i64() {
            Some(next) => {
                assert_eq!(
                    Some(&next),
                    page.last(),
                    "the next page starts below this one"
                );
                before = Some(next);
            }
            None => {
                assert!(body["next_before"].is_null(), "{body}");
                break;
            }
        }
        assert!(pages <= expected.len(), "pagination does not end");
    }
    assert_eq!(seen, expected);
    assert_eq!(pages, expected.len().div_ceil(7));
    // Out-of-range limits are clamped, not refused; a cursor that is not a whole number from 1
    // is 422 on before, as the runs list's (and the OpenAPI document's minimum 1); a limit that
    // is not a number is refused as the runs list refuses it.
    let (status, body) = app
        .api(
            "GET",
            &format!("/api/v1/ledger?project={project}&limit=0"),
            Some(&lead),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["entries"].as_array().unwrap().len(), 1);
    assert_eq!(body["next_before"].as_i64(), Some(expected[0]));
    let (status, body) = app
        .api(
            "GET",
            &format!("/api/v1/ledger?project={project}&before=1"),
            Some(&lead),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["entries"], json!([]));
    assert!(body["next_before"].is_null());
    for before in ["0", "-5", "x", "1.5"] {
        for list in ["ledger", "runs"] {
            let (status, body) = app
                .api(
                    "GET",
                    &format!("/api/v1/{list}?project={project}&before={before}"),
                    Some(&lead),
                    None,
                )
                .await;
            assert_eq!(
                (
                    status,
                    body["error"]["code"].as_str(),
                    body["error"]["field"].as_str()
                ),
                (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Some("invalid_input"),
                    Some("before")
                ),
                "{list} before={before}: {body}"
            );
        }
    }
    let (_, doc) = app.api("GET", "/api/v1/openapi.json", None, None).await;
    for list in ["/ledger", "/runs"] {
        let before = doc["paths"][list]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "before")
            .unwrap();
        assert_eq!(before["schema"]["minimum"], 1, "{list}");
    }
    let (status, body) = app
        .api(
            "GET",
            &format!("/api/v1/ledger?project={project}&limit=many"),
            Some(&lead),
            None,
        )
        .await;
    // A parameter of the wrong type is named, as a body's field is (400 is for a body that
    // is not JSON).
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "invalid_input", "{body}");
    assert_eq!(body["error"]["field"], "limit", "{body}");
    let (status, body) = app
        .api("GET", "/api/v1/runs?limit=1.5", Some(&lead), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "limit", "{body}");
}

/// Every API answer is JSON: a raw body over 2 MiB (a spend import, an approval) is 413
/// `payload_too_large` as a run's is, a denial without a body is the documented 422 on
/// `reason`, and the API's root with a trailing slash is the API's JSON 404.
#[tokio::test]
async fn raw_bodies_missing_bodies_and_the_api_root_answer_json() {
    let (app, _) = TestApp::with_demo().await;
    let admin = app.token_for("demo-admin").await;
    let lead = app.token_for("demo-lead").await;
    let researcher = app.token_for("demo-researcher").await;
    let big = vec![b'a'; 2 * 1024 * 1024 + 1];
    for (path, content_type) in [
        ("/api/v1/spend-imports?format=focus", "text/csv"),
        ("/api/v1/spend-imports?format=focus", "application/json"),
        ("/api/v1/runs/1/approve", "application/json"),
        ("/api/v1/runs", "application/json"),
    ] {
        let (status, body) = app
            .api_raw("POST", path, Some(&admin), content_type, big.clone())
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::PAYLOAD_TOO_LARGE, Some("payload_too_large")),
            "{path} {content_type}: {body}"
        );
    }
    // A run above the self-service limit (16 GPUs x 5 h = 80 protected GPU-hours > 64) waits
    // for approval; its denial needs a reason, with or without a body.
    let run = serde_json::json!({
        "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
        "gpus": 16, "min_runtime_s": 5 * 3600, "time_limit_s": 6 * 3600,
        "priority": 0, "resumable": true, "command": "python train.py"
    });
    let (status, answer) = app
        .api("POST", "/api/v1/runs", Some(&researcher), Some(run))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["state"], "waiting_approval", "{answer}");
    let id = answer["id"].as_i64().unwrap();
    // Every waiting run has a reason, in the API too (it was null while its page said why).
    let why = "Waits for a lead's approval: its protected contract (80.0 GPU-hours) is above the project's self-service limit.";
    let (_, run_now) = app
        .api(
            "GET",
            &format!("/api/v1/runs/{id}"),
            Some(&researcher),
            None,
        )
        .await;
    assert_eq!(run_now["wait_reason"], why, "{run_now}");
    let (_, inbox) = app.api("GET", "/api/v1/approvals", Some(&lead), None).await;
    let listed = inbox["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap();
    assert_eq!(listed["wait_reason"], why, "{listed}");
    let deny = format!("/api/v1/runs/{id}/deny");
    let (status, body) = app.api("POST", &deny, Some(&lead), None).await;
    let got = |status: StatusCode, body: &serde_json::Value| {
        (
            status,
            body["error"]["code"].as_str().map(str::to_string),
            body["error"]["field"].as_str().map(str::to_string),
        )
    };
    let want = (
        StatusCode::UNPROCESSABLE_ENTITY,
        Some("invalid_input".to_string()),
        Some("reason".to_string()),
    );
    assert_eq!(got(status, &body), want, "no body: {body}");
    let (status, body) = app.api("POST", &deny, Some(&lead), Some(json!({}))).await;
    assert_eq!(got(status, &body), want, "an empty object: {body}");
    let (status, body) = app
        .api(
            "POST",
            &deny,
            Some(&lead),
            Some(json!({"reason": "not now"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for path in ["/api/v1/", "/api/v1", "/api/nothing"] {
        let (status, body) = app.api("GET", path, Some(&lead), None).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found")),
            "{path}: {body}"
        );
    }
}

/// A GPU model's errors name the JSON fields, as the document does (they named the page
/// form's `price` and `billing_weight`).
#[tokio::test]
async fn gpu_model_errors_name_the_json_fields() {
    let (app, _) = TestApp::with_demo().await;
    let admin = app.token_for("demo-admin").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/gpu-models",
            Some(&admin),
            Some(json!({"name": "X2", "billing_weight_milli": 1000, "price_per_gpu_hour_minor": 200_000_000_000i64})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(
        answer["error"]["field"], "price_per_gpu_hour_minor",
        "{answer}"
    );
}

/// A filter naming a cluster, GPU model or project that does not exist is a 404 naming it
/// (docs/api.md), not an empty list as if the name were right; names are found whatever their
/// case, in every filter and lookup alike.
#[tokio::test]
async fn unknown_names_in_filters_are_404_and_names_match_whatever_their_case() {
    let (app, _) = TestApp::with_demo().await;
    let admin = app.token_for("demo-admin").await;
    let period = jiff::Zoned::now().strftime("%Y-%m").to_string();
    for path in [
        "/api/v1/runs?cluster=nowhere".to_string(),
        "/api/v1/runs?project=nobody".to_string(),
        "/api/v1/contracts?cluster=nowhere".to_string(),
        "/api/v1/contracts?gpu_model=Z999".to_string(),
        format!("/api/v1/spend?period={period}&cluster=nowhere"),
        "/api/v1/metrics?cluster=nowhere".to_string(),
        "/api/v1/capacity?cluster=nowhere&gpu_model=H100".to_string(),
        "/api/v1/ledger?project=nobody".to_string(),
    ] {
        let (status, body) = app.api("GET", &path, Some(&admin), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"]["code"], "not_found", "{path}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("nowhere") || message.contains("nobody") || message.contains("Z999"),
            "{path}: {message}"
        );
    }
    // The same names in another case find what the exact names find.
    let researcher = app.token_for("demo-researcher").await;
    let (status, body) = submit_queued(&app, &researcher).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let count =
        |v: &serde_json::Value, key: &str| v.pointer(key).unwrap().as_array().unwrap().len();
    for (exact, upper, key) in [
        (
            "/api/v1/runs?project=fm-pretrain-7b&limit=1000",
            "/api/v1/runs?project=FM-Pretrain-7B&limit=1000",
            "/runs",
        ),
        (
            "/api/v1/runs?cluster=h100-east&limit=1000",
            "/api/v1/runs?cluster=H100-EAST&limit=1000",
            "/runs",
        ),
        (
            "/api/v1/ledger?project=fm-pretrain-7b",
            "/api/v1/ledger?project=FM-PRETRAIN-7B",
            "/entries",
        ),
        (
            "/api/v1/capacity?cluster=h100-east&gpu_model=H100",
            "/api/v1/capacity?cluster=H100-EAST&gpu_model=h100",
            "/calendar/hours",
        ),
    ] {
        let (s1, a) = app.api("GET", exact, Some(&admin), None).await;
        let (s2, b) = app.api("GET", upper, Some(&admin), None).await;
        assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK), "{upper}: {b}");
        assert!(count(&a, key) > 0, "{exact}: {a}");
        assert_eq!(count(&a, key), count(&b, key), "{upper}");
    }
}

/// A fair-share reason names the projects ahead of a run; a reader who may not see one of them
/// (a researcher, for a sibling project: its name is hidden on the tree and project pages) reads
/// "another project" in its place, in the API and on the run's page; a reader who may see it
/// reads its name (found by a new-user check: the run page named projects the project page hid).
#[tokio::test]
async fn a_reason_names_only_the_projects_its_reader_may_see() {
    use tranche::i18n::wait::WaitNote;
    use tranche::scheduler::{
        ProjectId,
        reason::{Ahead, WaitReason},
    };
    let (app, users) = TestApp::with_demo().await;
    let researcher = app.token_for("demo-researcher").await;
    let admin = app.token_for("demo-admin").await;
    let (status, body) = submit_queued(&app, &researcher).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["id"].as_i64().unwrap();
    // As a pass writes it: is-kernels (not the researcher's) and fm-pretrain-70b (theirs) ahead.
    let hidden = app.node_id("is-kernels").await;
    let own = app.node_id("fm-pretrain-70b").await;
    let mut ahead = Ahead::default();
    ahead.push(ProjectId(hidden));
    ahead.push(ProjectId(own));
    let note = WaitNote::Pass {
        reason: WaitReason::FairShare {
            ahead,
            ahead_total: 2,
            reserved_at: None,
        },
        model: "H100".into(),
        offline: 0,
        projects: vec!["is-kernels".into(), "fm-pretrain-70b".into()],
        outside: None,
    };
    let words = "projects further below their fair share come first: is-kernels, fm-pretrain-70b";
    sqlx::query("UPDATE runs SET wait_reason = $2, wait_note = $3 WHERE id = $1")
        .bind(id)
        .bind(words)
        .bind(sqlx::types::Json(&note))
        .execute(&app.pool)
        .await
        .unwrap();
    let reason = |token: String| {
        let app = &app;
        async move {
            let (_, run) = app
                .api("GET", &format!("/api/v1/runs/{id}"), Some(&token), None)
                .await;
            let (_, list) = app
                .api("GET", "/api/v1/runs?limit=5", Some(&token), None)
                .await;
            let listed = list["runs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["id"] == id)
                .unwrap()["wait_reason"]
                .clone();
            assert_eq!(run["wait_reason"], listed);
            run["wait_reason"].as_str().unwrap().to_string()
        }
    };
    assert_eq!(
        reason(researcher).await,
        "projects further below their fair share come first: another project, fm-pretrain-70b"
    );
    assert_eq!(reason(admin).await, words);
    // The run's page says the same.
    let (name, password) = crate::support::demo_password(&users, "researcher");
    let mut c = app.client();
    c.login(&name, &password).await;
    let (_, page, _) = c.get(&format!("/runs/{id}")).await;
    assert!(!page.contains("is-kernels"), "{page}");
    assert!(
        page.contains("another project (not yours to see), fm-pretrain-70b"),
        "{page}"
    );
    // So does the project's page, whose standing is computed once for all its readers: the
    // admin's read fills the cache with the names, the researcher's then hides one.
    let project = app.node_id("fm-pretrain-7b").await;
    let (admin_name, admin_password) = crate::support::demo_password(&users, "admin");
    let mut a = app.client();
    a.login(&admin_name, &admin_password).await;
    let (_, page, _) = a.get(&format!("/projects/{project}")).await;
    assert!(page.contains("is-kernels, fm-pretrain-70b"), "{page}");
    let (_, page, _) = c.get(&format!("/projects/{project}")).await;
    assert!(!page.contains("is-kernels"), "{page}");
    assert!(
        page.contains("another project (not yours to see), fm-pretrain-70b"),
        "{page}"
    );
}

/// Submits a 1-GPU run of `fm-pretrain-7b` on `h100-east` (no agent serves it: it stays
/// queued) as the holder of `token`; the answer's status and body.
async fn submit_queued(app: &TestApp, token: &str) -> (StatusCode, serde_json::Value) {
    let run = json!({"project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
        "gpus": 1, "min_runtime_s": 600, "time_limit_s": 3600, "priority": 0,
        "resumable": true, "command": "true"});
    app.api("POST", "/api/v1/runs", Some(token), Some(run))
        .await
}

/// What a researcher may not see answers as if it did not exist: a project by id, by name in
/// the runs filter and the ledger, a use case (found by a new-user check: 403 for a hidden
/// project and 404 for a missing one told which names and ids exist).
#[tokio::test]
async fn a_hidden_project_answers_as_a_missing_one() {
    let (app, _) = TestApp::with_demo().await;
    let researcher = app.token_for("demo-researcher").await;
    let hidden = app.node_id("is-kernels").await;
    let missing = 99_999_999;
    for (path, hidden_path) in [
        (
            format!("/api/v1/projects/{missing}"),
            format!("/api/v1/projects/{hidden}"),
        ),
        (
            "/api/v1/runs?project=no-such-project".to_string(),
            "/api/v1/runs?project=is-kernels".to_string(),
        ),
        (
            "/api/v1/ledger?project=no-such-project".to_string(),
            "/api/v1/ledger?project=is-kernels".to_string(),
        ),
    ] {
        let (status, gone) = app.api("GET", &path, Some(&researcher), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {gone}");
        let (status, answer) = app.api("GET", &hidden_path, Some(&researcher), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{hidden_path}: {answer}");
        assert_eq!(answer["error"]["code"], gone["error"]["code"]);
        // The same words, the id or name aside.
        let words = |v: &serde_json::Value| {
            v["error"]["message"]
                .as_str()
                .unwrap()
                .replace(&missing.to_string(), "X")
                .replace(&hidden.to_string(), "X")
                .replace("no-such-project", "X")
                .replace("is-kernels", "X")
        };
        assert_eq!(words(&answer), words(&gone));
    }
    // Writes to it too: its budget and members.
    for (method, path, body) in [
        (
            "PUT",
            format!("/api/v1/projects/{hidden}/budget"),
            json!({"period_budget_minor": 1, "money_cap_minor": null, "self_service_gpu_hours": 1}),
        ),
        (
            "POST",
            format!("/api/v1/projects/{hidden}/members"),
            json!({"user": "demo-researcher"}),
        ),
    ] {
        let (status, answer) = app.api(method, &path, Some(&researcher), Some(body)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {answer}");
        assert_eq!(
            answer["error"]["message"],
            format!("no project with id {hidden}"),
            "{answer}"
        );
    }
    // Its shares, and a contract for it (a refusal named it: found by a new-user check).
    let (status, gone) = app
        .api(
            "PUT",
            &format!("/api/v1/nodes/{missing}/shares"),
            Some(&researcher),
            Some(json!({"shares": [{"node": 1, "share": "1"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{gone}");
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/nodes/{hidden}/shares"),
            Some(&researcher),
            Some(json!({"shares": [{"node": 1, "share": "1"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        format!("no tree node with id {hidden}")
    );
    let lead = app.token_for("demo-lead").await;
    let contract = |project: &str| {
        json!({"project": project, "cluster": "h100-east", "gpu_model": "H100", "gpus": 1,
            "start": "2030-01-10T00:00:00Z", "end": "2030-01-10T02:00:00Z"})
    };
    for path in ["/api/v1/contracts/quote", "/api/v1/contracts"] {
        let (status, gone) = app
            .api("POST", path, Some(&lead), Some(contract("no-such-project")))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {gone}");
        let (status, answer) = app
            .api("POST", path, Some(&lead), Some(contract("is-kernels")))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {answer}");
        assert_eq!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .replace("is-kernels", "X"),
            gone["error"]["message"]
                .as_str()
                .unwrap()
                .replace("no-such-project", "X")
        );
    }
    // Its own project still answers.
    let own = app.node_id("fm-pretrain-7b").await;
    let (status, _) = app
        .api(
            "GET",
            &format!("/api/v1/projects/{own}"),
            Some(&researcher),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}
