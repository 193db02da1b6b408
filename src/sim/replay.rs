//! The event-jumping replay: a virtual clock that jumps from event to event (arrivals batched
//! per instant, run ends, minimum-runtime expiries while runs wait, and a follow-up pass
//! [`FOLLOW_UP_S`] after a pass that started or preempted runs while runs wait) and calls the same
//! [`crate::scheduler::schedule`] at each, applying its decisions with a zero grace period.
//!
//! Fair-share usage decays exponentially with a time constant of the 7-day window:
//! `U(t + d) = U(t) e^(-d/T) + g T (1 - e^(-d/T))` for a project holding `g` allocated GPUs
//! during `d` (exact for piecewise-constant allocation).

use super::setup::{Plan, Site, is_small};
use crate::metrics::{
    ClassWaits, Figures, HealthSpan, History, ProjectShare, RunRecord, Segment, compute,
};
use crate::scheduler::{
    ClusterId, Decision, PolicyKind, ProjectId, RunId, RunningRun, SHORT_RUN_S, ShortLoad,
    WaitingRun, schedule,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// Seconds after a pass that started or preempted runs, while runs still wait, at which the
/// replay runs another pass even if nothing else happens: the live service's default tick
/// (`TRANCHE_TICK_S`). The runs a pass started are running for the next one, which may then
/// preempt them (a policy's next step) as the live system's next tick would.
pub const FOLLOW_UP_S: i64 = 5;

/// Seconds of run time between checkpoints of a resumable job.
pub const CHECKPOINT_S: i64 = 1_800;
/// Fair-share window (time constant of the decay), s; also the sliding window of the short
/// runs' load, which must be the live service's.
pub const WINDOW_S: f64 = 7.0 * 86_400.0;
const _: () = assert!(WINDOW_S as i64 == crate::runs::live::USAGE_WINDOW_S);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Future,
    Waiting,
    Running,
    Done,
    Rejected,
}

/// What happened to one job.
#[derive(Debug, Clone, Copy)]
pub struct JobOutcome {
    /// First start, if any.
    pub first_start: Option<i64>,
    /// Completion, if completed.
    pub end: Option<i64>,
    /// Rejected at submission (larger than the cluster).
    pub rejected: bool,
}

/// Raw results of one policy's replay.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Policy.
    pub kind: PolicyKind,
    /// Per job, in trace order.
    pub jobs: Vec<JobOutcome>,
    /// Every stretch an attempt held its GPUs (the history [`crate::metrics::compute`] reads).
    pub segments: Vec<Segment>,
    /// The job (index in the plans) of each segment.
    pub segment_jobs: Vec<usize>,
    /// Instants of preemptions.
    pub preempted_at: Vec<i64>,
    /// Preemptions.
    pub preemptions: u64,
    /// GPU-seconds of work lost to preemption.
    pub lost_gpu_s: f64,
    /// Scheduling passes run.
    pub passes: u64,
    /// Instant the replay ended.
    pub end: i64,
    /// Per job: the first estimated start a pass gave it before its first start, and whether
    /// that estimate came with a reservation ([`crate::scheduler::WaitReason::reserved_at`]).
    pub first_estimate: Vec<Option<(i64, bool)>>,
    /// Per job: the kind of the first waiting reason a pass gave it before its first start
    /// ([`crate::scheduler::WaitReason::code`]); `None` for jobs no pass left waiting before
    /// they first started.
    pub first_reason: Vec<Option<&'static str>>,
    /// Allocated GPU-seconds of work lost to preemption (redone later), per project.
    pub lost_by_project: BTreeMap<ProjectId, f64>,
}

