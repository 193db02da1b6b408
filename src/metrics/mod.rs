//! The four metrics of docs/design.md section 5 (availability, occupancy, impact, utilization),
//! the queue waits by class and the preemption rate, defined once.
//!
//! [`compute`] is a pure function of a [`History`]: what GPUs a pool had and which were
//! healthy, which runs were present, when each attempt held its GPUs, when runs were preempted,
//! and what the agents reported. `tranche simulate` builds the history from its replay
//! ([`crate::sim::replay`]); the live system from PostgreSQL ([`history`]); so the two can never
//! disagree on a definition. No I/O, no clock.
//!
//! - [`history`]: the history of a cluster and GPU model from the database.
//! - [`record`]: writes a replay into the database as past runs (the demo's history).
//! - [`prom`]: the Prometheus exposition at `/metrics`.

pub mod history;
pub mod prom;
pub mod record;

use std::collections::BTreeMap;

/// Minimum runtime at or below which an allocated run is a debug run, s (docs/design.md
/// section 5: "debug = min runtime <= 15 min").
pub const DEBUG_MAX_MIN_RUNTIME_S: i64 = 900;

/// Share of what it was owed a project must receive to count as served (the published
/// rollout's "teams received 98% of the GPU-hours they were owed" is read per project at 95%).
pub const SERVED_FRACTION: f64 = 0.95;

/// A stretch of time with a pool's installed and healthy GPUs: `[from, to)`, s since the epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthSpan {
    /// Start, s.
    pub from: i64,
    /// End (exclusive), s.
    pub to: i64,
    /// GPUs declared in the pool.
    pub installed: u32,
    /// Of them, GPUs on nodes that are up and served by a live agent.
    pub healthy: u32,
}

/// A project (leaf of the program tree) and its effective share of the pool.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProjectShare {
    /// Tree node id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Effective share, a fraction 0..=1 (product of shares from the root): from the last
    /// instant of [`ProjectShare::before`] on, or over the whole window when it is empty.
    pub effective_share: f64,
    /// Earlier shares, ascending by instant: `(until, share)` is the share of hours starting
    /// before `until` (s) and at or after the previous entry's (ended budget periods, whose
    /// tree is the one they ended with: `db::tree::load_period`).
    pub before: Vec<(i64, f64)>,
}

impl ProjectShare {
    /// The effective share of the hour starting at `at` (s).
    #[must_use]
    pub fn share_at(&self, at: i64) -> f64 {
        self.before
            .iter()
            .find(|(until, _)| at < *until)
            .map_or(self.effective_share, |(_, s)| *s)
    }
}

/// One run as the queue saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunRecord {
    /// Project (tree node id).
    pub project: i64,
    /// GPUs (the gang).
    pub gpus: u32,
    /// Submitted, s: the run is present (its project's demand) from then.
    pub submitted_at: i64,
    /// First entered the queue (submission, or approval when it needed one), s: its wait starts.
    pub queued_at: i64,
    /// First start, if any, s.
    pub first_start: Option<i64>,
    /// Ended (finished, failed, cancelled, denied...), if it has, s.
    pub ended_at: Option<i64>,
    /// Minimum runtime, s: 0 is unallocated, up to [`DEBUG_MAX_MIN_RUNTIME_S`] debug, above
    /// that protected.
    pub min_runtime_s: i64,
}

/// A stretch during which one attempt of a run held its GPUs: `[start, end)`, s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Project.
    pub project: i64,
    /// GPUs held.
    pub gpus: u32,
    /// Start, s.
    pub start: i64,
    /// End (exclusive), s.
    pub end: i64,
    /// Allocated (charged, counted in fair share and as received) or unallocated (free).
    pub allocated: bool,
}

/// What node agents reported for the GPUs runs held: busy and observed GPU-seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Utilization {
    /// Sum over reports of (seconds since the previous report x busy fraction of each held GPU).
    pub busy_gpu_s: f64,
    /// Sum over reports of (seconds since the previous report x held GPUs with a reading).
    pub observed_gpu_s: f64,
}

