//! Slurm as the executor, against a real Slurm 22.05 cluster of two nodes with 8 GPUs each
//! ([`crate::slurm_cluster`]): the server's Slurm bridge submits, follows and stops real jobs.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tranche::config::{Site, SlurmSettings};

use crate::live::{scratch, until};
use crate::slurm_cluster::SlurmCluster;
use crate::support::TestApp;

/// The demo organisation with a Slurm cluster `slurm` (partition `gpu`, nodes n1 and n2 of
/// 8 H100), served on a real port: (app, base URL, researcher token, lead token, the demo
/// admin's password).
async fn slurm_live(cluster: &SlurmCluster) -> (TestApp, String, String, String, String) {
    slurm_live_with(cluster, 2).await
}

/// [`slurm_live`] with a grace period of `grace_s`.
async fn slurm_live_with(
    cluster: &SlurmCluster,
    grace_s: i64,
) -> (TestApp, String, String, String, String) {
    let site = Site {
        grace_s,
        tick_s: 1,
        slurm: SlurmSettings {
            conf: Some(cluster.conf.clone()),
            timeout: Duration::from_secs(5),
            poll: Duration::from_millis(500),
            user: None,
        },
        ..Site::for_tests()
    };
    let app = TestApp::with_site(site).await;
    let users = tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let (_, admin_password) = crate::support::demo_password(&users, "admin");
    let change = tranche::executor::slurm::add_cluster(
        &app.pool,
        &app.state.site.slurm,
        "slurm",
        cluster.partition,
        Some("H100"),
    )
    .await
    .unwrap();
    assert_eq!(
        change.added,
        vec![("n1".to_string(), 8), ("n2".to_string(), 8)]
    );
    let base = app.serve().await;
    let researcher = app.token_for("demo-researcher").await;
    let lead = app.token_for("demo-lead").await;
    (app, base, researcher, lead, admin_password)
}

async fn post(base: &str, path: &str, token: &str, body: Value) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn get(base: &str, path: &str, token: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Submits a run on the Slurm cluster; returns its id.
async fn submit(base: &str, token: &str, project: &str, gpus: u32, extra: Value) -> i64 {
    let mut body = json!({"project": project, "cluster": "slurm", "gpu_model": "H100", "gpus": gpus,
                          "min_runtime_s": 1, "time_limit_s": 600, "resumable": false});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, answer) = post(base, "/api/v1/runs", token, body).await;
    assert_eq!(status, 201, "{answer}");
    answer["id"].as_i64().unwrap()
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
        Duration::from_secs(90),
        &format!("run {run} {state}"),
        || async { state_of(app, run).await == state },
    )
    .await;
}

/// The Slurm jobs of run `run` of this test's Tranche (job comments name the installation:
/// earlier tests' runs had the same ids): (job id, name, state, node list), from `squeue`.
async fn jobs_of(
    app: &TestApp,
    cluster: &SlurmCluster,
    run: i64,
) -> Vec<(i64, String, String, String)> {
    let id: i64 = sqlx::query_scalar("SELECT id FROM clusters WHERE name = 'slurm'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let tag = tranche::executor::slurm::tag(&app.database, id);
    let mut jobs: Vec<(i64, String, String, String)> = cluster
        .run("squeue", &["--states=all", "-h", "-o", "%i|%j|%T|%N|%k"])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (f.len() == 5
                && f[1].starts_with(&format!("tranche-{run}-"))
                && f[4].starts_with(&format!("tranche {tag} run {run} ")))
            .then(|| (f[0].parse().unwrap(), f[1].into(), f[2].into(), f[3].into()))
        })
        .collect();
    jobs.sort();
    jobs
}

fn read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

