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
    /// The lead's language for the page: `en`, `es` or `eu` (set as the user's own choice).
    #[arg(long, default_value = "en", value_parser = parse_lang)]
    pub lang: crate::i18n::Lang,
    #[command(flatten)]
    pub db: crate::config::DbArgs,
}

fn parse_lang(s: &str) -> Result<crate::i18n::Lang, String> {
    crate::i18n::Lang::parse(s).ok_or_else(|| format!("{s:?} is not one of en, es, eu"))
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
    sqlx::query("UPDATE users SET language = $1 WHERE name = $2")
        .bind(args.lang.code())
        .bind(&lead.name)
        .execute(&pool)
        .await?;
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
        "GET /tree as the demo lead in {}: {nodes} tree nodes, {} clients x {} requests",
        args.lang.native_name(),
        args.clients,
        args.requests
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
    /// One of the issue-17 workloads, by name: `no-churn` (10,000 runs of `sleep 600` on
    /// 1,000 GPUs), `churn` (10,000 runs of `sleep 30` on 1,000 GPUs), `burst` (1,000 runs on
    /// free GPUs), `site` (10,000 GPUs on 1,250 nodes served by 10 agent processes, filled by
    /// 10,000 runs, then 50,000 more waiting). It sets the defaults of the flags below; a flag
    /// given explicitly wins.
    #[arg(long, value_parser = ["no-churn", "churn", "burst", "site"])]
    pub workload: Option<String>,
    /// Run submissions in all (default 10,000; `burst` 1,000).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Concurrent API clients.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// 8-GPU nodes, served by the agent processes (default 125; `site` 1,250).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// `tranche agent` processes sharing the nodes (default 1; `site` 10).
    #[arg(long)]
    pub agents: Option<usize>,
    /// GPUs per run.
    #[arg(long, default_value_t = 1)]
    pub gpus: u32,
    /// The runs' command (default `sleep 1`; `no-churn` and `site` `sleep 600`, `churn`
    /// `sleep 30`, `burst` `sleep 60`).
    #[arg(long)]
    pub command: Option<String>,
    /// Runs added waiting once the submitted ones were decided, written straight to the
    /// database (setup, not measured; default 0, `site` 50,000).
    #[arg(long)]
    pub waiting: Option<usize>,
    /// Seconds to watch the passes after the waiting runs were added (with `--waiting`).
    #[arg(long, default_value_t = 15)]
    pub observe_s: u64,
    /// Seconds to wait for every run's start decision after the last submission.
    #[arg(long, default_value_t = 300)]
    pub settle_s: u64,
    #[command(flatten)]
    pub db: crate::config::DbArgs,
}

/// The settings of one `tranche bench runs`, flags over the workload's defaults.
#[derive(Debug, Clone)]
struct RunPlan {
    name: String,
    runs: usize,
    clients: usize,
    nodes: usize,
    agents: usize,
    gpus: u32,
    command: String,
    waiting: usize,
    observe_s: u64,
    settle_s: u64,
}

impl RunPlan {
    fn of(args: &RunBenchArgs) -> anyhow::Result<Self> {
        let name = args.workload.clone().unwrap_or_else(|| "custom".into());
        let (runs, nodes, agents, command, waiting) = match name.as_str() {
            "no-churn" => (10_000, 125, 1, "sleep 600", 0),
            "churn" => (10_000, 125, 1, "sleep 30", 0),
            "burst" => (1_000, 125, 1, "sleep 60", 0),
            "site" => (10_000, 1_250, 10, "sleep 600", 50_000),
            _ => (10_000, 125, 1, "sleep 1", 0),
        };
        let plan = Self {
            name,
            runs: args.runs.unwrap_or(runs),
            clients: args.clients,
            nodes: args.nodes.unwrap_or(nodes),
            agents: args.agents.unwrap_or(agents),
            gpus: args.gpus,
            command: args.command.clone().unwrap_or_else(|| command.into()),
            waiting: args.waiting.unwrap_or(waiting),
            observe_s: args.observe_s,
            settle_s: args.settle_s,
        };
        if plan.runs == 0 || plan.clients == 0 || plan.nodes == 0 || plan.gpus == 0 {
            bail!("--runs, --clients, --nodes and --gpus must be at least 1");
        }
        if plan.agents == 0 || plan.agents > plan.nodes {
            bail!("--agents must be from 1 to the number of nodes");
        }
        Ok(plan)
    }
}

