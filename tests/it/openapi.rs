//! The OpenAPI document against the live server (issue 17): Schemathesis with all its checks
//! as an admin and as a researcher finds no failure and no server error, and a client
//! generated from the document with openapi-python-client lists runs and submits one.
//!
//! Both tools are pinned in `tests/api/requirements.txt` (all their packages in
//! `tests/api/constraints.txt`) and installed into `target/api-venv` on first use.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::support::TestApp;

/// The repository root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The virtual environment with Schemathesis and openapi-python-client, made on first use
/// (CPython 3 from `TRANCHE_PYTHON`, else `python3.11` or `python3`; packages from PyPI).
fn venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let dir = root().join("target/api-venv");
        let marker = dir.join("installed-requirements.txt");
        let wanted = std::fs::read_to_string(root().join("tests/api/constraints.txt")).unwrap();
        if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
            return dir;
        }
        let python = std::env::var("TRANCHE_PYTHON").unwrap_or_else(|_| {
            if std::process::Command::new("python3.11")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
            {
                "python3.11".into()
            } else {
                "python3".into()
            }
        });
        if !dir.join("bin/pip").exists() {
            let made = std::process::Command::new(&python)
                .args(["-m", "venv"])
                .arg(&dir)
                .status()
                .expect("a CPython 3 to make target/api-venv (set TRANCHE_PYTHON)");
            assert!(made.success(), "{python} -m venv {} failed", dir.display());
        }
        let installed = std::process::Command::new(dir.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(root().join("tests/api/requirements.txt"))
            .arg("-c")
            .arg(root().join("tests/api/constraints.txt"))
            .status()
            .expect("pip in target/api-venv");
        assert!(
            installed.success(),
            "pip could not install tests/api/requirements.txt"
        );
        std::fs::write(&marker, wanted).unwrap();
        dir
    })
}

/// Makes sure that a fuzzer guessing small ids cannot revoke the callers' own tokens or
/// grants: later users, grants and tokens get ids far above the demo's.
async fn move_ids_out_of_reach(app: &TestApp) {
    for seq in ["users_id_seq", "role_grants_id_seq", "api_tokens_id_seq"] {
        sqlx::query(&format!("SELECT setval('{seq}', 900000000000)"))
            .execute(&app.pool)
            .await
            .unwrap();
    }
}

/// A user with `role` (and `node` for a lead) and an API token of theirs.
async fn user_with_token(app: &TestApp, name: &str, role: &str, node: Option<&str>) -> String {
    tranche::db::users::create(&app.pool, None, name, role, node)
        .await
        .unwrap();
    app.token_for(name).await
}

/// The operations that can take away a caller's access: Schemathesis learns ids from answers
/// (`GET /tokens`, `GET /users`), so it revokes the token or the admin grant it tests with, or
/// disables the other caller's account, and every later case would meet only a 401 or a 403.
/// They run last, the researcher's run before the admin's.
const LAST: [&str; 3] = [
    "delete_tokens_id",
    "delete_users_id_grants_grant",
    "post_users_id_disable",
];

