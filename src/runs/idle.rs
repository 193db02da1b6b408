//! Idle (squatting) flags (docs/design.md section 5, docs/operations.md): a running run whose
//! GPUs all report utilization under `TRANCHE_IDLE_UTILIZATION_PERCENT` for longer than
//! `TRANCHE_IDLE_AFTER_S` is flagged to its submitter and its project's leads (notification,
//! and e-mail when SMTP is set), with the GPU-hours it has held idle so far and their value at
//! the model's price. A lead may stop the run with a reason (audited as `run.idle_stop`). The
//! flag clears when utilization comes back or the attempt ends.
//!
//! Three parts: [`observe`] runs inside an agent's heartbeat and keeps `runs.idle_since`;
//! [`check`] runs after each scheduling pass (on the leader only) and raises and clears flags;
//! [`stop`] is the lead's action.

use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::auth::{Account, Parents};
use crate::config::Site;
use crate::db::audit;
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n::notice::Notice;
use crate::state::AppState;

/// Records, for the running runs holding GPUs on `nodes`, whether all their GPUs (on every node
/// of the gang) are now under `threshold_pct` percent: `idle_since` is set to now when they
/// all went under (kept while they stay under), and cleared when any GPU is busy or unknown.
/// One statement; it writes only runs whose idleness changed.
///
/// # Errors
/// Database errors.
pub async fn observe(
    conn: &mut PgConnection,
    nodes: &[i64],
    threshold_pct: u8,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "WITH touched AS (SELECT DISTINCT run_id FROM gpu_holds WHERE node_id = ANY($1)), \
              r AS (SELECT h.run_id, bool_and(coalesce(n.gpu_utilization[h.gpu_index + 1] < $2, false)) AS idle \
                    FROM gpu_holds h JOIN nodes n ON n.id = h.node_id \
                    WHERE h.run_id IN (SELECT run_id FROM touched) GROUP BY h.run_id) \
         UPDATE runs SET idle_since = CASE WHEN r.idle THEN now() END, idle_attempt = runs.attempt \
         FROM r WHERE runs.id = r.run_id AND runs.state = 'running' \
         AND CASE WHEN r.idle THEN runs.idle_since IS NULL OR runs.idle_attempt IS DISTINCT FROM runs.attempt \
                  ELSE runs.idle_since IS NOT NULL END",
    )
    .bind(nodes)
    .bind(i16::from(threshold_pct))
    .execute(&mut *conn)
    .await?
    .rows_affected())
}

/// GPU-hours held idle: `gpus` x `seconds` / 3600, as text with up to two decimals.
pub fn idle_gpu_hours(gpus: i64, seconds: i64) -> String {
    domain::format_hours(gpus.saturating_mul(seconds.max(0)))
}

/// An idle flag as pages and the API show it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Flag {
    /// Flag id.
    pub id: i64,
    /// The run.
    pub run_id: i64,
    /// Its attempt.
    pub attempt: i32,
    /// Project id and name.
    pub project_id: i64,
    /// Project name.
    pub project: String,
    /// Submitter's user id.
    #[serde(skip)]
    pub submitted_by: i64,
    /// Submitter's name.
    pub submitter: String,
    /// GPUs the run holds.
    pub gpus: i32,
    /// GPU model name.
    pub gpu_model: String,
    /// Since when all its GPUs were under the threshold (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub idle_since: time::OffsetDateTime,
    /// When it was flagged (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub flagged_at: time::OffsetDateTime,
    /// Seconds idle so far (to the query's instant, or to the clearing).
    pub idle_s: i64,
    /// GPU-seconds held idle so far (GPUs x `idle_s`).
    pub idle_gpu_seconds: i64,
    /// Their value at the model's billing weight and price, minor units; 0 for a free
    /// (unallocated) run, which is charged nothing.
    pub idle_value_minor: i64,
    /// Whether the run is free (unallocated, or past its budget): charged nothing.
    pub free: bool,
    /// `None` while open; `recovered`, `ended` or `stopped`.
    pub cleared_why: Option<String>,
    /// The stop reason a lead gave.
    pub stop_reason: Option<String>,
    #[serde(skip)]
    weight_milli: i32,
    #[serde(skip)]
    price_minor: i64,
}

