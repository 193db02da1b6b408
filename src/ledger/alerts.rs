//! Budget alerts: each project has thresholds (default 50%, 75% and 90% of its period budget);
//! each fires once per period for actual spend and once for the forecast to the period's end,
//! as an in-app notification to the project's leads (any lead on its path to the root) and to
//! finance.

use sqlx::PgPool;

use crate::config::Site;
use crate::domain::Money;
use crate::error::AppError;
use crate::i18n::notice::Notice;
use crate::ledger::{Period, to_time};

/// An alert that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// Project id.
    pub project_id: i64,
    /// Threshold in percent.
    pub threshold_pct: i32,
    /// `actual` or `forecast`.
    pub kind: &'static str,
}

/// Whether `spent` reaches `pct` percent of `budget` (a zero budget is reached by any spend).
pub fn reaches(spent: i64, budget: i64, pct: i32) -> bool {
    if budget <= 0 {
        return spent > 0;
    }
    i128::from(spent) * 100 >= i128::from(budget) * i128::from(pct)
}

/// Spend projected to the period's end, minor units: one-off spend (contract purchases less
/// refunds) counts once, as it is; only usage (runs charged by the second) is extrapolated at
/// its rate so far, over an elapsed time of at least one hour.
pub fn forecast(one_off: i64, usage: i64, period: Period, now: jiff::Timestamp) -> i64 {
    let len = (period.end.as_second() - period.start.as_second()).max(1);
    let elapsed = (now.as_second() - period.start.as_second()).clamp(3600, len);
    one_off.saturating_add((i128::from(usage) * i128::from(len) / i128::from(elapsed)) as i64)
}

