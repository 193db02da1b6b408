//! What a pass decides, and why runs wait, in words a researcher understands.

use super::types::{ContractId, NodeId, ProjectId, RunId};
use serde::{Deserialize, Serialize};

/// One decision of a pass. Apply them in order: preemptions come before the start they make
/// room for, and a start whose placement covers a preempted run's GPUs begins once that run has
/// left them (after its grace period); until then the GPUs are held for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// Start a waiting run on the named GPUs (node, GPU indices on that node).
    Start {
        /// The run.
        run: RunId,
        /// Its GPUs: every node and the indices of the GPUs it gets there.
        placement: Vec<(NodeId, Vec<u32>)>,
        /// The capacity contract it runs on (protected while the window lasts), if any.
        contract: Option<ContractId>,
        /// How many of its GPUs the contract covers (its time there prepaid): all of them, or
        /// what the contract had left for a larger gang (docs/design.md section 3.3); 0 without
        /// a contract.
        contract_gpus: u32,
        /// Legacy policy: started inside its team's cap, hence non-preemptible.
        non_preemptible: bool,
    },
    /// Stop a running run (requeue if resumable).
    Preempt {
        /// The run stopped.
        run: RunId,
        /// Why.
        reason: PreemptReason,
        /// The run it makes room for, if any.
        for_run: Option<RunId>,
    },
    /// A running run of a capacity contract's project, in the contract's pool, that the
    /// contract finds running when it takes effect (from its lead time before the window): it
    /// is on the contract from now on, as a run started inside the window would be (protected
    /// inside the window, its time there prepaid). Runs are taken oldest first, whole gangs,
    /// while the contract has GPUs no run of it uses (docs/design.md section 3.3).
    Adopt {
        /// The run.
        run: RunId,
        /// The contract it is on from now on.
        contract: ContractId,
    },
    /// Hold capacity for a waiting run's reserved start: `gpus` GPUs of its pool become free for
    /// it by `at` (from time limits and minimum-runtime expiries); only runs that end by `at` may
    /// use them meanwhile.
    Reserve {
        /// The run.
        run: RunId,
        /// Reserved start (s since the epoch).
        at: i64,
        /// GPUs reserved.
        gpus: u32,
    },
}

/// Why a run is preempted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PreemptReason {
    /// An unallocated run gives way to an allocated one.
    Unallocated,
    /// An allocated run past its minimum runtime gives way to a run of a project that ranks
    /// above its own even after the move.
    FairShare {
        /// The project served instead.
        for_project: ProjectId,
    },
    /// An allocated run past its minimum runtime gives way to a run of a project below its
    /// entitlement (effective share x the pool's GPUs), and the move raises what projects
    /// receive of their entitlements: its own project keeps more of its entitlement than the
    /// other gains.
    Entitlement {
        /// The project served instead.
        for_project: ProjectId,
    },
    /// Capacity contract's GPUs taken back.
    Contract {
        /// The contract.
        contract: ContractId,
    },
    /// Its node drains and the run is past its minimum runtime.
    NodeDraining {
        /// The node.
        node: NodeId,
    },
    /// Its node is down.
    NodeDown {
        /// The node.
        node: NodeId,
    },
    /// Legacy policy: an opportunistic (over-quota) run gives way to a run inside its team's cap.
    LegacyQuota,
}

impl PreemptReason {
    /// Plain words for the run's page, projects named by id.
    pub fn describe(&self) -> String {
        self.describe_with(&|p| p.to_string())
    }

    /// Plain words for the run's page, with `project` naming the project it made room for.
    pub fn describe_with(&self, project: &dyn Fn(ProjectId) -> String) -> String {
        match self {
            PreemptReason::Unallocated => {
                "unallocated (free) run: its GPUs went to an allocated run".to_string()
            }
            PreemptReason::FairShare { for_project } => format!(
                "past its minimum runtime, and project {} is further below its fair share",
                project(*for_project)
            ),
            PreemptReason::Entitlement { for_project } => format!(
                "past its minimum runtime, and project {} is below its entitlement (its share of the GPUs) while this run's project held more than its own",
                project(*for_project)
            ),
            PreemptReason::Contract { contract } => {
                format!("its GPUs are promised to capacity contract {contract}")
            }
            PreemptReason::NodeDraining { node } => {
                format!("node {node} is draining for repair; requeued after its minimum runtime")
            }
            PreemptReason::NodeDown { node } => format!("node {node} went down"),
            PreemptReason::LegacyQuota => {
                "ran beyond its team's quota; another team reclaimed its quota".to_string()
            }
        }
    }
}

