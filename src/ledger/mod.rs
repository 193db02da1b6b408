//! The GPU-hour ledger: double-entry accounts and postings in PostgreSQL. Each project has a
//! budget account per budget period, granted from the `funding` account when the period
//! begins; contract purchases and run usage move money out of it, refunds move it back, and
//! what is unspent at the period's end lapses. Balances are maintained by a trigger and a
//! `CHECK` keeps every project budget at or above zero; `ledger_problems()` proves the whole.

pub mod alerts;
pub mod contracts;
pub mod currency;
pub mod reports;
pub mod zones;

use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;

use crate::config::Site;
use crate::db::tree as tree_db;
use crate::domain::Money;
use crate::error::AppError;

/// A budget period as UTC instants `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// First instant.
    pub start: jiff::Timestamp,
    /// First instant after it.
    pub end: jiff::Timestamp,
}

impl Period {
    /// The period containing `now`: a calendar month in the zone the site's periods follow
    /// ([`Site::periods`]).
    pub fn containing(now: jiff::Timestamp, site: &Site) -> Self {
        let (s, e) = site.periods.period(now);
        Self {
            start: s.timestamp(),
            end: e.timestamp(),
        }
    }

    /// The calendar month the period is named after (its first day), in the zone the period
    /// follows ([`crate::domain::PeriodCalendar::month`]), not the zone configured now.
    pub fn month(&self, site: &Site) -> jiff::civil::Date {
        site.periods.month(self.start)
    }

    /// The period's name as `YYYY-MM` ([`Period::month`]): what reports, their CSV and the
    /// API call it and what [`reports::parse_period`] reads back.
    pub fn label(&self, site: &Site) -> String {
        self.month(site).strftime("%Y-%m").to_string()
    }

    /// As `time::OffsetDateTime`s for binding.
    pub fn bounds(&self) -> (time::OffsetDateTime, time::OffsetDateTime) {
        (to_time(self.start), to_time(self.end))
    }
}