/// Of the alerts `new` that fired in one check, as (threshold %, `actual` or `forecast`), those
/// to tell people about: per kind the highest (spend that crossed 50, 75 and 90% at once is one
/// notice of 90%, not three), and the forecast's only above `reached`, the highest threshold
/// actual spend reached (a forecast no higher than what is already spent says nothing new).
/// Every alert still fires once; only the notices are fewer (found by a new-user check: a use
/// case registered over its limit put eight notices on its lead's home page at once).
#[must_use]
pub fn worth_telling(
    new: &[(i32, &'static str)],
    reached: Option<i32>,
) -> Vec<(i32, &'static str)> {
    let top = |kind: &str| {
        new.iter()
            .filter(|(_, k)| *k == kind)
            .map(|(pct, _)| *pct)
            .max()
    };
    let mut out = Vec::new();
    if let Some(pct) = top("actual") {
        out.push((pct, "actual"));
    }
    if let Some(pct) = top("forecast")
        && reached.is_none_or(|r| pct > r)
    {
        out.push((pct, "forecast"));
    }
    out
}

/// Checks every project's spend in the period containing `now` against its thresholds, fires
/// new alerts and notifies. Idempotent: an alert fires once per project, period, threshold and
/// kind.
///
/// # Errors
/// Database errors.
pub async fn check(
    pool: &PgPool,
    site: &Site,
    now: jiff::Timestamp,
) -> Result<Vec<Fired>, AppError> {
    // Every period not yet ended that has budgets: the current one and any future one that
    // contracts were already paid from.
    let periods: Vec<(time::OffsetDateTime, time::OffsetDateTime)> = sqlx::query_as(
        "SELECT DISTINCT period_start, period_end FROM ledger_accounts WHERE kind = 'project_budget' AND period_end > $1 ORDER BY period_start",
    )
    .bind(to_time(now))
    .fetch_all(pool)
    .await?;
    let mut fired = Vec::new();
    for (start, end) in periods {
        let period = Period {
            start: crate::ledger::to_jiff(start),
            end: crate::ledger::to_jiff(end),
        };
        fired.extend(check_period(pool, site, now, period).await?);
    }
    check_use_cases(pool, site, now).await?;
    Ok(fired)
}

/// An alert of an AI use case's monthly limit that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseCaseFired {
    /// Use case id.
    pub use_case_id: i64,
    /// Threshold in percent of the monthly limit.
    pub threshold_pct: i32,
    /// `actual` or `forecast`.
    pub kind: &'static str,
    /// Whether this alert raised "stop rule triggered" (critical-systems bag, limit crossed).
    pub stop_rule: bool,
}

/// Checks every use case that is not stopped against its monthly limit for the period
/// containing `now` and the one before (spend imported late still counts there): its
/// thresholds fire once per period and kind, like a project's, to the leads of its owner
/// team (and above) and finance; the forecast is the period's spend so far extrapolated to
/// its end ([`crate::ai::spend::Spend::forecast`]: contracts less refunds count once, run
/// usage and imported spend at their rate), for the current period only. A use case of the
/// critical-systems bag whose actual spend reaches 100% raises "stop rule triggered" once per
/// period ([`crate::ai::stop_rule_triggered`]). A period that ended before the use case was
/// registered is not checked: its limit was not in force then. Idempotent.
///
/// # Errors
/// Database errors.
pub async fn check_use_cases(
    pool: &PgPool,
    site: &Site,
    now: jiff::Timestamp,
) -> Result<Vec<UseCaseFired>, AppError> {
    let current = Period::containing(now, site);
    let previous = Period::containing(current.start - jiff::SignedDuration::from_secs(1), site);
    #[expect(clippy::type_complexity, reason = "one use case's columns")]
    let cases: Vec<(i64, String, i64, String, i64, Vec<i32>, time::OffsetDateTime)> = sqlx::query_as(
        "SELECT id, name, owner_node_id, bag, monthly_limit_minor, alert_thresholds, created_at FROM ai_use_cases WHERE status <> 'stopped' ORDER BY id",
    )
    .fetch_all(pool)
    .await?;
    let mut fired = Vec::new();
    let linked: std::collections::HashMap<i64, crate::ai::UseCase> = crate::ai::all(pool)
        .await?
        .into_iter()
        .map(|u| (u.id, u))
        .collect();
    for period in [previous, current] {
        let spend = crate::ai::spend::by_use_case(pool, period).await?;
        let (start, _) = period.bounds();
        let month_day = period.month(site);
        let month = month_day.strftime("%B %Y").to_string();
        for (id, name, owner, bag, limit, thresholds, created) in &cases {
            if crate::ledger::to_jiff(*created) >= period.end {
                continue;
            }
            let whole = linked.get(id).map(|u| spend.whole(u)).unwrap_or_default();
            let spent = whole.total().0;
            let projected = if period == current {
                whole.forecast(period, now).0
            } else {
                spent
            };
            let mut tx = pool.begin().await?;
            let mut new = Vec::new();
            for pct in thresholds {
                for (kind, amount) in [("actual", spent), ("forecast", projected)] {
                    if !reaches(amount, *limit, *pct) || (kind == "forecast" && period != current) {
                        continue;
                    }
                    let inserted: Option<i64> = sqlx::query_scalar(
                        "INSERT INTO ai_use_case_alerts (use_case_id, period_start, threshold_pct, kind, spent_minor, limit_minor) \
                         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING id",
                    )
                    .bind(id)
                    .bind(start)
                    .bind(pct)
                    .bind(kind)
                    .bind(amount)
                    .bind(limit)
                    .fetch_optional(&mut *tx)
                    .await?;
                    if inserted.is_some() {
                        new.push((*pct, kind));
                    }
                }
            }
            let reached = thresholds
                .iter()
                .copied()
                .filter(|pct| reaches(spent, *limit, *pct))
                .max();
            let mut mails = Vec::new();
            for (pct, kind) in worth_telling(&new, reached) {
                let amount = if kind == "actual" { spent } else { projected };
                let link = format!("/ai/{id}");
                let note = Notice::UseCase {
                    use_case: name.clone(),
                    pct,
                    kind: kind.to_string(),
                    month: month_day,
                    amount,
                    limit: *limit,
                };
                let message = note.message(crate::i18n::Lang::En, &site.currency);
                let recipients =
                    notify_noted(&mut tx, *owner, &message, Some(&note), &link).await?;
                tracing::info!(use_case = %name, pct, kind, "use case limit alert");
                mails.push((recipients, note, link));
            }
            let mut stop_rule = false;
            if bag == "critical"
                && new.iter().any(|(_, kind)| *kind == "actual")
                && reaches(spent, *limit, 100)
            {
                let (amount_s, limit_s) = (
                    Money(spent).display(&site.currency),
                    Money(*limit).display(&site.currency),
                );
                let reason = format!("spent {amount_s} of its {month} limit of {limit_s}");
                let why = crate::i18n::notice::StopReason::Limit {
                    month: month_day,
                    amount: spent,
                    limit: *limit,
                };
                if let Some(more) =
                    crate::ai::stop_rule_triggered(&mut tx, *id, *owner, period, &reason, why)
                        .await?
                {
                    if let Some((recipients, ..)) = mails.first_mut() {
                        recipients.extend(more);
                    }
                    stop_rule = true;
                }
            }
            tx.commit().await?;
            for (mut recipients, note, link) in mails {
                recipients.sort_unstable();
                recipients.dedup();
                mail_noted(pool, site, &recipients, &note, &link).await?;
            }
            let top_actual = new
                .iter()
                .filter(|(_, kind)| *kind == "actual")
                .map(|(pct, _)| *pct)
                .max();
            for (pct, kind) in new {
                fired.push(UseCaseFired {
                    use_case_id: *id,
                    threshold_pct: pct,
                    kind,
                    stop_rule: stop_rule && kind == "actual" && Some(pct) == top_actual,
                });
            }
        }
    }
    Ok(fired)
}

async fn check_period(
    pool: &PgPool,
    site: &Site,
    now: jiff::Timestamp,
    period: Period,
) -> Result<Vec<Fired>, AppError> {
    let (start, _) = period.bounds();
    let rows: Vec<(i64, String, Vec<i32>, i64, i64, i64)> = sqlx::query_as(
        "SELECT p.node_id, t.name, p.alert_thresholds, \
                acct.budget_minor, \
                coalesce(sum(CASE l.kind WHEN 'contract' THEN l.amount_minor WHEN 'usage' THEN l.amount_minor WHEN 'refund' THEN -l.amount_minor ELSE 0 END), 0)::bigint, \
                coalesce(sum(CASE l.kind WHEN 'usage' THEN l.amount_minor ELSE 0 END), 0)::bigint \
         FROM projects p JOIN tree_nodes t ON t.id = p.node_id \
         JOIN ledger_accounts acct ON acct.project_id = p.node_id AND acct.kind = 'project_budget' AND acct.period_start = $1 \
         JOIN ledger_postings l ON l.project_id = p.node_id AND l.period_start = $1 \
         WHERE NOT t.archived GROUP BY p.node_id, t.name, p.alert_thresholds, acct.id, acct.budget_minor",
    )
    .bind(start)
    .fetch_all(pool)
    .await?;
    let month_day = period.month(site);
    let mut fired = Vec::new();
    for (project, name, thresholds, budget, spent, usage) in rows {
        // A future period has not started: its spend so far is its forecast.
        let projected = if now < period.start {
            spent
        } else {
            forecast(spent - usage, usage, period, now)
        };
        let mut tx = pool.begin().await?;
        let mut new = Vec::new();
        for &pct in &thresholds {
            for (kind, amount) in [("actual", spent), ("forecast", projected)] {
                if !reaches(amount, budget, pct) {
                    continue;
                }
                let inserted: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO budget_alerts (project_id, period_start, threshold_pct, kind, spent_minor, budget_minor) \
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING id",
                )
                .bind(project)
                .bind(start)
                .bind(pct)
                .bind(kind)
                .bind(amount)
                .bind(budget)
                .fetch_optional(&mut *tx)
                .await?;
                if inserted.is_some() {
                    new.push((pct, kind));
                }
            }
        }
        let reached = thresholds
            .iter()
            .copied()
            .filter(|pct| reaches(spent, budget, *pct))
            .max();
        let mut mails = Vec::new();
        for (pct, kind) in worth_telling(&new, reached) {
            let amount = if kind == "actual" { spent } else { projected };
            let note = Notice::Budget {
                project: name.clone(),
                pct,
                kind: kind.to_string(),
                month: month_day,
                amount,
                budget,
            };
            let message = note.message(crate::i18n::Lang::En, &site.currency);
            let link = format!("/projects/{project}");
            let recipients = notify_noted(&mut tx, project, &message, Some(&note), &link).await?;
            tracing::info!(project = %name, pct, kind, "budget alert");
            mails.push((recipients, note, link));
        }
        tx.commit().await?;
        for (recipients, note, link) in mails {
            mail_noted(pool, site, &recipients, &note, &link).await?;
        }
        fired.extend(new.into_iter().map(|(pct, kind)| Fired {
            project_id: project,
            threshold_pct: pct,
            kind,
        }));
    }
    Ok(fired)
}

