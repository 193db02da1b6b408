//! Capacity calendar, contract purchase with a price preview, the contract list and
//! cancellation.

use axum::Router;
use axum::extract::State;

use crate::web::input::{Form, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser};
use crate::db::inventory;
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::ledger::contracts::{self, Request};
use crate::ledger::to_jiff;
use crate::state::AppState;
use crate::web::{Layout, PagePath, flash, render, render_status};

struct Cell {
    color: String,
    title: String,
    /// The GPUs still contractable in the hour; `None` outside the calendar.
    free: Option<i64>,
    /// The same as shown.
    text: String,
}

struct Day {
    label: String,
    date: String,
    /// The buy link's window (local `YYYY-MM-DDTHH:MM`), see [`buy_window`]; none when no
    /// hour of the day can still be bought.
    buy: Option<(String, String)>,
    max_contracted: i64,
    min_free: i64,
    /// `max_contracted` and `min_free` as shown.
    max_shown: String,
    min_shown: String,
    cells: Vec<Cell>,
}

/// The capacity calendar's suggested window for `day` (local times as the contract form
/// reads them): 09:00 to 17:00; on the day `now` falls in, from the next full hour on when
/// 09:00 has passed, to 17:00 or eight hours later when that is past 17:00; never past the
/// last full hour contracts can be bought until ([`contracts::HORIZON_SECONDS`] from `now`),
/// and `None` when that leaves nothing.
fn buy_window(day: jiff::civil::Date, now: &jiff::Zoned) -> Option<(String, String)> {
    let at = |d: jiff::civil::Date, h: i8| d.at(h, 0, 0, 0);
    let (mut start, mut end) = (at(day, 9), at(day, 17));
    if day == now.date() {
        let next = now
            .datetime()
            .round(
                jiff::civil::DateTimeRound::new()
                    .smallest(jiff::Unit::Hour)
                    .mode(jiff::RoundMode::Ceil),
            )
            .unwrap_or(start);
        if next > start {
            start = next;
            if start >= end {
                end = start.saturating_add(jiff::SignedDuration::from_hours(8));
            }
        }
    }
    let horizon = now
        .saturating_add(jiff::SignedDuration::from_secs(contracts::HORIZON_SECONDS))
        .datetime()
        .round(
            jiff::civil::DateTimeRound::new()
                .smallest(jiff::Unit::Hour)
                .mode(jiff::RoundMode::Floor),
        )
        .ok()?;
    end = end.min(horizon);
    if end <= start {
        return None;
    }
    let show = |t: jiff::civil::DateTime| t.strftime("%Y-%m-%dT%H:%M").to_string();
    Some((show(start), show(end)))
}

struct CalendarView {
    cluster: String,
    gpu_model: String,
    /// The installed and contractable GPUs and the contractable percentage, in a sentence
    /// (HTML of numbers only).
    intro_html: String,
    days: Vec<Day>,
}

#[derive(askama::Template)]
#[template(path = "capacity.html")]
struct CapacityPage {
    layout: Layout,
    pools: Vec<(String, String)>,
    selected: String,
    cal: Option<CalendarView>,
    time_zone: String,
    can_buy: bool,
}

#[derive(serde::Deserialize, Default)]
struct PoolQuery {
    #[serde(default)]
    pool: String,
}

/// Whether the account may buy contracts for some project (admin or any lead).
fn can_buy(me: &Account) -> bool {
    me.is_admin() || me.lead_nodes().next().is_some()
}

/// A colour from green (free) to red (fully contracted) for a used fraction.
fn heat(used: i64, of: i64) -> String {
    if of <= 0 {
        return "#eee".into();
    }
    let f = (used as f64 / of as f64).clamp(0.0, 1.0);
    let hue = 130.0 * (1.0 - f);
    format!("hsl({hue:.0}, 60%, {:.0}%)", 88.0 - 20.0 * f)
}

