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
    /// Benchmarks (figures printed, not timed tests).
    Bench {
        #[command(subcommand)]
        what: Bench,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// Time one scheduling pass at 10,000 GPUs / 50,000 waiting runs, then at 2x and 4x.
    Schedule(tranche::sim::bench::BenchScheduleArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => tranche::sim::run(&args),
        Command::Bench { what } => match what {
            Bench::Schedule(args) => tranche::sim::bench::run(&args),
        },
    }
}
