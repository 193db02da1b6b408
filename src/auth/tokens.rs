//! Per-user API tokens: `tr_` followed by 64 hex digits of randomness, shown once; only their
//! SHA-256 is stored.

use sha2::{Digest, Sha256};
use sqlx::PgPool;

/// Creates a token for `user_id` and returns it (the only time it exists in clear), with an
/// `api_token.create` audit entry by `actor` (`None`: the command line) in the same statement.
///
/// # Errors
/// Database errors.
pub async fn create(
    db: impl sqlx::PgExecutor<'_>,
    actor: Option<i64>,
    user_id: i64,
    label: &str,
) -> Result<String, sqlx::Error> {
    let token = format!("tr_{}", super::random_hex(32));
    sqlx::query(
        "WITH t AS (INSERT INTO api_tokens (user_id, token_sha256, label) VALUES ($1, $2, $3) RETURNING id) \
         INSERT INTO audit_log (actor_id, action, entity, entity_id, after) \
         SELECT $4, 'api_token.create', 'api_token', t.id, jsonb_build_object('user', u.name, 'label', $3::text) \
         FROM t, users u WHERE u.id = $1",
    )
    .bind(user_id)
    .bind(Sha256::digest(token.as_bytes()).as_slice())
    .bind(label)
    .bind(actor)
    .execute(db)
    .await?;
    Ok(token)
}

/// The account a token belongs to (one query), recording the token's use to the minute;
/// `None` for unknown or revoked tokens and disabled users.
///
/// # Errors
/// Database errors.
pub async fn account_for_token(
    pool: &PgPool,
    token: &str,
) -> Result<Option<super::Account>, sqlx::Error> {
    let hash = Sha256::digest(token.as_bytes());
    let Some((account, id, stale)) = super::Account::load_by_token(pool, hash.as_slice()).await?
    else {
        return Ok(None);
    };
    // A read on every request; a write at most once a minute per token, so concurrent
    // requests with one token do not queue on its row.
    if stale {
        sqlx::query("UPDATE api_tokens SET last_used_at = now() WHERE id = $1")
            .bind(id)
            .execute(pool)
            .await?;
    }
    Ok(Some(account))
}

/// Revokes active token `token_id` for `actor_id`: one of the actor's own tokens, or when
/// `any_user` (an admin) any user's, with an `api_token.revoke` audit entry by the actor in
/// the same statement (`user` is the token's owner); false when there is no such active token.
///
/// # Errors
/// Database errors.
pub async fn revoke(
    pool: &PgPool,
    actor_id: i64,
    token_id: i64,
    any_user: bool,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "WITH t AS (UPDATE api_tokens SET revoked_at = now() \
                    WHERE id = $1 AND (user_id = $2 OR $3) AND revoked_at IS NULL RETURNING id, label, user_id) \
         INSERT INTO audit_log (actor_id, action, entity, entity_id, before, after) \
         SELECT $2, 'api_token.revoke', 'api_token', t.id, jsonb_build_object('user', u.name, 'label', t.label, 'revoked', false), \
                jsonb_build_object('user', u.name, 'label', t.label, 'revoked', true) \
         FROM t, users u WHERE u.id = t.user_id",
    )
    .bind(token_id)
    .bind(actor_id)
    .bind(any_user)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A token as listed (never the token itself).
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct TokenInfo {
    /// Token id.
    pub id: i64,
    /// The label given at creation.
    pub label: String,
    /// When it was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// When it was last used, if ever.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<time::OffsetDateTime>,
    /// When it was revoked, if it was.
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<time::OffsetDateTime>,
}

/// The user's tokens, newest first.
///
/// # Errors
/// Database errors.
pub async fn list(pool: &PgPool, user_id: i64) -> Result<Vec<TokenInfo>, sqlx::Error> {
    sqlx::query_as("SELECT id, label, created_at, last_used_at, revoked_at FROM api_tokens WHERE user_id = $1 ORDER BY id DESC")
        .bind(user_id)
        .fetch_all(pool)
        .await
}