/// Replays `plans` (sorted by submit) on `site` under `kind`, measuring inside
/// `[window.0, window.1)`. `tick` is called now and then with the number of jobs submitted so far.
pub fn replay(
    site: &Site,
    plans: &[Plan],
    kind: PolicyKind,
    window: (i64, i64),
    tick: &dyn Fn(u64),
) -> Replay {
    let n = plans.len();
    let mut snap = site.base.clone();
    snap.policy.kind = kind;
    let proj_index: BTreeMap<ProjectId, usize> = snap
        .projects
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id, i))
        .collect();
    let np = snap.projects.len();
    // Each job's project index, looked up once (not at every start, end and preemption).
    let job_project: Vec<usize> = plans
        .iter()
        .map(|p| proj_index.get(&p.project).copied().unwrap_or(usize::MAX))
        .collect();
    let mut state = vec![State::Future; n];
    let mut remaining: Vec<i64> = plans.iter().map(|p| p.duration).collect();
    let mut started_at = vec![0i64; n];
    let mut generation = vec![0u32; n];
    let mut outcome = vec![
        JobOutcome {
            first_start: None,
            end: None,
            rejected: false
        };
        n
    ];
    // Position of each job in snap.waiting. snap.running is kept in id order (found by binary
    // search): the pass sorts the running runs by id, which is then a linear check.
    let mut pos = vec![usize::MAX; n];
    let mut ends: BinaryHeap<Reverse<(i64, usize, u32)>> = BinaryHeap::new();
    let mut protections: BinaryHeap<Reverse<(i64, usize, u32)>> = BinaryHeap::new();
    let mut usage = vec![0f64; np];
    // Offered load of short runs per GPU model as the live service reads it
    // (`LiveCache::short_load`): GPU-seconds of time limit of the allocated short runs submitted
    // in the last window, and those arrivals (submitted, model, GPU-seconds) in order, so that
    // each leaves the sum a window after it came.
    let mut short_gpu_s: BTreeMap<crate::scheduler::ModelId, i64> = BTreeMap::new();
    let mut short_arrivals: VecDeque<(i64, crate::scheduler::ModelId, i64)> = VecDeque::new();
    let mut alloc = vec![0i64; np];
    // Index in r.segments of each running job's open segment.
    let mut open = vec![usize::MAX; n];
    let mut r = Replay {
        kind,
        jobs: Vec::new(),
        segments: Vec::new(),
        segment_jobs: Vec::new(),
        preempted_at: Vec::new(),
        preemptions: 0,
        lost_gpu_s: 0.0,
        passes: 0,
        end: window.0,
        first_estimate: vec![None; n],
        first_reason: vec![None; n],
        lost_by_project: BTreeMap::new(),
    };
    let mut next_arrival = 0usize;
    let mut now = plans.first().map_or(0, |p| p.submit);
    let mut iterations = 0u64;
    let mut follow_up: Option<i64> = None;

    /// Removes job `j` from the running runs (listed by id).
    fn remove_running(running: &mut Vec<RunningRun>, j: usize) -> RunningRun {
        let i = running
            .binary_search_by_key(&RunId(j as i64), |r| r.id)
            .expect("a running job is listed");
        running.remove(i)
    }

    loop {
        if snap.waiting.is_empty() {
            follow_up = None;
        }
        let t_arr = plans.get(next_arrival).map(|p| p.submit);
        let t_end = ends.peek().map(|Reverse((t, _, _))| *t);
        let t_prot = if snap.waiting.is_empty() {
            None
        } else {
            protections.peek().map(|Reverse((t, _, _))| *t)
        };
        // A short run leaving the load's window may free a kept GPU for a run that waits.
        let t_short = if snap.waiting.is_empty() {
            None
        } else {
            short_arrivals.front().map(|&(s, _, _)| s + WINDOW_S as i64)
        };
        let Some(t) = [t_arr, t_end, t_prot, follow_up, t_short]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        follow_up = None;
        // Advance the clock: usage decay.
        let d = (t - now) as f64;
        if d > 0.0 {
            let f = (-d / WINDOW_S).exp();
            for i in 0..np {
                usage[i] = usage[i] * f + alloc[i] as f64 * WINDOW_S * (1.0 - f);
            }
            now = t;
        }
        while let Some(&(s, model, gpu_s)) = short_arrivals.front()
            && s <= t - WINDOW_S as i64
        {
            short_arrivals.pop_front();
            *short_gpu_s.get_mut(&model).expect("counted on arrival") -= gpu_s;
        }
        // Ends.
        while let Some(&Reverse((te, j, g))) = ends.peek() {
            if te > t {
                break;
            }
            ends.pop();
            if g != generation[j] || state[j] != State::Running {
                continue;
            }
            let run = remove_running(&mut snap.running, j);
            let pi = job_project[j];
            if run.allocated() {
                alloc[pi] -= i64::from(plans[j].gpus);
            }
            r.segments[open[j]].end = t;
            open[j] = usize::MAX;
            state[j] = State::Done;
            outcome[j].end = Some(t);
            generation[j] += 1;
        }
        while let Some(&Reverse((tp, _, _))) = protections.peek() {
            if tp > t {
                break;
            }
            protections.pop();
        }
        // Arrivals at t.
        while let Some(p) = plans.get(next_arrival) {
            if p.submit > t {
                break;
            }
            let j = next_arrival;
            next_arrival += 1;
            if p.gpus > site.installed.get(&p.model).copied().unwrap_or(0) {
                state[j] = State::Rejected;
                outcome[j].rejected = true;
                continue;
            }
            state[j] = State::Waiting;
            if kind == PolicyKind::Tranche && p.time_limit <= SHORT_RUN_S && p.min_runtime > 0 {
                let gpu_s = i64::from(p.gpus) * p.time_limit;
                *short_gpu_s.entry(p.model).or_default() += gpu_s;
                short_arrivals.push_back((p.submit, p.model, gpu_s));
            }
            pos[j] = snap.waiting.len();
            snap.waiting.push(WaitingRun {
                id: RunId(j as i64),
                project: p.project,
                cluster: ClusterId(1),
                model: p.model,
                gpus: p.gpus,
                submitted_at: p.submit,
                min_runtime_s: p.min_runtime,
                time_limit_s: p.time_limit,
                priority: p.priority,
            });
        }
        iterations += 1;
        if iterations.is_multiple_of(2048) {
            tick(next_arrival as u64);
        }
        if snap.waiting.is_empty() {
            continue;
        }
        for (i, p) in snap.projects.iter_mut().enumerate() {
            p.usage_gpu_s = usage[i] as i64;
        }
        snap.short_load = short_gpu_s
            .iter()
            .filter(|&(_, &l)| l > 0)
            .map(|(&model, &l)| ShortLoad {
                cluster: ClusterId(1),
                model,
                milli_gpus: (l * 1000 + WINDOW_S as i64 - 1) / WINDOW_S as i64,
            })
            .collect();
        let out = schedule(&snap, t);
        r.passes += 1;
        for w in &out.waiting {
            let j = w.run.0 as usize;
            // As for estimates: only a reason given before the first start (a run preempted
            // and requeued is given reasons again, for its restart).
            if outcome[j].first_start.is_none() {
                r.first_reason[j].get_or_insert(w.reason.code());
            }
            // Only a forecast of the first start counts: a run preempted and requeued is given
            // estimates again, of its restart.
            if let Some(e) = w.estimated_start
                && r.first_estimate[j].is_none()
                && outcome[j].first_start.is_none()
            {
                let reserved = w.reason.reserved_at().is_some();
                r.first_estimate[j] = Some((e, reserved));
            }
        }
        let mut started_now = 0usize;
        let mut requeued = false;
        snap.reserved = out.reserved();
        for d in out.decisions {
            match d {
                Decision::Preempt { run, .. } => {
                    let j = run.0 as usize;
                    let rr = remove_running(&mut snap.running, j);
                    let pi = job_project[j];
                    let g = i64::from(plans[j].gpus);
                    if rr.allocated() {
                        alloc[pi] -= g;
                    }
                    r.segments[open[j]].end = t;
                    open[j] = usize::MAX;
                    r.preempted_at.push(t);
                    let elapsed = t - started_at[j];
                    let kept = elapsed / CHECKPOINT_S * CHECKPOINT_S;
                    r.lost_gpu_s += ((elapsed - kept) * g) as f64;
                    if rr.allocated() {
                        *r.lost_by_project.entry(plans[j].project).or_default() +=
                            ((elapsed - kept) * g) as f64;
                    }
                    r.preemptions += 1;
                    remaining[j] -= kept;
                    generation[j] += 1;
                    state[j] = State::Waiting;
                    requeued = true;
                    pos[j] = snap.waiting.len();
                    let p = &plans[j];
                    snap.waiting.push(WaitingRun {
                        id: run,
                        project: p.project,
                        cluster: ClusterId(1),
                        model: p.model,
                        gpus: p.gpus,
                        // Requeued from this moment, as the service does (docs/design.md 2).
                        submitted_at: t,
                        min_runtime_s: p.min_runtime.min(remaining[j]),
                        time_limit_s: remaining[j].max(1),
                        priority: p.priority,
                    });
                }
                Decision::Start {
                    run,
                    placement,
                    contract,
                    non_preemptible,
                    ..
                } => {
                    let j = run.0 as usize;
                    let w = snap.waiting[pos[j]].clone();
                    pos[j] = usize::MAX;
                    started_now += 1;
                    let pi = job_project[j];
                    let g = i64::from(plans[j].gpus);
                    if w.allocated() {
                        alloc[pi] += g;
                    }
                    open[j] = r.segments.len();
                    r.segment_jobs.push(j);
                    r.segments.push(Segment {
                        project: w.project.0,
                        gpus: plans[j].gpus,
                        start: t,
                        end: t,
                        allocated: w.allocated(),
                    });
                    state[j] = State::Running;
                    started_at[j] = t;
                    outcome[j].first_start.get_or_insert(t);
                    ends.push(Reverse((t + remaining[j].max(1), j, generation[j])));
                    if kind == PolicyKind::Tranche && w.min_runtime_s > 0 {
                        protections.push(Reverse((t + w.min_runtime_s, j, generation[j])));
                    }
                    let at = snap.running.partition_point(|r| r.id < run);
                    snap.running.insert(
                        at,
                        RunningRun {
                            id: run,
                            project: w.project,
                            cluster: w.cluster,
                            model: w.model,
                            placement,
                            started_at: t,
                            min_runtime_s: w.min_runtime_s,
                            time_limit_s: w.time_limit_s,
                            priority: w.priority,
                            contract,
                            non_preemptible,
                        },
                    );
                }
                Decision::Adopt { run, contract } => {
                    let at = snap.running.partition_point(|r| r.id < run);
                    if let Some(rr) = snap.running.get_mut(at).filter(|rr| rr.id == run) {
                        rr.contract = Some(contract);
                    }
                }
                Decision::Reserve { .. } => {}
            }
        }
        if started_now > 0 || requeued {
            follow_up = Some(t + FOLLOW_UP_S);
            // Keep the waiting list in id order, as the live service lists it: the pass then
            // orders it by counting sort and places its results by index. Requeued runs were
            // appended; a stable sort merges that sorted tail in linear time.
            if requeued {
                snap.waiting.sort_by_key(|w| w.id);
            }
            snap.waiting
                .retain(|w| state[w.id.0 as usize] == State::Waiting);
            for (i, w) in snap.waiting.iter().enumerate() {
                pos[w.id.0 as usize] = i;
            }
        }
    }
    tick(next_arrival as u64);
    r.end = now;
    for &k in &open {
        if k != usize::MAX {
            r.segments[k].end = now;
        }
    }
    r.jobs = outcome;
    r
}