/// Converts a `jiff::Timestamp` to a `time::OffsetDateTime` (UTC), for sqlx.
pub fn to_time(ts: jiff::Timestamp) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp_nanos(ts.as_nanosecond())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// Converts a `time::OffsetDateTime` to a `jiff::Timestamp`.
pub fn to_jiff(t: time::OffsetDateTime) -> jiff::Timestamp {
    jiff::Timestamp::from_nanosecond(t.unix_timestamp_nanos())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// The id of a global account (`funding`, `contract_spend`, `run_spend`, `lapsed`).
///
/// # Errors
/// Database errors.
pub async fn global_account(conn: &mut PgConnection, kind: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM ledger_accounts WHERE kind = $1 AND project_id IS NULL")
        .bind(kind)
        .fetch_one(conn)
        .await
}

/// The period budget of every live project for `period`, from the program tree (override or
/// entitlement's value, lowered by the money cap), as `(project id, amount)`.
///
/// # Errors
/// Database errors.
pub async fn period_budgets(
    pool: &PgPool,
    period: Period,
    site: &Site,
) -> Result<Vec<(i64, Money)>, AppError> {
    Ok(tree_and_budgets(pool, period, site).await?.1)
}

/// [`period_budgets`] with the period's tree they were computed from.
async fn tree_and_budgets(
    pool: &PgPool,
    period: Period,
    site: &Site,
) -> Result<(tree_db::TreeView, Vec<(i64, Money)>), AppError> {
    let tree = tree_db::load(pool, period.start, &site.periods).await?;
    let settings: Vec<(i64, Option<i64>, Option<i64>)> =
        sqlx::query_as("SELECT node_id, period_budget_minor, money_cap_minor FROM projects")
            .fetch_all(pool)
            .await?;
    let budgets = tree
        .nodes
        .iter()
        .filter(|n| n.is_project)
        .map(|n| {
            let (_, budget, cap) = settings
                .iter()
                .find(|(id, _, _)| *id == n.id)
                .copied()
                .unwrap_or((n.id, None, None));
            let base = budget.map_or(n.money_total, Money);
            let amount = match cap {
                Some(c) if c < base.0 => Money(c),
                _ => base,
            };
            (n.id, amount)
        })
        .collect::<Vec<_>>();
    Ok((tree, budgets))
}

/// What a project opened after its period began may be granted: `amount`, at most what every
/// group above it has left of its entitlement's value once the budgets its other projects
/// already hold for the period (`held`: project -> budget, minor units) are counted, and
/// never below zero. Children's budgets sum to at most the parent's (docs/design.md section
/// 7): a project created, moved or unarchived mid-period would otherwise get a whole budget
/// while its siblings keep theirs until the period ends (shares changed then apply from the
/// next one), and the organisation would hold more budget than its GPUs are worth.
fn within_headroom(
    tree: &tree_db::TreeView,
    project: i64,
    amount: Money,
    held: &HashMap<i64, i64>,
) -> Money {
    let mut grant = amount.0;
    for group in tree
        .nodes
        .iter()
        .filter(|n| !n.is_project && n.id != project)
        .filter(|n| tree.parents.is_ancestor_or_self(n.id, project))
    {
        let others: i64 = held
            .iter()
            .filter(|(p, _)| **p != project && tree.parents.is_ancestor_or_self(group.id, **p))
            .map(|(_, b)| *b)
            .sum();
        grant = grant.min(group.money_total.0 - others);
    }
    Money(grant.max(0))
}

/// Makes sure `project` has its budget account for `period`, granting `amount` from funding
/// when the account is created, which records `entitlement` (the project's entitlement value
/// it was opened against). Returns the account id. Safe under concurrency: exactly one
/// caller creates the account and posts the grant.
///
/// # Errors
/// Database errors.
pub async fn ensure_budget_account(
    conn: &mut PgConnection,
    project: i64,
    period: Period,
    amount: Money,
    entitlement: Money,
) -> Result<i64, sqlx::Error> {
    let (start, end) = period.bounds();
    let created: Option<i64> = sqlx::query_scalar(
        "INSERT INTO ledger_accounts (kind, project_id, period_start, period_end, budget_minor, entitlement_minor) \
         VALUES ('project_budget', $1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(project)
    .bind(start)
    .bind(end)
    .bind(amount.0)
    .bind(entitlement.0)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(id) = created {
        let funding = global_account(conn, "funding").await?;
        sqlx::query(
            "INSERT INTO ledger_postings (kind, from_account, to_account, amount_minor, project_id, period_start, note) \
             VALUES ('grant', $1, $2, $3, $4, $5, 'period budget')",
        )
        .bind(funding)
        .bind(id)
        .bind(amount.0)
        .bind(project)
        .bind(start)
        .execute(&mut *conn)
        .await?;
        return Ok(id);
    }
    sqlx::query_scalar("SELECT id FROM ledger_accounts WHERE kind = 'project_budget' AND project_id = $1 AND period_start = $2")
        .bind(project)
        .bind(start)
        .fetch_one(conn)
        .await
}

/// The budget account of `project` for `period`, granted if missing (a future period's budget
/// is granted early when a contract in it is bought).
///
/// # Errors
/// NotFound for a project that is not live; database errors.
pub async fn period_account(
    pool: &PgPool,
    conn: &mut PgConnection,
    project: i64,
    period: Period,
    site: &Site,
) -> Result<i64, AppError> {
    let (start, _) = period.bounds();
    let existing: Option<i64> = sqlx::query_scalar("SELECT id FROM ledger_accounts WHERE kind = 'project_budget' AND project_id = $1 AND period_start = $2")
        .bind(project)
        .bind(start)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(id) = existing {
        return Ok(id);
    }
    let (tree, budgets) = tree_and_budgets(pool, period, site).await?;
    let entitlement = tree.node(project).map_or(Money(0), |n| n.money_total);
    let amount = budgets
        .into_iter()
        .find(|(id, _)| *id == project)
        .map(|(_, m)| m)
        .ok_or_else(|| {
            AppError::NotFound(crate::i18n::t1(
                "err-no-live-project-id",
                "id",
                project.to_string(),
            ))
        })?;
    // Opened after its period began, as the roll-over would open it: within what its groups
    // have left (found by a check: a project made mid-period and submitted to within the
    // minute got its whole entitlement's value, its sibling made beside it nothing, and the
    // projects' budgets summed to more than the organisation's).
    let held = held_budgets(conn, period).await?;
    let amount = if held.is_empty() {
        amount
    } else {
        within_headroom(&tree, project, amount, &held)
    };
    Ok(ensure_budget_account(conn, project, period, amount, entitlement).await?)
}

/// The budgets projects hold for `period` (project -> budget, minor units), read after taking
/// the transaction's lock on opening budgets for it, so that two openings of the same period
/// (the roll-over, a submission) each count the other's grant.
async fn held_budgets(
    conn: &mut PgConnection,
    period: Period,
) -> Result<HashMap<i64, i64>, sqlx::Error> {
    let (start, _) = period.bounds();
    sqlx::query(
        "SELECT pg_advisory_xact_lock(hashtext('ledger_accounts.project_budget'), $1::int)",
    )
    .bind((period.start.as_second() / 86_400) as i32)
    .execute(&mut *conn)
    .await?;
    Ok(sqlx::query_as::<_, (i64, i64)>(
        "SELECT project_id, budget_minor FROM ledger_accounts WHERE kind = 'project_budget' AND period_start = $1",
    )
    .bind(start)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .collect())
}

/// The budget account of `project` for the period containing `now`, granted if missing.
///
/// # Errors
/// NotFound for a project that is not live; database errors.
pub async fn current_account(
    pool: &PgPool,
    conn: &mut PgConnection,
    project: i64,
    now: jiff::Timestamp,
    site: &Site,
) -> Result<i64, AppError> {
    period_account(pool, conn, project, Period::containing(now, site), site).await
}

/// Follows a change of a project's period budget or money cap in the ledger: for every budget
/// account of the project whose period has not ended, the difference between the new budget
/// and what was granted so far is posted as an adjustment (from funding when it rises, back
/// to funding when it falls, never taking the balance below zero), and the account records the
/// new budget (`budget_minor`, which a clipped adjustment cannot show). Runs in the caller's
/// transaction, after the project's settings were changed in it.
///
/// # Errors
/// Database errors.
pub async fn follow_budget_change(
    pool: &PgPool,
    conn: &mut PgConnection,
    site: &Site,
    now: jiff::Timestamp,
    project: i64,
    settings: (Option<i64>, Option<i64>),
) -> Result<(), AppError> {
    #[allow(clippy::type_complexity)]
    let accounts: Vec<(i64, time::OffsetDateTime, time::OffsetDateTime, i64, Option<i64>)> =
        sqlx::query_as(
            "SELECT id, period_start, period_end, balance_minor, entitlement_minor FROM ledger_accounts \
             WHERE kind = 'project_budget' AND project_id = $1 AND period_end > $2 FOR UPDATE",
        )
        .bind(project)
        .bind(to_time(now))
        .fetch_all(&mut *conn)
        .await?;
    for (account, start, end, balance, at_open) in accounts {
        let period = Period {
            start: to_jiff(start),
            end: to_jiff(end),
        };
        // A period under way keeps the entitlement value it opened with (found by a new-user
        // check: clearing an override, or setting a cap far above the budget, after a price
        // rise raised the budget to today's value while the page said "when the period
        // opened"); one to come follows the tree until it begins.
        let entitlement = match at_open {
            Some(e) if period.start <= now => e,
            _ => tree_db::load(pool, period.start, &site.periods)
                .await?
                .node(project)
                .map_or(0, |n| n.money_total.0),
        };
        regrant(
            conn,
            project,
            (account, start, balance),
            entitlement,
            settings,
        )
        .await?;
    }
    Ok(())
}

/// Sets budget account `account` (of `project`, its period starting `start`, its balance
/// `balance`) to the budget its settings give against `entitlement` (the override, else the
/// entitlement, capped), which it records as its entitlement value, posting the difference from what was granted so far as an
/// adjustment (never taking the balance below zero).
async fn regrant(
    conn: &mut PgConnection,
    project: i64,
    (account, start, balance): (i64, time::OffsetDateTime, i64),
    entitlement: i64,
    (budget_override, cap): (Option<i64>, Option<i64>),
) -> Result<(), AppError> {
    let funding = global_account(conn, "funding").await?;
    let base = budget_override.unwrap_or(entitlement);
    let budget = cap.map_or(base, |c| c.min(base));
    let granted: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(CASE WHEN to_account = $1 THEN amount_minor ELSE -amount_minor END), 0)::bigint \
         FROM ledger_postings WHERE kind IN ('grant', 'adjust') AND (to_account = $1 OR from_account = $1)",
    )
    .bind(account)
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE ledger_accounts SET budget_minor = $2, entitlement_minor = $3 WHERE id = $1",
    )
    .bind(account)
    .bind(budget)
    .bind(entitlement)
    .execute(&mut *conn)
    .await?;
    let delta = budget - granted;
    let (from, to, amount) = if delta > 0 {
        (funding, account, delta)
    } else {
        (account, funding, (-delta).min(balance))
    };
    if amount == 0 {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO ledger_postings (kind, from_account, to_account, amount_minor, project_id, period_start, note) \
         VALUES ('adjust', $1, $2, $3, $4, $5, 'period budget changed')",
    )
    .bind(from)
    .bind(to)
    .bind(amount)
    .bind(project)
    .bind(start)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Budget accounts of periods not begun yet (opened early, by a contract bought ahead) follow