/// Notifies finance and the leads of `node` and of every node above it, in the caller's
/// transaction; returns the users notified.
///
/// # Errors
/// Database errors.
pub async fn notify(
    tx: &mut sqlx::PgConnection,
    node: i64,
    message: &str,
    link: &str,
) -> Result<Vec<i64>, sqlx::Error> {
    notify_noted(tx, node, message, None, link).await
}

/// [`notify`], storing `note` beside the English `message` so that pages show it in each
/// reader's language ([`crate::i18n::notice`]).
///
/// # Errors
/// Database errors.
pub async fn notify_noted(
    tx: &mut sqlx::PgConnection,
    node: i64,
    message: &str,
    note: Option<&Notice>,
    link: &str,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO notifications (user_id, message, link, note, node_id) \
         SELECT DISTINCT g.user_id, $2, $3, $4, $1 FROM role_grants g \
         WHERE g.role = 'finance' \
            OR (g.role = 'lead' AND g.node_id IN ( \
                WITH RECURSIVE up(id, parent_id) AS ( \
                    SELECT id, parent_id FROM tree_nodes WHERE id = $1 \
                    UNION ALL SELECT t.id, t.parent_id FROM tree_nodes t JOIN up ON t.id = up.parent_id) \
                SELECT id FROM up)) \
         RETURNING user_id",
    )
    .bind(node)
    .bind(message)
    .bind(link)
    .bind(note.map(sqlx::types::Json))
    .fetch_all(tx)
    .await
}