async fn capacity(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Query(q): Query<PoolQuery>,
) -> Result<Response, AppError> {
    let clusters = inventory::clusters(&state.pool).await?;
    let pools: Vec<(String, String)> = clusters
        .iter()
        .flat_map(|c| {
            c.gpus.iter().map(move |(m, n)| {
                (
                    format!("{}/{}", c.name, m),
                    format!(
                        "{} — {}",
                        c.name,
                        crate::i18n::t2(
                            "inventory-gpus-of-model",
                            "count",
                            crate::web::int(*n),
                            "model",
                            m
                        )
                    ),
                )
            })
        })
        .collect();
    let selected = if pools.iter().any(|(v, _)| *v == q.pool) {
        q.pool.clone()
    } else {
        pools.first().map(|p| p.0.clone()).unwrap_or_default()
    };
    let cal = match selected.split_once('/') {
        Some((cluster, model)) => {
            // Both come from the inventory listed just above.
            let missing = || {
                AppError::NotFound(crate::i18n::t1(
                    "capacity-no-pool",
                    "pool",
                    crate::domain::quote(&selected),
                ))
            };
            let cluster_id = inventory::cluster_id(&state.pool, cluster)
                .await?
                .ok_or_else(missing)?;
            let model_id = inventory::gpu_model_id(&state.pool, model)
                .await?
                .ok_or_else(missing)?;
            let now = jiff::Timestamp::now();
            let cal =
                contracts::calendar(&state.pool, &state.site, cluster_id, model_id, now).await?;
            let tz = &state.site.time_zone;
            let lang = crate::i18n::current();
            let mut days: Vec<Day> = Vec::new();
            for slot in &cal.hours {
                let local = slot.start.to_zoned(tz.clone());
                let date = local.date().to_string();
                if days.last().is_none_or(|d| d.date != date) {
                    let buy = buy_window(local.date(), &now.to_zoned(tz.clone()));
                    days.push(Day {
                        label: crate::i18n::format::weekday_date(lang, local.date()),
                        date: date.clone(),
                        buy,
                        max_contracted: 0,
                        min_free: cal.contractable,
                        max_shown: String::new(),
                        min_shown: String::new(),
                        cells: (0..24)
                            .map(|_| Cell {
                                color: "#f4f4f4".into(),
                                title: crate::i18n::t("capacity-cell-past"),
                                free: None,
                                text: String::new(),
                            })
                            .collect(),
                    });
                }
                let day = days.last_mut().expect("pushed above");
                // Contracts bought before nodes went down may exceed what is contractable now:
                // none is left then, not a negative number.
                let free = (cal.contractable - slot.contracted).max(0);
                day.max_contracted = day.max_contracted.max(slot.contracted);
                day.min_free = day.min_free.min(free);
                let cell = &mut day.cells[usize::from(local.hour() as u8)];
                // A repeated hour (clocks going back) shows its busier occurrence.
                let shown_free = cell.free.map_or(free, |f| free.min(f));
                *cell = Cell {
                    color: heat(cal.contractable - shown_free, cal.contractable),
                    title: crate::i18n::ta(
                        "capacity-cell",
                        &[
                            (
                                "date",
                                &match lang {
                                    crate::i18n::Lang::En => date.clone(),
                                    _ => crate::i18n::format::medium_date(lang, local.date()),
                                },
                            ),
                            ("time", &local.strftime("%H:%M %:z").to_string()),
                            ("contracted", &crate::web::int(slot.contracted)),
                            ("left", &crate::web::int(shown_free)),
                        ],
                    ),
                    free: Some(shown_free),
                    text: crate::web::int(shown_free),
                };
            }
            for day in &mut days {
                day.max_shown = crate::web::int(day.max_contracted);
                day.min_shown = crate::web::int(day.min_free);
            }
            Some(CalendarView {
                cluster: cluster.to_string(),
                gpu_model: model.to_string(),
                intro_html: crate::i18n::ta(
                    "capacity-intro",
                    &[
                        ("installed", &crate::web::int(cal.installed)),
                        ("contractable", &crate::web::int(cal.contractable)),
                        (
                            "percent",
                            &crate::web::int(i64::from(state.site.contractable_percent)),
                        ),
                    ],
                ),
                days,
            })
        }
        None => None,
    };
    render(&CapacityPage {
        layout: Layout::for_user(&session, &me, "/capacity").await?,
        pools,
        selected,
        cal,
        time_zone: state.site.time_zone_name.clone(),
        can_buy: can_buy(&me),
    })
}

