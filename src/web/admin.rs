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
use crate::i18n::{self, t, t1, t2};
use crate::state::AppState;
use crate::web::{Layout, PagePath, flash, int, render_status};

fn require_admin(me: &Account) -> Result<(), AppError> {
    if me.is_admin() {
        Ok(())
    } else {
        Err(AppError::Forbidden(t("inventory-admins-only")))
    }
}

/// A node's status (`up`, `draining`, `down`, `lost`, `awaiting agent`) or admin state in the
/// page's language; an unknown one as it is.
pub fn node_status_words(status: &str) -> String {
    match status {
        "up" => t("node-status-up"),
        "draining" => t("node-status-draining"),
        "down" => t("node-status-down"),
        "lost" => t("node-status-lost"),
        "awaiting agent" => t("node-status-awaiting-agent"),
        other => other.to_string(),
    }
}

/// A role's name in the page's language (`researcher`, `investigación`, `ikertzailea`).
fn role_words(role: &str) -> String {
    match role {
        "admin" => t("role-admin"),
        "finance" => t("role-finance"),
        "lead" => t("role-lead"),
        "researcher" => t("role-researcher"),
        other => other.to_string(),
    }
}

/// The GPUs of a cluster per model, `8 × H100 16 × B200 ` (each followed by a space).
fn gpus_text(gpus: &[(String, i64)]) -> String {
    gpus.iter()
        .map(|(model, n)| {
            format!(
                "{} ",
                t2("inventory-gpus-of-model", "count", int(*n), "model", model)
            )
        })
        .collect()
}

