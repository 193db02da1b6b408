//! Spend reports for finance: per tree node (rolling up its subtree) and budget period, spend
//! by GPU model split into capacity contracts, allocated runs and unallocated (free) GPU-hours;
//! entitlement against received; spend against budget and money cap; a forecast to the
//! period's end. The page and the CSV export are the same rows.

use std::collections::HashMap;

use sqlx::PgPool;

use crate::auth::Account;
use crate::config::Site;
use crate::db::tree as tree_db;
use crate::domain::Money;
use crate::error::AppError;
use crate::export::Cell;
use crate::ledger::{Period, to_time};

/// What a report covers.
#[derive(Clone, Debug)]
pub struct Filter {
    /// The budget period.
    pub period: Period,
    /// The tree node whose subtree is reported.
    pub node: i64,
    /// Only this cluster (by id), or all.
    pub cluster: Option<i64>,
}

/// One report row: a node and a GPU model, or the node's total (`gpu_model` = `all`).
/// Money in minor units, GPU-hours as decimals.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Row {
    /// Period as `YYYY-MM` in the site's time zone.
    pub period: String,
    /// Node id.
    pub node_id: i64,
    /// Node name.
    pub node: String,
    /// Depth below the report's node (0 for it).
    pub depth: usize,
    /// Whether the node is archived (shown for what it booked in the period; no entitlement).
    pub archived: bool,
    /// GPU model name, or `all`.
    pub gpu_model: String,
    /// Spend on capacity contracts (purchases less refunds).
    pub contract_minor: i64,
    /// GPU-hours of contracts that stand (not cancelled).
    pub contract_gpu_hours: f64,
    /// Spend on allocated run time.
    pub run_minor: i64,
    /// Allocated GPU-hours received.
    pub run_gpu_hours: f64,
    /// Unallocated GPU-hours (free).
    pub free_gpu_hours: f64,
    /// Contracts plus runs.
    pub spend_minor: i64,
    /// Entitlement in GPU-hours.
    pub entitlement_gpu_hours: f64,
    /// Entitlement's money value.
    pub entitlement_minor: i64,
    /// Period budgets granted (totals only).
    pub budget_minor: Option<i64>,
    /// Sum of the projects' money caps, when every project has one (totals only).
    pub cap_minor: Option<i64>,
    /// Spend projected to the period's end at the rate so far (totals only).
    pub forecast_minor: Option<i64>,
}

/// The CSV header, in the order of [`Row::csv_record`].
pub const CSV_HEADER: [&str; 17] = [
    "period",
    "node_id",
    "node",
    "depth",
    "gpu_model",
    "contract_spend",
    "contract_gpu_hours",
    "run_spend",
    "run_gpu_hours",
    "free_gpu_hours",
    "total_spend",
    "entitlement_gpu_hours",
    "entitlement_value",
    "budget",
    "money_cap",
    "forecast_spend",
    "currency",
];

impl Row {
    /// The row as CSV cells (money as decimal amounts, GPU-hours with three decimals, 3.6
    /// GPU-seconds: a file for scripts, whose sums must not lose a short run's time as one
    /// decimal did): the period, names, GPU model and currency are text, the rest numbers.
    pub fn csv_record(&self, currency: &str) -> Vec<Cell> {
        let money = |m: i64| Cell::number(Money(m).plain());
        let hours = |h: f64| {
            let milli = (h * 1000.0).round() as i64;
            let sign = if milli < 0 { "-" } else { "" };
            let m = milli.unsigned_abs();
            Cell::number(format!("{sign}{}.{:03}", m / 1000, m % 1000))
        };
        let opt = |m: Option<i64>| m.map_or_else(|| Cell::number(""), money);
        vec![
            Cell::text(&self.period),
            Cell::number(self.node_id),
            Cell::text(&self.node),
            Cell::number(self.depth),
            Cell::text(&self.gpu_model),
            money(self.contract_minor),
            hours(self.contract_gpu_hours),
            money(self.run_minor),
            hours(self.run_gpu_hours),
            hours(self.free_gpu_hours),
            money(self.spend_minor),
            hours(self.entitlement_gpu_hours),
            money(self.entitlement_minor),
            opt(self.budget_minor),
            opt(self.cap_minor),
            opt(self.forecast_minor),
            Cell::text(currency),
        ]
    }
}

