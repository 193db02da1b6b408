//! Hierarchical fair share: the order in which projects are served.
//!
//! # Formula
//! docs/design.md section 3.1. Every tree node and project `i` has a share `s_i` of its parent and a
//! usage `u_i`: the billing-weighted allocated GPU-seconds of its subtree in the fair-share
//! window (supplied per project by the caller, summed up the tree), plus, for every allocated
//! GPU its subtree holds right now, `Policy::in_flight_s` seconds (so that one pass sees the
//! effect of its own moves). At each level siblings are ranked by
//!
//! ```text
//!     key_i = (s_i / Σ_siblings s) / (u_i / Σ_siblings u)   = s_i / u_i · (Σu / Σs)
//! ```
//!
//! that is by `s_i / u_i`, since the two sums are common to all siblings; it is compared exactly
//! as `s_a · u_b` against `s_b · u_a` in 128-bit integers, never in floating point. A sibling
//! with no usage ranks first (larger share first among those); a share of zero ranks last. Ties
//! go to the lower id. A depth-first walk of the tree in that order gives every project a rank,
//! so work of an under-served subtree always precedes work of an over-served one.
//!
//! # Sources
//! This is the "fair tree" algorithm of Slurm (`priority/multifactor` with
//! `PriorityFlags=FAIR_TREE`, Slurm documentation "Fair Tree Fairshare Algorithm", BYU / SchedMD,
//! 2014): siblings ordered by `Level Fairshare = S / U` (normalised shares over normalised
//! usage), and a depth-first traversal that assigns ranks. It replaces Slurm's classic
//! fair-share factor `F = 2^(-U/S)` (Slurm "Multifactor Priority Plugin"), whose flattening of
//! the tree lets an over-served account outrank an under-served subtree. The usage window
//! (sliding or decaying, default 7 days) is the caller's; Slurm's `PriorityDecayHalfLife` plays
//! the same part.

use super::types::{IdMap, IdSlots};
use super::types::{ProjectId, Snapshot, TreeNodeId};
use std::cmp::Ordering;

/// A sibling's fair-share key: share (basis points) over usage (GPU-seconds). Greater ranks
/// first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareKey {
    /// Share of the parent in basis points.
    pub share: u32,
    /// Usage of the subtree (GPU-seconds, window plus in-flight).
    pub usage: i128,
}

impl ShareKey {
    /// Compares two sibling keys: `Greater` when `self` ranks before `other`. Exact: compares
    /// `s_a · u_b` with `s_b · u_a`; zero usage is infinite (larger share first), zero share is
    /// the lowest.
    pub fn compare(&self, other: &ShareKey) -> Ordering {
        let class = |k: &ShareKey| {
            if k.share == 0 {
                0
            } else if k.usage <= 0 {
                2
            } else {
                1
            }
        };
        let (ca, cb) = (class(self), class(other));
        if ca != cb {
            return ca.cmp(&cb);
        }
        match ca {
            0 => Ordering::Equal,
            2 => self.share.cmp(&other.share),
            _ => {
                let a = i128::from(self.share) * other.usage;
                let b = i128::from(other.share) * self.usage;
                a.cmp(&b)
            }
        }
    }

    /// The key as a number for display: share fraction per usage GPU-hour (infinite when idle).
    pub fn as_f64(&self) -> f64 {
        if self.share == 0 {
            0.0
        } else if self.usage <= 0 {
            f64::INFINITY
        } else {
            f64::from(self.share) / 10_000.0 / (self.usage as f64 / 3600.0)
        }
    }
}

/// The fair-share state of one pass: the tree in dense form, usage per subtree (adjustable by the
/// pass's own moves) and the project ranks at the start of the pass.
#[derive(Debug, Clone)]
pub struct FairShare {
    /// Entities: tree nodes `0..n_tree`, then projects. Parent entity index, `None` at top.
    parent: Vec<Option<usize>>,
    share: Vec<u32>,
    usage: Vec<i128>,
    depth: Vec<u32>,
    n_tree: usize,
    project_ids: Vec<ProjectId>,
    /// Project id -> index in `project_ids` (ids sorted).
    project_index: IdSlots,
    /// Rank (0 = first) per project dense index.
    rank: Vec<usize>,
}

