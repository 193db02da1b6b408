//! Inventory: GPU models with billing weights and prices, clusters, and nodes with their
//! states. Writes are admin-only and audited.

use serde_json::json;
use sqlx::PgPool;

use crate::auth::Account;
use crate::db::audit::{self, Change};
use crate::domain;
use crate::error::AppError;
use crate::i18n::{t, t1};

/// A GPU model.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct GpuModel {
    /// Id.
    pub id: i64,
    /// Name, e.g. `H100`.
    pub name: String,
    /// Billing weight in thousandths (1000 = 1.0).
    pub billing_weight_milli: i32,
    /// Price of one weighted GPU-hour, minor units.
    pub price_per_gpu_hour_minor: i64,
}

/// A node of a cluster.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct Node {
    /// Id.
    pub id: i64,
    /// Cluster id.
    pub cluster_id: i64,
    /// Host name.
    pub name: String,
    /// GPU model name.
    pub gpu_model: String,
    /// GPUs on the node.
    pub gpu_count: i32,
    /// `up`, `draining` or `down`: the state an admin set.
    pub state: String,
    /// The agent serving it as it described itself (`HOST pid PID`); kept after the agent
    /// stopped, `None` before any agent registered it. Shown to admins only (not serialized
    /// into the API's cluster list).
    #[serde(skip)]
    pub agent: Option<String>,
    /// The agent's last heartbeat (UTC); `None` before any agent registered the node.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_heartbeat: Option<time::OffsetDateTime>,
    /// What the node really is: `down` (set by an admin), `up` or `draining` with a live
    /// agent, `lost` (its agent stopped or fell silent), or `awaiting agent` (declared, never
    /// served yet).
    pub status: String,
}

/// SQL condition (over `nodes n`) for a node that counts towards entitlements and
/// contractable capacity: every node but a lost one (an agent served it and is gone).
pub const COUNTS_TOWARDS_CAPACITY: &str =
    "NOT (n.agent_session IS NULL AND n.agent_seen_at IS NOT NULL)";

/// A cluster with its nodes and GPU totals per model.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Cluster {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Installed GPUs per model name, sorted by model.
    pub gpus: Vec<(String, i64)>,
    /// Nodes by name.
    pub nodes: Vec<Node>,
}

/// The id of the cluster named `name`, if any.
///
/// # Errors
/// Database errors.
pub async fn cluster_id(
    db: impl sqlx::PgExecutor<'_>,
    name: &str,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM clusters WHERE lower(name) = lower($1)")
        .bind(name.trim())
        .fetch_optional(db)
        .await
}

/// The id of the GPU model named `name`, if any.
///
/// # Errors
/// Database errors.
pub async fn gpu_model_id(
    db: impl sqlx::PgExecutor<'_>,
    name: &str,
) -> Result<Option<i64>, sqlx::Error> {
    // Names are unique whatever their case (`gpu_models_name_ci`), as the check of a new one
    // says ("a100 already exists"): found whatever their case too.
    sqlx::query_scalar("SELECT id FROM gpu_models WHERE lower(name) = lower($1)")
        .bind(name.trim())
        .fetch_optional(db)
        .await
}

/// The id of the GPU model named `name` (whatever its case).
///
/// # Errors
/// 404 for an unknown name, as docs/api.md's rule says; database errors.
async fn known_gpu_model(conn: &mut sqlx::PgConnection, name: &str) -> Result<i64, AppError> {
    gpu_model_id(&mut *conn, name).await?.ok_or_else(|| {
        AppError::NotFound(t1(
            "cluster-no-such-model",
            "name",
            crate::domain::quote(name.trim()),
        ))
    })
}

/// All GPU models by name.
///
/// # Errors
/// Database errors.
pub async fn gpu_models(pool: &PgPool) -> Result<Vec<GpuModel>, sqlx::Error> {
    sqlx::query_as("SELECT id, name, billing_weight_milli, price_per_gpu_hour_minor FROM gpu_models ORDER BY name").fetch_all(pool).await
}