impl Flag {
    /// GPU-hours held idle so far, as text.
    pub fn gpu_hours(&self) -> String {
        idle_gpu_hours(i64::from(self.gpus), self.idle_s)
    }
    /// The value of the idle GPU-time, as text in `currency`; "free (charged nothing)" in the
    /// current language for a free run.
    pub fn value(&self, currency: &str) -> String {
        if self.free {
            return crate::i18n::t("idle-value-free");
        }
        Money(self.idle_value_minor).display(currency)
    }
}

const FLAG_SELECT: &str = "SELECT f.id, f.run_id, f.attempt, r.project_id, t.name AS project, r.submitted_by, u.name AS submitter, \
        f.gpus, m.name AS gpu_model, f.idle_since, f.flagged_at, \
        GREATEST(0, floor(extract(epoch FROM coalesce(f.cleared_at, now()) - f.idle_since)))::BIGINT AS idle_s, \
        0::BIGINT AS idle_gpu_seconds, 0::BIGINT AS idle_value_minor, (r.min_runtime_s = 0 OR r.budget_spent) AS free, \
        f.cleared_why, f.stop_reason, \
        m.billing_weight_milli AS weight_milli, m.price_per_gpu_hour_minor AS price_minor \
     FROM idle_flags f JOIN runs r ON r.id = f.run_id JOIN tree_nodes t ON t.id = r.project_id \
     JOIN users u ON u.id = r.submitted_by JOIN gpu_models m ON m.id = r.gpu_model_id";

fn priced(mut flags: Vec<Flag>) -> Vec<Flag> {
    for f in &mut flags {
        f.idle_gpu_seconds = i64::from(f.gpus) * f.idle_s;
        f.idle_value_minor = if f.free {
            0
        } else {
            domain::contract_price(
                i64::from(f.gpus),
                f.idle_s,
                i64::from(f.weight_milli),
                f.price_minor,
            )
            .0
        };
    }
    flags
}

/// Whether `actor` may see flags of `project`'s run submitted by `submitted_by`.
fn may_see(actor: &Account, parents: &Parents, project: i64, submitted_by: i64) -> bool {
    super::may_view(actor, parents, project, submitted_by)
}

/// Open flags `actor` may see (their own runs', their projects', their subtree's; admins and
/// finance all), optionally of one project, longest idle first.
///
/// # Errors
/// Database errors.
pub async fn open_flags(
    pool: &PgPool,
    actor: &Account,
    parents: &Parents,
    project: Option<i64>,
) -> Result<Vec<Flag>, sqlx::Error> {
    let rows: Vec<Flag> = sqlx::query_as(&format!(
        "{FLAG_SELECT} WHERE f.cleared_at IS NULL AND ($1::BIGINT IS NULL OR r.project_id = $1) ORDER BY f.idle_since, f.id LIMIT 500"
    ))
    .bind(project)
    .fetch_all(pool)
    .await?;
    Ok(priced(
        rows.into_iter()
            .filter(|f| may_see(actor, parents, f.project_id, f.submitted_by))
            .collect(),
    ))
}

/// The open flags of one project's runs, longest idle first (for its page, whose viewers may
/// all see them).
///
/// # Errors
/// Database errors.
pub async fn project_flags(pool: &PgPool, project: i64) -> Result<Vec<Flag>, sqlx::Error> {
    let rows: Vec<Flag> = sqlx::query_as(&format!(
        "{FLAG_SELECT} WHERE f.cleared_at IS NULL AND r.project_id = $1 ORDER BY f.idle_since, f.id LIMIT 500"
    ))
    .bind(project)
    .fetch_all(pool)
    .await?;
    Ok(priced(rows))
}

/// The flags of one run, newest first (for its page).
///
/// # Errors
/// Database errors.
pub async fn of_run(pool: &PgPool, run: i64) -> Result<Vec<Flag>, sqlx::Error> {
    let rows: Vec<Flag> = sqlx::query_as(&format!(
        "{FLAG_SELECT} WHERE f.run_id = $1 ORDER BY f.id DESC LIMIT 50"
    ))
    .bind(run)
    .fetch_all(pool)
    .await?;
    Ok(priced(rows))
}

