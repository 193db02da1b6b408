//! `tranche bench tree`: latency of the program tree page for the demo organisation under
//! concurrent clients, measured against a scratch database so the site's data is untouched.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::config::{DatabaseSource, Site};
use crate::db::embedded::Embedded;
use crate::state::AppState;

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

/// The value at quantile `q` (0..=1) of sorted `values`, nearest-rank method.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs the tree-page benchmark and prints p50/p90/p99/max latency and throughput.
///
/// # Errors
/// Database or HTTP failures, or a page that does not answer 200.
pub async fn tree(args: &TreeBenchArgs) -> anyhow::Result<()> {
    if args.clients == 0 || args.requests == 0 {
        bail!("--clients and --requests must be at least 1");
    }
    with_scratch_database(&args.db, "tree", |options| run(args, options)).await
}

/// Runs `f` against a scratch database created on the configured server (`DATABASE_URL` or
/// the embedded cluster) and dropped afterwards, so benchmarks never touch the site's data.
async fn with_scratch_database<F, Fut>(
    db: &crate::config::DbArgs,
    label: &str,
    f: F,
) -> anyhow::Result<()>
where
    F: FnOnce(PgConnectOptions) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let (server, embedded): (PgConnectOptions, Option<Embedded>) =
        match crate::config::database_source() {
            DatabaseSource::Url(url) => (
                url.expose()
                    .parse()
                    .context("DATABASE_URL is not a valid PostgreSQL URL")?,
                None,
            ),
            DatabaseSource::Embedded => {
                let dir = db.data_dir.clone();
                let e =
                    tokio::task::spawn_blocking(move || Embedded::ensure_running(&dir)).await??;
                (e.connect_options("postgres"), Some(e))
            }
        };
    let name = format!("tranche_bench_{label}_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect_with(&server)
        .await
        .context("cannot connect to PostgreSQL")?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .context("cannot create the scratch database")?;
    let result = f(server.clone().database(&name)).await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    if let Some(e) = embedded {
        tokio::task::spawn_blocking(move || e.stop_if_owned()).await??;
    }
    result
}

/// Options of `tranche bench contracts`.
#[derive(Debug, clap::Args)]
pub struct ContractBenchArgs {
    /// Concurrent buyers, each a lead of their own project.
    #[arg(long, default_value_t = 100)]
    pub buyers: usize,
    /// Purchase attempts per buyer, all for the same window and pool.
    #[arg(long, default_value_t = 10)]
    pub attempts: usize,
    /// 8-GPU nodes in the pool (contractable: 70% of their GPUs).
    #[arg(long, default_value_t = 125)]
    pub nodes: usize,
    #[command(flatten)]
    pub db: crate::config::DbArgs,
}

/// Races buyers for the same contract window over HTTP and prints purchases per second, then
/// proves that nothing was overbooked and that the ledger balances.
///
/// # Errors
/// Database or HTTP failures; an overbooking or an unsound ledger is an error.
pub async fn contracts(args: &ContractBenchArgs) -> anyhow::Result<()> {
    if args.buyers == 0 || args.attempts == 0 || args.nodes == 0 {
        bail!("--buyers, --attempts and --nodes must be at least 1");
    }
    with_scratch_database(&args.db, "contracts", |options| race(args, options)).await
}

