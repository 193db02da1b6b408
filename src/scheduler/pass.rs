//! One scheduling pass: [`schedule`].
//!
//! # Algorithm (docs/design.md section 3)
//! 1. Runs on `down` nodes are preempted; runs on `draining` nodes are preempted once past their
//!    minimum runtime. GPUs of such nodes take no new run.
//! 2. Capacity contracts whose window (less `Policy::contract_lead_s`) holds `now` hold their
//!    unused GPUs in their pool (a pool is one GPU model on one cluster). Allocated runs of
//!    other projects that are not protected are preempted when the pool cannot otherwise hold
//!    them; unallocated runs may borrow held GPUs and give them back when the owner needs them.
//! 3. Projects are ranked by hierarchical fair share ([`super::fairshare`]). Allocated waiting
//!    runs are taken in that order (project rank, priority descending, submit time, id), in
//!    four groups: runs that fit their project's active contract (docs/design.md section
//!    3.3), each pool's starving head (a gang larger than its project's entitlement whose
//!    project has no run that fits the entitlement: the run that held the pool's reservation
//!    after the previous pass when it is one, else the first run), then runs that keep their
//!    project within its entitlement, then the rest (entitlement first, docs/design.md
//!    section 3.2):
//!    - a run whose minimum-runtime cost exceeds its project's balance waits (budget);
//!    - a run that fits on free GPUs starts, packed best-fit (the node with the fewest free GPUs
//!      that holds the gang, else whole nodes, fullest-free first);
//!    - otherwise it may preempt unallocated runs and other projects' allocated runs past their
//!      minimum runtime, not on their own active contract, when the move raises
//!      `Φ = Σ min(held, entitlement)` or keeps it and every victim's project ranks strictly
//!      below after the move (`Pass::try_preempt`). The set is minimal and evicts at most the
//!      run's need plus one node's GPUs; the freed GPUs go to the run in the same pass;
//!    - otherwise the first such run of a pool gets a reservation: the earliest instant enough
//!      GPUs free up (runs started earlier in the pass counted), never `now`
//!      (`Pass::reserve`). Later runs of that pool start only if they end by then, or fit in
//!      the GPUs the reservation does not need; only those that end by then may still
//!      preempt, with a move that leaves no evicted GPU idle.
//! 4. Unallocated waiting runs then fill idle GPUs in fair-share order, up to each project's
//!    cap, respecting reservations. They never preempt.
//!
//! The `fifo` and `legacy` policies reuse the same placement and bookkeeping (see
//! [`PolicyKind`]).
//!
//! Cost: O((N + R + W) log) to index and sort, plus per waiting run an O(64 + N / 64) placement
//! or an O(1) rejection from per-pool counters; a preemption search scans the pool's running
//! runs only when per-rank counters show enough preemptible GPUs. Past a pool's reservation at
//! most `Policy::backfill_depth` runs are examined.

use super::fairshare::FairShare;
use super::reason::{Ahead, Decision, Outcome, PreemptReason, WaitReason, Waiting};
use super::types::{
    ClusterId, ContractId, ModelId, NodeId, NodeState, PolicyKind, ProjectId, RunId, RunningRun,
    Snapshot, WaitingRun,
};
use super::types::{IdMap, IdSlots, overlap_s};
use std::collections::{BTreeMap, BTreeSet};

struct NodeSlot {
    id: NodeId,
    pool: usize,
    /// Its place among its pool's nodes ([`Pool::members`]).
    local: usize,
    gpus: u32,
    state: NodeState,
    /// Bit i set = GPU i free.
    free: u64,
}

/// A pool's up nodes by free GPUs: for each count `k` in `0..=64`, a bit set of the nodes with
/// `k` free GPUs, by their place among the pool's nodes (which follows the dense node index, so
/// the lowest bit is the lowest node index). Built every pass without allocating per node; the
/// first node of a count is a scan of at most `ceil(nodes / 64)` words.
#[derive(Default)]
struct ByFree {
    /// Words per count.
    words: usize,
    /// `65 * words` words: count `k`'s set is `bits[k * words..(k + 1) * words]`.
    bits: Vec<u64>,
    /// Nodes per count (65 entries).
    len: Vec<u32>,
}

impl ByFree {
    /// Empty sets for a pool of `nodes` nodes.
    fn new(nodes: usize) -> ByFree {
        let words = nodes.div_ceil(64);
        ByFree {
            words,
            bits: vec![0; 65 * words],
            len: vec![0; 65],
        }
    }

    /// Adds node `local` (not in the set) to count `k`'s set.
    fn insert(&mut self, k: usize, local: usize) {
        self.bits[k * self.words + local / 64] |= 1 << (local % 64);
        self.len[k] += 1;
    }

    /// Removes node `local` (in the set) from count `k`'s set.
    fn remove(&mut self, k: usize, local: usize) {
        self.bits[k * self.words + local / 64] &= !(1 << (local % 64));
        self.len[k] -= 1;
    }

    /// The first node (lowest place) of count `k`'s set.
    fn first(&self, k: usize) -> Option<usize> {
        if self.len[k] == 0 {
            return None;
        }
        self.bits[k * self.words..(k + 1) * self.words]
            .iter()
            .position(|&w| w != 0)
            .map(|i| i * 64 + self.bits[k * self.words + i].trailing_zeros() as usize)
    }
}

/// Sort key of a waiting run in a pass (policy-dependent, unique by run id).
type OrderKey = (i64, i64, i64, RunId);

/// A waiting run in the pass's order: a copy of the snapshot's entry, so that the pass reads
/// its runs one after another in memory instead of jumping through the snapshot (on the base
/// benchmark those jumps were half the pass's time), with its pool.
struct Queued {
    run: WaitingRun,
    /// Its pool (index in `Pass::pools`), if its cluster has its GPU model.
    pool: Option<usize>,
}

impl std::ops::Deref for Queued {
    type Target = WaitingRun;
    fn deref(&self) -> &WaitingRun {
        &self.run
    }
}

/// A run started in the pass, as reservations see it.
struct Started {
    project: ProjectId,
    allocated: bool,
    on_contract: bool,
    /// The contract it runs on, whose hold takes its GPUs back when it ends.
    contract: Option<ContractId>,
    gpus: u32,
    /// End of its minimum runtime.
    protected_until: i64,
    /// End of its time limit.
    ends_by: i64,
}

struct Reservation {
    run: RunId,
    at: i64,
    /// GPUs runs that do not end by `at` may still take.
    extra: i64,
}

/// A run (or a contract's hold) with GPUs of a pool, as a reservation counts when they free
/// ([`Pass::reserve`]): when it could be evicted for the run reserving (none when never), and
/// when it ends by its time limit (or the hold by its window).
struct Holder {
    evict_at: Option<i64>,
    end: i64,
    gpus: i64,
    project: ProjectId,
    allocated: bool,
}

/// A count of the GPUs a run would have by some instant ([`Pass::count_victims`]): all it
/// would have, those of victims among them, the victims' projects' loss of entitlement
/// (milli-GPUs) and the GPUs each project loses.
#[derive(Default)]
struct VictimCount {
    have: i64,
    /// GPUs kept for short runs that are not idle now (short runs hold them): GPUs freed by
    /// runs ending fill these first; victims' GPUs go to the need ([`Pass::preemption_need`]).
    deficit: i64,
    evicted: i64,
    loss: i64,
    lost_by: Vec<(ProjectId, i64)>,
}

#[derive(Default)]
struct Pool {
    model_name: String,
    weight_milli: i64,
    price: i64,
    /// Dense node indices of the pool's nodes (every state), ascending.
    members: Vec<usize>,
    /// Nodes up, by free count (places in `members`).
    by_free: ByFree,
    /// Free GPUs on up nodes.
    free: i64,
    /// Free GPUs on draining nodes (for the reason).
    draining_free: i64,
    /// GPUs installed on nodes not down.
    installed: u32,
    /// GPUs installed on nodes up (neither draining nor down): a run larger than this waits
    /// for a drain to end (for the reason).
    up_installed: u32,
    /// GPUs installed on every node, whatever its state (a node down may come back): a run
    /// larger than this never fits.
    all_installed: u32,
    /// Largest node.
    node_max: u32,
    /// A gang on several nodes takes the same count on each ([`super::Cluster::uniform_gangs`]).
    uniform: bool,
    /// GPUs of the smallest run a preemption could take here (unallocated, or allocated past
    /// its minimum runtime and not on an active contract), as the pass began or started
    /// unallocated runs: a move evicts at most a run's need plus `node_max`, so none is
    /// possible when even this run is larger ([`Pass::may_find_victims`]).
    smallest_victim: Option<u32>,
    /// Unused GPUs held for active contracts.
    hold: i64,
    /// Idle GPUs kept for short runs ([`super::short_run_headroom`]): a run with a longer time
    /// limit starts only while this many stay idle beside it (docs/design.md section 3.7).
    headroom: i64,
    reservation: Option<Reservation>,
    /// Runs examined after the reservation was made.
    examined_after: usize,
    /// Allocated runs of the pool that wait for GPUs in this pass (not for budget): the GPUs
    /// that free go to them before unallocated runs.
    allocated_waiting: u32,
    /// Their GPUs.
    allocated_waiting_gpus: u32,
    /// Runs ahead in line (fifo) / blocked flag.
    blocked: bool,
    ahead: usize,
    /// Unallocated GPUs running (preemptible by anyone allocated).
    unalloc_gpus: i64,
    /// Allocated, unprotected, non-contract GPUs by project rank (suffix sums after build).
    preemptible_by_rank: Vec<i64>,
    /// Same, protected ones (for the reason).
    protected_by_rank: Vec<i64>,
    /// Running run indices in this pool.
    running: Vec<usize>,
    /// Possible victims (not contract-protected, all GPUs on up nodes), least work lost first;
    /// built on the pool's first preemption search.
    by_loss: Option<Vec<usize>>,
    /// All of `running` by [`Pass::lost_key`] (least work lost first), sorted once per pass on
    /// first use: the candidate lists of contracts, of preemption searches and of the legacy
    /// policy are this order, filtered.
    by_lost_key: Option<Vec<usize>>,
    /// Smallest need that failed a preemption search per project in this pass.
    failed_need: IdMap<ProjectId, i64>,
    /// Allocated GPUs each project of the snapshot holds in the pool now (after this pass's
    /// moves so far), by [`Pass::slots`] index.
    held: Vec<i64>,
    /// Same, projects not in the snapshot's list.
    held_other: IdMap<ProjectId, i64>,
    /// Sum of `held`.
    held_total: i64,
    /// Sum over projects of their milli-GPUs held beyond their entitlements.
    surplus_total: i64,
    /// Per project by [`FairShare::index`]: milli-GPUs held minus entitlement (negative when
    /// below it); a run of `g` GPUs can go without entitlement loss iff `g * 1000 <= spare`.
    spare: Vec<i64>,
    /// Preemption candidates past their minimum runtime in `by_loss` order, those whose
    /// projects kept their entitlements when it was built first, and where the others begin;
    /// built on the pool's first search (entries gone since are skipped at use).
    cands: Option<Cands>,
    /// Allocated runs inside their minimum runtime, earliest protection end first.
    protected_by_time: Option<Vec<usize>>,
    /// Each project's entitlement in the pool, milli-GPUs (see [`Pass::entitled_milli`]), by
    /// [`Pass::slots`] index.
    entitled: Vec<i64>,
    /// Time-limit ends of the pool's running runs with the GPUs freed by then (cumulative),
    /// built on first use for unallocated runs' expected starts.
    ends: Option<Vec<(i64, i64)>>,
    /// Runs started in this pass (they are not in `running`): a reservation made later in the
    /// pass counts the GPUs they give back.
    started: Vec<Started>,
    /// Other projects whose allocated runs of this pool were considered earlier in the pass,
    /// in that order (the first three), and how many there were in all.
    ahead_projects: Ahead,
    ahead_count: usize,
    /// Projects whose runs of the pool were considered before the entitlement phases (on
    /// their contracts, as the starving head), in that order.
    first_for_other_reasons: Vec<ProjectId>,
    /// Bit per project rank: seen ahead.
    ahead_seen: Vec<u64>,
}

impl Pool {
    /// The allocated GPUs `project` holds in the pool, `slot` being its [`Pass::slots`] index.
    fn held_entry(&mut self, slot: Option<usize>, project: ProjectId) -> &mut i64 {
        match slot {
            Some(i) => &mut self.held[i],
            None => self.held_other.entry(project).or_default(),
        }
    }
}

/// The entitlement test of a preemption (docs/design.md, "Entitlement first"): how much of what
/// projects are owed now a move delivers. `phi(h, e) = min(h, e)` in milli-GPUs is what a
/// project holding `h` GPUs receives of its entitlement `e`; a move's delta is the gain of the
/// preemptor's project minus the losses of the victims' projects.
fn phi(held_gpus: i64, entitled_milli: i64) -> i64 {
    (held_gpus.saturating_mul(1000)).min(entitled_milli)
}

/// The cost of a node-by-node move: entitlement milli-GPUs lost, GPUs evicted beyond the need,
/// work lost (GPU-seconds), node index (the tie-break).
type NodeMoveCost = (i64, i64, i128, usize);

/// A preemption move being built: its victims and what they free and cost.
#[derive(Default)]
struct Move {
    /// Victims (run slot indices), in the order chosen.
    chosen: Vec<usize>,
    /// GPUs they free (on every node).
    freed: i64,
    /// Per victim project: allocated GPUs lost, in-flight usage lost (GPU-seconds); a handful
    /// of entries, in the order first hit.
    lost: Vec<(ProjectId, i64, i128)>,
    /// Entitlement milli-GPUs the victims' projects lose, kept while victims are added (after
    /// `drop_at` recompute it with `Pass::move_loss`).
    loss: i64,
}

impl Move {
    /// Removes the `i`-th victim (the move stays allowed: losses only shrink).
    fn drop_at(&mut self, i: usize, runs: &[RunSlot]) {
        let ri = self.chosen.remove(i);
        let s = &runs[ri];
        self.freed -= i64::from(s.gpus);
        if s.run.allocated()
            && let Some(e) = self.lost.iter_mut().find(|e| e.0 == s.run.project)
        {
            e.1 -= i64::from(s.gpus);
        }
    }

    /// GPUs and usage `project` loses in the move so far.
    fn lost_by(&self, project: ProjectId) -> (i64, i128) {
        self.lost
            .iter()
            .find(|e| e.0 == project)
            .map_or((0, 0), |e| (e.1, e.2))
    }

    /// Sets what `project` loses; `(0, 0)` removes its entry.
    fn set_lost(&mut self, project: ProjectId, gpus: i64, usage: i128) {
        match self.lost.iter().position(|e| e.0 == project) {
            Some(i) if gpus == 0 && usage == 0 => {
                self.lost.remove(i);
            }
            Some(i) => self.lost[i] = (project, gpus, usage),
            None if gpus == 0 && usage == 0 => {}
            None => self.lost.push((project, gpus, usage)),
        }
    }

