//! The executor boundary (docs/design.md section 9, docs/slurm.md): how the scheduling pass's
//! decisions reach whatever runs the work, and how what happened comes back.
//!
//! The pass writes its decisions to the database: a start is a placement (`run_placements`,
//! `proc_state = 'assigned'`) on nodes and GPUs; a preemption, cancel or time-limit stop is a
//! run in `stopping` with the instant its grace period ends. [`orders`] reads them back as
//! [`Assignment`]s and [`StopOrder`]s for a set of nodes; an executor carries them out and
//! returns [`ProcessReport`]s (running, or exited with a status), which [`record`] writes; the
//! next pass turns them into run states and ledger charges, the same way for every executor.
//!
//! Executors ([`ExecutorKind`], the `clusters.executor` column):
//! - `agent`: Tranche's node agent ([`crate::agent`]). The agent pulls its orders: the sync
//!   call of the agent protocol ([`crate::runs::agents::sync`]) answers with [`orders`] and
//!   records the agent's reports with [`record`].
//! - `slurm`: a Slurm cluster's controller ([`slurm`]). The bridge inside `tranche serve` is an
//!   [`Executor`]: each round it reads the orders of a Slurm cluster's nodes, submits and
//!   cancels jobs with Slurm's command-line tools and reports the jobs' states.
//!
//! A new executor (Kubernetes, say) is a new module implementing [`Executor`].

pub mod slurm;

use std::collections::BTreeMap;
use std::future::Future;

use serde::Serialize;
use sqlx::{PgConnection, PgPool};

/// What serves a cluster's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    /// `tranche agent` on each node.
    Agent,
    /// A Slurm cluster's controller, through the bridge in `tranche serve`.
    Slurm,
}

impl ExecutorKind {
    /// The database and API spelling: `agent` or `slurm`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::Agent => "agent",
            ExecutorKind::Slurm => "slurm",
        }
    }
}

impl std::str::FromStr for ExecutorKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "agent" => Ok(ExecutorKind::Agent),
            "slurm" => Ok(ExecutorKind::Slurm),
            other => Err(format!("an executor is agent or slurm, not {other:?}")),
        }
    }
}

/// A process the agent should run.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Hash)]
pub struct Assignment {
    /// Run id.
    pub run: i64,
    /// Attempt (1 for the first start, one more for each requeue).
    pub attempt: i32,
    /// Node id.
    pub node: i64,
    /// Tranche's GPU indices on the node (on Slurm clusters only their number counts: Slurm
    /// chooses the devices).
    pub gpus: Vec<i32>,
    /// The run's command, for `sh -c`.
    pub command: String,
    /// Working directory, if the run names one.
    pub workdir: Option<String>,
    /// Environment: the run's own, its secret values opened.
    pub env: BTreeMap<String, String>,
    /// The submitter's account name: an agent started with `--run-as-submitter` runs the
    /// process as the Unix account of that name (docs/agent-protocol.md section 2).
    pub user: String,
}

/// A process the agent should stop.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Hash)]
pub struct StopOrder {
    /// Run id.
    pub run: i64,
    /// Attempt.
    pub attempt: i32,
    /// Node id.
    pub node: i64,
    /// Seconds left of the grace period: SIGTERM now, kill once it is 0.
    pub grace_s: i64,
}

type DesiredRow = (
    i64,
    i32,
    i64,
    Vec<i32>,
    String,
    i32,
    String,
    Option<String>,
    sqlx::types::Json<BTreeMap<String, String>>,
    Option<i64>,
    Option<Vec<u8>>,
    String,
);