/// Submits runs through the API of a live server whose `local` cluster is served by real
/// `tranche agent` processes, and prints submissions per second, submission latency, the
/// delay from submission to the stored start decision, the passes' durations and what an
/// agent sync costs with and without delta syncs (docs/agent-protocol.md).
///
/// # Errors
/// Database, HTTP or agent failures; a submission that is not accepted.
pub async fn runs(args: &RunBenchArgs) -> anyhow::Result<()> {
    let plan = RunPlan::of(args)?;
    with_scratch_database(&args.db, "runs", |options| submit_runs(plan, options)).await
}

/// Quantiles of pass durations (s) as "p50 A ms, p99 B ms, max C ms (N passes)".
fn pass_figures(seconds: &[f64]) -> String {
    let mut d: Vec<Duration> = seconds
        .iter()
        .map(|s| Duration::from_secs_f64(*s))
        .collect();
    d.sort();
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} passes)",
        ms(quantile(&d, 0.5)),
        ms(quantile(&d, 0.99)),
        ms(*d.last().unwrap_or(&Duration::ZERO)),
        d.len()
    )
}

/// The runs whose GPUs were free when they were submitted: more GPUs were free at its
/// arrival than runs started ahead of it (after its arrival, before its start). The core
/// starts runs in fair-share order, not arrival order, so a run that arrives while one GPU is
/// free and sees a later run of a project further below its share take it was not given a
/// free GPU: its wait is the policy's, not the service's delay. Runs that never started wait
/// for every start after their arrival. From the server's instants: (id, submitted, first
/// start, end), seconds.
fn free_on_arrival(
    rows: &[(i64, f64, Option<f64>, Option<f64>)],
    capacity: usize,
) -> std::collections::HashSet<i64> {
    // Events at one instant: ends and starts before submissions (they free or take GPUs
    // before the run arrives); kinds 0 end, 1 start, 2 submit.
    let mut events: Vec<(f64, u8, usize)> = Vec::with_capacity(rows.len() * 3);
    for (i, (_, submitted, started, ended)) in rows.iter().enumerate() {
        events.push((*submitted, 2, i));
        if let Some(s) = started {
            events.push((*s, 1, i));
            if let Some(e) = ended {
                events.push((*e, 0, i));
            }
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut starts: Vec<f64> = rows.iter().filter_map(|r| r.2).collect();
    starts.sort_by(f64::total_cmp);
    // Starts strictly between `from` and `to`.
    let started_between = |from: f64, to: f64| {
        starts
            .partition_point(|&t| t < to)
            .saturating_sub(starts.partition_point(|&t| t <= from))
    };
    let mut holding = 0usize;
    let mut free = std::collections::HashSet::new();
    for (at, kind, i) in events {
        match kind {
            0 => holding = holding.saturating_sub(1),
            1 => holding += 1,
            _ => {
                let ahead = started_between(at, rows[i].2.unwrap_or(f64::INFINITY));
                if holding + ahead < capacity {
                    free.insert(rows[i].0);
                }
            }
        }
    }
    free
}

/// Probe syncs per protocol in [`sync_cost`]: the median of 21 keeps a pass or an agent's own
/// sync landing on one of them out of the figure.
const SYNC_SAMPLES: usize = 21;

/// What one agent sync costs ([`sync_cost`]): median milliseconds, request and answer bytes,
/// of a sync of the previous protocol (whole list, whole state) and of a delta sync.
struct SyncCost {
    full_ms: f64,
    full_request: usize,
    full_answer: usize,
    delta_ms: f64,
    delta_request: usize,
    delta_answer: usize,
}

impl std::fmt::Display for SyncCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "whole state {:.1} ms (request {} bytes, answer {}), delta {:.1} ms (request {} bytes, answer {})",
            self.full_ms,
            self.full_request,
            self.full_answer,
            self.delta_ms,
            self.delta_request,
            self.delta_answer
        )
    }
}

