//! Sign-in throttling keyed by client address and account name together
//! (`sign_in_throttle`): the first [`FREE_TRIES`] tries are free, then each try waits for a
//! delay that doubles (2 s, 4 s, 8 s, ...) up to [`MAX_DELAY_S`]. Nothing locks: an attacker's
//! failures delay only their own address's tries for that name, so the real user signs in
//! from anywhere else, and a name without a user is throttled exactly like one with, so the
//! answers tell nothing about which users exist. A success clears the pair's count; pairs
//! quiet for a day are forgotten.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use sqlx::PgPool;

use crate::state::AppState;

/// Tries from one address for one name that are never delayed.
pub const FREE_TRIES: i32 = 3;
/// The longest delay between two tries, seconds.
pub const MAX_DELAY_S: i64 = 300;

/// Seconds the next try must wait after the `tries`-th try since the last success:
/// 0 up to [`FREE_TRIES`], then 2, 4, 8, ... seconds, at most [`MAX_DELAY_S`].
pub fn delay_s(tries: i32) -> i64 {
    if tries <= FREE_TRIES {
        return 0;
    }
    let exponent = u32::try_from(tries - FREE_TRIES)
        .unwrap_or(u32::MAX)
        .min(20);
    (1_i64 << exponent).min(MAX_DELAY_S)
}

/// Whether a sign-in try may be checked now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Try {
    /// Check the password; the try is counted (a success clears the count).
    Allowed,
    /// Too soon after the last failures from this address for this name: wait this many
    /// seconds (at least 1).
    Wait(i64),
}

/// The key a name is throttled under: trimmed, lower-cased, at most 200 characters.
fn account_key(name: &str) -> String {
    name.trim().to_lowercase().chars().take(200).collect()
}

/// Starts a try from `client` for `name`: counts it and sets the delay for the next one in
/// one statement (so concurrent tries cannot slip past a delay), or says how long to wait.
///
/// # Errors
/// Database errors.
pub async fn begin(pool: &PgPool, client: &str, name: &str) -> Result<Try, sqlx::Error> {
    let account = account_key(name);
    sqlx::query("DELETE FROM sign_in_throttle WHERE last_failure_at < now() - interval '1 day'")
        .execute(pool)
        .await?;
    let counted: Option<i32> = sqlx::query_scalar(
        "INSERT INTO sign_in_throttle AS t (client, account, failures, blocked_until) \
         VALUES ($1, $2, 1, now() + make_interval(secs => $5)) \
         ON CONFLICT (client, account) DO UPDATE SET \
             failures = t.failures + 1, \
             blocked_until = now() + make_interval(secs => least($4::float8, \
                 CASE WHEN t.failures + 1 <= $3 THEN 0 ELSE 2 ^ least(t.failures + 1 - $3, 20) END)), \
             last_failure_at = now() \
         WHERE t.blocked_until <= now() \
         RETURNING failures",
    )
    .bind(client)
    .bind(&account)
    .bind(FREE_TRIES)
    .bind(MAX_DELAY_S as f64)
    .bind(delay_s(1) as f64)
    .fetch_optional(pool)
    .await?;
    if counted.is_some() {
        return Ok(Try::Allowed);
    }
    let wait: Option<i64> = sqlx::query_scalar(
        "SELECT ceil(extract(epoch FROM blocked_until - now()))::BIGINT FROM sign_in_throttle \
         WHERE client = $1 AND account = $2",
    )
    .bind(client)
    .bind(&account)
    .fetch_optional(pool)
    .await?;
    Ok(Try::Wait(wait.unwrap_or(1).max(1)))
}

/// Clears the count of `client` for `name` after a successful sign-in.
///
/// # Errors
/// Database errors.
pub async fn succeeded(pool: &PgPool, client: &str, name: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM sign_in_throttle WHERE client = $1 AND account = $2")
        .bind(client)
        .bind(account_key(name))
        .execute(pool)
        .await?;
    Ok(())
}

/// Extractor: the client's address as text. It is the connection's peer address, or with
/// `TRANCHE_TRUST_FORWARDED_FOR` (behind a reverse proxy) the last address of the
/// `X-Forwarded-For` header, the one the proxy added; `unknown` when neither is known (a
/// router called in-process).
pub struct ClientAddress(pub String);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let forwarded = state
            .site
            .trust_forwarded_for
            .then(|| {
                parts
                    .headers
                    .get_all("x-forwarded-for")
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .flat_map(|v| v.split(','))
                    .next_back()
                    .and_then(|a| a.trim().parse::<IpAddr>().ok())
            })
            .flatten();
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(a)| a.ip());
        Ok(Self(
            forwarded
                .or(peer)
                .map_or_else(|| "unknown".to_string(), |a| a.to_string()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_after_the_free_tries_up_to_the_cap() {
        let delays: Vec<i64> = (1..=13).map(delay_s).collect();
        assert_eq!(delays, [0, 0, 0, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(delay_s(i32::MAX), MAX_DELAY_S);
        assert_eq!(account_key("  Demo-Admin "), "demo-admin");
    }
}
