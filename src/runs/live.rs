//! The runs part of the scheduling snapshot, kept in memory between passes (docs/design.md
//! section 7, "Incremental snapshot"): the queued runs and the starting or running runs with
//! their GPUs. A pass reads only the runs that changed since the last pass instead of every
//! waiting run.
//!
//! Every transaction that changes what the snapshot reads of a run leaves the run's id in
//! `run_changes` (database triggers on `runs` and `gpu_holds`, so no writer can forget). The
//! pass, holding the pass lock, consumes the rows it can see (`DELETE ... RETURNING`) and
//! re-reads those runs as they are now. A row written by a transaction that has not committed
//! yet is invisible to that DELETE and stays for a later pass, so two transactions committing
//! out of order cannot hide a change (a sequence high-water mark could: a lower number may
//! commit after a higher one was read). Re-reading is idempotent, so a change seen twice costs
//! one extra read and nothing else.
//!
//! The single row of `snapshot_cursor` names the process that consumed the changes last and
//! counts its passes; a pass that finds another holder or another count (another replica led
//! meanwhile, this process restarted, a pass of ours rolled back and with it its consumption)
//! reloads every run, as does the first pass of a process.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sqlx::PgConnection;

/// A queued run as the core reads it: id, project, cluster, model, GPUs, queued at (s since
/// the epoch), minimum runtime (s), time limit (s), priority.
pub type WaitingRow = (i64, i64, i64, i64, i32, i64, i64, i64, i32);

/// A starting or running run with its GPU holds, as the core reads it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunningRow {
    /// Run id.
    pub id: i64,
    /// Project id.
    pub project: i64,
    /// Cluster id.
    pub cluster: i64,
    /// GPU model id.
    pub model: i64,
    /// Start of the attempt, seconds since the epoch, rounded up.
    pub started_at: i64,
    /// Minimum runtime, seconds: 0 once its project's balance ran out (`runs.budget_spent`),
    /// as the run then goes on unallocated (docs/design.md section 2).
    pub min_runtime_s: i64,
    /// Time limit, seconds.
    pub time_limit_s: i64,
    /// Priority within the project.
    pub priority: i32,
    /// The capacity contract it runs on.
    pub contract: Option<i64>,
    /// Seconds of the attempt already charged.
    pub charged_s: i64,
    /// Node of each held GPU, ordered by node and index.
    pub node_ids: Vec<i64>,
    /// Index of each held GPU, in the order of `node_ids`.
    pub gpu_indices: Vec<i32>,
}

const WAITING_SQL: &str = "SELECT id, project_id, cluster_id, gpu_model_id, gpus, extract(epoch FROM queued_at)::BIGINT, \
     min_runtime_s, time_limit_s, priority FROM runs WHERE state = 'queued'";

const RUNNING_SQL: &str = "SELECT r.id, r.project_id AS project, r.cluster_id AS cluster, r.gpu_model_id AS model, \
     ceil(extract(epoch FROM r.started_at))::BIGINT AS started_at, \
     CASE WHEN r.budget_spent THEN 0 ELSE r.min_runtime_s END AS min_runtime_s, r.time_limit_s, r.priority, \
     r.contract_id AS contract, r.charged_s, array_agg(h.node_id ORDER BY h.node_id, h.gpu_index) AS node_ids, \
     array_agg(h.gpu_index ORDER BY h.node_id, h.gpu_index) AS gpu_indices \
     FROM runs r JOIN gpu_holds h ON h.run_id = r.id WHERE r.state IN ('starting', 'running')";

/// The fair-share window, seconds: usage posted less than this long ago counts
/// (docs/design.md section 3).
pub const USAGE_WINDOW_S: i64 = 7 * 86_400;

/// The queued and running runs of the snapshot, by id, and the fair-share usage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveRuns {
    /// Queued runs by id.
    pub waiting: BTreeMap<i64, WaitingRow>,
    /// Starting and running runs (with GPU holds) by id.
    pub running: BTreeMap<i64, RunningRow>,
    /// Allocated GPU-seconds used inside the fair-share window.
    pub usage: UsageWindow,
}

