//! The AI use-case register's pages (docs/ai-use-cases.md): the register with each use case's
//! spend this month against its limit, registering and editing a use case, its status, and
//! for finance the spend imports (upload with a preview, then confirm), the unassigned lines
//! and the mapping rules.

use axum::Router;
use axum::extract::{FromRequest, Multipart, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::ai::import::Format;
use crate::ai::spend::{self, micro_to_money};
use crate::ai::{self, BAGS, Draft, STATUSES, UseCase};
use crate::auth::{Account, CurrentUser};
use crate::db::tree::TreeView;
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::ledger::Period;
use crate::state::AppState;
use crate::web::input::Form;
use crate::web::{Layout, PagePath, flash, render_status};

/// Session key of an upload waiting for confirmation: (token, format, file name, text, rate).
const UPLOAD: &str = "spend_upload";

/// Whether `me` may register use cases somewhere (admin or any lead).
pub fn may_register(me: &Account) -> bool {
    me.is_admin() || me.lead_nodes().next().is_some()
}

/// The register form as sent: every field text, so a refused form comes back as typed.
#[derive(serde::Deserialize, Default, Clone)]
#[serde(default)]
pub struct UseCaseForm {
    name: String,
    owner: String,
    bag: String,
    allowed_data: String,
    ai_action: String,
    human_review: String,
    monthly_limit: String,
    metric: String,
    stop_rule: String,
    /// Comma-separated service names.
    services: String,
    /// Comma-separated GPU project names.
    projects: String,
    /// Price of an hour of human work, decimal.
    human_hourly_rate: String,
}

impl UseCaseForm {
    fn from_use_case(u: &UseCase) -> Self {
        Self {
            name: u.name.clone(),
            owner: u.owner.clone(),
            bag: u.bag.clone(),
            allowed_data: u.allowed_data.clone(),
            ai_action: u.ai_action.clone(),
            human_review: u.human_review.clone(),
            monthly_limit: Money(u.monthly_limit_minor).input_value(),
            metric: u.metric.clone(),
            stop_rule: u.stop_rule.clone(),
            services: u.services.join(", "),
            projects: u.projects.join(", "),
            human_hourly_rate: Money(u.human_hourly_rate_minor).input_value(),
        }
    }

    fn draft(&self, tree: &TreeView, me: &Account) -> Result<Draft, AppError> {
        let owner = tree
            .nodes
            .iter()
            .find(|n| n.name == self.owner.trim())
            .ok_or_else(|| AppError::invalid("owner", i18n::t("ai-err-owner")))?;
        let monthly_limit = Money::parse(&self.monthly_limit).map_err(|m| {
            AppError::invalid(
                "monthly_limit",
                i18n::t1("ai-err-monthly-limit", "problem", m),
            )
        })?;
        // Required: an empty field is not a rate of 0 (hours not valued), which is typed as 0.
        let human_hourly_rate = match self.human_hourly_rate.trim() {
            "" => {
                return Err(AppError::invalid(
                    "human_hourly_rate",
                    i18n::t("ai-err-hourly-rate-empty"),
                ));
            }
            t => Money::parse(t).map_err(|m| {
                AppError::invalid(
                    "human_hourly_rate",
                    i18n::t1("ai-err-hourly-rate", "problem", m),
                )
            })?,
        };
        let mut project_ids = Vec::new();
        for name in self
            .projects
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let node = tree
                .nodes
                .iter()
                // A project `me` may not see is unknown to them alike.
                .find(|n| n.name == name && n.is_project && me.may_view(n.id, &tree.parents))
                .ok_or_else(|| {
                    AppError::invalid(
                        "projects",
                        i18n::t1("ai-err-not-gpu-project", "name", domain::quote(name)),
                    )
                })?;
            project_ids.push(node.id);
        }
        Ok(Draft {
            name: self.name.clone(),
            owner_node_id: owner.id,
            bag: self.bag.trim().to_string(),
            allowed_data: self.allowed_data.clone(),
            ai_action: self.ai_action.clone(),
            human_review: self.human_review.clone(),
            monthly_limit,
            metric: self.metric.clone(),
            stop_rule: self.stop_rule.clone(),
            services: self.services.split(',').map(str::to_string).collect(),
            project_ids,
            human_hourly_rate,
        })
    }
}

/// One line of the register table.
pub struct RegisterRow {
    id: i64,
    name: String,
    owner: String,
    /// The bag's label in the page's language.
    bag: String,
    /// The status in the page's language.
    status: String,
    spend: String,
    limit: String,
    /// Spend as a percentage of the limit, whole percent, in the page's language (`12%`,
    /// `12 %`, `% 12`).
    pct: String,
    over: bool,
    /// Last month's spend, for the trend.
    previous: String,
    /// Up, down or flat against last month's spend (the month so far, scaled to its length),
    /// in the page's language.
    trend: String,
    /// The latest decision: `continue (November 2026)`, or empty.
    last_decision: String,
    /// Human cost this month.
    human: String,
}

/// The trend of spend so far this month against last month's: the month so far is scaled to
/// a whole month (at least a day elapsed) and compared within ±10%.
pub fn trend(so_far: i64, previous: i64, elapsed_s: i64, length_s: i64) -> &'static str {
    let projected = i128::from(so_far) * i128::from(length_s.max(1))
        / i128::from(elapsed_s.clamp(86_400, length_s.max(86_400)));
    let prev = i128::from(previous);
    if projected * 10 > prev * 11 {
        "up"
    } else if projected * 10 < prev * 9 {
        "down"
    } else {
        "flat"
    }
}

