//! Tranche: a self-hosted portal that decides who gets a research organisation's GPUs.
//!
//! The crate is a library with a thin binary (`src/main.rs`). Folders follow the architecture:
//! `scheduler` is the pure scheduling core (no I/O, no clock), `sim` replays job traces through
//! it, `db` holds the PostgreSQL access and the embedded cluster, `auth` accounts, sessions and
//! CSRF, `web` the pages and the JSON API.

#![recursion_limit = "256"]

pub mod agent;
pub mod ai;
pub mod auth;
pub mod bench;
pub mod config;
pub mod db;
pub mod demo;
pub mod domain;
pub mod error;
pub mod executor;
pub mod export;
pub mod i18n;
pub mod ledger;
pub mod mail;
pub mod metrics;
pub mod process;
pub mod runs;
pub mod scheduler;
pub mod sim;
pub mod state;
pub mod telemetry;
pub mod web;

use std::future::Future;

/// Serves the application on `listener` until `shutdown` completes, then finishes in-flight
/// requests. Tests bind port 0 and call this directly.
///
/// # Errors
/// I/O errors of the listener.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: state::AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Parse the translations and build the CLDR formatters before the first page.
    i18n::load();
    i18n::format::load();
    let cleanup = tokio::spawn({
        let store = tower_sessions_sqlx_store::PostgresStore::new(state.pool.clone());
        async move {
            use tower_sessions::ExpiredDeletion;
            let _ = store
                .continuously_delete_expired(std::time::Duration::from_secs(600))
                .await;
        }
    });
    let service = runs::service::spawn(state.clone());
    // The peer address is what sign-in throttling keys on (auth::throttle).
    let app = web::app(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    cleanup.abort();
    for task in service {
        task.abort();
    }
    result
}
