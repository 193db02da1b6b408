//! [`reconcile`]: a pure function from the server's answer and the local process table to a plan.

use super::*;

// ---------------------------------------------------------------------------------------------
// Reconcile (pure)
// ---------------------------------------------------------------------------------------------

/// A live local process, as [`reconcile`] sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalProcess {
    /// Its identity.
    pub key: RunKey,
    /// GPU indices it was given.
    pub gpus: Vec<u32>,
    /// `Some(grace)` once it has been asked to stop.
    pub stopping: Option<Duration>,
}

/// What to do after an answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Assignments to start now.
    pub start: Vec<Assignment>,
    /// Processes to stop, with their grace period.
    pub stop: Vec<(RunKey, Duration)>,
    /// Assignments not started yet because one of their GPUs is still used locally.
    pub waiting: Vec<RunKey>,
}

impl Plan {
    /// Whether the plan changes anything locally.
    #[must_use]
    pub fn changes_something(&self) -> bool {
        !self.start.is_empty() || !self.stop.is_empty()
    }
}

/// Compares the server's desired state with the live local processes.
///
/// - A local process listed in `stops` is stopped with that grace; one in neither list with
///   [`ORPHAN_GRACE`]. One already stopping is asked again only for a shorter grace.
/// - An assignment is started unless it was ever `started` in this process's life, is also
///   listed in `stops`, or one of its GPUs on its node is held by a live local process (or by
///   an assignment started earlier in this plan); then it is `waiting`.
#[must_use]
pub fn reconcile(answer: &SyncAnswer, local: &[LocalProcess], started: &HashSet<RunKey>) -> Plan {
    let stops: HashMap<RunKey, Duration> =
        answer.stops.iter().map(|s| (s.key(), s.grace())).collect();
    let wanted: HashSet<RunKey> = answer.assignments.iter().map(Assignment::key).collect();
    let mut plan = Plan::default();
    for p in local {
        let grace = match stops.get(&p.key) {
            Some(g) => Some(*g),
            None if !wanted.contains(&p.key) => Some(ORPHAN_GRACE),
            None => None,
        };
        if let Some(g) = grace
            && p.stopping.is_none_or(|current| g < current)
        {
            plan.stop.push((p.key, g));
        }
    }
    let mut busy: HashSet<(i64, u32)> = local
        .iter()
        .flat_map(|p| p.gpus.iter().map(move |g| (p.key.node, *g)))
        .collect();
    let mut planned = HashSet::new();
    for a in &answer.assignments {
        let key = a.key();
        if started.contains(&key)
            || stops.contains_key(&key)
            || local.iter().any(|p| p.key == key)
            || !planned.insert(key)
        {
            continue;
        }
        if a.gpus.iter().any(|g| busy.contains(&(a.node, *g))) {
            plan.waiting.push(key);
            continue;
        }
        busy.extend(a.gpus.iter().map(|g| (a.node, *g)));
        plan.start.push(a.clone());
    }
    plan
}