/// All clusters with their nodes, each cluster's nodes in natural order (by name less its
/// trailing number, then that number: `rackA-2` before `rackA-10`, and `rackA-*` before
/// `rackB-*`).
///
/// # Errors
/// Database errors.
pub async fn clusters(pool: &PgPool) -> Result<Vec<Cluster>, sqlx::Error> {
    let rows: Vec<(i64, String)> = sqlx::query_as("SELECT id, name FROM clusters ORDER BY name")
        .fetch_all(pool)
        .await?;
    let nodes: Vec<Node> = sqlx::query_as(
        "SELECT n.id, n.cluster_id, n.name, m.name AS gpu_model, n.gpu_count, n.state, \
                n.agent_label AS agent, n.agent_seen_at AS last_heartbeat, \
                CASE WHEN n.state = 'down' THEN 'down' WHEN n.agent_session IS NOT NULL THEN n.state \
                     WHEN n.agent_seen_at IS NULL THEN 'awaiting agent' ELSE 'lost' END AS status \
         FROM nodes n JOIN gpu_models m ON m.id = n.gpu_model_id \
         ORDER BY n.cluster_id, regexp_replace(n.name, '[0-9]+$', ''), \
                  substring(n.name FROM '([0-9]+)$')::NUMERIC NULLS FIRST, n.name",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, name)| {
            let nodes: Vec<Node> = nodes
                .iter()
                .filter(|n| n.cluster_id == id)
                .cloned()
                .collect();
            let mut gpus: Vec<(String, i64)> = Vec::new();
            for n in &nodes {
                match gpus.iter_mut().find(|(m, _)| *m == n.gpu_model) {
                    Some((_, c)) => *c += i64::from(n.gpu_count),
                    None => gpus.push((n.gpu_model.clone(), i64::from(n.gpu_count))),
                }
            }
            gpus.sort();
            Cluster {
                id,
                name,
                gpus,
                nodes,
            }
        })
        .collect())
}

fn require_admin(actor: &Account) -> Result<(), AppError> {
    if actor.is_admin() {
        Ok(())
    } else {
        Err(AppError::Forbidden(t("inventory-admins-change")))
    }
}