async fn kinds(base: &str, token: &str, run: i64) -> (Vec<String>, Value) {
    let detail = get(base, &format!("/api/v1/runs/{run}"), token).await;
    let kinds = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .filter(|k| k != "running")
        .collect();
    (kinds, detail)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slurm_runs_succeed_fail_and_time_out_as_agent_exits_do() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (app, base, researcher, _lead, _admin) = slurm_live(cluster).await;
    let dir = scratch("slurm-basic");
    let d = dir.display();
    let ok = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        3,
        json!({"command": format!("echo \"$CUDA_VISIBLE_DEVICES $TRANCHE_RUN_ID $TRANCHE_ATTEMPT $SLURMD_NODENAME\" > {d}/ok; echo \"$GREETING\" > {d}/env; sleep 2"),
               "env": {"GREETING": "it's a \"test\""}}),
    )
    .await;
    let failing = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        2,
        json!({"command": "echo about to fail; exit 3"}),
    )
    .await;
    let slow = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        1,
        json!({"command": "sleep 600", "time_limit_s": 4}),
    )
    .await;
    wait_state(&app, ok, "succeeded").await;
    wait_state(&app, failing, "failed").await;
    wait_state(&app, slow, "failed").await;

    // The run ran as one Slurm job, named for it, on the node the pass chose, and saw 3 GPUs
    // and its id.
    let placed: String = sqlx::query_scalar(
        "SELECT n.name FROM run_placements p JOIN nodes n ON n.id = p.node_id WHERE p.run_id = $1",
    )
    .bind(ok)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let jobs = jobs_of(&app, cluster, ok).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].1, format!("tranche-{ok}-1"));
    assert_eq!(jobs[0].2, "COMPLETED");
    assert_eq!(jobs[0].3, placed);
    let line = read(&dir, "ok").expect("the run's command wrote its file");
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(fields[0].split(',').count(), 3, "{line}");
    assert_eq!(
        fields[1..],
        [ok.to_string().as_str(), "1", placed.as_str()],
        "{line}"
    );
    assert_eq!(read(&dir, "env").unwrap(), "it's a \"test\"");
    // The run page shows the GPU indices Slurm gave (its CUDA_VISIBLE_DEVICES).
    let (k, detail) = kinds(&base, &researcher, ok).await;
    assert_eq!(k, ["submitted", "started", "succeeded"], "{detail}");
    let shown: Vec<String> = detail["placements"][0]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.to_string())
        .collect();
    assert_eq!(shown.join(","), fields[0]);
    assert_eq!(detail["placements"][0]["slurm_job"], jobs[0].0);

    // The failing command ends failed with its status.
    let (k, detail) = kinds(&base, &researcher, failing).await;
    assert_eq!(k, ["submitted", "started", "failed"], "{detail}");
    assert_eq!(detail["exit_code"], 3, "{detail}");
    assert_eq!(jobs_of(&app, cluster, failing).await[0].2, "FAILED");
    // The run over its time limit is stopped at it.
    let (k, detail) = kinds(&base, &researcher, slow).await;
    assert_eq!(
        k,
        ["submitted", "started", "time_limit", "failed"],
        "{detail}"
    );

    // The ledger charges each run its GPUs x its time, as for agents' runs: runs that exited
    // until they ended, the stopped one until its stop (its time limit, 4 s, reached in a pass
    // at most a tick later) and not for its grace period.
    let span = |run: i64| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT (gpus * floor(extract(epoch FROM ended_at - started_at)))::BIGINT FROM runs WHERE id = $1",
            )
            .bind(run)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let exited = span(ok).await + span(failing).await;
    let charged: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(gpu_seconds), 0)::BIGINT FROM ledger_postings WHERE kind = 'usage' \
         AND cluster_id = (SELECT id FROM clusters WHERE name = 'slurm')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(span(ok).await >= 3 * 2);
    let stopped = charged - exited;
    assert!(
        (4..=6).contains(&stopped) && stopped <= span(slow).await,
        "charged {charged}, exited runs {exited}, the stopped run's span {}",
        span(slow).await
    );
    assert!(
        tranche::ledger::problems(&app.pool)
            .await
            .unwrap()
            .is_empty()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Charges `project` 100 GPU-hours of usage this week on the Slurm cluster: it is over-served.
async fn over_serve(app: &TestApp, project: &str) {
    let id = app.node_id(project).await;
    let (cluster, model): (i64, i64) = sqlx::query_as(
        "SELECT c.id, m.id FROM clusters c, gpu_models m WHERE c.name = 'slurm' AND m.name = 'H100'",
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
        id,
        (cluster, model),
        100 * 3600,
        true,
        None,
    )
    .await
    .unwrap();
}

/// The run's waiting reason once it contains `text` (within 30 s).
async fn reason_containing(app: &TestApp, run: i64, text: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let reason: Option<String> =
            sqlx::query_scalar("SELECT wait_reason FROM runs WHERE id = $1")
                .bind(run)
                .fetch_one(&app.pool)
                .await
                .unwrap();
        let reason = reason.unwrap_or_default();
        if reason.contains(text) {
            return reason;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "run {run}'s reason never said {text:?}; it says {reason:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn event_at(app: &TestApp, run: i64, kind: &str) -> time::OffsetDateTime {
    sqlx::query_scalar("SELECT min(at) FROM run_events WHERE run_id = $1 AND kind = $2")
        .bind(run)
        .bind(kind)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slurm_preemption_sends_sigterm_kills_after_the_grace_period_and_requeues_as_a_new_job() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (app, base, researcher, _lead, _admin) = slurm_live(cluster).await;
    let dir = scratch("slurm-preempt");
    let d = dir.display();
    over_serve(&app, "fm-pretrain-70b").await;
    // The over-served project's resumable gang takes both nodes. Its first attempt records
    // SIGTERM and ignores it; a later attempt finishes at once.
    let victim = submit(
        &base,
        &researcher,
        "fm-pretrain-70b",
        16,
        json!({"resumable": true, "command": format!(
            "echo \"$CUDA_VISIBLE_DEVICES\" > {d}/victim-$TRANCHE_ATTEMPT; \
             if [ \"$TRANCHE_ATTEMPT\" -ge 2 ]; then exit 0; fi; \
             trap 'echo term >> {d}/term' TERM; while :; do sleep 1; done")}),
    )
    .await;
    wait_state(&app, victim, "running").await;
    until(Duration::from_secs(30), "the victim's command", || async {
        read(&dir, "victim-1").is_some()
    })
    .await;
    assert_eq!(read(&dir, "victim-1").unwrap(), "0,1,2,3,4,5,6,7");
    let first = jobs_of(&app, cluster, victim).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].3, "n[1-2]");

    // The under-served project's run preempts it past its minimum runtime.
    let preemptor = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        8,
        json!({"min_runtime_s": 1800, "time_limit_s": 1800,
               "command": format!("echo \"$CUDA_VISIBLE_DEVICES $TRANCHE_RUN_ID\" > {d}/preemptor")}),
    )
    .await;
    until(Duration::from_secs(60), "the victim's SIGTERM", || async {
        read(&dir, "term").is_some()
    })
    .await;
    wait_state(&app, preemptor, "succeeded").await;
    let line = read(&dir, "preemptor").unwrap();
    assert_eq!(line, format!("0,1,2,3,4,5,6,7 {preemptor}"));
    // Requeued, it runs again as a new Slurm job and finishes.
    wait_state(&app, victim, "succeeded").await;
    let jobs = jobs_of(&app, cluster, victim).await;
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    let names: Vec<&str> = jobs.iter().map(|j| j.1.as_str()).collect();
    assert_eq!(
        names,
        [format!("tranche-{victim}-1"), format!("tranche-{victim}-2")]
    );
    assert_ne!(jobs[0].0, jobs[1].0);
    // The first ignored SIGTERM and was killed once the 2 s grace period was over.
    assert_eq!(jobs[0].2, "CANCELLED");
    let preempted = event_at(&app, victim, "preempted").await;
    let requeued = event_at(&app, victim, "requeued").await;
    assert!(
        requeued - preempted >= time::Duration::seconds(2),
        "requeued {requeued} only {} after the preemption",
        requeued - preempted
    );
    let (k, detail) = kinds(&base, &researcher, victim).await;
    assert_eq!(
        k,
        [
            "submitted",
            "started",
            "preempted",
            "requeued",
            "started",
            "succeeded"
        ],
        "{detail}"
    );
    assert!(
        tranche::ledger::problems(&app.pool)
            .await
            .unwrap()
            .is_empty()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_outside_tranche_holds_its_gpus_and_names_itself_in_the_wait() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (app, base, researcher, _lead, admin_password) = slurm_live(cluster).await;
    let outside: i64 = cluster
        .run(
            "sbatch",
            &[
                "--parsable",
                "--partition=gpu",
                "--nodelist=n1",
                "--gres=gpu:8",
                "--job-name=someone-elses",
                "--output=/dev/null",
                "--wrap",
                "sleep 300",
            ],
        )
        .trim()
        .parse()
        .unwrap();
    until(
        Duration::from_secs(30),
        "Tranche to see the job outside it",
        || async {
            sqlx::query_scalar::<_, i32>("SELECT outside_gpus FROM nodes WHERE name = 'n1'")
                .fetch_one(&app.pool)
                .await
                .unwrap()
                == 8
        },
    )
    .await;
    let first = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        8,
        json!({"command": "sleep 300"}),
    )
    .await;
    let second = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        8,
        json!({"command": "sleep 300"}),
    )
    .await;
    wait_state(&app, first, "running").await;
    let node: String = sqlx::query_scalar(
        "SELECT n.name FROM run_placements p JOIN nodes n ON n.id = p.node_id WHERE p.run_id = $1",
    )
    .bind(first)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(node, "n2");
    assert_eq!(jobs_of(&app, cluster, first).await[0].3, "n2");
    let reason = reason_containing(&app, second, "outside Tranche").await;
    assert!(
        reason.contains(&format!("Slurm job {outside}"))
            && reason.contains("someone-elses")
            && reason.contains("n1"),
        "{reason}"
    );
    assert_eq!(state_of(&app, second).await, "queued");
    assert!(jobs_of(&app, cluster, second).await.is_empty());
    // A run larger than the GPUs the outside job leaves waits for it: it is not one that can
    // never start (found by a new-user check: "only 8 of its model are installed; it can
    // never start", with 16 installed).
    let whole = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        16,
        json!({"command": "sleep 300"}),
    )
    .await;
    let reason = reason_containing(&app, whole, "outside Tranche").await;
    assert!(!reason.contains("never"), "{reason}");
    // The admin's cluster page lists it as outside Tranche.
    let mut admin = app.client();
    admin.login("demo-admin", &admin_password).await;
    let id: i64 = sqlx::query_scalar("SELECT id FROM clusters WHERE name = 'slurm'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (_, page, _) = admin.get(&format!("/admin/clusters/{id}")).await;
    assert!(
        page.contains("outside Tranche") && page.contains(&outside.to_string()),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_cancelled_in_slurm_or_refused_by_it_end_with_slurms_words() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (app, base, researcher, _lead, _admin) = slurm_live(cluster).await;
    let run = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        2,
        json!({"command": "sleep 300"}),
    )
    .await;
    wait_state(&app, run, "running").await;
    let job = jobs_of(&app, cluster, run).await[0].0;
    cluster.run("scancel", &[&job.to_string()]);
    wait_state(&app, run, "cancelled").await;
    let (k, detail) = kinds(&base, &researcher, run).await;
    assert_eq!(
        k,
        ["submitted", "started", "cancelled", "cancelled"],
        "{detail}"
    );
    assert!(
        detail["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "cancelled"
                && e["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("cancelled outside Tranche")),
        "{detail}"
    );
    // The test partition allows 60 minutes, as `add-slurm-cluster` read: a 2-hour run is
    // refused at submission (found by a new-user check: it was placed, a run was preempted
    // for it, and Slurm refused the job).
    let (status, answer) = post(
        &base,
        "/api/v1/runs",
        &researcher,
        json!({"project": "fm-pretrain-7b", "cluster": "slurm", "gpu_model": "H100", "gpus": 1,
               "min_runtime_s": 1, "time_limit_s": 7200, "resumable": false, "command": "true"}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["field"], "time_limit_s", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("3,600 seconds"),
        "{answer}"
    );
    // A partition whose MaxTime was lowered since: Slurm refuses the 2-hour job, and the run
    // fails with Slurm's message on its page.
    sqlx::query("UPDATE clusters SET slurm_max_time_s = NULL")
        .execute(&app.pool)
        .await
        .unwrap();
    let refused = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        1,
        json!({"command": "true", "time_limit_s": 7200}),
    )
    .await;
    wait_state(&app, refused, "failed").await;
    let (_, detail) = kinds(&base, &researcher, refused).await;
    let message = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["message"]
                .as_str()
                .unwrap()
                .starts_with("Slurm refused the job")
        })
        .unwrap_or_else(|| panic!("{detail}"))["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.to_lowercase().contains("time limit"), "{message}");
    assert!(jobs_of(&app, cluster, refused).await.is_empty());
    // A time limit of exactly the partition's 60 minutes is allowed: submitted without the
    // spare minute Tranche adds (it failed at once, told the padded limit was invalid).
    let at_max = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        1,
        json!({"command": "true", "time_limit_s": 3600}),
    )
    .await;
    wait_state(&app, at_max, "succeeded").await;
    assert_eq!(jobs_of(&app, cluster, at_max).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slurmctld_stopped_and_restarted_mid_traffic_loses_no_run_and_starts_none_twice() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (app, base, researcher, _lead, _admin) = slurm_live(cluster).await;
    let dir = scratch("slurm-restart");
    let d = dir.display();
    let command = format!("echo $SLURM_JOB_ID >> {d}/starts-$TRANCHE_RUN_ID; sleep 6");
    let before = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        4,
        json!({"command": command}),
    )
    .await;
    // A long run that must stay running across the restart, and one cancelled while the
    // controller is down (with a stop pending, a restarted controller's first answers listed
    // no job, and both runs were ended as lost while Slurm kept running their jobs).
    let long = json!({"command": "sleep 300"});
    let steady = submit(&base, &researcher, "fm-pretrain-7b", 2, long.clone()).await;
    let cancelled = submit(&base, &researcher, "fm-pretrain-7b", 2, long).await;
    wait_state(&app, before, "running").await;
    wait_state(&app, steady, "running").await;
    wait_state(&app, cancelled, "running").await;
    tokio::task::spawn_blocking(|| SlurmCluster::get().stop_controller())
        .await
        .unwrap();
    until(
        Duration::from_secs(30),
        "Tranche to see the controller down",
        || async {
            sqlx::query_scalar::<_, bool>(
                "SELECT executor_down_since IS NOT NULL FROM clusters WHERE name = 'slurm'",
            )
            .fetch_one(&app.pool)
            .await
            .unwrap()
        },
    )
    .await;
    // Submitted while the controller is down: it waits, with the reason in words.
    let during = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        4,
        json!({"command": command}),
    )
    .await;
    let reason = reason_containing(&app, during, "does not answer since").await;
    assert!(
        reason.contains("Slurm controller of cluster slurm"),
        "{reason}"
    );
    assert_eq!(state_of(&app, during).await, "queued");
    // The running run keeps its state.
    assert_eq!(state_of(&app, before).await, "running");
    let (status, answer) = post(
        &base,
        &format!("/api/v1/runs/{cancelled}/cancel"),
        &researcher,
        json!(null),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    tokio::task::spawn_blocking(|| SlurmCluster::get().restart_controller())
        .await
        .unwrap();
    wait_state(&app, before, "succeeded").await;
    wait_state(&app, during, "succeeded").await;
    wait_state(&app, cancelled, "cancelled").await;
    // The cancel reached Slurm: its job is not running any more; the other kept running.
    let cluster_now = SlurmCluster::get();
    assert!(
        jobs_of(&app, cluster_now, cancelled)
            .await
            .iter()
            .all(|j| j.2 != "RUNNING"),
        "{:?}",
        jobs_of(&app, cluster_now, cancelled).await
    );
    assert_eq!(state_of(&app, steady).await, "running");
    assert_eq!(
        jobs_of(&app, cluster_now, steady)
            .await
            .iter()
            .map(|j| j.2.as_str())
            .collect::<Vec<_>>(),
        vec!["RUNNING"]
    );
    let (status, _) = post(
        &base,
        &format!("/api/v1/runs/{steady}/cancel"),
        &researcher,
        json!(null),
    )
    .await;
    assert_eq!(status, 200);
    wait_state(&app, steady, "cancelled").await;
    for run in [before, during] {
        assert_eq!(
            jobs_of(&app, cluster, run).await.len(),
            1,
            "run {run}: {:?}",
            jobs_of(&app, cluster, run).await
        );
        let starts = read(&dir, &format!("starts-{run}")).unwrap();
        assert_eq!(starts.lines().count(), 1, "run {run} started {starts}");
    }
    let down: Option<time::OffsetDateTime> =
        sqlx::query_scalar("SELECT executor_down_since FROM clusters WHERE name = 'slurm'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(down.is_none());
    assert!(
        tranche::ledger::problems(&app.pool)
            .await
            .unwrap()
            .is_empty()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn add_slurm_cluster_reads_the_partition_refuses_bad_input_and_refreshes_audited() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let app = TestApp::new().await;
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let settings = SlurmSettings {
        conf: Some(cluster.conf.clone()),
        ..SlurmSettings::default()
    };
    let add = |partition: &'static str, model: Option<&'static str>| {
        let pool = app.pool.clone();
        let settings = settings.clone();
        async move {
            tranche::executor::slurm::add_cluster(&pool, &settings, "slurm", partition, model).await
        }
    };
    let clusters = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM clusters")
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    let before = clusters().await;
    for (partition, model, words) in [
        ("nope", Some("H100"), "Slurm has no partition \"nope\""),
        (
            "cpu",
            Some("H100"),
            "no node of partition \"cpu\" has GPUs (gres gpu): n3",
        ),
        (
            "gpu",
            Some("Z9000"),
            "there is no GPU model named \"Z9000\"",
        ),
        (
            "gpu",
            None,
            "Slurm names no GPU type on node n1; name the GPU model with --gpu-model",
        ),
        ("bad name!", Some("H100"), "partition"),
    ] {
        let e = add(partition, model).await.unwrap_err();
        assert!(
            matches!(e, tranche::error::AppError::Invalid { .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains(words), "{partition}: {e}");
    }
    // Nothing half-written.
    assert_eq!(clusters().await, before);

    let adds = app.audit_count("node.add").await;
    let change = add("gpu", Some("H100")).await.unwrap();
    assert!(change.created);
    assert_eq!(app.audit_count("node.add").await, adds + 2);
    assert_eq!(
        change.added,
        vec![("n1".to_string(), 8), ("n2".to_string(), 8)]
    );
    let rows: Vec<(String, String, i32, String)> = sqlx::query_as(
        "SELECT n.name, n.state, n.gpu_count, m.name FROM nodes n JOIN gpu_models m ON m.id = n.gpu_model_id \
         JOIN clusters c ON c.id = n.cluster_id WHERE c.name = 'slurm' AND c.executor = 'slurm' ORDER BY n.name",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        rows,
        vec![
            ("n1".into(), "up".into(), 8, "H100".into()),
            ("n2".into(), "up".into(), 8, "H100".into())
        ]
    );
    // Agents cannot serve a Slurm cluster.
    let e = tranche::runs::agents::create_token(&app.pool, "slurm")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("served by slurm"), "{e}");

    // Running it again changes nothing; after the inventory drifted (a GPU count, a node that
    // left the partition), it is refreshed and each change audited.
    assert_eq!(
        add("gpu", Some("H100")).await.unwrap(),
        tranche::executor::slurm::InventoryChange::default()
    );
    sqlx::query("UPDATE nodes SET gpu_count = 4 WHERE name = 'n1'")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO nodes (cluster_id, name, gpu_model_id, gpu_count) \
         SELECT c.id, 'n9', m.id, 8 FROM clusters c, gpu_models m WHERE c.name = 'slurm' AND m.name = 'H100'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let (updates, removes) = (
        app.audit_count("node.update").await,
        app.audit_count("node.remove").await,
    );
    let change = add("gpu", Some("H100")).await.unwrap();
    assert!(!change.created);
    assert_eq!(change.changed, vec!["n1".to_string()]);
    assert_eq!(change.removed, vec!["n9".to_string()]);
    assert_eq!(app.audit_count("node.update").await, updates + 1);
    assert_eq!(app.audit_count("node.remove").await, removes + 1);
    let n9: String = sqlx::query_scalar("SELECT state FROM nodes WHERE name = 'n9'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n9, "down");
    let n1: i32 = sqlx::query_scalar("SELECT gpu_count FROM nodes WHERE name = 'n1'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n1, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_drained_in_slurm_drains_in_tranche_and_its_runs_move_after_their_minimum_runtime() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (app, base, researcher, _lead, _admin) = slurm_live(cluster).await;
    let run = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        8,
        json!({"resumable": true, "min_runtime_s": 2,
               "command": "if [ \"$TRANCHE_ATTEMPT\" -ge 2 ]; then exit 0; fi; sleep 300"}),
    )
    .await;
    wait_state(&app, run, "running").await;
    let first: String = sqlx::query_scalar(
        "SELECT n.name FROM run_placements p JOIN nodes n ON n.id = p.node_id WHERE p.run_id = $1 AND p.attempt = 1",
    )
    .bind(run)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    cluster.run(
        "scontrol",
        &[
            "update",
            &format!("nodename={first}"),
            "state=drain",
            "reason=repair",
        ],
    );
    until(
        Duration::from_secs(30),
        "the node draining in Tranche",
        || async {
            sqlx::query_scalar::<_, String>("SELECT state FROM nodes WHERE name = $1")
                .bind(&first)
                .fetch_one(&app.pool)
                .await
                .unwrap()
                == "draining"
        },
    )
    .await;
    wait_state(&app, run, "succeeded").await;
    let second: String = sqlx::query_scalar(
        "SELECT n.name FROM run_placements p JOIN nodes n ON n.id = p.node_id WHERE p.run_id = $1 AND p.attempt = 2",
    )
    .bind(run)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_ne!(second, first);
    let (k, detail) = kinds(&base, &researcher, run).await;
    assert_eq!(
        k,
        [
            "submitted",
            "started",
            "preempted",
            "requeued",
            "started",
            "succeeded"
        ],
        "{detail}"
    );
    let preempted = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "preempted")
        .unwrap();
    assert_eq!(
        preempted["message"],
        format!("node {first} is draining for repair"),
        "{detail}"
    );
    // The state Slurm gave is audited, by the system.
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'node.state' AND actor_id IS NULL \
         AND after->>'name' = $1 AND after->>'state' = 'draining'",
    )
    .bind(&first)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_contract_on_the_slurm_cluster_is_a_slurm_reservation_until_cancelled() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (_app, base, _researcher, lead, _admin) = slurm_live(cluster).await;
    let start = crate::support::tomorrow_at(10);
    let end = start
        .checked_add(jiff::SignedDuration::from_hours(2))
        .unwrap();
    let (status, contract) = post(
        &base,
        "/api/v1/contracts",
        &lead,
        json!({"project": "fm-pretrain-7b", "cluster": "slurm", "gpu_model": "H100", "gpus": 4,
               "start": start.to_string(), "end": end.to_string()}),
    )
    .await;
    assert_eq!(status, 201, "{contract}");
    let id = contract["id"].as_i64().unwrap();
    let show = || cluster.run("scontrol", &["show", "reservation", "--oneliner"]);
    let mine = |text: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("ReservationName=tranche-contract-{id}-")))
            .map(str::to_string)
    };
    until(
        Duration::from_secs(30),
        "the contract's reservation",
        || async { mine(&show()).is_some() },
    )
    .await;
    let line = mine(&show()).unwrap();
    // For its window (the controller's local time is this host's), of one whole node: 4 GPUs
    // of 8-GPU nodes.
    let local = |t: jiff::Timestamp| {
        t.to_zoned(jiff::tz::TimeZone::system())
            .strftime("%Y-%m-%dT%H:%M:%S")
            .to_string()
    };
    assert!(
        line.contains(&format!("StartTime={}", local(start))),
        "{line}"
    );
    assert!(line.contains(&format!("EndTime={}", local(end))), "{line}");
    assert!(line.contains("NodeCnt=1"), "{line}");
    let (status, answer) = post(
        &base,
        &format!("/api/v1/contracts/{id}/cancel"),
        &lead,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    until(
        Duration::from_secs(30),
        "the reservation deleted",
        || async { mine(&show()).is_none() },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_submission_whose_answer_was_lost_is_adopted_not_submitted_again() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    // No server: the test drives the pass and the bridge itself.
    let site = Site {
        slurm: SlurmSettings {
            conf: Some(cluster.conf.clone()),
            ..SlurmSettings::default()
        },
        ..Site::for_tests()
    };
    let app = TestApp::with_site(site).await;
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    tranche::executor::slurm::add_cluster(
        &app.pool,
        &app.state.site.slurm,
        "slurm",
        "gpu",
        Some("H100"),
    )
    .await
    .unwrap();
    let token = app.token_for("demo-researcher").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&token),
            Some(json!({"project": "fm-pretrain-7b", "cluster": "slurm", "gpu_model": "H100", "gpus": 2,
                        "min_runtime_s": 1, "time_limit_s": 600, "resumable": false, "command": "sleep 300"})),
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::CREATED, "{answer}");
    let run = answer["id"].as_i64().unwrap();
    tranche::runs::service::pass(&app.state).await.unwrap();
    let (cluster_id, node): (i64, String) = sqlx::query_as(
        "SELECT n.cluster_id, n.name FROM run_placements p JOIN nodes n ON n.id = p.node_id WHERE p.run_id = $1",
    )
    .bind(run)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // An sbatch that reached the controller but whose answer was lost: the job exists, the
    // bridge never heard its id.
    let tag = tranche::executor::slurm::tag(&app.database, cluster_id);
    let lost: i64 = cluster
        .run(
            "sbatch",
            &[
                "--parsable",
                &format!("--job-name=tranche-{run}-1"),
                &format!("--comment=tranche {tag} run {run} attempt 1"),
                "--partition=gpu",
                &format!("--nodelist={node}"),
                "--gres=gpu:2",
                "--output=/dev/null",
                "--wrap",
                "sleep 300",
            ],
        )
        .trim()
        .parse()
        .unwrap();
    let mut bridge =
        tranche::executor::slurm::Bridge::new(app.state.clone(), cluster_id, "gpu".into(), tag);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        bridge.tick().await.unwrap();
        let state: String =
            sqlx::query_scalar("SELECT proc_state FROM run_placements WHERE run_id = $1")
                .bind(run)
                .fetch_one(&app.pool)
                .await
                .unwrap();
        if state == "running" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the adopted job is not confirmed running: {state}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let jobs = jobs_of(&app, cluster, run).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].0, lost);
    let known: i64 = sqlx::query_scalar("SELECT job_id FROM slurm_jobs WHERE run_id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(known, lost);
}