/// Everything the metrics are computed from, for one pool (a cluster's GPUs of one model, or
/// the whole simulated cluster).
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Measurement window `[from, to)`, s since the epoch.
    pub window: (i64, i64),
    /// When the history was taken, s: runs not ended are present until then.
    pub end: i64,
    /// GPUs that entitlements divide (effective share x this = a project's entitlement in GPUs)
    /// for time [`History::health`] does not cover; elsewhere they divide the installed GPUs of
    /// each span, so a past hour's entitlement is that of the GPUs installed then.
    pub capacity_gpus: f64,
    /// Earlier values of [`History::capacity_gpus`], ascending by instant: `(until, gpus)`
    /// holds for hours starting before `until` (s) and at or after the previous entry's
    /// (ended budget periods, with the capacity recorded for them).
    pub capacity_before: Vec<(i64, f64)>,
    /// Installed and healthy GPUs over time. Time no span covers is not measured (it counts
    /// neither as installed nor as healthy).
    pub health: Vec<HealthSpan>,
    /// Projects and their shares.
    pub projects: Vec<ProjectShare>,
    /// Runs (those submitted inside the window count for the waits; all count for demand).
    pub runs: Vec<RunRecord>,
    /// Attempts holding GPUs.
    pub segments: Vec<Segment>,
    /// Instants of preemptions (runs stopped to give their GPUs to another run), s.
    pub preemptions: Vec<i64>,
    /// Agents' reports inside the window; `None` where there are none (the simulator).
    pub utilization: Option<Utilization>,
}

/// p50 and p90 of queue waits of one class, s (nearest rank, [`quantile`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Waits {
    /// Runs counted: submitted inside the window and started.
    pub runs: u64,
    /// Median, s.
    pub p50_s: f64,
    /// 90th percentile, s.
    pub p90_s: f64,
}

/// Queue waits by class (docs/design.md section 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ClassWaits {
    /// Every run.
    pub all: Waits,
    /// Allocated runs with a minimum runtime of at most 15 minutes.
    pub debug: Waits,
    /// Allocated runs with a longer minimum runtime.
    pub protected: Waits,
    /// Runs with no minimum runtime (free, preemptible).
    pub unallocated: Waits,
}

/// One project's owed and received GPU-hours.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProjectFigures {
    /// Tree node id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Effective share, fraction.
    pub share: f64,
    /// Owed: hour by hour, the entitlement capped at the project's demand, GPU-hours.
    pub owed_gpu_hours: f64,
    /// Received: allocated GPU-hours delivered in the window.
    pub received_gpu_hours: f64,
    /// Hour by hour min(received, owed), GPU-hours.
    pub received_of_owed_gpu_hours: f64,
    /// `received_of_owed / owed`; `None` when nothing was owed.
    pub impact: Option<f64>,
}

/// The figures of a window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Figures {
    /// Window start, s since the epoch.
    pub from: i64,
    /// Window end (exclusive), s.
    pub to: i64,
    /// Installed GPU-hours measured.
    pub installed_gpu_hours: f64,
    /// Healthy GPU-hours (the available GPU-time).
    pub healthy_gpu_hours: f64,
    /// Healthy / installed; `None` with nothing installed.
    pub availability: Option<f64>,
    /// GPU-hours assigned to allocated runs.
    pub allocated_gpu_hours: f64,
    /// GPU-hours assigned to unallocated runs.
    pub unallocated_gpu_hours: f64,
    /// Assigned / available (healthy) GPU-time; `None` with nothing available.
    pub occupancy: Option<f64>,
    /// The allocated part of it.
    pub occupancy_allocated: Option<f64>,
    /// The unallocated part of it.
    pub occupancy_unallocated: Option<f64>,
    /// Σ min(received, owed) / Σ owed over projects and hours; 1 when nothing was owed.
    pub impact: f64,
    /// Share of projects owed something that received at least 95% of it; `None` when none
    /// was owed anything.
    pub projects_served_share: Option<f64>,
    /// Per project.
    pub projects: Vec<ProjectFigures>,
    /// Queue waits by class.
    pub waits: ClassWaits,
    /// Preemptions inside the window.
    pub preemptions: u64,
    /// Preemptions per 1,000 assigned GPU-hours; 0 with none assigned.
    pub preemptions_per_1000_gpu_hours: f64,
    /// Busy GPU-seconds / observed GPU-seconds reported by agents; `None` without reports.
    pub utilization: Option<f64>,
    /// Observed / assigned GPU-time: how much of the assigned time agents reported on.
    pub utilization_coverage: Option<f64>,
}

