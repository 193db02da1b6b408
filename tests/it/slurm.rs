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
/// 8 H100), served on a real port: (app, base URL, researcher token, lead token).
async fn slurm_live(cluster: &SlurmCluster) -> (TestApp, String, String, String) {
    let site = Site {
        grace_s: 2,
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
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let change = tranche::executor::slurm::add_cluster(
        &app.pool,
        &app.state.site.slurm,
        "slurm",
        cluster.partition,
        Some("H100"),
    )
    .await
    .unwrap();
    assert_eq!(change.added, vec![("n1".to_string(), 8), ("n2".to_string(), 8)]);
    let base = app.serve().await;
    let researcher = app.token_for("demo-researcher").await;
    let lead = app.token_for("demo-lead").await;
    (app, base, researcher, lead)
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
    until(Duration::from_secs(90), &format!("run {run} {state}"), || async {
        state_of(app, run).await == state
    })
    .await;
}

/// Slurm jobs of run `run`: (job id, name, state, node list) from `squeue`.
fn jobs_of(cluster: &SlurmCluster, run: i64) -> Vec<(i64, String, String, String)> {
    cluster
        .run("squeue", &["--states=all", "-h", "-o", "%i|%j|%T|%N"])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (f.len() == 4 && f[1].starts_with(&format!("tranche-{run}-")))
                .then(|| (f[0].parse().unwrap(), f[1].into(), f[2].into(), f[3].into()))
        })
        .collect()
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
    let (app, base, researcher, _lead) = slurm_live(cluster).await;
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
    let jobs = jobs_of(cluster, ok);
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].1, format!("tranche-{ok}-1"));
    assert_eq!(jobs[0].2, "COMPLETED");
    assert_eq!(jobs[0].3, placed);
    let line = read(&dir, "ok").expect("the run's command wrote its file");
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(fields[0].split(',').count(), 3, "{line}");
    assert_eq!(fields[1..], [ok.to_string().as_str(), "1", placed.as_str()], "{line}");
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
    assert_eq!(jobs_of(cluster, failing)[0].2, "FAILED");
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
    assert!(tranche::ledger::problems(&app.pool).await.unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
