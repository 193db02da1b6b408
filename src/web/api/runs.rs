//! Runs, approvals and the node agent protocol in the JSON API.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use serde_json::json;

use super::{ApiJson, ApiPath, ApiQuery, ApiResult, OptionalApiJson, created, ok};
use crate::auth::{ApiUser, bearer};
use crate::error::{ApiError, AppError};
use crate::runs::{self, Filter, NewRun, agents};
use crate::state::AppState;

/// Extractor for agent calls: the cluster of the `Authorization: Bearer TOKEN` agent token.
pub struct AgentCluster(pub i64);

impl FromRequestParts<AppState> for AgentCluster {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = bearer(parts).ok_or(ApiError(AppError::BadToken { agent: true }))?;
        let cluster = agents::cluster_for_token(&state.pool, token)
            .await?
            .ok_or(ApiError(AppError::BadToken { agent: true }))?;
        Ok(Self(cluster))
    }
}

async fn check(
    state: &AppState,
    me: &crate::auth::Account,
    body: NewRun,
) -> Result<runs::Checked, AppError> {
    let tree = state.tree_for(me).await?;
    runs::check(&state.pool, &state.site, me, &tree, body).await
}

/// `POST /runs`. An `Idempotency-Key` header (1 to 255 characters) makes retries safe: a
/// repeat of a key this user already submitted with answers 200 with that run and
/// `"repeated": true`, creating nothing; the key repeated with another body is 422
/// `idempotency_mismatch`.
pub(super) async fn post_run(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<NewRun>,
) -> ApiResult {
    let key = super::idempotency_key(&headers)?;
    let repeated = |r: runs::Submitted| ok(json!({"id": r.id, "state": r.state, "repeated": true}));
    let fingerprint = body.fingerprint(&state.secret_key);
    if let Some(key) = key
        && let Some(earlier) = runs::repeat_of(&state.pool, &me, key, &fingerprint).await?
    {
        return repeated(earlier);
    }
    let checked = check(&state, &me, body).await?;
    let key = key.map(|key| runs::Key {
        key,
        fingerprint: &fingerprint,
    });
    let run = runs::submit(&state, &me, &checked, key).await?;
    if run.repeated {
        return repeated(run);
    }
    created(json!({
        "id": run.id,
        "state": run.state,
        "preview": checked.preview,
        "cost": checked.preview.describe(&state.site.currency),
    }))
}

pub(super) async fn preview_run(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<NewRun>,
) -> ApiResult {
    let checked = check(&state, &me, body).await?;
    ok(json!({
        "preview": checked.preview,
        "cost": checked.preview.describe(&state.site.currency),
    }))
}

pub(super) async fn get_runs(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(filter): ApiQuery<Filter>,
) -> ApiResult {
    super::known_names(
        &state.pool,
        &me,
        filter.cluster.as_deref(),
        None,
        filter.project.as_deref(),
    )
    .await?;
    let tree = state.tree_for(&me).await?;
    let (mut rows, next_before) = runs::list(&state.pool, &me, &tree.parents, &filter).await?;
    rows.iter_mut().for_each(runs::explain_approval_wait);
    ok(json!({"runs": rows, "next_before": next_before}))
}

pub(super) async fn get_run(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    let tree = state.tree_for(&me).await?;
    let mut detail = runs::detail(&state.pool, &me, &tree.parents, id).await?;
    runs::explain_approval_wait(&mut detail.run);
    ok(serde_json::to_value(detail).map_err(|e| AppError::Internal(e.into()))?)
}

pub(super) async fn cancel_run(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    let tree = state.tree_for(&me).await?;
    runs::cancel(&state.pool, &state.site, &me, &tree.parents, id).await?;
    state_answer(&state, id).await
}

/// `{"id", "state"}` of a run after a change.
async fn state_answer(state: &AppState, id: i64) -> ApiResult {
    let state_now: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(&state.pool)
        .await?;
    ok(json!({"id": id, "state": state_now}))
}

/// An approval or denial.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct Decision {
    /// Why (required to deny).
    #[serde(default)]
    reason: String,
}

async fn decide(
    state: AppState,
    me: crate::auth::Account,
    id: i64,
    approve: bool,
    reason: &str,
) -> ApiResult {
    let tree = state.tree_for(&me).await?;
    runs::decide(
        &state.pool,
        &state.site,
        &me,
        &tree.parents,
        id,
        approve,
        reason,
    )
    .await?;
    state_answer(&state, id).await
}

pub(super) async fn approve_run(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    OptionalApiJson(body): OptionalApiJson<Decision>,
) -> ApiResult {
    // The body is optional (the OpenAPI document says so): an approval may come without a
    // reason. A body there is read as every JSON body is, by `ApiJson`: an object of the
    // `Decision` shape whose strings pass the text rule (422 `invalid_text`, `invalid_input`).
    decide(state, me, id, true, &body.reason).await
}

/// `POST /runs/{id}/deny`: a body without a reason (or none at all) is the documented 422 on
/// `reason`, not a 400 for its missing `Content-Type`.
pub(super) async fn deny_run(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    OptionalApiJson(body): OptionalApiJson<Decision>,
) -> ApiResult {
    decide(state, me, id, false, &body.reason).await
}

pub(super) async fn get_approvals(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
) -> ApiResult {
    let tree = state.tree_for(&me).await?;
    let mut rows = runs::approvals(&state.pool, &me, &tree.parents).await?;
    rows.iter_mut().for_each(runs::explain_approval_wait);
    ok(json!({"runs": rows}))
}

pub(super) async fn agent_register(
    State(state): State<AppState>,
    AgentCluster(cluster): AgentCluster,
    ApiJson(body): ApiJson<agents::Register>,
) -> ApiResult {
    ok(agents::register(&state, cluster, body).await?)
}

pub(super) async fn agent_stop(
    State(state): State<AppState>,
    AgentCluster(cluster): AgentCluster,
    ApiJson(body): ApiJson<agents::Stop>,
) -> ApiResult {
    ok(agents::stop(&state, cluster, body).await?)
}

pub(super) async fn agent_sync(
    State(state): State<AppState>,
    AgentCluster(cluster): AgentCluster,
    ApiJson(body): ApiJson<agents::Sync>,
) -> ApiResult {
    ok(agents::sync(&state, cluster, body).await?)
}

/// `GET /api/v1/idle-flags[?project=ID]`: the open idle (squatting) flags the caller may see.
pub(super) async fn get_idle_flags(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(q): ApiQuery<IdleQuery>,
) -> ApiResult {
    let tree = state.tree_for(&me).await?;
    let flags = crate::runs::idle::open_flags(&state.pool, &me, &tree.parents, q.project).await?;
    ok(json!({
        "threshold_percent": state.site.idle_utilization_percent,
        "idle_after_s": state.site.idle_after_s,
        "currency": state.site.currency,
        "flags": flags,
    }))
}

/// Query of `GET /api/v1/idle-flags`.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct IdleQuery {
    #[serde(default)]
    project: Option<i64>,
}

/// Body of `POST /api/v1/idle-flags/{id}/stop`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IdleStop {
    reason: String,
}

/// `POST /api/v1/idle-flags/{id}/stop`: a lead stops a flagged run with a reason.
pub(super) async fn stop_idle(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<IdleStop>,
) -> ApiResult {
    let tree = state.tree_for(&me).await?;
    let run = crate::runs::idle::stop(
        &state.pool,
        &state.site,
        &me,
        &tree.parents,
        id,
        &body.reason,
    )
    .await?;
    state_answer(&state, run).await
}