/// E-mails `note` to `recipients` ([`mail_later`]), each in their own language (their choice,
/// else the organisation's default).
///
/// # Errors
/// Database errors.
pub async fn mail_noted(
    pool: &PgPool,
    site: &Site,
    recipients: &[i64],
    note: &Notice,
    link: &str,
) -> Result<(), sqlx::Error> {
    if site.smtp.is_none() || recipients.is_empty() {
        return Ok(());
    }
    let languages = crate::i18n::notice::recipient_languages(pool, recipients).await?;
    for lang in crate::i18n::Lang::ALL {
        let ids: Vec<i64> = languages
            .iter()
            .filter(|(_, l)| *l == lang)
            .map(|(id, _)| *id)
            .collect();
        if !ids.is_empty() {
            let (subject, body) = note.mail(lang, &site.currency, link);
            mail_later(pool, site, &ids, subject, body).await?;
        }
    }
    Ok(())
}

/// E-mails `recipients` (those with an address) in the background when SMTP is configured: a
/// slow relay never holds up the change that raised the alert.
///
/// # Errors
/// Database errors reading the addresses.
pub async fn mail_later(
    pool: &PgPool,
    site: &Site,
    recipients: &[i64],
    subject: String,
    body: String,
) -> Result<(), sqlx::Error> {
    let Some(smtp) = &site.smtp else {
        return Ok(());
    };
    let emails: Vec<String> = sqlx::query_scalar("SELECT email FROM users WHERE id = ANY($1) AND email IS NOT NULL AND NOT disabled ORDER BY email")
        .bind(recipients)
        .fetch_all(pool)
        .await?;
    if !emails.is_empty() {
        let smtp = smtp.clone();
        tokio::spawn(async move {
            if let Err(e) = crate::mail::send(&smtp, &emails, &subject, &body).await {
                tracing::warn!(error = %e, "budget alert e-mail failed");
            }
        });
    }
    Ok(())
}

/// A budget alert that fired.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Alert {
    /// Project id.
    pub project_id: i64,
    /// Project name.
    pub project: String,
    /// Period start.
    #[serde(with = "time::serde::rfc3339")]
    pub period_start: time::OffsetDateTime,
    /// Threshold, percent of the period budget.
    pub threshold_pct: i32,
    /// `actual` or `forecast`.
    pub kind: String,
    /// Spend (or forecast) when it fired, minor units.
    pub spent_minor: i64,
    /// The period budget, minor units.
    pub budget_minor: i64,
    /// When it fired.
    #[serde(with = "time::serde::rfc3339")]
    pub fired_at: time::OffsetDateTime,
}

