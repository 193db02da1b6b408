//! The event-jumping replay: a virtual clock that jumps from event to event (arrivals batched
//! per instant, run ends, minimum-runtime expiries while runs wait) and calls the same
//! [`crate::scheduler::schedule`] at each, applying its decisions with a zero grace period.
//!
//! Fair-share usage decays exponentially with a time constant of the 7-day window:
//! `U(t + d) = U(t) e^(-d/T) + g T (1 - e^(-d/T))` for a project holding `g` allocated GPUs
//! during `d` (exact for piecewise-constant allocation).

use super::setup::{Plan, Site, is_small};
use crate::scheduler::{
    ClusterId, Decision, PolicyKind, ProjectId, RunId, RunningRun, WaitingRun, schedule,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Seconds of run time between checkpoints of a resumable job.
pub const CHECKPOINT_S: i64 = 1_800;
/// Fair-share window (time constant of the decay), s.
pub const WINDOW_S: f64 = 7.0 * 86_400.0;

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
    /// Allocated GPU-seconds inside the measurement window.
    pub occupied_alloc_s: f64,
    /// Unallocated GPU-seconds inside the window.
    pub occupied_unalloc_s: f64,
    /// Allocated GPU-seconds per project inside the window.
    pub received_s: BTreeMap<ProjectId, f64>,
    /// Allocated GPU-seconds per project and hour of the window.
    pub received_hourly: BTreeMap<ProjectId, Vec<f64>>,
    /// Preemptions.
    pub preemptions: u64,
    /// GPU-seconds of work lost to preemption.
    pub lost_gpu_s: f64,
    /// Scheduling passes run.
    pub passes: u64,
    /// Instant the replay ended.
    pub end: i64,
    /// Per job: the first estimated start a pass gave it, and whether that estimate came with
    /// a reservation ([`crate::scheduler::WaitReason::reserved_at`]).
    pub first_estimate: Vec<Option<(i64, bool)>>,
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
    // Position of each job in snap.running / snap.waiting.
    let mut pos = vec![usize::MAX; n];
    let mut ends: BinaryHeap<Reverse<(i64, usize, u32)>> = BinaryHeap::new();
    let mut protections: BinaryHeap<Reverse<(i64, usize, u32)>> = BinaryHeap::new();
    let mut usage = vec![0f64; np];
    let mut alloc = vec![0i64; np];
    let mut unalloc_total = 0i64;
    let mut received = vec![0f64; np];
    let hours = ((window.1 - window.0).max(1) as usize).div_ceil(3600);
    let mut hourly = vec![vec![0f64; hours]; np];
    let mut r = Replay {
        kind,
        jobs: Vec::new(),
        occupied_alloc_s: 0.0,
        occupied_unalloc_s: 0.0,
        received_s: BTreeMap::new(),
        received_hourly: BTreeMap::new(),
        preemptions: 0,
        lost_gpu_s: 0.0,
        passes: 0,
        end: window.0,
        first_estimate: vec![None; n],
        lost_by_project: BTreeMap::new(),
    };
    let mut next_arrival = 0usize;
    let mut now = plans.first().map_or(0, |p| p.submit);
    let mut iterations = 0u64;

    fn remove_at<T>(v: &mut Vec<T>, pos: &mut [usize], j: usize, id_of: impl Fn(&T) -> usize) -> T {
        let i = pos[j];
        pos[j] = usize::MAX;
        let item = v.swap_remove(i);
        if i < v.len() {
            pos[id_of(&v[i])] = i;
        }
        item
    }

    loop {
        let t_arr = plans.get(next_arrival).map(|p| p.submit);
        let t_end = ends.peek().map(|Reverse((t, _, _))| *t);
        let t_prot = if snap.waiting.is_empty() {
            None
        } else {
            protections.peek().map(|Reverse((t, _, _))| *t)
        };
        let Some(t) = [t_arr, t_end, t_prot].into_iter().flatten().min() else {
            break;
        };
        // Advance the clock: usage decay and metrics.
        let d = (t - now) as f64;
        if d > 0.0 {
            let f = (-d / WINDOW_S).exp();
            for i in 0..np {
                usage[i] = usage[i] * f + alloc[i] as f64 * WINDOW_S * (1.0 - f);
            }
            let lo = now.max(window.0);
            let hi = t.min(window.1);
            if hi > lo {
                let dw = (hi - lo) as f64;
                let total: i64 = alloc.iter().sum();
                r.occupied_alloc_s += total as f64 * dw;
                r.occupied_unalloc_s += unalloc_total as f64 * dw;
                for i in 0..np {
                    if alloc[i] == 0 {
                        continue;
                    }
                    received[i] += alloc[i] as f64 * dw;
                    let mut a = lo;
                    while a < hi {
                        let h = ((a - window.0) / 3600) as usize;
                        let b = (window.0 + (h as i64 + 1) * 3600).min(hi);
                        hourly[i][h.min(hours - 1)] += alloc[i] as f64 * (b - a) as f64;
                        a = b;
                    }
                }
            }
            now = t;
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
            let run = remove_at(&mut snap.running, &mut pos, j, |x| x.id.0 as usize);
            pos[j] = usize::MAX;
            let pi = proj_index[&plans[j].project];
            if run.allocated() {
                alloc[pi] -= i64::from(plans[j].gpus);
            } else {
                unalloc_total -= i64::from(plans[j].gpus);
            }
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
        let out = schedule(&snap, t);
        r.passes += 1;
        for w in &out.waiting {
            let j = w.run.0 as usize;
            if let Some(e) = w.estimated_start
                && r.first_estimate[j].is_none()
            {
                let reserved = w.reason.reserved_at().is_some();
                r.first_estimate[j] = Some((e, reserved));
            }
        }
        let mut started_now = 0usize;
        let mut requeued = false;
        for d in out.decisions {
            match d {
                Decision::Preempt { run, .. } => {
                    let j = run.0 as usize;
                    let rr = remove_at(&mut snap.running, &mut pos, j, |x| x.id.0 as usize);
                    let pi = proj_index[&plans[j].project];
                    let g = i64::from(plans[j].gpus);
                    if rr.allocated() {
                        alloc[pi] -= g;
                    } else {
                        unalloc_total -= g;
                    }
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
                        submitted_at: p.submit,
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
                } => {
                    let j = run.0 as usize;
                    let w = snap.waiting[pos[j]].clone();
                    pos[j] = usize::MAX;
                    started_now += 1;
                    let pi = proj_index[&plans[j].project];
                    let g = i64::from(plans[j].gpus);
                    if w.allocated() {
                        alloc[pi] += g;
                    } else {
                        unalloc_total += g;
                    }
                    state[j] = State::Running;
                    started_at[j] = t;
                    outcome[j].first_start.get_or_insert(t);
                    ends.push(Reverse((t + remaining[j].max(1), j, generation[j])));
                    if kind == PolicyKind::Tranche && w.min_runtime_s > 0 {
                        protections.push(Reverse((t + w.min_runtime_s, j, generation[j])));
                    }
                    pos[j] = snap.running.len();
                    snap.running.push(RunningRun {
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
                    });
                }
                Decision::Reserve { .. } => {}
            }
        }
        if started_now > 0 || requeued {
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
    r.received_s = snap
        .projects
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id, received[i]))
        .collect();
    r.received_hourly = snap
        .projects
        .iter()
        .zip(hourly)
        .map(|(p, h)| (p.id, h))
        .collect();
    r.jobs = outcome;
    r
}

/// Owed GPU-seconds per project (docs/design.md section 5): hour by hour inside the window, the
/// project's entitlement (effective share x cluster GPUs x 3600) capped at its real demand in
/// that hour, the GPU-seconds its jobs were present (submitted, not yet completed) under this
/// policy. Returns, per project, (owed, the part of it received in the same hours).
pub fn owed(
    site: &Site,
    plans: &[Plan],
    rep: &Replay,
    window: (i64, i64),
) -> BTreeMap<ProjectId, (f64, f64)> {
    let mut events: BTreeMap<ProjectId, Vec<(i64, i64)>> = BTreeMap::new();
    for (p, o) in plans.iter().zip(&rep.jobs) {
        if o.rejected {
            continue;
        }
        let end = o.end.unwrap_or(rep.end).max(p.submit);
        let e = events.entry(p.project).or_default();
        e.push((p.submit, i64::from(p.gpus)));
        e.push((end, -i64::from(p.gpus)));
    }
    let mut out = BTreeMap::new();
    for (&proj, eff) in &site.effective {
        let ent_per_s = eff * f64::from(site.gpus);
        let mut ev = events.remove(&proj).unwrap_or_default();
        ev.sort_unstable();
        let mut total = 0f64;
        let mut matched = 0f64;
        let got = rep.received_hourly.get(&proj);
        let mut h_index = 0usize;
        let mut level = 0i64;
        let mut i = 0;
        let mut hour = window.0;
        while hour < window.1 {
            let hend = (hour + 3600).min(window.1);
            let mut demand = 0f64;
            let mut t = hour;
            // Apply events before the hour.
            while i < ev.len() && ev[i].0 <= t {
                level += ev[i].1;
                i += 1;
            }
            while i < ev.len() && ev[i].0 < hend {
                demand += level as f64 * (ev[i].0 - t) as f64;
                t = ev[i].0;
                level += ev[i].1;
                i += 1;
            }
            demand += level as f64 * (hend - t) as f64;
            let owed_h = demand.min(ent_per_s * (hend - hour) as f64);
            total += owed_h;
            matched += owed_h.min(got.and_then(|g| g.get(h_index)).copied().unwrap_or(0.0));
            h_index += 1;
            hour = hend;
        }
        out.insert(proj, (total, matched));
    }
    out
}

/// Quantile (nearest rank) of a sorted slice; 0 when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

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
    /// An upper bound on `impact` for this replay: sum over projects of min(owed, the most it
    /// could receive) / sum(owed), where the most a project could receive is the GPU-seconds of
    /// its jobs' work plus the work it redid after preemptions (see [`impact_upper_bound`]).
    pub impact_upper_bound: f64,
    /// Preemptions per 1,000 GPU-hours of occupied (allocated + unallocated) GPU-time.
    pub preemptions_per_1000_gpu_hours: f64,
    /// How well the first estimated start of waiting runs foretold their real start.
    pub estimates: Estimates,
    /// Queue wait of started jobs, s.
    pub wait_s: Quantiles,
    /// Queue wait of small jobs (1 GPU, under 15 minutes), s.
    pub small_wait_s: Quantiles,
    /// Mean completion time (end - submit) of completed jobs, s.
    pub jct_mean_s: f64,
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
pub fn impact_upper_bound(
    site: &Site,
    plans: &[Plan],
    rep: &Replay,
    owed: &BTreeMap<ProjectId, (f64, f64)>,
) -> f64 {
    let mut work: BTreeMap<ProjectId, f64> = BTreeMap::new();
    for (p, o) in plans.iter().zip(&rep.jobs) {
        if !o.rejected && p.min_runtime > 0 {
            *work.entry(p.project).or_default() += f64::from(p.gpus) * p.duration as f64;
        }
    }
    let mut num = 0f64;
    let mut den = 0f64;
    for id in site.effective.keys() {
        let o = owed.get(id).map_or(0.0, |o| o.0);
        let w = work.get(id).copied().unwrap_or(0.0)
            + rep.lost_by_project.get(id).copied().unwrap_or(0.0);
        num += o.min(w);
        den += o;
    }
    if den > 0.0 { num / den } else { 1.0 }
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
    let mut waits = Vec::new();
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
        if let Some(s) = o.first_start {
            let w = (s - p.submit) as f64;
            waits.push(w);
            if is_small(p.gpus, p.duration) {
                small.push(w);
            }
        }
    }
    waits.sort_by(f64::total_cmp);
    small.sort_by(f64::total_cmp);
    est.estimated = all_pairs.len() as u64;
    (est.error_s, est.late_share) = estimate_errors(&all_pairs);
    est.reserved = reserved_pairs.len() as u64;
    (est.reserved_error_s, est.reserved_late_share) = estimate_errors(&reserved_pairs);
    let available = f64::from(site.gpus) * (window.1 - window.0).max(1) as f64;
    let owed = owed(site, plans, rep, window);
    let upper = impact_upper_bound(site, plans, rep, &owed);
    let occupied_h = (rep.occupied_alloc_s + rep.occupied_unalloc_s) / 3600.0;
    let owed_sum: f64 = owed.values().map(|o| o.0).sum();
    let got: f64 = owed.values().map(|o| o.1).sum();
    let projects = site
        .names
        .iter()
        .map(|(id, name)| ProjectLine {
            project: name.clone(),
            share: site.effective[id],
            owed_gpu_hours: owed.get(id).map_or(0.0, |o| o.0) / 3600.0,
            received_gpu_hours: rep.received_s.get(id).copied().unwrap_or(0.0) / 3600.0,
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
        occupancy: (rep.occupied_alloc_s + rep.occupied_unalloc_s) / available,
        occupancy_unallocated: rep.occupied_unalloc_s / available,
        impact: if owed_sum > 0.0 { got / owed_sum } else { 1.0 },
        impact_upper_bound: upper,
        preemptions_per_1000_gpu_hours: if occupied_h > 0.0 {
            rep.preemptions as f64 * 1000.0 / occupied_h
        } else {
            0.0
        },
        estimates: est,
        wait_s: Quantiles {
            p50: quantile(&waits, 0.5),
            p90: quantile(&waits, 0.9),
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
        preemptions: rep.preemptions,
        preempted_gpu_hours: rep.lost_gpu_s / 3600.0,
        passes: rep.passes,
        projects,
    }
}
