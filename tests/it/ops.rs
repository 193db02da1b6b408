//! Operations with real processes (issue 13): idle (squatting) flags driven by `tranche agent`
//! processes reporting declared utilization (`--utilization-file`), with the idle period
//! shortened by configuration, and a drain for repair with a protected run on the node.
//!
//! Waiting is on conditions with deadlines that only turn a hang into a failure.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tranche::config::Site;

use crate::live::{clean_up, live, live_nodes, scratch, site, until};
use crate::support::{TestApp, demo_password};

/// Live settings with idle runs flagged after 2 s under 5%.
fn idle_site() -> Site {
    Site {
        idle_after_s: 2,
        idle_utilization_percent: 5,
        ..site()
    }
}

/// Starts `tranche agent --name NAME --gpus 8xH100 --utilization-file FILE`.
fn agent(base: &str, token: &str, name: &str, dir: &Path, utilization: Option<&Path>) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tranche"));
    command.args([
        "agent", "--server", base, "--gpus", "8xH100", "--name", name,
    ]);
    if let Some(file) = utilization {
        command.arg("--utilization-file").arg(file);
    }
    command
        .arg("--log-dir")
        .arg(dir.join("logs"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .current_dir(dir)
        .env("TRANCHE_AGENT_TOKEN", token)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(
            std::fs::File::options()
                .create(true)
                .append(true)
                .open(dir.join("agent.log"))
                .expect("agent log"),
        )
        .kill_on_drop(true)
        .spawn()
        .expect("start the agent")
}

/// Replaces the utilization file at once (write then rename, so the agent never reads half).
fn declare(file: &Path, text: &str) {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

async fn state_of(app: &TestApp, run: i64) -> String {
    sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn submit(app: &TestApp, token: &str, body: Value) -> i64 {
    let (status, answer) = app
        .api("POST", "/api/v1/runs", Some(token), Some(body))
        .await;
    assert_eq!(status.as_u16(), 201, "{answer}");
    answer["id"].as_i64().unwrap()
}

fn run_body(gpus: i64, min_runtime_s: i64, command: &str) -> Value {
    json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": gpus,
           "min_runtime_s": min_runtime_s, "time_limit_s": 3600, "resumable": true,
           "command": command})
}

/// A command that runs until SIGTERM.
const WAITS: &str = "trap 'exit 143' TERM; sleep 600 & wait";

async fn open_flag(app: &TestApp, run: i64) -> Option<i64> {
    sqlx::query_scalar("SELECT id FROM idle_flags WHERE run_id = $1 AND cleared_at IS NULL")
        .bind(run)
        .fetch_optional(&app.pool)
        .await
        .unwrap()
}

async fn notified(app: &TestApp, user: &str, run: i64) -> bool {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM notifications n JOIN users u ON u.id = n.user_id \
         WHERE u.name = $1 AND n.link = $2 AND n.message LIKE '%idle%')",
    )
    .bind(user)
    .bind(format!("/runs/{run}"))
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_run_is_flagged_to_lead_and_submitter_and_a_lead_stops_it() {
    let (app, base, researcher, lead, agent_token, users) = live_users(idle_site()).await;
    let dir = scratch("idle");
    let file = dir.join("utilization");
    declare(&file, "# all eight GPUs nearly idle\n* 2\n");
    app.declare_nodes(&["idle-node"]).await;
    let _agent = agent(&base, &agent_token, "idle-node", &dir, Some(&file));
    until(Duration::from_secs(30), "the agent's node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let run = submit(&app, &researcher, run_body(8, 60, WAITS)).await;
    until(Duration::from_secs(60), "the idle flag", || async {
        open_flag(&app, run).await.is_some()
    })
    .await;
    let flag = open_flag(&app, run).await.unwrap();
    // Flagged no earlier than the idle period after the run started and went idle.
    let (idle_since, flagged_at, started_at): (
        time::OffsetDateTime,
        time::OffsetDateTime,
        time::OffsetDateTime,
    ) = sqlx::query_as(
        "SELECT f.idle_since, f.flagged_at, r.started_at FROM idle_flags f JOIN runs r ON r.id = f.run_id WHERE f.id = $1",
    )
    .bind(flag)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(idle_since >= started_at, "{idle_since} {started_at}");
    assert!(
        flagged_at - idle_since >= time::Duration::seconds(2),
        "flagged {flagged_at}, idle since {idle_since}"
    );
    // To its submitter and to the project's lead, not to finance.
    until(Duration::from_secs(10), "the notifications", || async {
        notified(&app, "demo-researcher", run).await && notified(&app, "demo-lead", run).await
    })
    .await;
    assert!(!notified(&app, "demo-finance", run).await);

    // The API's figures: GPUs x idle seconds, priced at the model's weight and price.
    let (status, answer) = app
        .api("GET", "/api/v1/idle-flags", Some(&lead), None)
        .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    let flags = answer["flags"].as_array().unwrap();
    assert_eq!(flags.len(), 1, "{answer}");
    let f = &flags[0];
    assert_eq!(f["run_id"], run);
    assert_eq!(f["gpus"], 8);
    let idle_s = f["idle_s"].as_i64().unwrap();
    assert!(idle_s >= 2, "{f}");
    assert_eq!(f["idle_gpu_seconds"].as_i64().unwrap(), 8 * idle_s);
    let (weight, price): (i32, i64) = sqlx::query_as(
        "SELECT billing_weight_milli, price_per_gpu_hour_minor FROM gpu_models WHERE name = 'H100'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let value = (8.0 * idle_s as f64 / 3600.0 * f64::from(weight) / 1000.0 * price as f64).round();
    assert_eq!(f["idle_value_minor"].as_i64().unwrap() as f64, value, "{f}");

    // Shown on the lead's home page, with a stop form, and on the submitter's without one.
    let mut lead_page = app.client();
    let (name, pw) = demo_password(&users, "lead");
    lead_page.login(&name, &pw).await;
    let (_, home, _) = lead_page.get("/").await;
    assert!(home.contains("Idle GPUs"), "{home}");
    assert!(home.contains(&format!("/idle-flags/{flag}/stop")), "{home}");
    let mut researcher_page = app.client();
    let (name, pw) = demo_password(&users, "researcher");
    researcher_page.login(&name, &pw).await;
    let (_, home, _) = researcher_page.get("/").await;
    assert!(home.contains(&format!("/runs/{run}")), "{home}");
    assert!(
        !home.contains(&format!("/idle-flags/{flag}/stop")),
        "{home}"
    );

    // The submitter is no lead: refused. A lead without a reason: the form comes back.
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/idle-flags/{flag}/stop"),
            Some(&researcher),
            Some(json!({"reason": "mine"})),
        )
        .await;
    assert_eq!(status.as_u16(), 403, "{answer}");
    let (status, body, _) = lead_page
        .post(&format!("/idle-flags/{flag}/stop"), &[("reason", "  ")])
        .await;
    assert_eq!(status.as_u16(), 422, "{body}");
    assert!(body.contains("give a reason"), "{body}");
    assert_eq!(state_of(&app, run).await, "running");
    // With a reason: stopped through its agent, audited, the flag cleared.
    let (status, body, location) = lead_page
        .post(
            &format!("/idle-flags/{flag}/stop"),
            &[("reason", "idle for the whole review")],
        )
        .await;
    assert_eq!(status.as_u16(), 303, "{body}");
    assert_eq!(location.as_deref(), Some(format!("/runs/{run}").as_str()));
    until(Duration::from_secs(30), "the run cancelled", || async {
        state_of(&app, run).await == "cancelled"
    })
    .await;
    let (why, reason): (String, String) =
        sqlx::query_as("SELECT cleared_why, stop_reason FROM idle_flags WHERE id = $1")
            .bind(flag)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (why.as_str(), reason.as_str()),
        ("stopped", "idle for the whole review")
    );
    assert_eq!(app.audit_count("run.idle_stop").await, 1);
    let event: String = sqlx::query_scalar(
        "SELECT message FROM run_events WHERE run_id = $1 AND kind = 'cancel_requested'",
    )
    .bind(run)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(event.contains("stopped as idle by demo-lead"), "{event}");
    // Stopping again: the flag has cleared.
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/idle-flags/{flag}/stop"),
            Some(&lead),
            Some(json!({"reason": "again"})),
        )
        .await;
    assert_eq!(status.as_u16(), 409, "{answer}");
    assert_eq!(answer["error"]["code"], "flag_cleared");
    clean_up(&dir);
}

