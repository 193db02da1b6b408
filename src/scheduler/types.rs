//! The snapshot the core schedules from: ids, clusters, nodes, program tree, projects, runs,
//! capacity contracts and policy settings.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// A cluster's primary key.
    ClusterId
);
id_type!(
    /// A GPU model's primary key (H100, B200, B300, ...).
    ModelId
);
id_type!(
    /// A node's (machine's) primary key.
    NodeId
);
id_type!(
    /// An inner node of the program tree (root, program, team, ...).
    TreeNodeId
);
id_type!(
    /// A project: a leaf of the program tree, the "budget bag" runs are charged to.
    ProjectId
);
id_type!(
    /// A run's primary key.
    RunId
);
id_type!(
    /// A capacity contract's primary key.
    ContractId
);

/// A share of a parent, in basis points (1/100 of a percent): `10_000` is 100 %.
///
/// Shares of siblings may sum to at most 100 % ([`Snapshot::validate`] checks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Share(pub u32);

impl Share {
    /// 100 %.
    pub const FULL: Share = Share(10_000);

    /// Parses a percentage such as `45`, `12.5` or `45%` (at most two decimals, 0..=100).
    ///
    /// # Errors
    /// A text that is not such a percentage.
    pub fn parse_percent(text: &str) -> Result<Share, SnapshotError> {
        let t = text.trim().trim_end_matches('%').trim();
        let bad = || SnapshotError::BadShare(text.to_string());
        let (whole, frac) = match t.split_once('.') {
            Some((w, f)) => (w, f),
            None => (t, ""),
        };
        if whole.is_empty() || frac.len() > 2 || !whole.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let w: u32 = whole.parse().map_err(|_| bad())?;
        let mut f: u32 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| bad())?
        };
        if frac.len() == 1 {
            f *= 10;
        }
        let bp = w
            .checked_mul(100)
            .and_then(|v| v.checked_add(f))
            .ok_or_else(bad)?;
        if bp > 10_000 {
            return Err(bad());
        }
        Ok(Share(bp))
    }

    /// The share as a fraction of the parent, `0.0..=1.0`.
    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 10_000.0
    }
}

/// The state of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Takes new runs.
    Up,
    /// Takes no new runs; its runs are requeued as each passes its minimum runtime.
    Draining,
    /// Gone: its runs are preempted at once, protected or not.
    Down,
}

/// A GPU model and its billing figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuModel {
    /// Primary key.
    pub id: ModelId,
    /// Display name ("B300").
    pub name: String,
    /// Price of one weighted GPU-hour, in minor units of the currency: an hour of one GPU
    /// costs this times the billing weight.
    pub price_per_gpu_hour: i64,
    /// Billing weight in thousandths (1000 = an hour of this model counts as one GPU-hour of
    /// usage); weights the in-flight usage the ranking adds for running allocated runs.
    pub billing_weight_milli: i64,
}

/// A cluster: a named set of nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    /// Primary key.
    pub id: ClusterId,
    /// Display name.
    pub name: String,
    /// A gang on several nodes takes the same number of GPUs on each (Slurm's `--gres=gpu:N`
    /// is per node): placements, and the preemptions made for them, keep to that.
    #[serde(default)]
    pub uniform_gangs: bool,
}

/// A machine with a fixed number of GPUs of one model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Primary key.
    pub id: NodeId,
    /// The cluster it belongs to.
    pub cluster: ClusterId,
    /// The model of all its GPUs.
    pub model: ModelId,
    /// Number of GPUs, 1..=64; GPU indices are `0..gpus`.
    pub gpus: u32,
    /// Up, draining or down.
    pub state: NodeState,
}

/// An inner node of the program tree (root, program, team, ...). Nodes without a parent are the
/// top level; their shares are fractions of the whole organisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeNode {
    /// Primary key.
    pub id: TreeNodeId,
    /// The parent, `None` at the top level.
    pub parent: Option<TreeNodeId>,
    /// Share of the parent.
    pub share: Share,
}

