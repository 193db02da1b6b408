//! `tranche simulate`: replays a job trace through the scheduling core on a virtual clock, side
//! by side for several policies, so a site can see a policy change before making it.
//!
//! - [`trace`]: loaders (`philly`, `itp`, `openb`, `native`) and the rules each follows.
//! - [`setup`]: the simulated cluster and tree (`--cluster`, `--tree`), defaults, and the
//!   mapping of trace jobs to runs per policy.
//! - [`replay`]: the event-jumping replay and the metrics of docs/design.md section 5.
//! - [`bench`]: `tranche bench schedule`.

pub mod bench;
pub mod replay;
pub mod setup;
pub mod trace;

use crate::scheduler::PolicyKind;
use replay::Summary;
use std::cmp::Reverse;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

/// Arguments of `tranche simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Path of the trace file.
    #[arg(long)]
    pub trace: PathBuf,
    /// Trace format.
    #[arg(long, value_enum)]
    pub format: trace::Format,
    /// Policies to compare, comma-separated: fifo, legacy, tranche.
    #[arg(long, value_delimiter = ',', default_value = "fifo,legacy,tranche")]
    pub policy: Vec<PolicyName>,
    /// Cluster: comma-separated MODEL:NODESxGPUS (default: the fewest 8-GPU nodes that put the
    /// trace's mean demand at or below 60% of capacity and hold its largest job, but no more
    /// than would hold every job at once; the output says the demand's share of the cluster).
    /// At most 64 GPUs per node and 100,000 GPUs in all.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Program tree: comma-separated PATH=PERCENT; leaves are the trace's tenants (default:
    /// flat, shares proportional to each tenant's GPU-hours).
    #[arg(long)]
    pub tree: Option<String>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Skip malformed rows (counted) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// Also write every job's outcome under every policy to this CSV file (one row per job and
    /// policy: submit, start, end, wait, first waiting reason and estimate).
    #[arg(long)]
    pub jobs_csv: Option<PathBuf>,
    /// Percent of short runs (time limit at most 15 minutes) that may find no GPU idle on
    /// arrival, which the idle GPUs each pool keeps for them are sized for under `tranche`
    /// (1 to 100; 100 keeps none; docs/design.md section 3.7).
    #[arg(long, default_value_t = crate::scheduler::DEFAULT_SHORT_RUN_BLOCKING_PERCENT,
          value_parser = clap::value_parser!(u8).range(1..=100))]
    pub short_run_blocking_percent: u8,
}

/// One job's outcome under one policy: a row of `--jobs-csv`. Instants are the trace's
/// seconds; a job that never started has no `first_start` and no `wait_s`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JobRow {
    /// `fifo`, `legacy` or `tranche`.
    pub policy: String,
    /// The job's place in the replay (0-based): the trace's jobs sorted by submission, then
    /// by line, excluded rows left out.
    pub job: usize,
    /// Its line in the trace file (1-based; the header is line 1): what joins a row back to
    /// the trace.
    pub line: u64,
    /// Its project (the trace's tenant).
    pub project: String,
    /// GPUs of the gang.
    pub gpus: u32,
    /// Run time it needs (s).
    pub duration_s: i64,
    /// Minimum runtime it was given under this policy (s; 0: unallocated).
    pub min_runtime_s: i64,
    /// Submission instant (s).
    pub submit: i64,
    /// First start (s), if any.
    pub first_start: Option<i64>,
    /// Completion (s), if completed.
    pub end: Option<i64>,
    /// `first_start - submit` (s).
    pub wait_s: Option<i64>,
    /// Refused at submission as larger than the cluster.
    pub rejected: bool,
    /// The kind of the first waiting reason it was given (`fair_share`, `protected`, ...:
    /// [`crate::scheduler::WaitReason::code`]); empty when no pass left it waiting.
    pub first_reason: Option<String>,
    /// The first estimated start a pass gave it while it waited (s), if any.
    pub first_estimate: Option<i64>,
    /// Whether that first estimate came with a reservation (its GPUs held for it).
    pub estimate_reserved: bool,
}

/// A policy name on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyName {
    /// Strict arrival order, no preemption.
    Fifo,
    /// Per-job priorities plus per-team caps on non-preemptible GPUs.
    Legacy,
    /// The design.
    Tranche,
}

impl PolicyName {
    fn kind(self) -> PolicyKind {
        match self {
            PolicyName::Fifo => PolicyKind::Fifo,
            PolicyName::Legacy => PolicyKind::Legacy,
            PolicyName::Tranche => PolicyKind::Tranche,
        }
    }
}

/// Everything a simulation produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The trace and the site.
    pub trace: TraceInfo,
    /// One summary per policy, in the order asked.
    pub policies: Vec<Summary>,
}

