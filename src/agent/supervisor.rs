//! Process supervision: [`Supervisor`] starts `sh -c COMMAND` in its own process group, stops a
//! group with SIGTERM then SIGKILL after a grace period, and reports each exit as an [`Exit`];
//! [`ProcessRecords`] keep what it started across agent restarts.

use super::*;

// ---------------------------------------------------------------------------------------------
// Process supervision
// ---------------------------------------------------------------------------------------------

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It exited with this code.
    Code(i32),
    /// A signal (number) killed it.
    Signal(i32),
}

impl From<std::process::ExitStatus> for Outcome {
    fn from(status: std::process::ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Outcome::Code(code),
            (None, Some(sig)) => Outcome::Signal(sig),
            (None, None) => Outcome::Code(-1),
        }
    }
}

/// A process that ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    /// Its identity.
    pub key: RunKey,
    /// How it ended.
    pub outcome: Outcome,
    /// When the agent saw it end: the report says how long ago, so a server that was down
    /// meanwhile ends and charges the run at its real end (docs/agent-protocol.md section 2).
    pub at: Instant,
    /// Why its command never ran, when the node is at fault (its state or log directory
    /// cannot be written, no process can be started), not the run: the server requeues the
    /// run and drains the node (docs/agent-protocol.md section 2).
    pub fault: Option<String>,
}

impl Exit {
    /// A process that ended now.
    #[must_use]
    pub fn new(key: RunKey, outcome: Outcome) -> Self {
        Self {
            key,
            outcome,
            at: Instant::now(),
            fault: None,
        }
    }

    /// A process whose command never ran because of its node: `why`, on one line of at most
    /// [`FAULT_MAX_CHARS`] characters, control characters replaced by spaces (the server
    /// refuses anything else).
    #[must_use]
    pub fn fault(key: RunKey, outcome: Outcome, why: &str) -> Self {
        let mut text: String = why
            .chars()
            .map(|c| {
                if crate::domain::breaks_one_line(c) {
                    ' '
                } else {
                    c
                }
            })
            .collect::<String>()
            .trim()
            .chars()
            .take(FAULT_MAX_CHARS)
            .collect();
        if text.is_empty() {
            text = "the node could not start the process".to_string();
        }
        Self {
            fault: Some(text),
            ..Self::new(key, outcome)
        }
    }

    /// The `exited` report for a sync.
    #[must_use]
    pub fn report(&self) -> RunReport {
        let (exit_code, signal) = match self.outcome {
            Outcome::Code(c) => (Some(c), None),
            Outcome::Signal(s) => (None, Some(s)),
        };
        RunReport {
            run: self.key.run,
            attempt: self.key.attempt,
            node: self.key.node,
            state: RunState::Exited,
            exit_code,
            signal,
            exited_s_ago: Some(i64::try_from(self.at.elapsed().as_secs()).unwrap_or(i64::MAX)),
            fault: self.fault.clone(),
        }
    }
}

/// The longest fault text an agent sends (characters); the server refuses longer ones.
pub const FAULT_MAX_CHARS: usize = 500;

pub(super) struct Supervised {
    gpus: Vec<u32>,
    stopping: Option<Duration>,
    stop_tx: mpsc::UnboundedSender<Duration>,
}

/// Owns the agent's child processes: one task per child waits on it, and carries out stops.
pub struct Supervisor {
    log_dir: PathBuf,
    /// Most bytes a process's log keeps (0: no bound), [`cap_log`].
    log_max: u64,
    records: Option<Arc<ProcessRecords>>,
    /// Start each process as its submitter's Unix account, whose uid is in this range
    /// ([`spawn_child`]).
    run_as_submitter: Option<std::ops::RangeInclusive<u32>>,
    procs: HashMap<RunKey, Supervised>,
    exits_tx: mpsc::UnboundedSender<Exit>,
    exits_rx: mpsc::UnboundedReceiver<Exit>,
    spawning: Arc<Semaphore>,
    /// How many processes are still being started (counted by [`Starting`]).
    starting: Arc<tokio::sync::watch::Sender<usize>>,
    starting_rx: tokio::sync::watch::Receiver<usize>,
}

/// One process being started: counted from [`Supervisor::start`] until its command may run or
/// its start failed (its exit then already sent), whichever way its task ends.
struct Starting(Arc<tokio::sync::watch::Sender<usize>>);

