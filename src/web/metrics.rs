//! The metrics dashboard (`/dashboard`, `/dashboard.csv`, `GET /api/v1/metrics`) and the
//! Prometheus scrape (`/metrics`).
//!
//! The figures are [`crate::metrics::compute`] over the database history of each pool (a
//! cluster's GPUs of one model) in a window: the last 24 hours, 7 days, 30 days, a budget
//! period, or (API) any `from`..`to`. Finance and admins see every project; a lead sees the
//! pool-wide availability, occupancy, utilization and preemption rate (aggregates that name no
//! project) and, over the projects of their subtree only, impact, waits and the project table.
//! Researchers are refused.

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser};
use crate::error::AppError;
use crate::export::Cell;
use crate::i18n::{self, t, t1};
use crate::metrics::{self, Figures, ProjectShare, history};
use crate::state::AppState;
use crate::web::input::Query;
use crate::web::{Layout, charts, int, render};

/// Longest window the API accepts, s (400 days).
pub const MAX_WINDOW_S: i64 = 400 * 86_400;

/// Query of the page, the CSV and the API.
#[derive(serde::Deserialize, serde::Serialize, Default, Clone, Debug)]
pub struct MetricsQuery {
    /// Cluster name; empty means every cluster.
    #[serde(default)]
    pub cluster: String,
    /// `24h` (default), `7d`, `30d` or `period`.
    #[serde(default)]
    pub window: String,
    /// With `window=period`: the budget period `YYYY-MM` (default the current one).
    #[serde(default)]
    pub period: String,
    /// Window start, RFC 3339 (with `to`, instead of `window`).
    #[serde(default)]
    pub from: String,
    /// Window end (exclusive), RFC 3339; default now.
    #[serde(default)]
    pub to: String,
}

/// The figures of one pool.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PoolFigures {
    /// Cluster name.
    pub cluster: String,
    /// GPU model name.
    pub gpu_model: String,
    /// The figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// A resolved request: the window and the figures of each pool.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Dashboard {
    /// Window start, RFC 3339.
    pub from: String,
    /// Window end (exclusive), RFC 3339.
    pub to: String,
    /// `24h`, `7d`, `30d`, `period` or `custom`.
    pub window: String,
    /// Whether project figures cover every project (finance, admins) or the caller's subtree.
    pub scope: &'static str,
    /// Per pool.
    pub pools: Vec<PoolFigures>,
    /// Drains for repair begun in the window, on every cluster: emptied by themselves versus
    /// needing an admin to stop a protected run ([`crate::db::drains::counts`]).
    pub drains: crate::db::drains::DrainCounts,
}

fn parse_instant(field: &'static str, text: &str) -> Result<jiff::Timestamp, AppError> {
    text.trim().parse::<jiff::Timestamp>().map_err(|_| {
        AppError::invalid(
            field,
            t1(
                "dashboard-bad-instant",
                "got",
                crate::domain::quote(text.trim()),
            ),
        )
    })
}

/// The window `[from, to)` and its name for a query.
///
/// # Errors
/// Invalid window, period or instants (422 with the field).
pub fn resolve_window(
    q: &MetricsQuery,
    site: &crate::config::Site,
    now: jiff::Timestamp,
) -> Result<(i64, i64, String), AppError> {
    let now_s = now.as_second();
    if !q.from.trim().is_empty() || !q.to.trim().is_empty() {
        if q.from.trim().is_empty() {
            return Err(AppError::invalid("from", t("dashboard-from-with-to")));
        }
        let from = parse_instant("from", &q.from)?.as_second();
        if from >= now_s {
            return Err(AppError::invalid("from", t("dashboard-from-before-now")));
        }
        let to = if q.to.trim().is_empty() {
            now_s
        } else {
            parse_instant("to", &q.to)?.as_second()
        };
        if to <= from {
            return Err(AppError::invalid("to", t("dashboard-to-after-from")));
        }
        // Nothing is measured after now: a window reaching past it ends now, as it says.
        let to = to.min(now_s);
        if to - from > MAX_WINDOW_S {
            return Err(AppError::invalid("from", t("dashboard-window-too-long")));
        }
        return Ok((from, to, "custom".into()));
    }
    // A period is read with the period window (given alone, it asks for it); beside another
    // window it would be ignored, so it is refused rather than silently dropped.
    let w = match (q.window.trim(), q.period.trim().is_empty()) {
        ("", false) => "period",
        ("period", _) | (_, true) => q.window.trim(),
        _ => {
            return Err(AppError::invalid(
                "period",
                t("dashboard-period-needs-window"),
            ));
        }
    };
    let span = match w {
        "" | "24h" => 86_400,
        "7d" => 7 * 86_400,
        "30d" => 30 * 86_400,
        "period" => {
            let p = if q.period.trim().is_empty() {
                crate::ledger::Period::containing(now, site)
            } else {
                crate::ledger::reports::parse_report_period(&q.period, site, now)
                    .map_err(|m| AppError::invalid("period", m))?
            };
            let (a, b) = (p.start.as_second(), p.end.as_second().min(now_s));
            if b <= a {
                return Err(AppError::invalid("period", t("dashboard-period-not-begun")));
            }
            return Ok((a, b, "period".into()));
        }
        other => {
            return Err(AppError::invalid(
                "window",
                t1("dashboard-bad-window", "got", crate::domain::quote(other)),
            ));
        }
    };
    Ok((
        now_s - span,
        now_s,
        if w.is_empty() { "24h" } else { w }.into(),
    ))
}