/// The orders for `nodes` (the pass's decisions as they stand): assignments (with their secret environment opened with
/// `key`: the executor is the only place they go) and stops. A gang's placements held until
/// all its GPUs are free are no order yet ([`crate::runs::service`], "gang start barrier").
///
/// # Errors
/// Database errors.
pub async fn orders(
    pool: &PgPool,
    key: &crate::auth::secrets::SecretKey,
    nodes: &[i64],
    default_grace: i64,
) -> Result<(Vec<Assignment>, Vec<StopOrder>), sqlx::Error> {
    let rows: Vec<DesiredRow> = sqlx::query_as(
        "SELECT p.run_id, p.attempt, p.node_id, p.gpu_indices, r.state, r.attempt, r.command, r.workdir, r.env, \
                GREATEST(0, ceil(extract(epoch FROM r.kill_at - now())))::BIGINT, r.secret_env, \
                (SELECT u.name FROM users u WHERE u.id = r.submitted_by) \
         FROM run_placements p JOIN runs r ON r.id = p.run_id \
         WHERE p.node_id = ANY($1) AND p.proc_state <> 'exited' AND NOT p.held ORDER BY p.run_id, p.node_id",
    )
    .bind(nodes)
    .fetch_all(pool)
    .await?;
    Ok(to_orders(rows, key, default_grace))
}

/// The orders for `nodes` that changed after version `since` (docs/agent-protocol.md,
/// delta syncs), and the version they bring the caller to: every placement whose order was
/// given or changed with a version in `since + 1 ..= version`, still not exited. A placement
/// that exited is left out (its agent reported it, or never started it). `version` is the
/// highest version on these nodes, read first: versions are drawn under the pass lock, so all
/// orders numbered up to it have committed and the second read sees them. `full` is true
/// when `since` is `None` or 0 (a new session) or beyond `version` (the server's versions
/// went back, say after a restore): the answer is then the whole desired state, as
/// [`orders`] gives it.
///
/// # Errors
/// Database errors.
pub async fn orders_since(
    pool: &PgPool,
    key: &crate::auth::secrets::SecretKey,
    nodes: &[i64],
    default_grace: i64,
    since: Option<i64>,
) -> Result<(Vec<Assignment>, Vec<StopOrder>, i64, bool), sqlx::Error> {
    // A restore records the order version below which no agent's view can be trusted
    // (`site_flags` row `orders_full_before`): the restored orders are older than what agents
    // saw since, so a delta would never carry them. Syncs from before it get the whole state,
    // and versions count from it.
    let (version, full_before): (i64, i64) = sqlx::query_as(
        "SELECT GREATEST(coalesce(max(m.v), 0), f.before)::BIGINT, f.before FROM unnest($1::BIGINT[]) AS n(id) \
         CROSS JOIN (SELECT coalesce((SELECT value::BIGINT FROM site_flags WHERE name = 'orders_full_before'), 0)::BIGINT AS before) f, \
         LATERAL (SELECT max(p.order_version) AS v FROM run_placements p WHERE p.node_id = n.id) m \
         GROUP BY f.before",
    )
    .bind(nodes)
    .fetch_one(pool)
    .await?;
    let (from, full) = match since {
        Some(s) if (1..=version).contains(&s) && s >= full_before => (s, false),
        _ => (-1, true),
    };
    let rows: Vec<DesiredRow> = sqlx::query_as(
        "SELECT p.run_id, p.attempt, p.node_id, p.gpu_indices, r.state, r.attempt, r.command, r.workdir, r.env, \
                GREATEST(0, ceil(extract(epoch FROM r.kill_at - now())))::BIGINT, r.secret_env, \
                (SELECT u.name FROM users u WHERE u.id = r.submitted_by) \
         FROM run_placements p JOIN runs r ON r.id = p.run_id \
         WHERE p.node_id = ANY($1) AND p.order_version > $2 AND p.order_version <= $3 AND p.proc_state <> 'exited' AND NOT p.held \
         ORDER BY p.run_id, p.node_id",
    )
    .bind(nodes)
    .bind(from)
    .bind(version)
    .fetch_all(pool)
    .await?;
    let (assignments, stops) = to_orders(rows, key, default_grace);
    Ok((assignments, stops, version, full))
}

