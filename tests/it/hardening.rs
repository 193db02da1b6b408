//! Findings of the security review, each a test on the demo organisation: control characters
//! (NUL above all) in any text field are a 422 naming the field, never a 500; no bytes in any
//! POST, PUT or PATCH body give a 5xx (a property test over every such route); duplicate alert
//! thresholds are refused; a date outside the supported range gets our message, not a
//! library's; CSV cells a spreadsheet would run as formulas are neutralised; an
//! Idempotency-Key repeated with another body is 422 `idempotency_mismatch`; error messages
//! quote at most 60 characters of what was typed.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use proptest::prelude::*;
use serde_json::{Value, json};
use tranche::demo::DemoUser;

use crate::support::{Client, TestApp, demo_password};

async fn login(app: &TestApp, users: &[DemoUser], role: &str) -> Client {
    let (name, pw) = demo_password(users, role);
    let mut c = app.client();
    c.login(&name, &pw).await;
    c
}

fn run_json() -> Value {
    json!({
        "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100", "gpus": 1,
        "min_runtime_s": 0, "time_limit_s": 3600, "priority": 0, "resumable": true,
        "command": "python train.py"
    })
}

fn run_form() -> Vec<(&'static str, String)> {
    [
        ("project", "fm-pretrain-7b"),
        ("cluster", "h100-east"),
        ("gpu_model", "H100"),
        ("gpus", "1"),
        ("min_runtime", "0"),
        ("time_limit", "1:00"),
        ("priority", "0"),
        ("command", "python train.py"),
        ("workdir", ""),
        ("env", "SEED=7"),
        ("action", "preview"),
        ("once", "form-key-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect()
}

fn contract_form() -> Vec<(&'static str, String)> {
    let day = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .tomorrow()
        .unwrap();
    vec![
        ("project", "fm-rlhf".into()),
        ("cluster", "b300-lab".into()),
        ("gpu_model", "B300".into()),
        ("gpus", "2".into()),
        ("start", format!("{day} 09:00")),
        ("end", format!("{day} 11:00")),
    ]
}

/// `fields` with `name` set to `value`.
fn with(fields: &[(&'static str, String)], name: &str, value: &str) -> Vec<(&'static str, String)> {
    let mut out: Vec<_> = fields.iter().filter(|(k, _)| *k != name).cloned().collect();
    out.push((
        Box::leak(name.to_string().into_boxed_str()),
        value.to_string(),
    ));
    out
}

async fn post(
    c: &mut Client,
    path: &str,
    fields: &[(&'static str, String)],
) -> (StatusCode, String) {
    let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body, _) = c.post(path, &borrowed).await;
    (status, body)
}

async fn run_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_nul_byte_in_any_reported_field_is_a_422_naming_the_field() {
    let (app, users) = TestApp::with_demo().await;
    let researcher = app.token_for("demo-researcher").await;
    // The API: a JSON error with the stable code and the field.
    for field in ["project", "cluster", "gpu_model"] {
        let mut body = run_json();
        body[field] = json!("fm\u{0}x");
        let (status, answer) = app
            .api("POST", "/api/v1/runs", Some(&researcher), Some(body))
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{field}: {answer}"
        );
        assert_eq!(answer["error"]["code"], "invalid_text", "{answer}");
        assert_eq!(answer["error"]["field"], field, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("U+0000"),
            "{answer}"
        );
    }
    // A bidirectional override makes a name read otherwise than it is written: refused too.
    let mut body = run_json();
    body["command"] = json!("echo \u{202E}txt.exe");
    let (status, answer) = app
        .api("POST", "/api/v1/runs", Some(&researcher), Some(body))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "command", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("U+202E")
    );
    // Environment values and nested fields are named by their path.
    let mut body = run_json();
    body["env"] = json!({"SEED": "7\u{0}"});
    let (status, answer) = app
        .api("POST", "/api/v1/runs", Some(&researcher), Some(body))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "env.SEED", "{answer}");
    assert_eq!(run_count(&app).await, 0);

    // The run form: 422, the field named, the input given back to correct.
    let mut c = login(&app, &users, "researcher").await;
    for field in ["project", "cluster", "gpu_model", "once"] {
        let fields = with(&run_form(), "action", "submit");
        let fields = with(&fields, field, "ab\u{0}cd");
        let (status, page) = post(&mut c, "/runs/new", &fields).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {page}");
        assert!(
            page.contains(&format!("{field}: contains")),
            "{field}: {page}"
        );
        assert!(page.contains("U+0000"), "{page}");
        assert!(
            page.contains("ab\u{2400}cd"),
            "the input comes back: {page}"
        );
        assert!(
            page.contains("python train.py"),
            "other fields come back: {page}"
        );
        // The run form itself (its labels, the checkbox), not the generic "Check the form".
        assert!(
            page.contains("<input type=\"checkbox\" name=\"resumable\""),
            "{field}: {page}"
        );
        assert!(!page.contains("Check the form"), "{field}: {page}");
    }
    assert_eq!(run_count(&app).await, 0);
    // Refused by the text rule or by an ordinary check, the form keeps the names of secret
    // variables (and of secret-looking ones in the plain environment) but never their values,
    // and asks for them again.
    for (field, value) in [
        ("command", "python\u{0}train.py"),
        ("gpu_model", "H1\u{7}00"),
        ("gpus", "many"),
    ] {
        let fields = with(
            &run_form(),
            "secret_env",
            "WANDB_API=wandb_77aa\nNOISE=n_55",
        );
        let fields = with(&fields, "env", "SEED=7\nHF_TOKEN=hf_31");
        let fields = with(&fields, "resumable", "on");
        let fields = with(&fields, field, value);
        let (status, page) = post(&mut c, "/runs/new", &fields).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {page}");
        for secret in ["wandb_77aa", "n_55", "hf_31"] {
            assert!(!page.contains(secret), "{field}: {secret} in {page}");
        }
        assert!(page.contains("WANDB_API=\nNOISE="), "{field}: {page}");
        assert!(page.contains("SEED=7\nHF_TOKEN="), "{field}: {page}");
        assert!(
            page.contains("Secret values are never shown again"),
            "{field}: {page}"
        );
        assert!(
            page.contains("name=\"resumable\" checked"),
            "{field}: the box stays ticked: {page}"
        );
    }
    assert_eq!(run_count(&app).await, 0);
    // A command takes several lines (a browser sends CRLF), a project name does not.
    let fields = with(&run_form(), "command", "cd /x\r\n\tpython train.py");
    let (status, page) = post(&mut c, "/runs/new", &fields).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let fields = with(&run_form(), "project", "fm-pretrain-7b\n");
    let (status, _) = post(&mut c, "/runs/new", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Query strings pass the same rule, on pages and in the API.
    let (status, _, _) = c.get("/runs?project=%00").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, answer) = app
        .api(
            "GET",
            "/api/v1/ledger?project=a%00",
            Some(&researcher),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "project", "{answer}");
    // And path parameters.
    let admin_token = app.token_for("demo-admin").await;
    let project = app.node_id("fm-pretrain-7b").await;
    let (status, answer) = app
        .api(
            "DELETE",
            &format!("/api/v1/projects/{project}/members/demo%00"),
            Some(&admin_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_text", "{answer}");

    // Members and users (the admin), contract previews (the lead).
    let mut admin = login(&app, &users, "admin").await;
    let project = app.node_id("fm-pretrain-7b").await;
    let (status, page) = post(
        &mut admin,
        &format!("/projects/{project}/members"),
        &[("user", "demo\u{0}".into())],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(page.contains("user: contains"), "{page}");
    let (status, page) = post(
        &mut admin,
        "/admin/users",
        &[
            ("name", "new-user".into()),
            ("role", "lead".into()),
            ("node", "Foundation\u{0}".into()),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(page.contains("node: contains"), "{page}");
    assert!(page.contains("new-user"), "{page}");
    let mut lead = login(&app, &users, "lead").await;
    for field in ["project", "cluster", "gpu_model"] {
        let fields = with(&contract_form(), field, "\u{0}");
        let (status, page) = post(&mut lead, "/contracts/preview", &fields).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {page}");
        assert!(page.contains(&format!("{field}: contains")), "{page}");
    }
}

/// A route that takes a body: (method, path, actor, kind, fields).
type Route = (
    &'static str,
    String,
    &'static str,
    &'static str,
    Vec<(&'static str, Value)>,
);

/// Every route that takes a body, as (method, path, actor, kind, fields with a plausible
/// value each). `kind` is `form` (a page) or `json` (the API).
fn routes(ids: &Ids) -> Vec<Route> {
    let s = |v: &str| Value::String(v.to_string());
    let run_fields: Vec<(&'static str, Value)> = vec![
        ("project", s("fm-pretrain-7b")),
        ("cluster", s("h100-east")),
        ("gpu_model", s("H100")),
        ("gpus", json!(1)),
        ("min_runtime_s", json!(0)),
        ("time_limit_s", json!(3600)),
        ("command", s("true")),
        ("workdir", s("/tmp")),
        ("env", json!({"SEED": "1"})),
    ];
    let contract: Vec<(&'static str, Value)> = vec![
        ("project", s("fm-rlhf")),
        ("cluster", s("b300-lab")),
        ("gpu_model", s("B300")),
        ("gpus", s("1")),
        ("start", s("2031-01-01 09:00")),
        ("end", s("2031-01-01 10:00")),
        ("quote", s("x")),
    ];
    let mut contract_json = contract.clone();
    contract_json.retain(|(k, _)| *k != "quote");
    contract_json[3].1 = json!(1);
    contract_json.push(("time_zone", s("UTC")));
    let (p, n, r, c, m, u, k, t) = (
        ids.project,
        ids.node,
        ids.run,
        ids.cluster,
        ids.model,
        ids.user,
        ids.cluster_node,
        ids.contract,
    );
    vec![
        (
            "POST",
            "/runs/new".into(),
            "researcher",
            "form",
            vec![
                ("project", s("fm-pretrain-7b")),
                ("cluster", s("h100-east")),
                ("gpu_model", s("H100")),
                ("gpus", s("1")),
                ("min_runtime", s("0")),
                ("time_limit", s("60")),
                ("priority", s("0")),
                ("resumable", s("on")),
                ("command", s("true")),
                ("workdir", s("")),
                ("env", s("A=1")),
                ("action", s("submit")),
                ("once", s("k")),
            ],
        ),
        (
            "POST",
            format!("/runs/{r}/cancel"),
            "researcher",
            "form",
            vec![("from", s("/runs"))],
        ),
        (
            "POST",
            format!("/runs/{r}/approve"),
            "lead",
            "form",
            vec![("reason", s("ok")), ("from", s("/approvals"))],
        ),
        (
            "POST",
            format!("/runs/{r}/deny"),
            "lead",
            "form",
            vec![("reason", s("no")), ("from", s("/approvals"))],
        ),
        (
            "POST",
            "/contracts/preview".into(),
            "lead",
            "form",
            contract.clone(),
        ),
        ("POST", "/contracts".into(), "lead", "form", contract),
        (
            "POST",
            format!("/contracts/{t}/cancel"),
            "lead",
            "form",
            vec![],
        ),
        (
            "POST",
            "/account/tokens".into(),
            "researcher",
            "form",
            vec![("label", s("laptop"))],
        ),
        (
            "POST",
            "/account/tokens/999999/revoke".into(),
            "researcher",
            "form",
            vec![],
        ),
        (
            "POST",
            "/account/password".into(),
            "finance",
            "form",
            vec![("current", s("x")), ("new", s("y")), ("repeat", s("y"))],
        ),
        (
            "POST",
            "/account/email".into(),
            "researcher",
            "form",
            vec![("email", s("r@example.org"))],
        ),
        (
            "POST",
            "/notifications/read".into(),
            "researcher",
            "form",
            vec![],
        ),
        (
            "POST",
            "/login".into(),
            "anonymous",
            "form",
            vec![
                ("name", s("demo-admin")),
                ("password", s("x")),
                ("next", s("/")),
            ],
        ),
        (
            "POST",
            format!("/tree/nodes/{n}/shares"),
            "admin",
            "form",
            vec![("share_1", s("10"))],
        ),
        (
            "POST",
            format!("/tree/nodes/{n}/children"),
            "admin",
            "form",
            vec![("name", s("kid")), ("kind", s("group")), ("share", s("1"))],
        ),
        (
            "POST",
            format!("/tree/nodes/{n}/rename"),
            "admin",
            "form",
            vec![("name", s("renamed"))],
        ),
        (
            "POST",
            format!("/tree/nodes/{n}/move"),
            "admin",
            "form",
            vec![("parent", s("Foundation"))],
        ),
        (
            "POST",
            format!("/tree/nodes/{}/archive", ids.archive),
            "admin",
            "form",
            vec![],
        ),
        (
            "POST",
            format!("/projects/{p}/budget"),
            "admin",
            "form",
            vec![
                ("period_budget", s("")),
                ("money_cap", s("")),
                ("self_service_gpu_hours", s("10")),
                ("alert_thresholds", s("50")),
            ],
        ),
        (
            "POST",
            format!("/projects/{p}/members"),
            "admin",
            "form",
            vec![("user", s("demo-finance"))],
        ),
        (
            "POST",
            format!("/projects/{p}/members/remove"),
            "admin",
            "form",
            vec![("user", s("demo-finance"))],
        ),
        (
            "POST",
            "/admin/gpu-models".into(),
            "admin",
            "form",
            vec![
                ("name", s("X1")),
                ("billing_weight", s("1")),
                ("price", s("1.00")),
            ],
        ),
        (
            "POST",
            format!("/admin/gpu-models/{m}"),
            "admin",
            "form",
            vec![("billing_weight", s("1")), ("price", s("1.00"))],
        ),
        (
            "POST",
            "/admin/clusters".into(),
            "admin",
            "form",
            vec![("name", s("c9"))],
        ),
        (
            "POST",
            format!("/admin/clusters/{c}/nodes"),
            "admin",
            "form",
            vec![
                ("name", s("n9")),
                ("gpu_model", s("H100")),
                ("gpu_count", s("8")),
            ],
        ),
        (
            "POST",
            format!("/admin/nodes/{k}/state"),
            "admin",
            "form",
            vec![("state", s("draining")), ("reason", s("fan replacement"))],
        ),
        (
            "POST",
            "/admin/users".into(),
            "admin",
            "form",
            vec![
                ("name", s("u9")),
                ("role", s("lead")),
                ("node", s("Foundation")),
            ],
        ),
        (
            "POST",
            format!("/admin/users/{u}/grants"),
            "admin",
            "form",
            vec![("role", s("lead")), ("node", s("Foundation"))],
        ),
        (
            "PUT",
            "/api/v1/me".into(),
            "researcher",
            "json",
            vec![("email", s("r@example.org"))],
        ),
        (
            "POST",
            "/api/v1/clusters".into(),
            "admin",
            "json",
            vec![("name", s("c8"))],
        ),
        (
            "POST",
            format!("/api/v1/clusters/{c}/nodes"),
            "admin",
            "json",
            vec![
                ("name", s("n8")),
                ("gpu_model", s("H100")),
                ("gpu_count", json!(8)),
            ],
        ),
        (
            "PUT",
            format!("/api/v1/cluster-nodes/{k}/state"),
            "admin",
            "json",
            vec![("state", s("up"))],
        ),
        (
            "POST",
            "/api/v1/gpu-models".into(),
            "admin",
            "json",
            vec![
                ("name", s("X2")),
                ("billing_weight_milli", json!(1000)),
                ("price_per_gpu_hour_minor", json!(100)),
            ],
        ),
        (
            "PATCH",
            format!("/api/v1/gpu-models/{m}"),
            "admin",
            "json",
            vec![
                ("billing_weight_milli", json!(1000)),
                ("price_per_gpu_hour_minor", json!(100)),
            ],
        ),
        (
            "POST",
            "/api/v1/nodes".into(),
            "admin",
            "json",
            vec![
                ("parent", json!(n)),
                ("name", s("kid2")),
                ("kind", s("group")),
                ("share", s("1")),
            ],
        ),
        (
            "PATCH",
            format!("/api/v1/nodes/{n}"),
            "admin",
            "json",
            vec![("name", s("renamed2"))],
        ),
        (
            "PUT",
            format!("/api/v1/nodes/{n}/shares"),
            "admin",
            "json",
            vec![("shares", json!([{"node": p, "share": "10"}]))],
        ),
        (
            "PUT",
            format!("/api/v1/projects/{p}/budget"),
            "admin",
            "json",
            vec![("alert_thresholds", json!([50]))],
        ),
        (
            "POST",
            format!("/api/v1/projects/{p}/members"),
            "admin",
            "json",
            vec![("user", s("demo-finance"))],
        ),
        (
            "POST",
            "/api/v1/users".into(),
            "admin",
            "json",
            vec![
                ("name", s("u8")),
                ("role", s("lead")),
                ("node", s("Foundation")),
            ],
        ),
        (
            "POST",
            format!("/api/v1/users/{u}/grants"),
            "admin",
            "json",
            vec![("role", s("lead")), ("node", s("Foundation"))],
        ),
        (
            "POST",
            "/api/v1/contracts".into(),
            "lead",
            "json",
            contract_json.clone(),
        ),
        (
            "POST",
            "/api/v1/contracts/quote".into(),
            "lead",
            "json",
            contract_json,
        ),
        (
            "POST",
            format!("/api/v1/contracts/{t}/cancel"),
            "lead",
            "json",
            vec![],
        ),
        (
            "POST",
            "/api/v1/notifications/read".into(),
            "researcher",
            "json",
            vec![],
        ),
        (
            "POST",
            "/api/v1/runs".into(),
            "researcher",
            "json",
            run_fields.clone(),
        ),
        (
            "POST",
            "/api/v1/runs/preview".into(),
            "researcher",
            "json",
            run_fields,
        ),
        (
            "POST",
            format!("/api/v1/runs/{r}/cancel"),
            "researcher",
            "json",
            vec![],
        ),
        (
            "POST",
            format!("/api/v1/runs/{r}/approve"),
            "lead",
            "json",
            vec![("reason", s("ok"))],
        ),
        (
            "POST",
            format!("/api/v1/runs/{r}/deny"),
            "lead",
            "json",
            vec![("reason", s("no"))],
        ),
        (
            "POST",
            "/api/v1/agent/register".into(),
            "agent",
            "json",
            vec![(
                "nodes",
                json!([{"name": "fz-1", "gpus": 8, "gpu_model": "H100"}]),
            )],
        ),
        (
            "POST",
            "/api/v1/agent/sync".into(),
            "agent",
            "json",
            vec![
                ("session", s("s")),
                ("wait_s", json!(0)),
                ("nodes", json!([])),
                (
                    "runs",
                    json!([{"run": r, "attempt": 1, "node": k, "state": "running"}]),
                ),
            ],
        ),
    ]
}

struct Ids {
    project: i64,
    node: i64,
    run: i64,
    cluster: i64,
    model: i64,
    user: i64,
    cluster_node: i64,
    contract: i64,
    archive: i64,
}

fn percent(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("%{b:02X}")).collect()
}

/// What the fuzzer puts in a field: raw bytes (NUL, invalid UTF-8), any characters, a huge
/// string, or a number where text is expected.
#[derive(Debug, Clone)]
enum Fuzz {
    Bytes(Vec<u8>),
    Text(String),
    Huge(usize, char),
}

fn fuzz() -> impl Strategy<Value = Fuzz> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..12).prop_map(Fuzz::Bytes),
        any::<String>().prop_map(Fuzz::Text),
        "[\\x00-\\x1f\\x7f\\u{80}-\\u{9f}a=&%+]{1,8}".prop_map(Fuzz::Text),
        (
            100_000usize..300_000,
            prop_oneof![Just('x'), Just('9'), Just('\0'), Just('é')]
        )
            .prop_map(|(n, c)| Fuzz::Huge(n, c)),
    ]
}

impl Fuzz {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Self::Bytes(b) => b.clone(),
            Self::Text(t) => t.as_bytes().to_vec(),
            Self::Huge(n, c) => c.to_string().repeat(*n).into_bytes(),
        }
    }
}

struct Actors {
    clients: std::collections::HashMap<&'static str, Client>,
    tokens: std::collections::HashMap<&'static str, String>,
}

async fn send_form(
    app: &TestApp,
    client: &mut Client,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> StatusCode {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "localhost")
        .header(header::ORIGIN, "http://localhost")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(c) = client.cookie() {
        req = req.header(header::COOKIE, c);
    }
    let (status, _, _) = app.send(req.body(Body::from(body)).unwrap()).await;
    status
}

async fn send_json(
    app: &TestApp,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> StatusCode {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let (status, _, _) = app.send(req.body(Body::from(body)).unwrap()).await;
    status
}

/// Sends every route's body with each field in turn set to `value`, and the whole body
/// replaced by its bytes; returns the requests answered 5xx.
async fn fuzz_all(app: &TestApp, ids: &Ids, actors: &mut Actors, value: &Fuzz) -> Vec<String> {
    let mut failures = Vec::new();
    let raw = value.bytes();
    for (method, path, actor, kind, fields) in routes(ids) {
        let token = actors.tokens.get(actor).cloned();
        for at in 0..=fields.len() {
            let status = if kind == "form" {
                let client = actors.clients.get_mut(actor).unwrap();
                let csrf = client.csrf().unwrap_or_default();
                let mut body = format!("csrf={csrf}");
                for (i, (name, v)) in fields.iter().enumerate() {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let v = if i == at {
                        percent(&raw)
                    } else {
                        percent(v.as_bytes())
                    };
                    body.push_str(&format!("&{name}={v}"));
                }
                if at == fields.len() {
                    // A field of any name, and the bytes as the whole rest of the body.
                    body.push_str(&format!("&{}=1&", percent(&raw)));
                    let mut b = body.into_bytes();
                    b.extend_from_slice(&raw);
                    send_form(app, client, method, &path, b).await
                } else {
                    send_form(app, client, method, &path, body.into_bytes()).await
                }
            } else {
                let text = String::from_utf8_lossy(&raw).into_owned();
                let mut object = serde_json::Map::new();
                for (i, (name, v)) in fields.iter().enumerate() {
                    object.insert(
                        (*name).to_string(),
                        if i == at {
                            Value::String(text.clone())
                        } else {
                            v.clone()
                        },
                    );
                }
                let body = if at == fields.len() {
                    // Invalid UTF-8 and arbitrary bytes as the whole body; a key of any text.
                    object.insert(text.clone(), json!(1));
                    let status = send_json(app, token.as_deref(), method, &path, raw.clone()).await;
                    if status.is_server_error() {
                        failures.push(format!("{method} {path} raw body {value:?}: {status}"));
                    }
                    serde_json::to_vec(&Value::Object(object)).unwrap()
                } else {
                    serde_json::to_vec(&Value::Object(object)).unwrap()
                };
                send_json(app, token.as_deref(), method, &path, body).await
            };
            if status.is_server_error() {
                let field = fields.get(at).map_or("(extra)", |f| f.0);
                let shown = format!("{value:?}");
                failures.push(format!(
                    "{method} {path} {field} = {}: {status}",
                    &shown[..shown.len().min(80)]
                ));
            }
        }
    }
    failures
}

#[test]
fn no_bytes_in_any_body_give_a_server_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (app, ids, actors) = rt.block_on(async {
        let (app, users) = TestApp::with_demo().await;
        let mut clients = std::collections::HashMap::new();
        for role in ["admin", "lead", "researcher", "finance"] {
            clients.insert(role, login(&app, &users, role).await);
        }
        let mut anonymous = app.client();
        anonymous.get("/login").await;
        clients.insert("anonymous", anonymous);
        let mut tokens = std::collections::HashMap::new();
        for role in ["admin", "lead", "researcher"] {
            tokens.insert(role, app.token_for(&format!("demo-{role}")).await);
        }
        let agent = tranche::runs::agents::create_token(&app.pool, "local")
            .await
            .unwrap();
        tokens.insert("agent", agent);
        let one = |sql: &'static str| {
            let pool = app.pool.clone();
            async move {
                sqlx::query_scalar::<_, i64>(sql)
                    .fetch_one(&pool)
                    .await
                    .unwrap()
            }
        };
        // A run and a contract to act on.
        let (status, run) = app
            .api(
                "POST",
                "/api/v1/runs",
                tokens.get("researcher").map(String::as_str),
                Some(run_json()),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{run}");
        let ids = Ids {
            project: app.node_id("fm-pretrain-7b").await,
            node: app.node_id("fm-tokenizer").await,
            run: run["id"].as_i64().unwrap(),
            cluster: one("SELECT id FROM clusters ORDER BY id LIMIT 1").await,
            model: one("SELECT id FROM gpu_models ORDER BY id LIMIT 1").await,
            user: one("SELECT id FROM users WHERE name = 'demo-finance'").await,
            cluster_node: one("SELECT id FROM nodes ORDER BY id LIMIT 1").await,
            contract: one("SELECT coalesce(max(id), 1) FROM contracts").await,
            archive: app.node_id("fm-long-context").await,
        };
        (app, ids, Actors { clients, tokens })
    });
    let actors = std::cell::RefCell::new(actors);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 10,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    // The values the review found first, then random ones.
    for fixed in [
        Fuzz::Text("\0".into()),
        Fuzz::Bytes(vec![0xff, 0xfe, b'a']),
        Fuzz::Huge(200_000, 'x'),
    ] {
        let failures = rt.block_on(fuzz_all(&app, &ids, &mut actors.borrow_mut(), &fixed));
        assert!(
            failures.is_empty(),
            "server errors:\n{}",
            failures.join("\n")
        );
    }
    let result = runner.run(&fuzz(), |value| {
        let failures = rt.block_on(fuzz_all(&app, &ids, &mut actors.borrow_mut(), &value));
        prop_assert!(
            failures.is_empty(),
            "server errors:\n{}",
            failures.join("\n")
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[tokio::test]
async fn duplicate_alert_thresholds_are_refused() {
    let (app, users) = TestApp::with_demo().await;
    let project = app.node_id("fm-pretrain-7b").await;
    let before: Vec<i32> =
        sqlx::query_scalar("SELECT alert_thresholds FROM projects WHERE node_id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let mut admin = login(&app, &users, "admin").await;
    let (status, page) = post(
        &mut admin,
        &format!("/projects/{project}/budget"),
        &[
            ("period_budget", String::new()),
            ("money_cap", String::new()),
            ("self_service_gpu_hours", "10".into()),
            ("alert_thresholds", "50, 50%".into()),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("50% is given twice"), "{page}");
    assert!(page.contains("50, 50%"), "the input is kept");
    let token = app.token_for("demo-admin").await;
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/projects/{project}/budget"),
            Some(&token),
            Some(json!({"alert_thresholds": [75, 50, 75]})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "alert_thresholds");
    let after: Vec<i32> =
        sqlx::query_scalar("SELECT alert_thresholds FROM projects WHERE node_id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(after, before, "nothing changed");
    // Distinct thresholds in any order are fine.
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/projects/{project}/budget"),
            Some(&token),
            Some(json!({"alert_thresholds": [90, 50]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// The texts of a page's error elements (`class="error..."`).
fn error_texts(page: &str) -> Vec<String> {
    page.match_indices("class=\"error")
        .filter_map(|(at, _)| {
            let rest = &page[at..];
            let start = rest.find('>')? + 1;
            let end = rest[start..].find("</")?;
            Some(rest[start..start + end].to_string())
        })
        .collect()
}

#[tokio::test]
async fn a_date_outside_the_supported_range_gets_our_message() {
    let (app, users) = TestApp::with_demo().await;
    let mut lead = login(&app, &users, "lead").await;
    for (start, end) in [
        ("9999-12-31 23:59", "9999-12-31 23:59"),
        ("2031-01-01 09:00", "9999-12-31 23:59"),
        ("-009999-01-01 00:00", "2031-01-01 09:00"),
    ] {
        let fields = with(&with(&contract_form(), "start", start), "end", end);
        let (status, page) = post(&mut lead, "/contracts/preview", &fields).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{start}");
        let errors = error_texts(&page).join(" ");
        assert!(
            errors.contains("outside the supported range"),
            "{start} to {end}: {errors}"
        );
        assert!(
            !errors.contains("parameter") && !errors.contains("unix"),
            "no library text: {errors}"
        );
    }
    // The API with a time zone, the same.
    let token = app.token_for("demo-lead").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/contracts/quote",
            Some(&token),
            Some(json!({"project": "fm-rlhf", "cluster": "b300-lab", "gpu_model": "B300", "gpus": 1,
                        "start": "9999-12-31 23:59", "end": "9999-12-31 23:59", "time_zone": "Europe/Berlin"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("outside the supported range"),
        "{answer}"
    );
}

#[tokio::test]
async fn csv_cells_that_a_spreadsheet_would_run_are_neutralised() {
    let (app, users) = TestApp::with_demo().await;
    // Names that slipped past validation (older rows, direct database edits).
    sqlx::query("UPDATE tree_nodes SET name = $1 WHERE name = 'fm-pretrain-7b'")
        .bind("=HYPERLINK(\"http://evil.example\",\"x\")")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE tree_nodes SET name = '@SUM(A1)' WHERE name = 'fm-tokenizer'")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE tree_nodes SET name = '-2+3' WHERE name = 'fm-long-context'")
        .execute(&app.pool)
        .await
        .unwrap();
    let mut finance = login(&app, &users, "finance").await;
    let (status, text, _) = finance.get("/reports.csv").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(!records.is_empty());
    let nodes: Vec<&str> = records.iter().map(|r| &r[2]).collect();
    assert!(
        nodes.contains(&"'=HYPERLINK(\"http://evil.example\",\"x\")"),
        "{nodes:?}"
    );
    assert!(nodes.contains(&"'@SUM(A1)"), "{nodes:?}");
    assert!(nodes.contains(&"'-2+3"), "{nodes:?}");
    for r in &records {
        for (i, cell) in r.iter().enumerate() {
            assert!(
                !cell.starts_with(['=', '+', '@', '\t', '\r']),
                "column {i} starts a formula: {cell:?}"
            );
            // Numbers stay numbers (never quoted), negative ones included.
            if ![0, 2, 4, 16].contains(&i) && !cell.is_empty() {
                assert!(cell.parse::<f64>().is_ok(), "column {i}: {cell:?}");
            }
        }
    }
}

/// POST /api/v1/runs with an `Idempotency-Key` and a body given as text.
async fn submit_with_key(app: &TestApp, token: &str, key: &str, body: &str) -> (StatusCode, Value) {
    let req = Request::builder()
        .method("POST")
        .uri("/api/v1/runs")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", key)
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, text, _) = app.send(req).await;
    (status, serde_json::from_str(&text).unwrap())
}

#[tokio::test]
async fn a_repeated_idempotency_key_with_another_body_is_a_mismatch() {
    let (app, _) = TestApp::with_demo().await;
    let token = app.token_for("demo-researcher").await;
    let body = run_json();
    let (status, first) = submit_with_key(&app, &token, "k-1", &body.to_string()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    // The same request again, keys in another order and spaced out: the first run.
    let mut same = String::from("{ ");
    let object = body.as_object().unwrap();
    let keys: Vec<&String> = object.keys().rev().collect();
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            same.push_str(",\n  ");
        }
        same.push_str(&format!("{}: {}", json!(k), object[k.as_str()]));
    }
    same.push_str(" }");
    let (status, again) = submit_with_key(&app, &token, "k-1", &same).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["repeated"], true);
    // Another body under the same key: refused, nothing created.
    let mut other = run_json();
    other["gpus"] = json!(2);
    let (status, answer) = submit_with_key(&app, &token, "k-1", &other.to_string()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["code"], "idempotency_mismatch", "{answer}");
    assert_eq!(answer["error"]["field"], "Idempotency-Key", "{answer}");
    assert_eq!(run_count(&app).await, 1);
    // The OpenAPI document names the error.
    let (status, doc) = app.api("GET", "/api/v1/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc.to_string().contains("idempotency_mismatch"));
}

#[tokio::test]
async fn error_messages_quote_at_most_60_characters_of_the_input() {
    let (app, users) = TestApp::with_demo().await;
    let researcher = app.token_for("demo-researcher").await;
    let long = "x".repeat(200_000);
    let digits = "9".repeat(200_000);
    // The API: a name that matches nothing, a number of 200,000 digits, a string where a
    // number belongs.
    for (field, value) in [
        ("gpu_model", json!(long)),
        ("project", json!(long)),
        ("gpus", json!(long)),
    ] {
        let mut body = run_json();
        body[field] = value;
        let (status, answer) = app
            .api("POST", "/api/v1/runs", Some(&researcher), Some(body))
            .await;
        assert!(status.is_client_error(), "{field}: {status}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.chars().count() < 300,
            "{field}: a message of {} characters: {}",
            message.len(),
            message.chars().take(200).collect::<String>()
        );
    }
    let mut c = login(&app, &users, "researcher").await;
    for (field, value) in [("priority", &long), ("gpus", &digits), ("env", &long)] {
        let fields = with(&run_form(), field, value);
        let (status, page) = post(&mut c, "/runs/new", &fields).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}");
        let errors = error_texts(&page);
        assert!(!errors.is_empty(), "{field}: an error is shown");
        for e in errors {
            assert!(
                e.chars().count() < 300,
                "{field}: an error of {} characters",
                e.len()
            );
        }
        assert!(page.contains(value.as_str()), "{field}: the input is kept");
    }
    let mut lead = login(&app, &users, "lead").await;
    for field in ["start", "gpus", "cluster"] {
        let fields = with(&contract_form(), field, &long);
        let (status, page) = post(&mut lead, "/contracts/preview", &fields).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}");
        for e in error_texts(&page) {
            assert!(
                e.chars().count() < 300,
                "{field}: an error of {} characters",
                e.len()
            );
        }
    }
}

/// A body whose shape is not the operation's is a 422 naming the field in JSON's terms (never
/// the server's type names), a field sent twice is refused rather than read as the last, and a
/// path segment that is not UTF-8 is `invalid_text`; none of them creates anything.
#[tokio::test]
async fn a_body_of_the_wrong_shape_is_a_422_naming_the_field() {
    let (app, _) = TestApp::with_demo().await;
    let researcher = app.token_for("demo-researcher").await;
    let before = run_count(&app).await;
    let with = |field: &str, value: Value| {
        let mut body = run_json();
        body[field] = value;
        serde_json::to_vec(&body).unwrap()
    };
    let mut missing = run_json();
    missing.as_object_mut().unwrap().remove("project");
    let cases: Vec<(Vec<u8>, Option<&str>, &str)> = vec![
        (
            with("gpus", json!("4")),
            Some("gpus"),
            "expected an integer",
        ),
        (
            with("gpus", json!(1.5)),
            Some("gpus"),
            "expected an integer",
        ),
        (
            with("gpus", json!(1e30)),
            Some("gpus"),
            "expected an integer",
        ),
        (
            with("resumable", json!("yes")),
            Some("resumable"),
            "expected a boolean",
        ),
        (with("env", json!([1])), Some("env"), "expected an object"),
        (
            serde_json::to_vec(&missing).unwrap(),
            Some("project"),
            "missing field `project`",
        ),
        (b"[]".to_vec(), None, "must be a JSON object"),
        (
            br#"{"project":"fm-pretrain-7b","project":"fm-red-team","cluster":"h100-east"}"#
                .to_vec(),
            Some("project"),
            "duplicate field `project`",
        ),
    ];
    for (body, field, words) in cases {
        let shown = String::from_utf8_lossy(&body).to_string();
        let (status, answer) = app
            .api_raw(
                "POST",
                "/api/v1/runs",
                Some(&researcher),
                "application/json",
                body,
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{shown}: {answer}"
        );
        assert_eq!(answer["error"]["code"], "invalid_input", "{answer}");
        assert_eq!(
            answer["error"]["field"].as_str(),
            field,
            "{shown}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{shown}: {message}");
        for rust in ["i64", "u32", "struct", "NewRun", "sequence", "map"] {
            assert!(!message.contains(rust), "{shown}: {message}");
        }
    }
    // Still not JSON at all: 400 without a field.
    let (status, answer) = app
        .api_raw(
            "POST",
            "/api/v1/runs",
            Some(&researcher),
            "application/json",
            b"{\"gpus\": 1} x".to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["field"], Value::Null, "{answer}");
    // A path segment that is not UTF-8, as a query value that is not.
    let (status, answer) = app
        .api("GET", "/api/v1/runs/%FF", Some(&researcher), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_text", "{answer}");
    assert_eq!(answer["error"]["field"], "id", "{answer}");
    assert_eq!(run_count(&app).await, before);
}

/// A page form over the size limit is the same 413 as an API body over it, not a field error;
/// one just under the page's limit is read (and refused for what it says, not its size).
#[tokio::test]
async fn a_form_over_the_limit_is_a_413_like_the_api() {
    let (app, users) = TestApp::with_demo().await;
    let mut c = login(&app, &users, "researcher").await;
    let before = run_count(&app).await;
    let big = with(&run_form(), "command", &"x".repeat(3 << 20));
    let (status, body) = post(&mut c, "/runs/new", &big).await;
    assert_eq!(
        status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        &body[..body.len().min(300)]
    );
    let under = with(&run_form(), "command", &"x".repeat(3 << 19));
    let (status, _) = post(&mut c, "/runs/new", &under).await;
    assert_ne!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(run_count(&app).await, before);
}

/// Forms refused for what their values mean (not their shape) come back with what was typed:
/// a contract beyond the 8-week horizon, a role granted on a node that does not exist.
#[tokio::test]
async fn refused_forms_keep_what_was_typed() {
    let (app, users) = TestApp::with_demo().await;
    let mut lead = login(&app, &users, "lead").await;
    let far = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .checked_add(jiff::Span::new().weeks(10))
        .unwrap();
    let (start, end) = (format!("{far} 09:00"), format!("{far} 17:00"));
    let fields = with(
        &with(&with(&contract_form(), "start", &start), "end", &end),
        "gpus",
        "3",
    );
    let (status, page) = post(&mut lead, "/contracts/preview", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(error_texts(&page).join(" ").contains("8 weeks"), "{page}");
    for typed in [
        format!("value=\"{start}\""),
        format!("value=\"{end}\""),
        "value=\"3\"".into(),
        "<option value=\"fm-rlhf\" selected>".into(),
        "<option value=\"b300-lab\" selected>".into(),
    ] {
        assert!(page.contains(&typed), "{typed} kept: {page}");
    }

    let mut admin = login(&app, &users, "admin").await;
    let researcher: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-researcher'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (status, page) = post(
        &mut admin,
        &format!("/admin/users/{researcher}/grants"),
        &[("role", "lead".into()), ("node", "no-such-team".into())],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    let form = format!("action=\"/admin/users/{researcher}/grants\" class=\"inline\"");
    let row = &page[page.find(&form).unwrap()..];
    let row = &row[..row.find("</form>").unwrap()];
    assert!(row.contains("value=\"no-such-team\""), "{row}");
    assert!(row.contains("<option value=\"lead\" selected>"), "{row}");
}

/// While the database cannot be reached, the API answers 503 `unavailable` (retry), not 500
/// `internal` (found by a new-user check: a client that retries on 503 gave up on a restart of
/// the database).
#[tokio::test]
async fn an_unreachable_database_is_a_503_to_retry() {
    let (app, _) = TestApp::with_demo().await;
    let token = app.token_for("demo-researcher").await;
    app.pool.close().await;
    let (status, body) = app.api("GET", "/api/v1/runs", Some(&token), None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    // Pages too, where the session layer fails first.
    let mut client = app.client();
    let (status, page, _) = client.get("/login").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{page}");
    assert!(page.contains("try again in a few seconds"), "{page}");
}
