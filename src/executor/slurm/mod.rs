//! The Slurm executor (docs/slurm.md): Tranche decides, a Slurm cluster runs the work.
//!
//! - [`add_cluster`] (`tranche admin add-slurm-cluster`) reads a partition's nodes and their
//!   GPUs from `sinfo --json` and creates or refreshes the cluster's inventory, audited.
//! - [`Bridge`], one per Slurm cluster inside `tranche serve` ([`spawn`]; one replica at a time,
//!   elected by an advisory lock), is the cluster's [`Executor`]: each round it follows the
//!   nodes' states and the jobs outside Tranche (`sinfo`, `squeue`), submits each start as one
//!   job pinned to the pass's nodes (`sbatch --nodelist --gres=gpu:N --time`), stops with
//!   `scancel --signal=TERM --full` and, after the grace period, `--signal=KILL` and `scancel`,
//!   and reports each job's state; the pass turns them into run states and charges exactly as
//!   it does agents' exits.
//! - [`cli`] calls the tools with a timeout and parses their answers.
//!
//! A job is named `tranche-RUN-ATTEMPT`: before submitting, the bridge looks for a job of that
//! name, so an `sbatch` whose answer was lost (a timeout, a controller restart) is adopted, not
//! submitted twice.

pub mod cli;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::{PgConnection, PgPool};

use crate::config::SlurmSettings;
use crate::db::audit::{self, Change};
use crate::error::AppError;
use crate::executor::{
    Assignment, Executor, ExecutorError, ExecutorKind, ProcessReport, StopOrder,
};
use crate::i18n::said::Said;
use crate::runs::{event, service, wake};
use crate::state::AppState;

use cli::{CliError, JobSpec, SlurmJob};

/// Advisory lock key held (session level) by the replica whose bridges drive Slurm.
const BRIDGE_LOCK: i64 = 0x7472_616e_6368_6503;
/// Longest pause between rounds while a controller does not answer: 30 s, or 10 polls when
/// that is shorter.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The value of `nodes.agent_session` for nodes Slurm serves (they count as live while the
/// partition lists them; their state follows Slurm's).
pub const SLURM_SESSION: &str = "slurm";

/// What [`add_cluster`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InventoryChange {
    /// Whether the cluster was created now.
    pub created: bool,
    /// Nodes added (name, GPUs).
    pub added: Vec<(String, u32)>,
    /// Nodes whose GPU count or model changed.
    pub changed: Vec<String>,
    /// Nodes no longer in the partition (kept, marked down: their history stays).
    pub removed: Vec<String>,
    /// Nodes of the partition left out because Slurm lists no GPU on them.
    pub without_gpus: Vec<String>,
}

impl InventoryChange {
    /// One line for the command line.
    pub fn describe(&self, cluster: &str) -> String {
        let names = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let added: Vec<String> = self
            .added
            .iter()
            .map(|(n, g)| format!("{n} ({g} GPUs)"))
            .collect();
        format!(
            "{} Slurm cluster {cluster}: added {}; changed {}; removed {}; without GPUs (left out) {}",
            if self.created { "created" } else { "refreshed" },
            names(&added),
            names(&self.changed),
            names(&self.removed),
            names(&self.without_gpus),
        )
    }
}

fn unreachable(e: CliError) -> AppError {
    match e {
        CliError::Unreachable(m) => AppError::Refused {
            code: "slurm_unreachable",
            message: format!("the Slurm controller does not answer: {m}"),
        },
        CliError::Refused(m) => AppError::Refused {
            code: "slurm_refused",
            message: format!("Slurm refused: {m}"),
        },
    }
}