/// The purchase form's fields, kept as typed.
#[derive(serde::Deserialize, Default, Clone)]
struct ContractForm {
    #[serde(default)]
    project: String,
    #[serde(default)]
    cluster: String,
    #[serde(default)]
    gpu_model: String,
    #[serde(default)]
    gpus: String,
    #[serde(default)]
    start: String,
    #[serde(default)]
    end: String,
    /// The one-time token of the preview being confirmed.
    #[serde(default)]
    quote: String,
}

/// Session key of the preview awaiting confirmation: (one-time token, quoted price).
const QUOTE: &str = "contract_quote";

struct QuoteView {
    start_local: String,
    end_local: String,
    start_utc: String,
    end_utc: String,
    hours: String,
    /// The window's exact length in words (`1 h 20 min`), for the price formula.
    length: String,
    gpu_hours: String,
    price: String,
    weight: String,
    unit_price: String,
    balance: String,
    balance_after: String,
    /// GPU counts, written for the page's language.
    peak: String,
    contractable: String,
}

#[derive(askama::Template)]
#[template(path = "contract_form.html")]
struct ContractFormPage {
    layout: Layout,
    time_zone: String,
    error: Option<String>,
    quote: Option<QuoteView>,
    hidden: Vec<(&'static str, String)>,
    form: ContractForm,
    projects: Vec<String>,
    clusters: Vec<String>,
    models: Vec<String>,
}

impl ContractFormPage {
    /// How the previewed price is made: `= 2 GPUs × 1 h 20 min × weight 1.5 × 2.50 USD per
    /// weighted GPU-hour`: the window's exact length, so the product is the price before its
    /// rounding to the cent.
    fn formula(&self, q: &QuoteView) -> String {
        let gpus = self.form.gpus.trim().parse::<i64>().unwrap_or_default();
        i18n::ta(
            "contract-price-formula",
            &[
                ("gpus", &gpus),
                ("length", &q.length),
                ("weight", &q.weight),
                ("unit", &q.unit_price),
            ],
        )
    }
}

/// Parses the form into a request, naming the field at fault.
fn parse_form(f: &ContractForm, state: &AppState) -> Result<Request, AppError> {
    // The range (1 to the GPUs installed) is checked with the pool's numbers on admission.
    let gpus = f.gpus.trim().parse::<i64>().map_err(|_| {
        AppError::invalid(
            "gpus",
            i18n::t1("err-gpus-whole", "got", crate::domain::quote(f.gpus.trim())),
        )
    })?;
    let site = &state.site;
    let start = domain::parse_instant(&f.start, &site.time_zone, &site.time_zone_name)
        .map_err(|m| AppError::invalid("start", i18n::t1("contract-err-start", "problem", m)))?;
    let end = domain::parse_instant(&f.end, &site.time_zone, &site.time_zone_name)
        .map_err(|m| AppError::invalid("end", i18n::t1("contract-err-end", "problem", m)))?;
    Ok(Request {
        project: f.project.clone(),
        cluster: f.cluster.clone(),
        gpu_model: f.gpu_model.clone(),
        gpus,
        start,
        end,
        expected_price_minor: None,
    })
}

async fn form_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    form: ContractForm,
    error: Option<String>,
    quote: Option<QuoteView>,
) -> Result<Response, AppError> {
    if !can_buy(me) {
        return Err(AppError::Forbidden(i18n::t("contract-only-leads")));
    }
    let tree = state.tree().await?;
    let projects = tree
        .nodes
        .iter()
        .filter(|n| n.is_project && me.leads(n.id, &tree.parents))
        .map(|n| n.name.clone())
        .collect();
    let inv = inventory::clusters(&state.pool).await?;
    let mut models: Vec<String> = inv
        .iter()
        .flat_map(|c| c.gpus.iter().map(|(m, _)| m.clone()))
        .collect();
    models.sort();
    models.dedup();
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let hidden = vec![
        ("project", form.project.clone()),
        ("cluster", form.cluster.clone()),
        ("gpu_model", form.gpu_model.clone()),
        ("gpus", form.gpus.clone()),
        ("start", form.start.clone()),
        ("end", form.end.clone()),
        ("quote", form.quote.clone()),
    ];
    render_status(
        status,
        &ContractFormPage {
            layout: Layout::for_user(session, me, "/contracts").await?,
            time_zone: state.site.time_zone_name.clone(),
            error,
            quote,
            hidden,
            form,
            projects,
            clusters: inv.iter().map(|c| c.name.clone()).collect(),
            models,
        },
    )
}

