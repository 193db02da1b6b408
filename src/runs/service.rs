//! The scheduler service inside `tranche serve` (docs/design.md section 7): exactly one loop active
//! across replicas, elected by a PostgreSQL advisory lock, woken by `NOTIFY tranche_wake`
//! (submissions, approvals, cancels, agent reports) and a periodic tick. Each pass loads a
//! [`Snapshot`] from the database, calls the pure core [`scheduler::schedule`], and applies
//! every decision in one transaction, so a crash leaves the old state or the new one. GPUs are
//! held through `gpu_holds`, whose primary key (node, GPU index) makes a double start
//! impossible even across restarts.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::{PgConnection, PgPool};

use crate::config::Site;
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n::said::Said;
use crate::ledger;
use crate::scheduler::{
    self, Cluster, ClusterId, Contract, ContractId, Decision, GpuModel, ModelId, Node, NodeId,
    NodeState, PreemptReason, Project, ProjectId, RunId, RunningRun, Share, Snapshot, TreeNode,
    TreeNodeId, WaitReason, WaitingRun,
};
use crate::state::AppState;

use super::live::{LiveRuns, Refresh, RunningRow};
use super::{ASSIGN_CHANNEL, WAKE_CHANNEL, wake};

/// Advisory lock key held (session level) by the active scheduling loop.
const LEADER_LOCK: i64 = 0x7472_616e_6368_6501;
/// Advisory lock key taken (transaction level) by every pass, so two passes never overlap even
/// while a lost leader's connection is being noticed.
const PASS_LOCK: i64 = 0x7472_616e_6368_6502;

/// Serialises the caller's transaction with scheduling passes (and with other callers): taken
/// by every write that stops runs or settles their charges outside a pass (agent exit reports,
/// cancels, agent registration), so passes and those writes never lock runs and ledger
/// accounts in opposite orders.
///
/// # Errors
/// Database errors.
pub async fn serialize_with_passes(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(PASS_LOCK)
        .execute(conn)
        .await?;
    Ok(())
}

/// Charges the starting and running runs of GPU model `model` up to now ([`settle`]), in
/// the caller's transaction, serialised with passes: before the model's price or billing
/// weight changes, so that time already used is charged at the price of its time (the pass
/// charges about once a minute; found by a new-user check: a price change applied to every
/// running run's last minute). The runs are noted for the passes' snapshot, which keeps each
/// run's seconds charged.
///
/// # Errors
/// Database errors.
pub async fn settle_model(
    pool: &PgPool,
    conn: &mut PgConnection,
    site: &Site,
    model: i64,
) -> Result<(), AppError> {
    serialize_with_passes(conn).await?;
    let runs: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM runs WHERE gpu_model_id = $1 AND state IN ('starting', 'running') ORDER BY id",
    )
    .bind(model)
    .fetch_all(&mut *conn)
    .await?;
    let charged: Vec<i64> = settle(pool, conn, site, &runs, ChargeUpTo::LastSeen)
        .await?
        .into_iter()
        .map(|(run, _)| run)
        .collect();
    if !charged.is_empty() {
        sqlx::query("INSERT INTO run_changes (run_id) SELECT unnest($1::BIGINT[])")
            .bind(&charged)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// How often the loop rewrites waiting reasons while passes follow each other closely.
pub const REASONS_EVERY: Duration = Duration::from_secs(2);

/// The most waiting reasons one pass writes: when more changed (every reason of a site's
/// 50,000 waiting runs may change at once), the rest are written by the passes that follow at
/// once, so no pass spends seconds on words (docs/design.md section 7, "Waiting reasons
/// written in bounded slices"). Within it, a pass writes what fits [`REASONS_BUDGET`].
pub const REASONS_PER_PASS: usize = 1_000;
/// The fewest waiting reasons a pass with reasons to write writes, however slow the last were.
pub const REASONS_PER_PASS_MIN: usize = 100;
/// The time a pass means to spend on waiting reasons (comparing, wording, writing): a slice
/// of them is sized to it from what the last slices cost ([`super::live::Slice`]), leaving
/// most of a pass's 100 ms target to the rest of its work.
pub const REASONS_BUDGET: Duration = Duration::from_millis(20);

/// How often a pass looks for ended attempts among every starting or running run, not only
/// among those with an exit noted since the last pass (a safety net: the notes suffice).
pub const EXIT_SWEEP_EVERY: Duration = Duration::from_secs(60);
/// A running run is charged by the pass once this many seconds of its attempt are uncharged.
pub const CHARGE_EVERY_S: i64 = 60;
/// At most this many runs are charged by one pass (10,000 runs started in the same seconds fall
/// due together); the rest are charged by the passes that follow at once, longest uncharged
/// first (docs/design.md section 7, "Time limits and charges from memory"). Within it, a pass
/// charges what fits [`CHARGES_BUDGET`].
pub const CHARGES_PER_PASS: usize = 1_000;
/// The fewest runs a pass with charges due charges, however slow the last charges were (at
/// most one pass per [`MIN_PASS_GAP`], 1,000 a second: a site's 10,000 running runs need 167).
pub const CHARGES_PER_PASS_MIN: usize = 100;
/// The time a pass means to spend charging runs; a slice of them is sized to it as the
/// waiting reasons' is to [`REASONS_BUDGET`].
pub const CHARGES_BUDGET: Duration = Duration::from_millis(20);
/// A pass that starts, stops, ends or charges no run rewrites `project_holds` at most this
/// often (only for writers that changed runs without rewriting it themselves).
pub const HOLDS_EVERY: Duration = Duration::from_secs(10);
/// The time a pass means to take before its waiting reasons ([`REASONS_BUDGET`]): once the
/// core has decided, the starts and preemptions that fit what is left of it at their measured
/// cost are applied ([`super::live::Slice`]), at least [`MOVES_PER_PASS_MIN`], and the passes
/// that follow at once decide again what is left (docs/design.md section 7, "Moves in
/// slices"). A pass that took longer than half of it to decide gets as long again for its
/// moves, so slices never cost more than half of what the passes could apply.
pub const PASS_BUDGET: Duration = Duration::from_millis(80);
/// The fewest starts and preemptions a pass applies, however little of [`PASS_BUDGET`] is left.
pub const MOVES_PER_PASS_MIN: usize = 50;
/// The most starts and preemptions one pass applies.
pub const MOVES_PER_PASS: usize = 1_000;
/// Shortest time between two passes woken by events: a burst of submissions is batched.
pub const MIN_PASS_GAP: Duration = Duration::from_millis(100);

/// What a pass did.
#[derive(Debug, Clone, Default)]
pub struct PassReport {
    /// Runs started.
    pub started: usize,
    /// Runs preempted.
    pub preempted: usize,
    /// Runs stopped at their time limit.
    pub timed_out: usize,
    /// When the next running run reaches its time limit (Unix seconds; none when none runs
    /// or stops now): the loop's next pass comes no later.
    pub next_time_limit: Option<i64>,
    /// Running runs put on a capacity contract that took effect while they ran.
    pub adopted: usize,
    /// Nodes whose agent went quiet in this pass.
    pub nodes_lost: usize,
    /// Runs still waiting.
    pub waiting: usize,
    /// Runs whose attempt ended (agents' exit reports turned into states).
    pub ended: usize,
    /// Milliseconds spent: ending attempts; bringing the runs up to date, stopping those past
    /// their time limit, charging those due and loading the snapshot; the core; writing
    /// decisions.
    pub timings_ms: [u64; 4],
    /// How the snapshot's runs were brought up to date (`None` when the pass failed first).
    pub refresh: Option<Refresh>,
    /// Waiting reasons this pass wrote.
    pub reasons_written: usize,
    /// Waiting runs whose changed reason this pass left for the next (past its slice,
    /// [`REASONS_BUDGET`]).
    pub reasons_left: usize,
    /// Runs due a charge that this pass left for the next (past its slice,
    /// [`CHARGES_BUDGET`]).
    pub charges_left: usize,
    /// Starts and preemptions the core decided that this pass left for the next (past its
    /// share of [`PASS_BUDGET`]).
    pub moves_left: usize,
    /// Milliseconds of the last phase spent on waiting reasons: comparing them with those
    /// written, then wording and writing a slice of the changed ones.
    pub reasons_ms: [u64; 2],
    /// Milliseconds of the second phase: bringing the runs up to date, stopping those past
    /// their time limit and charging those due, loading the rest of the snapshot.
    pub snapshot_ms: [u64; 3],
    /// Milliseconds of the last phase outside the reasons: preemptions, starts,
    /// `project_holds`, commit.
    pub writes_ms: [u64; 4],
}

/// The snapshot a pass would schedule from now, built twice in one transaction holding the
/// pass lock: from this replica's incremental runs ([`super::live::LiveCache::refresh`], which
/// consumes the pending changes as a pass does) and from a full reload of every run. Equal
/// unless a change was missed; the property test in `tests/it/incremental.rs` compares them.
#[derive(Debug)]
pub struct SnapshotPair {
    /// The core's input from the incremental runs.
    pub incremental: Snapshot,
    /// The core's input from a full reload.
    pub full: Snapshot,
    /// The incremental runs themselves (with what the core does not read, such as the
    /// seconds charged).
    pub incremental_runs: LiveRuns,
    /// The runs of the full reload.
    pub full_runs: LiveRuns,
    /// How the incremental runs were brought up to date.
    pub how: Refresh,
}

/// Builds a [`SnapshotPair`]. Commits, so the consumption stands.
///
/// # Errors
/// Database errors.
pub async fn snapshot_pair(state: &AppState) -> Result<SnapshotPair, AppError> {
    let mut live = state.live_runs.lock().await;
    let result = async {
        let mut tx = state.pool.begin().await?;
        serialize_with_passes(&mut tx).await?;
        let now_db: time::OffsetDateTime = sqlx::query_scalar("SELECT clock_timestamp()")
            .fetch_one(&mut *tx)
            .await?;
        let now = ledger::to_jiff(now_db);
        let how = live.refresh(&mut tx).await?;
        let (incremental, _, _) =
            load_snapshot(&state.pool, &mut tx, &state.site, now, live.runs()).await?;
        let full_runs = LiveRuns::load_full(&mut tx, false).await?;
        let (full, _, _) =
            load_snapshot(&state.pool, &mut tx, &state.site, now, &full_runs).await?;
        tx.commit().await?;
        Ok::<_, AppError>(SnapshotPair {
            incremental,
            full,
            incremental_runs: live.runs().clone(),
            full_runs,
            how,
        })
    }
    .await;
    if result.is_err() {
        live.clear();
    }
    result
}

/// A live process of another run (or attempt) uses a GPU of one of attempt `m`'s placements:
/// SQL condition on the placement alias `m`.
const GPUS_IN_USE: &str = "EXISTS (SELECT 1 FROM run_placements q WHERE q.node_id = m.node_id \
     AND q.proc_state <> 'exited' AND q.gpu_indices && m.gpu_indices \
     AND NOT (q.run_id = m.run_id AND q.attempt = m.attempt))";

/// Gang start barrier, first half: of the runs just placed (`starts`), the gangs on several
/// nodes of agent clusters with a GPU still used by another run's live process (a preempted
/// or cancelled run in its grace period) have their placements held: no order to their
/// agents yet, so that no member starts, runs and is charged nothing while another waits
/// ([`release_gangs`] gives the orders together). A gang on one node needs no barrier: its
/// agent starts it once its GPUs are free.
///
/// # Errors
/// Database errors.
async fn hold_gangs(conn: &mut PgConnection, starts: &[i64]) -> Result<(), sqlx::Error> {
    let sql = format!(
        "UPDATE run_placements p SET held = true \
         FROM runs r JOIN clusters c ON c.id = r.cluster_id AND c.executor = 'agent' \
         WHERE r.id = p.run_id AND p.attempt = r.attempt AND r.id = ANY($1) \
         AND (SELECT count(*) FROM run_placements s WHERE s.run_id = p.run_id AND s.attempt = p.attempt) > 1 \
         AND EXISTS (SELECT 1 FROM run_placements m WHERE m.run_id = p.run_id AND m.attempt = p.attempt AND {GPUS_IN_USE})"
    );
    sqlx::query(&sql).bind(starts).execute(conn).await?;
    Ok(())
}

/// Gang start barrier, second half: the held placements of starting runs whose every GPU is
/// now free are released together, each with a new order version (drawn under the pass lock,
/// as every order's), and the agents are told. Returns how many were released.
///
/// # Errors
/// Database errors.
async fn release_gangs(conn: &mut PgConnection) -> Result<u64, sqlx::Error> {
    let sql = format!(
        "UPDATE run_placements p SET held = false, order_version = nextval('order_versions') \
         FROM runs r WHERE r.id = p.run_id AND p.attempt = r.attempt AND r.state = 'starting' AND p.held \
         AND NOT EXISTS (SELECT 1 FROM run_placements m WHERE m.run_id = p.run_id AND m.attempt = p.attempt AND {GPUS_IN_USE})"
    );
    let released = sqlx::query(&sql).execute(&mut *conn).await?.rows_affected();
    if released > 0 {
        notify_agents(conn).await?;
    }
    Ok(released)
}

/// Tells agents' long polls on every replica that assignments changed, at commit.
///
/// # Errors
/// Database errors.
pub async fn notify_agents(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(ASSIGN_CHANNEL)
        .execute(conn)
        .await?;
    Ok(())
}

/// Run, project, cluster, model, GPUs, minimum runtime (s), charged (s), elapsed (s), and the
/// capacity contract it runs on ([`CONTRACT_WINDOW`]).
type SettleRow = (i64, i64, i64, i64, i32, i64, i64, i64, Option<Vec<i64>>);

/// SQL for the minimum runtime of the run `r` as charges count it: 0 once its project's balance
/// ran out in this attempt (`budget_spent`): the run goes on unallocated, free, and a budget
/// raised later does not make it paid again.
const MIN_RUNTIME: &str = "CASE WHEN r.budget_spent THEN 0 ELSE r.min_runtime_s END";

/// SQL for the last instant the run `r` is known to run: the oldest last heartbeat of the
/// agents of its nodes (NULL on a Slurm cluster, whose bridge reads the jobs' own times). A
/// running run is charged up to it, not up to now: a server that was down does not charge
/// the outage to a run whose process ended meanwhile (its agent's report of the end comes
/// after the first pass, which would have charged it up to now; found by an operator's check:
/// 158 GPU-seconds charged for a run of 60). The agent's next heartbeat lets the charge
/// catch up.
const LAST_SEEN: &str = "(SELECT min(n.agent_seen_at) FROM run_placements p JOIN nodes n ON n.id = p.node_id \
     JOIN clusters c ON c.id = n.cluster_id \
     WHERE p.run_id = r.id AND p.attempt = r.attempt AND c.executor <> 'slurm')";

/// SQL for the capacity contract the attempt of the run `r` runs on, as an array: its id, its
/// window's start and end in seconds from the attempt's start, and the run's GPUs it covers
/// (NULL when none).
const CONTRACT_WINDOW: &str = "(SELECT ARRAY[c.id, floor(extract(epoch FROM c.starts_at - r.started_at))::BIGINT, \
     floor(extract(epoch FROM c.ends_at - r.started_at))::BIGINT, coalesce(r.contract_gpus, r.gpus)::BIGINT] FROM contracts c \
     WHERE c.id = r.contract_id AND c.project_id = r.project_id)";

/// The ledger usages of a run attempt's seconds `[charged, elapsed)`: the part on its capacity
/// contract's window prepaid, the rest charged ([`ledger::attempt_usages`]). Allocated when
/// the minimum runtime is above 0.
#[expect(
    clippy::too_many_arguments,
    reason = "one attempt's facts, as the queries read them"
)]
fn run_usages(
    id: i64,
    project: i64,
    cluster: i64,
    model: i64,
    gpus: i32,
    min_runtime: i64,
    (charged, elapsed): (i64, i64),
    contract: Option<&[i64]>,
) -> Vec<ledger::Usage> {
    let base = ledger::Usage {
        project,
        cluster,
        gpu_model: model,
        gpu_seconds: 0,
        allocated: min_runtime > 0,
        run: Some(id),
        accounted_gpu_seconds: 0,
        contract: None,
    };
    let window = match contract {
        Some(&[c, start, end, covered]) => Some((c, start, end, covered)),
        _ => None,
    };
    ledger::attempt_usages(base, i64::from(gpus), charged, elapsed, window)
}

