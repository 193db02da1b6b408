//! Builders and a tiny driver for tests of the core.

use crate::scheduler::*;
use std::collections::BTreeMap;

pub const H: i64 = 3600;
pub const M: i64 = 60;
/// 2026-10-01 00:00:00 UTC.
pub const T0: i64 = 1_790_812_800;

#[derive(Clone)]
pub struct Builder {
    pub snap: Snapshot,
    pub next: i64,
}

impl Builder {
    pub fn new() -> Builder {
        let mut snap = Snapshot::default();
        snap.clusters.push(Cluster {
            id: ClusterId(1),
            name: "c1".into(),
            uniform_gangs: false,
        });
        snap.models.push(GpuModel {
            id: ModelId(1),
            name: "H100".into(),
            price_per_gpu_hour: 200,
            billing_weight_milli: 1000,
        });
        Builder { snap, next: 100 }
    }

    fn id(&mut self) -> i64 {
        self.next += 1;
        self.next
    }

    pub fn model(&mut self, name: &str) -> ModelId {
        let id = ModelId(self.id());
        self.snap.models.push(GpuModel {
            id,
            name: name.into(),
            price_per_gpu_hour: 300,
            billing_weight_milli: 1000,
        });
        id
    }

    pub fn nodes(&mut self, count: usize, gpus: u32) -> Vec<NodeId> {
        self.nodes_of(ModelId(1), count, gpus)
    }

    pub fn nodes_of(&mut self, model: ModelId, count: usize, gpus: u32) -> Vec<NodeId> {
        (0..count)
            .map(|_| {
                let id = NodeId(self.id());
                self.snap.nodes.push(Node {
                    id,
                    cluster: ClusterId(1),
                    model,
                    gpus,
                    state: NodeState::Up,
                });
                id
            })
            .collect()
    }

    pub fn group(&mut self, parent: Option<TreeNodeId>, pct: &str) -> TreeNodeId {
        let id = TreeNodeId(self.id());
        self.snap.tree.push(TreeNode {
            id,
            parent,
            share: Share::parse_percent(pct).unwrap(),
        });
        id
    }

    pub fn project(
        &mut self,
        parent: Option<TreeNodeId>,
        pct: &str,
        usage_gpu_s: i64,
    ) -> ProjectId {
        let id = ProjectId(self.id());
        self.snap.projects.push(Project {
            id,
            parent,
            share: Share::parse_percent(pct).unwrap(),
            usage_gpu_s,
            balance: None,
            unallocated_gpu_cap: None,
            legacy_cap: 0,
        });
        id
    }

    /// A capacity contract `id` of `project` for `gpus` GPUs of model 1 on cluster 1, its
    /// window `[start, end)`.
    pub fn contract(&mut self, id: i64, project: ProjectId, gpus: u32, start: i64, end: i64) {
        self.snap.contracts.push(Contract {
            id: ContractId(id),
            project,
            cluster: ClusterId(1),
            model: ModelId(1),
            gpus,
            start,
            end,
        });
    }

    pub fn project_mut(&mut self, p: ProjectId) -> &mut Project {
        self.snap.projects.iter_mut().find(|x| x.id == p).unwrap()
    }

    /// Places a running run on the lowest free GPUs of nodes of `model`, in node order.
    pub fn running_of(
        &mut self,
        model: ModelId,
        project: ProjectId,
        gpus: u32,
        started_at: i64,
        min_runtime_s: i64,
        time_limit_s: i64,
    ) -> RunId {
        let id = RunId(self.id());
        let mut held: BTreeMap<NodeId, Vec<u32>> = BTreeMap::new();
        for r in &self.snap.running {
            for (n, g) in &r.placement {
                held.entry(*n).or_default().extend(g);
            }
        }
        let mut left = gpus;
        let mut placement = Vec::new();
        for n in self.snap.nodes.iter().filter(|n| n.model == model) {
            if left == 0 {
                break;
            }
            let h = held.get(&n.id).cloned().unwrap_or_default();
            let free: Vec<u32> = (0..n.gpus)
                .filter(|g| !h.contains(g))
                .take(left as usize)
                .collect();
            if !free.is_empty() {
                left -= free.len() as u32;
                placement.push((n.id, free));
            }
        }
        assert_eq!(left, 0, "test setup: not enough GPUs for run");
        self.snap.running.push(RunningRun {
            id,
            project,
            cluster: ClusterId(1),
            model,
            placement,
            started_at,
            min_runtime_s,
            time_limit_s,
            priority: 0,
            contract: None,
            non_preemptible: false,
        });
        id
    }

    pub fn running(
        &mut self,
        project: ProjectId,
        gpus: u32,
        started_at: i64,
        min_rt: i64,
        limit: i64,
    ) -> RunId {
        self.running_of(ModelId(1), project, gpus, started_at, min_rt, limit)
    }

    pub fn waiting_of(
        &mut self,
        model: ModelId,
        project: ProjectId,
        gpus: u32,
        submitted_at: i64,
        min_runtime_s: i64,
        time_limit_s: i64,
    ) -> RunId {
        let id = RunId(self.id());
        self.snap.waiting.push(WaitingRun {
            id,
            project,
            cluster: ClusterId(1),
            model,
            gpus,
            submitted_at,
            min_runtime_s,
            time_limit_s,
            priority: 0,
        });
        id
    }

