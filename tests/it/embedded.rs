//! The embedded default: a private PostgreSQL cluster in the data directory, initialised on
//! first start, stopped when the process that started it closes, and reused with its data.

use tranche::config::DatabaseSource;
use tranche::db::Database;

#[tokio::test]
async fn embedded_cluster_keeps_its_data_across_restarts() {
    let dir = std::env::temp_dir().join(format!("tranche-embedded-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("first start initialises the cluster");
    assert!(dir.join("postgres/PG_VERSION").exists());
    // Its socket is its owner's alone (found by a new-user check: any local user could
    // connect as the superuser, trust authentication and a 0777 socket).
    let socket = std::fs::read_dir(dir.join("run"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with(".s.PGSQL.")
                    && !n.to_string_lossy().ends_with(".lock")
            })
        })
        .expect("the socket");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    let pw = tranche::db::users::first_run(&db.pool).await.unwrap();
    assert!(pw.is_some());
    // A second opener joins the running server instead of starting another.
    let joined = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("join");
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&joined.pool)
        .await
        .unwrap();
    assert_eq!(users, 1);
    joined.close().await.unwrap();
    let still: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(still, 1, "closing the joiner leaves the server running");
    db.close().await.unwrap();
    assert!(
        !dir.join("postgres/postmaster.pid").exists(),
        "the starter stops the server"
    );
    // Start again: the data is still there and first run does not repeat.
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("restart");
    assert!(
        tranche::db::users::first_run(&db.pool)
            .await
            .unwrap()
            .is_none()
    );
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM users")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(names, ["admin"]);
    db.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The postmaster's pid from `postmaster.pid`, when the file exists.
fn postmaster_pid(dir: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(dir.join("postgres/postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Whether any live process is a PostgreSQL server of this data directory: its command
/// line names the directory and it is not a zombie.
fn postgres_processes(pgdata: &std::path::Path) -> Vec<i32> {
    let needle = pgdata.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            cmdline.contains("postgres") && cmdline.contains(&needle) && !zombie
        })
        .collect()
}

/// A `serve` of `dir` on a port of its own choosing (`--listen 127.0.0.1:0`, so no other test
/// can take the port between our choosing it and the server binding it), with the port it
/// says it serves on; its log goes to `dir.log`.
struct Serve {
    child: std::process::Child,
    port: u16,
}

fn start_serve(dir: &std::path::Path) -> Serve {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tranche"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir)
        .env_remove("DATABASE_URL")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(
            std::fs::File::options()
                .create(true)
                .append(true)
                .open(dir.with_extension("log"))
                .unwrap(),
        )
        .spawn()
        .expect("start tranche serve");
    // Read to the end, so that nothing it prints later meets a closed pipe.
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let (said, port) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("Tranche is serving on http://") {
                let _ = said.send(addr.rsplit_once(':').and_then(|(_, p)| p.parse().ok()));
            }
        }
    });
    let port = port
        .recv_timeout(std::time::Duration::from_secs(120))
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("serve never said its address: {}", log_tail(dir)));
    Serve { child, port }
}