/// Turns placement rows into assignments (their run starting or running in this attempt) and
/// stops (the rest).
fn to_orders(
    rows: Vec<DesiredRow>,
    key: &crate::auth::secrets::SecretKey,
    default_grace: i64,
) -> (Vec<Assignment>, Vec<StopOrder>) {
    let mut assignments = Vec::new();
    let mut stops = Vec::new();
    for (run, attempt, node, gpus, state, current, command, workdir, env, grace, sealed, user) in
        rows
    {
        if (state == "starting" || state == "running") && attempt == current {
            let mut env = env.0;
            match crate::runs::open_secret_env(key, sealed.as_deref()) {
                Ok(secret) => env.extend(secret),
                // The values are never logged; the run starts without them.
                Err(e) => {
                    tracing::error!(run, error = %e, "cannot open the run's secret environment")
                }
            }
            assignments.push(Assignment {
                run,
                attempt,
                node,
                gpus,
                command,
                workdir,
                env,
                user,
            });
        } else {
            stops.push(StopOrder {
                run,
                attempt,
                node,
                grace_s: if state == "stopping" && attempt == current {
                    grace.unwrap_or(default_grace)
                } else {
                    0
                },
            });
        }
    }
    (assignments, stops)
}

/// What an executor knows about one process (agent) or job (Slurm) on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessReport {
    /// Run id.
    pub run: i64,
    /// Attempt.
    pub attempt: i32,
    /// Node id.
    pub node: i64,
    /// `None` while it runs; once it ended, its exit status (128 + the signal for a signal,
    /// as a shell shows it; `None` inside when unknown).
    pub exited: Option<Option<i32>>,
    /// For an exit, how many seconds before the report it happened (0: now); the placement's
    /// `exited_at` is that instant, which ends and charges its run (a run whose process ended
    /// while the server was down is not charged for the outage).
    pub ago_s: i64,
    /// For an exit: why the command never ran when its node is at fault (an agent's report,
    /// docs/agent-protocol.md section 2); the placement then counts as never started, and the
    /// pass requeues its run and drains the node. Ignored on the exit of a process already
    /// recorded running (it ran).
    pub fault: Option<String>,
}

/// The count and digest of the placements running on `nodes` ([`crate::agent::running_digest`]
/// of their `(run, attempt, node)`): the totals the scheduling pass folded
/// ([`fold_running_changes`]) plus the changes noted since, in one statement, so the cost is
/// a lookup per node whatever the nodes run (docs/agent-protocol.md, "Running-set digest").
/// Sees the caller's transaction's own changes.
///
/// # Errors
/// Database errors.
pub async fn nodes_running_digest(
    conn: &mut PgConnection,
    nodes: &[i64],
) -> Result<(i64, i64), sqlx::Error> {
    sqlx::query_as(
        "SELECT coalesce(sum(c), 0)::BIGINT, mod(mod(coalesce(sum(d), 0), $2) + $2, $2)::BIGINT FROM ( \
             SELECT running_count AS c, running_digest AS d FROM node_running WHERE node_id = ANY($1) \
             UNION ALL \
             SELECT d_count, d_digest FROM node_running_changes WHERE node_id = ANY($1)) AS x",
    )
    .bind(nodes)
    .bind(crate::agent::DIGEST_MODULUS)
    .fetch_one(conn)
    .await
}

/// Folds the changes of running placements noted since the last call into each node's count
/// and digest (`node_running`). Called by the scheduling pass, one at a time, so no two
/// writers update a node's totals; changes of transactions still open stay for the next.
///
/// # Errors
/// Database errors.
pub async fn fold_running_changes(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH moved AS (DELETE FROM node_running_changes RETURNING node_id, d_count, d_digest), \
              s AS (SELECT node_id, sum(d_count) AS c, mod(mod(sum(d_digest), $1) + $1, $1) AS d \
                    FROM moved GROUP BY node_id) \
         INSERT INTO node_running (node_id, running_count, running_digest) \
         SELECT node_id, c, d FROM s ORDER BY node_id \
         ON CONFLICT (node_id) DO UPDATE SET \
             running_count = node_running.running_count + EXCLUDED.running_count, \
             running_digest = mod(node_running.running_digest + EXCLUDED.running_digest, $1)",
    )
    .bind(crate::agent::DIGEST_MODULUS)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes reports in one statement: an assigned placement becomes running or exited, a running
