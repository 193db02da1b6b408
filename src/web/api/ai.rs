//! The AI use-case register in the JSON API (docs/ai-use-cases.md): use cases, their status,
//! spend imports (with `dry_run` for a preview) and mapping rules.

use axum::extract::State;
use serde_json::{Value, json};

use super::{ApiBytes, ApiJson, ApiPath, ApiQuery, ApiResult, created, ok};
use crate::ai::import::Format;
use crate::ai::spend::{self, micro_to_money};
use crate::ai::{self, Draft, UseCase};
use crate::auth::ApiUser;
use crate::domain::Money;
use crate::error::{ApiError, AppError};
use crate::ledger::Period;
use crate::state::AppState;

/// A use case as the API writes it: owner by node id, the limit in minor units, GPU
/// projects by node id.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UseCaseBody {
    name: String,
    owner_node_id: i64,
    bag: String,
    #[serde(default)]
    allowed_data: String,
    #[serde(default)]
    ai_action: String,
    #[serde(default)]
    human_review: String,
    monthly_limit_minor: i64,
    metric: String,
    #[serde(default)]
    stop_rule: String,
    #[serde(default)]
    services: Vec<String>,
    #[serde(default)]
    project_ids: Vec<i64>,
    /// The price of an hour of human work, minor units.
    #[serde(default)]
    human_hourly_rate_minor: i64,
}

impl UseCaseBody {
    fn draft(self) -> Result<Draft, AppError> {
        if !(1..=Money::MAX.0).contains(&self.monthly_limit_minor) {
            return Err(AppError::invalid(
                "monthly_limit_minor",
                format!(
                    "monthly_limit_minor: a whole number of minor units from 1 to {}",
                    Money::MAX.0
                ),
            ));
        }
        // The hourly rate's range is the register's one rule (`ai::Draft::check`).
        Ok(Draft {
            human_hourly_rate: Money(self.human_hourly_rate_minor),
            name: self.name,
            owner_node_id: self.owner_node_id,
            bag: self.bag,
            allowed_data: self.allowed_data,
            ai_action: self.ai_action,
            human_review: self.human_review,
            monthly_limit: Money(self.monthly_limit_minor),
            metric: self.metric,
            stop_rule: self.stop_rule,
            services: self.services,
            project_ids: self.project_ids,
        })
    }
}

fn with_spend(u: &UseCase, book: &spend::SpendBook, human_minutes: i64) -> Value {
    let s = book.seen(u);
    let mut v = serde_json::to_value(u).unwrap_or(Value::Null);
    v["human"] = json!({
        "minutes": human_minutes,
        "cost_minor": ai::human_cost(human_minutes, u.human_hourly_rate_minor).0,
    });
    v["spend"] = json!({
        "gpu_minor": s.gpu_minor,
        "imported_micro": s.imported_micro,
        "total_minor": s.total().0,
        "over_limit": book.whole(u).total().0 > u.monthly_limit_minor,
    });
    v
}

pub(super) async fn get_use_cases(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
) -> ApiResult {
    let tree = state.tree().await?;
    let period = Period::containing(jiff::Timestamp::now(), &state.site);
    let spend = spend::by_use_case(&state.pool, period).await?;
    let human = ai::human_minutes(&state.pool, period).await?;
    let list: Vec<Value> = ai::visible(&state.pool, &me, &tree.parents)
        .await?
        .iter()
        .map(|u| with_spend(u, &spend, human.get(&u.id).copied().unwrap_or(0)))
        .collect();
    ok(
        json!({"period_start": period.start.to_string(), "currency": state.site.currency, "use_cases": list}),
    )
}

pub(super) async fn get_use_case(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    let tree = state.tree().await?;
    let u = ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let period = Period::containing(jiff::Timestamp::now(), &state.site);
    let book = spend::by_use_case(&state.pool, period).await?;
    let human = ai::human_minutes(&state.pool, period).await?;
    ok(with_spend(&u, &book, human.get(&id).copied().unwrap_or(0)))
}