/// A bag's label in the page's language (`Critical systems`); empty for an unknown code.
fn bag_words(code: &str) -> String {
    if BAGS.iter().any(|(c, _)| *c == code) {
        i18n::t(&format!("ai-bag-{code}"))
    } else {
        String::new()
    }
}

/// A code (status, decision, activity, trend) in the page's language, by the message
/// `prefix-code`; the code itself when there is no such message.
fn code_words(prefix: &str, code: &str) -> String {
    let key = format!("{prefix}-{code}");
    let words = i18n::t(&key);
    if words == key {
        code.to_string()
    } else {
        words
    }
}

/// A whole percentage in the page's language: `12%`, `12 %`, `% 12`.
fn percent(pct: i64) -> String {
    i18n::t1("ai-percent", "pct", i18n::format::count(pct))
}

/// The month a budget period starting at `start` is named after
/// ([`crate::ledger::Period::month`]), in the page's language: `November 2026`,
/// `noviembre de 2026`, `2026(e)ko azaroa`.
fn month_words(start: jiff::Timestamp, site: &crate::config::Site) -> String {
    i18n::format::month_year(i18n::current(), site.periods.month(start))
}

fn pct(spent: Money, limit: i64) -> i64 {
    if limit <= 0 {
        return if spent.0 > 0 { 100 } else { 0 };
    }
    (i128::from(spent.0) * 100 / i128::from(limit)) as i64
}

#[derive(askama::Template)]
#[template(path = "ai/list.html")]
struct ListPage {
    layout: Layout,
    month: String,
    rows: Vec<RegisterRow>,
    can_register: bool,
    can_import: bool,
}

async fn list(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let now = jiff::Timestamp::now();
    let period = Period::containing(now, &state.site);
    let previous = Period::containing(
        period.start - jiff::SignedDuration::from_secs(1),
        &state.site,
    );
    let spend = spend::by_use_case(&state.pool, period).await?;
    let before = spend::by_use_case(&state.pool, previous).await?;
    let last = ai::last_reviews(&state.pool).await?;
    let human = ai::human_minutes(&state.pool, period).await?;
    let cur = &state.site.currency;
    let (elapsed, length) = (
        now.as_second() - period.start.as_second(),
        period.end.as_second() - period.start.as_second(),
    );
    let rows = ai::visible(&state.pool, &me, &tree.parents)
        .await?
        .into_iter()
        .map(|u| {
            let s = spend.seen(&u).total();
            let p = before.seen(&u).total();
            let over = spend.whole(&u).total().0 > u.monthly_limit_minor;
            RegisterRow {
                human: ai::human_cost(
                    human.get(&u.id).copied().unwrap_or(0),
                    u.human_hourly_rate_minor,
                )
                .display(cur),
                previous: p.display(cur),
                trend: code_words("ai-trend", trend(s.0, p.0, elapsed, length)),
                last_decision: last
                    .iter()
                    .find(|r| r.use_case_id == u.id)
                    .map(|r| {
                        i18n::t2(
                            "ai-last-decision",
                            "decision",
                            code_words("ai-decision", &r.decision),
                            "month",
                            month_words(crate::ledger::to_jiff(r.period_start), &state.site),
                        )
                    })
                    .unwrap_or_default(),
                id: u.id,
                bag: bag_words(&u.bag),
                pct: percent(pct(s, u.monthly_limit_minor)),
                over,
                spend: s.display(cur),
                limit: Money(u.monthly_limit_minor).display(cur),
                name: u.name,
                owner: u.owner,
                status: code_words("ai-status", &u.status),
            }
        })
        .collect();
    render_status(
        StatusCode::OK,
        &ListPage {
            layout: Layout::for_user(&session, &me, "/ai").await?,
            month: month_words(period.start, &state.site),
            rows,
            can_register: may_register(&me),
            can_import: spend::may_import(&me),
        },
    )
}

#[derive(askama::Template)]
#[template(path = "ai/form.html")]
struct FormPage {
    layout: Layout,
    /// `None` for a new use case.
    id: Option<i64>,
    form: UseCaseForm,
    error: Option<String>,
    owners: Vec<String>,
    projects: Vec<String>,
    /// (code, label in the page's language).
    bags: Vec<(&'static str, String)>,
    currency: String,
}

async fn form_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: Option<i64>,
    form: UseCaseForm,
    error: Option<String>,
) -> Result<Response, AppError> {
    if !may_register(me) {
        return Err(AppError::Forbidden(i18n::t("ai-only-leads-register")));
    }
    let tree = state.tree().await?;
    let led = |n: &&crate::db::tree::NodeView| me.leads(n.id, &tree.parents);
    render_status(
        if error.is_some() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        },
        &FormPage {
            layout: Layout::for_user(session, me, "/ai").await?,
            id,
            form,
            error,
            owners: tree
                .nodes
                .iter()
                .filter(led)
                .map(|n| n.name.clone())
                .collect(),
            projects: tree
                .nodes
                .iter()
                .filter(|n| n.is_project)
                .filter(led)
                .map(|n| n.name.clone())
                .collect(),
            bags: BAGS
                .iter()
                .map(|(code, _)| (*code, bag_words(code)))
                .collect(),
            currency: state.site.currency.clone(),
        },
    )
}

async fn new_form(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    let form = UseCaseForm {
        bag: "team".into(),
        ..UseCaseForm::default()
    };
    form_page(&state, &session, &me, None, form, None).await
}

