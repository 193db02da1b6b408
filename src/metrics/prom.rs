//! The Prometheus exposition served at `/metrics` (text format 0.0.4), with the
//! `prometheus-client` crate (the Prometheus project's own Rust client: text encoding, label
//! sets as types, histograms).
//!
//! Names follow Prometheus' conventions: a `tranche_` prefix, base units (seconds), `_total`
//! on counters, and labels whose values are bounded by the installation (clusters, GPU models,
//! projects, classes, reasons, route templates; never run ids or raw URLs). docs/metrics.md
//! lists every series next to the Kueue and KAI names an operator knows.
//!
//! Counters and histograms (HTTP requests, preemptions, pass durations, admission waits) are
//! this process's own, from its start; gauges (runs, GPUs, balances, agent sessions) are read
//! from PostgreSQL at each scrape, so every replica answers the same for them.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use sqlx::PgPool;

/// Labels of HTTP requests: the matched route template (`/runs/{id}`, `unmatched` when no
/// route matched), the method and the status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// Route template.
    pub route: String,
    /// Method.
    pub method: String,
    /// Status code.
    pub status: u16,
}

/// A preemption's reason (the core's [`crate::scheduler::reason::PreemptReason`] kind).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// `unallocated`, `fair_share`, `entitlement`, `contract`, `node_draining`, `node_down`, `legacy_quota`.
    pub reason: String,
}

