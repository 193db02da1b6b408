//! The program tree: loading it with shares, effective shares and entitlements, and the writes
//! leads and admins make (shares, nodes, project budgets, members), each audited.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use sqlx::PgPool;

use crate::auth::{Account, Parents};
use crate::db::audit::{self, Change};
use crate::domain::{self, EffectiveShare, Entitlement, Money, Share};
use crate::error::AppError;
use crate::i18n::{t, t1, t2};

/// Installed capacity of one GPU model on one cluster, with its billing terms.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Capacity {
    /// Cluster name.
    pub cluster: String,
    /// GPU model name.
    pub gpu_model: String,
    /// Installed GPUs: every node whatever its admin state, but lost ones (an agent served
    /// it and is gone).
    pub gpus: i64,
    /// Billing weight in thousandths.
    pub billing_weight_milli: i64,
    /// Price of one weighted GPU-hour, minor units.
    pub price_minor: i64,
}

/// One live node of the tree as shown.
#[derive(Clone, Debug)]
pub struct NodeView {
    /// Node id.
    pub id: i64,
    /// Parent id (`None` for the root).
    pub parent_id: Option<i64>,
    /// Name.
    pub name: String,
    /// Whether it is a project (a leaf with a budget).
    pub is_project: bool,
    /// Depth from the root (root = 0).
    pub depth: usize,
    /// Share of the parent.
    pub share: Share,
    /// Product of shares from the root.
    pub effective: EffectiveShare,
    /// Entitlement per budget period, aligned with [`TreeView::capacity`].
    pub entitlements: Vec<Entitlement>,
    /// Sum of the entitlements' money values.
    pub money_total: Money,
    /// Sum of the live children's shares in basis points.
    pub children_bp: i64,
    /// Number of live children.
    pub children: usize,
}

/// The whole live tree in depth-first order (children by name), with the period it is
/// computed for.
#[derive(Clone, Debug)]
pub struct TreeView {
    /// Budget period start (organisation time zone).
    pub period_start: jiff::Zoned,
    /// Budget period end, exclusive.
    pub period_end: jiff::Zoned,
    /// Capacity columns: one per cluster and GPU model, by cluster then model name.
    pub capacity: Vec<Capacity>,
    /// Nodes in depth-first order.
    pub nodes: Vec<NodeView>,
    /// Parent links of every node, archived ones included, for scope checks.
    pub parents: Parents,
    /// GPUs on every node, by (cluster id, GPU model id), whatever the node's state (a node
    /// down may come back, and a run waits for it): the largest gang a submission may ask for,
    /// as the scheduler's never-fits counts it (the same counter versions it: GPU count,
    /// cluster and model changes bump `tree`).
    pub installed: HashMap<(i64, i64), i64>,
}

impl TreeView {
    /// The IANA name of the zone the current period follows: the site's, or the previous one
    /// until a change of zone takes effect at the period's end; `site_zone` when it has none.
    pub fn period_zone_name(&self, site_zone: &str) -> String {
        self.period_start
            .time_zone()
            .iana_name()
            .unwrap_or(site_zone)
            .to_string()
    }

    /// The period's length in seconds.
    pub fn period_seconds(&self) -> i64 {
        self.period_end.timestamp().as_second() - self.period_start.timestamp().as_second()
    }
    /// A node by id.
    pub fn node(&self, id: i64) -> Option<&NodeView> {
        self.nodes.iter().find(|n| n.id == id)
    }
    /// The live children of `id`, in display order.
    pub fn children(&self, id: i64) -> impl Iterator<Item = &NodeView> {
        self.nodes.iter().filter(move |n| n.parent_id == Some(id))
    }
}

#[derive(sqlx::FromRow)]
struct NodeRow {
    id: i64,
    parent_id: Option<i64>,
    name: String,
    is_project: bool,
    share_bp: i32,
    archived: bool,
}

impl Capacity {
    /// From a `(cluster, GPU model, GPUs, billing weight milli, price minor)` row.
    fn from_row((cluster, gpu_model, gpus, w, p): (String, String, i64, i32, i64)) -> Self {
        Capacity {
            cluster,
            gpu_model,
            gpus,
            billing_weight_milli: i64::from(w),
            price_minor: p,
        }
    }
}

/// Loads installed capacity per cluster and GPU model: the GPUs of every node but lost ones
/// ([`crate::db::inventory::COUNTS_TOWARDS_CAPACITY`]).
///
/// # Errors
/// Database errors.
pub async fn capacity(db: impl sqlx::PgExecutor<'_>) -> Result<Vec<Capacity>, sqlx::Error> {
    let rows: Vec<(String, String, i64, i32, i64)> = sqlx::query_as(&format!(
        "SELECT c.name, m.name, sum(n.gpu_count)::bigint, m.billing_weight_milli, m.price_per_gpu_hour_minor \
         FROM nodes n JOIN clusters c ON c.id = n.cluster_id JOIN gpu_models m ON m.id = n.gpu_model_id \
         WHERE {counts} \
         GROUP BY c.name, m.name, m.billing_weight_milli, m.price_per_gpu_hour_minor ORDER BY c.name, m.name",
        counts = crate::db::inventory::COUNTS_TOWARDS_CAPACITY
    ))
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Capacity::from_row).collect())
}