impl FairShare {
    /// Builds the ranking from a snapshot. `in_flight` gives per project the billing-weighted
    /// GPU-seconds to add to its window usage for what it holds now. The snapshot is assumed
    /// valid ([`Snapshot::validate`]); unknown parents are treated as the top level.
    pub fn new(snapshot: &Snapshot, in_flight: &IdMap<ProjectId, i128>) -> FairShare {
        let mut tree: Vec<_> = snapshot.tree.iter().collect();
        tree.sort_unstable_by_key(|t| t.id);
        let mut projects: Vec<_> = snapshot.projects.iter().collect();
        projects.sort_unstable_by_key(|p| p.id);
        let n_tree = tree.len();
        let tree_index: IdMap<TreeNodeId, usize> =
            tree.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        let mut parent = Vec::with_capacity(n_tree + projects.len());
        let mut share = Vec::with_capacity(n_tree + projects.len());
        let mut usage = vec![0i128; n_tree + projects.len()];
        for t in &tree {
            parent.push(t.parent.and_then(|p| tree_index.get(&p).copied()));
            share.push(t.share.0);
        }
        let mut project_ids = Vec::with_capacity(projects.len());
        for p in &projects {
            parent.push(p.parent.and_then(|t| tree_index.get(&t).copied()));
            share.push(p.share.0);
            project_ids.push(p.id);
        }
        let project_index = IdSlots::new(&project_ids);
        // Depths (tree validated acyclic; guard anyway).
        let n = parent.len();
        let mut depth = vec![0u32; n];
        for e in 0..n {
            let mut d = 0u32;
            let mut cur = parent[e];
            while let Some(c) = cur {
                d += 1;
                if d as usize > n {
                    break;
                }
                cur = parent[c];
            }
            depth[e] = d;
        }
        let mut fs = FairShare {
            parent,
            share,
            usage: std::mem::take(&mut usage),
            depth,
            n_tree,
            project_ids,
            project_index,
            rank: Vec::new(),
        };
        for (i, p) in projects.iter().enumerate() {
            let u = i128::from(p.usage_gpu_s.max(0)) + in_flight.get(&p.id).copied().unwrap_or(0);
            fs.add_entity(n_tree + i, u);
        }
        fs.rank = fs.compute_ranks();
        fs
    }

    fn add_entity(&mut self, mut e: usize, delta: i128) {
        let mut steps = 0usize;
        loop {
            self.usage[e] += delta;
            steps += 1;
            match self.parent[e] {
                Some(p) if steps <= self.parent.len() => e = p,
                _ => break,
            }
        }
    }

    fn key(&self, e: usize) -> ShareKey {
        ShareKey {
            share: self.share[e],
            usage: self.usage[e],
        }
    }

    /// Sibling order: greater key first, then tree nodes before projects, then lower id.
    fn sibling_cmp(&self, a: usize, b: usize) -> Ordering {
        self.key(b)
            .compare(&self.key(a))
            .then_with(|| self.tie_id(a).cmp(&self.tie_id(b)))
    }

    fn tie_id(&self, e: usize) -> (u8, i64) {
        if e < self.n_tree {
            (0, e as i64)
        } else {
            (1, self.project_ids[e - self.n_tree].0)
        }
    }

    fn compute_ranks(&self) -> Vec<usize> {
        let n = self.parent.len();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        for e in 0..n {
            let p = self.parent[e].unwrap_or(n);
            children[p].push(e);
        }
        for c in &mut children {
            c.sort_unstable_by(|&a, &b| self.sibling_cmp(a, b));
        }
        let mut rank = vec![usize::MAX; self.project_ids.len()];
        let mut next = 0usize;
        let mut stack: Vec<usize> = children[n].iter().rev().copied().collect();
        let mut visited = vec![false; n];
        while let Some(e) = stack.pop() {
            if visited[e] {
                continue;
            }
            visited[e] = true;
            if e >= self.n_tree {
                rank[e - self.n_tree] = next;
                next += 1;
            } else {
                stack.extend(children[e].iter().rev().copied());
            }
        }
        // Projects unreachable (cannot happen for a valid tree) go last, by id.
        for r in &mut rank {
            if *r == usize::MAX {
                *r = next;
                next += 1;
            }
        }
        rank
    }