    /// Empties the move, keeping its buffers.
    fn clear(&mut self) {
        self.chosen.clear();
        self.lost.clear();
        self.freed = 0;
        self.loss = 0;
    }
}

/// A pool's preemption candidates for one pass (see [`Pass::try_preempt`]).
struct Cands {
    /// Run slot indices: unallocated, then runs whose projects kept their entitlements when
    /// the list was built, then the others, each least work lost first. Entries gone since
    /// are skipped at use.
    list: Vec<usize>,
    /// Where the others (costly victims) begin in `list`.
    costly_from: usize,
    /// Built on the pool's first node-by-node search: per entry of `list` its project,
    /// whether allocated, GPUs and work lost if evicted now (GPU-seconds), so that bounds read
    /// one flat array; and the up nodes holding candidates, by ascending (least work lost of
    /// one candidate, index), each with its candidates and bounds ([`NodeCands`]).
    by_node: Option<ByNode>,
}

type ByNode = (Vec<CandMeta>, Vec<NodeCands>);

/// One up node of [`Cands::by_node`]: the candidates holding GPUs on it and static bounds.
struct NodeCands {
    /// Dense node index.
    ni: usize,
    /// Positions in [`Cands::list`] of the candidates holding GPUs on it (ascending), and how
    /// many GPUs each holds there.
    positions: Vec<(usize, i64)>,
    /// GPUs on the node of all candidates, and of those before [`Cands::costly_from`]: upper
    /// bounds of what a move on it can free.
    cap_all: i64,
    cap_cheap: i64,
    /// Least work lost (GPU-seconds) of one candidate on it: a lower bound of a move's.
    min_lost: i128,
}

/// What node-by-node bounds need of a candidate (see [`Cands::by_node`]).
struct CandMeta {
    project: ProjectId,
    /// [`FairShare::index`] of the project, if it is in the tree.
    index: Option<usize>,
    allocated: bool,
    gpus: i64,
    lost: i128,
}

struct RunSlot<'a> {
    run: &'a RunningRun,
    pool: Option<usize>,
    gpus: u32,
    /// GPUs of its placement on up nodes (those that come back to the pool when it ends).
    up_gpus: i64,
    /// Whether every node of its placement is known and up (node states do not change
    /// during a pass, so this is computed once).
    all_up: bool,
    gone: bool,
    /// The capacity contract it is on: its own, or the one that adopts it in this pass.
    contract: Option<ContractId>,
    contract_protected: bool,
}

struct ProjectState {
    balance: Option<i64>,
    unalloc_cap: Option<u32>,
    unalloc_held: u32,
    legacy_cap: u32,
    legacy_np: u32,
    /// Effective share: product of the shares from the top of the tree, `0.0..=1.0`.
    eff: f64,
}

struct Pass<'a> {
    snap: &'a Snapshot,
    now: i64,
    nodes: Vec<NodeSlot>,
    node_index: IdMap<NodeId, usize>,
    pools: Vec<Pool>,
    pool_index: BTreeMap<(ClusterId, ModelId), usize>,
    runs: Vec<RunSlot<'a>>,
    fs: FairShare,
    projects: IdMap<ProjectId, ProjectState>,
    /// Index of each project id in the snapshot's project list (its last entry), for the
    /// per-pool `held` and `entitled` vectors.
    slots: IdSlots,
    /// Active contracts: id -> (project, pool, unused GPUs).
    contracts: BTreeMap<ContractId, (ProjectId, usize, i64)>,
    decisions: Vec<Decision>,
    /// The runs that wait, in the order the pass considered them. Pushed, not written at each
    /// run's place in the snapshot: a store at a scattered place first loads what it replaces
    /// (a cache miss per waiting run, the largest single cost of a pass on the base size).
    waiting: Vec<Waiting>,
    /// Whether the snapshot lists its waiting runs in ascending id order (as the live service
    /// and the simulator do): then the order is a counting sort.
    waiting_by_id: bool,
    /// Whether the run being considered may take the idle GPUs kept for short runs whatever
    /// its time limit: runs on their contracts and a pool's starving head of whole nodes.
    exempt: bool,
    /// The allocated short runs that wait in pools that keep GPUs for them, with their places
    /// in `waiting`, in the order the pass considered them ([`Self::start_short_on_kept`]).
    short_waits: Vec<(usize, Queued)>,
    /// Whether runs are being considered in fair-share order (the entitlement phases and the
    /// other policies), so that [`Self::note_ahead`] records them.
    in_fair_share_order: bool,
}

/// Runs one scheduling pass over `snapshot` at instant `now` (s since the epoch).
///
/// Pure and deterministic: the result depends only on the arguments, not on the order of the
/// snapshot's lists. The snapshot should satisfy [`Snapshot::validate`]; a run that references
/// an unknown project, cluster or model simply waits ([`WaitReason::NeverFits`]).
///
/// Returns the decisions to apply and, for every waiting run that does not start, a
/// [`WaitReason`] and, where known, an estimated start.
pub fn schedule(snapshot: &Snapshot, now: i64) -> Outcome {
    let mut pass = Pass::build(snapshot, now);
    pass.nodes_leaving();
    pass.hold_contracts();
    let order = pass.order_waiting();
    match snapshot.policy.kind {
        PolicyKind::Tranche => {
            let mut alloc = Vec::with_capacity(order.len());
            let mut unalloc = Vec::new();
            for w in &order {
                if w.allocated() {
                    alloc.push(w);
                } else {
                    unalloc.push(w);
                }
            }
            // Runs on their project's active contract first: they take only the GPUs the
            // contract holds, which no other allocated run may use, so a reservation made
            // after them counts them as they are instead of promising their GPUs to another
            // run at the window's end (docs/design.md section 3.3).
            let mut done = vec![false; alloc.len()];
            let contracts = !pass.contracts.is_empty();
            pass.exempt = true;
            pass.in_fair_share_order = false;
            for (i, w) in alloc.iter().enumerate().filter(|_| contracts) {
                if w.pool
                    .is_some_and(|pool| pass.contract_for(w, pool).is_some())
                {
                    pass.consider_tranche(w);
                    done[i] = true;
                }
            }
            // Large gangs do not starve: a pool's first run in fair-share order whose project
            // has no run that fits its entitlement starts now or holds the reservation.
            let heads = pass.starving_heads(&alloc);
            pass.exempt = false;
            for &i in &heads {
                if !done[i] {
                    // A starving gang of whole nodes may take the kept GPUs (it could not
                    // otherwise start beside them on partly used nodes); a smaller head waits
                    // for one more GPU to free, as any run does.
                    pass.exempt = alloc[i]
                        .pool
                        .is_some_and(|pool| alloc[i].gpus >= pass.pools[pool].node_max);
                    pass.consider_tranche(alloc[i]);
                }
            }
            pass.exempt = false;
            pass.in_fair_share_order = true;
            // Entitlement first: runs that keep their project within its entitlement, then the
            // rest, each in fair-share order.
            let mut beyond = Vec::with_capacity(alloc.len());
            for (i, w) in alloc.into_iter().enumerate() {
                if heads.contains(&i) || done[i] {
                    continue;
                }
                if pass.within_entitlement(w) {
                    pass.consider_tranche(w);
                } else {
                    beyond.push(w);
                }
            }
            for w in beyond {
                pass.consider_tranche(w);
            }
            pass.start_short_on_kept();
            for w in unalloc {
                pass.consider_unallocated(w);
            }
        }
        PolicyKind::Fifo => {
            for w in &order {
                pass.consider_fifo(w);
            }
        }
        PolicyKind::Legacy => {
            for w in &order {
                pass.consider_legacy(w);
            }
        }
    }
    pass.finish()
}