/// The capacity the entitlements of the budget period `[start, end)` are computed from, by
/// cluster then GPU model name: today's ([`capacity`]) while the period has not ended at
/// `now`; for an ended period, its record in `period_capacity`, written by the first reader
/// (docs/design.md section 2, "Entitlements of ended periods"). The record holds the GPUs of
/// the nodes declared by the period's end (a node of unknown declaration counts) that are not
/// lost when it is written, each model's billing weight and price as they were at the
/// period's end (today's, unless the audit log holds a later `gpu_model.update`, whose
/// `before` they are), and is never changed afterwards. Readers racing to record the same
/// period both succeed: one writes it, the other waits for that commit and reads it.
///
/// # Errors
/// Database errors.
pub async fn period_capacity(
    pool: &PgPool,
    (start, end): (jiff::Timestamp, jiff::Timestamp),
    now: jiff::Timestamp,
) -> Result<Vec<Capacity>, sqlx::Error> {
    if end > now {
        return capacity(pool).await;
    }
    let (start, end) = (crate::ledger::to_time(start), crate::ledger::to_time(end));
    let recorded: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM period_capacity_records WHERE period_start = $1)",
    )
    .bind(start)
    .fetch_one(pool)
    .await?;
    if !recorded {
        let mut tx = pool.begin().await?;
        // The primary key serialises racing writers: the second waits for the first's commit,
        // then inserts nothing and reads what the first recorded.
        let first: Option<time::OffsetDateTime> = sqlx::query_scalar(
            "INSERT INTO period_capacity_records (period_start, period_end) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING RETURNING period_start",
        )
        .bind(start)
        .bind(end)
        .fetch_optional(&mut *tx)
        .await?;
        if first.is_some() {
            sqlx::query(&format!(
                "WITH terms AS ( \
                   SELECT m.id, m.name, \
                          coalesce(later.weight, m.billing_weight_milli) AS weight, \
                          coalesce(later.price, m.price_per_gpu_hour_minor) AS price \
                   FROM gpu_models m LEFT JOIN LATERAL ( \
                     SELECT (a.before->>'billing_weight_milli')::INTEGER AS weight, \
                            (a.before->>'price_per_gpu_hour_minor')::BIGINT AS price \
                     FROM audit_log a \
                     WHERE a.action = 'gpu_model.update' AND a.entity = 'gpu_model' \
                       AND a.entity_id = m.id AND a.at >= $2 \
                     ORDER BY a.at, a.id LIMIT 1) later ON true) \
                 INSERT INTO period_capacity (period_start, cluster, gpu_model, gpus, billing_weight_milli, price_per_gpu_hour_minor) \
                 SELECT $1, c.name, t.name, sum(n.gpu_count)::BIGINT, t.weight, t.price \
                 FROM nodes n JOIN clusters c ON c.id = n.cluster_id JOIN terms t ON t.id = n.gpu_model_id \
                 WHERE {counts} AND (n.created_at IS NULL OR n.created_at < $2) \
                 GROUP BY c.name, t.name, t.weight, t.price",
                counts = crate::db::inventory::COUNTS_TOWARDS_CAPACITY
            ))
            .bind(start)
            .bind(end)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
    }
    let rows: Vec<(String, String, i64, i32, i64)> = sqlx::query_as(
        "SELECT cluster, gpu_model, gpus, billing_weight_milli, price_per_gpu_hour_minor \
         FROM period_capacity WHERE period_start = $1 ORDER BY cluster, gpu_model",
    )
    .bind(start)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(Capacity::from_row).collect())
}

/// Loads the tree and computes effective shares and entitlements for the budget period that
/// contains `now` in `periods`, from today's capacity ([`capacity`]): for the current period
/// and later ones. A report of any period uses [`load_period`].
///
/// # Errors
/// Database errors.
pub async fn load(
    pool: &PgPool,
    now: jiff::Timestamp,
    periods: &domain::PeriodCalendar,
) -> Result<TreeView, sqlx::Error> {
    let capacity = capacity(pool).await?;
    load_as_of(pool, now, periods, capacity, None).await
}

/// Like [`load`] for the budget period containing `at`, with the entitlements of that period
/// as of `now` ([`period_capacity`]): today's tree, capacity and prices while the period runs
/// or is to come; once it has ended, its recorded capacity and prices and the tree as it stood
/// at its end (its structure and shares: the first of `tree_snapshots` taken at or after the
/// end, migration ...540, else today's; names are today's, and a node made since is taken as
/// archived then, under today's parent). Every report of entitlements (the
/// spend report's page, CSV and API, the dashboard's owed for an ended period) reads them
/// through this.
///
/// # Errors
/// Database errors.
pub async fn load_period(
    pool: &PgPool,
    at: jiff::Timestamp,
    periods: &domain::PeriodCalendar,
    now: jiff::Timestamp,
) -> Result<TreeView, sqlx::Error> {
    let (start, end) = periods.period(at);
    let capacity = period_capacity(pool, (start.timestamp(), end.timestamp()), now).await?;
    let as_of = (end.timestamp() <= now).then_some(end.timestamp());
    load_as_of(pool, at, periods, capacity, as_of).await
}