impl Starting {
    fn new(count: &Arc<tokio::sync::watch::Sender<usize>>) -> Self {
        count.send_modify(|n| *n += 1);
        Starting(count.clone())
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl Supervisor {
    /// A supervisor writing each process's output under `log_dir` (created on first start).
    #[must_use]
    pub fn new(log_dir: PathBuf) -> Self {
        Self::with_records(log_dir, None)
    }

    /// As [`Supervisor::new`], recording each process's start and end in `records`.
    #[must_use]
    pub fn with_records(log_dir: PathBuf, records: Option<Arc<ProcessRecords>>) -> Self {
        let (exits_tx, exits_rx) = mpsc::unbounded_channel();
        let (starting, starting_rx) = tokio::sync::watch::channel(0);
        Supervisor {
            log_dir,
            log_max: 0,
            records,
            run_as_submitter: None,
            procs: HashMap::new(),
            exits_tx,
            exits_rx,
            spawning: Arc::new(Semaphore::new(SPAWN_CONCURRENCY)),
            starting: Arc::new(starting),
            starting_rx,
        }
    }

    /// Bounds each process's log to `bytes` (0: no bound): past it the agent keeps the newest
    /// half ([`cap_log`]).
    #[must_use]
    pub fn with_log_max(mut self, bytes: u64) -> Self {
        self.log_max = bytes;
        self
    }

    /// Starts each process as its submitter's Unix account, whose uid must be in `uids`
    /// ([`spawn_child`]); the agent must run as root. `None`: as the agent's user.
    #[must_use]
    pub fn with_run_as_submitter(mut self, uids: Option<std::ops::RangeInclusive<u32>>) -> Self {
        self.run_as_submitter = uids;
        self
    }

    /// The output file of a process: `LOGDIR/run-RUN-attempt-ATTEMPT-NODE.log`.
    #[must_use]
    pub fn log_path(&self, key: RunKey, node_name: &str) -> PathBuf {
        self.log_dir.join(format!(
            "run-{}-attempt-{}-{node_name}.log",
            key.run, key.attempt
        ))
    }

    /// Starts `sh -c COMMAND` for the assignment in a new process group, output appended to
    /// its log file, and returns that file's path. The process is spawned in the background
    /// (at most [`SPAWN_CONCURRENCY`] at a time, off the caller's thread). Must be called
    /// within a Tokio runtime.
    ///
    /// A process that cannot be started (e.g. a missing workdir) is reported as an [`Exit`]
    /// with [`SPAWN_FAILED_EXIT_CODE`], the reason written to its log file.
    ///
    /// # Errors
    /// The assignment is already running here.
    pub fn start(&mut self, a: &Assignment, node_name: &str) -> anyhow::Result<PathBuf> {
        let key = a.key();
        anyhow::ensure!(!self.procs.contains_key(&key), "{key} is already running");
        let log_path = self.log_path(key, node_name);
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let starting = Starting::new(&self.starting);
        tokio::spawn(launch(
            starting,
            a.clone(),
            node_name.to_string(),
            log_path.clone(),
            self.spawning.clone(),
            self.records.clone(),
            stop_rx,
            self.exits_tx.clone(),
            self.log_max,
            self.run_as_submitter.clone(),
        ));
        self.procs.insert(
            key,
            Supervised {
                gpus: a.gpus.clone(),
                stopping: None,
                stop_tx,
            },
        );
        Ok(log_path)
    }

    /// Supervises a process an earlier agent of `node_name` started and left running
    /// ([`ProcessRecords::take_over`]): stops as for the processes this agent starts, its end
    /// reported as [`adopted_end`] finds it. Its records stay with it.
    pub(super) fn adopt(&mut self, node_name: &str, r: &Recorded) {
        let Some(run) = r.run.clone() else {
            return;
        };
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let records = self.records.clone();
        let node_name = node_name.to_string();
        let (pid, started) = (r.pid, r.started);
        // The log next to its exit file: where the earlier agent wrote it, whatever this
        // agent's --log-dir.
        let log = (self.log_max > 0).then(|| (run.exit_file.with_extension("log"), self.log_max));
        let exit_file = run.exit_file.clone();
        tokio::spawn(supervise(
            adopted_end(pid, started, exit_file.clone()),
            Pid::from_raw(pid),
            run.key,
            stop_rx,
            self.exits_tx.clone(),
            log,
            move |outcome| {
                if let Some(r) = records {
                    r.ended(&node_name, pid, started, outcome);
                }
                let _ = std::fs::remove_file(&exit_file);
            },
        ));
        self.procs.insert(
            run.key,
            Supervised {
                gpus: run.gpus,
                stopping: None,
                stop_tx,
            },
        );
    }

    /// Stops a process: SIGTERM to its group now, SIGKILL after `grace` if still alive. A
    /// second call can only shorten the grace. Returns false for an unknown (or exited) key.
    pub fn stop(&mut self, key: RunKey, grace: Duration) -> bool {
        let Some(p) = self.procs.get_mut(&key) else {
            return false;
        };
        if p.stopping.is_some_and(|current| current <= grace) {
            return true;
        }
        p.stopping = Some(grace);
        let _ = p.stop_tx.send(grace);
        true
    }

    /// Stops every live process with `grace`.
    pub fn stop_all(&mut self, grace: Duration) {
        let keys: Vec<RunKey> = self.procs.keys().copied().collect();
        for key in keys {
            self.stop(key, grace);
        }
    }

    /// The live processes, for [`reconcile`].
    #[must_use]
    pub fn local(&self) -> Vec<LocalProcess> {
        let mut out: Vec<LocalProcess> = self
            .procs
            .iter()
            .map(|(key, p)| LocalProcess {
                key: *key,
                gpus: p.gpus.clone(),
                stopping: p.stopping,
            })
            .collect();
        out.sort_by_key(|p| p.key);
        out
    }

    /// Waits, at most `most`, until every process [`Supervisor::start`]ed has been started or
    /// has failed to start (its [`Exit`] then already waits to be taken): a sync made after it
    /// reports as running only processes whose commands run, so a run whose start failed is
    /// never told to its owner as running first (docs/agent-protocol.md section 2). Past
    /// `most` (a burst of starts), those still starting are reported running, as before.
    pub async fn starts_settled(&mut self, most: Duration) {
        let _ = tokio::time::timeout(most, self.starting_rx.wait_for(|n| *n == 0)).await;
    }

    /// Whether no process is alive.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }

    /// Waits for the next exit and forgets that process. Cancel-safe. Never returns while no
    /// process is alive.
    pub async fn next_exit(&mut self) -> Exit {
        // The supervisor holds a sender itself, so the channel never closes.
        let exit = self
            .exits_rx
            .recv()
            .await
            .expect("the supervisor keeps a sender");
        self.forget(exit.key);
        exit
    }

    /// An exit that already happened, if any, without waiting.
    pub fn try_exit(&mut self) -> Option<Exit> {
        let exit = self.exits_rx.try_recv().ok()?;
        self.forget(exit.key);
        Some(exit)
    }

    fn forget(&mut self, key: RunKey) {
        self.procs.remove(&key);
    }
}

/// The environment variable that carries a process's ownership secret: a random value the
/// agent records next to the process's pid and start time, and checks before it signals a
/// process it did not start in its own life.
pub const OWNER_ENV: &str = "TRANCHE_AGENT_PROCESS";

/// Files the agent creates (process records with their secrets, run logs that may hold a
/// run's secrets in its output) are readable by the agent's user only (0600).
fn private(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt as _;
    options.mode(0o600)
}

/// Opens `path` to append a note of the agent's (a start that failed), creating it (0600) when
/// missing: never through a symbolic link, and only a regular file with one name (a link planted
/// in a log directory the submitter may write must not make the agent, as root, write elsewhere).
fn append_note(path: &Path, note: &str) {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    let opened = private(std::fs::OpenOptions::new().create(true).append(true))
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path);
    if let Ok(mut f) = opened
        && f.metadata().is_ok_and(|m| m.is_file() && m.nlink() == 1)
    {
        let _ = writeln!(f, "{note}");
    }
}

/// Creates `path` afresh (0600, for writing; appending with `append`): whatever was at that
/// name (a file, or a link a submitter planted in a log directory it may write) is removed
/// first, and the file is created exclusively, so the agent never opens, truncates or gives
/// away another file.
fn create_fresh(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    private(
        std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .append(append),
    )
    .open(path)
}

/// The agent's record of the processes it starts, in its state directory: one file per node,
/// `node-NODE.processes`, with a line per start (`start PID START_TIME SECRET BOOT_ID run=RUN
/// attempt=ATTEMPT node=NODE_ID gpus=G,G exit=EXIT_FILE`: the machine's boot,
/// [`crate::process::boot_id`], and the run it is, older records having neither) and per end
/// (`end PID START_TIME code=N|signal=N at=UNIX_SECONDS`). A later agent for the same nodes and
/// state directory reads it to adopt or stop what an earlier one left running
/// ([`ProcessRecords::take_over`]): only
/// a process that is still the one recorded (same pid and start time, see [`crate::process`])
/// and leads its own process group, recorded in this boot (pid and start time then name one
/// process) or, for a record without a boot id, carrying the recorded secret in its environment
/// ([`OWNER_ENV`]). The boot decides where it can: a run's command may replace its own
/// environment (`exec env -i ...`) and would otherwise outlive the agent on GPUs the server
/// gives to others.
/// A file grows by two short lines per process and starts afresh at each agent's first
/// registration, holding then only the processes that agent adopted.
#[derive(Debug)]
pub struct ProcessRecords {
    dir: PathBuf,
}

/// The file of the state directory that keeps the agent's session.
const SESSION_FILE: &str = "session";

/// The file of the state directory whose lock its live agent holds.
const LOCK_FILE: &str = "lock";

/// One recorded start that has no recorded end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Recorded {
    pub(super) pid: i32,
    started: u64,
    secret: String,
    boot: Option<String>,
    /// The run it is (records written before adoption have none, and are never adopted).
    pub(super) run: Option<RecordedRun>,
}