/// the tree until their period begins: each is set to what its project's settings give
/// against the period's entitlement as the tree stands now (shares, GPUs and prices changed
/// since it was opened), as the roll-over at the period's start would have granted it. Run
/// after a change of shares and at every roll-over. Returns how many accounts changed.
///
/// # Errors
/// Database errors.
pub async fn refresh_early_budgets(
    pool: &PgPool,
    now: jiff::Timestamp,
    site: &Site,
) -> Result<usize, AppError> {
    let mut tx = pool.begin().await?;
    #[allow(clippy::type_complexity)]
    let accounts: Vec<(
        i64,
        i64,
        time::OffsetDateTime,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
    )> = sqlx::query_as(
        "SELECT a.id, a.project_id, a.period_start, a.balance_minor, a.budget_minor, \
                    p.period_budget_minor, p.money_cap_minor, a.entitlement_minor \
             FROM ledger_accounts a JOIN projects p ON p.node_id = a.project_id \
             WHERE a.kind = 'project_budget' AND a.period_start > $1 ORDER BY a.id FOR UPDATE OF a",
    )
    .bind(to_time(now))
    .fetch_all(&mut *tx)
    .await?;
    let mut trees: std::collections::BTreeMap<time::OffsetDateTime, tree_db::TreeView> =
        std::collections::BTreeMap::new();
    let mut changed = 0;
    for (account, project, start, balance, recorded, budget_override, cap, at_open) in accounts {
        let tree = match trees.entry(start) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(tree_db::load(pool, to_jiff(start), &site.periods).await?)
            }
        };
        let entitlement = tree.node(project).map_or(0, |n| n.money_total.0);
        let base = budget_override.unwrap_or(entitlement);
        if Some(cap.map_or(base, |c| c.min(base))) == recorded && at_open == Some(entitlement) {
            continue;
        }
        regrant(
            &mut tx,
            project,
            (account, start, balance),
            entitlement,
            (budget_override, cap),
        )
        .await?;
        changed += 1;
    }
    tx.commit().await?;
    Ok(changed)
}

