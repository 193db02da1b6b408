//! Incremental scheduling snapshots (src/runs/live.rs) on real PostgreSQL: after random
//! sequences of submissions, cancels, approvals, denials, agent reports (running, exits),
//! agent restarts, usage postings near the fair-share window's start, runs falling due a
//! charge (which the pass sets in its snapshot, noting no change), passes and passes of
//! another replica, the runs a pass would schedule from (with the fair-share usage),
//! kept in memory and brought up to date from `run_changes`, equal a full reload; and changes
//! committed out of order are not missed. Delta agent syncs send only the orders that changed.

use axum::http::StatusCode;
use proptest::prelude::*;
use serde_json::{Value, json};
use tranche::runs::live::Refresh;
use tranche::runs::service;

use crate::runs::{Org, org, register};

const NODES: [&str; 3] = ["inc-1", "inc-2", "inc-3"];
const PROJECTS: [&str; 2] = ["fm-pretrain-7b", "fm-pretrain-70b"];

#[derive(Debug, Clone)]
enum Op {
    /// Submit a run: project, GPUs, minimum runtime (0 = unallocated; large ones wait for
    /// approval), priority.
    Submit {
        project: usize,
        gpus: i64,
        min_runtime_s: i64,
        priority: i32,
        resumable: bool,
    },
    /// Cancel the nth run (of all, by id), whatever its state (refusals included).
    Cancel { nth: usize },
    /// Approve (or deny) the nth run waiting for approval.
    Decide { nth: usize, approve: bool },
    /// A scheduling pass of this replica.
    Pass,
    /// A scheduling pass of another replica (its own cache): this one must notice the gap.
    OtherPass,
    /// The agent reports every assigned process running.
    ReportRunning,
    /// The agent reports the nth live process exited with this status.
    Exit { nth: usize, code: i32 },
    /// The agent stops (its nodes are lost at once) and registers again.
    Restart,
    /// The nth starting or running run (by id) began `secs` earlier than it did, so the next
    /// pass charges it (a charge falls due each minute of an attempt) and sets the new charge
    /// in its snapshot, with no change noted.
    Age { nth: usize, secs: i64 },
    /// Allocated run time of a project recorded in the past: `edge_ms` milliseconds after the
    /// fair-share window's start (negative: before it), so some postings leave the window
    /// while the steps that follow run, and some never count.
    Usage {
        project: usize,
        edge_ms: i64,
        gpu_seconds: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, 1..=8i64, prop_oneof![Just(0i64), Just(60), Just(36_000)], -2..=2i32, any::<bool>())
            .prop_map(|(project, gpus, min_runtime_s, priority, resumable)| Op::Submit { project, gpus, min_runtime_s, priority, resumable }),
        1 => (0..16usize).prop_map(|nth| Op::Cancel { nth }),
        1 => (0..4usize, any::<bool>()).prop_map(|(nth, approve)| Op::Decide { nth, approve }),
        3 => Just(Op::Pass),
        1 => Just(Op::OtherPass),
        2 => Just(Op::ReportRunning),
        2 => (0..8usize, prop_oneof![Just(0i32), Just(1)]).prop_map(|(nth, code)| Op::Exit { nth, code }),
        1 => Just(Op::Restart),
        2 => (0..8usize, prop_oneof![Just(61i64), 120..600i64]).prop_map(|(nth, secs)| Op::Age { nth, secs }),
        2 => (0..2usize, prop_oneof![Just(-1_000i64), 1..300i64, Just(3_600_000), Just(600_000_000)], 1..7_200i64)
            .prop_map(|(project, edge_ms, gpu_seconds)| Op::Usage { project, edge_ms, gpu_seconds }),
    ]
}