/// Quantile (nearest rank: the smallest value with at least `q` of the values at or below it)
/// of a sorted slice; 0 when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

fn waits(mut v: Vec<f64>) -> Waits {
    v.sort_by(f64::total_cmp);
    Waits {
        runs: v.len() as u64,
        p50_s: quantile(&v, 0.5),
        p90_s: quantile(&v, 0.9),
    }
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

/// Seconds of `[a, b)` inside `[lo, hi)`.
/// Splits `[from, to)` inside the window `[w0, w1)` at the window's hour marks: `f(hour, s)`
/// for each piece, `hour` counted from `w0` (the last hour may be short).
fn by_hour((w0, w1): (i64, i64), from: i64, to: i64, mut f: impl FnMut(usize, i64)) {
    let (mut a, hi) = (from.max(w0), to.min(w1));
    while a < hi {
        let hr = ((a - w0) / 3600) as usize;
        let b = (w0 + (hr as i64 + 1) * 3600).min(hi);
        f(hr, b - a);
        a = b;
    }
}

fn overlap(a: i64, b: i64, lo: i64, hi: i64) -> i64 {
    (b.min(hi) - a.max(lo)).max(0)
}

/// Computes the figures of `h` (docs/design.md section 5):
///
/// - availability = healthy GPU-time / installed GPU-time (from [`History::health`]);
/// - occupancy = GPU-time of [`History::segments`] inside the window / healthy GPU-time, split
///   allocated and unallocated;
/// - impact: per project and hour of the window (the last hour may be short), owed =
///   min(demand, effective share x the GPU-seconds installed in that hour), where
///   demand is the GPU-seconds its runs were present (submitted, not ended); received = its
///   allocated GPU-seconds in that hour; impact = Σ min(received, owed) / Σ owed; a project is
///   served when its own ratio is at least [`SERVED_FRACTION`];
/// - waits: first start − first queued, of runs submitted inside `[from, to]` that started,
///   by class of minimum runtime;
/// - preemptions inside the window per 1,000 assigned GPU-hours;
/// - utilization = busy / observed GPU-seconds of the agents' reports.
pub fn compute(h: &History) -> Figures {
    let (w0, w1) = h.window;
    let w1 = w1.max(w0);
    let mut installed = 0f64;
    let mut healthy = 0f64;
    for s in &h.health {
        let d = overlap(s.from, s.to, w0, w1) as f64;
        installed += d * f64::from(s.installed);
        healthy += d * f64::from(s.healthy.min(s.installed));
    }
    let hours = ((w1 - w0).max(0) as usize).div_ceil(3600);
    let index: BTreeMap<i64, usize> = h
        .projects
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id, i))
        .collect();
    let np = h.projects.len();
    let mut received_hourly = vec![vec![0f64; hours]; np];
    let mut alloc = 0f64;
    let mut unalloc = 0f64;
    for s in &h.segments {
        let d = overlap(s.start, s.end, w0, w1);
        if d == 0 {
            continue;
        }
        let g = f64::from(s.gpus);
        if !s.allocated {
            unalloc += g * d as f64;
            continue;
        }
        alloc += g * d as f64;
        let Some(&pi) = index.get(&s.project) else {
            continue;
        };
        by_hour((w0, w1), s.start, s.end, |hr, secs| {
            received_hourly[pi][hr] += g * secs as f64;
        });
    }
    // Demand per project as +gpus / -gpus events.
    let mut events: Vec<Vec<(i64, i64)>> = vec![Vec::new(); np];
    for r in &h.runs {
        let Some(&pi) = index.get(&r.project) else {
            continue;
        };
        let end = r.ended_at.unwrap_or(h.end).max(r.submitted_at);
        events[pi].push((r.submitted_at, i64::from(r.gpus)));
        events[pi].push((end, -i64::from(r.gpus)));
    }
    // GPU-seconds entitlements divide, hour by hour: the installed GPUs the health samples
    // record, and `capacity_gpus` for time no sample covers.
    let mut capacity_hourly = vec![0f64; hours];
    let mut covered_hourly = vec![0i64; hours];
    for s in &h.health {
        by_hour((w0, w1), s.from, s.to, |hr, secs| {
            capacity_hourly[hr] += f64::from(s.installed) * secs as f64;
            covered_hourly[hr] += secs;
        });
    }
    for (hr, c) in capacity_hourly.iter_mut().enumerate() {
        let start = w0 + hr as i64 * 3600;
        let len = ((start + 3600).min(w1) - start) as f64;
        let gpus = h
            .capacity_before
            .iter()
            .find(|(until, _)| start < *until)
            .map_or(h.capacity_gpus, |(_, g)| *g);
        *c += (len - covered_hourly[hr] as f64).max(0.0) * gpus;
    }
    let mut projects = Vec::with_capacity(np);
    let (mut owed_sum, mut got_sum) = (0f64, 0f64);
    let (mut owed_projects, mut served) = (0u64, 0u64);
    for (pi, p) in h.projects.iter().enumerate() {
        let ev = &mut events[pi];
        ev.sort_unstable();
        let (mut owed, mut matched) = (0f64, 0f64);
        let (mut level, mut i) = (0i64, 0usize);
        let mut hour = w0;
        let mut hi = 0usize;
        while hour < w1 {
            let hend = (hour + 3600).min(w1);
            let mut demand = 0f64;
            let mut t = hour;
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
            let owed_h = demand.min(p.share_at(hour) * capacity_hourly[hi]);
            owed += owed_h;
            matched += owed_h.min(received_hourly[pi][hi]);
            hi += 1;
            hour = hend;
        }
        let received: f64 = received_hourly[pi].iter().sum();
        owed_sum += owed;
        got_sum += matched;
        let own = ratio(matched, owed);
        if let Some(x) = own {
            owed_projects += 1;
            if x >= SERVED_FRACTION - 1e-12 {
                served += 1;
            }
        }
        projects.push(ProjectFigures {
            id: p.id,
            name: p.name.clone(),
            share: p.effective_share,
            owed_gpu_hours: owed / 3600.0,
            received_gpu_hours: received / 3600.0,
            received_of_owed_gpu_hours: matched / 3600.0,
            impact: own,
        });
    }
    let (mut all, mut debug, mut protected, mut free) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in &h.runs {
        if r.submitted_at < w0 || r.submitted_at > w1 {
            continue;
        }
        let Some(s) = r.first_start else { continue };
        let w = (s - r.queued_at).max(0) as f64;
        all.push(w);
        if r.min_runtime_s == 0 {
            free.push(w);
        } else if r.min_runtime_s <= DEBUG_MAX_MIN_RUNTIME_S {
            debug.push(w);
        } else {
            protected.push(w);
        }
    }
    let preemptions = h.preemptions.iter().filter(|&&t| t >= w0 && t < w1).count() as u64;
    let assigned = alloc + unalloc;
    let assigned_h = assigned / 3600.0;
    let (utilization, coverage) = match h.utilization {
        Some(u) => (
            ratio(u.busy_gpu_s, u.observed_gpu_s),
            ratio(u.observed_gpu_s, assigned),
        ),
        None => (None, None),
    };
    Figures {
        from: w0,
        to: w1,
        installed_gpu_hours: installed / 3600.0,
        healthy_gpu_hours: healthy / 3600.0,
        availability: ratio(healthy, installed),
        allocated_gpu_hours: alloc / 3600.0,
        unallocated_gpu_hours: unalloc / 3600.0,
        occupancy: ratio(assigned, healthy),
        occupancy_allocated: ratio(alloc, healthy),
        occupancy_unallocated: ratio(unalloc, healthy),
        impact: ratio(got_sum, owed_sum).unwrap_or(1.0),
        projects_served_share: ratio(served as f64, owed_projects as f64),
        projects,
        waits: ClassWaits {
            all: waits(all),
            debug: waits(debug),
            protected: waits(protected),
            unallocated: waits(free),
        },
        preemptions,
        preemptions_per_1000_gpu_hours: if assigned_h > 0.0 {
            preemptions as f64 * 1000.0 / assigned_h
        } else {
            0.0
        },
        utilization,
        utilization_coverage: coverage,
    }
}

#[cfg(test)]
mod tests;
