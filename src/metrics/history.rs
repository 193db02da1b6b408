//! The history of a pool (a cluster's GPUs of one model) from PostgreSQL, for
//! [`super::compute`], and the samples it needs that nothing else records.
//!
//! - Runs: `runs` (submitted, first queued: the approval's instant when it needed one, ended).
//! - Segments: each `started` event of `run_events` to the first later event of the same
//!   attempt that released its GPUs (preempted, cancelled, failed, succeeded, lost,
//!   time limit...), split at an `unallocated` event (the budget ran out; the run went on free).
//! - Preemptions: `preempted` events.
//! - Health: `gpu_health_samples`, written by the active scheduler loop every
//!   [`HEALTH_SAMPLE_S`] ([`sample_health`]): installed GPUs, and healthy ones (node `up` and
//!   served by a live agent) at the sample's instant, for the stretch since the previous sample.
//! - Utilization: `run_utilization`, busy and observed GPU-seconds per attempt and hour,
//!   accumulated on agents' heartbeats ([`crate::runs::agents`]); an hour the window covers in
//!   part counts in proportion (the hour under way: of its time so far).

use sqlx::PgPool;

use super::{HealthSpan, History, ProjectShare, RunRecord, Segment, Utilization};

/// Seconds between health samples (the active scheduler loop takes one this often).
pub const HEALTH_SAMPLE_S: u64 = 60;

/// Longest stretch one health sample may stand for, s: after a longer gap (no scheduler loop
/// ran) the time is left unmeasured.
pub const HEALTH_SAMPLE_MAX_S: f64 = 300.0;

/// Records the installed and healthy GPUs of every pool for the last `stretch_s` seconds
/// (at most [`HEALTH_SAMPLE_MAX_S`]), ending now.
///
/// # Errors
/// Database errors.
pub async fn sample_health(pool: &PgPool, stretch_s: f64) -> Result<u64, sqlx::Error> {
    let stretch = stretch_s.clamp(1.0, HEALTH_SAMPLE_MAX_S);
    let done = sqlx::query(
        "INSERT INTO gpu_health_samples (cluster_id, gpu_model_id, from_at, to_at, installed_gpus, healthy_gpus) \
         SELECT cluster_id, gpu_model_id, now() - make_interval(secs => $1), now(), sum(gpu_count), \
                coalesce(sum(gpu_count) FILTER (WHERE state = 'up' AND agent_session IS NOT NULL), 0) \
         FROM nodes GROUP BY cluster_id, gpu_model_id \
         ON CONFLICT DO NOTHING",
    )
    .bind(stretch)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// A pool and a window to load.
#[derive(Debug, Clone, Copy)]
pub struct Scope {
    /// Cluster id.
    pub cluster: i64,
    /// GPU model id.
    pub gpu_model: i64,
    /// Window start, s since the epoch.
    pub from: i64,
    /// Window end (exclusive), s.
    pub to: i64,
    /// The instant the history is taken (runs not ended are present until then), s.
    pub now: i64,
    /// Only this project's runs, attempts, preemptions and utilization (health stays the
    /// pool's): what [`super::compute`] needs for that project's owed and received, which
    /// depend on nothing else (the project page, [`project_pools`]).
    pub project: Option<i64>,
}

/// The pools (cluster id, cluster name, GPU model id, model name) in which `project` had a run
/// present at some instant of `[from, to]` (`now`: when the history is taken): the only pools
/// where it can be owed or receive anything in that window.
///
/// # Errors
/// Database errors.
pub async fn project_pools(
    pool: &PgPool,
    project: i64,
    (from, to, now): (i64, i64, i64),
) -> Result<Vec<(i64, String, i64, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT DISTINCT r.cluster_id, c.name, r.gpu_model_id, m.name FROM runs r \
         JOIN clusters c ON c.id = r.cluster_id JOIN gpu_models m ON m.id = r.gpu_model_id \
         WHERE r.project_id = $1 AND r.submitted_at <= to_timestamp($3) \
         AND coalesce(r.ended_at, CASE WHEN r.state = 'denied' THEN r.decided_at END, to_timestamp($4)) >= to_timestamp($2) \
         ORDER BY c.name, m.name",
    )
    .bind(project)
    .bind(from as f64)
    .bind(to as f64)
    .bind(now as f64)
    .fetch_all(pool)
    .await
}