/// Rolls budgets over at period boundaries: every live project gets its budget account for the
/// period containing `now` (granted from funding), whatever is left in accounts of ended
/// periods lapses, and accounts of periods to come follow the tree
/// ([`refresh_early_budgets`]). Idempotent; run at start-up and every minute.
///
/// # Errors
/// Database errors.
pub async fn roll_over(
    pool: &PgPool,
    now: jiff::Timestamp,
    site: &Site,
) -> Result<RollOver, AppError> {
    let period = Period::containing(now, site);
    let (tree, budgets) = tree_and_budgets(pool, period, site).await?;
    let mut tx = pool.begin().await?;
    let mut granted = 0;
    // The budgets projects hold for the period already: when there are some, the period has
    // begun, and a project opened now is granted within what its groups have left.
    let mut held = held_budgets(&mut tx, period).await?;
    let begun = !held.is_empty();
    for (project, amount) in budgets {
        if held.contains_key(&project) {
            continue;
        }
        let amount = if begun {
            within_headroom(&tree, project, amount, &held)
        } else {
            amount
        };
        let entitlement = tree.node(project).map_or(Money(0), |n| n.money_total);
        ensure_budget_account(&mut tx, project, period, amount, entitlement).await?;
        held.insert(project, amount.0);
        granted += 1;
    }
    let lapsed_account = global_account(&mut tx, "lapsed").await?;
    let ended: Vec<(i64, i64, i64, time::OffsetDateTime)> = sqlx::query_as(
        "SELECT id, project_id, balance_minor, period_start FROM ledger_accounts \
         WHERE kind = 'project_budget' AND period_end <= $1 AND balance_minor > 0 FOR UPDATE",
    )
    .bind(to_time(now))
    .fetch_all(&mut *tx)
    .await?;
    for (account, project, balance, period_start) in &ended {
        sqlx::query(
            "INSERT INTO ledger_postings (kind, from_account, to_account, amount_minor, project_id, period_start, note) \
             VALUES ('lapse', $1, $2, $3, $4, $5, 'unspent at the end of the period')",
        )
        .bind(account)
        .bind(lapsed_account)
        .bind(balance)
        .bind(project)
        .bind(period_start)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    refresh_early_budgets(pool, now, site).await?;
    Ok(RollOver {
        granted,
        lapsed: ended.len(),
    })
}

/// What a roll-over did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollOver {
    /// Budget accounts opened (and granted).
    pub granted: usize,
    /// Accounts of ended periods whose remainder lapsed.
    pub lapsed: usize,
}

/// The ledger's problems, empty when it balances and no budget is below zero (the SQL function
/// `ledger_problems()`).
///
/// # Errors
/// Database errors.
pub async fn problems(pool: &PgPool) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT problem FROM ledger_problems()")
        .fetch_all(pool)
        .await
}

/// A project's budget balance in the period containing `now` (granting it if needed).
///
/// # Errors
/// Database errors.
pub async fn balance(
    pool: &PgPool,
    project: i64,
    now: jiff::Timestamp,
    site: &Site,
) -> Result<Money, AppError> {
    Ok(budget_and_balance(pool, project, now, site).await?.1)
}

/// A project's period budget and balance in the period containing `now` (granting it if
/// needed), minor units: the budget as the account records it (set when the period opened,
/// then by every change of the project's budget or money cap), which today's entitlement may
/// no longer equal.
///
/// # Errors
/// Database errors.
pub async fn budget_and_balance(
    pool: &PgPool,
    project: i64,
    now: jiff::Timestamp,
    site: &Site,
) -> Result<(Money, Money), AppError> {
    let mut conn = pool.acquire().await?;
    let account = current_account(pool, &mut conn, project, now, site).await?;
    let (budget, balance): (i64, i64) =
        sqlx::query_as("SELECT budget_minor, balance_minor FROM ledger_accounts WHERE id = $1")
            .bind(account)
            .fetch_one(&mut *conn)
            .await?;
    Ok((Money(budget), Money(balance)))
}

