//! End to end with real processes: the server (its scheduler loop included) on a real port,
//! `tranche agent` processes on the `local` cluster running real commands, and for the crash
//! test `tranche serve` processes killed with SIGKILL again and again.
//!
//! Waiting is on conditions (a row in a state, a file written) with generous deadlines that
//! only turn a hang into a failure; no test sleeps to make timing pass.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tranche::config::Site;

use crate::support::TestApp;

/// Settings that keep live tests short: a 2 s grace period, agents lost after 3 s of silence,
/// a pass at least every second.
pub fn site() -> Site {
    Site {
        grace_s: 2,
        agent_timeout_s: 3,
        tick_s: 1,
        ..Site::for_tests()
    }
}

/// The demo organisation on `site`, served on a real port: (app, base URL, researcher token,
/// lead token, agent token).
pub async fn live(site: Site) -> (TestApp, String, String, String, String) {
    let app = TestApp::with_site(site).await;
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let base = app.serve().await;
    let researcher = app.token_for("demo-researcher").await;
    let lead = app.token_for("demo-lead").await;
    let agent = tranche::runs::agents::create_token(&app.pool, "local")
        .await
        .unwrap();
    (app, base, researcher, lead, agent)
}

/// A scratch directory for the commands' files.
pub fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tranche-live-{label}-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `tranche agent --nodes N --gpus 8xH100` as a real process.
pub fn agent(base: &str, token: &str, name: &str, nodes: u32, dir: &Path) -> Child {
    agent_with(base, token, Some(name), nodes, dir, "agent.log")
}

/// Starts `tranche agent` in `dir` (so its default state directory is `dir`'s), named `name`
/// or by default (this machine's host name), its output appended to `dir/LOG`.
pub fn agent_with(
    base: &str,
    token: &str,
    name: Option<&str>,
    nodes: u32,
    dir: &Path,
    log: &str,
) -> Child {
    agent_flags(base, token, name, nodes, dir, log, &[])
}

/// As [`agent_with`], with more flags.
fn agent_flags(
    base: &str,
    token: &str,
    name: Option<&str>,
    nodes: u32,
    dir: &Path,
    log: &str,
    flags: &[&str],
) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tranche"));
    command.args(["agent", "--server", base, "--gpus", "8xH100"]);
    command.args(flags);
    if let Some(name) = name {
        command.args(["--name", name]);
    }
    command
        .args(["--nodes", &nodes.to_string()])
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
                .open(dir.join(log))
                .expect("agent log"),
        )
        .kill_on_drop(true)
        .spawn()
        .expect("start the agent")
}