/// Creates the cluster `name` served by Slurm's partition `partition`, or refreshes its
/// inventory and the partition's MaxTime (`scontrol show partition`; runs asking for longer are
/// refused at submission): every node of the partition with GPUs (gres `gpu`) becomes a node
/// of the cluster with Slurm's GPU count, of `gpu_model` (or of the model named like Slurm's GPU type,
/// e.g. `gpu:h100:8`); nodes no longer listed are marked down. Audited as `cluster.create`,
/// `node.add`, `node.update` and `node.remove`, by the system (the command line).
///
/// # Errors
/// Invalid (name, partition that does not exist, partition without GPU nodes, unknown GPU
/// model, a cluster of that name served by agents), Refused (`slurm_unreachable` when the
/// controller does not answer); database errors.
pub async fn add_cluster(
    pool: &PgPool,
    settings: &SlurmSettings,
    name: &str,
    partition: &str,
    gpu_model: Option<&str>,
) -> Result<InventoryChange, AppError> {
    let name =
        crate::domain::ident(name, "cluster", 64).map_err(|m| AppError::invalid("name", m))?;
    let partition = crate::domain::ident(partition, "partition", 128)
        .map_err(|m| AppError::invalid("partition", m))?;
    let answer = cli::call(settings, "sinfo", &["--json".into()], None)
        .await
        .map_err(unreachable)?;
    let nodes = cli::parse_sinfo(&answer, &partition)
        .map_err(|m| AppError::Internal(anyhow::anyhow!(m)))?
        .ok_or_else(|| {
            AppError::invalid(
                "partition",
                format!(
                    "Slurm has no partition {} (or it has no nodes)",
                    crate::domain::quote(&partition)
                ),
            )
        })?;
    let (with, without): (Vec<_>, Vec<_>) = nodes.into_iter().partition(|n| n.gpus > 0);
    let mut change = InventoryChange {
        without_gpus: without.iter().map(|n| n.name.clone()).collect(),
        ..InventoryChange::default()
    };
    if with.is_empty() {
        return Err(AppError::invalid(
            "partition",
            format!(
                "no node of partition {} has GPUs (gres gpu): {}",
                crate::domain::quote(&partition),
                change.without_gpus.join(", ")
            ),
        ));
    }
    if let Some(n) = with.iter().find(|n| n.gpus > 64) {
        return Err(AppError::invalid(
            "partition",
            format!(
                "node {} has {} GPUs; Tranche takes 1 to 64 per node",
                n.name, n.gpus
            ),
        ));
    }
    // The partition's MaxTime: longer runs are refused at submission.
    let shown = cli::call(
        settings,
        "scontrol",
        &[
            "show".into(),
            "partition".into(),
            partition.clone(),
            "--oneliner".into(),
        ],
        None,
    )
    .await
    .map_err(unreachable)?;
    let max_time_s = cli::partition_max_time_s(&shown);
    let models = crate::db::inventory::gpu_models(pool).await?;
    let model_of = |n: &cli::SlurmNode| -> Result<(i64, String), AppError> {
        let wanted = gpu_model.map(str::trim).or(n.gpu_type.as_deref());
        let Some(wanted) = wanted else {
            return Err(AppError::invalid(
                "gpu_model",
                format!(
                    "Slurm names no GPU type on node {}; name the GPU model with --gpu-model",
                    n.name
                ),
            ));
        };
        models
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case(wanted))
            .map(|m| (m.id, m.name.clone()))
            .ok_or_else(|| {
                AppError::invalid(
                    "gpu_model",
                    format!(
                        "there is no GPU model named {} (add it on the admin page first)",
                        crate::domain::quote(wanted)
                    ),
                )
            })
    };
    let mut tx = pool.begin().await?;
    let existing: Option<(i64, String)> = sqlx::query_as(
        "SELECT id, executor FROM clusters WHERE lower(name) = lower($1) FOR UPDATE",
    )
    .bind(&name)
    .fetch_optional(&mut *tx)
    .await?;
    let cluster = match existing {
        Some((_, executor)) if executor != "slurm" => {
            return Err(AppError::invalid(
                "name",
                format!("cluster {name} is served by node agents, not by Slurm"),
            ));
        }
        Some((id, _)) => {
            sqlx::query(
                "UPDATE clusters SET slurm_partition = $2, slurm_max_time_s = $3 WHERE id = $1",
            )
            .bind(id)
            .bind(&partition)
            .bind(max_time_s)
            .execute(&mut *tx)
            .await?;
            id
        }
        None => {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO clusters (name, executor, slurm_partition, slurm_max_time_s) VALUES ($1, 'slurm', $2, $3) RETURNING id",
            )
            .bind(&name)
            .bind(&partition)
            .bind(max_time_s)
            .fetch_one(&mut *tx)
            .await?;
            audit::record(
                &mut *tx,
                Change {
                    actor: None,
                    action: "cluster.create",
                    entity: "cluster",
                    entity_id: Some(id),
                    node_id: None,
                    before: None,
                    after: Some(json!({"name": name, "executor": "slurm", "partition": partition})),
                },
            )
            .await?;
            change.created = true;
            id
        }
    };
    let known: Vec<(i64, String, i32, i64, String)> = sqlx::query_as(
        "SELECT n.id, n.name, n.gpu_count, n.gpu_model_id, m.name FROM nodes n JOIN gpu_models m ON m.id = n.gpu_model_id \
         WHERE n.cluster_id = $1 ORDER BY n.id",
    )
    .bind(cluster)
    .fetch_all(&mut *tx)
    .await?;
    let listed: HashSet<&str> = with.iter().map(|n| n.name.as_str()).collect();
    for n in &with {
        let (model_id, model) = model_of(n)?;
        match known.iter().find(|k| k.1 == n.name) {
            Some((id, _, gpus, old_model, old_name)) => {
                if *gpus as u32 != n.gpus || *old_model != model_id {
                    sqlx::query("UPDATE nodes SET gpu_count = $2, gpu_model_id = $3 WHERE id = $1")
                        .bind(id)
                        .bind(n.gpus as i32)
                        .bind(model_id)
                        .execute(&mut *tx)
                        .await?;
                    audit::record(
                        &mut *tx,
                        Change {
                            actor: None,
                            action: "node.update",
                            entity: "cluster_node",
                            entity_id: Some(*id),
                            node_id: None,
                            before: Some(
                                json!({"name": n.name, "gpu_model": old_name, "gpu_count": gpus}),
                            ),
                            after: Some(
                                json!({"name": n.name, "gpu_model": model, "gpu_count": n.gpus}),
                            ),
                        },
                    )
                    .await?;
                    change.changed.push(n.name.clone());
                }
            }
            None => {
                let id = crate::db::inventory::insert_node(
                    &mut tx,
                    None,
                    (cluster, &name),
                    &n.name,
                    &model,
                    &n.gpus.to_string(),
                )
                .await?;
                sqlx::query("UPDATE nodes SET state = $2, executor_state = $3, agent_session = $4, agent_seen_at = now(), agent_label = 'Slurm' WHERE id = $1")
                    .bind(id)
                    .bind(n.state.as_str())
                    .bind(&n.words)
                    .bind(SLURM_SESSION)
                    .execute(&mut *tx)
                    .await?;
                change.added.push((n.name.clone(), n.gpus));
            }
        }
    }
    for (id, node, _, _, _) in &known {
        if !listed.contains(node.as_str()) {
            let before: String = sqlx::query_scalar("SELECT state FROM nodes WHERE id = $1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
            if before == "down" {
                continue;
            }
            sqlx::query("UPDATE nodes SET state = 'down', executor_state = $2 WHERE id = $1")
                .bind(id)
                .bind(format!("not in partition {partition}"))
                .execute(&mut *tx)
                .await?;
            audit::record(
                &mut *tx,
                Change {
                    actor: None,
                    action: "node.remove",
                    entity: "cluster_node",
                    entity_id: Some(*id),
                    node_id: None,
                    before: Some(json!({"name": node, "state": before})),
                    after: Some(json!({"name": node, "state": "down", "why": format!("not in Slurm partition {partition}")})),
                },
            )
            .await?;
            change.removed.push(node.clone());
        }
    }
    wake(&mut tx).await?;
    tx.commit().await?;
    Ok(change)
}