/// [`load`] with the capacity columns given and the tree as it stood at `as_of` (none:
/// today's).
async fn load_as_of(
    pool: &PgPool,
    now: jiff::Timestamp,
    periods: &domain::PeriodCalendar,
    capacity: Vec<Capacity>,
    as_of: Option<jiff::Timestamp>,
) -> Result<TreeView, sqlx::Error> {
    let snapshot: Option<time::OffsetDateTime> = match as_of {
        Some(t) => {
            sqlx::query_scalar("SELECT min(taken_at) FROM tree_snapshots WHERE taken_at >= $1")
                .bind(crate::ledger::to_time(t))
                .fetch_one(pool)
                .await?
        }
        None => None,
    };
    let rows: Vec<NodeRow> = match snapshot {
        Some(taken) => {
            // A node made since is as an archived one: no share then (nothing was owed to it),
            // under today's parent, shown only for what it may have booked.
            sqlx::query_as(
                "SELECT t.id, CASE WHEN s.node_id IS NULL THEN t.parent_id ELSE s.parent_id END AS parent_id, \
                        t.name, t.is_project, coalesce(s.share_bp, 0) AS share_bp, coalesce(s.archived, true) AS archived \
                 FROM tree_nodes t LEFT JOIN tree_snapshots s ON s.node_id = t.id AND s.taken_at = $1 \
                 ORDER BY t.name, t.id",
            )
            .bind(taken)
            .fetch_all(pool)
            .await?
        }
        None => {
            sqlx::query_as("SELECT id, parent_id, name, is_project, share_bp, archived FROM tree_nodes ORDER BY name, id")
                .fetch_all(pool)
                .await?
        }
    };
    let installed: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT cluster_id, gpu_model_id, sum(gpu_count)::BIGINT FROM nodes \
         GROUP BY cluster_id, gpu_model_id",
    )
    .fetch_all(pool)
    .await?;
    let (period_start, period_end) = periods.period(now);
    let mut tree = build(rows, capacity, period_start, period_end);
    tree.installed = installed
        .into_iter()
        .map(|(c, m, gpus)| ((c, m), gpus))
        .collect();
    Ok(tree)
}

/// Values computed from the database, each kept with the version of the change counter it was
/// computed at (`change_counters`: bumped by triggers on every change to the data behind it)
/// and the budget period (its start, s) it was computed for: a value is reused only while
/// both are unchanged, so every replica sees a change on its next read. Read the counter
/// before the data ([`counter_versions`]): a cached value is then never older than its version.
/// The program tree ([`TreeCache`]) and the project page's settings and money
/// (`web::project::FactsCache`) are cached this way.
pub struct VersionedCache<K, V>(Mutex<HashMap<K, Versioned<V>>>);

/// A cached value with the counter version and the period (start, s) it was computed at.
type Versioned<V> = (i64, i64, Arc<V>);

impl<K, V> Default for VersionedCache<K, V> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<K: std::hash::Hash + Eq, V> VersionedCache<K, V> {
    /// The value of `key` if it was computed at `version` for the period starting at `period`.
    pub fn get(&self, key: &K, version: i64, period: i64) -> Option<Arc<V>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .filter(|(v, p, _)| *v == version && *p == period)
            .map(|(_, _, value)| Arc::clone(value))
    }

    /// Keeps `value` for `key`, computed at `version` for `period` (at most 10,000 keys: past
    /// that the cache starts afresh).
    pub fn put(&self, key: K, version: i64, period: i64, value: Arc<V>) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() >= 10_000 {
            map.clear();
        }
        map.insert(key, (version, period, value));
    }
}

/// The process-wide cache of the computed tree, keyed by the `tree` change counter (bumped on
/// every change to tree nodes and inventory) and the budget period.
pub type TreeCache = VersionedCache<(), TreeView>;

/// The versions of the change counters `names`, in their order (0 for a counter never bumped),
/// in one query.
///
/// # Errors
/// Database errors.
pub async fn counter_versions(pool: &PgPool, names: &[&str]) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT coalesce(c.version, 0) FROM unnest($1::TEXT[]) WITH ORDINALITY AS u(name, o) \
         LEFT JOIN change_counters c ON c.name = u.name ORDER BY u.o",
    )
    .bind(names)
    .fetch_all(pool)
    .await
}

/// Like [`load`], but reuses the cached tree while the database's tree version and the budget
/// period are unchanged (one small query instead of two and the computation).
///
/// # Errors
/// Database errors.
pub async fn load_cached(
    pool: &PgPool,
    cache: &TreeCache,
    now: jiff::Timestamp,
    periods: &domain::PeriodCalendar,
) -> Result<Arc<TreeView>, sqlx::Error> {
    let version = counter_versions(pool, &["tree"])
        .await?
        .first()
        .copied()
        .unwrap_or(0);
    load_at_version(pool, cache, version, now, periods).await
}

/// [`load_cached`] with the tree's version already read (with other counters, in one query).
///
/// # Errors
/// Database errors.
pub async fn load_at_version(
    pool: &PgPool,
    cache: &TreeCache,
    version: i64,
    now: jiff::Timestamp,
    periods: &domain::PeriodCalendar,
) -> Result<Arc<TreeView>, sqlx::Error> {
    let period = periods.period(now).0.timestamp().as_second();
    if let Some(tree) = cache.get(&(), version, period) {
        return Ok(tree);
    }
    let tree = Arc::new(load(pool, now, periods).await?);
    cache.put((), version, period, Arc::clone(&tree));
    Ok(tree)
}