/// Raises and clears flags; returns the ids of the flags raised. Run after each scheduling
/// pass by the leader: a flag clears within a pass of utilization coming back (the heartbeat
/// cleared `idle_since`) or of its attempt ending, and a run is flagged within a pass of
/// being idle for `site.idle_after_s`. Each new flag notifies the run's submitter and every
/// lead on its project's path to the root, and e-mails them when SMTP is configured.
///
/// # Errors
/// Database errors.
pub async fn check(state: &AppState) -> Result<Vec<i64>, AppError> {
    let pool = &state.pool;
    let site = &state.site;
    let mut tx = pool.begin().await?;
    // A stale idle mark of an attempt that ended never counts.
    sqlx::query(
        "UPDATE runs SET idle_since = NULL WHERE idle_since IS NOT NULL AND state <> 'running'",
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE idle_flags f SET cleared_at = now(), \
                cleared_why = CASE WHEN r.state = 'running' AND r.attempt = f.attempt THEN 'recovered' ELSE 'ended' END \
         FROM runs r WHERE r.id = f.run_id AND f.cleared_at IS NULL \
         AND NOT (r.state = 'running' AND r.attempt = f.attempt AND r.idle_attempt = f.attempt AND r.idle_since IS NOT NULL)",
    )
    .execute(&mut *tx)
    .await?;
    let raised: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO idle_flags (run_id, attempt, gpus, idle_since) \
         SELECT r.id, r.attempt, r.gpus, r.idle_since FROM runs r \
         WHERE r.idle_since IS NOT NULL AND r.state = 'running' AND r.idle_attempt = r.attempt \
         AND r.idle_since <= now() - make_interval(secs => $1) \
         AND NOT EXISTS (SELECT 1 FROM idle_flags f WHERE f.run_id = r.id AND f.cleared_at IS NULL) \
         ORDER BY r.id ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(site.idle_after_s as f64)
    .fetch_all(&mut *tx)
    .await?;
    let mut mails = Vec::new();
    if !raised.is_empty() {
        let flags: Vec<Flag> = priced(
            sqlx::query_as(&format!("{FLAG_SELECT} WHERE f.id = ANY($1) ORDER BY f.id"))
                .bind(&raised)
                .fetch_all(&mut *tx)
                .await?,
        );
        for f in &flags {
            let note = Notice::Idle {
                run: f.run_id,
                project: f.project.clone(),
                gpus: f.gpus,
                gpu_model: f.gpu_model.clone(),
                threshold_pct: i32::from(site.idle_utilization_percent),
                since: crate::ledger::to_jiff(f.idle_since),
                zone: site.time_zone_name.clone(),
                gpu_seconds: f.idle_gpu_seconds,
                value: (!f.free).then_some(f.idle_value_minor),
            };
            let recipients = notify(&mut tx, f, &note, &site.currency).await?;
            mails.push((recipients, note, f.run_id));
        }
    }
    tx.commit().await?;
    for (recipients, note, run) in mails {
        tracing::info!(run, "idle run flagged");
        crate::ledger::alerts::mail_noted(pool, site, &recipients, &note, &format!("/runs/{run}"))
            .await?;
    }
    Ok(raised)
}

/// Inserts the notification of `flag` for its run's submitter and the leads on its project's
/// path to the root (its English text, and `note` for the other languages); returns their user
/// ids.
async fn notify(
    conn: &mut PgConnection,
    flag: &Flag,
    note: &Notice,
    currency: &str,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO notifications (user_id, message, link, note, node_id) \
         SELECT DISTINCT u.id, $3, $4, $5, CASE WHEN u.id = $2 THEN NULL ELSE $1 END \
         FROM users u WHERE NOT u.disabled AND (u.id = $2 OR u.id IN ( \
             SELECT g.user_id FROM role_grants g WHERE g.role = 'lead' AND g.node_id IN ( \
                 WITH RECURSIVE up(id, parent_id) AS ( \
                     SELECT id, parent_id FROM tree_nodes WHERE id = $1 \
                     UNION ALL SELECT t.id, t.parent_id FROM tree_nodes t JOIN up ON t.id = up.parent_id) \
                 SELECT id FROM up))) \
         RETURNING user_id",
    )
    .bind(flag.project_id)
    .bind(flag.submitted_by)
    .bind(note.message(crate::i18n::Lang::En, currency))
    .bind(format!("/runs/{}", flag.run_id))
    .bind(sqlx::types::Json(note))
    .fetch_all(&mut *conn)
    .await
}