/// One Slurm cluster's executor.
pub struct Bridge {
    state: AppState,
    cluster: i64,
    /// Names this installation and cluster in its jobs' comments (see [`cli::job_comment`]).
    tag: String,
    partition: String,
    /// Pause before the next round after failures (0 while the controller answers).
    backoff: Duration,
    /// No round before this instant (backoff).
    not_before: Option<Instant>,
    /// This installation's reservations (contracts) as last seen.
    reservations: Vec<cli::Reservation>,
    /// Jobs of ours that `squeue` did not list, since when ([`Bridge::gone`]).
    missing_since: HashMap<i64, Instant>,
}

/// How long a job of ours may be missing from `squeue` before it counts as gone (lost, or its
/// processes exited): longer than a restarted controller takes to list its jobs again (its
/// first answers listed none of the jobs still running, and their runs were ended as lost
/// while Slurm kept running them; found by a new-user check).
const VANISH_AFTER: Duration = Duration::from_secs(60);

/// A Slurm job Tranche submitted, as the database remembers it.
#[derive(Debug, Clone, sqlx::FromRow)]
struct KnownJob {
    run_id: i64,
    attempt: i32,
    job_id: i64,
    signalled_at: Option<time::OffsetDateTime>,
    cancelled_at: Option<time::OffsetDateTime>,
}

impl Bridge {
    /// The executor of cluster `cluster` (a Slurm cluster) reading partition `partition`.
    pub fn new(state: AppState, cluster: i64, partition: String, tag: String) -> Self {
        Self {
            state,
            cluster,
            tag,
            partition,
            backoff: Duration::ZERO,
            not_before: None,
            reservations: Vec::new(),
            missing_since: HashMap::new(),
        }
    }

    /// Whether job `job`, not listed by this round's `squeue`, has been missing for
    /// [`VANISH_AFTER`] (counted from the first round that missed it).
    fn gone(&mut self, job: i64, now: Instant) -> bool {
        let since = *self.missing_since.entry(job).or_insert(now);
        now.duration_since(since) >= VANISH_AFTER
    }

    fn settings(&self) -> &SlurmSettings {
        &self.state.site.slurm
    }

    /// Runs one round with this cluster's current orders, unless backing off; records an
    /// unreachable controller (since when, why) on the cluster and backs off (doubling, up to
    /// 30 s), and clears it when the controller answers again.
    ///
    /// # Errors
    /// Database errors.
    pub async fn tick(&mut self) -> Result<(), AppError> {
        if self.not_before.is_some_and(|t| Instant::now() < t) {
            return Ok(());
        }
        let pool = self.state.pool.clone();
        let nodes: Vec<i64> = sqlx::query_scalar("SELECT id FROM nodes WHERE cluster_id = $1")
            .bind(self.cluster)
            .fetch_all(&pool)
            .await?;
        let (assignments, stops) = crate::executor::orders(
            &pool,
            &self.state.secret_key,
            &nodes,
            self.state.site.grace_s,
        )
        .await?;
        match self.round(&assignments, &stops).await {
            Ok(()) => {
                self.backoff = Duration::ZERO;
                self.not_before = None;
                let mut tx = pool.begin().await?;
                let back = sqlx::query(
                    "UPDATE clusters SET executor_down_since = NULL, executor_error = NULL WHERE id = $1 AND executor_down_since IS NOT NULL",
                )
                .bind(self.cluster)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if back > 0 {
                    tracing::info!(cluster = self.cluster, "the Slurm controller answers again");
                    wake(&mut tx).await?;
                }
                tx.commit().await?;
                Ok(())
            }
            Err(ExecutorError::Unreachable(why)) => {
                self.backoff = (self.backoff * 2)
                    .max(self.settings().poll)
                    .min(BACKOFF_MAX.min(self.settings().poll * 10));
                self.not_before = Some(Instant::now() + self.backoff);
                let mut tx = pool.begin().await?;
                sqlx::query(
                    "UPDATE clusters SET executor_down_since = COALESCE(executor_down_since, now()), executor_error = $2 WHERE id = $1",
                )
                .bind(self.cluster)
                .bind(why.chars().take(500).collect::<String>())
                .execute(&mut *tx)
                .await?;
                wake(&mut tx).await?;
                tx.commit().await?;
                tracing::warn!(cluster = self.cluster, error = %why, retry_in_s = self.backoff.as_secs(), "the Slurm controller does not answer");
                Ok(())
            }
            Err(ExecutorError::Database(e)) => Err(e.into()),
            Err(ExecutorError::App(e)) => Err(e),
        }
    }

