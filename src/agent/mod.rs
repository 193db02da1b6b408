//! `tranche agent`: the node agent. It registers this machine's GPUs with the server, then
//! long-polls `POST /api/v1/agent/sync` (see `docs/agent-protocol.md`), starting the processes
//! the server assigns and stopping the ones it no longer wants.
//!
//! The parts:
//! - the wire types ([`RegisterRequest`], [`SyncRequest`], [`SyncAnswer`], ...);
//! - [`reconcile`], a pure function from an answer and the local process table to a [`Plan`];
//! - [`Supervisor`], which starts `sh -c COMMAND` in its own process group, stops a group with
//!   SIGTERM then SIGKILL after a grace period, and reports each exit as an [`Exit`];
//! - [`run`], the loop that ties them to the server.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use crate::config::Secret;

mod gpus;
mod reconcile;
mod supervisor;
mod wire;

pub use gpus::*;
pub use reconcile::*;
pub use supervisor::*;
pub use wire::*;

/// Grace period for a local process the server lists neither as an assignment nor as a stop.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(30);
/// Grace period given to the children when the agent itself is asked to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Long-poll time asked of the server on each sync.
pub const WAIT_S: u64 = 10;

/// How long the agent gathers further exits after one before reporting them together.
pub const EXIT_BATCH: Duration = Duration::from_millis(50);
/// Least time between two syncs when the previous answer changed nothing locally (the server
/// answers at once while, say, an assignment waits for a GPU still held by a stopping process).
const MIN_SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// Longest a sync waits for the processes being started to run or fail
/// ([`Supervisor::starts_settled`]): within a third of the shortest agent timeout (3 s), so
/// heartbeats keep their pace.
const STARTS_SETTLE: Duration = Duration::from_secs(1);
/// First and largest pause after a failed request.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// How old an end an earlier agent recorded may be to be told again by the agent that takes
/// its nodes over ([`Agent::take_over`]): that agent synced within the server's timeout, so
/// older ends reached the server (this, or twice the timeout where that is longer).
const ENDS_TOLD_AGAIN: Duration = Duration::from_secs(3600);
/// How many recent exits an agent keeps to tell again ([`Agent::ended_again`]).
const ENDED_KEPT: usize = 10_000;
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Exit code reported for an assignment whose process could not be started (as `sh` does for
/// a command not found).
pub const SPAWN_FAILED_EXIT_CODE: i32 = 127;
/// Processes spawned at once, each on a blocking thread (a fork and exec keeps its thread
/// waiting until the child has loaded), so a batch of assignments never holds up the sync
/// loop. Two: eight competed harder with a co-located server in a burst of starts (p99 start
/// decision about 1.0 s against 0.67 to 0.86 s in `tranche bench runs --runs 1000 --command
/// "sleep 60"` on two cores).
pub const SPAWN_CONCURRENCY: usize = 2;

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

/// Arguments of `tranche agent`.
#[derive(Clone, Debug, clap::Args)]
pub struct AgentArgs {
    /// Base URL of the Tranche server, e.g. `http://tranche.example.org:8080`.
    #[arg(long)]
    pub server: String,
    /// The cluster's agent token (`tranche admin create-agent-token`).
    #[arg(long, env = "TRANCHE_AGENT_TOKEN", hide_env_values = true, value_parser = parse_secret)]
    pub token: Secret,
    /// `auto` (ask nvidia-smi) or a declared inventory `COUNTxMODEL`, e.g. `8xH100`.
    #[arg(long, default_value = "auto")]
    pub gpus: GpuSpec,
    /// Number of nodes this process serves, named `HOST-1..HOST-N` (just `HOST` when 1): 1 to
    /// 1,024, what the server registers in one session.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub nodes: u32,
    /// Node host name (default: this machine's host name).
    #[arg(long)]
    pub name: Option<String>,
    /// Directory for the processes' output, one file per run attempt and node.
    #[arg(long, default_value = "./tranche-agent-logs")]
    pub log_dir: PathBuf,
    /// Most bytes a run's log keeps: past it the agent keeps the newest half, after a line
    /// saying how much was dropped (0: no bound). Default 1 GiB.
    #[arg(long, env = "TRANCHE_AGENT_LOG_MAX_BYTES", default_value_t = 1 << 30)]
    pub log_max_bytes: u64,
    /// Directory where the agent records the processes it starts (pid and start time, per
    /// node), so that a later agent for the same nodes can stop what this one left running,
    /// and nothing else. An absolute default, the same wherever the agent is started from:
    /// `/var/lib/tranche-agent` as root, else `$XDG_STATE_HOME/tranche-agent` or
    /// `~/.local/state/tranche-agent` ([`default_state_dir`]).
    #[arg(long, env = "TRANCHE_AGENT_STATE_DIR", default_value_os_t = default_state_dir())]
    pub state_dir: PathBuf,
    /// A file declaring the GPUs' utilization, read at every heartbeat (tests and demos of a
    /// declared inventory; on a real node it overrides nvidia-smi). Lines `NODE VALUES`, `NODE`
    /// a node name or `*` for every node, `VALUES` one percentage for all GPUs or one per GPU
    /// separated by commas (`-` for unknown); later lines win; `#` starts a comment. See
    /// [`parse_utilization_file`].
    #[arg(long)]
    pub utilization_file: Option<PathBuf>,
    /// Ask for the whole desired state at every sync instead of the changes since the last
    /// (the protocol before delta syncs; docs/agent-protocol.md section 2).
    #[arg(long)]
    pub full_sync: bool,
    /// Run each process as its submitter's Unix account (the account of the same name on the
    /// node, with its groups, `HOME`, `USER` and `LOGNAME`; a run whose submitter has no such
    /// account, or whose account is root, fails at its start, saying so), so that runs of
    /// different people cannot read each other's environment (secret values) or signal each
    /// other's processes. Needs the agent to run as root; `setpriv` (util-linux) drops the
    /// privileges. Without it every run runs as the agent's own user (docs/agent-protocol.md
    /// section 2).
    #[arg(long, env = "TRANCHE_AGENT_RUN_AS_SUBMITTER")]
    pub run_as_submitter: bool,
    /// With `--run-as-submitter`, the lowest uid a run may run as: system accounts (below
    /// it, Debian's `UID_MIN`) own the node's services, the database's files among them, and
    /// a person named like one (`postgres`, `daemon`) must not run as it.
    #[arg(long, default_value_t = 1000, env = "TRANCHE_AGENT_MIN_SUBMITTER_UID")]
    pub min_submitter_uid: u32,
    /// With `--run-as-submitter`, the highest uid a run may run as: Debian's `UID_MAX`; the
    /// system accounts above it (`nobody`, 65534; 60000 to 64999 for services such as
    /// `slurm`) are no person's.
    #[arg(long, default_value_t = 60000, env = "TRANCHE_AGENT_MAX_SUBMITTER_UID")]
    pub max_submitter_uid: u32,
}

fn parse_secret(s: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret::new(s))
}

/// The `--gpus` flag: detect with nvidia-smi, or a declared count and model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuSpec {
    /// Ask `nvidia-smi` for the count and model at start and the utilization at each sync.
    Auto,
    /// A declared inventory; utilization is reported as unknown.
    Declared {
        /// GPUs per node.
        count: u32,
        /// Model name as the server knows it (matched case-insensitively).
        model: String,
    },
}

impl FromStr for GpuSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(GpuSpec::Auto);
        }
        let bad = || format!("expected `auto` or COUNTxMODEL such as `8xH100`, got {s:?}");
        let (count, model) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let count: u32 = count.parse().map_err(|_| bad())?;
        let model = model.trim();
        if count == 0 || model.is_empty() {
            return Err(bad());
        }
        Ok(GpuSpec::Declared {
            count,
            model: model.to_string(),
        })
    }
}

/// Node names served by one agent: `host` alone, or `host-1..host-N`.
#[must_use]
pub fn node_names(host: &str, nodes: u32) -> Vec<String> {
    if nodes <= 1 {
        vec![host.to_string()]
    } else {
        (1..=nodes).map(|i| format!("{host}-{i}")).collect()
    }
}

/// The state directory when none is given: `/var/lib/tranche-agent` for root, else
/// `$XDG_STATE_HOME/tranche-agent`, else `$HOME/.local/state/tranche-agent` (the XDG base
/// directory specification's state home), else `./tranche-agent-state`. Absolute, so that an
/// agent restarted from another working directory finds its predecessor's records (a relative
/// default found none, and the old processes kept running beside the new attempt).
pub fn default_state_dir() -> PathBuf {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if nix::unistd::geteuid().is_root() {
        PathBuf::from("/var/lib/tranche-agent")
    } else if let Some(state) = non_empty("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        state.join("tranche-agent")
    } else if let Some(home) = non_empty("HOME").filter(|p| p.is_absolute()) {
        home.join(".local/state/tranche-agent")
    } else {
        PathBuf::from("./tranche-agent-state")
    }
}

/// Kills the run processes that agents with this `--state-dir` recorded for `nodes` and left
/// running (an agent killed on purpose, as `tranche bench runs` does at its end, leaves its
/// runs' process groups behind, by design: a restarted agent adopts or stops them). Only
/// processes proven to be the recorded ones are signalled. Returns how many groups were killed.
pub fn kill_recorded(state_dir: &std::path::Path, nodes: &[String]) -> usize {
    supervisor::ProcessRecords::new(state_dir.to_path_buf())
        .kill_leftovers(nodes)
        .0
}