/// What a usage charge did: the part paid from the budget and the part recorded free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// Minor units moved from the project's budget to run spending.
    pub charged_minor: i64,
    /// GPU-seconds charged at full price.
    pub charged_gpu_seconds: i64,
    /// GPU-seconds recorded at zero price (unallocated work, or beyond the balance).
    pub free_gpu_seconds: i64,
}

/// Records `gpu_seconds` of run time on a GPU model: allocated time is charged at billing
/// weight x price while the project's balance lasts, and the rest (and all unallocated time)
/// is recorded at zero price (docs/design.md section 2: "time beyond the minimum runtime is charged
/// while the balance lasts, after which the run goes on as unallocated"). Never takes a
/// balance below zero. Runs inside the caller's transaction.
///
/// The charge goes to the budget of the period containing `now`; the postings are stamped
/// with the database's clock (the instant of the transaction). [`charge_usage_at`] records
/// time used in the past.
///
/// # Errors
/// Database errors.
#[expect(clippy::too_many_arguments, reason = "one posting's worth of facts")]
pub async fn charge_usage(
    pool: &PgPool,
    conn: &mut PgConnection,
    site: &Site,
    now: jiff::Timestamp,
    project: i64,
    pool_ids: (i64, i64),
    gpu_seconds: i64,
    allocated: bool,
    run_id: Option<i64>,
) -> Result<Charge, AppError> {
    let (cluster, gpu_model) = pool_ids;
    let usage = Usage {
        project,
        cluster,
        gpu_model,
        gpu_seconds,
        allocated,
        run: run_id,
        accounted_gpu_seconds: 0,
        contract: None,
    };
    Ok(charge_usages(pool, conn, site, now, None, &[usage]).await?[0])
}

/// Like [`charge_usage`], for run time used in the past: the charge goes to the budget of the
/// period containing `at` (granted from funding if that period's account does not exist yet;
/// a period that has ended lapses what is left at the next roll-over, [`roll_over`]), and the
/// postings are stamped `at`, so spend reports, fair-share usage (by posting instant) and the
/// project page count the time when it was used. `tranche demo` records its history with it.
///
/// # Errors
/// Database errors.
#[expect(clippy::too_many_arguments, reason = "one posting's worth of facts")]
pub async fn charge_usage_at(
    pool: &PgPool,
    conn: &mut PgConnection,
    site: &Site,
    at: jiff::Timestamp,
    project: i64,
    pool_ids: (i64, i64),
    gpu_seconds: i64,
    allocated: bool,
    run_id: Option<i64>,
) -> Result<Charge, AppError> {
    let (cluster, gpu_model) = pool_ids;
    let usage = Usage {
        project,
        cluster,
        gpu_model,
        gpu_seconds,
        allocated,
        run: run_id,
        accounted_gpu_seconds: 0,
        contract: None,
    };
    Ok(charge_usages(pool, conn, site, at, Some(at), &[usage]).await?[0])
}

/// One run-time charge for [`charge_usages`]: GPU-seconds on a project's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// The project paying.
    pub project: i64,
    /// Cluster id.
    pub cluster: i64,
    /// GPU model id (its billing weight and price apply).
    pub gpu_model: i64,
    /// GPU-seconds used.
    pub gpu_seconds: i64,
    /// Allocated time is charged while the balance lasts; unallocated time is recorded free.
    pub allocated: bool,
    /// The run that used it, if the posting names one.
    pub run: Option<i64>,
    /// GPU-seconds of the same run attempt recorded before this usage (charged or free; 0 for
    /// a usage of its own). The charge is the cost of the running total less the cost of what
    /// came before, each rounded, so a run charged minute by minute pays its whole time's
    /// cost rounded once, not a rounding per minute.
    pub accounted_gpu_seconds: i64,
    /// The capacity contract that paid for this time in advance: allocated time on the
    /// project's own contract inside its window is posted as `usage` at no cost, naming the
    /// contract (the contract's price covered it; docs/design.md section 3.3). `None` for time
    /// the budget pays.
    pub contract: Option<i64>,
}

