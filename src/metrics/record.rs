//! Writes a replay of the scheduling core ([`crate::sim::replay`]) into PostgreSQL as past runs
//! of one pool: the runs (ended: succeeded, or cancelled when the replay stranded them), their
//! timeline events (submitted, started per attempt, preempted and requeued, succeeded), and the
//! pool's health over the window. The live metrics then read them exactly as they read runs
//! the scheduler service ran, so the demo's history and the simulator's figures agree.
//!
//! Recorded runs carry no placements or GPU holds: they are history for the metrics and the
//! run pages, never work to schedule. Their GPU-time is charged to the ledger by the caller
//! from [`daily_usage`] (per project, pool and day, at past instants), so spend reports and
//! fair-share usage include it.

use std::collections::BTreeMap;

use sqlx::PgConnection;

use crate::i18n::said::Said;
use crate::scheduler::ProjectId;
use crate::sim::replay::Replay;
use crate::sim::setup::Plan;

/// Where and how to record.
#[derive(Debug, Clone)]
pub struct Target {
    /// Cluster id.
    pub cluster: i64,
    /// GPU model id.
    pub gpu_model: i64,
    /// The user recorded as submitter.
    pub submitter: i64,
    /// Database project (tree node id) of each simulated project.
    pub projects: BTreeMap<ProjectId, i64>,
    /// Seconds added to every replay instant (to move a trace's time to the recent past).
    pub shift_s: i64,
    /// Health spans to record, replay time: (from, to, installed GPUs, healthy GPUs).
    pub health: Vec<(i64, i64, u32, u32)>,
    /// The command recorded for each run.
    pub command: String,
}

/// What was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recorded {
    /// Runs written.
    pub runs: u64,
    /// Attempts (started segments) written.
    pub attempts: u64,
    /// Preemptions written.
    pub preemptions: u64,
    /// GPU-hours the attempts held.
    pub gpu_hours: f64,
}

/// Records `rep` (the replay of `plans`) on `conn` (the caller's transaction).
///
/// # Errors
/// Database errors; a plan of a project missing from [`Target::projects`].
pub async fn write(
    conn: &mut PgConnection,
    t: &Target,
    plans: &[Plan],
    rep: &Replay,
) -> anyhow::Result<Recorded> {
    // Segments per job, in order: the replay pushes them as jobs start.
    let mut by_job: Vec<Vec<usize>> = vec![Vec::new(); plans.len()];
    for (k, &j) in rep.segment_jobs.iter().enumerate() {
        by_job[j].push(k);
    }
    let mut ids: Vec<i64> = Vec::new();
    let tx = conn;
    let n = plans
        .iter()
        .zip(&rep.jobs)
        .filter(|(_, o)| !o.rejected)
        .count();
    let new_ids: Vec<i64> =
        sqlx::query_scalar("SELECT nextval('runs_id_seq') FROM generate_series(1, $1)")
            .bind(n as i64)
            .fetch_all(&mut *tx)
            .await?;
    let mut r = Recorded::default();
    let (mut projects, mut gpus, mut min_rt, mut limits, mut states) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut submitted, mut started, mut ended, mut attempts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut e_run, mut e_kind, mut e_msg, mut e_attempt, mut e_at) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut next = new_ids.into_iter();
    let sh = |s: i64| (s + t.shift_s) as f64;
    for (j, (p, o)) in plans.iter().zip(&rep.jobs).enumerate() {
        if o.rejected {
            continue;
        }
        let Some(&project) = t.projects.get(&p.project) else {
            anyhow::bail!(
                "project {} of the replay has no database project",
                p.project.0
            );
        };
        let id = next.next().unwrap_or_default();
        ids.push(id);
        let end = o.end.unwrap_or(rep.end);
        projects.push(project);
        gpus.push(p.gpus as i32);
        min_rt.push(p.min_runtime);
        limits.push(p.time_limit.max(p.min_runtime).max(1));
        states.push(if o.end.is_some() {
            "succeeded"
        } else {
            "cancelled"
        });
        submitted.push(sh(p.submit));
        ended.push(sh(end));
        attempts.push(by_job[j].len() as i32);
        started.push(by_job[j].last().map(|&k| sh(rep.segments[k].start)));
        e_run.push(id);
        e_kind.push("submitted");
        e_msg.push(Said::new("event-history-submitted"));
        e_attempt.push(0);
        e_at.push(sh(p.submit));
        for (a, &k) in by_job[j].iter().enumerate() {
            let s = rep.segments[k];
            let attempt = a as i32 + 1;
            r.attempts += 1;
            r.gpu_hours += f64::from(s.gpus) * (s.end - s.start) as f64 / 3600.0;
            e_run.push(id);
            e_kind.push("started");
            e_msg.push(Said::new("event-history-started").arg("gpus", s.gpus));
            e_attempt.push(attempt);
            e_at.push(sh(s.start));
            let last = a + 1 == by_job[j].len();
            if last && o.end.is_some() {
                e_run.push(id);
                e_kind.push("succeeded");
                e_msg.push(Said::new("event-history-finished"));
                e_attempt.push(attempt);
                e_at.push(sh(s.end));
            } else if last {
                e_run.push(id);
                e_kind.push("cancelled");
                e_msg.push(Said::new("event-history-ends"));
                e_attempt.push(attempt);
                e_at.push(sh(s.end));
            } else {
                r.preemptions += 1;
                e_run.push(id);
                e_kind.push("preempted");
                e_msg.push(Said::new("event-history-preempted"));
                e_attempt.push(attempt);
                e_at.push(sh(s.end));
                e_run.push(id);
                e_kind.push("requeued");
                e_msg.push(Said::new("event-history-requeued"));
                e_attempt.push(attempt);
                e_at.push(sh(s.end));
            }
        }
        if by_job[j].is_empty() && o.end.is_none() {
            e_run.push(id);
            e_kind.push("cancelled");
            e_msg.push(Said::new("event-history-ends"));
            e_attempt.push(0);
            e_at.push(sh(end));
        }
    }
    r.runs = ids.len() as u64;
    sqlx::query(
        "INSERT INTO runs (id, project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, time_limit_s, \
                           resumable, command, state, submitted_at, queued_at, attempt, started_at, ended_at) \
         SELECT u.id, u.p, $2, $3, $4, u.g, u.m, u.l, true, $5, u.s, to_timestamp(u.sub), to_timestamp(u.sub), u.a, \
                to_timestamp(u.st), to_timestamp(u.e) \
         FROM unnest($1::BIGINT[], $6::BIGINT[], $7::INT[], $8::BIGINT[], $9::BIGINT[], $10::TEXT[], $11::FLOAT8[], \
                     $12::INT[], $13::FLOAT8[], $14::FLOAT8[]) AS u(id, p, g, m, l, s, sub, a, st, e)",
    )
    .bind(&ids)
    .bind(t.cluster)
    .bind(t.gpu_model)
    .bind(t.submitter)
    .bind(&t.command)
    .bind(&projects)
    .bind(&gpus)
    .bind(&min_rt)
    .bind(&limits)
    .bind(&states)
    .bind(&submitted)
    .bind(&attempts)
    .bind(&started)
    .bind(&ended)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO run_events (run_id, kind, message, attempt, at, note) \
         SELECT u.r, u.k, u.m, u.a, to_timestamp(u.t), u.n \
         FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::INT[], $5::FLOAT8[], $6::JSONB[]) WITH ORDINALITY AS u(r, k, m, a, t, n, o) ORDER BY u.o",
    )
    .bind(&e_run)
    .bind(&e_kind)
    .bind(e_msg.iter().map(Said::english).collect::<Vec<_>>())
    .bind(&e_attempt)
    .bind(&e_at)
    .bind(e_msg.iter().map(Said::to_json).collect::<Vec<_>>())
    .execute(&mut *tx)
    .await?;
    for &(from, to, installed, healthy) in &t.health {
        sqlx::query(
            "INSERT INTO gpu_health_samples (cluster_id, gpu_model_id, from_at, to_at, installed_gpus, healthy_gpus) \
             VALUES ($1, $2, to_timestamp($3), to_timestamp($4), $5, $6) ON CONFLICT DO NOTHING",
        )
        .bind(t.cluster)
        .bind(t.gpu_model)
        .bind(sh(from))
        .bind(sh(to))
        .bind(installed as i32)
        .bind(healthy.min(installed) as i32)
        .execute(&mut *tx)
        .await?;
    }
    Ok(r)
}

