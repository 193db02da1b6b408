//! `tranche simulate`: replays a job trace through the scheduling core on a virtual clock.

/// Arguments of `tranche simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Path of the trace file.
    #[arg(long)]
    pub trace: std::path::PathBuf,
}

/// Runs `tranche simulate`.
///
/// # Errors
/// Fails on unreadable or malformed input.
pub fn run(_args: &SimulateArgs) -> anyhow::Result<()> {
    anyhow::bail!("tranche simulate is not built yet")
}