/// [`live`] with the demo users' passwords: (app, base URL, researcher token, lead token,
/// agent token, users).
async fn live_users(
    site: Site,
) -> (
    TestApp,
    String,
    String,
    String,
    String,
    Vec<tranche::demo::DemoUser>,
) {
    let app = TestApp::with_site(site).await;
    let users = tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let base = app.serve().await;
    let researcher = app.token_for("demo-researcher").await;
    let lead = app.token_for("demo-lead").await;
    let agent = tranche::runs::agents::create_token(&app.pool, "local")
        .await
        .unwrap();
    (app, base, researcher, lead, agent, users)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_flag_clears_when_utilization_comes_back() {
    let (app, base, researcher, _lead, agent_token) = live(idle_site()).await;
    let dir = scratch("idle-recovery");
    let file = dir.join("utilization");
    // One GPU of the eight busy: the run is not idle.
    declare(&file, "* 1,1,1,1,1,1,1,50\n");
    app.declare_nodes(&["recovery-node"]).await;
    let _agent = agent(&base, &agent_token, "recovery-node", &dir, Some(&file));
    until(Duration::from_secs(30), "the agent's node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let run = submit(&app, &researcher, run_body(8, 60, WAITS)).await;
    until(Duration::from_secs(60), "the run running", || async {
        state_of(&app, run).await == "running"
    })
    .await;
    let reported = |want: Vec<i16>| {
        let app = &app;
        async move {
            let (util, idle): (Option<Vec<i16>>, Option<time::OffsetDateTime>) = sqlx::query_as(
                "SELECT n.gpu_utilization, r.idle_since FROM nodes n, runs r WHERE n.name = 'recovery-node' AND r.id = $1",
            )
            .bind(run)
            .fetch_one(&app.pool)
            .await
            .unwrap();
            (util == Some(want), idle)
        }
    };
    until(
        Duration::from_secs(30),
        "the partly busy heartbeat",
        || async { reported(vec![1, 1, 1, 1, 1, 1, 1, 50]).await.0 },
    )
    .await;
    assert_eq!(reported(vec![]).await.1, None, "one busy GPU is not idle");
    assert!(open_flag(&app, run).await.is_none());

    declare(&file, "* 1\n");
    until(Duration::from_secs(60), "the idle flag", || async {
        open_flag(&app, run).await.is_some()
    })
    .await;
    let flag = open_flag(&app, run).await.unwrap();
    declare(&file, "* 80\n");
    until(Duration::from_secs(30), "the flag cleared", || async {
        open_flag(&app, run).await.is_none()
    })
    .await;
    let why: String = sqlx::query_scalar("SELECT cleared_why FROM idle_flags WHERE id = $1")
        .bind(flag)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(why, "recovered");
    assert_eq!(reported(vec![]).await.1, None);
    let (_, answer) = app
        .api("GET", "/api/v1/idle-flags", Some(&researcher), None)
        .await;
    assert_eq!(answer["flags"], json!([]), "{answer}");
    assert_eq!(state_of(&app, run).await, "running");
    clean_up(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn drained_node_requeues_its_protected_run_when_protection_ends_and_reports_empty() {
    let (app, base, researcher, _lead, agent_token, users) = live_users(site()).await;
    let admin = app.token_for("demo-admin").await;
    let dir = scratch("drain");
    app.declare_nodes(&["drain-node"]).await;
    let _agent = agent(&base, &agent_token, "drain-node", &dir, None);
    until(Duration::from_secs(30), "the agent's node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let node: i64 = sqlx::query_scalar("SELECT id FROM nodes WHERE name = 'drain-node'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    // Protected for 8 s.
    let protected = submit(&app, &researcher, run_body(4, 8, WAITS)).await;
    until(
        Duration::from_secs(60),
        "the protected run running",
        || async { state_of(&app, protected).await == "running" },
    )
    .await;
    // A reason is required.
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/cluster-nodes/{node}/drain"),
            Some(&admin),
            Some(json!({"reason": " "})),
        )
        .await;
    assert_eq!(status.as_u16(), 422, "{answer}");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/cluster-nodes/{node}/drain"),
            Some(&admin),
            Some(json!({"reason": "replace GPU 3 (XID 79)"})),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    assert_eq!(answer["drain"]["reason"], "replace GPU 3 (XID 79)");
    assert_eq!(answer["empty_ready_for_repair"], false);
    // No new run starts there, though four GPUs are free: it waits, with a reason.
    let newcomer = submit(&app, &researcher, run_body(1, 0, WAITS)).await;
    until(
        Duration::from_secs(30),
        "the newcomer's wait reason",
        || async {
            let reason: Option<String> =
                sqlx::query_scalar("SELECT wait_reason FROM runs WHERE id = $1")
                    .bind(newcomer)
                    .fetch_one(&app.pool)
                    .await
                    .unwrap();
            reason.is_some()
        },
    )
    .await;
    assert_eq!(state_of(&app, newcomer).await, "queued");
    // The protected run keeps running until its protection ends, then is requeued.
    until(
        Duration::from_secs(60),
        "the protected run requeued",
        || async { state_of(&app, protected).await == "queued" },
    )
    .await;
    let (preempted_at, message): (time::OffsetDateTime, String) = sqlx::query_as(
        "SELECT at, message FROM run_events WHERE run_id = $1 AND kind = 'preempted'",
    )
    .bind(protected)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let started_at: time::OffsetDateTime =
        sqlx::query_scalar("SELECT at FROM run_events WHERE run_id = $1 AND kind = 'started'")
            .bind(protected)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(
        preempted_at - started_at >= time::Duration::seconds(8),
        "preempted {preempted_at}, started {started_at}"
    );
    assert!(message.contains("draining"), "{message}");
    // The node reports empty, ready for repair; the newcomer never started.
    until(Duration::from_secs(30), "the node empty", || async {
        let (_, answer) = app
            .api(
                "GET",
                &format!("/api/v1/cluster-nodes/{node}"),
                Some(&admin),
                None,
            )
            .await;
        answer["empty_ready_for_repair"] == true
    })
    .await;
    let attempts: i32 = sqlx::query_scalar("SELECT attempt FROM runs WHERE id = $1")
        .bind(newcomer)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(attempts, 0, "the newcomer started on the draining node");
    let mut page = app.client();
    let (name, pw) = demo_password(&users, "admin");
    page.login(&name, &pw).await;
    let (status, html, _) = page.get(&format!("/admin/nodes/{node}")).await;
    assert_eq!(status.as_u16(), 200);
    assert!(html.contains("empty, ready for repair since"), "{html}");
    assert!(html.contains("replace GPU 3 (XID 79)"), "{html}");
    // Emptied by itself: no human had to stop a protected run.
    let now = jiff::Timestamp::now();
    let counts = tranche::db::drains::counts(
        &app.pool,
        now - jiff::SignedDuration::from_hours(1),
        now + jiff::SignedDuration::from_hours(1),
    )
    .await
    .unwrap();
    assert_eq!(
        counts,
        tranche::db::drains::DrainCounts {
            drains: 1,
            emptied_by_themselves: 1,
            needed_human: 0,
            in_progress: 0
        }
    );
    // The metrics page says so too.
    let (status, html, _) = page.get("/dashboard?window=24h").await;
    assert_eq!(status.as_u16(), 200);
    assert!(
        html.contains("1 drains for repair began in this window: 1 emptied by themselves, 0 needed an admin to stop a protected run (0% of finished drains needed a human), 0 still emptying."),
        "{html}"
    );
    // Back to service (the page's button): the waiting runs start there again.
    let (status, _, _) = page.post(&format!("/admin/nodes/{node}/return"), &[]).await;
    assert_eq!(status.as_u16(), 303);
    until(Duration::from_secs(60), "the newcomer started", || async {
        state_of(&app, newcomer).await == "running"
    })
    .await;
    assert_eq!(app.audit_count("node.drain").await, 1);
    assert_eq!(app.audit_count("node.return").await, 1);
    clean_up(&dir);
}

/// Charges `hours` allocated H100 GPU-hours on `local` to `project` now, as the scheduler's
/// settlement does; returns the amount charged.
async fn charge(app: &TestApp, project: &str, hours: i64) -> i64 {
    let id = app.node_id(project).await;
    let (cluster, model): (i64, i64) = sqlx::query_as(
        "SELECT c.id, m.id FROM clusters c, gpu_models m WHERE c.name = 'local' AND m.name = 'H100'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let mut tx = app.pool.begin().await.unwrap();
    let c = tranche::ledger::charge_usage(
        &app.pool,
        &mut tx,
        &app.state.site,
        jiff::Timestamp::now(),
        id,
        (cluster, model),
        hours * 3600,
        true,
        None,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        c.charged_gpu_seconds,
        hours * 3600,
        "the budget pays for it"
    );
    c.charged_minor
}

#[tokio::test]
async fn project_page_shows_runs_standing_owed_received_spend_and_idle_flags() {
    let (app, users) = TestApp::with_demo().await;
    tranche::ledger::roll_over(&app.pool, jiff::Timestamp::now(), &app.state.site)
        .await
        .unwrap();
    let researcher = app.token_for("demo-researcher").await;
    let agent = tranche::runs::agents::create_token(&app.pool, "local")
        .await
        .unwrap();
    app.declare_nodes(&["page-node"]).await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/agent/register",
            Some(&agent),
            Some(json!({"nodes": [{"name": "page-node", "gpus": 8, "gpu_model": "H100"}]})),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    // One run fits on the node, the second (8 GPUs) must wait for it.
    let first = submit(&app, &researcher, run_body(4, 600, WAITS)).await;
    let second = submit(&app, &researcher, run_body(8, 600, WAITS)).await;
    tranche::runs::service::pass(&app.state).await.unwrap();
    let reason: String = sqlx::query_scalar("SELECT wait_reason FROM runs WHERE id = $1")
        .bind(second)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    // Usage in the window: 10 GPU-hours for the project, 30 for one sibling.
    let project = app.node_id("fm-pretrain-7b").await;
    let parent: i64 = sqlx::query_scalar("SELECT parent_id FROM tree_nodes WHERE id = $1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let siblings: Vec<(i64, String, i32)> = sqlx::query_as(
        "SELECT id, name, share_bp FROM tree_nodes WHERE parent_id = $1 AND NOT archived ORDER BY id",
    )
    .bind(parent)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(siblings.len() >= 2, "{siblings:?}");
    let other = siblings.iter().find(|s| s.0 != project).unwrap().clone();
    let is_project: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM projects WHERE node_id = $1)")
            .bind(other.0)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(is_project, "the sibling is a project");
    let spent = charge(&app, "fm-pretrain-7b", 10).await;
    charge(&app, &other.1, 30).await;
    // The rank by hand: idle siblings with a share first, then share / usage, greater first.
    let share_of = |id: i64| f64::from(siblings.iter().find(|s| s.0 == id).unwrap().2);
    let idle_ahead = siblings
        .iter()
        .filter(|s| s.0 != project && s.0 != other.0 && s.2 > 0)
        .count();
    let fm_first = share_of(project) / 10.0 > share_of(other.0) / 30.0;
    let rank = idle_ahead + if fm_first { 1 } else { 2 };
    // An idle flag on the running run.
    sqlx::query("UPDATE runs SET state = 'running' WHERE id = $1")
        .bind(first)
        .execute(&app.pool)
        .await
        .unwrap();
    let flag: i64 = sqlx::query_scalar(
        "INSERT INTO idle_flags (run_id, attempt, gpus, idle_since) VALUES ($1, 1, 4, now() - interval '30 minutes') RETURNING id",
    )
    .bind(first)
    .fetch_one(&app.pool)
    .await
    .unwrap();

    let mut lead = app.client();
    let (name, pw) = demo_password(&users, "lead");
    lead.login(&name, &pw).await;
    let (status, html, _) = lead.get(&format!("/projects/{project}")).await;
    assert_eq!(status.as_u16(), 200, "{html}");
    assert!(html.contains(&format!("/runs/{first}")) && html.contains(&format!("/runs/{second}")));
    assert!(
        html.contains("Running (1)") && html.contains("Waiting (1)"),
        "{html}"
    );
    // The core's reason, its instant in the organisation's zone (the API's words give UTC).
    let words = reason.split(" about ").next().unwrap();
    assert!(
        html.contains(words),
        "the core's reason {reason:?} in {html}"
    );
    assert!(
        html.contains(&format!(
            "Rank <strong>{rank} of {}</strong>",
            siblings.len()
        )),
        "{html}"
    );
    assert!(html.contains("10 GPU-hours (billing-weighted"), "{html}");
    // Owed and received are the metrics page's figures for the period (summed over pools).
    let lead_token = app.token_for("demo-lead").await;
    let (status, body) = app
        .api(
            "GET",
            "/api/v1/metrics?window=period",
            Some(&lead_token),
            None,
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{body}");
    let (mut owed, mut received) = (0.0, 0.0);
    for pool in body["pools"].as_array().unwrap() {
        for p in pool["projects"].as_array().unwrap() {
            if p["id"] == project {
                owed += p["owed_gpu_hours"].as_f64().unwrap();
                received += p["received_gpu_hours"].as_f64().unwrap();
            }
        }
    }
    assert!(
        html.contains(&format!(
            "<strong>{owed:.1}</strong> GPU-hours; received (allocated runs): <strong>{received:.1}</strong>"
        )),
        "{owed} {received} in {html}"
    );
    assert!(html.contains("<svg") && html.contains("owed (entitlement capped at demand)"));
    let money = tranche::domain::Money(spent).display("USD");
    assert!(
        html.contains(&format!("<dt>Allocated runs</dt><dd>{money}</dd>")),
        "{money} in {html}"
    );
    assert!(html.contains("Forecast to the period"));
    // The idle flag with its stop form for the lead: 4 GPUs x 0.5 h.
    assert!(html.contains(&format!("/idle-flags/{flag}/stop")), "{html}");
    assert!(html.contains("idle-gpu-hours\">2"), "{html}");
    // A member sees the page, and the flag, without the stop form.
    let mut member = app.client();
    let (name, pw) = demo_password(&users, "researcher");
    member.login(&name, &pw).await;
    let (status, html, _) = member.get(&format!("/projects/{project}")).await;
    assert_eq!(status.as_u16(), 200);
    assert!(html.contains(&format!("/runs/{first}")));
    assert!(!html.contains(&format!("/idle-flags/{flag}/stop")));
    // The standing names only the siblings the member may see in the tree (their own
    // projects; a researcher leads nothing): the others keep their ranks, without names.
    let mine: Vec<i64> = sqlx::query_scalar(
        "SELECT pm.project_id FROM project_members pm JOIN users u ON u.id = pm.user_id WHERE u.name = $1",
    )
    .bind(&name)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let hidden: Vec<&(i64, String, i32)> =
        siblings.iter().filter(|s| !mine.contains(&s.0)).collect();
    assert!(
        !hidden.is_empty(),
        "the demo gives the project a sibling the member is not in"
    );
    let table = &html[html.find("class=\"siblings\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    for s in &hidden {
        assert!(!table.contains(&format!(">{}<", s.1)), "{} in {table}", s.1);
    }
    assert_eq!(
        table.matches("another project (not yours to see)").count(),
        hidden.len(),
        "{table}"
    );
    assert!(table.contains(&format!(
        "<strong>{}</strong>",
        siblings.iter().find(|s| s.0 == project).unwrap().1
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_flag_is_mailed_to_submitter_and_lead_with_an_address() {
    let (port, inbox, arrived) = crate::mail::smtp_sink().await;
    let site = Site {
        smtp: Some(tranche::config::Smtp {
            url: tranche::config::Secret::new(format!("smtp://127.0.0.1:{port}")),
            from: "Tranche <tranche@example.org>".into(),
        }),
        idle_after_s: 600,
        ..Site::for_tests()
    };
    let app = TestApp::with_site(site).await;
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let researcher = app.token_for("demo-researcher").await;
    for (user, address) in [
        ("demo-lead", "lead@example.org"),
        ("demo-researcher", "researcher@example.org"),
        ("demo-finance", "finance@example.org"),
    ] {
        let id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = $1")
            .bind(user)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        tranche::db::users::set_email(&app.pool, id, address)
            .await
            .unwrap();
    }
    app.declare_nodes(&["mail-node"]).await;
    let run = submit(&app, &researcher, run_body(2, 60, WAITS)).await;
    // As the heartbeats would leave it: running, both GPUs idle for 15 minutes (past 10).
    sqlx::query(
        "UPDATE runs SET state = 'running', attempt = 1, started_at = now() - interval '20 minutes', \
                idle_attempt = 1, idle_since = now() - interval '15 minutes' WHERE id = $1",
    )
    .bind(run)
    .execute(&app.pool)
    .await
    .unwrap();
    let raised = tranche::runs::idle::check(&app.state).await.unwrap();
    assert_eq!(raised.len(), 1);
    // A second check raises nothing new.
    assert!(
        tranche::runs::idle::check(&app.state)
            .await
            .unwrap()
            .is_empty()
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    // One message per address: the submitter's and the lead's, not finance's.
    while inbox.lock().unwrap().len() < 2 {
        tokio::time::timeout_at(deadline, arrived.notified())
            .await
            .expect("the e-mails did not arrive within 2 minutes");
    }
    let messages = inbox.lock().unwrap().clone();
    let mut to: Vec<String> = messages.iter().flat_map(|(t, _)| t.clone()).collect();
    to.sort();
    assert_eq!(to, vec!["lead@example.org", "researcher@example.org"]);
    let data = &messages[0].1;
    assert!(
        data.contains(&format!("Subject: Tranche: run {run} holds idle GPUs")),
        "{data}"
    );
    // 2 GPUs x 15 minutes = 0.5 GPU-hours (the check ran within seconds of the setup).
    assert!(
        data.contains("0.5 GPU-hours") || data.contains("0.51 GPU-hours"),
        "{data}"
    );
}

#[tokio::test]
async fn admin_stopping_a_protected_run_on_a_draining_node_counts_as_needing_a_human() {
    let (app, _) = TestApp::with_demo().await;
    let researcher = app.token_for("demo-researcher").await;
    let admin = app.token_for("demo-admin").await;
    let agent = tranche::runs::agents::create_token(&app.pool, "local")
        .await
        .unwrap();
    app.declare_nodes(&["human-node"]).await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/agent/register",
            Some(&agent),
            Some(json!({"nodes": [{"name": "human-node", "gpus": 8, "gpu_model": "H100"}]})),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    let node = answer["nodes"][0]["id"].as_i64().unwrap();
    // Protected for an hour, on the node.
    let run = submit(&app, &researcher, run_body(8, 3600, WAITS)).await;
    tranche::runs::service::pass(&app.state).await.unwrap();
    assert_eq!(state_of(&app, run).await, "starting");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/cluster-nodes/{node}/drain"),
            Some(&admin),
            Some(json!({"reason": "firmware update"})),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    // The pass leaves the protected run alone.
    tranche::runs::service::pass(&app.state).await.unwrap();
    assert_eq!(state_of(&app, run).await, "starting");
    let window = |app: &TestApp| {
        let now = jiff::Timestamp::now();
        let pool = app.pool.clone();
        async move {
            tranche::db::drains::counts(
                &pool,
                now - jiff::SignedDuration::from_hours(1),
                now + jiff::SignedDuration::from_hours(1),
            )
            .await
            .unwrap()
        }
    };
    assert_eq!(window(&app).await.in_progress, 1);
    // The admin cannot wait: they cancel the protected run.
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/runs/{run}/cancel"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    let counts = window(&app).await;
    assert_eq!(
        (
            counts.drains,
            counts.needed_human,
            counts.emptied_by_themselves
        ),
        (1, 1, 0),
        "{counts:?}"
    );
    assert_eq!(counts.needed_human_fraction(), Some(1.0));
}

/// The command line refuses what the server would: an agent serving more nodes than one
/// session may register (1,024), and a token label with a control character or over 100
/// characters (the account page's rules); both before touching a server or a database.
#[test]
fn the_command_line_refuses_agent_node_counts_and_token_labels_the_server_would() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tranche"))
            .args(args)
            .output()
            .expect("run tranche");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (ok, err) = run(&[
        "agent",
        "--server",
        "http://127.0.0.1:9",
        "--token",
        "t",
        "--nodes",
        "1025",
    ]);
    assert!(!ok && err.contains("1025 is not in 1..=1024"), "{err}");
    for label in ["a\tb".to_string(), "x".repeat(101)] {
        let (ok, err) = run(&[
            "admin",
            "create-token",
            "--user",
            "nobody",
            "--label",
            &label,
        ]);
        assert!(
            !ok && err.contains("--label: at most 100 characters"),
            "{label:?}: {err}"
        );
    }
}

/// Commands other than `serve` refuse a data directory holding no database (a mistyped one
/// got an empty organisation initialised there), and an unreachable `DATABASE_URL` says why at
/// once (it waited 30 s, then said only that the pool timed out).
#[test]
fn commands_name_a_missing_database_and_an_unreachable_server() {
    let dir = std::env::temp_dir().join(format!("tranche-no-such-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tranche"))
        .args([
            "admin",
            "create-token",
            "--user",
            "demo-admin",
            "--data-dir",
        ])
        .arg(&dir)
        .env_remove("DATABASE_URL")
        .output()
        .expect("run tranche");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!(
            "there is no Tranche database in {}",
            dir.display()
        )),
        "{err}"
    );
    assert!(!dir.exists(), "nothing created");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tranche"))
        .arg("migrate")
        .env("DATABASE_URL", "postgres://nobody:secret@127.0.0.1:9/none")
        .output()
        .expect("run tranche");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot connect to PostgreSQL") && err.contains("refused"),
        "{err}"
    );
    assert!(!err.contains("secret"), "the password is not shown: {err}");
    // Log settings that mean nothing are refused, not replaced by the defaults.
    for (var, value, says) in [
        (
            "TRANCHE_LOG_FORMAT",
            "xml",
            "TRANCHE_LOG_FORMAT must be text or json, got \"xml\"",
        ),
        ("RUST_LOG", "tranche=loud", "RUST_LOG is not a log filter"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tranche"))
            .arg("migrate")
            .env(var, value)
            .output()
            .expect("run tranche");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{var}: {err}");
    }
}

/// An idle flag's notice is told in each reader's language, numbers and instant as that
/// language writes them (found by a new-user check: it was English on Spanish and Basque
/// pages), and a free run's idle GPUs are given no money value: it is charged nothing (the
/// notice said "0.08 EUR so far" and the API 24 minor units).
#[tokio::test]
async fn an_idle_free_runs_notice_is_in_the_readers_language_and_costs_nothing() {
    let app = TestApp::with_site(Site {
        idle_after_s: 600,
        ..Site::for_tests()
    })
    .await;
    let users = tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let researcher = app.token_for("demo-researcher").await;
    app.declare_nodes(&["free-idle-node"]).await;
    // Free (minimum runtime 0), 2 GPUs idle for 45 minutes: 1.5 GPU-hours.
    let run = submit(&app, &researcher, run_body(2, 0, WAITS)).await;
    sqlx::query(
        "UPDATE runs SET state = 'running', attempt = 1, started_at = now() - interval '50 minutes', \
                idle_attempt = 1, idle_since = now() - interval '45 minutes' WHERE id = $1",
    )
    .bind(run)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        tranche::runs::idle::check(&app.state).await.unwrap().len(),
        1
    );
    let (status, answer) = app
        .api("GET", "/api/v1/idle-flags", Some(&researcher), None)
        .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    let f = &answer["flags"][0];
    assert_eq!(f["run_id"], run, "{answer}");
    assert_eq!(f["idle_value_minor"], 0, "{f}");
    assert_eq!(f["free"], true, "{f}");
    let english: String =
        sqlx::query_scalar("SELECT message FROM notifications WHERE link = $1 LIMIT 1")
            .bind(format!("/runs/{run}"))
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(
        english.contains(&format!(
            "Run {run} (fm-pretrain-7b) holds 2 H100 GPUs idle"
        )) && english.contains(": 1.5 GPU-hours so far (a free run: charged nothing"),
        "{english}"
    );
    // The researcher reads Spanish.
    sqlx::query("UPDATE users SET language = 'es' WHERE name = 'demo-researcher'")
        .execute(&app.pool)
        .await
        .unwrap();
    let mut page = app.client();
    let (name, pw) = demo_password(&users, "researcher");
    page.login(&name, &pw).await;
    let (_, home, _) = page.get("/").await;
    assert!(
        home.contains(&format!(
            "La ejecución {run} (fm-pretrain-7b) tiene 2 GPU H100 ociosas (todas por debajo del 5 % de uso)"
        )) && home.contains(": 1,5 GPU-horas hasta ahora (una ejecución gratuita"),
        "{home}"
    );
    assert!(home.contains("gratuita (no se cobra nada)"), "{home}");
}