/// Times `samples` agent syncs of `session` over `nodes` (no waiting) of each protocol, as
/// the agent's own syncs are once its processes are acknowledged: the previous protocol lists
/// every process the server records running there (a sync that leaves one out tells the
/// server it is gone) and gets the whole desired state; a delta sync (`since` = the current
/// version, nothing new) lists none and carries their count and digest instead
/// (docs/agent-protocol.md, "Running-set digest").
async fn sync_cost(
    pool: &sqlx::PgPool,
    http: &reqwest::Client,
    (base, token): (&str, &str),
    session: &str,
    nodes: &[i64],
    samples: usize,
) -> anyhow::Result<SyncCost> {
    let url = format!("{base}/api/v1/agent/sync");
    let reports: Vec<serde_json::Value> = nodes
        .iter()
        .map(|n| serde_json::json!({"node": n}))
        .collect();
    let running: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT run_id, attempt, node_id FROM run_placements WHERE node_id = ANY($1) AND proc_state = 'running'",
    )
    .bind(nodes)
    .fetch_all(pool)
    .await?;
    let runs: Vec<serde_json::Value> = running
        .iter()
        .map(|(r, a, n)| serde_json::json!({"run": r, "attempt": a, "node": n, "state": "running"}))
        .collect();
    let keys: Vec<crate::agent::RunKey> = running
        .iter()
        .map(|&(run, attempt, node)| crate::agent::RunKey {
            run,
            attempt: attempt.into(),
            node,
        })
        .collect();
    let (count, digest) = crate::agent::running_digest(&keys);
    let once = |since: Option<i64>| {
        let body = match since {
            None => {
                serde_json::json!({"session": session, "wait_s": 0, "nodes": reports, "runs": runs})
            }
            Some(v) => serde_json::json!({"session": session, "wait_s": 0, "nodes": reports,
                "runs": [], "since": v, "running_count": count, "running_digest": digest}),
        };
        let body = serde_json::to_vec(&body).expect("JSON");
        let (http, url) = (http.clone(), url.clone());
        async move {
            let sent = body.len();
            let t = Instant::now();
            let res = http
                .post(&url)
                .bearer_auth(token)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await?;
            let status = res.status();
            let text = res.text().await?;
            let took = t.elapsed();
            if status.as_u16() != 200 {
                bail!("a probe sync answered {status}: {text}");
            }
            let answer: serde_json::Value = serde_json::from_str(&text)?;
            Ok::<_, anyhow::Error>((took, sent, text.len(), answer["version"].as_i64()))
        }
    };
    let (_, _, _, version) = once(Some(0)).await?;
    let version = version.context("a delta answer without a version")?;
    let (mut full, mut delta) = (Vec::new(), Vec::new());
    let (mut full_bytes, mut delta_bytes) = ((0, 0), (0, 0));
    for _ in 0..samples {
        let (t, sent, got, _) = once(None).await?;
        full.push(t);
        full_bytes = (sent, got);
        let (t, sent, got, _) = once(Some(version)).await?;
        delta.push(t);
        delta_bytes = (sent, got);
    }
    full.sort();
    delta.sort();
    Ok(SyncCost {
        full_ms: ms(quantile(&full, 0.5)),
        full_request: full_bytes.0,
        full_answer: full_bytes.1,
        delta_ms: ms(quantile(&delta, 0.5)),
        delta_request: delta_bytes.0,
        delta_answer: delta_bytes.1,
    })
}

/// One agent's session and its nodes' ids, and how many assignments those nodes hold.
async fn probe_session(pool: &sqlx::PgPool) -> anyhow::Result<(String, Vec<i64>, i64)> {
    let (session, nodes): (String, Vec<i64>) = sqlx::query_as(
        "SELECT agent_session, array_agg(id ORDER BY id) FROM nodes WHERE agent_session IS NOT NULL \
         GROUP BY agent_session ORDER BY agent_session LIMIT 1",
    )
    .fetch_one(pool)
    .await?;
    let held: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM run_placements WHERE node_id = ANY($1) AND proc_state <> 'exited'",
    )
    .bind(&nodes)
    .fetch_one(pool)
    .await?;
    Ok((session, nodes, held))
}