/// Up to when [`settle`] charges a running run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ChargeUpTo {
    /// The last instant it is known to run ([`LAST_SEEN`]): the periodic charges, and the end
    /// of a run lost with its node or failed.
    LastSeen,
    /// Now: a stop decided now (cancel, preemption, time limit), which the run is charged up
    /// to (docs/design.md section 2) while its agent's last heartbeat may be seconds old
    /// (found by a check: a run stopped at its time limit of 40 s was charged 31).
    Now,
}

/// Charges running runs' time since their last charge (GPU-seconds at their model's billing
/// weight and price while the balance lasts, the rest free: [`ledger::charge_usages`]), in a
/// fixed number of statements however many runs fall due. A starting run is not charged: its
/// attempt counts from its processes' start (an agent's report, Slurm's start of the job),
/// which the pass sets as its start when it confirms them running.
/// When a protected run's charge could not be paid in full, its page says it goes on
/// unallocated (once an attempt). Other ids are skipped. Returns each charged run with its new
/// `charged_s` (seconds of its attempt charged), by ascending id: that write alone does not
/// note the run in `run_changes` (migration ...125), so a pass sets it in its snapshot.
///
/// # Errors
/// Database errors.
async fn settle(
    pool: &PgPool,
    conn: &mut PgConnection,
    site: &Site,
    runs: &[i64],
    upto: ChargeUpTo,
) -> Result<Vec<(i64, i64)>, AppError> {
    let until = match upto {
        ChargeUpTo::LastSeen => format!("LEAST(now(), {LAST_SEEN})"),
        ChargeUpTo::Now => "now()".to_string(),
    };
    let rows: Vec<SettleRow> = sqlx::query_as(
        &format!("SELECT r.id, r.project_id, r.cluster_id, r.gpu_model_id, r.gpus, {MIN_RUNTIME}, r.charged_s, \
                GREATEST(0, floor(extract(epoch FROM {until} - r.started_at)))::BIGINT, {CONTRACT_WINDOW} \
         FROM runs r WHERE r.id = ANY($1) AND r.started_at IS NOT NULL AND r.state = 'running' \
         ORDER BY r.id"),
    )
    .bind(runs)
    .fetch_all(&mut *conn)
    .await?;
    let rows: Vec<_> = rows.into_iter().filter(|r| r.7 > r.6).collect();
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    // Each usage with the index of its row (a run's time may be part prepaid, part charged).
    let (of_row, usages): (Vec<usize>, Vec<ledger::Usage>) = rows
        .iter()
        .enumerate()
        .flat_map(
            |(i, &(id, project, cluster, model, gpus, min_runtime, charged, elapsed, ref c))| {
                run_usages(
                    id,
                    project,
                    cluster,
                    model,
                    gpus,
                    min_runtime,
                    (charged, elapsed),
                    c.as_deref(),
                )
                .into_iter()
                .map(move |u| (i, u))
            },
        )
        .unzip();
    let charges =
        ledger::charge_usages(pool, conn, site, jiff::Timestamp::now(), None, &usages).await?;
    // Seconds at the end of each row's stretch that the balance no longer covered.
    let mut free_s = vec![0i64; rows.len()];
    for ((&i, c), u) in of_row.iter().zip(&charges).zip(&usages) {
        if u.allocated && c.free_gpu_seconds > 0 {
            free_s[i] += c.free_gpu_seconds / i64::from(rows[i].4.max(1));
        }
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let elapsed: Vec<i64> = rows.iter().map(|r| r.7).collect();
    sqlx::query(
        "UPDATE runs SET charged_s = u.e FROM unnest($1::BIGINT[], $2::BIGINT[]) AS u(id, e) WHERE runs.id = u.id",
    )
    .bind(&ids)
    .bind(&elapsed)
    .execute(&mut *conn)
    .await?;
    let (unallocated, free_for): (Vec<i64>, Vec<i64>) = rows
        .iter()
        .zip(&free_s)
        .filter(|&(r, &free)| r.5 > 0 && free > 0)
        .map(|(r, &free)| (r.0, free))
        .unzip();
    if !unallocated.is_empty() {
        // From now on the attempt is unallocated: free, not protected (docs/design.md 2).
        sqlx::query("UPDATE runs SET budget_spent = true WHERE id = ANY($1)")
            .bind(&unallocated)
            .execute(&mut *conn)
            .await?;
        // Stamped when the balance ran out (the stretch's last free seconds before now), where
        // the ledger's free time begins, so the metrics' allocated time ends there too.
        let said = Said::new("event-unallocated");
        sqlx::query(
            "INSERT INTO run_events (run_id, kind, message, attempt, note, at) \
             SELECT r.id, 'unallocated', $2, r.attempt, $3, now() - make_interval(secs => u.s) \
             FROM unnest($1::BIGINT[], $4::BIGINT[]) AS u(id, s) JOIN runs r ON r.id = u.id \
             WHERE NOT EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = r.id AND e.kind = 'unallocated' AND e.attempt = r.attempt) \
             ORDER BY r.id",
        )
        .bind(&unallocated)
        .bind(said.english())
        .bind(said.to_json())
        .bind(&free_for)
        .execute(&mut *conn)
        .await?;
    }
    Ok(ids.into_iter().zip(elapsed).collect())
}

/// Stops a starting or running run: charges its time, releases its GPUs (the core may give
/// them to another run at once; the node's agent starts that one only after this one's process
/// has left them) and asks its agent to send SIGTERM, then SIGKILL after the grace period.
/// `kind` is `preempted`, `cancelled`, `time_limit`, `failed` or `lost`.
///
/// # Errors
/// Database errors.
pub async fn begin_stop(
    conn: &mut PgConnection,
    pool: &PgPool,
    site: &Site,
    run: i64,
    kind: &str,
) -> Result<(), AppError> {
    begin_stops(conn, pool, site, &[run], kind).await
}

/// [`begin_stop`] for many runs with one `kind`, in a fixed number of statements however many
/// there are (a pass may preempt hundreds at once): one charge of them all, one update, one
/// delete of their holds, one notice to the agents; then those whose every process has already
/// exited end at once ([`finish_exited`]).
///
/// # Errors
/// Database errors.
pub async fn begin_stops(
    conn: &mut PgConnection,
    pool: &PgPool,
    site: &Site,
    runs: &[i64],
    kind: &str,
) -> Result<(), AppError> {
    if runs.is_empty() {
        return Ok(());
    }
    // The state change below notes the runs in `run_changes`.
    let upto = match kind {
        "cancelled" | "preempted" | "time_limit" => ChargeUpTo::Now,
        _ => ChargeUpTo::LastSeen,
    };
    settle(pool, conn, site, runs, upto).await?;
    sqlx::query(
        "UPDATE runs SET state = 'stopping', stop_kind = $2, kill_at = now() + make_interval(secs => $3) WHERE id = ANY($1)",
    )
    .bind(runs)
    .bind(kind)
    .bind(site.grace_s as f64)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM gpu_holds WHERE run_id = ANY($1)")
        .bind(runs)
        .execute(&mut *conn)
        .await?;
    notify_agents(conn).await?;
    wake(conn).await?;
    // Only runs with no process left to stop can end now: the others end when their agents
    // report the exits.
    finish_exited(conn, runs).await
}

/// Id, state, stop kind, resumable, every process exited, the run's exit status (the first
/// non-zero one recorded, else 0), whether a process exited unreported (its node lost, or its
/// Slurm job no longer listed, or never started), whether its cluster is run by Slurm, and
/// whether its live agents said they never started any of the attempt's processes, and whether
/// one of them could not because of its node (a fault).
type StopRow = (
    i64,
    String,
    Option<String>,
    bool,
    bool,
    Option<i32>,
    bool,
    bool,
    bool,
    bool,
);

/// Ends each of `runs` that is stopping and whose every process of its current attempt has
/// exited: requeued (preempted or lost, and resumable), or `preempted`, `cancelled`, `failed`
/// or `lost`; the others are left as they are. A fixed number of statements however many
/// there are (a pass can end hundreds of preempted attempts at once): one locking read, one
/// update, and one timeline insert per kind of end.
///
/// # Errors
/// Database errors.
pub async fn finish_exited(conn: &mut PgConnection, runs: &[i64]) -> Result<(), AppError> {
    if runs.is_empty() {
        return Ok(());
    }
    let rows: Vec<StopRow> = sqlx::query_as(
        "SELECT r.id, r.state, r.stop_kind, r.resumable, \
                NOT EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt AND p.proc_state <> 'exited'), \
                (SELECT COALESCE((array_agg(p.exit_code ORDER BY p.exited_at NULLS LAST, p.node_id) FILTER (WHERE p.exit_code <> 0))[1], max(p.exit_code)) FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt), \
                EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt AND p.proc_state = 'exited' AND p.exit_code IS NULL AND NOT p.never_started), \
                EXISTS (SELECT 1 FROM clusters c WHERE c.id = r.cluster_id AND c.executor = 'slurm'), \
                NOT EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt AND NOT p.never_started), \
                EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt AND p.fault IS NOT NULL) \
         FROM runs r WHERE r.id = ANY($1) ORDER BY r.id FOR UPDATE OF r",
    )
    .bind(runs)
    .fetch_all(&mut *conn)
    .await?;
    let (mut ids, mut states, mut codes) = (Vec::new(), Vec::new(), Vec::new());
    // Per timeline kind: the runs and what their entry says.
    let mut entries: BTreeMap<&str, (Vec<i64>, Vec<Said>)> = BTreeMap::new();
    for (id, state, kind, resumable, all_exited, code, unreported, slurm, never_ran, fault) in rows
    {
        if state != "stopping" || !all_exited {
            continue;
        }
        // A process with no exit status was not seen to stop: its node's agent was lost (the
        // placement counts as exited; an agent that comes back stops what is left). A
        // placement whose process never started is not such a process (a gang cancelled while
        // one node's GPUs were still in another run's grace period).
        let (to, kind_text, message) = match kind.as_deref() {
            Some("preempted") if resumable => ("queued", "requeued", "event-requeued-preempted"),
            Some("preempted") => ("preempted", "ended", "event-ended-preempted"),
            // A Slurm job that is no longer listed has no agent to speak of.
            Some("cancelled") if unreported && slurm => {
                ("cancelled", "cancelled", "event-cancelled-job-gone")
            }
            Some("time_limit") if unreported && slurm => {
                ("failed", "failed", "event-time-limit-job-gone")
            }
            // Cancelled between its start decision and its processes' start: the agent had
            // nothing to stop (or was lost before it said so).
            Some("cancelled") if never_ran => {
                ("cancelled", "cancelled", "event-cancelled-before-start")
            }
            Some("cancelled") if unreported => {
                ("cancelled", "cancelled", "event-cancelled-node-lost")
            }
            Some("cancelled") => ("cancelled", "cancelled", "event-cancelled-stopped"),
            Some("time_limit") if unreported => ("failed", "failed", "event-time-limit-node-lost"),
            Some("time_limit") => ("failed", "failed", "event-time-limit-stopped"),
            Some("failed") => ("failed", "failed", "event-gang-failed"),
            Some("lost") if never_ran && fault => {
                ("queued", "requeued", "event-requeued-node-fault")
            }
            Some("lost") if never_ran => ("queued", "requeued", "event-requeued-lost-unstarted"),
            // A gang member's node could not start it while another member ran.
            Some("lost") if fault && resumable => {
                ("queued", "requeued", "event-requeued-gang-fault")
            }
            Some("lost") if fault => ("lost", "lost", "event-lost-gang-fault"),
            Some("lost") if resumable => ("queued", "requeued", "event-requeued-lost"),
            _ => ("lost", "lost", "event-lost"),
        };
        ids.push(id);
        states.push(to);
        codes.push(code);
        let entry = entries.entry(kind_text).or_default();
        entry.0.push(id);
        entry.1.push(Said::new(message));
    }
    if ids.is_empty() {
        return Ok(());
    }
    // A requeued run waits again from now and keeps no stop kind and no exit code (its
    // attempt's stays on the attempt's placements); an ended one keeps them.
    sqlx::query(
        "UPDATE runs SET state = u.s, kill_at = NULL, exit_code = CASE WHEN u.s = 'queued' THEN NULL ELSE u.c END, \
                queued_at = CASE WHEN u.s = 'queued' THEN now() ELSE runs.queued_at END, \
                stop_kind = CASE WHEN u.s = 'queued' THEN NULL ELSE runs.stop_kind END, \
                ended_at = CASE WHEN u.s = 'queued' THEN runs.ended_at ELSE now() END \
         FROM unnest($1::BIGINT[], $2::TEXT[], $3::INT[]) AS u(id, s, c) WHERE runs.id = u.id",
    )
    .bind(&ids)
    .bind(&states)
    .bind(&codes)
    .execute(&mut *conn)
    .await?;
    if states.contains(&"queued") {
        wake(conn).await?;
    }
    for (kind, (runs, said)) in entries {
        super::events(conn, &runs, kind, &said, &vec![None; runs.len()]).await?;
    }
    Ok(())
}

/// Id, project, cluster, model, GPUs, minimum runtime, charged s, elapsed s, any failure,
/// largest exit status, the capacity contract it runs on ([`CONTRACT_WINDOW`]), and when it
/// ended: its last process's exit (as its agent reported it, so a run whose process ended
/// while the server was down is not charged for the outage), at the latest now.
type DoneRow = (
    i64,
    i64,
    i64,
    i64,
    i32,
    i64,
    i64,
    i64,
    bool,
    Option<i32>,
    Option<Vec<i64>>,
    time::OffsetDateTime,
);

/// Ends, in a few set-based statements, every starting or running attempt whose processes all
/// exited (a starting one counted, as its charge, from its processes' start, which becomes its
/// `started_at`): succeeded when every exit status is 0, else failed with the status of the process
/// that was recorded exiting first with a non-zero one (a gang's other processes were stopped
/// after it, with SIGTERM). Their time is charged with one
/// ledger charge per run (naming it), all written by one insert. Returns how many ended.
///
/// # Errors
/// Database errors.
async fn end_exited_attempts(
    conn: &mut PgConnection,
    pool: &PgPool,
    site: &Site,
    only: Option<&[i64]>,
) -> Result<usize, AppError> {
    // Run states change only in passes and in writes serialised with them, so no row lock.
    let sql = format!(
        "SELECT r.id, r.project_id, r.cluster_id, r.gpu_model_id, r.gpus, {MIN_RUNTIME}, r.charged_s, \
                CASE WHEN r.state = 'starting' \
                     THEN GREATEST(0, floor(extract(epoch FROM max(p.exited_at) - max(p.running_at))))::BIGINT \
                     ELSE GREATEST(0, floor(extract(epoch FROM LEAST(now(), COALESCE(max(p.exited_at), now())) - r.started_at)))::BIGINT END, \
                bool_or(p.exit_code IS DISTINCT FROM 0), COALESCE((array_agg(p.exit_code ORDER BY p.exited_at NULLS LAST, p.node_id) FILTER (WHERE p.exit_code <> 0))[1], max(p.exit_code)), \
                {CONTRACT_WINDOW}, LEAST(now(), COALESCE(max(p.exited_at), now())) \
         FROM runs r JOIN run_placements p ON p.run_id = r.id AND p.attempt = r.attempt \
         WHERE r.state IN ('starting', 'running') {} GROUP BY r.id \
         HAVING bool_and(p.proc_state = 'exited') \
            AND NOT bool_or(p.exit_code IS NULL AND NOT p.never_started) \
            AND NOT bool_or(p.fault IS NOT NULL) ORDER BY r.id",
        among(only)
    );
    let done: Vec<DoneRow> = with_ids(sqlx::query_as(&sql), only)
        .fetch_all(&mut *conn)
        .await?;
    if done.is_empty() {
        return Ok(0);
    }
    let mut usages = Vec::new();
    let (mut ids, mut states, mut codes, mut elapsed_s, mut messages, mut ended) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for (id, project, cluster, model, gpus, min_runtime, charged, elapsed, failed, code, c, end) in
        done
    {
        ended.push(end);
        usages.extend(run_usages(
            id,
            project,
            cluster,
            model,
            gpus,
            min_runtime,
            (charged, elapsed),
            c.as_deref(),
        ));
        ids.push(id);
        states.push(if failed { "failed" } else { "succeeded" });
        codes.push(code);
        elapsed_s.push(elapsed.max(charged));
        messages.push(match code {
            Some(c) if failed => Said::new("event-exited").arg("status", super::exit_said(c)),
            _ => Said::new("event-exited-0"),
        });
    }
    let now = jiff::Timestamp::now();
    ledger::charge_usages(pool, conn, site, now, None, &usages).await?;
    sqlx::query(
        "UPDATE runs SET state = u.s, exit_code = u.c, charged_s = u.e, \
                started_at = n.started, ended_at = GREATEST(u.t, n.started) \
         FROM unnest($1::BIGINT[], $2::TEXT[], $3::INT[], $4::BIGINT[], $5::TIMESTAMPTZ[]) AS u(id, s, c, e, t), \
              LATERAL (SELECT CASE WHEN r.state = 'starting' THEN GREATEST(r.started_at, COALESCE( \
                  (SELECT max(p.running_at) FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt), \
                  r.started_at)) ELSE r.started_at END AS started FROM runs r WHERE r.id = u.id) AS n \
         WHERE runs.id = u.id",
    )
    .bind(&ids)
    .bind(&states)
    .bind(&codes)
    .bind(&elapsed_s)
    .bind(&ended)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM gpu_holds WHERE run_id = ANY($1)")
        .bind(&ids)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO run_events (run_id, kind, message, attempt, note) \
         SELECT u.id, u.s, u.m, r.attempt, u.n FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::JSONB[]) AS u(id, s, m, n) \
         JOIN runs r ON r.id = u.id",
    )
    .bind(&ids)
    .bind(&states)
    .bind(messages.iter().map(Said::english).collect::<Vec<_>>())
    .bind(messages.iter().map(Said::to_json).collect::<Vec<_>>())
    .execute(&mut *conn)
    .await?;
    Ok(ids.len())
}

