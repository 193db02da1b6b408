//! Pure admission checks: runs at submission (can they ever fit?) and capacity contracts against
//! the capacity plan (docs/design.md section 2, "Capacity contract"; scenario S7).

use super::types::{ClusterId, ModelId, Snapshot, WaitingRun};
use serde::{Deserialize, Serialize};

/// Why a run is refused at submission.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum RunRefusal {
    /// The gang is larger than every GPU of its model on its cluster.
    #[error(
        "asks for {asked} GPUs but the cluster has only {installed} GPUs of that model; it can never start"
    )]
    LargerThanCluster {
        /// GPUs asked for.
        asked: u32,
        /// GPUs of that model on that cluster, on every node whatever its state.
        installed: u32,
    },
    /// Zero GPUs, or a non-positive time limit, or a negative minimum runtime.
    #[error("{0}")]
    Invalid(String),
}

/// Checks a run at submission: it must ask for at least one GPU, have a positive time limit,
/// a minimum runtime between 0 and its time limit, and fit in its cluster's GPUs of its model
/// (every node, `down` ones included: a node down may come back, and the run waits for it).
/// A run refused here never reaches a pass, so it never drives preemption.
///
/// # Errors
/// [`RunRefusal`] with the numbers.
pub fn admit_run(snapshot: &Snapshot, run: &WaitingRun) -> Result<(), RunRefusal> {
    if run.gpus == 0 {
        return Err(RunRefusal::Invalid("a run needs at least one GPU".into()));
    }
    if run.time_limit_s <= 0 {
        return Err(RunRefusal::Invalid(
            "the time limit must be positive".into(),
        ));
    }
    if run.min_runtime_s < 0 || run.min_runtime_s > run.time_limit_s {
        return Err(RunRefusal::Invalid(
            "the minimum runtime must be between 0 and the time limit".into(),
        ));
    }
    let installed: u32 = snapshot
        .nodes
        .iter()
        .filter(|n| n.cluster == run.cluster && n.model == run.model)
        .map(|n| n.gpus)
        .sum();
    if run.gpus > installed {
        return Err(RunRefusal::LargerThanCluster {
            asked: run.gpus,
            installed,
        });
    }
    Ok(())
}

/// The capacity plan of one pool: installed GPUs of a model on a cluster and the fraction that
/// may be sold as contracts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapacityPlan {
    /// Cluster.
    pub cluster: ClusterId,
    /// GPU model.
    pub model: ModelId,
    /// GPUs installed.
    pub installed: u32,
    /// Contractable fraction in basis points (`10_000` = all of them).
    pub contractable_bp: u32,
}

impl CapacityPlan {
    /// GPUs that may be promised at any instant: `floor(installed x fraction)`.
    pub fn contractable(&self) -> u32 {
        (u64::from(self.installed) * u64::from(self.contractable_bp.min(10_000)) / 10_000) as u32
    }
}

/// An existing contract as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedContract {
    /// Cluster.
    pub cluster: ClusterId,
    /// GPU model.
    pub model: ModelId,
    /// GPUs promised.
    pub gpus: u32,
    /// Window start (s since the epoch, inclusive).
    pub start: i64,
    /// Window end (exclusive).
    pub end: i64,
}

/// A contract a lead wants to buy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractCandidate {
    /// Cluster.
    pub cluster: ClusterId,
    /// GPU model.
    pub model: ModelId,
    /// GPUs.
    pub gpus: u32,
    /// Window start (s since the epoch, inclusive).
    pub start: i64,
    /// Window end (exclusive).
    pub end: i64,
    /// Price of one GPU-hour of the model (minor units).
    pub price_per_gpu_hour: i64,
    /// The buying project's balance (minor units); `None` = not checked here.
    pub balance: Option<i64>,
}

impl ContractCandidate {
    /// Price of the whole contract: GPUs x window hours x price, rounded up to a minor unit.
    pub fn cost(&self) -> i64 {
        let secs = i128::from((self.end - self.start).max(0));
        let c = (i128::from(self.gpus) * secs * i128::from(self.price_per_gpu_hour) + 3599) / 3600;
        i64::try_from(c).unwrap_or(i64::MAX)
    }
}