/// A run counts, and is charged, from Slurm's start of its job, not from the pass's decision:
/// a job held pending by a maintenance reservation is neither charged nor timed while it
/// waits (found by a new-user check: it was charged from the decision, and its time limit ran
/// while it waited).
#[tokio::test]
async fn a_slurm_run_counts_from_slurms_start_of_its_job() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    let (app, base, researcher, _lead, _admin) = slurm_live(cluster).await;
    let made = cluster.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "reservationname=tranche-test-maint",
            "starttime=now",
            "duration=10",
            "nodes=n1,n2",
            "users=root",
            "flags=MAINT,IGNORE_JOBS",
        ],
    );
    assert!(made.contains("created"), "{made}");
    let run = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        1,
        json!({"command": "sleep 2"}),
    )
    .await;
    until(
        Duration::from_secs(30),
        "its job to pend in Slurm",
        || async {
            jobs_of(&app, cluster, run)
                .await
                .first()
                .is_some_and(|j| j.2 == "PENDING")
        },
    )
    .await;
    let decided: i64 =
        sqlx::query_scalar("SELECT extract(epoch FROM started_at)::BIGINT FROM runs WHERE id = $1")
            .bind(run)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(state_of(&app, run).await, "starting");
    // The scenario: the job pends in Slurm for some seconds after the decision.
    until(
        Duration::from_secs(10),
        "the job to pend for 3 s",
        || async { jiff::Timestamp::now().as_second() >= decided + 3 },
    )
    .await;
    assert_eq!(jobs_of(&app, cluster, run).await[0].2, "PENDING");
    assert_eq!(state_of(&app, run).await, "starting");
    let released = jiff::Timestamp::now().as_second();
    cluster.run(
        "scontrol",
        &["delete", "reservationname=tranche-test-maint"],
    );
    wait_state(&app, run, "succeeded").await;
    let (started, charged): (i64, i64) = sqlx::query_as(
        "SELECT extract(epoch FROM started_at)::BIGINT, charged_s FROM runs WHERE id = $1",
    )
    .bind(run)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let (k, detail) = kinds(&base, &researcher, run).await;
    assert_eq!(k, ["submitted", "started", "succeeded"], "{detail}");
    assert!(
        started >= released,
        "started {started}, released {released}, decided {decided}"
    );
    // sleep 2: two or three whole seconds, not the wait in Slurm's queue.
    assert!((2..=3).contains(&charged), "charged {charged} s");
}