/// Text for an HTML message shown with `|safe`: `<`, `>`, `&` and quotes escaped.
fn escape_html(text: &str) -> String {
    askama::filters::escape(text, askama::filters::Html)
        .map(|m| m.to_string())
        .unwrap_or_default()
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
    /// Each cluster with its node count and its GPUs per model, as shown.
    clusters: Vec<(inventory::Cluster, String, String)>,
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
                weight: i18n::format::milli(i64::from(m.billing_weight_milli)),
                price: Money(m.price_per_gpu_hour_minor).input_value(),
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
            clusters: inventory::clusters(&state.pool)
                .await?
                .into_iter()
                .map(|c| {
                    let nodes = int(c.nodes.len() as i64);
                    let gpus = gpus_text(&c.gpus);
                    (c, nodes, gpus)
                })
                .collect(),
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
            flash(&session, t1("inventory-model-added", "name", f.name.trim())).await?;
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
    match inventory::update_gpu_model(
        &state.pool,
        &state.site,
        &me,
        id,
        &f.billing_weight,
        &f.price,
    )
    .await
    {
        Ok(()) => {
            flash(&session, t("inventory-model-saved")).await?;
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
            flash(
                &session,
                t1("inventory-cluster-added", "name", f.name.trim()),
            )
            .await?;
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
    /// `8 × H100 in 1 nodes.`: the cluster's GPUs and nodes in a sentence.
    gpus_line: String,
    /// Each node with its status and last heartbeat as shown (`—` for none) and its drain, in
    /// words.
    rows: Vec<(inventory::Node, String, String, String)>,
    /// The admin states a node can be set to: (value, label).
    states: Vec<(&'static str, String)>,
    models: Vec<inventory::GpuModel>,
    error: Option<String>,
    form_name: String,
    form_model: String,
    form_count: String,
    /// `agent` or `slurm`, the same in words, and for Slurm a line on its controller
    /// (partition, answering or not since when).
    executor: String,
    executor_name: String,
    executor_note: String,
    /// Slurm jobs outside Tranche holding GPUs: job id, name, user, node, GPUs.
    outside: Vec<(i64, String, String, String, i32)>,
    /// A refused state change as typed: (node id, reason); the node's row shows it.
    typed_reason: Option<(i64, String)>,
}

impl ClusterPage {
    /// The reason typed in `node`'s state form when it was refused, else empty.
    fn reason_for(&self, node: &i64) -> &str {
        match &self.typed_reason {
            Some((id, reason)) if id == node => reason,
            _ => "",
        }
    }
}

async fn cluster_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    error: Option<String>,
    form: NodeForm,
) -> Result<Response, AppError> {
    cluster_page_with(state, session, me, id, error, form, None).await
}

/// [`cluster_page`], with a refused state change's input `(node, state, reason)` shown in that
/// node's row.
async fn cluster_page_with(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    error: Option<String>,
    form: NodeForm,
    typed: Option<(i64, String, String)>,
) -> Result<Response, AppError> {
    require_admin(me)?;
    let cluster = inventory::clusters(&state.pool)
        .await?
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(|| AppError::NotFound(t1("cluster-not-found", "id", id.to_string())))?;
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
                t2(
                    "cluster-heartbeat",
                    "at",
                    crate::domain::format_local(at, &state.site.time_zone),
                    "ago",
                    ago_text(ago),
                )
            }
            None => "—".into(),
        })
        .zip(&cluster.nodes)
        .map(|(h, n)| {
            let drain = drain_text(drains.get(&n.id), &state.site.time_zone);
            let mut n = n.clone();
            if let Some((node, chosen, _)) = &typed
                && *node == n.id
            {
                n.state.clone_from(chosen);
            }
            let status = node_status_words(&n.status);
            (n, status, h, drain)
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
        (Some(p), None) => t1("cluster-slurm-answers", "partition", p),
        (Some(p), Some(at)) => i18n::ta(
            "cluster-slurm-down",
            &[
                ("partition", p),
                (
                    "since",
                    &crate::domain::format_local(crate::ledger::to_jiff(at), &state.site.time_zone),
                ),
                ("error", &down_error.unwrap_or_default()),
            ],
        ),
    };
    let executor_name = match executor.as_str() {
        "agent" => t("cluster-executor-agent"),
        "slurm" => t("cluster-executor-slurm"),
        other => other.to_string(),
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
            executor_name,
            executor_note,
            outside,
            typed_reason: typed.map(|(node, _, reason)| (node, reason)),
            layout: Layout::for_user(session, me, "/admin/inventory").await?,
            gpus_line: t2(
                "cluster-gpus-in-nodes",
                "gpus",
                gpus_text(&cluster.gpus),
                "nodes",
                cluster.nodes.len(),
            ),
            cluster,
            rows,
            states: ["up", "draining", "down"]
                .into_iter()
                .map(|s| (s, node_status_words(s)))
                .collect(),
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

/// `45 s ago`, `12 min ago`, `3 h ago`, `2 days ago` (`hace 2 días`, `duela 2 egun`).
fn ago_text(seconds: i64) -> String {
    match seconds {
        s if s < 120 => t1("cluster-ago-seconds", "count", s),
        s if s < 7200 => t1("cluster-ago-minutes", "count", s / 60),
        s if s < 172_800 => t1("cluster-ago-hours", "count", s / 3600),
        s => t1("cluster-ago-days", "count", s / 86_400),
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
            flash(&session, t1("cluster-node-added", "name", f.name.trim())).await?;
            Ok(Redirect::to(&format!("/admin/clusters/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. } | AppError::NotFound(message)) => {
            cluster_page(&state, &session, &me, id, Some(message), f).await
        }
        Err(e) => Err(e),
    }
}

#[derive(serde::Deserialize, Default)]
struct StateForm {
    #[serde(default)]
    state: String,
    /// Why the node is drained (required to open a drain).
    #[serde(default)]
    reason: String,
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
    match inventory::set_node_state(&state.pool, &me, id, &f.state, Some(&f.reason)).await {
        Ok(()) => {
            flash(
                &session,
                t1(
                    "cluster-node-state-set",
                    "state",
                    node_status_words(f.state.trim()),
                ),
            )
            .await?;
            Ok(Redirect::to(&format!(
                "/admin/clusters/{}",
                cluster_id.unwrap_or_default()
            ))
            .into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            cluster_page_with(
                &state,
                &session,
                &me,
                cluster_id.unwrap_or_default(),
                Some(message),
                NodeForm::default(),
                Some((id, f.state.trim().to_string(), f.reason)),
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
        Some(e) => t1("node-drain-empty", "since", at(e)),
        None => t1("node-drain-draining", "since", at(d.drained_at)),
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
    /// The node's status in words.
    status: String,
    drain: String,
    draining: bool,
    runs: Vec<NodeRun>,
    history: Vec<DrainRow>,
    error: Option<String>,
    form_reason: String,
    /// GPU model names, for the correction form.
    models: Vec<String>,
    /// The correction form's input: the node's own, or what was typed before an error.
    hardware: HardwareForm,
}

/// The node correction form: GPU model and count.
#[derive(serde::Deserialize, Default, Clone)]
struct HardwareForm {
    #[serde(default)]
    gpu_model: String,
    #[serde(default)]
    gpu_count: String,
}

async fn node_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    error: Option<String>,
    form_reason: String,
    hardware: Option<HardwareForm>,
) -> Result<Response, AppError> {
    require_admin(me)?;
    let (cluster, node) = inventory::clusters(&state.pool)
        .await?
        .into_iter()
        .find_map(|c| {
            let n = c.nodes.iter().find(|n| n.id == id).cloned();
            n.map(|n| ((c.id, c.name), n))
        })
        .ok_or_else(|| AppError::NotFound(t1("node-not-found", "id", id.to_string())))?;
    let tz = &state.site.time_zone;
    let at = |t: time::OffsetDateTime| domain::format_local(crate::ledger::to_jiff(t), tz);
    let history = crate::db::drains::of_node(&state.pool, id).await?;
    let open = history.iter().find(|d| d.returned_at.is_none());
    let drain = drain_text(open, tz);
    let runs: Vec<NodeRunRow> = sqlx::query_as(
        "SELECT r.id, t.name, array_agg(h.gpu_index ORDER BY h.gpu_index), r.state, \
                CASE WHEN r.min_runtime_s > 0 AND NOT r.budget_spent THEN r.started_at + make_interval(secs => r.min_runtime_s) END \
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
    let models = inventory::gpu_models(&state.pool)
        .await?
        .into_iter()
        .map(|m| m.name)
        .collect();
    let hardware = hardware.unwrap_or_else(|| HardwareForm {
        gpu_model: node.gpu_model.clone(),
        gpu_count: node.gpu_count.to_string(),
    });
    render_status(
        status,
        &NodePage {
            models,
            hardware,
            layout: Layout::for_user(session, me, "/admin/inventory").await?,
            draining: node.state == "draining",
            status: node_status_words(&node.status),
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
                    state: crate::web::runs::state_words(&st),
                    protected_until: match until {
                        Some(u) if u > now => t1("node-protected-until", "at", at(u)),
                        Some(_) => t("node-past-min-runtime"),
                        None => t("node-unallocated"),
                    },
                })
                .collect(),
            history: history
                .iter()
                .map(|d| DrainRow {
                    reason: d.reason.clone(),
                    by: d.drained_by.clone().unwrap_or_else(|| t("node-system")),
                    drained_at: at(d.drained_at),
                    emptied_at: d.emptied_at.map_or_else(|| "—".into(), at),
                    needed_human: d.needed_human,
                    returned: d.returned_at.map_or_else(
                        || t("node-not-yet"),
                        |r| {
                            t2(
                                "node-returned-by",
                                "at",
                                at(r),
                                "by",
                                d.returned_by.clone().unwrap_or_else(|| t("node-system")),
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
    node_page(&state, &session, &me, id, None, String::new(), None).await
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
            flash(&session, t("node-drained")).await?;
            Ok(Redirect::to(&format!("/admin/nodes/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            node_page(&state, &session, &me, id, Some(message), f.reason, None).await
        }
        Err(e) => Err(e),
    }
}

/// `POST /admin/nodes/{id}/hardware`: corrects the node's GPU model and count
/// ([`inventory::update_node`]); a refusal re-renders the page with the message and the input.
async fn node_hardware(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<HardwareForm>,
) -> Result<Response, AppError> {
    match inventory::update_node(
        &state.pool,
        &state.site,
        &me,
        id,
        &f.gpu_model,
        &f.gpu_count,
    )
    .await
    {
        Ok(()) => {
            flash(&session, t("node-edited")).await?;
            Ok(Redirect::to(&format!("/admin/nodes/{id}")).into_response())
        }
        // The node exists (its page was shown): a NotFound names the GPU model.
        Err(
            AppError::Invalid { message, .. }
            | AppError::Conflict(message)
            | AppError::NotFound(message)
            | AppError::Refused { message, .. },
        ) => {
            node_page(
                &state,
                &session,
                &me,
                id,
                Some(message),
                String::new(),
                Some(f),
            )
            .await
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
    flash(&session, t("node-returned")).await?;
    Ok(Redirect::to(&format!("/admin/nodes/{id}")).into_response())
}

#[derive(askama::Template)]
#[template(path = "admin/users.html")]
struct UsersPage {
    layout: Layout,
    error: Option<String>,
    /// The user just created and their password, in a sentence as HTML (both escaped).
    created_html: Option<String>,
    users: Vec<users::UserRow>,
    /// The roles for the selects: (value, label).
    roles: Vec<(&'static str, String)>,
    /// While local password sign-in is off for everyone but the break-glass admin: the
    /// sentence that says so, as HTML (the admin's name escaped).
    local_off_html: Option<String>,
    form_name: String,
    form_role: String,
    form_node: String,
    /// What the break-glass field holds (the input, when re-rendered with an error).
    form_break_glass: String,
    /// A refused grant's form as typed: (user id, role, node); the user's row shows it.
    grant: Option<(i64, String, String)>,
    /// The admin viewing the page, whose own row has no disable button.
    me: i64,
}

impl UsersPage {
    /// A role's name in the page's language.
    fn role(&self, role: &str) -> String {
        role_words(role)
    }

    /// The role and node typed in `user`'s grant form when it was refused, else the defaults.
    fn grant_typed(&self, user: &i64) -> (&str, &str) {
        match &self.grant {
            Some((id, role, node)) if id == user => (role, node),
            _ => ("researcher", ""),
        }
    }
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
    users_page_with(state, session, me, error, created, form, None).await
}

async fn users_page_with(
    state: &AppState,
    session: &Session,
    me: &Account,
    error: Option<String>,
    created: Option<(String, String)>,
    form: UserForm,
    grant: Option<(i64, String, String)>,
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
            created_html: created.map(|(name, password)| {
                t2(
                    "users-created",
                    "name",
                    escape_html(&name),
                    "password",
                    escape_html(&password),
                )
            }),
            users: list,
            roles: ["researcher", "lead", "finance", "admin"]
                .into_iter()
                .map(|r| (r, role_words(r)))
                .collect(),
            local_off_html: break_glass
                .as_deref()
                .map(|b| t1("users-local-off", "name", escape_html(b))),
            form_break_glass: if form.break_glass.is_empty() {
                break_glass.unwrap_or_default()
            } else {
                form.break_glass
            },
            form_name: form.name,
            form_role: if form.role.is_empty() {
                "researcher".into()
            } else {
                form.role
            },
            form_node: form.node,
            grant,
            me: me.id,
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
        Err(AppError::Invalid { message, .. } | AppError::NotFound(message)) => {
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
            flash(&session, t("users-role-granted")).await?;
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(AppError::Invalid { message, .. } | AppError::NotFound(message)) => {
            users_page_with(
                &state,
                &session,
                &me,
                Some(message),
                None,
                UserForm::default(),
                Some((id, f.role, f.node)),
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
            flash(&session, t("users-role-revoked")).await?;
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(AppError::Invalid { message, .. } | AppError::Conflict(message)) => {
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
        // With no identity provider, only the break-glass admin could sign in at all.
        "off" if state.sso.oidc.is_none() && state.sso.ldap.is_none() => {
            Err(AppError::invalid("local", t("users-local-off-no-provider")))
        }
        "off" => users::set_local_sign_in(&state.pool, Some(me.id), Some(&f.break_glass)).await,
        other => Err(AppError::invalid(
            "local",
            t1("users-local-on-or-off", "got", domain::quote(other)),
        )),
    };
    match result {
        Ok(()) => {
            flash(
                &session,
                if f.local == "on" {
                    t("users-local-turned-on")
                } else {
                    t("users-local-turned-off")
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

async fn user_disable(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    set_disabled_page(&state, &session, &me, id, true).await
}

async fn user_enable(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    set_disabled_page(&state, &session, &me, id, false).await
}

async fn set_disabled_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    disabled: bool,
) -> Result<Response, AppError> {
    require_admin(me)?;
    match users::set_disabled(&state.pool, Some(me.id), id, disabled).await {
        Ok(()) => {
            let done = if disabled {
                "users-account-disabled"
            } else {
                "users-account-enabled"
            };
            flash(session, t(done)).await?;
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(AppError::Conflict(message)) => {
            users_page(state, session, me, Some(message), None, UserForm::default()).await
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
        .route("/admin/nodes/{id}/hardware", post(node_hardware))
        .route("/admin/nodes/{id}/drain", post(node_drain))
        .route("/admin/nodes/{id}/return", post(node_return))
        .route("/admin/users", get(users_get).post(user_create))
        .route("/admin/sign-in", post(local_sign_in))
        .route("/admin/users/{id}/grants", post(grant_create))
        .route("/admin/users/{id}/disable", post(user_disable))
        .route("/admin/users/{id}/enable", post(user_enable))
        .route(
            "/admin/users/{id}/grants/{grant}/revoke",
            post(grant_revoke),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::{Lang, sync_scope};

    #[test]
    fn heartbeat_ages_and_node_states_in_three_languages() {
        assert_eq!(sync_scope(Lang::En, || ago_text(45)), "45 s ago");
        assert_eq!(sync_scope(Lang::En, || ago_text(3 * 86_400)), "3 days ago");
        assert_eq!(sync_scope(Lang::Es, || ago_text(86_400 * 3)), "hace 3 días");
        assert_eq!(sync_scope(Lang::Eu, || ago_text(600)), "duela 10 min");
        assert_eq!(sync_scope(Lang::Eu, || ago_text(200_000)), "duela 2 egun");
        assert_eq!(
            sync_scope(Lang::En, || node_status_words("awaiting agent")),
            "awaiting agent"
        );
        assert_eq!(
            sync_scope(Lang::Es, || node_status_words("draining")),
            "en vaciado"
        );
        assert_eq!(sync_scope(Lang::Eu, || node_status_words("down")), "eroria");
        assert_eq!(
            sync_scope(Lang::Eu, || gpus_text(&[
                ("H100".into(), 1024),
                ("B200".into(), 8)
            ])),
            "1.024 × H100 8 × B200 "
        );
        assert_eq!(
            sync_scope(Lang::En, || gpus_text(&[("H100".into(), 1024)])),
            "1024 × H100 "
        );
    }
}