/// All fired alerts, newest first (at most 500); callers filter by what the user may see.
///
/// # Errors
/// Database errors.
pub async fn fired(pool: &PgPool) -> Result<Vec<Alert>, sqlx::Error> {
    sqlx::query_as(
        "SELECT a.project_id, t.name AS project, a.period_start, a.threshold_pct, a.kind, a.spent_minor, a.budget_minor, a.fired_at \
         FROM budget_alerts a JOIN tree_nodes t ON t.id = a.project_id ORDER BY a.id DESC LIMIT 500",
    )
    .fetch_all(pool)
    .await
}

/// A notification as shown.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Notification {
    /// Id.
    pub id: i64,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// Text.
    pub message: String,
    /// Where it points.
    pub link: String,
    /// Whether it was read.
    pub read: bool,
    /// What it says, structured, for pages in the reader's language (not in the API).
    #[serde(skip)]
    pub note: Option<sqlx::types::Json<Notice>>,
    /// The tree node it is about (none: the reader's own run, or kept from before).
    #[serde(skip)]
    pub node_id: Option<i64>,
}

/// The user's notifications, newest first (at most 50), but those about a node the user may
/// no longer see (found by a check: a lead whose grant was revoked still read the budget
/// alerts of the projects they no longer see, with their amounts).
///
/// # Errors
/// Database errors.
pub async fn notifications(
    pool: &PgPool,
    user: &crate::auth::Account,
    parents: &crate::auth::Parents,
) -> Result<Vec<Notification>, sqlx::Error> {
    let all: Vec<Notification> = sqlx::query_as("SELECT id, created_at, message, link, read_at IS NOT NULL AS read, note, node_id FROM notifications WHERE user_id = $1 ORDER BY id DESC LIMIT 50")
        .bind(user.id)
        .fetch_all(pool)
        .await?;
    Ok(all
        .into_iter()
        .filter(|n| n.node_id.is_none_or(|node| user.may_view(node, parents)))
        .collect())
}

/// Marks all the user's notifications read; returns how many were unread.
///
/// # Errors
/// Database errors.
pub async fn mark_read(pool: &PgPool, user: i64, now: jiff::Timestamp) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("UPDATE notifications SET read_at = $2 WHERE user_id = $1 AND read_at IS NULL")
            .bind(user)
            .bind(to_time(now))
            .execute(pool)
            .await?
            .rows_affected(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_and_forecast() {
        assert!(reaches(50, 100, 50));
        assert!(!reaches(49, 100, 50));
        assert!(reaches(1, 0, 90));
        assert!(!reaches(0, 0, 90));
        let p = Period {
            start: jiff::Timestamp::from_second(0).unwrap(),
            end: jiff::Timestamp::from_second(30 * 86_400).unwrap(),
        };
        // 10 days into 30, 100 used: 300 by the end.
        assert_eq!(
            forecast(
                0,
                100,
                p,
                jiff::Timestamp::from_second(10 * 86_400).unwrap()
            ),
            300
        );
        // Less than an hour in: counted as one hour.
        assert_eq!(
            forecast(0, 1, p, jiff::Timestamp::from_second(60).unwrap()),
            720
        );
        // A purchase counts once, whenever it was made.
        assert_eq!(
            forecast(8000, 0, p, jiff::Timestamp::from_second(3 * 3600).unwrap()),
            8000
        );
        assert_eq!(
            forecast(
                8000,
                100,
                p,
                jiff::Timestamp::from_second(10 * 86_400).unwrap()
            ),
            8300
        );
    }

    #[test]
    fn one_notice_per_kind_and_a_forecast_only_above_the_spend() {
        let all = [
            (50, "actual"),
            (50, "forecast"),
            (75, "actual"),
            (75, "forecast"),
            (90, "forecast"),
        ];
        // Spend reached 75%: the forecast of 90% says more, so it is told too.
        assert_eq!(
            worth_telling(&all, Some(75)),
            vec![(75, "actual"), (90, "forecast")]
        );
        // A forecast at the spend's own threshold is not.
        assert_eq!(worth_telling(&all[..4], Some(75)), vec![(75, "actual")]);
        // Only a forecast new, spend below every threshold: told.
        assert_eq!(
            worth_telling(&[(50, "forecast")], None),
            vec![(50, "forecast")]
        );
        assert!(worth_telling(&[], Some(90)).is_empty());
    }
}