fn build(
    rows: Vec<NodeRow>,
    capacity: Vec<Capacity>,
    period_start: jiff::Zoned,
    period_end: jiff::Zoned,
) -> TreeView {
    let seconds = period_end.timestamp().as_second() - period_start.timestamp().as_second();
    let parents = Parents(rows.iter().map(|r| (r.id, r.parent_id)).collect());
    let live: Vec<&NodeRow> = rows.iter().filter(|r| !r.archived).collect();
    let mut children: HashMap<Option<i64>, Vec<&NodeRow>> = HashMap::new();
    for r in &live {
        children.entry(r.parent_id).or_default().push(r);
    }
    let mut nodes = Vec::with_capacity(live.len());
    // Depth-first walk from the root; rows are already sorted by name.
    let mut stack: Vec<(&NodeRow, usize, EffectiveShare)> = children
        .get(&None)
        .map(|roots| {
            roots
                .iter()
                .rev()
                .map(|r| (*r, 0, EffectiveShare::ROOT))
                .collect()
        })
        .unwrap_or_default();
    while let Some((row, depth, parent_eff)) = stack.pop() {
        let share = Share::from_bp(row.share_bp as u16).unwrap_or(Share::FULL);
        let effective = if row.parent_id.is_none() {
            EffectiveShare::ROOT
        } else {
            parent_eff.child(share)
        };
        let entitlements: Vec<Entitlement> = capacity
            .iter()
            .map(|c| {
                domain::entitlement(
                    effective,
                    c.gpus,
                    seconds,
                    c.billing_weight_milli,
                    c.price_minor,
                )
            })
            .collect();
        let money_total = Money(entitlements.iter().map(|e| e.money.0).sum());
        let kids = children
            .get(&Some(row.id))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        nodes.push(NodeView {
            id: row.id,
            parent_id: row.parent_id,
            name: row.name.clone(),
            is_project: row.is_project,
            depth,
            share: if row.parent_id.is_none() {
                Share::FULL
            } else {
                share
            },
            effective,
            entitlements,
            money_total,
            children_bp: kids.iter().map(|k| i64::from(k.share_bp)).sum(),
            children: kids.len(),
        });
        for k in kids.iter().rev() {
            stack.push((k, depth + 1, effective));
        }
    }
    TreeView {
        period_start,
        period_end,
        capacity,
        nodes,
        parents,
        installed: HashMap::new(),
    }
}

/// Locks a live node row for the rest of the transaction; NotFound when unknown or archived.
async fn lock_live(
    tx: &mut sqlx::PgConnection,
    id: i64,
) -> Result<(i64, Option<i64>, String, bool, i32), AppError> {
    sqlx::query_as(
        "SELECT id, parent_id, name, is_project, share_bp FROM tree_nodes WHERE id = $1 AND NOT archived FOR UPDATE",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| AppError::NotFound(t1("node-tree-not-found", "id", id.to_string())))
}

/// Sets the shares of some children of `parent_id` at once (so siblings can be rebalanced in
/// one step). Allowed for admins and leads of the parent or above. The live children's shares
/// must then sum to at most 100%. Budgets of periods to come that were opened early then follow
/// the new shares ([`crate::ledger::refresh_early_budgets`]).
///
/// # Errors
/// Forbidden; NotFound for an unknown parent, one outside `actor`'s view
/// ([`Account::sees_node`]) or a node that is not its live child; Invalid when the sum would
/// exceed 100% (the message gives the sum).
pub async fn set_child_shares(
    pool: &PgPool,
    site: &crate::config::Site,
    actor: &Account,
    parent_id: i64,
    changes: &[(i64, Share)],
) -> Result<(), AppError> {
    let mut seen = std::collections::HashSet::new();
    if let Some((dup, _)) = changes.iter().find(|(n, _)| !seen.insert(*n)) {
        return Err(AppError::invalid(
            "share",
            t1("node-share-twice", "id", dup.to_string()),
        ));
    }
    let mut tx = pool.begin().await?;
    let parents = Parents::load(&mut *tx).await?;
    lock_live(&mut tx, parent_id).await?;
    if !actor.sees_node(parent_id, &parents) {
        // Outside the caller's view: answered as a missing node.
        return Err(AppError::NotFound(t1(
            "node-tree-not-found",
            "id",
            parent_id.to_string(),
        )));
    }
    if !actor.leads(parent_id, &parents) {
        return Err(AppError::Forbidden(t("node-shares-forbidden")));
    }
    let siblings: Vec<(i64, String, i32)> =
        sqlx::query_as("SELECT id, name, share_bp FROM tree_nodes WHERE parent_id = $1 AND NOT archived FOR UPDATE")
            .bind(parent_id)
            .fetch_all(&mut *tx)
            .await?;
    let mut total: i64 = 0;
    for (id, _, bp) in &siblings {
        total += changes
            .iter()
            .find(|(c, _)| c == id)
            .map_or(i64::from(*bp), |(_, s)| i64::from(s.bp()));
    }
    for (id, _) in changes {
        if !siblings.iter().any(|(s, _, _)| s == id) {
            return Err(AppError::NotFound(t2(
                "node-not-a-child",
                "id",
                id.to_string(),
                "parent",
                parent_id.to_string(),
            )));
        }
    }
    if total > 10_000 {
        return Err(AppError::invalid(
            "share",
            t1(
                "node-shares-over-100",
                "sum",
                crate::i18n::format::basis_points(total),
            ),
        ));
    }
    for (id, share) in changes {
        let (_, name, before) = siblings
            .iter()
            .find(|(s, _, _)| s == id)
            .cloned()
            .unwrap_or_default();
        if i64::from(before) == i64::from(share.bp()) {
            continue;
        }
        sqlx::query("UPDATE tree_nodes SET share_bp = $1 WHERE id = $2")
            .bind(i32::from(share.bp()))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        audit::record(
            &mut *tx,
            Change {
                actor: Some(actor.id),
                action: "share.update",
                entity: "tree_node",
                entity_id: Some(*id),
                node_id: Some(*id),
                before: Some(json!({"name": name, "share_percent": domain::format_bp(i64::from(before))})),
                after: Some(json!({"name": name, "share_percent": domain::format_bp(i64::from(share.bp()))})),
            },
        )
        .await?;
    }
    tx.commit().await?;
    crate::ledger::refresh_early_budgets(pool, jiff::Timestamp::now(), site).await?;
    Ok(())
}