    /// The reservation of a contract that holds any of `nodes` now (Tranche's jobs run inside
    /// it: Tranche is its user and decides who gets its GPUs).
    fn reservation_now(&self, nodes: &[String]) -> Option<String> {
        let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::system());
        let now = now.strftime("%Y-%m-%dT%H:%M:%S").to_string();
        self.reservations
            .iter()
            .find(|r| r.start <= now && now < r.end && r.nodes.iter().any(|n| nodes.contains(n)))
            .map(|r| r.name.clone())
    }

    /// Mirrors the cluster's capacity contracts as Slurm reservations: one per active
    /// contract for its window, of as many whole nodes as its GPUs need (Slurm 22.05 reserves
    /// whole nodes), for Tranche's user only; a cancelled or ended contract's reservation is
    /// deleted.
    async fn mirror_contracts(&mut self, pool: &PgPool) -> Result<(), ExecutorError> {
        let settings = self.settings().clone();
        let text = cli::call(
            &settings,
            "scontrol",
            &["show".into(), "reservation".into(), "--oneliner".into()],
            None,
        )
        .await
        .map_err(|e| ExecutorError::Unreachable(e.to_string()))?;
        let existing = cli::parse_reservations(&text);
        let prefix = "tranche-contract-";
        let contracts: Vec<(i64, i32, String, time::OffsetDateTime, time::OffsetDateTime, i32)> = sqlx::query_as(
            "SELECT c.id, c.gpus, c.state, c.starts_at, c.ends_at, \
                    COALESCE((SELECT max(n.gpu_count) FROM nodes n WHERE n.cluster_id = c.cluster_id AND n.gpu_model_id = c.gpu_model_id), 1) \
             FROM contracts c WHERE c.cluster_id = $1 AND (c.slurm_reservation IS NOT NULL OR (c.state = 'active' AND c.ends_at > now())) ORDER BY c.id",
        )
        .bind(self.cluster)
        .fetch_all(pool)
        .await?;
        let user = match &settings.user {
            Some(u) => u.clone(),
            None => nix::unistd::User::from_uid(nix::unistd::geteuid())
                .ok()
                .flatten()
                .map_or_else(|| "root".to_string(), |u| u.name),
        };
        for (id, gpus, state, starts, ends, per_node) in contracts {
            let name = cli::reservation_name(&self.tag, id);
            let exists = existing.iter().any(|r| r.name == name);
            let wanted = state == "active" && ends > time::OffsetDateTime::now_utc();
            if wanted && !exists {
                let local = |t: time::OffsetDateTime| {
                    crate::ledger::to_jiff(t)
                        .to_zoned(jiff::tz::TimeZone::system())
                        .strftime("%Y-%m-%dT%H:%M:%S")
                        .to_string()
                };
                let start = if starts <= time::OffsetDateTime::now_utc() {
                    "now".to_string()
                } else {
                    local(starts)
                };
                let nodes = (gpus + per_node.max(1) - 1) / per_node.max(1);
                let args: Vec<String> = vec![
                    "create".into(),
                    "reservation".into(),
                    format!("ReservationName={name}"),
                    format!("StartTime={start}"),
                    format!("EndTime={}", local(ends)),
                    format!("PartitionName={}", self.partition),
                    format!("NodeCnt={nodes}"),
                    format!("Users={user}"),
                    "Flags=IGNORE_JOBS".into(),
                ];
                match cli::call(&settings, "scontrol", &args, None).await {
                    Ok(_) => {
                        sqlx::query("UPDATE contracts SET slurm_reservation = $2 WHERE id = $1")
                            .bind(id)
                            .bind(&name)
                            .execute(pool)
                            .await?;
                        tracing::info!(contract = id, reservation = %name, nodes, "contract mirrored as a Slurm reservation");
                    }
                    Err(CliError::Unreachable(m)) => return Err(ExecutorError::Unreachable(m)),
                    Err(CliError::Refused(m)) => {
                        tracing::warn!(contract = id, message = %m, "Slurm refused the contract's reservation; retrying next round");
                    }
                }
            } else if !wanted {
                if exists {
                    cli::call(
                        &settings,
                        "scontrol",
                        &["delete".into(), format!("ReservationName={name}")],
                        None,
                    )
                    .await
                    .map(drop)
                    .or_else(ignore_refusal)?;
                    tracing::info!(contract = id, reservation = %name, "Slurm reservation deleted");
                }
                sqlx::query("UPDATE contracts SET slurm_reservation = NULL WHERE id = $1")
                    .bind(id)
                    .execute(pool)
                    .await?;
            }
        }
        self.reservations = existing
            .into_iter()
            .filter(|r| r.name.starts_with(prefix) && r.name.ends_with(&self.tag))
            .collect();
        Ok(())
    }

    /// Follows Slurm's nodes and the jobs outside Tranche into the inventory.
    async fn follow_nodes(
        &self,
        conn: &mut PgConnection,
        nodes: &[cli::SlurmNode],
        jobs: &[SlurmJob],
        ours: &HashSet<i64>,
    ) -> Result<bool, sqlx::Error> {
        let mut changed = false;
        let known: Vec<(i64, String, String, i32)> = sqlx::query_as(
            "SELECT id, name, state, outside_gpus FROM nodes WHERE cluster_id = $1 ORDER BY id",
        )
        .bind(self.cluster)
        .fetch_all(&mut *conn)
        .await?;
        let by_name: HashMap<&str, i64> = known.iter().map(|k| (k.1.as_str(), k.0)).collect();
        // GPUs held by running jobs that Tranche did not submit, per node.
        let mut outside: HashMap<i64, i32> = HashMap::new();
        let (mut o_job, mut o_node, mut o_gpus, mut o_name, mut o_user) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for job in jobs {
            if ours.contains(&job.id) || !job.is_running() {
                continue;
            }
            for (node, gpus) in &job.gpus {
                if let Some(&id) = by_name.get(node.as_str()) {
                    *outside.entry(id).or_default() += gpus.len() as i32;
                    o_job.push(job.id);
                    o_node.push(id);
                    o_gpus.push(gpus.len() as i32);
                    o_name.push(job.name.chars().take(200).collect::<String>());
                    o_user.push(job.user.clone());
                }
            }
        }
        sqlx::query("DELETE FROM slurm_outside_jobs WHERE cluster_id = $1")
            .bind(self.cluster)
            .execute(&mut *conn)
            .await?;
        sqlx::query(
            "INSERT INTO slurm_outside_jobs (cluster_id, job_id, node_id, gpus, name, user_name) \
             SELECT $1, * FROM unnest($2::BIGINT[], $3::BIGINT[], $4::INT[], $5::TEXT[], $6::TEXT[])",
        )
        .bind(self.cluster)
        .bind(&o_job)
        .bind(&o_node)
        .bind(&o_gpus)
        .bind(&o_name)
        .bind(&o_user)
        .execute(&mut *conn)
        .await?;
        for (id, name, old_state, old_outside) in &known {
            let (state, words) = match nodes.iter().find(|n| &n.name == name) {
                Some(n) => (n.state.as_str(), n.words.clone()),
                None => ("down", format!("not in partition {}", self.partition)),
            };
            let gpus = outside.get(id).copied().unwrap_or(0);
            if state != old_state || gpus != *old_outside {
                changed = true;
                if state != old_state {
                    tracing::info!(node = %name, from = %old_state, to = %state, "Slurm node state followed");
                    audit::record(
                        &mut *conn,
                        Change {
                            actor: None,
                            action: "node.state",
                            entity: "cluster_node",
                            entity_id: Some(*id),
                            node_id: None,
                            before: Some(json!({"name": name, "state": old_state})),
                            after: Some(json!({"name": name, "state": state, "slurm": words})),
                        },
                    )
                    .await?;
                }
            }
            sqlx::query(
                "UPDATE nodes SET state = $2, executor_state = $3, outside_gpus = $4, agent_session = $5, \
                        agent_seen_at = now() WHERE id = $1",
            )
            .bind(id)
            .bind(state)
            .bind(&words)
            .bind(gpus)
            .bind(SLURM_SESSION)
            .execute(&mut *conn)
            .await?;
        }
        Ok(changed)
    }

    /// Submits one attempt; returns its job id, or writes why Slurm refused it and reports the
    /// attempt exited (the pass ends the run failed).
    async fn submit(
        &self,
        pool: &PgPool,
        group: &[&Assignment],
        names: &HashMap<i64, String>,
    ) -> Result<(), ExecutorError> {
        let first = group[0];
        let (time_limit_s, state, attempt): (i64, String, i32) =
            sqlx::query_as("SELECT time_limit_s, state, attempt FROM runs WHERE id = $1")
                .bind(first.run)
                .fetch_one(pool)
                .await?;
        if attempt != first.attempt || !matches!(state.as_str(), "starting" | "running") {
            return Ok(());
        }
        let counts: BTreeMap<&str, usize> = group
            .iter()
            .map(|a| (names.get(&a.node).map_or("", String::as_str), a.gpus.len()))
            .collect();
        let per_node: HashSet<usize> = counts.values().copied().collect();
        let mut env = first.env.clone();
        env.retain(|k, _| cli::is_env_name(k));
        env.insert("TRANCHE_RUN_ID".into(), first.run.to_string());
        env.insert("TRANCHE_ATTEMPT".into(), first.attempt.to_string());
        let refusal = if per_node.len() != 1 {
            Some(
                Said::new("event-slurm-uneven").arg(
                    "placed",
                    counts
                        .iter()
                        .map(|(n, g)| format!("{g} on {n}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            )
        } else {
            let job = JobSpec {
                run: first.run,
                attempt: first.attempt,
                tag: self.tag.clone(),
                partition: self.partition.clone(),
                nodes: counts.keys().map(|n| (*n).to_string()).collect(),
                gpus_per_node: first.gpus.len() as u32,
                time_limit_s,
                command: first.command.clone(),
                workdir: first.workdir.clone(),
                env,
                reservation: self
                    .reservation_now(&counts.keys().map(|n| (*n).to_string()).collect::<Vec<_>>()),
            };
            match cli::submit(self.settings(), &job).await {
                Ok(id) => {
                    sqlx::query(
                        "INSERT INTO slurm_jobs (run_id, attempt, cluster_id, job_id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    )
                    .bind(first.run)
                    .bind(first.attempt)
                    .bind(self.cluster)
                    .bind(id)
                    .execute(pool)
                    .await?;
                    tracing::info!(
                        run = first.run,
                        attempt = first.attempt,
                        job = id,
                        "submitted to Slurm"
                    );
                    return Ok(());
                }
                Err(CliError::Unreachable(m)) => return Err(ExecutorError::Unreachable(m)),
                Err(CliError::Refused(m)) => Some(Said::new("event-slurm-refused").arg("why", m)),
            }
        };
        let message = refusal.unwrap_or_else(|| Said::new("event-slurm-refused").arg("why", ""));
        let mut tx = pool.begin().await?;
        service::serialize_with_passes(&mut tx).await?;
        event(&mut tx, first.run, "failed", &message, None).await?;
        let procs: Vec<(i64, i32, i64)> =
            group.iter().map(|a| (a.run, a.attempt, a.node)).collect();
        exit_all(tx, &procs, Some(1), 0, None).await
    }

    /// An ended job of an attempt that should be running: its end state in our words, and a
    /// stop of the kind the end means (time limit, cancelled outside Tranche, node failure)
    /// before its processes count as exited.
    async fn ended(
        &self,
        pool: &PgPool,
        job: &SlurmJob,
        group: &[(i64, i32, i64)],
    ) -> Result<(), ExecutorError> {
        let (run, attempt, _) = group[0];
        let mut tx = pool.begin().await?;
        service::serialize_with_passes(&mut tx).await?;
        let row: Option<(String, i32)> =
            sqlx::query_as("SELECT state, attempt FROM runs WHERE id = $1 FOR UPDATE")
                .bind(run)
                .fetch_optional(&mut *tx)
                .await?;
        let live = row
            .as_ref()
            .is_some_and(|(s, a)| *a == attempt && matches!(s.as_str(), "starting" | "running"));
        let mut code = job.exit_code;
        if live {
            let site = &self.state.site;
            let stop = match job.state.as_str() {
                "TIMEOUT" => Some((
                    "time_limit",
                    "time_limit",
                    Said::new("event-slurm-timeout").arg("job", job.id.to_string()),
                )),
                "CANCELLED" => Some((
                    "cancelled",
                    "cancelled",
                    Said::new("event-slurm-cancelled").arg("job", job.id.to_string()),
                )),
                "NODE_FAIL" | "BOOT_FAIL" => Some((
                    "lost",
                    "lost",
                    Said::new("event-slurm-node-failed")
                        .arg("job", job.id.to_string())
                        .arg("state", &job.state),
                )),
                "COMPLETED" | "FAILED" => None,
                other => {
                    event(
                        &mut tx,
                        run,
                        "failed",
                        &Said::new("event-slurm-ended")
                            .arg("job", job.id.to_string())
                            .arg("state", other)
                            .arg("reason", &job.reason),
                        None,
                    )
                    .await?;
                    if code == Some(0) || code.is_none() {
                        code = Some(if other == "OUT_OF_MEMORY" { 137 } else { 1 });
                    }
                    None
                }
            };
            if let Some((kind, stop_kind, message)) = stop {
                event(&mut tx, run, kind, &message, None).await?;
                service::begin_stop(&mut tx, pool, site, run, stop_kind).await?;
            }
        }
        // It ran from Slurm's start to Slurm's end, whatever the polls saw of it.
        let now = jiff::Timestamp::now().as_second();
        let ago = job.end_time.map_or(0, |t| (now - t).clamp(0, now));
        let started = job.start_time.map(|t| (run, attempt, t));
        exit_all(tx, group, code, ago, started).await
    }

    /// A job Slurm no longer knows (it forgot it, say its state was lost): the attempt is
    /// lost (requeued when resumable).
    async fn vanished(
        &self,
        pool: &PgPool,
        job_id: i64,
        group: &[(i64, i32, i64)],
    ) -> Result<(), ExecutorError> {
        let (run, attempt, _) = group[0];
        let mut tx = pool.begin().await?;
        service::serialize_with_passes(&mut tx).await?;
        let live: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1 AND attempt = $2 AND state IN ('starting', 'running'))",
        )
        .bind(run)
        .bind(attempt)
        .fetch_one(&mut *tx)
        .await?;
        if live {
            event(
                &mut tx,
                run,
                "lost",
                &Said::new("event-slurm-vanished").arg("job", job_id.to_string()),
                None,
            )
            .await?;
            service::begin_stop(&mut tx, pool, &self.state.site, run, "lost").await?;
        }
        exit_all(tx, group, None, 0, None).await
    }
}

/// Makes Slurm's start of each (run, attempt, Unix seconds) job its placements' `running_at`
/// where they run (or ran) and had a later one (the poll that saw them running), or none.
async fn set_running_at(
    conn: &mut sqlx::PgConnection,
    started: &[(i64, i32, i64)],
) -> Result<(), sqlx::Error> {
    if started.is_empty() {
        return Ok(());
    }
    let (runs, (attempts, times)): (Vec<i64>, (Vec<i32>, Vec<i64>)) =
        started.iter().map(|&(r, a, t)| (r, (a, t))).unzip();
    sqlx::query(
        "UPDATE run_placements p SET running_at = to_timestamp(u.t) \
         FROM unnest($1::BIGINT[], $2::INT[], $3::BIGINT[]) AS u(r, a, t) \
         WHERE p.run_id = u.r AND p.attempt = u.a AND p.proc_state <> 'assigned' \
           AND to_timestamp(u.t) <= clock_timestamp() \
           AND (p.running_at IS NULL OR p.running_at > to_timestamp(u.t))",
    )
    .bind(&runs)
    .bind(&attempts)
    .bind(&times)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records every process of `procs` (run, attempt, node) as exited with `code` (`None`:
/// unknown) `ago_s` seconds ago, and `started` (run, attempt, Unix seconds: Slurm's start of
/// the job, which a job that ended between two polls was never seen at) as their start; wakes
/// the pass and commits `tx`.
async fn exit_all(
    mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
    procs: &[(i64, i32, i64)],
    code: Option<i32>,
    ago_s: i64,
    started: Option<(i64, i32, i64)>,
) -> Result<(), ExecutorError> {
    let reports: Vec<ProcessReport> = procs
        .iter()
        .map(|&(run, attempt, node)| ProcessReport {
            run,
            attempt,
            node,
            ago_s,
            exited: Some(code),
            fault: None,
        })
        .collect();
    crate::executor::record(&mut tx, &reports).await?;
    set_running_at(&mut tx, started.as_slice()).await?;
    wake(&mut tx).await?;
    tx.commit().await?;
    Ok(())
}

impl Executor for Bridge {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Slurm
    }

    async fn round(
        &mut self,
        assignments: &[Assignment],
        stops: &[StopOrder],
    ) -> Result<(), ExecutorError> {
        let pool = self.state.pool.clone();
        let settings = self.settings().clone();
        let sinfo = cli::call(&settings, "sinfo", &["--json".into()], None)
            .await
            .map_err(|e| ExecutorError::Unreachable(e.to_string()))?;
        let squeue = cli::call(
            &settings,
            "squeue",
            &["--json".into(), "--states=all".into()],
            None,
        )
        .await
        .map_err(|e| ExecutorError::Unreachable(e.to_string()))?;
        let nodes = cli::parse_sinfo(&sinfo, &self.partition)
            .map_err(ExecutorError::Unreachable)?
            .unwrap_or_default();
        let jobs = cli::parse_squeue(&squeue).map_err(ExecutorError::Unreachable)?;
        let by_id: HashMap<i64, &SlurmJob> = jobs.iter().map(|j| (j.id, j)).collect();
        let now = Instant::now();
        self.missing_since.retain(|job, _| !by_id.contains_key(job));
        // Jobs named and commented as this installation's, by run and attempt.
        let by_name: HashMap<(i64, i32), &SlurmJob> = jobs
            .iter()
            .filter_map(|j| cli::parse_job_name(&j.name).map(|k| (k, j)))
            .filter(|((run, attempt), j)| {
                j.partition == self.partition
                    && j.comment == cli::job_comment(&self.tag, *run, *attempt)
            })
            .collect();
        let known: Vec<KnownJob> = sqlx::query_as(
            "SELECT run_id, attempt, job_id, signalled_at, cancelled_at FROM slurm_jobs WHERE cluster_id = $1 \
             AND (run_id, attempt) IN (SELECT run_id, attempt FROM run_placements p JOIN nodes n ON n.id = p.node_id \
                                       WHERE n.cluster_id = $1 AND p.proc_state <> 'exited')",
        )
        .bind(self.cluster)
        .fetch_all(&pool)
        .await?;
        let mut known: HashMap<(i64, i32), KnownJob> = known
            .into_iter()
            .map(|k| ((k.run_id, k.attempt), k))
            .collect();
        // Jobs of ours: those remembered, and those named like ours (a submission whose answer
        // was lost) in this partition.
        for (&(run, attempt), job) in &by_name {
            if let std::collections::hash_map::Entry::Vacant(slot) = known.entry((run, attempt)) {
                let ordered = assignments
                    .iter()
                    .any(|a| a.run == run && a.attempt == attempt)
                    || stops.iter().any(|s| s.run == run && s.attempt == attempt);
                if ordered {
                    sqlx::query(
                        "INSERT INTO slurm_jobs (run_id, attempt, cluster_id, job_id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    )
                    .bind(run)
                    .bind(attempt)
                    .bind(self.cluster)
                    .bind(job.id)
                    .execute(&pool)
                    .await?;
                    tracing::info!(
                        run,
                        attempt,
                        job = job.id,
                        "adopted a Slurm job submitted earlier"
                    );
                    slot.insert(KnownJob {
                        run_id: run,
                        attempt,
                        job_id: job.id,
                        signalled_at: None,
                        cancelled_at: None,
                    });
                }
            }
        }
        let ours: HashSet<i64> =
            sqlx::query_scalar("SELECT job_id FROM slurm_jobs WHERE cluster_id = $1")
                .bind(self.cluster)
                .fetch_all(&pool)
                .await?
                .into_iter()
                .chain(by_name.values().map(|j| j.id))
                .collect();
        self.mirror_contracts(&pool).await?;
        {
            let mut tx = pool.begin().await?;
            if self.follow_nodes(&mut tx, &nodes, &jobs, &ours).await? {
                wake(&mut tx).await?;
            }
            tx.commit().await?;
        }
        let names: HashMap<i64, String> =
            sqlx::query_as::<_, (i64, String)>("SELECT id, name FROM nodes WHERE cluster_id = $1")
                .bind(self.cluster)
                .fetch_all(&pool)
                .await?
                .into_iter()
                .collect();

        let mut reports: Vec<ProcessReport> = Vec::new();
        // Running jobs' start (Unix seconds), by run and attempt.
        let mut started: Vec<(i64, i32, i64)> = Vec::new();
        let mut gpu_rows: Vec<(i64, i32, i64, Vec<i32>)> = Vec::new();
        // Starts, one job per attempt.
        let mut groups: BTreeMap<(i64, i32), Vec<&Assignment>> = BTreeMap::new();
        for a in assignments {
            groups.entry((a.run, a.attempt)).or_default().push(a);
        }
        for ((run, attempt), group) in &groups {
            let places: Vec<(i64, i32, i64)> =
                group.iter().map(|a| (a.run, a.attempt, a.node)).collect();
            let Some(k) = known.get(&(*run, *attempt)) else {
                self.submit(&pool, group, &names).await?;
                continue;
            };
            let Some(job) = by_id.get(&k.job_id) else {
                if self.gone(k.job_id, now) {
                    self.vanished(&pool, k.job_id, &places).await?;
                }
                continue;
            };
            if job.is_running() {
                if let Some(t) = job.start_time {
                    started.push((*run, *attempt, t));
                }
                for a in group {
                    reports.push(ProcessReport {
                        run: a.run,
                        attempt: a.attempt,
                        node: a.node,
                        ago_s: 0,
                        fault: None,
                        exited: None,
                    });
                    if let Some(name) = names.get(&a.node)
                        && let Some(idx) = job.gpus.get(name)
                        && idx.iter().all(|i| *i >= 0)
                    {
                        gpu_rows.push((a.run, a.attempt, a.node, idx.clone()));
                    }
                }
            } else if !job.is_active() {
                self.ended(&pool, job, &places).await?;
            }
        }
        // Stops: SIGTERM at once, kill when the grace period is over.
        let mut stop_groups: BTreeMap<(i64, i32), (i64, Vec<i64>)> = BTreeMap::new();
        for s in stops {
            let e = stop_groups
                .entry((s.run, s.attempt))
                .or_insert((s.grace_s, Vec::new()));
            e.0 = e.0.min(s.grace_s);
            e.1.push(s.node);
        }
        for ((run, attempt), (grace_s, nodes)) in &stop_groups {
            let exited = |code: Option<i32>| {
                nodes.iter().map(move |&node| ProcessReport {
                    run: *run,
                    attempt: *attempt,
                    node,
                    ago_s: 0,
                    fault: None,
                    exited: Some(code),
                })
            };
            let Some(k) = known.get(&(*run, *attempt)) else {
                // Never submitted: nothing to stop.
                reports.extend(exited(None));
                continue;
            };
            let Some(job) = by_id.get(&k.job_id) else {
                if self.gone(k.job_id, now) {
                    reports.extend(exited(None));
                }
                continue;
            };
            if !job.is_active() {
                reports.extend(exited(job.exit_code));
                continue;
            }
            if !job.is_running() {
                if k.cancelled_at.is_none() {
                    cli::cancel(&settings, job.id)
                        .await
                        .or_else(ignore_refusal)?;
                    mark(&pool, k, "cancelled_at").await?;
                }
                continue;
            }
            // SIGTERM first, always (a site grace period of 0 aside), and the kill only once
            // the whole grace period has passed since it: a stop whose grace period ran out
            // while the controller did not answer got the kill alone (found by a new-user
            // check: a job's TERM handler never ran).
            let full_grace = self.state.site.grace_s.max(0);
            let graced = k.signalled_at.is_some_and(|t| {
                (time::OffsetDateTime::now_utc() - t).whole_seconds() >= full_grace
            });
            if full_grace > 0 && k.signalled_at.is_none() {
                cli::signal(&settings, job.id, "TERM")
                    .await
                    .or_else(ignore_refusal)?;
                mark(&pool, k, "signalled_at").await?;
                tracing::info!(
                    run,
                    attempt,
                    job = job.id,
                    grace_s = (*grace_s).max(full_grace),
                    "SIGTERM sent to the Slurm job"
                );
            } else if *grace_s > 0 || (full_grace > 0 && !graced) {
                // In its grace period.
            } else if k.cancelled_at.is_none() {
                cli::signal(&settings, job.id, "KILL")
                    .await
                    .or_else(ignore_refusal)?;
                cli::cancel(&settings, job.id)
                    .await
                    .or_else(ignore_refusal)?;
                mark(&pool, k, "cancelled_at").await?;
                tracing::info!(
                    run,
                    attempt,
                    job = job.id,
                    "Slurm job killed after its grace period"
                );
            }
        }
        let mut tx = pool.begin().await?;
        for (run, attempt, node, gpus) in &gpu_rows {
            sqlx::query(
                "UPDATE run_placements SET executor_gpus = $4 WHERE run_id = $1 AND attempt = $2 AND node_id = $3 \
                 AND executor_gpus IS DISTINCT FROM $4",
            )
            .bind(run)
            .bind(attempt)
            .bind(node)
            .bind(gpus)
            .execute(&mut *tx)
            .await?;
        }
        if crate::executor::record(&mut tx, &reports).await? > 0 {
            wake(&mut tx).await?;
        }
        // A job's processes ran from Slurm's start, not from this poll: the attempt counts,
        // and is charged, from there (found by a new-user check: a job pending behind a
        // maintenance reservation was charged from the pass's decision).
        set_running_at(&mut tx, &started).await?;
        sqlx::query("UPDATE slurm_jobs s SET state = u.s FROM unnest($1::BIGINT[], $2::TEXT[]) AS u(j, s) WHERE s.cluster_id = $3 AND s.job_id = u.j AND s.state <> u.s")
            .bind(jobs.iter().map(|j| j.id).collect::<Vec<_>>())
            .bind(jobs.iter().map(|j| j.state.clone()).collect::<Vec<_>>())
            .bind(self.cluster)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// A signal or cancel Slurm refuses (the job ended meanwhile) is not a failure of the round.
fn ignore_refusal(e: CliError) -> Result<(), ExecutorError> {
    match e {
        CliError::Refused(m) => {
            tracing::debug!(message = %m, "Slurm refused a signal or cancel");
            Ok(())
        }
        CliError::Unreachable(m) => Err(ExecutorError::Unreachable(m)),
    }
}

async fn mark(pool: &PgPool, k: &KnownJob, column: &str) -> Result<(), sqlx::Error> {
    let sql = match column {
        "signalled_at" => {
            "UPDATE slurm_jobs SET signalled_at = now() WHERE run_id = $1 AND attempt = $2"
        }
        _ => "UPDATE slurm_jobs SET cancelled_at = now() WHERE run_id = $1 AND attempt = $2",
    };
    sqlx::query(sql)
        .bind(k.run_id)
        .bind(k.attempt)
        .execute(pool)
        .await?;
    Ok(())
}

/// The tag of cluster `cluster` of the installation whose database is `database`: 8 hex digits
/// of their SHA-256.
pub fn tag(database: &str, cluster: i64) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(format!("{database}/{cluster}").as_bytes())[..4])
}

/// Starts the Slurm bridges of this replica: while it holds the bridge lock, one [`Bridge`]
/// per Slurm cluster runs a round every `TRANCHE_SLURM_POLL_S` and whenever a pass changed
/// orders.
pub fn spawn(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = drive(&state).await {
                tracing::warn!(error = %e, "Slurm bridge interrupted; retrying");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

async fn drive(state: &AppState) -> Result<(), AppError> {
    let mut lock_conn = state.pool.acquire().await?.detach();
    let poll = state.site.slurm.poll;
    loop {
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(BRIDGE_LOCK)
            .fetch_one(&mut lock_conn)
            .await?;
        if got {
            break;
        }
        tokio::time::sleep(poll).await;
    }
    let mut bridges: HashMap<i64, Bridge> = HashMap::new();
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&state.pool)
        .await?;
    let mut rx = state.assignments.subscribe();
    loop {
        let clusters: Vec<(i64, String)> = sqlx::query_as(
            "SELECT id, slurm_partition FROM clusters WHERE executor = 'slurm' ORDER BY id",
        )
        .fetch_all(&state.pool)
        .await?;
        bridges.retain(|id, _| clusters.iter().any(|(c, _)| c == id));
        for (id, partition) in clusters {
            let bridge = bridges.entry(id).or_insert_with(|| {
                Bridge::new(state.clone(), id, partition.clone(), tag(&database, id))
            });
            bridge.partition = partition;
            bridge.tick().await?;
        }
        let _ = tokio::time::timeout(poll, rx.changed()).await;
        // The lock connection must still be alive, or another replica may drive Slurm now.
        sqlx::query("SELECT 1").execute(&mut lock_conn).await?;
    }
}