/// Up to three projects, in order: those named in a fair-share waiting reason (a fixed array,
/// so that a pass with thousands of waiting runs does not allocate one list each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ahead {
    ids: [ProjectId; 3],
    len: u8,
}

impl Ahead {
    /// Appends `p` when there is room; returns whether it was added.
    pub fn push(&mut self, p: ProjectId) -> bool {
        if usize::from(self.len) < self.ids.len() {
            self.ids[usize::from(self.len)] = p;
            self.len += 1;
            true
        } else {
            false
        }
    }

    /// The projects, in order.
    pub fn as_slice(&self) -> &[ProjectId] {
        &self.ids[..usize::from(self.len)]
    }
}

/// Why a run keeps waiting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitReason {
    /// Other projects' runs of its pool come first (they are within their entitlement or
    /// further below their fair share) and took or wait for the GPUs it could use.
    /// Its place in its project's line is not part of the reason: it changes with every start
    /// of the project while the reason stays, so the pages and the API compute it when they
    /// are read (docs/design.md section 3.6).
    FairShare {
        /// The first projects ahead of it in this pass, in order.
        ahead: Ahead,
        /// How many projects are ahead of it in all.
        ahead_total: usize,
        /// Its reserved start, when it is first in line for its pool's next free GPUs.
        reserved_at: Option<i64>,
    },
    /// No project is ahead of it, but the GPUs it could use are held by runs of other projects
    /// within their entitlements, and its own project holds (or would hold with it) more than
    /// its entitlement: it waits for GPUs to free up.
    OverShare {
        /// Allocated GPUs its project holds in the pool.
        held: u32,
        /// Its project's entitlement in the pool, milli-GPUs.
        entitled_milli: i64,
        /// GPUs it needs.
        gpus: u32,
        /// Its reserved start, when it is first in line for its pool's next free GPUs.
        reserved_at: Option<i64>,
    },
    /// An unallocated run waiting for idle GPUs (it never preempts).
    IdleGpus {
        /// GPUs it needs.
        gpus: u32,
        /// Idle GPUs of its model now.
        free: u32,
        /// Allocated runs of its pool waiting for GPUs in the same pass: the GPUs that free
        /// go to them first, so no start is estimated while there are any.
        #[serde(default)]
        allocated_waiting: u32,
    },
    /// Enough GPUs are idle for it but for those its pool keeps for short runs (time limit at
    /// most [`super::SHORT_RUN_S`]), which a run with a longer limit may not take.
    ShortRunHeadroom {
        /// GPUs it needs.
        gpus: u32,
        /// Idle GPUs of its pool now.
        free: u32,
        /// Of them, kept for short runs.
        kept: u32,
    },
    /// It is next in its pool and GPUs are reserved for it.
    Reserved {
        /// GPUs it needs.
        gpus: u32,
        /// GPU model name.
        model: String,
        /// Idle GPUs of its pool now, beside those held for contracts (0 in notes written
        /// before it was recorded).
        #[serde(default)]
        free: u32,
        /// Reserved start.
        at: i64,
    },
    /// Enough GPUs exist but would not be free before another run's reserved start, and it would
    /// not end before then.
    BehindReservation {
        /// The run holding the reservation.
        run: RunId,
        /// Its reserved start.
        at: i64,
    },
    /// The GPUs it could take are held by runs inside their minimum runtime.
    Protected {
        /// When the first of them may be preempted.
        until: i64,
    },
    /// Waiting for GPUs to be free, with no better estimate.
    Gpus {
        /// GPUs it needs.
        gpus: u32,
        /// GPUs of its model free now (outside contract holds).
        free: u32,
    },
    /// The only free GPUs of its model are on draining nodes.
    NodesDraining {
        /// GPUs it needs.
        gpus: u32,
    },
    /// The project's balance cannot cover the minimum-runtime cost.
    Budget {
        /// Cost of its minimum runtime (minor units).
        needs: i64,
        /// Balance left (minor units).
        has: i64,
    },
    /// The project's cap on concurrent unallocated GPUs is reached.
    UnallocatedCap {
        /// The cap.
        cap: u32,
        /// GPUs its unallocated runs hold or were given in this pass.
        held: u32,
    },
    /// GPUs are held for capacity contracts of other projects.
    Contracts {
        /// GPUs held for other projects' contracts in its pool (free or lent to unallocated
        /// runs).
        held: u32,
    },
    /// Strict arrival order (fifo policy) or queue order: runs ahead of it come first.
    InLine {
        /// Runs ahead of it in its pool.
        ahead: usize,
    },
    /// Enough GPUs of its model are installed on its cluster, but not on nodes that are up
    /// (or draining): it waits for nodes that are down to come back.
    GpusDown {
        /// GPUs it asks for.
        gpus: u32,
        /// GPUs of that model on the cluster's nodes that are not down.
        up: u32,
    },
    /// Larger than every GPU of its model on its cluster, whatever the state of their nodes
    /// (refused at submission; shown if one slipped through).
    NeverFits {
        /// GPUs it asks for.
        gpus: u32,
        /// GPUs of that model installed on the cluster (every node, down ones included).
        installed: u32,
    },
}

