//! The embedded default: a private PostgreSQL cluster in `DATA_DIR/postgres`, initialised on
//! first use, listening only on a Unix socket, run as the `postgres` user when we are root.
//!
//! `tranche serve` starts it and stops it on shutdown; other subcommands join it while it runs
//! and otherwise start it for their own duration.
//!
//! Ownership: the processes that keep the server running are listed in
//! `DATA_DIR/postgres.owner`, one line each (pid, start time, and whether it is a `serve`):
//! the process that started the server, and every `serve` that opened it. A process that
//! leaves removes its line, and stops the server only when no live process is left on the
//! list. So a `serve` started while the previous one is still shutting down keeps the server
//! (the old one leaves it to the new one), and one that finds the server orphaned (its owner
//! was killed with SIGKILL) takes it over, so the server never outlives the last `serve`.
//! Reading and changing the list, starting and stopping happen under an exclusive lock on
//! `DATA_DIR/postgres.lock`, so a start cannot interleave with a stop.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};
use sqlx::postgres::PgConnectOptions;

/// The port number used in the socket's file name (`.s.PGSQL.5432`); no TCP port is opened.
const PORT: u16 = 5432;
/// The database Tranche uses inside the cluster.
pub const DATABASE: &str = "tranche";

/// A cluster in a data directory, with the binaries that manage it.
#[derive(Debug, Clone)]
pub struct Embedded {
    bindir: PathBuf,
    pgdata: PathBuf,
    socket_dir: PathBuf,
    log_file: PathBuf,
    as_postgres_user: bool,
    owner_file: PathBuf,
    /// True when this process owns the server (started it, or took it over) and so must stop
    /// it, unless another process took it over since.
    owned: bool,
    /// Set once this process began to leave the server ([`Embedded::stop_if_owned`]), shared
    /// by its clones: the watch of `serve` then starts nothing again (it restarted the server
    /// that `serve`'s shutdown had just stopped, leaving it running after `serve` exited).
    leaving: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// One process keeping a running server: a line `PID START_TIME KIND` of `postgres.owner`.
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    pid: i32,
    started: u64,
    serve: bool,
}

impl Owner {
    fn me(serve: bool) -> Self {
        let (pid, started) = crate::process::me();
        Owner {
            pid,
            started,
            serve,
        }
    }

    fn is(&self, other: &Owner) -> bool {
        self.pid == other.pid && self.started == other.started
    }

    /// The live owners listed in `path` (none when it is missing or unreadable).
    fn read_live(path: &Path) -> Vec<Self> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                Some(Owner {
                    pid: fields.next()?.parse().ok()?,
                    started: fields.next()?.parse().ok()?,
                    serve: fields.next()? == "serve",
                })
            })
            .filter(|o| crate::process::is_alive(o.pid, o.started))
            .collect()
    }

    fn write_all(owners: &[Self], path: &Path) -> anyhow::Result<()> {
        let tmp = path.with_extension("owner.tmp");
        let text: String = owners
            .iter()
            .map(|o| {
                let kind = if o.serve { "serve" } else { "command" };
                format!("{} {} {kind}\n", o.pid, o.started)
            })
            .collect();
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

/// How [`Embedded::open`] treats a server that is already running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Join it; stop only a server this process started (and only when no `serve` is left).
    Join,
    /// As `tranche serve`: keep the running server, listed as an owner, and stop it on exit
    /// when no other live owner is left.
    TakeOver,
}

impl Embedded {
    /// Finds the binaries, initialises the cluster if needed and makes sure the server runs.
    ///
    /// # Errors
    /// No PostgreSQL binaries found (the message says how to install them or set
    /// `DATABASE_URL`), or `initdb`/`pg_ctl` failing (the message includes their log).
    pub fn ensure_running(data_dir: &Path) -> anyhow::Result<Self> {
        Self::open(data_dir, Claim::Join)
    }

