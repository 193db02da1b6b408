use clap::{Parser, Subcommand};

/// Tranche: decides who gets a research organisation's GPUs.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a job trace through the scheduling core under several policies.
    Simulate(tranche::sim::SimulateArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => tranche::sim::run(&args),
    }
}