/// Puts on each contract that holds capacity now (its lead time included) the running
/// allocated runs of its project in its pool that are on no contract holding capacity now (none,
/// or one whose window is over: a training run goes from one contract to the next), oldest
/// first, whole gangs, while the contract has GPUs none of its runs uses: a run the window finds
/// running is on the contract as one started inside it would be (protected inside the window,
/// `contract_protected` from its start). Returns the [`Decision::Adopt`]s.
fn adopt(
    runs: &mut [RunSlot<'_>],
    active: &BTreeMap<ContractId, &super::types::Contract>,
    pool_index: &BTreeMap<(ClusterId, ModelId), usize>,
    now: i64,
) -> Vec<Decision> {
    let mut out = Vec::new();
    for c in active.values() {
        let Some(&pool) = pool_index.get(&(c.cluster, c.model)) else {
            continue;
        };
        let mine = |s: &RunSlot<'_>| s.pool == Some(pool) && s.run.project == c.project;
        let used: i64 = runs
            .iter()
            .filter(|s| mine(s) && s.contract == Some(c.id))
            .map(|s| i64::from(s.gpus))
            .sum();
        let mut unused = i64::from(c.gpus) - used;
        if unused <= 0 {
            continue;
        }
        let mut candidates: Vec<usize> = (0..runs.len())
            .filter(|&i| {
                mine(&runs[i])
                    && runs[i].contract.is_none_or(|k| !active.contains_key(&k))
                    && runs[i].run.allocated()
            })
            .collect();
        candidates.sort_unstable_by_key(|&i| (runs[i].run.started_at, runs[i].run.id));
        for i in candidates {
            let gpus = i64::from(runs[i].gpus);
            if gpus == 0 || gpus > unused {
                continue;
            }
            unused -= gpus;
            runs[i].contract = Some(c.id);
            runs[i].contract_protected = c.active_at(now);
            out.push(Decision::Adopt {
                run: runs[i].run.id,
                contract: c.id,
            });
        }
    }
    out
}

/// A waiting run's order within its project as one integer: priority (highest first), then
/// submission, then `at` (its index in the snapshot, which lists runs by id), in the low 32
/// bits. Comparing keys compares `(Reverse(priority), submitted_at, at)`.
fn within_key(w: &WaitingRun, at: u32) -> u128 {
    let priority = (i64::from(i32::MAX) - i64::from(w.priority)) as u128;
    let submitted = ((w.submitted_at as u64) ^ (1 << 63)) as u128;
    (priority << 96) | (submitted << 32) | u128::from(at)
}

/// A waiting run's place in the fifo order as one integer: submission, then `at` (its index in
/// a snapshot that lists runs by id) in the low 32 bits. Comparing keys compares
/// `(submitted_at, at)`, the fifo key `(submitted_at, id)` when indices follow ids.
fn fifo_key(w: &WaitingRun, at: u32) -> u128 {
    let submitted = ((w.submitted_at as u64) ^ (1 << 63)) as u128;
    (submitted << 32) | u128::from(at)
}

impl<'a> Pass<'a> {
    fn build(snap: &'a Snapshot, now: i64) -> Pass<'a> {
        let models: IdMap<ModelId, _> = snap.models.iter().map(|m| (m.id, m)).collect();
        let mut node_refs: Vec<_> = snap.nodes.iter().collect();
        node_refs.sort_unstable_by_key(|n| n.id);
        let mut pool_index = BTreeMap::new();
        for n in &node_refs {
            pool_index.entry((n.cluster, n.model)).or_insert(0usize);
        }
        // One scan of the waiting runs: their pools, and whether they are listed by id.
        let mut last = None;
        let mut waiting_by_id = true;
        let mut prev_id = None;
        for w in &snap.waiting {
            let key = (w.cluster, w.model);
            if last != Some(key) {
                pool_index.entry(key).or_insert(0usize);
                last = Some(key);
            }
            if prev_id.is_some_and(|p| p >= w.id) {
                waiting_by_id = false;
            }
            prev_id = Some(w.id);
        }
        let mut pools = Vec::with_capacity(pool_index.len());
        for (i, (key, slot)) in pool_index.iter_mut().enumerate() {
            *slot = i;
            let m = models.get(&key.1);
            pools.push(Pool {
                model_name: m.map_or_else(|| format!("model {}", key.1), |m| m.name.clone()),
                weight_milli: m.map_or(1000, |m| m.billing_weight_milli.max(0)),
                price: m.map_or(0, |m| m.price_per_gpu_hour.max(0)),
                uniform: snap
                    .clusters
                    .iter()
                    .any(|c| c.id == key.0 && c.uniform_gangs),
                ..Pool::default()
            });
        }
        let mut nodes = Vec::with_capacity(node_refs.len());
        let mut node_index = IdMap::with_capacity_and_hasher(node_refs.len(), Default::default());
        for n in &node_refs {
            let gpus = n.gpus.clamp(0, 64);
            let pool = pool_index[&(n.cluster, n.model)];
            let local = pools[pool].members.len();
            pools[pool].members.push(nodes.len());
            node_index.insert(n.id, nodes.len());
            let free = if gpus == 64 {
                u64::MAX
            } else {
                (1u64 << gpus) - 1
            };
            nodes.push(NodeSlot {
                id: n.id,
                pool,
                local,
                gpus,
                state: n.state,
                free,
            });
            pools[pool].all_installed += gpus;
            if n.state != NodeState::Down {
                pools[pool].installed += gpus;
                pools[pool].node_max = pools[pool].node_max.max(gpus);
            }
            if n.state == NodeState::Up {
                pools[pool].up_installed += gpus;
            }
        }
        // Entries for one pool add up (the outcome does not depend on the list's order). The
        // other policies keep no headroom.
        let mut short_milli = vec![0i64; pools.len()];
        let loads = if snap.policy.kind == PolicyKind::Tranche {
            &snap.short_load[..]
        } else {
            &[]
        };
        for l in loads {
            if let Some(&i) = pool_index.get(&(l.cluster, l.model)) {
                short_milli[i] = short_milli[i].saturating_add(l.milli_gpus.max(0));
            }
        }
        for (p, milli) in pools.iter_mut().zip(short_milli) {
            let load = milli as f64 / 1000.0;
            p.headroom = i64::from(super::short_run_headroom(
                load,
                p.up_installed,
                snap.policy.short_run_blocking_percent,
            ));
        }
        // Running runs: mark their GPUs.
        let mut running: Vec<_> = snap.running.iter().collect();
        running.sort_unstable_by_key(|r| r.id);
        let active: BTreeMap<ContractId, &super::types::Contract> = snap
            .contracts
            .iter()
            .filter(|c| c.start.saturating_sub(snap.policy.contract_lead_s) <= now && now < c.end)
            .map(|c| (c.id, c))
            .collect();
        let mut runs = Vec::with_capacity(running.len());
        for r in running {
            let pool = pool_index.get(&(r.cluster, r.model)).copied();
            let mut gpus = 0u32;
            let mut up_gpus = 0i64;
            let mut all_up = true;
            for (nid, idx) in &r.placement {
                if let Some(&ni) = node_index.get(nid) {
                    for &g in idx {
                        if g < nodes[ni].gpus {
                            nodes[ni].free &= !(1u64 << g);
                        }
                    }
                    if nodes[ni].state == NodeState::Up {
                        up_gpus += idx.len() as i64;
                    } else {
                        all_up = false;
                    }
                } else {
                    all_up = false;
                }
                gpus += idx.len() as u32;
            }
            let contract_protected = r.contract.is_some_and(|c| {
                active
                    .get(&c)
                    .is_some_and(|k| k.project == r.project && k.active_at(now))
            });
            runs.push(RunSlot {
                run: r,
                pool,
                gpus,
                up_gpus,
                all_up,
                gone: false,
                contract: r.contract,
                contract_protected,
            });
        }
        let adopted = if snap.policy.kind == PolicyKind::Tranche {
            adopt(&mut runs, &active, &pool_index, now)
        } else {
            Vec::new()
        };
        // In-flight usage.
        let w = snap.policy.in_flight_s.max(0) as i128;
        let mut in_flight: IdMap<ProjectId, i128> = IdMap::default();
        for s in &runs {
            if s.run.allocated() {
                let wm = s.pool.map_or(1000, |p| pools[p].weight_milli) as i128;
                *in_flight.entry(s.run.project).or_default() += i128::from(s.gpus) * w * wm / 1000;
            }
        }
        let fs = FairShare::new(snap, &in_flight);
        // Effective shares (entitlements are effective share x a pool's GPUs).
        let mut projects = IdMap::with_capacity_and_hasher(snap.projects.len(), Default::default());
        let tree: IdMap<_, _> = snap.tree.iter().map(|t| (t.id, t)).collect();
        for p in &snap.projects {
            let mut eff = p.share.fraction();
            let mut cur = p.parent;
            let mut steps = 0;
            while let Some(c) = cur {
                steps += 1;
                let Some(t) = tree.get(&c) else { break };
                if steps > snap.tree.len() {
                    break;
                }
                eff *= t.share.fraction();
                cur = t.parent;
            }
            projects.insert(
                p.id,
                ProjectState {
                    balance: p.balance,
                    unalloc_cap: p.unallocated_gpu_cap,
                    unalloc_held: 0,
                    legacy_cap: p.legacy_cap,
                    legacy_np: 0,
                    eff,
                },
            );
        }
        let contracts = active
            .values()
            .filter_map(|c| {
                pool_index
                    .get(&(c.cluster, c.model))
                    .map(|&p| (c.id, (c.project, p, i64::from(c.gpus))))
            })
            .collect();
        let mut pass = Pass {
            snap,
            now,
            nodes,
            node_index,
            pools,
            pool_index,
            runs,
            fs,
            projects,
            slots: IdSlots::new(&snap.projects.iter().map(|p| p.id).collect::<Vec<_>>()),
            contracts,
            decisions: adopted,
            waiting: Vec::with_capacity(snap.waiting.len()),
            waiting_by_id,
            exempt: false,
            short_waits: Vec::new(),
            in_fair_share_order: true,
        };
        pass.index_pools();
        pass
    }

    fn index_pools(&mut self) {
        for p in &mut self.pools {
            p.by_free = ByFree::new(p.members.len());
        }
        for n in &self.nodes {
            let k = n.free.count_ones() as i64;
            match n.state {
                NodeState::Up => {
                    self.pools[n.pool].by_free.insert(k as usize, n.local);
                    self.pools[n.pool].free += k;
                }
                NodeState::Draining => self.pools[n.pool].draining_free += k,
                NodeState::Down => {}
            }
        }
        let n_projects = self.fs.len();
        let n_slots = self.snap.projects.len();
        for p in &mut self.pools {
            p.held = vec![0; n_slots];
            p.preemptible_by_rank = vec![0; n_projects + 1];
            p.protected_by_rank = vec![0; n_projects + 1];
        }
        for (i, s) in self.runs.iter().enumerate() {
            let Some(pool) = s.pool else { continue };
            self.pools[pool].running.push(i);
            let r = s.run;
            if let Some(ps) = self.projects.get_mut(&r.project) {
                if !r.allocated() {
                    ps.unalloc_held += s.gpus;
                }
                if r.non_preemptible {
                    ps.legacy_np += s.gpus;
                }
            }
            let own = s
                .contract
                .filter(|c| self.contracts.get(c).is_some_and(|e| e.0 == r.project));
            if r.allocated() || own.is_some() {
                // A run of the project uses what its contracts in the pool hold for it: its own
                // contract's first, then (a gang larger than that) the others', as when it
                // started ([`Self::take_own_hold`]): the project has those GPUs.
                let mut left = i64::from(s.gpus);
                if let Some(entry) = own.and_then(|c| self.contracts.get_mut(&c)) {
                    let used = left.min(entry.2.max(0));
                    entry.2 -= used;
                    left -= used;
                }
                for (id, entry) in &mut self.contracts {
                    if Some(*id) != own && entry.0 == r.project && entry.1 == pool && left > 0 {
                        let used = left.min(entry.2.max(0));
                        entry.2 -= used;
                        left -= used;
                    }
                }
            }
            if r.allocated() {
                let slot = self.slots.get(r.project);
                *self.pools[pool].held_entry(slot, r.project) += i64::from(s.gpus);
                self.pools[pool].held_total += i64::from(s.gpus);
            }
            let victim =
                !r.allocated() || (!s.contract_protected && r.protected_until() <= self.now);
            if victim {
                let p = &mut self.pools[pool];
                p.smallest_victim = Some(p.smallest_victim.map_or(s.gpus, |g| g.min(s.gpus)));
            }
            if !r.allocated() {
                self.pools[pool].unalloc_gpus += i64::from(s.gpus);
            } else if !s.contract_protected {
                let rank = self.fs.rank(r.project).min(n_projects);
                if r.protected_until() <= self.now {
                    self.pools[pool].preemptible_by_rank[rank] += i64::from(s.gpus);
                } else {
                    self.pools[pool].protected_by_rank[rank] += i64::from(s.gpus);
                }
            }
        }
        for p in &mut self.pools {
            for v in [&mut p.preemptible_by_rank, &mut p.protected_by_rank] {
                for i in (0..v.len().saturating_sub(1)).rev() {
                    v[i] += v[i + 1];
                }
            }
        }
        for &(_, pool, unused) in self.contracts.values() {
            self.pools[pool].hold += unused.max(0);
        }
        for pool in &mut self.pools {
            let installed = f64::from(pool.installed);
            pool.entitled = vec![0; n_slots];
            for (i, p) in self.snap.projects.iter().enumerate() {
                if self.slots.get(p.id) == Some(i)
                    && let Some(ps) = self.projects.get(&p.id)
                {
                    pool.entitled[i] = (ps.eff * installed * 1000.0).floor() as i64;
                }
            }
            // Entitlements are not negative, so projects holding nothing add nothing.
            pool.surplus_total = pool
                .held
                .iter()
                .zip(&pool.entitled)
                .map(|(&h, &e)| (h * 1000 - e).max(0))
                .chain(pool.held_other.values().map(|&h| (h * 1000).max(0)))
                .sum();
            pool.spare = vec![0; self.fs.len()];
            for &id in self.projects.keys() {
                if let Some(i) = self.fs.index(id) {
                    let (h, e) = self
                        .slots
                        .get(id)
                        .map_or((0, 0), |k| (pool.held[k], pool.entitled[k]));
                    pool.spare[i] = h * 1000 - e;
                }
            }
        }
    }

    /// Changes the allocated GPUs `project` holds in `pool` by `delta`.
    fn add_held(&mut self, pool: usize, project: ProjectId, delta: i64) {
        let e = self.entitled_milli(project, pool);
        let slot = self.slots.get(project);
        let p = &mut self.pools[pool];
        let h = p.held_entry(slot, project);
        let before = (*h * 1000 - e).max(0);
        *h += delta;
        let after = (*h * 1000 - e).max(0);
        p.held_total += delta;
        p.surplus_total += after - before;
        if let Some(i) = self.fs.index(project) {
            p.spare[i] += delta * 1000;
        }
    }

    // ----- GPU bookkeeping -------------------------------------------------------------------

    fn set_node_free(&mut self, ni: usize, new_free: u64) {
        let n = &mut self.nodes[ni];
        let old = n.free.count_ones() as usize;
        let new = new_free.count_ones() as usize;
        n.free = new_free;
        match n.state {
            NodeState::Up => {
                let pool = &mut self.pools[n.pool];
                pool.by_free.remove(old, n.local);
                pool.by_free.insert(new, n.local);
                pool.free += new as i64 - old as i64;
            }
            NodeState::Draining => self.pools[n.pool].draining_free += new as i64 - old as i64,
            NodeState::Down => {}
        }
    }

    fn release(&mut self, ri: usize) {
        let placement = &self.runs[ri].run.placement;
        for (nid, idx) in placement {
            if let Some(&ni) = self.node_index.get(nid) {
                let mut f = self.nodes[ni].free;
                for &g in idx {
                    if g < self.nodes[ni].gpus {
                        f |= 1u64 << g;
                    }
                }
                self.set_node_free(ni, f);
            }
        }
    }

    /// The fewest nodes `k` and the count `per` on each (`k * per = gpus`) on which a gang of
    /// `gpus` fits the pool's up nodes with the same count on each, given each member's free
    /// GPUs (`free_of`, by place in `members`); `None` when no split fits.
    fn uniform_split(
        &self,
        pool: usize,
        gpus: u32,
        free_of: impl Fn(usize) -> u32,
    ) -> Option<(u32, u32)> {
        let p = &self.pools[pool];
        let up: Vec<u32> = (0..p.members.len())
            .filter(|&l| self.nodes[p.members[l]].state == NodeState::Up)
            .map(free_of)
            .collect();
        (gpus.div_ceil(p.node_max.max(1)).max(1)..=gpus)
            .filter(|k| gpus.is_multiple_of(*k))
            .find(|&k| up.iter().filter(|&&f| f >= gpus / k).count() >= k as usize)
            .map(|k| (k, gpus / k))
    }

    /// Places `gpus` with the same count on each node ([`Self::uniform_split`]), best fit
    /// (the nodes with the fewest free GPUs that hold the count); takes the GPUs.
    fn place_uniform(&mut self, pool: usize, gpus: u32) -> Option<Vec<(NodeId, Vec<u32>)>> {
        let (k, per) = self.uniform_split(pool, gpus, |l| {
            self.nodes[self.pools[pool].members[l]].free.count_ones()
        })?;
        let p = &self.pools[pool];
        let mut fit: Vec<(u32, usize)> = p
            .members
            .iter()
            .map(|&ni| (self.nodes[ni].free.count_ones(), ni))
            .filter(|&(f, ni)| f >= per && self.nodes[ni].state == NodeState::Up)
            .collect();
        fit.sort_unstable();
        let mut out = Vec::with_capacity(k as usize);
        for &(_, ni) in fit.iter().take(k as usize) {
            out.extend(self.place_on(ni, per)?);
        }
        out.sort_unstable_by_key(|(n, _)| *n);
        Some(out)
    }

    /// Best-fit placement of `gpus` on the pool's up nodes; takes the GPUs.
    fn place(&mut self, pool: usize, gpus: u32) -> Option<Vec<(NodeId, Vec<u32>)>> {
        if i64::from(gpus) > self.pools[pool].free {
            return None;
        }
        if self.pools[pool].uniform {
            return self.place_uniform(pool, gpus);
        }
        let mut remaining = gpus as usize;
        let mut out: Vec<(NodeId, Vec<u32>)> = Vec::new();
        while remaining > 0 {
            let p = &self.pools[pool];
            let pick = (remaining.min(64)..=64)
                .find_map(|k| {
                    if remaining <= 64 {
                        p.by_free.first(k)
                    } else {
                        None
                    }
                })
                .or_else(|| (1..=64).rev().find_map(|k| p.by_free.first(k)))
                .map(|local| p.members[local]);
            let ni = pick?;
            let free = self.nodes[ni].free;
            let mut take = 0u64;
            let mut taken = Vec::new();
            let mut bits = free;
            while bits != 0 && taken.len() < remaining {
                let g = bits.trailing_zeros();
                bits &= bits - 1;
                take |= 1u64 << g;
                taken.push(g);
            }
            remaining -= taken.len();
            out.push((self.nodes[ni].id, taken));
            self.set_node_free(ni, free & !take);
        }
        out.sort_unstable_by_key(|(n, _)| *n);
        Some(out)
    }

    /// Takes `gpus` GPUs of node `ni` (an up node with that many free), lowest indices first.
    fn place_on(&mut self, ni: usize, gpus: u32) -> Option<Vec<(NodeId, Vec<u32>)>> {
        let free = self.nodes[ni].free;
        if self.nodes[ni].state != NodeState::Up || free.count_ones() < gpus {
            return None;
        }
        let mut take = 0u64;
        let mut taken = Vec::with_capacity(gpus as usize);
        let mut bits = free;
        while taken.len() < gpus as usize {
            let g = bits.trailing_zeros();
            bits &= bits - 1;
            take |= 1u64 << g;
            taken.push(g);
        }
        self.set_node_free(ni, free & !take);
        Some(vec![(self.nodes[ni].id, taken)])
    }

    fn preempt(&mut self, ri: usize, reason: PreemptReason, for_run: Option<RunId>) {
        if self.runs[ri].gone {
            return;
        }
        self.runs[ri].gone = true;
        let r = self.runs[ri].run;
        let gpus = self.runs[ri].gpus;
        self.release(ri);
        if let Some(pool) = self.runs[ri].pool {
            let wm = i128::from(self.pools[pool].weight_milli);
            if r.allocated() {
                let w = i128::from(self.snap.policy.in_flight_s.max(0));
                self.fs
                    .add_usage(r.project, -(i128::from(gpus) * w * wm / 1000));
                self.add_held(pool, r.project, -i64::from(gpus));
            } else {
                self.pools[pool].unalloc_gpus -= i64::from(gpus);
            }
            if let Some(c) = self.runs[ri].contract
                && let Some(entry) = self.contracts.get_mut(&c)
                && entry.0 == r.project
            {
                entry.2 += i64::from(gpus);
                self.pools[pool].hold += i64::from(gpus);
            }
        }
        if let Some(ps) = self.projects.get_mut(&r.project) {
            if !r.allocated() {
                ps.unalloc_held = ps.unalloc_held.saturating_sub(gpus);
            }
            if r.non_preemptible {
                ps.legacy_np = ps.legacy_np.saturating_sub(gpus);
            }
        }
        self.decisions.push(Decision::Preempt {
            run: r.id,
            reason,
            for_run,
        });
    }

    fn start(
        &mut self,
        w: &WaitingRun,
        pool: usize,
        contract: Option<ContractId>,
        non_preemptible: bool,
    ) -> bool {
        self.start_on(w, pool, contract, non_preemptible, None)
    }

    /// Starts `w`: on node `on` when given (the node its victims freed), else best-fit.
    fn start_on(
        &mut self,
        w: &WaitingRun,
        pool: usize,
        contract: Option<ContractId>,
        non_preemptible: bool,
        on: Option<usize>,
    ) -> bool {
        let placement = match on {
            Some(ni) => self.place_on(ni, w.gpus),
            None => self.place(pool, w.gpus),
        };
        let Some(placement) = placement else {
            return false;
        };
        if w.allocated() {
            let wm = i128::from(self.pools[pool].weight_milli);
            let fl = i128::from(self.snap.policy.in_flight_s.max(0));
            self.fs
                .add_usage(w.project, i128::from(w.gpus) * fl * wm / 1000);
            self.add_held(pool, w.project, i64::from(w.gpus));
        }
        let cost = self.cost(w, pool);
        if let Some(ps) = self.projects.get_mut(&w.project) {
            if w.allocated()
                && let Some(b) = ps.balance.as_mut()
            {
                *b -= cost;
            }
            if !w.allocated() {
                ps.unalloc_held += w.gpus;
            }
            if non_preemptible {
                ps.legacy_np += w.gpus;
            }
        }
        if !w.allocated() {
            let p = &mut self.pools[pool];
            p.unalloc_gpus += i64::from(w.gpus);
            p.smallest_victim = Some(p.smallest_victim.map_or(w.gpus, |g| g.min(w.gpus)));
        }
        // The GPUs its project's contracts hold for it in the pool are prepaid: all of the
        // gang's, or what the contracts have left for a larger one.
        let contract_gpus = contract.map_or(0, |_| {
            self.own_hold(w.project, pool).clamp(0, i64::from(w.gpus)) as u32
        });
        if w.allocated() || contract.is_some() {
            self.take_own_hold(w.project, pool, contract, i64::from(w.gpus));
        }
        self.pools[pool].started.push(Started {
            project: w.project,
            allocated: w.allocated(),
            on_contract: contract.is_some(),
            contract,
            gpus: w.gpus,
            protected_until: self.now.saturating_add(w.min_runtime_s),
            ends_by: self.now.saturating_add(w.time_limit_s),
        });
        self.decisions.push(Decision::Start {
            run: w.id,
            placement,
            contract,
            contract_gpus,
            non_preemptible,
        });
        true
    }

    /// Minimum-runtime cost in minor units, rounded up.
    fn cost(&self, w: &WaitingRun, pool: usize) -> i64 {
        self.cost_of(w, pool, w.min_runtime_s)
    }

    /// The price of `seconds` of `w`'s GPUs in `pool` (0 for unallocated work), minor units:
    /// GPUs x hours x billing weight x price, rounded half up, as the ledger holds and charges
    /// it (`domain::contract_price`), so a run the submission check accepts is not refused
    /// here by a rounding.
    fn cost_of(&self, w: &WaitingRun, pool: usize, seconds: i64) -> i64 {
        if !w.allocated() {
            return 0;
        }
        self.price(w.gpus, pool, seconds)
    }

    /// The price of `seconds` of `gpus` GPUs in `pool`, as [`Self::cost_of`] rounds it.
    fn price(&self, gpus: u32, pool: usize, seconds: i64) -> i64 {
        let p = &self.pools[pool];
        let num = i128::from(gpus)
            * i128::from(seconds)
            * i128::from(p.weight_milli)
            * i128::from(p.price);
        i64::try_from((num * 2 + 3_600_000) / 7_200_000).unwrap_or(i64::MAX)
    }

    // ----- steps -----------------------------------------------------------------------------

    fn nodes_leaving(&mut self) {
        if self.nodes.iter().all(|n| n.state == NodeState::Up) {
            return;
        }
        for ri in 0..self.runs.len() {
            let r = self.runs[ri].run;
            let mut down = None;
            let mut draining = None;
            for (nid, _) in &r.placement {
                if let Some(&ni) = self.node_index.get(nid) {
                    // The smallest id, so the reason does not depend on the placement's order.
                    match self.nodes[ni].state {
                        NodeState::Down => down = Some(down.map_or(*nid, |d: NodeId| d.min(*nid))),
                        NodeState::Draining => {
                            draining = Some(draining.map_or(*nid, |d: NodeId| d.min(*nid)))
                        }
                        NodeState::Up => {}
                    }
                }
            }
            if let Some(node) = down {
                self.preempt(ri, PreemptReason::NodeDown { node }, None);
            } else if let Some(node) = draining
                && r.protected_until() <= self.now
            {
                self.preempt(ri, PreemptReason::NodeDraining { node }, None);
            }
        }
    }

    fn hold_contracts(&mut self) {
        if self.snap.policy.kind != PolicyKind::Tranche {
            for p in &mut self.pools {
                p.hold = 0;
            }
            return;
        }
        let owners: BTreeSet<(usize, ProjectId)> = self
            .contracts
            .values()
            .map(|&(proj, pool, _)| (pool, proj))
            .collect();
        let ids: Vec<ContractId> = self.contracts.keys().copied().collect();
        for cid in ids {
            let (_, pool, _) = self.contracts[&cid];
            let deficit =
                self.pools[pool].hold - self.pools[pool].free - self.pools[pool].unalloc_gpus;
            if deficit <= 0 {
                continue;
            }
            // Allocated, unprotected borrowers of other projects, least work lost first.
            self.running_by_loss(pool);
            let sorted = self.pools[pool].by_lost_key.as_deref().unwrap_or_default();
            let cands: Vec<usize> = sorted
                .iter()
                .copied()
                .filter(|&ri| {
                    let s = &self.runs[ri];
                    !s.gone
                        && s.run.allocated()
                        && !s.contract_protected
                        && s.run.protected_until() <= self.now
                        && !owners.contains(&(pool, s.run.project))
                })
                .collect();
            let mut freed = 0i64;
            for ri in cands {
                if freed >= deficit {
                    break;
                }
                freed += i64::from(self.runs[ri].gpus);
                self.preempt(ri, PreemptReason::Contract { contract: cid }, None);
            }
        }
    }

    /// Sorts the pool's running runs (those of the snapshot) by [`Self::lost_key`] into
    /// `by_lost_key` on the pass's first call (the keys do not change during a pass; they are
    /// unique).
    fn running_by_loss(&mut self, pool: usize) {
        if self.pools[pool].by_lost_key.is_none() {
            let mut v = self.pools[pool].running.clone();
            v.sort_by_cached_key(|&ri| self.lost_key(ri));
            self.pools[pool].by_lost_key = Some(v);
        }
    }

    /// Sort key of a preemption candidate: unallocated first, then least work lost (GPU-seconds
    /// since its start), then id. Unique per run.
    fn lost_key(&self, ri: usize) -> (u8, i128, RunId) {
        let s = &self.runs[ri];
        let class = u8::from(s.run.allocated());
        let lost = i128::from(s.gpus) * i128::from((self.now - s.run.started_at).max(0));
        (class, lost, s.run.id)
    }

    /// The waiting runs in the policy's order, copied ([`Queued`]).
    fn order_waiting(&self) -> Vec<Queued> {
        let fs = &self.fs;
        let kind = self.snap.policy.kind;
        // Consecutive runs mostly ask for the same pool: one lookup per change.
        let mut last: Option<((ClusterId, ModelId), Option<usize>)> = None;
        let mut queued = |w: &WaitingRun| {
            let key = (w.cluster, w.model);
            let pool = match last {
                Some((k, p)) if k == key => p,
                _ => {
                    let p = self.pool_index.get(&key).copied();
                    last = Some((key, p));
                    p
                }
            };
            Queued {
                run: w.clone(),
                pool,
            }
        };
        if kind == PolicyKind::Tranche && self.waiting_by_id {
            // Ranks are dense per project: place runs by rank (a counting sort, keeping id
            // order), then sort each project's runs by priority (highest first), submission and
            // snapshot index (the id order). An unknown project's rank (`usize::MAX`) comes
            // first, as in the general key below.
            let bucket = |w: &WaitingRun| match fs.rank(w.project) {
                usize::MAX => 0,
                r => r.min(fs.len()) + 1,
            };
            let buckets: Vec<u32> = self.snap.waiting.iter().map(|w| bucket(w) as u32).collect();
            let mut starts = vec![0usize; fs.len() + 3];
            for &b in &buckets {
                starts[b as usize + 1] += 1;
            }
            for i in 1..starts.len() {
                starts[i] += starts[i - 1];
            }
            // Each run's order within its project packed in one integer (`within_key`), read
            // in snapshot order and scattered by rank (the bucket ends stay in cache); each
            // project's keys are sorted (integers, not runs), then the runs are gathered by the
            // index in the key's low bits: independent reads the processor overlaps.
            let mut next = starts.clone();
            let mut keys = vec![0u128; self.snap.waiting.len()];
            for (at, (w, &b)) in self.snap.waiting.iter().zip(&buckets).enumerate() {
                keys[next[b as usize]] = within_key(w, at as u32);
                next[b as usize] += 1;
            }
            for b in starts.windows(2) {
                keys[b[0]..b[1]].sort_unstable();
            }
            return keys
                .iter()
                .map(|&k| queued(&self.snap.waiting[k as u32 as usize]))
                .collect();
        }
        if kind != PolicyKind::Tranche
            && self.waiting_by_id
            && u32::try_from(self.snap.waiting.len()).is_ok()
        {
            // Listed by id, the snapshot index orders runs as their ids do: each run's key packed
            // in one integer with the index in its low 32 bits (the general key's order, see
            // `fifo_key` and `within_key`); the integers are sorted, then the runs gathered.
            let mut keys: Vec<u128> = self
                .snap
                .waiting
                .iter()
                .enumerate()
                .map(|(at, w)| match kind {
                    PolicyKind::Legacy => within_key(w, at as u32),
                    _ => fifo_key(w, at as u32),
                })
                .collect();
            keys.sort_unstable();
            return keys
                .iter()
                .map(|&k| queued(&self.snap.waiting[k as u32 as usize]))
                .collect();
        }
        // Keys are computed once per run (not per comparison); ids make them unique.
        let mut keyed: Vec<(OrderKey, Queued)> = self
            .snap
            .waiting
            .iter()
            .map(|w| {
                let key = match kind {
                    PolicyKind::Tranche => (
                        fs.rank(w.project) as i64,
                        -i64::from(w.priority),
                        w.submitted_at,
                        w.id,
                    ),
                    PolicyKind::Fifo => (w.submitted_at, 0, 0, w.id),
                    PolicyKind::Legacy => (-i64::from(w.priority), w.submitted_at, 0, w.id),
                };
                (key, queued(w))
            })
            .collect();
        keyed.sort_unstable_by_key(|(k, _)| *k);
        keyed.into_iter().map(|(_, q)| q).collect()
    }

    fn wait(&mut self, w: &Queued, reason: WaitReason, estimated_start: Option<i64>) {
        // Allocated runs that wait for GPUs take the pool's GPUs before unallocated ones.
        if w.allocated()
            && let Some(pool) = w.pool
            && !matches!(
                reason,
                WaitReason::Budget { .. } | WaitReason::NeverFits { .. }
            )
        {
            let p = &mut self.pools[pool];
            p.allocated_waiting += 1;
            p.allocated_waiting_gpus = p.allocated_waiting_gpus.saturating_add(w.gpus);
        }
        if w.allocated()
            && w.time_limit_s <= super::SHORT_RUN_S
            && w.pool.is_some_and(|pool| self.pools[pool].headroom > 0)
        {
            let copy = Queued {
                run: w.run.clone(),
                pool: w.pool,
            };
            self.short_waits.push((self.waiting.len(), copy));
        }
        self.waiting.push(Waiting {
            run: w.id,
            reason,
            estimated_start,
        });
    }

    /// Common gates: pool exists and is large enough. A run larger than the GPUs of nodes
    /// up or draining but not than every node of its pool waits for nodes down to come back
    /// ([`WaitReason::GpusDown`]); only one larger than them all never fits.
    fn pool_of(&mut self, w: &Queued) -> Option<usize> {
        let pool = w.pool;
        match pool {
            Some(p) if self.pools[p].installed >= w.gpus => Some(p),
            Some(p) if self.pools[p].all_installed >= w.gpus => {
                let reason = WaitReason::GpusDown {
                    gpus: w.gpus,
                    up: self.pools[p].installed,
                };
                self.wait(w, reason, None);
                None
            }
            _ => {
                let installed = pool.map_or(0, |p| self.pools[p].all_installed);
                self.wait(
                    w,
                    WaitReason::NeverFits {
                        gpus: w.gpus,
                        installed,
                    },
                    None,
                );
                None
            }
        }
    }

    fn ends_by_reservation(&self, pool: usize, w: &WaitingRun) -> bool {
        self.pools[pool]
            .reservation
            .as_ref()
            .is_none_or(|r| self.now.saturating_add(w.time_limit_s) <= r.at)
    }

    /// GPUs the run may take now without preempting, given holds and the reservation.
    /// Free GPUs of the pool this run may use now. `may_use_held` is how many GPUs held for
    /// contracts it may take: an allocated run those held for its own project's contracts
    /// ([`Self::own_hold`]; never those held for another project), an unallocated run all of
    /// them (they are lent to unallocated work and taken back).
    fn usable(&self, pool: usize, w: &WaitingRun, may_use_held: i64) -> i64 {
        let p = &self.pools[pool];
        let free = p.free - self.kept_from(pool, w);
        let avail = (free - (p.hold - may_use_held.clamp(0, p.hold.max(0))).max(0)).max(0);
        match &p.reservation {
            Some(r) if !self.ends_by_reservation(pool, w) => {
                avail.min(r.extra.max(0) + self.short_may_take(pool, w))
            }
            _ => avail,
        }
    }

    /// Free GPUs `w` may take now without preempting anyone: as [`Self::usable`], but the GPUs
    /// held for contracts that `w` may not use count as covered by unallocated borrowers too,
    /// which a contract's run takes back at once (they are preemptible by it; the same count
    /// as the holds' own check, [`Self::hold_contracts`]). So an allocated run starts on free
    /// GPUs while the free and the borrowed GPUs together still cover the holds. Counting the
    /// free ones alone made it evict the borrowers, which the next pass started again on the
    /// same GPUs (found by a new-user check: one unallocated run preempted and restarted in
    /// the same second, three times). The preemption path keeps the stricter count
    /// ([`Self::preemption_need`]).
    fn usable_without_preempting(&self, pool: usize, w: &WaitingRun, may_use_held: i64) -> i64 {
        let p = &self.pools[pool];
        let reserved = (p.hold - may_use_held.clamp(0, p.hold.max(0))).max(0);
        let free = p.free - self.kept_from(pool, w);
        let avail = (free + p.unalloc_gpus - reserved).clamp(0, free.max(0));
        match &p.reservation {
            Some(r) if !self.ends_by_reservation(pool, w) => {
                avail.min(r.extra.max(0) + self.short_may_take(pool, w))
            }
            _ => avail,
        }
    }

    /// Idle GPUs of `pool` that `w` may not take because they are kept for short runs: the
    /// pool's headroom, unless `w` is short (time limit at most [`super::SHORT_RUN_S`]), is its
    /// pool's starving head of at least one node's GPUs or starts on its contract
    /// (docs/design.md section 3.7). A run that holds the reservation otherwise waits for its
    /// GPUs and the headroom ([`Self::reserve`] counts both).
    fn kept_from(&self, pool: usize, w: &WaitingRun) -> i64 {
        let h = self.pools[pool].headroom;
        if h == 0 || w.time_limit_s <= super::SHORT_RUN_S || self.exempt {
            0
        } else {
            h
        }
    }

    /// Kept GPUs a short run may take beyond a reservation it would outlast: the reservation
    /// does not count them ([`Self::reserve`]), so the reserved run's own GPUs stay free for it;
    /// a short run still on one at the reserved instant delays that start by at most its time
    /// limit (docs/design.md section 3.7).
    fn short_may_take(&self, pool: usize, w: &WaitingRun) -> i64 {
        if w.time_limit_s <= super::SHORT_RUN_S {
            self.pools[pool].headroom
        } else {
            0
        }
    }

    /// Starts, in the order the pass considered them, the short runs that wait for GPUs while
    /// the pass's later preemptions left idle GPUs kept for them (a longer preemptor takes its
    /// need from its victims and leaves the kept GPUs idle, [`Self::preemption_need`]): they
    /// would otherwise stay idle until the next pass.
    fn start_short_on_kept(&mut self) {
        let waits = std::mem::take(&mut self.short_waits);
        let mut started: IdMap<RunId, ()> = IdMap::default();
        for (i, w) in &waits {
            let Some(pool) = w.pool else { continue };
            if self.pools[pool].free < i64::from(w.gpus) {
                continue;
            }
            if !matches!(
                self.waiting[*i].reason,
                WaitReason::Gpus { .. }
                    | WaitReason::Protected { .. }
                    | WaitReason::FairShare { .. }
                    | WaitReason::OverShare { .. }
                    | WaitReason::BehindReservation { .. }
            ) {
                continue;
            }
            let usable = self.usable_without_preempting(pool, w, self.own_hold(w.project, pool));
            if usable >= i64::from(w.gpus) && self.start(w, pool, None, false) {
                self.after_start_reservation(pool, w);
                started.insert(w.id, ());
                let p = &mut self.pools[pool];
                p.allocated_waiting = p.allocated_waiting.saturating_sub(1);
                p.allocated_waiting_gpus = p.allocated_waiting_gpus.saturating_sub(w.gpus);
            }
        }
        if !started.is_empty() {
            self.waiting.retain(|x| !started.contains_key(&x.run));
        }
    }

    fn after_start_reservation(&mut self, pool: usize, w: &WaitingRun) {
        let ends = self.ends_by_reservation(pool, w);
        if let Some(r) = self.pools[pool].reservation.as_mut()
            && !ends
        {
            r.extra -= i64::from(w.gpus);
        }
    }

    /// A project's entitlement in a pool: its effective share x the pool's GPUs on nodes that
    /// are not down, in milli-GPUs rounded down.
    #[inline]
    fn entitled_milli(&self, project: ProjectId, pool: usize) -> i64 {
        self.slots
            .get(project)
            .map_or(0, |i| self.pools[pool].entitled[i])
    }

    /// Allocated GPUs a project holds in a pool now.
    #[inline]
    fn held_in(&self, project: ProjectId, pool: usize) -> i64 {
        let p = &self.pools[pool];
        match self.slots.get(project) {
            Some(i) => p.held[i],
            None => p.held_other.get(&project).copied().unwrap_or(0),
        }
    }

    /// Milli-GPUs of its entitlement a project gains by starting `gpus` more GPUs.
    fn entitlement_gain(&self, project: ProjectId, pool: usize, gpus: i64) -> i64 {
        let e = self.entitled_milli(project, pool);
        let h = self.held_in(project, pool);
        phi(h + gpus, e) - phi(h, e)
    }

    /// Milli-GPUs of its entitlement a project loses when `gpus` more of its GPUs go, after
    /// `already` have gone in the same move.
    fn entitlement_loss(&self, project: ProjectId, pool: usize, already: i64, gpus: i64) -> i64 {
        let e = self.entitled_milli(project, pool);
        let h = self.held_in(project, pool) - already;
        phi(h, e) - phi((h - gpus).max(0), e)
    }

    /// Whether starting `w` keeps its project within its entitlement in `w`'s pool, or it can
    /// run on its project's active capacity contract (bought capacity comes first too). An
    /// unknown pool counts as within: the run is refused there anyway.
    fn within_entitlement(&self, w: &Queued) -> bool {
        let Some(pool) = w.pool else {
            return true;
        };
        (self.held_in(w.project, pool) + i64::from(w.gpus)) * 1000
            <= self.entitled_milli(w.project, pool)
            || self.contract_for(w, pool).is_some()
    }

    /// Indices (into `alloc`, allocated waiting runs in fair-share order) of each pool's
    /// starving head: a gang larger than its project's entitlement in the pool while no waiting
    /// run of its project in that pool fits within the entitlement. Such a gang can only ever
    /// run beyond its entitlement, so it would wait for ever behind other projects' runs that
    /// are within theirs unless it holds the reservation. A run that would fit once its
    /// project's own runs end is not one: its project already holds its entitlement.
    ///
    /// The head is the run that held the pool's reservation after the previous pass
    /// ([`Snapshot::reserved`]) when it still is such a gang, else the pool's first run in
    /// fair-share order when it is one: once reserved for, a gang keeps its reservation until
    /// it starts, so runs of higher-ranked projects that arrive later do not take the GPUs it
    /// waits for and push its start back pass after pass (docs/design.md section 3.4).
    fn starving_heads(&self, alloc: &[&Queued]) -> Vec<usize> {
        // Per pool: the run that held the reservation, then the first run.
        let mut candidates: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut firsts = 0;
        let mut held = self.snap.reserved.len();
        for (i, w) in alloc.iter().enumerate() {
            if firsts == self.pools.len() && held == 0 {
                break;
            }
            let Some(pool) = w.pool else { continue };
            let list = candidates.entry(pool).or_default();
            if list.is_empty() {
                firsts += 1;
                list.push(i);
            }
            if held > 0 && self.snap.reserved.contains(&w.id) {
                held -= 1;
                list.insert(0, i);
            }
        }
        let mut smallest: BTreeMap<(usize, ProjectId), u32> = candidates
            .iter()
            .flat_map(|(&pool, list)| {
                list.iter()
                    .map(move |&i| ((pool, alloc[i].project), u32::MAX))
            })
            .collect();
        for w in alloc {
            if let Some(pool) = w.pool
                && let Some(e) = smallest.get_mut(&(pool, w.project))
            {
                *e = (*e).min(w.gpus);
            }
        }
        let mut heads = Vec::new();
        for (&pool, list) in &candidates {
            let starving = |i: usize| {
                let w = alloc[i];
                let entitled = self.entitled_milli(w.project, pool);
                let g = i64::from(smallest[&(pool, w.project)]);
                let fits = (self.held_in(w.project, pool) + g) * 1000 <= entitled
                    || self.contract_for(w, pool).is_some();
                let larger = i64::from(w.gpus) * 1000 > entitled;
                !fits && larger && self.pools[pool].installed >= w.gpus
            };
            if let Some(&i) = list.iter().find(|&&i| starving(i)) {
                heads.push(i);
            }
        }
        heads.sort_unstable();
        heads
    }

    /// Records that a project's allocated run of `pool` was served or blocked for GPUs: later
    /// runs of other projects are behind it. A run on its contract or a starving head goes
    /// first for another reason than the entitlement phases' fair-share order: its project is
    /// ahead of a later run only where fair share ranks it first too ([`Self::ahead_of`]), as
    /// the fair-share reason's words say (found by a new-user check: a run was told a project
    /// with a starving head "comes first (within its entitlement or further below its fair
    /// share)" while its own project ranked higher).
    fn note_ahead(&mut self, pool: usize, project: ProjectId) {
        if !self.in_fair_share_order {
            let p = &mut self.pools[pool];
            if !p.first_for_other_reasons.contains(&project) {
                p.first_for_other_reasons.push(project);
            }
            return;
        }
        let r = self.fs.rank(project).min(self.fs.len());
        let p = &mut self.pools[pool];
        if p.ahead_seen.len() <= r / 64 {
            p.ahead_seen.resize(r / 64 + 1, 0);
        }
        if p.ahead_seen[r / 64] & (1 << (r % 64)) == 0 {
            p.ahead_seen[r / 64] |= 1 << (r % 64);
            p.ahead_count += 1;
            p.ahead_projects.push(project);
        }
    }

    /// The projects ahead of `project` in `pool`, without itself, and how many in all.
    fn ahead_of(&self, pool: usize, project: ProjectId) -> (Ahead, usize) {
        let p = &self.pools[pool];
        if p.ahead_count == 0 && p.first_for_other_reasons.is_empty() {
            return (Ahead::default(), 0);
        }
        let r = self.fs.rank(project).min(self.fs.len());
        let seen = |x: usize| {
            p.ahead_seen
                .get(x / 64)
                .is_some_and(|b| b & (1 << (x % 64)) != 0)
        };
        let mut list = Ahead::default();
        let mut total = p.ahead_count - usize::from(seen(r));
        // Served first for a contract or as the starving head: ahead only where fair share
        // ranks it first too (and counted once).
        for &x in &p.first_for_other_reasons {
            let rx = self.fs.rank(x).min(self.fs.len());
            if x != project && rx < r && !seen(rx) {
                list.push(x);
                total += 1;
            }
        }
        for &x in p.ahead_projects.as_slice() {
            if x != project {
                list.push(x);
            }
        }
        (list, total)
    }

    /// Earliest instant `gpus` GPUs of the pool are expected free from time limits alone.
    /// The list is built once per pass (from the runs holding GPUs when it is first asked), so
    /// it is an expectation, not a promise.
    fn expected_free(&mut self, pool: usize, gpus: u32) -> Option<i64> {
        let have = self.pools[pool].free - self.pools[pool].hold;
        let short = i64::from(gpus) - have;
        if short <= 0 {
            return None;
        }
        if self.pools[pool].ends.is_none() {
            let mut ends: Vec<(i64, i64)> = self.pools[pool]
                .running
                .iter()
                .filter(|&&ri| !self.runs[ri].gone)
                .map(|&ri| (self.runs[ri].run.ends_by(), i64::from(self.runs[ri].gpus)))
                .chain(
                    self.pools[pool]
                        .started
                        .iter()
                        .map(|s| (s.ends_by, i64::from(s.gpus))),
                )
                .chain(self.contract_returns(pool))
                .collect();
            ends.sort_unstable();
            let mut sum = 0;
            for e in &mut ends {
                sum += e.1;
                e.1 = sum;
            }
            self.pools[pool].ends = Some(ends);
        }
        let ends = self.pools[pool].ends.as_deref().unwrap_or_default();
        let i = ends.partition_point(|&(_, cum)| cum < short);
        ends.get(i).map(|&(t, _)| t.max(self.now + 1))
    }

    /// The GPUs held for contracts in `pool` and unused by their runs, with the instant each
    /// contract's window ends and gives them back: `(end, GPUs)` (docs/design.md section 3.4).
    fn contract_returns(&self, pool: usize) -> Vec<(i64, i64)> {
        self.contracts
            .iter()
            .filter(|(_, (_, p, unused))| *p == pool && *unused > 0)
            .filter_map(|(id, &(_, _, unused))| {
                let k = self.snap.contracts.iter().find(|k| k.id == *id)?;
                Some((k.end.max(self.now), unused))
            })
            .collect()
    }

    /// When GPUs of a run on `contract` that ends at `end` come back to the pool for `w`: at
    /// `end`, unless the contract's window is still open then and `w` is another project's:
    /// the contract's hold takes them back until its window ends (docs/design.md section 3.4).
    fn back_to_pool(&self, w: &WaitingRun, contract: Option<ContractId>, end: i64) -> i64 {
        let Some((project, _, _)) = contract.and_then(|c| self.contracts.get(&c)) else {
            return end;
        };
        if *project == w.project {
            return end;
        }
        self.snap
            .contracts
            .iter()
            .find(|k| Some(k.id) == contract)
            .map_or(end, |k| end.max(k.end))
    }

    /// Unused GPUs held for `project`'s active contracts in `pool`: an allocated run of the
    /// project may take them, on a contract or not (a run larger than its project's contract
    /// takes the contract's GPUs and free ones; docs/design.md section 3.3).
    fn own_hold(&self, project: ProjectId, pool: usize) -> i64 {
        self.contracts
            .values()
            .filter(|(proj, p, _)| *proj == project && *p == pool)
            .map(|e| e.2.max(0))
            .sum()
    }

    /// Takes `gpus` of `project`'s unused holds in `pool` (`first` first, then its other
    /// contracts there by id): they are held no longer.
    fn take_own_hold(
        &mut self,
        project: ProjectId,
        pool: usize,
        first: Option<ContractId>,
        gpus: i64,
    ) {
        let mut ids: Vec<ContractId> = first.into_iter().collect();
        ids.extend(
            self.contracts
                .iter()
                .filter(|(id, (proj, p, _))| *proj == project && *p == pool && Some(**id) != first)
                .map(|(id, _)| *id),
        );
        let mut left = gpus;
        for c in ids {
            if left <= 0 {
                break;
            }
            if let Some(entry) = self.contracts.get_mut(&c) {
                let used = left.min(entry.2.max(0));
                entry.2 -= used;
                self.pools[pool].hold -= used;
                left -= used;
            }
        }
    }

    /// The contract `w` starts on in `pool`: one with room for the whole gang
    /// ([`Self::contract_for`]), else one it is on in part ([`Self::partial_contract`]).
    fn contract_to_start_on(&self, w: &WaitingRun, pool: usize) -> Option<ContractId> {
        self.contract_for(w, pool)
            .or_else(|| self.partial_contract(w, pool))
    }

    /// For an allocated run larger than what each of its project's active contracts in `pool`
    /// has left, the one with the most left (the lowest id among equals): the run goes on it in
    /// part, the GPUs it has left prepaid, the others charged (docs/design.md section 3.3).
    fn partial_contract(&self, w: &WaitingRun, pool: usize) -> Option<ContractId> {
        if !w.allocated() {
            return None;
        }
        self.contracts
            .iter()
            .filter(|(_, (proj, p, unused))| *proj == w.project && *p == pool && *unused > 0)
            .max_by_key(|(id, (_, _, unused))| (*unused, std::cmp::Reverse(**id)))
            .map(|(&id, _)| id)
    }

    fn contract_for(&self, w: &WaitingRun, pool: usize) -> Option<ContractId> {
        self.contracts
            .iter()
            .find(|(_, (proj, p, unused))| {
                *proj == w.project && *p == pool && *unused >= i64::from(w.gpus)
            })
            .map(|(&id, _)| id)
    }

    fn consider_tranche(&mut self, w: &Queued) {
        let Some(pool) = self.pool_of(w) else { return };
        if !self.budget_allows(w, pool, true) {
            return;
        }
        if self.pools[pool].reservation.is_some() {
            self.pools[pool].examined_after += 1;
            if self.pools[pool].examined_after > self.snap.policy.backfill_depth {
                let ahead = self.pools[pool].examined_after;
                self.wait(w, WaitReason::InLine { ahead }, None);
                return;
            }
        }
        let contract = self.contract_to_start_on(w, pool);
        let usable = self.usable_without_preempting(pool, w, self.own_hold(w.project, pool));
        if usable >= i64::from(w.gpus) && self.start(w, pool, contract, false) {
            self.after_start_reservation(pool, w);
            self.note_ahead(pool, w.project);
            return;
        }
        // Preemption, while the pool has no reservation or when the run ends by the reserved
        // instant: it then gives back every GPU it takes (its victims' too) before the
        // reserved run needs them, so the reservation keeps its time.
        let mut protected_until = None;
        let mut barred = false;
        if self.ends_by_reservation(pool, w) {
            match self.try_preempt(w, pool, contract) {
                Ok(()) => {
                    self.note_ahead(pool, w.project);
                    return;
                }
                Err(p) => protected_until = p,
            }
        } else {
            // `explain_blocked` reads it only when too few GPUs are free for the run.
            let p = &self.pools[pool];
            barred = (p.free - p.hold).max(0) < i64::from(w.gpus)
                && self.may_find_victims(w, pool, contract);
        }
        self.explain_blocked(w, pool, protected_until, barred);
        self.note_ahead(pool, w.project);
    }

    /// GPUs `w` must free by preemption. While the free GPUs and those lent to unallocated runs
    /// cover the holds `w` may not use with `w`'s GPUs to spare, only its need beyond the free
    /// GPUs: evicting a borrower frees as many GPUs as it takes from the cover, so the holds
    /// stay covered, as [`Self::usable_without_preempting`] counts them (found by a new-user
    /// check: an 8-GPU run evicted two 8-GPU borrowers where one did). Otherwise its need
    /// beyond the usable GPUs, plus the held GPUs lent out now: GPUs freed in the pool go back
    /// to those holds first, so a move that ignored them would start nothing on the next pass
    /// (the evicted run would start again and be evicted again).
    fn preemption_need(&self, w: &WaitingRun, pool: usize) -> i64 {
        let may_use_held = self.own_hold(w.project, pool);
        let p = &self.pools[pool];
        let reserved = (p.hold - may_use_held.clamp(0, p.hold.max(0))).max(0);
        let gpus = i64::from(w.gpus);
        let free = p.free - self.kept_from(pool, w);
        if free + p.unalloc_gpus - reserved >= gpus {
            return gpus - free.max(0);
        }
        let lent = (reserved - free).max(0);
        gpus - self.usable(pool, w, may_use_held) + lent
    }

    /// Whether the preemption rule's cheap bounds (those [`Self::try_preempt`] checks first)
    /// leave room for a move of `w`: unprotected runs of projects it may take GPUs from, and
    /// GPUs beyond entitlements, enough for its need, and a run small enough to evict within
    /// the need plus one node's GPUs. A necessary condition, not a move.
    fn may_find_victims(&self, w: &WaitingRun, pool: usize, contract: Option<ContractId>) -> bool {
        let need = self.preemption_need(w, pool);
        let gain = self.entitlement_gain(w.project, pool, i64::from(w.gpus));
        let rank = self.fs.rank(w.project).min(self.fs.len());
        let p = &self.pools[pool];
        // A run on its contract takes its GPUs back from unallocated borrowers of any size.
        if contract.is_none()
            && p.smallest_victim
                .is_none_or(|g| i64::from(g) > need + i64::from(p.node_max))
        {
            return false;
        }
        let from = if gain > 0 { 0 } else { rank + 1 };
        let bound = p.unalloc_gpus + p.preemptible_by_rank.get(from).copied().unwrap_or(0);
        let own =
            (self.held_in(w.project, pool) * 1000 - self.entitled_milli(w.project, pool)).max(0);
        let surplus = p.surplus_total - own;
        need > 0 && bound >= need && p.unalloc_gpus + (surplus + gain + 999) / 1000 >= need
    }

    /// Records why `w` waits after it could neither start nor preempt. Behind another run's
    /// reservation that it would outlast, the reservation is the reason when GPUs are free for
    /// it, or when it is `barred`: the rule's bounds leave room for a preemption, which the
    /// reservation forbids it (section 3.4 of docs/design.md).
    fn explain_blocked(
        &mut self,
        w: &Queued,
        pool: usize,
        protected_until: Option<i64>,
        barred: bool,
    ) {
        let mut estimate = None;
        let holder = if self.pools[pool].reservation.is_none() {
            estimate = self.reserve(w, pool);
            estimate.is_some()
        } else {
            false
        };
        let held = self.held_in(w.project, pool);
        let entitled = self.entitled_milli(w.project, pool);
        let (ahead, ahead_total) = self.ahead_of(pool, w.project);
        let own_hold: i64 = self
            .contracts
            .values()
            .filter(|(project, p, _)| *project == w.project && *p == pool)
            .map(|(_, _, unused)| (*unused).max(0))
            .sum();
        let p = &self.pools[pool];
        let others_hold = (p.hold - own_hold).max(0);
        let reserved_at = estimate.filter(|_| holder);
        let kept = self.kept_from(pool, w);
        // The protection it names is the reason only when no earlier start is reserved for it
        // (found by a new-user check: "protected until 00:56" beside a reserved 00:10, when a
        // capacity contract's end freed the GPUs first).
        // Larger than what the nodes up hold, it waits for a drain to end whatever else holds
        // the GPUs (found by a new-user check: a 16-GPU run on 8 GPUs up and 8 draining was
        // told "waiting for 16 GPUs; 5 free now").
        let reason = if w.gpus > p.up_installed && w.gpus <= p.installed {
            WaitReason::NodesDraining { gpus: w.gpus }
        } else if let Some(until) = protected_until
            && reserved_at.is_none_or(|at| at >= until)
        {
            WaitReason::Protected { until }
        } else if let Some(r) = p.reservation.as_ref().filter(|_| !holder)
            && ((p.free - p.hold - kept).max(0) >= i64::from(w.gpus) || barred)
        {
            WaitReason::BehindReservation {
                run: r.run,
                at: r.at,
            }
        } else if others_hold > 0 && p.free.max(p.hold) >= i64::from(w.gpus) {
            // Held GPUs lent to unallocated runs count: but for the contracts, the run would
            // take them back from their borrowers. Only other projects' holds are named (found
            // by a new-user check: a contract holder's run was told its own contract's GPUs
            // were held for other projects).
            WaitReason::Contracts {
                held: others_hold as u32,
            }
        } else if p.free < i64::from(w.gpus) && p.free + p.draining_free >= i64::from(w.gpus) {
            WaitReason::NodesDraining { gpus: w.gpus }
        } else if kept > 0 && p.free - p.hold >= i64::from(w.gpus) {
            // GPUs are free for it but for those kept for short runs: that is the cause, its
            // reserved start (if it holds the reservation) the estimate.
            WaitReason::ShortRunHeadroom {
                gpus: w.gpus,
                free: p.free.max(0) as u32,
                kept: kept.min(p.free.max(0)) as u32,
            }
        } else if ahead_total > 0 {
            WaitReason::FairShare {
                ahead,
                ahead_total,
                reserved_at,
            }
        } else if (held + i64::from(w.gpus)) * 1000 > entitled
            && p.held_total > held
            && p.surplus_total - (held * 1000 - entitled).max(0) <= 0
        {
            // Only when every other busy GPU is within its project's entitlement, as it says.
            WaitReason::OverShare {
                held: held.max(0) as u32,
                entitled_milli: entitled,
                gpus: w.gpus,
                reserved_at,
            }
        } else if let Some(at) = reserved_at {
            WaitReason::Reserved {
                gpus: w.gpus,
                model: p.model_name.clone(),
                free: (p.free - p.hold).max(0) as u32,
                at,
            }
        } else {
            WaitReason::Gpus {
                gpus: w.gpus,
                free: (p.free - p.hold).max(0) as u32,
            }
        };
        self.wait(w, reason, estimate);
    }

    /// Makes the reservation for the pool's first blocked run: returns its reserved start, which
    /// is always after `now` (a start now would have happened in this pass).
    ///
    /// The instant is the earliest at which enough GPUs are free, counting three ways in turn
    /// and taking the first that lies in the future: (1) unallocated runs now, runs the rules
    /// would let it preempt at the end of their minimum runtime, all others at their time limit;
    /// (2) unallocated runs now, every allocated run at its time limit; (3) every run at its time
    /// limit. A reservation whose instant has come but that could not start this pass (its
    /// victims were refused as a set) thus moves to the next instant that does not depend on
    /// that preemption instead of saying "now" pass after pass.
    ///
    /// Victims count as the preemption rule would take them, as a set (section 3.2 of
    /// docs/design.md): by the time they may go, each adds its project's loss of entitlement to
    /// the move's, which must stay within the run's gain (equal only below it in fair share); no
    /// victim is larger than the run's need plus one node's GPUs, and a count whose victims
    /// together exceed what it must evict by more than that is not taken (found by a check: a
    /// 1-GPU run was told the end of a 16-GPU gang's minimum runtime, which it may never
    /// evict, and an 8-GPU gang the end of two 1-GPU runs' protection, whose project would lose
    /// its whole entitlement; both estimates then rolled forward to time limits).
    fn reserve(&mut self, w: &WaitingRun, pool: usize) -> Option<i64> {
        let need = i64::from(w.gpus);
        // The GPUs kept for short runs stay idle beside it: they count against what is free.
        let avail =
            (self.pools[pool].free - self.pools[pool].hold).max(0) - self.kept_from(pool, w);
        let largest_victim = need + i64::from(self.pools[pool].node_max);
        let tranche = self.snap.policy.kind == PolicyKind::Tranche;
        let gain = self.entitlement_gain(w.project, pool, i64::from(w.gpus));
        let n_runs = self.pools[pool].running.len() + self.pools[pool].started.len();
        let mut holders: Vec<Holder> = Vec::with_capacity(n_runs);
        let evictable = |allocated: bool, project: ProjectId, contract_protected: bool| {
            !allocated || tranche && !contract_protected && project != w.project
        };
        for &ri in &self.pools[pool].running {
            let s = &self.runs[ri];
            if s.gone {
                continue;
            }
            let r = s.run;
            let end = self.back_to_pool(w, r.contract, r.ends_by().max(self.now));
            let at = if r.allocated() {
                r.protected_until().max(self.now).min(end)
            } else {
                self.now
            };
            holders.push(Holder {
                evict_at: evictable(r.allocated(), r.project, s.contract_protected).then_some(at),
                end,
                // Only GPUs on up nodes come back to the pool.
                gpus: s.up_gpus,
                project: r.project,
                allocated: r.allocated(),
            });
        }
        // Runs started earlier in this pass hold GPUs of up nodes too.
        for s in &self.pools[pool].started {
            let end = self.back_to_pool(w, s.contract, s.ends_by.max(self.now));
            let at = if s.allocated {
                s.protected_until.max(self.now).min(end)
            } else {
                self.now
            };
            holders.push(Holder {
                evict_at: evictable(s.allocated, s.project, s.on_contract).then_some(at),
                end,
                gpus: i64::from(s.gpus),
                project: s.project,
                allocated: s.allocated,
            });
        }
        // GPUs held for contracts come back to the pool when their window ends.
        for (end, held) in self.contract_returns(pool) {
            holders.push(Holder {
                evict_at: None,
                end,
                gpus: held,
                project: w.project,
                allocated: true,
            });
        }
        // A preemption for it takes its need from its victims, the kept GPUs staying idle
        // ([`Self::preemption_need`]); GPUs that end free fill the headroom first.
        let mut chosen = self.reserve_by_evictions(w, pool, gain, avail, &holders);
        if chosen.is_none() {
            let mut order: Vec<(i64, i64)> = Vec::with_capacity(holders.len());
            for rule in [2, 3] {
                order.clear();
                order.extend(holders.iter().map(|h| {
                    let now = rule == 2 && !h.allocated && h.gpus <= largest_victim;
                    (if now { self.now } else { h.end }, h.gpus)
                }));
                order.sort_unstable();
                let mut have = avail;
                let mut at = self.now;
                let mut found = have >= need;
                if !found {
                    for (t, g) in order.iter().copied() {
                        have += g;
                        at = t;
                        if have >= need {
                            found = true;
                            break;
                        }
                    }
                }
                if !found {
                    return None;
                }
                if at > self.now {
                    // Everything freed by `at` counts.
                    let total = avail
                        + order
                            .iter()
                            .filter(|(t, _)| *t <= at)
                            .map(|(_, g)| g)
                            .sum::<i64>();
                    chosen = Some((at, total));
                    break;
                }
            }
        }
        let (at, total_by_at) = chosen?;
        self.pools[pool].reservation = Some(Reservation {
            run: w.id,
            at,
            extra: total_by_at - need,
        });
        self.decisions.push(Decision::Reserve {
            run: w.id,
            at,
            gpus: w.gpus,
        });
        Some(at)
    }

    /// Rule (1) of [`Self::reserve`]: the first future instant at which the GPUs free then,
    /// with the victims the rules would let `w` take as a set by then, cover its need, and the
    /// GPUs counted free by then; `None` when there is none (or the count is "now").
    fn reserve_by_evictions(
        &self,
        w: &WaitingRun,
        pool: usize,
        gain: i64,
        avail: i64,
        holders: &[Holder],
    ) -> Option<(i64, i64)> {
        let need = i64::from(w.gpus);
        if avail >= need {
            return None;
        }
        let start = VictimCount {
            have: avail.max(0),
            deficit: (-avail).max(0),
            ..VictimCount::default()
        };
        let (at, count, counted) = self.count_victims(w, pool, gain, need, start, holders)?;
        if at <= self.now {
            return None;
        }
        // Everything freed by `at` counts: what was counted, and what ends by then beyond the
        // kept GPUs still missing.
        let ended: i64 = holders
            .iter()
            .zip(&counted)
            .filter(|(h, c)| !**c && h.end <= at)
            .map(|(h, _)| h.gpus)
            .sum();
        Some((at, count.have + (ended - count.deficit).max(0)))
    }

    /// The first instant at which `holders`, taken in time order from `start`, cover `need`
    /// GPUs: a holder with an eviction instant counts from it as a victim when the move stays
    /// allowed as a set (its project's loss of entitlement added to the move's stays within
    /// `gain`, equal only when every victim's project would rank strictly below `w`'s after
    /// the move at that instant; no victim larger than `w`'s GPUs plus one node's), else from
    /// its end. Returns the instant, the count there and
    /// which holders were counted; `None` when they never cover the need or the victims would
    /// exceed what must be evicted by more than one node's GPUs.
    fn count_victims(
        &self,
        w: &WaitingRun,
        pool: usize,
        gain: i64,
        need: i64,
        mut c: VictimCount,
        holders: &[Holder],
    ) -> Option<(i64, VictimCount, Vec<bool>)> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let node_max = i64::from(self.pools[pool].node_max);
        let largest_victim = i64::from(w.gpus) + node_max;
        // (instant, whether as a victim, index), earliest first.
        let mut heap: BinaryHeap<Reverse<(i64, bool, usize)>> = holders
            .iter()
            .enumerate()
            .map(|(i, h)| match h.evict_at {
                Some(t) if t < h.end && h.gpus <= largest_victim => Reverse((t, true, i)),
                _ => Reverse((h.end, false, i)),
            })
            .collect();
        let mut at = self.now;
        let mut counted = vec![false; holders.len()];
        while c.have < need {
            let Reverse((t, victim, i)) = heap.pop()?;
            let h = &holders[i];
            if victim && h.allocated {
                let before = c
                    .lost_by
                    .iter()
                    .find(|(p, _)| *p == h.project)
                    .map_or(0, |x| x.1);
                let marginal = self.entitlement_loss(h.project, pool, before, h.gpus);
                let delta = gain - c.loss - marginal;
                // At no gain, every victim's project ranks strictly below after the move, as
                // [`Self::move_fair_share`] will judge it at `t` (in-flight usage moved with
                // the GPUs; each project's usage grown by what it holds in the pool until then).
                let per_gpu = self.per_gpu_usage(pool);
                let grown = |p: ProjectId| {
                    i128::from(self.held_in(p, pool).max(0))
                        * i128::from((t - self.now).max(0))
                        * i128::from(self.pools[pool].weight_milli)
                        / 1000
                };
                let below_after = |p: ProjectId, lost: i64| {
                    self.fs.strictly_below_after(
                        p,
                        w.project,
                        i128::from(w.gpus) * per_gpu + grown(w.project),
                        i128::from(lost) * per_gpu - grown(p),
                    )
                };
                let fair = || {
                    below_after(h.project, before + h.gpus)
                        && c.lost_by
                            .iter()
                            .filter(|(p, _)| *p != h.project)
                            .all(|&(p, lost)| below_after(p, lost))
                };
                if delta < 0 || delta == 0 && !fair() {
                    // Not as a victim: when it ends.
                    if h.end < i64::MAX {
                        heap.push(Reverse((h.end, false, i)));
                    }
                    continue;
                }
                c.loss += marginal;
                match c.lost_by.iter_mut().find(|(p, _)| *p == h.project) {
                    Some(x) => x.1 += h.gpus,
                    None => c.lost_by.push((h.project, h.gpus)),
                }
            }
            if victim {
                c.evicted += h.gpus;
                c.have += h.gpus;
            } else {
                // An end refills the kept GPUs first.
                let refill = c.deficit.min(h.gpus);
                c.deficit -= refill;
                c.have += h.gpus - refill;
            }
            counted[i] = true;
            at = t;
        }
        // The victims may exceed what must be evicted then by one node's GPUs at most.
        let must_evict = need - (c.have - c.evicted);
        if c.evicted > must_evict + node_max {
            return None;
        }
        Some((at, c, counted))
    }

    /// Tries to start `w` by preempting. `Err(Some(t))` when only protected runs stand in the
    /// way (the first could go at `t`).
    ///
    /// A move (the victims and the start) is allowed when it raises what projects receive of
    /// their entitlements ([`phi`]: the preemptor's gain exceeds the victims' losses), or leaves
    /// it unchanged and every allocated victim's project ranks strictly below the preemptor's
    /// after the move (fair share). Unallocated victims lose nothing. Victims are first searched
    /// across the pool (unallocated runs, then runs whose projects keep their entitlements, then
    /// the others, each least work lost first); when that fails or evicts more GPUs than the run
    /// needs, a gang that fits one node also tries node by node (the node where the fewest
    /// entitlement GPUs, then the fewest surplus GPUs, then the least work are lost).
    fn try_preempt(
        &mut self,
        w: &WaitingRun,
        pool: usize,
        contract: Option<ContractId>,
    ) -> Result<(), Option<i64>> {
        let need = self.preemption_need(w, pool);
        if need <= 0 {
            return Err(None);
        }
        let gain = self.entitlement_gain(w.project, pool, i64::from(w.gpus));
        let rank = self.fs.rank(w.project).min(self.fs.len());
        let p = &self.pools[pool];
        // Without an entitlement gain only projects ranked below can give GPUs (fair share).
        let from = if gain > 0 { 0 } else { rank + 1 };
        let bound_free = p.unalloc_gpus + p.preemptible_by_rank.get(from).copied().unwrap_or(0);
        let bound_prot = p.protected_by_rank.get(from).copied().unwrap_or(0);
        if bound_free + bound_prot < need {
            return Err(None);
        }
        if p.failed_need.get(&w.project).is_some_and(|&f| need >= f) {
            return Err(None);
        }
        // The victims' projects may lose less of their entitlements than the run gains: at most
        // their GPUs beyond their entitlements plus the gain (rounded up) can go.
        let own =
            (self.held_in(w.project, pool) * 1000 - self.entitled_milli(w.project, pool)).max(0);
        let surplus = p.surplus_total - own;
        if p.unalloc_gpus + (surplus + gain + 999) / 1000 < need {
            self.pools[pool].failed_need.insert(w.project, need);
            return Err(None);
        }
        if self.pools[pool].by_loss.is_none() {
            self.running_by_loss(pool);
            let sorted = self.pools[pool].by_lost_key.as_deref().unwrap_or_default();
            let v: Vec<usize> = sorted
                .iter()
                .copied()
                .filter(|&ri| {
                    let s = &self.runs[ri];
                    !s.contract_protected && s.all_up
                })
                .collect();
            self.pools[pool].by_loss = Some(v);
        }
        // Candidates past their minimum runtime, cheapest first: unallocated, then runs whose
        // projects lose nothing of their entitlements, then the others, each by work lost.
        if self.pools[pool].cands.is_none() {
            // Unallocated first, then runs whose projects keep their entitlements, then the
            // others, each in `by_loss` order (least work lost first).
            let mut v = Vec::with_capacity(self.pools[pool].by_loss.as_ref().map_or(0, Vec::len));
            let mut costly_from = 0usize;
            for pass_costly in [false, true] {
                if pass_costly {
                    costly_from = v.len();
                }
                for &ri in self.pools[pool].by_loss.as_deref().unwrap_or_default() {
                    let s = &self.runs[ri];
                    if s.gone || (s.run.allocated() && s.run.protected_until() > self.now) {
                        continue;
                    }
                    let costly = s.run.allocated()
                        && self.entitlement_loss(s.run.project, pool, 0, i64::from(s.gpus)) > 0;
                    if costly == pass_costly {
                        v.push(ri);
                    }
                }
            }
            self.pools[pool].cands = Some(Cands {
                list: v,
                costly_from,
                by_node: None,
            });
        }
        let mut cands = self.pools[pool].cands.take().expect("built above");
        // Without an entitlement gain a costly victim can never be admitted.
        let upto = if gain > 0 {
            cands.list.len()
        } else {
            cands.costly_from
        };

        // Across the pool.
        let mut mv = Move::default();
        for (pos, &ri) in cands.list[..upto].iter().enumerate() {
            // Stop when enough is freed, or when no costly victim can be admitted any more.
            if mv.freed >= need || (pos >= cands.costly_from && mv.loss >= gain) {
                break;
            }
            if self.eligible(w, ri) {
                self.admit(w, pool, gain, ri, &mut mv);
            }
        }
        let global_ok = mv.freed >= need;
        if global_ok {
            let mut i = mv.chosen.len();
            while i > 0 {
                i -= 1;
                let g = i64::from(self.runs[mv.chosen[i]].gpus);
                if mv.freed - g >= need {
                    mv.drop_at(i, &self.runs);
                }
            }
        }
        // Evicted GPUs exceed the need by at most one node's worth, except when a run on its
        // contract takes its GPUs back from unallocated borrowers: those are lent and taken
        // back at once, however large the borrower (docs/design.md section 3.3).
        let global_ok = global_ok
            && (mv.freed <= need + i64::from(self.pools[pool].node_max)
                || contract.is_some()
                    && mv.chosen.iter().all(|&ri| !self.runs[ri].run.allocated()));
        // Node by node, for a gang that fits one node.
        let mut best: Option<(NodeMoveCost, Move, usize)> = None;
        // Only when the pool-wide move evicts more than the run needs (when it fails, no
        // subset of its candidates on one node can free enough either).
        if w.gpus <= self.pools[pool].node_max && global_ok && mv.freed > need {
            // A node's move is taken only when it loses no more entitlement than the
            // pool-wide one; when that loses none, only victims losing none alone can serve.
            let global_loss = self.move_loss(pool, &mv);
            let mut nmv = Move::default();
            // GPUs on the node of each of `nmv`'s victims, in its order.
            let mut ons: Vec<i64> = Vec::new();
            if cands.by_node.is_none() {
                cands.by_node = Some(self.by_node(&cands.list, cands.costly_from));
            }
            let (meta, nodes) = cands.by_node.as_ref().expect("built above");
            let cheap_only = upto < cands.list.len();
            for nc in nodes {
                let ni = nc.ni;
                // Nodes come by ascending (least work lost of one victim, index): once the
                // best move loses nothing, evicts nothing extra and loses no more work than
                // this node's bound (at a lower index on a tie), no later node can beat it.
                if best
                    .as_ref()
                    .is_some_and(|b| b.0.0 == 0 && b.0.1 == 0 && (b.0.2, b.0.3) < (nc.min_lost, ni))
                {
                    break;
                }
                let node = &self.nodes[ni];
                let need_n = i64::from(w.gpus) - i64::from(node.free.count_ones());
                if node.gpus < w.gpus
                    || need_n <= 0
                    || (if cheap_only { nc.cap_cheap } else { nc.cap_all }) < need_n
                {
                    continue;
                }
                let positions = &nc.positions;
                // Cheap bounds first: the node's usable victims' GPUs must cover the need, and
                // its cost is at least (0, 0, least work lost of one victim, ni); nodes come in
                // ascending index order, so an equal bound cannot beat the best either.
                let mut cap = 0i64;
                let mut min_lost = i128::MAX;
                for &(pos, on) in positions.iter().filter(|e| e.0 < upto) {
                    let m = &meta[pos];
                    if !(self.runs[cands.list[pos]].gone || m.allocated && m.project == w.project)
                        && (global_loss > 0
                            || !m.allocated
                            || match m.index {
                                Some(i) => m.gpus * 1000 <= self.pools[pool].spare[i],
                                None => self.entitlement_loss(m.project, pool, 0, m.gpus) == 0,
                            })
                    {
                        cap += on;
                        min_lost = min_lost.min(m.lost);
                    }
                }
                if cap < need_n
                    || best.as_ref().is_some_and(|b| {
                        b.0.0 == 0 && b.0.1 == 0 && (b.0.2, b.0.3) < (min_lost, ni)
                    })
                {
                    continue;
                }
                nmv.clear();
                ons.clear();
                let mut got = 0i64;
                for &(pos, on) in positions.iter().filter(|e| e.0 < upto) {
                    if got >= need_n {
                        break;
                    }
                    let ri = cands.list[pos];
                    if self.eligible(w, ri) && self.admit(w, pool, gain, ri, &mut nmv) {
                        got += on;
                        ons.push(on);
                    }
                }
                if got < need_n || nmv.freed < need {
                    continue;
                }
                let mut i = nmv.chosen.len();
                while i > 0 {
                    i -= 1;
                    if got - ons[i] >= need_n {
                        got -= ons[i];
                        nmv.drop_at(i, &self.runs);
                    }
                }
                let loss = self.move_loss(pool, &nmv);
                let lost: i128 = nmv.chosen.iter().map(|&ri| self.lost_key(ri).1).sum();
                let cost = (loss, nmv.freed - need_n, lost, ni);
                if loss <= global_loss && best.as_ref().is_none_or(|b| cost < b.0) {
                    best = Some((cost, std::mem::take(&mut nmv), ni));
                }
            }
        }
        self.pools[pool].cands = Some(cands);
        let choice = match best {
            Some((_, nmv, ni)) => Some((nmv, Some(ni))),
            _ if global_ok => Some((mv, None)),
            _ => {
                self.pools[pool].failed_need.insert(w.project, need);
                let freed = mv.freed.min(need);
                // Protected runs the rules would let it preempt later, earliest protection end
                // first: the instant enough of them (with the free GPUs) would be free.
                if self.pools[pool].protected_by_time.is_none() {
                    let running = &self.pools[pool].running;
                    let mut v: Vec<usize> = Vec::with_capacity(running.len());
                    v.extend(running.iter().copied().filter(|&ri| {
                        let s = &self.runs[ri];
                        s.run.allocated() && s.run.protected_until() > self.now
                    }));
                    v.sort_unstable_by_key(|&ri| (self.runs[ri].run.protected_until(), ri));
                    self.pools[pool].protected_by_time = Some(v);
                }
                let list = self.pools[pool]
                    .protected_by_time
                    .take()
                    .unwrap_or_default();
                // As a set with the victims found now (docs/design.md section 3.2): a
                // protection whose end would still leave the move refused is not named (found
                // by a check: "protected until" a 16-GPU gang's minimum runtime, for a 1-GPU
                // run that may never evict it).
                let gain = self.entitlement_gain(w.project, pool, i64::from(w.gpus));
                let holders: Vec<Holder> = list
                    .iter()
                    .map(|&ri| &self.runs[ri])
                    .filter(|s| !s.gone && !s.contract_protected && s.run.project != w.project)
                    .map(|s| Holder {
                        evict_at: Some(s.run.protected_until()),
                        end: i64::MAX,
                        gpus: i64::from(s.gpus),
                        project: s.run.project,
                        allocated: true,
                    })
                    .collect();
                let start = VictimCount {
                    have: freed,
                    deficit: 0,
                    evicted: freed,
                    loss: mv.loss,
                    lost_by: mv.lost.iter().map(|&(p, g, _)| (p, g)).collect(),
                };
                // (The victims found now covering the need were refused as too many.)
                let until = (freed < need)
                    .then(|| self.count_victims(w, pool, gain, need, start, &holders))
                    .flatten()
                    .map(|(at, _, _)| at);
                self.pools[pool].protected_by_time = Some(list);
                if let Some(t) = until {
                    return Err(Some(t));
                }
                None
            }
        };
        let Some((mv, on)) = choice else {
            return Err(None);
        };
        // Behind a reservation (the run ends before it) a move may leave no evicted GPU idle:
        // runs considered earlier in the pass, which may not backfill, could not use them.
        if self.pools[pool].reservation.is_some() {
            let needed = match on {
                Some(ni) => i64::from(w.gpus) - i64::from(self.nodes[ni].free.count_ones()),
                None => need,
            };
            if mv.freed > needed {
                return Err(None);
            }
        }
        // Where a gang takes the same count on each node, a pool-wide move must leave such a
        // split free, or its victims would lose their work for a start that cannot be placed
        // (found by a new-user check on Slurm: two runs evicted for an 8-GPU gang placed 5 + 3,
        // which Slurm refused).
        if on.is_none() && self.pools[pool].uniform && !self.uniform_after(pool, w.gpus, &mv) {
            return Err(None);
        }
        let delta = gain - self.move_loss(pool, &mv);
        // A move that raises Φ serves an entitlement: its victims say so where their project
        // held more than its own entitlement (the words of that reason), or where the move is
        // no fair-share move; a move that keeps Φ is allowed by fair share alone.
        let fair_share = delta == 0 || self.move_fair_share(w, pool, &mv);
        let beyond: Vec<bool> = mv
            .chosen
            .iter()
            .map(|&ri| {
                let p = self.runs[ri].run.project;
                self.held_in(p, pool) * 1000 > self.entitled_milli(p, pool)
            })
            .collect();
        for (&ri, beyond) in mv.chosen.iter().zip(beyond) {
            let reason = if !self.runs[ri].run.allocated() {
                PreemptReason::Unallocated
            } else if fair_share && (delta == 0 || !beyond) {
                PreemptReason::FairShare {
                    for_project: w.project,
                }
            } else {
                PreemptReason::Entitlement {
                    for_project: w.project,
                }
            };
            self.preempt(ri, reason, Some(w.id));
        }
        if self.start_on(w, pool, contract, false, on) {
            Ok(())
        } else {
            Err(None)
        }
    }

    /// Whether a uniform split of `gpus` ([`Self::uniform_split`]) fits the pool once `mv`'s
    /// victims have released their GPUs.
    fn uniform_after(&self, pool: usize, gpus: u32, mv: &Move) -> bool {
        let mut freed: BTreeMap<usize, u32> = BTreeMap::new();
        for &ri in &mv.chosen {
            for (nid, idx) in &self.runs[ri].run.placement {
                if let Some(&ni) = self.node_index.get(nid) {
                    *freed.entry(ni).or_default() += idx.len() as u32;
                }
            }
        }
        let members = &self.pools[pool].members;
        self.uniform_split(pool, gpus, |l| {
            let ni = members[l];
            self.nodes[ni].free.count_ones() + freed.get(&ni).copied().unwrap_or(0)
        })
        .is_some()
    }

    /// The node-by-node index of a pool's candidates (see [`Cands::by_node`]).
    fn by_node(&self, list: &[usize], costly_from: usize) -> ByNode {
        // Per dense node index (ascending, as the nodes are then taken): a vector, not a map.
        let mut by_node: Vec<Vec<(usize, i64)>> = Vec::new();
        by_node.resize_with(self.nodes.len(), Vec::new);
        for (pos, &ri) in list.iter().enumerate() {
            for (n, g) in &self.runs[ri].run.placement {
                if let Some(&ni) = self.node_index.get(n) {
                    let list = &mut by_node[ni];
                    match list.last_mut() {
                        Some(e) if e.0 == pos => e.1 += g.len() as i64,
                        _ => list.push((pos, g.len() as i64)),
                    }
                }
            }
        }
        let meta: Vec<CandMeta> = list
            .iter()
            .map(|&ri| {
                let s = &self.runs[ri];
                CandMeta {
                    project: s.run.project,
                    index: self.fs.index(s.run.project),
                    allocated: s.run.allocated(),
                    gpus: i64::from(s.gpus),
                    lost: self.lost_key(ri).1,
                }
            })
            .collect();
        let mut nodes: Vec<NodeCands> = by_node
            .into_iter()
            .enumerate()
            .filter(|(ni, positions)| {
                !positions.is_empty() && self.nodes[*ni].state == NodeState::Up
            })
            .map(|(ni, positions)| {
                let cap_all = positions.iter().map(|e| e.1).sum();
                let cap_cheap = positions
                    .iter()
                    .filter(|e| e.0 < costly_from)
                    .map(|e| e.1)
                    .sum();
                let min_lost = positions
                    .iter()
                    .map(|e| meta[e.0].lost)
                    .min()
                    .unwrap_or(i128::MAX);
                NodeCands {
                    ni,
                    positions,
                    cap_all,
                    cap_cheap,
                    min_lost,
                }
            })
            .collect();
        nodes.sort_unstable_by_key(|n| (n.min_lost, n.ni));
        (meta, nodes)
    }

    /// Entitlement GPUs (milli) the victims' projects lose in `mv`.
    fn move_loss(&self, pool: usize, mv: &Move) -> i64 {
        mv.lost
            .iter()
            .map(|&(p, g, _)| self.entitlement_loss(p, pool, 0, g))
            .sum()
    }

    /// Whether candidate `ri` may still be a victim for `w`: not gone, and not an allocated
    /// run of `w`'s own project.
    fn eligible(&self, w: &WaitingRun, ri: usize) -> bool {
        let s = &self.runs[ri];
        !(s.gone || s.run.allocated() && s.run.project == w.project)
    }

    /// In-flight usage (GPU-seconds) one GPU of the pool adds to the ranking.
    fn per_gpu_usage(&self, pool: usize) -> i128 {
        i128::from(self.snap.policy.in_flight_s.max(0)) * i128::from(self.pools[pool].weight_milli)
            / 1000
    }

    /// Whether every allocated victim's project of `mv` ranks strictly below `w`'s project
    /// after the move (fair share).
    fn move_fair_share(&self, w: &WaitingRun, pool: usize, mv: &Move) -> bool {
        let gain = i128::from(w.gpus) * self.per_gpu_usage(pool);
        mv.lost
            .iter()
            .all(|&(p, _, usage)| self.fs.strictly_below_after(p, w.project, gain, usage))
    }

    /// Adds victim `ri` to `mv` when the move stays allowed (see [`Self::try_preempt`]): the
    /// entitlement delta stays positive, or reaches zero with every victim's project strictly
    /// below after the move (evaluated only then).
    fn admit(&mut self, w: &WaitingRun, pool: usize, gain: i64, ri: usize, mv: &mut Move) -> bool {
        let s = &self.runs[ri];
        let g = i64::from(s.gpus);
        if mv.chosen.contains(&ri) {
            return false;
        }
        if !s.run.allocated() {
            mv.chosen.push(ri);
            mv.freed += g;
            return true;
        }
        let project = s.run.project;
        let (before, usage_before) = mv.lost_by(project);
        let marginal = self.entitlement_loss(project, pool, before, g);
        let delta = gain - mv.loss - marginal;
        if delta < 0 {
            return false;
        }
        let usage_lost = usage_before + i128::from(s.gpus) * self.per_gpu_usage(pool);
        mv.set_lost(project, before + g, usage_lost);
        if delta == 0 && !self.move_fair_share(w, pool, mv) {
            mv.set_lost(project, before, usage_before);
            return false;
        }
        mv.loss += marginal;
        mv.chosen.push(ri);
        mv.freed += g;
        true
    }

    fn consider_unallocated(&mut self, w: &Queued) {
        let Some(pool) = self.pool_of(w) else { return };
        if let Some(ps) = self.projects.get(&w.project)
            && let Some(cap) = ps.unalloc_cap
            && ps.unalloc_held + w.gpus > cap
        {
            let held = ps.unalloc_held;
            self.wait(w, WaitReason::UnallocatedCap { cap, held }, None);
            return;
        }
        if self.pools[pool].reservation.is_some() {
            self.pools[pool].examined_after += 1;
            if self.pools[pool].examined_after > self.snap.policy.backfill_depth {
                let ahead = self.pools[pool].examined_after;
                self.wait(w, WaitReason::InLine { ahead }, None);
                return;
            }
        }
        // Every idle GPU is lent to unallocated work: also those held for contracts and for
        // the pool's reservation, whatever the run's time limit, as contracts and the reserved
        // run preempt unallocated runs first (docs/design.md section 3.4).
        // Except those kept for short runs (docs/design.md section 3.7).
        let free = self.pools[pool].free;
        let kept = self.kept_from(pool, w);
        if free - kept >= i64::from(w.gpus) && self.start(w, pool, None, false) {
            self.after_start_reservation(pool, w);
            return;
        }
        if kept > 0 && free >= i64::from(w.gpus) {
            let estimate = self.expected_free(pool, w.gpus.saturating_add(kept as u32));
            let reason = WaitReason::ShortRunHeadroom {
                gpus: w.gpus,
                free: free as u32,
                kept: kept.min(free) as u32,
            };
            self.wait(w, reason, estimate);
            return;
        }
        let p = &self.pools[pool];
        let free = p.free.max(0) as u32;
        let allocated_waiting = p.allocated_waiting;
        // The GPUs that free go first to the allocated runs that wait for them (the reserved
        // one among them): the unallocated run is expected once enough have freed for them
        // all and for it, if no other allocated run comes (docs/design.md section 3.6).
        let estimate = self.expected_free(pool, w.gpus.saturating_add(p.allocated_waiting_gpus));
        let reason = WaitReason::IdleGpus {
            gpus: w.gpus,
            free,
            allocated_waiting,
        };
        self.wait(w, reason, estimate);
    }

    /// Budget gate: records the wait and returns false when the balance cannot cover the
    /// minimum-runtime cost, less (with `contracts`: the policy starts runs on their contracts)
    /// the part inside the window of the project's capacity contract the run would start on
    /// (prepaid with it: docs/design.md 3.3). The contract is looked up only when the full
    /// cost is over the balance, not for every waiting run.
    fn budget_allows(&mut self, w: &Queued, pool: usize, contracts: bool) -> bool {
        let Some(b) = self.projects.get(&w.project).and_then(|p| p.balance) else {
            return true;
        };
        let mut cost = self.cost(w, pool);
        if cost > b
            && contracts
            && let Some(c) = self.contract_to_start_on(w, pool)
            && let Some(k) = self.snap.contracts.iter().find(|k| k.id == c)
        {
            // The covered GPUs' time inside the window is prepaid, the rest costs.
            let covered = self.own_hold(w.project, pool).clamp(0, i64::from(w.gpus));
            let prepaid = overlap_s(self.now, self.now + w.min_runtime_s, k.start, k.end);
            cost -= self.price(covered as u32, pool, prepaid);
        }
        if cost > b {
            self.wait(
                w,
                WaitReason::Budget {
                    needs: cost,
                    has: b.max(0),
                },
                None,
            );
            return false;
        }
        true
    }

    fn consider_fifo(&mut self, w: &Queued) {
        let Some(pool) = self.pool_of(w) else { return };
        if !self.pools[pool].blocked {
            if !self.budget_allows(w, pool, false) {
                return;
            }
            if self.start(w, pool, None, false) {
                return;
            }
        }
        self.pools[pool].blocked = true;
        let ahead = self.pools[pool].ahead;
        self.pools[pool].ahead += 1;
        let reason = if ahead == 0 {
            let p = &self.pools[pool];
            WaitReason::Gpus {
                gpus: w.gpus,
                free: p.free.max(0) as u32,
            }
        } else {
            WaitReason::InLine { ahead }
        };
        self.wait(w, reason, None);
    }

    fn consider_legacy(&mut self, w: &Queued) {
        let Some(pool) = self.pool_of(w) else { return };
        if !self.budget_allows(w, pool, false) {
            return;
        }
        let (np, cap) = self
            .projects
            .get(&w.project)
            .map_or((0, 0), |p| (p.legacy_np, p.legacy_cap));
        let within = np + w.gpus <= cap;
        if self.start(w, pool, None, within) {
            return;
        }
        if within {
            // Reclaim quota from opportunistic runs of other teams, least work lost first.
            let need = i64::from(w.gpus) - self.pools[pool].free;
            self.running_by_loss(pool);
            let sorted = self.pools[pool].by_lost_key.as_deref().unwrap_or_default();
            let cands = sorted.iter().copied().filter(|&ri| {
                let s = &self.runs[ri];
                !s.gone && !s.run.non_preemptible && s.run.project != w.project
            });
            let mut chosen = Vec::new();
            let mut freed = 0i64;
            for ri in cands {
                if freed >= need {
                    break;
                }
                freed += i64::from(self.runs[ri].gpus);
                chosen.push(ri);
            }
            if freed >= need {
                let mut i = chosen.len();
                while i > 0 {
                    i -= 1;
                    let g = i64::from(self.runs[chosen[i]].gpus);
                    if freed - g >= need {
                        freed -= g;
                        chosen.remove(i);
                    }
                }
                for ri in chosen {
                    self.preempt(ri, PreemptReason::LegacyQuota, Some(w.id));
                }
                if self.start(w, pool, None, true) {
                    return;
                }
            }
        }
        let p = &self.pools[pool];
        let reason = WaitReason::Gpus {
            gpus: w.gpus,
            free: p.free.max(0) as u32,
        };
        self.wait(w, reason, None);
    }

    fn finish(self) -> Outcome {
        let mut occupied: BTreeSet<NodeId> = BTreeSet::new();
        let any_draining = self.nodes.iter().any(|n| n.state == NodeState::Draining);
        for s in self.runs.iter().filter(|_| any_draining) {
            if !s.gone {
                for (n, _) in &s.run.placement {
                    occupied.insert(*n);
                }
            }
        }
        // Only draining nodes are looked up: without them, the starts need no set.
        for d in self.decisions.iter().filter(|_| any_draining) {
            if let Decision::Start { placement, .. } = d {
                for (n, _) in placement {
                    occupied.insert(*n);
                }
            }
        }
        let drained_nodes = self
            .nodes
            .iter()
            .filter(|n| n.state == NodeState::Draining && !occupied.contains(&n.id))
            .map(|n| n.id)
            .collect();
        Outcome {
            decisions: self.decisions,
            waiting: self.waiting,
            drained_nodes,
            project_order: self.fs.order(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counting-sort order (snapshots listed by id) is the general key's order: fair-share
    /// rank, then priority (highest first), then submission, then id.
    #[test]
    fn id_listed_order_equals_the_general_order() {
        let (mut snap, now) = crate::sim::bench::snapshot(1);
        snap.waiting.truncate(5_000);
        // Ties on rank, priority and submission, which only the id may break.
        for (i, w) in snap.waiting.iter_mut().enumerate() {
            w.submitted_at = now - (i as i64 % 7) * 60;
        }
        // The counting sort's order and the general key's, of the same snapshot.
        let both = |snap: &Snapshot| {
            let fast = Pass::build(snap, now);
            assert!(fast.waiting_by_id);
            let fast: Vec<RunId> = fast.order_waiting().iter().map(|w| w.id).collect();
            let mut general = Pass::build(snap, now);
            general.waiting_by_id = false;
            let general: Vec<RunId> = general.order_waiting().iter().map(|w| w.id).collect();
            assert_eq!(fast.len(), snap.waiting.len());
            (fast, general)
        };
        let (fast, general) = both(&snap);
        assert_eq!(fast, general);
        // Extreme priorities and submissions check the packed key (`within_key`).
        let mut ext = snap.clone();
        for (i, w) in ext.waiting.iter_mut().enumerate() {
            w.submitted_at = match i % 11 {
                0 => i64::MIN,
                1 => i64::MAX,
                2 => -1,
                _ => now - (i as i64 % 7) * 60,
            };
            w.priority = match i % 13 {
                0 => i32::MIN,
                1 => i32::MAX,
                2 => -1,
                _ => w.priority,
            };
        }
        let (fast, general) = both(&ext);
        assert_eq!(fast, general);
        // Every run either starts or waits, once.
        let out = schedule(&snap, now);
        let mut seen: Vec<RunId> = out.waiting.iter().map(|w| w.run).collect();
        seen.extend(out.decisions.iter().filter_map(|d| match d {
            Decision::Start { run, .. } => Some(*run),
            _ => None,
        }));
        seen.sort_unstable();
        let all: Vec<RunId> = snap.waiting.iter().map(|w| w.id).collect();
        assert_eq!(seen, all);
    }
}
