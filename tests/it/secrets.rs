//! Secret run environment values (issue 11, finding 4): marked secret or named like secrets,
//! stored sealed, shown as •••• to everyone in pages and the API, and given only to the agent
//! process that runs the attempt, on real PostgreSQL with a real `tranche agent`.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;

use crate::live::{agent, clean_up, live, live_nodes, scratch, site, until};
use crate::support::{TestApp, demo_password};

const HF: &str = "hf_secret_4c1d";
const WANDB: &str = "wandb_secret_9e2b";

/// Whether any column of run `id` holds `text` in clear.
async fn stored_in_clear(app: &TestApp, id: i64, text: &str) -> bool {
    sqlx::query_scalar(
        "SELECT position($2 IN row_to_json(r)::text) > 0 \
                OR position(convert_to($2, 'UTF8') IN coalesce(r.secret_env, ''::bytea)) > 0 \
         FROM runs r WHERE r.id = $1",
    )
    .bind(id)
    .bind(text)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn secret_environment_values_are_masked_sealed_and_reach_only_the_executor() {
    let (app, base, researcher, lead, agent_token) = live(site()).await;
    let finance = app.token_for("demo-finance").await;
    let dir = scratch("secrets");
    let out = dir.join("out");
    app.declare_agent_nodes("secrets", 1).await;
    let _agent = agent(&base, &agent_token, "secrets", 1, &dir);
    until(Duration::from_secs(30), "the agent's node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    // HF_TOKEN is secret by its name; WANDB_API because it is marked secret.
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&researcher),
            Some(json!({
                "project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 1,
                "min_runtime_s": 0, "time_limit_s": 600,
                "command": format!("echo \"$HF_TOKEN $WANDB_API $PLAIN\" > {}", out.display()),
                "env": {"HF_TOKEN": HF, "PLAIN": "visible"},
                "secret_env": {"WANDB_API": WANDB}
            })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let id = answer["id"].as_i64().unwrap();
    // Nobody reads them back, the submitter included.
    for token in [&researcher, &lead, &finance] {
        let (status, run) = app
            .api("GET", &format!("/api/v1/runs/{id}"), Some(token), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{run}");
        assert_eq!(run["env"]["HF_TOKEN"], "••••", "{run}");
        assert_eq!(run["env"]["WANDB_API"], "••••", "{run}");
        assert_eq!(run["env"]["PLAIN"], "visible", "{run}");
        assert_eq!(run["secret_env"], json!(["HF_TOKEN", "WANDB_API"]), "{run}");
        let text = run.to_string();
        assert!(!text.contains(HF) && !text.contains(WANDB), "{text}");
    }
    // A database reader sees neither value in any column.
    assert!(!stored_in_clear(&app, id, HF).await);
    assert!(!stored_in_clear(&app, id, WANDB).await);
    assert!(
        stored_in_clear(&app, id, "visible").await,
        "the check itself works"
    );
    // The agent's process gets them.
    until(Duration::from_secs(60), "the run's output", || async {
        std::fs::read_to_string(&out).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(&out).unwrap().trim(),
        format!("{HF} {WANDB} visible")
    );
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    assert!(!log.contains(HF) && !log.contains(WANDB), "{log}");
    clean_up(&dir);
}

#[tokio::test]
async fn the_run_form_notes_and_masks_secrets_for_every_viewer() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = demo_password(&users, "researcher");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let (_, form, _) = c.get("/runs/new").await;
    assert!(form.contains("TOKEN, SECRET, KEY or PASSWORD"), "{form}");
    let (status, body, location) = c
        .post(
            "/runs/new",
            &[
                ("project", "fm-pretrain-7b"),
                ("cluster", "h100-east"),
                ("gpu_model", "H100"),
                ("gpus", "1"),
                ("min_runtime", "0"),
                ("time_limit", "60"),
                ("command", "python train.py"),
                ("env", "SEED=7\naws_secret_access_key=aws_9f3e"),
                ("secret_env", "WANDB_API=wandb_77aa"),
                ("action", "submit"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let page = location.unwrap();
    for role in ["researcher", "lead", "finance"] {
        let (name, pw) = demo_password(&users, role);
        let mut viewer = app.client();
        viewer.login(&name, &pw).await;
        let (status, body, _) = viewer.get(&page).await;
        assert_eq!(status, StatusCode::OK, "{role}: {body}");
        assert!(body.contains("SEED=7"), "{role}: {body}");
        assert!(
            body.contains("aws_secret_access_key=••••"),
            "{role}: {body}"
        );
        assert!(body.contains("WANDB_API=••••"), "{role}: {body}");
        assert!(
            !body.contains("aws_9f3e") && !body.contains("wandb_77aa"),
            "{role}: {body}"
        );
    }
    // A name given both in clear and as a secret is refused, naming the field; nothing stored.
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let token = app.token_for("demo-researcher").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&token),
            Some(json!({
                "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100", "gpus": 1,
                "min_runtime_s": 0, "time_limit_s": 600, "command": "true",
                "env": {"HF_TOKEN": "a"}, "secret_env": {"HF_TOKEN": "b"}
            })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "env", "{answer}");
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(before, after);
}

#[tokio::test]
async fn secret_looking_values_older_runs_kept_in_clear_are_sealed_at_start_up() {
    let (app, _) = TestApp::with_demo().await;
    let token = app.token_for("demo-researcher").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&token),
            Some(json!({
                "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100", "gpus": 1,
                "min_runtime_s": 0, "time_limit_s": 600, "command": "true",
                "env": {"SEED": "7"}
            })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let id = answer["id"].as_i64().unwrap();
    // As a run stored before secrets were sealed.
    sqlx::query(
        "UPDATE runs SET env = env || '{\"HF_TOKEN\": \"hf_old_55\", \"Db_Password\": \"pw_old_66\"}' WHERE id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    let key = &app.state.secret_key;
    assert_eq!(
        tranche::runs::seal_plain_secrets(&app.pool, key)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        tranche::runs::seal_plain_secrets(&app.pool, key)
            .await
            .unwrap(),
        0
    );
    assert!(!stored_in_clear(&app, id, "hf_old_55").await);
    assert!(!stored_in_clear(&app, id, "pw_old_66").await);
    let (env, sealed): (serde_json::Value, Option<Vec<u8>>) =
        sqlx::query_as("SELECT env, secret_env FROM runs WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(env, json!({"SEED": "7"}));
    let opened = tranche::runs::open_secret_env(key, sealed.as_deref()).unwrap();
    assert_eq!(opened["HF_TOKEN"], "hf_old_55");
    assert_eq!(opened["Db_Password"], "pw_old_66");
    let (_, run) = app
        .api("GET", &format!("/api/v1/runs/{id}"), Some(&token), None)
        .await;
    assert_eq!(run["env"]["Db_Password"], "••••", "{run}");
}

/// A server given another key than the one its runs' secret values were sealed with refuses
/// to start instead of starting runs without them (found by a check: a data directory
/// restored without its `secret.key` made a new key, and a queued run started with its
/// secret variable empty). With no sealed value yet, any key will do.
#[tokio::test]
async fn a_key_that_does_not_open_the_stored_secrets_is_refused() {
    let (app, _) = TestApp::with_demo().await;
    let other = tranche::auth::secrets::SecretKey::random();
    // Nothing sealed yet (the demo's runs have no secret values): any key.
    sqlx::query("UPDATE runs SET secret_env = NULL, secret_env_names = '{}'")
        .execute(&app.pool)
        .await
        .unwrap();
    tranche::runs::check_secret_key(&app.pool, &other, "test")
        .await
        .unwrap();
    let token = app.token_for("demo-researcher").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&token),
            Some(json!({
                "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100", "gpus": 1,
                "min_runtime_s": 0, "time_limit_s": 600, "command": "true",
                "secret_env": {"HF_TOKEN": "hf_sealed_77"}
            })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    tranche::runs::check_secret_key(&app.pool, &app.state.secret_key, "test")
        .await
        .unwrap();
    let err = tranche::runs::check_secret_key(&app.pool, &other, "the key file")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the key file") && err.contains("TRANCHE_SECRET_KEY"),
        "{err}"
    );
}