/// What kind of node to create.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// An inner node (program, team, ...).
    Group,
    /// A project: a leaf with a budget.
    Project,
}

async fn name_free(
    tx: &mut sqlx::PgConnection,
    name: &str,
    except: Option<i64>,
) -> Result<(), AppError> {
    let taken: Option<bool> = sqlx::query_scalar(
        "SELECT archived FROM tree_nodes WHERE lower(name) = lower($1) AND id IS DISTINCT FROM $2",
    )
    .bind(name)
    .bind(except)
    .fetch_optional(&mut *tx)
    .await?;
    match taken {
        Some(false) => Err(AppError::invalid(
            "name",
            t1("node-name-taken", "name", crate::domain::quote(name)),
        )),
        Some(true) => Err(AppError::invalid(
            "name",
            t1("node-name-archived", "name", crate::domain::quote(name)),
        )),
        None => Ok(()),
    }
}

async fn check_room(
    tx: &mut sqlx::PgConnection,
    parent_id: i64,
    adding: Share,
    except: Option<i64>,
) -> Result<(), AppError> {
    let used: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(share_bp), 0)::bigint FROM tree_nodes WHERE parent_id = $1 AND NOT archived AND id IS DISTINCT FROM $2",
    )
    .bind(parent_id)
    .bind(except)
    .fetch_one(&mut *tx)
    .await?;
    if used + i64::from(adding.bp()) > 10_000 {
        return Err(AppError::invalid(
            "share",
            crate::i18n::ta(
                "node-no-room",
                &[
                    ("used", &crate::i18n::format::basis_points(used)),
                    ("left", &crate::i18n::format::basis_points(10_000 - used)),
                    (
                        "asked",
                        &crate::i18n::format::basis_points(i64::from(adding.bp())),
                    ),
                ],
            ),
        ));
    }
    Ok(())
}

/// Refuses non-admins; `refusal` is the message (`only an admin can create tree nodes`).
fn require_admin(actor: &Account, refusal: impl FnOnce() -> String) -> Result<(), AppError> {
    if actor.is_admin() {
        Ok(())
    } else {
        Err(AppError::Forbidden(refusal()))
    }
}