async fn race(args: &ContractBenchArgs, options: PgConnectOptions) -> anyhow::Result<()> {
    let pool = PgPoolOptions::new()
        .max_connections(20)
        .connect_with(options)
        .await?;
    crate::db::migrate(&pool).await?;
    let site = Site {
        contractable_percent: 70,
        ..Site::from_env()?
    };
    // One pool of B200 GPUs; one project per buyer, each with 1/buyers of the organisation.
    sqlx::query("INSERT INTO tree_nodes (name, share_bp) VALUES ('Organisation', 10000)")
        .execute(&pool)
        .await?;
    sqlx::query("INSERT INTO gpu_models (name, billing_weight_milli, price_per_gpu_hour_minor) VALUES ('B200', 1800, 250)").execute(&pool).await?;
    sqlx::query("INSERT INTO clusters (name) VALUES ('bench')")
        .execute(&pool)
        .await?;
    sqlx::query("INSERT INTO nodes (cluster_id, name, gpu_model_id, gpu_count) SELECT 1, 'bench-' || i, 1, 8 FROM generate_series(1, $1) i")
        .bind(args.nodes as i32)
        .execute(&pool)
        .await?;
    let share = (10_000 / args.buyers) as i32;
    let mut tokens = Vec::with_capacity(args.buyers);
    for i in 0..args.buyers {
        let project: i64 = sqlx::query_scalar("INSERT INTO tree_nodes (parent_id, name, is_project, share_bp) VALUES (1, $1, true, $2) RETURNING id")
            .bind(format!("p{i}"))
            .bind(share)
            .fetch_one(&pool)
            .await?;
        sqlx::query("INSERT INTO projects (node_id) VALUES ($1)")
            .bind(project)
            .execute(&pool)
            .await?;
        let user: i64 = sqlx::query_scalar("INSERT INTO users (name) VALUES ($1) RETURNING id")
            .bind(format!("lead{i}"))
            .fetch_one(&pool)
            .await?;
        sqlx::query("INSERT INTO role_grants (user_id, role, node_id) VALUES ($1, 'lead', $2)")
            .bind(user)
            .bind(project)
            .execute(&pool)
            .await?;
        tokens.push((
            format!("p{i}"),
            crate::auth::tokens::create(&pool, None, user, "bench").await?,
        ));
    }
    let state = AppState::new(pool.clone(), site);
    crate::ledger::roll_over(&pool, jiff::Timestamp::now(), &state.site).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/api/v1/contracts", listener.local_addr()?);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::serve(listener, state, async {
        let _ = stop_rx.await;
    }));
    let start = jiff::Timestamp::now().checked_add(jiff::SignedDuration::from_hours(24))?;
    let end = start.checked_add(jiff::SignedDuration::from_hours(2))?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.buyers)
        .build()?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (project, token) in tokens {
        let (http, url, attempts) = (http.clone(), url.clone(), args.attempts);
        let body = serde_json::json!({"project": project, "cluster": "bench", "gpu_model": "B200", "gpus": 1, "start": start.to_string(), "end": end.to_string()});
        tasks.push(tokio::spawn(async move {
            let (mut bought, mut refused) = (0usize, 0usize);
            for _ in 0..attempts {
                let res = http
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await?;
                match res.status().as_u16() {
                    201 => bought += 1,
                    409 => refused += 1,
                    other => bail!(
                        "unexpected answer {other}: {}",
                        res.text().await.unwrap_or_default()
                    ),
                }
            }
            Ok::<_, anyhow::Error>((bought, refused))
        }));
    }
    let (mut bought, mut refused) = (0, 0);
    for t in tasks {
        let (b, r) = t.await??;
        bought += b;
        refused += r;
    }
    let wall = started.elapsed();
    let contractable = (args.nodes * 8 * 70 / 100) as i64;
    let promised: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(gpus), 0)::bigint FROM contracts WHERE state = 'active'",
    )
    .fetch_one(&pool)
    .await?;
    let problems = crate::ledger::problems(&pool).await?;
    let _ = stop_tx.send(());
    server.await??;
    println!(
        "{} buyers x {} attempts of 1 GPU for the same 2-hour window on {} GPUs ({contractable} contractable)",
        args.buyers,
        args.attempts,
        args.nodes * 8
    );
    println!(
        "decisions: {} in {:.2} s = {:.0} per second; bought {bought} ({:.0} purchases per second), refused {refused}",
        bought + refused,
        wall.as_secs_f64(),
        (bought + refused) as f64 / wall.as_secs_f64(),
        bought as f64 / wall.as_secs_f64()
    );
    println!(
        "promised {promised} of {contractable} contractable GPUs: {}",
        if promised <= contractable {
            "no overbooking"
        } else {
            "OVERBOOKED"
        }
    );
    println!(
        "ledger: {}",
        if problems.is_empty() {
            "balanced, no budget below zero".to_string()
        } else {
            problems.join("; ")
        }
    );
    if promised > contractable || promised != bought as i64 || !problems.is_empty() {
        bail!("the race broke an invariant");
    }
    Ok(())
}