/// The replay as a [`crate::metrics::History`] of the whole simulated cluster: every GPU
/// healthy throughout the window, entitlements over all its GPUs, each job a run present from
/// its submission to its end (or the replay's end), its attempts the segments, no agent reports.
pub fn history(site: &Site, plans: &[Plan], rep: &Replay, window: (i64, i64)) -> History {
    History {
        window,
        end: rep.end,
        capacity_gpus: f64::from(site.gpus),
        capacity_before: Vec::new(),
        health: vec![HealthSpan {
            from: window.0,
            to: window.1,
            installed: site.gpus,
            healthy: site.gpus,
        }],
        projects: site
            .effective
            .iter()
            .map(|(id, eff)| ProjectShare {
                id: id.0,
                name: site.names.get(id).cloned().unwrap_or_default(),
                effective_share: *eff,
                before: Vec::new(),
            })
            .collect(),
        runs: plans
            .iter()
            .zip(&rep.jobs)
            .filter(|(_, o)| !o.rejected)
            .map(|(p, o)| RunRecord {
                project: p.project.0,
                gpus: p.gpus,
                submitted_at: p.submit,
                queued_at: p.submit,
                first_start: o.first_start,
                ended_at: o.end,
                min_runtime_s: p.min_runtime,
            })
            .collect(),
        segments: rep.segments.clone(),
        preemptions: rep.preempted_at.clone(),
        utilization: None,
    }
}