/// Allocated GPU-seconds of the `usage` postings inside the fair-share window, by project and
/// GPU model (docs/design.md section 7, "Usage window"): a full read sums the window's
/// postings; [`Self::advance`] adds the postings noted in `usage_changes` since and subtracts
/// those whose instant left the window, so a pass reads the postings of its last seconds, not
/// of the week.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageWindow {
    /// GPU-seconds by (project, GPU model); no zero entries.
    pub seconds: BTreeMap<(i64, i64), i64>,
    /// The window's start the sums follow (postings after it count), as the database
    /// computed it; `None` before the first read.
    since: Option<time::OffsetDateTime>,
}

/// Sums the usage postings inside the window; consumes `usage_changes` when `$2`, in the same
/// statement, so no posting is both summed and left to be added again.
const USAGE_FULL_SQL: &str = "WITH consumed AS (DELETE FROM usage_changes WHERE $2 RETURNING 1) \
     SELECT lp.project_id, lp.gpu_model_id, sum(lp.gpu_seconds)::BIGINT FROM ledger_postings lp \
     WHERE lp.kind = 'usage' AND lp.gpu_model_id IS NOT NULL AND lp.project_id IS NOT NULL AND lp.at > $1 \
     GROUP BY 1, 2";

/// The change of the sums from window start `$2` to `$1`: the noted postings inside the new
/// window (consumed; the notes carry what the sums need, so they are not joined back to the
/// ledger), less the earlier postings whose instant left it. One statement, so the postings
/// noted and the postings read are of one snapshot.
const USAGE_ADVANCE_SQL: &str = "WITH consumed AS (DELETE FROM usage_changes \
        RETURNING posting_id, project_id, gpu_model_id, gpu_seconds, at) \
     SELECT project_id, gpu_model_id, sum(s)::BIGINT FROM ( \
        SELECT project_id, gpu_model_id, gpu_seconds AS s FROM consumed WHERE at > $1 \
        UNION ALL \
        SELECT lp.project_id, lp.gpu_model_id, -lp.gpu_seconds FROM ledger_postings lp \
        WHERE lp.kind = 'usage' AND lp.gpu_model_id IS NOT NULL AND lp.project_id IS NOT NULL \
          AND lp.at > $2 AND lp.at <= $1 \
          AND lp.id NOT IN (SELECT posting_id FROM consumed) \
     ) x GROUP BY 1, 2";

impl UsageWindow {
    /// The window's start now (the transaction's instant less [`USAGE_WINDOW_S`]).
    async fn start(conn: &mut PgConnection) -> Result<time::OffsetDateTime, sqlx::Error> {
        sqlx::query_scalar("SELECT now() - make_interval(secs => $1)")
            .bind(USAGE_WINDOW_S as f64)
            .fetch_one(conn)
            .await
    }

    /// Sums every usage posting inside the window; consumes the noted postings when `consume`.
    ///
    /// # Errors
    /// Database errors.
    pub async fn load(conn: &mut PgConnection, consume: bool) -> Result<Self, sqlx::Error> {
        let since = Self::start(conn).await?;
        let rows: Vec<(i64, i64, i64)> = sqlx::query_as(USAGE_FULL_SQL)
            .bind(since)
            .bind(consume)
            .fetch_all(&mut *conn)
            .await?;
        Ok(Self {
            seconds: rows
                .into_iter()
                .filter(|r| r.2 != 0)
                .map(|(p, m, s)| ((p, m), s))
                .collect(),
            since: Some(since),
        })
    }

    /// Brings the sums to the window ending now: adds the postings noted since the last read
    /// and subtracts those that left the window (a full read if the window's start moved
    /// back, as after a clock change, or was never read).
    ///
    /// # Errors
    /// Database errors.
    pub async fn advance(&mut self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        let since = Self::start(conn).await?;
        let Some(old) = self.since.filter(|&old| old <= since) else {
            *self = Self::load(conn, true).await?;
            return Ok(());
        };
        let rows: Vec<(i64, i64, i64)> = sqlx::query_as(USAGE_ADVANCE_SQL)
            .bind(since)
            .bind(old)
            .fetch_all(&mut *conn)
            .await?;
        for (project, model, delta) in rows {
            let entry = self.seconds.entry((project, model)).or_default();
            *entry += delta;
            if *entry == 0 {
                self.seconds.remove(&(project, model));
            }
        }
        self.since = Some(since);
        Ok(())
    }