/// The node host name: `given` when set and not blank, else this machine's host name.
///
/// # Errors
/// The host name cannot be read or is not UTF-8.
pub fn host_name(given: Option<&str>) -> anyhow::Result<String> {
    if let Some(name) = given.map(str::trim).filter(|n| !n.is_empty()) {
        return Ok(name.to_string());
    }
    nix::unistd::gethostname()
        .context("cannot read the host name; pass --name")?
        .into_string()
        .map_err(|_| anyhow::anyhow!("the host name is not UTF-8; pass --name"))
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

/// A failed request: no answer, or an error answer.
#[derive(Debug)]
enum ApiError {
    Transport(String),
    Status {
        status: u16,
        code: String,
        message: String,
    },
}

impl ApiError {
    /// Whether retrying the same request later may succeed: no answer, a server error, a
    /// timeout or rate limit.
    fn is_transient(&self) -> bool {
        match self {
            ApiError::Transport(_) => true,
            ApiError::Status { status, .. } => *status >= 500 || *status == 408 || *status == 429,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Transport(e) => write!(f, "no answer: {e}"),
            ApiError::Status {
                status,
                code,
                message,
            } => write!(f, "HTTP {status} {code}: {message}"),
        }
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

struct Api {
    base: String,
    token: Secret,
    http: reqwest::Client,
}

impl Api {
    fn new(server: &str, token: Secret) -> anyhow::Result<Self> {
        let base = server.trim().trim_end_matches('/').to_string();
        anyhow::ensure!(
            base.starts_with("http://") || base.starts_with("https://"),
            "--server must be an http:// URL, got {base:?}"
        );
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        Ok(Api { base, token, http })
    }

    async fn post<B: Serialize, R: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<R, ApiError> {
        let transport = |e: reqwest::Error| ApiError::Transport(e.without_url().to_string());
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(self.token.expose())
            .timeout(timeout)
            .json(body)
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status();
        if status.is_success() {
            return resp.json().await.map_err(transport);
        }
        let text = resp.text().await.unwrap_or_default();
        let (code, message) = match serde_json::from_str::<ErrorBody>(&text) {
            Ok(b) => (b.error.code, b.error.message),
            Err(_) => (String::new(), text.chars().take(200).collect()),
        };
        Err(ApiError::Status {
            status: status.as_u16(),
            code,
            message,
        })
    }
}

/// Pause after failed requests: 1 s, doubling, at most 5 s.
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Backoff(BACKOFF_FIRST)
    }
    fn next(&mut self) -> Duration {
        let d = self.0;
        self.0 = (self.0 * 2).min(BACKOFF_MAX);
        d
    }
}

// ---------------------------------------------------------------------------------------------
// The agent loop
// ---------------------------------------------------------------------------------------------

struct Session {
    id: String,
    wait_s: u64,
    /// Running processes a 200 answer of this session acknowledged: a delta sync lists them
    /// no more (docs/agent-protocol.md, "Running-set digest").
    acked_running: HashSet<RunKey>,
    /// List every running process in the next sync: the session's first, and after an answer
    /// with `report_running`.
    list_running: bool,
}

/// Why a sync loop ended without an error.
enum SessionEnd {
    Reregister,
}

struct Agent {
    api: Api,
    gpus: Gpus,
    names: Vec<String>,
    /// `HOST pid PID`, sent at registration.
    label: String,
    records: Arc<ProcessRecords>,
    /// The state directory's lock, once held ([`ProcessRecords::lock`]).
    state_lock: Option<nix::fcntl::Flock<std::fs::File>>,
    /// Whether the leftovers of earlier agents were taken over (after the first registration).
    cleaned_up: bool,
    /// The nodes whose runs the server kept at the last registration (`kept`): name -> id.
    kept: HashMap<String, i64>,
    /// The server's lost-node timeout, from the last registration.
    timeout: Duration,
    sup: Supervisor,
    /// Every (run, attempt, node) ever started (or refused) in this process's life.
    started: HashSet<RunKey>,
    /// The highest run id in `started` (0 for none): `started_up_to` of delta syncs.
    started_up_to: i64,
    /// Exits not yet acknowledged by a 200 answer.
    pending: Vec<Exit>,
    /// The last [`ENDED_KEPT`] exits, acknowledged or not: told again when the server assigns
    /// one of those processes again (a database restored from before it ended).
    ended: VecDeque<Exit>,
    /// Node id -> name, from the last register.
    node_names: HashMap<i64, String>,
    session: Option<Session>,
    /// The desired state as delta answers built it up in this session.
    desired: Desired,
    /// Ask for the whole desired state at every sync (the protocol before delta syncs).
    full_sync: bool,
    /// Process groups of these nodes that another agent started and left running: nothing
    /// starts on their GPUs while they live.
    foreign: Vec<supervisor::Foreign>,
}

/// The orders of the current session, merged from delta answers (docs/agent-protocol.md
/// section 2): what a full answer would list, less what is done.
#[derive(Debug, Default)]
struct Desired {
    /// Whether the server answered with a delta in this session (an older server answers
    /// with the whole desired state, and nothing is kept).
    delta: bool,
    /// The version of the last answer applied; 0 before the first.
    version: i64,
    assignments: BTreeMap<RunKey, Assignment>,
    stops: BTreeMap<RunKey, StopOrder>,
}

impl Desired {
    /// Applies a delta (or, when `full`, replaces everything): an order replaces the earlier
    /// order for its process.
    fn merge(&mut self, answer: &SyncAnswer, version: i64) {
        if answer.full {
            self.assignments.clear();
            self.stops.clear();
        }
        for a in &answer.assignments {
            self.stops.remove(&a.key());
            self.assignments.insert(a.key(), a.clone());
        }
        for s in &answer.stops {
            self.assignments.remove(&s.key());
            self.stops.insert(s.key(), s.clone());
        }
        self.version = version;
        self.delta = true;
    }

    /// The merged orders as one answer, for [`reconcile`].
    fn answer(&self) -> SyncAnswer {
        SyncAnswer {
            assignments: self.assignments.values().cloned().collect(),
            stops: self.stops.values().cloned().collect(),
            version: Some(self.version),
            full: true,
            report_running: false,
        }
    }

    /// Forgets orders that are done: assignments started and since exited, stops of
    /// processes no longer alive (exited, or never started).
    fn prune(&mut self, local: &[LocalProcess], started: &HashSet<RunKey>) {
        let alive: HashSet<RunKey> = local.iter().map(|p| p.key).collect();
        self.assignments
            .retain(|k, _| !started.contains(k) || alive.contains(k));
        self.stops.retain(|k, _| alive.contains(k));
    }
}

/// Runs `tranche agent` until Ctrl-C or SIGTERM (then stops the children), SIGHUP (then
/// leaves them running, for the next agent of its state directory to adopt) or a fatal error
/// (bad token, inventory the server refuses).
///
/// # Errors
/// nvidia-smi missing with `--gpus auto`, no host name, a token the server refuses (401), a
/// register the server rejects (e.g. 409 `inventory_mismatch`).
pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    let mut agent = Agent::new(&args).await?;
    tracing::info!(
        server = %agent.api.base,
        nodes = ?agent.names,
        gpus = agent.gpus.count,
        model = %agent.gpus.model,
        log_dir = %args.log_dir.display(),
        "tranche agent starting"
    );
    let result = tokio::select! {
        r = agent.serve() => r,
        () = signal(tokio::signal::unix::SignalKind::hangup()) => {
            // Its processes run on, recorded in the state directory with the session: the
            // next agent of that directory adopts them (an upgrade: docs/agent-protocol.md).
            // A last sync tells the exits not yet told and counts as a heartbeat, so the next
            // agent has the whole timeout to take over.
            tracing::info!(
                "SIGHUP: exiting and leaving the runs' processes to the next agent of this state directory"
            );
            agent.drain_exits();
            agent.last_sync().await;
            return Ok(());
        }
        () = shutdown_signal() => {
            tracing::info!("asked to stop: stopping the children");
            Ok(())
        }
    };
    agent.shutdown().await;
    result
}

/// Returns once `kind` arrives (never where it cannot be watched).
async fn signal(kind: tokio::signal::unix::SignalKind) {
    match tokio::signal::unix::signal(kind) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending::<()>().await,
    }
}

async fn shutdown_signal() {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        () = signal(tokio::signal::unix::SignalKind::terminate()) => {},
    }
}

impl Agent {
    async fn new(args: &AgentArgs) -> anyhow::Result<Self> {
        anyhow::ensure!(
            !args.run_as_submitter || nix::unistd::geteuid().is_root(),
            "--run-as-submitter needs the agent to run as root (it starts each run as its submitter's Unix account)"
        );
        let host = host_name(args.name.as_deref())?;
        let machine = host_name(None).unwrap_or_else(|_| host.clone());
        let records = Arc::new(ProcessRecords::new(args.state_dir.clone()));
        records.check_writable()?;
        Ok(Agent {
            api: Api::new(&args.server, args.token.clone())?,
            gpus: {
                let mut gpus = Gpus::detect(&args.gpus).await?;
                if let Some(path) = &args.utilization_file {
                    let text = std::fs::read_to_string(path).with_context(|| {
                        format!("cannot read the utilization file {}", path.display())
                    })?;
                    parse_utilization_file(&text, gpus.count)?;
                    gpus.file = Some(path.clone());
                }
                gpus
            },
            names: node_names(&host, args.nodes),
            label: format!("{machine} pid {}", std::process::id()),
            records: records.clone(),
            state_lock: None,
            cleaned_up: false,
            kept: HashMap::new(),
            timeout: Duration::ZERO,
            sup: Supervisor::with_records(args.log_dir.clone(), Some(records))
                .with_log_max(args.log_max_bytes)
                .with_run_as_submitter(
                    args.run_as_submitter
                        .then_some(args.min_submitter_uid.max(1)..=args.max_submitter_uid),
                ),
            started: HashSet::new(),
            started_up_to: 0,
            pending: Vec::new(),
            ended: VecDeque::new(),
            node_names: HashMap::new(),
            session: None,
            desired: Desired::default(),
            full_sync: args.full_sync,
            foreign: Vec::new(),
        })
    }

    async fn serve(&mut self) -> anyhow::Result<()> {
        loop {
            self.register().await?;
            // Only now that the server accepted these nodes as this agent's, and before
            // anything starts on them: stop what an earlier agent of theirs left running.
            if !self.cleaned_up {
                self.cleaned_up = true;
                self.take_over();
            }
            match self.sync_loop().await? {
                SessionEnd::Reregister => self.session = None,
            }
        }
    }

    /// Takes over what an earlier agent of these nodes left ([`ProcessRecords::take_over`]):
    /// on the nodes whose runs the server kept, adopts the processes still running and tells
    /// the ends not yet told; everywhere else, kills what it left running.
    fn take_over(&mut self) {
        let found = self.records.take_over(&self.names, &self.kept);
        for (node, r) in &found.adopted {
            self.sup.adopt(node, r);
        }
        let adopted: Vec<RunKey> = self.sup.local().iter().map(|p| p.key).collect();
        for key in adopted {
            self.note_started(key);
        }
        // Ends recorded since the earlier agent's last sync may not have reached the server;
        // told again, an end it knows changes nothing.
        let recent = std::time::SystemTime::now() - ENDS_TOLD_AGAIN.max(self.timeout * 2);
        for e in found.ended {
            self.note_started(e.key);
            let age = std::time::SystemTime::now()
                .duration_since(e.at)
                .unwrap_or_default();
            let exit = Exit {
                key: e.key,
                outcome: e.outcome,
                at: Instant::now().checked_sub(age).unwrap_or_else(Instant::now),
                fault: None,
            };
            if e.at >= recent {
                self.record_exit(exit);
            } else {
                self.remember_exit(exit);
            }
        }
        if !found.adopted.is_empty() {
            tracing::info!(
                adopted = found.adopted.len(),
                "adopted the runs' processes an earlier agent of these nodes left running"
            );
        }
        // On real GPUs only: declared ones (`--gpus 8xH100`) are shared by nothing.
        if self.gpus.physical() {
            self.foreign = found
                .foreign
                .iter()
                .filter_map(|(pid, node)| supervisor::Foreign::read(*pid, node))
                .collect();
        }
    }

    /// The session to show at registration: the one the state directory kept (this process's
    /// last, or a crashed predecessor's), while it holds the directory's lock (a live agent
    /// sharing the directory holds the lock, and its nodes are not taken over).
    fn previous_session(&mut self) -> Option<String> {
        if self.state_lock.is_none() {
            self.state_lock = self.records.lock();
        }
        self.state_lock
            .is_some()
            .then(|| self.records.last_session())
            .flatten()
    }

    /// Registers the nodes, retrying while the server cannot be reached.
    async fn register(&mut self) -> anyhow::Result<()> {
        let mut body = RegisterRequest {
            nodes: self
                .names
                .iter()
                .map(|name| RegisterNode {
                    name: name.clone(),
                    gpus: self.gpus.count,
                    gpu_model: self.gpus.model.clone(),
                })
                .collect(),
            agent: Some(self.label.clone()),
            previous_session: self.previous_session(),
        };
        let mut backoff = Backoff::new();
        let answer: RegisterAnswer = loop {
            // An agent that shared this state directory and held its lock may have ended since
            // the last try: this one then holds the lock, and takes its nodes (and runs) over
            // as that agent restarted would.
            if self.state_lock.is_none() {
                body.previous_session = self.previous_session();
            }
            match self
                .api
                .post("/api/v1/agent/register", &body, Duration::from_secs(30))
                .await
            {
                Ok(a) => break a,
                Err(ApiError::Status { status: 401, .. }) => {
                    anyhow::bail!(
                        "the server refused the agent token (401): it is unknown or revoked"
                    )
                }
                Err(e @ ApiError::Status { status: 409, .. }) if matches!(&e, ApiError::Status { code, .. } if code == "node_in_use") =>
                {
                    // Another agent serves these nodes; wait for its session to end.
                    let pause = backoff.next();
                    tracing::warn!(error = %e, retry_in_s = pause.as_secs(), "register refused: the nodes are in use");
                    tokio::time::sleep(pause).await;
                }
                Err(e) if !e.is_transient() => {
                    anyhow::bail!("the server refused the registration: {e}")
                }
                Err(e) => {
                    let pause = backoff.next();
                    tracing::warn!(error = %e, retry_in_s = pause.as_secs(), "register failed");
                    tokio::time::sleep(pause).await;
                }
            }
        };
        self.node_names = answer
            .nodes
            .iter()
            .map(|n| (n.id, n.name.clone()))
            .collect();
        self.kept = answer
            .nodes
            .iter()
            .filter(|n| n.kept)
            .map(|n| (n.name.clone(), n.id))
            .collect();
        for name in &self.names {
            if !answer.nodes.iter().any(|n| &n.name == name) {
                tracing::warn!(node = %name, "the register answer does not list this node");
            }
        }
        self.timeout = Duration::from_secs(answer.timeout_s.unwrap_or(0));
        // The long poll must stay well inside the server's lost-node timeout: at most the
        // heartbeat period it asks for (a third of the timeout), so an agent that exits (a
        // SIGHUP hand-over) leaves its successor nearly the whole timeout.
        let wait_s = answer
            .heartbeat_s
            .or(answer.timeout_s.map(|t| t / 3))
            .map_or(WAIT_S, |h| WAIT_S.min(h))
            .max(1);
        tracing::info!(
            nodes = ?answer.nodes.iter().map(|n| format!("{}={}", n.name, n.id)).collect::<Vec<_>>(),
            heartbeat_s = answer.heartbeat_s,
            timeout_s = answer.timeout_s,
            "registered"
        );
        if self.state_lock.is_some() {
            self.records.keep_session(&answer.session);
        }
        self.session = Some(Session {
            id: answer.session,
            wait_s,
            acked_running: HashSet::new(),
            list_running: true,
        });
        self.desired = Desired::default();
        Ok(())
    }