/// The run a recorded process is, so that an agent restarted while it runs can adopt it
/// ([`ProcessRecords::take_over`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RecordedRun {
    pub(super) key: RunKey,
    pub(super) gpus: Vec<u32>,
    /// Where its shell writes the command's exit status ([`spawn_child`]).
    pub(super) exit_file: PathBuf,
}

/// A recorded process that ended, with how and when: its exit may not have reached the server
/// before the agent that saw it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Ended {
    pub(super) key: RunKey,
    pub(super) outcome: Outcome,
    pub(super) at: std::time::SystemTime,
}

/// What [`ProcessRecords::take_over`] found of an earlier agent's processes.
#[derive(Debug, Default)]
pub(super) struct Leftovers {
    /// Processes still running on kept nodes, as (node name, record): the new agent supervises
    /// them ([`Supervisor::adopt`]).
    pub(super) adopted: Vec<(String, Recorded)>,
    /// Processes of kept nodes that ended (recorded by the earlier agent, or found gone with
    /// their exit status written).
    pub(super) ended: Vec<Ended>,
    /// Process groups killed.
    pub(super) killed: usize,
    /// Groups of these nodes that another agent's records hold, as (pid, node), left running.
    pub(super) foreign: Vec<(i32, String)>,
}

/// An outcome as a record field: `code=N` or `signal=N`.
fn outcome_field(outcome: Outcome) -> String {
    match outcome {
        Outcome::Code(c) => format!("code={c}"),
        Outcome::Signal(s) => format!("signal={s}"),
    }
}

/// The command's exit status as its shell wrote it to `path` ([`spawn_child`]): a status past
/// 128 within the signals the shell raises again is that signal. `None` when the file holds
/// none (the shell was killed, or the process is from before exit files).
pub(super) fn written_outcome(path: &Path) -> Option<Outcome> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // The submitter owns the file: never through a link, never a FIFO that blocks, and only
    // what a status takes is read.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(16).read_to_string(&mut text).ok()?;
    let status: i32 = text.trim().parse().ok()?;
    Some(if (129..=128 + REPORTED_SIGNALS).contains(&status) {
        Outcome::Signal(status - 128)
    } else {
        Outcome::Code(status)
    })
}

/// Signals (1 to this) that end a command whose shell then ends by the same signal, so that
/// its agent sees how the command ended ([`spawn_child`]).
const REPORTED_SIGNALS: i32 = 15;

impl ProcessRecords {
    /// Records kept under `dir` (created on first write).
    #[must_use]
    pub fn new(dir: PathBuf) -> Self {
        ProcessRecords { dir }
    }

    /// Checks that the directory can hold the records: creates it and writes, then removes, a
    /// probe file. An agent that could not record what it starts could not stop it after a
    /// restart, and the restarted agent would start the same attempt a second time on the
    /// same GPUs.
    ///
    /// # Errors
    /// The directory cannot be created or written.
    pub fn check_writable(&self) -> anyhow::Result<()> {
        use anyhow::Context as _;
        use std::io::Write;
        let probe = self.dir.join(format!(".probe-{}", std::process::id()));
        std::fs::create_dir_all(&self.dir)
            .and_then(|()| {
                let mut f = std::fs::File::create(&probe)?;
                f.write_all(b"probe\n")?;
                f.sync_all()
            })
            .and_then(|()| std::fs::remove_file(&probe))
            .with_context(|| {
                format!(
                    "the state directory {} cannot be written: the agent records there the processes it starts, to stop them after a restart (--state-dir)",
                    self.dir.display()
                )
            })
    }