    /// Billing-weighted GPU-seconds by project: the sum over its models of GPU-seconds x
    /// `weight_milli(model)` / 1,000, rounded half away from zero (as PostgreSQL rounds the
    /// numeric sum to BIGINT). A model without a weight counts nothing.
    #[must_use]
    pub fn weighted(&self, weight_milli: impl Fn(i64) -> Option<i64>) -> HashMap<i64, i64> {
        let mut milli: HashMap<i64, i128> = HashMap::new();
        for (&(project, model), &secs) in &self.seconds {
            if let Some(w) = weight_milli(model) {
                *milli.entry(project).or_default() += i128::from(secs) * i128::from(w);
            }
        }
        milli
            .into_iter()
            .map(|(p, m)| {
                let rounded = if m >= 0 {
                    (m + 500) / 1000
                } else {
                    -((-m + 500) / 1000)
                };
                (p, rounded as i64)
            })
            .collect()
    }
}

/// How [`LiveCache::refresh`] brought the runs up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// Every run was read: the first pass, or the cursor showed a gap.
    Full,
    /// Only these many changed runs were read.
    Incremental(usize),
}

/// The runs of the last pass and the cursor it wrote; kept in [`crate::state::AppState`].
#[derive(Debug, Default)]
pub struct LiveCache {
    runs: Option<LiveRuns>,
    /// This process's random name in `snapshot_cursor.holder`.
    holder: i64,
    /// `snapshot_cursor.passes` as this process last wrote it.
    passes: i64,
    /// When a pass last looked for ended attempts among every running run (`None`: never, or
    /// a pass failed since).
    exits_swept: Option<std::time::Instant>,
    /// When a pass last rewrote `project_holds` (`None`: never, or a pass failed since).
    holds_refreshed: Option<std::time::Instant>,
    /// The waiting reason this process last wrote for each queued run, so a pass words and
    /// writes only those that changed. Emptied with the runs and whenever another process may
    /// have written reasons (a full reload).
    reasons: std::collections::HashMap<i64, WrittenReason>,
    /// What writing waiting reasons costs, to size the next pass's slice of them.
    pub reason_slice: Slice,
    /// What charging runs costs, to size the next pass's slice of them.
    pub charge_slice: Slice,
    /// What applying the core's starts and preemptions costs, to size the next pass's share
    /// of them ([`crate::scheduler::Outcome::moves_within`]).
    pub move_slice: Slice,
    /// The runs that held a pool's reservation after this process's last pass, for the next
    /// pass's [`crate::scheduler::Snapshot::reserved`] (a process that takes over starts
    /// without: its first pass reserves again).
    pub reserved: Vec<crate::scheduler::RunId>,
    /// The short runs' offered load per pool as last read, and when ([`Self::short_load`]).
    short_load: Vec<crate::scheduler::ShortLoad>,
    short_load_read: Option<std::time::Instant>,
}