    /// As [`Embedded::ensure_running`], treating a running server as `claim` says.
    ///
    /// # Errors
    /// As [`Embedded::ensure_running`]; the owner file cannot be written.
    pub fn open(data_dir: &Path, claim: Claim) -> anyhow::Result<Self> {
        let bindir = find_bindir()?;
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create data directory {}", data_dir.display()))?;
        let data_dir = data_dir
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", data_dir.display()))?;
        let as_postgres_user = nix::unistd::geteuid().is_root();
        let mut socket_dir = data_dir.join("run");
        // A Unix socket path must fit in 107 bytes; deep data directories use /tmp instead.
        if socket_dir.as_os_str().len() > 80 {
            let digest = hex::encode(&Sha256::digest(data_dir.as_os_str().as_encoded_bytes())[..8]);
            socket_dir = std::env::temp_dir().join(format!("tranche-{digest}"));
        }
        let mut this = Self {
            bindir,
            pgdata: data_dir.join("postgres"),
            log_file: data_dir.join("postgres.log"),
            socket_dir,
            as_postgres_user,
            owner_file: data_dir.join("postgres.owner"),
            owned: false,
            leaving: std::sync::Arc::default(),
        };
        if as_postgres_user {
            this.make_reachable(&data_dir)?;
        }
        std::fs::create_dir_all(&this.socket_dir)?;
        this.give_to_postgres(&this.socket_dir.clone())?;
        let _lock = this.lock()?;
        if !this.pgdata.join("PG_VERSION").exists() {
            this.init()?;
        }
        let serve = claim == Claim::TakeOver;
        let mut owners = Owner::read_live(&this.owner_file);
        if !this.is_running()? {
            this.start()?;
        } else if !serve {
            return Ok(this);
        } else if !owners.iter().any(|o| o.serve) {
            tracing::info!(
                pgdata = %this.pgdata.display(),
                "taking over the running embedded PostgreSQL; it stops when this serve stops"
            );
        }
        owners.push(Owner::me(serve));
        Owner::write_all(&owners, &this.owner_file)?;
        this.owned = true;
        Ok(this)
    }

    /// An exclusive lock on `DATA_DIR/postgres.lock`, held while the owner list is read and
    /// changed and the server started or stopped; released when dropped.
    fn lock(&self) -> anyhow::Result<std::fs::File> {
        let path = self.owner_file.with_extension("lock");
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        file.lock()
            .with_context(|| format!("cannot lock {}", path.display()))?;
        Ok(file)
    }

    /// Connection options for the Tranche database over the socket.
    pub fn connect_options(&self, database: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .socket(&self.socket_dir)
            .port(PORT)
            .username("postgres")
            .database(database)
    }