/// Errors a form shows above itself; others (403, 404, 500) are error pages.
fn form_message(e: AppError) -> Result<String, AppError> {
    match e {
        AppError::Invalid { message, .. }
        | AppError::Unprocessable { message, .. }
        | AppError::Refused { message, .. } => Ok(message),
        other => Err(other),
    }
}

async fn create(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(form): Form<UseCaseForm>,
) -> Result<Response, AppError> {
    if !may_register(&me) {
        return Err(AppError::Forbidden(i18n::t("ai-only-leads-register")));
    }
    let tree = state.tree().await?;
    let result = match form.draft(&tree, &me) {
        Ok(d) => ai::create(&state.pool, &me, &tree, d).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(id) => {
            flash(
                &session,
                i18n::t1("ai-registered", "name", form.name.trim()),
            )
            .await?;
            Ok(Redirect::to(&format!("/ai/{id}")).into_response())
        }
        Err(e) => {
            // A project or owner node the person does not lead is the form's error too: shown
            // with the input kept, not as a bare 403 page (the new form shows nothing else).
            let message = match e {
                AppError::Forbidden(m) => m,
                e => form_message(e)?,
            };
            form_page(&state, &session, &me, None, form, Some(message)).await
        }
    }
}

#[derive(askama::Template)]
#[template(path = "ai/detail.html")]
struct DetailPage {
    layout: Layout,
    u: UseCase,
    /// The bag's label and the status, in the page's language.
    bag: String,
    status: String,
    month: String,
    gpu: String,
    imported: String,
    total: String,
    limit: String,
    /// Spend as a percentage of the limit, in the page's language.
    pct: String,
    over: bool,
    can_manage: bool,
    can_map: bool,
    /// (code, label in the page's language).
    statuses: Vec<(&'static str, String)>,
    rules: Vec<spend::Rule>,
    error: Option<String>,
    /// Alerts of this month: (message).
    alerts: Vec<String>,
    /// "stop rule triggered", newest first: (when, reason, acknowledgement or empty).
    triggers: Vec<(String, String, String)>,
    open_trigger: bool,
    critical: bool,
    /// The review form: months offered (value, label), and what was typed.
    months: Vec<(String, String)>,
    review: ReviewForm,
    /// (code, label in the page's language).
    decisions: Vec<(&'static str, String)>,
    /// The decisions so far, newest first.
    history: Vec<ReviewView>,
    /// Human work this month: hours and their cost, and the rate.
    human_hours: String,
    human_cost: String,
    human_rate: String,
    /// (code, label in the page's language).
    activities: Vec<(&'static str, String)>,
    hours_form: HoursForm,
}

/// The human hours form as sent.
#[derive(serde::Deserialize, Default, Clone)]
#[serde(default)]
pub struct HoursForm {
    month: String,
    hours: String,
    activity: String,
    note: String,
}

/// A decision as the history shows it.
pub struct ReviewView {
    month: String,
    decision: String,
    metric_value: String,
    comment: String,
    spend: String,
    by: String,
    at: String,
}

/// The monthly review form as sent.
#[derive(serde::Deserialize, Default, Clone)]
#[serde(default)]
pub struct ReviewForm {
    month: String,
    decision: String,
    new_limit: String,
    metric_value: String,
    comment: String,
}

/// A period's value for a form (`2026-11`) and its month in the page's language.
fn month_label(p: Period, site: &crate::config::Site) -> (String, String) {
    (p.label(site), month_words(p.start, site))
}

async fn detail_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    error: Option<String>,
    review: Option<ReviewForm>,
    hours_form: Option<HoursForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let u = ai::get_visible(&state.pool, me, &tree.parents, id).await?;
    let now = jiff::Timestamp::now();
    let period = Period::containing(now, &state.site);
    let previous = Period::containing(
        period.start - jiff::SignedDuration::from_secs(1),
        &state.site,
    );
    let site = &state.site;
    let tz = &site.time_zone;
    let at = |t: time::OffsetDateTime| domain::format_local(crate::ledger::to_jiff(t), tz);
    let (start, _) = period.bounds();
    let alerts: Vec<(i32, String, i64, i64)> = sqlx::query_as(
        "SELECT threshold_pct, kind, spent_minor, limit_minor FROM ai_use_case_alerts \
         WHERE use_case_id = $1 AND period_start = $2 ORDER BY threshold_pct DESC, kind",
    )
    .bind(id)
    .bind(start)
    .fetch_all(&state.pool)
    .await?;
    let alerts = alerts
        .into_iter()
        .map(|(pct, kind, spent, limit)| {
            let key = if kind == "actual" {
                "ai-alert-actual"
            } else {
                "ai-alert-forecast"
            };
            i18n::ta(
                key,
                &[
                    ("pct", &i18n::format::count(i64::from(pct))),
                    ("spent", &Money(spent).display(&site.currency)),
                    ("limit", &Money(limit).display(&site.currency)),
                ],
            )
        })
        .collect();
    let triggers_raw = ai::stop_triggers(&state.pool, id).await?;
    let open_trigger = triggers_raw.iter().any(|t| t.acknowledged_at.is_none());
    // English pages show the stored reason; other languages its structured form, when it
    // reads back.
    let lang = i18n::current();
    let reasons = if lang == i18n::Lang::En {
        vec![None; triggers_raw.len()]
    } else {
        ai::stop_reasons(&state.pool, site, id, &triggers_raw).await?
    };
    let triggers = triggers_raw
        .into_iter()
        .zip(reasons)
        .map(|(t, why)| {
            let ack = match (t.acknowledged_by, t.acknowledged_at) {
                (Some(by), Some(when)) => i18n::ta(
                    "ai-acknowledged",
                    &[("name", &by), ("at", &at(when)), ("note", &t.note)],
                ),
                _ => String::new(),
            };
            let reason = why.map_or(t.reason, |w| w.message(lang, &site.currency));
            (at(t.triggered_at), reason, ack)
        })
        .collect();
    let history = ai::reviews(&state.pool, id)
        .await?
        .into_iter()
        .map(|r| ReviewView {
            month: month_words(crate::ledger::to_jiff(r.period_start), site),
            decision: match r.new_limit_minor {
                Some(l) => i18n::t1("ai-expand-to", "limit", Money(l).display(&site.currency)),
                None => code_words("ai-decision", &r.decision),
            },
            metric_value: r.metric_value,
            comment: r.comment,
            spend: i18n::t2(
                "ai-spend-of",
                "spent",
                Money(r.spent_minor).display(&site.currency),
                "limit",
                Money(r.limit_minor).display(&site.currency),
            ),
            by: r.decided_by.unwrap_or_default(),
            at: at(r.decided_at),
        })
        .collect();
    let months = vec![month_label(previous, site), month_label(period, site)];
    let minutes = ai::human_minutes(&state.pool, period)
        .await?
        .get(&id)
        .copied()
        .unwrap_or(0);
    let review = review.unwrap_or_else(|| ReviewForm {
        month: months[0].0.clone(),
        decision: "continue".into(),
        ..ReviewForm::default()
    });
    let book = spend::by_use_case(&state.pool, period).await?;
    let s = book.seen(&u);
    let over = book.whole(&u).total().0 > u.monthly_limit_minor;
    let cur = &state.site.currency;
    let total = s.total();
    let rules = spend::rules(&state.pool)
        .await?
        .into_iter()
        .filter(|r| r.use_case_id == id)
        .collect();
    let can_manage = u.may_manage(me, &tree.parents);
    render_status(
        if error.is_some() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        },
        &DetailPage {
            layout: Layout::for_user(session, me, "/ai").await?,
            bag: bag_words(&u.bag),
            status: code_words("ai-status", &u.status),
            month: month_words(period.start, &state.site),
            gpu: Money(s.gpu_minor).display(cur),
            imported: micro_to_money(s.imported_micro).display(cur),
            total: total.display(cur),
            limit: Money(u.monthly_limit_minor).display(cur),
            pct: percent(pct(total, u.monthly_limit_minor)),
            over,
            can_manage,
            can_map: can_manage || me.sees_everything(),
            statuses: STATUSES
                .iter()
                .map(|s| (*s, code_words("ai-status", s)))
                .collect(),
            rules,
            error,
            alerts,
            triggers,
            open_trigger,
            critical: u.bag == "critical",
            months,
            review,
            decisions: ai::DECISIONS
                .iter()
                .map(|d| (*d, code_words("ai-decision", d)))
                .collect(),
            history,
            human_hours: i18n::format::hours(minutes * 60),
            human_cost: ai::human_cost(minutes, u.human_hourly_rate_minor).display(&site.currency),
            human_rate: Money(u.human_hourly_rate_minor).display(&site.currency),
            activities: ai::ACTIVITIES
                .iter()
                .map(|(a, _)| (*a, code_words("ai-activity", a)))
                .collect(),
            hours_form: hours_form.unwrap_or_else(|| HoursForm {
                month: month_label(period, site).0,
                activity: "review".into(),
                ..HoursForm::default()
            }),
            u,
        },
    )
}

async fn detail(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    detail_page(&state, &session, &me, id, None, None, None).await
}

async fn edit_form(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let u = ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    if !u.may_manage(&me, &tree.parents) {
        return Err(AppError::Forbidden(i18n::t1(
            "ai-not-lead-change",
            "owner",
            &u.owner,
        )));
    }
    form_page(
        &state,
        &session,
        &me,
        Some(id),
        UseCaseForm::from_use_case(&u),
        None,
    )
    .await
}

async fn update(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<UseCaseForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let u = ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    if !u.may_manage(&me, &tree.parents) {
        return Err(AppError::Forbidden(i18n::t1(
            "ai-not-lead-change",
            "owner",
            &u.owner,
        )));
    }
    let result = match form.draft(&tree, &me) {
        Ok(d) => ai::update(&state.pool, &me, &tree, id, d).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => {
            flash(&session, i18n::t("ai-saved")).await?;
            Ok(Redirect::to(&format!("/ai/{id}")).into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            form_page(&state, &session, &me, Some(id), form, Some(message)).await
        }
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct StatusForm {
    status: String,
}

async fn set_status(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<StatusForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    match ai::set_status(&state.pool, &me, &tree.parents, id, &form.status).await {
        Ok(u) => {
            flash(
                &session,
                i18n::t2(
                    "ai-status-now",
                    "name",
                    &u.name,
                    "status",
                    code_words("ai-status", &u.status),
                ),
            )
            .await?;
            Ok(Redirect::to(&format!("/ai/{id}")).into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            detail_page(&state, &session, &me, id, Some(message), None, None).await
        }
    }
}

#[derive(serde::Deserialize, Default, Clone)]
#[serde(default)]
struct RuleForm {
    use_case: String,
    source: String,
    service: String,
    scope: String,
}

async fn add_rule(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(form): Form<RuleForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let Ok(id) = form.use_case.trim().parse::<i64>() else {
        return Err(AppError::NotFound(i18n::t("ai-no-such-use-case")));
    };
    let uc = ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let back = if spend::may_import(&me) {
        "/ai/spend".to_string()
    } else {
        format!("/ai/{id}")
    };
    match spend::add_rule(
        &state.pool,
        &me,
        &tree.parents,
        id,
        &form.source,
        &form.service,
        &form.scope,
    )
    .await
    {
        Ok((_, assigned)) => {
            crate::web::check_alerts(&state).await;
            let notice = i18n::ta(
                "ai-rule-added",
                &[
                    ("name", &uc.name),
                    ("count", &assigned),
                    ("n", &i18n::format::count(assigned as i64)),
                ],
            );
            flash(&session, notice).await?;
            Ok(Redirect::to(&back).into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            if spend::may_import(&me) {
                let view = SpendView {
                    rule: form,
                    ..SpendView::default()
                };
                spend_page(&state, &session, &me, view, Some(message)).await
            } else {
                detail_page(&state, &session, &me, id, Some(message), None, None).await
            }
        }
    }
}

/// What the spend page shows besides its lists: the upload form's values and a preview.
#[derive(Default)]
struct SpendView {
    format: String,
    rate: String,
    preview: Option<(spend::Outcome, String)>,
    /// The rule form as typed, when it was refused.
    rule: RuleForm,
}

/// An import line for the page.
struct ImportLine {
    id: i64,
    source: String,
    file_name: String,
    currency: String,
    lines: String,
    amount: String,
    by: String,
    at: String,
}

#[derive(askama::Template)]
#[template(path = "ai/spend.html")]
struct SpendPage {
    layout: Layout,
    currency: String,
    formats: Vec<(&'static str, String)>,
    form_format: String,
    form_rate: String,
    error: Option<String>,
    /// The preview of an upload waiting for confirmation.
    preview: Option<PreviewView>,
    imports: Vec<ImportLine>,
    unassigned: Vec<(String, String, String, String, String, String)>,
    /// "3 lines, 12.00 USD." in the page's language.
    unassigned_count: String,
    rules: Vec<spend::Rule>,
    use_cases: Vec<(i64, String)>,
    rule: RuleForm,
}

struct PreviewView {
    token: String,
    format: String,
    currency: String,
    rate: String,
    /// Line counts, written for the page's language.
    lines: String,
    new_lines: String,
    skipped: String,
    amount: String,
    covers: String,
    already: bool,
    /// (use case, lines, amount).
    shares: Vec<(String, String, String)>,
}

async fn spend_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    view: SpendView,
    error: Option<String>,
) -> Result<Response, AppError> {
    if !spend::may_import(me) {
        return Err(AppError::Forbidden(i18n::t("ai-spend-only-finance-see")));
    }
    let cur = &state.site.currency;
    let tz = &state.site.time_zone;
    let at = |t: time::OffsetDateTime| domain::format_local(crate::ledger::to_jiff(t), tz);
    let imports = spend::imports(&state.pool)
        .await?
        .into_iter()
        .map(|i| ImportLine {
            id: i.id,
            source: Format::parse(&i.source).map_or(i.source.clone(), |f| f.label()),
            file_name: i.file_name,
            currency: match i.rate_micro {
                Some(r) => i18n::ta(
                    "ai-spend-import-rate",
                    &[
                        ("currency", &i.currency),
                        ("rate", &i18n::format::milli(r / 1000)),
                        ("site", cur),
                    ],
                ),
                None => i.currency,
            },
            lines: i18n::t2(
                "ai-spend-import-lines",
                "new",
                i18n::format::count(i64::from(i.rows_new)),
                "skipped",
                i18n::format::count(i64::from(i.rows_skipped)),
            ),
            amount: micro_to_money(i.amount_micro).display(cur),
            by: i.imported_by.unwrap_or_default(),
            at: at(i.imported_at),
        })
        .collect();
    let (lines, count, total) = spend::unassigned(&state.pool).await?;
    let unassigned = lines
        .into_iter()
        .map(|l| {
            (
                i18n::format::medium_date(
                    i18n::current(),
                    crate::ledger::to_jiff(l.period_start)
                        .to_zoned(state.site.time_zone.clone())
                        .date(),
                ),
                l.source,
                l.service,
                l.scopes.join(", "),
                l.description,
                micro_to_money(l.amount_micro).display(cur),
            )
        })
        .collect();
    let preview = view.preview.map(|(o, token)| PreviewView {
        token,
        format: Format::parse(o.format).map_or_else(String::new, Format::label),
        currency: o.currency.clone(),
        rate: o.rate.clone().unwrap_or_default(),
        lines: i18n::format::count(o.lines as i64),
        new_lines: i18n::format::count(o.new_lines as i64),
        skipped: i18n::format::count(o.skipped_lines as i64),
        amount: micro_to_money(o.amount_micro).display(cur),
        covers: i18n::t2(
            "ai-spend-covers-range",
            "from",
            day_words(&o.covers.0),
            "to",
            day_words(&o.covers.1),
        ),
        already: o.already_imported,
        shares: o
            .shares
            .iter()
            .map(|s| {
                (
                    if s.use_case_id.is_none() {
                        i18n::t("ai-unassigned")
                    } else {
                        s.use_case.clone()
                    },
                    i18n::format::count(s.lines as i64),
                    micro_to_money(s.amount_micro).display(cur),
                )
            })
            .collect(),
    });
    // Built apart: a message's arguments must not be held across an await.
    let unassigned_count = i18n::ta(
        "ai-spend-unassigned-count",
        &[
            ("count", &count),
            ("n", &i18n::format::count(count)),
            ("total", &micro_to_money(total).display(cur)),
        ],
    );
    let tree = state.tree().await?;
    let use_cases = ai::visible(&state.pool, me, &tree.parents)
        .await?
        .into_iter()
        .map(|u| (u.id, u.name))
        .collect();
    render_status(
        if error.is_some() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        },
        &SpendPage {
            layout: Layout::for_user(session, me, "/ai").await?,
            currency: cur.clone(),
            formats: Format::ALL.iter().map(|f| (f.code(), f.label())).collect(),
            form_format: view.format,
            form_rate: view.rate,
            error,
            preview,
            imports,
            unassigned,
            unassigned_count,
            rules: spend::rules(&state.pool).await?,
            use_cases,
            rule: view.rule,
        },
    )
}

/// A day written `2026-11-01`, in the page's language (`1 nov 2026`); as written when it is
/// not a date.
fn day_words(day: &str) -> String {
    day.parse::<jiff::civil::Date>().map_or_else(
        |_| day.to_string(),
        |d| i18n::format::medium_date(i18n::current(), d),
    )
}

async fn spend_index(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    spend_page(&state, &session, &me, SpendView::default(), None).await
}

/// The upload form's fields: `format`, `rate` and the `file`.
struct Upload {
    format: String,
    rate: String,
    file_name: String,
    bytes: Vec<u8>,
}

async fn read_upload(req: axum::extract::Request, state: &AppState) -> Result<Upload, AppError> {
    let mut multipart = Multipart::from_request(req, state).await.map_err(|e| {
        AppError::Malformed(i18n::t1("ai-spend-not-upload", "error", e.to_string()))
    })?;
    let mut up = Upload {
        format: String::new(),
        rate: String::new(),
        file_name: String::new(),
        bytes: Vec::new(),
    };
    let bad = |e: axum::extract::multipart::MultipartError| {
        AppError::Malformed(i18n::t1("ai-spend-unreadable", "error", e.to_string()))
    };
    while let Some(field) = multipart.next_field().await.map_err(bad)? {
        let name = field.name().unwrap_or("").to_string();
        match name.as_str() {
            "file" => {
                up.file_name = field.file_name().unwrap_or("").to_string();
                up.bytes = field.bytes().await.map_err(bad)?.to_vec();
            }
            "format" | "rate" => {
                let text = field.text().await.map_err(bad)?;
                crate::web::input::check_text(&name, &text)?;
                if name == "format" {
                    up.format = text;
                } else {
                    up.rate = text;
                }
            }
            _ => {}
        }
    }
    crate::web::input::check_text("file name", &up.file_name)?;
    Ok(up)
}

async fn preview(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    req: axum::extract::Request,
) -> Result<Response, AppError> {
    if !spend::may_import(&me) {
        return Err(AppError::Forbidden(i18n::t("ai-spend-only-finance")));
    }
    let up = read_upload(req, &state).await?;
    let view = |preview| SpendView {
        format: up.format.clone(),
        rate: up.rate.clone(),
        preview,
        rule: RuleForm::default(),
    };
    let Some(format) = Format::parse(&up.format) else {
        return spend_page(
            &state,
            &session,
            &me,
            view(None),
            Some(i18n::t("ai-spend-choose-format")),
        )
        .await;
    };
    if up.bytes.is_empty() {
        return spend_page(
            &state,
            &session,
            &me,
            view(None),
            Some(i18n::t("ai-spend-choose-file")),
        )
        .await;
    }
    let rate = Some(up.rate.as_str());
    match spend::import(
        &state.pool,
        &me,
        &state.site,
        format,
        &up.file_name,
        &up.bytes,
        rate,
        false,
    )
    .await
    {
        Ok(outcome) => {
            let token = crate::auth::random_hex(16);
            // Validated as UTF-8 by the reader.
            let text = String::from_utf8_lossy(&up.bytes).into_owned();
            session
                .insert(
                    UPLOAD,
                    (&token, format.code(), &up.file_name, text, &up.rate),
                )
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            spend_page(&state, &session, &me, view(Some((outcome, token))), None).await
        }
        Err(e) => {
            let message = form_message(e)?;
            spend_page(
                &state,
                &session,
                &me,
                view(None),
                Some(i18n::t1("ai-spend-choose-again", "problem", message)),
            )
            .await
        }
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ConfirmForm {
    token: String,
}

async fn confirm(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(form): Form<ConfirmForm>,
) -> Result<Response, AppError> {
    if !spend::may_import(&me) {
        return Err(AppError::Forbidden(i18n::t("ai-spend-only-finance")));
    }
    // Taken out first: confirming twice imports once.
    let pending = session
        .remove::<(String, String, String, String, String)>(UPLOAD)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    let Some((_, format, file_name, text, rate)) =
        pending.filter(|(t, ..)| !form.token.is_empty() && *t == form.token)
    else {
        return spend_page(
            &state,
            &session,
            &me,
            SpendView::default(),
            Some(i18n::t("ai-spend-expired")),
        )
        .await;
    };
    let format = Format::parse(&format).ok_or_else(|| anyhow::anyhow!("stored format"))?;
    match spend::import(
        &state.pool,
        &me,
        &state.site,
        format,
        &file_name,
        text.as_bytes(),
        Some(&rate),
        true,
    )
    .await
    {
        Ok(o) => {
            crate::web::check_alerts(&state).await;
            let notice = if o.already_imported {
                i18n::t("ai-spend-imported-before")
            } else {
                i18n::ta(
                    "ai-spend-imported-new",
                    &[
                        ("count", &o.new_lines),
                        ("n", &i18n::format::count(o.new_lines as i64)),
                        (
                            "amount",
                            &micro_to_money(o.amount_micro).display(&state.site.currency),
                        ),
                        ("skipped", &i18n::format::count(o.skipped_lines as i64)),
                    ],
                )
            };
            flash(&session, notice).await?;
            Ok(Redirect::to("/ai/spend").into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            spend_page(&state, &session, &me, SpendView::default(), Some(message)).await
        }
    }
}

async fn review(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<ReviewForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let result = async {
        let period = crate::ledger::reports::parse_report_period(
            &form.month,
            &state.site,
            jiff::Timestamp::now(),
        )
        .map_err(|m| AppError::invalid("month", i18n::t1("ai-err-month", "problem", m)))?;
        let new_limit = match form.new_limit.trim() {
            "" => None,
            t => Some(Money::parse(t).map_err(|m| {
                AppError::invalid("new_limit", i18n::t1("ai-err-new-limit", "problem", m))
            })?),
        };
        let spent = spend::by_use_case(&state.pool, period)
            .await?
            .whole(&ai::get(&state.pool, id).await?)
            .total();
        ai::record_review(
            &state.pool,
            &me,
            &tree.parents,
            jiff::Timestamp::now(),
            id,
            spent,
            ai::Decision {
                period,
                decision: form.decision.clone(),
                new_limit,
                metric_value: form.metric_value.clone(),
                comment: form.comment.clone(),
            },
        )
        .await
    }
    .await;
    match result {
        Ok(r) => {
            crate::web::check_alerts(&state).await;
            flash(
                &session,
                i18n::t1(
                    "ai-decision-recorded",
                    "decision",
                    code_words("ai-decision", &r.decision),
                ),
            )
            .await?;
            Ok(Redirect::to(&format!("/ai/{id}")).into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            detail_page(&state, &session, &me, id, Some(message), Some(form), None).await
        }
    }
}

async fn hours(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<HoursForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let result = async {
        let period = crate::ledger::reports::parse_report_period(
            &form.month,
            &state.site,
            jiff::Timestamp::now(),
        )
        .map_err(|m| AppError::invalid("month", i18n::t1("ai-err-month", "problem", m)))?;
        let minutes = ai::parse_hours(&form.hours)?;
        ai::record_hours(
            &state.pool,
            &me,
            &tree.parents,
            id,
            period,
            minutes,
            &form.activity,
            &form.note,
        )
        .await
    }
    .await;
    match result {
        Ok(_) => {
            flash(
                &session,
                i18n::t1("ai-hours-recorded", "hours", form.hours.trim()),
            )
            .await?;
            Ok(Redirect::to(&format!("/ai/{id}")).into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            detail_page(&state, &session, &me, id, Some(message), None, Some(form)).await
        }
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct NoteForm {
    note: String,
    reason: String,
}

async fn acknowledge(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<NoteForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    match ai::acknowledge_stop(&state.pool, &me, &tree.parents, id, &form.note).await {
        Ok(()) => {
            flash(&session, i18n::t("ai-stop-acknowledged")).await?;
            Ok(Redirect::to(&format!("/ai/{id}")).into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            detail_page(&state, &session, &me, id, Some(message), None, None).await
        }
    }
}

async fn stop_criterion(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<NoteForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let period = Period::containing(jiff::Timestamp::now(), &state.site);
    match ai::report_stop_criterion(&state.pool, &me, &tree.parents, period, id, &form.reason).await
    {
        Ok(()) => {
            flash(&session, i18n::t("ai-stop-raised")).await?;
            Ok(Redirect::to(&format!("/ai/{id}")).into_response())
        }
        Err(e) => {
            let message = form_message(e)?;
            detail_page(&state, &session, &me, id, Some(message), None, None).await
        }
    }
}

/// What the home page says about the AI use cases the user manages (or all, for finance):
/// (id, name, what needs attention).
pub async fn home_notes(
    state: &AppState,
    me: &Account,
) -> Result<Vec<(i64, String, String)>, AppError> {
    let tree = state.tree().await?;
    let cases: Vec<UseCase> = ai::visible(&state.pool, me, &tree.parents)
        .await?
        .into_iter()
        .filter(|u| u.may_manage(me, &tree.parents) || me.sees_everything())
        .collect();
    if cases.is_empty() {
        return Ok(Vec::new());
    }
    let now = jiff::Timestamp::now();
    let period = Period::containing(now, &state.site);
    let previous = Period::containing(
        period.start - jiff::SignedDuration::from_secs(1),
        &state.site,
    );
    let spend = spend::by_use_case(&state.pool, period).await?;
    let open: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT use_case_id FROM ai_stop_triggers WHERE acknowledged_at IS NULL",
    )
    .fetch_all(&state.pool)
    .await?;
    let pending = ai::pending_reviews(&state.pool, previous, &cases).await?;
    let cur = &state.site.currency;
    let mut notes = Vec::new();
    for u in &cases {
        if open.contains(&u.id) {
            notes.push((u.id, u.name.clone(), i18n::t("ai-home-stop")));
        }
        let s = spend.seen(u).total();
        if spend.whole(u).total().0 > u.monthly_limit_minor {
            notes.push((
                u.id,
                u.name.clone(),
                i18n::t2(
                    "ai-home-over",
                    "spent",
                    s.display(cur),
                    "limit",
                    Money(u.monthly_limit_minor).display(cur),
                ),
            ));
        }
        if pending.contains(&u.id) && u.may_manage(me, &tree.parents) {
            notes.push((
                u.id,
                u.name.clone(),
                i18n::t1(
                    "ai-home-review",
                    "month",
                    month_label(previous, &state.site).1,
                ),
            ));
        }
    }
    Ok(notes)
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct MonthQuery {
    period: String,
}

/// The CSV columns of [`csv_export`]: money as decimals of the site's currency.
pub const CSV_HEADER: [&str; 16] = [
    "period",
    "use_case",
    "owner_team",
    "bag",
    "status",
    "currency",
    "monthly_limit",
    "gpu_spend",
    "imported_spend",
    "total_spend",
    "used_percent",
    "previous_period_spend",
    "human_hours",
    "human_cost",
    "last_decision",
    "last_decision_period",
];

/// `GET /ai/use-cases.csv?period=YYYY-MM`: every use case the caller may see with its spend
/// in the period (default the current one) against its limit, last period's spend, the human
/// cost and the latest decision; the finance reports link to it.
async fn csv_export(
    State(state): State<AppState>,
    CurrentUser(me): CurrentUser,
    crate::web::input::Query(q): crate::web::input::Query<MonthQuery>,
) -> Result<Response, AppError> {
    let site = &state.site;
    let now = jiff::Timestamp::now();
    let period = if q.period.trim().is_empty() {
        Period::containing(now, site)
    } else {
        crate::ledger::reports::parse_report_period(&q.period, site, jiff::Timestamp::now())
            .map_err(|m| AppError::invalid("period", i18n::t1("ai-err-period", "why", m)))?
    };
    let previous = Period::containing(period.start - jiff::SignedDuration::from_secs(1), site);
    let tree = state.tree().await?;
    let spend = spend::by_use_case(&state.pool, period).await?;
    let before = spend::by_use_case(&state.pool, previous).await?;
    let human = ai::human_minutes(&state.pool, period).await?;
    let last = ai::last_reviews(&state.pool).await?;
    let label = |p: Period| month_label(p, site).0;
    let m = |v: Money| crate::export::Cell::number(v.plain());
    let t = crate::export::Cell::text;
    let rows = ai::visible(&state.pool, &me, &tree.parents)
        .await?
        .into_iter()
        .map(|u| {
            let s = spend.seen(&u);
            let minutes = human.get(&u.id).copied().unwrap_or(0);
            let decision = last.iter().find(|r| r.use_case_id == u.id);
            vec![
                t(label(period)),
                t(u.name.clone()),
                t(u.owner.clone()),
                t(u.bag.clone()),
                t(u.status.clone()),
                t(site.currency.clone()),
                m(Money(u.monthly_limit_minor)),
                m(Money(s.gpu_minor)),
                m(micro_to_money(s.imported_micro)),
                m(s.total()),
                crate::export::Cell::number(pct(s.total(), u.monthly_limit_minor)),
                m(before.seen(&u).total()),
                crate::export::Cell::number(format!("{:.2}", minutes as f64 / 60.0)),
                m(ai::human_cost(minutes, u.human_hourly_rate_minor)),
                t(decision.map(|r| r.decision.clone()).unwrap_or_default()),
                t(decision
                    .map(|r| {
                        month_label(
                            Period::containing(crate::ledger::to_jiff(r.period_start), site),
                            site,
                        )
                        .0
                    })
                    .unwrap_or_default()),
            ]
        })
        .collect::<Vec<_>>();
    let body = crate::export::csv(&CSV_HEADER, rows)?;
    Ok((
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/csv; charset=utf-8".to_string(),
            ),
            (
                axum::http::header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"tranche-ai-use-cases-{}.csv\"",
                    label(period)
                ),
            ),
        ],
        body,
    )
        .into_response())
}

/// The register's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/ai", get(list).post(create))
        .route("/ai/new", get(new_form))
        .route("/ai/use-cases.csv", get(csv_export))
        .route("/ai/spend", get(spend_index))
        .route("/ai/spend/preview", post(preview))
        .route("/ai/spend/import", post(confirm))
        .route("/ai/rules", post(add_rule))
        .route("/ai/{id}", get(detail).post(update))
        .route("/ai/{id}/edit", get(edit_form))
        .route("/ai/{id}/status", post(set_status))
        .route("/ai/{id}/review", post(review))
        .route("/ai/{id}/hours", post(hours))
        .route("/ai/{id}/acknowledge", post(acknowledge))
        .route("/ai/{id}/stop-criterion", post(stop_criterion))
}

#[cfg(test)]
mod tests {
    use super::trend;

    #[test]
    fn trend_scales_the_month_so_far() {
        let day = 86_400;
        // 10 days into 30: 40 so far is 120 a month, against 100 last month.
        assert_eq!(trend(40, 100, 10 * day, 30 * day), "up");
        assert_eq!(trend(29, 100, 10 * day, 30 * day), "down");
        assert_eq!(trend(35, 100, 10 * day, 30 * day), "flat");
        // Less than a day in counts as a day.
        assert_eq!(trend(3, 100, 3600, 30 * day), "flat");
        assert_eq!(trend(0, 0, 10 * day, 30 * day), "flat");
    }
}