/// How often a pass reads the short runs' offered load again: it moves slowly (a window of
/// [`USAGE_WINDOW_S`]), so once a minute is enough.
pub const SHORT_LOAD_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl LiveCache {
    /// The offered load of short runs per pool ([`crate::scheduler::ShortLoad`]): the
    /// GPU-seconds of time limit of the allocated runs (minimum runtime above 0) with a time
    /// limit of at most [`crate::scheduler::SHORT_RUN_S`] submitted in the last
    /// [`USAGE_WINDOW_S`] (whatever became of them), over the window's length, in milli-GPUs
    /// rounded up (so any short run in the window keeps a GPU). Unallocated runs do not count:
    /// the GPUs are kept from allocated runs, which come before unallocated work
    /// (docs/design.md section 3.7). The simulator keeps the same sum. Read at most once every
    /// [`SHORT_LOAD_EVERY`] (index `runs_short`); the last read otherwise.
    ///
    /// # Errors
    /// The database's.
    pub async fn short_load(
        &mut self,
        conn: &mut PgConnection,
    ) -> Result<Vec<crate::scheduler::ShortLoad>, sqlx::Error> {
        if self
            .short_load_read
            .is_none_or(|t| t.elapsed() >= SHORT_LOAD_EVERY)
        {
            let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
                "SELECT cluster_id, gpu_model_id, \
                        ceil(sum(gpus::numeric * time_limit_s) * 1000 / $2)::bigint \
                 FROM runs WHERE time_limit_s <= $1 AND min_runtime_s > 0 \
                 AND submitted_at > now() - make_interval(secs => $2) \
                 GROUP BY cluster_id, gpu_model_id ORDER BY 1, 2",
            )
            .bind(crate::scheduler::SHORT_RUN_S)
            .bind(USAGE_WINDOW_S as f64)
            .fetch_all(&mut *conn)
            .await?;
            self.short_load = rows
                .into_iter()
                .map(|(c, m, milli)| crate::scheduler::ShortLoad {
                    cluster: crate::scheduler::ClusterId(c),
                    model: crate::scheduler::ModelId(m),
                    milli_gpus: milli,
                })
                .collect();
            self.short_load_read = Some(std::time::Instant::now());
        }
        Ok(self.short_load.clone())
    }
}

/// Sizes a pass's slice of the work that may wait for the passes after it (waiting reasons to
/// write, runs to charge, the core's moves to apply) to a time budget, from what the earlier
/// slices cost (docs/design.md section 7, "Slices sized by time"). A slice's cost is a fixed
/// part (its statements) plus a cost per item; both are fitted by least squares to the recent
/// measures, each weighing half as much as the one after it, so a slice fills its budget as
/// soon as two measures of different sizes are known instead of creeping towards it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Slice {
    /// The measures' decayed sums: weight, items, ns, items squared, items times ns.
    sums: [f64; 5],
}

impl Slice {
    /// How many items fit `budget` at the fitted cost, from `floor` (so the work always
    /// advances, however slow the machine) to `ceiling`; `floor` before any measure.
    #[must_use]
    pub fn size(self, budget: std::time::Duration, floor: usize, ceiling: usize) -> usize {
        let floor = floor.min(ceiling);
        let Some((fixed, per_item)) = self.cost() else {
            return floor;
        };
        if per_item <= 0.0 {
            return ceiling;
        }
        let room = budget.as_nanos() as f64 - fixed;
        if room <= 0.0 {
            return floor;
        }
        ((room / per_item) as usize).clamp(floor, ceiling)
    }

    /// The fitted cost of a slice, ns: its fixed part and its cost per item. Where the recent
    /// measures' sizes hardly differ (their spread under a tenth of their mean) or the fit
    /// gives a negative part, the whole cost is taken per item (fixed part 0). `None` before
    /// any measure.
    #[must_use]
    pub fn cost(self) -> Option<(f64, f64)> {
        let [w, n, t, nn, nt] = self.sums;
        if w <= 0.0 || n <= 0.0 {
            return None;
        }
        let (mean_n, mean_t) = (n / w, t / w);
        let var = nn / w - mean_n * mean_n;
        let cov = nt / w - mean_n * mean_t;
        if var > (mean_n / 10.0).powi(2) && cov > 0.0 {
            let per_item = cov / var;
            let fixed = mean_t - per_item * mean_n;
            if fixed >= 0.0 {
                return Some((fixed, per_item));
            }
        }
        Some((0.0, mean_t / mean_n))
    }

    /// Records that a slice of `items` took `took` (a slice of none says nothing).
    pub fn record(&mut self, items: usize, took: std::time::Duration) {
        if items == 0 {
            return;
        }
        let (n, t) = (items as f64, took.as_nanos() as f64);
        for (sum, x) in self.sums.iter_mut().zip([1.0, n, t, n * n, n * t]) {
            *sum = *sum / 2.0 + x;
        }
    }
}