/// A project: a leaf of the program tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    /// Primary key.
    pub id: ProjectId,
    /// The tree node it hangs under; `None` puts it at the top level.
    pub parent: Option<TreeNodeId>,
    /// Share of the parent.
    pub share: Share,
    /// Allocated usage in the fair-share window: billing-weighted GPU-seconds (>= 0), computed
    /// by the caller from the ledger (sliding or decaying window).
    pub usage_gpu_s: i64,
    /// Budget balance in minor units; `None` means no budget is enforced (simulation).
    pub balance: Option<i64>,
    /// Most GPUs its unallocated runs may hold at once; `None` means no cap.
    pub unallocated_gpu_cap: Option<u32>,
    /// Legacy policy only: most GPUs its non-preemptible runs may hold at once (the team quota).
    pub legacy_cap: u32,
}

/// A run holding GPUs now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningRun {
    /// Primary key.
    pub id: RunId,
    /// The project it is charged to.
    pub project: ProjectId,
    /// Where it runs: every placement node is in this cluster and of this model.
    pub cluster: ClusterId,
    /// GPU model.
    pub model: ModelId,
    /// The GPUs it holds: node and GPU indices on that node.
    pub placement: Vec<(NodeId, Vec<u32>)>,
    /// When it started (s since the epoch).
    pub started_at: i64,
    /// Minimum runtime (s); 0 = unallocated.
    pub min_runtime_s: i64,
    /// Time limit (s) from its start; the run ends by `started_at + time_limit_s`.
    pub time_limit_s: i64,
    /// Priority within its project (higher first).
    pub priority: i32,
    /// The capacity contract it runs on, if any.
    pub contract: Option<ContractId>,
    /// Legacy policy only: started inside its team's cap, never preempted by the legacy rules.
    pub non_preemptible: bool,
}

impl RunningRun {
    /// GPUs held.
    pub fn gpus(&self) -> u32 {
        self.placement.iter().map(|(_, g)| g.len() as u32).sum()
    }

    /// Allocated runs (minimum runtime > 0) are charged and counted in fair share.
    pub fn allocated(&self) -> bool {
        self.min_runtime_s > 0
    }

    /// The instant its protection (minimum runtime) ends.
    pub fn protected_until(&self) -> i64 {
        self.started_at.saturating_add(self.min_runtime_s)
    }

    /// The instant its time limit ends it.
    pub fn ends_by(&self) -> i64 {
        self.started_at.saturating_add(self.time_limit_s)
    }
}

/// A run waiting for GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingRun {
    /// Primary key.
    pub id: RunId,
    /// The project it is charged to.
    pub project: ProjectId,
    /// The cluster it asks for.
    pub cluster: ClusterId,
    /// The GPU model it asks for.
    pub model: ModelId,
    /// GPUs in its gang (all start together or none do), >= 1.
    pub gpus: u32,
    /// When it was submitted (or requeued).
    pub submitted_at: i64,
    /// Minimum runtime (s); 0 = unallocated.
    pub min_runtime_s: i64,
    /// Time limit (s) from its start, >= 1.
    pub time_limit_s: i64,
    /// Priority within its project (higher first). In the legacy policy it is global.
    pub priority: i32,
}

impl WaitingRun {
    /// Allocated runs (minimum runtime > 0) are charged and counted in fair share.
    pub fn allocated(&self) -> bool {
        self.min_runtime_s > 0
    }
}

/// A capacity contract: `gpus` GPUs of a model on a cluster for `[start, end)`, bought by a project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    /// Primary key.
    pub id: ContractId,
    /// The project that bought it.
    pub project: ProjectId,
    /// Cluster.
    pub cluster: ClusterId,
    /// GPU model.
    pub model: ModelId,
    /// GPUs promised.
    pub gpus: u32,
    /// Window start (s since the epoch, inclusive).
    pub start: i64,
    /// Window end (s since the epoch, exclusive).
    pub end: i64,
}

impl Contract {
    /// Whether the window holds `t`.
    pub fn active_at(&self, t: i64) -> bool {
        self.start <= t && t < self.end
    }
}

/// Seconds that the intervals `[from, to)` and `[start, end)` share (0 when they do not
/// meet): for example the part of a run's minimum runtime inside a contract's window, which
/// the contract prepaid (docs/design.md section 3.3).
#[must_use]
pub fn overlap_s(from: i64, to: i64, start: i64, end: i64) -> i64 {
    (to.min(end) - from.max(start)).max(0)
}