async fn new_contract(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Query(form): Query<ContractForm>,
) -> Result<Response, AppError> {
    form_page(&state, &session, &me, form, None, None).await
}

async fn preview(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(form): Form<ContractForm>,
) -> Result<Response, AppError> {
    let now = jiff::Timestamp::now();
    let result = match parse_form(&form, &state) {
        Ok(req) => contracts::quote(&state.pool, &state.site, &me, &req, now)
            .await
            .map(|q| (req, q)),
        Err(e) => Err(e),
    };
    match result {
        Ok((req, q)) => {
            let tz = &state.site.time_zone;
            let cur = &state.site.currency;
            let view = QuoteView {
                start_local: domain::format_local_exact(req.start, tz),
                end_local: domain::format_local_exact(req.end, tz),
                start_utc: req.start.to_string(),
                end_utc: req.end.to_string(),
                hours: i18n::format::hours(q.seconds),
                length: i18n::format::duration(q.seconds),
                gpu_hours: domain::format_protected_gpu_hours(
                    (q.gpu_hours * 1000.0).round() as i64,
                    false,
                ),
                price: Money(q.price_minor).display(cur),
                weight: i18n::format::milli(q.billing_weight_milli),
                unit_price: i18n::t1(
                    "contract-unit-price",
                    "price",
                    Money(q.price_per_gpu_hour_minor).display(cur),
                ),
                balance: Money(q.balance_minor).display(cur),
                balance_after: Money(q.balance_minor - q.price_minor).display(cur),
                peak: i18n::format::count(q.peak_contracted),
                contractable: i18n::format::count(q.contractable),
            };
            // A one-time token ties the confirmation to this preview and its price.
            let token = crate::auth::random_hex(16);
            session
                .insert(QUOTE, (&token, q.price_minor))
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            let form = ContractForm {
                quote: token,
                ..form
            };
            form_page(&state, &session, &me, form, None, Some(view)).await
        }
        Err(
            AppError::Invalid { message, .. }
            | AppError::Refused { message, .. }
            | AppError::Forbidden(message)
            | AppError::NotFound(message),
        ) => form_page(&state, &session, &me, form, Some(message), None).await,
        Err(e) => Err(e),
    }
}

