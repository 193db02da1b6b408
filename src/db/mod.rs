//! PostgreSQL access: resolving the database (URL or embedded cluster), the pool, migrations,
//! and queries per aggregate.

pub mod audit;
pub mod drains;
pub mod embedded;
pub mod inventory;
pub mod tree;
pub mod users;

use std::path::Path;
use std::str::FromStr;

use anyhow::Context;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::config::DatabaseSource;

/// An open database: the pool, and the embedded cluster when one is in use.
pub struct Database {
    /// The connection pool, migrated.
    pub pool: PgPool,
    embedded: Option<embedded::Embedded>,
}

impl Database {
    /// The embedded cluster in use, if any (`None` with `DATABASE_URL`).
    pub fn embedded(&self) -> Option<&embedded::Embedded> {
        self.embedded.as_ref()
    }

    /// Resolves the database the way every subcommand does: `DATABASE_URL` when set, else the
    /// embedded cluster in `data_dir` (joined while `tranche serve` runs it, started otherwise),
    /// then runs the migrations.
    ///
    /// # Errors
    /// Unreachable server, missing PostgreSQL binaries, or a failed migration.
    pub async fn open(source: &DatabaseSource, data_dir: &Path) -> anyhow::Result<Self> {
        Self::open_with(source, data_dir, embedded::Claim::Join).await
    }

    /// As [`Database::open`], treating an embedded server that already runs as `claim` says
    /// (`tranche serve` takes over one that no live `serve` owns).
    ///
    /// # Errors
    /// As [`Database::open`].
    pub async fn open_with(
        source: &DatabaseSource,
        data_dir: &Path,
        claim: embedded::Claim,
    ) -> anyhow::Result<Self> {
        let (options, embedded) = match source {
            DatabaseSource::Url(url) => (
                PgConnectOptions::from_str(url.expose())
                    .context("DATABASE_URL is not a valid PostgreSQL URL")?,
                None,
            ),
            DatabaseSource::Embedded => {
                let dir = data_dir.to_path_buf();
                let embedded =
                    tokio::task::spawn_blocking(move || embedded::Embedded::open(&dir, claim))
                        .await??;
                create_database_if_missing(&embedded).await?;
                (embedded.connect_options(embedded::DATABASE), Some(embedded))
            }
        };
        if embedded.is_none() {
            // One connection first, so that an unreachable server or a refused login says so
            // at once (the pool retries until its acquire timeout, then says only that).
            use sqlx::{ConnectOptions, Connection};
            match tokio::time::timeout(std::time::Duration::from_secs(10), options.connect()).await
            {
                Ok(Ok(c)) => c.close().await?,
                Ok(Err(e)) => anyhow::bail!("cannot connect to PostgreSQL: {e}"),
                Err(_) => anyhow::bail!(
                    "cannot connect to PostgreSQL: no answer from {}:{} within 10 s",
                    options.get_host(),
                    options.get_port()
                ),
            }
        }
        let pool = pool_options(20)
            .connect_with(options)
            .await
            .context("cannot connect to PostgreSQL")?;
        migrate(&pool).await?;
        Ok(Self { pool, embedded })
    }

    /// Closes the pool and stops the embedded server if this process owns it.
    ///
    /// # Errors
    /// `pg_ctl stop` failing.
    pub async fn close(self) -> anyhow::Result<()> {
        self.pool.close().await;
        if let Some(embedded) = self.embedded {
            tokio::task::spawn_blocking(move || embedded.stop_if_owned()).await??;
        }
        Ok(())
    }
}

async fn create_database_if_missing(embedded: &embedded::Embedded) -> anyhow::Result<()> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect_with(&embedded.connect_options("postgres"))
        .await
        .context("cannot connect to the embedded PostgreSQL")?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(embedded::DATABASE)
            .fetch_one(&mut conn)
            .await?;
    if !exists {
        sqlx::query(&format!("CREATE DATABASE {}", embedded::DATABASE))
            .execute(&mut conn)
            .await?;
    }
    Ok(())
}

/// The connection pool settings of the server (and of `tranche bench`, which runs one):
/// `max_connections` connections, not pinged before each use. A submission takes the pool
/// several times, and sqlx's default ping costs a round trip each time; a connection that
/// broke (PostgreSQL restarted) fails its next query instead, and is then dropped.
#[must_use]
pub fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .test_before_acquire(false)
        // A request whose database is gone fails in seconds with a 5xx instead of holding its
        // client for sqlx's default 30 s (a busy pool hands a connection over in milliseconds).
        .acquire_timeout(std::time::Duration::from_secs(10))
}

/// Runs Tranche's migrations (embedded from `migrations/`) and the session store's.
///
/// # Errors
/// A failed migration.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::migrate!("./migrations")
        .run(pool)
        .await
        .context("migrations failed")?;
    tower_sessions_sqlx_store::PostgresStore::new(pool.clone())
        .migrate()
        .await
        .context("session store migration failed")?;
    Ok(())
}