/// The condition restricting a query over runs `r` to the runs `only` (bound as `$1` by
/// [`with_ids`]), or nothing for every run.
fn among(only: Option<&[i64]>) -> &'static str {
    if only.is_some() {
        "AND r.id = ANY($1)"
    } else {
        ""
    }
}

/// Binds `only` as `$1` when the query was restricted by [`among`].
fn with_ids<'q, O>(
    q: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    only: Option<&'q [i64]>,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    match only {
        Some(ids) => q.bind(ids),
        None => q,
    }
}

/// Handles a node whose agent is gone (silent past the timeout, or replaced by a new agent):
/// the processes of runs placed there count as exited; runs still running elsewhere are
/// stopped, and each ends requeued (resumable) or `lost`.
///
/// # Errors
/// Database errors.
pub async fn lose_node(
    conn: &mut PgConnection,
    pool: &PgPool,
    site: &Site,
    node: i64,
    why: &Said,
) -> Result<(), AppError> {
    // Starting runs none of whose processes was seen to start, on any node: nothing ran, so
    // they are requeued whether or not they are resumable (finish_exited), and their timeline
    // does not count a lost node.
    let never_ran: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT r.id FROM run_placements p JOIN runs r ON r.id = p.run_id AND p.attempt = r.attempt \
         WHERE p.node_id = $1 AND p.proc_state = 'assigned' AND r.state = 'starting' \
         AND NOT EXISTS (SELECT 1 FROM run_placements q WHERE q.run_id = r.id AND q.attempt = r.attempt \
                         AND (q.proc_state = 'running' OR (q.proc_state = 'exited' AND NOT q.never_started)))",
    )
    .bind(node)
    .fetch_all(&mut *conn)
    .await?;
    let runs: Vec<(i64, String)> = sqlx::query_as(
        "UPDATE run_placements p SET proc_state = 'exited', never_started = (p.proc_state = 'assigned') FROM runs r \
         WHERE p.node_id = $1 AND p.proc_state <> 'exited' AND r.id = p.run_id AND p.attempt = r.attempt \
         RETURNING r.id, r.state",
    )
    .bind(node)
    .fetch_all(&mut *conn)
    .await?;
    // Processes of older attempts are gone with the node too.
    sqlx::query("UPDATE run_placements SET proc_state = 'exited' WHERE node_id = $1 AND proc_state <> 'exited'")
        .bind(node)
        .execute(&mut *conn)
        .await?;
    let (mut live, mut stopping) = (Vec::new(), Vec::new());
    for (run, state) in runs {
        match state.as_str() {
            "starting" | "running" => live.push(run),
            "stopping" => stopping.push(run),
            _ => {}
        }
    }
    let ran: Vec<i64> = live
        .iter()
        .copied()
        .filter(|r| !never_ran.contains(r))
        .collect();
    super::events(
        conn,
        &ran,
        "lost",
        &vec![why.clone(); ran.len()],
        &vec![None; ran.len()],
    )
    .await?;
    begin_stops(conn, pool, site, &live, "lost").await?;
    finish_exited(conn, &stopping).await
}