async fn buy(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(form): Form<ContractForm>,
) -> Result<Response, AppError> {
    // Consume the preview's token first: a second submission of the same form buys nothing.
    let quoted = session
        .remove::<(String, i64)>(QUOTE)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    // The same confirmation sent twice (a double click): the second finds its preview used by
    // the purchase the first made, and goes where the first went (found by a new-user check:
    // it showed "this preview was already used", and the lead might have bought again).
    if !form.quote.is_empty() && quoted.as_ref().is_none_or(|(t, _)| *t != form.quote) {
        let bought: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT id, project_id, price_minor FROM contracts WHERE preview_token = $1 AND bought_by = $2",
        )
        .bind(&form.quote)
        .bind(me.id)
        .fetch_optional(&state.pool)
        .await?;
        if let Some((id, project, price)) = bought {
            flash(
                &session,
                i18n::t2(
                    "contract-bought",
                    "id",
                    id.to_string(),
                    "price",
                    Money(price).display(&state.site.currency),
                ),
            )
            .await?;
            return Ok(Redirect::to(&format!("/projects/{project}")).into_response());
        }
    }
    let result = match (quoted, parse_form(&form, &state)) {
        (Some((token, price)), Ok(req)) if !form.quote.is_empty() && token == form.quote => {
            let req = Request {
                expected_price_minor: Some(price),
                ..req
            };
            contracts::buy_once(
                &state.pool,
                &state.site,
                &me,
                &req,
                jiff::Timestamp::now(),
                Some(contracts::Once::Preview(&token)),
            )
            .await
            .map(|p| match p {
                contracts::Purchase::Bought(c, _) | contracts::Purchase::Repeated(c) => c,
            })
        }
        (_, Err(e)) => Err(e),
        _ => Err(AppError::invalid("quote", i18n::t("contract-expired"))),
    };
    match result {
        Ok(c) => {
            crate::web::check_alerts(&state).await;
            flash(
                &session,
                i18n::t2(
                    "contract-bought",
                    "id",
                    c.id.to_string(),
                    "price",
                    Money(c.price_minor).display(&state.site.currency),
                ),
            )
            .await?;
            Ok(Redirect::to(&format!("/projects/{}", c.project_id)).into_response())
        }
        Err(
            AppError::Invalid { message, .. }
            | AppError::Refused { message, .. }
            | AppError::Forbidden(message)
            | AppError::NotFound(message),
        ) => form_page(&state, &session, &me, form, Some(message), None).await,
        Err(e) => Err(e),
    }
}

struct ContractRow {
    id: i64,
    project: String,
    gpus: i32,
    gpu_model: String,
    cluster: String,
    window: String,
    price: String,
    state: String,
    can_cancel: bool,
    refund: String,
}

#[derive(askama::Template)]
#[template(path = "contracts.html")]
struct ContractsPage {
    layout: Layout,
    error: Option<String>,
    rows: Vec<ContractRow>,
    time_zone: String,
    can_buy: bool,
}

/// Formats a contract window in the site's zone with both offsets and its real length.
pub fn window_label(
    start: time::OffsetDateTime,
    end: time::OffsetDateTime,
    tz: &jiff::tz::TimeZone,
) -> String {
    let (s, e) = (to_jiff(start), to_jiff(end));
    i18n::ta(
        "contract-window",
        &[
            ("start", &domain::format_local_exact(s, tz)),
            ("end", &domain::format_local_exact(e, tz)),
            ("hours", &i18n::format::hours(e.as_second() - s.as_second())),
        ],
    )
}

/// A contract's state in the page's language: `scheduled` (active, its window not begun),
/// `active`, `cancelled`, or `cancelled, 12.00 USD refunded`; a state the files do not name as
/// it is stored.
pub fn state_words(c: &contracts::Contract, currency: &str) -> String {
    if c.state == "active" && to_jiff(c.starts_at) > jiff::Timestamp::now() {
        return i18n::t("contract-state-scheduled");
    }
    match c.refund_minor {
        Some(r) if c.state == "cancelled" => i18n::t1(
            "contract-state-refunded",
            "refund",
            Money(r).display(currency),
        ),
        _ => {
            let key = format!("contract-state-{}", c.state);
            let words = i18n::t(&key);
            if words == key { c.state.clone() } else { words }
        }
    }
}