/// What a waiting reason's words follow from: the core's reason, the estimated start (s since
/// the epoch) and `context`, a fingerprint of everything else the words name (the run's
/// pool's offline GPUs, its cluster's jobs outside Tranche, the names of projects, nodes and
/// models). Equal values word alike, so a pass compares these before wording anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenReason {
    /// The core's reason.
    pub reason: crate::scheduler::WaitReason,
    /// Estimated start, s since the epoch.
    pub estimate: Option<i64>,
    /// Fingerprint of the words' other inputs.
    pub context: u64,
}

impl LiveRuns {
    /// The earliest instant (Unix seconds) after `now` at which a starting or running run
    /// reaches its time limit ([`Self::past_time_limit`] then lists it), if any: the scheduler
    /// loop wakes then instead of at its next tick.
    #[must_use]
    pub fn next_time_limit(&self, now: jiff::Timestamp) -> Option<i64> {
        let now_ns = now.as_nanosecond();
        self.running
            .values()
            .map(|r| r.started_at.saturating_add(r.time_limit_s))
            .filter(|&t| i128::from(t) * 1_000_000_000 > now_ns)
            .min()
    }

    /// Starting and running runs past their time limit at `now` (their start, rounded up to
    /// the second, plus the limit is not after `now`), by ascending id.
    #[must_use]
    pub fn past_time_limit(&self, now: jiff::Timestamp) -> Vec<i64> {
        let now_ns = now.as_nanosecond();
        self.running
            .values()
            .filter(|r| i128::from(r.started_at + r.time_limit_s) * 1_000_000_000 <= now_ns)
            .map(|r| r.id)
            .collect()
    }

    /// Starting and running runs with at least `every_s` seconds of their attempt uncharged at
    /// `now` (from their start rounded up to the second): at most `most` of them, those
    /// uncharged longest first (ties by id), by ascending id; and how many more are due.
    #[must_use]
    pub fn charge_due(&self, now: jiff::Timestamp, every_s: i64, most: usize) -> (Vec<i64>, usize) {
        let now_ns = now.as_nanosecond();
        let mut due: Vec<(i64, i64)> = self
            .running
            .values()
            .filter(|r| i128::from(r.started_at + r.charged_s + every_s) * 1_000_000_000 <= now_ns)
            .map(|r| (r.started_at + r.charged_s, r.id))
            .collect();
        let left = due.len().saturating_sub(most);
        if left > 0 {
            due.select_nth_unstable(most);
            due.truncate(most);
        }
        let mut ids: Vec<i64> = due.into_iter().map(|(_, id)| id).collect();
        ids.sort_unstable();
        (ids, left)
    }

    /// Reads every queued and running run and the usage inside the window (consuming the
    /// noted usage postings when `consume`: a pass does, a comparison does not).
    ///
    /// # Errors
    /// Database errors.
    pub async fn load_full(conn: &mut PgConnection, consume: bool) -> Result<Self, sqlx::Error> {
        let waiting: Vec<WaitingRow> = sqlx::query_as(WAITING_SQL).fetch_all(&mut *conn).await?;
        let running: Vec<RunningRow> = sqlx::query_as(&format!("{RUNNING_SQL} GROUP BY r.id"))
            .fetch_all(&mut *conn)
            .await?;
        Ok(Self {
            waiting: waiting.into_iter().map(|w| (w.0, w)).collect(),
            running: running.into_iter().map(|r| (r.id, r)).collect(),
            usage: UsageWindow::load(conn, consume).await?,
        })
    }

    /// Re-reads the runs `ids` as they are now: each leaves both maps and comes back where its
    /// state puts it (or nowhere once it is neither queued nor running).
    async fn reload(&mut self, conn: &mut PgConnection, ids: &[i64]) -> Result<(), sqlx::Error> {
        for id in ids {
            self.waiting.remove(id);
            self.running.remove(id);
        }
        let waiting: Vec<WaitingRow> = sqlx::query_as(&format!("{WAITING_SQL} AND id = ANY($1)"))
            .bind(ids)
            .fetch_all(&mut *conn)
            .await?;
        let running: Vec<RunningRow> =
            sqlx::query_as(&format!("{RUNNING_SQL} AND r.id = ANY($1) GROUP BY r.id"))
                .bind(ids)
                .fetch_all(&mut *conn)
                .await?;
        self.waiting.extend(waiting.into_iter().map(|w| (w.0, w)));
        self.running.extend(running.into_iter().map(|r| (r.id, r)));
        Ok(())
    }
}