/// A window's end as the page shows it: RFC 3339 as given (English), else the instant in the
/// organisation's time zone in the page's language.
fn window_end(rfc3339: &str, tz: &jiff::tz::TimeZone) -> String {
    match (i18n::current(), rfc3339.parse::<jiff::Timestamp>()) {
        (i18n::Lang::En, _) | (_, Err(_)) => rfc3339.to_string(),
        (_, Ok(at)) => crate::domain::format_local(at, tz),
    }
}

fn rfc3339(s: i64) -> String {
    jiff::Timestamp::from_second(s)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Computes the dashboard for `me`: checks the role, resolves the window and loads each pool.
///
/// # Errors
/// Forbidden for researchers; Invalid query; database errors.
pub async fn dashboard(
    state: &AppState,
    me: &Account,
    q: &MetricsQuery,
) -> Result<Dashboard, AppError> {
    if !me.sees_everything() && me.lead_nodes().next().is_none() {
        return Err(AppError::Forbidden(t("dashboard-forbidden")));
    }
    let now = jiff::Timestamp::now();
    let (from, to, window) = resolve_window(q, &state.site, now)?;
    let cluster = q.cluster.trim();
    if !cluster.is_empty()
        && crate::db::inventory::cluster_id(&state.pool, cluster)
            .await?
            .is_none()
    {
        return Err(AppError::invalid(
            "cluster",
            t1(
                "dashboard-no-such-cluster",
                "name",
                crate::domain::quote(cluster),
            ),
        ));
    }
    // Each part of the window inside an ended budget period is owed by the tree that period
    // ended with (a share changed, a node moved or archived since does not rewrite it), the
    // rest by today's tree (docs/design.md section 2, "Entitlements of ended periods").
    let mut segments: Vec<(Option<i64>, std::sync::Arc<crate::db::tree::TreeView>)> = Vec::new();
    let mut at = from;
    loop {
        let ts = jiff::Timestamp::from_second(at).unwrap_or(now);
        let (_, end) = state.site.periods.period(ts);
        let end_s = end.timestamp().as_second();
        if end.timestamp() > now || end_s <= at {
            segments.push((None, state.tree().await?));
            break;
        }
        let tree = std::sync::Arc::new(
            crate::db::tree::load_period(&state.pool, ts, &state.site.periods, now).await?,
        );
        if end_s >= to {
            segments.push((None, tree));
            break;
        }
        segments.push((Some(end_s), tree));
        at = end_s;
    }
    let tree = std::sync::Arc::clone(&segments[segments.len() - 1].1);
    let everything = me.sees_everything();
    // A project counts when it was live and in the reader's view in some part of the window,
    // with no share in the parts where it was not live.
    let share_in = |t: &crate::db::tree::TreeView, id: i64| {
        t.node(id).filter(|n| n.is_project).map_or(0.0, |n| {
            n.effective.numerator as f64 / n.effective.denominator as f64
        })
    };
    let mut projects: Vec<ProjectShare> = Vec::new();
    for (_, t) in segments.iter().rev() {
        for n in &t.nodes {
            if n.is_project
                && (everything || me.leads(n.id, &t.parents))
                && !projects.iter().any(|p| p.id == n.id)
            {
                projects.push(ProjectShare {
                    id: n.id,
                    name: n.name.clone(),
                    effective_share: share_in(&tree, n.id),
                    before: segments
                        .iter()
                        .filter_map(|(until, t)| until.map(|u| (u, share_in(t, n.id))))
                        .collect(),
                });
            }
        }
    }
    let pools: Vec<(i64, String, i64, String)> = sqlx::query_as(
        "SELECT DISTINCT c.id, c.name, m.id, m.name FROM nodes n JOIN clusters c ON c.id = n.cluster_id \
         JOIN gpu_models m ON m.id = n.gpu_model_id WHERE ($1 = '' OR lower(c.name) = lower($1)) ORDER BY c.name, m.name",
    )
    .bind(cluster)
    .fetch_all(&state.pool)
    .await?;
    let mut out = Vec::with_capacity(pools.len());
    for (cid, cname, mid, mname) in pools {
        let gpus_in = |t: &crate::db::tree::TreeView| {
            t.capacity
                .iter()
                .find(|c| c.cluster == cname && c.gpu_model == mname)
                .map_or(0.0, |c| c.gpus as f64)
        };
        let capacity = gpus_in(&tree);
        let mut h = history::load(
            &state.pool,
            history::Scope {
                cluster: cid,
                gpu_model: mid,
                from,
                to,
                now: now.as_second(),
                project: None,
            },
            projects.clone(),
            capacity,
        )
        .await?;
        // Each ended part's GPUs as recorded for its period.
        h.capacity_before = segments
            .iter()
            .filter_map(|(until, t)| until.map(|u| (u, gpus_in(t))))
            .collect();
        if !everything {
            let mine: std::collections::HashSet<i64> = projects.iter().map(|p| p.id).collect();
            h.runs.retain(|r| mine.contains(&r.project));
        }
        out.push(PoolFigures {
            cluster: cname,
            gpu_model: mname,
            figures: metrics::compute(&h),
        });
    }
    Ok(Dashboard {
        from: rfc3339(from),
        to: rfc3339(to),
        window,
        scope: if everything { "all" } else { "subtree" },
        pools: out,
        drains: crate::db::drains::counts(
            &state.pool,
            jiff::Timestamp::from_second(from).map_err(|e| AppError::Internal(e.into()))?,
            jiff::Timestamp::from_second(to).map_err(|e| AppError::Internal(e.into()))?,
        )
        .await?,
    })
}

/// `v` with `decimals` decimals in the page's language: `0.953` (en), `0,953` (es, eu),
/// rounded as `{:.N}` rounds in every language.
fn fixed(v: f64, decimals: usize) -> String {
    i18n::format::from_plain(i18n::current(), &format!("{v:.decimals$}"))
}

/// A fraction as a percentage with one decimal: `75.0%` (en), `75,0 %` (es), `% 75,0` (eu).
fn pct(v: Option<f64>) -> String {
    v.map_or_else(
        || "–".into(),
        |x| t1("dashboard-percent", "value", fixed(100.0 * x, 1)),
    )
}

fn secs(s: f64) -> String {
    let s = s.round() as i64;
    if s < 120 {
        format!("{} s", int(s))
    } else if s < 7200 {
        // Rounded to the nearest minute (5,389 s is 90 min, not 89).
        format!("{} min", int((s + 30) / 60))
    } else {
        format!("{} h", fixed(s as f64 / 3600.0, 1))
    }
}

fn waits_cell(w: &metrics::Waits) -> String {
    if w.runs == 0 {
        "–".into()
    } else {
        format!(
            "{} / {} ({})",
            secs(w.p50_s),
            secs(w.p90_s),
            int(w.runs as i64)
        )
    }
}

struct PoolView {
    cluster: String,
    gpu_model: String,
    cells: Vec<String>,
}

struct ProjectView {
    cluster: String,
    gpu_model: String,
    name: String,
    owed: String,
    received: String,
    impact: String,
}

#[derive(askama::Template)]
#[template(path = "dashboard.html")]
struct DashboardPage {
    layout: Layout,
    windows: Vec<(&'static str, String)>,
    window: String,
    /// Recent budget periods: (`YYYY-MM`, as shown).
    periods: Vec<(String, String)>,
    period: String,
    clusters: Vec<String>,
    cluster: String,
    query: String,
    from: String,
    to: String,
    subtree: bool,
    pools: Vec<PoolView>,
    projects: Vec<ProjectView>,
    pools_svg: String,
    impact_svg: String,
    drains: String,
}

/// The drains sentence of the page.
fn drains_text(c: &crate::db::drains::DrainCounts) -> String {
    if c.drains == 0 {
        return t("dashboard-no-drains");
    }
    let share = c.needed_human_fraction().map_or_else(String::new, |f| {
        t1(
            "dashboard-drains-human-share",
            "percent",
            fixed(100.0 * f, 0),
        )
    });
    i18n::ta(
        "dashboard-drains",
        &[
            ("count", &c.drains),
            ("emptied", &c.emptied_by_themselves),
            ("human", &c.needed_human),
            ("share", &share),
            ("emptying", &c.in_progress),
        ],
    )
}

fn h1(v: f64) -> String {
    fixed(v, 1)
}

async fn page(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Query(q): Query<MetricsQuery>,
) -> Result<Response, AppError> {
    let d = dashboard(&state, &me, &q).await?;
    let mut pools = Vec::new();
    let mut projects = Vec::new();
    let mut pool_bars: Vec<(String, f64, f64)> = Vec::new();
    let mut owed: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
    for p in &d.pools {
        let f = &p.figures;
        pools.push(PoolView {
            cluster: p.cluster.clone(),
            gpu_model: p.gpu_model.clone(),
            cells: vec![
                pct(f.availability),
                pct(f.occupancy),
                pct(f.occupancy_allocated),
                pct(f.occupancy_unallocated),
                fixed(f.impact, 3),
                pct(f.projects_served_share),
                pct(f.utilization),
                waits_cell(&f.waits.debug),
                waits_cell(&f.waits.protected),
                waits_cell(&f.waits.unallocated),
                format!(
                    "{} ({})",
                    int(f.preemptions as i64),
                    fixed(f.preemptions_per_1000_gpu_hours, 2)
                ),
            ],
        });
        pool_bars.push((
            format!("{} {}", p.cluster, p.gpu_model),
            100.0 * f.occupancy_allocated.unwrap_or(0.0),
            100.0 * f.occupancy_unallocated.unwrap_or(0.0),
        ));
        for pr in f
            .projects
            .iter()
            .filter(|x| x.owed_gpu_hours > 0.0 || x.received_gpu_hours > 0.0)
        {
            let e = owed.entry(pr.name.clone()).or_default();
            e.0 += pr.owed_gpu_hours;
            e.1 += pr.received_of_owed_gpu_hours;
            projects.push(ProjectView {
                cluster: p.cluster.clone(),
                gpu_model: p.gpu_model.clone(),
                name: pr.name.clone(),
                owed: h1(pr.owed_gpu_hours),
                received: h1(pr.received_gpu_hours),
                impact: pr.impact.map_or_else(|| "–".into(), |x| fixed(x, 3)),
            });
        }
    }
    let mut top: Vec<(String, f64, f64)> = owed.into_iter().map(|(k, (a, b))| (k, a, b)).collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(12);
    let now = jiff::Timestamp::now();
    let query = serde_urlencoded::to_string(&q).unwrap_or_default();
    render(&DashboardPage {
        layout: Layout::for_user(&session, &me, "/dashboard").await?,
        windows: vec![
            ("24h", t("dashboard-window-24h")),
            ("7d", t("dashboard-window-7d")),
            ("30d", t("dashboard-window-30d")),
            ("period", t("dashboard-window-period")),
        ],
        window: d.window.clone(),
        // The periods a report covers up to the current one (a window cannot begin later).
        periods: crate::ledger::reports::recent_periods(now, &state.site, 25)
            .iter()
            .rev()
            .map(|p| {
                let value = p.label(&state.site);
                let label = match i18n::current() {
                    i18n::Lang::En => value.clone(),
                    lang => i18n::format::month_year(lang, p.month(&state.site)),
                };
                (value, label)
            })
            .collect(),
        period: q.period.trim().to_string(),
        clusters: crate::db::inventory::clusters(&state.pool)
            .await?
            .into_iter()
            .map(|c| c.name)
            .collect(),
        cluster: q.cluster.trim().to_string(),
        query,
        from: window_end(&d.from, &state.site.time_zone),
        to: window_end(&d.to, &state.site.time_zone),
        subtree: d.scope == "subtree",
        drains: drains_text(&d.drains),
        pools,
        projects,
        pools_svg: charts::two_series(
            &t("dashboard-chart-occupancy"),
            &pool_bars,
            (
                &t("dashboard-chart-allocated"),
                &t("dashboard-chart-unallocated"),
            ),
            &t("dashboard-chart-occupancy-axis"),
            charts::Arrangement::Stacked,
        ),
        impact_svg: charts::two_series(
            &t("dashboard-chart-owed"),
            &top,
            (
                &t("dashboard-chart-owed-series"),
                &t("dashboard-chart-received-series"),
            ),
            &t("dashboard-chart-gpu-hours"),
            charts::Arrangement::SideBySide,
        ),
    })
}

/// The CSV header of [`csv_rows`].
pub const CSV_HEADER: [&str; 29] = [
    "from",
    "to",
    "cluster",
    "gpu_model",
    "project",
    "installed_gpu_hours",
    "healthy_gpu_hours",
    "availability",
    "allocated_gpu_hours",
    "unallocated_gpu_hours",
    "occupancy",
    "occupancy_allocated",
    "occupancy_unallocated",
    "owed_gpu_hours",
    "received_gpu_hours",
    "impact",
    "projects_served_share",
    "utilization",
    "debug_wait_p50_s",
    "debug_wait_p90_s",
    "protected_wait_p50_s",
    "protected_wait_p90_s",
    "unallocated_wait_p50_s",
    "unallocated_wait_p90_s",
    "all_wait_p50_s",
    "all_wait_p90_s",
    "preemptions",
    "preemptions_per_1000_gpu_hours",
    "utilization_coverage",
];

/// One row per pool (project empty) and one per project of each pool (pool-only columns empty).
pub fn csv_rows(d: &Dashboard) -> Vec<Vec<Cell>> {
    let o = |v: Option<f64>| Cell::number(v.map_or_else(String::new, |x| format!("{x:.6}")));
    let n = |v: f64| Cell::number(format!("{v:.6}"));
    let e = || Cell::number("");
    let mut rows = Vec::new();
    for p in &d.pools {
        let f = &p.figures;
        let owed: f64 = f.projects.iter().map(|x| x.owed_gpu_hours).sum();
        let received: f64 = f.projects.iter().map(|x| x.received_gpu_hours).sum();
        rows.push(vec![
            Cell::text(&d.from),
            Cell::text(&d.to),
            Cell::text(&p.cluster),
            Cell::text(&p.gpu_model),
            Cell::text(""),
            n(f.installed_gpu_hours),
            n(f.healthy_gpu_hours),
            o(f.availability),
            n(f.allocated_gpu_hours),
            n(f.unallocated_gpu_hours),
            o(f.occupancy),
            o(f.occupancy_allocated),
            o(f.occupancy_unallocated),
            n(owed),
            n(received),
            n(f.impact),
            o(f.projects_served_share),
            o(f.utilization),
            n(f.waits.debug.p50_s),
            n(f.waits.debug.p90_s),
            n(f.waits.protected.p50_s),
            n(f.waits.protected.p90_s),
            n(f.waits.unallocated.p50_s),
            n(f.waits.unallocated.p90_s),
            n(f.waits.all.p50_s),
            n(f.waits.all.p90_s),
            Cell::number(f.preemptions.to_string()),
            n(f.preemptions_per_1000_gpu_hours),
            o(f.utilization_coverage),
        ]);
        for pr in &f.projects {
            let mut row = vec![
                Cell::text(&d.from),
                Cell::text(&d.to),
                Cell::text(&p.cluster),
                Cell::text(&p.gpu_model),
                Cell::text(&pr.name),
            ];
            row.extend((0..8).map(|_| e()));
            row.push(n(pr.owed_gpu_hours));
            row.push(n(pr.received_gpu_hours));
            row.push(o(pr.impact));
            row.extend((row.len()..CSV_HEADER.len()).map(|_| e()));
            rows.push(row);
        }
    }
    rows
}

async fn csv_export(
    State(state): State<AppState>,
    CurrentUser(me): CurrentUser,
    Query(q): Query<MetricsQuery>,
) -> Result<Response, AppError> {
    let d = dashboard(&state, &me, &q).await?;
    let body = crate::export::csv(&CSV_HEADER, csv_rows(&d))?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"tranche-metrics.csv\"".to_string(),
            ),
        ],
        body,
    )
        .into_response())
}