async fn run(args: &TreeBenchArgs, options: PgConnectOptions) -> anyhow::Result<()> {
    let pool = PgPoolOptions::new()
        .max_connections(20)
        .connect_with(options)
        .await?;
    crate::db::migrate(&pool).await?;
    let users = crate::demo::load(&pool)
        .await?
        .context("the scratch database already had the demo")?;
    let lead = users
        .iter()
        .find(|u| u.role == "lead")
        .context("demo lead")?;
    let state = AppState::new(pool.clone(), Site::from_env()?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::serve(listener, state, async {
        let _ = stop_rx.await;
    }));

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(args.clients)
        .build()?;
    let cookie = login(&http, &base, &lead.name, &lead.password).await?;
    let url = format!("{base}/tree");
    let fetch = |http: reqwest::Client, url: String, cookie: String| async move {
        let started = Instant::now();
        let res = http.get(&url).header("cookie", cookie).send().await?;
        let ok = res.status() == 200;
        let body = res.text().await?;
        anyhow::ensure!(
            ok && body.contains("fm-distillation"),
            "the tree page did not answer 200 with the tree"
        );
        Ok::<Duration, anyhow::Error>(started.elapsed())
    };
    // Warm-up: one request per client.
    for _ in 0..args.clients {
        fetch(http.clone(), url.clone(), cookie.clone()).await?;
    }
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let (http, url, cookie, n) = (http.clone(), url.clone(), cookie.clone(), args.requests);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(n);
            for _ in 0..n {
                lat.push(fetch(http.clone(), url.clone(), cookie.clone()).await?);
            }
            Ok::<Vec<Duration>, anyhow::Error>(lat)
        }));
    }
    let mut all = Vec::with_capacity(args.clients * args.requests);
    for t in tasks {
        all.extend(t.await??);
    }
    let wall = started.elapsed();
    all.sort_unstable();
    let nodes: i64 = sqlx::query_scalar("SELECT count(*) FROM tree_nodes")
        .fetch_one(&pool)
        .await?;
    println!(
        "GET /tree as the demo lead: {nodes} tree nodes, {} clients x {} requests",
        args.clients, args.requests
    );
    println!(
        "requests: {} in {:.2} s = {:.0} per second",
        all.len(),
        wall.as_secs_f64(),
        all.len() as f64 / wall.as_secs_f64()
    );
    println!(
        "latency ms: p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
        ms(quantile(&all, 0.50)),
        ms(quantile(&all, 0.90)),
        ms(quantile(&all, 0.99)),
        ms(*all.last().unwrap_or(&Duration::ZERO))
    );
    let _ = stop_tx.send(());
    server.await??;
    pool.close().await;
    Ok(())
}

/// Signs in through the login form and returns the session cookie (`name=value`).
async fn login(
    http: &reqwest::Client,
    base: &str,
    name: &str,
    password: &str,
) -> anyhow::Result<String> {
    let page = http.get(format!("{base}/login")).send().await?;
    let first = session_cookie(&page).context("no session cookie on the login page")?;
    let html = page.text().await?;
    let marker = "name=\"csrf\" value=\"";
    let at = html
        .find(marker)
        .context("no CSRF token on the login page")?
        + marker.len();
    let csrf = html[at..].split('"').next().unwrap_or_default().to_string();
    let res = http
        .post(format!("{base}/login"))
        .header("cookie", &first)
        .form(&[
            ("csrf", csrf.as_str()),
            ("name", name),
            ("password", password),
            ("next", "/tree"),
        ])
        .send()
        .await?;
    if res.status() != 303 {
        bail!("signing in as {name} failed with {}", res.status());
    }
    session_cookie(&res).context("no session cookie after signing in")
}

fn session_cookie(res: &reqwest::Response) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.split(';').next().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&v, 0.5), Duration::from_millis(50));
        assert_eq!(quantile(&v, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&v, 1.0), Duration::from_millis(100));
        assert_eq!(
            quantile(&[Duration::from_millis(7)], 0.5),
            Duration::from_millis(7)
        );
    }
}