/// Why a contract is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ContractRefusal {
    /// Zero GPUs or an empty window.
    #[error("{0}")]
    Invalid(String),
    /// No plan for that model on that cluster.
    #[error("no capacity plan for that GPU model on that cluster")]
    NoPlan,
    /// Promised GPUs would exceed the contractable capacity at some instant.
    #[error(
        "not enough contractable capacity: at {at} already {promised} of {contractable} contractable GPUs are promised, and {asked} more were asked"
    )]
    Capacity {
        /// The first instant (s since the epoch) where it would exceed.
        at: i64,
        /// GPUs already promised then.
        promised: u32,
        /// Contractable GPUs.
        contractable: u32,
        /// GPUs asked.
        asked: u32,
    },
    /// The project's balance cannot pay for it.
    #[error("budget: the contract costs {cost}, the project has {balance}")]
    Budget {
        /// Price of the contract.
        cost: i64,
        /// Balance.
        balance: i64,
    },
}

/// The most GPUs promised at any instant of `[start, end)` by contract windows
/// `(start, end, gpus)` (seconds, half-open), and the first instant at which that peak is
/// reached. The load only rises where a window starts, so the peak is found at `start` or at
/// a window's start inside the range.
pub fn peak_contracted(windows: &[(i64, i64, i64)], start: i64, end: i64) -> (i64, i64) {
    let mut points: Vec<i64> = windows
        .iter()
        .map(|(s, _, _)| *s)
        .filter(|s| *s > start && *s < end)
        .collect();
    points.push(start);
    points.sort_unstable();
    points.dedup();
    let mut best = (0, start);
    for t in points {
        let load: i64 = windows
            .iter()
            .filter(|(s, e, _)| *s <= t && t < *e)
            .map(|(_, _, g)| *g)
            .sum();
        if load > best.0 {
            best = (load, t);
        }
    }
    best
}

/// Admits or refuses a contract against the capacity plan: at no instant of its window may the
/// GPUs promised by overlapping contracts of the same pool plus the candidate exceed
/// [`CapacityPlan::contractable`]. Then the buyer's balance must cover [`ContractCandidate::cost`].
/// Returns the cost on success. The database layer must run this under a lock on the pool
/// (concurrent purchases, S7) and charge the cost in the same transaction.
///
/// The peak is found by [`peak_contracted`]: O(k^2) for k overlapping contracts, which are few.
///
/// # Errors
/// [`ContractRefusal`] with the numbers.
pub fn admit_contract(
    plans: &[CapacityPlan],
    existing: &[PlannedContract],
    candidate: &ContractCandidate,
) -> Result<i64, ContractRefusal> {
    if candidate.gpus == 0 {
        return Err(ContractRefusal::Invalid(
            "a contract needs at least one GPU".into(),
        ));
    }
    if candidate.start >= candidate.end {
        return Err(ContractRefusal::Invalid(
            "the window must end after it starts".into(),
        ));
    }
    let plan = plans
        .iter()
        .filter(|p| p.cluster == candidate.cluster && p.model == candidate.model)
        .min_by_key(|p| p.contractable())
        .ok_or(ContractRefusal::NoPlan)?;
    let contractable = plan.contractable();
    let windows: Vec<(i64, i64, i64)> = existing
        .iter()
        .filter(|c| c.cluster == candidate.cluster && c.model == candidate.model)
        .map(|c| (c.start, c.end, i64::from(c.gpus)))
        .collect();
    let worst = peak_contracted(&windows, candidate.start, candidate.end);
    if worst.0 + i64::from(candidate.gpus) > i64::from(contractable) {
        return Err(ContractRefusal::Capacity {
            at: worst.1,
            promised: worst.0 as u32,
            contractable,
            asked: candidate.gpus,
        });
    }
    let cost = candidate.cost();
    if let Some(balance) = candidate.balance
        && cost > balance
    {
        return Err(ContractRefusal::Budget { cost, balance });
    }
    Ok(cost)
}