impl LiveCache {
    /// Brings the runs up to date inside the caller's transaction, which must hold the pass
    /// lock ([`super::service::serialize_with_passes`]): consumes the visible `run_changes`,
    /// and re-reads those runs, or every run when this cache is empty or the cursor was
    /// written by another holder or pass since. If the transaction does not commit, the
    /// cursor keeps its old count and the next refresh reloads in full.
    ///
    /// # Errors
    /// Database errors (the cache is then emptied).
    pub async fn refresh(&mut self, conn: &mut PgConnection) -> Result<Refresh, sqlx::Error> {
        let result = self.refresh_inner(conn).await;
        if result.is_err() {
            self.runs = None;
        }
        result
    }

    async fn refresh_inner(&mut self, conn: &mut PgConnection) -> Result<Refresh, sqlx::Error> {
        let changed: Vec<i64> = sqlx::query_scalar("DELETE FROM run_changes RETURNING run_id")
            .fetch_all(&mut *conn)
            .await?;
        let (holder, passes): (Option<i64>, i64) =
            sqlx::query_as("SELECT holder, passes FROM snapshot_cursor FOR UPDATE")
                .fetch_one(&mut *conn)
                .await?;
        if self.holder == 0 {
            self.holder = loop {
                let h: i64 = rand::random();
                if h != 0 {
                    break h;
                }
            };
        }
        let current = holder == Some(self.holder) && passes == self.passes;
        let how = match self.runs.as_mut() {
            Some(runs) if current => {
                let ids: Vec<i64> = changed
                    .into_iter()
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if !ids.is_empty() {
                    runs.reload(conn, &ids).await?;
                }
                runs.usage.advance(conn).await?;
                Refresh::Incremental(ids.len())
            }
            _ => {
                if holder.is_some() && self.runs.is_some() {
                    tracing::info!(
                        "another pass consumed run changes since this one; reloading every run"
                    );
                }
                self.runs = Some(LiveRuns::load_full(conn, true).await?);
                // Another process may have written reasons meanwhile.
                self.reasons.clear();
                Refresh::Full
            }
        };
        self.passes = sqlx::query_scalar(
            "UPDATE snapshot_cursor SET holder = $1, passes = passes + 1 RETURNING passes",
        )
        .bind(self.holder)
        .fetch_one(&mut *conn)
        .await?;
        Ok(how)
    }