pub use crate::metrics::quantile;

/// Summary of one policy's replay, as printed and as `--json` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    /// Policy name.
    pub policy: String,
    /// Job counts.
    pub jobs: JobCounts,
    /// Allocated + unallocated GPU-time over available GPU-time in the window.
    pub occupancy: f64,
    /// Unallocated share of it.
    pub occupancy_unallocated: f64,
    /// sum over projects and hours of min(received, owed) / sum(owed).
    pub impact: f64,
    /// Share of projects owed something that received at least 95% of it.
    pub projects_served_share: Option<f64>,
    /// Queue waits by class (debug, protected, unallocated), as the live metrics give them.
    pub class_waits: ClassWaits,
    /// An upper bound on `impact` for this replay: sum over projects of min(owed, the most it
    /// could receive) / sum(owed), where the most a project could receive is the GPU-seconds of
    /// its jobs' work plus the work it redid after preemptions (see [`impact_upper_bound`]).
    pub impact_upper_bound: f64,
    /// Preemptions inside the window per 1,000 GPU-hours of occupied (allocated + unallocated)
    /// GPU-time.
    pub preemptions_per_1000_gpu_hours: f64,
    /// How well the first estimated start of waiting runs foretold their real start.
    pub estimates: Estimates,
    /// Queue wait of started jobs, s.
    pub wait_s: Quantiles,
    /// Queue wait of small jobs (1 GPU, under 15 minutes), s.
    pub small_wait_s: Quantiles,
    /// Mean completion time (end - submit) of completed jobs, s.
    pub jct_mean_s: f64,
    /// GPU-hours idle inside the window while runs waited ([`idle_while_waiting_gpu_hours`]).
    pub idle_while_waiting_gpu_hours: f64,
    /// Preemptions.
    pub preemptions: u64,
    /// GPU-hours of work lost to preemption.
    pub preempted_gpu_hours: f64,
    /// Scheduling passes run.
    pub passes: u64,
    /// Per project owed and received GPU-hours.
    pub projects: Vec<ProjectLine>,
}