/// The usages of seconds `[charged, elapsed)` of a run attempt on `gpus` GPUs (`base` gives
/// the project, pool, run and kind; its seconds are ignored). `contract` is the capacity
/// contract the attempt runs on, as (id, window start, window end, GPUs it covers), the window
/// in seconds from the attempt's start: the allocated time of the covered GPUs inside the
/// window is prepaid ([`Usage::contract`]), the rest is charged as usual, its running total
/// counting only the attempt's earlier charged GPU-seconds.
/// Returns the prepaid usage first, then the charged one; a part of no seconds is left out.
#[must_use]
pub fn attempt_usages(
    base: Usage,
    gpus: i64,
    charged: i64,
    elapsed: i64,
    contract: Option<(i64, i64, i64, i64)>,
) -> Vec<Usage> {
    let (charged, elapsed) = (charged.max(0), elapsed.max(charged.max(0)));
    let (id, start, end, covered) = match contract {
        Some(c) if base.allocated => c,
        _ => (0, 0, 0, 0),
    };
    // A gang larger than what its contract had left has only `covered` GPUs on it; the others'
    // time inside the window is charged too (docs/design.md section 3.3).
    let covered = covered.clamp(0, gpus);
    let inside = crate::scheduler::overlap_s(charged, elapsed, start, end);
    let inside_before = crate::scheduler::overlap_s(0, charged, start, end);
    let prepaid = inside * covered;
    let paid = (elapsed - charged - inside) * gpus + inside * (gpus - covered);
    let paid_before = (charged - inside_before) * gpus + inside_before * (gpus - covered);
    let mut out = Vec::with_capacity(2);
    if prepaid > 0 {
        out.push(Usage {
            gpu_seconds: prepaid,
            accounted_gpu_seconds: 0,
            contract: Some(id),
            ..base
        });
    }
    if paid > 0 {
        out.push(Usage {
            gpu_seconds: paid,
            accounted_gpu_seconds: paid_before,
            contract: None,
            ..base
        });
    }
    out
}

/// Records many usages as [`charge_usage`] records one, in a fixed number of statements: the
/// budget accounts of their projects for the period containing `now` (granted if missing) are
/// locked in id order, the usages are charged in the order given against each project's
/// running balance, and every posting is written by one insert, stamped `posted_at` (the
/// database's clock when `None`). Returns one [`Charge`] per usage, in order. A charge costs
/// `GPU-seconds x billing weight (thousandths) x price per GPU-hour (minor units) / 3,600,000`
/// rounded half up, taken on the run attempt's running total ([`Usage::accounted_gpu_seconds`]),
/// and takes no more whole GPU-seconds than the balance pays for.
///
/// # Errors
/// NotFound for a project that is not live; database errors.
pub async fn charge_usages(
    pool: &PgPool,
    conn: &mut PgConnection,
    site: &Site,
    now: jiff::Timestamp,
    posted_at: Option<jiff::Timestamp>,
    usages: &[Usage],
) -> Result<Vec<Charge>, AppError> {
    use std::collections::HashMap;
    if usages.is_empty() {
        return Ok(Vec::new());
    }
    let period = Period::containing(now, site);
    let (start, _) = period.bounds();
    let mut projects: Vec<i64> = usages.iter().map(|u| u.project).collect();
    projects.sort_unstable();
    projects.dedup();
    let lock = "SELECT project_id, id, balance_minor FROM ledger_accounts \
                WHERE kind = 'project_budget' AND project_id = ANY($1) AND period_start = $2 ORDER BY id FOR UPDATE";
    let mut accounts: HashMap<i64, (i64, i64)> = sqlx::query_as::<_, (i64, i64, i64)>(lock)
        .bind(&projects)
        .bind(start)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|(p, id, balance)| (p, (id, balance)))
        .collect();
    // A project charged before its period's budget was opened (the roll-over opens it within
    // a minute): opened here, then locked like the others.
    let missing: Vec<i64> = projects
        .iter()
        .copied()
        .filter(|p| !accounts.contains_key(p))
        .collect();
    if !missing.is_empty() {
        for &p in &missing {
            period_account(pool, conn, p, period, site).await?;
        }
        accounts.extend(
            sqlx::query_as::<_, (i64, i64, i64)>(lock)
                .bind(&missing)
                .bind(start)
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .map(|(p, id, balance)| (p, (id, balance))),
        );
    }
    let mut models: Vec<i64> = usages.iter().map(|u| u.gpu_model).collect();
    models.sort_unstable();
    models.dedup();
    let rates: HashMap<i64, i128> = sqlx::query_as::<_, (i64, i32, i64)>(
        "SELECT id, billing_weight_milli, price_per_gpu_hour_minor FROM gpu_models WHERE id = ANY($1)",
    )
    .bind(&models)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|(id, weight, price)| (id, i128::from(weight) * i128::from(price)))
    .collect();
    let spend = global_account(conn, "run_spend").await?;
    let mut rows = Postings::default();
    let mut out = Vec::with_capacity(usages.len());
    for u in usages {
        let (account, balance) = accounts.get_mut(&u.project).ok_or_else(|| {
            AppError::NotFound(crate::i18n::t1(
                "err-no-live-project-id",
                "id",
                u.project.to_string(),
            ))
        })?;
        let per_hour_milli = *rates.get(&u.gpu_model).ok_or_else(|| {
            AppError::NotFound(crate::i18n::t1(
                "inventory-model-not-found",
                "id",
                u.gpu_model.to_string(),
            ))
        })?;
        let rounded = |secs: i64| -> i64 {
            ((i128::from(secs) * per_hour_milli * 2 + 3_600_000) / 7_200_000) as i64
        };
        let before = u.accounted_gpu_seconds.max(0);
        let full_cost = |secs: i64| rounded(before.saturating_add(secs)) - rounded(before);
        if u.contract.is_some() && u.allocated {
            rows.push(
                u,
                "usage",
                *account,
                0,
                u.gpu_seconds,
                "on its capacity contract (prepaid)",
            );
            out.push(Charge {
                charged_minor: 0,
                charged_gpu_seconds: u.gpu_seconds,
                free_gpu_seconds: 0,
            });
            continue;
        }
        let mut charged_secs = if u.allocated { u.gpu_seconds } else { 0 };
        if full_cost(charged_secs) > *balance {
            // As many whole GPU-seconds as the balance pays for.
            charged_secs = if per_hour_milli == 0 {
                u.gpu_seconds
            } else {
                (i128::from(*balance) * 3_600_000 / per_hour_milli) as i64
            }
            .min(u.gpu_seconds);
            while charged_secs > 0 && full_cost(charged_secs) > *balance {
                charged_secs -= 1;
            }
        }
        let amount = full_cost(charged_secs);
        let free_secs = u.gpu_seconds - charged_secs;
        if charged_secs > 0 {
            *balance -= amount;
            rows.push(
                u,
                "usage",
                *account,
                amount,
                charged_secs,
                "allocated run time",
            );
        }
        if free_secs > 0 {
            let note = if u.allocated {
                "beyond the balance: free, preemptible"
            } else {
                "unallocated run time"
            };
            rows.push(u, "usage_free", *account, 0, free_secs, note);
        }
        out.push(Charge {
            charged_minor: if charged_secs > 0 { amount } else { 0 },
            charged_gpu_seconds: charged_secs,
            free_gpu_seconds: free_secs,
        });
    }
    if rows.kind.is_empty() {
        return Ok(out);
    }
    sqlx::query(
        "INSERT INTO ledger_postings (kind, from_account, to_account, amount_minor, project_id, period_start, cluster_id, gpu_model_id, gpu_seconds, run_id, note, contract_id, at) \
         SELECT u.kind, u.account, $7, u.amount, u.project, $8, u.cluster, u.model, u.secs, u.run, u.note, u.contract, coalesce($9, now()) \
         FROM unnest($1::TEXT[], $2::BIGINT[], $3::BIGINT[], $4::BIGINT[], $5::BIGINT[], $6::BIGINT[], $10::BIGINT[], $11::BIGINT[], $12::TEXT[], $13::BIGINT[]) \
              WITH ORDINALITY AS u(kind, account, amount, project, cluster, model, secs, run, note, contract, n) ORDER BY u.n",
    )
    .bind(&rows.kind)
    .bind(&rows.account)
    .bind(&rows.amount)
    .bind(&rows.project)
    .bind(&rows.cluster)
    .bind(&rows.model)
    .bind(spend)
    .bind(start)
    .bind(posted_at.map(to_time))
    .bind(&rows.secs)
    .bind(&rows.run)
    .bind(&rows.note)
    .bind(&rows.contract)
    .execute(&mut *conn)
    .await?;
    Ok(out)
}