async fn submit_runs(plan: RunPlan, options: PgConnectOptions) -> anyhow::Result<()> {
    let pool = crate::db::pool_options(40).connect_with(options).await?;
    crate::db::migrate(&pool).await?;
    crate::demo::load(&pool).await?;
    let researcher: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-researcher'")
        .fetch_one(&pool)
        .await?;
    let token = crate::auth::tokens::create(&pool, None, researcher, "bench").await?;
    // Agent i serves its share of the nodes, named bench{i}-1, bench{i}-2, ...
    let mut shares = Vec::with_capacity(plan.agents);
    for i in 0..plan.agents {
        let count = plan.nodes / plan.agents + usize::from(i < plan.nodes % plan.agents);
        let name = format!("bench{i}");
        let names = crate::agent::node_names(&name, count as u32);
        crate::db::inventory::declare_nodes(&pool, None, "local", &names, "H100", "8").await?;
        shares.push((name, count));
    }
    let agent_token = crate::runs::agents::create_token(&pool, "local").await?;
    let state = AppState::new(pool.clone(), Site::from_env()?);
    let metrics = state.metrics.clone();
    crate::ledger::roll_over(&pool, jiff::Timestamp::now(), &state.site).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::serve(listener, state, async {
        let _ = stop_rx.await;
    }));
    let logs = std::env::temp_dir().join(format!("tranche-bench-agent-{}", std::process::id()));
    let mut agents = Vec::with_capacity(plan.agents);
    for (name, count) in &shares {
        agents.push(
            tokio::process::Command::new(std::env::current_exe()?)
                .args([
                    "agent", "--server", &base, "--gpus", "8xH100", "--name", name,
                ])
                .args(["--nodes", &count.to_string()])
                .arg("--log-dir")
                .arg(logs.join(name))
                .arg("--state-dir")
                .arg(logs.join(format!("{name}-state")))
                .env("TRANCHE_AGENT_TOKEN", &agent_token)
                .env(
                    "RUST_LOG",
                    std::env::var("TRANCHE_BENCH_AGENT_LOG").unwrap_or_else(|_| "warn".into()),
                )
                .kill_on_drop(true)
                .spawn()
                .context("cannot start an agent")?,
        );
    }
    // Setup, not measurement: wait for the agents to register their nodes.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let live: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM nodes n JOIN clusters c ON c.id = n.cluster_id WHERE c.name = 'local' AND n.agent_session IS NOT NULL AND n.name LIKE 'bench%'",
        )
        .fetch_one(&pool)
        .await?;
        if live as usize >= plan.nodes {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "the agents registered {live} of {} nodes in 120 s",
                plan.nodes
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(plan.clients)
        .build()?;
    // What a sync costs while the nodes hold no assignment yet.
    let (session, probe_nodes, _) = probe_session(&pool).await?;
    let empty_cost = sync_cost(
        &pool,
        &http,
        (&base, &agent_token),
        &session,
        &probe_nodes,
        SYNC_SAMPLES,
    )
    .await?;
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
    let passes_before = metrics.recent_passes().len();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..plan.clients {
        let count = plan.runs / plan.clients + usize::from(c < plan.runs % plan.clients);
        let (http, url, token) = (http.clone(), url.clone(), token.clone());
        let accepted = accepted.clone();
        let body = serde_json::json!({
            "project": if c % 2 == 0 { "fm-pretrain-7b" } else { "fm-pretrain-70b" },
            "cluster": "local", "gpu_model": "H100", "gpus": plan.gpus,
            "min_runtime_s": 60, "time_limit_s": 3600, "resumable": true, "command": plan.command,
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
    let mut latencies = Vec::with_capacity(plan.runs);
    for t in tasks {
        latencies.extend(t.await??);
    }
    let wall = started.elapsed();
    latencies.sort();
    // Setup again: wait until the watcher saw every run that can start start (all of them,
    // but at most the GPUs' worth of runs that never end within the wait).
    let capacity = plan.nodes * 8 / plan.gpus as usize;
    let expected = if plan.command == "sleep 600" {
        plan.runs.min(capacity)
    } else {
        plan.runs
    };
    let deadline = Instant::now() + Duration::from_secs(plan.settle_s);
    let waiting = loop {
        let waiting = expected.saturating_sub(
            seen.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .len(),
        );
        if waiting == 0 || Instant::now() > deadline {
            break waiting;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let passes_during: Vec<f64> = metrics.recent_passes()[passes_before..].to_vec();
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
    // Runs whose GPUs were free when they arrived, from the server's instants (the bench's
    // runs only: the demo's few dozen are not counted).
    let ids: Vec<i64> = accepted.keys().copied().collect();
    let instants: Vec<(i64, f64, Option<f64>, Option<f64>)> = sqlx::query_as(
        "SELECT r.id, extract(epoch FROM r.submitted_at)::FLOAT8, \
                (SELECT extract(epoch FROM min(e.at))::FLOAT8 FROM run_events e WHERE e.run_id = r.id AND e.kind = 'started'), \
                extract(epoch FROM r.ended_at)::FLOAT8 FROM runs r WHERE r.id = ANY($1) ORDER BY r.id",
    )
    .bind(&ids)
    .fetch_all(&pool)
    .await?;
    let free = free_on_arrival(&instants, capacity);
    let delays_of = |only_free: bool| {
        let mut d: Vec<Duration> = accepted
            .iter()
            .filter(|(id, _)| !only_free || free.contains(id))
            .filter_map(|(id, at)| seen.get(id).map(|s| s.saturating_duration_since(*at)))
            .collect();
        d.sort();
        d
    };
    let delays = delays_of(false);
    let free_delays = delays_of(true);
    // What a sync costs now that the nodes hold assignments, once their agent has reported
    // every process it was given started (or the settle time is up, as with churn): measured
    // right after the decisions, the probe shared the cores with the agent starting a
    // thousand processes and reporting them, and timed that instead.
    let settled = Instant::now() + Duration::from_secs(plan.settle_s.min(60));
    while Instant::now() < settled {
        let starting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM run_placements WHERE node_id = ANY($1) AND proc_state = 'assigned'",
        )
        .bind(&probe_nodes)
        .fetch_one(&pool)
        .await?;
        if starting == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, _, held) = probe_session(&pool).await?;
    let loaded_cost = sync_cost(
        &pool,
        &http,
        (&base, &agent_token),
        &session,
        &probe_nodes,
        SYNC_SAMPLES,
    )
    .await?;
    // Site scale: runs waiting behind the full cluster, and the passes over them.
    let mut site_passes = None;
    if plan.waiting > 0 {
        sqlx::query(
            "INSERT INTO runs (project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, time_limit_s, \
                               priority, resumable, command, state, queued_at) \
             SELECT r.project_id, r.cluster_id, r.gpu_model_id, r.submitted_by, r.gpus, r.min_runtime_s, r.time_limit_s, \
                    r.priority, r.resumable, r.command, 'queued', now() \
             FROM (SELECT * FROM runs ORDER BY id LIMIT 2) r, generate_series(1, $1) \
             ORDER BY random() LIMIT $2",
        )
        .bind((plan.waiting as i64 + 1) / 2 + 1)
        .bind(plan.waiting as i64)
        .execute(&pool)
        .await?;
        // Planner statistics as a site's autovacuum keeps them: without them, the scratch
        // database's tables (empty when its passes began) are scanned whole each pass.
        sqlx::query("ANALYZE").execute(&pool).await?;
        sqlx::query("SELECT pg_notify($1, '')")
            .bind(crate::runs::WAKE_CHANNEL)
            .execute(&pool)
            .await?;
        let before = metrics.recent_passes().len();
        tokio::time::sleep(Duration::from_secs(plan.observe_s)).await;
        let passes = metrics.recent_passes();
        // The first pass reads the 50,000 new runs; the others only what changed.
        site_passes = Some((
            passes.get(before).copied(),
            passes.get(before + 1..).unwrap_or_default().to_vec(),
        ));
    }
    let (succeeded, failed): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'failed') FROM runs",
    )
    .fetch_one(&pool)
    .await?;
    for agent in &mut agents {
        let _ = agent.start_kill();
    }
    for agent in &mut agents {
        let _ = agent.wait().await;
    }
    // Their runs' processes outlive them (a restarted agent would adopt them): stop them, or
    // the next benchmark shares the machine with thousands of them.
    let mut left = 0;
    for (name, count) in &shares {
        let nodes = crate::agent::node_names(name, *count as u32);
        left += crate::agent::kill_recorded(&logs.join(format!("{name}-state")), &nodes);
    }
    // CPU time of the agents and the run processes they waited for (a killed agent's
    // children still running are not counted), and of this process: the server and the
    // clients.
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
        "workload {}: {} submissions of {}-GPU runs (`{}`) from {} clients to {} GPUs on {} nodes served by {} agent processes",
        plan.name,
        plan.runs,
        plan.gpus,
        plan.command,
        plan.clients,
        plan.nodes * 8,
        plan.nodes,
        plan.agents
    );
    println!(
        "submissions: {:.2} s = {:.0} per second; latency p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        wall.as_secs_f64(),
        plan.runs as f64 / wall.as_secs_f64(),
        ms(quantile(&latencies, 0.5)),
        ms(quantile(&latencies, 0.9)),
        ms(quantile(&latencies, 0.99)),
        ms(*latencies.last().unwrap_or(&Duration::ZERO)),
    );
    let figures = |d: &[Duration]| {
        format!(
            "{} runs: p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
            d.len(),
            ms(quantile(d, 0.5)),
            ms(quantile(d, 0.9)),
            ms(quantile(d, 0.99)),
            ms(*d.last().unwrap_or(&Duration::ZERO)),
        )
    };
    println!(
        "decision delay, submission -> start decision seen stored (polled every 20 ms): all started {}{}",
        figures(&delays),
        if waiting > 0 {
            format!(
                "; {waiting} runs expected to start still without a start after {} s",
                plan.settle_s
            )
        } else {
            String::new()
        }
    );
    println!(
        "decision delay of the runs whose GPUs were free when they arrived: {}",
        figures(&free_delays)
    );
    println!(
        "live passes during the submissions and decisions: {}",
        pass_figures(&passes_during)
    );
    if let Some((first, rest)) = &site_passes {
        println!(
            "live passes with {} more runs waiting, over {} s: the first (reads them all) {:.1} ms; the others {}",
            plan.waiting,
            plan.observe_s,
            first.map_or(0.0, |s| s * 1000.0),
            pass_figures(rest)
        );
    }
    println!(
        "agent sync of {} nodes holding no assignment: {empty_cost}",
        probe_nodes.len()
    );
    println!(
        "agent sync of {} nodes holding {held} assignments: {loaded_cost}",
        probe_nodes.len()
    );
    println!(
        "finished so far: {succeeded} succeeded, {failed} failed; {left} runs' processes still running, stopped"
    );
    let per_run = if succeeded + failed > 0 {
        format!(
            " ({:.2} ms per finished run)",
            agent_cpu_s * 1000.0 / (succeeded + failed) as f64
        )
    } else {
        String::new()
    };
    println!(
        "CPU over {:.1} s of wall time on {} cores: agents and their run processes {agent_cpu_s:.1} s{per_run}, this process (server, clients, setup) {own_cpu_s:.1} s; PostgreSQL not counted",
        wall_total.as_secs_f64(),
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
    );
    Ok(())
}

#[cfg(test)]
mod run_tests {
    use super::free_on_arrival;

    #[test]
    fn runs_find_free_gpus_only_while_more_are_free_than_start_ahead_of_them() {
        // Capacity 2. Runs 1 and 2 arrive at 0 and start at 1; run 3 arrives at 2 (both GPUs
        // held); run 1 ends at 3; run 4 arrives at 4 (one GPU free) but run 3 takes it at 5;
        // run 5 arrives at 6 (2 and 3 hold both GPUs); 2 ends at 7; run 6 arrives at 8 (one
        // free; nothing starts after).
        let rows = vec![
            (1, 0.0, Some(1.0), Some(3.0)),
            (2, 0.0, Some(1.0), Some(7.0)),
            (3, 2.0, Some(5.0), None),
            (4, 4.0, None, None),
            (5, 6.0, None, None),
            (6, 8.0, None, None),
        ];
        let mut free: Vec<i64> = free_on_arrival(&rows, 2).into_iter().collect();
        free.sort_unstable();
        assert_eq!(free, vec![1, 2, 6]);
        // Capacity 3: run 3 arrives with two held, run 4 with one held and one start ahead
        // (3's), run 5 with two held, run 6 with one.
        let mut free: Vec<i64> = free_on_arrival(&rows, 3).into_iter().collect();
        free.sort_unstable();
        assert_eq!(free, vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_run_overtaken_by_fair_share_was_not_given_a_free_gpu() {
        // Capacity 2, run 1 holds one GPU. Run 2 (project A) arrives at 1; run 3 (project B,
        // further below its share) arrives at 1.5 and takes the free GPU at 2; run 2 starts
        // at 10, after run 1 ends at 9.5. Run 3 found a free GPU; run 2's was taken ahead of
        // it: its 9 s are the policy's, not the service's delay.
        let rows = vec![
            (1, 0.0, Some(0.0), Some(9.5)),
            (2, 1.0, Some(10.0), None),
            (3, 1.5, Some(2.0), None),
        ];
        let mut free: Vec<i64> = free_on_arrival(&rows, 2).into_iter().collect();
        free.sort_unstable();
        assert_eq!(free, vec![1, 3]);
    }
}
