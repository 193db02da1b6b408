//! The wire types of the agent protocol (`docs/agent-protocol.md`).

use super::*;

// ---------------------------------------------------------------------------------------------
// Wire types
// ---------------------------------------------------------------------------------------------

/// Identity of one process: a run's attempt on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunKey {
    /// Run id.
    pub run: i64,
    /// Attempt number of the run.
    pub attempt: i64,
    /// Node id (from the register answer).
    pub node: i64,
}

impl std::fmt::Display for RunKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run {} attempt {} node {}",
            self.run, self.attempt, self.node
        )
    }
}

/// The modulus of a running-set digest: the Mersenne prime 2^61 - 1, so that two digests
/// below it add up within an `i64` (docs/agent-protocol.md, "Running-set digest").
pub const DIGEST_MODULUS: i64 = (1 << 61) - 1;

impl RunKey {
    /// This process's term in a running-set digest: the first 60 bits (15 hex digits) of
    /// SHA-256 of `run:attempt:node` in decimal, the database's `placement_hash` (migration
    /// `20261207000600_node_running_digest.sql`), so `0 <= hash < 2^60`.
    #[must_use]
    pub fn digest_hash(&self) -> i64 {
        use sha2::Digest as _;
        let sum = sha2::Sha256::digest(format!("{}:{}:{}", self.run, self.attempt, self.node));
        let head = u64::from_be_bytes(sum[..8].try_into().expect("8 bytes"));
        (head >> 4) as i64
    }
}

/// The count and digest of a set of processes: how many, and the sum of their
/// [`RunKey::digest_hash`] modulo [`DIGEST_MODULUS`] (the same whatever the order). A sync
/// carries them for the processes the agent runs; the server keeps the same two figures of
/// the placements it counts running.
#[must_use]
pub fn running_digest<'a>(keys: impl IntoIterator<Item = &'a RunKey>) -> (i64, i64) {
    keys.into_iter().fold((0, 0), |(count, digest), key| {
        (count + 1, (digest + key.digest_hash()) % DIGEST_MODULUS)
    })
}

/// Body of `POST /api/v1/agent/register`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegisterRequest {
    /// The nodes this agent serves.
    pub nodes: Vec<RegisterNode>,
    /// How the agent describes itself (`HOST pid PID`), shown on the admin cluster page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The session this agent's state directory last held: nodes still held by it are taken
    /// over at once, without waiting for it to time out (an agent restarted after a crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_session: Option<String>,
}

/// Body of `POST /api/v1/agent/stop`, sent when the agent stops cleanly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopRequest {
    /// Session from the register answer.
    pub session: String,
}

/// One node in a [`RegisterRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegisterNode {
    /// Node name.
    pub name: String,
    /// GPU count.
    pub gpus: u32,
    /// GPU model name.
    pub gpu_model: String,
}

/// Answer to a register.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegisterAnswer {
    /// Session id to send with each sync.
    pub session: String,
    /// The registered nodes and their ids.
    pub nodes: Vec<RegisteredNode>,
    /// Heartbeat period the server expects (informational: the long poll is shorter than
    /// `timeout_s`).
    #[serde(default)]
    pub heartbeat_s: Option<u64>,
    /// A node without a sync for this long is marked lost.
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// A node id in a [`RegisterAnswer`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegisteredNode {
    /// Node id.
    pub id: i64,
    /// Node name.
    pub name: String,
    /// Whether the server kept the node's runs: the registering agent showed the node's live
    /// session (the same agent, restarted), so it adopts the processes its predecessor left
    /// running there instead of killing them (docs/agent-protocol.md section 1). Absent (an
    /// older server): false.
    #[serde(default)]
    pub kept: bool,
}