/// The columns of the usage postings [`charge_usages`] writes, one entry per posting.
#[derive(Default)]
struct Postings {
    kind: Vec<&'static str>,
    account: Vec<i64>,
    amount: Vec<i64>,
    project: Vec<i64>,
    cluster: Vec<i64>,
    model: Vec<i64>,
    secs: Vec<i64>,
    run: Vec<Option<i64>>,
    note: Vec<&'static str>,
    contract: Vec<Option<i64>>,
}

impl Postings {
    fn push(
        &mut self,
        u: &Usage,
        kind: &'static str,
        account: i64,
        amount: i64,
        secs: i64,
        note: &'static str,
    ) {
        self.kind.push(kind);
        self.account.push(account);
        self.amount.push(amount);
        self.project.push(u.project);
        self.cluster.push(u.cluster);
        self.model.push(u.gpu_model);
        self.secs.push(secs);
        self.run.push(u.run);
        self.note.push(note);
        self.contract.push(u.contract);
    }
}

/// A ledger posting as a project sees it.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Entry {
    /// Posting id.
    pub id: i64,
    /// When it was posted.
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    /// `grant`, `lapse`, `contract`, `refund`, `usage`, `usage_free`.
    pub kind: String,
    /// Signed from the project's view, minor units: into its budget positive, out negative.
    pub amount_minor: i64,
    /// Start of the budget period it belongs to.
    #[serde(with = "time::serde::rfc3339")]
    pub period_start: time::OffsetDateTime,
    /// GPU model, for usage and contracts.
    pub gpu_model: Option<String>,
    /// GPU-seconds it covers.
    pub gpu_seconds: i64,
    /// The contract that caused it.
    pub contract_id: Option<i64>,
    /// The run that caused it.
    pub run_id: Option<i64>,
    /// A note.
    pub note: String,
}