async fn list_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    error: Option<String>,
) -> Result<Response, AppError> {
    let now = jiff::Timestamp::now();
    let tree = state.tree().await?;
    let cur = &state.site.currency;
    let rows = contracts::visible(&state.pool, me, None, None)
        .await?
        .into_iter()
        .map(|c| ContractRow {
            state: state_words(&c, cur),
            id: c.id,
            can_cancel: c.state == "active"
                && to_jiff(c.starts_at) > now
                && me.leads(c.project_id, &tree.parents),
            refund: Money(c.price_minor * i64::from(state.site.refund_percent) / 100).display(cur),
            project: c.project,
            gpus: c.gpus,
            gpu_model: c.gpu_model,
            cluster: c.cluster,
            window: window_label(c.starts_at, c.ends_at, &state.site.time_zone),
            price: Money(c.price_minor).display(cur),
        })
        .collect();
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    render_status(
        status,
        &ContractsPage {
            layout: Layout::for_user(session, me, "/contracts").await?,
            error,
            rows,
            time_zone: state.site.time_zone_name.clone(),
            can_buy: can_buy(me),
        },
    )
}

async fn list(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    list_page(&state, &session, &me, None).await
}

async fn cancel(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    match contracts::cancel(&state.pool, &state.site, &me, id, jiff::Timestamp::now()).await {
        Ok(c) => {
            flash(
                &session,
                i18n::t2(
                    "contract-cancelled",
                    "id",
                    c.id.to_string(),
                    "refund",
                    Money(c.refund_minor.unwrap_or(0)).display(&state.site.currency),
                ),
            )
            .await?;
            Ok(Redirect::to("/contracts").into_response())
        }
        Err(AppError::Invalid { message, .. } | AppError::Refused { message, .. }) => {
            list_page(&state, &session, &me, Some(message)).await
        }
        Err(e) => Err(e),
    }
}

/// Capacity and contract routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/capacity", get(capacity))
        .route("/contracts", get(list).post(buy))
        .route("/contracts/new", get(new_contract))
        .route("/contracts/preview", post(preview))
        .route("/contracts/{id}/cancel", post(cancel))
}

#[cfg(test)]
mod tests {
    use super::buy_window;

    /// The suggested window never starts in the past: on the current day it starts at the
    /// next full hour once 09:00 has passed (the tester opened the calendar at 17:18 and the
    /// link's 09:00 start was refused as "in the past").
    #[test]
    fn the_buy_link_of_today_starts_at_the_next_full_hour() {
        let tz = jiff::tz::TimeZone::get("Europe/Madrid").unwrap();
        let day = jiff::civil::date(2026, 12, 5);
        let at = |h: i8, m: i8| day.at(h, m, 0, 0).to_zoned(tz.clone()).unwrap();
        let w = |now: &jiff::Zoned, d| buy_window(d, now);
        let s = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(
            w(&at(8, 30), day),
            s("2026-12-05T09:00", "2026-12-05T17:00")
        );
        assert_eq!(
            w(&at(10, 0), day),
            s("2026-12-05T10:00", "2026-12-05T17:00")
        );
        assert_eq!(
            w(&at(10, 1), day),
            s("2026-12-05T11:00", "2026-12-05T17:00")
        );
        assert_eq!(
            w(&at(17, 18), day),
            s("2026-12-05T18:00", "2026-12-06T02:00")
        );
        assert_eq!(
            w(&at(23, 30), day),
            s("2026-12-06T00:00", "2026-12-06T08:00")
        );
        let tomorrow = jiff::civil::date(2026, 12, 6);
        assert_eq!(
            w(&at(17, 18), tomorrow),
            s("2026-12-06T09:00", "2026-12-06T17:00")
        );
        // The calendar's last day: contracts can be bought until 8 weeks from now.
        let last = jiff::civil::date(2027, 1, 30);
        assert_eq!(
            w(&at(10, 37), last),
            s("2027-01-30T09:00", "2027-01-30T10:00")
        );
        assert_eq!(w(&at(8, 30), last), None);
    }
}