/// Accuracy of estimated starts: for runs that waited and were given an estimate, the error
/// |first estimate - real first start|, and how many estimates were later than the real start.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Estimates {
    /// Runs that waited (started later than submitted, or never started).
    pub waited: u64,
    /// Of them, runs that were given an estimate and started.
    pub estimated: u64,
    /// Error quantiles over those, s.
    pub error_s: Quantiles,
    /// Share of those whose estimate was later than the real start.
    pub late_share: f64,
    /// Runs whose first estimate came with a reservation and that started.
    pub reserved: u64,
    /// Error quantiles over those, s.
    pub reserved_error_s: Quantiles,
    /// Share of those whose estimate was later than the real start.
    pub reserved_late_share: f64,
}

/// Error quantiles and late share of (estimate, real start) pairs.
fn estimate_errors(pairs: &[(i64, i64)]) -> (Quantiles, f64) {
    let mut e: Vec<f64> = pairs.iter().map(|(a, b)| (a - b).abs() as f64).collect();
    e.sort_by(f64::total_cmp);
    let late = pairs.iter().filter(|(a, b)| a > b).count();
    (
        Quantiles {
            p50: quantile(&e, 0.5),
            p90: quantile(&e, 0.9),
        },
        if pairs.is_empty() {
            0.0
        } else {
            late as f64 / pairs.len() as f64
        },
    )
}