/// The most postings one page of [`entries`] holds.
pub const ENTRIES_MAX: i64 = 1_000;

/// A page of a project's postings, newest first: at most `limit` (clamped to 1 ..=
/// [`ENTRIES_MAX`]) of those with an id below `before` (all when `None`). Returns them and,
/// when older postings remain, the `before` of the next page (the last id returned). A site
/// charging its running runs every minute posts millions of rows a day, so a project's ledger
/// is read a page at a time (by the index `ledger_postings_project_id`, migration ...126).
///
/// # Errors
/// Database errors.
pub async fn entries(
    pool: &PgPool,
    project: i64,
    before: Option<i64>,
    limit: i64,
) -> Result<(Vec<Entry>, Option<i64>), sqlx::Error> {
    let limit = limit.clamp(1, ENTRIES_MAX);
    let mut page: Vec<Entry> = sqlx::query_as(
        "SELECT p.id, p.at, p.kind, CASE WHEN a.kind = 'project_budget' AND a.project_id = $1 THEN p.amount_minor ELSE -p.amount_minor END AS amount_minor, \
                p.period_start, m.name AS gpu_model, p.gpu_seconds, p.contract_id, p.run_id, p.note \
         FROM ledger_postings p LEFT JOIN gpu_models m ON m.id = p.gpu_model_id JOIN ledger_accounts a ON a.id = p.to_account \
         WHERE p.project_id = $1 AND p.id < $2 ORDER BY p.id DESC LIMIT $3",
    )
    .bind(project)
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit + 1)
    .fetch_all(pool)
    .await?;
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next = if more {
        page.last().map(|e| e.id)
    } else {
        None
    };
    Ok((page, next))
}

#[cfg(test)]
mod tests {
    use super::{Usage, attempt_usages};

    fn base(allocated: bool) -> Usage {
        Usage {
            project: 1,
            cluster: 2,
            gpu_model: 3,
            gpu_seconds: 0,
            allocated,
            run: Some(4),
            accounted_gpu_seconds: 0,
            contract: None,
        }
    }

    /// (GPU-seconds, running total before, contract) of each usage.
    fn parts(v: &[Usage]) -> Vec<(i64, i64, Option<i64>)> {
        v.iter()
            .map(|u| (u.gpu_seconds, u.accounted_gpu_seconds, u.contract))
            .collect()
    }

    #[test]
    fn time_inside_the_contract_window_is_prepaid_and_the_rest_charged() {
        // No contract: all charged, the running total counting every earlier second.
        assert_eq!(
            parts(&attempt_usages(base(true), 2, 60, 120, None)),
            [(120, 120, None)]
        );
        // Window [30, 90) s of the attempt, seconds [60, 120): 30 prepaid, 30 charged; of the
        // 60 s before, 30 were inside the window, so 30 were charged.
        assert_eq!(
            parts(&attempt_usages(
                base(true),
                2,
                60,
                120,
                Some((9, 30, 90, 2))
            )),
            [(60, 0, Some(9)), (60, 60, None)]
        );
        // A window that started after the attempt (its lead time) and has not ended: the
        // seconds before it are charged, those inside prepaid.
        assert_eq!(
            parts(&attempt_usages(
                base(true),
                1,
                0,
                100,
                Some((9, 40, 500, 1))
            )),
            [(60, 0, Some(9)), (40, 0, None)]
        );
        // Wholly inside: nothing charged.
        assert_eq!(
            parts(&attempt_usages(
                base(true),
                8,
                0,
                60,
                Some((9, -10, 3600, 8))
            )),
            [(480, 0, Some(9))]
        );
        // Unallocated time is never prepaid (it is free anyway); nothing new, nothing posted.
        assert_eq!(
            parts(&attempt_usages(base(false), 1, 0, 50, Some((9, 0, 100, 1)))),
            [(50, 0, None)]
        );
        assert!(attempt_usages(base(true), 1, 50, 50, Some((9, 0, 100, 1))).is_empty());
        // 8 GPUs of which the contract covers 4, seconds [60, 120) with the window [30, 90):
        // 30 s x 4 GPUs prepaid; 30 s x 4 uncovered GPUs inside plus 30 s x 8 after it charged.
        // Before: 30 s x 8 outside the window and 30 s x 4 uncovered inside it were charged.
        assert_eq!(
            parts(&attempt_usages(
                base(true),
                8,
                60,
                120,
                Some((9, 30, 90, 4))
            )),
            [(120, 0, Some(9)), (120 + 240, 240 + 120, None)]
        );
    }
}