/// Polls `check` every 50 ms until it holds; panics with `what` after `limit`.
pub async fn until<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn state_of(app: &TestApp, run: i64) -> String {
    sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn wait_state(app: &TestApp, run: i64, state: &str) {
    until(
        Duration::from_secs(60),
        &format!("run {run} {state}"),
        || async { state_of(app, run).await == state },
    )
    .await;
}

pub async fn live_nodes(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM nodes WHERE agent_session IS NOT NULL")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn post(http: &reqwest::Client, url: String, token: &str, body: Value) -> (u16, Value) {
    let res = http
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The command of the test runs: records the agent token it sees (`unset`: none) and
/// `$CUDA_VISIBLE_DEVICES $TRANCHE_RUN_ID` per attempt
/// and node process, then waits for SIGTERM (recording it) unless it is a later attempt, which
/// Submits, as `token`, a 1-GPU unallocated run of `command` (time limit one hour) on the
/// `local` cluster and returns its id.
async fn free_run(base: &str, token: &str, command: &str, resumable: bool) -> i64 {
    let (status, answer) = post(
        &reqwest::Client::new(),
        format!("{base}/api/v1/runs"),
        token,
        json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 1,
               "min_runtime_s": 0, "time_limit_s": 3600, "resumable": resumable, "command": command}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    answer["id"].as_i64().unwrap()
}

/// finishes at once.
fn recording_command(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "echo \"${{TRANCHE_AGENT_TOKEN:-unset}}\" > {d}/token-$TRANCHE_RUN_ID-$$; \
         echo \"$CUDA_VISIBLE_DEVICES $TRANCHE_RUN_ID\" > {d}/run-$TRANCHE_RUN_ID-$TRANCHE_ATTEMPT-$$; \
         if [ \"$TRANCHE_ATTEMPT\" -ge 2 ]; then exit 0; fi; \
         trap 'echo term > {d}/term-$TRANCHE_RUN_ID-$$; exit 143' TERM; sleep 600 & wait"
    )
}

/// Kills the process groups of every recorded run process still alive (those an agent that
/// was killed left behind) and removes the directory.
pub fn clean_up(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(pid) = name
                .strip_prefix("run-")
                .and_then(|rest| rest.rsplit('-').next())
                .and_then(|p| p.parse::<i32>().ok())
            {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Lines written by the runs' processes for `run`, attempt `attempt`, sorted.
fn records(dir: &Path, run: i64, attempt: i32) -> Vec<String> {
    let prefix = format!("run-{run}-{attempt}-");
    let mut lines: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn researcher_runs_real_work_and_an_under_served_project_preempts() {
    let (app, base, researcher, lead, agent_token) = live(site()).await;
    let dir = scratch("e2e");
    app.declare_agent_nodes("e2e", 2).await;
    let _agent = agent(&base, &agent_token, "e2e", 2, &dir);
    until(Duration::from_secs(30), "two agent nodes", || async {
        live_nodes(&app).await == 2
    })
    .await;
    let http = reqwest::Client::new();
    // fm-pretrain-70b has used 100 GPU-hours this week; fm-pretrain-7b nothing.
    let pretrain_70b = app.node_id("fm-pretrain-70b").await;
    let (cluster, model): (i64, i64) = sqlx::query_as(
        "SELECT c.id, m.id FROM clusters c, gpu_models m WHERE c.name = 'local' AND m.name = 'H100'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let mut conn = app.pool.acquire().await.unwrap();
    tranche::ledger::charge_usage(
        &app.pool,
        &mut conn,
        &app.state.site,
        jiff::Timestamp::now(),
        pretrain_70b,
        (cluster, model),
        100 * 3600,
        true,
        None,
    )
    .await
    .unwrap();
    drop(conn);

    // The over-served project's run takes both nodes (a 16-GPU gang), protected for 2 s.
    let (status, answer) = post(
        &http,
        format!("{base}/api/v1/runs"),
        &researcher,
        json!({"project": "fm-pretrain-70b", "cluster": "local", "gpu_model": "H100", "gpus": 16,
               "min_runtime_s": 2, "time_limit_s": 3600, "resumable": true,
               "command": recording_command(&dir)}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let victim = answer["id"].as_i64().unwrap();
    wait_state(&app, victim, "running").await;
    until(Duration::from_secs(30), "both gang processes", || async {
        records(&dir, victim, 1).len() == 2
    })
    .await;
    // Each node's process saw its own 8 GPUs and the run id.
    assert_eq!(
        records(&dir, victim, 1),
        vec![format!("0,1,2,3,4,5,6,7 {victim}"); 2]
    );

    // The under-served project's protected run is above its self-service limit: the lead
    // approves it.
    let pretrain_7b = app.node_id("fm-pretrain-7b").await;
    let res = http
        .put(format!("{base}/api/v1/projects/{pretrain_7b}/budget"))
        .bearer_auth(&lead)
        .json(&json!({"period_budget_minor": null, "money_cap_minor": null, "self_service_gpu_hours": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let (status, answer) = post(
        &http,
        format!("{base}/api/v1/runs"),
        &researcher,
        json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 8,
               "min_runtime_s": 3600, "time_limit_s": 7200, "resumable": false,
               "command": format!("echo \"$CUDA_VISIBLE_DEVICES $TRANCHE_RUN_ID\" > {}/run-$TRANCHE_RUN_ID-$TRANCHE_ATTEMPT-$$", dir.display())}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["state"], "waiting_approval");
    let preemptor = answer["id"].as_i64().unwrap();
    let (status, answer) = post(
        &http,
        format!("{base}/api/v1/runs/{preemptor}/approve"),
        &lead,
        json!({"reason": "paper deadline"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");

    // Past its minimum runtime, the victim receives SIGTERM, is requeued, and the preemptor runs.
    until(Duration::from_secs(60), "the victim's SIGTERM", || async {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("term-{victim}-"))
            })
    })
    .await;
    until(
        Duration::from_secs(60),
        "the preemptor's process",
        || async { records(&dir, preemptor, 1).len() == 1 },
    )
    .await;
    wait_state(&app, preemptor, "succeeded").await;
    let record = &records(&dir, preemptor, 1)[0];
    assert!(record.ends_with(&format!(" {preemptor}")), "{record}");
    assert_eq!(record.split(' ').next().unwrap().split(',').count(), 8);
    // Then the victim runs again (attempt 2) and finishes.
    wait_state(&app, victim, "succeeded").await;
    assert_eq!(records(&dir, victim, 2).len(), 2);

    let res = http
        .get(format!("{base}/api/v1/runs/{victim}"))
        .bearer_auth(&researcher)
        .send()
        .await
        .unwrap();
    let run: Value = res.json().await.unwrap();
    // ("running" events are left out: a short attempt may exit before its agent confirms it.)
    let kinds: Vec<&str> = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .filter(|k| *k != "running")
        .collect();
    assert_eq!(
        kinds,
        vec![
            "submitted",
            "started",
            "preempted",
            "requeued",
            "started",
            "succeeded"
        ],
        "{run}"
    );
    let preemption = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "preempted")
        .unwrap();
    assert_eq!(preemption["for_run"], preemptor);
    assert!(
        preemption["message"]
            .as_str()
            .unwrap()
            .contains("fm-pretrain-7b"),
        "{preemption}"
    );
    assert_eq!(
        run["placements"].as_array().unwrap().len(),
        4,
        "two attempts on two nodes"
    );
    assert!(
        tranche::ledger::problems(&app.pool)
            .await
            .unwrap()
            .is_empty()
    );
    clean_up(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let dir = scratch("grace");
    app.declare_agent_nodes("grace", 1).await;
    let _agent = agent(&base, &agent_token, "grace", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let http = reqwest::Client::new();
    let ready = dir.join("ready");
    let (status, answer) = post(
        &http,
        format!("{base}/api/v1/runs"),
        &researcher,
        json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 8,
               "min_runtime_s": 0, "time_limit_s": 3600, "resumable": false,
               "command": format!("trap '' TERM; touch {}; sleep 600", ready.display())}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let run = answer["id"].as_i64().unwrap();
    until(Duration::from_secs(30), "the run's process", || async {
        ready.exists()
    })
    .await;
    let (status, answer) = post(
        &http,
        format!("{base}/api/v1/runs/{run}/cancel"),
        &researcher,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let asked = Instant::now();
    wait_state(&app, run, "cancelled").await;
    // SIGTERM was ignored, so only SIGKILL (signal 9) after the 2 s grace ended it.
    assert!(asked.elapsed() >= Duration::from_secs(2));
    let code: Option<i32> = sqlx::query_scalar("SELECT exit_code FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(code, Some(128 + 9));
    clean_up(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_an_agent_requeues_resumable_runs_and_loses_the_others() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let dir = scratch("loss");
    app.declare_agent_nodes("loss", 1).await;
    let mut first = agent(&base, &agent_token, "loss", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for resumable in [true, false] {
        let (status, answer) = post(
            &http,
            format!("{base}/api/v1/runs"),
            &researcher,
            json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 4,
                   "min_runtime_s": 60, "time_limit_s": 3600, "resumable": resumable,
                   "command": recording_command(&dir)}),
        )
        .await;
        assert_eq!(status, 201, "{answer}");
        ids.push(answer["id"].as_i64().unwrap());
    }
    for id in &ids {
        wait_state(&app, *id, "running").await;
    }
    first.kill().await.unwrap();
    // After 3 s without a heartbeat the node is lost.
    wait_state(&app, ids[1], "lost").await;
    assert_eq!(state_of(&app, ids[0]).await, "queued");
    until(Duration::from_secs(30), "a waiting reason", || async {
        let r: Option<String> = sqlx::query_scalar("SELECT wait_reason FROM runs WHERE id = $1")
            .bind(ids[0])
            .fetch_one(&app.pool)
            .await
            .unwrap();
        r.is_some_and(|r| r.contains("no live agent"))
    })
    .await;
    // The killed agent's children outlived it, holding their GPUs.
    let orphans: Vec<i32> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            ids.iter()
                .any(|id| name.starts_with(&format!("run-{id}-1-")))
                .then(|| name.rsplit('-').next().unwrap().parse().unwrap())
        })
        .collect();
    assert_eq!(orphans.len(), 2);
    assert!(
        orphans
            .iter()
            .all(|p| Path::new(&format!("/proc/{p}")).exists())
    );
    // A new agent on the node (same log directory) stops them first, then takes the requeued
    // run again, as attempt 2.
    let _second = agent(&base, &agent_token, "loss", 1, &dir);
    until(
        Duration::from_secs(30),
        "the orphans to be killed",
        || async {
            orphans
                .iter()
                .all(|p| !Path::new(&format!("/proc/{p}")).exists())
        },
    )
    .await;
    wait_state(&app, ids[0], "succeeded").await;
    assert_eq!(records(&dir, ids[0], 2).len(), 1);
    clean_up(&dir);
}

/// Checks docs/design.md section 4 on the database: every running gang holds exactly its GPUs (and
/// the primary key of `gpu_holds` makes a GPU held twice impossible), ended and waiting runs
/// hold none, each attempt was started once and placed on exactly its GPU count, no run was
/// preempted inside its minimum runtime, and the ledger balances.
async fn check_invariants(pool: &sqlx::PgPool) -> Vec<String> {
    let mut problems = Vec::new();
    let bad_holds: Vec<(i64, String, i32, i64)> = sqlx::query_as(
        "SELECT r.id, r.state, r.gpus, count(h.run_id) FROM runs r LEFT JOIN gpu_holds h ON h.run_id = r.id \
         GROUP BY r.id HAVING (r.state IN ('starting', 'running') AND count(h.run_id) <> r.gpus) \
         OR (r.state NOT IN ('starting', 'running') AND count(h.run_id) > 0)",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (run, state, gpus, held) in bad_holds {
        problems.push(format!(
            "run {run} ({state}) asks {gpus} GPUs and holds {held}"
        ));
    }
    let bad_attempts: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT r.id, r.attempt, (SELECT count(*) FROM run_events e WHERE e.run_id = r.id AND e.kind = 'started') AS s \
         FROM runs r WHERE r.attempt <> (SELECT count(*) FROM run_events e WHERE e.run_id = r.id AND e.kind = 'started')",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (run, attempt, starts) in bad_attempts {
        problems.push(format!("run {run}: attempt {attempt} but {starts} starts"));
    }
    let bad_placements: Vec<(i64, i32)> = sqlx::query_as(
        "SELECT p.run_id, p.attempt FROM run_placements p JOIN runs r ON r.id = p.run_id \
         GROUP BY p.run_id, p.attempt, r.gpus HAVING sum(cardinality(p.gpu_indices)) <> r.gpus",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (run, attempt) in bad_placements {
        problems.push(format!(
            "run {run} attempt {attempt}: placement is not its gang"
        ));
    }
    let early: Vec<(i64, i32)> = sqlx::query_as(
        "SELECT p.run_id, p.attempt FROM run_events p JOIN run_events s ON s.run_id = p.run_id AND s.attempt = p.attempt \
         AND s.kind = 'started' JOIN runs r ON r.id = p.run_id \
         WHERE p.kind = 'preempted' AND p.at < s.at + make_interval(secs => r.min_runtime_s)",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (run, attempt) in early {
        problems.push(format!(
            "run {run} attempt {attempt}: preempted while protected"
        ));
    }
    problems.extend(tranche::ledger::problems(pool).await.unwrap());
    problems
}

fn start_server(url: &str, port: u16, dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tranche"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("DATABASE_URL", url)
        .env("TRANCHE_TICK_S", "1")
        .env("TRANCHE_GRACE_S", "2")
        .env("TRANCHE_AGENT_TIMEOUT_S", "60")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(
            std::fs::File::options()
                .create(true)
                .append(true)
                .open(dir.join("server.log"))
                .unwrap(),
        )
        .kill_on_drop(true)
        .spawn()
        .expect("start tranche serve")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_server_mid_pass_loses_no_run_and_starts_none_twice() {
    let app = TestApp::with_site(site()).await;
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let researcher = app.token_for("demo-researcher").await;
    let agent_token = tranche::runs::agents::create_token(&app.pool, "local")
        .await
        .unwrap();
    let dir = scratch("crash");
    app.declare_agent_nodes("crash", 4).await;
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}");
    let url = app.database_url();
    let _agent = agent(&base, &agent_token, "crash", 4, &dir);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let command = format!(
        "echo x >> {}/starts-$TRANCHE_RUN_ID-$TRANCHE_ATTEMPT; sleep 0.3",
        dir.display()
    );
    let mut rng_state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        rng_state
    };
    let rounds = 20;
    for round in 0..=rounds {
        let mut server = start_server(&url, port, &dir);
        until(Duration::from_secs(30), "the server", || async {
            http.get(format!("{base}/healthz"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        })
        .await;
        if round == 0 {
            until(Duration::from_secs(30), "four agent nodes", || async {
                live_nodes(&app).await == 4
            })
            .await;
        }
        if round == rounds {
            // Last round: no kill; everything must finish.
            until(Duration::from_secs(120), "every run to finish", || async {
                let open: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM runs WHERE state NOT IN ('succeeded')",
                )
                .fetch_one(&app.pool)
                .await
                .unwrap();
                open == 0
            })
            .await;
            server.kill().await.unwrap();
            break;
        }
        // A burst of submissions of 1 to 8 GPUs, half of them protected for a second.
        for _ in 0..8 {
            let gpus = 1 + next() % 8;
            let min_runtime = next() % 2;
            let res = http
                .post(format!("{base}/api/v1/runs"))
                .bearer_auth(&researcher)
                .json(&json!({"project": if next() % 2 == 0 { "fm-pretrain-7b" } else { "fm-pretrain-70b" },
                              "cluster": "local", "gpu_model": "H100", "gpus": gpus,
                              "min_runtime_s": min_runtime, "time_limit_s": 600, "resumable": true,
                              "command": command}))
                .send()
                .await
                .expect("the server answers");
            let status = res.status().as_u16();
            assert_eq!(status, 201, "{}", res.text().await.unwrap_or_default());
        }
        // Kill it at a random point of the passes that follow.
        tokio::time::sleep(Duration::from_millis(next() % 400)).await;
        server.kill().await.unwrap();
        let problems = check_invariants(&app.pool).await;
        assert!(problems.is_empty(), "after kill {round}: {problems:?}");
    }
    let problems = check_invariants(&app.pool).await;
    assert!(problems.is_empty(), "at the end: {problems:?}");
    // Every process start was recorded once per node of its attempt's placement, never more.
    let placements: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT run_id, attempt, count(*) FROM run_placements GROUP BY run_id, attempt",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        runs,
        8 * rounds as i64,
        "every accepted submission is a run"
    );
    for (run, attempt, nodes) in placements {
        let lines = std::fs::read_to_string(dir.join(format!("starts-{run}-{attempt}")))
            .unwrap_or_default()
            .lines()
            .count() as i64;
        assert!(
            lines <= nodes,
            "run {run} attempt {attempt} started {lines} times on {nodes} nodes"
        );
    }
    clean_up(&dir);
}

/// The pids of the processes (group leaders) that recorded attempt `attempt` of `run`.
fn record_pids(dir: &Path, run: i64, attempt: i32) -> Vec<i32> {
    let prefix = format!("run-{run}-{attempt}-");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.strip_prefix(&prefix)?.parse().ok()
        })
        .collect()
}

fn alive(pid: i32) -> bool {
    tranche::process::start_time(pid).is_some()
}

fn log_has(dir: &Path, log: &str, text: &str) -> bool {
    std::fs::read_to_string(dir.join(log)).is_ok_and(|l| l.contains(text))
}

async fn exits_within(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    tokio::time::timeout(limit, child.wait())
        .await
        .expect("the agent did not exit")
        .unwrap()
}

/// A 16-GPU run protected for an hour on the two nodes of the agent `dir` runs; returns its
/// id and its two processes' pids.
async fn protected_gang(
    app: &TestApp,
    base: &str,
    researcher: &str,
    dir: &Path,
) -> (i64, Vec<i32>) {
    let (status, answer) = post(
        &reqwest::Client::new(),
        format!("{base}/api/v1/runs"),
        researcher,
        json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 16,
               "min_runtime_s": 3600, "time_limit_s": 7200, "resumable": true,
               "command": recording_command(dir)}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let run = answer["id"].as_i64().unwrap();
    wait_state(app, run, "running").await;
    until(Duration::from_secs(30), "both gang processes", || async {
        record_pids(dir, run, 1).len() == 2
    })
    .await;
    let pids = record_pids(dir, run, 1);
    assert!(pids.iter().all(|p| alive(*p)));
    (run, pids)
}

/// Issue 11 item 1: an agent that cannot register (no server, or a bogus token) signals
/// nothing, though it serves the same names from the same directories as a live agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_that_cannot_register_kills_nothing() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let dir = scratch("bogus");
    app.declare_agent_nodes("bogus", 2).await;
    let _first = agent(&base, &agent_token, "bogus", 2, &dir);
    until(Duration::from_secs(30), "two agent nodes", || async {
        live_nodes(&app).await == 2
    })
    .await;
    let (run, pids) = protected_gang(&app, &base, &researcher, &dir).await;

    // No server at all: it retries, and signals nothing meanwhile.
    let mut nowhere = agent_with(
        "http://127.0.0.1:9",
        "bogus-token",
        Some("bogus"),
        2,
        &dir,
        "nowhere.log",
    );
    until(Duration::from_secs(30), "a failed register", || async {
        log_has(&dir, "nowhere.log", "register failed")
    })
    .await;
    // A bogus token: refused, it stops.
    let mut bogus = agent_with(&base, "bogus-token", Some("bogus"), 2, &dir, "bogus.log");
    let status = exits_within(&mut bogus, Duration::from_secs(30)).await;
    assert!(!status.success());
    assert!(log_has(&dir, "bogus.log", "401"));
    nowhere.kill().await.unwrap();

    assert!(
        pids.iter().all(|p| alive(*p)),
        "the live agent's processes survive"
    );
    assert!(!log_has(&dir, "nowhere.log", "killing"));
    assert!(!log_has(&dir, "bogus.log", "killing"));
    assert_eq!(state_of(&app, run).await, "running");
    let events: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM run_events WHERE run_id = $1 AND kind IN ('lost', 'failed', 'preempted')",
    )
    .bind(run)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(events, 0);
    clean_up(&dir);
}

/// Issue 11 item 1: two agents on one host with the default names (the host name) and the
/// same directories: the second waits while the first serves the nodes, and neither it nor
/// an agent refused for an undeclared name touches the first one's run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_agents_with_default_names_never_touch_each_others_runs() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let dir = scratch("default");
    let host = tranche::agent::host_name(None).unwrap();
    app.declare_agent_nodes(&host, 2).await;
    let _first = agent_with(&base, &agent_token, None, 2, &dir, "first.log");
    until(Duration::from_secs(30), "two agent nodes", || async {
        live_nodes(&app).await == 2
    })
    .await;
    let (run, pids) = protected_gang(&app, &base, &researcher, &dir).await;
    let sessions = || async {
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT agent_session FROM nodes WHERE agent_seen_at IS NOT NULL ORDER BY id",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap()
    };
    let before = sessions().await;

    // The same default names: refused while the first agent is alive; it keeps waiting.
    let _second = agent_with(&base, &agent_token, None, 2, &dir, "second.log");
    until(
        Duration::from_secs(30),
        "the second agent refused",
        || async { log_has(&dir, "second.log", "node_in_use") },
    )
    .await;
    // One default node, named after the host alone, which nobody declared: refused, it stops.
    let mut third = agent_with(&base, &agent_token, None, 1, &dir, "third.log");
    let status = exits_within(&mut third, Duration::from_secs(30)).await;
    assert!(!status.success());
    assert!(log_has(&dir, "third.log", "undeclared_node"));

    assert!(
        pids.iter().all(|p| alive(*p)),
        "the first agent's processes survive"
    );
    assert_eq!(
        sessions().await,
        before,
        "the first agent still serves its nodes"
    );
    assert_eq!(state_of(&app, run).await, "running");
    assert!(!log_has(&dir, "second.log", "killing"));
    clean_up(&dir);
}

/// An agent killed with SIGKILL and started again with the same state directory takes its
/// nodes over at once with the session that directory kept, instead of waiting for the dead
/// session to time out (two minutes here; found by a new-user check: runs that finished in
/// that window were lost and run again). A live agent sharing the directory never does (the
/// directory's lock; `two_agents_with_default_names_never_touch_each_others_runs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_killed_and_restarted_takes_its_nodes_over_at_once() {
    let (app, base, _researcher, _lead, agent_token) = live(Site {
        agent_timeout_s: 120,
        ..site()
    })
    .await;
    let dir = scratch("restarted");
    app.declare_agent_nodes("restarted", 1).await;
    let mut first = agent_with(&base, &agent_token, Some("restarted"), 1, &dir, "first.log");
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let session = || async {
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT agent_session FROM nodes WHERE name LIKE 'restarted%'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let before = session().await;
    first.kill().await.unwrap();
    let _second = agent_with(
        &base,
        &agent_token,
        Some("restarted"),
        1,
        &dir,
        "second.log",
    );
    until(
        Duration::from_secs(30),
        "the restarted agent's session",
        || async { session().await.is_some_and(|s| Some(s) != before) },
    )
    .await;
    assert!(!log_has(&dir, "second.log", "node_in_use"));
    clean_up(&dir);
}

/// An agent killed (`kill -9`, as a crash or an upgrade's restart) and restarted within its
/// session adopts its runs' processes: a run that goes on running keeps its attempt and ends
/// with its own exit status, and a run whose process ended while no agent watched ends as its
/// command did. Before, every run of the node was ended at the restart (requeued or lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_agent_adopts_the_runs_it_left_running() {
    adoption("adopting", None).await;
}

/// As [`a_restarted_agent_adopts_the_runs_it_left_running`], the first agent exiting on SIGHUP
/// (an upgrade): it leaves its runs' processes to the next agent instead of stopping them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_told_to_hand_over_leaves_its_runs_to_the_next() {
    adoption("handing", Some(nix::sys::signal::Signal::SIGHUP)).await;
}

/// A second agent given a live agent's state directory waits (its nodes are in use), and when
/// the first one dies it holds the directory's lock and takes the nodes and their runs over as
/// the first one restarted would (found by a check of adoption: it registered without the
/// lock, as a stranger, and its own runs could not be adopted after it crashed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_waiting_on_a_shared_state_directory_takes_over_when_its_holder_dies() {
    let (app, base, researcher, _lead, agent_token) = live(Site {
        agent_timeout_s: 120,
        ..site()
    })
    .await;
    let dir = scratch("sharedstate");
    app.declare_agent_nodes("sharedstate", 1).await;
    let mut first = agent_with(
        &base,
        &agent_token,
        Some("sharedstate"),
        1,
        &dir,
        "first.log",
    );
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let gate = dir.join("go");
    let id = free_run(
        &base,
        &researcher,
        &format!(
            "while [ ! -e {} ]; do sleep 0.1; done; exit 6",
            gate.display()
        ),
        true,
    )
    .await;
    wait_state(&app, id, "running").await;
    let _second = agent_with(
        &base,
        &agent_token,
        Some("sharedstate"),
        1,
        &dir,
        "second.log",
    );
    until(
        Duration::from_secs(30),
        "the second agent refused",
        || async { log_has(&dir, "second.log", "node_in_use") },
    )
    .await;
    first.kill().await.unwrap();
    first.wait().await.unwrap();
    until(
        Duration::from_secs(30),
        "the second agent's adoption",
        || async { log_has(&dir, "second.log", "adopting a run's process") },
    )
    .await;
    std::fs::write(&gate, "").unwrap();
    wait_state(&app, id, "failed").await;
    let (code, attempt, lost): (Option<i32>, i32, i64) = sqlx::query_as(
        "SELECT exit_code, attempt, (SELECT count(*) FROM run_events WHERE run_id = $1 AND kind IN ('lost', 'requeued')) \
         FROM runs WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((code, attempt, lost), (Some(6), 1, 0));
    clean_up(&dir);
}

/// Two runs on an agent named `name`, which is then killed (`signal` or SIGKILL) and started
/// again: one run's command ends meanwhile, the other after the restart.
async fn adoption(name: &str, signal: Option<nix::sys::signal::Signal>) {
    let (app, base, researcher, _lead, agent_token) = live(Site {
        agent_timeout_s: 120,
        ..site()
    })
    .await;
    let dir = scratch(name);
    app.declare_agent_nodes(name, 1).await;
    let mut first = agent_with(&base, &agent_token, Some(name), 1, &dir, "first.log");
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    // Each command runs until its file appears, then exits with its own status.
    let mut ids = Vec::new();
    for (name, code) in [("on", 4), ("meanwhile", 0)] {
        let gate = dir.join(name);
        ids.push(
            free_run(
                &base,
                &researcher,
                &format!(
                    "while [ ! -e {} ]; do sleep 0.1; done; exit {code}",
                    gate.display()
                ),
                true,
            )
            .await,
        );
    }
    let (on, meanwhile) = (ids[0], ids[1]);
    wait_state(&app, on, "running").await;
    wait_state(&app, meanwhile, "running").await;
    let seen_ago = || async {
        sqlx::query_scalar::<_, f64>(
            "SELECT extract(epoch FROM now() - agent_seen_at)::FLOAT8 FROM nodes WHERE name LIKE $1",
        )
        .bind(format!("{name}%"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    match signal {
        Some(signal) => {
            // Handed over a while after its last heartbeat, it sends one more as it exits.
            until(Duration::from_secs(30), "a heartbeat 2 s old", || async {
                seen_ago().await >= 2.0
            })
            .await;
            let pid = nix::unistd::Pid::from_raw(i32::try_from(first.id().unwrap()).unwrap());
            nix::sys::signal::kill(pid, signal).unwrap();
            first.wait().await.unwrap();
            let ago = seen_ago().await;
            assert!(ago < 1.5, "no last heartbeat at the hand-over: {ago} s");
        }
        None => {
            first.kill().await.unwrap();
            first.wait().await.unwrap();
        }
    }
    // One run's command ends while no agent runs; its shell writes its status.
    std::fs::write(dir.join("meanwhile"), "").unwrap();
    let exit_file = dir
        .join("logs")
        .join(format!("run-{meanwhile}-attempt-1-{name}.exit"));
    until(
        Duration::from_secs(10),
        "the ended run's exit file",
        || async { std::fs::read_to_string(&exit_file).is_ok_and(|s| s.trim() == "0") },
    )
    .await;
    let _second = agent_with(&base, &agent_token, Some(name), 1, &dir, "second.log");
    wait_state(&app, meanwhile, "succeeded").await;
    assert!(log_has(&dir, "second.log", "adopting a run's process"));
    assert_eq!(state_of(&app, on).await, "running");
    std::fs::write(dir.join("on"), "").unwrap();
    wait_state(&app, on, "failed").await;
    let (code, attempt): (Option<i32>, i32) =
        sqlx::query_as("SELECT exit_code, attempt FROM runs WHERE id = $1")
            .bind(on)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((code, attempt), (Some(4), 1));
    let restarted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM run_events WHERE run_id = ANY($1) AND kind IN ('requeued', 'lost')",
    )
    .bind(&ids)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(restarted, 0);
    clean_up(&dir);
}

/// After a restore from a backup that had a run running whose process has since ended, the
/// run ends as its process did, not as lost: the first sync after the restore (from before
/// `orders_full_before`) ends no process as gone, and the agent tells the exit again on the
/// whole desired state it gets (found by a session's check: the run ended as lost and was
/// requeued). The restore is written straight to the database here.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_restored_running_ends_as_its_process_did() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let dir = scratch("restoredrun");
    app.declare_agent_nodes("restoredrun", 1).await;
    let _agent = agent(&base, &agent_token, "restoredrun", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let id = free_run(&base, &researcher, "exit 3", true).await;
    wait_state(&app, id, "failed").await;
    sqlx::query(
        "UPDATE runs SET state = 'running', ended_at = NULL, exit_code = NULL WHERE id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE run_placements SET proc_state = 'running', exit_code = NULL, exited_at = NULL WHERE run_id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO site_flags (name, value) VALUES ('orders_full_before', nextval('order_versions')::TEXT) \
         ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    wait_state(&app, id, "failed").await;
    let (code, lost): (Option<i32>, i64) = sqlx::query_as(
        "SELECT exit_code, (SELECT count(*) FROM run_events WHERE run_id = $1 AND kind IN ('lost', 'requeued')) \
         FROM runs WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((code, lost), (Some(3), 0));
    clean_up(&dir);
}

/// After a restore from before a run's process ended, the database assigns that (run,
/// attempt, node) again; the agent, which never starts one twice, tells its exit again and the
/// run ends as it did (found by a new-user check: it stayed starting, its GPUs held, until
/// cancelled). The restore is written straight to the database here.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exit_the_database_forgot_is_told_again() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let dir = scratch("forgotten");
    app.declare_agent_nodes("forgotten", 1).await;
    let _agent = agent(&base, &agent_token, "forgotten", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let id = free_run(&base, &researcher, "exit 3", false).await;
    wait_state(&app, id, "failed").await;
    sqlx::query(
        "UPDATE runs SET state = 'starting', ended_at = NULL, exit_code = NULL WHERE id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE run_placements SET proc_state = 'assigned', exit_code = NULL, exited_at = NULL WHERE run_id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    // The backup's orders are older than what the agent has seen: its next sync is answered
    // with the whole desired state (docs/agent-protocol.md, delta syncs).
    sqlx::query("UPDATE run_placements SET order_version = 0")
        .execute(&app.pool)
        .await
        .unwrap();
    wait_state(&app, id, "failed").await;
    let code: Option<i32> = sqlx::query_scalar("SELECT exit_code FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(code, Some(3));
    clean_up(&dir);
}

/// Issue 11 item 2: an agent stopped with SIGTERM tells the server, which loses its node at
/// once (long before the heartbeat timeout): the resumable run is requeued, the other lost,
/// and a new run is not placed there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_agents_nodes_get_no_new_runs() {
    let (app, base, researcher, _lead, agent_token) = live(Site {
        agent_timeout_s: 120,
        ..site()
    })
    .await;
    let dir = scratch("stop");
    app.declare_agent_nodes("stop", 1).await;
    let mut first = agent(&base, &agent_token, "stop", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let http = reqwest::Client::new();
    let submit = |resumable: bool| {
        let http = http.clone();
        let base = base.clone();
        let researcher = researcher.clone();
        let command = recording_command(&dir);
        async move {
            let (status, answer) = post(
                &http,
                format!("{base}/api/v1/runs"),
                &researcher,
                json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 4,
                       "min_runtime_s": 60, "time_limit_s": 3600, "resumable": resumable,
                       "command": command}),
            )
            .await;
            assert_eq!(status, 201, "{answer}");
            answer["id"].as_i64().unwrap()
        }
    };
    let resumable = submit(true).await;
    let fragile = submit(false).await;
    for id in [resumable, fragile] {
        wait_state(&app, id, "running").await;
    }
    until(Duration::from_secs(30), "both processes", || async {
        records(&dir, resumable, 1).len() == 1 && records(&dir, fragile, 1).len() == 1
    })
    .await;
    let stopped_at = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(first.id().unwrap()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = exits_within(&mut first, Duration::from_secs(30)).await;
    assert!(status.success(), "a clean stop: {status}");
    // Decided by the agent's stop, not the 120 s timeout.
    assert!(stopped_at.elapsed() < Duration::from_secs(60));
    assert_eq!(live_nodes(&app).await, 0);
    assert_eq!(state_of(&app, resumable).await, "queued");
    assert_eq!(state_of(&app, fragile).await, "lost");
    // Its processes were stopped, and never saw the agent's token.
    for id in [resumable, fragile] {
        let pids = record_pids(&dir, id, 1);
        assert!(pids.iter().all(|p| !alive(*p)), "run {id} left running");
        for pid in pids {
            let seen = std::fs::read_to_string(dir.join(format!("token-{id}-{pid}"))).unwrap();
            assert_eq!(seen.trim(), "unset");
        }
    }
    // A new run waits: no live agent serves the node.
    let later = submit(true).await;
    until(Duration::from_secs(30), "a waiting reason", || async {
        let r: Option<String> = sqlx::query_scalar("SELECT wait_reason FROM runs WHERE id = $1")
            .bind(later)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        r.is_some_and(|r| r.contains("no live agent"))
    })
    .await;
    for id in [resumable, later] {
        assert_eq!(state_of(&app, id).await, "queued");
    }
    let placements: i64 =
        sqlx::query_scalar("SELECT count(*) FROM run_placements WHERE run_id = ANY($1)")
            .bind(vec![resumable, later])
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(placements, 1, "only the requeued run's first attempt");
    clean_up(&dir);
}

/// A run whose process cannot start (its `workdir` does not exist on the node) fails without
/// ever being told as running: the agent reports a process only once its command runs
/// (found by a new-user check: its timeline said "its processes are running", then failed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_that_cannot_start_is_never_told_as_running() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let dir = scratch("nostart");
    app.declare_agent_nodes("nostart", 1).await;
    let _agent = agent(&base, &agent_token, "nostart", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let missing = dir.join("no-such-directory");
    let (status, answer) = post(
        &reqwest::Client::new(),
        format!("{base}/api/v1/runs"),
        &researcher,
        json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 1,
               "min_runtime_s": 0, "time_limit_s": 3600, "resumable": false,
               "workdir": missing.display().to_string(), "command": "true"}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["id"].as_i64().unwrap();
    wait_state(&app, id, "failed").await;
    let kinds: Vec<String> =
        sqlx::query_scalar("SELECT kind FROM run_events WHERE run_id = $1 ORDER BY id")
            .bind(id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(!kinds.iter().any(|k| k == "running"), "{kinds:?}");
    let code: Option<i32> = sqlx::query_scalar("SELECT exit_code FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(code, Some(tranche::agent::SPAWN_FAILED_EXIT_CODE));
    clean_up(&dir);
}

/// A process the agent cannot record in its state directory never runs its command (found by a
/// new-user check: with a full state directory it ran unrecorded, and after an agent restart
/// the server's next attempt ran beside it). Here the record file is a directory, which no
/// account, root included, can append to. That is the node's fault, not the run's: the run is
/// requeued (before, it failed with 125, and so did every run sent to the node next) and the
/// node drained with the agent's words; once the directory is repaired and the node returned,
/// the same run runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_process_that_cannot_be_recorded_never_runs_and_its_node_is_drained() {
    let (app, base, researcher, _lead, agent_token) = live(site()).await;
    let admin = app.token_for("demo-admin").await;
    let dir = scratch("unrecorded");
    app.declare_agent_nodes("unrecorded", 1).await;
    let (node, name): (i64, String) =
        sqlx::query_as("SELECT id, name FROM nodes WHERE name LIKE 'unrecorded%'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let records = dir.join("state").join(format!("node-{name}.processes"));
    std::fs::create_dir_all(&records).unwrap();
    let _agent = agent(&base, &agent_token, "unrecorded", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let marker = dir.join("ran");
    // Not resumable: nothing ran, so it is requeued all the same.
    let id = free_run(
        &base,
        &researcher,
        &format!("touch {}", marker.display()),
        false,
    )
    .await;
    until(Duration::from_secs(60), "the node drained", || async {
        sqlx::query_scalar::<_, String>("SELECT state FROM nodes WHERE id = $1")
            .bind(node)
            .fetch_one(&app.pool)
            .await
            .unwrap()
            == "draining"
    })
    .await;
    wait_state(&app, id, "queued").await;
    assert!(!marker.exists(), "the command ran");
    let (reason, by): (String, Option<i64>) = sqlx::query_as(
        "SELECT reason, drained_by FROM node_drains WHERE node_id = $1 AND returned_at IS NULL",
    )
    .bind(node)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(
        reason.starts_with("agent: cannot record the process in the agent's state directory"),
        "{reason}"
    );
    assert_eq!(by, None, "drained by the system");
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'node.drain' AND entity_id = $1 AND actor_id IS NULL",
    )
    .bind(node)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited, 1);
    let said: Vec<(String, String)> =
        sqlx::query_as("SELECT kind, message FROM run_events WHERE run_id = $1 ORDER BY id")
            .bind(id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(
        said.iter().any(|(k, m)| k == "lost"
            && m.contains(&format!("its node {name} could not run its process"))
            && m.contains("cannot record")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|(k, m)| k == "requeued" && m.contains("its node could not start")),
        "{said:?}"
    );
    assert!(
        !said.iter().any(|(k, _)| k == "failed" || k == "running"),
        "{said:?}"
    );
    let log = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect::<String>();
    assert!(log.contains("cannot record the process"), "{log}");
    // Repaired and returned to service: the same run runs there.
    std::fs::remove_dir(&records).unwrap();
    let (status, answer) = post(
        &reqwest::Client::new(),
        format!("{base}/api/v1/cluster-nodes/{node}/return"),
        &admin,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    wait_state(&app, id, "succeeded").await;
    assert!(marker.exists());
    clean_up(&dir);
}

/// An agent stopped with SIGTERM stops its processes before the server hears of it: by the
/// time a run is requeued, its old process is gone, also one that ignores SIGTERM (found by a
/// new-user check: it ran 5 s more with its run already requeued, free to start elsewhere).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_agents_processes_are_gone_before_its_runs_are_requeued() {
    let (app, base, researcher, _lead, agent_token) = live(Site {
        agent_timeout_s: 120,
        ..site()
    })
    .await;
    let dir = scratch("stopfirst");
    app.declare_agent_nodes("stopfirst", 1).await;
    let mut agent = agent(&base, &agent_token, "stopfirst", 1, &dir);
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let d = dir.display();
    let (status, answer) = post(
        &reqwest::Client::new(),
        format!("{base}/api/v1/runs"),
        &researcher,
        json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 1,
               "min_runtime_s": 60, "time_limit_s": 3600, "resumable": true,
               "command": format!("trap '' TERM; echo $$ > {d}/pid.tmp; mv {d}/pid.tmp {d}/pid; while true; do sleep 1; done")}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let run = answer["id"].as_i64().unwrap();
    wait_state(&app, run, "running").await;
    until(Duration::from_secs(30), "the process", || async {
        dir.join("pid").exists()
    })
    .await;
    let pid: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(agent.id().unwrap()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    until(Duration::from_secs(60), "the run requeued", || async {
        state_of(&app, run).await == "queued"
    })
    .await;
    assert!(!alive(pid), "its old process still runs");
    let status = exits_within(&mut agent, Duration::from_secs(30)).await;
    assert!(status.success(), "a clean stop: {status}");
    clean_up(&dir);
}

/// With `--run-as-submitter` (an agent run as root), each run runs as its submitter's Unix
/// account: one person's run can neither read another's environment (a secret value) nor
/// signal their processes, which it could as the agent's own user (found by a new-user check:
/// a run read another project's `WANDB_API_KEY` from `/proc/PID/environ` and killed its
/// process). A submitter without an account fails at its start. Needs root and Debian's
/// accounts `daemon` and `nobody`; without them it says so and checks nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_run_as_their_submitters_unix_accounts() {
    use nix::unistd::User;
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let (Some(daemon), Some(nobody)) = (
        User::from_name("daemon").ok().flatten(),
        User::from_name("nobody").ok().flatten(),
    ) else {
        eprintln!("skipped: no Unix accounts daemon and nobody");
        return;
    };
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: --run-as-submitter needs root");
        return;
    }
    let (app, base, researcher, lead, agent_token) = live(site()).await;
    let admin = app.token_for("demo-admin").await;
    // The demo's researcher and lead are named like the two accounts.
    for (from, to) in [("demo-researcher", "daemon"), ("demo-lead", "nobody")] {
        sqlx::query("UPDATE users SET name = $2 WHERE name = $1")
            .bind(from)
            .bind(to)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    let dir = scratch("run-as");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    app.declare_agent_nodes("runas", 1).await;
    let _agent = agent_flags(
        &base,
        &agent_token,
        Some("runas"),
        1,
        &dir,
        "agent.log",
        &[
            "--run-as-submitter",
            "--min-submitter-uid",
            "1",
            "--max-submitter-uid",
            "65534",
        ],
    );
    until(Duration::from_secs(30), "the agent node", || async {
        live_nodes(&app).await == 1
    })
    .await;
    let http = reqwest::Client::new();
    let d = dir.display();
    let submit = |token: String, command: String, secret: bool| {
        let (http, base, d) = (&http, &base, d.to_string());
        async move {
            let mut body = json!({"project": "fm-pretrain-7b", "cluster": "local",
                "gpu_model": "H100", "gpus": 1, "min_runtime_s": 0, "time_limit_s": 3600,
                "resumable": false, "workdir": d, "command": command});
            if secret {
                body["secret_env"] = json!({"WANDB_API_KEY": "victim-secret-4f9a"});
            }
            let (status, answer) = post(http, format!("{base}/api/v1/runs"), &token, body).await;
            assert_eq!(status, 201, "{answer}");
            answer["id"].as_i64().unwrap()
        }
    };
    let victim = submit(
        researcher,
        format!(
            "id -un > victim-user; env > victim-env; echo $$ > victim-pid; mv victim-pid {d}/victim-ready; sleep 600"
        ),
        true,
    )
    .await;
    until(Duration::from_secs(30), "the victim's process", || async {
        dir.join("victim-ready").exists()
    })
    .await;
    let attacker = submit(
        lead,
        "id -un > attacker-user; \
         for f in /proc/[0-9]*/environ; do tr '\\000' '\\n' < $f 2>/dev/null; done | grep -c victim-secret > attacker-found; \
         kill -KILL $(cat victim-ready) 2>/dev/null; echo $? > attacker-kill; touch attacker-done"
            .to_string(),
        false,
    )
    .await;
    until(
        Duration::from_secs(30),
        "the attacker's process",
        || async { dir.join("attacker-done").exists() },
    )
    .await;
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(read("victim-user"), "daemon");
    assert_eq!(read("attacker-user"), "nobody");
    assert_eq!(
        std::fs::metadata(dir.join("victim-user")).unwrap().uid(),
        daemon.uid.as_raw()
    );
    assert_eq!(
        std::fs::metadata(dir.join("attacker-user")).unwrap().uid(),
        nobody.uid.as_raw()
    );
    assert_eq!(read("attacker-found"), "0", "the secret was read");
    // Nothing of the agent's environment reaches the run; a login's and the run's own do.
    let env = read("victim-env");
    assert!(
        env.contains("HOME=/usr/sbin") && env.contains("USER=daemon"),
        "{env}"
    );
    assert!(env.contains("WANDB_API_KEY=victim-secret-4f9a"), "{env}");
    assert!(
        !env.contains("RUST_LOG="),
        "the agent's environment leaked: {env}"
    );
    // Its log is the submitter's to read.
    let log = dir
        .join("logs")
        .join(format!("run-{victim}-attempt-1-runas.log"));
    assert_eq!(std::fs::metadata(&log).unwrap().uid(), daemon.uid.as_raw());
    assert_ne!(read("attacker-kill"), "0", "the victim was signalled");
    wait_state(&app, attacker, "succeeded").await;
    assert_eq!(state_of(&app, victim).await, "running");
    // An admin has no Unix account here: the run fails at its start.
    let homeless = submit(admin, "touch admin-ran".to_string(), false).await;
    wait_state(&app, homeless, "failed").await;
    assert!(!dir.join("admin-ran").exists());
    let log = std::fs::read_to_string(
        dir.join("logs")
            .join(format!("run-{homeless}-attempt-1-runas.log")),
    )
    .unwrap_or_default();
    assert!(
        log.contains("no Unix account named \"demo-admin\""),
        "{log}"
    );
    // A run's `PATH` and `LD_PRELOAD` reach its command, never the `setpriv` the agent starts
    // as root (found by a check: a `setpriv` of the run's `PATH` ran as root).
    let fake = dir.join("fakebin");
    std::fs::create_dir_all(&fake).unwrap();
    let fake_setpriv = fake.join("setpriv");
    std::fs::write(
        &fake_setpriv,
        format!("#!/bin/sh\nid -u > {d}/fake-setpriv-ran\nexec /usr/bin/setpriv \"$@\"\n"),
    )
    .unwrap();
    std::fs::set_permissions(&fake_setpriv, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (status, answer) = post(
        &http,
        format!("{base}/api/v1/runs"),
        &app.token_for("daemon").await,
        json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 1,
               "min_runtime_s": 0, "time_limit_s": 3600, "resumable": false, "workdir": d.to_string(),
               "env": {"PATH": format!("{}:/usr/bin:/bin", fake.display()), "LD_PRELOAD": "/nonexistent.so"},
               "command": "echo \"$PATH $LD_PRELOAD\" > path-seen; id -u > path-user"}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    wait_state(&app, answer["id"].as_i64().unwrap(), "succeeded").await;
    assert!(
        !dir.join("fake-setpriv-ran").exists(),
        "the run's PATH chose setpriv"
    );
    assert_eq!(
        read("path-seen"),
        format!("{}:/usr/bin:/bin /nonexistent.so", fake.display())
    );
    assert_eq!(read("path-user"), daemon.uid.as_raw().to_string());
    if let Ok(pid) = read("victim-ready").parse::<i32>() {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    clean_up(&dir);
}