    /// The file of `node`: its name with any character outside `A-Za-z0-9._-` replaced.
    fn path(&self, node: &str) -> PathBuf {
        let safe: String = node
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!("node-{safe}.processes"))
    }

    /// Appends `line` to `node`'s file; `create` makes the directory and file when missing
    /// (a start), else a missing file is left so (an end with no start left to close).
    fn append(&self, node: &str, line: &str, create: bool) -> std::io::Result<()> {
        use std::io::Write;
        let created = if create {
            std::fs::create_dir_all(&self.dir)
        } else {
            Ok(())
        };
        let written = created.and_then(|()| {
            private(std::fs::OpenOptions::new().create(create).append(true))
                .open(self.path(node))?
                .write_all(format!("{line}\n").as_bytes())
        });
        if !create && matches!(&written, Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
            return Ok(());
        }
        if let Err(e) = &written {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot record a process in the state directory");
        }
        written
    }

    /// Records that process group leader `pid`, started at `started` (clock ticks since boot),
    /// runs on `node` with `secret` in its environment, as `run` when given (then a restarted
    /// agent may adopt it).
    ///
    /// # Errors
    /// The record cannot be written (a full disk, a directory made read-only): the process
    /// must not run, since a later agent could neither prove nor stop it.
    pub(super) fn started(
        &self,
        node: &str,
        pid: i32,
        started: u64,
        secret: &str,
        run: Option<&RecordedRun>,
    ) -> std::io::Result<()> {
        let boot = crate::process::boot_id().unwrap_or_default();
        self.append(node, &start_line(pid, started, secret, &boot, run), true)
    }

    /// Takes the state directory's lock (file `lock`, `flock` exclusive, released by the
    /// kernel when the agent ends however it ends): `None` while another live agent holds
    /// it (two agents given one state directory). Only the holder shows and keeps the
    /// session ([`ProcessRecords::last_session`]): a concurrent agent must never take the
    /// nodes of a live one over.
    pub fn lock(&self) -> Option<nix::fcntl::Flock<std::fs::File>> {
        std::fs::create_dir_all(&self.dir).ok()?;
        let file = private(
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true),
        )
        .open(self.dir.join(LOCK_FILE))
        .ok()?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).ok()
    }

    /// The session this state directory's agent last held (file `session`), if any.
    pub fn last_session(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join(SESSION_FILE))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && s.len() <= 200)
    }

    /// Keeps `session` as the one this state directory's agent holds (mode 0600): an agent
    /// restarted after a crash shows it to take its nodes over at once.
    pub fn keep_session(&self, session: &str) {
        use std::io::Write;
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            private(
                std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(true),
            )
            .open(self.dir.join(SESSION_FILE))?
            .write_all(session.as_bytes())
        });
        if let Err(e) = written {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot keep the session in the state directory");
        }
    }

    /// Records that the process recorded by [`ProcessRecords::started`] ended, with how
    /// (`end PID START_TIME code=N|signal=N at=UNIX_SECONDS`).
    pub(super) fn ended(&self, node: &str, pid: i32, started: u64, outcome: Outcome) {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let _ = self.append(
            node,
            &format!("end {pid} {started} {} at={at}", outcome_field(outcome)),
            false,
        );
    }

    /// The recorded starts of `node` without a recorded end, and the recorded ends of runs.
    fn read(&self, node: &str) -> (Vec<Recorded>, Vec<Ended>) {
        let Ok(text) = std::fs::read_to_string(self.path(node)) else {
            return (Vec::new(), Vec::new());
        };
        let mut open: Vec<Recorded> = Vec::new();
        let mut ended = Vec::new();
        for line in text.lines() {
            // A start's run part comes last: `run=R attempt=A node=N gpus=G exit=PATH`, the path
            // being the rest of the line.
            let (head, run) = match line.find(" run=") {
                Some(i) => (&line[..i], parse_run(&line[i + 1..])),
                None => (line, None),
            };
            let fields: Vec<&str> = head.split_whitespace().collect();
            let pid = fields.get(1).and_then(|f| f.parse::<i32>().ok());
            let started = fields.get(2).and_then(|f| f.parse::<u64>().ok());
            match (fields.first().copied(), pid, started, fields.get(3)) {
                (Some("start"), Some(pid), Some(started), Some(secret)) => open.push(Recorded {
                    pid,
                    started,
                    secret: (*secret).to_string(),
                    boot: fields.get(4).map(|b| (*b).to_string()),
                    run,
                }),
                (Some("end"), Some(pid), Some(started), _) => {
                    let field = |name: &str| {
                        fields[3..]
                            .iter()
                            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                    };
                    let outcome = match (field("code"), field("signal")) {
                        (Some(c), _) => c.parse().ok().map(Outcome::Code),
                        (None, Some(s)) => s.parse().ok().map(Outcome::Signal),
                        (None, None) => None,
                    };
                    let at = field("at")
                        .and_then(|a| a.parse::<u64>().ok())
                        .map(|a| std::time::UNIX_EPOCH + Duration::from_secs(a));
                    if let Some(i) = open
                        .iter()
                        .position(|r| r.pid == pid && r.started == started)
                    {
                        let r = open.remove(i);
                        if let (Some(run), Some(outcome), Some(at)) = (r.run, outcome, at) {
                            ended.push(Ended {
                                key: run.key,
                                outcome,
                                at,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        (open, ended)
    }

    /// Kills the process groups an earlier agent recorded for `nodes` and left running (it
    /// was killed, or lost its session): their runs were requeued or ended by the server, and
    /// their GPUs must be free before anything new starts. [`ProcessRecords::take_over`] with
    /// no node kept. Returns how many groups were killed, and the groups of `nodes` it found
    /// and could not prove, as (pid, node), left running.
    pub fn kill_leftovers(&self, nodes: &[String]) -> (usize, Vec<(i32, String)>) {
        let found = self.take_over(nodes, &HashMap::new());
        (found.killed, found.foreign)
    }

    /// Takes over what an earlier agent recorded for `nodes`. On a node in `kept` (by name, with
    /// its id: the server kept its runs, the same agent restarted within its session,
    /// docs/agent-protocol.md section 1) the processes of its runs (of that node id) still running that are proven to be the recorded ones and
    /// name their run are adopted, and the ends the earlier agent recorded, or that a process
    /// gone meanwhile wrote to its exit file, are returned to be told to the server. Every other
    /// proven process is killed: its run was requeued or ended by the server, and its GPUs must
    /// be free before anything new starts. Only processes proven to be the recorded ones are
    /// signalled or adopted; the records of `nodes` then hold the adopted ones alone. Call only
    /// once the server accepted the registration of `nodes`, and before anything starts on
    /// them. Groups of `nodes` it finds and cannot prove ([`agent_groups`]: started by an agent
    /// whose records are elsewhere) are returned and left running.
    pub(super) fn take_over(&self, nodes: &[String], kept: &HashMap<String, i64>) -> Leftovers {
        let mut found = Leftovers::default();
        let mut killed = Vec::new();
        // Groups whose recorded leader is gone (this boot's records: the pid names the group).
        let mut leaderless: HashMap<i32, String> = HashMap::new();
        let boot = crate::process::boot_id();
        for node in nodes {
            // Only a run of this very node (its id now) is adopted or told.
            let kept_id = kept.get(node).copied();
            let ours = |run: &RecordedRun| Some(run.key.node) == kept_id;
            let (open, ended) = self.read(node);
            let mut lines = String::new();
            for r in open {
                if !crate::process::is_alive(r.pid, r.started) {
                    // No process has the pid (one that has it now is another's: the kernel
                    // gives no new process the id of a group that still has members).
                    if r.boot.is_some()
                        && r.boot == boot
                        && crate::process::start_time(r.pid).is_none()
                    {
                        leaderless.insert(r.pid, r.secret.clone());
                    }
                    // Ended while no agent watched: its shell wrote how, unless it was killed.
                    if let Some(run) = r.run.as_ref().filter(|run| ours(run))
                        && let Some(outcome) = written_outcome(&run.exit_file)
                    {
                        let at = std::fs::metadata(&run.exit_file)
                            .and_then(|m| m.modified())
                            .unwrap_or_else(|_| std::time::SystemTime::now());
                        found.ended.push(Ended {
                            key: run.key,
                            outcome,
                            at,
                        });
                        let _ = std::fs::remove_file(&run.exit_file);
                    }
                    continue;
                }
                if !proven(&r) {
                    continue;
                }
                if let Some(run) = r.run.as_ref().filter(|run| ours(run)) {
                    tracing::info!(
                        pid = r.pid,
                        %node,
                        run = run.key.run,
                        attempt = run.key.attempt,
                        "adopting a run's process an earlier agent of this node started"
                    );
                    let boot = r.boot.clone().unwrap_or_default();
                    lines.push_str(&start_line(r.pid, r.started, &r.secret, &boot, Some(run)));
                    lines.push('\n');
                    found.adopted.push((node.clone(), r));
                    continue;
                }
                tracing::warn!(
                    pid = r.pid,
                    %node,
                    "killing a run's process group that an earlier agent of this node left running"
                );
                signal_group(Pid::from_raw(r.pid), Signal::SIGKILL);
                if let Some(run) = &r.run {
                    let _ = std::fs::remove_file(&run.exit_file);
                }
                killed.push(r.pid);
            }
            found
                .ended
                .extend(ended.into_iter().filter(|e| Some(e.key.node) == kept_id));
            let path = self.path(node);
            if (path.exists() || !lines.is_empty())
                && let Err(e) = private(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .write(true)
                        .truncate(true),
                )
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, lines.as_bytes()))
            {
                tracing::warn!(path = %path.display(), error = %e, "cannot reset the process records");
            }
        }
        // What a leader killed while no agent watched left in its group (its command's shell
        // and the command) would run on untracked: killed, when it carries the recorded secret.
        for pgid in orphaned_groups(&leaderless) {
            tracing::warn!(
                pgid,
                "killing what is left of a run's process group whose leader ended while no agent watched"
            );
            signal_group(Pid::from_raw(pgid), Signal::SIGKILL);
            killed.push(pgid);
        }
        found.killed = killed.len();
        for (pid, node) in agent_groups(nodes) {
            if !killed.contains(&pid) && !found.adopted.iter().any(|(_, r)| r.pid == pid) {
                tracing::error!(
                    pid,
                    %node,
                    state_dir = %self.dir.display(),
                    "a run's process group of this node, started by an agent whose records are not in this state directory, is still running: it is not stopped (with --gpus auto, nothing starts on its GPUs while it runs); stop it, or restart the agent with that agent's --state-dir"
                );
                found.foreign.push((pid, node));
            }
        }
        found
    }
}

/// The groups of `groups` (process group id -> the secret its recorded leader carried) that
/// still have a member whose environment carries that secret ([`OWNER_ENV`]): one pass over
/// `/proc`.
fn orphaned_groups(groups: &HashMap<i32, String>) -> Vec<i32> {
    if groups.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for pid in crate::process::pids() {
        let Some(pgid) = crate::process::group_of(pid) else {
            continue;
        };
        let Some(secret) = groups.get(&pgid) else {
            continue;
        };
        if out.contains(&pgid) {
            continue;
        }
        let marker = format!("{OWNER_ENV}={secret}").into_bytes();
        if std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == marker.as_slice()))
        {
            out.push(pgid);
        }
    }
    out
}

/// A start record's line (see [`ProcessRecords`]).
fn start_line(
    pid: i32,
    started: u64,
    secret: &str,
    boot: &str,
    run: Option<&RecordedRun>,
) -> String {
    let mut line = format!("start {pid} {started} {secret} {boot}")
        .trim_end()
        .to_string();
    if let Some(run) = run {
        let gpus: Vec<String> = run.gpus.iter().map(u32::to_string).collect();
        line.push_str(&format!(
            " run={} attempt={} node={} gpus={} exit={}",
            run.key.run,
            run.key.attempt,
            run.key.node,
            gpus.join(","),
            run.exit_file.display()
        ));
    }
    line
}

/// The run part of a start record: `run=R attempt=A node=N gpus=G exit=PATH`.
fn parse_run(text: &str) -> Option<RecordedRun> {
    let (fields, exit) = text.split_once(" exit=")?;
    let field = |name: &str| {
        fields
            .split_whitespace()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    let gpus = field("gpus")?
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<u32>, _>>()
        .ok()?;
    Some(RecordedRun {
        key: RunKey {
            run: field("run")?.parse().ok()?,
            attempt: field("attempt")?.parse().ok()?,
            node: field("node")?.parse().ok()?,
        },
        gpus,
        exit_file: PathBuf::from(exit),
    })
}

/// The process groups alive on this machine that an agent started for one of `nodes`: group
/// leaders whose environment names the node (`TRANCHE_NODE`) and carries an agent's secret
/// ([`OWNER_ENV`]). As (pid, node). Not proof of whose they are (another server's agent may
/// name its nodes alike), so they are only reported.
pub(super) fn agent_groups(nodes: &[String]) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for pid in crate::process::pids() {
        if crate::process::group_of(pid) != Some(pid) {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
        let owned = vars
            .iter()
            .any(|v| v.starts_with(format!("{OWNER_ENV}=").as_bytes()));
        let node = vars.iter().find_map(|v| v.strip_prefix(b"TRANCHE_NODE="));
        if let (true, Some(node)) = (owned, node)
            && let Some(name) = nodes.iter().find(|n| n.as_bytes() == node)
        {
            out.push((pid, name.clone()));
        }
    }
    out
}

/// A run's process group that another agent (other records) started on one of this agent's
/// nodes and left running: this agent starts nothing on its GPUs while it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Foreign {
    pub(super) pid: i32,
    pub(super) started: u64,
    pub(super) node: String,
    /// Its `CUDA_VISIBLE_DEVICES`.
    pub(super) gpus: Vec<u32>,
}

impl Foreign {
    /// The group `pid` of `node` as it runs now; `None` once it is gone.
    pub(super) fn read(pid: i32, node: &str) -> Option<Foreign> {
        let started = crate::process::start_time(pid)?;
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let gpus = env
            .split(|b| *b == 0)
            .find_map(|v| v.strip_prefix(b"CUDA_VISIBLE_DEVICES="))
            .map(|v| {
                String::from_utf8_lossy(v)
                    .split(',')
                    .filter_map(|g| g.trim().parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        Some(Foreign {
            pid,
            started,
            node: node.to_string(),
            gpus,
        })
    }

    /// Whether it still runs.
    pub(super) fn alive(&self) -> bool {
        crate::process::is_alive(self.pid, self.started)
    }
}

/// Whether the live process `r.pid` is the recorded one: same start time, leader of its own
/// group, and recorded in this boot or (a record without one) the recorded secret in its
/// environment.
pub(super) fn proven(r: &Recorded) -> bool {
    if !crate::process::is_alive(r.pid, r.started) || crate::process::group_of(r.pid) != Some(r.pid)
    {
        return false;
    }
    if let Some(boot) = &r.boot {
        return crate::process::boot_id().as_ref() == Some(boot);
    }
    let Ok(env) = std::fs::read(format!("/proc/{}/environ", r.pid)) else {
        return false;
    };
    let marker = format!("{OWNER_ENV}={}", r.secret).into_bytes();
    env.split(|b| *b == 0).any(|v| v == marker.as_slice())
}

/// Spawns the assignment's process (off the async threads; the fork and exec wait for the
/// child) and supervises it; a start failure is reported as an exit with
/// [`SPAWN_FAILED_EXIT_CODE`] and explained in the run's log.
#[allow(clippy::too_many_arguments)]
async fn launch(
    starting: Starting,
    a: Assignment,
    node_name: String,
    log_path: PathBuf,
    spawning: Arc<Semaphore>,
    records: Option<Arc<ProcessRecords>>,
    stops: mpsc::UnboundedReceiver<Duration>,
    exits: mpsc::UnboundedSender<Exit>,
    log_max: u64,
    run_as_submitter: Option<std::ops::RangeInclusive<u32>>,
) {
    let key = a.key();
    let gpus = a.gpus.clone();
    let secret = crate::auth::random_hex(16);
    let payload = gate_lines(&a.env);
    let spawned = if payload.is_none() {
        Err(StartFailure::run(anyhow::anyhow!(
            "the run's environment names a variable that is not a shell variable's name"
        )))
    } else {
        let _permit = spawning.acquire_owned().await;
        let log = log_path.clone();
        let node_name = node_name.clone();
        let secret = secret.clone();
        tokio::task::spawn_blocking(move || {
            spawn_child(&a, &node_name, &log, &secret, run_as_submitter.as_ref())
        })
        .await
        .map_err(|e| StartFailure::node(e.into()))
        .and_then(|r| r)
    };
    let (child, gate) = match spawned {
        Ok(spawned) => spawned,
        Err(StartFailure { error: e, node }) => {
            tracing::error!(run = key.run, attempt = key.attempt, node = key.node, node_fault = node, error = %format!("{e:#}"), "cannot start; reporting exit code {SPAWN_FAILED_EXIT_CODE}");
            // The run's log is where its owner looks: say why it never started.
            append_note(&log_path, &format!("tranche agent: {e:#}"));
            let outcome = Outcome::Code(SPAWN_FAILED_EXIT_CODE);
            let _ = exits.send(if node {
                Exit::fault(key, outcome, &format!("{e:#}"))
            } else {
                Exit::new(key, outcome)
            });
            return;
        }
    };
    let Some(pgid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        let outcome = Outcome::Code(SPAWN_FAILED_EXIT_CODE);
        let _ = exits.send(Exit::fault(key, outcome, "the started process has no pid"));
        return;
    };
    // Recorded before anything can signal it; a child that already ended has no start time
    // and nothing to record.
    let mut unrecorded = None;
    let exit_file = exit_path(&log_path);
    let run = RecordedRun {
        key,
        gpus,
        exit_file: exit_file.clone(),
    };
    let recorded = records.as_ref().and_then(|r| {
        let started = crate::process::start_time(pgid)?;
        match r.started(&node_name, pgid, started, &secret, Some(&run)) {
            Ok(()) => Some((r.clone(), started)),
            Err(e) => {
                unrecorded = Some(e);
                None
            }
        }
    });
    // Only now may the command run (see `spawn_child`); a child that already ended has no
    // reader left, and the write's error says nothing new. A process that could not be
    // recorded never runs its command: the gate closes unopened and the shell exits with 125
    // (found by a new-user check: with a full state directory, a restarted agent could not
    // prove the process, left it running, and the server's next attempt ran beside it).
    if let Some(e) = unrecorded {
        tracing::error!(run = key.run, attempt = key.attempt, node = key.node, error = %e, "cannot record the process in the state directory: its command does not run");
        append_note(
            &log_path,
            &format!(
                "tranche agent: cannot record the process in the agent's state directory ({e}): the command did not run"
            ),
        );
        // The shell ends at once (code 125) without running the command: the node is at
        // fault, not the run (docs/agent-protocol.md section 2).
        // Still starting until its exit is sent: a sync never lists it as running.
        drop(gate);
        let mut child = child;
        let outcome = child.wait().await.map_or(Outcome::Code(-1), Outcome::from);
        signal_group(Pid::from_raw(pgid), Signal::SIGKILL);
        group_gone(Pid::from_raw(pgid)).await;
        let _ = std::fs::remove_file(&exit_file);
        let why = format!("cannot record the process in the agent's state directory: {e}");
        let _ = exits.send(Exit::fault(key, outcome, &why));
        drop(starting);
        return;
    }
    // The run's environment, then the line that opens the gate. The pipe is first made large
    // enough for it where the node allows (1 MiB by default), so the write ends at once; a
    // larger one is written while the process is supervised, so that nothing waits on a
    // shell that does not read (found by a check: a shell stopped by its owner's other run
    // kept its run from being stopped and the agent from exiting): a stop kills the group,
    // which ends the write.
    let payload = payload.unwrap_or_default();
    if payload.len() > PIPE_BUF_DEFAULT {
        let _ = nix::fcntl::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&gate),
            nix::fcntl::FcntlArg::F_SETPIPE_SZ(i32::try_from(payload.len()).unwrap_or(i32::MAX)),
        );
    }
    match tokio::net::unix::pipe::Sender::from_owned_fd(gate) {
        Ok(mut sender) => {
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt as _;
                let _ = sender.write_all(&payload).await;
            });
        }
        Err(e) => tracing::warn!(run = key.run, error = %e, "cannot open the start gate"),
    }
    drop(starting);
    let log = (log_max > 0).then(|| (log_path.clone(), log_max));
    let mut child = child;
    let waited = async move {
        match child.wait().await {
            Ok(status) => Outcome::from(status),
            Err(e) => {
                tracing::warn!(%key, error = %e, "cannot wait on the process");
                Outcome::Code(-1)
            }
        }
    };
    supervise(
        waited,
        Pid::from_raw(pgid),
        key,
        stops,
        exits,
        log,
        move |outcome| {
            if let Some((r, started)) = recorded {
                r.ended(&node_name, pgid, started, outcome);
            }
            let _ = std::fs::remove_file(&exit_file);
        },
    )
    .await;
}

/// The file where a process's shell writes its command's exit status: its log's path with
/// the extension `exit`, absolute (the shell runs in the run's working directory, and a
/// restarted agent may be started from another one).
pub(super) fn exit_path(log_path: &Path) -> PathBuf {
    let path = log_path.with_extension("exit");
    std::path::absolute(&path).unwrap_or(path)
}

/// How often an adopted process (not this agent's child) is checked for its end.
const ADOPTED_POLL: Duration = Duration::from_secs(1);

/// Waits for the end of process group leader `pid`, started at `started`, which this agent
/// did not start (an earlier agent of its nodes did, [`Supervisor::adopt`]; not its child, so
/// the init process reaps it): its outcome is the one its shell wrote to `exit_file`, else
/// (its shell was killed) SIGKILL.
async fn adopted_end(pid: i32, started: u64, exit_file: PathBuf) -> Outcome {
    let mut poll = tokio::time::interval(ADOPTED_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        poll.tick().await;
        if !crate::process::is_alive(pid, started) {
            return written_outcome(&exit_file).unwrap_or(Outcome::Signal(Signal::SIGKILL as i32));
        }
    }
}

/// Starts `a`'s command (`sh -c`) in its own process group, its output appended to
/// `log_path`. The command waits at a gate until the agent has recorded the process
/// ([`ProcessRecords::started`]): the shell first reads the run's environment from its
/// standard input, a pipe whose write end is returned, up to a line `.`, then reads from
/// `/dev/null`; the caller writes [`gate_lines`] once the record is written. An agent
/// killed between the start and the record closes the pipe, and the shell exits (code 125)
/// without running the command, instead of running it unrecorded beside the attempt the
/// server starts next.
///
/// With `run_as_submitter` the shell runs as the Unix account named like the run's submitter
/// (`setpriv --reuid --regid --init-groups`: its uid, primary group and supplementary groups,
/// all capabilities dropped), in an environment of its own (none of the agent's: `PATH`
/// `/usr/local/bin:/usr/bin:/bin`, `HOME`, `USER`, `LOGNAME`, then the run's), in the run's
/// working directory or else the account's home, entered as that account (a directory it may
/// not enter fails the run, exit code 126); its log file is given to the account.
///
/// # Errors
/// The node's fault ([`StartFailure::node`]): the log directory, the log or the exit file
/// cannot be made, the pipe made or the shell started. The run's: its working directory does
/// not exist or cannot be entered; with `run_as_submitter`, the assignment names no
/// submitter, no Unix account has its name, or the account is root.
pub(super) fn spawn_child(
    a: &Assignment,
    node_name: &str,
    log_path: &Path,
    secret: &str,
    run_as_submitter: Option<&std::ops::RangeInclusive<u32>>,
) -> Result<(tokio::process::Child, std::os::fd::OwnedFd), StartFailure> {
    let account = match run_as_submitter {
        Some(uids) => Some(submitter_account(a, uids).map_err(StartFailure::run)?),
        None => None,
    };
    spawn_as(a, node_name, log_path, secret, account.as_ref())
}

/// Why a process could not be started, and whether its node is at fault.
#[derive(Debug)]
pub(super) struct StartFailure {
    /// What went wrong.
    pub error: anyhow::Error,
    /// The node is at fault (its directories, its process table), not the run (its working
    /// directory, its submitter's account): the agent reports a fault, and the server
    /// requeues the run and drains the node (docs/agent-protocol.md section 2).
    pub node: bool,
}

impl StartFailure {
    /// The node's fault.
    pub(super) fn node(error: anyhow::Error) -> Self {
        Self { error, node: true }
    }

    /// The run's fault.
    pub(super) fn run(error: anyhow::Error) -> Self {
        Self { error, node: false }
    }
}

impl From<anyhow::Error> for StartFailure {
    fn from(error: anyhow::Error) -> Self {
        Self::node(error)
    }
}

impl From<std::io::Error> for StartFailure {
    fn from(error: std::io::Error) -> Self {
        Self::node(error.into())
    }
}

/// [`spawn_child`] as `account` (none: as the agent's own user).
fn spawn_as(
    a: &Assignment,
    node_name: &str,
    log_path: &Path,
    secret: &str,
    account: Option<&nix::unistd::User>,
) -> Result<(tokio::process::Child, std::os::fd::OwnedFd), StartFailure> {
    if let Some(dir) = log_path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the log directory {}", dir.display()))?;
    }
    let log = create_fresh(log_path, true)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    // The submitter may read their run's log on the node.
    if let Some(user) = &account {
        std::os::unix::fs::fchown(&log, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
            .with_context(|| format!("cannot give {} to {}", log_path.display(), user.name))?;
    }
    // The shell writes the command's exit status here, for an agent that adopts the process
    // after a restart; made by the agent (the submitter may have no right to create files in
    // the log directory) and given to the account.
    let exit_file = exit_path(log_path);
    let exit = create_fresh(&exit_file, false)
        .with_context(|| format!("cannot create {}", exit_file.display()))?;
    if let Some(user) = &account {
        std::os::unix::fs::fchown(&exit, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
            .with_context(|| format!("cannot give {} to {}", exit_file.display(), user.name))?;
    }
    drop(exit);
    let err_log = log.try_clone()?;
    let gpus: Vec<String> = a.gpus.iter().map(u32::to_string).collect();
    let (gate_read, gate_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .context("cannot make the start gate's pipe")?;
    let workdir = a.workdir.as_deref().filter(|d| !d.is_empty());
    // The command runs in a shell of its own (`sh -c COMMAND`, with its own `$$`), so that
    // neither its `exit` nor its `exec` ends the outer shell, which stays to write the
    // command's status to the exit file. The outer shell survives SIGTERM, SIGINT and SIGHUP
    // (caught: the command's shell, as every child, gets them at their default); then a
    // command ended by a signal up to REPORTED_SIGNALS ends the outer shell by the same
    // signal, so the agent sees how the command ended. The command and the exit file are the
    // outer shell's arguments `$1` and `$2`, never parsed as part of its script. As the
    // submitter, the shell enters the directory itself, with the account's rights.
    let enter = match (account, workdir) {
        (Some(_), Some(dir)) => format!("cd -- {}", shell_quote(dir)),
        (Some(_), None) => "cd -- \"$HOME\"".to_string(),
        (None, _) => "true".to_string(),
    };
    // The run's environment comes through the gate, not the process's own environment, and
    // is exported only in the subshell that becomes the command's shell: no program before it
    // (`setpriv`, run as root, or the outer shell) runs with it (found by a check: a run's
    // `PATH` chose the program the agent started as root, and `LD_PRELOAD` would have run
    // code in it). Each line is `NAME='value'` ([`gate_lines`]), then a line `.`.
    let script = format!(
        "TRANCHE_NL='\n'\ne=\n\
         while :; do IFS= read -r l || exit 125; [ \"$l\" = . ] && break; e=\"$e export $l;\"; done\n\
         exec 0</dev/null\ntrap : TERM INT HUP\n\
         if {enter}; then (eval \"$e\" && exec sh -c \"$1\"); s=$?; else s=126; fi\n\
         echo \"$s\" > \"$2\" 2>/dev/null\n\
         if [ \"$s\" -gt 128 ] && [ \"$s\" -le {} ]; then trap - TERM INT HUP; kill -\"$((s - 128))\" \"$$\"; fi\n\
         exit \"$s\"\n",
        128 + REPORTED_SIGNALS,
    );
    let mut cmd = match account {
        Some(user) => {
            // Found in the login `PATH` below, never in one of the run's.
            let mut cmd = tokio::process::Command::new("setpriv");
            cmd.arg("--reuid")
                .arg(user.uid.to_string())
                .arg("--regid")
                .arg(user.gid.to_string())
                .arg("--init-groups")
                .arg("--inh-caps=-all")
                .args(["--", "sh", "-c"])
                .arg(&script)
                .arg("sh")
                .arg(&a.command)
                .arg(&exit_file)
                // Nothing of the agent's (root's) environment: only what a login gives.
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("HOME", &user.dir)
                .env("USER", &user.name)
                .env("LOGNAME", &user.name);
            cmd
        }
        None => {
            let mut cmd = tokio::process::Command::new("/bin/sh");
            cmd.arg("-c")
                .arg(&script)
                .arg("sh")
                .arg(&a.command)
                .arg(&exit_file);
            if let Some(dir) = workdir {
                cmd.current_dir(dir);
            }
            cmd
        }
    };
    cmd.env("CUDA_VISIBLE_DEVICES", gpus.join(","))
        .env("TRANCHE_RUN_ID", a.run.to_string())
        .env("TRANCHE_ATTEMPT", a.attempt.to_string())
        .env("TRANCHE_NODE", node_name)
        .env(OWNER_ENV, secret)
        // The agent's own token is not the run's business.
        .env_remove("TRANCHE_AGENT_TOKEN")
        .stdin(Stdio::from(gate_read))
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err_log))
        .process_group(0);
    let child = cmd.spawn().map_err(|e| {
        let node = spawn_fault_is_the_nodes(&e, workdir.is_some());
        let error = anyhow::Error::from(e).context(match workdir {
            Some(dir) => format!("cannot start {} in {dir}", a.key()),
            None => format!("cannot start {}", a.key()),
        });
        StartFailure { error, node }
    })?;
    Ok((child, gate_write))
}

/// Whether a failed start of the shell is its node's fault rather than its run's: a fork
/// refused for want of processes, memory or files always is; arguments and environment too
/// large (`E2BIG`) never are (the run's size); with a `workdir`, nothing else is either, since
/// the run chose a directory the process may not be able to enter (what the agent sees of a
/// path, `/proc/self/...` or one only the agent's user may enter, is not what the process
/// sees), so that no run can drain nodes (found by a check: a run naming `/root` under a
/// non-root agent drained every node it was sent to). Without one, a shell that cannot
/// start is the node's.
pub(super) fn spawn_fault_is_the_nodes(e: &std::io::Error, workdir: bool) -> bool {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EAGAIN | Errno::ENOMEM | Errno::EMFILE | Errno::ENFILE) => true,
        Some(Errno::E2BIG) => false,
        _ => !workdir,
    }
}

