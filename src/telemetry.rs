//! Structured logs with `tracing`: an env filter (`RUST_LOG`, default `info`) and a JSON
//! option (`TRANCHE_LOG_FORMAT=json`). Secrets are wrapped in [`crate::config::Secret`] and
//! never reach a log line.

/// Installs the global subscriber once; later calls do nothing.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,sqlx=warn,tower_sessions=warn")
    });
    use std::io::IsTerminal;
    // Colours only on a terminal: log files and collectors get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = if std::env::var("TRANCHE_LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