/// For each of `runs`, whose current attempt has a process whose command never ran because of
/// its node (its agent reported a fault, docs/agent-protocol.md section 2): its timeline says
/// which node and why, and each such node that is up is drained with the agent's words as the
/// reason ([`crate::db::inventory::drain_for_fault`]), so the runs sent next go elsewhere
/// instead of failing there one after another. The caller then stops and requeues the runs
/// (nothing ran on that node; a gang's other processes are stopped, as for a lost node).
///
/// # Errors
/// Database errors.
async fn node_faults(conn: &mut PgConnection, runs: &[i64]) -> Result<(), AppError> {
    let faults: Vec<(i64, i64, String, String)> = sqlx::query_as(
        "SELECT DISTINCT ON (r.id) r.id, n.id, n.name, p.fault \
         FROM runs r JOIN run_placements p ON p.run_id = r.id AND p.attempt = r.attempt \
         JOIN nodes n ON n.id = p.node_id \
         WHERE r.id = ANY($1) AND p.fault IS NOT NULL ORDER BY r.id, n.name",
    )
    .bind(runs)
    .fetch_all(&mut *conn)
    .await?;
    let mut drained = HashSet::new();
    for (run, node, name, fault) in &faults {
        tracing::error!(run, node = %name, fault, "the node's agent could not run the process: the run is requeued and the node drained");
        if drained.insert(*node) {
            crate::db::inventory::drain_for_fault(&mut *conn, *node, fault).await?;
        }
    }
    let (ids, said): (Vec<i64>, Vec<Said>) = faults
        .iter()
        .map(|(run, _, name, fault)| {
            (
                *run,
                Said::new("event-node-fault")
                    .arg("node", name)
                    .arg("fault", fault),
            )
        })
        .unzip();
    super::events(conn, &ids, "lost", &said, &vec![None; ids.len()]).await?;
    Ok(())
}

/// Names for messages: projects, nodes and runs' projects.
#[derive(Default)]
struct Names {
    projects: HashMap<i64, String>,
    nodes: HashMap<i64, String>,
    models: HashMap<i64, String>,
    /// Per Slurm cluster: the jobs outside Tranche that hold GPUs, in words.
    outside: HashMap<i64, String>,
    /// Slurm nodes whose GPU indices the snapshot renumbers (jobs outside Tranche hold some of
    /// their GPUs): starts there take the lowest indices free in `gpu_holds` instead.
    renumbered: std::collections::HashSet<i64>,
    /// Nodes Slurm serves: Slurm decides what becomes of jobs on a node it reports down (it
    /// ends them NODE_FAIL when the node is lost, and a node is reported not responding for a
    /// moment after the controller restarts), so the pass does not preempt them for it.
    slurm_nodes: std::collections::HashSet<i64>,
    /// Draining nodes without a live agent: the core sees them down, so does not report them
    /// drained, but they hold nothing once their agent was lost, and a dead host is the
    /// commonest reason to drain one.
    offline_draining: Vec<i64>,
}