/// The Unix account a run runs as under `--run-as-submitter`: the one named like its
/// submitter, never root nor a system account (uid outside `uids`).
pub(super) fn submitter_account(
    a: &Assignment,
    uids: &std::ops::RangeInclusive<u32>,
) -> anyhow::Result<nix::unistd::User> {
    let name = a.user.as_deref().filter(|n| !n.is_empty()).ok_or_else(|| {
        anyhow::anyhow!(
            "the server did not say who submitted {} (--run-as-submitter needs a server that does)",
            a.key()
        )
    })?;
    let user = nix::unistd::User::from_name(name)
        .with_context(|| format!("cannot look up the Unix account {name:?}"))?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no Unix account named {name:?} on this node: with --run-as-submitter each run runs as its submitter's account"
            )
        })?;
    anyhow::ensure!(
        !user.uid.is_root(),
        "the Unix account {name:?} is root: with --run-as-submitter no run runs as root"
    );
    anyhow::ensure!(
        uids.contains(&user.uid.as_raw()),
        "the Unix account {name:?} is a system account (uid {} outside {} to {}, the agent's --min-submitter-uid and --max-submitter-uid): with --run-as-submitter no run runs as one",
        user.uid,
        uids.start(),
        uids.end()
    );
    Ok(user)
}