    pub fn waiting(
        &mut self,
        project: ProjectId,
        gpus: u32,
        submitted_at: i64,
        min_rt: i64,
        limit: i64,
    ) -> RunId {
        self.waiting_of(ModelId(1), project, gpus, submitted_at, min_rt, limit)
    }
}

/// Applies an outcome to a snapshot the way the database layer would (preemptions requeue the
/// run, queued from now; grace period zero).
pub fn apply(snap: &mut Snapshot, out: &Outcome, now: i64) {
    snap.reserved = out.reserved();
    for d in &out.decisions {
        match d {
            Decision::Preempt { run, .. } => {
                let i = snap
                    .running
                    .iter()
                    .position(|r| r.id == *run)
                    .expect("preempted run is running");
                let r = snap.running.remove(i);
                snap.waiting.push(WaitingRun {
                    id: r.id,
                    project: r.project,
                    cluster: r.cluster,
                    model: r.model,
                    gpus: r.gpus(),
                    submitted_at: now,
                    min_runtime_s: r.min_runtime_s,
                    time_limit_s: r.time_limit_s,
                    priority: r.priority,
                });
            }
            Decision::Start {
                run,
                placement,
                contract,
                non_preemptible,
                ..
            } => {
                let i = snap
                    .waiting
                    .iter()
                    .position(|w| w.id == *run)
                    .expect("started run waits");
                let w = snap.waiting.remove(i);
                snap.running.push(RunningRun {
                    id: w.id,
                    project: w.project,
                    cluster: w.cluster,
                    model: w.model,
                    placement: placement.clone(),
                    started_at: now,
                    min_runtime_s: w.min_runtime_s,
                    time_limit_s: w.time_limit_s,
                    priority: w.priority,
                    contract: *contract,
                    non_preemptible: *non_preemptible,
                });
            }
            Decision::Adopt { run, contract } => {
                if let Some(r) = snap.running.iter_mut().find(|r| r.id == *run) {
                    r.contract = Some(*contract);
                }
            }
            Decision::Reserve { .. } => {}
        }
    }
}

pub fn preemptions(out: &Outcome) -> Vec<(RunId, PreemptReason, Option<RunId>)> {
    out.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Preempt {
                run,
                reason,
                for_run,
            } => Some((*run, reason.clone(), *for_run)),
            _ => None,
        })
        .collect()
}

pub fn started(out: &Outcome) -> Vec<RunId> {
    out.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Start { run, .. } => Some(*run),
            _ => None,
        })
        .collect()
}

pub fn reason_of(out: &Outcome, run: RunId) -> &WaitReason {
    &out.waiting
        .iter()
        .find(|w| w.run == run)
        .expect("run waits")
        .reason
}

/// A small event loop for multi-pass scenarios: runs end after their real duration, usage
/// accrues as allocated GPU-seconds (no decay: the scenarios span hours, the window days).
pub struct Driver {
    pub snap: Snapshot,
    pub duration: BTreeMap<RunId, i64>,
    pub started_at: BTreeMap<RunId, Vec<i64>>,
    pub finished_at: BTreeMap<RunId, i64>,
    pub preempted: usize,
    pub now: i64,
}

impl Driver {
    pub fn new(snap: Snapshot, now: i64) -> Driver {
        Driver {
            snap,
            duration: BTreeMap::new(),
            started_at: BTreeMap::new(),
            finished_at: BTreeMap::new(),
            preempted: 0,
            now,
        }
    }

    /// Advances to `t`: accrues usage, ends runs whose duration is reached (in time order,
    /// passing at every end), then passes at `t`.
    pub fn advance_to(&mut self, t: i64) -> Outcome {
        loop {
            let next_end = self
                .snap
                .running
                .iter()
                .map(|r| {
                    r.started_at
                        + self
                            .duration
                            .get(&r.id)
                            .copied()
                            .unwrap_or(r.time_limit_s)
                            .min(r.time_limit_s)
                })
                .filter(|&e| e <= t)
                .min();
            match next_end {
                Some(e) if e >= self.now => {
                    self.accrue(e);
                    let dur = &self.duration;
                    let ended: Vec<RunId> = self
                        .snap
                        .running
                        .iter()
                        .filter(|r| {
                            r.started_at
                                + dur
                                    .get(&r.id)
                                    .copied()
                                    .unwrap_or(r.time_limit_s)
                                    .min(r.time_limit_s)
                                <= e
                        })
                        .map(|r| r.id)
                        .collect();
                    self.snap.running.retain(|r| !ended.contains(&r.id));
                    for id in ended {
                        self.finished_at.insert(id, e);
                    }
                    if e < t {
                        self.pass();
                    }
                }
                _ => break,
            }
        }
        self.accrue(t);
        self.pass()
    }

    fn accrue(&mut self, t: i64) {
        let dt = t - self.now;
        if dt <= 0 {
            return;
        }
        for r in &self.snap.running {
            if r.allocated() {
                let g = i64::from(r.gpus());
                if let Some(p) = self.snap.projects.iter_mut().find(|p| p.id == r.project) {
                    p.usage_gpu_s += g * dt;
                }
            }
        }
        self.now = t;
    }

    pub fn pass(&mut self) -> Outcome {
        let out = schedule(&self.snap, self.now);
        for d in &out.decisions {
            match d {
                Decision::Start { run, .. } => {
                    self.started_at.entry(*run).or_default().push(self.now)
                }
                Decision::Preempt { .. } => self.preempted += 1,
                Decision::Reserve { .. } | Decision::Adopt { .. } => {}
            }
        }
        apply(&mut self.snap, &out, self.now);
        out
    }
}