/// Run, project, submitter, flag's attempt, flag cleared at, run state, run attempt.
type FlagRunRow = (
    i64,
    i64,
    i64,
    i32,
    Option<time::OffsetDateTime>,
    String,
    i32,
);

/// A lead (of the run's project or above, or an admin) stops a flagged run with a reason: the
/// run is cancelled through its agent (SIGTERM, grace period), the flag clears as `stopped`,
/// the timeline and the audit log (`run.idle_stop`) record who and why. Returns the run id.
///
/// # Errors
/// 404 for an unknown flag or one `actor` may not see; 403 for someone who is not a lead of
/// the project; 422 `invalid` for a missing or over-long reason (1 to 1000 characters);
/// 409 `flag_cleared` once the flag cleared (recovered, ended or already stopped).
pub async fn stop(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    parents: &Parents,
    flag_id: i64,
    reason: &str,
) -> Result<i64, AppError> {
    let mut tx = pool.begin().await?;
    super::service::serialize_with_passes(&mut tx).await?;
    let row: Option<FlagRunRow> = sqlx::query_as(
        "SELECT f.run_id, r.project_id, r.submitted_by, f.attempt, f.cleared_at, r.state, r.attempt \
         FROM idle_flags f JOIN runs r ON r.id = f.run_id WHERE f.id = $1 FOR UPDATE OF f, r",
    )
    .bind(flag_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((run, project, submitted_by, attempt, cleared, state, current)) = row else {
        return Err(AppError::NotFound(crate::i18n::t1(
            "idle-not-found",
            "id",
            flag_id.to_string(),
        )));
    };
    if !may_see(actor, parents, project, submitted_by) {
        return Err(AppError::NotFound(crate::i18n::t1(
            "idle-not-found",
            "id",
            flag_id.to_string(),
        )));
    }
    if !actor.leads(project, parents) {
        return Err(AppError::Forbidden(crate::i18n::t("idle-forbidden")));
    }
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > 1000 {
        return Err(AppError::invalid(
            "reason",
            crate::i18n::t("idle-reason-required"),
        ));
    }
    if cleared.is_some() || attempt != current || !matches!(state.as_str(), "starting" | "running")
    {
        return Err(AppError::Refused {
            code: "flag_cleared",
            message: crate::i18n::t1("idle-cleared", "id", flag_id.to_string()),
        });
    }
    super::service::begin_stop(&mut tx, pool, site, run, "cancelled").await?;
    super::event(
        &mut tx,
        run,
        "cancel_requested",
        &crate::i18n::said::Said::new("event-idle-stopped")
            .arg("by", &actor.name)
            .arg("reason", reason),
        None,
    )
    .await?;
    super::refresh_holds(&mut tx).await?;
    sqlx::query(
        "UPDATE idle_flags SET cleared_at = now(), cleared_why = 'stopped', stopped_by = $2, stop_reason = $3 WHERE id = $1",
    )
    .bind(flag_id)
    .bind(actor.id)
    .bind(reason)
    .execute(&mut *tx)
    .await?;
    audit::record(
        &mut *tx,
        audit::Change {
            actor: Some(actor.id),
            action: "run.idle_stop",
            entity: "run",
            entity_id: Some(run),
            node_id: Some(project),
            before: Some(serde_json::json!({"run": run, "state": state, "idle_flag": flag_id})),
            after: Some(serde_json::json!({"run": run, "state": "stopping", "idle_flag": flag_id, "reason": reason})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::idle_gpu_hours;

    #[test]
    fn idle_gpu_hours_are_gpus_times_hours() {
        assert_eq!(idle_gpu_hours(8, 1800), "4");
        assert_eq!(idle_gpu_hours(1, 90), "0.03");
        assert_eq!(idle_gpu_hours(2, -5), "0");
    }
}
