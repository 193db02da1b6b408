//! Structured logs with `tracing`: an env filter (`RUST_LOG`, default `info`) and a JSON
//! option (`TRANCHE_LOG_FORMAT=json`). Secrets are wrapped in [`crate::config::Secret`] and
//! never reach a log line.

/// Installs the global subscriber once; later calls do nothing.
///
/// # Errors
/// `RUST_LOG` is set but not a filter; `TRANCHE_LOG_FORMAT` is neither `text` nor `json`.
pub fn init() -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => tracing_subscriber::EnvFilter::try_new(v.trim())
            .map_err(|e| anyhow::anyhow!("RUST_LOG is not a log filter ({e}), got {v:?}"))?,
        _ => tracing_subscriber::EnvFilter::new("info,sqlx=warn,tower_sessions=warn"),
    };
    let json = match std::env::var("TRANCHE_LOG_FORMAT")
        .as_deref()
        .map(str::trim)
    {
        Err(_) | Ok("" | "text") => false,
        Ok("json") => true,
        Ok(other) => anyhow::bail!("TRANCHE_LOG_FORMAT must be text or json, got {other:?}"),
    };
    use std::io::IsTerminal;
    // Colours only on a terminal: log files and collectors get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    Ok(())
}