/// Builds the snapshot the core schedules from, inside the pass's transaction: the runs from
/// `runs` (kept between passes, [`super::live`]), the rest (models, clusters, nodes, tree,
/// usage, balances, contracts: sized by the site, not by the number of runs) read now.
async fn load_snapshot(
    pool: &PgPool,
    conn: &mut PgConnection,
    site: &Site,
    now: jiff::Timestamp,
    runs: &LiveRuns,
) -> Result<(Snapshot, Names, HashMap<(i64, i64), u32>), AppError> {
    let mut names = Names::default();
    let mut snap = Snapshot::default();
    let models: Vec<(i64, String, i64, i32)> = sqlx::query_as(
        "SELECT id, name, price_per_gpu_hour_minor, billing_weight_milli FROM gpu_models ORDER BY id",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut price_of = HashMap::new();
    for (id, name, price, weight) in models {
        price_of.insert(id, (i64::from(weight), price));
        names.models.insert(id, name.clone());
        snap.models.push(GpuModel {
            id: ModelId(id),
            name,
            price_per_gpu_hour: price,
            billing_weight_milli: i64::from(weight),
        });
    }
    let clusters: Vec<(i64, String, bool, bool)> = sqlx::query_as(
        "SELECT id, name, executor = 'slurm' AND executor_down_since IS NOT NULL, executor = 'slurm' FROM clusters ORDER BY id",
    )
    .fetch_all(&mut *conn)
    .await?;
    // Clusters whose executor does not answer: their waiting runs wait (their reason is written
    // apart, see `executor_down_reasons`); their running runs keep their state.
    let executor_down: std::collections::HashSet<i64> =
        clusters.iter().filter(|c| c.2).map(|c| c.0).collect();
    snap.clusters = clusters
        .into_iter()
        .map(|(id, name, _, slurm)| Cluster {
            id: ClusterId(id),
            name,
            // Slurm runs one GPU count per node in a job.
            uniform_gangs: slurm,
        })
        .collect();
    type NodeRow = (i64, i64, i64, i32, String, bool, String, i32, i64, bool);
    let nodes: Vec<NodeRow> = sqlx::query_as(
        "SELECT n.id, n.cluster_id, n.gpu_model_id, n.gpu_count, n.state, n.agent_session IS NOT NULL, n.name, n.outside_gpus, \
                CASE WHEN n.outside_gpus > 0 THEN (SELECT count(*) FROM gpu_holds h WHERE h.node_id = n.id) ELSE 0 END, \
                c.executor = 'slurm' \
         FROM nodes n JOIN clusters c ON c.id = n.cluster_id ORDER BY n.id",
    )
    .fetch_all(&mut *conn)
    .await?;
    // Jobs outside Tranche on Slurm nodes, for the waiting reasons.
    let outside: Vec<(i64, i64, String, String, String, i32)> = sqlx::query_as(
        "SELECT o.cluster_id, o.job_id, o.name, o.user_name, n.name, o.gpus FROM slurm_outside_jobs o \
         JOIN nodes n ON n.id = o.node_id ORDER BY o.cluster_id, o.job_id, n.name",
    )
    .fetch_all(&mut *conn)
    .await?;
    for (cluster, job, name, user, node, gpus) in outside {
        let words = names.outside.entry(cluster).or_default();
        if !words.is_empty() {
            words.push_str(", ");
        }
        words.push_str(&format!(
            "Slurm job {job} ({}, user {user}) holds {gpus} GPUs on {node}",
            domain::quote(&name)
        ));
    }
    // GPUs of each pool on nodes without a live agent, for the waiting reasons. (A node's
    // holds are counted only where Slurm jobs outside Tranche hold GPUs: counting them for
    // 1,250 nodes made this query 28 ms a pass in the site workload.)
    let mut offline: HashMap<(i64, i64), u32> = HashMap::new();
    for (id, cluster, model, gpus, admin_state, online, name, outside_gpus, held, slurm) in nodes {
        names.nodes.insert(id, name);
        if slurm {
            names.slurm_nodes.insert(id);
        }
        let mut state = match (admin_state.as_str(), online) {
            ("down", _) | (_, false) => NodeState::Down,
            ("draining", _) => NodeState::Draining,
            _ => NodeState::Up,
        };
        // GPUs that Slurm jobs outside Tranche hold are not Tranche's to place: the node
        // counts fewer (never fewer than Tranche's runs hold there), and one they fill takes
        // no new runs.
        let outside = outside_gpus.min(gpus - held as i32).max(0);
        let gpus = if outside == 0 {
            gpus
        } else if outside >= gpus {
            if state == NodeState::Up {
                state = NodeState::Draining;
            }
            gpus
        } else {
            names.renumbered.insert(id);
            gpus - outside
        };
        if !online && admin_state != "down" {
            *offline.entry((cluster, model)).or_default() += gpus as u32;
        }
        if !online && admin_state == "draining" {
            names.offline_draining.push(id);
        }
        snap.nodes.push(Node {
            id: NodeId(id),
            cluster: ClusterId(cluster),
            model: ModelId(model),
            gpus: gpus as u32,
            state,
        });
    }
    let tree: Vec<(i64, Option<i64>, i32, bool, bool, String)> = sqlx::query_as(
        "SELECT t.id, t.parent_id, t.share_bp, t.archived, p.node_id IS NOT NULL, t.name \
         FROM tree_nodes t LEFT JOIN projects p ON p.node_id = t.id ORDER BY t.id",
    )
    .fetch_all(&mut *conn)
    .await?;
    // Billing-weighted usage in the window, kept up to date with the runs (the weights as
    // they are now).
    let usage = runs.usage.weighted(|m| price_of.get(&m).map(|w| w.0));
    let (period_start, _) = ledger::Period::containing(now, site).bounds();
    let mut balances: HashMap<i64, i64> = sqlx::query_as::<_, (i64, i64)>(
        "SELECT project_id, balance_minor FROM ledger_accounts WHERE kind = 'project_budget' AND period_start = $1",
    )
    .bind(period_start)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .collect();
    // Projects with queued allocated runs and no account yet this period get their grant now.
    let need: BTreeSet<i64> = runs
        .waiting
        .values()
        .filter(|w| w.6 > 0)
        .map(|w| w.1)
        .collect();
    for p in need {
        if let std::collections::hash_map::Entry::Vacant(e) = balances.entry(p) {
            let account = ledger::current_account(pool, conn, p, now, site).await?;
            let b: i64 =
                sqlx::query_scalar("SELECT balance_minor FROM ledger_accounts WHERE id = $1")
                    .bind(account)
                    .fetch_one(&mut *conn)
                    .await?;
            e.insert(b);
        }
    }
    let running: Vec<&RunningRow> = runs.running.values().collect();
    // The uncharged part of running allocated runs' minimum runtime is held on the balance.
    for r in running.iter().copied() {
        if r.min_runtime_s > r.charged_s
            && let Some((w, p)) = price_of.get(&r.model)
            && let Some(b) = balances.get_mut(&r.project)
        {
            let gpus = r.node_ids.len() as i64;
            *b -= domain::contract_price(gpus, r.min_runtime_s - r.charged_s, *w, *p).0;
        }
    }
    for (id, parent, share, archived, is_project, name) in tree {
        let share = Share(if archived { 0 } else { share as u32 });
        if is_project {
            names.projects.insert(id, name);
            snap.projects.push(Project {
                id: ProjectId(id),
                parent: parent.map(TreeNodeId),
                share,
                usage_gpu_s: usage.get(&id).copied().unwrap_or(0).max(0),
                balance: Some(balances.get(&id).copied().unwrap_or(0).max(0)),
                unallocated_gpu_cap: None,
                legacy_cap: 0,
            });
        } else {
            snap.tree.push(TreeNode {
                id: TreeNodeId(id),
                parent: parent.map(TreeNodeId),
                share,
            });
        }
    }
    // On renumbered nodes, Tranche's runs hold indices 0.. in the order of their own.
    let mut renumber: HashMap<(i64, i32), u32> = HashMap::new();
    if !names.renumbered.is_empty() {
        let mut held: BTreeMap<i64, Vec<i32>> = BTreeMap::new();
        for r in running.iter().copied() {
            for (n, g) in r.node_ids.iter().zip(&r.gpu_indices) {
                if names.renumbered.contains(n) {
                    held.entry(*n).or_default().push(*g);
                }
            }
        }
        for (n, mut gs) in held {
            gs.sort_unstable();
            for (i, g) in gs.into_iter().enumerate() {
                renumber.insert((n, g), i as u32);
            }
        }
    }
    for r in running {
        let mut placement: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
        for (n, g) in r.node_ids.iter().zip(&r.gpu_indices) {
            let g = renumber.get(&(*n, *g)).copied().unwrap_or(*g as u32);
            placement.entry(*n).or_default().push(g);
        }
        snap.running.push(RunningRun {
            id: RunId(r.id),
            project: ProjectId(r.project),
            cluster: ClusterId(r.cluster),
            model: ModelId(r.model),
            placement: placement.into_iter().map(|(n, g)| (NodeId(n), g)).collect(),
            started_at: r.started_at,
            min_runtime_s: r.min_runtime_s,
            time_limit_s: r.time_limit_s,
            priority: r.priority,
            contract: r.contract.map(ContractId),
            non_preemptible: false,
        });
    }
    snap.waiting = runs
        .waiting
        .values()
        .copied()
        .filter(|w| !executor_down.contains(&w.2))
        .map(
            |(id, project, cluster, model, gpus, queued, min_rt, limit, priority)| WaitingRun {
                id: RunId(id),
                project: ProjectId(project),
                cluster: ClusterId(cluster),
                model: ModelId(model),
                gpus: gpus as u32,
                submitted_at: queued,
                min_runtime_s: min_rt,
                time_limit_s: limit,
                priority,
            },
        )
        .collect();
    let contracts: Vec<(i64, i64, i64, i64, i32, i64, i64)> = sqlx::query_as(
        "SELECT id, project_id, cluster_id, gpu_model_id, gpus, extract(epoch FROM starts_at)::BIGINT, \
                extract(epoch FROM ends_at)::BIGINT FROM contracts WHERE state = 'active' AND ends_at > now() ORDER BY id",
    )
    .fetch_all(&mut *conn)
    .await?;
    snap.contracts = contracts
        .into_iter()
        .map(|(id, project, cluster, model, gpus, start, end)| Contract {
            id: ContractId(id),
            project: ProjectId(project),
            cluster: ClusterId(cluster),
            model: ModelId(model),
            gpus: gpus as u32,
            start,
            end,
        })
        .collect();
    Ok((snap, names, offline))
}

/// The preemption reason in words, with names (the run it made room for is shown apart).
fn preempt_said(reason: &PreemptReason, names: &Names) -> Said {
    let node = |n: &NodeId| names.nodes.get(&n.0).cloned().unwrap_or_default();
    let project = |p: &ProjectId| {
        names
            .projects
            .get(&p.0)
            .cloned()
            .unwrap_or_else(|| p.to_string())
    };
    match reason {
        PreemptReason::NodeDraining { node: n } => {
            Said::new("preempt-node-draining").arg("node", node(n))
        }
        PreemptReason::NodeDown { node: n } => Said::new("preempt-node-down").arg("node", node(n)),
        PreemptReason::Unallocated => Said::new("preempt-unallocated"),
        PreemptReason::FairShare { for_project } => {
            Said::new("preempt-fair-share").arg("project", project(for_project))
        }
        PreemptReason::Entitlement { for_project } => {
            Said::new("preempt-entitlement").arg("project", project(for_project))
        }
        PreemptReason::Contract { contract } => {
            Said::new("preempt-contract").arg("contract", contract.to_string())
        }
        PreemptReason::LegacyQuota => Said::new("preempt-legacy-quota"),
    }
}

/// The waiting reason in words, with names, money and live agents.
/// Fingerprints of what a waiting reason's words name besides the reason
/// ([`super::live::WrittenReason::context`]), computed once a pass.
struct ReasonContexts<'a> {
    /// The names of projects, nodes and models and the currency, together.
    names: u64,
    /// Per cluster, its jobs outside Tranche in words.
    outside: HashMap<i64, u64>,
    offline: &'a HashMap<(i64, i64), u32>,
}

impl<'a> ReasonContexts<'a> {
    fn new(names: &Names, offline: &'a HashMap<(i64, i64), u32>, currency: &str) -> Self {
        use std::hash::{DefaultHasher, Hash, Hasher};
        fn sorted(m: &HashMap<i64, String>) -> Vec<(&i64, &String)> {
            let mut v: Vec<_> = m.iter().collect();
            v.sort_unstable();
            v
        }
        let mut h = DefaultHasher::new();
        (
            sorted(&names.projects),
            sorted(&names.nodes),
            sorted(&names.models),
        )
            .hash(&mut h);
        currency.hash(&mut h);
        let outside = names
            .outside
            .iter()
            .map(|(cluster, words)| {
                let mut h = DefaultHasher::new();
                words.hash(&mut h);
                (*cluster, h.finish())
            })
            .collect();
        Self {
            names: h.finish(),
            outside,
            offline,
        }
    }

    /// The context of a waiting run's words: that of its pool, hashed once a pass for each
    /// pool (`memo`; a site's 50,000 waiting runs share a few pools).
    fn of(&self, run: &WaitingRun, memo: &mut HashMap<(i64, i64), u64>) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        *memo.entry((run.cluster.0, run.model.0)).or_insert_with(|| {
            let mut h = DefaultHasher::new();
            self.names.hash(&mut h);
            self.outside.get(&run.cluster.0).hash(&mut h);
            self.offline.get(&(run.cluster.0, run.model.0)).hash(&mut h);
            h.finish()
        })
    }
}

fn wait_message(
    reason: &WaitReason,
    run: &WaitingRun,
    offline: &HashMap<(i64, i64), u32>,
    names: &Names,
    currency: &str,
) -> String {
    let words = wait_words(reason, run, offline, names, currency);
    match (reason, names.outside.get(&run.cluster.0)) {
        // A node that jobs outside Tranche fill counts as draining in the snapshot, and the
        // GPUs they hold are not counted as installed (a run larger than the rest is not one
        // that can never start: found by a new-user check).
        (
            WaitReason::NodesDraining { gpus } | WaitReason::NeverFits { gpus, .. },
            Some(outside),
        ) => format!(
            "waiting for {gpus} GPUs: the free ones are on nodes being drained or filled by Slurm jobs outside Tranche; outside Tranche, {outside}"
        ),
        (
            WaitReason::Gpus { .. }
            | WaitReason::FairShare { .. }
            | WaitReason::OverShare { .. }
            | WaitReason::IdleGpus { .. }
            | WaitReason::Reserved { .. }
            | WaitReason::BehindReservation { .. },
            Some(outside),
        ) => format!("{words}; outside Tranche, {outside}"),
        _ => words,
    }
}

/// The waiting reason with the names its words need, for pages in any language
/// ([`crate::i18n::wait`]).
fn wait_note(
    reason: &WaitReason,
    run: &WaitingRun,
    offline: &HashMap<(i64, i64), u32>,
    names: &Names,
) -> sqlx::types::Json<crate::i18n::wait::WaitNote> {
    let projects = match reason {
        WaitReason::FairShare { ahead, .. } => ahead
            .as_slice()
            .iter()
            .map(|p| {
                names
                    .projects
                    .get(&p.0)
                    .cloned()
                    .unwrap_or_else(|| format!("project {p}"))
            })
            .collect(),
        _ => vec![],
    };
    sqlx::types::Json(crate::i18n::wait::WaitNote::Pass {
        reason: reason.clone(),
        model: names.models.get(&run.model.0).cloned().unwrap_or_default(),
        offline: offline
            .get(&(run.cluster.0, run.model.0))
            .copied()
            .unwrap_or(0),
        projects,
        outside: names.outside.get(&run.cluster.0).cloned(),
    })
}

/// The waiting reason in words, before jobs outside Tranche are named.
fn wait_words(
    reason: &WaitReason,
    run: &WaitingRun,
    offline: &HashMap<(i64, i64), u32>,
    names: &Names,
    currency: &str,
) -> String {
    let off = offline
        .get(&(run.cluster.0, run.model.0))
        .copied()
        .unwrap_or(0);
    let model = names.models.get(&run.model.0).cloned().unwrap_or_default();
    match reason {
        WaitReason::GpusDown { up: 0, .. } if off > 0 => format!(
            "no live agent: none of the {off} {model} GPUs of its cluster has a running node agent; it starts once agents serve its nodes"
        ),
        WaitReason::GpusDown {
            gpus,
            up: installed,
        } if off > 0 => format!(
            "no live agent on enough nodes: it needs {gpus} {model} GPUs, {installed} are on nodes with a running node agent and {off} on nodes without one"
        ),
        WaitReason::Gpus { gpus, free } if off > 0 => format!(
            "waiting for {gpus} {model} GPUs: {free} free on nodes with a running node agent; {off} more are on nodes without one"
        ),
        WaitReason::Budget { needs, has } => format!(
            "budget exhausted: its minimum runtime costs {}, the project has {} left this period (it may still run unallocated with minimum runtime 0)",
            Money(*needs).display(currency),
            Money(*has).display(currency)
        ),
        other => other
            .describe_with(&|p| {
                names
                    .projects
                    .get(&p.0)
                    .cloned()
                    .unwrap_or_else(|| format!("project {p}"))
            })
            .replace("GPUs of this model", &format!("{model} GPUs")),
    }
}

