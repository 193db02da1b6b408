//! The JSON API under `/api/v1`, authenticated by `Authorization: Bearer TOKEN`. Every error
//! is JSON `{"error": {"code", "message", "field"}}` with a stable `code`; see
//! `GET /api/v1/openapi.json`.

use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::auth::{ApiUser, Parents};
use crate::db::tree::{self as tree_db, BudgetUpdate, NodeKind};
use crate::db::{audit, inventory, users};
use crate::domain::{self, Money, Share};
use crate::error::{ApiError, AppError};
use crate::state::AppState;
use crate::web::tree::visible_nodes;

mod ai;
mod openapi;
mod openapi_schemas;
mod runs;

/// A JSON body whose rejections (malformed JSON, wrong types, missing fields) are JSON 4xx.
/// Every string in it (object keys too) passes the text rule first
/// ([`crate::web::input::check_json`]): a control character is 422 `invalid_text`.
pub struct ApiJson<T>(pub T);

/// Whether a `Content-Type` is JSON (`application/json`, `application/*+json`), as axum's.
fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(ct) = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence.starts_with("application/") && essence.ends_with("+json")
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(ApiError(AppError::Malformed(
                "Expected request with `Content-Type: application/json`".into(),
            )));
        }
        let ApiBytes(bytes) = ApiBytes::from_request(req, state).await?;
        let mut value = crate::web::input::unique_json(&bytes)?;
        // Every body is an object (serde would also read a struct from an array, by position).
        if !value.is_object() {
            return Err(ApiError(AppError::BadShape {
                field: None,
                message: "the body must be a JSON object".into(),
            }));
        }
        crate::web::input::check_json(&value)?;
        whole_numbers_as_integers(&mut value);
        crate::web::input::from_json_value(value)
            .map(Self)
            .map_err(ApiError)
    }
}

/// A raw request body (any content type) whose rejections are the API's JSON errors: 413
/// `payload_too_large` over the size limit, 400 `malformed_request` when it cannot be read.
/// Every API handler that takes a body as it came uses this, never axum's `Bytes`, whose
/// rejections are plain text.
pub struct ApiBytes(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        axum::body::Bytes::from_request(req, state)
            .await
            .map(Self)
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError(AppError::TooLarge)
                } else {
                    ApiError(AppError::Malformed(rejection.body_text()))
                }
            })
    }
}

/// An optional JSON body: absent or blank (whatever its `Content-Type`, none included) it is
/// `T::default()`; otherwise it is read as every JSON body is ([`ApiJson`]).
pub struct OptionalApiJson<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let ApiBytes(bytes) =
            ApiBytes::from_request(Request::from_parts(parts.clone(), body), state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        let req = Request::from_parts(parts, axum::body::Body::from(bytes));
        ApiJson::<T>::from_request(req, state)
            .await
            .map(|ApiJson(v)| Self(v))
    }
}

/// Writes every number with no fractional part (`284.0`) as an integer, as JSON Schema counts
/// it (an `integer` field of the document takes `284.0`); others stay as they are.
fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| n.is_f64())
                && f.fract() == 0.0
                && f.abs() < 9.0e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

/// Path parameters whose rejections are JSON 404s; a parameter with a control character is
/// 422 `invalid_text`.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        crate::web::input::check_path(parts, state).await?;
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(Self(v)),
            // Ids are whole numbers: anything else names no record (axum's own text speaks
            // of Rust types).
            Err(_) => Err(ApiError(AppError::NotFound(format!(
                "no such record: {} has an id that is not a whole number from 1 to 9223372036854775807",
                domain::shorten_quoted(&domain::quote(parts.uri.path()))
            )))),
        }
    }
}

/// A query string whose rejections (a parameter of the wrong type, a missing one) are JSON
/// 422s naming the parameter (`invalid_input`, as for a body). Its fields passed the text rule
/// before ([`query_text_rule`], on every request of the API's router, where it is used).
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        Ok(Self(crate::web::input::from_query(query)?))
    }
}

type ApiResult = Result<Response, ApiError>;

fn ok(value: Value) -> ApiResult {
    Ok(Json(value).into_response())
}

fn created(value: Value) -> ApiResult {
    Ok((StatusCode::CREATED, Json(value)).into_response())
}

/// A share given as a number (`25`, `12.5`) or a string (`"12.5"`, `"12.5%"`).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum ShareInput {
    Number(f64),
    Text(String),
    /// Anything else (`null`, `true`, an object): refused by [`ShareInput::parse`] in words,
    /// not with serde's "did not match any variant".
    Other(serde_json::Value),
}

