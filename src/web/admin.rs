//! Admin pages: inventory (GPU models, clusters, nodes and their states) and users and roles.

use axum::Router;
use axum::extract::State;

use crate::web::input::Form;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser};
use crate::db::{inventory, users};
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::state::AppState;
use crate::web::{Layout, PagePath, flash, render_status};

fn require_admin(me: &Account) -> Result<(), AppError> {
    if me.is_admin() {
        Ok(())
    } else {
        Err(AppError::Forbidden(
            "only an admin may open this page".into(),
        ))
    }
}

struct ModelRow {
    id: i64,
    name: String,
    weight: String,
    price: String,
}

#[derive(Default)]
struct InventoryForm {
    /// A model's row as typed when its update failed: (id, weight, price).
    typed_model: Option<(i64, String, String)>,
    model_name: String,
    model_weight: String,
    model_price: String,
    cluster_name: String,
}

#[derive(askama::Template)]
#[template(path = "admin/inventory.html")]
struct InventoryPage {
    layout: Layout,
    error: Option<String>,
    currency: String,
    models: Vec<ModelRow>,
    clusters: Vec<inventory::Cluster>,
    form: InventoryForm,
}

async fn inventory_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    error: Option<String>,
    form: InventoryForm,
) -> Result<Response, AppError> {
    require_admin(me)?;
    let models = inventory::gpu_models(&state.pool)
        .await?
        .into_iter()
        .map(|m| match &form.typed_model {
            Some((id, weight, price)) if *id == m.id => ModelRow {
                id: m.id,
                name: m.name,
                weight: weight.clone(),
                price: price.clone(),
            },
            _ => ModelRow {
                id: m.id,
                name: m.name,
                weight: domain::format_milli(i64::from(m.billing_weight_milli)),
                price: Money(m.price_per_gpu_hour_minor).plain(),
            },
        })
        .collect();
    let status = if error.is_some() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    } else {
        axum::http::StatusCode::OK
    };
    render_status(
        status,
        &InventoryPage {
            layout: Layout::for_user(session, me, "/admin/inventory").await?,
            error,
            currency: state.site.currency.clone(),
            models,
            clusters: inventory::clusters(&state.pool).await?,
            form,
        },
    )
}

async fn inventory_get(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    inventory_page(&state, &session, &me, None, InventoryForm::default()).await
}

#[derive(serde::Deserialize, Default)]
struct ModelForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    billing_weight: String,
    #[serde(default)]
    price: String,
}

