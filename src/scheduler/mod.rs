//! The scheduling core: a pure function from a [`Snapshot`] and `now` to an [`Outcome`].
//!
//! This module reads no clock, does no I/O and imports no web, database or async crate. Every
//! instant is `i64` seconds since the Unix epoch (UTC), every duration `i64` seconds, every sum of
//! money `i64` minor units of the organisation's currency, every entity id the `i64` primary key
//! of its database row. The same snapshot gives the same outcome whatever the order of its input
//! lists: the pass sorts everything by stable ids and breaks every tie by id.
//!
//! Layout:
//! - [`types`]: the snapshot (clusters, nodes, program tree, projects, runs, contracts, policy).
//! - [`fairshare`]: the hierarchical fair-share ranking (formula and sources there).
//! - [`pass`]: one scheduling pass ([`schedule`]): ordering, placement, preemption, reservation
//!   and backfill, capacity contracts, draining nodes, budgets.
//! - [`reason`]: the decisions and the reasons a run waits ([`WaitReason::describe`]).
//! - [`admission`]: pure admission of runs (too large for the cluster) and of capacity contracts.

pub mod admission;
pub mod fairshare;
pub mod pass;
pub mod reason;
pub mod types;

pub use admission::{
    CapacityPlan, ContractCandidate, ContractRefusal, PlannedContract, RunRefusal, admit_contract,
    admit_run,
};
pub use fairshare::{FairShare, ShareKey};
pub use pass::schedule;
pub use reason::{Ahead, Decision, Outcome, PreemptReason, WaitReason, Waiting};
pub use types::*;

#[cfg(test)]
mod tests;
