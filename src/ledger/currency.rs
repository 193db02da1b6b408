//! The currency of every amount in the database (`site_flags` row `currency`): amounts are
//! integer minor units and are never converted, so a database keeps the currency it was first
//! served in (docs/operations.md, "Currency").

use sqlx::PgPool;

use crate::config::Site;

/// Records `site.currency` on a database that has none yet and returns the recorded one.
async fn recorded(pool: &PgPool, site: &Site) -> Result<String, sqlx::Error> {
    sqlx::query(
        "INSERT INTO site_flags (name, value) VALUES ('currency', $1) ON CONFLICT (name) DO NOTHING",
    )
    .bind(&site.currency)
    .execute(pool)
    .await?;
    sqlx::query_scalar("SELECT value FROM site_flags WHERE name = 'currency'")
        .fetch_one(pool)
        .await
}

/// For `tranche serve`: records the configured currency on first start; a database whose
/// amounts are in another currency is refused.
///
/// # Errors
/// Database errors; `TRANCHE_CURRENCY` differs from the recorded currency.
pub async fn record(pool: &PgPool, site: &Site) -> anyhow::Result<()> {
    let recorded = recorded(pool, site).await?;
    anyhow::ensure!(
        recorded == site.currency,
        "TRANCHE_CURRENCY is {}, but this database's amounts are in {recorded}: amounts are integer minor units and are never converted; set TRANCHE_CURRENCY={recorded}",
        site.currency
    );
    Ok(())
}

/// For commands other than `serve` (`tranche demo`), whose environment need not be the
/// server's: makes `site.currency` the recorded one (recording the configured one on a
/// database with none), with a warning when the configured one differs.
///
/// # Errors
/// Database errors.
pub async fn follow(pool: &PgPool, site: &mut Site) -> anyhow::Result<()> {
    let recorded = recorded(pool, site).await?;
    if recorded != site.currency {
        tracing::warn!(
            configured = %site.currency,
            %recorded,
            "TRANCHE_CURRENCY differs from the currency the server recorded: this command follows the recorded one"
        );
        site.currency = recorded;
    }
    Ok(())
}