/// The register's checks name the page form's fields; the API's errors name the JSON fields
/// of [`UseCaseBody`].
const USE_CASE_FIELDS: &[(&str, &str)] = &[
    ("owner", "owner_node_id"),
    ("projects", "project_ids"),
    ("monthly_limit", "monthly_limit_minor"),
    ("human_hourly_rate", "human_hourly_rate_minor"),
];

pub(super) async fn post_use_case(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<UseCaseBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    let id = ai::create(&state.pool, &me, &tree, body.draft()?)
        .await
        .map_err(|e| e.renamed(USE_CASE_FIELDS))?;
    created(
        serde_json::to_value(
            ai::get(&state.pool, id)
                .await?
                .as_seen_by(&me, &tree.parents),
        )
        .map_err(|e| AppError::Internal(e.into()))?,
    )
}

pub(super) async fn put_use_case(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<UseCaseBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    ai::update(&state.pool, &me, &tree, id, body.draft()?)
        .await
        .map_err(|e| e.renamed(USE_CASE_FIELDS))?;
    ok(serde_json::to_value(
        ai::get(&state.pool, id)
            .await?
            .as_seen_by(&me, &tree.parents),
    )
    .map_err(|e| AppError::Internal(e.into()))?)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StatusBody {
    status: String,
}

pub(super) async fn put_status(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<StatusBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let u = ai::set_status(&state.pool, &me, &tree.parents, id, &body.status).await?;
    ok(json!({"id": u.id, "status": u.status}))
}

#[derive(serde::Deserialize)]
pub(super) struct ImportQuery {
    format: String,
    #[serde(default)]
    rate: String,
    #[serde(default)]
    file_name: String,
    #[serde(default)]
    dry_run: bool,
}

/// `POST /spend-imports?format=focus[&rate=0.92][&file_name=...][&dry_run=true]` with the file
/// as the body (any content type).
pub(super) async fn post_import(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(q): ApiQuery<ImportQuery>,
    ApiBytes(body): ApiBytes,
) -> ApiResult {
    let format = Format::parse(&q.format).ok_or_else(|| {
        AppError::invalid("format", "format: one of openai, anthropic, github, focus")
    })?;
    let o = spend::import(
        &state.pool,
        &me,
        &state.site,
        format,
        &q.file_name,
        &body,
        Some(&q.rate),
        !q.dry_run,
    )
    .await?;
    if !q.dry_run {
        crate::web::check_alerts(&state).await;
    }
    let mut v = serde_json::to_value(&o).map_err(|e| AppError::Internal(e.into()))?;
    v["amount_minor"] = json!(micro_to_money(o.amount_micro).0);
    v["dry_run"] = json!(q.dry_run);
    if q.dry_run || o.already_imported {
        ok(v)
    } else {
        created(v)
    }
}

pub(super) async fn get_imports(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    if !spend::may_import(&me) {
        return Err(ApiError(AppError::Forbidden(
            "only finance and admins see imported spend".into(),
        )));
    }
    let (lines, count, total) = spend::unassigned(&state.pool).await?;
    ok(json!({
        "imports": spend::imports(&state.pool).await?,
        "unassigned": {"count": count, "amount_micro": total, "lines": lines},
    }))
}

pub(super) async fn get_rules(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    let tree = state.tree().await?;
    let visible: Vec<i64> = ai::visible(&state.pool, &me, &tree.parents)
        .await?
        .iter()
        .map(|u| u.id)
        .collect();
    let rules: Vec<_> = spend::rules(&state.pool)
        .await?
        .into_iter()
        .filter(|r| visible.contains(&r.use_case_id))
        .collect();
    ok(json!({"rules": rules}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RuleBody {
    use_case_id: i64,
    #[serde(default = "any")]
    source: String,
    #[serde(default)]
    service: String,
    #[serde(default)]
    scope: String,
}

fn any() -> String {
    "any".into()
}

pub(super) async fn post_rule(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<RuleBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, body.use_case_id).await?;
    let (id, assigned) = spend::add_rule(
        &state.pool,
        &me,
        &tree.parents,
        body.use_case_id,
        &body.source,
        &body.service,
        &body.scope,
    )
    .await?;
    crate::web::check_alerts(&state).await;
    created(json!({"id": id, "lines_assigned": assigned}))
}

pub(super) async fn get_reviews(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let stop = ai::stop_triggers(&state.pool, id).await?;
    ok(json!({"reviews": ai::reviews(&state.pool, id).await?, "stop_triggers": stop}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReviewBody {
    /// `YYYY-MM`.
    month: String,
    decision: String,
    #[serde(default)]
    new_limit_minor: Option<i64>,
    metric_value: String,
    #[serde(default)]
    comment: String,
}

pub(super) async fn post_review(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<ReviewBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let period = crate::ledger::reports::parse_report_period(
        &body.month,
        &state.site,
        jiff::Timestamp::now(),
    )
    .map_err(|m| AppError::invalid("month", format!("month: {m}")))?;
    if body.new_limit_minor.is_some_and(|l| l < 0) {
        return Err(ApiError(AppError::invalid(
            "new_limit_minor",
            "new_limit_minor: 0 or more minor units",
        )));
    }
    let spent = spend::by_use_case(&state.pool, period)
        .await?
        .whole(&ai::get(&state.pool, id).await?)
        .total();
    let r = ai::record_review(
        &state.pool,
        &me,
        &tree.parents,
        jiff::Timestamp::now(),
        id,
        spent,
        ai::Decision {
            period,
            decision: body.decision,
            new_limit: body.new_limit_minor.map(Money),
            metric_value: body.metric_value,
            comment: body.comment,
        },
    )
    .await
    .map_err(|e| e.renamed(&[("new_limit", "new_limit_minor")]))?;
    crate::web::check_alerts(&state).await;
    created(serde_json::to_value(r).map_err(|e| AppError::Internal(e.into()))?)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NoteBody {
    #[serde(default)]
    note: String,
    #[serde(default)]
    reason: String,
}

pub(super) async fn post_acknowledge(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<NoteBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    ai::acknowledge_stop(&state.pool, &me, &tree.parents, id, &body.note).await?;
    ok(json!({"id": id, "acknowledged": true}))
}

pub(super) async fn post_stop_criterion(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<NoteBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let period = Period::containing(jiff::Timestamp::now(), &state.site);
    ai::report_stop_criterion(&state.pool, &me, &tree.parents, period, id, &body.reason).await?;
    created(json!({"id": id, "stop_rule_triggered": true}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HoursBody {
    /// `YYYY-MM`.
    month: String,
    /// Decimal hours as text or a number: `"1.5"`, `0.25`.
    hours: Value,
    activity: String,
    #[serde(default)]
    note: String,
}

pub(super) async fn post_hours(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<HoursBody>,
) -> ApiResult {
    let tree = state.tree().await?;
    ai::get_visible(&state.pool, &me, &tree.parents, id).await?;
    let period = crate::ledger::reports::parse_report_period(
        &body.month,
        &state.site,
        jiff::Timestamp::now(),
    )
    .map_err(|m| AppError::invalid("month", format!("month: {m}")))?;
    let hours = match &body.hours {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        // `true`, `null`, a list: named as written in the refusal below.
        other => other.to_string(),
    };
    // The document's form: digits with an optional decimal point (no grouping, no comma, no
    // bare point), as its pattern says; the page's form reads the page's separators.
    let (int, frac) = hours.trim().split_once('.').unwrap_or((hours.trim(), "0"));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let as_documented = matches!(body.hours, Value::Number(_)) || digits(int) && digits(frac);
    if !as_documented {
        return Err(AppError::invalid(
            "hours",
            crate::i18n::t1("ai-err-hours", "got", crate::domain::quote(&hours)),
        )
        .into());
    }
    let minutes = ai::parse_hours(&hours)?;
    let entry = ai::record_hours(
        &state.pool,
        &me,
        &tree.parents,
        id,
        period,
        minutes,
        &body.activity,
        &body.note,
    )
    .await?;
    let u = ai::get(&state.pool, id).await?;
    let total = ai::human_minutes(&state.pool, period)
        .await?
        .get(&id)
        .copied()
        .unwrap_or(0);
    created(json!({
        "id": entry,
        "minutes": minutes,
        "month_minutes": total,
        "month_human_cost_minor": ai::human_cost(total, u.human_hourly_rate_minor).0,
    }))
}