/// Runs one scheduling pass in one transaction: nodes whose agent went quiet are lost, runs past
/// their time limit are stopped, running runs' time is charged, then the core decides and every
/// start, preemption and waiting reason is written. Serialised across replicas by a
/// transaction-level advisory lock.
///
/// # Errors
/// Database errors; an invalid snapshot (a bug) as an internal error.
pub async fn pass(state: &AppState) -> Result<PassReport, AppError> {
    pass_with(state, true).await
}

/// A pass that writes waiting runs' reasons only when `write_reasons` (the loop writes them at
/// most every [`REASONS_EVERY`] under load: the projects ahead and the estimates change with
/// most passes that start runs, and rewriting thousands of rows each time would slow them).
async fn pass_with(state: &AppState, write_reasons: bool) -> Result<PassReport, AppError> {
    let mut live = state.live_runs.lock().await;
    let result = pass_inner(state, write_reasons, &mut live).await;
    if result.is_err() {
        // What the pass read inside its rolled-back transaction may never have committed.
        live.clear();
    }
    result
}

async fn pass_inner(
    state: &AppState,
    write_reasons: bool,
    live: &mut super::live::LiveCache,
) -> Result<PassReport, AppError> {
    let pool = &state.pool;
    let site = &state.site;
    let began = std::time::Instant::now();
    let mut report = PassReport::default();
    let mut tx = pool.begin().await?;
    serialize_with_passes(&mut tx).await?;
    // One clock for the pass, read once the lock is held: the core's `now`, and the stamp of
    // its starts. Instants the core compares are whole seconds: start times are rounded up
    // and `now` down, so protection is never cut short by rounding. (Timeline entries carry
    // the time they are written, which is never earlier.)
    let now_db: time::OffsetDateTime = sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(&mut *tx)
        .await?;
    let now = ledger::to_jiff(now_db);
    let now_s = now.as_second();

    // Agents silent past the timeout lose their nodes. Silence counts from the later of the
    // last heartbeat and the end of the server's last outage: a pass finding the previous one
    // older than `watch_gap_s` starts a new watch, so agents that could not reach a stopped
    // server get a full timeout to sync again (docs/agent-protocol.md, "Timeouts").
    let lost: Vec<(i64, String)> = sqlx::query_as(
        "WITH watch AS (UPDATE snapshot_cursor SET \
            watch_since = CASE WHEN pass_at IS NULL OR watch_since IS NULL \
                OR pass_at < now() - make_interval(secs => $2) THEN now() ELSE watch_since END, \
            pass_at = now() RETURNING watch_since) \
         UPDATE nodes SET agent_session = NULL FROM watch WHERE agent_session IS NOT NULL \
         AND GREATEST(agent_seen_at, watch.watch_since) < now() - make_interval(secs => $1) \
         AND cluster_id IN (SELECT id FROM clusters WHERE executor = 'agent') \
         RETURNING nodes.id, nodes.name",
    )
    .bind(site.agent_timeout_s as f64)
    .bind(site.watch_gap_s() as f64)
    .fetch_all(&mut *tx)
    .await?;
    for (node, name) in &lost {
        tracing::warn!(node = %name, "node agent silent past the timeout; node lost");
        let why = Said::new("event-node-silent")
            .arg("node", name)
            .arg("seconds", site.agent_timeout_s.to_string());
        lose_node(&mut tx, pool, site, *node, &why).await?;
    }
    report.nodes_lost = lost.len();

    // What agents reported since the last pass. Attempts whose processes all exited by
    // themselves end together (the common case, in a few statements); then, one by one,
    // stopping runs whose processes all left end, and gangs with a failed member still
    // running are stopped.
    let clock = std::time::Instant::now();
    // Exits reported since the last pass (noted by a trigger, migration ...120): only those
    // runs can have ended or have a failed gang member, except once a minute and on a first
    // pass, which look at every starting or running run.
    let mut exits: Vec<i64> = sqlx::query_scalar("DELETE FROM placement_exits RETURNING run_id")
        .fetch_all(&mut *tx)
        .await?;
    // Likewise the placements whose processes left `assigned` (migration ...620): only their
    // runs can have become running.
    let mut left_assigned: Vec<i64> =
        sqlx::query_scalar("DELETE FROM placement_starts RETURNING run_id")
            .fetch_all(&mut *tx)
            .await?;
    left_assigned.sort_unstable();
    left_assigned.dedup();
    crate::executor::fold_running_changes(&mut tx).await?;
    exits.sort_unstable();
    exits.dedup();
    let sweep = live.exit_sweep_due(EXIT_SWEEP_EVERY);
    let only = (!sweep).then_some(exits.as_slice());
    let ended = end_exited_attempts(&mut tx, pool, site, only).await?;
    // Stopping runs whose processes all left (few: the index on live states finds them), then
    // gangs with a failed member still running.
    let mut reaped: Vec<(i64, String)> = sqlx::query_as(
        "SELECT r.id, r.state FROM runs r WHERE r.state = 'stopping' AND \
            NOT EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt AND p.proc_state <> 'exited')",
    )
    .fetch_all(&mut *tx)
    .await?;
    // A process gone with no exit status (its agent stopped listing it: docs/agent-protocol.md
    // section 2) makes its run lost, as a lost node does, not failed; so does a process whose
    // command never ran because of its node (a fault), whose node is drained.
    let sql = format!(
        "SELECT r.id, CASE WHEN EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt \
                    AND p.fault IS NOT NULL) THEN 'fault' \
                WHEN EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt \
                    AND p.proc_state = 'exited' AND p.exit_code IS NULL AND NOT p.never_started) \
                THEN 'gone' ELSE r.state END \
         FROM runs r WHERE r.state IN ('starting', 'running') {} \
         AND EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt \
            AND p.proc_state = 'exited' AND p.exit_code IS DISTINCT FROM 0)",
        among(only)
    );
    reaped.extend(
        with_ids(sqlx::query_as::<_, (i64, String)>(&sql), only)
            .fetch_all(&mut *tx)
            .await?,
    );
    reaped.sort_unstable();
    let (mut stopping, mut failed, mut gone, mut faulted) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (run, state) in &reaped {
        match state.as_str() {
            "stopping" => stopping.push(*run),
            "gone" => gone.push(*run),
            "fault" => faulted.push(*run),
            _ => failed.push(*run),
        }
    }
    finish_exited(&mut tx, &stopping).await?;
    begin_stops(&mut tx, pool, site, &failed, "failed").await?;
    if !faulted.is_empty() {
        node_faults(&mut tx, &faulted).await?;
        begin_stops(&mut tx, pool, site, &faulted, "lost").await?;
        finish_exited(&mut tx, &faulted).await?;
    }
    if !gone.is_empty() {
        let said = Said::new("event-process-gone");
        super::events(
            &mut tx,
            &gone,
            "lost",
            &vec![said; gone.len()],
            &vec![None; gone.len()],
        )
        .await?;
        begin_stops(&mut tx, pool, site, &gone, "lost").await?;
        // Those whose processes all left end at once (requeued when resumable).
        finish_exited(&mut tx, &gone).await?;
    }
    report.ended = ended + reaped.len();
    // Gangs whose GPUs the processes just ended have freed start now, together.
    release_gangs(&mut tx).await?;
    report.timings_ms[0] = clock.elapsed().as_millis() as u64;
    // A run's attempt counts from its processes' start (the last of a gang's), not from its
    // placement: the wait for a previous run's grace period on its GPUs, or for Slurm to start
    // the job, is neither charged (starting runs are not) nor taken from its time limit or
    // minimum runtime. Agents report a start at once; the Slurm bridge records Slurm's own
    // start of the job.
    // Only runs whose placements left `assigned` since the last pass can have, except when
    // the exits are swept (once a minute, and on a first pass).
    let only_started = (!sweep).then_some(left_assigned.as_slice());
    let sql = format!(
        "UPDATE runs r SET state = 'running', started_at = GREATEST(r.started_at, COALESCE( \
             (SELECT max(p.running_at) FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt), r.started_at)) \
         WHERE r.state = 'starting' {} \
         AND NOT EXISTS (SELECT 1 FROM run_placements p WHERE p.run_id = r.id AND p.attempt = r.attempt AND p.proc_state = 'assigned') \
         RETURNING r.id",
        among(only_started)
    );
    let mut confirm = sqlx::query_scalar(&sql);
    if let Some(ids) = only_started {
        confirm = confirm.bind(ids);
    }
    let confirmed: Vec<i64> = confirm.fetch_all(&mut *tx).await?;
    if !confirmed.is_empty() {
        sqlx::query(
            "INSERT INTO run_events (run_id, kind, message, attempt, note) \
             SELECT r.id, 'running', 'its processes are running', r.attempt, '{\"key\": \"event-running\"}' \
             FROM runs r WHERE r.id = ANY($1)",
        )
        .bind(&confirmed)
        .execute(&mut *tx)
        .await?;
    }

    // Runs past their time limit and runs due a charge, from the starting and running runs
    // brought up to date (every starting or running run holds its GPUs, so the cache has it):
    // no scan of the running runs. Stopping runs changes them, which a second refresh reads
    // back before the core sees them, with the usage just posted; the new charges are set in
    // the snapshot as they are written (they note no change).
    let clock = std::time::Instant::now();
    let mut refresh = live.refresh(&mut tx).await?;
    report.snapshot_ms[0] = clock.elapsed().as_millis() as u64;
    let expired = live.runs().past_time_limit(now);
    let most = live
        .charge_slice
        .size(CHARGES_BUDGET, CHARGES_PER_PASS_MIN, CHARGES_PER_PASS);
    let (mut due, charges_left) = live.runs().charge_due(now, CHARGE_EVERY_S, most);
    report.charges_left = charges_left;
    // Stopping a run settles it.
    due.retain(|r| expired.binary_search(r).is_err());
    super::events(
        &mut tx,
        &expired,
        "time_limit",
        &vec![Said::new("event-time-limit"); expired.len()],
        &vec![None; expired.len()],
    )
    .await?;
    begin_stops(&mut tx, pool, site, &expired, "time_limit").await?;
    report.timed_out = expired.len();
    report.next_time_limit = live.runs().next_time_limit(now);
    let charging = std::time::Instant::now();
    let charges = settle(pool, &mut tx, site, &due, ChargeUpTo::LastSeen).await?;
    live.charge_slice.record(due.len(), charging.elapsed());
    live.set_charged(&charges);
    if !expired.is_empty() || !due.is_empty() {
        refresh = match (refresh, live.refresh(&mut tx).await?) {
            (Refresh::Incremental(a), Refresh::Incremental(b)) => Refresh::Incremental(a + b),
            _ => Refresh::Full,
        };
    }
    report.refresh = Some(refresh);
    let charged = !due.is_empty();
    report.snapshot_ms[1] = clock.elapsed().as_millis() as u64 - report.snapshot_ms[0];
    let (mut snap, names, offline) = load_snapshot(pool, &mut tx, site, now, live.runs()).await?;
    snap.reserved = std::mem::take(&mut live.reserved);
    snap.short_load = live.short_load(&mut tx).await?;
    snap.policy.short_run_blocking_percent = site.short_run_blocking_percent;
    report.timings_ms[1] = clock.elapsed().as_millis() as u64;
    report.snapshot_ms[2] = report.timings_ms[1] - report.snapshot_ms[0] - report.snapshot_ms[1];
    let clock = std::time::Instant::now();
    snap.validate()
        .map_err(|e| AppError::Internal(anyhow::anyhow!("invalid snapshot: {e}")))?;
    let outcome = scheduler::schedule(&snap, now_s);
    live.reserved = outcome.reserved();
    report.timings_ms[2] = clock.elapsed().as_millis() as u64;
    let clock = std::time::Instant::now();
    // The moves that fit what is left of the pass's budget, or as long as the pass took to
    // decide them if that is longer; the next pass, at once, the rest.
    let spent = began.elapsed();
    let most = live.move_slice.size(
        PASS_BUDGET.saturating_sub(spent).max(spent),
        MOVES_PER_PASS_MIN,
        MOVES_PER_PASS,
    );
    let (applied, moves_left) = outcome.moves_within(most);
    let (decisions, cut) = outcome.decisions.split_at(applied);
    report.moves_left = moves_left;
    // Reasons follow from every move the core decided: with some left, the pass that applies
    // the last of them writes them.
    let write_reasons = write_reasons && moves_left == 0;

    let mut starts: Vec<i64> = Vec::new();
    let mut contracts: Vec<Option<i64>> = Vec::new();
    let mut covered: Vec<Option<i32>> = Vec::new();
    let mut messages: Vec<Said> = Vec::new();
    let mut hold_nodes: Vec<i64> = Vec::new();
    let mut hold_gpus: Vec<i32> = Vec::new();
    let mut hold_runs: Vec<i64> = Vec::new();
    let mut place_runs: Vec<i64> = Vec::new();
    let mut place_nodes: Vec<i64> = Vec::new();
    let mut place_gpus: Vec<String> = Vec::new();
    let by_id: HashMap<RunId, &WaitingRun> = snap.waiting.iter().map(|w| (w.id, w)).collect();
    // Preemptions first, all together (their timeline entries in one statement, their stops in
    // a fixed number, [`begin_stops`]): the starts below take the GPUs they free.
    let (mut preempted, mut preempt_said_of, mut preempt_for) =
        (Vec::new(), Vec::new(), Vec::new());
    for decision in decisions {
        let Decision::Preempt {
            run,
            reason,
            for_run,
        } = decision
        else {
            continue;
        };
        if let PreemptReason::NodeDown { node } = reason
            && names.slurm_nodes.contains(&node.0)
        {
            continue;
        }
        preempted.push(run.0);
        preempt_said_of.push(preempt_said(reason, &names));
        preempt_for.push(for_run.map(|r| r.0));
        if let Some(kind) = serde_json::to_value(reason)
            .ok()
            .and_then(|v| v["kind"].as_str().map(str::to_string))
        {
            state.metrics.preempted(&kind);
        }
    }
    if !preempted.is_empty() {
        super::events(
            &mut tx,
            &preempted,
            "preempted",
            &preempt_said_of,
            &preempt_for,
        )
        .await?;
        begin_stops(&mut tx, pool, site, &preempted, "preempted").await?;
        report.preempted = preempted.len();
    }
    // Runs a contract's window found running are on it from now on (the core's adoption).
    let (mut adopted, mut adopted_by) = (Vec::new(), Vec::new());
    for decision in decisions {
        if let Decision::Adopt { run, contract } = decision {
            adopted.push(run.0);
            adopted_by.push(contract.0);
        }
    }
    if !adopted.is_empty() {
        let on: Vec<i64> = sqlx::query_scalar(
            "UPDATE runs r SET contract_id = u.c, contract_gpus = NULL FROM unnest($1::BIGINT[], $2::BIGINT[]) AS u(id, c) \
             WHERE r.id = u.id AND r.state IN ('starting', 'running') AND r.contract_id IS DISTINCT FROM u.c RETURNING r.id",
        )
        .bind(&adopted)
        .bind(&adopted_by)
        .fetch_all(&mut *tx)
        .await?;
        let said: Vec<Said> = adopted
            .iter()
            .zip(&adopted_by)
            .filter(|(run, _)| on.contains(run))
            .map(|(_, c)| Said::new("event-on-contract").arg("contract", c.to_string()))
            .collect();
        let runs: Vec<i64> = adopted.into_iter().filter(|r| on.contains(r)).collect();
        super::events(&mut tx, &runs, "contract", &said, &vec![None; runs.len()]).await?;
        report.adopted = runs.len();
    }
    report.writes_ms[0] = clock.elapsed().as_millis() as u64;
    let writes_clock = std::time::Instant::now();
    for decision in decisions {
        match decision {
            Decision::Preempt { .. } => {}
            Decision::Start {
                run,
                placement,
                contract,
                contract_gpus,
                ..
            } => {
                let mut words = Vec::new();
                for (node, gpus) in placement {
                    let gpus = if names.renumbered.contains(&node.0) {
                        free_indices(&mut tx, node.0, gpus.len(), &hold_nodes, &hold_gpus).await?
                    } else {
                        gpus.clone()
                    };
                    let gpus = &gpus;
                    let list: Vec<String> = gpus.iter().map(u32::to_string).collect();
                    words.push(
                        Said::new("event-place")
                            .arg(
                                "node",
                                names.nodes.get(&node.0).cloned().unwrap_or_default(),
                            )
                            .arg("gpus", list.join(", ")),
                    );
                    for g in gpus {
                        hold_nodes.push(node.0);
                        hold_gpus.push(*g as i32);
                        hold_runs.push(run.0);
                    }
                    place_runs.push(run.0);
                    place_nodes.push(node.0);
                    place_gpus.push(format!("{{{}}}", list.join(",")));
                }
                starts.push(run.0);
                if let Some(w) = by_id.get(run) {
                    state
                        .metrics
                        .admission_wait(w.min_runtime_s, (now_s - w.submitted_at) as f64);
                }
                contracts.push(contract.map(|c| c.0));
                // NULL: the contract covers the whole gang.
                let gpus: usize = placement.iter().map(|(_, g)| g.len()).sum();
                covered.push(
                    contract
                        .filter(|_| (*contract_gpus as usize) < gpus)
                        .map(|_| *contract_gpus as i32),
                );
                let gpus: usize = placement.iter().map(|(_, g)| g.len()).sum();
                messages.push(match contract {
                    Some(c) if (*contract_gpus as usize) < gpus => {
                        Said::new("event-started-contract-part")
                            .arg("places", words)
                            .arg("covered", contract_gpus.to_string())
                            .arg("gpus", gpus.to_string())
                            .arg("contract", c.0.to_string())
                    }
                    Some(c) => Said::new("event-started-contract")
                        .arg("places", words)
                        .arg("contract", c.0.to_string()),
                    None => Said::new("event-started-on").arg("places", words),
                });
            }
            Decision::Reserve { .. } | Decision::Adopt { .. } => {}
        }
    }
    report.started = starts.len();
    if !starts.is_empty() {
        sqlx::query(
            "UPDATE runs SET state = 'starting', attempt = attempt + 1, started_at = $3, contract_id = u.c, contract_gpus = u.g, \
                    charged_s = 0, budget_spent = false, wait_reason = NULL, estimated_start = NULL, stop_kind = NULL, kill_at = NULL, exit_code = NULL \
             FROM unnest($1::BIGINT[], $2::BIGINT[], $4::INT[]) AS u(id, c, g) WHERE runs.id = u.id AND runs.state = 'queued'",
        )
        .bind(&starts)
        .bind(&contracts)
        .bind(now_db)
        .bind(&covered)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO gpu_holds (node_id, gpu_index, run_id) SELECT * FROM unnest($1::BIGINT[], $2::INT[], $3::BIGINT[])",
        )
        .bind(&hold_nodes)
        .bind(&hold_gpus)
        .bind(&hold_runs)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO run_placements (run_id, attempt, node_id, gpu_indices) \
             SELECT u.r, runs.attempt, u.n, u.g::INT[] FROM unnest($1::BIGINT[], $2::BIGINT[], $3::TEXT[]) AS u(r, n, g) \
             JOIN runs ON runs.id = u.r",
        )
        .bind(&place_runs)
        .bind(&place_nodes)
        .bind(&place_gpus)
        .execute(&mut *tx)
        .await?;
        hold_gangs(&mut tx, &starts).await?;
        // Stamped no earlier than the entries this pass wrote before it (a requeue of the same
        // run after its node was lost), so a timeline sorted by time keeps the order.
        sqlx::query(
            "INSERT INTO run_events (run_id, kind, message, attempt, at, note) \
             SELECT u.r, 'started', u.m, runs.attempt, GREATEST(runs.started_at, clock_timestamp()), u.n \
             FROM unnest($1::BIGINT[], $2::TEXT[], $3::JSONB[]) AS u(r, m, n) JOIN runs ON runs.id = u.r",
        )
        .bind(&starts)
        .bind(messages.iter().map(Said::english).collect::<Vec<_>>())
        .bind(messages.iter().map(Said::to_json).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await?;
        notify_agents(&mut tx).await?;
    }
    report.writes_ms[1] = writes_clock.elapsed().as_millis() as u64;
    live.move_slice
        .record(report.started + report.preempted, clock.elapsed());

    // A started run's reason was set NULL with its start: it is no longer the one written.
    for run in &starts {
        live.forget_reason(*run);
    }
    // Runs whose start was left for the next pass wait still.
    report.waiting = outcome
        .waiting
        .iter()
        .filter(|w| by_id.contains_key(&w.run))
        .count()
        + cut
            .iter()
            .filter(|d| matches!(d, Decision::Start { .. }))
            .count();
    // Reasons are worded and written only in the passes that write them, only those whose
    // reason or context differs from what this process last wrote (at 50,000 waiting runs most
    // stay the same), and a slice of them sized to REASONS_BUDGET, queue order first: the
    // rest follow in the next passes, which come at once (the structured note follows from
    // the same reason as the English text).
    let reasons_clock = std::time::Instant::now();
    let most = live
        .reason_slice
        .size(REASONS_BUDGET, REASONS_PER_PASS_MIN, REASONS_PER_PASS);
    // The comparison of every waiting run is the same whatever the slice; the slice's cost,
    // which sizes the next one, is its wording and writing.
    let mut changed = Vec::new();
    if write_reasons {
        let contexts = ReasonContexts::new(&names, &offline, &site.currency);
        let mut memo = HashMap::new();
        for w in &outcome.waiting {
            let Some(run) = by_id.get(&w.run) else {
                continue;
            };
            let estimate = w.estimated_start.filter(|&t| t > now_s);
            let context = contexts.of(run, &mut memo);
            if live.reason_written(w.run.0, &w.reason, estimate, context) {
                continue;
            }
            if changed.len() == most {
                report.reasons_left += 1;
                continue;
            }
            changed.push((w, *run, estimate, context));
        }
    }
    report.reasons_ms[0] = reasons_clock.elapsed().as_millis() as u64;
    let reasons_clock = std::time::Instant::now();
    let mut ids = Vec::with_capacity(changed.len());
    let mut reasons = Vec::with_capacity(changed.len());
    let mut estimates: Vec<Option<i64>> = Vec::with_capacity(changed.len());
    let mut notes = Vec::with_capacity(changed.len());
    let mut written = Vec::with_capacity(changed.len());
    for &(w, run, estimate, context) in &changed {
        ids.push(w.run.0);
        reasons.push(wait_message(
            &w.reason,
            run,
            &offline,
            &names,
            &site.currency,
        ));
        notes.push(wait_note(&w.reason, run, &offline, &names));
        estimates.push(estimate);
        let key = super::live::WrittenReason {
            reason: w.reason.clone(),
            estimate,
            context,
        };
        written.push((w.run.0, key));
    }
    if !ids.is_empty() {
        sqlx::query(
            "UPDATE runs SET wait_reason = u.w, estimated_start = to_timestamp(u.e), wait_note = u.n \
             FROM unnest($1::BIGINT[], $2::TEXT[], $3::BIGINT[], $4::JSONB[]) AS u(id, w, e, n) \
             WHERE runs.id = u.id AND runs.state = 'queued' \
             AND (runs.wait_reason IS DISTINCT FROM u.w OR runs.estimated_start IS DISTINCT FROM to_timestamp(u.e))",
        )
        .bind(&ids)
        .bind(&reasons)
        .bind(&estimates)
        .bind(&notes)
        .execute(&mut *tx)
        .await?;
    }
    report.reasons_ms[1] = reasons_clock.elapsed().as_millis() as u64;
    report.reasons_written = ids.len();
    live.reason_slice.record(ids.len(), reasons_clock.elapsed());
    // Draining nodes are empty only once every move the core decided is applied.
    if moves_left == 0 && (!outcome.drained_nodes.is_empty() || !names.offline_draining.is_empty())
    {
        let drained: Vec<i64> = outcome
            .drained_nodes
            .iter()
            .map(|n| n.0)
            .chain(names.offline_draining.iter().copied())
            .collect();
        crate::db::drains::mark_emptied(&mut tx, &drained).await?;
    }
    if write_reasons {
        let waiting: std::collections::HashSet<i64> =
            outcome.waiting.iter().map(|w| w.run.0).collect();
        live.note_reasons(written, &waiting);
        if executor_down_reasons(&mut tx, site).await? {
            // Those runs' reasons were overwritten: write them all again once it answers.
            live.forget_reasons();
        }
    }
    let changed = report.started
        + report.preempted
        + report.timed_out
        + report.ended
        + report.nodes_lost
        + report.adopted
        > 0
        || charged;
    let writes_clock = std::time::Instant::now();
    if live.holds_due(changed, HOLDS_EVERY) {
        super::refresh_holds(&mut tx).await?;
    }
    report.writes_ms[2] = writes_clock.elapsed().as_millis() as u64;
    let writes_clock = std::time::Instant::now();
    tx.commit().await?;
    report.writes_ms[3] = writes_clock.elapsed().as_millis() as u64;
    report.timings_ms[3] = clock.elapsed().as_millis() as u64;
    Ok(report)
}

