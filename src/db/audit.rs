//! The audit log: every change to shares, budgets, inventory, users and roles, with who, when,
//! what, before and after. Written in the same transaction as the change it records.

use serde_json::Value;
use sqlx::PgPool;

use crate::auth::{Account, Parents};

/// One change to record.
pub struct Change<'a> {
    /// The user who made it; `None` for the system (first run, CLI without a user).
    pub actor: Option<i64>,
    /// What happened, e.g. `share.update`, `node.create`, `user.grant`.
    pub action: &'a str,
    /// The kind of record changed, e.g. `tree_node`, `user`, `cluster_node`.
    pub entity: &'a str,
    /// Its id.
    pub entity_id: Option<i64>,
    /// The tree node concerned, so leads see their subtree's entries.
    pub node_id: Option<i64>,
    /// The state before (JSON), `None` for creations.
    pub before: Option<Value>,
    /// The state after, `None` for deletions.
    pub after: Option<Value>,
}

/// Inserts `change` into the audit log.
///
/// # Errors
/// Database errors.
pub async fn record(db: impl sqlx::PgExecutor<'_>, change: Change<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_log (actor_id, action, entity, entity_id, node_id, before, after) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(change.actor)
    .bind(change.action)
    .bind(change.entity)
    .bind(change.entity_id)
    .bind(change.node_id)
    .bind(change.before)
    .bind(change.after)
    .execute(db)
    .await?;
    Ok(())
}

/// An audit entry as shown on the page and in the API.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Entry {
    /// Entry id.
    pub id: i64,
    /// When, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    /// Who (user name), `None` for the system.
    pub actor: Option<String>,
    /// What happened.
    pub action: String,
    /// Kind of record.
    pub entity: String,
    /// Its id.
    pub entity_id: Option<i64>,
    /// Tree node concerned.
    pub node_id: Option<i64>,
    /// State before.
    pub before: Option<Value>,
    /// State after.
    pub after: Option<Value>,
}

/// Most entries a page of the audit log holds.
pub const PAGE_MAX: i64 = 1_000;

/// The newest `limit` (clamped to 1 ..= [`PAGE_MAX`]) entries the account may see with an id
/// below `before` (all when `None`): all for admin and finance, entries about the lead's
/// subtree for leads, none for others. Returns them, newest first, and the `before` of the
/// next (older) page: the last id when the page is full, else `None`.
///
/// # Errors
/// Database errors.
pub async fn visible(
    pool: &PgPool,
    account: &Account,
    parents: &Parents,
    limit: i64,
    before: Option<i64>,
) -> Result<(Vec<Entry>, Option<i64>), sqlx::Error> {
    let limit = limit.clamp(1, PAGE_MAX);
    let scope: Option<Vec<i64>> = if account.sees_everything() {
        None
    } else {
        Some(
            parents
                .0
                .keys()
                .copied()
                .filter(|n| {
                    account
                        .lead_nodes()
                        .any(|l| parents.is_ancestor_or_self(l, *n))
                })
                .collect(),
        )
    };
    let entries: Vec<Entry> = sqlx::query_as(
        "SELECT a.id, a.at, u.name AS actor, a.action, a.entity, a.entity_id, a.node_id, a.before, a.after \
         FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id \
         WHERE ($1::bigint[] IS NULL OR a.node_id = ANY($1)) AND ($3::bigint IS NULL OR a.id < $3) \
         ORDER BY a.id DESC LIMIT $2",
    )
    .bind(scope)
    .bind(limit)
    .bind(before)
    .fetch_all(pool)
    .await?;
    let next = if entries.len() as i64 == limit {
        entries.last().map(|e| e.id)
    } else {
        None
    };
    Ok((entries, next))
}