impl ShareInput {
    fn parse(&self) -> Result<Share, AppError> {
        let text = match self {
            // A number is read to two decimals when it is one (12.5, 0.07 even as the float
            // 0.07000000000000001), as the document's `multipleOf: 0.01` says.
            Self::Number(n) => {
                let hundredths = (n * 100.0).round();
                if *n >= 0.0 && (n * 100.0 - hundredths).abs() < 1e-6 && hundredths < 1e9 {
                    domain::format_bp(hundredths as i64)
                } else {
                    format!("{n}")
                }
            }
            Self::Text(t) => t.clone(),
            Self::Other(v) => {
                return Err(AppError::invalid(
                    "share",
                    format!(
                        "{} is not a share: give a percentage as a number or a string, such as 12.5 or \"12.5%\"",
                        domain::excerpt(&v.to_string())
                    ),
                ));
            }
        };
        Share::parse_percent(&text).map_err(|e| AppError::invalid("share", e.to_string()))
    }
}

async fn me(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    let projects: Vec<(i64, String)> = sqlx::query_as(
        "SELECT id, name FROM tree_nodes WHERE id = ANY($1) AND NOT archived ORDER BY name",
    )
    .bind(&me.projects)
    .fetch_all(&state.pool)
    .await?;
    let email: Option<String> = sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
        .bind(me.id)
        .fetch_one(&state.pool)
        .await?;
    ok(json!({
        "id": me.id,
        "name": me.name,
        "email": email,
        "roles": me.role_names(),
        "grants": me.grants,
        "projects": projects.into_iter().map(|(id, name)| json!({"id": id, "name": name})).collect::<Vec<_>>(),
    }))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MeBody {
    /// E-mail address for budget alerts; empty clears it.
    email: String,
}

async fn put_me(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<MeBody>,
) -> ApiResult {
    crate::db::users::set_email(&state.pool, me.id, &body.email).await?;
    ok(json!({"ok": true}))
}

async fn tree(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    let tree = state.tree().await?;
    let parents = &tree.parents;
    let visible = visible_nodes(&me, &tree, parents);
    let nodes: Vec<Value> = tree
        .nodes
        .iter()
        .filter(|n| visible.as_ref().is_none_or(|v| v.contains(&n.id)))
        .map(|n| {
            json!({
                "id": n.id,
                "parent_id": n.parent_id,
                "name": n.name,
                "kind": if n.is_project { "project" } else { "group" },
                "depth": n.depth,
                "share_percent": domain::format_bp(i64::from(n.share.bp())).parse::<f64>().unwrap_or(0.0),
                "share_bp": n.share.bp(),
                "effective_share_percent": n.effective.percent().parse::<f64>().unwrap_or(0.0),
                "entitlements": tree.capacity.iter().zip(&n.entitlements).map(|(c, e)| json!({
                    "cluster": c.cluster,
                    "gpu_model": c.gpu_model,
                    "gpu_hours": e.milli_gpu_hours as f64 / 1000.0,
                    "money_minor": e.money.0,
                })).collect::<Vec<_>>(),
                "entitlement_money_minor": n.money_total.0,
            })
        })
        .collect();
    ok(json!({
        "currency": state.site.currency,
        "period": {
            "start": tree.period_start.timestamp().to_string(),
            "end": tree.period_end.timestamp().to_string(),
            "hours": tree.period_seconds() as f64 / 3600.0,
            "time_zone": tree.period_zone_name(&state.site.time_zone_name),
        },
        "nodes": nodes,
    }))
}

async fn clusters(State(state): State<AppState>, ApiUser(_me): ApiUser) -> ApiResult {
    let clusters = inventory::clusters(&state.pool).await?;
    let models = inventory::gpu_models(&state.pool).await?;
    ok(json!({
        "clusters": clusters.iter().map(|c| json!({
            "id": c.id,
            "name": c.name,
            "gpus": c.gpus.iter().map(|(m, n)| json!({"gpu_model": m, "count": n})).collect::<Vec<_>>(),
            "nodes": c.nodes,
        })).collect::<Vec<_>>(),
        "gpu_models": models,
        "currency": state.site.currency,
    }))
}

async fn gpu_models(State(state): State<AppState>, ApiUser(_me): ApiUser) -> ApiResult {
    ok(
        json!({"gpu_models": inventory::gpu_models(&state.pool).await?, "currency": state.site.currency}),
    )
}

async fn project(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    let tree = state.tree().await?;
    let parents = &tree.parents;
    // A project the caller may not see answers as a missing one: its existence is not told.
    let node = tree
        .node(id)
        .filter(|n| n.is_project && me.may_view(id, parents))
        .ok_or_else(|| AppError::NotFound(format!("no project with id {id}")))?;
    let settings = tree_db::project(&state.pool, id).await?;
    let (budget, balance) =
        crate::ledger::budget_and_balance(&state.pool, id, jiff::Timestamp::now(), &state.site)
            .await?;
    ok(json!({
        "id": id,
        "name": node.name,
        "share_bp": node.share.bp(),
        "effective_share_percent": node.effective.percent().parse::<f64>().unwrap_or(0.0),
        "entitlement_money_minor": node.money_total.0,
        "period_budget_minor": budget.0,
        "period_budget_override_minor": settings.period_budget_minor,
        "money_cap_minor": settings.money_cap_minor,
        "self_service_gpu_hours": settings.self_service_gpu_hours,
        "balance_minor": balance.0,
        "members": settings.members.iter().map(|(id, name)| json!({"id": id, "name": name})).collect::<Vec<_>>(),
        "currency": state.site.currency,
    }))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SharesBody {
    shares: Vec<ShareItem>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareItem {
    node: i64,
    share: ShareInput,
}

async fn put_shares(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<SharesBody>,
) -> ApiResult {
    let changes = body
        .shares
        .iter()
        .map(|s| Ok((s.node, s.share.parse()?)))
        .collect::<Result<Vec<_>, AppError>>()?;
    tree_db::set_child_shares(&state.pool, &state.site, &me, id, &changes).await?;
    ok(json!({"ok": true}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NewNode {
    parent: i64,
    name: String,
    kind: NodeKind,
    share: ShareInput,
}

async fn post_node(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<NewNode>,
) -> ApiResult {
    let share = body.share.parse()?;
    let id =
        tree_db::create_node(&state.pool, &me, body.parent, &body.name, body.kind, share).await?;
    created(json!({"id": id}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NodePatch {
    name: Option<String>,
    parent: Option<i64>,
    archived: Option<bool>,
}

async fn patch_node(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<NodePatch>,
) -> ApiResult {
    if body.archived == Some(false) {
        return Err(AppError::invalid(
            "archived",
            "archived nodes cannot be restored through the API",
        )
        .into());
    }
    let changes = usize::from(body.name.is_some())
        + usize::from(body.parent.is_some())
        + usize::from(body.archived.is_some());
    if changes > 1 {
        return Err(AppError::Invalid { field: None, message: "change one of name, parent or archived per request, so each change stands or fails alone".into() }.into());
    }
    if changes == 0 {
        return Err(AppError::Invalid {
            field: None,
            message: "nothing to change: give name, parent or archived".into(),
        }
        .into());
    }
    if let Some(name) = &body.name {
        tree_db::rename_node(&state.pool, &me, id, name).await?;
    }
    if let Some(parent) = body.parent {
        tree_db::move_node(&state.pool, &me, id, parent).await?;
    }
    if body.archived == Some(true) {
        tree_db::archive_node(&state.pool, &me, id).await?;
    }
    ok(json!({"ok": true}))
}

async fn put_budget(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<BudgetBody>,
) -> ApiResult {
    // Omitted fields keep their value; `null` clears the override or the cap.
    let current = tree_db::project(&state.pool, id).await?;
    let update = BudgetUpdate {
        period_budget_minor: body
            .period_budget_minor
            .unwrap_or(current.period_budget_minor),
        money_cap_minor: body.money_cap_minor.unwrap_or(current.money_cap_minor),
        self_service_gpu_hours: body
            .self_service_gpu_hours
            .unwrap_or(current.self_service_gpu_hours),
        alert_thresholds: body.alert_thresholds,
    };
    tree_db::update_project(
        &state.pool,
        &me,
        id,
        &update,
        &*state.tree().await?,
        (&state.site, jiff::Timestamp::now()),
    )
    .await
    .map_err(|e| {
        // The check is the project page's too, which names its form's fields.
        e.renamed(&[
            ("period_budget", "period_budget_minor"),
            ("money_cap", "money_cap_minor"),
        ])
    })?;
    ok(json!({"ok": true}))
}

/// `PUT /projects/{id}/budget`: each field optional; for the two amounts, absent keeps the
/// value and `null` clears it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetBody {
    #[serde(default, deserialize_with = "present")]
    period_budget_minor: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    money_cap_minor: Option<Option<i64>>,
    #[serde(default)]
    self_service_gpu_hours: Option<i32>,
    #[serde(default)]
    alert_thresholds: Option<Vec<i32>>,
}

/// A field that is present, possibly `null`: `Some(None)`; an absent one stays `None`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberBody {
    user: String,
}

async fn post_member(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<MemberBody>,
) -> ApiResult {
    tree_db::set_member(&state.pool, &me, id, &body.user, true).await?;
    created(json!({"ok": true}))
}

async fn delete_member(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath((id, user)): ApiPath<(i64, String)>,
) -> ApiResult {
    tree_db::set_member(&state.pool, &me, id, &user, false).await?;
    ok(json!({"ok": true}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelBody {
    name: Option<String>,
    billing_weight_milli: i64,
    price_per_gpu_hour_minor: i64,
}

/// The inventory's form field names as the API's JSON names.
const MODEL_FIELDS: [(&str, &str); 2] = [
    ("price", "price_per_gpu_hour_minor"),
    ("billing_weight", "billing_weight_milli"),
];

fn model_strings(body: &ModelBody) -> Result<(String, String), AppError> {
    if body.billing_weight_milli <= 0 {
        return Err(AppError::invalid(
            "billing_weight_milli",
            "a billing weight must be positive",
        ));
    }
    if body.price_per_gpu_hour_minor < 0 {
        return Err(AppError::invalid(
            "price_per_gpu_hour_minor",
            "a price cannot be negative",
        ));
    }
    Ok((
        domain::format_milli(body.billing_weight_milli),
        Money(body.price_per_gpu_hour_minor).plain(),
    ))
}

async fn post_model(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<ModelBody>,
) -> ApiResult {
    let (w, p) = model_strings(&body)?;
    let id =
        inventory::create_gpu_model(&state.pool, &me, body.name.as_deref().unwrap_or(""), &w, &p)
            .await
            .map_err(|e| e.renamed(&MODEL_FIELDS))?;
    created(json!({"id": id}))
}

async fn patch_model(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<ModelBody>,
) -> ApiResult {
    let (w, p) = model_strings(&body)?;
    inventory::update_gpu_model(&state.pool, &state.site, &me, id, &w, &p)
        .await
        .map_err(|e| e.renamed(&MODEL_FIELDS))?;
    ok(json!({"ok": true}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NameBody {
    name: String,
}

async fn post_cluster(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<NameBody>,
) -> ApiResult {
    let id = inventory::create_cluster(&state.pool, &me, &body.name).await?;
    created(json!({"id": id}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeBody {
    name: String,
    gpu_model: String,
    gpu_count: i64,
}

async fn post_cluster_node(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<NodeBody>,
) -> ApiResult {
    let id = inventory::add_node(
        &state.pool,
        &me,
        id,
        &body.name,
        &body.gpu_model,
        &body.gpu_count.to_string(),
    )
    .await?;
    created(json!({"id": id}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HardwareBody {
    gpu_model: String,
    gpu_count: i64,
}

/// `PATCH /api/v1/cluster-nodes/{id}` (admin): corrects the node's GPU model and count
/// ([`inventory::update_node`]); answers the node as `GET` does.
async fn patch_cluster_node(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<HardwareBody>,
) -> ApiResult {
    inventory::update_node(
        &state.pool,
        &state.site,
        &me,
        id,
        &body.gpu_model,
        &body.gpu_count.to_string(),
    )
    .await?;
    get_cluster_node(State(state), ApiUser(me), ApiPath(id)).await
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StateBody {
    state: String,
    /// Why, when the state is `draining`.
    #[serde(default)]
    reason: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DrainBody {
    reason: String,
}

/// `GET /api/v1/cluster-nodes/{id}` (admin): the node, its open drain and its drain history.
async fn get_cluster_node(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    if !me.is_admin() {
        return Err(AppError::Forbidden("only an admin may see a node's drains".into()).into());
    }
    let node = inventory::clusters(&state.pool)
        .await?
        .into_iter()
        .flat_map(|c| c.nodes)
        .find(|n| n.id == id)
        .ok_or_else(|| AppError::NotFound(format!("no node with id {id}")))?;
    let drains = crate::db::drains::of_node(&state.pool, id).await?;
    let open = drains.iter().find(|d| d.returned_at.is_none()).cloned();
    let empty = open.as_ref().is_some_and(|d| d.emptied_at.is_some());
    ok(json!({"node": node, "drain": open, "empty_ready_for_repair": empty, "drains": drains}))
}

/// `POST /api/v1/cluster-nodes/{id}/drain` (admin): drain for repair with a reason.
async fn post_drain(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<DrainBody>,
) -> ApiResult {
    inventory::drain_node(&state.pool, &me, id, &body.reason).await?;
    get_cluster_node(State(state), ApiUser(me), ApiPath(id)).await
}

/// `POST /api/v1/cluster-nodes/{id}/return` (admin): back to service.
async fn post_return(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    inventory::return_node(&state.pool, &me, id).await?;
    get_cluster_node(State(state), ApiUser(me), ApiPath(id)).await
}

async fn put_node_state(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<StateBody>,
) -> ApiResult {
    inventory::set_node_state(&state.pool, &me, id, &body.state, body.reason.as_deref()).await?;
    ok(json!({"ok": true}))
}

fn require_admin(me: &crate::auth::Account) -> Result<(), AppError> {
    if me.is_admin() {
        Ok(())
    } else {
        Err(AppError::Forbidden("only an admin can manage users".into()))
    }
}

async fn get_users(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    require_admin(&me)?;
    ok(json!({"users": users::list(&state.pool).await?}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UserBody {
    name: String,
    role: String,
    node: Option<String>,
}

async fn post_user(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<UserBody>,
) -> ApiResult {
    require_admin(&me)?;
    let (id, password) = users::create(
        &state.pool,
        Some(me.id),
        &body.name,
        &body.role,
        body.node.as_deref(),
    )
    .await?;
    created(json!({"id": id, "name": body.name.trim(), "password": password}))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantBody {
    role: String,
    node: Option<String>,
}

async fn post_grant(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<GrantBody>,
) -> ApiResult {
    require_admin(&me)?;
    let grant = users::grant(
        &state.pool,
        Some(me.id),
        id,
        &body.role,
        body.node.as_deref(),
    )
    .await?;
    created(json!({"id": grant}))
}

async fn post_disable(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    require_admin(&me)?;
    users::set_disabled(&state.pool, Some(me.id), id, true).await?;
    ok(json!({"ok": true}))
}

async fn post_enable(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    require_admin(&me)?;
    users::set_disabled(&state.pool, Some(me.id), id, false).await?;
    ok(json!({"ok": true}))
}

async fn delete_grant(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath((id, grant)): ApiPath<(i64, i64)>,
) -> ApiResult {
    require_admin(&me)?;
    users::revoke(&state.pool, Some(me.id), id, grant).await?;
    ok(json!({"ok": true}))
}

#[derive(serde::Deserialize)]
struct AuditQuery {
    /// Only entries with a smaller id (the previous page's `next_before`): text as it came, a
    /// whole number from 1.
    #[serde(default)]
    before: Option<String>,
    /// At most this many (default and most [`audit::PAGE_MAX`]; clamped to 1 ..= it).
    #[serde(default)]
    limit: Option<i64>,
}

async fn get_audit(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> ApiResult {
    if !me.sees_everything() && me.lead_nodes().next().is_none() {
        return Err(
            AppError::Forbidden("the audit log is for admins, finance and leads".into()).into(),
        );
    }
    let before = page_before(q.before.as_deref(), "an audit entry")?;
    let parents = Parents::load(&state.pool).await?;
    let (entries, next_before) = audit::visible(
        &state.pool,
        &me,
        &parents,
        q.limit.unwrap_or(audit::PAGE_MAX),
        before,
    )
    .await?;
    ok(json!({"entries": entries, "next_before": next_before}))
}

/// A page's `before` ([`crate::runs::parse_before`]): the id of `what` (`a ledger entry`),
/// or 422 `invalid_input` on `before` saying so.
fn page_before(text: Option<&str>, what: &str) -> Result<Option<i64>, AppError> {
    crate::runs::parse_before(text).map_err(|_| {
        AppError::invalid(
            "before",
            format!(
                "before: the id of {what}, a whole number from 1 (the previous page's next_before); got {}",
                crate::domain::quote(text.unwrap_or("").trim())
            ),
        )
    })
}

async fn get_tokens(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    ok(json!({"tokens": crate::auth::tokens::list(&state.pool, me.id).await?}))
}

async fn delete_token(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    // Admins may revoke any user's token (a leaked one, without disabling its account).
    if crate::auth::tokens::revoke(&state.pool, me.id, id, me.is_admin()).await? {
        ok(json!({"ok": true}))
    } else if me.is_admin() {
        Err(AppError::NotFound(format!("there is no active token with id {id}")).into())
    } else {
        Err(AppError::NotFound(format!("you have no active token with id {id}")).into())
    }
}

/// A user's API tokens (admin), newest first: to find the id of one to revoke.
async fn get_user_tokens(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    require_admin(&me)?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)")
        .bind(id)
        .fetch_one(&state.pool)
        .await?;
    if !exists {
        return Err(
            AppError::NotFound(crate::i18n::t1("users-not-found", "id", id.to_string())).into(),
        );
    }
    ok(json!({"tokens": crate::auth::tokens::list(&state.pool, id).await?}))
}

/// A contract purchase: times are RFC 3339 with an offset, or wall-clock with `time_zone`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ContractBody {
    project: String,
    cluster: String,
    gpu_model: String,
    gpus: i64,
    start: String,
    end: String,
    time_zone: Option<String>,
    /// The price the client expects (from a quote); refused with `price_changed` if it differs.
    expected_price_minor: Option<i64>,
}

impl ContractBody {
    fn request(&self) -> Result<crate::ledger::contracts::Request, AppError> {
        let instant = |field: &'static str, text: &str| -> Result<jiff::Timestamp, AppError> {
            match &self.time_zone {
                Some(name) => {
                    let tz = jiff::tz::TimeZone::get(name).map_err(|_| {
                        AppError::invalid(
                            "time_zone",
                            format!("{} is not a known IANA time zone", domain::quote(name)),
                        )
                    })?;
                    domain::parse_instant(text, &tz, name)
                        .map_err(|m| AppError::invalid(field, format!("{field}: {m}")))
                }
                None => match domain::parse_rfc3339(text) {
                    Ok(Some(ts)) => Ok(ts),
                    Ok(None) => Err(AppError::invalid(
                        field,
                        format!(
                            "{field}: {} is not RFC 3339 with an offset; give an offset (2026-12-01T09:00:00+01:00) or a \"time_zone\" for wall-clock times",
                            domain::quote(text)
                        ),
                    )),
                    Err(m) => Err(AppError::invalid(field, format!("{field}: {m}"))),
                },
            }
        };
        Ok(crate::ledger::contracts::Request {
            project: self.project.clone(),
            cluster: self.cluster.clone(),
            gpu_model: self.gpu_model.clone(),
            gpus: self.gpus,
            start: instant("start", &self.start)?,
            end: instant("end", &self.end)?,
            expected_price_minor: self.expected_price_minor,
        })
    }
}

fn contract_json(c: &crate::ledger::contracts::Contract, currency: &str) -> Value {
    json!({
        "id": c.id,
        "project": c.project,
        "cluster": c.cluster,
        "gpu_model": c.gpu_model,
        "gpus": c.gpus,
        "start": crate::ledger::to_jiff(c.starts_at).to_string(),
        "end": crate::ledger::to_jiff(c.ends_at).to_string(),
        "hours": (c.ends_at - c.starts_at).whole_seconds() as f64 / 3600.0,
        "price_minor": c.price_minor,
        "currency": currency,
        // As the pages say it: an active contract whose window has not begun is `scheduled`.
        "state": if c.state == "active" && c.starts_at > time::OffsetDateTime::now_utc() { "scheduled" } else { c.state.as_str() },
        "refund_minor": c.refund_minor,
        "bought_by": c.bought_by,
    })
}

/// The request's `Idempotency-Key` header, trimmed, if it has one.
///
/// # Errors
/// 422 `invalid_input` (field `Idempotency-Key`) unless it is 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<&str>, AppError> {
    headers
        .get("idempotency-key")
        .map(|v| {
            v.to_str()
                .ok()
                .map(str::trim)
                .filter(|k| (1..=255).contains(&k.len()))
                .ok_or_else(|| {
                    AppError::invalid(
                        "Idempotency-Key",
                        "the Idempotency-Key header is 1 to 255 visible ASCII characters",
                    )
                })
        })
        .transpose()
}

/// `POST /contracts`. An `Idempotency-Key` header makes a retry safe, as for runs: the key
/// repeated with the same request answers 200 with the contract it bought and
/// `"repeated": true`, buying nothing; with another request, 422 `idempotency_mismatch`.
async fn post_contract(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<ContractBody>,
) -> ApiResult {
    use crate::ledger::contracts::{Once, Purchase};
    let key = idempotency_key(&headers)?;
    let req = body.request()?;
    let fingerprint = req.fingerprint();
    let once = key.map(|key| {
        Once::Key(crate::runs::Key {
            key,
            fingerprint: &fingerprint,
        })
    });
    let purchase = crate::ledger::contracts::buy_once(
        &state.pool,
        &state.site,
        &me,
        &req,
        jiff::Timestamp::now(),
        once,
    )
    .await?;
    match purchase {
        Purchase::Bought(c, _) => {
            crate::web::check_alerts(&state).await;
            created(contract_json(&c, &state.site.currency))
        }
        Purchase::Repeated(c) => {
            let mut body = contract_json(&c, &state.site.currency);
            body["repeated"] = json!(true);
            ok(body)
        }
    }
}

async fn quote_contract(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiJson(body): ApiJson<ContractBody>,
) -> ApiResult {
    let req = body.request()?;
    let q = crate::ledger::contracts::quote(
        &state.pool,
        &state.site,
        &me,
        &req,
        jiff::Timestamp::now(),
    )
    .await?;
    ok(
        json!({"quote": q, "start": req.start.to_string(), "end": req.end.to_string(), "currency": state.site.currency}),
    )
}

#[derive(serde::Deserialize)]
struct PoolFilter {
    cluster: Option<String>,
    gpu_model: Option<String>,
}

/// A name filter as given, trimmed; `None` when absent or empty (no filter).
fn given_name(name: Option<&str>) -> Option<&str> {
    name.map(str::trim).filter(|n| !n.is_empty())
}

/// Refuses a query that filters by a cluster, GPU model or project name that does not exist:
/// 404 `not_found` naming it (docs/api.md: an unknown id or name is a 404), where the filter
/// would otherwise answer an empty list as if the name were right. Names match whatever their
/// case, as the filters do; `None` or an empty name filters nothing and passes. A project
/// `viewer` may not see is unknown to them alike (its existence is not told).
///
/// # Errors
/// 404 for the first unknown name; database errors.
pub(super) async fn known_names(
    pool: &sqlx::PgPool,
    viewer: &crate::auth::Account,
    cluster: Option<&str>,
    gpu_model: Option<&str>,
    project: Option<&str>,
) -> Result<(), AppError> {
    if let Some(name) = given_name(cluster)
        && inventory::cluster_id(pool, name).await?.is_none()
    {
        return Err(AppError::NotFound(format!(
            "no cluster named {}",
            domain::quote(name)
        )));
    }
    if let Some(name) = given_name(gpu_model)
        && inventory::gpu_model_id(pool, name).await?.is_none()
    {
        return Err(AppError::NotFound(format!(
            "no GPU model named {}",
            domain::quote(name)
        )));
    }
    if let Some(name) = given_name(project) {
        let ids: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM tree_nodes WHERE lower(name) = lower($1) AND is_project",
        )
        .bind(name)
        .fetch_all(pool)
        .await?;
        let parents = if ids.is_empty() || viewer.sees_everything() {
            None
        } else {
            Some(Parents::load(pool).await?)
        };
        let found = ids
            .iter()
            .any(|&id| parents.as_ref().is_none_or(|p| viewer.may_view(id, p)));
        if !found {
            return Err(AppError::NotFound(format!(
                "no project named {}",
                domain::quote(name)
            )));
        }
    }
    Ok(())
}

async fn get_contracts(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(f): ApiQuery<PoolFilter>,
) -> ApiResult {
    known_names(
        &state.pool,
        &me,
        f.cluster.as_deref(),
        f.gpu_model.as_deref(),
        None,
    )
    .await?;
    let list = crate::ledger::contracts::visible(
        &state.pool,
        &me,
        given_name(f.cluster.as_deref()),
        given_name(f.gpu_model.as_deref()),
    )
    .await?;
    ok(
        json!({"contracts": list.iter().map(|c| contract_json(c, &state.site.currency)).collect::<Vec<_>>()}),
    )
}

async fn cancel_contract(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult {
    let c =
        crate::ledger::contracts::cancel(&state.pool, &state.site, &me, id, jiff::Timestamp::now())
            .await?;
    ok(contract_json(&c, &state.site.currency))
}

async fn get_capacity(
    State(state): State<AppState>,
    ApiUser(_me): ApiUser,
    ApiQuery(f): ApiQuery<PoolFilter>,
) -> ApiResult {
    let (Some(cluster), Some(model)) = (f.cluster.as_deref(), f.gpu_model.as_deref()) else {
        let missing = if f.cluster.is_none() {
            "cluster"
        } else {
            "gpu_model"
        };
        return Err(AppError::invalid(missing, "give cluster and gpu_model").into());
    };
    let cluster_id = inventory::cluster_id(&state.pool, cluster)
        .await?
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "no cluster named {cluster}",
                cluster = crate::domain::quote(cluster)
            ))
        })?;
    let model_id = inventory::gpu_model_id(&state.pool, model)
        .await?
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "no GPU model named {model}",
                model = crate::domain::quote(model)
            ))
        })?;
    let cal = crate::ledger::contracts::calendar(
        &state.pool,
        &state.site,
        cluster_id,
        model_id,
        jiff::Timestamp::now(),
    )
    .await?;
    ok(json!({"cluster": cluster, "gpu_model": model, "calendar": cal}))
}

async fn get_spend(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(q): ApiQuery<crate::web::reports::ReportQuery>,
) -> ApiResult {
    known_names(&state.pool, &me, Some(&q.cluster), None, None).await?;
    let (filter, label) = crate::web::reports::resolve_filter(&state, &me, &q).await?;
    crate::web::reports::open_current_budgets(&state, &filter, jiff::Timestamp::now()).await?;
    let rows = crate::ledger::reports::rows(
        &state.pool,
        &state.site,
        &me,
        &filter,
        jiff::Timestamp::now(),
    )
    .await?;
    ok(json!({"period": label, "currency": state.site.currency, "rows": rows}))
}

async fn get_metrics(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(q): ApiQuery<crate::web::metrics::MetricsQuery>,
) -> ApiResult {
    known_names(&state.pool, &me, Some(&q.cluster), None, None).await?;
    let d = crate::web::metrics::dashboard(&state, &me, &q).await?;
    ok(serde_json::to_value(d).map_err(|e| ApiError(AppError::Internal(e.into())))?)
}

#[derive(serde::Deserialize)]
struct LedgerQuery {
    project: String,
    /// Only postings with a smaller id (the previous page's `next_before`): text as it came, a
    /// whole number from 1 (as the runs' `before`, [`crate::runs::parse_before`]).
    #[serde(default)]
    before: Option<String>,
    /// At most this many (default 500, clamped to 1 ..= `ledger::ENTRIES_MAX`).
    #[serde(default)]
    limit: Option<i64>,
}

async fn get_ledger(
    State(state): State<AppState>,
    ApiUser(me): ApiUser,
    ApiQuery(q): ApiQuery<LedgerQuery>,
) -> ApiResult {
    let parents = Parents::load(&state.pool).await?;
    // A project the caller may not see answers as a missing one: its existence is not told.
    let project: i64 = sqlx::query_scalar::<_, i64>(
        "SELECT id FROM tree_nodes WHERE lower(name) = lower($1) AND is_project",
    )
    .bind(q.project.trim())
    .fetch_optional(&state.pool)
    .await?
    .filter(|&id| me.may_view(id, &parents))
    .ok_or_else(|| {
        AppError::NotFound(format!(
            "no project named {}",
            crate::domain::quote(q.project.trim())
        ))
    })?;
    let before = page_before(q.before.as_deref(), "a ledger entry")?;
    let balance =
        crate::ledger::balance(&state.pool, project, jiff::Timestamp::now(), &state.site).await?;
    let (entries, next_before) =
        crate::ledger::entries(&state.pool, project, before, q.limit.unwrap_or(500)).await?;
    ok(json!({
        "project": q.project.trim(),
        "currency": state.site.currency,
        "balance_minor": balance.0,
        "entries": entries,
        "next_before": next_before,
    }))
}

async fn get_notifications(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    let tree = state.tree_for(&me).await?;
    ok(
        json!({"notifications": crate::ledger::alerts::notifications(&state.pool, &me, &tree.parents).await?}),
    )
}

async fn get_alerts(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    let parents = Parents::load(&state.pool).await?;
    let alerts: Vec<_> = crate::ledger::alerts::fired(&state.pool)
        .await?
        .into_iter()
        .filter(|a| me.may_view(a.project_id, &parents))
        .collect();
    ok(json!({"alerts": alerts}))
}

async fn read_notifications(State(state): State<AppState>, ApiUser(me): ApiUser) -> ApiResult {
    let n = crate::ledger::alerts::mark_read(&state.pool, me.id, jiff::Timestamp::now()).await?;
    ok(json!({"marked_read": n}))
}

/// The API's JSON 404 for a path it does not serve.
pub(crate) async fn not_found() -> ApiError {
    ApiError(AppError::NotFound(
        "no such API endpoint; see /api/v1/openapi.json".into(),
    ))
}

async fn method_not_allowed() -> Response {
    let body = json!({"error": {"code": "method_not_allowed", "message": "this endpoint does not take that method", "field": null}});
    (StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response()
}

/// The API routes, to be nested under `/api/v1`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .route("/me", get(me).put(put_me))
        .route("/tree", get(tree))
        .route("/clusters", get(clusters).post(post_cluster))
        .route("/clusters/{id}/nodes", post(post_cluster_node))
        .route("/cluster-nodes/{id}/state", put(put_node_state))
        .route(
            "/cluster-nodes/{id}",
            get(get_cluster_node).patch(patch_cluster_node),
        )
        .route("/cluster-nodes/{id}/drain", post(post_drain))
        .route("/cluster-nodes/{id}/return", post(post_return))
        .route("/idle-flags", get(runs::get_idle_flags))
        .route("/idle-flags/{id}/stop", post(runs::stop_idle))
        .route("/gpu-models", get(gpu_models).post(post_model))
        .route("/gpu-models/{id}", axum::routing::patch(patch_model))
        .route("/nodes", post(post_node))
        .route("/nodes/{id}", axum::routing::patch(patch_node))
        .route("/nodes/{id}/shares", put(put_shares))
        .route("/projects/{id}", get(project))
        .route("/projects/{id}/budget", put(put_budget))
        .route("/projects/{id}/members", post(post_member))
        .route(
            "/projects/{id}/members/{user}",
            axum::routing::delete(delete_member),
        )
        .route("/users", get(get_users).post(post_user))
        .route("/users/{id}/grants", post(post_grant))
        .route("/users/{id}/disable", post(post_disable))
        .route("/users/{id}/tokens", get(get_user_tokens))
        .route("/users/{id}/enable", post(post_enable))
        .route(
            "/users/{id}/grants/{grant}",
            axum::routing::delete(delete_grant),
        )
        .route("/audit", get(get_audit))
        .route("/tokens", get(get_tokens))
        .route("/contracts", get(get_contracts).post(post_contract))
        .route("/contracts/quote", post(quote_contract))
        .route("/contracts/{id}/cancel", post(cancel_contract))
        .route("/capacity", get(get_capacity))
        .route("/spend", get(get_spend))
        .route("/metrics", get(get_metrics))
        .route("/notifications", get(get_notifications))
        .route("/alerts", get(get_alerts))
        .route("/notifications/read", post(read_notifications))
        .route("/ledger", get(get_ledger))
        .route("/tokens/{id}", axum::routing::delete(delete_token))
        .route("/runs", get(runs::get_runs).post(runs::post_run))
        .route("/runs/preview", post(runs::preview_run))
        .route("/runs/{id}", get(runs::get_run))
        .route("/runs/{id}/cancel", post(runs::cancel_run))
        .route("/runs/{id}/approve", post(runs::approve_run))
        .route("/runs/{id}/deny", post(runs::deny_run))
        .route("/approvals", get(runs::get_approvals))
        .route("/use-cases", get(ai::get_use_cases).post(ai::post_use_case))
        .route(
            "/use-cases/{id}",
            get(ai::get_use_case).put(ai::put_use_case),
        )
        .route("/use-cases/{id}/status", put(ai::put_status))
        .route(
            "/use-cases/{id}/reviews",
            get(ai::get_reviews).post(ai::post_review),
        )
        .route("/use-cases/{id}/acknowledge", post(ai::post_acknowledge))
        .route("/use-cases/{id}/hours", post(ai::post_hours))
        .route(
            "/use-cases/{id}/stop-criterion",
            post(ai::post_stop_criterion),
        )
        .route("/spend-imports", get(ai::get_imports).post(ai::post_import))
        .route("/spend-rules", get(ai::get_rules).post(ai::post_rule))
        .route("/agent/register", post(runs::agent_register))
        .route("/agent/sync", post(runs::agent_sync))
        .route("/agent/stop", post(runs::agent_stop))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(query_text_rule))
}

/// The text rule on the query of every API request, also of operations that read no query
/// (docs/api.md: any text of a query): a control character in a name or a value is 422
/// `invalid_text` (operations without query parameters took `?x=%01` with 200).
async fn query_text_rule(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if let Some(query) = req.uri().query() {
        let checked = crate::web::input::decode_pairs(query.as_bytes())
            .and_then(|pairs| crate::web::input::check_pairs(&pairs));
        if let Err(e) = checked {
            return ApiError(e).into_response();
        }
    }
    next.run(req).await
}