/// Runs Schemathesis against `base` as the bearer of `token`, on every operation but [`LAST`]
/// (`last` false) or on those alone (`last` true); returns whether it passed and its output.
async fn schemathesis(base: &str, token: &str, examples: u32, last: bool) -> (bool, String) {
    let seed = std::env::var("TRANCHE_SCHEMATHESIS_SEED").unwrap_or_else(|_| "17".into());
    let out = tokio::process::Command::new(venv().join("bin/schemathesis"))
        .arg("--config-file")
        .arg(root().join("tests/api/schemathesis.toml"))
        .arg("--no-color")
        .arg("run")
        .arg(format!("{base}/api/v1/openapi.json"))
        .args(["--checks", "all"])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--max-examples", &examples.to_string()])
        .args(["--workers", "1"])
        .args(["--seed", &seed])
        .args(["--generation-database", "none"])
        .args(["--request-timeout", "30"])
        .args(["--output-sanitize", "true"])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(LAST.iter().flat_map(|id| {
            [
                if last {
                    "--include-operation-id"
                } else {
                    "--exclude-operation-id"
                },
                id,
            ]
        }))
        .current_dir(std::env::temp_dir())
        .output()
        .await
        .expect("start schemathesis");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_failure_as_admin_or_researcher() {
    let (app, _) = TestApp::with_demo().await;
    move_ids_out_of_reach(&app).await;
    let admin = user_with_token(&app, "fuzz-admin", "admin", None).await;
    let researcher = user_with_token(&app, "fuzz-researcher", "researcher", None).await;
    // The researcher is a member of a project, so submissions and previews can succeed.
    let project = app.node_id("fm-pretrain-7b").await;
    sqlx::query(
        "INSERT INTO project_members (project_id, user_id) SELECT $1, id FROM users WHERE name = 'fuzz-researcher'",
    )
    .bind(project)
    .execute(&app.pool)
    .await
    .unwrap();
    let base = app.serve().await;
    let examples: u32 = std::env::var("TRANCHE_SCHEMATHESIS_EXAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let runs = [
        ("admin", &admin, false),
        ("researcher", &researcher, false),
        ("researcher", &researcher, true),
        ("admin", &admin, true),
    ];
    for (i, (who, token, last)) in runs.into_iter().enumerate() {
        if i == 2 {
            // The callers' tokens survived the fuzzing (else most cases met only a 401).
            let live: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM api_tokens t JOIN users u ON u.id = t.user_id \
                 WHERE u.name IN ('fuzz-admin', 'fuzz-researcher') AND t.revoked_at IS NULL",
            )
            .fetch_one(&app.pool)
            .await
            .unwrap();
            assert_eq!(live, 2, "both fuzzing tokens are still valid");
            let disabled: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM users WHERE name LIKE 'fuzz-%' AND disabled",
            )
            .fetch_one(&app.pool)
            .await
            .unwrap();
            assert_eq!(disabled, 0, "both fuzzing accounts are still enabled");
            let admin_grants: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM role_grants g JOIN users u ON u.id = g.user_id \
                 WHERE u.name = 'fuzz-admin' AND g.role = 'admin'",
            )
            .fetch_one(&app.pool)
            .await
            .unwrap();
            assert_eq!(admin_grants, 1, "the fuzzing admin is still an admin");
        }
        let started = std::time::Instant::now();
        let (passed, output) = schemathesis(&base, token, examples, last).await;
        eprintln!(
            "schemathesis as {who}{}: {:.0} s\n{}",
            if last { " (revocations)" } else { "" },
            started.elapsed().as_secs_f64(),
            tail(&output, 25)
        );
        assert!(
            passed,
            "schemathesis as {who} found failures:\n{}",
            tail(&output, 400)
        );
        assert!(
            !output.contains("Server error"),
            "schemathesis as {who} saw a server error:\n{}",
            tail(&output, 400)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_generated_from_the_document_lists_runs_and_submits_one() {
    let (app, _) = TestApp::with_demo().await;
    let token = app.token_for("demo-researcher").await;
    let base = app.serve().await;
    let work = std::env::temp_dir().join(format!("tranche-client-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let (status, doc) = app.api("GET", "/api/v1/openapi.json", None, None).await;
    assert_eq!(status, axum::http::StatusCode::OK);
    std::fs::write(work.join("openapi.json"), doc.to_string()).unwrap();
    let generated = tokio::process::Command::new(venv().join("bin/openapi-python-client"))
        .args(["generate", "--path", "openapi.json", "--meta", "none"])
        .args(["--output-path", "tranche_api_client"])
        .current_dir(&work)
        .output()
        .await
        .expect("start openapi-python-client");
    assert!(
        generated.status.success(),
        "openapi-python-client failed:\n{}{}",
        String::from_utf8_lossy(&generated.stdout),
        String::from_utf8_lossy(&generated.stderr)
    );
    let ran = tokio::process::Command::new(venv().join("bin/python"))
        .arg(root().join("tests/api/client_check.py"))
        .arg(format!("{base}/api/v1"))
        .env("TRANCHE_TOKEN", &token)
        .env("PYTHONPATH", &work)
        .current_dir(&work)
        .output()
        .await
        .expect("start the client check");
    let stdout = String::from_utf8_lossy(&ran.stdout).to_string();
    assert!(
        ran.status.success(),
        "the generated client's check failed:\n{stdout}{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let answer: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("the check prints JSON");
    let id = answer["submitted"]
        .as_i64()
        .expect("the submitted run's id");
    // The run is in the database as the client sent it, by the researcher.
    let (project, by, gpus, command): (String, String, i32, String) = sqlx::query_as(
        "SELECT t.name, u.name, r.gpus, r.command FROM runs r JOIN tree_nodes t ON t.id = r.project_id \
         JOIN users u ON u.id = r.submitted_by WHERE r.id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        (project.as_str(), by.as_str(), gpus, command.as_str()),
        (
            "fm-pretrain-7b",
            "demo-researcher",
            2,
            "echo generated-client"
        )
    );
    // What the client listed before and after equals what the database holds for the
    // researcher's projects.
    let before = answer["listed_before"].as_i64().unwrap();
    let after = answer["listed_after"].as_array().unwrap();
    assert_eq!(after.len() as i64, before + 1, "{answer}");
    assert!(after.contains(&serde_json::json!(id)), "{answer}");
    let _ = std::fs::remove_dir_all(&work);
}

/// Every field a read answers is described in the document: for each GET operation the demo
/// can answer (path ids filled with the demo's, required query parameters with its names), as
/// an admin, each object's keys in the answer are properties of its schema, at every depth. A
/// client generated from the document otherwise never sees the fields left out (the spend
/// rows listed 9 of their 17 fields; found by a new-user check).
#[tokio::test]
async fn every_field_a_read_answers_is_in_the_document() {
    let (app, _) = TestApp::with_demo().await;
    tranche::demo::load_history(&app.pool, &app.state.site)
        .await
        .unwrap();
    let admin = app.token_for("demo-admin").await;
    let (_, doc) = app
        .api("GET", "/api/v1/openapi.json", Some(&admin), None)
        .await;
    let some_id = |sql: &str| {
        let pool = app.pool.clone();
        let sql = sql.to_string();
        async move {
            sqlx::query_scalar::<_, i64>(&sql)
                .fetch_optional(&pool)
                .await
                .unwrap()
        }
    };
    let run = some_id("SELECT id FROM runs ORDER BY id LIMIT 1").await;
    let node = some_id("SELECT id FROM tree_nodes WHERE is_project ORDER BY id LIMIT 1").await;
    let cluster_node = some_id("SELECT id FROM nodes ORDER BY id LIMIT 1").await;
    let use_case = some_id("SELECT id FROM ai_use_cases ORDER BY id LIMIT 1").await;
    let user = some_id("SELECT id FROM users ORDER BY id LIMIT 1").await;
    let mut undeclared = Vec::new();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(get) = item.get("get") else { continue };
        let id = match path.as_str() {
            p if p.starts_with("/runs/{id}") => run,
            p if p.starts_with("/cluster-nodes/{id}") => cluster_node,
            p if p.starts_with("/use-cases/{id}") => use_case,
            p if p.starts_with("/users/{id}") => user,
            p if p.contains("{id}") => node,
            _ => None,
        };
        if path.contains("{id}") && id.is_none() {
            continue;
        }
        let mut url = format!(
            "/api/v1{}",
            path.replace("{id}", &id.unwrap_or(0).to_string())
        );
        let params = get["parameters"].as_array().cloned().unwrap_or_default();
        let query: Vec<String> = params
            .iter()
            .filter(|p| p["in"] == "query" && p["required"] == true)
            .map(|p| {
                let name = p["name"].as_str().unwrap();
                let value = match name {
                    "cluster" => "h100-east",
                    "gpu_model" => "H100",
                    "project" => "fm-pretrain-7b",
                    other => {
                        panic!("no demo value for the required query parameter {other} of {path}")
                    }
                };
                format!("{name}={value}")
            })
            .collect();
        if !query.is_empty() {
            url = format!("{url}?{}", query.join("&"));
        }
        let (status, answer) = app.api("GET", &url, Some(&admin), None).await;
        if status != axum::http::StatusCode::OK || answer.is_null() {
            continue;
        }
        let schema = &get["responses"]["200"]["content"]["application/json"]["schema"];
        let mut at = Vec::new();
        undeclared_fields(&doc, schema, &answer, path, &mut at);
        undeclared.extend(at);
        checked += 1;
    }
    assert!(checked > 15, "only {checked} reads answered");
    let undeclared: std::collections::BTreeSet<String> = undeclared.into_iter().collect();
    assert!(
        undeclared.is_empty(),
        "fields missing from the document:\n{}",
        undeclared.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// Appends `WHERE.key` for each key of `value`'s objects that `schema` does not declare.
pub(crate) fn undeclared_fields(
    doc: &serde_json::Value,
    schema: &serde_json::Value,
    value: &serde_json::Value,
    here: &str,
    out: &mut Vec<String>,
) {
    let schema = match schema["$ref"].as_str() {
        Some(r) => doc
            .pointer(&r.replacen('#', "", 1))
            .unwrap_or(&serde_json::Value::Null),
        None => schema,
    };
    // A value of one of several shapes: it must match the declared fields of one of them.
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema[key].as_array() {
            let fits = options.iter().any(|o| {
                let mut none = Vec::new();
                undeclared_fields(doc, o, value, here, &mut none);
                none.is_empty()
            });
            if !fits {
                out.push(format!("{here}: fits none of its {key}"));
            }
            return;
        }
    }
    match value {
        serde_json::Value::Object(map) => {
            let Some(props) = schema["properties"].as_object() else {
                // A map with free keys (`additionalProperties` a schema): check its values;
                // free-form on purpose (`additionalProperties: true`, an audit entry's before
                // and after): nothing to check; else an object described by nothing.
                match schema.get("additionalProperties") {
                    Some(values) if values.is_object() => {
                        for (k, v) in map {
                            undeclared_fields(doc, values, v, &format!("{here}.{k}"), out);
                        }
                    }
                    Some(serde_json::Value::Bool(true)) => {}
                    _ if map.is_empty() => {}
                    _ => out.push(format!("{here}: an object whose fields are not described")),
                }
                return;
            };
            for (k, v) in map {
                match props.get(k) {
                    Some(s) => undeclared_fields(doc, s, v, &format!("{here}.{k}"), out),
                    None => out.push(format!("{here}.{k}")),
                }
            }
        }
        serde_json::Value::Array(items) => {
            for v in items.iter().take(5) {
                undeclared_fields(doc, &schema["items"], v, &format!("{here}[]"), out);
            }
        }
        _ => {}
    }
}