/// Which policy a pass applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// The design (docs/design.md section 3): hierarchical fair share, minimum runtimes,
    /// preemption, reservation and backfill, contracts, budgets.
    #[default]
    Tranche,
    /// Strict arrival order per GPU pool, no preemption, no backfill: a run that does not fit
    /// blocks every later run of its pool.
    Fifo,
    /// The model the design replaces: global order by priority then submit time; a team's runs
    /// are non-preemptible up to its `legacy_cap` GPUs, beyond it they start preemptible and a
    /// run inside its team's cap may preempt them. No fair share, no reservation.
    Legacy,
}

/// Policy settings of a pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Which policy.
    pub kind: PolicyKind,
    /// Seconds a running allocated GPU counts as usage on top of the window usage when ranking,
    /// so that a pass sees the effect of its own starts and preemptions ("after the move").
    pub in_flight_s: i64,
    /// Seconds before a contract's window start from which its GPUs are held.
    pub contract_lead_s: i64,
    /// How many waiting runs of a pool past its reservation the pass still examines for
    /// backfill; runs beyond are told they wait in line. Bounds the pass cost.
    pub backfill_depth: usize,
    /// Percent of short runs that may find no GPU idle on arrival in an otherwise full pool,
    /// which the GPUs kept for them are sized for ([`short_run_headroom`]), 1 to 100; 100
    /// keeps none. Default [`DEFAULT_SHORT_RUN_BLOCKING_PERCENT`].
    #[serde(default = "default_short_run_blocking")]
    pub short_run_blocking_percent: u8,
}

fn default_short_run_blocking() -> u8 {
    DEFAULT_SHORT_RUN_BLOCKING_PERCENT
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            kind: PolicyKind::Tranche,
            in_flight_s: 1_800,
            contract_lead_s: 0,
            backfill_depth: 2_000,
            short_run_blocking_percent: DEFAULT_SHORT_RUN_BLOCKING_PERCENT,
        }
    }
}

/// Site settings that are checked once at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FairShareWindow(i64);

impl FairShareWindow {
    /// Default window: 7 days.
    pub const DEFAULT: FairShareWindow = FairShareWindow(7 * 86_400);

    /// A window of `seconds`.
    ///
    /// # Errors
    /// Zero or negative windows are refused (scenario S1).
    pub fn new(seconds: i64) -> Result<FairShareWindow, SnapshotError> {
        if seconds <= 0 {
            return Err(SnapshotError::BadWindow(seconds));
        }
        Ok(FairShareWindow(seconds))
    }

    /// Length in seconds.
    pub fn seconds(self) -> i64 {
        self.0
    }
}

/// Everything a pass needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Policy settings.
    pub policy: Policy,
    /// Clusters.
    pub clusters: Vec<Cluster>,
    /// GPU models.
    pub models: Vec<GpuModel>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Inner tree nodes.
    pub tree: Vec<TreeNode>,
    /// Projects (tree leaves).
    pub projects: Vec<Project>,
    /// Runs holding GPUs.
    pub running: Vec<RunningRun>,
    /// Runs waiting for GPUs.
    pub waiting: Vec<WaitingRun>,
    /// Capacity contracts (any window; the pass looks at those active now).
    pub contracts: Vec<Contract>,
    /// Runs that held their pool's reservation after the previous pass
    /// ([`crate::scheduler::Outcome::reserved`]); empty for a first pass. Such a run that is
    /// still a gang larger than its project's entitlement keeps the reservation: it is its
    /// pool's starving head whatever its place in fair-share order (docs/design.md section 3.4).
    /// Ids of runs no longer waiting are ignored.
    #[serde(default)]
    pub reserved: Vec<RunId>,
    /// Offered load of short runs per pool ([`ShortLoad`]): sizes the idle GPUs each pool keeps
    /// for them ([`short_run_headroom`]). A pool not listed keeps none.
    #[serde(default)]
    pub short_load: Vec<ShortLoad>,
}

/// Longest time limit of a **short run**, s: the runs a pool keeps idle GPUs for
/// ([`short_run_headroom`], docs/design.md section 3.7).
pub const SHORT_RUN_S: i64 = 900;

/// Default percent of short runs that may find no GPU idle on arrival in a full pool, which the
/// headroom is sized for ([`Policy::short_run_blocking_percent`]): 10 %, so that their p90 wait
/// is zero.
pub const DEFAULT_SHORT_RUN_BLOCKING_PERCENT: u8 = 10;