/// The last lines of the serves' log of `dir`, for a failure's message.
fn log_tail(dir: &std::path::Path) -> String {
    let log = std::fs::read_to_string(dir.with_extension("log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

async fn wait_healthy(port: u16) {
    let http = reqwest::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let ok = http
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ok {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "serve never became healthy"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Issue 11 item 8: after `kill -9` of `serve`, the next `serve` takes the orphaned
/// PostgreSQL over and stops it on Ctrl-C; no PostgreSQL process is left for the data dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_after_a_crash_owns_the_orphaned_postgres_and_stops_it() {
    let dir = std::env::temp_dir().join(format!("tranche-orphan-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let mut first = start_serve(&dir);
    wait_healthy(first.port).await;
    let postmaster = postmaster_pid(&dir).expect("the first serve started PostgreSQL");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(
        std::path::Path::new(&format!("/proc/{postmaster}")).exists(),
        "SIGKILL leaves the server running (nothing can stop it then)"
    );

    let second = start_serve(&dir);
    wait_healthy(second.port).await;
    assert_eq!(
        postmaster_pid(&dir),
        Some(postmaster),
        "joined, not restarted"
    );
    interrupt(second, &dir).await;
    let left = postgres_processes(&dir.join("postgres"));
    assert!(left.is_empty(), "PostgreSQL processes left: {left:?}");
    assert!(!dir.join("postgres/postmaster.pid").exists());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(dir.with_extension("log"));
}

/// The embedded PostgreSQL killed under a running `serve` (an OOM kill, an operator's mistake):
/// `/healthz` says so within its own few seconds instead of hanging on the pool, and `serve`
/// starts PostgreSQL again by itself, so the portal recovers with no one restarting it (it
/// answered every request after 30 s with a 500 until restarted by hand).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_starts_its_embedded_postgres_again_when_it_dies() {
    let dir = std::env::temp_dir().join(format!("tranche-pgdeath-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let serve = start_serve(&dir);
    let port = serve.port;
    wait_healthy(port).await;
    let postmaster = postmaster_pid(&dir).expect("serve started PostgreSQL");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(postmaster),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Until it is back, the health check answers within its timeout (3 s), never hangs.
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(8))
        .build()
        .unwrap();
    let answered = http
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await
        .expect("the health check answers while the database is down");
    let first = answered.status();
    // Back by itself, as a new server process (the killed one's backends may still answer
    // for a moment, so the health check alone does not tell).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while postmaster_pid(&dir).is_none_or(|p| p == postmaster) {
        assert!(
            std::time::Instant::now() < deadline,
            "PostgreSQL was not started again ({first})"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    wait_healthy(port).await;
    // `serve` says so once the new server has started (its pid file is written before).
    let log = loop {
        let log = std::fs::read_to_string(dir.with_extension("log")).unwrap_or_default();
        if log.contains("started it again") {
            break log;
        }
        assert!(std::time::Instant::now() < deadline, "{log}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(!log.contains("panicked"), "{log}");
    interrupt(serve, &dir).await;
    let left = postgres_processes(&dir.join("postgres"));
    assert!(left.is_empty(), "PostgreSQL processes left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(dir.with_extension("log"));
}

/// Sends SIGINT to a `serve` of `dir` and waits for it to exit cleanly.
async fn interrupt(serve: Serve, dir: &std::path::Path) {
    let mut child = serve.child;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(
        status.success(),
        "serve exits cleanly on SIGINT: {status}\n{}",
        log_tail(dir)
    );
}

/// A restart where the new `serve` opens the database before the old one has exited (a
/// supervisor starting the new process while the old one shuts down): the old one leaves
/// PostgreSQL running for the new one, whichever stops first, and the last one stops it.
/// "Kept" is told by the postmaster's pid: had PostgreSQL stopped, the serve left would have
/// started a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_serves_keep_postgres_until_the_last_one_stops() {
    let dir = std::env::temp_dir().join(format!("tranche-overlap-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let a = start_serve(&dir);
    wait_healthy(a.port).await;
    let postmaster = postmaster_pid(&dir).expect("the first serve started PostgreSQL");
    let b = start_serve(&dir);
    wait_healthy(b.port).await;
    // The old one stops first: the new one keeps its database.
    interrupt(a, &dir).await;
    wait_healthy(b.port).await;
    assert_eq!(
        postmaster_pid(&dir),
        Some(postmaster),
        "the newer serve's PostgreSQL was kept, not restarted: {}",
        log_tail(&dir)
    );
    // The newer one stops first: the older one keeps its database.
    let c = start_serve(&dir);
    wait_healthy(c.port).await;
    interrupt(c, &dir).await;
    wait_healthy(b.port).await;
    assert_eq!(
        postmaster_pid(&dir),
        Some(postmaster),
        "the older serve's PostgreSQL was kept, not restarted: {}",
        log_tail(&dir)
    );
    // The last one stops the server.
    interrupt(b, &dir).await;
    let left = postgres_processes(&dir.join("postgres"));
    assert!(left.is_empty(), "PostgreSQL processes left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(dir.with_extension("log"));
}

/// The watch that starts a stopped server again (`serve` runs it every few seconds) starts
/// nothing once its process began to leave: found by CI, where the overlapping-serves test
/// left a PostgreSQL running because the last `serve`'s watch, waiting for the lock while its
/// shutdown stopped the server, started it again.
#[tokio::test]
async fn the_watch_starts_nothing_once_its_process_leaves() {
    use tranche::db::embedded::{Claim, Embedded};
    let dir = std::env::temp_dir().join(format!("tranche-leave-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir2 = dir.clone();
    let left = tokio::task::spawn_blocking(move || {
        let served = Embedded::open(&dir2, Claim::TakeOver).expect("start");
        let watch = served.clone();
        served.stop_if_owned().expect("stop");
        watch.restart_if_stopped().expect("watch")
    })
    .await
    .unwrap();
    assert!(!left, "the watch started the server again");
    let left = postgres_processes(&dir.join("postgres"));
    assert!(left.is_empty(), "PostgreSQL processes left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tranche admin backup` writes the embedded database to a new private file and
/// `tranche admin restore` puts it back in one transaction: a user made after the backup is
/// gone, and the server each command started is stopped again.
#[tokio::test]
async fn a_backup_restores_the_database_as_it_was() {
    let dir = std::env::temp_dir().join(format!("tranche-backup-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("first start");
    tranche::db::users::first_run(&db.pool).await.unwrap();
    db.close().await.unwrap();
    let tranche = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tranche"))
            .args(args)
            .arg("--data-dir")
            .arg(&dir)
            .env_remove("DATABASE_URL")
            .output()
            .expect("run tranche");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let backup = dir.join("backup.dump");
    let file = backup.to_str().unwrap();
    let (ok, said) = tranche(&["admin", "backup", "--out", file]);
    assert!(ok, "{said}");
    assert!(said.contains("secret.key"), "{said}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&backup).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // An existing file is not overwritten.
    let (ok, said) = tranche(&["admin", "backup", "--out", file]);
    assert!(!ok && said.contains("exists"), "{said}");
    let (ok, said) = tranche(&[
        "admin",
        "create-user",
        "--name",
        "later",
        "--role",
        "researcher",
    ]);
    assert!(ok, "{said}");
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("join");
    let later_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'later'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    db.close().await.unwrap();
    let (ok, said) = tranche(&["admin", "restore", "--from", file]);
    assert!(ok, "{said}");
    assert!(
        !dir.join("postgres/postmaster.pid").exists(),
        "the commands stop the server they started"
    );
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("restart");
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM users ORDER BY name")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(names, ["admin"]);
    // Agents' order versions from before the restore get the whole state at their next sync.
    let before: Option<String> =
        sqlx::query_scalar("SELECT value FROM site_flags WHERE name = 'orders_full_before'")
            .fetch_optional(&db.pool)
            .await
            .unwrap();
    assert!(before.is_some_and(|v| v.parse::<i64>().is_ok_and(|v| v > 0)));
    // No id goes back: the next user is not given the id the one made after the backup had
    // (found by a new-user check: a restored server gave a new run the id of one its agent had
    // already run, and the agent, which never runs a (run, attempt, node) twice, never started
    // it).
    let (ok, said) = tranche(&[
        "admin",
        "create-user",
        "--name",
        "after",
        "--role",
        "researcher",
    ]);
    assert!(ok, "{said}");
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM users ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[1], later_id + 1, "{ids:?}");
    db.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plain `kill` (SIGTERM) of the embedded PostgreSQL is a smart shutdown: it refuses new
/// connections while the pool's sessions live on, forever. The watch restarts it (found by a
/// new-user check: requests half failed, and `/healthz` said ok).
#[tokio::test]
async fn a_smart_shutdown_of_the_embedded_server_is_restarted() {
    let dir = std::env::temp_dir().join(format!("tranche-smart-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("first start");
    // A session the shutdown waits for.
    let mut held = db.pool.acquire().await.unwrap();
    sqlx::query("SELECT 1").execute(&mut *held).await.unwrap();
    let pid_file = dir.join("postgres/postmaster.pid");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    crate::live::until(
        std::time::Duration::from_secs(10),
        "the smart shutdown",
        || async {
            std::fs::read_to_string(&pid_file)
                .is_ok_and(|t| t.lines().nth(7).is_some_and(|l| l.trim() == "stopping"))
        },
    )
    .await;
    let embedded = db.embedded().expect("embedded").clone();
    let restarted = tokio::task::spawn_blocking(move || embedded.restart_if_stopped())
        .await
        .unwrap()
        .unwrap();
    assert!(restarted);
    drop(held);
    // The pool's sessions died with the restart; new ones are accepted.
    crate::live::until(
        std::time::Duration::from_secs(10),
        "a new session",
        || async { sqlx::query("SELECT 1").execute(&db.pool).await.is_ok() },
    )
    .await;
    db.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