/// Registers the test nodes (declared by [`register`] the first time); returns the session.
async fn register_again(o: &Org) -> String {
    let nodes: Vec<Value> = NODES
        .iter()
        .map(|n| json!({"name": n, "gpus": 8, "gpu_model": "NVIDIA H100 80GB HBM3"}))
        .collect();
    let (status, body) = o
        .app
        .api(
            "POST",
            "/api/v1/agent/register",
            Some(&o.agent),
            Some(json!({ "nodes": nodes })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["session"].as_str().unwrap().to_string()
}

/// The processes of current attempts not yet exited: (run, attempt, node).
async fn live_processes(o: &Org) -> Vec<(i64, i32, i64)> {
    sqlx::query_as(
        "SELECT p.run_id, p.attempt, p.node_id FROM run_placements p JOIN runs r ON r.id = p.run_id AND r.attempt = p.attempt \
         WHERE p.proc_state <> 'exited' ORDER BY p.run_id, p.node_id",
    )
    .fetch_all(&o.app.pool)
    .await
    .unwrap()
}

/// The processes recorded running on `nodes`, as an agent's reports of them running.
async fn still_running(o: &Org, nodes: &[i64]) -> Vec<Value> {
    let running: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT run_id, attempt, node_id FROM run_placements WHERE node_id = ANY($1) AND proc_state = 'running'",
    )
    .bind(nodes)
    .fetch_all(&o.app.pool)
    .await
    .unwrap();
    running
        .iter()
        .map(|(run, attempt, node)| json!({"run": run, "attempt": attempt, "node": node, "state": "running"}))
        .collect()
}

async fn report(o: &Org, session: &str, mut runs: Vec<Value>) {
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM nodes WHERE name = ANY($1) ORDER BY id")
        .bind(NODES.map(String::from).to_vec())
        .fetch_all(&o.app.pool)
        .await
        .unwrap();
    let nodes: Vec<Value> = ids.iter().map(|n| json!({"node": n})).collect();
    // As an agent does, it lists every process it has: those recorded running that it does
    // not report otherwise are still running.
    let others: Vec<Value> = still_running(o, &ids)
        .await
        .into_iter()
        .filter(|r| {
            !runs.iter().any(|x| {
                x["run"] == r["run"] && x["attempt"] == r["attempt"] && x["node"] == r["node"]
            })
        })
        .collect();
    runs.extend(others);
    let (status, answer) = o
        .app
        .api(
            "POST",
            "/api/v1/agent/sync",
            Some(&o.agent),
            Some(json!({"session": session, "wait_s": 0, "nodes": nodes, "runs": runs})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// Applies one operation; refusals (a cancel of an ended run, say) are part of the game.
async fn apply(o: &Org, session: &mut String, op: &Op) {
    match op {
        Op::Submit {
            project,
            gpus,
            min_runtime_s,
            priority,
            resumable,
        } => {
            let body = json!({
                "project": PROJECTS[*project], "cluster": "local", "gpu_model": "H100", "gpus": gpus,
                "min_runtime_s": min_runtime_s, "time_limit_s": 72_000, "priority": priority,
                "resumable": resumable, "command": "sleep 600"
            });
            let (status, answer) = o
                .app
                .api("POST", "/api/v1/runs", Some(&o.researcher), Some(body))
                .await;
            assert!(
                status == StatusCode::CREATED || status.is_client_error(),
                "{status} {answer}"
            );
        }
        Op::Cancel { nth } => {
            let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM runs ORDER BY id")
                .fetch_all(&o.app.pool)
                .await
                .unwrap();
            if let Some(id) = ids.get(*nth) {
                let (status, answer) = o
                    .app
                    .api(
                        "POST",
                        &format!("/api/v1/runs/{id}/cancel"),
                        Some(&o.researcher),
                        None,
                    )
                    .await;
                assert!(status.is_success() || status.is_client_error(), "{answer}");
            }
        }
        Op::Decide { nth, approve } => {
            let ids: Vec<i64> = sqlx::query_scalar(
                "SELECT id FROM runs WHERE state = 'waiting_approval' ORDER BY id",
            )
            .fetch_all(&o.app.pool)
            .await
            .unwrap();
            if let Some(id) = ids.get(*nth) {
                let what = if *approve { "approve" } else { "deny" };
                let (status, answer) = o
                    .app
                    .api(
                        "POST",
                        &format!("/api/v1/runs/{id}/{what}"),
                        Some(&o.lead),
                        Some(json!({"reason": "test"})),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{answer}");
            }
        }
        Op::Pass => {
            service::pass(&o.app.state).await.expect("pass");
        }
        Op::OtherPass => {
            let other =
                tranche::state::AppState::new(o.app.pool.clone(), (*o.app.state.site).clone());
            service::pass(&other).await.expect("other replica's pass");
        }
        Op::ReportRunning => {
            let runs: Vec<Value> = live_processes(o)
                .await
                .into_iter()
                .map(|(run, attempt, node)| json!({"run": run, "attempt": attempt, "node": node, "state": "running"}))
                .collect();
            report(o, session, runs).await;
        }
        Op::Exit { nth, code } => {
            let procs = live_processes(o).await;
            if !procs.is_empty() {
                let (run, attempt, node) = procs[nth % procs.len()];
                report(
                    o,
                    session,
                    vec![json!({"run": run, "attempt": attempt, "node": node, "state": "exited", "exit_code": code})],
                )
                .await;
            }
        }
        Op::Restart => {
            let (status, answer) = o
                .app
                .api(
                    "POST",
                    "/api/v1/agent/stop",
                    Some(&o.agent),
                    Some(json!({"session": session})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            *session = register_again(o).await;
        }
        Op::Age { nth, secs } => {
            let ids: Vec<i64> = sqlx::query_scalar(
                "SELECT id FROM runs WHERE state IN ('starting', 'running') ORDER BY id",
            )
            .fetch_all(&o.app.pool)
            .await
            .unwrap();
            if !ids.is_empty() {
                sqlx::query(
                    "UPDATE runs SET started_at = started_at - make_interval(secs => $2) WHERE id = $1",
                )
                .bind(ids[nth % ids.len()])
                .bind(*secs as f64)
                .execute(&o.app.pool)
                .await
                .unwrap();
            }
        }
        Op::Usage {
            project,
            edge_ms,
            gpu_seconds,
        } => {
            let (project, cluster, model): (i64, i64, i64) = sqlx::query_as(
                "SELECT p.node_id, c.id, m.id FROM projects p JOIN tree_nodes t ON t.id = p.node_id, \
                        clusters c, gpu_models m WHERE t.name = $1 AND c.name = 'local' AND m.name = 'H100'",
            )
            .bind(PROJECTS[*project])
            .fetch_one(&o.app.pool)
            .await
            .unwrap();
            let window = jiff::SignedDuration::from_secs(tranche::runs::live::USAGE_WINDOW_S);
            let at = jiff::Timestamp::now() - window + jiff::SignedDuration::from_millis(*edge_ms);
            let mut tx = o.app.pool.begin().await.unwrap();
            tranche::ledger::charge_usage_at(
                &o.app.pool,
                &mut tx,
                &o.app.state.site,
                at,
                project,
                (cluster, model),
                *gpu_seconds,
                true,
                None,
            )
            .await
            .unwrap();
            tx.commit().await.unwrap();
        }
    }
}

/// A demo organisation with three registered nodes of 8 GPUs and a self-service limit low
/// enough that long protected runs wait for approval.
async fn setup() -> (Org, String) {
    let o = org().await;
    let (session, _) = register(&o.app, &o.agent, &NODES).await;
    sqlx::query(
        "UPDATE projects SET self_service_gpu_hours = 20 WHERE node_id IN \
         (SELECT id FROM tree_nodes WHERE name = ANY($1))",
    )
    .bind(PROJECTS.map(String::from).to_vec())
    .execute(&o.app.pool)
    .await
    .unwrap();
    (o, session)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// After every step the incremental snapshot equals a full reload, and it is incremental
    /// (so the comparison means something) except after another replica's pass.
    #[test]
    fn incremental_snapshot_equals_a_full_reload(ops in proptest::collection::vec(op(), 1..30)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (o, mut session) = setup().await;
            let first = service::snapshot_pair(&o.app.state).await.unwrap().how;
            prop_assert_eq!(first, Refresh::Full);
            for (step, op) in ops.iter().enumerate() {
                apply(&o, &mut session, op).await;
                let pair = service::snapshot_pair(&o.app.state).await.unwrap();
                let how = pair.how;
                prop_assert_eq!(&pair.incremental, &pair.full, "step {} ({:?}) of {:?}", step, op, ops);
                prop_assert_eq!(&pair.incremental_runs.running, &pair.full_runs.running, "step {} ({:?}) of {:?}", step, op, ops);
                prop_assert_eq!(&pair.incremental_runs.waiting, &pair.full_runs.waiting, "step {} ({:?}) of {:?}", step, op, ops);
                if matches!(op, Op::OtherPass) {
                    prop_assert_eq!(how, Refresh::Full, "another replica's pass went unnoticed");
                } else {
                    prop_assert!(matches!(how, Refresh::Incremental(_)), "step {step} ({op:?}): {how:?}");
                }
            }
            Ok(())
        })?;
    }
}

/// A change made in a transaction that began before another and commits after it (and after
/// a pass consumed the other's change) still reaches the snapshot.
#[tokio::test]
async fn changes_committed_out_of_order_are_not_missed() {
    let (o, _) = setup().await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let body = json!({
            "project": PROJECTS[0], "cluster": "local", "gpu_model": "H100", "gpus": 1,
            "min_runtime_s": 0, "time_limit_s": 60, "priority": 0, "command": "true"
        });
        let (status, answer) = o
            .app
            .api("POST", "/api/v1/runs", Some(&o.researcher), Some(body))
            .await;
        // Queued: this test runs no pass, so nothing starts.
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        ids.push(answer["id"].as_i64().unwrap());
    }
    let how = service::snapshot_pair(&o.app.state).await.unwrap().how;
    assert_eq!(how, Refresh::Full);
    // A: first to write (its change row takes the lower number), last to commit.
    let mut a = o.app.pool.begin().await.unwrap();
    sqlx::query("UPDATE runs SET priority = 7 WHERE id = $1")
        .bind(ids[0])
        .execute(&mut *a)
        .await
        .unwrap();
    // B: writes and commits in between.
    sqlx::query("UPDATE runs SET priority = 9 WHERE id = $1")
        .bind(ids[1])
        .execute(&o.app.pool)
        .await
        .unwrap();
    let service::SnapshotPair {
        incremental,
        full,
        how,
        ..
    } = service::snapshot_pair(&o.app.state).await.unwrap();
    assert_eq!(how, Refresh::Incremental(1));
    assert_eq!(incremental, full);
    let priority = |snap: &tranche::scheduler::Snapshot, id: i64| {
        snap.waiting
            .iter()
            .find(|w| w.id.0 == id)
            .map(|w| w.priority)
    };
    assert_eq!(priority(&incremental, ids[1]), Some(9));
    assert_eq!(
        priority(&incremental, ids[0]),
        Some(0),
        "A has not committed"
    );
    a.commit().await.unwrap();
    let service::SnapshotPair {
        incremental,
        full,
        how,
        ..
    } = service::snapshot_pair(&o.app.state).await.unwrap();
    assert_eq!(how, Refresh::Incremental(1));
    assert_eq!(
        priority(&incremental, ids[0]),
        Some(7),
        "A's change was missed"
    );
    assert_eq!(incremental, full);
}

/// A sync as the agent sends it, with `since` when given; returns the answer.
async fn sync_since(o: &Org, session: &str, since: Option<i64>) -> (StatusCode, Value) {
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM nodes WHERE name = ANY($1) ORDER BY id")
        .bind(NODES.map(String::from).to_vec())
        .fetch_all(&o.app.pool)
        .await
        .unwrap();
    let nodes: Vec<Value> = ids.iter().map(|n| json!({"node": n})).collect();
    // As an agent does, it lists every process it has (those the server recorded running).
    let runs = still_running(o, &ids).await;
    let mut body = json!({"session": session, "wait_s": 0, "nodes": nodes, "runs": runs});
    if let Some(since) = since {
        body["since"] = json!(since);
    }
    o.app
        .api("POST", "/api/v1/agent/sync", Some(&o.agent), Some(body))
        .await
}

fn runs_of(answer: &Value, list: &str) -> Vec<i64> {
    let mut runs: Vec<i64> = answer[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["run"].as_i64().unwrap())
        .collect();
    runs.sort_unstable();
    runs
}

async fn submit_8(o: &Org) -> i64 {
    let body = json!({
        "project": PROJECTS[0], "cluster": "local", "gpu_model": "H100", "gpus": 8,
        "min_runtime_s": 0, "time_limit_s": 3600, "priority": 0, "command": "sleep 600"
    });
    let (status, answer) = o
        .app
        .api("POST", "/api/v1/runs", Some(&o.researcher), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["id"].as_i64().unwrap()
}

/// Delta syncs: the answer to `since: V` lists only the orders given or changed after V, so
/// an agent that knows every assignment of its nodes gets an empty answer; an agent of the
/// previous protocol (no `since`) is still served the whole desired state; a `since` the
/// server never reached gets the whole state again, marked full.
#[tokio::test]
async fn delta_syncs_send_only_changed_orders_and_old_agents_get_everything() {
    let (o, session) = setup().await;
    let runs = [submit_8(&o).await, submit_8(&o).await, submit_8(&o).await];
    assert_eq!(service::pass(&o.app.state).await.unwrap().started, 3);

    let (status, first) = sync_since(&o, &session, Some(0)).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["full"], true);
    assert_eq!(runs_of(&first, "assignments"), runs.to_vec());
    let v1 = first["version"].as_i64().unwrap();
    assert!(v1 > 0);

    // Nothing changed: nothing is sent, however many assignments the nodes have.
    let (_, again) = sync_since(&o, &session, Some(v1)).await;
    assert_eq!(again["full"], false);
    assert_eq!(runs_of(&again, "assignments"), Vec::<i64>::new());
    assert_eq!(runs_of(&again, "stops"), Vec::<i64>::new());
    assert_eq!(again["version"], v1);

    // The agent starts them and says so.
    let running: Vec<Value> = live_processes(&o)
        .await
        .into_iter()
        .map(|(run, attempt, node)| json!({"run": run, "attempt": attempt, "node": node, "state": "running"}))
        .collect();
    report(&o, &session, running).await;
    // A cancel: its stop only.
    let (status, answer) = o
        .app
        .api(
            "POST",
            &format!("/api/v1/runs/{}/cancel", runs[1]),
            Some(&o.researcher),
            None,
        )
        .await;
    assert!(status.is_success(), "{answer}");
    let (_, delta) = sync_since(&o, &session, Some(v1)).await;
    assert_eq!(runs_of(&delta, "assignments"), Vec::<i64>::new());
    assert_eq!(runs_of(&delta, "stops"), vec![runs[1]]);
    let v2 = delta["version"].as_i64().unwrap();
    assert!(v2 > v1);

    // Its process exits, a new run takes the GPUs: its assignment only.
    let node: i64 = sqlx::query_scalar("SELECT node_id FROM run_placements WHERE run_id = $1")
        .bind(runs[1])
        .fetch_one(&o.app.pool)
        .await
        .unwrap();
    report(
        &o,
        &session,
        vec![json!({"run": runs[1], "attempt": 1, "node": node, "state": "exited", "exit_code": 143})],
    )
    .await;
    let fourth = submit_8(&o).await;
    service::pass(&o.app.state).await.unwrap();
    let (_, delta) = sync_since(&o, &session, Some(v2)).await;
    assert_eq!(runs_of(&delta, "assignments"), vec![fourth]);
    assert_eq!(runs_of(&delta, "stops"), Vec::<i64>::new());
    let v3 = delta["version"].as_i64().unwrap();
    assert!(v3 > v2);

    // The previous protocol: the whole desired state, every time, as before.
    let (status, old) = sync_since(&o, &session, None).await;
    assert_eq!(status, StatusCode::OK, "{old}");
    assert_eq!(runs_of(&old, "assignments"), vec![runs[0], runs[2], fourth]);
    assert!(old.get("version").is_none(), "{old}");

    // A version the server never reached (say, restored from a backup): everything, full.
    let (_, gap) = sync_since(&o, &session, Some(v3 + 1_000)).await;
    assert_eq!(gap["full"], true);
    assert_eq!(runs_of(&gap, "assignments"), vec![runs[0], runs[2], fourth]);
    assert_eq!(gap["version"], v3);

    // A restore marks the versions before it untrusted: an agent's version from before it
    // gets the whole state once (the restored orders are older than what it saw), then deltas
    // from the version that answer gave.
    sqlx::query(
        "INSERT INTO site_flags (name, value) VALUES ('orders_full_before', nextval('order_versions')::TEXT) \
         ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
    )
    .execute(&o.app.pool)
    .await
    .unwrap();
    let (_, after) = sync_since(&o, &session, Some(v3)).await;
    assert_eq!(after["full"], true, "{after}");
    assert_eq!(
        runs_of(&after, "assignments"),
        vec![runs[0], runs[2], fourth]
    );
    let v4 = after["version"].as_i64().unwrap();
    assert!(v4 > v3);
    let (_, next) = sync_since(&o, &session, Some(v4)).await;
    assert_eq!(next["full"], false, "{next}");
    assert_eq!(runs_of(&next, "assignments"), Vec::<i64>::new());

    // A negative version is refused, with the field named.
    let (status, bad) = sync_since(&o, &session, Some(-1)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    assert_eq!(bad["error"]["field"], "since");
}
