//! Drains for repair (docs/design.md section 3.7, docs/operations.md): an admin drains a node
//! with a reason; the scheduling core places nothing new there and requeues its runs as each
//! passes its minimum runtime; the pass records when the node first held nothing (empty, ready
//! for repair); the admin returns it to service. Every drain is a row of `node_drains`, so the
//! drains that emptied by themselves can be counted against those where an admin had to stop
//! a protected run ([`counts`]).
//!
//! The writes (drain, return) are [`crate::db::inventory::drain_node`] and
//! [`crate::db::inventory::return_node`], audited as `node.drain` and `node.return`.

use sqlx::{PgConnection, PgPool};

/// One drain of a node.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Drain {
    /// Drain id.
    pub id: i64,
    /// The node.
    pub node_id: i64,
    /// Why the admin drained it.
    pub reason: String,
    /// Who drained it (user name); `None` for the system.
    pub drained_by: Option<String>,
    /// When (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub drained_at: time::OffsetDateTime,
    /// When the node first held no run (UTC): empty, ready for repair.
    #[serde(with = "time::serde::rfc3339::option")]
    pub emptied_at: Option<time::OffsetDateTime>,
    /// Whether an admin had to stop a protected run on it (or set it down with one on it)
    /// before it emptied.
    pub needed_human: bool,
    /// When it was returned to service (UTC); `None` while the drain is open.
    #[serde(with = "time::serde::rfc3339::option")]
    pub returned_at: Option<time::OffsetDateTime>,
    /// Who returned it.
    pub returned_by: Option<String>,
}

const SELECT: &str = "SELECT d.id, d.node_id, d.reason, a.name AS drained_by, d.drained_at, d.emptied_at, d.needed_human, \
        d.returned_at, b.name AS returned_by \
     FROM node_drains d LEFT JOIN users a ON a.id = d.drained_by LEFT JOIN users b ON b.id = d.returned_by";

/// The drains of a node, newest first (at most 50).
///
/// # Errors
/// Database errors.
pub async fn of_node(pool: &PgPool, node: i64) -> Result<Vec<Drain>, sqlx::Error> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE d.node_id = $1 ORDER BY d.id DESC LIMIT 50"
    ))
    .bind(node)
    .fetch_all(pool)
    .await
}

/// The open drain of every node that has one, by node id.
///
/// # Errors
/// Database errors.
pub async fn open(pool: &PgPool) -> Result<std::collections::HashMap<i64, Drain>, sqlx::Error> {
    let rows: Vec<Drain> = sqlx::query_as(&format!("{SELECT} WHERE d.returned_at IS NULL"))
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(|d| (d.node_id, d)).collect())
}

/// Marks the open drains of `nodes` (the draining nodes a scheduling pass found holding no
/// run, and those whose agent is lost) as emptied now, when no process of any attempt is still on them (a stopped run's
/// process may still be in its grace period). Only the first time counts.
///
/// # Errors
/// Database errors.
pub async fn mark_emptied(conn: &mut PgConnection, nodes: &[i64]) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE node_drains d SET emptied_at = now() \
         WHERE d.node_id = ANY($1) AND d.returned_at IS NULL AND d.emptied_at IS NULL \
         AND NOT EXISTS (SELECT 1 FROM run_placements p WHERE p.node_id = d.node_id AND p.proc_state <> 'exited') \
         AND NOT EXISTS (SELECT 1 FROM gpu_holds h WHERE h.node_id = d.node_id)",
    )
    .bind(nodes)
    .execute(conn)
    .await?
    .rows_affected())
}

