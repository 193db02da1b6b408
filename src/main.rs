//! The `tranche` binary: a thin command-line shell over the library.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tranche::config::{self, DbArgs, ServeArgs, Site};
use tranche::db::{self, Database};
use tranche::state::AppState;

/// Tranche: decides who gets a research organisation's GPUs.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the web portal (starts a private PostgreSQL when DATABASE_URL is not set).
    Serve(ServeArgs),
    /// Load the demo organisation and print its users' passwords.
    Demo(DbArgs),
    /// Apply database migrations and exit.
    Migrate(DbArgs),
    /// Administration: users, passwords, API tokens.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Replay a job trace through the scheduling core under several policies.
    Simulate(tranche::sim::SimulateArgs),
    /// Node agent: register this machine's GPUs with a server and run the processes it assigns.
    Agent(tranche::agent::AgentArgs),
    /// Benchmarks that print figures.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create a user with a role; prints a generated password once.
    CreateUser {
        /// User name.
        #[arg(long)]
        name: String,
        /// admin, finance, lead or researcher.
        #[arg(long)]
        role: String,
        /// For a lead: the name of the tree node they lead.
        #[arg(long)]
        node: Option<String>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Set a user's password: read from standard input with --password-stdin, else generated
    /// and printed once.
    SetPassword {
        /// User name.
        #[arg(long)]
        name: String,
        /// Read the new password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Prove the ledger: every balance equals its postings, balances sum to zero, and no
    /// project budget is below zero. Exits non-zero when a problem is found.
    CheckLedger {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Create an API token for a user and print it once.
    CreateToken {
        /// User name.
        #[arg(long)]
        user: String,
        /// A label to recognise the token by.
        #[arg(long, default_value = "cli")]
        label: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Back up the embedded database to a new file (pg_dump's custom format, mode 0600); copy
    /// the data directory's secret.key with it. With DATABASE_URL, back up that server with
    /// pg_dump instead.
    Backup {
        /// The file to write (it must not exist).
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Replace the embedded database's contents with a backup made by `admin backup`, in one
    /// transaction, while no `tranche serve` runs on it.
    Restore {
        /// The backup file.
        #[arg(long)]
        from: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Create a node agent token for a cluster and print it once (`tranche agent --token`).
    CreateAgentToken {
        /// Cluster name.
        #[arg(long)]
        cluster: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Declare nodes of a cluster: only declared nodes can be served by an agent, with exactly
    /// the declared GPUs. Takes the flags of the `tranche agent` that will serve them.
    DeclareNodes {
        /// Cluster name.
        #[arg(long)]
        cluster: String,
        /// GPUs per node, `COUNTxMODEL`, e.g. `8xH100`.
        #[arg(long)]
        gpus: tranche::agent::GpuSpec,
        /// Number of nodes, named `HOST-1..HOST-N` (just `HOST` when 1), as the agent names them.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
        nodes: u32,
        /// Node host name (default: this machine's host name).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Create a cluster served by Slurm, or refresh its inventory: reads the partition's nodes
    /// and their GPUs (gres `gpu`) with `sinfo` (set `TRANCHE_SLURM_CONF` for a `slurm.conf`
    /// other than Slurm's default).
    AddSlurmCluster {
        /// Cluster name in Tranche.
        #[arg(long)]
        name: String,
        /// The Slurm partition whose nodes make the cluster.
        #[arg(long)]
        partition: String,
        /// GPU model of its nodes (default: the model named like Slurm's GPU type, `gpu:TYPE:N`).
        #[arg(long)]
        gpu_model: Option<String>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Revoke every agent token of a cluster; its agents are refused from their next call.
    RevokeAgentTokens {
        /// Cluster name.
        #[arg(long)]
        cluster: String,
        #[command(flatten)]
        db: DbArgs,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Time one scheduling pass at 10,000 GPUs / 50,000 waiting runs, then at 2x and 4x.
    Schedule(tranche::sim::bench::BenchScheduleArgs),
    /// Concurrent buyers racing for the same contract window: purchases per second, no overbooking.
    Contracts(tranche::bench::ContractBenchArgs),
    /// Latency of the program tree page for the demo organisation under concurrent clients.
    Tree(tranche::bench::TreeBenchArgs),
    /// Run submissions through the API of a live server with a real agent: submissions per
    /// second, latency, and delay to the stored start decision.
    Runs(tranche::bench::RunBenchArgs),
}

fn main() -> std::process::ExitCode {
    match run_cli() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_cli() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => tranche::sim::run(&args),
        Command::Bench {
            command: BenchCommand::Schedule(args),
        } => tranche::sim::bench::run(&args),
        other => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(run(other)),
    }
}

/// The embedded PostgreSQL of `db`'s data directory for `what` (back up, restore): refused
/// with `DATABASE_URL` (that server has its own tools) or a directory with no database.
fn open_embedded(db: &DbArgs, what: &str) -> anyhow::Result<db::embedded::Embedded> {
    if !matches!(config::database_source(), config::DatabaseSource::Embedded) {
        anyhow::bail!(
            "DATABASE_URL is set: {what} that server with PostgreSQL's own tools (pg_dump, pg_restore); this command serves the embedded database"
        );
    }
    embedded_exists(db)?;
    db::embedded::Embedded::open(&db.data_dir, db::embedded::Claim::Join)
}

/// Refuses a data directory holding no embedded database: only `serve` creates an
/// organisation; given a mistyped directory, another command would initialise an empty one
/// there and act on it.
fn embedded_exists(db: &DbArgs) -> anyhow::Result<()> {
    if !db.data_dir.join("postgres").join("PG_VERSION").exists() {
        anyhow::bail!(
            "there is no Tranche database in {dir}: start `tranche serve --data-dir {dir}` first (it creates one), or set DATABASE_URL",
            dir = db.data_dir.display()
        );
    }
    Ok(())
}

/// The database of a command other than `serve` ([`embedded_exists`] without `DATABASE_URL`).
async fn open(db: &DbArgs) -> anyhow::Result<Database> {
    let source = config::database_source();
    if matches!(source, config::DatabaseSource::Embedded) {
        embedded_exists(db)?;
    }
    Database::open(&source, &db.data_dir).await
}

async fn run(command: Command) -> anyhow::Result<()> {
    tranche::telemetry::init()?;
    match command {
        Command::Serve(args) => serve(args).await,
        Command::Demo(args) => {
            let mut site = Site::from_env()?;
            let database = open(&args).await?;
            // The zone the server recorded, whatever this shell's TRANCHE_TIME_ZONE says.
            // Likewise its currency.
            let zones =
                tranche::ledger::zones::follow(&database.pool, &mut site, jiff::Timestamp::now())
                    .await;
            let zones = match zones {
                Ok(()) => tranche::ledger::currency::follow(&database.pool, &mut site).await,
                Err(e) => Err(e),
            };
            let result = match zones {
                Err(e) => Err(e),
                Ok(()) => tranche::demo::load(&database.pool).await,
            };
            let result = match result {
                Ok(Some(users)) => demo_agent_setup(&database.pool)
                    .await
                    .map(|(names, token)| Some((users, names, token))),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            let history = match &result {
                Ok(_) => tranche::demo::load_history(&database.pool, &site).await,
                Err(_) => Ok(None),
            };
            let use_cases = match &result {
                Ok(_) => {
                    let today = jiff::Timestamp::now()
                        .to_zoned(site.time_zone.clone())
                        .date();
                    tranche::demo::load_use_cases(&database.pool, &site, today).await
                }
                Err(_) => Ok(None),
            };
            database.close().await?;
            match result? {
                Some((users, names, token)) => {
                    println!(
                        "Loaded the demo organisation: 3 programs, 15 teams, 40 projects; clusters h100-east (1,024 H100), b200-west (256 B200), b300-lab (88 B300), and local ({}, 8 H100 each, declared for `tranche agent --gpus 8xH100 --nodes 2` on this machine with the token below).",
                        names.join(" and ")
                    );
                    for u in users {
                        println!("user: {} password: {} role: {}", u.name, u.password, u.role);
                    }
                    println!("agent-token: {token} cluster: local");
                }
                None => println!("The demo organisation is already loaded; nothing changed."),
            }
            match history? {
                Some(loaded) => {
                    for (cluster, r) in &loaded.clusters {
                        println!(
                            "history: {} days of past runs on {cluster}: {} runs, {} attempts, {} preemptions, {:.0} GPU-hours (replayed through the scheduling core)",
                            tranche::demo::HISTORY_DAYS,
                            r.runs,
                            r.attempts,
                            r.preemptions,
                            r.gpu_hours
                        );
                    }
                    println!(
                        "history: charged to the projects' budgets when it was used: {:.0} GPU-hours for {} {}, {:.0} GPU-hours free beyond their balances ({} ledger postings)",
                        loaded.charged_gpu_seconds as f64 / 3600.0,
                        tranche::domain::Money(loaded.charged_minor).plain(),
                        site.currency,
                        loaded.free_gpu_seconds as f64 / 3600.0,
                        loaded.postings
                    );
                }
                None => println!("The demo history is already recorded; nothing changed."),
            }
            match use_cases? {
                Some((names, o)) => println!(
                    "AI use cases: {} (owned by the teams of the program Operations), with {} lines of imported FOCUS spend from {} to {}.",
                    names.join(", "),
                    o.new_lines,
                    o.covers.0,
                    o.covers.1
                ),
                None => println!("The demo AI use cases are already loaded; nothing changed."),
            }
            Ok(())
        }
        Command::Migrate(args) => {
            let database = open(&args).await?;
            database.close().await?;
            println!("Migrations applied.");
            Ok(())
        }
        Command::Admin { command } => admin(command).await,
        Command::Agent(args) => tranche::agent::run(args).await,
        Command::Bench {
            command: BenchCommand::Tree(args),
        } => tranche::bench::tree(&args).await,
        Command::Bench {
            command: BenchCommand::Contracts(args),
        } => tranche::bench::contracts(&args).await,
        Command::Bench {
            command: BenchCommand::Runs(args),
        } => tranche::bench::runs(&args).await,
        Command::Simulate(_)
        | Command::Bench {
            command: BenchCommand::Schedule(_),
        } => unreachable!("handled before the runtime starts"),
    }
}

/// Opens the database, runs `f` on its pool, closes it (stopping an embedded server this
/// command started) and prints what `f` returned.
async fn with_db<F, Fut>(db: &DbArgs, f: F) -> anyhow::Result<()>
where
    F: FnOnce(sqlx::PgPool) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<String>>,
{
    let database = open(db).await?;
    let result = f(database.pool.clone()).await;
    database.close().await?;
    println!("{}", result?);
    Ok(())
}

async fn admin(command: AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::CreateUser {
            name,
            role,
            node,
            db,
        } => {
            with_db(&db, |pool| async move {
                let (_, pw) = db::users::create(&pool, None, &name, &role, node.as_deref())
                    .await
                    .map_err(user_error)?;
                Ok(format!(
                    "user: {} password: {pw} role: {}",
                    name.trim(),
                    role.trim()
                ))
            })
            .await
        }
        AdminCommand::SetPassword {
            name,
            password_stdin,
            db,
        } => {
            let given = if password_stdin {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .read_line(&mut line)
                    .context("cannot read the password from standard input")?;
                Some(line.trim_end_matches(['\r', '\n']).to_string())
            } else {
                None
            };
            with_db(&db, |pool| async move {
                let generated = given.is_none();
                let pw = given.unwrap_or_else(tranche::auth::password::generate);
                db::users::set_password(&pool, None, &name, &pw)
                    .await
                    .map_err(user_error)?;
                Ok(if generated {
                    format!("user: {} password: {pw}", name.trim())
                } else {
                    format!("Password of {} changed.", name.trim())
                })
            })
            .await
        }
        AdminCommand::CheckLedger { db } => {
            with_db(&db, |pool| async move {
                let problems = tranche::ledger::problems(&pool).await?;
                let (postings, accounts): (i64, i64) =
                    sqlx::query_as("SELECT (SELECT count(*) FROM ledger_postings), (SELECT count(*) FROM ledger_accounts)").fetch_one(&pool).await?;
                if problems.is_empty() {
                    Ok(format!("The ledger balances: {postings} postings over {accounts} accounts, balances sum to zero, no budget below zero."))
                } else {
                    anyhow::bail!("the ledger has {} problem(s):\n{}", problems.len(), problems.join("\n"))
                }
            })
            .await
        }
        AdminCommand::CreateToken { user, label, db } => {
            // The account page's rules: at most 100 characters, no control character.
            let label = label.trim().to_string();
            if label.chars().count() > 100 || label.chars().any(char::is_control) {
                anyhow::bail!(
                    "--label: at most 100 characters and no control characters (tabs, newlines, ...)"
                );
            }
            with_db(&db, |pool| async move {
                let (id, disabled): (i64, bool) =
                    sqlx::query_as("SELECT id, disabled FROM users WHERE name = $1")
                        .bind(user.trim())
                        .fetch_optional(&pool)
                        .await?
                        .with_context(|| format!("there is no user named {:?}", user.trim()))?;
                if disabled {
                    // Its tokens are refused while it is disabled: one made now would not work.
                    anyhow::bail!("{:?} is disabled: enable the account first", user.trim());
                }
                let token = tranche::auth::tokens::create(&pool, None, id, &label).await?;
                Ok(format!("token: {token}"))
            })
            .await
        }
        AdminCommand::Backup { out, db } => {
            use std::os::unix::fs::OpenOptionsExt;
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&out)
                .with_context(|| format!("--out {}", out.display()))?;
            let embedded = match open_embedded(&db, "back up") {
                Ok(e) => e,
                Err(e) => {
                    let _ = std::fs::remove_file(&out);
                    return Err(e);
                }
            };
            let dumped = embedded.dump(db::embedded::DATABASE, file);
            let stopped = embedded.stop_if_owned();
            if dumped.is_err() {
                let _ = std::fs::remove_file(&out);
            }
            dumped.and(stopped)?;
            println!(
                "backup: {} (keep {} with it, or TRANCHE_SECRET_KEY where it is set: without the key, runs' sealed secret values cannot be read)",
                out.display(),
                db.data_dir.join("secret.key").display()
            );
            Ok(())
        }
        AdminCommand::Restore { from, db } => {
            let file = std::fs::File::open(&from)
                .with_context(|| format!("--from {}", from.display()))?;
            let embedded = open_embedded(&db, "restore")?;
            if embedded.served() {
                let _ = embedded.stop_if_owned();
                anyhow::bail!(
                    "a `tranche serve` runs on {}: stop it first, then restore",
                    db.data_dir.display()
                );
            }
            let restored = embedded.restore(db::embedded::DATABASE, file);
            let stopped = embedded.stop_if_owned();
            restored.and(stopped)?;
            println!(
                "restored {} into {} (migrations newer than the backup run at the next start)",
                from.display(),
                db.data_dir.display()
            );
            Ok(())
        }
        AdminCommand::CreateAgentToken { cluster, db } => {
            with_db(&db, |pool| async move {
                let token = tranche::runs::agents::create_token(&pool, &cluster)
                    .await
                    .map_err(user_error)?;
                Ok(format!("agent-token: {token} cluster: {}", cluster.trim()))
            })
            .await
        }
        AdminCommand::DeclareNodes {
            cluster,
            gpus,
            nodes,
            name,
            db,
        } => {
            let tranche::agent::GpuSpec::Declared { count, model } = gpus else {
                anyhow::bail!("--gpus must name the GPUs, e.g. 8xH100 (`auto` is for the agent)");
            };
            let host = tranche::agent::host_name(name.as_deref())?;
            let names = tranche::agent::node_names(&host, nodes);
            with_db(&db, |pool| async move {
                db::inventory::declare_nodes(
                    &pool,
                    None,
                    &cluster,
                    &names,
                    &model,
                    &count.to_string(),
                )
                .await
                .map_err(user_error)?;
                Ok(format!(
                    "declared in cluster {}: {} ({count} x {model} each)",
                    cluster.trim(),
                    names.join(", ")
                ))
            })
            .await
        }
        AdminCommand::AddSlurmCluster {
            name,
            partition,
            gpu_model,
            db,
        } => {
            let settings = tranche::config::SlurmSettings::from_env()?;
            with_db(&db, |pool| async move {
                let change = tranche::executor::slurm::add_cluster(
                    &pool,
                    &settings,
                    &name,
                    &partition,
                    gpu_model.as_deref(),
                )
                .await
                .map_err(user_error)?;
                Ok(change.describe(name.trim()))
            })
            .await
        }
        AdminCommand::RevokeAgentTokens { cluster, db } => {
            with_db(&db, |pool| async move {
                let n = tranche::runs::agents::revoke_tokens(&pool, &cluster)
                    .await
                    .map_err(user_error)?;
                Ok(format!("revoked {n} agent tokens of cluster {}", cluster.trim()))
            })
            .await
        }
    }
}

/// The demo's `local` cluster: declares the two nodes the README's
/// `tranche agent --gpus 8xH100 --nodes 2` serves on this machine (`HOST-1`, `HOST-2`) and
/// creates an agent token; returns the node names and the token.
async fn demo_agent_setup(pool: &sqlx::PgPool) -> anyhow::Result<(Vec<String>, String)> {
    let host = tranche::agent::host_name(None)?;
    let names = tranche::agent::node_names(&host, 2);
    tranche::demo::declare_local_nodes(pool, &names)
        .await
        .map_err(user_error)?;
    let token = tranche::runs::agents::create_token(pool, "local")
        .await
        .map_err(user_error)?;
    Ok((names, token))
}

/// Turns a user-facing error into a plain message for the terminal.
fn user_error(e: tranche::error::AppError) -> anyhow::Error {
    match e {
        tranche::error::AppError::Internal(inner) => inner,
        other => anyhow::anyhow!("{other}"),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut site = Site::from_env()?;
    let sso = tranche::auth::sso::Sso::from_env()?;
    // Claim the address first: a server that cannot listen starts no database.
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    // The key for sealed run secrets, before the database: a bad key starts nothing.
    let key = tranche::auth::secrets::SecretKey::load(&args.db.data_dir)?;
    let database = Database::open_with(
        &config::database_source(),
        &args.db.data_dir,
        db::embedded::Claim::TakeOver,
    )
    .await?;
    let recorded = match tranche::ledger::currency::record(&database.pool, &site).await {
        Ok(()) => {
            tranche::ledger::zones::record(&database.pool, &mut site, jiff::Timestamp::now()).await
        }
        Err(e) => Err(e),
    };
    let key_source = if std::env::var_os("TRANCHE_SECRET_KEY").is_some() {
        "TRANCHE_SECRET_KEY".to_string()
    } else {
        args.db
            .data_dir
            .join(tranche::auth::secrets::KEY_FILE)
            .display()
            .to_string()
    };
    let recorded = match recorded {
        Ok(()) => tranche::runs::check_secret_key(&database.pool, &key, &key_source).await,
        Err(e) => Err(e),
    };
    let result = match recorded {
        Ok(()) => serve_on(listener, &database, site, sso, key).await,
        Err(e) => Err(e),
    };
    // Whatever happened, stop the embedded PostgreSQL this process owns.
    let closed = database.close().await;
    result.and(closed)
}

async fn serve_on(
    listener: tokio::net::TcpListener,
    database: &Database,
    site: Site,
    sso: tranche::auth::sso::Sso,
    key: tranche::auth::secrets::SecretKey,
) -> anyhow::Result<()> {
    if let Some(password) = db::users::first_run(&database.pool)
        .await
        .map_err(user_error)?
    {
        println!("First run: created the user `admin` with password {password}");
        println!(
            "This password is shown once. Change it on the Account page or with `tranche admin set-password --name admin`."
        );
    }
    let sealed = tranche::runs::seal_plain_secrets(&database.pool, &key).await?;
    if sealed > 0 {
        tracing::info!(
            runs = sealed,
            "sealed secret-looking environment values older runs kept in clear"
        );
    }
    let state = AppState::new(database.pool.clone(), site)
        .with_secret_key(key)
        .with_sso(sso);
    let rollover = tokio::spawn(roll_over_every_minute(state.clone()));
    let watchdog = database
        .embedded()
        .filter(|e| e.owned())
        .cloned()
        .map(|e| tokio::spawn(keep_embedded_running(e)));
    tracing::info!("Tranche listening on http://{}", listener.local_addr()?);
    println!("Tranche is serving on http://{}", listener.local_addr()?);
    let served = tranche::serve(listener, state, shutdown_signal()).await;
    rollover.abort();
    if let Some(w) = watchdog {
        w.abort();
    }
    tracing::info!("shutting down");
    Ok(served?)
}

/// Every few seconds, starts the embedded PostgreSQL again if it stopped while `serve` owns it
/// (killed or crashed): requests fail meanwhile, and the portal recovers by itself.
async fn keep_embedded_running(embedded: db::embedded::Embedded) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let e = embedded.clone();
        match tokio::task::spawn_blocking(move || e.restart_if_stopped()).await {
            Ok(Ok(true)) => tracing::error!(
                "the embedded PostgreSQL had stopped (killed or crashed): started it again"
            ),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::error!(
                error = %format!("{e:#}"),
                "the embedded PostgreSQL is not running and did not start; retrying in 5 s"
            ),
            Err(e) => tracing::error!(error = %e, "the embedded PostgreSQL's watch failed"),
        }
    }
}

/// Opens each project's budget for a new period when it begins, and lapses ended ones.
async fn roll_over_every_minute(state: AppState) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        tick.tick().await;
        match tranche::ledger::roll_over(&state.pool, jiff::Timestamp::now(), &state.site).await {
            Ok(r) if r.granted > 0 || r.lapsed > 0 => tracing::info!(
                granted = r.granted,
                lapsed = r.lapsed,
                "budget periods rolled over"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "budget roll-over failed; will retry"),
        }
        tranche::web::check_alerts(&state).await;
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