/// Body of `POST /api/v1/agent/sync`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncRequest {
    /// Session from the register answer.
    pub session: String,
    /// How long the server may hold the answer, in seconds.
    pub wait_s: u64,
    /// Per-node utilization.
    pub nodes: Vec<NodeReport>,
    /// Running processes and unacknowledged exits.
    pub runs: Vec<RunReport>,
    /// Delta syncs: the `version` of the last answer applied in this session (0 for none).
    /// Absent (`--full-sync`): the server answers with the whole desired state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// Delta syncs: how many processes the agent runs ([`running_digest`] of all it would list
    /// as running). `runs` then lists only the running processes no answer has acknowledged
    /// yet, unless the last answer asked for all (`report_running`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_count: Option<i64>,
    /// Delta syncs: the digest of those processes ([`running_digest`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_digest: Option<i64>,
    /// Delta syncs: the highest run id among the processes this agent started or found
    /// recorded (none before the first); a server restored onto a new machine continues its
    /// run ids above it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_up_to: Option<i64>,
}

/// Utilization of one node in a [`SyncRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeReport {
    /// Node id.
    pub node: i64,
    /// Percent per GPU index, `null` where unknown.
    pub utilization: Vec<Option<u8>>,
}

/// State of one process in a [`SyncRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Run id.
    pub run: i64,
    /// Attempt number.
    pub attempt: i64,
    /// Node id.
    pub node: i64,
    /// `running` or `exited`.
    pub state: RunState,
    /// Exit code, for a process that exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Signal number, for a process killed by a signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// For an exited process, how many whole seconds ago it ended (the agent's own clock
    /// measures it, so the server's clock need not agree with the node's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exited_s_ago: Option<i64>,
    /// For an exited process whose command never ran because of its node (its state or log
    /// directory cannot be written, no process can be started), not its run: why, one line
    /// of at most 500 characters. The server requeues the run and drains the node
    /// (docs/agent-protocol.md section 2). Absent: the command ran, or the run's own settings
    /// stopped it (its working directory, its submitter's account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

/// State in a [`RunReport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Started and still alive.
    Running,
    /// Ended (exit code or signal given).
    Exited,
}

/// Answer to a sync: the whole desired state of the agent's nodes, or (delta syncs) the
/// orders that changed since the request's `since`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncAnswer {
    /// Processes that should run.
    #[serde(default)]
    pub assignments: Vec<Assignment>,
    /// Processes to stop.
    #[serde(default)]
    pub stops: Vec<StopOrder>,
    /// Delta answers: the version these orders bring the agent to (absent from a server that
    /// only answers with the whole desired state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// Delta answers: the orders are the whole desired state, not changes.
    #[serde(default)]
    pub full: bool,
    /// The server's count or digest of the running processes differs from the sync's: list
    /// every running process in the next sync.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub report_running: bool,
}

/// A process that should run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    /// Run id.
    pub run: i64,
    /// Attempt number.
    pub attempt: i64,
    /// Node id.
    pub node: i64,
    /// GPU indices on the node.
    #[serde(default)]
    pub gpus: Vec<u32>,
    /// Shell command (`sh -c`).
    pub command: String,
    /// Working directory (default: the agent's own).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The submitter's account name, the Unix account the process runs as under
    /// `--run-as-submitter` (absent from servers before it).
    #[serde(default)]
    pub user: Option<String>,
}

impl Assignment {
    /// The process identity.
    #[must_use]
    pub fn key(&self) -> RunKey {
        RunKey {
            run: self.run,
            attempt: self.attempt,
            node: self.node,
        }
    }
}

/// A process to stop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopOrder {
    /// Run id.
    pub run: i64,
    /// Attempt number.
    pub attempt: i64,
    /// Node id.
    pub node: i64,
    /// Seconds between SIGTERM and SIGKILL.
    pub grace_s: f64,
}

impl StopOrder {
    /// The process identity.
    #[must_use]
    pub fn key(&self) -> RunKey {
        RunKey {
            run: self.run,
            attempt: self.attempt,
            node: self.node,
        }
    }

    /// The grace period (zero for a negative or invalid value).
    #[must_use]
    pub fn grace(&self) -> Duration {
        Duration::try_from_secs_f64(self.grace_s).unwrap_or(Duration::ZERO)
    }
}