/// Creates a GPU model. `weight` and `price` are as typed (`1.5`, `2.50`).
///
/// # Errors
/// Forbidden, Invalid (name, weight, price, duplicate name).
pub async fn create_gpu_model(
    pool: &PgPool,
    actor: &Account,
    name: &str,
    weight: &str,
    price: &str,
) -> Result<i64, AppError> {
    require_admin(actor)?;
    let name = domain::ident(name, "GPU model", 32).map_err(|m| AppError::invalid("name", m))?;
    let weight = domain::parse_milli(weight, "the billing weight")
        .map_err(|m| AppError::invalid("billing_weight", m))?;
    let price = domain::Money::parse(price).map_err(|m| AppError::invalid("price", m))?;
    if price.0 > 100_000_000 {
        return Err(AppError::invalid("price", t("inventory-price-too-high")));
    }
    let mut tx = pool.begin().await?;
    let taken: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM gpu_models WHERE lower(name) = lower($1))",
    )
    .bind(&name)
    .fetch_one(&mut *tx)
    .await?;
    if taken {
        return Err(AppError::invalid(
            "name",
            t1(
                "inventory-model-exists",
                "name",
                crate::domain::quote(&name),
            ),
        ));
    }
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO gpu_models (name, billing_weight_milli, price_per_gpu_hour_minor) VALUES ($1, $2, $3) RETURNING id",
    )
    .bind(&name)
    .bind(weight as i32)
    .bind(price.0)
    .fetch_one(&mut *tx)
    .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "gpu_model.create",
            entity: "gpu_model",
            entity_id: Some(id),
            node_id: None,
            before: None,
            after: Some(json!({"name": name, "billing_weight_milli": weight, "price_per_gpu_hour_minor": price.0})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Changes a GPU model's billing weight and price.
///
/// # Errors
/// Forbidden, NotFound, Invalid.
pub async fn update_gpu_model(
    pool: &PgPool,
    site: &crate::config::Site,
    actor: &Account,
    id: i64,
    weight: &str,
    price: &str,
) -> Result<(), AppError> {
    require_admin(actor)?;
    let weight = domain::parse_milli(weight, "the billing weight")
        .map_err(|m| AppError::invalid("billing_weight", m))?;
    let price = domain::Money::parse(price).map_err(|m| AppError::invalid("price", m))?;
    if price.0 > 100_000_000 {
        return Err(AppError::invalid("price", t("inventory-price-too-high")));
    }
    let mut tx = pool.begin().await?;
    // Time used so far is charged at the price it was used at (first: the pass lock, then the
    // model's row, the order passes take them in).
    crate::runs::service::settle_model(pool, &mut tx, site, id).await?;
    let before: GpuModel = sqlx::query_as(
        "SELECT id, name, billing_weight_milli, price_per_gpu_hour_minor FROM gpu_models WHERE id = $1 FOR UPDATE",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| AppError::NotFound(t1("inventory-model-not-found", "id", id.to_string())))?;
    if i64::from(before.billing_weight_milli) == weight
        && before.price_per_gpu_hour_minor == price.0
    {
        // Saved unchanged: nothing to write or audit.
        return Ok(());
    }
    sqlx::query("UPDATE gpu_models SET billing_weight_milli = $1, price_per_gpu_hour_minor = $2 WHERE id = $3")
        .bind(weight as i32)
        .bind(price.0)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "gpu_model.update",
            entity: "gpu_model",
            entity_id: Some(id),
            node_id: None,
            before: Some(json!({"name": before.name, "billing_weight_milli": before.billing_weight_milli, "price_per_gpu_hour_minor": before.price_per_gpu_hour_minor})),
            after: Some(json!({"name": before.name, "billing_weight_milli": weight, "price_per_gpu_hour_minor": price.0})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Creates a cluster.
///
/// # Errors
/// Forbidden, Invalid (name, duplicate).
pub async fn create_cluster(pool: &PgPool, actor: &Account, name: &str) -> Result<i64, AppError> {
    require_admin(actor)?;
    let name = domain::ident(name, "cluster", 64).map_err(|m| AppError::invalid("name", m))?;
    let mut tx = pool.begin().await?;
    let taken: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM clusters WHERE lower(name) = lower($1))")
            .bind(&name)
            .fetch_one(&mut *tx)
            .await?;
    if taken {
        return Err(AppError::invalid(
            "name",
            t1(
                "inventory-cluster-exists",
                "name",
                crate::domain::quote(&name),
            ),
        ));
    }
    let id: i64 = sqlx::query_scalar("INSERT INTO clusters (name) VALUES ($1) RETURNING id")
        .bind(&name)
        .fetch_one(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "cluster.create",
            entity: "cluster",
            entity_id: Some(id),
            node_id: None,
            before: None,
            after: Some(json!({"name": name})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Adds a node to a cluster (declares it: only declared nodes can be served by an agent, with
/// exactly this GPU model and count).
///
/// # Errors
/// Forbidden, NotFound (cluster), Invalid (name, unknown GPU model, GPU count outside 1..=64,
/// duplicate name in the cluster).
pub async fn add_node(
    pool: &PgPool,
    actor: &Account,
    cluster_id: i64,
    name: &str,
    gpu_model: &str,
    gpu_count: &str,
) -> Result<i64, AppError> {
    require_admin(actor)?;
    let mut tx = pool.begin().await?;
    let cluster: String = sqlx::query_scalar("SELECT name FROM clusters WHERE id = $1")
        .bind(cluster_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| AppError::NotFound(t1("cluster-not-found", "id", cluster_id.to_string())))?;
    let id = insert_node(
        &mut tx,
        Some(actor.id),
        (cluster_id, &cluster),
        name,
        gpu_model,
        gpu_count,
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Declares nodes `names` in the cluster named `cluster`, each with `gpu_count` GPUs of
/// `gpu_model`, all or none (one transaction): what `tranche admin declare-nodes` and
/// `tranche demo` do. `actor` is the admin, `None` for the command line. Returns the new
/// nodes' ids in the order of `names`.
///
/// # Errors
/// Forbidden (the actor is no admin), NotFound (cluster), Invalid (no names, a bad name, an
/// unknown GPU model, a GPU count outside 1..=64, a name that exists).
pub async fn declare_nodes(
    pool: &PgPool,
    actor: Option<&Account>,
    cluster: &str,
    names: &[String],
    gpu_model: &str,
    gpu_count: &str,
) -> Result<Vec<i64>, AppError> {
    if let Some(actor) = actor {
        require_admin(actor)?;
    }
    if names.is_empty() || names.len() > 1024 {
        return Err(AppError::invalid("name", "declare 1 to 1024 nodes"));
    }
    let mut tx = pool.begin().await?;
    let cluster_id = cluster_id(&mut *tx, cluster).await?.ok_or_else(|| {
        AppError::NotFound(format!(
            "no cluster named {}",
            crate::domain::quote(cluster.trim())
        ))
    })?;
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        ids.push(
            insert_node(
                &mut tx,
                actor.map(|a| a.id),
                (cluster_id, cluster.trim()),
                name,
                gpu_model,
                gpu_count,
            )
            .await?,
        );
    }
    tx.commit().await?;
    Ok(ids)
}

/// Inserts one declared node and audits it (`node.add`), inside the caller's transaction.
///
/// # Errors
/// Invalid (name, GPU count, unknown model, a name that exists); database errors.
pub async fn insert_node(
    tx: &mut sqlx::PgConnection,
    actor: Option<i64>,
    (cluster_id, cluster): (i64, &str),
    name: &str,
    gpu_model: &str,
    gpu_count: &str,
) -> Result<i64, AppError> {
    let name = domain::ident(name, "node", 128).map_err(|m| AppError::invalid("name", m))?;
    let gpu_count = domain::int_in(gpu_count, "the GPU count", 1, 64)
        .map_err(|m| AppError::invalid("gpu_count", m))?;
    let model_id = known_gpu_model(&mut *tx, gpu_model).await?;
    let taken: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM nodes WHERE lower(name) = lower($1))")
            .bind(&name)
            .fetch_one(&mut *tx)
            .await?;
    if taken {
        return Err(AppError::invalid(
            "name",
            t1("cluster-node-exists", "name", crate::domain::quote(&name)),
        ));
    }
    let id: i64 = sqlx::query_scalar("INSERT INTO nodes (cluster_id, name, gpu_model_id, gpu_count) VALUES ($1, $2, $3, $4) RETURNING id")
        .bind(cluster_id)
        .bind(&name)
        .bind(model_id)
        .bind(gpu_count as i32)
        .fetch_one(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor,
            action: "node.add",
            entity: "cluster_node",
            entity_id: Some(id),
            node_id: None,
            before: None,
            after: Some(json!({"cluster": cluster, "name": name, "gpu_model": gpu_model.trim(), "gpu_count": gpu_count, "state": "up"})),
        },
    )
    .await?;
    Ok(id)
}

/// Corrects a declared node's GPU model and count (a node declared with the wrong hardware,
/// which its agent then may not serve: `inventory_mismatch`). Allowed while no agent serves
/// the node and nothing runs there, and only when the active contracts still fit the pool it
/// leaves or shrinks. Audited as `node.update`; the same model and count change nothing.
///
/// # Errors
/// Forbidden (no admin), NotFound (node, model), Invalid (count), Conflict (an agent serves
/// it, runs are on it), Refused `capacity_exceeded` (contracts would exceed the pool).
pub async fn update_node(
    pool: &PgPool,
    site: &crate::config::Site,
    actor: &Account,
    node_id: i64,
    gpu_model: &str,
    gpu_count: &str,
) -> Result<(), AppError> {
    require_admin(actor)?;
    let gpu_count = domain::int_in(gpu_count, "the GPU count", 1, 64)
        .map_err(|m| AppError::invalid("gpu_count", m))?;
    let mut tx = pool.begin().await?;
    // No pass may place a run on the node while it changes.
    crate::runs::service::serialize_with_passes(&mut tx).await?;
    let model_id = known_gpu_model(&mut tx, gpu_model).await?;
    let (name, cluster, old_model, old_count, served, model_name): (String, i64, i64, i32, bool, String) =
        sqlx::query_as(
            "SELECT n.name, n.cluster_id, n.gpu_model_id, n.gpu_count, n.agent_session IS NOT NULL, m.name \
             FROM nodes n JOIN gpu_models m ON m.id = n.gpu_model_id WHERE n.id = $1 FOR UPDATE OF n",
        )
        .bind(node_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| AppError::NotFound(t1("node-not-found", "id", node_id.to_string())))?;
    if (old_model, old_count) == (model_id, gpu_count as i32) {
        return Ok(());
    }
    if served {
        return Err(AppError::Conflict(t1("node-edit-served", "name", &name)));
    }
    let busy: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM gpu_holds WHERE node_id = $1) \
             OR EXISTS (SELECT 1 FROM run_placements WHERE node_id = $1 AND proc_state <> 'exited')",
    )
    .bind(node_id)
    .fetch_one(&mut *tx)
    .await?;
    if busy {
        return Err(AppError::Conflict(t1("node-edit-busy", "name", &name)));
    }
    sqlx::query("UPDATE nodes SET gpu_model_id = $2, gpu_count = $3 WHERE id = $1")
        .bind(node_id)
        .bind(model_id)
        .bind(gpu_count as i32)
        .execute(&mut *tx)
        .await?;
    if let Some((peak, limit)) = crate::ledger::contracts::overbooked(
        &mut tx,
        site,
        (cluster, old_model),
        jiff::Timestamp::now(),
    )
    .await?
    {
        return Err(AppError::Refused {
            code: "capacity_exceeded",
            message: crate::i18n::ta(
                "node-edit-contracts",
                &[
                    ("name", &name),
                    ("model", &model_name),
                    ("peak", &crate::i18n::format::count(peak)),
                    ("limit", &crate::i18n::format::count(limit)),
                ],
            ),
        });
    }
    let new_model: String = sqlx::query_scalar("SELECT name FROM gpu_models WHERE id = $1")
        .bind(model_id)
        .fetch_one(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "node.update",
            entity: "cluster_node",
            entity_id: Some(node_id),
            node_id: None,
            before: Some(json!({"name": name, "gpu_model": model_name, "gpu_count": old_count})),
            after: Some(json!({"name": name, "gpu_model": new_model, "gpu_count": gpu_count})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Sets a node's state: `up`, `draining` or `down`. Moving a node to `draining` opens a drain
/// for repair with `reason` (default "no reason given"); moving a draining node `down` while a
/// protected run is still on it counts that drain as needing a human; moving it `up` returns
/// it to service and closes its drain. Draining a draining node with another reason replaces
/// the open drain's reason. Audited in the transaction of the change, one entry per change:
/// `node.drain` when a drain opens or its reason changes, `node.return` when one closes, else
/// `node.state`. Setting the state a node is in (with the same reason) writes nothing.
///
/// # Errors
/// Forbidden, NotFound, Invalid state or reason (at most 1,000 characters).
pub async fn set_node_state(
    pool: &PgPool,
    actor: &Account,
    node_id: i64,
    state: &str,
    reason: Option<&str>,
) -> Result<(), AppError> {
    require_admin(actor)?;
    let state = state.trim();
    if !matches!(state, "up" | "draining" | "down") {
        return Err(AppError::invalid(
            "state",
            t1("cluster-bad-state", "got", crate::domain::quote(state)),
        ));
    }
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    if reason.is_some_and(|r| r.chars().count() > 1000) {
        return Err(AppError::invalid("reason", t("node-reason-too-long")));
    }
    let mut tx = pool.begin().await?;
    // Drains and the passes that requeue their runs must not interleave.
    crate::runs::service::serialize_with_passes(&mut tx).await?;
    let (name, before): (String, String) =
        sqlx::query_as("SELECT name, state FROM nodes WHERE id = $1 FOR UPDATE")
            .bind(node_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| AppError::NotFound(t1("node-not-found", "id", node_id.to_string())))?;
    if state == "draining" && reason.is_none() {
        if before == state {
            return Ok(());
        }
        return Err(AppError::invalid("reason", t("node-reason-required")));
    }
    if before == state {
        if state == "draining" {
            redrain(
                &mut tx,
                actor,
                node_id,
                &name,
                &before,
                reason.unwrap_or_default(),
            )
            .await?;
            tx.commit().await?;
        }
        return Ok(());
    }
    if before == "draining" && state == "down" {
        crate::db::drains::note_forced_down(&mut tx, node_id).await?;
    }
    sqlx::query("UPDATE nodes SET state = $1 WHERE id = $2")
        .bind(state)
        .bind(node_id)
        .execute(&mut *tx)
        .await?;
    let mut audited = false;
    if state == "draining" {
        let reason = reason.unwrap_or_default();
        audited = open_drain(&mut tx, node_id, &name, &before, reason, Some(actor.id)).await?;
        if !audited {
            // A drain still open (the node went down while draining): it takes the new reason.
            audited = redrain(&mut tx, actor, node_id, &name, &before, reason).await?;
        }
    } else if state == "up" {
        let closed: Option<(i64, Option<time::OffsetDateTime>, bool)> = sqlx::query_as(
            "UPDATE node_drains SET returned_at = now(), returned_by = $2 WHERE node_id = $1 AND returned_at IS NULL \
             RETURNING id, emptied_at, needed_human",
        )
        .bind(node_id)
        .bind(actor.id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((drain, emptied, human)) = closed {
            audit::record(
                &mut *tx,
                Change {
                    actor: Some(actor.id),
                    action: "node.return",
                    entity: "cluster_node",
                    entity_id: Some(node_id),
                    node_id: None,
                    before: Some(json!({"name": name, "state": before, "drain": drain, "emptied": emptied.is_some(), "needed_human": human})),
                    after: Some(json!({"name": name, "state": "up", "reason": reason})),
                },
            )
            .await?;
            audited = true;
        }
    }
    if !audited {
        audit::record(
            &mut *tx,
            Change {
                actor: Some(actor.id),
                action: "node.state",
                entity: "cluster_node",
                entity_id: Some(node_id),
                node_id: None,
                before: Some(json!({"name": name, "state": before})),
                after: Some(json!({"name": name, "state": state, "reason": reason})),
            },
        )
        .await?;
    }
    crate::runs::wake(&mut tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Opens a drain of node `node_id` (named `name`, in state `was` before) for `reason` by
/// `actor` (none: the system), audited `node.drain`, unless one is open already. Returns
/// whether it opened one.
async fn open_drain(
    conn: &mut sqlx::PgConnection,
    node_id: i64,
    name: &str,
    was: &str,
    reason: &str,
    actor: Option<i64>,
) -> Result<bool, AppError> {
    let opened: Option<i64> = sqlx::query_scalar(
        "INSERT INTO node_drains (node_id, reason, drained_by) SELECT $1, $2, $3 \
         WHERE NOT EXISTS (SELECT 1 FROM node_drains WHERE node_id = $1 AND returned_at IS NULL) RETURNING id",
    )
    .bind(node_id)
    .bind(reason)
    .bind(actor)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(drain) = opened else {
        return Ok(false);
    };
    audit::record(
        &mut *conn,
        Change {
            actor,
            action: "node.drain",
            entity: "cluster_node",
            entity_id: Some(node_id),
            node_id: None,
            before: Some(json!({"name": name, "state": was})),
            after: Some(
                json!({"name": name, "state": "draining", "drain": drain, "reason": reason}),
            ),
        },
    )
    .await?;
    Ok(true)
}

/// A node drained again while its drain is open (it is draining, or went down while draining):
/// the drain takes the new reason, audited `node.drain` with both reasons and the state it was
/// in; the same reason changes nothing. Returns whether it wrote.
async fn redrain(
    conn: &mut sqlx::PgConnection,
    actor: &Account,
    node_id: i64,
    name: &str,
    was: &str,
    reason: &str,
) -> Result<bool, AppError> {
    let changed: Option<(i64, String)> = sqlx::query_as(
        "UPDATE node_drains d SET reason = $2 FROM node_drains o \
         WHERE d.id = o.id AND d.node_id = $1 AND d.returned_at IS NULL AND d.reason <> $2 \
         RETURNING d.id, o.reason",
    )
    .bind(node_id)
    .bind(reason)
    .fetch_optional(&mut *conn)
    .await?;
    let wrote = changed.is_some();
    if let Some((drain, old)) = changed {
        audit::record(
            &mut *conn,
            Change {
                actor: Some(actor.id),
                action: "node.drain",
                entity: "cluster_node",
                entity_id: Some(node_id),
                node_id: None,
                before: Some(json!({"name": name, "state": was, "drain": drain, "reason": old})),
                after: Some(
                    json!({"name": name, "state": "draining", "drain": drain, "reason": reason}),
                ),
            },
        )
        .await?;
    }
    Ok(wrote)
}

/// Drains node `node_id` because its agent could not run a process there (a fault, `fault`
/// in its words; docs/agent-protocol.md section 2): an `up` node becomes `draining` with an
/// open drain whose reason quotes the agent and which no one opened (`drained_by` none),
/// audited `node.drain` as the system's. A node already draining or down keeps its state and
/// drain. Called by the pass, which serialises it with drains. Returns whether it drained.
///
/// # Errors
/// Database errors.
pub async fn drain_for_fault(
    conn: &mut sqlx::PgConnection,
    node_id: i64,
    fault: &str,
) -> Result<bool, AppError> {
    let Some(name): Option<String> = sqlx::query_scalar(
        "UPDATE nodes SET state = 'draining' WHERE id = $1 AND state = 'up' RETURNING name",
    )
    .bind(node_id)
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(false);
    };
    let reason: String = format!("agent: {fault}").chars().take(1000).collect();
    open_drain(conn, node_id, &name, "up", &reason, None).await?;
    Ok(true)
}

/// Drains a node for repair with a reason (docs/design.md section 3.7): it takes no new runs
/// and its runs are requeued as each passes its minimum runtime. Draining a node that is
/// already draining keeps its open drain and gives it the new reason.
///
/// # Errors
/// Forbidden for non-admins, NotFound, 422 for a missing or over-long reason.
pub async fn drain_node(
    pool: &PgPool,
    actor: &Account,
    node_id: i64,
    reason: &str,
) -> Result<(), AppError> {
    require_admin(actor)?;
    if reason.trim().is_empty() {
        return Err(AppError::invalid("reason", t("node-reason-required")));
    }
    set_node_state(pool, actor, node_id, "draining", Some(reason)).await
}

/// Returns a drained (or down) node to service: state `up`, its drain closed.
///
/// # Errors
/// Forbidden for non-admins, NotFound.
pub async fn return_node(pool: &PgPool, actor: &Account, node_id: i64) -> Result<(), AppError> {
    set_node_state(pool, actor, node_id, "up", None).await
}