/// `GET /metrics`: the Prometheus exposition, for a scraper presenting
/// `Authorization: Bearer TRANCHE_METRICS_TOKEN`. Off (404) while no token is configured;
/// 401 with `WWW-Authenticate: Bearer` for a missing or wrong token.
///
/// # Errors
/// Database errors while reading the gauges.
pub async fn prometheus(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
) -> Result<Response, AppError> {
    let Some(token) = &state.site.metrics_token else {
        return Err(AppError::NotFound(crate::i18n::t("error-no-such-page")));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let good: bool =
        subtle::ConstantTimeEq::ct_eq(given.as_bytes(), token.expose().as_bytes()).into();
    if !good {
        return Ok((
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required to scrape /metrics\n",
        )
            .into_response());
    }
    let body = state.metrics.render(&state.pool, &state.site).await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response())
}

/// The matched route template of a request, carried on its response for [`count_requests`].
#[derive(Clone)]
struct RouteTemplate(String);

/// Inner half of the request counter (a route layer: runs only for matched routes): copies the
/// matched path template onto the response.
pub async fn tag_route(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let mut res = next.run(req).await;
    if let Some(r) = route {
        res.extensions_mut().insert(RouteTemplate(r));
    }
    res
}

/// Outer half of the request counter: counts every answered request by route template
/// (`unmatched` for the fallbacks), method and status in `tranche_http_requests_total`.
pub async fn count_requests(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let method = req.method().as_str().to_string();
    let res = next.run(req).await;
    let route = res
        .extensions()
        .get::<RouteTemplate>()
        .map_or("unmatched", |r| r.0.as_str());
    let method = match method.as_str() {
        "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" => method.as_str(),
        _ => "other",
    };
    state
        .metrics
        .http_request(route, method, res.status().as_u16());
    res
}