/// A run class: `debug`, `protected` or `unallocated` ([`crate::metrics::DEBUG_MAX_MIN_RUNTIME_S`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabels {
    /// Class.
    pub class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitingLabels {
    cluster: String,
    project: String,
    class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunningLabels {
    cluster: String,
    class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GpuLabels {
    cluster: String,
    gpu_model: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectLabels {
    project: String,
    currency: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabels {
    cluster: String,
}

type FGauge = Gauge<f64, AtomicU64>;

/// The registry and every series. One per process, in [`crate::state::AppState`].
pub struct Metrics {
    registry: Registry,
    http: Family<HttpLabels, Counter>,
    preemptions: Family<ReasonLabels, Counter>,
    pass: Histogram,
    admission: Family<ClassLabels, Histogram>,
    waiting: Family<WaitingLabels, Gauge>,
    running: Family<RunningLabels, Gauge>,
    gpus: Family<GpuLabels, Gauge>,
    balance: Family<ProjectLabels, FGauge>,
    sessions: Family<ClusterLabels, Gauge>,
    refresh: tokio::sync::Mutex<()>,
    /// The latest scheduling passes' durations, s, oldest first (at most [`RECENT_PASSES`]).
    recent_passes: std::sync::Mutex<std::collections::VecDeque<f64>>,
}

/// How many pass durations [`Metrics::recent_passes`] keeps.
pub const RECENT_PASSES: usize = 10_000;

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// The class label of a run with minimum runtime `min_runtime_s`.
pub fn class_of(min_runtime_s: i64) -> &'static str {
    if min_runtime_s == 0 {
        "unallocated"
    } else if min_runtime_s <= super::DEBUG_MAX_MIN_RUNTIME_S {
        "debug"
    } else {
        "protected"
    }
}

impl Metrics {
    /// An empty registry with every series declared.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("tranche");
        let http = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by matched route template, method and status",
            http.clone(),
        );
        let preemptions = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "preemptions",
            "Runs preempted by the scheduling core, by reason",
            preemptions.clone(),
        );
        let pass = Histogram::new(exponential_buckets(0.001, 2.0, 14));
        registry.register_with_unit(
            "scheduling_pass_duration",
            "Duration of scheduling passes (load, core, apply)",
            Unit::Seconds,
            pass.clone(),
        );
        let admission = Family::<ClassLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(1.0, 4.0, 10))
        });
        registry.register_with_unit(
            "admission_wait_time",
            "Time from entering the queue to the start decision, by class (like kueue_admission_wait_time_seconds)",
            Unit::Seconds,
            admission.clone(),
        );
        let waiting = Family::<WaitingLabels, Gauge>::default();
        registry.register(
            "runs_waiting",
            "Runs queued (waiting for GPUs) or waiting for approval, by cluster, project and class (like kueue_pending_workloads)",
            waiting.clone(),
        );
        let running = Family::<RunningLabels, Gauge>::default();
        registry.register(
            "runs_running",
            "Runs starting, running or stopping, by cluster and class",
            running.clone(),
        );
        let gpus = Family::<GpuLabels, Gauge>::default();
        registry.register(
            "gpus",
            "GPUs by cluster, model and state: allocated, unallocated (held by runs of that kind), idle (up and served, no run), draining (no run), down (down, lost, or not yet served by an agent: no run can start there) (like KAI's queue_allocated_gpus)",
            gpus.clone(),
        );
        let balance = Family::<ProjectLabels, FGauge>::default();
        registry.register(
            "project_budget_balance",
            "Project budget balance of the current period, in major units of the currency (minor units / 100)",
            balance.clone(),
        );
        let sessions = Family::<ClusterLabels, Gauge>::default();
        registry.register(
            "agent_sessions",
            "Live node agent sessions by cluster",
            sessions.clone(),
        );
        Self {
            registry,
            http,
            preemptions,
            pass,
            admission,
            waiting,
            running,
            gpus,
            balance,
            sessions,
            refresh: tokio::sync::Mutex::new(()),
            recent_passes: std::sync::Mutex::default(),
        }
    }

    /// Counts one answered HTTP request.
    pub fn http_request(&self, route: &str, method: &str, status: u16) {
        self.http
            .get_or_create(&HttpLabels {
                route: route.to_string(),
                method: method.to_string(),
                status,
            })
            .inc();
    }

    /// Counts one preemption with its reason kind.
    pub fn preempted(&self, reason: &str) {
        self.preemptions
            .get_or_create(&ReasonLabels {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Records one scheduling pass's duration, s.
    pub fn pass_duration(&self, seconds: f64) {
        self.pass.observe(seconds);
        let mut recent = self
            .recent_passes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if recent.len() >= RECENT_PASSES {
            recent.pop_front();
        }
        recent.push_back(seconds);
    }

    /// The durations of the latest passes of this process, s, oldest first
    /// (`tranche bench runs` reads them).
    pub fn recent_passes(&self) -> Vec<f64> {
        self.recent_passes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .copied()
            .collect()
    }

    /// Records the queue wait of a run the core started, s.
    pub fn admission_wait(&self, min_runtime_s: i64, seconds: f64) {
        self.admission
            .get_or_create(&ClassLabels {
                class: class_of(min_runtime_s).to_string(),
            })
            .observe(seconds.max(0.0));
    }

    /// Reads the gauges from the database and encodes every series in the text format.
    ///
    /// # Errors
    /// Database errors.
    pub async fn render(
        &self,
        pool: &PgPool,
        site: &crate::config::Site,
    ) -> Result<String, crate::error::AppError> {
        let _one = self.refresh.lock().await;
        let waiting: Vec<(String, String, i64, i64)> = sqlx::query_as(
            "SELECT c.name, t.name, r.min_runtime_s, count(*) FROM runs r JOIN clusters c ON c.id = r.cluster_id \
             JOIN tree_nodes t ON t.id = r.project_id WHERE r.state IN ('queued', 'waiting_approval') \
             GROUP BY c.name, t.name, r.min_runtime_s",
        )
        .fetch_all(pool)
        .await?;
        self.waiting.clear();
        for (cluster, project, min_rt, n) in waiting {
            self.waiting
                .get_or_create(&WaitingLabels {
                    cluster,
                    project,
                    class: class_of(min_rt).to_string(),
                })
                .inc_by(n);
        }
        let running: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT c.name, r.min_runtime_s, count(*) FROM runs r JOIN clusters c ON c.id = r.cluster_id \
             WHERE r.state IN ('starting', 'running', 'stopping') GROUP BY c.name, r.min_runtime_s",
        )
        .fetch_all(pool)
        .await?;
        self.running.clear();
        for (cluster, min_rt, n) in running {
            self.running
                .get_or_create(&RunningLabels {
                    cluster,
                    class: class_of(min_rt).to_string(),
                })
                .inc_by(n);
        }
        // Each GPU in exactly one state. A run is allocated while its minimum runtime is above
        // zero and its current attempt has not gone on unallocated (budget spent).
        let gpus: Vec<(String, String, String, i64)> = sqlx::query_as(
            "WITH g AS ( \
               SELECT n.cluster_id, n.gpu_model_id, n.state AS node_state, \
                      n.agent_session IS NULL AS offline, \
                      h.run_id, gs.i \
               FROM nodes n CROSS JOIN LATERAL generate_series(0, n.gpu_count - 1) AS gs(i) \
               LEFT JOIN gpu_holds h ON h.node_id = n.id AND h.gpu_index = gs.i) \
             SELECT c.name, m.name, CASE \
                      WHEN g.node_state = 'down' OR g.offline THEN 'down' \
                      WHEN g.run_id IS NOT NULL AND r.min_runtime_s > 0 AND NOT EXISTS (SELECT 1 FROM run_events e \
                           WHERE e.run_id = r.id AND e.attempt = r.attempt AND e.kind = 'unallocated') THEN 'allocated' \
                      WHEN g.run_id IS NOT NULL THEN 'unallocated' \
                      WHEN g.node_state = 'draining' THEN 'draining' \
                      ELSE 'idle' END AS s, count(*) \
             FROM g JOIN clusters c ON c.id = g.cluster_id JOIN gpu_models m ON m.id = g.gpu_model_id \
             LEFT JOIN runs r ON r.id = g.run_id GROUP BY 1, 2, 3",
        )
        .fetch_all(pool)
        .await?;
        self.gpus.clear();
        for (cluster, gpu_model, state, n) in gpus {
            self.gpus
                .get_or_create(&GpuLabels {
                    cluster,
                    gpu_model,
                    state,
                })
                .set(n);
        }
        let period = crate::ledger::Period::containing(jiff::Timestamp::now(), site);
        let balances: Vec<(String, i64)> = sqlx::query_as(
            "SELECT t.name, a.balance_minor FROM ledger_accounts a JOIN tree_nodes t ON t.id = a.project_id \
             WHERE a.kind = 'project_budget' AND a.period_start = $1 AND NOT t.archived",
        )
        .bind(period.bounds().0)
        .fetch_all(pool)
        .await?;
        self.balance.clear();
        for (project, minor) in balances {
            self.balance
                .get_or_create(&ProjectLabels {
                    project,
                    currency: site.currency.clone(),
                })
                .set(minor as f64 / 100.0);
        }
        let sessions: Vec<(String, i64)> = sqlx::query_as(
            "SELECT c.name, count(DISTINCT n.agent_session) FROM clusters c \
             LEFT JOIN nodes n ON n.cluster_id = c.id AND n.agent_session IS NOT NULL GROUP BY c.name",
        )
        .fetch_all(pool)
        .await?;
        self.sessions.clear();
        for (cluster, n) in sessions {
            self.sessions
                .get_or_create(&ClusterLabels { cluster })
                .set(n);
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).map_err(|e| {
            crate::error::AppError::Internal(anyhow::anyhow!("encoding metrics: {e}"))
        })?;
        Ok(to_text_format(&out))
    }
}

/// Turns the crate's OpenMetrics text into the Prometheus text format 0.0.4 that every
/// scraper and `promtool check metrics` read: a counter family's `# HELP` and `# TYPE` carry
/// its sample name (`x_total`), and the OpenMetrics-only `# UNIT` and `# EOF` lines go (the
/// unit is already the name's suffix). Samples are the same in both formats.
pub fn to_text_format(open_metrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = open_metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(open_metrics.len() + 64);
    for line in open_metrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let meta = line
            .strip_prefix("# HELP ")
            .map(|r| ("# HELP ", r))
            .or_else(|| line.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
        match meta {
            Some((kind, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push_str(kind);
                out.push_str(name);
                if counters.contains(name) {
                    out.push_str("_total");
                }
                out.push(' ');
                out.push_str(tail);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_named_by_their_samples_and_openmetrics_lines_go() {
        let om = "# HELP tranche_x Things.\n# TYPE tranche_x counter\ntranche_x_total{a=\"1\"} 2\n# HELP tranche_d_seconds D.\n# TYPE tranche_d_seconds histogram\n# UNIT tranche_d_seconds seconds\ntranche_d_seconds_sum 1.0\n# EOF\n";
        assert_eq!(
            to_text_format(om),
            "# HELP tranche_x_total Things.\n# TYPE tranche_x_total counter\ntranche_x_total{a=\"1\"} 2\n# HELP tranche_d_seconds D.\n# TYPE tranche_d_seconds histogram\ntranche_d_seconds_sum 1.0\n"
        );
    }
}