/// one exited with its status. Returns how many placements changed (the caller wakes the pass
/// when any did).
///
/// # Errors
/// Database errors.
pub async fn record(
    conn: &mut PgConnection,
    reports: &[ProcessReport],
) -> Result<u64, sqlx::Error> {
    if reports.is_empty() {
        return Ok(0);
    }
    let runs: Vec<i64> = reports.iter().map(|r| r.run).collect();
    let attempts: Vec<i32> = reports.iter().map(|r| r.attempt).collect();
    let nodes: Vec<i64> = reports.iter().map(|r| r.node).collect();
    let exited: Vec<bool> = reports.iter().map(|r| r.exited.is_some()).collect();
    let codes: Vec<Option<i32>> = reports.iter().map(|r| r.exited.flatten()).collect();
    let ago: Vec<i64> = reports.iter().map(|r| r.ago_s.max(0)).collect();
    let faults: Vec<Option<&str>> = reports
        .iter()
        .map(|r| r.exited.and(r.fault.as_deref()))
        .collect();
    // The exit instant, never before the placement began running (clocks of a restarted
    // agent aside, a process cannot end before it ran).
    Ok(sqlx::query(
        "UPDATE run_placements p SET proc_state = CASE WHEN u.x THEN 'exited' ELSE 'running' END, \
                exit_code = CASE WHEN u.x THEN u.c ELSE p.exit_code END, \
                exited_at = CASE WHEN u.x AND u.ago > 0 \
                    THEN GREATEST(clock_timestamp() - make_interval(secs => u.ago), p.running_at) \
                    ELSE p.exited_at END, \
                fault = CASE WHEN u.x AND p.proc_state = 'assigned' THEN u.f ELSE p.fault END, \
                never_started = p.never_started OR (u.x AND u.f IS NOT NULL AND p.proc_state = 'assigned') \
         FROM unnest($1::BIGINT[], $2::INT[], $3::BIGINT[], $4::BOOL[], $5::INT[], $6::BIGINT[], $7::TEXT[]) AS u(r, a, n, x, c, ago, f) \
         WHERE p.run_id = u.r AND p.attempt = u.a AND p.node_id = u.n \
         AND (p.proc_state = 'assigned' OR (u.x AND p.proc_state <> 'exited'))",
    )
    .bind(&runs)
    .bind(&attempts)
    .bind(&nodes)
    .bind(&exited)
    .bind(&codes)
    .bind(&ago)
    .bind(&faults)
    .execute(conn)
    .await?
    .rows_affected())
}

/// Why an executor could not act this round.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// It does not answer (a timeout, a refused connection): nothing is known of this round;
    /// runs keep their state and new starts wait.
    #[error("{0}")]
    Unreachable(String),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Applying what the executor reported failed (database errors inside the run service).
    #[error(transparent)]
    App(#[from] crate::error::AppError),
}

/// An executor that Tranche drives (push): each round it is given the orders of the nodes it
/// serves and carries them out. (The agent protocol is the pull form of the same boundary:
/// agents fetch [`orders`] and send reports for [`record`].)
pub trait Executor {
    /// Which kind it is.
    fn kind(&self) -> ExecutorKind;

    /// One round: follows the executor's view of its nodes into the inventory, starts what
    /// the assignments ask that is not started yet (once: a start that may have reached the
    /// executor is looked up before it is tried again), signals and then kills what the stop
    /// orders ask, and records what it learns about every ordered process or job.
    ///
    /// # Errors
    /// [`ExecutorError::Unreachable`] when the executor does not answer; database errors.
    fn round(
        &mut self,
        assignments: &[Assignment],
        stops: &[StopOrder],
    ) -> impl Future<Output = Result<(), ExecutorError>> + Send;
}
