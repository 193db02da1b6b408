//! Spend reports for finance (and leads, for their subtree): a page with charts and the same
//! rows as CSV.

use axum::Router;
use axum::extract::State;

use crate::web::input::Query;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser};
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::ledger::Period;
use crate::ledger::reports::{self, Filter, Row};
use crate::state::AppState;
use crate::web::charts;
use crate::web::{Layout, render};

/// Query parameters of the report page and the CSV export.
#[derive(serde::Deserialize, serde::Serialize, Default, Clone)]
pub struct ReportQuery {
    /// `YYYY-MM`; default the current period.
    #[serde(default)]
    pub period: String,
    /// Tree node id; default the root (finance, admins) or the first node the lead leads.
    #[serde(default)]
    pub node: Option<i64>,
    /// Cluster name; default all.
    #[serde(default)]
    pub cluster: String,
}

struct Resolved {
    filter: Filter,
    period_label: String,
    cluster: String,
}

async fn resolve(state: &AppState, me: &Account, q: &ReportQuery) -> Result<Resolved, AppError> {
    if !me.sees_everything() && me.lead_nodes().next().is_none() {
        return Err(AppError::Forbidden(i18n::t("reports-err-role")));
    }
    let now = jiff::Timestamp::now();
    let period = if q.period.trim().is_empty() {
        Period::containing(now, &state.site)
    } else {
        reports::parse_report_period(&q.period, &state.site, now)
            .map_err(|m| AppError::invalid("period", m))?
    };
    let node = match q.node {
        Some(n) => n,
        None if me.sees_everything() => {
            sqlx::query_scalar("SELECT id FROM tree_nodes WHERE parent_id IS NULL")
                .fetch_one(&state.pool)
                .await?
        }
        None => me.lead_nodes().next().unwrap_or_default(),
    };
    let cluster = if q.cluster.trim().is_empty() {
        None
    } else {
        Some(
            crate::db::inventory::cluster_id(&state.pool, &q.cluster)
                .await?
                .ok_or_else(|| {
                    AppError::invalid(
                        "cluster",
                        i18n::t1(
                            "contract-err-no-cluster",
                            "name",
                            crate::domain::quote(q.cluster.trim()),
                        ),
                    )
                })?,
        )
    };
    Ok(Resolved {
        period_label: period.label(&state.site),
        filter: Filter {
            period,
            node,
            cluster,
        },
        cluster: q.cluster.trim().to_string(),
    })
}

/// The report filter and period label for a query, checking that the caller may see reports.
///
/// # Errors
/// Forbidden for researchers; Invalid period or cluster.
pub async fn resolve_filter(
    state: &AppState,
    me: &Account,
    q: &ReportQuery,
) -> Result<(Filter, String), AppError> {
    let r = resolve(state, me, q).await?;
    Ok((r.filter, r.period_label))
}

/// For the current period, makes sure every project's budget is open (the roll-over task does
/// this within a minute of a period's start or a new project; this closes the gap), so the
/// budget column is complete.
///
/// # Errors
/// Database errors.
pub async fn open_current_budgets(
    state: &AppState,
    filter: &Filter,
    now: jiff::Timestamp,
) -> Result<(), AppError> {
    if filter.period == Period::containing(now, &state.site) {
        crate::ledger::roll_over(&state.pool, now, &state.site).await?;
    }
    Ok(())
}

struct RowView {
    node: String,
    archived: bool,
    gpu_model: String,
    indent: String,
    cells: Vec<String>,
}

/// The page's cells for a row, in the column order of the template (and of the CSV after the
/// node and model).
fn cells(r: &Row) -> Vec<String> {
    let m = |v: i64| Money(v).amount();
    let o = |v: Option<i64>| v.map_or_else(String::new, |x| Money(x).amount());
    // Rounded once, to the tenth the page shows (through thousandths, 251.9497 read 252.0).
    let h = |v: f64| domain::format_milli_gpu_hours((v * 10.0).round() as i64 * 100);
    vec![
        m(r.contract_minor),
        h(r.contract_gpu_hours),
        m(r.run_minor),
        h(r.run_gpu_hours),
        h(r.free_gpu_hours),
        m(r.spend_minor),
        h(r.entitlement_gpu_hours),
        m(r.entitlement_minor),
        o(r.budget_minor),
        o(r.cap_minor),
        o(r.forecast_minor),
    ]
}

#[derive(askama::Template)]
#[template(path = "reports.html")]
struct ReportsPage {
    layout: Layout,
    /// (name as the query gives it, `YYYY-MM`; as the reader reads it).
    periods: Vec<(String, String)>,
    period: String,
    nodes: Vec<(i64, String)>,
    node: i64,
    clusters: Vec<String>,
    cluster: String,
    query: String,
    error: Option<String>,
    currency: String,
    trend_svg: String,
    split_svg: String,
    rows: Vec<RowView>,
}