/// What was replayed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TraceInfo {
    /// Path.
    pub path: String,
    /// Format.
    pub format: trace::Format,
    /// Jobs replayed.
    pub jobs: u64,
    /// Malformed rows skipped (`--skip-bad-rows`).
    pub skipped_rows: u64,
    /// Rows the format's rule leaves out (OpenB CPU-only pods).
    pub excluded_rows: u64,
    /// Cluster pools.
    pub cluster: Vec<setup::PoolSpec>,
    /// GPUs.
    pub gpus: u32,
    /// Mean GPU demand of the trace (GPU-seconds over the span of submissions), GPUs.
    pub mean_demand_gpus: f64,
    /// Measurement window start (first submission, s since the epoch).
    pub window_start: i64,
    /// Measurement window end (last submission).
    pub window_end: i64,
    /// Wall time of the replays, s.
    pub wall_s: f64,
}

/// Runs the simulation and returns the report (no printing except the progress bar).
///
/// # Errors
/// Unreadable or malformed trace, bad `--cluster`/`--tree`.
pub fn simulate(args: &SimulateArgs) -> anyhow::Result<Report> {
    let started = std::time::Instant::now();
    let tr = trace::load(&args.trace, args.format, args.skip_bad_rows)?;
    if tr.jobs.is_empty() {
        anyhow::bail!(
            "{}: no jobs ({} malformed rows skipped, {} rows left out by the format's rule)",
            args.trace.display(),
            tr.skipped,
            tr.excluded
        );
    }
    let pools = match &args.cluster {
        Some(s) => setup::parse_cluster(s)?,
        None => setup::default_cluster(&tr.jobs),
    };
    let tree = match &args.tree {
        Some(s) => setup::parse_tree(s)?,
        None => setup::default_tree(&tr.jobs),
    };
    let mut site = setup::build_site(&pools, &tree, &tr.jobs)?;
    site.base.policy.short_run_blocking_percent = args.short_run_blocking_percent;
    let window = (
        tr.jobs[0].submit,
        tr.jobs[tr.jobs.len() - 1].submit.max(tr.jobs[0].submit + 1),
    );
    let mut kinds: Vec<PolicyKind> = Vec::new();
    for p in &args.policy {
        if !kinds.contains(&p.kind()) {
            kinds.push(p.kind());
        }
    }
    let multi = indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stderr());
    let style = indicatif::ProgressStyle::with_template(
        "{prefix:>8} [{bar:40}] {pos}/{len} jobs {elapsed}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
    .progress_chars("=> ");
    let total = tr.jobs.len() as u64;
    // Opened before the replay, so a path that cannot be written fails at once, not after it.
    let jobs_file = match &args.jobs_csv {
        Some(path) => Some(
            std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("--jobs-csv {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let want_rows = jobs_file.is_some();
    // One worker per core, each taking the next policy when it is done, costliest first
    // (longest processing time first): on two cores `tranche` has one to itself while the
    // other replays `legacy` then `fifo`, instead of three threads sharing two cores and the
    // longest replay finishing last at two thirds of a core.
    let bars: Vec<indicatif::ProgressBar> = kinds
        .iter()
        .map(|kind| {
            let bar = multi.add(indicatif::ProgressBar::new(total));
            bar.set_style(style.clone());
            bar.set_prefix(format!("{kind:?}").to_lowercase());
            bar
        })
        .collect();
    let mut order: Vec<usize> = (0..kinds.len()).collect();
    order.sort_by_key(|&i| Reverse(replay_cost(kinds[i])));
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, kinds.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<std::sync::Mutex<Option<Replayed>>> =
        kinds.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(&i) =
                    order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let (kind, bar) = (kinds[i], &bars[i]);
                    let plans = setup::plan(&site, &tr.jobs, kind);
                    let rep = replay::replay(&site, &plans, kind, window, &|n| bar.set_position(n));
                    bar.finish_and_clear();
                    let rows = want_rows.then(|| job_rows(&site, &tr.jobs, &plans, &rep));
                    let result = (replay::summarize(&site, &plans, &rep, window), rows);
                    *done[i]
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
                }
            });
        }
    });
    let results: Vec<Replayed> = done
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .expect("every policy was replayed")
        })
        .collect();
    let mut summaries = Vec::with_capacity(results.len());
    let mut rows = Vec::new();
    for (summary, r) in results {
        summaries.push(summary);
        rows.extend(r.unwrap_or_default());
    }
    if let (Some(path), Some(file)) = (&args.jobs_csv, jobs_file) {
        write_job_rows(file, &rows)
            .map_err(|e| anyhow::anyhow!("--jobs-csv {}: {e}", path.display()))?;
    }
    Ok(Report {
        trace: TraceInfo {
            path: args.trace.display().to_string(),
            format: args.format,
            jobs: total,
            skipped_rows: tr.skipped,
            excluded_rows: tr.excluded,
            cluster: pools,
            gpus: site.gpus,
            mean_demand_gpus: setup::mean_demand(&tr.jobs),
            window_start: window.0,
            window_end: window.1,
            wall_s: started.elapsed().as_secs_f64(),
        },
        policies: summaries,
    })
}