    /// Rank of a project at the start of the pass (0 = served first); unknown projects last.
    /// The project's dense index (`0..len()`, by id), if it is in the tree.
    pub fn index(&self, project: ProjectId) -> Option<usize> {
        self.project_index.get(project)
    }

    pub fn rank(&self, project: ProjectId) -> usize {
        self.project_index
            .get(project)
            .map_or(usize::MAX, |i| self.rank[i])
    }

    /// Projects in rank order.
    pub fn order(&self) -> Vec<ProjectId> {
        let mut v: Vec<_> = self.project_ids.to_vec();
        v.sort_unstable_by_key(|p| self.rank(*p));
        v
    }

    /// Number of projects.
    pub fn len(&self) -> usize {
        self.project_ids.len()
    }

    /// Whether there are no projects.
    pub fn is_empty(&self) -> bool {
        self.project_ids.is_empty()
    }

    /// Adds `delta` GPU-seconds of usage to a project and its ancestors (a move of the pass).
    pub fn add_usage(&mut self, project: ProjectId, delta: i128) {
        if let Some(i) = self.project_index.get(project) {
            self.add_entity(self.n_tree + i, delta);
        }
    }

    /// The project's own key (its share of its parent over its usage).
    pub fn project_key(&self, project: ProjectId) -> Option<ShareKey> {
        self.project_index
            .get(project)
            .map(|i| self.key(self.n_tree + i))
    }

    /// The two siblings under the lowest common ancestor of projects `a` and `b`: the ancestor
    /// (or self) of `a` and of `b` whose keys decide which of the two is served first.
    fn deciding_pair(&self, a: ProjectId, b: ProjectId) -> Option<(usize, usize)> {
        let mut x = self.n_tree + self.project_index.get(a)?;
        let mut y = self.n_tree + self.project_index.get(b)?;
        if x == y {
            return None;
        }
        while self.depth[x] > self.depth[y] {
            x = self.parent[x]?;
        }
        while self.depth[y] > self.depth[x] {
            y = self.parent[y]?;
        }
        while self.parent[x] != self.parent[y] {
            x = self.parent[x]?;
            y = self.parent[y]?;
        }
        Some((x, y))
    }

    /// Whether `low` ranks strictly below `high` with the current (adjusted) usage: the deciding
    /// sibling of `high` has a strictly greater key. Equal keys are never "strictly below", and a
    /// project is never strictly below itself.
    pub fn strictly_below(&self, low: ProjectId, high: ProjectId) -> bool {
        match self.deciding_pair(high, low) {
            Some((h, l)) => self.key(h).compare(&self.key(l)) == Ordering::Greater,
            None => false,
        }
    }

    /// Whether `low` would rank strictly below `high` after `high` gains `gain` and `low` loses
    /// `loss` GPU-seconds of usage (the "after the move" test of docs/design.md section 3.2). Leaves the state
    /// unchanged.
    pub fn strictly_below_after(
        &self,
        low: ProjectId,
        high: ProjectId,
        gain: i128,
        loss: i128,
    ) -> bool {
        // The deciding pair are distinct siblings, ancestors-or-self of `high` and `low`: the
        // gain reaches only `h`'s usage and the loss only `l`'s (and common ancestors above).
        match self.deciding_pair(high, low) {
            Some((h, l)) => {
                let kh = ShareKey {
                    share: self.share[h],
                    usage: self.usage[h] + gain,
                };
                let kl = ShareKey {
                    share: self.share[l],
                    usage: self.usage[l] - loss,
                };
                kh.compare(&kl) == Ordering::Greater
            }
            None => false,
        }
    }
}