#[derive(Default, Clone, Copy)]
struct Sums {
    contract: i64,
    contract_secs: i64,
    run: i64,
    run_secs: i64,
    free_secs: i64,
}

/// Builds the report rows for `filter` as `actor` may see them: the node's subtree in
/// depth-first order, each node's total row followed by one row per GPU model it touched or
/// is entitled to. Entitlements are the period's own ([`tree_db::load_period`]): today's
/// capacity and prices while it runs or is to come, those recorded for it once it has ended.
///
/// # Errors
/// Forbidden when the actor may not see the node (finance and admins see all, leads their
/// subtree; an unknown node too, for leads); NotFound for an unknown node (finance, admins).
pub async fn rows(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    filter: &Filter,
    now: jiff::Timestamp,
) -> Result<Vec<Row>, AppError> {
    // The period's own entitlements: live while it runs, recorded once it has ended.
    let tree = tree_db::load_period(pool, filter.period.start, &site.periods, now).await?;
    rows_in(pool, site, actor, filter, now, &tree).await
}

/// [`rows`] over `tree`, the period's tree as [`tree_db::load_period`] loads it (the page
/// also lists its groups).
///
/// # Errors
/// As [`rows`].
pub async fn rows_in(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    filter: &Filter,
    now: jiff::Timestamp,
    tree: &tree_db::TreeView,
) -> Result<Vec<Row>, AppError> {
    // A lead is told the same for a node outside their subtree and for no node at all, so
    // that ids do not reveal which nodes exist.
    if !actor.sees_everything() && !actor.leads(filter.node, &tree.parents) {
        return Err(AppError::Forbidden(crate::i18n::t(
            "err-reports-node-forbidden",
        )));
    }
    let (start, _) = filter.period.bounds();
    let postings: Vec<(i64, Option<String>, String, i64, i64, bool)> = sqlx::query_as(
        "SELECT p.project_id, m.name, p.kind, sum(p.amount_minor)::bigint, sum(p.gpu_seconds)::bigint, coalesce(c.state = 'cancelled', false) \
         FROM ledger_postings p LEFT JOIN gpu_models m ON m.id = p.gpu_model_id LEFT JOIN contracts c ON c.id = p.contract_id \
         WHERE p.period_start = $1 AND ($2::bigint IS NULL OR p.cluster_id = $2 OR p.kind = 'grant') \
         GROUP BY p.project_id, m.name, p.kind, coalesce(c.state = 'cancelled', false)",
    )
    .bind(start)
    .bind(filter.cluster)
    .fetch_all(pool)
    .await?;
    let caps: HashMap<i64, Option<i64>> =
        sqlx::query_as::<_, (i64, Option<i64>)>("SELECT node_id, money_cap_minor FROM projects")
            .fetch_all(pool)
            .await?
            .into_iter()
            .collect();
    let cluster_name: Option<String> = match filter.cluster {
        Some(id) => {
            sqlx::query_scalar("SELECT name FROM clusters WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        }
        None => None,
    };
    // Per project and model.
    let mut by: HashMap<(i64, String), Sums> = HashMap::new();
    let mut grants: HashMap<i64, i64> = HashMap::new();
    // Budgets: each project's budget for the period as its account records it (the grant at
    // the period's opening, then every change of the budget or money cap).
    let budgets: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT project_id, budget_minor FROM ledger_accounts WHERE kind = 'project_budget' AND period_start = $1",
    )
    .bind(start)
    .fetch_all(pool)
    .await?;
    grants.extend(budgets);
    for (project, model, kind, amount, secs, cancelled) in postings {
        if kind == "grant" || kind == "adjust" {
            continue;
        }
        let Some(model) = model else { continue };
        let s = by.entry((project, model)).or_default();
        match kind.as_str() {
            "contract" => {
                s.contract += amount;
                if !cancelled {
                    s.contract_secs += secs;
                }
            }
            "refund" => s.contract -= amount,
            "usage" => {
                s.run += amount;
                s.run_secs += secs;
            }
            "usage_free" => s.free_secs += secs,
            _ => {}
        }
    }
    let label = filter.period.label(site);
    // Each project's forecast as its alerts compute it, once: a subtree's forecast is its
    // projects' summed (extrapolating the subtree's total rounded otherwise, a few minor units
    // apart from the sum of its children's rows).
    let mut forecasts: HashMap<i64, i64> = HashMap::new();
    if now < filter.period.end {
        let mut spent: HashMap<i64, (i64, i64)> = HashMap::new();
        for ((p, _), s) in &by {
            let e = spent.entry(*p).or_default();
            e.0 += s.contract;
            e.1 += s.run;
        }
        for (p, (contract, run)) in spent {
            forecasts.insert(
                p,
                crate::ledger::alerts::forecast(contract, run, filter.period, now),
            );
        }
    }
    // Archived nodes keep what they booked: a project archived after the period (or an
    // archived group around it) is a row of its own, after its live siblings, and counts in
    // every total above it. Archived nodes with nothing booked in the period are left out.
    let booked: Vec<i64> = {
        let mut ids: Vec<i64> = by
            .keys()
            .map(|(p, _)| *p)
            .chain(grants.keys().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    // Archived as the period's tree has them (at its end, once it ended): nodes of the tree
    // that are not live in it, under their parent then.
    let live_ids: std::collections::HashSet<i64> = tree.nodes.iter().map(|n| n.id).collect();
    let archived: Vec<(i64, Option<i64>, String)> =
        sqlx::query_as::<_, (i64, String)>("SELECT id, name FROM tree_nodes ORDER BY name, id")
            .fetch_all(pool)
            .await?
            .into_iter()
            .filter(|(id, _)| !live_ids.contains(id))
            .map(|(id, name)| (id, tree.parents.0.get(&id).copied().flatten(), name))
            .collect();
    let shown_archived: Vec<&(i64, Option<i64>, String)> = archived
        .iter()
        .filter(|(id, _, _)| {
            tree.parents.is_ancestor_or_self(filter.node, *id)
                && booked
                    .iter()
                    .any(|p| tree.parents.is_ancestor_or_self(*id, *p))
        })
        .collect();
    // The report's node: live in the period's tree, or archived then (archived since, or made
    // after the period ended), with what it booked.
    let top = tree.node(filter.node);
    let top_name = match top {
        Some(n) => n.name.clone(),
        None => archived
            .iter()
            .find(|(id, _, _)| *id == filter.node)
            .map(|(_, _, name)| name.clone())
            .ok_or_else(|| {
                AppError::NotFound(crate::i18n::t1(
                    "node-tree-not-found",
                    "id",
                    filter.node.to_string(),
                ))
            })?,
    };
    // Depth-first from the report's node: (id, name, depth, the live node if it is live).
    let mut order: Vec<(i64, String, usize, Option<&tree_db::NodeView>)> = Vec::new();
    let mut stack = vec![(filter.node, top_name, 0usize, top)];
    while let Some((id, name, depth, live)) = stack.pop() {
        let mut kids: Vec<(i64, String, usize, Option<&tree_db::NodeView>)> = tree
            .children(id)
            .map(|c| (c.id, c.name.clone(), depth + 1, Some(c)))
            .collect();
        kids.extend(
            shown_archived
                .iter()
                .filter(|(_, parent, _)| *parent == Some(id))
                .map(|(a, _, n)| (*a, n.clone(), depth + 1, None)),
        );
        order.push((id, name, depth, live));
        stack.extend(kids.into_iter().rev());
    }
    let mut out = Vec::new();
    for (node_id, node_name, depth, live) in order {
        // Every project under the node that booked something, archived ones included.
        let projects: Vec<i64> = booked
            .iter()
            .copied()
            .filter(|p| tree.parents.is_ancestor_or_self(node_id, *p))
            .collect();
        // Money caps are the live projects' (an archived project has none to spend under).
        let live_projects: Vec<i64> = tree
            .nodes
            .iter()
            .filter(|p| p.is_project && tree.parents.is_ancestor_or_self(node_id, p.id))
            .map(|p| p.id)
            .collect();
        // Entitlement per model, restricted to the cluster when filtered (none once archived).
        let mut ent: Vec<(String, i64, i64)> = Vec::new();
        let entitlements = live.map_or(&[][..], |n| n.entitlements.as_slice());
        for (c, e) in tree.capacity.iter().zip(entitlements) {
            if cluster_name.as_ref().is_some_and(|name| *name != c.cluster) {
                continue;
            }
            match ent.iter_mut().find(|(m, _, _)| *m == c.gpu_model) {
                Some(x) => {
                    x.1 += e.milli_gpu_hours;
                    x.2 += e.money.0;
                }
                None => ent.push((c.gpu_model.clone(), e.milli_gpu_hours, e.money.0)),
            }
        }
        let mut models: Vec<String> = ent.iter().map(|(m, _, _)| m.clone()).collect();
        for ((p, m), _) in by.iter() {
            if projects.contains(p) && !models.contains(m) {
                models.push(m.clone());
            }
        }
        models.sort();
        let sums_for = |model: Option<&str>| {
            let mut t = Sums::default();
            for ((p, m), s) in &by {
                if projects.contains(p) && model.is_none_or(|x| x == m) {
                    t.contract += s.contract;
                    t.contract_secs += s.contract_secs;
                    t.run += s.run;
                    t.run_secs += s.run_secs;
                    t.free_secs += s.free_secs;
                }
            }
            t
        };
        let row = |model: &str, s: Sums, ent_milli: i64, ent_money: i64| Row {
            period: label.clone(),
            node_id,
            node: node_name.clone(),
            archived: live.is_none(),
            depth,
            gpu_model: model.to_string(),
            contract_minor: s.contract,
            contract_gpu_hours: s.contract_secs as f64 / 3600.0,
            run_minor: s.run,
            run_gpu_hours: s.run_secs as f64 / 3600.0,
            free_gpu_hours: s.free_secs as f64 / 3600.0,
            spend_minor: s.contract + s.run,
            entitlement_gpu_hours: ent_milli as f64 / 1000.0,
            entitlement_minor: ent_money,
            budget_minor: None,
            cap_minor: None,
            forecast_minor: None,
        };
        let total = sums_for(None);
        let mut t = row(
            "all",
            total,
            ent.iter().map(|e| e.1).sum(),
            ent.iter().map(|e| e.2).sum(),
        );
        t.budget_minor = Some(
            projects
                .iter()
                .map(|p| grants.get(p).copied().unwrap_or(0))
                .sum(),
        );
        let project_caps: Vec<Option<i64>> = live_projects
            .iter()
            .map(|p| caps.get(p).copied().flatten())
            .collect();
        t.cap_minor = if !project_caps.is_empty() && project_caps.iter().all(Option::is_some) {
            Some(project_caps.iter().flatten().sum())
        } else {
            None
        };
        // Contract purchases are one-off: counted once; only run usage is a rate.
        t.forecast_minor = Some(if now >= filter.period.end {
            t.spend_minor
        } else {
            projects.iter().filter_map(|p| forecasts.get(p)).sum()
        });
        out.push(t);
        for m in models {
            let (milli, money) = ent
                .iter()
                .find(|(x, _, _)| *x == m)
                .map_or((0, 0), |e| (e.1, e.2));
            out.push(row(&m, sums_for(Some(&m)), milli, money));
        }
    }
    Ok(out)
}

/// The periods `count` months back from the one containing `now` (oldest first).
pub fn recent_periods(now: jiff::Timestamp, site: &Site, count: usize) -> Vec<Period> {
    let mut periods = vec![Period::containing(now, site)];
    while periods.len() < count {
        let before = periods[0]
            .start
            .checked_sub(jiff::SignedDuration::from_secs(1))
            .unwrap_or(periods[0].start);
        periods.insert(0, Period::containing(before, site));
    }
    periods
}

/// The periods a report covers, oldest first: the 24 before the one containing `now`, it, and
/// the 2 after (contracts may be paid from them) — what [`parse_report_period`] accepts and
/// the pages' period lists offer.
pub fn covered_periods(now: jiff::Timestamp, site: &Site) -> Vec<Period> {
    let mut periods = recent_periods(now, site, 25);
    for _ in 0..2 {
        let last = periods[periods.len() - 1];
        periods.push(Period::containing(last.end, site));
    }
    periods
}

/// Parses `YYYY-MM` into that month's budget period in the site's time zone.
///
/// # Errors
/// The message to show next to the field.
pub fn parse_period(text: &str, site: &Site) -> Result<Period, String> {
    let t = text.trim();
    let date: jiff::civil::Date = format!("{t}-15")
        .parse()
        .map_err(|_| crate::i18n::t1("err-period-format", "got", crate::domain::quote(t)))?;
    let mid = date
        .to_zoned(site.time_zone.clone())
        .map_err(|e| e.to_string())?
        .timestamp();
    Ok(Period::containing(mid, site))
}

/// Like [`parse_period`], limited to what a report can honestly show: from 24 months before
/// the current period to 2 months after it (entitlements use today's tree; the capacity and
/// prices are today's for the current and later periods, recorded for ended ones).
///
/// # Errors
/// The message to show next to the field.
pub fn parse_report_period(
    text: &str,
    site: &Site,
    now: jiff::Timestamp,
) -> Result<Period, String> {
    let p = parse_period(text, site)?;
    let covered = covered_periods(now, site);
    if p.start < covered[0].start || p.start > covered[covered.len() - 1].start {
        return Err(crate::i18n::t1("err-period-range", "got", text.trim()));
    }
    Ok(p)
}

/// Spend per period for the trend chart: (the period's month in the reader's language,
/// [`crate::i18n::format::month_short`], contracts, runs) for the node's subtree, oldest first.
///
/// # Errors
/// Database errors.
pub async fn trend(
    pool: &PgPool,
    site: &Site,
    node: i64,
    cluster: Option<i64>,
    periods: &[Period],
) -> Result<Vec<(String, i64, i64)>, AppError> {
    let parents = crate::auth::Parents::load(pool).await?;
    let projects: Vec<i64> = parents
        .0
        .keys()
        .copied()
        .filter(|p| parents.is_ancestor_or_self(node, *p))
        .collect();
    let mut out = Vec::new();
    for p in periods {
        let (contracts, runs): (i64, i64) = sqlx::query_as(
            "SELECT coalesce(sum(CASE kind WHEN 'contract' THEN amount_minor WHEN 'refund' THEN -amount_minor ELSE 0 END), 0)::bigint, \
                    coalesce(sum(CASE WHEN kind = 'usage' THEN amount_minor ELSE 0 END), 0)::bigint \
             FROM ledger_postings WHERE period_start = $1 AND project_id = ANY($2) AND ($3::bigint IS NULL OR cluster_id = $3)",
        )
        .bind(to_time(p.start))
        .bind(&projects)
        .bind(cluster)
        .fetch_one(pool)
        .await?;
        out.push((
            crate::i18n::format::month_short(crate::i18n::current(), p.month(site)),
            contracts,
            runs,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{covered_periods, parse_report_period};
    use crate::config::Site;

    /// The pages offer every period the reports accept: 24 back, the current one, 2 ahead (the
    /// page listed 12, so a period the API accepted, such as next month's contracts, could not
    /// be chosen and the form jumped back to the current one).
    #[test]
    fn the_covered_periods_are_the_accepted_ones() {
        let site = Site::for_tests();
        let now: jiff::Timestamp = "2026-12-06T12:00:00Z".parse().unwrap();
        let covered = covered_periods(now, &site);
        let labels: Vec<String> = covered.iter().map(|p| p.label(&site)).collect();
        assert_eq!(labels.len(), 27);
        assert_eq!(
            (labels[0].as_str(), labels[24].as_str(), labels[26].as_str()),
            ("2024-12", "2026-12", "2027-02")
        );
        for label in &labels {
            assert!(parse_report_period(label, &site, now).is_ok(), "{label}");
        }
        for outside in ["2024-11", "2027-03"] {
            assert!(
                parse_report_period(outside, &site, now).is_err(),
                "{outside}"
            );
        }
    }
}