/// The impact upper bound of a replay.
///
/// Per project, sum over hours of min(received, owed) is at most min(sum of received, sum of
/// owed); and received (allocated GPU-seconds delivered) is at most the GPU-seconds of the
/// project's jobs (GPUs x duration) plus the work it redid after preemptions, whatever the
/// policy. So sum over projects of min(owed, work + redone) / sum(owed) bounds impact from
/// above. The cluster's capacity never binds hour by hour: owed is capped at the entitlement,
/// and entitlements sum to at most the cluster.
pub fn impact_upper_bound(site: &Site, plans: &[Plan], rep: &Replay, fig: &Figures) -> f64 {
    let owed: BTreeMap<i64, f64> = fig
        .projects
        .iter()
        .map(|p| (p.id, p.owed_gpu_hours * 3600.0))
        .collect();
    let mut work: BTreeMap<ProjectId, f64> = BTreeMap::new();
    for (p, o) in plans.iter().zip(&rep.jobs) {
        if !o.rejected && p.min_runtime > 0 {
            *work.entry(p.project).or_default() += f64::from(p.gpus) * p.duration as f64;
        }
    }
    let mut num = 0f64;
    let mut den = 0f64;
    for id in site.effective.keys() {
        let o = owed.get(&id.0).copied().unwrap_or(0.0);
        let w = work.get(id).copied().unwrap_or(0.0)
            + rep.lost_by_project.get(id).copied().unwrap_or(0.0);
        num += o.min(w);
        den += o;
    }
    if den > 0.0 { num / den } else { 1.0 }
}

/// GPU-hours left idle inside `window` while at least one run waited: the integral over the
/// window of (installed GPUs - GPUs held) over the instants some job was submitted and not
/// holding GPUs (before its first start, between a preemption and its next start, or never
/// started). Rejected jobs never wait. A measure of work conservation: a policy that lets a
/// waiting gang hold the queue while GPUs stand idle scores high, one that keeps every GPU
/// busy while work waits scores 0. Not one of the four metrics (docs/design.md section 5); it
/// shows what a policy's waits were spent on.
pub fn idle_while_waiting_gpu_hours(
    site: &Site,
    plans: &[Plan],
    rep: &Replay,
    window: (i64, i64),
) -> f64 {
    // (instant, change of GPUs held, change of waiting runs)
    let mut ev: Vec<(i64, i64, i64)> = Vec::with_capacity(2 * (plans.len() + rep.segments.len()));
    let mut by_job: Vec<Vec<(i64, i64)>> = vec![Vec::new(); plans.len()];
    for (seg, &j) in rep.segments.iter().zip(&rep.segment_jobs) {
        ev.push((seg.start, i64::from(seg.gpus), 0));
        ev.push((seg.end, -i64::from(seg.gpus), 0));
        by_job[j].push((seg.start, seg.end));
    }
    for ((p, o), segs) in plans.iter().zip(&rep.jobs).zip(&mut by_job) {
        if o.rejected {
            continue;
        }
        segs.sort_unstable();
        let mut from = p.submit;
        for &(start, end) in segs.iter() {
            if start > from {
                ev.push((from, 0, 1));
                ev.push((start, 0, -1));
            }
            from = end;
        }
        // Still waiting after its last attempt: never started, or preempted and not restarted.
        if o.end.is_none() && from < rep.end {
            ev.push((from, 0, 1));
            ev.push((rep.end, 0, -1));
        }
    }
    ev.sort_unstable();
    let installed = i64::from(site.gpus);
    let (mut held, mut waiting, mut idle_s) = (0i64, 0i64, 0i128);
    let mut at = window.0;
    for (t, dh, dw) in ev {
        let t = t.clamp(window.0, window.1);
        if waiting > 0 && t > at {
            idle_s += i128::from((installed - held).max(0)) * i128::from(t - at);
        }
        at = at.max(t);
        held += dh;
        waiting += dw;
    }
    idle_s as f64 / 3600.0
}