/// Records that a human had to act on the nodes where run `run` holds GPUs now, if the run is
/// protected (inside its minimum runtime) and such a node is draining and not yet empty: call
/// it before an admin stops the run. Returns the drains marked.
///
/// # Errors
/// Database errors.
pub async fn note_protected_stop(conn: &mut PgConnection, run: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE node_drains d SET needed_human = true FROM runs r \
         WHERE r.id = $1 AND r.state IN ('starting', 'running') \
         AND r.started_at + make_interval(secs => r.min_runtime_s) > now() AND NOT r.budget_spent \
         AND d.returned_at IS NULL AND d.emptied_at IS NULL AND NOT d.needed_human \
         AND d.node_id IN (SELECT node_id FROM gpu_holds WHERE run_id = $1)",
    )
    .bind(run)
    .execute(conn)
    .await?
    .rows_affected())
}

/// Records that a human had to act on draining node `node` (set down while not yet empty) if
/// a protected run still holds GPUs there.
///
/// # Errors
/// Database errors.
pub async fn note_forced_down(conn: &mut PgConnection, node: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE node_drains d SET needed_human = true \
         WHERE d.node_id = $1 AND d.returned_at IS NULL AND d.emptied_at IS NULL AND NOT d.needed_human \
         AND EXISTS (SELECT 1 FROM gpu_holds h JOIN runs r ON r.id = h.run_id WHERE h.node_id = $1 \
                     AND r.started_at + make_interval(secs => r.min_runtime_s) > now() AND NOT r.budget_spent)",
    )
    .bind(node)
    .execute(conn)
    .await?
    .rows_affected())
}

/// How the drains begun in a window ended up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DrainCounts {
    /// Drains begun in the window.
    pub drains: i64,
    /// Those whose node emptied by itself (every run ended, or was requeued past its minimum
    /// runtime) with no admin stopping a protected run.
    pub emptied_by_themselves: i64,
    /// Those where an admin had to stop a protected run (or set the node down with one on it).
    pub needed_human: i64,
    /// Those not empty yet and not returned: still waiting for runs to leave.
    pub in_progress: i64,
}

impl DrainCounts {
    /// Share of the finished drains (emptied by themselves or needing a human) that needed a
    /// human, 0..=1; `None` when none finished. The rollout DESIGN.md cites reported 74% fewer
    /// repairs needing a human than before.
    pub fn needed_human_fraction(&self) -> Option<f64> {
        let finished = self.emptied_by_themselves + self.needed_human;
        (finished > 0).then(|| self.needed_human as f64 / finished as f64)
    }
}

/// Counts the drains begun in `[from, to)`: emptied by themselves versus needing a human (for
/// the metrics page). A drain that needed a human counts there even when it emptied later; a
/// drain returned to service before it emptied, with no human stop, counts in neither.
///
/// # Errors
/// Database errors.
pub async fn counts(
    db: impl sqlx::PgExecutor<'_>,
    from: jiff::Timestamp,
    to: jiff::Timestamp,
) -> Result<DrainCounts, sqlx::Error> {
    let (drains, by_themselves, human, in_progress): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), \
                count(*) FILTER (WHERE emptied_at IS NOT NULL AND NOT needed_human), \
                count(*) FILTER (WHERE needed_human), \
                count(*) FILTER (WHERE emptied_at IS NULL AND returned_at IS NULL AND NOT needed_human) \
         FROM node_drains WHERE drained_at >= $1 AND drained_at < $2",
    )
    .bind(crate::ledger::to_time(from))
    .bind(crate::ledger::to_time(to))
    .fetch_one(db)
    .await?;
    Ok(DrainCounts {
        drains,
        emptied_by_themselves: by_themselves,
        needed_human: human,
        in_progress,
    })
}

#[cfg(test)]
mod tests {
    use super::DrainCounts;

    #[test]
    fn needed_human_fraction_counts_finished_drains_only() {
        let c = DrainCounts {
            drains: 6,
            emptied_by_themselves: 3,
            needed_human: 1,
            in_progress: 2,
        };
        assert_eq!(c.needed_human_fraction(), Some(0.25));
        assert_eq!(DrainCounts::default().needed_human_fraction(), None);
    }
}