/// A stop whose grace period runs out while the controller does not answer still reaches the
/// job as SIGTERM first, with the grace period from then, when the controller answers again
/// (found by a new-user check: the job got the kill alone, its TERM handler never ran).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stop_during_a_controller_outage_still_sends_sigterm_first() {
    let (_lease, cluster) = SlurmCluster::lease().await;
    // A grace period longer than the partition's KillWait (2 s), which a plain scancel gives.
    let (app, base, researcher, _lead, _admin) = slurm_live_with(cluster, 8).await;
    let dir = scratch("slurm-outage-stop");
    let d = dir.display();
    // Its TERM handler needs 4 s: more than KillWait, less than the grace period.
    let run = submit(
        &base,
        &researcher,
        "fm-pretrain-7b",
        1,
        json!({"command": format!("trap 'sleep 4; echo term > {d}/term; exit 0' TERM; sleep 300 & wait")}),
    )
    .await;
    wait_state(&app, run, "running").await;
    tokio::task::spawn_blocking(|| SlurmCluster::get().stop_controller())
        .await
        .unwrap();
    let (status, answer) = post(
        &base,
        &format!("/api/v1/runs/{run}/cancel"),
        &researcher,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    // The scenario: the grace period runs out during the outage.
    let cancelled = jiff::Timestamp::now().as_second();
    until(
        Duration::from_secs(20),
        "the grace period to pass",
        || async { jiff::Timestamp::now().as_second() > cancelled + 9 },
    )
    .await;
    tokio::task::spawn_blocking(|| SlurmCluster::get().restart_controller())
        .await
        .unwrap();
    wait_state(&app, run, "cancelled").await;
    assert_eq!(read(&dir, "term").as_deref(), Some("term"));
}