/// Creates a node under `parent_id` (admins only). Returns the new id.
///
/// # Errors
/// Forbidden, NotFound parent, Invalid name/share (duplicate name, parent is a project, no
/// share room left).
pub async fn create_node(
    pool: &PgPool,
    actor: &Account,
    parent_id: i64,
    name: &str,
    kind: NodeKind,
    share: Share,
) -> Result<i64, AppError> {
    require_admin(actor, || t("node-admins-create"))?;
    let name = domain::node_name(name).map_err(|m| AppError::invalid("name", m))?;
    let mut tx = pool.begin().await?;
    let (_, _, parent_name, parent_is_project, _) = lock_live(&mut tx, parent_id).await?;
    if parent_is_project {
        return Err(AppError::invalid(
            "parent",
            t1(
                "node-parent-is-project",
                "name",
                crate::domain::quote(&parent_name),
            ),
        ));
    }
    name_free(&mut tx, &name, None).await?;
    check_room(&mut tx, parent_id, share, None).await?;
    let id: i64 = sqlx::query_scalar("INSERT INTO tree_nodes (parent_id, name, is_project, share_bp) VALUES ($1, $2, $3, $4) RETURNING id")
        .bind(parent_id)
        .bind(&name)
        .bind(kind == NodeKind::Project)
        .bind(i32::from(share.bp()))
        .fetch_one(&mut *tx)
        .await?;
    if kind == NodeKind::Project {
        sqlx::query("INSERT INTO projects (node_id) VALUES ($1)")
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "node.create",
            entity: "tree_node",
            entity_id: Some(id),
            node_id: Some(id),
            before: None,
            after: Some(json!({"name": name, "parent_id": parent_id, "kind": kind, "share_percent": domain::format_bp(i64::from(share.bp()))})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Renames a node (admins only).
///
/// # Errors
/// Forbidden, NotFound, Invalid or duplicate name.
pub async fn rename_node(
    pool: &PgPool,
    actor: &Account,
    id: i64,
    name: &str,
) -> Result<(), AppError> {
    require_admin(actor, || t("node-admins-rename"))?;
    let name = domain::node_name(name).map_err(|m| AppError::invalid("name", m))?;
    let mut tx = pool.begin().await?;
    let (_, _, old, _, _) = lock_live(&mut tx, id).await?;
    if old == name {
        return Ok(());
    }
    name_free(&mut tx, &name, Some(id)).await?;
    sqlx::query("UPDATE tree_nodes SET name = $1 WHERE id = $2")
        .bind(&name)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "node.rename",
            entity: "tree_node",
            entity_id: Some(id),
            node_id: Some(id),
            before: Some(json!({"name": old})),
            after: Some(json!({"name": name})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Moves a node under a new parent, keeping its share (admins only).
///
/// # Errors
/// Forbidden, NotFound, Invalid (the root, a move into its own subtree or under a project, no
/// share room at the new parent).
pub async fn move_node(
    pool: &PgPool,
    actor: &Account,
    id: i64,
    new_parent: i64,
) -> Result<(), AppError> {
    require_admin(actor, || t("node-admins-move"))?;
    let mut tx = pool.begin().await?;
    let (_, old_parent, name, _, share_bp) = lock_live(&mut tx, id).await?;
    let Some(old_parent) = old_parent else {
        return Err(AppError::invalid("parent", t("node-root-move")));
    };
    let (_, _, parent_name, parent_is_project, _) = lock_live(&mut tx, new_parent).await?;
    let parents = Parents::load(&mut *tx).await?;
    if parents.is_ancestor_or_self(id, new_parent) {
        return Err(AppError::invalid(
            "parent",
            t1("node-move-into-itself", "name", crate::domain::quote(&name)),
        ));
    }
    if parent_is_project {
        return Err(AppError::invalid(
            "parent",
            t1(
                "node-parent-is-project",
                "name",
                crate::domain::quote(&parent_name),
            ),
        ));
    }
    let share = Share::from_bp(share_bp as u16).unwrap_or(Share::FULL);
    check_room(&mut tx, new_parent, share, Some(id)).await?;
    sqlx::query("UPDATE tree_nodes SET parent_id = $1 WHERE id = $2")
        .bind(new_parent)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "node.move",
            entity: "tree_node",
            entity_id: Some(id),
            node_id: Some(id),
            before: Some(json!({"name": name, "parent_id": old_parent})),
            after: Some(json!({"name": name, "parent_id": new_parent})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Archives a node with no live children and no runs under way (admins only); its share stops
/// counting. What it booked stays in the ledger and in every report of those periods.
///
/// # Errors
/// Forbidden, NotFound, Invalid (the root, or live children remain), Refused `active_runs`
/// (409: runs of its subtree are running or waiting, with both counts).
pub async fn archive_node(pool: &PgPool, actor: &Account, id: i64) -> Result<(), AppError> {
    require_admin(actor, || t("node-admins-archive"))?;
    let mut tx = pool.begin().await?;
    let (_, parent, name, _, _) = lock_live(&mut tx, id).await?;
    if parent.is_none() {
        return Err(AppError::invalid("node", t("node-root-archive")));
    }
    let live_children: i64 =
        sqlx::query_scalar("SELECT count(*) FROM tree_nodes WHERE parent_id = $1 AND NOT archived")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
    if live_children > 0 {
        return Err(AppError::invalid(
            "node",
            t2(
                "node-has-children",
                "name",
                crate::domain::quote(&name),
                "count",
                live_children,
            ),
        ));
    }
    // A submission's insert locks its project's tree row `FOR SHARE` and inserts only while
    // it is not archived (runs::batch): `lock_live` above waited for those under way, so the
    // count below sees their runs, and a later one sees the archive and inserts nothing. It
    // also holds a key-share lock on the project's row until it commits: locking the rows of
    // the subtree's projects waits for those.
    sqlx::query(
        "WITH RECURSIVE sub AS (SELECT id FROM tree_nodes WHERE id = $1 \
         UNION ALL SELECT t.id FROM tree_nodes t JOIN sub ON t.parent_id = sub.id) \
         SELECT p.node_id FROM projects p JOIN sub ON sub.id = p.node_id ORDER BY p.node_id FOR UPDATE OF p",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    let (running, waiting): (i64, i64) = sqlx::query_as(
        "WITH RECURSIVE sub AS (SELECT id FROM tree_nodes WHERE id = $1 \
         UNION ALL SELECT t.id FROM tree_nodes t JOIN sub ON t.parent_id = sub.id) \
         SELECT count(*) FILTER (WHERE r.state IN ('starting', 'running', 'stopping')), \
                count(*) FILTER (WHERE r.state IN ('waiting_approval', 'queued')) \
         FROM runs r JOIN sub ON sub.id = r.project_id",
    )
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    if running + waiting > 0 {
        return Err(AppError::Refused {
            code: "active_runs",
            message: crate::i18n::ta(
                "node-has-active-runs",
                &[
                    ("name", &crate::domain::quote(&name)),
                    ("running", &running),
                    ("waiting", &waiting),
                ],
            ),
        });
    }
    // A contract of an archived project would hold GPUs no run can use until it ends (and a
    // started one cannot be cancelled): archive once its contracts have ended or are cancelled.
    let contracts: i64 = sqlx::query_scalar(
        "WITH RECURSIVE sub AS (SELECT id FROM tree_nodes WHERE id = $1 \
         UNION ALL SELECT t.id FROM tree_nodes t JOIN sub ON t.parent_id = sub.id) \
         SELECT count(*) FROM contracts c JOIN sub ON sub.id = c.project_id \
         WHERE c.state = 'active' AND c.ends_at > now()",
    )
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    if contracts > 0 {
        return Err(AppError::Refused {
            code: "active_contracts",
            message: crate::i18n::ta(
                "node-has-contracts",
                &[
                    ("name", &crate::domain::quote(&name)),
                    ("count", &contracts),
                ],
            ),
        });
    }
    sqlx::query("UPDATE tree_nodes SET archived = true WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "node.archive",
            entity: "tree_node",
            entity_id: Some(id),
            node_id: Some(id),
            before: Some(json!({"name": name, "archived": false})),
            after: Some(json!({"name": name, "archived": true})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A project's budget settings and members.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProjectSettings {
    /// Project node id.
    pub id: i64,
    /// Period budget override in minor units (`None`: the entitlement's money value).
    pub period_budget_minor: Option<i64>,
    /// Monthly money cap in minor units.
    pub money_cap_minor: Option<i64>,
    /// Self-service limit for protected runs, GPU-hours.
    pub self_service_gpu_hours: i32,
    /// Budget alert thresholds, percent.
    pub alert_thresholds: Vec<i32>,
    /// Members (user id, name).
    pub members: Vec<(i64, String)>,
}

/// Loads a project's settings.
///
/// # Errors
/// NotFound when `id` is not a project; database errors.
pub async fn project(pool: &PgPool, id: i64) -> Result<ProjectSettings, AppError> {
    let (period_budget_minor, money_cap_minor, self_service_gpu_hours, alert_thresholds): (Option<i64>, Option<i64>, i32, Vec<i32>) =
        sqlx::query_as("SELECT period_budget_minor, money_cap_minor, self_service_gpu_hours, alert_thresholds FROM projects WHERE node_id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?
            .ok_or_else(|| AppError::NotFound(crate::i18n::t1("err-no-project-id", "id", id.to_string())))?;
    let members = sqlx::query_as(
        "SELECT DISTINCT u.id, u.name FROM project_members m JOIN users u ON u.id = m.user_id WHERE m.project_id = $1 ORDER BY u.name",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    Ok(ProjectSettings {
        id,
        period_budget_minor,
        money_cap_minor,
        self_service_gpu_hours,
        alert_thresholds,
        members,
    })
}

/// New budget settings for a project.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct BudgetUpdate {
    /// Period budget override, minor units; `None` reverts to the entitlement.
    pub period_budget_minor: Option<i64>,
    /// Monthly money cap, minor units; `None` for no cap.
    pub money_cap_minor: Option<i64>,
    /// Self-service limit, GPU-hours (0..=100,000).
    pub self_service_gpu_hours: i32,
    /// Budget alert thresholds in percent (1..=100, at most 10, each once, any order); `None`
    /// keeps the current ones.
    #[serde(default)]
    pub alert_thresholds: Option<Vec<i32>>,
}

/// Updates a project's budget settings (admins, and leads of a node strictly above it).
///
/// # Errors
/// Forbidden, NotFound, Invalid (negative amounts, limit out of range, a threshold given twice).
pub async fn update_project(
    pool: &PgPool,
    actor: &Account,
    id: i64,
    update: &BudgetUpdate,
    tree: &TreeView,
    (site, now): (&crate::config::Site, jiff::Timestamp),
) -> Result<(), AppError> {
    const MAX_MONEY: i64 = 1_000_000_000_000_000;
    if update.period_budget_minor.is_some_and(|v| v > MAX_MONEY) {
        return Err(AppError::invalid(
            "period_budget",
            crate::i18n::t("budget-err-too-large"),
        ));
    }
    if update.money_cap_minor.is_some_and(|v| v > MAX_MONEY) {
        return Err(AppError::invalid(
            "money_cap",
            crate::i18n::t("budget-err-too-large"),
        ));
    }
    if update.period_budget_minor.is_some_and(|v| v < 0) {
        return Err(AppError::invalid(
            "period_budget",
            crate::i18n::t("budget-err-negative"),
        ));
    }
    if update.money_cap_minor.is_some_and(|v| v < 0) {
        return Err(AppError::invalid(
            "money_cap",
            crate::i18n::t("budget-err-cap-negative"),
        ));
    }
    if !(0..=100_000).contains(&update.self_service_gpu_hours) {
        return Err(AppError::invalid(
            "self_service_gpu_hours",
            crate::i18n::t("budget-err-self-service"),
        ));
    }
    let mut tx = pool.begin().await?;
    let parents = Parents::load(&mut *tx).await?;
    let before: (Option<i64>, Option<i64>, i32, Vec<i32>) = sqlx::query_as(
        "SELECT p.period_budget_minor, p.money_cap_minor, p.self_service_gpu_hours, p.alert_thresholds FROM projects p \
         JOIN tree_nodes t ON t.id = p.node_id WHERE p.node_id = $1 AND NOT t.archived FOR UPDATE OF p",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| AppError::NotFound(crate::i18n::t1("err-no-project-id", "id", id.to_string())))?;
    // A project the actor may not see is unknown to them alike (its existence is not told).
    if !actor.may_view(id, &parents) {
        return Err(AppError::NotFound(crate::i18n::t1(
            "err-no-project-id",
            "id",
            id.to_string(),
        )));
    }
    if !actor.leads_strictly_above(id, &parents) {
        return Err(AppError::Forbidden(crate::i18n::t("budget-err-forbidden")));
    }
    let thresholds = match &update.alert_thresholds {
        Some(t) => {
            let mut t = t.clone();
            t.sort_unstable();
            if let Some(pair) = t.windows(2).find(|w| w[0] == w[1]) {
                return Err(AppError::invalid(
                    "alert_thresholds",
                    crate::i18n::t1("budget-err-threshold-twice", "pct", pair[0].to_string()),
                ));
            }
            if t.len() > 10 || t.iter().any(|p| !(1..=100).contains(p)) {
                return Err(AppError::invalid(
                    "alert_thresholds",
                    crate::i18n::t("budget-err-thresholds"),
                ));
            }
            t
        }
        None => before.3.clone(),
    };
    if before
        == (
            update.period_budget_minor,
            update.money_cap_minor,
            update.self_service_gpu_hours,
            thresholds.clone(),
        )
    {
        return Ok(());
    }
    // A lead sets budgets within their own node's: the projects under each node they lead
    // (above this project) may not be budgeted more than that node's entitlement.
    if !actor.is_admin() {
        let settings: Vec<(i64, Option<i64>, Option<i64>)> =
            sqlx::query_as("SELECT node_id, period_budget_minor, money_cap_minor FROM projects")
                .fetch_all(&mut *tx)
                .await?;
        let budget_of = |n: &NodeView| {
            let (budget, cap) = if n.id == id {
                (update.period_budget_minor, update.money_cap_minor)
            } else {
                settings
                    .iter()
                    .find(|(p, _, _)| *p == n.id)
                    .map_or((None, None), |(_, b, c)| (*b, *c))
            };
            let base = budget.unwrap_or(n.money_total.0);
            cap.map_or(base, |c| c.min(base))
        };
        for lead in actor
            .lead_nodes()
            .filter(|l| *l != id && parents.is_ancestor_or_self(*l, id))
        {
            let Some(led) = tree.node(lead) else { continue };
            let sum: i64 = tree
                .nodes
                .iter()
                .filter(|n| n.is_project && parents.is_ancestor_or_self(lead, n.id))
                .map(budget_of)
                .sum();
            if sum > led.money_total.0 {
                return Err(AppError::invalid(
                    "period_budget",
                    crate::i18n::ta(
                        "budget-err-over-entitlement",
                        &[
                            ("node", &led.name),
                            ("sum", &Money(sum).amount()),
                            ("entitlement", &led.money_total.amount()),
                        ],
                    ),
                ));
            }
        }
    }
    sqlx::query("UPDATE projects SET period_budget_minor = $1, money_cap_minor = $2, self_service_gpu_hours = $3, alert_thresholds = $4 WHERE node_id = $5")
        .bind(update.period_budget_minor)
        .bind(update.money_cap_minor)
        .bind(update.self_service_gpu_hours)
        .bind(&thresholds)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    // Only a changed budget or cap moves money: saving the self-service limit or the alert
    // thresholds leaves the period's grant as it was, whatever prices or GPUs did since.
    if (update.period_budget_minor, update.money_cap_minor) != (before.0, before.1) {
        crate::ledger::follow_budget_change(
            pool,
            &mut tx,
            site,
            now,
            id,
            (update.period_budget_minor, update.money_cap_minor),
        )
        .await?;
    }
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "budget.update",
            entity: "project",
            entity_id: Some(id),
            node_id: Some(id),
            before: Some(json!({"period_budget_minor": before.0, "money_cap_minor": before.1, "self_service_gpu_hours": before.2, "alert_thresholds": before.3})),
            after: Some(json!({"period_budget_minor": update.period_budget_minor, "money_cap_minor": update.money_cap_minor, "self_service_gpu_hours": update.self_service_gpu_hours, "alert_thresholds": thresholds})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Adds (`add = true`) or removes a member of a project (admins and leads of the project or
/// above). The user is found by name.
///
/// # Errors
/// Forbidden, NotFound (project or user), Invalid (already a member / not a member).
pub async fn set_member(
    pool: &PgPool,
    actor: &Account,
    project_id: i64,
    user_name: &str,
    add: bool,
) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    let parents = Parents::load(&mut *tx).await?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM projects p JOIN tree_nodes t ON t.id = p.node_id WHERE p.node_id = $1 AND NOT t.archived)")
        .bind(project_id)
        .fetch_one(&mut *tx)
        .await?;
    // A project the actor may not see is unknown to them alike (its existence is not told).
    if !exists || !actor.may_view(project_id, &parents) {
        return Err(AppError::NotFound(crate::i18n::t1(
            "err-no-project-id",
            "id",
            project_id.to_string(),
        )));
    }
    if !actor.leads(project_id, &parents) {
        return Err(AppError::Forbidden(crate::i18n::t("err-members-forbidden")));
    }
    if user_name.trim().is_empty() {
        return Err(AppError::invalid(
            "user",
            crate::i18n::t("project-err-user-empty"),
        ));
    }
    let (user_id, disabled): (i64, bool) =
        sqlx::query_as("SELECT id, disabled FROM users WHERE name = $1")
            .bind(user_name.trim())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| {
                AppError::NotFound(crate::i18n::t1(
                    "project-err-no-user",
                    "name",
                    crate::domain::quote(user_name.trim()),
                ))
            })?;
    if add && disabled {
        return Err(AppError::invalid(
            "user",
            crate::i18n::t1(
                "project-err-user-disabled",
                "name",
                crate::domain::quote(user_name.trim()),
            ),
        ));
    }
    let changed = if add {
        sqlx::query("INSERT INTO project_members (project_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
    } else {
        sqlx::query("DELETE FROM project_members WHERE project_id = $1 AND user_id = $2")
    }
    .bind(project_id)
    .bind(user_id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if changed == 0 {
        let key = if add {
            "project-err-already-member"
        } else {
            "project-err-not-member"
        };
        return Err(AppError::invalid(
            "user",
            crate::i18n::t1(key, "name", user_name.trim()),
        ));
    }
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: if add { "member.add" } else { "member.remove" },
            entity: "user",
            entity_id: Some(user_id),
            node_id: Some(project_id),
            before: (!add).then(|| json!({"project_id": project_id, "user": user_name.trim()})),
            after: add.then(|| json!({"project_id": project_id, "user": user_name.trim()})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