    /// Syncs until the session ends. Returns `Err` only for a fatal error (401).
    async fn sync_loop(&mut self) -> anyhow::Result<SessionEnd> {
        let mut backoff = Backoff::new();
        let mut not_before: Option<Instant> = None;
        loop {
            if let Some(at) = not_before.take() {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    exit = self.sup.next_exit() => self.record_exit(exit),
                }
            }
            // Processes still being started are reported once their commands run, or as the
            // exits of starts that failed.
            self.sup.starts_settled(STARTS_SETTLE).await;
            self.drain_exits();
            // Exits may have freed GPUs that a known assignment waits for (delta syncs: the
            // server sends no order again).
            if self.desired.delta {
                self.act();
            }
            let request = self.sync_request().await?;
            let carried: Vec<Exit> = self.pending.clone();
            let sent_at = Instant::now();
            let timeout = Duration::from_secs(request.wait_s + 10);
            let result = tokio::select! {
                r = self.api.post::<_, SyncAnswer>("/api/v1/agent/sync", &request, timeout) => Some(r),
                exit = self.sup.next_exit() => {
                    self.record_exit(exit);
                    None
                }
            };
            // A local exit while waiting: report it soon (the request is idempotent), after a
            // short pause that gathers the exits that follow it into the same sync.
            let Some(result) = result else {
                not_before = Some(Instant::now() + EXIT_BATCH);
                continue;
            };
            match result {
                Ok(answer) => {
                    backoff = Backoff::new();
                    self.pending.retain(|e| !carried.contains(e));
                    self.acknowledge_running(&request, &answer);
                    if !self.apply(&answer) {
                        not_before = Some(sent_at + MIN_SYNC_INTERVAL);
                    }
                }
                Err(ApiError::Status { status: 401, .. }) => {
                    anyhow::bail!(
                        "the server refused the agent token (401): it is unknown or revoked"
                    )
                }
                Err(e @ ApiError::Status { status: 404, .. }) => {
                    tracing::warn!(error = %e, "session unknown: registering again");
                    return Ok(SessionEnd::Reregister);
                }
                Err(e @ ApiError::Status { status: 409, .. }) if matches!(&e, ApiError::Status { code, .. } if code == "session_replaced") =>
                {
                    anyhow::bail!(
                        "another agent registered these nodes since ({e}); two agents must not serve one node, so this one stops"
                    )
                }
                Err(e @ ApiError::Status { status: 409, .. }) if matches!(&e, ApiError::Status { code, .. } if code == "stale_session") =>
                {
                    tracing::warn!(error = %e, "the server marked these nodes lost (no heartbeat within its timeout): registering again");
                    return Ok(SessionEnd::Reregister);
                }
                Err(e @ ApiError::Status { status: 409, .. }) => {
                    // `not_assigned` (a report about a node this session does not serve) or
                    // another refusal: drop the exits it carried so the next sync can succeed.
                    // (A run the server never assigned is not refused: it is told to stop.)
                    tracing::warn!(error = %e, dropped = carried.len(), "sync refused; dropping the exit reports it carried");
                    self.pending.retain(|e| !carried.contains(e));
                    not_before = Some(Instant::now() + backoff.next());
                }
                Err(e) => {
                    let pause = backoff.next();
                    if e.is_transient() {
                        tracing::warn!(error = %e, retry_in_s = pause.as_secs(), "sync failed");
                    } else {
                        tracing::error!(error = %e, retry_in_s = pause.as_secs(), "sync refused");
                    }
                    not_before = Some(Instant::now() + pause);
                }
            }
        }
    }

    fn drain_exits(&mut self) {
        while let Some(exit) = self.sup.try_exit() {
            self.record_exit(exit);
        }
    }

    fn record_exit(&mut self, exit: Exit) {
        let key = exit.key;
        let node = self.node_label(key.node);
        match exit.outcome {
            Outcome::Code(code) => {
                tracing::info!(run = key.run, attempt = key.attempt, %node, exit_code = code, "process exited");
            }
            Outcome::Signal(signal) => {
                tracing::info!(run = key.run, attempt = key.attempt, %node, signal, "process killed by a signal");
            }
        }
        if let Some(fault) = &exit.fault {
            tracing::error!(run = key.run, attempt = key.attempt, %node, fault, "the node could not run the process: the server drains it");
        }
        self.remember_exit(exit.clone());
        self.pending.push(exit);
    }

    /// Keeps `exit` among the last [`ENDED_KEPT`], to tell again ([`Agent::ended_again`]).
    fn remember_exit(&mut self, exit: Exit) {
        if self.ended.len() >= ENDED_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back(exit);
    }

    /// The exits to tell again for `answer`'s assignments of processes this agent already
    /// started and that ended: after a restore, the server assigns a (run, attempt, node) it
    /// no longer knows ended, which an agent never starts twice, and the run stayed starting
    /// with its GPUs held (found by a new-user check). Exits older than six days are not told
    /// (the server takes exits up to a week old).
    fn ended_again(&self, answer: &SyncAnswer, local: &[LocalProcess]) -> Vec<Exit> {
        let mut again = Vec::new();
        for a in &answer.assignments {
            let key = a.key();
            if !self.started.contains(&key)
                || local.iter().any(|p| p.key == key)
                || self.pending.iter().any(|e| e.key == key)
            {
                continue;
            }
            if let Some(e) = self.ended.iter().rev().find(|e| e.key == key)
                && e.at.elapsed() < Duration::from_secs(6 * 86_400)
            {
                again.push(e.clone());
            }
        }
        again
    }

    fn node_label(&self, node: i64) -> String {
        self.node_names
            .get(&node)
            .cloned()
            .unwrap_or_else(|| node.to_string())
    }

    async fn sync_request(&self) -> anyhow::Result<SyncRequest> {
        let session = self.session.as_ref().context("no session")?;
        let utilization = self.gpus.utilization().await;
        let declared = self.gpus.declared();
        let mut node_ids: Vec<i64> = self.node_names.keys().copied().collect();
        node_ids.sort_unstable();
        // Delta syncs list the running processes no answer acknowledged, with the count and
        // digest of all; the previous protocol lists them all.
        let local = self.sup.local();
        let delta = !self.full_sync;
        let list_all = !delta || session.list_running;
        let (count, digest) = running_digest(local.iter().map(|p| &p.key));
        let mut runs: Vec<RunReport> = local
            .iter()
            .filter(|p| list_all || !session.acked_running.contains(&p.key))
            .map(|p| RunReport {
                run: p.key.run,
                attempt: p.key.attempt,
                node: p.key.node,
                state: RunState::Running,
                exit_code: None,
                signal: None,
                exited_s_ago: None,
                fault: None,
            })
            .collect();
        runs.extend(self.pending.iter().map(Exit::report));
        Ok(SyncRequest {
            session: session.id.clone(),
            wait_s: session.wait_s,
            nodes: node_ids
                .into_iter()
                .map(|node| NodeReport {
                    node,
                    utilization: declared
                        .as_deref()
                        .and_then(|d| declared_utilization_for(d, &self.node_label(node)))
                        .unwrap_or_else(|| utilization.clone()),
                })
                .collect(),
            runs,
            since: delta.then_some(self.desired.version),
            running_count: delta.then_some(count),
            running_digest: delta.then_some(digest),
            started_up_to: (delta && self.started_up_to > 0).then_some(self.started_up_to),
        })
    }

    /// After a 200 `answer` to `request`: its running processes are acknowledged (those still
    /// running stay out of the next delta syncs), and the next sync lists them all when the
    /// server asks.
    fn acknowledge_running(&mut self, request: &SyncRequest, answer: &SyncAnswer) {
        let live: HashSet<RunKey> = self.sup.local().iter().map(|p| p.key).collect();
        let Some(session) = self.session.as_mut() else {
            return;
        };
        session.acked_running.extend(
            request
                .runs
                .iter()
                .filter(|r| r.state == RunState::Running)
                .map(|r| RunKey {
                    run: r.run,
                    attempt: r.attempt,
                    node: r.node,
                }),
        );
        session.acked_running.retain(|k| live.contains(k));
        session.list_running = answer.report_running;
    }

    /// Carries out an answer; true when something was started or stopped. A delta answer
    /// (with a `version`) is merged into the session's orders first, and those are carried
    /// out; an answer without one is the whole desired state.
    fn apply(&mut self, answer: &SyncAnswer) -> bool {
        // Only a whole desired state tells that the server wants an ended process again: the
        // merged delta state keeps an assignment until the agent prunes it, after its exit.
        if answer.version.is_none() || answer.full || self.full_sync {
            let local = self.local_and_foreign();
            let again = self.ended_again(answer, &local);
            if !again.is_empty() {
                tracing::warn!(
                    exits = again.len(),
                    "the server assigns processes that already ended (a restored database?): telling their exits again"
                );
                self.pending.extend(again);
            }
        }
        match answer.version {
            Some(version) if !self.full_sync => {
                self.desired.merge(answer, version);
                self.act()
            }
            _ => self.carry_out(answer),
        }
    }

    /// Carries out the session's merged orders and forgets those that are done.
    fn act(&mut self) -> bool {
        let merged = self.desired.answer();
        let changed = self.carry_out(&merged);
        self.desired.prune(&self.sup.local(), &self.started);
        changed
    }

    /// The live local processes, and the other agents' process groups still alive as
    /// processes already being stopped (so [`reconcile`] counts their GPUs as used and never
    /// asks to stop them: their run is not theirs to know), keyed by a run id no run has
    /// (minus the pid).
    fn local_and_foreign(&mut self) -> Vec<LocalProcess> {
        self.foreign.retain(supervisor::Foreign::alive);
        let mut local = self.sup.local();
        for f in &self.foreign {
            let Some((&node, _)) = self.node_names.iter().find(|(_, name)| **name == f.node) else {
                continue;
            };
            local.push(LocalProcess {
                key: RunKey {
                    run: -i64::from(f.pid),
                    attempt: 0,
                    node,
                },
                gpus: f.gpus.clone(),
                stopping: Some(Duration::ZERO),
            });
        }
        local
    }

    /// Carries out a whole desired state; true when something was started or stopped.
    fn carry_out(&mut self, answer: &SyncAnswer) -> bool {
        for a in &answer.assignments {
            if !self.node_names.contains_key(&a.node) && self.note_started(a.key()) {
                tracing::warn!(
                    run = a.run,
                    attempt = a.attempt,
                    node = a.node,
                    "assignment for a node this agent does not serve; ignored"
                );
            }
        }
        let local = self.local_and_foreign();
        let plan = reconcile(answer, &local, &self.started);
        for (key, grace) in &plan.stop {
            let node = self.node_label(key.node);
            tracing::info!(run = key.run, attempt = key.attempt, %node, grace_s = grace.as_secs_f64(), "stopping");
            self.sup.stop(*key, *grace);
        }
        for a in &plan.start {
            self.start(a);
        }
        plan.changes_something()
    }

    /// Records that `key` was started (or refused): it is never started again. True when it
    /// was not yet.
    fn note_started(&mut self, key: RunKey) -> bool {
        self.started_up_to = self.started_up_to.max(key.run);
        self.started.insert(key)
    }

    fn start(&mut self, a: &Assignment) {
        let key = a.key();
        self.note_started(key);
        let node = self.node_label(key.node);
        match self.sup.start(a, &node) {
            Ok(log) => tracing::info!(
                run = key.run, attempt = key.attempt, %node, gpus = ?a.gpus, log = %log.display(),
                "starting"
            ),
            Err(e) => {
                tracing::warn!(run = key.run, attempt = key.attempt, %node, error = %e, "not started twice")
            }
        }
    }

    /// One sync that waits for nothing and whose answer is not carried out: it reports the
    /// exits not yet acknowledged (and the processes running) before the agent exits.
    async fn last_sync(&mut self) {
        if self.session.is_none() {
            return;
        }
        match self.sync_request().await {
            Ok(mut request) => {
                request.wait_s = 0;
                let sent = self
                    .api
                    .post::<_, SyncAnswer>("/api/v1/agent/sync", &request, Duration::from_secs(3))
                    .await;
                if let Err(e) = sent {
                    tracing::warn!(error = %e, "could not report the last exits");
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not report the last exits"),
        }
    }

    /// A clean stop: stops the children with a short grace and waits for them, reports the
    /// exits not acknowledged before the stop began, then tells the server the session ends (it
    /// loses the nodes at once, so nothing new is placed there and the runs are requeued or end
    /// as lost). The children are gone before the server hears of it: a requeued run cannot
    /// start elsewhere while its old process still runs (found by a new-user check: a process
    /// that ignored SIGTERM ran 5 s more, its run already requeued). The exits of the stop
    /// itself are not reported: those runs are lost with their nodes, not failed.
    async fn shutdown(&mut self) {
        self.drain_exits();
        let before_stop = self.pending.clone();
        self.sup.stop_all(SHUTDOWN_GRACE);
        let deadline = Instant::now() + SHUTDOWN_GRACE + Duration::from_secs(5);
        while !self.sup.is_empty() {
            match tokio::time::timeout_at(deadline, self.sup.next_exit()).await {
                Ok(exit) => self.record_exit(exit),
                Err(_) => {
                    tracing::warn!(
                        left = self.sup.local().len(),
                        "children still alive at exit"
                    );
                    break;
                }
            }
        }
        self.pending = before_stop;
        if !self.pending.is_empty() {
            self.last_sync().await;
        }
        if let Some(session) = self.session.take() {
            let stop = StopRequest {
                session: session.id,
            };
            match self
                .api
                .post::<_, serde_json::Value>("/api/v1/agent/stop", &stop, Duration::from_secs(5))
                .await
            {
                Ok(_) => tracing::info!("told the server: this agent's nodes are lost"),
                Err(e) => tracing::warn!(
                    error = %e,
                    "could not tell the server this agent stops; it marks the nodes lost after its heartbeat timeout"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // --- flags and names ---------------------------------------------------------------------

    #[test]
    fn utilization_file_declares_each_nodes_gpus() {
        let text = "# demo\n*  3\n\ngpu-1 97,88,-,3\n";
        let lines = parse_utilization_file(text, 4).unwrap();
        assert_eq!(
            declared_utilization_for(&lines, "gpu-2"),
            Some(vec![Some(3); 4])
        );
        assert_eq!(
            declared_utilization_for(&lines, "GPU-1"),
            Some(vec![Some(97), Some(88), None, Some(3)])
        );
        assert_eq!(declared_utilization_for(&[], "gpu-1"), None);
        // Later lines win, also over a node's own line.
        let lines = parse_utilization_file("gpu-1 50\n* 0", 2).unwrap();
        assert_eq!(
            declared_utilization_for(&lines, "gpu-1"),
            Some(vec![Some(0); 2])
        );
        for bad in ["*", "* 101", "* 3,4,5", "gpu-1 a", "* -1", "* 3,,4,5"] {
            let e = parse_utilization_file(bad, 4).unwrap_err().to_string();
            assert!(e.contains("line 1"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn gpus_flag_parses_auto_and_declared_inventories() {
        assert_eq!("auto".parse::<GpuSpec>(), Ok(GpuSpec::Auto));
        assert_eq!(" AUTO ".parse::<GpuSpec>(), Ok(GpuSpec::Auto));
        assert_eq!(
            "8xH100".parse::<GpuSpec>(),
            Ok(GpuSpec::Declared {
                count: 8,
                model: "H100".into()
            })
        );
        assert_eq!(
            "4XRTX 6000".parse::<GpuSpec>(),
            Ok(GpuSpec::Declared {
                count: 4,
                model: "RTX 6000".into()
            })
        );
    }

    #[test]
    fn gpus_flag_rejects_bad_inputs() {
        for bad in [
            "",
            "x",
            "8x",
            "8x  ",
            "xH100",
            "0xH100",
            "-1xH100",
            "H100",
            "8 H100",
            "8*H100",
            "eightxH100",
            "99999999999xH100",
        ] {
            assert!(bad.parse::<GpuSpec>().is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn node_names_number_hosts_only_when_several() {
        assert_eq!(node_names("gpu-07", 1), vec!["gpu-07"]);
        assert_eq!(node_names("sim", 3), vec!["sim-1", "sim-2", "sim-3"]);
    }

    #[test]
    fn host_name_prefers_the_flag() {
        assert_eq!(host_name(Some(" box ")).unwrap(), "box");
        assert!(!host_name(None).unwrap().is_empty());
        assert!(!host_name(Some("  ")).unwrap().is_empty());
    }

    #[test]
    fn nvidia_smi_csv_parses_with_unknown_utilization() {
        let csv = "1, NVIDIA H100 80GB HBM3, 100\n0, NVIDIA H100 80GB HBM3, 37\n\n2, NVIDIA H100 80GB HBM3, [N/A]\n";
        let gpus = parse_nvidia_smi(csv).unwrap();
        assert_eq!(
            gpus,
            vec![
                GpuReading {
                    index: 0,
                    name: "NVIDIA H100 80GB HBM3".into(),
                    utilization: Some(37)
                },
                GpuReading {
                    index: 1,
                    name: "NVIDIA H100 80GB HBM3".into(),
                    utilization: Some(100)
                },
                GpuReading {
                    index: 2,
                    name: "NVIDIA H100 80GB HBM3".into(),
                    utilization: None
                },
            ]
        );
    }

    #[test]
    fn nvidia_smi_csv_refuses_garbage() {
        assert!(parse_nvidia_smi("").is_err());
        assert!(parse_nvidia_smi("NVIDIA-SMI has failed").is_err());
        assert!(parse_nvidia_smi("a, H100, 3").is_err());
        assert!(parse_nvidia_smi("0, H100, 3, extra").is_err());
    }

    // --- wire format -------------------------------------------------------------------------

    #[test]
    fn sync_request_and_answer_match_the_protocol_document() {
        let request = SyncRequest {
            session: "3f9c".into(),
            wait_s: 10,
            nodes: vec![NodeReport {
                node: 12,
                utilization: vec![Some(37), None],
            }],
            runs: vec![
                RunReport {
                    run: 5,
                    attempt: 1,
                    node: 12,
                    state: RunState::Running,
                    exit_code: None,
                    signal: None,
                    exited_s_ago: None,
                    fault: None,
                },
                Exit::new(
                    RunKey {
                        run: 6,
                        attempt: 2,
                        node: 12,
                    },
                    Outcome::Code(0),
                )
                .report(),
                Exit {
                    at: Instant::now() - Duration::from_secs(17),
                    ..Exit::new(
                        RunKey {
                            run: 7,
                            attempt: 1,
                            node: 12,
                        },
                        Outcome::Signal(9),
                    )
                }
                .report(),
            ],
            since: None,
            running_count: None,
            running_digest: None,
            started_up_to: None,
        };
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            serde_json::json!({"session": "3f9c", "wait_s": 10,
                "nodes": [{"node": 12, "utilization": [37, null]}],
                "runs": [{"run": 5, "attempt": 1, "node": 12, "state": "running"},
                         {"run": 6, "attempt": 2, "node": 12, "state": "exited", "exit_code": 0, "exited_s_ago": 0},
                         {"run": 7, "attempt": 1, "node": 12, "state": "exited", "signal": 9, "exited_s_ago": 17}]})
        );
        let answer: SyncAnswer = serde_json::from_str(
            r#"{"assignments": [{"run": 5, "attempt": 1, "node": 12, "gpus": [0, 1],
                  "command": "python train.py", "workdir": null, "env": {"K": "V"}}],
                "stops": [{"run": 7, "attempt": 1, "node": 12, "grace_s": 30}]}"#,
        )
        .unwrap();
        assert_eq!(answer.assignments[0].gpus, vec![0, 1]);
        assert_eq!(answer.assignments[0].env["K"], "V");
        assert_eq!(answer.stops[0].grace(), Duration::from_secs(30));
        let register: RegisterAnswer = serde_json::from_str(
            r#"{"session": "3f9c", "nodes": [{"id": 12, "name": "gpu-07"}], "heartbeat_s": 5, "timeout_s": 30}"#,
        )
        .unwrap();
        assert_eq!(register.nodes[0].id, 12);
    }

    // --- reconcile ---------------------------------------------------------------------------

    fn key(run: i64, node: i64) -> RunKey {
        RunKey {
            run,
            attempt: 1,
            node,
        }
    }

    fn assignment(run: i64, node: i64, gpus: &[u32]) -> Assignment {
        Assignment {
            run,
            attempt: 1,
            node,
            gpus: gpus.to_vec(),
            command: "true".into(),
            workdir: None,
            env: BTreeMap::new(),
            user: None,
        }
    }

    fn stop_order(run: i64, node: i64, grace_s: f64) -> StopOrder {
        StopOrder {
            run,
            attempt: 1,
            node,
            grace_s,
        }
    }

    fn local(run: i64, node: i64, gpus: &[u32], stopping: Option<u64>) -> LocalProcess {
        LocalProcess {
            key: key(run, node),
            gpus: gpus.to_vec(),
            stopping: stopping.map(Duration::from_secs),
        }
    }

    fn starts(plan: &Plan) -> Vec<RunKey> {
        plan.start.iter().map(Assignment::key).collect()
    }

    #[test]
    fn reconcile_starts_new_assignments_once() {
        let answer = SyncAnswer {
            assignments: vec![assignment(1, 12, &[0, 1]), assignment(2, 12, &[2])],
            stops: vec![],
            ..SyncAnswer::default()
        };
        let plan = reconcile(&answer, &[], &HashSet::new());
        assert_eq!(starts(&plan), vec![key(1, 12), key(2, 12)]);
        assert!(plan.stop.is_empty() && plan.waiting.is_empty());
        // Running: nothing to do.
        let running = [local(1, 12, &[0, 1], None), local(2, 12, &[2], None)];
        let started: HashSet<RunKey> = [key(1, 12), key(2, 12)].into();
        let plan = reconcile(&answer, &running, &started);
        assert_eq!(plan, Plan::default());
        assert!(!plan.changes_something());
        // Exited (no longer local) but still assigned: never started again.
        let plan = reconcile(&answer, &[], &started);
        assert_eq!(plan, Plan::default());
    }

    #[test]
    fn reconcile_waits_for_gpus_held_by_a_live_process_on_the_same_node() {
        let answer = SyncAnswer {
            assignments: vec![
                assignment(2, 12, &[1, 2]),
                assignment(3, 13, &[1]),
                assignment(4, 12, &[3]),
            ],
            stops: vec![stop_order(1, 12, 30.0)],
            ..SyncAnswer::default()
        };
        let running = [local(1, 12, &[0, 1], Some(30))];
        let started: HashSet<RunKey> = [key(1, 12)].into();
        let plan = reconcile(&answer, &running, &started);
        assert_eq!(starts(&plan), vec![key(3, 13), key(4, 12)]);
        assert_eq!(plan.waiting, vec![key(2, 12)]);
        assert!(plan.stop.is_empty(), "already stopping with that grace");
        // Once run 1 has exited, run 2 starts.
        let started: HashSet<RunKey> = [key(1, 12), key(3, 13), key(4, 12)].into();
        let plan = reconcile(&answer, &[], &started);
        assert_eq!(starts(&plan), vec![key(2, 12)]);
    }

    #[test]
    fn reconcile_does_not_start_two_assignments_on_one_gpu() {
        let answer = SyncAnswer {
            assignments: vec![assignment(1, 12, &[0]), assignment(2, 12, &[0])],
            stops: vec![],
            ..SyncAnswer::default()
        };
        let plan = reconcile(&answer, &[], &HashSet::new());
        assert_eq!(starts(&plan), vec![key(1, 12)]);
        assert_eq!(plan.waiting, vec![key(2, 12)]);
    }

    #[test]
    fn reconcile_stops_listed_and_orphaned_processes() {
        let answer = SyncAnswer {
            assignments: vec![assignment(1, 12, &[0])],
            stops: vec![stop_order(2, 12, 5.0), stop_order(9, 12, 5.0)],
            ..SyncAnswer::default()
        };
        let running = [
            local(1, 12, &[0], None),
            local(2, 12, &[1], None),
            local(3, 12, &[2], None),
        ];
        let started: HashSet<RunKey> = [key(1, 12), key(2, 12), key(3, 12)].into();
        let plan = reconcile(&answer, &running, &started);
        assert_eq!(
            plan.stop,
            vec![
                (key(2, 12), Duration::from_secs(5)),
                (key(3, 12), ORPHAN_GRACE)
            ]
        );
        assert!(plan.start.is_empty());
    }

    #[test]
    fn reconcile_asks_again_only_for_a_shorter_grace() {
        let running = [local(2, 12, &[1], Some(30))];
        let started: HashSet<RunKey> = [key(2, 12)].into();
        let shorter = SyncAnswer {
            assignments: vec![],
            stops: vec![stop_order(2, 12, 5.0)],
            ..SyncAnswer::default()
        };
        assert_eq!(
            reconcile(&shorter, &running, &started).stop,
            vec![(key(2, 12), Duration::from_secs(5))]
        );
        let orphan = SyncAnswer::default();
        assert!(reconcile(&orphan, &running, &started).stop.is_empty());
    }

    #[test]
    fn delta_answers_merge_into_the_sessions_orders_and_done_ones_are_forgotten() {
        let mut desired = Desired::default();
        let full = SyncAnswer {
            assignments: vec![assignment(1, 12, &[0]), assignment(2, 12, &[1])],
            version: Some(4),
            full: true,
            ..SyncAnswer::default()
        };
        desired.merge(&full, 4);
        // A delta: run 2 is to stop, run 3 to start; run 1 is not mentioned and stays.
        let delta = SyncAnswer {
            assignments: vec![assignment(3, 12, &[2])],
            stops: vec![stop_order(2, 12, 30.0)],
            version: Some(6),
            full: false,
            report_running: false,
        };
        desired.merge(&delta, 6);
        assert_eq!(desired.version, 6);
        let merged = desired.answer();
        let keys: Vec<RunKey> = merged.assignments.iter().map(Assignment::key).collect();
        assert_eq!(keys, vec![key(1, 12), key(3, 12)]);
        assert_eq!(merged.stops.len(), 1);
        assert_eq!(merged.stops[0].key(), key(2, 12));
        // Run 1 ran and exited, run 2 is still stopping, run 3 has not started yet.
        let started: HashSet<RunKey> = [key(1, 12), key(2, 12)].into();
        desired.prune(&[local(2, 12, &[1], Some(30))], &started);
        let keys: Vec<RunKey> = desired.assignments.keys().copied().collect();
        assert_eq!(keys, vec![key(3, 12)]);
        assert_eq!(
            desired.stops.keys().copied().collect::<Vec<_>>(),
            vec![key(2, 12)]
        );
        // Run 2 exits: its stop is done too. A full answer replaces everything.
        desired.prune(&[], &started);
        assert!(desired.stops.is_empty());
        desired.merge(&full, 9);
        assert_eq!(desired.assignments.len(), 2);
        assert!(desired.stops.is_empty());
    }

    #[test]
    fn reconcile_never_starts_an_assignment_that_is_also_stopped() {
        let answer = SyncAnswer {
            assignments: vec![assignment(1, 12, &[0])],
            stops: vec![stop_order(1, 12, 0.0)],
            ..SyncAnswer::default()
        };
        let plan = reconcile(&answer, &[], &HashSet::new());
        assert_eq!(plan, Plan::default());
    }

    // --- supervision with real processes -----------------------------------------------------

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            use std::sync::atomic::{AtomicU32, Ordering};
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "tranche-agent-{name}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A FIFO the child writes `ready` to once it is set up; [`Ready::wait`] blocks on it.
    struct Ready {
        path: PathBuf,
        rx: tokio::net::unix::pipe::Receiver,
    }

    impl Ready {
        fn new(dir: &Path) -> Self {
            let path = dir.join("ready.fifo");
            nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
            // Read-write so that opening does not wait for a writer and reads never see EOF.
            let rx = tokio::net::unix::pipe::OpenOptions::new()
                .read_write(true)
                .open_receiver(&path)
                .unwrap();
            Ready { path, rx }
        }

        /// Shell snippet that signals readiness.
        fn signal(&self) -> String {
            format!("echo ready > '{}'", self.path.display())
        }

        async fn wait(&mut self) {
            use tokio::io::AsyncReadExt;
            let mut got = Vec::new();
            let read = async {
                while !got.ends_with(b"ready\n") {
                    let mut buf = [0u8; 64];
                    let n = self.rx.read(&mut buf).await.unwrap();
                    got.extend_from_slice(&buf[..n]);
                }
            };
            tokio::time::timeout(GUARD, read)
                .await
                .expect("the child never became ready");
        }
    }

    /// Failure guard only: every wait below ends long before when the code is right.
    const GUARD: Duration = Duration::from_secs(20);

    fn job(run: i64, gpus: &[u32], command: String, dir: &Path) -> Assignment {
        Assignment {
            run,
            attempt: 2,
            node: 12,
            gpus: gpus.to_vec(),
            command,
            workdir: Some(dir.display().to_string()),
            env: [("K".to_string(), "V".to_string())].into(),
            user: None,
        }
    }

    async fn next_exit(sup: &mut Supervisor) -> Exit {
        tokio::time::timeout(GUARD, sup.next_exit())
            .await
            .expect("no exit reported")
    }

    /// A command runs only once the agent opened its start gate (after recording the
    /// process): an agent gone before that leaves a shell that exits without running it.
    #[tokio::test]
    async fn a_command_waits_for_its_start_gate_and_never_runs_without_it() {
        use std::io::Write;
        let dir = TempDir::new("gate");
        let a = job(
            9,
            &[0],
            "echo ran > out; read -r line; echo \"[$line]\" > stdin".into(),
            &dir.0,
        );
        let log = dir.0.join("gate.log");
        // Gate closed unopened: exit 125, the command never ran.
        let (mut child, gate) = supervisor::spawn_child(&a, "n1", &log, "s", None).unwrap();
        drop(gate);
        let status = tokio::time::timeout(GUARD, child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.code(), Some(125));
        assert!(!dir.0.join("out").exists());
        // Opened: it runs, and its standard input is empty, as before the gate.
        let (mut child, gate) = supervisor::spawn_child(&a, "n1", &log, "s", None).unwrap();
        std::fs::File::from(gate)
            .write_all(&supervisor::gate_lines(&a.env).unwrap())
            .unwrap();
        let status = tokio::time::timeout(GUARD, child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{status:?}");
        assert_eq!(std::fs::read_to_string(dir.0.join("out")).unwrap(), "ran\n");
        assert_eq!(
            std::fs::read_to_string(dir.0.join("stdin")).unwrap(),
            "[]\n"
        );
    }

    /// The run's environment reaches its command byte for byte (quotes, line breaks, `$`,
    /// backquotes, backslashes, an empty value) and nothing before the command's shell: the
    /// process the agent starts (under `--run-as-submitter`, `setpriv` as root) runs with
    /// none of it, so a run's `PATH` or `LD_PRELOAD` cannot choose what runs as root (found by
    /// a check: a run's `PATH` picked the `setpriv` that the agent started as root). A name
    /// that is no shell variable's fails the run.
    #[tokio::test]
    async fn the_runs_environment_reaches_only_its_command() {
        use std::io::Write;
        let dir = TempDir::new("gateenv");
        let values = [
            ("PLAIN", "value"),
            ("QUOTE", "it's a \"test\" '' '"),
            ("LINES", "two\nlines\n\nand a trailing one\n"),
            ("DOLLAR", "$(touch pwned) ${HOME} `touch pwned2` $$"),
            ("BACKSLASH", "back\\slash\\n \\'"),
            ("UNICODE", "ünïcode ☃ \u{7f}"),
            ("EMPTY", ""),
            ("PATH", "/nonexistent/bin:/usr/bin:/bin"),
            ("LD_PRELOAD", "/nonexistent/evil.so"),
            // Names of the outer shell's own variables change nothing of the others (found
            // by a check: a variable `nl` replaced the line breaks of those after it).
            ("nl", "X"),
            ("e", "E"),
            ("l", "L"),
            ("p", "a\nb"),
        ];
        let mut a = job(
            11,
            &[0],
            format!(
                "for v in {}; do eval \"printf '%s' \\\"\\$$v\\\"\" > \"$v.out\"; done; touch done; sleep 30",
                values.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(" ")
            ),
            &dir.0,
        );
        a.env = values
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let log = dir.0.join("env.log");
        let (mut child, gate) = supervisor::spawn_child(&a, "n1", &log, "s", None).unwrap();
        let pid = child.id().unwrap();
        // Before and after the gate, the started process's own environment has none of it.
        let environ = || std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let has = |env: &[u8], name: &str| {
            env.split(|b| *b == 0)
                .any(|v| v.starts_with(format!("{name}=").as_bytes()))
        };
        // (The parent learns of the exec a moment before the kernel sets the new program's
        // environment up, which reads as empty until then.)
        tokio::time::timeout(GUARD, async {
            while environ().is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the shell's environment");
        assert!(has(&environ(), "TRANCHE_RUN_ID"));
        std::fs::File::from(gate)
            .write_all(&supervisor::gate_lines(&a.env).unwrap())
            .unwrap();
        tokio::time::timeout(GUARD, async {
            while !dir.0.join("done").exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the command ran");
        let env = environ();
        for (k, v) in values {
            assert_eq!(
                std::fs::read_to_string(dir.0.join(format!("{k}.out"))).unwrap(),
                v,
                "{k}"
            );
            if k != "PATH" {
                assert!(!has(&env, k), "{k} in the started process's environment");
            }
        }
        assert!(!dir.0.join("pwned").exists() && !dir.0.join("pwned2").exists());
        let _ =
            nix::sys::signal::killpg(Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
        let _ = child.wait().await;
        // A name no shell variable may have: the run fails at its start, the node is fine.
        for reserved in ["TRANCHE_NL", "TRANCHE_RUN_ID"] {
            let env = [(reserved.to_string(), "x".to_string())].into();
            assert_eq!(supervisor::gate_lines(&env), None, "{reserved}");
        }
        a.env = [("A-B".to_string(), "x".to_string())].into();
        assert_eq!(supervisor::gate_lines(&a.env), None);
        let mut sup = Supervisor::new(dir.0.join("logs"));
        sup.start(&a, "n1").unwrap();
        let exit = next_exit(&mut sup).await;
        assert_eq!(exit.outcome, Outcome::Code(SPAWN_FAILED_EXIT_CODE));
        assert!(exit.fault.is_none(), "{:?}", exit.fault);
    }

    /// Under `--run-as-submitter` a run never runs as root nor as a system account (outside
    /// `--min-submitter-uid` to `--max-submitter-uid`, 1000 to 60000 by default): a person
    /// named `postgres`, `daemon` or `slurm` would own the node's services' files (found by a
    /// check: a run as `postgres` could reach the embedded database's socket directory).
    #[test]
    fn system_accounts_are_not_submitters() {
        let dir = TempDir::new("sysacct");
        let mut a = job(1, &[0], "true".into(), &dir.0);
        for (name, uids, ok) in [
            ("root", 0..=u32::MAX, false),
            ("daemon", 1000..=60000, false),
            ("daemon", 1..=60000, true),
            ("nobody", 1000..=60000, false),
            ("nobody", 1000..=65534, true),
        ] {
            if nix::unistd::User::from_name(name).ok().flatten().is_none() {
                continue;
            }
            a.user = Some(name.to_string());
            let got = supervisor::submitter_account(&a, &uids);
            assert_eq!(got.is_ok(), ok, "{name} {uids:?}: {got:?}");
            if name != "root" && !ok {
                assert!(
                    format!("{:#}", got.unwrap_err()).contains("system account"),
                    "{name}"
                );
            }
        }
    }

    #[tokio::test]
    async fn child_gets_its_environment_and_dies_on_sigterm() {
        let dir = TempDir::new("env");
        let mut ready = Ready::new(&dir.0);
        let mut sup = Supervisor::new(dir.0.join("logs"));
        let a = job(
            5,
            &[0, 3],
            format!(
                "echo $CUDA_VISIBLE_DEVICES $TRANCHE_RUN_ID $TRANCHE_ATTEMPT $K > out; echo to-log; {}; sleep 30",
                ready.signal()
            ),
            &dir.0,
        );
        let log = sup.start(&a, "gpu-07").unwrap();
        assert_eq!(log, dir.0.join("logs/run-5-attempt-2-gpu-07.log"));
        assert!(sup.start(&a, "gpu-07").is_err(), "already running");
        ready.wait().await;
        assert_eq!(
            std::fs::read_to_string(dir.0.join("out")).unwrap(),
            "0,3 5 2 V\n"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "to-log\n");
        assert_eq!(
            sup.local(),
            vec![LocalProcess {
                key: a.key(),
                gpus: vec![0, 3],
                stopping: None
            }]
        );

        assert!(sup.stop(a.key(), Duration::from_secs(60)));
        let exit = next_exit(&mut sup).await;
        assert_eq!(exit.key, a.key());
        assert_eq!(exit.outcome, Outcome::Signal(Signal::SIGTERM as i32));
        assert!(sup.is_empty());
        assert!(!sup.stop(a.key(), Duration::ZERO), "gone");
    }

    #[tokio::test]
    async fn stop_sends_sigterm_to_the_group_first() {
        let dir = TempDir::new("term");
        let mut ready = Ready::new(&dir.0);
        let mut sup = Supervisor::new(dir.0.join("logs"));
        let a = job(
            6,
            &[1],
            format!(
                "trap 'echo term > got; exit 3' TERM; {}; sleep 30 & wait",
                ready.signal()
            ),
            &dir.0,
        );
        sup.start(&a, "n").unwrap();
        ready.wait().await;
        sup.stop(a.key(), Duration::from_secs(60));
        let exit = next_exit(&mut sup).await;
        assert_eq!(exit.outcome, Outcome::Code(3));
        assert_eq!(
            std::fs::read_to_string(dir.0.join("got")).unwrap(),
            "term\n"
        );
    }

    #[tokio::test]
    async fn a_process_ignoring_sigterm_is_killed_after_the_grace() {
        let dir = TempDir::new("kill");
        let mut ready = Ready::new(&dir.0);
        let mut sup = Supervisor::new(dir.0.join("logs"));
        let a = job(
            7,
            &[],
            format!("trap '' TERM; {}; sleep 30", ready.signal()),
            &dir.0,
        );
        sup.start(&a, "n").unwrap();
        ready.wait().await;
        let grace = Duration::from_millis(300);
        let asked = std::time::Instant::now();
        sup.stop(a.key(), Duration::from_secs(60));
        // A shorter grace replaces the longer one.
        sup.stop(a.key(), grace);
        let exit = next_exit(&mut sup).await;
        assert_eq!(exit.outcome, Outcome::Signal(Signal::SIGKILL as i32));
        assert!(asked.elapsed() >= grace, "killed before the grace ended");
    }

    #[tokio::test]
    async fn exit_codes_and_output_are_reported() {
        let dir = TempDir::new("exit");
        let mut sup = Supervisor::new(dir.0.join("logs"));
        let a = job(8, &[0], "echo out; echo err >&2; exit 7".into(), &dir.0);
        let log = sup.start(&a, "n").unwrap();
        let exit = next_exit(&mut sup).await;
        assert_eq!(exit.outcome, Outcome::Code(7));
        let report = exit.report();
        assert!(report.exited_s_ago.is_some_and(|s| s <= 1), "{report:?}");
        assert_eq!(
            report,
            RunReport {
                run: 8,
                attempt: 2,
                node: 12,
                state: RunState::Exited,
                exit_code: Some(7),
                signal: None,
                exited_s_ago: report.exited_s_ago,
                fault: None,
            }
        );
        let text = std::fs::read_to_string(log).unwrap();
        assert!(text.contains("out\n") && text.contains("err\n"), "{text:?}");
        assert!(sup.try_exit().is_none());
    }

    /// A command's shell is its own: `kill $$` ends the command as it would under a plain
    /// `sh -c`, `exit` and `exec` end only the command, and a command whose text ends inside a
    /// here-document runs as written (found by a check of the exit-file wrapper: the command ran
    /// in a subshell of the outer shell, where `$$` named the outer shell, which survives
    /// SIGTERM, and a here-document swallowed the wrapper's closing parenthesis). Each end is
    /// also written to the exit file, as an adopting agent reads it.
    #[tokio::test]
    async fn a_commands_shell_is_its_own() {
        let dir = TempDir::new("ownshell");
        let mut sup = Supervisor::new(dir.0.join("logs"));
        let cases: [(&str, Outcome, &str); 5] = [
            (
                "echo before; kill $$; echo after",
                Outcome::Signal(15),
                "143",
            ),
            ("kill -HUP $$", Outcome::Signal(1), "129"),
            ("cat <<EOF\nhello from heredoc", Outcome::Code(0), "0"),
            ("exec sh -c 'exit 9'", Outcome::Code(9), "9"),
            ("exit 3; echo never", Outcome::Code(3), "3"),
        ];
        for (i, (command, outcome, written)) in cases.iter().enumerate() {
            let a = job(100 + i as i64, &[0], (*command).to_string(), &dir.0);
            let log = sup.start(&a, "n").unwrap();
            let exit = next_exit(&mut sup).await;
            assert_eq!(exit.outcome, *outcome, "{command}");
            let text = std::fs::read_to_string(&log).unwrap();
            assert!(
                !text.contains("after") && !text.contains("never"),
                "{text:?}"
            );
            if command.contains("heredoc") {
                assert_eq!(text.trim_end(), "hello from heredoc");
            }
            // The exit file is removed once the end is known; an adopting agent reads the
            // status as written, which the wrapper wrote before it.
            assert!(!exit_path(&log).exists());
            assert_eq!(
                written_outcome_of(written),
                Some(*outcome),
                "{command}: the status its shell writes reads back as its outcome"
            );
        }
    }

    /// The outcome an exit file holding `text` reads as.
    fn written_outcome_of(text: &str) -> Option<Outcome> {
        let dir = TempDir::new("written");
        let path = dir.0.join("f.exit");
        std::fs::write(&path, format!("{text}\n")).unwrap();
        written_outcome(&path)
    }

    /// Links planted at a run's log and exit file names (in a log directory its submitter may
    /// write) are replaced, never followed: the files they point to are neither truncated,
    /// written nor given away (found by a check of `--run-as-submitter`: a root-only file
    /// became the submitter's). An exit file that is a FIFO reads as no status, at once.
    #[tokio::test]
    async fn links_at_a_runs_file_names_are_never_followed() {
        let dir = TempDir::new("links");
        let logs = dir.0.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let victim = dir.0.join("victim");
        std::fs::write(&victim, "keep me\n").unwrap();
        let mut sup = Supervisor::new(logs.clone());
        let a = job(200, &[0], "echo hello; exit 4".into(), &dir.0);
        let log = sup.log_path(a.key(), "n");
        std::os::unix::fs::symlink(&victim, &log).unwrap();
        std::os::unix::fs::symlink(&victim, exit_path(&log)).unwrap();
        sup.start(&a, "n").unwrap();
        assert_eq!(next_exit(&mut sup).await.outcome, Outcome::Code(4));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
        assert!(!std::fs::symlink_metadata(&log).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "hello\n");
        // A log replaced by a link is never bounded through it.
        std::fs::write(&victim, "x".repeat(1000)).unwrap();
        std::fs::remove_file(&log).unwrap();
        std::os::unix::fs::symlink(&victim, &log).unwrap();
        assert_eq!(cap_log(&log, 10), 0);
        assert_eq!(std::fs::read_to_string(&victim).unwrap().len(), 1000);
        let fifo = dir.0.join("fifo.exit");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(written_outcome(&fifo), None);
        let big = dir.0.join("big.exit");
        std::fs::write(&big, "7".repeat(100_000)).unwrap();
        assert_eq!(written_outcome(&big), None, "only 16 bytes are read");
    }

    // --- the loop against a scripted server -------------------------------------------------

    #[derive(Default)]
    struct Script {
        registers: usize,
        syncs: Vec<SyncRequest>,
        saw_exit: bool,
        stale_sent: bool,
    }

    type Shared = std::sync::Arc<std::sync::Mutex<Script>>;

    fn authorized(headers: &axum::http::HeaderMap) -> bool {
        headers.get("authorization").and_then(|v| v.to_str().ok()) == Some("Bearer sekrit")
    }

    async fn mock_register(
        axum::extract::State(script): axum::extract::State<Shared>,
        headers: axum::http::HeaderMap,
        axum::Json(body): axum::Json<RegisterRequest>,
    ) -> axum::Json<serde_json::Value> {
        assert!(authorized(&headers));
        assert_eq!(
            body.nodes,
            vec![RegisterNode {
                name: "box".into(),
                gpus: 2,
                gpu_model: "H100".into()
            }]
        );
        script.lock().unwrap().registers += 1;
        axum::Json(
            serde_json::json!({"session": "s1", "nodes": [{"id": 12, "name": "box"}],
            "heartbeat_s": 5, "timeout_s": 30}),
        )
    }

    /// Lists one assignment (`exit 4`) until its exit is reported, then checks the exit is not
    /// sent again, ends the session (409 stale_session) and finally refuses the token (401).
    async fn mock_sync(
        axum::extract::State(script): axum::extract::State<Shared>,
        headers: axum::http::HeaderMap,
        axum::Json(body): axum::Json<SyncRequest>,
    ) -> (axum::http::StatusCode, axum::Json<serde_json::Value>) {
        use axum::http::StatusCode;
        assert!(authorized(&headers));
        let mut s = script.lock().unwrap();
        s.syncs.push(body.clone());
        let exited = body
            .runs
            .iter()
            .any(|r| r.run == 5 && r.state == RunState::Exited && r.exit_code == Some(4));
        let assigned = serde_json::json!({"assignments": [{"run": 5, "attempt": 1, "node": 12,
            "gpus": [1], "command": "exit 4", "workdir": null, "env": {}}], "stops": []});
        if !s.saw_exit {
            s.saw_exit = exited;
            let answer = if exited {
                serde_json::json!({})
            } else {
                assigned
            };
            (StatusCode::OK, axum::Json(answer))
        } else if !s.stale_sent {
            s.stale_sent = true;
            let error =
                serde_json::json!({"error": {"code": "stale_session", "message": "replaced"}});
            (StatusCode::CONFLICT, axum::Json(error))
        } else {
            let error =
                serde_json::json!({"error": {"code": "unauthorized", "message": "revoked"}});
            (StatusCode::UNAUTHORIZED, axum::Json(error))
        }
    }

    /// Serves an agent of node `box` (2 H100) against a scripted server registering it with
    /// [`mock_register`] and answering syncs with `sync`, until the agent stops (within
    /// [`GUARD`]): the agent and how its serving ended.
    async fn against_script<H, T>(
        dir: &TempDir,
        script: &Shared,
        sync: H,
    ) -> (Agent, anyhow::Result<()>)
    where
        H: axum::handler::Handler<T, Shared>,
        T: 'static,
    {
        let app = axum::Router::new()
            .route("/api/v1/agent/register", axum::routing::post(mock_register))
            .route("/api/v1/agent/sync", axum::routing::post(sync))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let args = test_args(format!("http://{addr}/"), "2xH100", "box", dir);
        let mut agent = Agent::new(&args).await.unwrap();
        let result = tokio::time::timeout(GUARD, agent.serve())
            .await
            .expect("the agent never stopped");
        server.abort();
        (agent, result)
    }

    /// Delta syncs: assigns run 5 (`sleep 5`) until it is reported running, answers that
    /// sync, asks for the whole running list once (`report_running`), then refuses the token.
    async fn mock_digest_sync(
        axum::extract::State(script): axum::extract::State<Shared>,
        axum::Json(body): axum::Json<SyncRequest>,
    ) -> (axum::http::StatusCode, axum::Json<serde_json::Value>) {
        use axum::http::StatusCode;
        let mut s = script.lock().unwrap();
        s.syncs.push(body.clone());
        let reported = s.syncs.iter().position(|r| {
            r.runs
                .iter()
                .any(|x| x.run == 5 && x.state == RunState::Running)
        });
        let answer = match reported.map(|at| s.syncs.len() - 1 - at) {
            None => serde_json::json!({"assignments": [{"run": 5, "attempt": 1, "node": 12,
                "gpus": [0], "command": "sleep 5", "workdir": null, "env": {}}], "stops": [],
                "version": 1, "full": true}),
            Some(0) => serde_json::json!({"version": 1, "full": false}),
            Some(1) => serde_json::json!({"version": 1, "full": false, "report_running": true}),
            Some(_) => {
                let error =
                    serde_json::json!({"error": {"code": "unauthorized", "message": "revoked"}});
                return (StatusCode::UNAUTHORIZED, axum::Json(error));
            }
        };
        (StatusCode::OK, axum::Json(answer))
    }

    /// A running process is listed until a 200 answer acknowledged it; later delta syncs carry
    /// only the count and digest of the running set (the digest computed with Python's
    /// `hashlib` from `5:1:12`), until the server asks for the whole list.
    #[tokio::test]
    async fn delta_syncs_list_a_running_process_until_acknowledged_then_its_digest() {
        let dir = TempDir::new("digest");
        let script = Shared::default();
        let (mut agent, result) = against_script(&dir, &script, mock_digest_sync).await;
        assert!(result.unwrap_err().to_string().contains("401"));
        agent.sup.stop_all(Duration::ZERO);

        let s = script.lock().unwrap();
        let running = |r: &SyncRequest| {
            r.runs
                .iter()
                .filter(|x| x.state == RunState::Running)
                .count()
        };
        let at = s.syncs.iter().position(|r| running(r) == 1).unwrap();
        assert!(s.syncs[..at].iter().all(|r| r.running_count == Some(0)));
        let [listed, acknowledged, asked] = &s.syncs[at..] else {
            panic!("{} syncs after the first report", s.syncs.len() - at);
        };
        let figures = (Some(1), Some(663_525_283_786_214_312));
        for r in [listed, acknowledged, asked] {
            assert_eq!((r.running_count, r.running_digest), figures);
            assert_eq!(r.started_up_to, Some(5), "the highest run it started");
        }
        assert_eq!(s.syncs[0].started_up_to, None, "none started yet");
        assert_eq!(running(acknowledged), 0, "acknowledged: not listed");
        assert_eq!(running(asked), 1, "listed again when the server asks");
    }

    #[tokio::test]
    async fn agent_runs_an_assignment_reports_its_exit_and_reregisters() {
        let dir = TempDir::new("loop");
        let script = Shared::default();
        let (agent, result) = against_script(&dir, &script, mock_sync).await;
        let err = result.unwrap_err().to_string();
        assert!(err.contains("401"), "{err}");

        let s = script.lock().unwrap();
        assert_eq!(s.registers, 2, "registered again after stale_session");
        let first = &s.syncs[0];
        assert_eq!(first.session, "s1");
        // At most the heartbeat period the server asks for (5 s here, under WAIT_S).
        assert_eq!(first.wait_s, 5);
        assert_eq!(
            first.nodes,
            vec![NodeReport {
                node: 12,
                utilization: vec![None, None]
            }]
        );
        // The exit was carried until a 200 answer, then never again.
        let acked = s
            .syncs
            .iter()
            .position(|r| r.runs.iter().any(|x| x.state == RunState::Exited))
            .unwrap();
        assert!(s.syncs[acked + 1..].iter().all(|r| r.runs.is_empty()));
        assert!(agent.pending.is_empty() && agent.sup.is_empty());
        assert_eq!(agent.started, [key(5, 12)].into(), "started once");
        assert!(dir.0.join("logs/run-5-attempt-1-box.log").exists());
    }

    #[tokio::test]
    async fn a_missing_workdir_is_a_start_error() {
        let dir = TempDir::new("nodir");
        let mut sup = Supervisor::new(dir.0.join("logs"));
        let a = job(9, &[0], "true".into(), &dir.0.join("missing"));
        let log = sup.start(&a, "n").unwrap();
        // Once starts settle, the failed start is already an exit: a sync made then reports
        // it as such, never as a running process.
        sup.starts_settled(GUARD).await;
        let exit = sup
            .try_exit()
            .expect("the failed start is an exit once starts settle");
        assert_eq!(exit.key, a.key());
        assert_eq!(exit.outcome, Outcome::Code(SPAWN_FAILED_EXIT_CODE));
        // The run's own setting: not the node's fault.
        assert_eq!(exit.fault, None);
        assert!(sup.is_empty());
        let text = std::fs::read_to_string(log).unwrap();
        assert!(
            text.starts_with("tranche agent: cannot start") && text.contains("missing"),
            "{text}"
        );
    }

    /// A log directory the agent cannot make is the node's fault: the exit says why, and the
    /// server drains the node instead of failing every run sent there.
    #[tokio::test]
    async fn a_log_directory_that_cannot_be_made_is_a_node_fault() {
        let dir = TempDir::new("nologdir");
        // A file where the log directory should be: no account, root included, makes it.
        std::fs::write(dir.0.join("logs"), "").unwrap();
        let mut sup = Supervisor::new(dir.0.join("logs").join("deeper"));
        let a = job(9, &[0], "true".into(), &dir.0);
        sup.start(&a, "n").unwrap();
        sup.starts_settled(GUARD).await;
        let exit = sup.try_exit().expect("the failed start is an exit");
        assert_eq!(exit.outcome, Outcome::Code(SPAWN_FAILED_EXIT_CODE));
        let fault = exit.fault.clone().expect("a node fault");
        assert!(fault.contains("cannot create the log directory"), "{fault}");
        assert_eq!(exit.report().fault, Some(fault));
    }

    /// No run can drain a node through what it names: with a `workdir`, a start that fails
    /// is the run's, unless the node ran out of processes, memory or files; arguments too
    /// large are always the run's; without one, a shell that cannot start is the node's.
    #[test]
    fn only_the_nodes_own_failures_are_faults() {
        use nix::errno::Errno;
        let e = |errno: Errno| std::io::Error::from_raw_os_error(errno as i32);
        for (errno, workdir, node) in [
            (Errno::EACCES, true, false),
            (Errno::ENOENT, true, false),
            (Errno::ENOTDIR, true, false),
            (Errno::ENAMETOOLONG, true, false),
            (Errno::E2BIG, true, false),
            (Errno::E2BIG, false, false),
            (Errno::EAGAIN, true, true),
            (Errno::ENOMEM, true, true),
            (Errno::EMFILE, false, true),
            (Errno::ENOENT, false, true),
        ] {
            assert_eq!(
                supervisor::spawn_fault_is_the_nodes(&e(errno), workdir),
                node,
                "{errno} with a workdir: {workdir}"
            );
        }
    }

    #[test]
    fn a_fault_is_one_bounded_line() {
        let key = RunKey {
            run: 1,
            attempt: 1,
            node: 2,
        };
        let long = format!(
            "disk\nfull\u{2028}\u{7}{}",
            "x".repeat(2 * supervisor::FAULT_MAX_CHARS)
        );
        let exit = Exit::fault(key, Outcome::Code(125), &long);
        let fault = exit.fault.unwrap();
        assert_eq!(fault.chars().count(), supervisor::FAULT_MAX_CHARS);
        assert!(fault.starts_with("disk full  x"), "{fault}");
        assert!(
            Exit::fault(key, Outcome::Code(125), " \n")
                .fault
                .unwrap()
                .contains("could not start")
        );
    }

    /// An agent refuses to start with a state directory it cannot write (it would start an
    /// attempt twice after a restart), and its records are readable by its user only.
    #[test]
    fn the_state_directory_must_be_writable_and_records_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = TempDir::new("records-dir");
        let file = dir.0.join("a-file");
        std::fs::write(&file, "x").unwrap();
        let err = ProcessRecords::new(file.join("state"))
            .check_writable()
            .unwrap_err();
        assert!(format!("{err:#}").contains("cannot be written"), "{err:#}");
        let records = ProcessRecords::new(dir.0.join("state"));
        records.check_writable().unwrap();
        records.started("n1", 4242, 1, "s", None).unwrap();
        let mode = std::fs::metadata(dir.0.join("state/node-n1.processes"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        // The probe is gone: only the records are left.
        let names: Vec<_> = std::fs::read_dir(dir.0.join("state"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("node-n1.processes")]);
    }

    /// An agent of one node `name` with `gpus`, serving from `server`, its logs and state in
    /// `dir`.
    fn test_args(server: String, gpus: &str, name: &str, dir: &TempDir) -> AgentArgs {
        AgentArgs {
            server,
            token: Secret::new("sekrit"),
            gpus: gpus.parse().unwrap(),
            nodes: 1,
            name: Some(name.into()),
            log_dir: dir.0.join("logs"),
            log_max_bytes: 1 << 30,
            state_dir: dir.0.join("state"),
            utilization_file: None,
            full_sync: false,
            run_as_submitter: false,
            min_submitter_uid: 1000,
            max_submitter_uid: 60000,
        }
    }

    /// Waits until child `pid`'s environment names its node: a spawn returns while the kernel
    /// may still be setting up the new program's environment (`/proc/PID/environ` reads empty
    /// until then).
    fn wait_for_environment(pid: i32) {
        let deadline = Instant::now() + GUARD;
        while !std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|e| e.windows(13).any(|w| w == b"TRANCHE_NODE="))
        {
            assert!(Instant::now() < deadline, "no environment");
            std::thread::yield_now();
        }
    }

    /// On a kept node, a restarted agent adopts the proven processes whose records name their
    /// run, and returns the ends its predecessor recorded or that a process gone meanwhile
    /// wrote; a record naming no run (an older agent's) is still killed; the records then hold
    /// the adopted process alone, so a second take-over adopts it again and reports nothing
    /// twice. On a node not kept, the same record is killed.
    #[test]
    fn a_kept_nodes_recorded_runs_are_adopted_and_their_ends_told() {
        use std::os::unix::process::CommandExt;
        let dir = TempDir::new("adopt");
        let records = ProcessRecords::new(dir.0.join("state"));
        let spawn = || {
            let child = std::process::Command::new("sleep")
                .arg("30")
                .env("TRANCHE_NODE", "n1")
                .process_group(0)
                .spawn()
                .unwrap();
            let pid = i32::try_from(child.id()).unwrap();
            let started = crate::process::start_time(pid).unwrap();
            wait_for_environment(pid);
            (child, pid, started)
        };
        let run = |run: i64, exit: &str| RecordedRun {
            key: key(run, 7),
            gpus: vec![2, 3],
            exit_file: dir.0.join(format!("logs dir/{exit}")),
        };
        std::fs::create_dir_all(dir.0.join("logs dir")).unwrap();
        let kept: HashMap<String, i64> = [("n1".to_string(), 7)].into();
        let (mut running, pid, started) = spawn();
        records
            .started("n1", pid, started, "s1", Some(&run(1, "one.exit")))
            .unwrap();
        // Ended while no agent watched: its shell wrote 143, SIGTERM's status.
        let (mut gone, pid2, started2) = spawn();
        records
            .started("n1", pid2, started2, "s2", Some(&run(2, "two.exit")))
            .unwrap();
        gone.kill().unwrap();
        gone.wait().unwrap();
        std::fs::write(dir.0.join("logs dir/two.exit"), "143\n").unwrap();
        // Its end recorded by the earlier agent.
        records
            .started("n1", 4242, 1, "s3", Some(&run(3, "three.exit")))
            .unwrap();
        records.ended("n1", 4242, 1, Outcome::Code(5));
        // An older agent's record, naming no run.
        let (mut older, pid4, started4) = spawn();
        records.started("n1", pid4, started4, "s4", None).unwrap();

        let found = records.take_over(&["n1".to_string()], &kept);
        assert_eq!(found.killed, 1);
        assert_eq!(older.wait().unwrap().signal(), Some(9));
        assert_eq!(found.adopted.len(), 1);
        let (node, adopted) = &found.adopted[0];
        assert_eq!((node.as_str(), adopted.pid), ("n1", pid));
        assert_eq!(adopted.run, Some(run(1, "one.exit")));
        let mut ends: Vec<(i64, Outcome)> =
            found.ended.iter().map(|e| (e.key.run, e.outcome)).collect();
        ends.sort_by_key(|e| e.0);
        assert_eq!(ends, vec![(2, Outcome::Signal(15)), (3, Outcome::Code(5))]);
        assert_eq!(running.try_wait().unwrap(), None, "adopted, not killed");

        let again = records.take_over(&["n1".to_string()], &kept);
        assert_eq!(again.adopted.len(), 1);
        assert!(again.ended.is_empty());
        assert_eq!(
            records
                .take_over(&["n1".to_string()], &HashMap::new())
                .killed,
            1
        );
        assert_eq!(running.wait().unwrap().signal(), Some(9));
    }

    /// What a recorded leader killed while no agent watched left in its group (its command's
    /// shell and the command, carrying the recorded secret) is killed by the next agent's take
    /// over (found by a check of adoption: they ran on untracked, their run lost and its GPUs
    /// given to others).
    #[test]
    fn what_a_killed_leader_left_in_its_group_is_killed() {
        use std::os::unix::process::CommandExt;
        let dir = TempDir::new("orphans");
        let records = ProcessRecords::new(dir.0.join("state"));
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .env(OWNER_ENV, "s-orphan")
            .env("TRANCHE_NODE", "n1")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = i32::try_from(leader.id()).unwrap();
        let started = crate::process::start_time(pid).unwrap();
        records
            .started("n1", pid, started, "s-orphan", None)
            .unwrap();
        let members = || {
            crate::process::pids()
                .into_iter()
                .filter(|&p| p != pid && crate::process::group_of(p) == Some(pid))
                .count()
        };
        let deadline = Instant::now() + GUARD;
        while members() == 0 {
            assert!(Instant::now() < deadline, "no member");
            std::thread::yield_now();
        }
        leader.kill().unwrap();
        leader.wait().unwrap();
        assert_eq!(members(), 1);
        assert_eq!(
            records
                .take_over(&["n1".to_string()], &HashMap::new())
                .killed,
            1
        );
        let deadline = Instant::now() + GUARD;
        while members() > 0 {
            assert!(Instant::now() < deadline, "the orphan still runs");
            std::thread::yield_now();
        }
    }

    #[test]
    fn only_recorded_and_proven_leftovers_are_killed() {
        use std::io::Write as _;
        use std::os::unix::process::CommandExt;
        let dir = TempDir::new("records");
        let records = ProcessRecords::new(dir.0.join("state"));
        let spawn = |secret: Option<&str>| {
            let mut command = std::process::Command::new("sleep");
            command
                .arg("30")
                .env("TRANCHE_RUN_ID", "1")
                .env("TRANCHE_NODE", "n1")
                .process_group(0);
            if let Some(secret) = secret {
                command.env(OWNER_ENV, secret);
            }
            let child = command.spawn().unwrap();
            let pid = i32::try_from(child.id()).unwrap();
            let started = crate::process::start_time(pid).unwrap();
            wait_for_environment(pid);
            (child, pid, started)
        };
        // A line as an earlier agent wrote it (another boot, or a build before boot ids).
        let write = |line: String| {
            std::fs::OpenOptions::new()
                .append(true)
                .open(dir.0.join("state").join("node-n1.processes"))
                .unwrap()
                .write_all(format!("{line}\n").as_bytes())
                .unwrap();
        };
        let (mut ours, pid, started) = spawn(Some("s-ours"));
        records.started("n1", pid, started, "s-ours", None).unwrap();
        // Its command replaced its environment (`exec env -i ...`): recorded in this boot, it
        // is still the recorded process.
        let (mut bare, pid1, started1) = spawn(None);
        records
            .started("n1", pid1, started1, "s-gone", None)
            .unwrap();
        // Recorded in another boot, recorded without a boot id and with another secret, with
        // another start time, ended, or not recorded at all: none is proven to be the
        // recorded process.
        let (mut other_boot, pid2, started2) = spawn(Some("s-two"));
        write(format!(
            "start {pid2} {started2} s-two 00000000-0000-0000-0000-000000000000"
        ));
        let (mut other_secret, pid7, started7) = spawn(Some("s-seven"));
        write(format!("start {pid7} {started7} s-not-this"));
        let (mut other_start, pid3, started3) = spawn(Some("s-three"));
        records
            .started("n1", pid3, started3 + 1, "s-three", None)
            .unwrap();
        let (mut ended, pid4, started4) = spawn(Some("s-four"));
        records
            .started("n1", pid4, started4, "s-four", None)
            .unwrap();
        records.ended("n1", pid4, started4, Outcome::Code(0));
        let (mut unrecorded, ..) = spawn(Some("s-five"));
        // Another node's records are not read.
        let (mut other_node, pid6, started6) = spawn(Some("s-six"));
        records
            .started("n2", pid6, started6, "s-six", None)
            .unwrap();
        // A record of a build before boot ids, with the process's secret, is still proven.
        let (mut legacy, pid8, started8) = spawn(Some("s-eight"));
        write(format!("start {pid8} {started8} s-eight"));

        assert_eq!(records.kill_leftovers(&["n1".to_string()]).0, 3);
        for c in [&mut ours, &mut bare, &mut legacy] {
            assert_eq!(c.wait().unwrap().signal(), Some(9));
        }
        for c in [
            &mut other_boot,
            &mut other_secret,
            &mut other_start,
            &mut ended,
            &mut unrecorded,
            &mut other_node,
        ] {
            assert_eq!(c.try_wait().unwrap(), None, "spared");
        }
        // The records start afresh: nothing is killed twice.
        assert_eq!(records.kill_leftovers(&["n1".to_string()]).0, 0);
        for mut c in [
            other_boot,
            other_secret,
            other_start,
            ended,
            unrecorded,
            other_node,
        ] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// A run's process group that another agent (other records) left on a node keeps its GPUs:
    /// this agent does not stop it (it cannot prove whose it is) and starts nothing on its GPUs
    /// until it ends (found by a new-user check: an agent restarted with another --state-dir
    /// started a run's next attempt on the GPUs its previous attempt still used).
    #[tokio::test]
    async fn another_agents_process_keeps_its_gpus_until_it_ends() {
        use std::os::unix::process::CommandExt;
        let dir = TempDir::new("foreign");
        let node = format!("foreign-{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("TRANCHE_NODE", &node)
            .env(OWNER_ENV, "another-agents-secret")
            .env("CUDA_VISIBLE_DEVICES", "1,2")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        wait_for_environment(pid);
        let records = ProcessRecords::new(dir.0.join("state"));
        let (killed, foreign) = records.kill_leftovers(std::slice::from_ref(&node));
        assert_eq!((killed, foreign.clone()), (0, vec![(pid, node.clone())]));
        let args = test_args("http://127.0.0.1:9/".into(), "8xH100", &node, &dir);
        let mut agent = Agent::new(&args).await.unwrap();
        agent.node_names.insert(12, node.clone());
        agent.foreign = foreign
            .iter()
            .filter_map(|(pid, node)| supervisor::Foreign::read(*pid, node))
            .collect();
        assert_eq!(agent.foreign[0].gpus, vec![1, 2]);
        let answer = SyncAnswer {
            assignments: vec![assignment(2, 12, &[2]), assignment(3, 12, &[3])],
            stops: vec![],
            ..SyncAnswer::default()
        };
        let plan = reconcile(&answer, &agent.local_and_foreign(), &HashSet::new());
        assert_eq!(starts(&plan), vec![key(3, 12)]);
        assert_eq!(plan.waiting, vec![key(2, 12)]);
        assert!(plan.stop.is_empty(), "not ours to stop");
        child.kill().unwrap();
        child.wait().unwrap();
        let plan = reconcile(&answer, &agent.local_and_foreign(), &HashSet::new());
        assert_eq!(starts(&plan), vec![key(2, 12), key(3, 12)]);
    }

    /// Process groups an agent started for a node are found without records (another state
    /// directory's): those whose environment names the node and carries an agent's secret.
    #[test]
    fn a_node_s_agent_processes_are_found_without_records() {
        use std::os::unix::process::CommandExt;
        let node = format!("probe-{}", std::process::id());
        let spawn = |node: &str, owner: bool| {
            let mut command = std::process::Command::new("sleep");
            command.arg("30").env("TRANCHE_NODE", node).process_group(0);
            if owner {
                command.env(OWNER_ENV, "secret");
            }
            command.spawn().unwrap()
        };
        let mut ours = spawn(&node, true);
        let mut no_secret = spawn(&node, false);
        let mut other_node = spawn(&format!("{node}-2"), true);
        let found = supervisor::agent_groups(std::slice::from_ref(&node));
        let pid = i32::try_from(ours.id()).unwrap();
        assert_eq!(found, vec![(pid, node.clone())]);
        for c in [&mut ours, &mut no_secret, &mut other_node] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// A run's log past the agent's bound keeps its newest half after a line saying how much
    /// was dropped; the process's next writes (it appends) follow it.
    #[test]
    fn a_log_past_its_bound_keeps_its_newest_half() {
        use std::io::Write;
        let dir = TempDir::new("logcap");
        let path = dir.0.join("run.log");
        let lines: String = (0..300).map(|i| format!("line {i:04}\n")).collect();
        assert_eq!(lines.len(), 3000);
        std::fs::write(&path, &lines).unwrap();
        assert_eq!(supervisor::cap_log(&path, 4000), 0, "under the bound");
        assert_eq!(supervisor::cap_log(&path, 1000), 2500);
        let kept = std::fs::read_to_string(&path).unwrap();
        let (note, tail) = kept.split_once('\n').unwrap();
        assert_eq!(
            note,
            "[tranche agent: 2500 earlier bytes of this log were dropped to keep it within 1000 bytes]"
        );
        assert_eq!(tail, &lines[2500..]);
        // An appending writer goes on after the kept part.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"after\n").unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("line 0299\nafter\n")
        );
    }

    #[test]
    fn the_default_state_directory_is_absolute() {
        assert!(
            default_state_dir().is_absolute(),
            "{:?}",
            default_state_dir()
        );
    }
}
