//! The time zones the budget periods follow (`period_zones`): a change of
//! `TRANCHE_TIME_ZONE` takes effect at the end of the current period instead of opening a
//! second period (and a second grant) for the month under way (docs/design.md, "Budget
//! periods across a time-zone change").

use sqlx::PgPool;

use crate::config::Site;
use crate::domain::PeriodCalendar;
use crate::ledger::{Period, to_jiff, to_time};

/// Reads the recorded zones into `site.periods`, first recording the configured zone: on an
/// empty table as the zone from the beginning; when it differs from the zone in effect, as a
/// change from the end of the period containing `now`. A change not yet in effect is replaced
/// by the configured zone, or dropped when the configured zone is the one in effect.
///
/// # Errors
/// Database errors; a recorded zone this build does not know.
pub async fn record(pool: &PgPool, site: &mut Site, now: jiff::Timestamp) -> anyhow::Result<()> {
    sync(pool, site, now, true).await
}

/// For commands other than `serve` (`tranche demo`), whose environment need not be the
/// server's: reads the recorded zones into `site.periods` and makes `site.time_zone` the zone
/// the period containing `now` follows, changing nothing recorded but on an empty table (the
/// configured zone from the beginning, as [`record`] does). A configured zone that differs is
/// ignored with a warning: only `tranche serve` changes the zone.
///
/// # Errors
/// Database errors; a recorded zone this build does not know.
pub async fn follow(pool: &PgPool, site: &mut Site, now: jiff::Timestamp) -> anyhow::Result<()> {
    sync(pool, site, now, false).await?;
    let zone = site.periods.period(now).0.time_zone().clone();
    let name = zone.iana_name().unwrap_or("UTC").to_string();
    if name != site.time_zone_name {
        tracing::warn!(
            configured = %site.time_zone_name,
            recorded = %name,
            "TRANCHE_TIME_ZONE differs from the zone the server recorded: this command follows the recorded one (only `tranche serve` changes it)"
        );
    }
    site.time_zone = zone;
    site.time_zone_name = name;
    Ok(())
}

async fn sync(
    pool: &PgPool,
    site: &mut Site,
    now: jiff::Timestamp,
    change: bool,
) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("LOCK TABLE period_zones IN EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let rows = read(&mut tx).await?;
    let configured = site.time_zone_name.as_str();
    match rows.as_slice() {
        [_, ..] if !change => {}
        [] => {
            sqlx::query(
                "INSERT INTO period_zones (effective_from, time_zone) VALUES ('epoch', $1)",
            )
            .bind(configured)
            .execute(&mut *tx)
            .await?;
        }
        [.., (_, in_effect), (pending_from, pending)] if *pending_from > now => {
            if in_effect == configured {
                tracing::warn!(
                    dropped = %pending,
                    kept = %in_effect,
                    at = %pending_from,
                    "the time zone change not yet in effect is dropped: TRANCHE_TIME_ZONE is the zone in effect again"
                );
                sqlx::query("DELETE FROM period_zones WHERE effective_from = $1")
                    .bind(to_time(*pending_from))
                    .execute(&mut *tx)
                    .await?;
            } else if pending != configured {
                tracing::warn!(
                    from = %pending,
                    to = %configured,
                    at = %pending_from,
                    "the time zone change not yet in effect now goes to the newly configured zone"
                );
                sqlx::query("UPDATE period_zones SET time_zone = $2 WHERE effective_from = $1")
                    .bind(to_time(*pending_from))
                    .bind(configured)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        [.., (_, in_effect)] if in_effect != configured => {
            let calendar = calendar(&rows)?;
            let (_, end) = calendar.period(now);
            tracing::warn!(
                from = %in_effect,
                to = %configured,
                at = %end.timestamp(),
                "the time zone changed: budget periods follow the new one from the end of the current period"
            );
            sqlx::query("INSERT INTO period_zones (effective_from, time_zone) VALUES ($1, $2)")
                .bind(to_time(end.timestamp()))
                .bind(configured)
                .execute(&mut *tx)
                .await?;
        }
        _ => {}
    }
    let rows = read(&mut tx).await?;
    tx.commit().await?;
    site.periods = calendar(&rows)?;
    let period = Period::containing(now, site);
    tracing::debug!(start = %period.start, end = %period.end, "current budget period");
    Ok(())
}

async fn read(tx: &mut sqlx::PgConnection) -> Result<Vec<(jiff::Timestamp, String)>, sqlx::Error> {
    let rows: Vec<(time::OffsetDateTime, String)> = sqlx::query_as(
        "SELECT effective_from, time_zone FROM period_zones ORDER BY effective_from",
    )
    .fetch_all(tx)
    .await?;
    Ok(rows.into_iter().map(|(t, z)| (to_jiff(t), z)).collect())
}

fn calendar(rows: &[(jiff::Timestamp, String)]) -> anyhow::Result<PeriodCalendar> {
    let zone = |name: &str| {
        jiff::tz::TimeZone::get(name).map_err(|e| {
            anyhow::anyhow!(
                "the budget periods follow the time zone {name:?}, unknown to this build: {e}"
            )
        })
    };
    let mut rows = rows.iter();
    let Some((_, first)) = rows.next() else {
        anyhow::bail!("no time zone recorded for the budget periods");
    };
    let mut calendar = PeriodCalendar::new(zone(first)?);
    for (from, name) in rows {
        calendar = calendar.then(*from, zone(name)?);
    }
    Ok(calendar)
}