/// Options of `tranche bench runs`.
#[derive(Debug, clap::Args)]
pub struct RunBenchArgs {
    /// Run submissions in all.
    #[arg(long, default_value_t = 10_000)]
    pub runs: usize,
    /// Concurrent API clients.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// 8-GPU nodes served by one `tranche agent --nodes N --gpus 8xH100` process.
    #[arg(long, default_value_t = 125)]
    pub nodes: usize,
    /// GPUs per run.
    #[arg(long, default_value_t = 1)]
    pub gpus: u32,
    /// The runs' command.
    #[arg(long, default_value = "sleep 1")]
    pub command: String,
    /// Seconds to wait for every run's start decision after the last submission.
    #[arg(long, default_value_t = 300)]
    pub settle_s: u64,
    #[command(flatten)]
    pub db: crate::config::DbArgs,
}

/// Submits runs through the API of a live server whose `local` cluster is served by a real
/// `tranche agent` process, and prints submissions per second, submission latency, and the
/// delay from submission to the stored start decision.
///
/// # Errors
/// Database, HTTP or agent failures; a submission that is not accepted.
pub async fn runs(args: &RunBenchArgs) -> anyhow::Result<()> {
    if args.runs == 0 || args.clients == 0 || args.nodes == 0 || args.gpus == 0 {
        bail!("--runs, --clients, --nodes and --gpus must be at least 1");
    }
    with_scratch_database(&args.db, "runs", |options| submit_runs(args, options)).await
}

