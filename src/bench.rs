//! `tranche bench tree`: latency of the program tree page for the demo organisation under
//! concurrent clients, measured against a scratch database so the site's data is untouched.

/// Options of `tranche bench tree`.
#[derive(Debug, clap::Args)]
pub struct TreeBenchArgs {
    /// Concurrent clients.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// Requests per client (after one warm-up request each).
    #[arg(long, default_value_t = 100)]
    pub requests: usize,
    #[command(flatten)]
    pub db: crate::config::DbArgs,
}

/// Runs the tree-page benchmark and prints p50/p90/p99/max latency and throughput.
///
/// # Errors
/// Database or HTTP failures.
pub async fn tree(args: &TreeBenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet: {args:?}")
}