/// The `count` lowest GPU indices of `node` that neither `gpu_holds` nor this pass's starts so
/// far (`hold_nodes`, `hold_gpus`) hold: where a start on a renumbered Slurm node goes (Slurm
/// chooses the devices; Tranche's indices only count GPUs there).
async fn free_indices(
    conn: &mut PgConnection,
    node: i64,
    count: usize,
    hold_nodes: &[i64],
    hold_gpus: &[i32],
) -> Result<Vec<u32>, sqlx::Error> {
    let held: Vec<i32> = sqlx::query_scalar("SELECT gpu_index FROM gpu_holds WHERE node_id = $1")
        .bind(node)
        .fetch_all(&mut *conn)
        .await?;
    let taken: std::collections::HashSet<i32> = held
        .into_iter()
        .chain(
            hold_nodes
                .iter()
                .zip(hold_gpus)
                .filter(|(n, _)| **n == node)
                .map(|(_, g)| *g),
        )
        .collect();
    Ok((0..64u32)
        .filter(|g| !taken.contains(&(*g as i32)))
        .take(count)
        .collect())
}

/// Writes the waiting reason of queued runs on clusters whose executor does not answer.
async fn executor_down_reasons(conn: &mut PgConnection, site: &Site) -> Result<bool, sqlx::Error> {
    let down: Vec<(i64, String, time::OffsetDateTime, Option<String>)> = sqlx::query_as(
        "SELECT id, name, executor_down_since, executor_error FROM clusters \
         WHERE executor = 'slurm' AND executor_down_since IS NOT NULL",
    )
    .fetch_all(&mut *conn)
    .await?;
    let any = !down.is_empty();
    for (id, name, since, error) in down {
        let since = ledger::to_jiff(since).to_zoned(site.time_zone.clone());
        let reason = format!(
            "the Slurm controller of cluster {name} does not answer since {} ({}); new starts wait, running runs keep their state",
            since.strftime("%H:%M"),
            error.as_deref().unwrap_or_default()
        );
        let note = sqlx::types::Json(crate::i18n::wait::WaitNote::ExecutorDown {
            cluster: name.clone(),
            since: since.timestamp().as_second(),
            error: error.clone().unwrap_or_default(),
        });
        sqlx::query(
            "UPDATE runs SET wait_reason = $2, estimated_start = NULL, wait_note = $3 WHERE cluster_id = $1 AND state = 'queued' \
             AND wait_reason IS DISTINCT FROM $2",
        )
        .bind(id)
        .bind(&reason)
        .bind(&note)
        .execute(&mut *conn)
        .await?;
    }
    Ok(any)
}