    /// A `DATABASE_URL` for `database` on this cluster (Unix socket, user `postgres`), for
    /// processes started against it.
    pub fn database_url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost:{PORT}/{database}?host={}",
            self.socket_dir.display()
        )
    }

    /// Whether this process is listed as an owner of the server (started it, or opened it as
    /// `serve`), and so stops it when done unless another live owner is left.
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// `program` of the server's installation: beside the binaries found, else beside the
    /// `postgres` they link to (`/usr/local/bin/postgres` linking into
    /// `/usr/lib/postgresql/15/bin`), else on `PATH`.
    fn tool(&self, program: &str) -> PathBuf {
        let here = self.bindir.join(program);
        if here.exists() {
            return here;
        }
        std::fs::canonicalize(self.bindir.join("postgres"))
            .ok()
            .and_then(|p| p.parent().map(|d| d.join(program)))
            .filter(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from(program))
    }

    /// Whether a live `tranche serve` keeps this server running.
    pub fn served(&self) -> bool {
        Owner::read_live(&self.owner_file).iter().any(|o| o.serve)
    }

    /// Writes a backup of `database` to `out`: `pg_dump`'s custom format (for `pg_restore`),
    /// one consistent snapshot even while `serve` writes.
    ///
    /// # Errors
    /// `pg_dump` cannot run or fails (its message).
    pub fn dump(&self, database: &str, out: std::fs::File) -> anyhow::Result<()> {
        let mut c = self.tool_on(database, "pg_dump", &["--format=custom"]);
        self.run_tool(c.stdout(out), "pg_dump")
    }

    /// Replaces `database`'s contents with the backup `from` ([`Embedded::dump`]'s format), in
    /// one transaction: on any error nothing changes. No sequence goes back: each continues
    /// from the later of its restored value and the value it had before, so ids issued since
    /// the backup (runs, attempts' order versions) are never issued again, and agents that
    /// kept running never take a new run for one they already ran (nor share its log file).
    ///
    /// # Errors
    /// `pg_restore` cannot run or fails (its message); the sequences cannot be read or set.
    pub fn restore(&self, database: &str, from: std::fs::File) -> anyhow::Result<()> {
        let before = self.query(
            database,
            "SELECT format('%I.%I', schemaname, sequencename) || ' ' || coalesce(last_value, 0) FROM pg_sequences",
        )?;
        let flags = [
            "--clean",
            "--if-exists",
            "--single-transaction",
            "--exit-on-error",
        ];
        let mut c = self.tool_on(database, "pg_restore", &flags);
        self.run_tool(c.stdin(from), "pg_restore")?;
        let mut raise = String::new();
        for line in before.lines() {
            let Some((name, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<i64>() else {
                continue;
            };
            if value > 0 {
                // Only sequences the backup has too; quoted by format('%I') above.
                raise.push_str(&format!(
                    "SELECT setval(s.oid, {value}) FROM pg_class s WHERE s.relkind = 'S' AND s.oid = to_regclass('{}') \
                     AND {value} > (SELECT coalesce(last_value, 0) FROM pg_sequences WHERE format('%I.%I', schemaname, sequencename) = '{}');\n",
                    name.replace('\'', "''"),
                    name.replace('\'', "''"),
                ));
            }
        }
        // Agents kept running across the restore: their next sync gets the whole desired
        // state, not a delta that would never carry the restored orders (older than their
        // `since`): executor::orders_since.
        raise.push_str(
            "INSERT INTO site_flags (name, value) VALUES ('orders_full_before', nextval('order_versions')::TEXT) \
             ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value;\n",
        );
        self.query(database, &raise)?;
        Ok(())
    }

    /// Runs `sql` with `psql` on `database` and returns its unaligned, tuples-only output.
    fn query(&self, database: &str, sql: &str) -> anyhow::Result<String> {
        let done = self
            .tool_on(
                database,
                "psql",
                &["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
            )
            .stderr(std::process::Stdio::piped())
            .output()
            .context("cannot run psql")?;
        if !done.status.success() {
            bail!(
                "psql failed: {}",
                String::from_utf8_lossy(&done.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&done.stdout).into_owned())
    }

    /// `program` with `flags`, connected to `database` on this server's socket.
    fn tool_on(&self, database: &str, program: &str, flags: &[&str]) -> Command {
        let mut c = self.command(program);
        c.args(flags).arg("-h").arg(&self.socket_dir).args([
            "-p",
            &PORT.to_string(),
            "-U",
            "postgres",
            "-d",
            database,
        ]);
        c
    }

    /// Runs `c` to its end; its error output is the error when it fails.
    fn run_tool(&self, c: &mut Command, name: &str) -> anyhow::Result<()> {
        let done = c
            .stderr(std::process::Stdio::piped())
            .output()
            .with_context(|| format!("cannot run {name}"))?;
        if !done.status.success() {
            bail!(
                "{name} failed: {}",
                String::from_utf8_lossy(&done.stderr).trim()
            );
        }
        Ok(())
    }

    fn command(&self, program: &str) -> Command {
        let path = self.tool(program);
        if self.as_postgres_user {
            let mut c = Command::new("runuser");
            c.arg("-u").arg("postgres").arg("--").arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    /// As root, the `postgres` user must be able to pass through the data directory.
    fn make_reachable(&self, data_dir: &Path) -> anyhow::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let mut perms = std::fs::metadata(data_dir)?.permissions();
        if perms.mode() & 0o001 == 0 {
            perms.set_mode(perms.mode() | 0o711);
            std::fs::set_permissions(data_dir, perms)?;
        }
        let ok = Command::new("runuser")
            .args(["-u", "postgres", "--", "test", "-x"])
            .arg(data_dir)
            .status()
            .context("cannot run runuser to start PostgreSQL as the postgres user")?
            .success();
        if !ok {
            bail!(
                "the postgres user cannot reach {} (a parent directory is closed to it). Running as root, \
                 Tranche runs PostgreSQL as `postgres`: choose a --data-dir it can reach, such as /var/lib/tranche, \
                 or set DATABASE_URL",
                data_dir.display()
            );
        }
        Ok(())
    }

    fn give_to_postgres(&self, dir: &Path) -> anyhow::Result<()> {
        if self.as_postgres_user {
            let user = nix::unistd::User::from_name("postgres")?
                .context("running as root needs a `postgres` system user to run PostgreSQL (install the postgresql package, or run as a normal user)")?;
            nix::unistd::chown(dir, Some(user.uid), Some(user.gid))
                .with_context(|| format!("cannot give {} to the postgres user", dir.display()))?;
        }
        Ok(())
    }

    fn init(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.pgdata)?;
        self.give_to_postgres(&self.pgdata)?;
        let out = self
            .command("initdb")
            .arg("-D")
            .arg(&self.pgdata)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ])
            .output()
            .context("cannot run initdb")?;
        if !out.status.success() {
            bail!(
                "initdb failed for {}: {}{}",
                self.pgdata.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Only the Unix socket: nothing listens on TCP, so no port can clash.
        let conf = format!(
            "\n# Written by tranche\nlisten_addresses = ''\nport = {PORT}\nunix_socket_directories = '{}'\nfsync = on\nmax_connections = 200\n",
            self.socket_dir.display()
        );
        let conf_path = self.pgdata.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path)?;
        text.push_str(&conf);
        std::fs::write(&conf_path, text)?;
        Ok(())
    }

    fn is_running(&self) -> anyhow::Result<bool> {
        let status = self
            .command("pg_ctl")
            .arg("status")
            .arg("-D")
            .arg(&self.pgdata)
            .output()
            .context("cannot run pg_ctl")?
            .status;
        Ok(status.success())
    }

    fn start(&self) -> anyhow::Result<()> {
        if !self.log_file.exists() {
            std::fs::write(&self.log_file, "")?;
        }
        self.give_to_postgres(&self.log_file)?;
        let out = self
            .command("pg_ctl")
            .arg("start")
            .arg("-w")
            .arg("-D")
            .arg(&self.pgdata)
            .arg("-l")
            .arg(&self.log_file)
            .arg("-o")
            // Trust authentication is safe only because no one but the cluster's owner (and
            // root) may connect: the socket is the owner's alone, not the default 0777.
            .arg(format!(
                "-k {} -c unix_socket_permissions=0700",
                self.socket_dir.display()
            ))
            .output()
            .context("cannot run pg_ctl start")?;
        if !out.status.success() {
            let log = std::fs::read_to_string(&self.log_file).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            bail!(
                "PostgreSQL did not start in {}: {}\nlast lines of {}:\n{}",
                self.pgdata.display(),
                String::from_utf8_lossy(&out.stderr),
                self.log_file.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        Ok(())
    }

    /// Starts the server again when it is not running (killed, or crashed) while this process
    /// owns it: what `tranche serve` checks every few seconds, so that the portal recovers by
    /// itself instead of answering every request with a database error until restarted.
    /// Returns whether it had to start it.
    ///
    /// # Errors
    /// `pg_ctl` failing (its message and the log's last lines).
    pub fn restart_if_stopped(&self) -> anyhow::Result<bool> {
        if !self.owned {
            return Ok(false);
        }
        let _lock = self.lock()?;
        if self.leaving.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(false);
        }
        if self.is_running()? {
            // Running but shutting down: a plain `kill` (SIGTERM) puts PostgreSQL in
            // smart shutdown, where it serves the sessions it has and refuses new ones until
            // they all end, which a pool's never do (found by a new-user check: requests
            // half failed for minutes). Stopped fast and started again.
            if !self.shutting_down() {
                return Ok(false);
            }
            tracing::warn!(
                "the embedded PostgreSQL refuses connections (shutting down): restarting it"
            );
            let _ = self
                .command("pg_ctl")
                .args(["stop", "-m", "fast", "-w", "-D"])
                .arg(&self.pgdata)
                .output();
        }
        self.start()?;
        Ok(true)
    }

    /// Whether the running server has been shutting down for two seconds: the status line of
    /// `postmaster.pid` (its eighth) says `stopping` now and two seconds later (a fast
    /// shutdown ends within that; a smart one waits for every session to end). Starting and
    /// recovering servers say otherwise and are left alone.
    fn shutting_down(&self) -> bool {
        let stopping = || {
            std::fs::read_to_string(self.pgdata.join("postmaster.pid"))
                .ok()
                .and_then(|t| t.lines().nth(7).map(|l| l.trim() == "stopping"))
                .unwrap_or(false)
        };
        stopping() && {
            std::thread::sleep(std::time::Duration::from_secs(2));
            stopping()
        }
    }

    /// Removes this process from the owners and stops the server with `pg_ctl stop -m fast`
    /// when no live owner is left (another `serve` keeps it running otherwise).
    ///
    /// # Errors
    /// The owner file cannot be written, or `pg_ctl` failing.
    pub fn stop_if_owned(&self) -> anyhow::Result<()> {
        if !self.owned {
            return Ok(());
        }
        self.leaving
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _lock = self.lock()?;
        let me = Owner::me(false);
        let mut owners = Owner::read_live(&self.owner_file);
        let listed = owners.iter().any(|o| o.is(&me));
        owners.retain(|o| !o.is(&me));
        if !owners.is_empty() {
            tracing::info!(
                owners = ?owners.iter().map(|o| o.pid).collect::<Vec<_>>(),
                "leaving the embedded PostgreSQL running for the processes still using it"
            );
            return Owner::write_all(&owners, &self.owner_file);
        }
        if !listed {
            // The list was removed by hand: nobody else claims the server either.
            tracing::warn!("this process was not on the embedded PostgreSQL's owner list");
        }
        let out = self
            .command("pg_ctl")
            .arg("stop")
            .args(["-m", "fast", "-w", "-D"])
            .arg(&self.pgdata)
            .output()
            .context("cannot run pg_ctl stop")?;
        if !out.status.success() {
            bail!(
                "pg_ctl stop failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let _ = std::fs::remove_file(&self.owner_file);
        Ok(())
    }
}

/// Finds a directory holding `initdb`, `pg_ctl` and `postgres`: on `PATH`, via
/// `pg_config --bindir`, or the newest `/usr/lib/postgresql/*/bin`.
///
/// # Errors
/// None found; the message says how to install them or set `DATABASE_URL`.
pub fn find_bindir() -> anyhow::Result<PathBuf> {
    let complete = |dir: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|b| dir.join(b).is_file())
    };
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if complete(&dir) {
                return Ok(dir);
            }
        }
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && complete(&dir) {
            return Ok(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            complete(&bin).then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.pop() {
        return Ok(dir);
    }
    bail!(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found on PATH, via pg_config or under \
         /usr/lib/postgresql/*/bin. Install them (Debian/Ubuntu: `apt-get install postgresql`; \
         macOS: `brew install postgresql`) or point DATABASE_URL at a PostgreSQL server."
    )
}