/// One project's GPU-time on one pool in one day of a recorded history, to be charged to the
/// ledger at a past instant ([`crate::ledger::charge_usage_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayUsage {
    /// When to post it, s since the epoch: the last second of the day (in the organisation's
    /// time zone), or the history's end for the day it ends in.
    pub at: i64,
    /// Database project (tree node id).
    pub project: i64,
    /// Cluster id.
    pub cluster: i64,
    /// GPU model id.
    pub gpu_model: i64,
    /// Allocated (charged while the balance lasts) or unallocated (free).
    pub allocated: bool,
    /// GPU-seconds held in that day.
    pub gpu_seconds: i64,
}

/// The GPU-time `rep`'s attempts held (as [`write`] records them: replay instants shifted by
/// [`Target::shift_s`]), split at midnights in `tz` and summed per (day, project, allocated),
/// ordered by posting instant, then project. Days are the ledger's grain for recorded history:
/// budget periods (calendar months in `tz`) begin at a midnight, so no day straddles two.
///
/// # Errors
/// A segment of a project missing from [`Target::projects`]; an instant outside jiff's range.
pub fn daily_usage(
    t: &Target,
    rep: &Replay,
    tz: &jiff::tz::TimeZone,
) -> anyhow::Result<Vec<DayUsage>> {
    let end = rep.end + t.shift_s;
    let mut sums: BTreeMap<(i64, i64, bool), i64> = BTreeMap::new();
    // Midnights already found, keyed by the day's first second: segments share few days.
    let mut next_midnight: BTreeMap<i64, i64> = BTreeMap::new();
    for s in &rep.segments {
        let Some(&project) = t.projects.get(&ProjectId(s.project)) else {
            anyhow::bail!(
                "project {} of the replay has no database project",
                s.project
            );
        };
        let (mut a, b) = (s.start + t.shift_s, (s.end + t.shift_s).min(end));
        while a < b {
            let day_end = match next_midnight.range(..=a).next_back() {
                Some((&start, &e)) if start <= a && a < e => e,
                _ => {
                    let z = jiff::Timestamp::from_second(a)?.to_zoned(tz.clone());
                    let start = z.start_of_day()?.timestamp().as_second();
                    let e = z.tomorrow()?.start_of_day()?.timestamp().as_second();
                    next_midnight.insert(start, e);
                    e
                }
            };
            let upto = b.min(day_end);
            *sums
                .entry(((day_end - 1).min(end), project, s.allocated))
                .or_default() += i64::from(s.gpus) * (upto - a);
            a = upto;
        }
    }
    Ok(sums
        .into_iter()
        .filter(|(_, secs)| *secs > 0)
        .map(|((at, project, allocated), gpu_seconds)| DayUsage {
            at,
            project,
            cluster: t.cluster,
            gpu_model: t.gpu_model,
            allocated,
            gpu_seconds,
        })
        .collect())
}