/// A pipe's capacity as Linux makes it (bytes): a gate's environment up to this size needs no
/// larger pipe.
const PIPE_BUF_DEFAULT: usize = 65_536;

/// What the agent writes through a started process's gate once it recorded the process: the
/// run's environment, one `NAME='value'` line per variable (the value in single quotes, each
/// quote written `'\''` and each line break `'"$TRANCHE_NL"'`, so that every variable is one
/// line the shell's `read` takes whole and `eval` gives back byte for byte; no run may name a
/// variable `TRANCHE_...`), then `.`. `None` when a name is not a shell variable's (letters,
/// digits and `_`, not starting with a digit) or is a reserved `TRANCHE_` one (the server
/// accepts neither).
pub(super) fn gate_lines(env: &BTreeMap<String, String>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for (name, value) in env {
        let is_name = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !name.starts_with("TRANCHE_");
        if !is_name {
            return None;
        }
        let quoted = shell_quote(value).replace('\n', "'\"$TRANCHE_NL\"'");
        out.extend_from_slice(name.as_bytes());
        out.push(b'=');
        out.extend_from_slice(quoted.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b".\n");
    Some(out)
}

/// `text` as one word of `sh`: in single quotes, each single quote written `'\''`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// How often a running process's log size is checked against the agent's bound.
const LOG_CHECK_EVERY: Duration = Duration::from_secs(10);

/// Keeps the log at `path` within `max` bytes: past it, the newest half is moved to the start
/// after a line saying how much was dropped. The process appends (`O_APPEND`), so its next
/// writes follow the kept part; what it writes while the tail is moved may be lost with the
/// dropped part. Returns the bytes dropped (0 when under the bound or unreadable).
pub(super) fn cap_log(path: &Path, max: u64) -> u64 {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    // The submitter may own the log and replace it in a directory it may write: never through
    // a link, and only a regular file with one name.
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
    else {
        return 0;
    };
    let Ok(len) = f
        .metadata()
        .ok()
        .filter(|m| m.is_file() && m.nlink() == 1)
        .map(|m| m.len())
        .ok_or(())
    else {
        return 0;
    };
    if len <= max {
        return 0;
    }
    let keep = max / 2;
    let mut tail = Vec::with_capacity(usize::try_from(keep).unwrap_or(0));
    if f.seek(SeekFrom::Start(len - keep)).is_err()
        || Read::by_ref(&mut f)
            .take(keep)
            .read_to_end(&mut tail)
            .is_err()
    {
        return 0;
    }
    let dropped = len - keep;
    let note = format!(
        "[tranche agent: {dropped} earlier bytes of this log were dropped to keep it within {max} bytes]\n"
    );
    let written = f
        .seek(SeekFrom::Start(0))
        .and_then(|_| f.write_all(note.as_bytes()))
        .and_then(|()| f.write_all(&tail))
        .and_then(|()| f.set_len(note.len() as u64 + tail.len() as u64));
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "cannot bound the run's log");
        return 0;
    }
    dropped
}