/// One policy's replay: its summary, and its jobs' rows when `--jobs-csv` asks for them.
type Replayed = (Summary, Option<Vec<JobRow>>);

/// Relative cost of replaying a trace under `kind`, for ordering the replays: `tranche`'s
/// passes also preempt, reserve and estimate, `legacy`'s preempt, `fifo`'s only start.
fn replay_cost(kind: PolicyKind) -> u8 {
    match kind {
        PolicyKind::Tranche => 2,
        PolicyKind::Legacy => 1,
        PolicyKind::Fifo => 0,
    }
}

/// Every job's outcome under the replayed policy, in trace order.
fn job_rows(
    site: &setup::Site,
    jobs: &[trace::Job],
    plans: &[setup::Plan],
    rep: &replay::Replay,
) -> Vec<JobRow> {
    let policy = format!("{:?}", rep.kind).to_lowercase();
    plans
        .iter()
        .zip(&rep.jobs)
        .zip(jobs)
        .enumerate()
        .map(|(job, ((p, o), j))| JobRow {
            policy: policy.clone(),
            job,
            line: j.line,
            // A trace's project names are text a spreadsheet could run as a formula.
            project: site
                .names
                .get(&p.project)
                .map(|n| crate::export::neutralise(n).into_owned())
                .unwrap_or_default(),
            gpus: p.gpus,
            duration_s: p.duration,
            min_runtime_s: p.min_runtime,
            submit: p.submit,
            first_start: o.first_start,
            end: o.end,
            wait_s: o.first_start.map(|s| s - p.submit),
            rejected: o.rejected,
            first_reason: rep.first_reason[job].map(str::to_string),
            first_estimate: rep.first_estimate[job].map(|(e, _)| e),
            estimate_reserved: rep.first_estimate[job].is_some_and(|(_, r)| r),
        })
        .collect()
}

fn write_job_rows(file: std::fs::File, rows: &[JobRow]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(std::io::BufWriter::new(file));
    for r in rows {
        w.serialize(r)?;
    }
    w.flush()?;
    Ok(())
}