/// Formats an instant (s since the epoch) as `YYYY-MM-DD HH:MM UTC`.
pub fn format_instant(t: i64) -> String {
    match jiff::Timestamp::from_second(t) {
        Ok(ts) => ts.strftime("%Y-%m-%d %H:%M UTC").to_string(),
        Err(_) => format!("{t} s"),
    }
}

/// "GPU" for one, "GPUs" otherwise.
fn gpu_word(gpus: u32) -> &'static str {
    if gpus == 1 { "GPU" } else { "GPUs" }
}

/// Milli-GPUs as a number of GPUs with at most one decimal ("12", "0.8").
pub fn format_milli(m: i64) -> String {
    let tenths = m.max(0) / 100;
    if tenths % 10 == 0 {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

/// "; reserved start about T" when there is a reservation, else nothing.
fn reserved_words(at: Option<i64>) -> String {
    at.map_or_else(String::new, |t| {
        format!("; reserved start about {}", format_instant(t))
    })
}

/// The fair-share waiting reason for projects named `ahead` (the first few of `total`), with
/// its reserved start when it has one.
fn fair_share_words(ahead: &[String], total: usize, reserved_at: Option<i64>) -> String {
    let more = total.saturating_sub(ahead.len());
    let list = if more > 0 {
        format!("{} and {more} more", ahead.join(", "))
    } else {
        ahead.join(", ")
    };
    if total == 1 {
        return format!(
            "{list} comes first (within its entitlement or further below its fair share) and holds or waits for the GPUs it needs{}",
            reserved_words(reserved_at)
        );
    }
    format!(
        "{list} come first (within their entitlement or further below their fair share) and hold or wait for the GPUs it needs{}",
        reserved_words(reserved_at)
    )
}

impl WaitReason {
    /// Its kind, as the JSON `kind` field names it (`fair_share`, `over_share`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            WaitReason::FairShare { .. } => "fair_share",
            WaitReason::OverShare { .. } => "over_share",
            WaitReason::IdleGpus { .. } => "idle_gpus",
            WaitReason::ShortRunHeadroom { .. } => "short_run_headroom",
            WaitReason::Reserved { .. } => "reserved",
            WaitReason::BehindReservation { .. } => "behind_reservation",
            WaitReason::Protected { .. } => "protected",
            WaitReason::Gpus { .. } => "gpus",
            WaitReason::NodesDraining { .. } => "nodes_draining",
            WaitReason::Budget { .. } => "budget",
            WaitReason::UnallocatedCap { .. } => "unallocated_cap",
            WaitReason::Contracts { .. } => "contracts",
            WaitReason::InLine { .. } => "in_line",
            WaitReason::GpusDown { .. } => "gpus_down",
            WaitReason::NeverFits { .. } => "never_fits",
        }
    }

    /// Its reserved start, when the pass reserved GPUs for it.
    pub fn reserved_at(&self) -> Option<i64> {
        match self {
            WaitReason::Reserved { at, .. } => Some(*at),
            WaitReason::FairShare { reserved_at, .. }
            | WaitReason::OverShare { reserved_at, .. } => *reserved_at,
            _ => None,
        }
    }

    /// Plain words for a researcher, projects named by id.
    pub fn describe(&self) -> String {
        self.describe_with(&|p| format!("project {p}"))
    }

    /// Plain words for a researcher, with `project` naming the projects it mentions.
    pub fn describe_with(&self, project: &dyn Fn(ProjectId) -> String) -> String {
        match self {
            WaitReason::FairShare {
                ahead,
                ahead_total,
                reserved_at,
            } => {
                let names: Vec<String> = ahead.as_slice().iter().map(|&p| project(p)).collect();
                fair_share_words(&names, *ahead_total, *reserved_at)
            }
            WaitReason::OverShare {
                held,
                entitled_milli,
                gpus,
                reserved_at,
            } => format!(
                "its project holds {held} GPUs of this model and its fair share (entitlement) is {}; the other busy GPUs are within other projects' entitlements, so it waits for {gpus} to free up{}",
                format_milli(*entitled_milli),
                reserved_words(*reserved_at)
            ),
            WaitReason::IdleGpus {
                gpus,
                free,
                allocated_waiting,
            } => format!(
                "unallocated: waits for {gpus} idle {} of its model ({free} idle now); it never preempts{}",
                gpu_word(*gpus),
                match allocated_waiting {
                    0 => String::new(),
                    1 => "; 1 allocated run waiting for its model comes first".to_string(),
                    n => format!("; {n} allocated runs waiting for its model come first"),
                }
            ),
            WaitReason::ShortRunHeadroom { gpus, free, kept } => format!(
                "waits for {gpus} {}: {free} idle now, of which the pool keeps {kept} for short runs (time limit 15 minutes or less) so that they start at once",
                gpu_word(*gpus)
            ),
            WaitReason::Reserved {
                gpus,
                model,
                free,
                at,
            } => format!(
                "waiting for {gpus} {model} {}, {free} idle now; reserved start about {}",
                gpu_word(*gpus),
                format_instant(*at)
            ),
            WaitReason::BehindReservation { run, at } => format!(
                "GPUs are reserved for run {run} from about {}, and this run would not end before then",
                format_instant(*at)
            ),
            WaitReason::Protected { until } => format!(
                "the GPUs it could take are protected until {} (minimum runtime of the runs on them, or the capacity contract they run on)",
                format_instant(*until)
            ),
            WaitReason::Gpus { gpus, free } => {
                format!(
                    "waiting for {gpus} {} of its model; {free} free now",
                    gpu_word(*gpus)
                )
            }
            WaitReason::NodesDraining { gpus } => {
                format!(
                    "node draining: it needs {gpus} GPUs and the ones it could take are on nodes being drained for repair"
                )
            }
            WaitReason::Budget { needs, has } => format!(
                "budget exhausted: needs {needs}, has {has} (the cost of its minimum runtime; it may still run unallocated)"
            ),
            WaitReason::UnallocatedCap { cap, held } => {
                format!("project's cap of {cap} unallocated GPUs reached ({held} in use)")
            }
            WaitReason::Contracts { held } => {
                format!(
                    "{held} GPUs are held for other projects' capacity contracts (free, or lent to unallocated runs until a contract takes them back)"
                )
            }
            WaitReason::InLine { ahead } => format!(
                "in line: {ahead} {} ahead of it",
                if *ahead == 1 { "run" } else { "runs" }
            ),
            WaitReason::GpusDown { gpus, up } => format!(
                "waiting for nodes that are down: it needs {gpus} {} of its model, {up} are on nodes that are up",
                gpu_word(*gpus)
            ),
            WaitReason::NeverFits { gpus, installed } => format!(
                "asks for {gpus} {} but only {installed} of its model are installed; it can never start",
                gpu_word(*gpus)
            ),
        }
    }
}