async fn submit_runs(args: &RunBenchArgs, options: PgConnectOptions) -> anyhow::Result<()> {
    let pool = crate::db::pool_options(40).connect_with(options).await?;
    crate::db::migrate(&pool).await?;
    crate::demo::load(&pool).await?;
    let researcher: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-researcher'")
        .fetch_one(&pool)
        .await?;
    let token = crate::auth::tokens::create(&pool, None, researcher, "bench").await?;
    let bench_nodes = crate::agent::node_names("bench", args.nodes as u32);
    crate::db::inventory::declare_nodes(&pool, None, "local", &bench_nodes, "H100", "8").await?;
    let agent_token = crate::runs::agents::create_token(&pool, "local").await?;
    let state = AppState::new(pool.clone(), Site::from_env()?);
    crate::ledger::roll_over(&pool, jiff::Timestamp::now(), &state.site).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::serve(listener, state, async {
        let _ = stop_rx.await;
    }));
    let logs = std::env::temp_dir().join(format!("tranche-bench-agent-{}", std::process::id()));
    let mut agent = tokio::process::Command::new(std::env::current_exe()?)
        .args([
            "agent", "--server", &base, "--gpus", "8xH100", "--name", "bench",
        ])
        .args(["--nodes", &args.nodes.to_string()])
        .arg("--log-dir")
        .arg(&logs)
        .env("TRANCHE_AGENT_TOKEN", &agent_token)
        .env(
            "RUST_LOG",
            std::env::var("TRANCHE_BENCH_AGENT_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .kill_on_drop(true)
        .spawn()
        .context("cannot start the agent")?;
    // Setup, not measurement: wait for the agent to register its nodes.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let live: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM nodes n JOIN clusters c ON c.id = n.cluster_id WHERE c.name = 'local' AND n.agent_session IS NOT NULL",
        )
        .fetch_one(&pool)
        .await?;
        if live as usize >= args.nodes {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "the agent registered {live} of {} nodes in 60 s",
                args.nodes
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .build()?;
    let url = format!("{base}/api/v1/runs");
    // When each run was submitted (client side), and when a watcher polling the database
    // every 20 ms first saw its start decision stored.
    let accepted: Arc<Mutex<HashMap<i64, Instant>>> = Arc::default();
    let seen: Arc<Mutex<HashMap<i64, Instant>>> = Arc::default();
    let watching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watcher = tokio::spawn({
        let (pool, seen, watching) = (pool.clone(), seen.clone(), watching.clone());
        async move {
            // Start decisions are timeline entries written by passes, which run one at a
            // time, so their ids grow in commit order: reading past the last one seen is enough.
            let mut last = 0i64;
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                let rows: Vec<(i64, i64)> = sqlx::query_as(
                    "SELECT id, run_id FROM run_events WHERE kind = 'started' AND id > $1 ORDER BY id",
                )
                .bind(last)
                .fetch_all(&pool)
                .await?;
                let now = Instant::now();
                {
                    let mut map = seen
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    for (id, run) in rows {
                        last = id;
                        map.entry(run).or_insert(now);
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<_, anyhow::Error>(())
        }
    });
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let count = args.runs / args.clients + usize::from(c < args.runs % args.clients);
        let (http, url, token) = (http.clone(), url.clone(), token.clone());
        let accepted = accepted.clone();
        let body = serde_json::json!({
            "project": if c % 2 == 0 { "fm-pretrain-7b" } else { "fm-pretrain-70b" },
            "cluster": "local", "gpu_model": "H100", "gpus": args.gpus,
            "min_runtime_s": 60, "time_limit_s": 3600, "resumable": true, "command": args.command,
        });
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(count);
            for _ in 0..count {
                let t = Instant::now();
                let res = http
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await?;
                let status = res.status();
                let text = res.text().await?;
                latencies.push(t.elapsed());
                if status.as_u16() != 201 {
                    bail!("submission answered {status}: {text}");
                }
                let answer: serde_json::Value = serde_json::from_str(&text)?;
                let id = answer["id"].as_i64().context("an answer without an id")?;
                accepted
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(id, t);
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(args.runs);
    for t in tasks {
        latencies.extend(t.await??);
    }
    let wall = started.elapsed();
    latencies.sort();
    // Setup again: wait until the watcher saw every run's start decision.
    let deadline = Instant::now() + Duration::from_secs(args.settle_s);
    let waiting = loop {
        let waiting = args.runs
            - seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .len();
        if waiting == 0 || Instant::now() > deadline {
            break waiting;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    watcher.await??;
    let accepted = accepted
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let mut delays: Vec<Duration> = accepted
        .iter()
        .filter_map(|(id, at)| seen.get(id).map(|s| s.saturating_duration_since(*at)))
        .collect();
    delays.sort();
    let (succeeded, failed): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'failed') FROM runs",
    )
    .fetch_one(&pool)
    .await?;
    let _ = agent.start_kill();
    let _ = agent.wait().await;
    // CPU time of the agent and the run processes it waited for (a killed agent's children
    // still running are not counted), and of this process: the server and the clients.
    let cpu = |who| {
        nix::sys::resource::getrusage(who).map_or(0.0, |u| {
            let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
    };
    let agent_cpu_s = cpu(nix::sys::resource::UsageWho::RUSAGE_CHILDREN);
    let own_cpu_s = cpu(nix::sys::resource::UsageWho::RUSAGE_SELF);
    let wall_total = started.elapsed();
    let _ = std::fs::remove_dir_all(&logs);
    let _ = stop_tx.send(());
    server.await??;
    println!(
        "{} submissions of {}-GPU runs (`{}`) from {} clients to {} GPUs on {} agent nodes",
        args.runs,
        args.gpus,
        args.command,
        args.clients,
        args.nodes * 8,
        args.nodes
    );
    println!(
        "submissions: {:.2} s = {:.0} per second; latency p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        wall.as_secs_f64(),
        args.runs as f64 / wall.as_secs_f64(),
        ms(quantile(&latencies, 0.5)),
        ms(quantile(&latencies, 0.9)),
        ms(quantile(&latencies, 0.99)),
        ms(*latencies.last().unwrap_or(&Duration::ZERO)),
    );
    println!(
        "submission -> start decision seen stored (polled every 20 ms; {} runs): p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms{}",
        delays.len(),
        ms(quantile(&delays, 0.5)),
        ms(quantile(&delays, 0.9)),
        ms(quantile(&delays, 0.99)),
        ms(*delays.last().unwrap_or(&Duration::ZERO)),
        if waiting > 0 {
            format!(
                "; {waiting} runs still without a start after {} s",
                args.settle_s
            )
        } else {
            String::new()
        }
    );
    println!("finished so far: {succeeded} succeeded, {failed} failed");
    let per_run = if succeeded + failed > 0 {
        format!(
            " ({:.2} ms per finished run)",
            agent_cpu_s * 1000.0 / (succeeded + failed) as f64
        )
    } else {
        String::new()
    };
    println!(
        "CPU over {:.1} s of wall time on {} cores: agent and its run processes {agent_cpu_s:.1} s{per_run}, this process (server, clients, setup) {own_cpu_s:.1} s; PostgreSQL not counted",
        wall_total.as_secs_f64(),
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
    );
    Ok(())
}