/// Job counts.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct JobCounts {
    /// Jobs in the trace.
    pub total: u64,
    /// Completed.
    pub completed: u64,
    /// Not completed at the end (never started, or stranded).
    pub waiting: u64,
    /// Larger than the cluster.
    pub rejected: u64,
}

/// p50 and p90.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
}

/// One project's line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProjectLine {
    /// Name.
    pub project: String,
    /// Effective share.
    pub share: f64,
    /// Owed GPU-hours.
    pub owed_gpu_hours: f64,
    /// Received (allocated) GPU-hours.
    pub received_gpu_hours: f64,
}

/// Computes the summary of a replay.
pub fn summarize(site: &Site, plans: &[Plan], rep: &Replay, window: (i64, i64)) -> Summary {
    let mut counts = JobCounts {
        total: plans.len() as u64,
        completed: 0,
        waiting: 0,
        rejected: 0,
    };
    let mut small = Vec::new();
    let mut jct = 0f64;
    let mut est = Estimates::default();
    let mut all_pairs = Vec::new();
    let mut reserved_pairs = Vec::new();
    for (j, (p, o)) in plans.iter().zip(&rep.jobs).enumerate() {
        if o.rejected {
            counts.rejected += 1;
            continue;
        }
        if o.first_start.is_none_or(|s| s > p.submit) {
            est.waited += 1;
            if let (Some(s), Some((e, reserved))) = (o.first_start, rep.first_estimate[j]) {
                all_pairs.push((e, s));
                if reserved {
                    reserved_pairs.push((e, s));
                }
            }
        }
        match o.end {
            Some(e) => {
                counts.completed += 1;
                jct += (e - p.submit) as f64;
            }
            None => counts.waiting += 1,
        }
        if let Some(s) = o.first_start
            && is_small(p.gpus, p.duration)
        {
            small.push((s - p.submit) as f64);
        }
    }
    small.sort_by(f64::total_cmp);
    est.estimated = all_pairs.len() as u64;
    (est.error_s, est.late_share) = estimate_errors(&all_pairs);
    est.reserved = reserved_pairs.len() as u64;
    (est.reserved_error_s, est.reserved_late_share) = estimate_errors(&reserved_pairs);
    let fig = compute(&history(site, plans, rep, window));
    let upper = impact_upper_bound(site, plans, rep, &fig);
    let by_id: BTreeMap<i64, &crate::metrics::ProjectFigures> =
        fig.projects.iter().map(|p| (p.id, p)).collect();
    let projects = site
        .names
        .iter()
        .map(|(id, name)| ProjectLine {
            project: name.clone(),
            share: site.effective[id],
            owed_gpu_hours: by_id.get(&id.0).map_or(0.0, |p| p.owed_gpu_hours),
            received_gpu_hours: by_id.get(&id.0).map_or(0.0, |p| p.received_gpu_hours),
        })
        .collect();
    Summary {
        policy: match rep.kind {
            PolicyKind::Tranche => "tranche",
            PolicyKind::Fifo => "fifo",
            PolicyKind::Legacy => "legacy",
        }
        .to_string(),
        jobs: counts,
        occupancy: fig.occupancy.unwrap_or(0.0),
        occupancy_unallocated: fig.occupancy_unallocated.unwrap_or(0.0),
        impact: fig.impact,
        projects_served_share: fig.projects_served_share,
        impact_upper_bound: upper,
        preemptions_per_1000_gpu_hours: fig.preemptions_per_1000_gpu_hours,
        class_waits: fig.waits,
        estimates: est,
        wait_s: Quantiles {
            p50: fig.waits.all.p50_s,
            p90: fig.waits.all.p90_s,
        },
        small_wait_s: Quantiles {
            p50: quantile(&small, 0.5),
            p90: quantile(&small, 0.9),
        },
        jct_mean_s: if counts.completed > 0 {
            jct / counts.completed as f64
        } else {
            0.0
        },
        idle_while_waiting_gpu_hours: idle_while_waiting_gpu_hours(site, plans, rep, window),
        preemptions: rep.preemptions,
        preempted_gpu_hours: rep.lost_gpu_s / 3600.0,
        passes: rep.passes,
        projects,
    }
}