/// A run that keeps waiting after the pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    /// The run.
    pub run: RunId,
    /// Why.
    pub reason: WaitReason,
    /// Estimated start (s since the epoch), where it can be known.
    pub estimated_start: Option<i64>,
}

/// The result of a pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Decisions, in the order to apply them.
    pub decisions: Vec<Decision>,
    /// Every waiting run not started, in the order the pass considered them (runs that fit
    /// their project's active contract, each pool's starving head, then runs that keep their project within its entitlement, then the other
    /// allocated runs, then unallocated runs; each group in fair-share order). Find a run's entry
    /// by its id, not by its place.
    pub waiting: Vec<Waiting>,
    /// Draining nodes that hold no run: ready for repair.
    pub drained_nodes: Vec<NodeId>,
    /// Projects in fair-share rank order at the start of the pass.
    pub project_order: Vec<ProjectId>,
}

impl Outcome {
    /// The runs that hold a pool's reservation after this pass (at most one per pool): what
    /// the next pass's [`crate::scheduler::Snapshot::reserved`] should say.
    #[must_use]
    pub fn reserved(&self) -> Vec<RunId> {
        self.decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Reserve { run, .. } => Some(*run),
                _ => None,
            })
            .collect()
    }

    /// How many of the decisions a caller applies when it may apply `most` moves, a move being
    /// a start or a preemption (a reservation writes nothing), and how many moves that leaves:
    /// (decisions to apply, moves left). The pass appends decisions as it makes them, each on
    /// the state the ones before it left, so every prefix is a state the pass went through: no
    /// GPU held twice, every preemption before the start on the GPUs it frees. The next pass
    /// decides again what was left (docs/design.md section 7, "Moves in slices"); the draining
    /// nodes found empty hold only when nothing is left.
    #[must_use]
    pub fn moves_within(&self, most: usize) -> (usize, usize) {
        let is_move = |d: &Decision| matches!(d, Decision::Start { .. } | Decision::Preempt { .. });
        let mut moves = 0;
        for (i, d) in self.decisions.iter().enumerate() {
            if is_move(d) {
                if moves == most {
                    return (i, self.decisions[i..].iter().filter(|d| is_move(d)).count());
                }
                moves += 1;
            }
        }
        (self.decisions.len(), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_json_kinds() {
        let reasons = [
            WaitReason::FairShare {
                ahead: Ahead::default(),
                ahead_total: 0,
                reserved_at: None,
            },
            WaitReason::OverShare {
                held: 1,
                entitled_milli: 500,
                gpus: 1,
                reserved_at: None,
            },
            WaitReason::IdleGpus {
                gpus: 1,
                free: 0,
                allocated_waiting: 0,
            },
            WaitReason::ShortRunHeadroom {
                gpus: 2,
                free: 2,
                kept: 1,
            },
            WaitReason::Reserved {
                gpus: 1,
                model: "H100".into(),
                free: 0,
                at: 0,
            },
            WaitReason::BehindReservation {
                run: RunId(1),
                at: 0,
            },
            WaitReason::Protected { until: 0 },
            WaitReason::Gpus { gpus: 1, free: 0 },
            WaitReason::NodesDraining { gpus: 1 },
            WaitReason::Budget { needs: 1, has: 0 },
            WaitReason::UnallocatedCap { cap: 1, held: 1 },
            WaitReason::Contracts { held: 1 },
            WaitReason::InLine { ahead: 1 },
            WaitReason::GpusDown { gpus: 12, up: 8 },
            WaitReason::NeverFits {
                gpus: 9,
                installed: 8,
            },
        ];
        for r in &reasons {
            let json = serde_json::to_value(r).unwrap();
            assert_eq!(json["kind"].as_str(), Some(r.code()), "{r:?}");
        }
    }

    /// A prefix ends before the first move past the bound; reservations before it go with it,
    /// and the moves after it are counted.
    #[test]
    fn moves_within_cuts_before_the_first_move_past_the_bound() {
        let reserve = |id| Decision::Reserve {
            run: RunId(id),
            at: 0,
            gpus: 1,
        };
        let start = |id| Decision::Start {
            run: RunId(id),
            placement: vec![(NodeId(1), vec![0])],
            contract: None,
            contract_gpus: 0,
            non_preemptible: false,
        };
        let preempt = |id| Decision::Preempt {
            run: RunId(id),
            reason: PreemptReason::Unallocated,
            for_run: Some(RunId(3)),
        };
        let out = Outcome {
            decisions: vec![
                reserve(9),
                preempt(1),
                preempt(2),
                start(3),
                reserve(8),
                start(4),
            ],
            ..Outcome::default()
        };
        assert_eq!(out.moves_within(0), (1, 4));
        assert_eq!(out.moves_within(1), (2, 3));
        assert_eq!(out.moves_within(2), (3, 2));
        assert_eq!(out.moves_within(3), (5, 1));
        assert_eq!(out.moves_within(4), (6, 0));
        assert_eq!(out.moves_within(100), (6, 0));
        assert_eq!(Outcome::default().moves_within(0), (0, 0));
    }
}