    /// The runs as of the last refresh (empty before the first).
    #[must_use]
    pub fn runs(&self) -> &LiveRuns {
        static EMPTY: std::sync::OnceLock<LiveRuns> = std::sync::OnceLock::new();
        self.runs
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(LiveRuns::default))
    }

    /// Sets the seconds charged of running runs, `(run, charged_s)`, as the pass's own charges
    /// wrote them (a write of `charged_s` alone notes no change, migration ...125). Runs not in
    /// the snapshot are skipped. If the pass's transaction does not commit, the caller clears
    /// the cache ([`Self::clear`]).
    pub fn set_charged(&mut self, charged: &[(i64, i64)]) {
        let Some(runs) = self.runs.as_mut() else {
            return;
        };
        for &(id, charged_s) in charged {
            if let Some(r) = runs.running.get_mut(&id) {
                r.charged_s = charged_s;
            }
        }
    }

    /// Forgets the runs: the next refresh reads every run (after a failed pass).
    pub fn clear(&mut self) {
        self.runs = None;
        self.exits_swept = None;
        self.holds_refreshed = None;
        self.reasons.clear();
        self.short_load_read = None;
    }

    /// Whether `reason`, `estimate` and `context` are what this process last wrote for queued
    /// run `id` ([`WrittenReason`]; then its words are too).
    pub fn reason_written(
        &self,
        id: i64,
        reason: &crate::scheduler::WaitReason,
        estimate: Option<i64>,
        context: u64,
    ) -> bool {
        self.reasons
            .get(&id)
            .is_some_and(|w| w.context == context && w.estimate == estimate && w.reason == *reason)
    }

    /// Records the reasons just written and forgets the runs no longer `waiting`.
    pub fn note_reasons(
        &mut self,
        written: Vec<(i64, WrittenReason)>,
        waiting: &std::collections::HashSet<i64>,
    ) {
        self.reasons.retain(|id, _| waiting.contains(id));
        self.reasons.extend(written);
    }

    /// Forgets what was written for run `id` (it started: its reason is NULL now).
    pub fn forget_reason(&mut self, id: i64) {
        self.reasons.remove(&id);
    }

    /// Forgets every reason written (someone else wrote reasons).
    pub fn forget_reasons(&mut self) {
        self.reasons.clear();
    }

    /// Whether this pass should look at every running run for ended attempts (the first
    /// pass, the first after a failed one, and then every `every`); records it when so.
    pub fn exit_sweep_due(&mut self, every: std::time::Duration) -> bool {
        let now = std::time::Instant::now();
        if self
            .exits_swept
            .is_some_and(|t| now.duration_since(t) < every)
        {
            return false;
        }
        self.exits_swept = Some(now);
        true
    }

    /// Whether this pass should rewrite `project_holds` ([`super::refresh_holds`]): when it
    /// started, stopped, ended or charged runs (`changed`), on the first pass, the first after
    /// a failed one, and then every `every` (for a writer that changed runs without it);
    /// records it when so.
    pub fn holds_due(&mut self, changed: bool, every: std::time::Duration) -> bool {
        let now = std::time::Instant::now();
        if !changed
            && self
                .holds_refreshed
                .is_some_and(|t| now.duration_since(t) < every)
        {
            return false;
        }
        self.holds_refreshed = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(id: i64, started_at: i64, time_limit_s: i64, charged_s: i64) -> RunningRow {
        RunningRow {
            id,
            project: 1,
            cluster: 1,
            model: 1,
            started_at,
            min_runtime_s: 0,
            time_limit_s,
            priority: 0,
            contract: None,
            charged_s,
            node_ids: vec![1],
            gpu_indices: vec![0],
        }
    }

    /// A slice is the floor until measured, then what fits the budget at the fitted fixed
    /// part and cost per item, never below the floor nor above the ceiling.
    #[test]
    fn slices_fit_the_budget_at_the_measured_cost() {
        use std::time::Duration;
        let ms = |x: f64| Duration::from_secs_f64(x / 1e3);
        let mut slice = Slice::default();
        assert_eq!(slice.size(ms(20.0), 100, 1_000), 100);
        // One measure, 1,000 items in 100 ms: all of it per item (100 us), 200 fit 20 ms.
        slice.record(1_000, ms(100.0));
        assert_eq!(slice.size(ms(20.0), 100, 1_000), 200);

        // Slices costing 10 ms plus 10 us an item: 100 in 11 ms, 500 in 15 ms, 300 in 13 ms.
        // The fit finds both parts, so 15 ms fits 500 and 12 ms 200 (taken all per item,
        // the mean of 110 and 30 us, 15 ms would fit 214).
        let mut fixed = Slice::default();
        fixed.record(100, ms(11.0));
        fixed.record(500, ms(15.0));
        assert_eq!(fixed.size(ms(15.001), 10, 1_000), 500);
        assert_eq!(fixed.size(ms(12.001), 10, 1_000), 200);
        fixed.record(300, ms(13.0));
        assert_eq!(fixed.size(ms(15.001), 10, 1_000), 500);
        // Nothing done says nothing.
        fixed.record(0, Duration::from_secs(5));
        assert_eq!(fixed.size(ms(15.001), 10, 1_000), 500);
        // The fixed part alone fills 9 ms: the floor.
        assert_eq!(fixed.size(ms(9.0), 10, 1_000), 10);

        // Equal sizes say nothing of a fixed part: 100 in 5 ms twice is 50 us an item.
        let mut equal = Slice::default();
        equal.record(100, ms(5.0));
        equal.record(100, ms(5.0));
        assert_eq!(equal.size(ms(20.0), 10, 1_000), 400);
        // A fit with a negative fixed part (100 in 1 ms, 500 in 15 ms) is taken all per item:
        // weighted means 366.67 items and 10.333 ms (the older measure counts half), 28.18 us
        // an item, so 709 fit 20 ms.
        let mut steep = Slice::default();
        steep.record(100, ms(1.0));
        steep.record(500, ms(15.0));
        assert_eq!(steep.size(ms(20.0), 10, 1_000), 709);

        // A slow machine still advances by the floor; a fast one stops at the ceiling.
        slice.record(10, Duration::from_secs(10));
        assert_eq!(slice.size(ms(20.0), 100, 1_000), 100);
        let mut fast = Slice::default();
        fast.record(1_000, Duration::from_micros(10));
        assert_eq!(fast.size(ms(20.0), 100, 1_000), 1_000);
        // A floor above the ceiling is the ceiling.
        assert_eq!(fast.size(ms(20.0), 5_000, 1_000), 1_000);
    }

    #[test]
    fn time_limits_and_charges_fall_due_at_their_second() {
        let runs = LiveRuns {
            waiting: BTreeMap::new(),
            running: [
                running(3, 1_000, 100, 0),
                running(1, 1_000, 50, 40),
                running(2, 1_010, 100, 0),
            ]
            .into_iter()
            .map(|r| (r.id, r))
            .collect(),
            ..LiveRuns::default()
        };
        let at = |s: i64, ms: i64| jiff::Timestamp::new(s, (ms * 1_000_000) as i32).unwrap();
        // Run 1 ends its limit at 1,050; runs 3 and 2 at 1,100 and 1,110.
        assert_eq!(runs.past_time_limit(at(1_049, 999)), Vec::<i64>::new());
        assert_eq!(runs.past_time_limit(at(1_050, 0)), vec![1]);
        assert_eq!(runs.past_time_limit(at(1_100, 500)), vec![1, 3]);
        assert_eq!(runs.past_time_limit(at(1_110, 0)), vec![1, 2, 3]);
        // The loop's next wake-up for a limit: the first after now, past ones aside.
        assert_eq!(runs.next_time_limit(at(1_049, 999)), Some(1_050));
        assert_eq!(runs.next_time_limit(at(1_050, 0)), Some(1_100));
        assert_eq!(runs.next_time_limit(at(1_100, 500)), Some(1_110));
        assert_eq!(runs.next_time_limit(at(1_110, 0)), None);
        // Uncharged seconds: run 1 from 1,040, run 3 from 1,000, run 2 from 1,010.
        let all = usize::MAX;
        assert_eq!(runs.charge_due(at(1_059, 999), 60, all), (vec![], 0));
        assert_eq!(runs.charge_due(at(1_060, 0), 60, all), (vec![3], 0));
        assert_eq!(runs.charge_due(at(1_070, 0), 60, all), (vec![2, 3], 0));
        assert_eq!(runs.charge_due(at(1_100, 0), 60, all), (vec![1, 2, 3], 0));
        // Bounded: the longest uncharged first (3 from 1,000, then 2 from 1,010), the rest
        // counted.
        assert_eq!(runs.charge_due(at(1_100, 0), 60, 2), (vec![2, 3], 1));
        assert_eq!(runs.charge_due(at(1_100, 0), 60, 1), (vec![3], 2));
        assert_eq!(runs.charge_due(at(1_100, 0), 60, 0), (vec![], 3));
    }

    #[test]
    fn weighted_usage_rounds_the_weighted_sum_as_postgresql_rounds_numeric() {
        let usage = UsageWindow {
            seconds: [((1, 10), 3), ((1, 20), 1), ((2, 10), 1), ((3, 30), 7)]
                .into_iter()
                .collect(),
            since: None,
        };
        // Model 10 weighs 1.5, model 20 weighs 1.0 and model 30 has no weight (gone).
        let weight = |m: i64| match m {
            10 => Some(1_500),
            20 => Some(1_000),
            _ => None,
        };
        let got = usage.weighted(weight);
        // Project 1: 3 x 1.5 + 1 x 1.0 = 5.5, rounded half away from zero; project 2: 1.5.
        assert_eq!(got.get(&1), Some(&6));
        assert_eq!(got.get(&2), Some(&2));
        assert_eq!(got.get(&3), None);
    }
}