async fn model_create(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<ModelForm>,
) -> Result<Response, AppError> {
    match inventory::create_gpu_model(&state.pool, &me, &f.name, &f.billing_weight, &f.price).await
    {
        Ok(_) => {
            flash(&session, format!("Added GPU model {}.", f.name.trim())).await?;
            Ok(Redirect::to("/admin/inventory").into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            let form = InventoryForm {
                model_name: f.name,
                model_weight: f.billing_weight,
                model_price: f.price,
                ..InventoryForm::default()
            };
            inventory_page(&state, &session, &me, Some(message), form).await
        }
        Err(e) => Err(e),
    }
}

async fn model_update(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<ModelForm>,
) -> Result<Response, AppError> {
    match inventory::update_gpu_model(&state.pool, &me, id, &f.billing_weight, &f.price).await {
        Ok(()) => {
            flash(&session, "GPU model saved.").await?;
            Ok(Redirect::to("/admin/inventory").into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            inventory_page(
                &state,
                &session,
                &me,
                Some(message),
                InventoryForm {
                    typed_model: Some((id, f.billing_weight.clone(), f.price.clone())),
                    ..InventoryForm::default()
                },
            )
            .await
        }
        Err(e) => Err(e),
    }
}

#[derive(serde::Deserialize, Default)]
struct NameForm {
    #[serde(default)]
    name: String,
}

async fn cluster_create(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<NameForm>,
) -> Result<Response, AppError> {
    match inventory::create_cluster(&state.pool, &me, &f.name).await {
        Ok(id) => {
            flash(&session, format!("Added cluster {}.", f.name.trim())).await?;
            Ok(Redirect::to(&format!("/admin/clusters/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            inventory_page(
                &state,
                &session,
                &me,
                Some(message),
                InventoryForm {
                    cluster_name: f.name,
                    ..InventoryForm::default()
                },
            )
            .await
        }
        Err(e) => Err(e),
    }
}

#[derive(askama::Template)]
#[template(path = "admin/cluster.html")]
struct ClusterPage {
    layout: Layout,
    cluster: inventory::Cluster,
    /// Each node with its last heartbeat as shown (`—` for none) and its drain, in words.
    rows: Vec<(inventory::Node, String, String)>,
    models: Vec<inventory::GpuModel>,
    error: Option<String>,
    form_name: String,
    form_model: String,
    form_count: String,
    /// `agent` or `slurm`, and for Slurm a line on its controller (partition, answering or
    /// not since when).
    executor: String,
    executor_note: String,
    /// Slurm jobs outside Tranche holding GPUs: job id, name, user, node, GPUs.
    outside: Vec<(i64, String, String, String, i32)>,
}

async fn cluster_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    error: Option<String>,
    form: NodeForm,
) -> Result<Response, AppError> {
    require_admin(me)?;
    let cluster = inventory::clusters(&state.pool)
        .await?
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(|| AppError::NotFound(format!("no cluster with id {id}")))?;
    let status = if error.is_some() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    } else {
        axum::http::StatusCode::OK
    };
    let now = jiff::Timestamp::now();
    let drains = crate::db::drains::open(&state.pool).await?;
    let rows = cluster
        .nodes
        .iter()
        .map(|n| match n.last_heartbeat {
            Some(at) => {
                let at = crate::ledger::to_jiff(at);
                let ago = (now.as_second() - at.as_second()).max(0);
                format!(
                    "{} ({})",
                    crate::domain::format_local(at, &state.site.time_zone),
                    ago_text(ago)
                )
            }
            None => "—".into(),
        })
        .zip(&cluster.nodes)
        .map(|(h, n)| {
            let drain = drain_text(drains.get(&n.id), &state.site.time_zone);
            (n.clone(), h, drain)
        })
        .collect();
    let (executor, partition, down_since, down_error): (
        String,
        Option<String>,
        Option<time::OffsetDateTime>,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT executor, slurm_partition, executor_down_since, executor_error FROM clusters WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&state.pool)
    .await?;
    let executor_note = match (&partition, down_since) {
        (None, _) => String::new(),
        (Some(p), None) => format!("Slurm partition {p}: the controller answers."),
        (Some(p), Some(at)) => format!(
            "Slurm partition {p}: the controller does not answer since {} ({}); new starts wait.",
            crate::domain::format_local(crate::ledger::to_jiff(at), &state.site.time_zone),
            down_error.unwrap_or_default()
        ),
    };
    let outside: Vec<(i64, String, String, String, i32)> = sqlx::query_as(
        "SELECT o.job_id, o.name, o.user_name, n.name, o.gpus FROM slurm_outside_jobs o JOIN nodes n ON n.id = o.node_id \
         WHERE o.cluster_id = $1 ORDER BY o.job_id, n.name",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    render_status(
        status,
        &ClusterPage {
            executor,
            executor_note,
            outside,
            layout: Layout::for_user(session, me, "/admin/inventory").await?,
            cluster,
            rows,
            models: inventory::gpu_models(&state.pool).await?,
            error,
            form_name: form.name,
            form_model: form.gpu_model,
            form_count: if form.gpu_count.is_empty() {
                "8".into()
            } else {
                form.gpu_count
            },
        },
    )
}

/// `45 s ago`, `12 min ago`, `3 h ago`, `2 days ago`.
fn ago_text(seconds: i64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s if s < 172_800 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

async fn cluster_get(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    cluster_page(&state, &session, &me, id, None, NodeForm::default()).await
}

#[derive(serde::Deserialize, Default)]
struct NodeForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    gpu_model: String,
    #[serde(default)]
    gpu_count: String,
}

async fn node_create(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<NodeForm>,
) -> Result<Response, AppError> {
    match inventory::add_node(&state.pool, &me, id, &f.name, &f.gpu_model, &f.gpu_count).await {
        Ok(_) => {
            flash(&session, format!("Added node {}.", f.name.trim())).await?;
            Ok(Redirect::to(&format!("/admin/clusters/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            cluster_page(&state, &session, &me, id, Some(message), f).await
        }
        Err(e) => Err(e),
    }
}

#[derive(serde::Deserialize, Default)]
struct StateForm {
    #[serde(default)]
    state: String,
}

async fn node_state(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<StateForm>,
) -> Result<Response, AppError> {
    let cluster_id: Option<i64> = sqlx::query_scalar("SELECT cluster_id FROM nodes WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool)
        .await?;
    match inventory::set_node_state(&state.pool, &me, id, &f.state, None).await {
        Ok(()) => {
            flash(&session, format!("Node is now {}.", f.state.trim())).await?;
            Ok(Redirect::to(&format!(
                "/admin/clusters/{}",
                cluster_id.unwrap_or_default()
            ))
            .into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            cluster_page(
                &state,
                &session,
                &me,
                cluster_id.unwrap_or_default(),
                Some(message),
                NodeForm::default(),
            )
            .await
        }
        Err(e) => Err(e),
    }
}

/// A node's open drain in words: "empty, ready for repair since …" once nothing runs there,
/// else "draining since …: waiting for its runs"; empty without a drain.
fn drain_text(drain: Option<&crate::db::drains::Drain>, tz: &jiff::tz::TimeZone) -> String {
    let Some(d) = drain else {
        return String::new();
    };
    let at = |t: time::OffsetDateTime| domain::format_local(crate::ledger::to_jiff(t), tz);
    match d.emptied_at {
        Some(e) => format!("empty, ready for repair since {}", at(e)),
        None => format!(
            "draining since {}: its runs are requeued as each passes its minimum runtime",
            at(d.drained_at)
        ),
    }
}

/// Run, project, GPU indices, state, end of its protection (allocated runs).
type NodeRunRow = (i64, String, Vec<i32>, String, Option<time::OffsetDateTime>);

/// A run holding GPUs on a node, as its page lists it.
struct NodeRun {
    id: i64,
    project: String,
    gpus: String,
    state: String,
    protected_until: String,
}

struct DrainRow {
    reason: String,
    by: String,
    drained_at: String,
    emptied_at: String,
    needed_human: bool,
    returned: String,
}

#[derive(askama::Template)]
#[template(path = "admin/node.html")]
struct NodePage {
    layout: Layout,
    node: inventory::Node,
    cluster: (i64, String),
    drain: String,
    draining: bool,
    runs: Vec<NodeRun>,
    history: Vec<DrainRow>,
    error: Option<String>,
    form_reason: String,
}

async fn node_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    error: Option<String>,
    form_reason: String,
) -> Result<Response, AppError> {
    require_admin(me)?;
    let (cluster, node) = inventory::clusters(&state.pool)
        .await?
        .into_iter()
        .find_map(|c| {
            let n = c.nodes.iter().find(|n| n.id == id).cloned();
            n.map(|n| ((c.id, c.name), n))
        })
        .ok_or_else(|| AppError::NotFound(format!("no node with id {id}")))?;
    let tz = &state.site.time_zone;
    let at = |t: time::OffsetDateTime| domain::format_local(crate::ledger::to_jiff(t), tz);
    let history = crate::db::drains::of_node(&state.pool, id).await?;
    let open = history.iter().find(|d| d.returned_at.is_none());
    let drain = drain_text(open, tz);
    let runs: Vec<NodeRunRow> = sqlx::query_as(
        "SELECT r.id, t.name, array_agg(h.gpu_index ORDER BY h.gpu_index), r.state, \
                CASE WHEN r.min_runtime_s > 0 THEN r.started_at + make_interval(secs => r.min_runtime_s) END \
         FROM gpu_holds h JOIN runs r ON r.id = h.run_id JOIN tree_nodes t ON t.id = r.project_id \
         WHERE h.node_id = $1 GROUP BY r.id, t.name ORDER BY r.id",
    )
    .bind(id)
    .fetch_all(&state.pool)
    .await?;
    let now = time::OffsetDateTime::now_utc();
    let status = if error.is_some() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    } else {
        axum::http::StatusCode::OK
    };
    render_status(
        status,
        &NodePage {
            layout: Layout::for_user(session, me, "/admin/inventory").await?,
            draining: node.state == "draining",
            node,
            cluster,
            drain,
            runs: runs
                .into_iter()
                .map(|(rid, project, gpus, st, until)| NodeRun {
                    id: rid,
                    project,
                    gpus: gpus
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    state: st,
                    protected_until: match until {
                        Some(u) if u > now => format!("protected until {}", at(u)),
                        Some(_) => "past its minimum runtime".into(),
                        None => "unallocated (never protected)".into(),
                    },
                })
                .collect(),
            history: history
                .iter()
                .map(|d| DrainRow {
                    reason: d.reason.clone(),
                    by: d.drained_by.clone().unwrap_or_else(|| "system".into()),
                    drained_at: at(d.drained_at),
                    emptied_at: d.emptied_at.map_or_else(|| "—".into(), at),
                    needed_human: d.needed_human,
                    returned: d.returned_at.map_or_else(
                        || "not yet".into(),
                        |r| {
                            format!(
                                "{} by {}",
                                at(r),
                                d.returned_by.as_deref().unwrap_or("system")
                            )
                        },
                    ),
                })
                .collect(),
            error,
            form_reason,
        },
    )
}

async fn node_get(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    node_page(&state, &session, &me, id, None, String::new()).await
}

#[derive(serde::Deserialize, Default)]
struct DrainForm {
    #[serde(default)]
    reason: String,
}

async fn node_drain(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<DrainForm>,
) -> Result<Response, AppError> {
    match inventory::drain_node(&state.pool, &me, id, &f.reason).await {
        Ok(()) => {
            flash(&session, "Node is draining: it takes no new runs.").await?;
            Ok(Redirect::to(&format!("/admin/nodes/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            node_page(&state, &session, &me, id, Some(message), f.reason).await
        }
        Err(e) => Err(e),
    }
}

async fn node_return(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    inventory::return_node(&state.pool, &me, id).await?;
    flash(&session, "Node is back in service.").await?;
    Ok(Redirect::to(&format!("/admin/nodes/{id}")).into_response())
}

#[derive(askama::Template)]
#[template(path = "admin/users.html")]
struct UsersPage {
    layout: Layout,
    error: Option<String>,
    created: Option<(String, String)>,
    users: Vec<users::UserRow>,
    form_name: String,
    form_role: String,
    form_node: String,
    /// The break-glass admin's name while local password sign-in is off for everyone else.
    break_glass: Option<String>,
    /// What the break-glass field holds (the input, when re-rendered with an error).
    form_break_glass: String,
}

#[derive(serde::Deserialize, Default)]
struct UserForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    node: String,
    #[serde(default)]
    break_glass: String,
    #[serde(default)]
    local: String,
}

async fn users_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    error: Option<String>,
    created: Option<(String, String)>,
    form: UserForm,
) -> Result<Response, AppError> {
    require_admin(me)?;
    let status = if error.is_some() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    } else {
        axum::http::StatusCode::OK
    };
    let list = users::list(&state.pool).await?;
    let break_glass = users::break_glass_admin(&state.pool)
        .await?
        .and_then(|id| list.iter().find(|u| u.id == id).map(|u| u.name.clone()));
    render_status(
        status,
        &UsersPage {
            layout: Layout::for_user(session, me, "/admin/users").await?,
            error,
            created,
            users: list,
            form_break_glass: if form.break_glass.is_empty() {
                break_glass.clone().unwrap_or_default()
            } else {
                form.break_glass
            },
            break_glass,
            form_name: form.name,
            form_role: if form.role.is_empty() {
                "researcher".into()
            } else {
                form.role
            },
            form_node: form.node,
        },
    )
}

async fn users_get(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    users_page(&state, &session, &me, None, None, UserForm::default()).await
}

async fn user_create(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<UserForm>,
) -> Result<Response, AppError> {
    require_admin(&me)?;
    let node = Some(f.node.as_str()).filter(|n| !n.trim().is_empty());
    match users::create(&state.pool, Some(me.id), &f.name, &f.role, node).await {
        // The password is shown once, on this response only; it is never stored in clear.
        Ok((_, password)) => {
            users_page(
                &state,
                &session,
                &me,
                None,
                Some((f.name.trim().to_string(), password)),
                UserForm::default(),
            )
            .await
        }
        Err(AppError::Invalid { message, .. }) => {
            users_page(&state, &session, &me, Some(message), None, f).await
        }
        Err(e) => Err(e),
    }
}

async fn grant_create(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<UserForm>,
) -> Result<Response, AppError> {
    require_admin(&me)?;
    let node = Some(f.node.as_str()).filter(|n| !n.trim().is_empty());
    match users::grant(&state.pool, Some(me.id), id, &f.role, node).await {
        Ok(_) => {
            flash(&session, "Role granted.").await?;
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            users_page(
                &state,
                &session,
                &me,
                Some(message),
                None,
                UserForm::default(),
            )
            .await
        }
        Err(e) => Err(e),
    }
}

async fn grant_revoke(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath((id, grant)): PagePath<(i64, i64)>,
) -> Result<Response, AppError> {
    require_admin(&me)?;
    match users::revoke(&state.pool, Some(me.id), id, grant).await {
        Ok(()) => {
            flash(&session, "Role revoked.").await?;
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            users_page(
                &state,
                &session,
                &me,
                Some(message),
                None,
                UserForm::default(),
            )
            .await
        }
        Err(e) => Err(e),
    }
}

/// `POST /admin/sign-in`: `local=off` with `break_glass=NAME` turns local password sign-in
/// off for everyone but that admin; `local=on` turns it back on.
async fn local_sign_in(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<UserForm>,
) -> Result<Response, AppError> {
    require_admin(&me)?;
    let result = match f.local.as_str() {
        "on" => users::set_local_sign_in(&state.pool, Some(me.id), None).await,
        "off" => users::set_local_sign_in(&state.pool, Some(me.id), Some(&f.break_glass)).await,
        other => Err(AppError::invalid(
            "local",
            format!("local sign-in is on or off (got {})", domain::quote(other)),
        )),
    };
    match result {
        Ok(()) => {
            flash(
                &session,
                if f.local == "on" {
                    "Password sign-in is on for every local account."
                } else {
                    "Password sign-in is off except for the break-glass admin."
                },
            )
            .await?;
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            let form = UserForm {
                break_glass: f.break_glass,
                ..UserForm::default()
            };
            users_page(&state, &session, &me, Some(message), None, form).await
        }
        Err(e) => Err(e),
    }
}

/// Admin routes under `/admin`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/inventory", get(inventory_get))
        .route("/admin/gpu-models", post(model_create))
        .route("/admin/gpu-models/{id}", post(model_update))
        .route("/admin/clusters", post(cluster_create))
        .route("/admin/clusters/{id}", get(cluster_get))
        .route("/admin/clusters/{id}/nodes", post(node_create))
        .route("/admin/nodes/{id}/state", post(node_state))
        .route("/admin/nodes/{id}", get(node_get))
        .route("/admin/nodes/{id}/drain", post(node_drain))
        .route("/admin/nodes/{id}/return", post(node_return))
        .route("/admin/users", get(users_get).post(user_create))
        .route("/admin/sign-in", post(local_sign_in))
        .route("/admin/users/{id}/grants", post(grant_create))
        .route(
            "/admin/users/{id}/grants/{grant}/revoke",
            post(grant_revoke),
        )
}