type RunRow = (i64, i32, i64, i64, Option<i64>, Option<i64>, i64);
type SegRow = (i64, i32, bool, i64, Option<i64>, Option<i64>);

/// Loads the history of `scope`'s pool (of one project's runs when [`Scope::project`] is set).
/// `projects` are the projects with their effective shares and `capacity_gpus` the GPUs
/// entitlements divide (the tree page's installed GPUs).
///
/// At the live edge, the last health sample (taken at most [`HEALTH_SAMPLE_MAX_S`] before
/// `now`) stands for the time from it to the window's end, as runs are counted to then: a
/// window ending now is measured over the same stretch for both sides of its ratios.
///
/// # Errors
/// Database errors.
pub async fn load(
    pool: &PgPool,
    scope: Scope,
    projects: Vec<ProjectShare>,
    capacity_gpus: f64,
) -> Result<History, sqlx::Error> {
    let (from, to, now) = (scope.from as f64, scope.to as f64, scope.now as f64);
    let health: Vec<(i64, i64, i32, i32)> = sqlx::query_as(
        "SELECT extract(epoch FROM from_at)::BIGINT, extract(epoch FROM to_at)::BIGINT, installed_gpus, healthy_gpus \
         FROM gpu_health_samples WHERE cluster_id = $1 AND gpu_model_id = $2 \
         AND to_at > to_timestamp($3) AND from_at < to_timestamp($4) ORDER BY from_at",
    )
    .bind(scope.cluster)
    .bind(scope.gpu_model)
    .bind(from)
    .bind(to)
    .fetch_all(pool)
    .await?;
    let runs: Vec<RunRow> = sqlx::query_as(
        "SELECT r.project_id, r.gpus, extract(epoch FROM r.submitted_at)::BIGINT, \
                extract(epoch FROM coalesce(CASE WHEN r.state <> 'denied' THEN r.decided_at END, r.submitted_at))::BIGINT, \
                (SELECT extract(epoch FROM min(e.at))::BIGINT FROM run_events e WHERE e.run_id = r.id AND e.kind = 'started'), \
                extract(epoch FROM coalesce(r.ended_at, CASE WHEN r.state = 'denied' THEN r.decided_at END))::BIGINT, \
                r.min_runtime_s \
         FROM runs r WHERE r.cluster_id = $1 AND r.gpu_model_id = $2 AND r.submitted_at <= to_timestamp($4) \
         AND coalesce(r.ended_at, CASE WHEN r.state = 'denied' THEN r.decided_at END, to_timestamp($5)) >= to_timestamp($3) \
         AND ($6::BIGINT IS NULL OR r.project_id = $6)",
    )
    .bind(scope.cluster)
    .bind(scope.gpu_model)
    .bind(from)
    .bind(to)
    .bind(now)
    .bind(scope.project)
    .fetch_all(pool)
    .await?;
    let segments: Vec<SegRow> = sqlx::query_as(
        "SELECT * FROM ( \
           SELECT r.project_id, r.gpus, r.min_runtime_s > 0, extract(epoch FROM s.at)::BIGINT AS start_s, \
                  (SELECT extract(epoch FROM min(e.at))::BIGINT FROM run_events e WHERE e.run_id = s.run_id \
                     AND e.attempt = s.attempt AND e.id > s.id AND e.kind NOT IN ('started', 'running', 'unallocated', 'contract')) AS end_s, \
                  (SELECT extract(epoch FROM min(e.at))::BIGINT FROM run_events e WHERE e.run_id = s.run_id \
                     AND e.attempt = s.attempt AND e.id > s.id AND e.kind = 'unallocated') AS free_s \
           FROM run_events s JOIN runs r ON r.id = s.run_id \
           WHERE s.kind = 'started' AND r.cluster_id = $1 AND r.gpu_model_id = $2 AND s.at < to_timestamp($4) \
           AND ($5::BIGINT IS NULL OR r.project_id = $5)) x \
         WHERE x.end_s IS NULL OR x.end_s > $3",
    )
    .bind(scope.cluster)
    .bind(scope.gpu_model)
    .bind(from)
    .bind(to)
    .bind(scope.project)
    .fetch_all(pool)
    .await?;
    let preemptions: Vec<i64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM e.at)::BIGINT FROM run_events e JOIN runs r ON r.id = e.run_id \
         WHERE e.kind = 'preempted' AND r.cluster_id = $1 AND r.gpu_model_id = $2 \
         AND e.at >= to_timestamp($3) AND e.at < to_timestamp($4) AND ($5::BIGINT IS NULL OR r.project_id = $5)",
    )
    .bind(scope.cluster)
    .bind(scope.gpu_model)
    .bind(from)
    .bind(to)
    .bind(scope.project)
    .fetch_all(pool)
    .await?;
    let util: (Option<f64>, Option<f64>) = sqlx::query_as(
        "WITH b AS ( \
           SELECT u.busy_gpu_s, u.observed_gpu_s, extract(epoch FROM u.hour) AS h0, \
                  LEAST(extract(epoch FROM u.hour) + 3600, $6) AS h1 \
           FROM run_utilization u JOIN runs r ON r.id = u.run_id \
           WHERE r.cluster_id = $1 AND r.gpu_model_id = $2 AND u.hour > to_timestamp($3 - 3600) \
             AND u.hour < to_timestamp($4) AND ($5::BIGINT IS NULL OR r.project_id = $5)), \
         f AS (SELECT busy_gpu_s, observed_gpu_s, \
                      GREATEST(LEAST(h1, $4) - GREATEST(h0, $3), 0) / NULLIF(h1 - h0, 0) AS part FROM b) \
         SELECT sum(busy_gpu_s * part)::FLOAT8, sum(observed_gpu_s * part)::FLOAT8 FROM f",
    )
    .bind(scope.cluster)
    .bind(scope.gpu_model)
    .bind(from)
    .bind(to)
    .bind(scope.project)
    .bind(now)
    .fetch_one(pool)
    .await?;
    let mut segs = Vec::with_capacity(segments.len());
    for (project, gpus, allocated, start, end, free) in segments {
        let end = end.unwrap_or(scope.now).max(start);
        let gpus = gpus.max(0) as u32;
        match free.filter(|&f| allocated && f < end) {
            Some(f) => {
                let f = f.max(start);
                segs.push(Segment {
                    project,
                    gpus,
                    start,
                    end: f,
                    allocated: true,
                });
                segs.push(Segment {
                    project,
                    gpus,
                    start: f,
                    end,
                    allocated: false,
                });
            }
            None => segs.push(Segment {
                project,
                gpus,
                start,
                end,
                allocated,
            }),
        }
    }
    Ok(History {
        window: (scope.from, scope.to),
        end: scope.now,
        capacity_gpus,
        capacity_before: Vec::new(),
        health: {
            let mut spans: Vec<HealthSpan> = health
                .into_iter()
                .map(|(f, t, i, h)| HealthSpan {
                    from: f,
                    to: t,
                    installed: i.max(0) as u32,
                    healthy: h.max(0) as u32,
                })
                .collect();
            let edge = scope.to.min(scope.now);
            if let Some(&last) = spans.last()
                && last.to < edge
                && (scope.now - last.to) as f64 <= HEALTH_SAMPLE_MAX_S
            {
                spans.push(HealthSpan {
                    from: last.to,
                    to: edge,
                    ..last
                });
            }
            spans
        },
        projects,
        runs: runs
            .into_iter()
            .map(
                |(project, gpus, sub, queued, first, ended, min_rt)| RunRecord {
                    project,
                    gpus: gpus.max(0) as u32,
                    submitted_at: sub,
                    queued_at: queued,
                    first_start: first,
                    ended_at: ended,
                    min_runtime_s: min_rt,
                },
            )
            .collect(),
        segments: segs,
        preemptions,
        utilization: match util {
            (Some(b), Some(o)) => Some(Utilization {
                busy_gpu_s: b,
                observed_gpu_s: o,
            }),
            _ => None,
        },
    })
}