/// The offered load of a pool's short runs (time limit at most [`SHORT_RUN_S`]): the GPUs they
/// would hold on average, their GPU-seconds of time limit submitted over the fair-share window
/// divided by the window's length, in milli-GPUs (arrival rate x service time, Little's law).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortLoad {
    /// Cluster of the pool.
    pub cluster: ClusterId,
    /// GPU model of the pool.
    pub model: ModelId,
    /// Offered load, milli-GPUs (>= 0).
    pub milli_gpus: i64,
}

/// GPUs a pool keeps idle for short runs: the fewest `h` for which Erlang's loss formula gives
/// at most `blocking_percent` % for an offered load of `load` GPUs, that is, the chance that
/// a short run arriving while every other GPU is held finds all `h` busy with earlier short
/// runs (Poisson arrivals; Erlang B, `B(0) = 1`, `B(h) = A B(h-1) / (h + A B(h-1))`).
/// 0 when no short run came in the window (`load` 0) or at 100 %; at most `cap`.
/// docs/design.md section 3.7.
pub fn short_run_headroom(load: f64, cap: u32, blocking_percent: u8) -> u32 {
    if load.is_nan() || load <= 0.0 {
        return 0;
    }
    let target = f64::from(blocking_percent.max(1)) / 100.0;
    let mut b = 1.0f64;
    let mut h = 0u32;
    while b > target && h < cap {
        h += 1;
        b = load * b / (f64::from(h) + load * b);
    }
    h
}

/// Why a snapshot or a setting is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// A share that does not parse.
    #[error("share {0:?} is not a percentage between 0 and 100 with at most two decimals")]
    BadShare(String),
    /// Shares of siblings over 100 %.
    #[error("shares under {parent} sum to {}%, more than 100%", *sum_bp as f64 / 100.0)]
    SharesOver100 {
        /// The parent ("top level" or a tree node id).
        parent: String,
        /// Their sum in basis points.
        sum_bp: u64,
    },
    /// A zero or negative fair-share window.
    #[error("fair-share window must be positive, got {0} s")]
    BadWindow(i64),
    /// Two entities with one id.
    #[error("duplicate {kind} id {id}")]
    DuplicateId {
        /// Entity kind.
        kind: &'static str,
        /// The id.
        id: i64,
    },
    /// A reference to an entity that is not in the snapshot.
    #[error("{what} refers to unknown {kind} {id}")]
    Unknown {
        /// Which reference.
        what: String,
        /// Entity kind.
        kind: &'static str,
        /// The id.
        id: i64,
    },
    /// A node with a GPU count outside 1..=64.
    #[error("node {node} has {gpus} GPUs; a node has 1 to 64")]
    BadNodeGpus {
        /// Node id.
        node: i64,
        /// Its GPU count.
        gpus: u32,
    },
    /// A run asking for no GPUs, or a non-positive time limit, or a negative minimum runtime.
    #[error("run {run}: {problem}")]
    BadRun {
        /// Run id.
        run: i64,
        /// What is wrong.
        problem: String,
    },
    /// A GPU held twice, or a placement outside its node.
    #[error("GPU {gpu} of node {node} {problem}")]
    BadPlacement {
        /// Node id.
        node: i64,
        /// GPU index.
        gpu: u32,
        /// What is wrong.
        problem: &'static str,
    },
    /// A tree with a cycle.
    #[error("the program tree has a cycle through node {0}")]
    TreeCycle(i64),
    /// A contract with an empty window or no GPUs.
    #[error("contract {contract}: {problem}")]
    BadContract {
        /// Contract id.
        contract: i64,
        /// What is wrong.
        problem: &'static str,
    },
}