/// Starts the scheduler service, the agents' wake-up relay and the Slurm bridges on this
/// replica. The service runs passes only while it holds the leader lock (the bridges theirs);
/// other replicas wait their turn.
pub fn spawn(state: AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let relay = tokio::spawn(relay_assignments(state.clone()));
    let slurm = crate::executor::slurm::spawn(state.clone());
    let wakes = tokio::spawn(relay_wakes(state.clone()));
    let leader = tokio::spawn(async move {
        loop {
            if let Err(e) = lead(&state).await {
                tracing::warn!(error = %e, "scheduler loop interrupted; retrying");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    vec![relay, wakes, leader, slurm]
}

/// Least time between two wake-ups this replica sends for its submissions.
pub const WAKE_COALESCE: Duration = Duration::from_millis(20);

/// Turns this replica's [`AppState::wake`] signals into `NOTIFY tranche_wake`, at most one per
/// [`WAKE_COALESCE`]: the first at once, those that come meanwhile together. (A lost one is
/// covered by the loop's tick.)
async fn relay_wakes(state: AppState) {
    loop {
        state.wake.notified().await;
        if let Err(e) = sqlx::query("SELECT pg_notify($1, '')")
            .bind(WAKE_CHANNEL)
            .execute(&state.pool)
            .await
        {
            tracing::warn!(error = %e, "cannot wake the scheduler; its tick will");
        }
        tokio::time::sleep(WAKE_COALESCE).await;
    }
}

/// Relays `NOTIFY tranche_assign` into this replica's watch channel, waking agents' long polls.
async fn relay_assignments(state: AppState) {
    loop {
        let result: Result<(), sqlx::Error> = async {
            let mut listener = PgListener::connect_with(&state.pool).await?;
            listener.listen(ASSIGN_CHANNEL).await?;
            loop {
                listener.recv().await?;
                state.assignments.send_modify(|v| *v = v.wrapping_add(1));
            }
        }
        .await;
        if let Err(e) = result {
            tracing::debug!(error = %e, "assignment relay reconnecting");
        }
        // A missed notification costs at most one long-poll period; wake everyone to be safe.
        state.assignments.send_modify(|v| *v = v.wrapping_add(1));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits for the leader lock, then runs passes on wake-ups and ticks while holding it.
async fn lead(state: &AppState) -> Result<(), AppError> {
    let mut lock_conn = state.pool.acquire().await?.detach();
    loop {
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(LEADER_LOCK)
            .fetch_one(&mut lock_conn)
            .await?;
        if got {
            break;
        }
        tokio::time::sleep(Duration::from_secs(state.site.tick_s as u64)).await;
    }
    tracing::info!("scheduler loop active on this replica");
    let mut listener = PgListener::connect_with(&state.pool).await?;
    listener.listen(WAKE_CHANNEL).await?;
    let tick = Duration::from_secs(state.site.tick_s as u64);
    let mut reasons_written = std::time::Instant::now() - REASONS_EVERY;
    let mut health_sampled = std::time::Instant::now();
    loop {
        let began = std::time::Instant::now();
        let write_reasons = began.duration_since(reasons_written) >= REASONS_EVERY;
        let result = pass_with(state, write_reasons).await;
        state.metrics.pass_duration(began.elapsed().as_secs_f64());
        let since = health_sampled.elapsed();
        if since >= Duration::from_secs(crate::metrics::history::HEALTH_SAMPLE_S) {
            health_sampled = std::time::Instant::now();
            if let Err(e) =
                crate::metrics::history::sample_health(&state.pool, since.as_secs_f64()).await
            {
                tracing::warn!(error = %e, "cannot record the GPUs' health for the metrics");
            }
        }
        // Reasons left past REASONS_PER_PASS keep the next pass writing, and charges left past
        // CHARGES_PER_PASS the next charging, without waiting.
        let reasons_left = result.as_ref().map_or(0, |r| r.reasons_left);
        let charges_left = result.as_ref().map_or(0, |r| r.charges_left);
        // A pass that left moves wrote no reasons: the one that applies the last of them does.
        let moves_left = result.as_ref().map_or(0, |r| r.moves_left);
        let next_time_limit = result.as_ref().ok().and_then(|r| r.next_time_limit);
        if write_reasons && result.is_ok() && reasons_left == 0 && moves_left == 0 {
            reasons_written = began;
        }
        match result {
            Ok(r) if r.started + r.preempted + r.timed_out + r.nodes_lost + r.ended > 0 => {
                tracing::info!(
                    elapsed_ms = began.elapsed().as_millis() as u64,
                    timings_ms = ?r.timings_ms,
                    snapshot_ms = ?r.snapshot_ms,
                    writes_ms = ?r.writes_ms,
                    reasons_ms = ?r.reasons_ms,
                    ended = r.ended,
                    started = r.started,
                    preempted = r.preempted,
                    timed_out = r.timed_out,
                    charges_left = r.charges_left,
                    moves_left = r.moves_left,
                    nodes_lost = r.nodes_lost,
                    waiting = r.waiting,
                    "scheduling pass"
                );
            }
            Ok(r) => tracing::debug!(
                elapsed_ms = began.elapsed().as_millis() as u64,
                timings_ms = ?r.timings_ms,
                snapshot_ms = ?r.snapshot_ms,
                writes_ms = ?r.writes_ms,
                waiting = r.waiting,
                reasons = write_reasons,
                reasons_left,
                charges_left,
                reasons_ms = ?r.reasons_ms,
                "scheduling pass that changed no run"
            ),
            Err(e) => tracing::error!(error = %e, "scheduling pass failed; nothing was applied"),
        }
        // Idle (squatting) flags follow the pass: raised and cleared on the leader only.
        if let Err(e) = super::idle::check(state).await {
            tracing::warn!(error = %e, "idle flag check failed; the next pass retries");
        }
        // Moves left: the next pass at once. Otherwise sleep until woken or the tick (sooner
        // when reasons are due to be written); then take every wake-up already queued, so a
        // burst of submissions costs one pass. The lock connection must still be alive, or
        // another replica may lead now.
        if moves_left > 0 {
            sqlx::query("SELECT 1").execute(&mut lock_conn).await?;
        } else {
            let wait = if reasons_left + charges_left > 0 {
                MIN_PASS_GAP
            } else if write_reasons {
                tick
            } else {
                REASONS_EVERY.min(tick)
            };
            // A time limit falls due on its second, not at the next tick (the run would hold
            // its GPUs, and be charged, up to a tick longer).
            let wait = match next_time_limit {
                Some(at) => {
                    let left_ms = at
                        .saturating_mul(1_000)
                        .saturating_sub(jiff::Timestamp::now().as_millisecond());
                    let left = Duration::from_millis(u64::try_from(left_ms).unwrap_or(0));
                    wait.min(left.max(MIN_PASS_GAP))
                }
                None => wait,
            };
            tokio::select! {
                n = listener.recv() => {
                    n?;
                    tokio::time::sleep(MIN_PASS_GAP.saturating_sub(began.elapsed())).await;
                }
                () = tokio::time::sleep(wait) => {
                    sqlx::query("SELECT 1").execute(&mut lock_conn).await?;
                }
            }
        }
        while listener.next_buffered().is_some() {}
    }
}