fn hms(s: f64) -> String {
    let s = s.max(0.0).round() as i64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// Renders the side-by-side tables.
pub fn render(report: &Report) -> String {
    let t = &report.trace;
    let mut out = String::new();
    let cluster: Vec<String> = t
        .cluster
        .iter()
        .map(|p| format!("{}:{}x{}", p.model, p.nodes, p.gpus_per_node))
        .collect();
    let _ = writeln!(
        out,
        "trace {} ({}): {} jobs, {} bad rows skipped, {} rows excluded; cluster {} ({} GPUs; mean demand {:.1} GPUs, {:.0}% of them); window {} .. {}",
        t.path,
        t.format,
        t.jobs,
        t.skipped_rows,
        t.excluded_rows,
        cluster.join(","),
        t.gpus,
        t.mean_demand_gpus,
        100.0 * t.mean_demand_gpus / f64::from(t.gpus.max(1)),
        crate::scheduler::reason::format_instant(t.window_start),
        crate::scheduler::reason::format_instant(t.window_end),
    );
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let ps = &report.policies;
    let row =
        |name: &str, f: &dyn Fn(&Summary) -> String| (name.to_string(), ps.iter().map(f).collect());
    rows.push(row("jobs total", &|s| s.jobs.total.to_string()));
    rows.push(row("  completed", &|s| s.jobs.completed.to_string()));
    rows.push(row("  waiting at end", &|s| s.jobs.waiting.to_string()));
    rows.push(row("  rejected (too large)", &|s| {
        s.jobs.rejected.to_string()
    }));
    rows.push(row("occupancy", &|s| {
        format!("{:.1}%", 100.0 * s.occupancy)
    }));
    rows.push(row("  allocated", &|s| {
        format!("{:.1}%", 100.0 * (s.occupancy - s.occupancy_unallocated))
    }));
    rows.push(row("  unallocated", &|s| {
        format!("{:.1}%", 100.0 * s.occupancy_unallocated)
    }));
    rows.push(row("impact (owed vs received)", &|s| {
        format!("{:.3}", s.impact)
    }));
    rows.push(row("  projects served >= 95%", &|s| {
        s.projects_served_share
            .map_or_else(|| "-".into(), |x| format!("{:.1}%", 100.0 * x))
    }));
    rows.push(row("  upper bound", &|s| {
        format!("{:.3}", s.impact_upper_bound)
    }));
    rows.push(row("wait p50 / p90", &|s| {
        format!("{} / {}", hms(s.wait_s.p50), hms(s.wait_s.p90))
    }));
    rows.push(row("small-job wait p50 / p90", &|s| {
        format!("{} / {}", hms(s.small_wait_s.p50), hms(s.small_wait_s.p90))
    }));
    for (name, pick) in [
        (
            "debug wait p50 / p90",
            (|s: &Summary| s.class_waits.debug) as fn(&Summary) -> crate::metrics::Waits,
        ),
        ("protected wait p50 / p90", |s: &Summary| {
            s.class_waits.protected
        }),
        ("unallocated wait p50 / p90", |s: &Summary| {
            s.class_waits.unallocated
        }),
    ] {
        rows.push(row(name, &|s| {
            let w = pick(s);
            if w.runs == 0 {
                // No run of the class started: nothing waited, and "0 s" would say otherwise.
                "no runs".to_string()
            } else {
                format!("{} / {}", hms(w.p50_s), hms(w.p90_s))
            }
        }));
    }
    rows.push(row("mean completion time", &|s| hms(s.jct_mean_s)));
    rows.push(row("GPU-hours idle while runs waited", &|s| {
        format!("{:.0}", s.idle_while_waiting_gpu_hours)
    }));
    rows.push(row("preemptions", &|s| s.preemptions.to_string()));
    rows.push(row("  per 1,000 GPU-hours", &|s| {
        format!("{:.2}", s.preemptions_per_1000_gpu_hours)
    }));
    rows.push(row("GPU-hours lost to preemption", &|s| {
        format!("{:.1}", s.preempted_gpu_hours)
    }));
    rows.push(row("runs that waited", &|s| s.estimates.waited.to_string()));
    rows.push(row("  given an estimate", &|s| {
        s.estimates.estimated.to_string()
    }));
    rows.push(row("  estimate error p50 / p90", &|s| {
        format!(
            "{} / {}",
            hms(s.estimates.error_s.p50),
            hms(s.estimates.error_s.p90)
        )
    }));
    rows.push(row("  estimate later than start", &|s| {
        format!("{:.1}%", 100.0 * s.estimates.late_share)
    }));
    rows.push(row("  with a reservation", &|s| {
        s.estimates.reserved.to_string()
    }));
    rows.push(row("  reservation error p50 / p90", &|s| {
        format!(
            "{} / {}",
            hms(s.estimates.reserved_error_s.p50),
            hms(s.estimates.reserved_error_s.p90)
        )
    }));
    rows.push(row("  reservation later than start", &|s| {
        format!("{:.1}%", 100.0 * s.estimates.reserved_late_share)
    }));
    rows.push(row("scheduling passes", &|s| s.passes.to_string()));
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(6);
    let wc: Vec<usize> = (0..ps.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.1[i].len())
                .max()
                .unwrap_or(0)
                .max(ps[i].policy.len())
                .max(8)
        })
        .collect();
    let _ = write!(out, "\n{:<w0$}", "metric");
    for (i, p) in ps.iter().enumerate() {
        let _ = write!(out, "  {:>w$}", p.policy, w = wc[i]);
    }
    out.push('\n');
    for (name, vals) in &rows {
        let _ = write!(out, "{name:<w0$}");
        for (i, v) in vals.iter().enumerate() {
            let _ = write!(out, "  {v:>w$}", w = wc[i]);
        }
        out.push('\n');
    }
    // Per-project table.
    let _ = write!(out, "\n{:<12} {:>7}", "project", "share");
    for p in ps {
        let _ = write!(out, "  {:>22}", format!("{} owed/received h", p.policy));
    }
    out.push('\n');
    if let Some(first) = ps.first() {
        for (i, line) in first.projects.iter().enumerate() {
            let _ = write!(out, "{:<12} {:>6.2}%", line.project, 100.0 * line.share);
            for p in ps {
                let l = &p.projects[i];
                let _ = write!(
                    out,
                    "  {:>22}",
                    format!("{:.0} / {:.0}", l.owed_gpu_hours, l.received_gpu_hours)
                );
            }
            out.push('\n');
        }
    }
    let _ = writeln!(out, "\nreplayed in {:.1} s", t.wall_s);
    out
}

/// Runs `tranche simulate`: prints the tables or, with `--json`, one JSON object.
///
/// # Errors
/// Unreadable or malformed input (the message names the line and field).
pub fn run(args: &SimulateArgs) -> anyhow::Result<()> {
    let report = simulate(args)?;
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        render(&report)
    };
    // Not print!: a full disk or a closed pipe is an error to report, not a panic.
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("cannot write the report to standard output: {e}"))
}

#[cfg(test)]
mod tests;