/// Sends `signal` to a process group; a group that is already gone is not an error.
pub(super) fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pgid = pgid.as_raw(), %signal, error = %e, "killpg failed"),
    }
}

pub(super) async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Waits for one process group leader's end (`waited`), carrying out stop requests, then
/// reports its exit. After the group leader ends, whatever it left in
/// its group is killed so its GPUs are free.
pub(super) async fn supervise(
    waited: impl std::future::Future<Output = Outcome>,
    pgid: Pid,
    key: RunKey,
    mut stops: mpsc::UnboundedReceiver<Duration>,
    exits: mpsc::UnboundedSender<Exit>,
    log: Option<(PathBuf, u64)>,
    ended: impl FnOnce(Outcome),
) {
    let mut kill_at: Option<Instant> = None;
    let mut terminated = false;
    let mut log_check = tokio::time::interval(LOG_CHECK_EVERY);
    log_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(waited);
    let outcome = loop {
        tokio::select! {
            outcome = &mut waited => break outcome,
            _ = log_check.tick(), if log.is_some() => {
                // A stat is all a log under its bound costs; only moving its tail goes off the
                // async threads.
                if let Some((path, max)) = &log
                    && std::fs::metadata(path).is_ok_and(|m| m.len() > *max)
                {
                    let (path, max) = (path.clone(), *max);
                    let _ = tokio::task::spawn_blocking(move || cap_log(&path, max)).await;
                }
            }
            Some(grace) = stops.recv() => {
                if !terminated {
                    signal_group(pgid, Signal::SIGTERM);
                    terminated = true;
                }
                let at = Instant::now() + grace;
                kill_at = Some(kill_at.map_or(at, |old| old.min(at)));
            }
            () = sleep_until_opt(kill_at) => {
                tracing::info!(run = key.run, attempt = key.attempt, node = key.node, "grace period over: SIGKILL");
                signal_group(pgid, Signal::SIGKILL);
                kill_at = None;
            }
        }
    };
    signal_group(pgid, Signal::SIGKILL);
    group_gone(pgid).await;
    ended(outcome);
    let _ = exits.send(Exit::new(key, outcome));
}

/// Longest wait for a killed group's last members to be gone ([`group_gone`]).
const GROUP_GONE_WAIT: Duration = Duration::from_secs(2);

/// Waits, at most [`GROUP_GONE_WAIT`], until no process of group `pgid` is left, not even a
/// zombie awaiting its reaper: the command's own shell is the leader's child, so when the
/// leader is killed it ends a moment later and is reaped by the init process. Its end is
/// reported only then, so a run is never requeued while a process of its old attempt still
/// exists (found by CI: a process that ignored SIGTERM was still listed after the requeue).
async fn group_gone(pgid: Pid) {
    let deadline = Instant::now() + GROUP_GONE_WAIT;
    while killpg(pgid, None::<Signal>).is_ok() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