impl Snapshot {
    /// Checks the snapshot: unique ids, known references, sibling shares at most 100 %, node GPU
    /// counts 1..=64, placements inside their nodes and no GPU held twice, positive GPU counts
    /// and time limits, contracts with `start < end` and `gpus > 0`, an acyclic tree.
    ///
    /// # Errors
    /// The first problem found, in a fixed order.
    pub fn validate(&self) -> Result<(), SnapshotError> {
        fn unique<I: Iterator<Item = i64>>(
            kind: &'static str,
            ids: I,
        ) -> Result<(), SnapshotError> {
            let mut seen = BTreeSet::new();
            for id in ids {
                if !seen.insert(id) {
                    return Err(SnapshotError::DuplicateId { kind, id });
                }
            }
            Ok(())
        }
        unique("cluster", self.clusters.iter().map(|c| c.id.0))?;
        unique("model", self.models.iter().map(|m| m.id.0))?;
        unique("node", self.nodes.iter().map(|n| n.id.0))?;
        unique("tree node", self.tree.iter().map(|n| n.id.0))?;
        unique("project", self.projects.iter().map(|p| p.id.0))?;
        unique(
            "run",
            self.running
                .iter()
                .map(|r| r.id.0)
                .chain(self.waiting.iter().map(|r| r.id.0)),
        )?;
        unique("contract", self.contracts.iter().map(|c| c.id.0))?;

        let clusters: BTreeSet<_> = self.clusters.iter().map(|c| c.id).collect();
        let models: BTreeSet<_> = self.models.iter().map(|m| m.id).collect();
        let tree: BTreeMap<_, _> = self.tree.iter().map(|n| (n.id, n)).collect();
        let projects: BTreeSet<_> = self.projects.iter().map(|p| p.id).collect();
        let unknown =
            |what: String, kind: &'static str, id: i64| SnapshotError::Unknown { what, kind, id };

        let mut nodes = BTreeMap::new();
        for n in &self.nodes {
            if !clusters.contains(&n.cluster) {
                return Err(unknown(format!("node {}", n.id), "cluster", n.cluster.0));
            }
            if !models.contains(&n.model) {
                return Err(unknown(format!("node {}", n.id), "GPU model", n.model.0));
            }
            if n.gpus == 0 || n.gpus > 64 {
                return Err(SnapshotError::BadNodeGpus {
                    node: n.id.0,
                    gpus: n.gpus,
                });
            }
            nodes.insert(n.id, n);
        }
        // Shares per parent and cycles.
        let mut sums: BTreeMap<Option<TreeNodeId>, u64> = BTreeMap::new();
        for n in &self.tree {
            if let Some(p) = n.parent
                && !tree.contains_key(&p)
            {
                return Err(unknown(format!("tree node {}", n.id), "tree node", p.0));
            }
            *sums.entry(n.parent).or_default() += u64::from(n.share.0);
            let mut cur = n.parent;
            let mut steps = 0usize;
            while let Some(c) = cur {
                steps += 1;
                if steps > self.tree.len() {
                    return Err(SnapshotError::TreeCycle(n.id.0));
                }
                cur = tree.get(&c).and_then(|t| t.parent);
            }
        }
        for p in &self.projects {
            if let Some(t) = p.parent
                && !tree.contains_key(&t)
            {
                return Err(unknown(format!("project {}", p.id), "tree node", t.0));
            }
            if p.usage_gpu_s < 0 {
                return Err(SnapshotError::BadRun {
                    run: p.id.0,
                    problem: "project usage is negative".into(),
                });
            }
            *sums.entry(p.parent).or_default() += u64::from(p.share.0);
        }
        for (parent, sum) in sums {
            if sum > 10_000 {
                return Err(SnapshotError::SharesOver100 {
                    parent: parent
                        .map_or_else(|| "the top level".to_string(), |p| format!("tree node {p}")),
                    sum_bp: sum,
                });
            }
        }
        let mut held: BTreeSet<(NodeId, u32)> = BTreeSet::new();
        for r in &self.running {
            if !projects.contains(&r.project) {
                return Err(unknown(format!("run {}", r.id), "project", r.project.0));
            }
            if r.placement.is_empty() || r.gpus() == 0 {
                return Err(SnapshotError::BadRun {
                    run: r.id.0,
                    problem: "holds no GPUs".into(),
                });
            }
            if r.min_runtime_s < 0 || r.time_limit_s <= 0 {
                return Err(SnapshotError::BadRun {
                    run: r.id.0,
                    problem: "negative minimum runtime or non-positive time limit".into(),
                });
            }
            for (nid, gpus) in &r.placement {
                let Some(n) = nodes.get(nid) else {
                    return Err(unknown(format!("run {}", r.id), "node", nid.0));
                };
                if n.cluster != r.cluster || n.model != r.model {
                    return Err(SnapshotError::BadRun {
                        run: r.id.0,
                        problem: format!("placed on node {nid} of another cluster or model"),
                    });
                }
                for &g in gpus {
                    if g >= n.gpus {
                        return Err(SnapshotError::BadPlacement {
                            node: nid.0,
                            gpu: g,
                            problem: "does not exist",
                        });
                    }
                    if !held.insert((*nid, g)) {
                        return Err(SnapshotError::BadPlacement {
                            node: nid.0,
                            gpu: g,
                            problem: "is held twice",
                        });
                    }
                }
            }
        }
        for w in &self.waiting {
            if !projects.contains(&w.project) {
                return Err(unknown(format!("run {}", w.id), "project", w.project.0));
            }
            if !clusters.contains(&w.cluster) {
                return Err(unknown(format!("run {}", w.id), "cluster", w.cluster.0));
            }
            if !models.contains(&w.model) {
                return Err(unknown(format!("run {}", w.id), "GPU model", w.model.0));
            }
            if w.gpus == 0 {
                return Err(SnapshotError::BadRun {
                    run: w.id.0,
                    problem: "asks for zero GPUs".into(),
                });
            }
            if w.min_runtime_s < 0 || w.time_limit_s <= 0 {
                return Err(SnapshotError::BadRun {
                    run: w.id.0,
                    problem: "negative minimum runtime or non-positive time limit".into(),
                });
            }
        }
        for c in &self.contracts {
            if !projects.contains(&c.project) {
                return Err(unknown(
                    format!("contract {}", c.id),
                    "project",
                    c.project.0,
                ));
            }
            if c.start >= c.end {
                return Err(SnapshotError::BadContract {
                    contract: c.id.0,
                    problem: "window is empty",
                });
            }
            if c.gpus == 0 {
                return Err(SnapshotError::BadContract {
                    contract: c.id.0,
                    problem: "promises no GPUs",
                });
            }
        }
        Ok(())
    }
}