/// `GET /dashboard` and `GET /dashboard.csv`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/dashboard", get(page))
        .route("/dashboard.csv", get(csv_export))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::drains::DrainCounts;
    use crate::i18n::{Lang, sync_scope};

    /// A custom window reaching past now ends now (nothing is measured later); one that begins
    /// at or after now is refused on `from`.
    #[test]
    fn a_custom_window_ends_at_now_at_the_latest() {
        let site = crate::config::Site::for_tests();
        let now: jiff::Timestamp = "2026-12-06T12:00:00Z".parse().unwrap();
        let q = |from: &str, to: &str| MetricsQuery {
            from: from.into(),
            to: to.into(),
            ..MetricsQuery::default()
        };
        let (from, to, w) = resolve_window(
            &q("2026-12-06T00:00:00Z", "2027-06-01T00:00:00Z"),
            &site,
            now,
        )
        .unwrap();
        assert_eq!(
            (from, to, w.as_str()),
            (now.as_second() - 12 * 3600, now.as_second(), "custom")
        );
        let e = resolve_window(
            &q("2026-12-07T00:00:00Z", "2026-12-08T00:00:00Z"),
            &site,
            now,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                AppError::Invalid {
                    field: Some("from"),
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn figures_and_the_drains_sentence_in_three_languages() {
        let c = DrainCounts {
            drains: 1,
            emptied_by_themselves: 1,
            needed_human: 0,
            in_progress: 0,
        };
        assert_eq!(
            sync_scope(Lang::En, || drains_text(&c)),
            "1 drains for repair began in this window: 1 emptied by themselves, 0 needed an admin to stop a protected run (0% of finished drains needed a human), 0 still emptying."
        );
        assert_eq!(
            sync_scope(Lang::Es, || drains_text(&c)),
            "En este intervalo empezó 1 vaciado para reparación: 1 se vació solo, 0 necesitaron que la administración detuviera una ejecución protegida (el 0 % de los vaciados terminados necesitó a una persona) y 0 siguen vaciándose."
        );
        assert_eq!(
            sync_scope(Lang::Eu, || drains_text(&DrainCounts::default())),
            "Tarte honetan ez da nodorik hustu konpontzeko."
        );
        assert_eq!(sync_scope(Lang::En, || pct(Some(0.75))), "75.0%");
        assert_eq!(sync_scope(Lang::Es, || pct(Some(0.75))), "75,0 %");
        assert_eq!(sync_scope(Lang::Eu, || pct(Some(0.125))), "% 12,5");
        assert_eq!(sync_scope(Lang::Eu, || secs(5400.0)), "90 min");
        // Minutes are rounded, not cut: 5,389 s is 89.8 min.
        assert_eq!(sync_scope(Lang::En, || secs(5389.0)), "90 min");
        assert_eq!(sync_scope(Lang::En, || secs(6329.0)), "105 min");
        assert_eq!(sync_scope(Lang::Es, || secs(9000.0)), "2,5 h");
        assert_eq!(sync_scope(Lang::En, || fixed(0.9534, 3)), "0.953");
        assert_eq!(sync_scope(Lang::Eu, || fixed(1234.56, 1)), "1.234,6");
    }
}
