//! Per-user API tokens: `tr_` followed by 64 hex digits of randomness, shown once; only their
//! SHA-256 is stored.

use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

/// Creates a token for `user_id` and returns it (the only time it exists in clear).
///
/// # Errors
/// Database errors.
pub async fn create(
    db: impl sqlx::PgExecutor<'_>,
    user_id: i64,
    label: &str,
) -> Result<String, sqlx::Error> {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    let token = format!("tr_{}", hex::encode(bytes));
    sqlx::query("INSERT INTO api_tokens (user_id, token_sha256, label) VALUES ($1, $2, $3)")
        .bind(user_id)
        .bind(Sha256::digest(token.as_bytes()).as_slice())
        .bind(label)
        .execute(db)
        .await?;
    Ok(token)
}

/// The user a token belongs to, recording its use; `None` for unknown tokens.
///
/// # Errors
/// Database errors.
pub async fn user_for_token(pool: &PgPool, token: &str) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE api_tokens SET last_used_at = now() WHERE token_sha256 = $1 \
         AND user_id IN (SELECT id FROM users WHERE NOT disabled) RETURNING user_id",
    )
    .bind(Sha256::digest(token.as_bytes()).as_slice())
    .fetch_optional(pool)
    .await
}