/// A hasher for integer ids: one multiply (Fibonacci hashing). Deterministic (no random seed),
/// far cheaper than SipHash for the many id lookups of a pass. Not for untrusted keys.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, i: i64) {
        self.0 = (self.0 ^ i as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }

    fn write_u64(&mut self, i: u64) {
        self.write_i64(i as i64);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_i64(i as i64);
    }
}

/// A hash map keyed by ids, with [`IdHasher`].
pub type IdMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// Dense indices of a set of project ids, looked up by one array read when the ids span a
/// small range (as they do in practice), else through an [`IdMap`]. Inserting an id again
/// replaces its index, as [`IdMap::insert`] does.
#[derive(Debug, Clone, Default)]
pub struct IdSlots {
    /// Smallest id of the direct table.
    base: i64,
    /// `table[id - base]`: the id's index, or `u32::MAX` for none. Empty when the ids are
    /// sparse (then `map` holds them).
    table: Vec<u32>,
    map: IdMap<ProjectId, usize>,
}

impl IdSlots {
    /// The slots of `ids`, each the index of its last occurrence in the list.
    pub fn new(ids: &[ProjectId]) -> IdSlots {
        let mut s = IdSlots::default();
        let (Some(lo), Some(hi)) = (ids.iter().map(|p| p.0).min(), ids.iter().map(|p| p.0).max())
        else {
            return s;
        };
        let span = i128::from(hi) - i128::from(lo) + 1;
        if span <= 4 * ids.len() as i128 + 64 && ids.len() < u32::MAX as usize {
            s.base = lo;
            s.table = vec![u32::MAX; span as usize];
            for (i, p) in ids.iter().enumerate() {
                s.table[(p.0 - lo) as usize] = i as u32;
            }
        } else {
            s.map = IdMap::with_capacity_and_hasher(ids.len(), Default::default());
            for (i, p) in ids.iter().enumerate() {
                s.map.insert(*p, i);
            }
        }
        s
    }

    /// The index of `id`, if it is one of the ids.
    #[inline]
    pub fn get(&self, id: ProjectId) -> Option<usize> {
        if self.table.is_empty() {
            return self.map.get(&id).copied();
        }
        let off = (id.0 as u64).wrapping_sub(self.base as u64);
        match self.table.get(usize::try_from(off).ok()?) {
            Some(&i) if i != u32::MAX => Some(i as usize),
            _ => None,
        }
    }
}