/// A period as the reader names it: `2026-12` in English (the period's name, as the CSV and
/// the API give it), the month and year in words in Spanish and Basque (`diciembre de 2026`).
fn period_name(state: &AppState, p: &crate::ledger::Period) -> String {
    match i18n::current() {
        i18n::Lang::En => p.label(&state.site),
        lang => i18n::format::month_year(lang, p.month(&state.site)),
    }
}

async fn page(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Query(q): Query<ReportQuery>,
) -> Result<Response, AppError> {
    let r = resolve(&state, &me, &q).await?;
    let now = jiff::Timestamp::now();
    open_current_budgets(&state, &r.filter, now).await?;
    // The period's own tree (an ended period's as it ended): the rows' entitlements, and the
    // groups the picker offers, with the report's node whatever it was then.
    let tree =
        crate::db::tree::load_period(&state.pool, r.filter.period.start, &state.site.periods, now)
            .await?;
    let rows = reports::rows_in(&state.pool, &state.site, &me, &r.filter, now, &tree).await?;
    let mut nodes: Vec<(i64, String)> = tree
        .nodes
        .iter()
        .filter(|n| !n.is_project && (me.sees_everything() || me.leads(n.id, &tree.parents)))
        .map(|n| (n.id, format!("{}{}", "· ".repeat(n.depth), n.name)))
        .collect();
    if !nodes.iter().any(|(id, _)| *id == r.filter.node)
        && let Some(row) = rows.iter().find(|x| x.node_id == r.filter.node)
    {
        nodes.insert(0, (row.node_id, row.node.clone()));
    }
    let recent = reports::recent_periods(now, &state.site, 12);
    let trend = reports::trend(
        &state.pool,
        &state.site,
        r.filter.node,
        r.filter.cluster,
        &recent[recent.len() - 6..],
    )
    .await?;
    let split: Vec<charts::Bar> = rows
        .iter()
        .filter(|x| x.node_id == r.filter.node && x.gpu_model != "all")
        .map(|x| (x.gpu_model.clone(), x.contract_minor, x.run_minor))
        .collect();
    let cur = &state.site.currency;
    let query = serde_urlencoded::to_string(ReportQuery {
        period: r.period_label.clone(),
        node: Some(r.filter.node),
        cluster: r.cluster.clone(),
    })
    .unwrap_or_default();
    render(&ReportsPage {
        layout: Layout::for_user(&session, &me, "/reports").await?,
        periods: reports::covered_periods(now, &state.site)
            .iter()
            .rev()
            .map(|p| (p.label(&state.site), period_name(&state, p)))
            .collect(),
        period: r.period_label.clone(),
        nodes,
        node: r.filter.node,
        clusters: crate::db::inventory::clusters(&state.pool)
            .await?
            .into_iter()
            .map(|c| c.name)
            .collect(),
        cluster: r.cluster.clone(),
        query,
        error: None,
        currency: cur.clone(),
        trend_svg: charts::stacked_bars(&i18n::t("chart-spend-by-period"), &trend, cur),
        split_svg: charts::stacked_bars(
            &i18n::t1(
                "chart-spend-by-model",
                "period",
                period_name(&state, &r.filter.period),
            ),
            &split,
            cur,
        ),
        rows: rows
            .iter()
            .map(|x| RowView {
                node: x.node.clone(),
                archived: x.archived,
                gpu_model: x.gpu_model.clone(),
                indent: format!("{:.2}em", x.depth as f64 * 1.25 + 0.4),
                cells: cells(x),
            })
            .collect(),
    })
}

async fn csv_export(
    State(state): State<AppState>,
    CurrentUser(me): CurrentUser,
    Query(q): Query<ReportQuery>,
) -> Result<Response, AppError> {
    let r = resolve(&state, &me, &q).await?;
    open_current_budgets(&state, &r.filter, jiff::Timestamp::now()).await?;
    let rows = reports::rows(
        &state.pool,
        &state.site,
        &me,
        &r.filter,
        jiff::Timestamp::now(),
    )
    .await?;
    let body = crate::export::csv(
        &reports::CSV_HEADER,
        rows.iter().map(|row| row.csv_record(&state.site.currency)),
    )?;
    let name = format!("tranche-spend-{}.csv", r.period_label);
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        body,
    )
        .into_response())
}

/// `GET /reports` and `GET /reports.csv`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/reports", get(page))
        .route("/reports.csv", get(csv_export))
}

#[cfg(test)]
mod tests {
    use super::cells;
    use crate::ledger::reports::Row;

    #[test]
    fn gpu_hours_are_rounded_once_to_the_tenth_shown() {
        let row = Row {
            run_gpu_hours: 251.949_7,
            contract_gpu_hours: 3_292.649_7,
            free_gpu_hours: 0.05,
            ..Row::default()
        };
        let c = crate::i18n::sync_scope(crate::i18n::Lang::En, || cells(&row));
        // Through thousandths first, 251.9497 read 251.950 and then 252.0.
        assert_eq!(
            (c[1].as_str(), c[3].as_str(), c[4].as_str()),
            ("3,292.6", "251.9", "0.1")
        );
    }
}
