//! `tranche bench tree`: latency of the program tree page for the demo organisation under
//! concurrent clients, measured against a scratch database so the site's data is untouched.

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
    let (server, embedded): (PgConnectOptions, Option<Embedded>) =
        match crate::config::database_source() {
            DatabaseSource::Url(url) => (
                url.expose()
                    .parse()
                    .context("DATABASE_URL is not a valid PostgreSQL URL")?,
                None,
            ),
            DatabaseSource::Embedded => {
                let dir = args.db.data_dir.clone();
                let e =
                    tokio::task::spawn_blocking(move || Embedded::ensure_running(&dir)).await??;
                (e.connect_options("postgres"), Some(e))
            }
        };
    let name = format!("tranche_bench_{}", std::process::id());
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
    let result = run(args, server.clone().database(&name)).await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    if let Some(e) = embedded {
        tokio::task::spawn_blocking(move || e.stop_if_started_here()).await??;
    }
    result
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
