//! Runs: submission with admission, cost preview and approval, cancel, approve and deny, and the
//! queries behind the run pages and API (docs/design.md sections 2 and 6).
//!
//! The scheduling loop that starts and preempts runs is [`service`]; node agents talk to
//! [`agents`]. Every state change writes a [`run_events`] row (the run's timeline) and
//! notifies `tranche_wake` so the loop runs a pass at commit.

pub mod agents;
pub mod batch;
pub mod idle;
pub mod live;
pub mod service;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::auth::{Account, Parents};
use crate::config::Site;
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::i18n::said::Said;
use crate::ledger;
use crate::state::AppState;

/// The PostgreSQL channel that wakes the scheduling loop.
pub const WAKE_CHANNEL: &str = "tranche_wake";
/// The PostgreSQL channel that wakes agents' long polls (payload: cluster id).
pub const ASSIGN_CHANNEL: &str = "tranche_assign";

/// Longest time limit a run may ask for: 30 days, in seconds.
pub const MAX_TIME_LIMIT_S: i64 = 30 * 86_400;

/// A run as submitted in the form or the API.
#[derive(Clone, Default, serde::Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NewRun {
    /// Project name.
    pub project: String,
    /// Cluster name.
    pub cluster: String,
    /// GPU model name.
    pub gpu_model: String,
    /// GPUs in the gang, >= 1.
    pub gpus: i64,
    /// Minimum runtime, seconds, 0 ..= the site maximum and <= the time limit; 0 = unallocated.
    pub min_runtime_s: i64,
    /// Time limit, seconds, 1 ..= 30 days.
    pub time_limit_s: i64,
    /// Priority within the project (higher first), -1000 ..= 1000.
    #[serde(default)]
    pub priority: i32,
    /// Requeue after a preemption (true) or end as preempted (false).
    #[serde(default)]
    pub resumable: bool,
    /// Shell command (`sh -c`), 1 ..= 8192 characters.
    pub command: String,
    /// Working directory on the node; `None` = the agent's.
    #[serde(default)]
    pub workdir: Option<String>,
    /// Extra environment variables. Those whose names look like secrets ([`looks_secret`])
    /// are moved to `secret_env` when checked.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Extra environment variables marked secret: stored sealed, shown as [`MASK`], given
    /// only to the agent that runs the attempt.
    #[serde(default)]
    pub secret_env: BTreeMap<String, String>,
}

/// What pages and the API show in place of a secret environment value.
pub const MASK: &str = "••••";

/// Whether an environment variable's name looks like it holds a secret: it contains
/// `TOKEN`, `SECRET`, `KEY` or `PASSWORD` (any case), such as `HF_TOKEN` or `AWS_SECRET_ACCESS_KEY`.
/// Such values are kept secret even when given in `env`.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["TOKEN", "SECRET", "KEY", "PASSWORD"]
        .iter()
        .any(|w| upper.contains(w))
}

/// Seals a run's secret environment for the `runs.secret_env` column; `None` when empty.
pub fn seal_secret_env(
    key: &crate::auth::secrets::SecretKey,
    secret_env: &BTreeMap<String, String>,
) -> Option<Vec<u8>> {
    (!secret_env.is_empty()).then(|| key.seal(&serde_json::to_vec(secret_env).unwrap_or_default()))
}

/// Opens a run's sealed `runs.secret_env` (empty for `None`).
///
/// # Errors
/// [`crate::auth::secrets::Unsealable`] when another key sealed it or it was altered.
pub fn open_secret_env(
    key: &crate::auth::secrets::SecretKey,
    sealed: Option<&[u8]>,
) -> Result<BTreeMap<String, String>, crate::auth::secrets::Unsealable> {
    let Some(sealed) = sealed else {
        return Ok(BTreeMap::new());
    };
    let plain = key.open(sealed)?;
    serde_json::from_slice(&plain).map_err(|_| crate::auth::secrets::Unsealable)
}

/// Checks that `key` opens the secret values the database holds (the newest run's that has
/// some): a server given another key (its key file lost or not restored with the database, a
/// new one made in its place) would start runs without their secret values, silently (found
/// by a check). `tranche serve` refuses to start on it.
///
/// # Errors
/// Database errors; a message naming the remedy when the key does not open them.
pub async fn check_secret_key(
    pool: &PgPool,
    key: &crate::auth::secrets::SecretKey,
    key_source: &str,
) -> anyhow::Result<()> {
    let newest: Option<Vec<u8>> = sqlx::query_scalar(
        "SELECT secret_env FROM runs WHERE secret_env IS NOT NULL ORDER BY id DESC LIMIT 1",
    )
    .fetch_optional(pool)
    .await?;
    if let Some(sealed) = newest
        && open_secret_env(key, Some(&sealed)).is_err()
    {
        anyhow::bail!(
            "the secret key ({key_source}) does not open the runs' secret environment values this database holds: it is not the key they were sealed with (a key file lost, or not restored with the database, is replaced by a new one). Put back the key file backed up with the database, or set TRANCHE_SECRET_KEY to that key; runs would otherwise start without their secret values"
        );
    }
    Ok(())
}

/// Moves secret-looking values ([`looks_secret`]) that older runs keep in clear in `env` into
/// their sealed `secret_env`, one transaction; returns how many runs changed. `tranche serve`
/// calls it at start-up.
///
/// # Errors
/// Database errors; a run whose sealed environment another key made.
pub async fn seal_plain_secrets(
    pool: &PgPool,
    key: &crate::auth::secrets::SecretKey,
) -> anyhow::Result<u64> {
    let mut tx = pool.begin().await?;
    type Plain = (
        i64,
        sqlx::types::Json<BTreeMap<String, String>>,
        Option<Vec<u8>>,
    );
    let rows: Vec<Plain> = sqlx::query_as(
        "SELECT id, env, secret_env FROM runs \
         WHERE EXISTS (SELECT 1 FROM jsonb_object_keys(env) k WHERE k ~* '(TOKEN|SECRET|KEY|PASSWORD)') \
         ORDER BY id FOR UPDATE",
    )
    .fetch_all(&mut *tx)
    .await?;
    let changed = rows.len() as u64;
    for (id, env, sealed) in rows {
        let mut secret = open_secret_env(key, sealed.as_deref())
            .map_err(|e| anyhow::anyhow!("run {id}: {e}"))?;
        let (moved, kept): (BTreeMap<_, _>, BTreeMap<_, _>) =
            env.0.into_iter().partition(|(k, _)| looks_secret(k));
        secret.extend(moved);
        let names: Vec<&String> = secret.keys().collect();
        sqlx::query(
            "UPDATE runs SET env = $2, secret_env = $3, secret_env_names = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(sqlx::types::Json(&kept))
        .bind(seal_secret_env(key, &secret))
        .bind(names)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(changed)
}

/// Shows secret values (and values of secret-looking names in `env`) as [`MASK`], so a
/// submission printed in a log or a panic message gives none away.
impl std::fmt::Debug for NewRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let masked = |env: &BTreeMap<String, String>, all: bool| -> BTreeMap<String, String> {
            env.iter()
                .map(|(k, v)| {
                    let shown = if all || looks_secret(k) { MASK } else { v };
                    (k.clone(), shown.to_string())
                })
                .collect()
        };
        f.debug_struct("NewRun")
            .field("project", &self.project)
            .field("cluster", &self.cluster)
            .field("gpu_model", &self.gpu_model)
            .field("gpus", &self.gpus)
            .field("min_runtime_s", &self.min_runtime_s)
            .field("time_limit_s", &self.time_limit_s)
            .field("priority", &self.priority)
            .field("resumable", &self.resumable)
            .field("command", &self.command)
            .field("workdir", &self.workdir)
            .field("env", &masked(&self.env, false))
            .field("secret_env", &masked(&self.secret_env, true))
            .finish()
    }
}

impl NewRun {
    /// The keyed hash ([`SecretKey::fingerprint`]) of the submission as read (its JSON with
    /// the fields in declaration order, defaults filled in, the environment sorted), so the
    /// same request sent again with other spacing or key order has the same fingerprint and
    /// any other request another. Stored with an idempotency key to refuse the key's reuse for
    /// another request; keyed because the request holds secret values, which a plain hash in
    /// the database would let a reader guess and confirm.
    ///
    /// [`SecretKey::fingerprint`]: crate::auth::secrets::SecretKey::fingerprint
    pub fn fingerprint(&self, key: &crate::auth::secrets::SecretKey) -> [u8; 32] {
        key.fingerprint(&serde_json::to_vec(self).unwrap_or_default())
    }
}

/// A submission checked against names, ranges, the cluster's inventory and the budget.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Project id.
    pub project_id: i64,
    /// Project name as stored.
    pub project: String,
    /// Cluster id.
    pub cluster_id: i64,
    /// GPU model id.
    pub model_id: i64,
    /// The run as submitted, trimmed.
    pub run: NewRun,
    /// What it costs and whether it needs approval.
    pub preview: Preview,
}

/// The cost preview of a submission.
#[derive(Debug, Clone, Serialize)]
pub struct Preview {
    /// Protected GPU-hours (GPUs x minimum runtime), thousandths.
    pub protected_milli_gpu_hours: i64,
    /// Price of the protected part at billing weight x price that the project's budget pays,
    /// minor units: less the part inside the window of a capacity contract of the project on
    /// the pool, active now and large enough for the gang (prepaid when the run starts on it).
    pub cost_minor: i64,
    /// Protected GPU-hours (thousandths) that such a contract prepays; 0 without one.
    pub contract_milli_gpu_hours: i64,
    /// Unallocated: free and preemptible (minimum runtime 0).
    pub free: bool,
    /// Above the project's self-service limit and the submitter does not lead the project:
    /// waits for a lead's approval.
    pub needs_approval: bool,
    /// The project's self-service limit, GPU-hours.
    pub self_service_gpu_hours: i64,
    /// The project's balance in the current period less what its running allocated runs
    /// hold, minor units.
    pub balance_minor: i64,
}

impl Preview {
    /// Plain words: "free, preemptible" or "16 protected GPU-hours, 72.00 USD".
    /// In the page's language ([`crate::i18n::current`]; English in the API).
    pub fn describe(&self, currency: &str) -> String {
        if self.free {
            return i18n::t("run-preview-free");
        }
        let hours = domain::format_protected_gpu_hours(
            self.protected_milli_gpu_hours,
            i18n::current() == i18n::Lang::En,
        );
        let mut text = i18n::ta(
            "run-preview-cost",
            &[
                ("hours", &hours),
                ("cost", &Money(self.cost_minor).display(currency)),
                ("balance", &Money(self.balance_minor).display(currency)),
            ],
        );
        if self.contract_milli_gpu_hours > 0 {
            text.push_str(&i18n::t1(
                "run-preview-contract",
                "hours",
                domain::format_protected_gpu_hours(
                    self.contract_milli_gpu_hours,
                    i18n::current() == i18n::Lang::En,
                ),
            ));
        }
        if self.needs_approval {
            text.push_str(&i18n::t1(
                "run-preview-approval",
                "limit",
                self.self_service_gpu_hours,
            ));
        }
        text
    }
}

fn check_fields(run: &mut NewRun, site: &Site) -> Result<(), AppError> {
    run.project = run.project.trim().to_string();
    run.cluster = run.cluster.trim().to_string();
    run.gpu_model = run.gpu_model.trim().to_string();
    run.command = run.command.trim().to_string();
    if run.project.is_empty() {
        return Err(AppError::invalid("project", i18n::t("err-choose-project")));
    }
    if run.cluster.is_empty() {
        return Err(AppError::invalid("cluster", i18n::t("err-choose-cluster")));
    }
    if run.gpu_model.is_empty() {
        return Err(AppError::invalid("gpu_model", i18n::t("err-choose-model")));
    }
    if !(1..=100_000).contains(&run.gpus) {
        return Err(AppError::invalid("gpus", i18n::t("err-run-gpus")));
    }
    if !(1..=MAX_TIME_LIMIT_S).contains(&run.time_limit_s) {
        return Err(AppError::invalid(
            "time_limit_s",
            i18n::t1("err-run-time-limit", "max", MAX_TIME_LIMIT_S),
        ));
    }
    if run.min_runtime_s < 0 || run.min_runtime_s > site.max_min_runtime_s {
        return Err(AppError::invalid(
            "min_runtime_s",
            i18n::t2(
                "err-run-min-runtime",
                "hours",
                domain::format_hours(site.max_min_runtime_s),
                "seconds",
                site.max_min_runtime_s,
            ),
        ));
    }
    if run.min_runtime_s > run.time_limit_s {
        return Err(AppError::invalid(
            "min_runtime_s",
            i18n::t("err-run-min-over-limit"),
        ));
    }
    if !(-1000..=1000).contains(&run.priority) {
        return Err(AppError::invalid("priority", i18n::t("err-run-priority")));
    }
    // Characters, as the API document's maxLength counts them (not bytes: 4,097 'é' are
    // 8,194 bytes).
    if run.command.is_empty() || run.command.chars().count() > 8192 || run.command.contains('\0') {
        return Err(AppError::invalid("command", i18n::t("err-run-command")));
    }
    if let Some(dir) = &run.workdir {
        let dir = dir.trim();
        if dir.is_empty() {
            run.workdir = None;
        } else if dir.chars().count() > 4096
            || dir.chars().any(char::is_control)
            || !dir.starts_with('/')
        {
            return Err(AppError::invalid("workdir", i18n::t("err-run-workdir")));
        } else {
            run.workdir = Some(dir.to_string());
        }
    }
    // Secret-looking names given in clear become secret.
    let (moved, kept): (BTreeMap<_, _>, BTreeMap<_, _>) = std::mem::take(&mut run.env)
        .into_iter()
        .partition(|(k, _)| looks_secret(k));
    run.env = kept;
    for (k, v) in moved {
        if run.secret_env.contains_key(&k) {
            return Err(AppError::invalid(
                "env",
                i18n::t1("err-run-env-twice", "name", &k),
            ));
        }
        run.secret_env.insert(k, v);
    }
    if run.env.len() + run.secret_env.len() > 64 {
        return Err(AppError::invalid("env", i18n::t("err-run-env-many")));
    }
    for (field, k, v) in run
        .env
        .iter()
        .map(|(k, v)| ("env", k, v))
        .chain(run.secret_env.iter().map(|(k, v)| ("secret_env", k, v)))
    {
        if field == "secret_env" && run.env.contains_key(k) {
            return Err(AppError::invalid(
                "env",
                i18n::t1("err-run-env-twice", "name", k),
            ));
        }
        let ok_name = !k.is_empty()
            && k.len() <= 128
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !k.as_bytes()[0].is_ascii_digit();
        if !ok_name {
            return Err(AppError::invalid(
                field,
                i18n::t1("err-run-env-name", "name", crate::domain::quote(k)),
            ));
        }
        if k == "CUDA_VISIBLE_DEVICES" || k.starts_with("TRANCHE_") {
            return Err(AppError::invalid(
                field,
                i18n::t1("err-run-env-reserved", "name", k),
            ));
        }
        if v.chars().count() > 4096 || v.contains('\0') {
            return Err(AppError::invalid(
                field,
                i18n::t1("err-run-env-value", "name", k),
            ));
        }
    }
    Ok(())
}

/// Whether `actor` may submit to `project`: its members who hold the researcher role, leads
/// above it and admins (found by a check: an account with no role, or only finance, that a
/// lead had made a member submitted and cancelled runs; docs/design.md section 1: researchers
/// book runs).
fn may_submit(actor: &Account, project: i64, parents: &Parents) -> bool {
    actor.has(crate::auth::Role::Researcher) && actor.projects.contains(&project)
        || actor.leads(project, parents)
}

/// Checks a submission: fields, names, the submitter's membership, that the gang fits the
/// cluster's GPUs of its model (every node, down ones included: a run waits for a node down to
/// come back), and for an allocated run that the project's
/// balance covers its minimum-runtime cost. Returns the resolved ids and the cost preview.
///
/// # Errors
/// [`AppError::Invalid`] naming the field, [`AppError::NotFound`] for unknown names,
/// [`AppError::Forbidden`] outside the submitter's projects, [`AppError::Refused`] with
/// `larger_than_cluster` or `budget_exceeded`.
pub async fn check(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    tree: &crate::db::tree::TreeView,
    mut run: NewRun,
) -> Result<Checked, AppError> {
    check_fields(&mut run, site)?;
    let parents = &tree.parents;
    // The project, cluster and GPU model by name, and the project's balance with what its
    // running runs hold, in one query (a submission is on the hot path); each is NULL when
    // unknown. The GPUs installed come from the cached tree.
    type Names = (
        Option<i64>,
        Option<String>,
        Option<i32>,
        Option<i64>,
        Option<i64>,
        Option<i32>,
        Option<i64>,
        Option<i64>,
        Option<Vec<i64>>,
        Option<Vec<i32>>,
        Option<Vec<i64>>,
        Option<Vec<i64>>,
        Option<i64>,
    );
    let now = jiff::Timestamp::now();
    // The seconds until the end of the project's capacity contracts on the pool that are active
    // now (the longest if several) and their GPUs: the minimum runtime inside the window is
    // prepaid for as many of the gang's GPUs as they hold when the run starts on them
    // (docs/design.md section 3.3; a preview: what other runs of the project use of them now
    // is not counted).
    #[rustfmt::skip]
    let (project_id, project_name, self_service, cluster_id, model_id, weight, price, balance, held_s, held_w, held_p, contract_left, max_time_s): Names =
        sqlx::query_as(&format!(
            "SELECT t.id, t.name, p.self_service_gpu_hours, c.id, m.id, m.billing_weight_milli, m.price_per_gpu_hour_minor, \
                    b.balance_minor, hd.seconds, hd.weights, hd.prices, \
                    (SELECT ARRAY[floor(extract(epoch FROM max(k.ends_at) - now()))::BIGINT, sum(k.gpus)::BIGINT] FROM contracts k \
                     WHERE k.project_id = t.id AND k.cluster_id = c.id AND k.gpu_model_id = m.id AND k.state = 'active' \
                       AND k.starts_at <= now() AND k.ends_at > now() HAVING count(*) > 0), \
                    c.slurm_max_time_s \
             FROM (SELECT 1) AS one \
             LEFT JOIN (tree_nodes t JOIN projects p ON p.node_id = t.id) ON lower(t.name) = lower($1) AND NOT t.archived \
             LEFT JOIN ledger_accounts b ON b.kind = 'project_budget' AND b.project_id = t.id AND b.period_start = $4 \
             LEFT JOIN LATERAL ({HOLDS}) hd ON true \
             LEFT JOIN clusters c ON lower(c.name) = lower($2) \
             LEFT JOIN gpu_models m ON lower(m.name) = lower($3)",
            HOLDS = holds_of("t.id")
        ))
        .bind(&run.project)
        .bind(&run.cluster)
        .bind(&run.gpu_model)
        .bind(ledger::Period::containing(now, site).bounds().0)
        .fetch_one(pool)
        .await?;
    let (Some(project_id), Some(project_name), Some(self_service)) =
        (project_id, project_name, self_service)
    else {
        return Err(AppError::NotFound(i18n::t1(
            "contract-err-no-project",
            "name",
            crate::domain::quote(&run.project),
        )));
    };
    // A project the submitter may not see is unknown to them alike (its existence is not told).
    if !actor.may_view(project_id, parents) {
        return Err(AppError::NotFound(i18n::t1(
            "contract-err-no-project",
            "name",
            crate::domain::quote(&run.project),
        )));
    }
    if !may_submit(actor, project_id, parents) {
        return Err(AppError::Forbidden(i18n::t1(
            "err-not-member",
            "project",
            project_name,
        )));
    }
    let Some(cluster_id) = cluster_id else {
        return Err(AppError::NotFound(i18n::t1(
            "contract-err-no-cluster",
            "name",
            crate::domain::quote(&run.cluster),
        )));
    };
    let (Some(model_id), Some(weight), Some(price)) = (model_id, weight, price) else {
        return Err(AppError::NotFound(i18n::t1(
            "contract-err-no-model",
            "name",
            crate::domain::quote(&run.gpu_model),
        )));
    };
    // A Slurm partition refuses a job longer than its MaxTime: no start is decided (and no
    // run preempted) for it.
    if let Some(max) = max_time_s
        && run.time_limit_s > max
    {
        return Err(AppError::invalid(
            "time_limit_s",
            i18n::ta(
                "err-run-time-limit-partition",
                &[("cluster", &run.cluster), ("max", &max)],
            ),
        ));
    }
    let installed = tree
        .installed
        .get(&(cluster_id, model_id))
        .copied()
        .unwrap_or(0);
    if installed == 0 {
        return Err(AppError::Refused {
            code: "model_not_in_cluster",
            message: i18n::ta(
                "err-model-not-in-cluster",
                &[("cluster", &run.cluster), ("model", &run.gpu_model)],
            ),
        });
    }
    if run.gpus > installed {
        return Err(AppError::Refused {
            code: "larger_than_cluster",
            message: i18n::ta(
                "err-larger-than-cluster",
                &[
                    ("gpus", &run.gpus),
                    ("cluster", &run.cluster),
                    ("installed", &installed),
                    ("model", &run.gpu_model),
                ],
            ),
        });
    }
    let (contract_left, contract_gpus) = match contract_left.as_deref() {
        Some(&[left, gpus]) => (left, gpus),
        _ => (0, 0),
    };
    let prepaid_s = crate::scheduler::overlap_s(0, run.min_runtime_s, 0, contract_left);
    let covered = run.gpus.min(contract_gpus);
    let cost = domain::contract_price(
        1,
        run.gpus * run.min_runtime_s - covered * prepaid_s,
        i64::from(weight),
        price,
    );
    let balance = match balance {
        Some(b) => b,
        None => ledger::balance(pool, project_id, now, site).await?.0,
    };
    let balance = Money((balance - held_minor(held_s, held_w, held_p)).max(0));
    let protected_milli = run.gpus * run.min_runtime_s * 1000 / 3600;
    let preview = Preview {
        protected_milli_gpu_hours: protected_milli,
        cost_minor: cost.0,
        contract_milli_gpu_hours: covered * prepaid_s * 1000 / 3600,
        free: run.min_runtime_s == 0,
        // Compared in GPU-seconds: thousandths of a GPU-hour would let 64.0003 pass a
        // limit of 64.
        needs_approval: run.gpus * run.min_runtime_s > i64::from(self_service) * 3600
            && !actor.leads(project_id, parents),
        self_service_gpu_hours: i64::from(self_service),
        balance_minor: balance.0,
    };
    if !preview.free && cost.0 > balance.0 {
        return Err(AppError::Refused {
            code: "budget_exceeded",
            message: i18n::ta(
                "err-budget-exceeded",
                &[
                    ("project", &project_name),
                    ("balance", &Money(balance.0).display(&site.currency)),
                    ("cost", &cost.display(&site.currency)),
                ],
            ),
        });
    }
    run.project = project_name.clone();
    Ok(Checked {
        project_id,
        project: project_name,
        cluster_id,
        model_id,
        run,
        preview,
    })
}

/// A subquery giving, for the project whose id is the SQL expression `project`, what its
/// running allocated runs hold per GPU model as parallel arrays (NULL when nothing):
/// `seconds` (GPU-seconds of minimum runtime not charged yet), `weights` (billing weight,
/// milli) and `prices` (minor units per GPU-hour). Read by [`held_minor`].
fn holds_of(project: &str) -> String {
    format!(
        "SELECT array_agg(h.gpu_seconds) AS seconds, array_agg(m.billing_weight_milli) AS weights, \
                array_agg(m.price_per_gpu_hour_minor) AS prices \
         FROM project_holds h JOIN gpu_models m ON m.id = h.gpu_model_id WHERE h.project_id = {project}"
    )
}

/// The minimum-runtime cost (minor units) of what [`holds_of`] reads, priced as contracts are.
fn held_minor(
    seconds: Option<Vec<i64>>,
    weights: Option<Vec<i32>>,
    prices: Option<Vec<i64>>,
) -> i64 {
    let (weights, prices) = (weights.unwrap_or_default(), prices.unwrap_or_default());
    seconds
        .unwrap_or_default()
        .iter()
        .zip(&weights)
        .zip(&prices)
        .map(|((s, w), p)| domain::contract_price(1, *s, i64::from(*w), *p).0)
        .sum()
}

/// What `project`'s running allocated runs hold of its current balance: the part of their
/// minimum-runtime cost not charged yet (minor units), as of the last [`refresh_holds`], read
/// on `conn` (a purchase's transaction).
///
/// # Errors
/// Database errors.
pub async fn held_by_runs(conn: &mut PgConnection, project: i64) -> Result<i64, sqlx::Error> {
    #[expect(clippy::type_complexity, reason = "what holds_of reads")]
    let (seconds, weights, prices): (Option<Vec<i64>>, Option<Vec<i32>>, Option<Vec<i64>>) =
        sqlx::query_as(&holds_of("$1"))
            .bind(project)
            .fetch_one(conn)
            .await?;
    Ok(held_minor(seconds, weights, prices))
}

/// A project's balance in the current period less what its running allocated runs hold: the
/// part of their minimum-runtime cost not charged yet (minor units, never below zero), as of
/// the last [`refresh_holds`].
///
/// # Errors
/// Database errors.
pub async fn available_balance(
    pool: &PgPool,
    site: &Site,
    project: i64,
) -> Result<Money, AppError> {
    let now = jiff::Timestamp::now();
    // The period's balance and the holds in one query; the account is granted first if the
    // period has none yet.
    #[expect(
        clippy::type_complexity,
        reason = "the balance, then what holds_of reads"
    )]
    let (balance, seconds, weights, prices): (
        Option<i64>,
        Option<Vec<i64>>,
        Option<Vec<i32>>,
        Option<Vec<i64>>,
    ) = sqlx::query_as(&format!(
        "SELECT (SELECT balance_minor FROM ledger_accounts \
                 WHERE kind = 'project_budget' AND project_id = $1 AND period_start = $2), \
                hd.seconds, hd.weights, hd.prices FROM ({}) hd",
        holds_of("$1")
    ))
    .bind(project)
    .bind(ledger::Period::containing(now, site).bounds().0)
    .fetch_one(pool)
    .await?;
    let balance = match balance {
        Some(b) => b,
        None => ledger::balance(pool, project, now, site).await?.0,
    };
    Ok(Money(
        (balance - held_minor(seconds, weights, prices)).max(0),
    ))
}

/// Rewrites `project_holds` from the runs: per project and GPU model, the GPU-seconds of
/// minimum runtime that starting and running runs have not been charged yet, less what falls
/// inside the window of the capacity contract a run is on (prepaid,
/// [`ledger::attempt_usages`]). Called by every
/// writer that starts, charges or stops runs, inside its transaction (which holds the pass
/// lock), so submissions read a current figure without summing running runs themselves.
///
/// # Errors
/// Database errors.
pub async fn refresh_holds(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH h AS (SELECT * FROM ( \
            SELECT r.project_id, r.gpu_model_id, sum(r.gpus::BIGINT * (r.min_runtime_s - r.charged_s - CASE WHEN c.id IS NULL OR r.started_at IS NULL THEN 0 \
                   ELSE GREATEST(0, LEAST(r.min_runtime_s, floor(extract(epoch FROM c.ends_at - r.started_at))::BIGINT) \
                   - GREATEST(r.charged_s, floor(extract(epoch FROM c.starts_at - r.started_at))::BIGINT)) END))::BIGINT AS s \
            FROM runs r LEFT JOIN contracts c ON c.id = r.contract_id AND c.project_id = r.project_id \
            WHERE r.state IN ('starting', 'running') AND r.min_runtime_s > r.charged_s AND NOT r.budget_spent \
            GROUP BY r.project_id, r.gpu_model_id) held WHERE s > 0), \
         gone AS (DELETE FROM project_holds p WHERE NOT EXISTS \
            (SELECT 1 FROM h WHERE h.project_id = p.project_id AND h.gpu_model_id = p.gpu_model_id)) \
         INSERT INTO project_holds (project_id, gpu_model_id, gpu_seconds) SELECT project_id, gpu_model_id, s FROM h \
         ON CONFLICT (project_id, gpu_model_id) DO UPDATE SET gpu_seconds = EXCLUDED.gpu_seconds \
         WHERE project_holds.gpu_seconds <> EXCLUDED.gpu_seconds",
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A process exit status in words: the number, and what it usually means when it says more
/// than "the command failed": 127 is a command not found (or one the agent could not start),
/// and 128 + N is a process killed by signal N (as `sh` reports it). In the current language
/// (English outside a page).
#[must_use]
pub fn describe_exit(code: i32) -> String {
    exit_said(code).render(i18n::current())
}

/// [`describe_exit`] as a message for the timeline.
pub fn exit_said(code: i32) -> Said {
    let signal = code
        .checked_sub(128)
        .filter(|n| (1..=64).contains(n))
        .and_then(|n| nix::sys::signal::Signal::try_from(n).ok());
    match (code, signal) {
        (127, _) => Said::new("exit-127"),
        (_, Some(sig)) => Said::new("exit-signal")
            .arg("code", code.to_string())
            .arg("signal", sig.to_string()),
        _ => Said::new("exit-status").arg("code", code.to_string()),
    }
}

/// Appends a timeline entry: `said` in English as its message (the API's), and as its note
/// (pages render it in their reader's language).
///
/// # Errors
/// Database errors.
pub async fn event(
    conn: &mut PgConnection,
    run: i64,
    kind: &str,
    said: &Said,
    for_run: Option<i64>,
) -> Result<(), sqlx::Error> {
    events(conn, &[run], kind, std::slice::from_ref(said), &[for_run]).await
}

/// Appends one timeline entry of `kind` to each of `runs` (`said` and `for_run` side by side
/// with them) in one statement, in the order given, as [`event`] does for one.
///
/// # Errors
/// Database errors.
pub async fn events(
    conn: &mut PgConnection,
    runs: &[i64],
    kind: &str,
    said: &[Said],
    for_run: &[Option<i64>],
) -> Result<(), sqlx::Error> {
    if runs.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO run_events (run_id, kind, message, for_run, attempt, note) \
         SELECT u.id, $2, u.m, u.f, r.attempt, u.n \
         FROM unnest($1::BIGINT[], $3::TEXT[], $4::BIGINT[], $5::JSONB[]) WITH ORDINALITY AS u(id, m, f, n, i) \
         JOIN runs r ON r.id = u.id ORDER BY u.i",
    )
    .bind(runs)
    .bind(kind)
    .bind(said.iter().map(Said::english).collect::<Vec<_>>())
    .bind(for_run)
    .bind(said.iter().map(Said::to_json).collect::<Vec<_>>())
    .execute(conn)
    .await?;
    Ok(())
}

/// Wakes the scheduling loop when the surrounding transaction commits.
///
/// # Errors
/// Database errors.
pub async fn wake(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(WAKE_CHANNEL)
        .execute(conn)
        .await?;
    Ok(())
}

/// The outcome of a submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// Run id.
    pub id: i64,
    /// Its state now: `queued` or `waiting_approval` when new.
    pub state: String,
    /// True when the key was used before: this is that earlier run, and nothing was created.
    pub repeated: bool,
}

/// What an idempotency key of `actor` was used for before ([`key_use`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyUse {
    /// Never used: a submission with it creates a run.
    New,
    /// Used for the same request (or stored without a fingerprint, which matches any): the
    /// earlier run, `repeated`.
    Repeat(Submitted),
    /// Used for another request: run `id`.
    Other {
        /// The run the key was first used for.
        id: i64,
    },
}

/// What `key` of `actor` was used for, against the request's `fingerprint` (from
/// [`NewRun::fingerprint`]).
///
/// # Errors
/// Database errors.
pub async fn key_use(
    pool: &PgPool,
    actor: &Account,
    key: &str,
    fingerprint: &[u8; 32],
) -> Result<KeyUse, AppError> {
    let row: Option<(i64, String, Option<Vec<u8>>)> = sqlx::query_as(
        "SELECT id, state, idempotency_sha256 FROM runs WHERE submitted_by = $1 AND idempotency_key = $2",
    )
    .bind(actor.id)
    .bind(key)
    .fetch_optional(pool)
    .await?;
    Ok(match row {
        None => KeyUse::New,
        Some((id, _, Some(stored))) if stored.as_slice() != fingerprint.as_slice() => {
            KeyUse::Other { id }
        }
        Some((id, state, _)) => KeyUse::Repeat(Submitted {
            id,
            state,
            repeated: true,
        }),
    })
}

/// The run `actor` already submitted with `key`, if any, when it was submitted with the same
/// request (`fingerprint`, from [`NewRun::fingerprint`]; runs stored without one match any).
///
/// # Errors
/// 422 `idempotency_mismatch` when the key was used for another request; database errors.
pub async fn repeat_of(
    pool: &PgPool,
    actor: &Account,
    key: &str,
    fingerprint: &[u8; 32],
) -> Result<Option<Submitted>, AppError> {
    match key_use(pool, actor, key, fingerprint).await? {
        KeyUse::New => Ok(None),
        KeyUse::Repeat(earlier) => Ok(Some(earlier)),
        KeyUse::Other { id } => Err(AppError::idempotency_mismatch(format!(
            "this Idempotency-Key was already used for another request (run {id}); \
             send that request again, or use a new key for a new run"
        ))),
    }
}

/// An idempotency key with the fingerprint of the request it comes with.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    /// 1 to 255 characters, per submitter (per buyer for contracts): the API's
    /// `Idempotency-Key` or the run form's one-time field.
    pub key: &'a str,
    /// The request's fingerprint: [`NewRun::fingerprint`], or
    /// [`crate::ledger::contracts::Request::fingerprint`] for a contract.
    pub fingerprint: &'a [u8; 32],
}

/// Submits a checked run: it enters the queue, or the approvals inbox when it needs approval.
/// With an idempotency `key` that was used before, it creates nothing and returns the
/// earlier run, `repeated`.
///
/// # Errors
/// 422 `idempotency_mismatch` when a concurrent submission took the key for another request
/// (see [`repeat_of`]); database errors.
pub async fn submit(
    app: &AppState,
    actor: &Account,
    checked: &Checked,
    key: Option<Key<'_>>,
) -> Result<Submitted, AppError> {
    let state = if checked.preview.needs_approval {
        "waiting_approval"
    } else {
        "queued"
    };
    let run = &checked.run;
    let message = if checked.preview.needs_approval {
        Said::new("event-submitted-approval")
            .arg("by", &actor.name)
            .arg(
                "hours",
                domain::format_protected_gpu_hours(checked.preview.protected_milli_gpu_hours, true),
            )
            .arg("limit", checked.preview.self_service_gpu_hours.to_string())
    } else {
        Said::new("event-submitted").arg("by", &actor.name)
    };
    // The run and its first timeline entry, in one statement with the concurrent submissions'
    // ([`batch`]); nothing when the submitter already used the key. A queued run then asks
    // for a pass (after the commit, so the pass sees it).
    let row = batch::NewRow {
        project_id: checked.project_id,
        cluster_id: checked.cluster_id,
        model_id: checked.model_id,
        submitted_by: actor.id,
        gpus: run.gpus as i32,
        min_runtime_s: run.min_runtime_s,
        time_limit_s: run.time_limit_s,
        priority: run.priority,
        resumable: run.resumable,
        command: run.command.clone(),
        workdir: run.workdir.clone(),
        env: serde_json::to_value(&run.env).map_err(|e| AppError::Internal(e.into()))?,
        state,
        message,
        key: key.map(|k| k.key.to_string()),
        fingerprint: key.map(|k| k.fingerprint.to_vec()),
        secret_env: seal_secret_env(&app.secret_key, &run.secret_env),
        secret_env_names: run.secret_env.keys().cloned().collect(),
    };
    let id = match app.submissions.insert(&app.pool, row).await? {
        batch::Outcome::Inserted(id) => id,
        // Archived since the checks read it: the same answer as an archived project's name.
        batch::Outcome::ProjectArchived => {
            return Err(AppError::NotFound(i18n::t1(
                "contract-err-no-project",
                "name",
                domain::quote(&run.project),
            )));
        }
        // A concurrent repeat won the race for the key.
        batch::Outcome::KeyUsed => {
            let earlier = match key {
                Some(Key { key, fingerprint }) => {
                    repeat_of(&app.pool, actor, key, fingerprint).await?
                }
                None => None,
            };
            return earlier.ok_or_else(|| {
                AppError::Internal(anyhow::anyhow!("a run key conflicted but no run has it"))
            });
        }
    };
    if state == "queued" {
        app.wake.notify_one();
    }
    Ok(Submitted {
        id,
        state: state.to_string(),
        repeated: false,
    })
}

/// The facts of one run that permission checks need.
struct Owner {
    project_id: i64,
    submitted_by: i64,
}

/// No run `id` (or none the actor may see: the same answer, so ids reveal nothing).
fn no_run(id: i64) -> AppError {
    AppError::NotFound(i18n::t1("err-no-run", "id", id.to_string()))
}

async fn owner(db: impl sqlx::PgExecutor<'_>, id: i64) -> Result<Owner, AppError> {
    let row: Option<(i64, i64)> =
        sqlx::query_as("SELECT project_id, submitted_by FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(db)
            .await?;
    let (project_id, submitted_by) = row.ok_or_else(|| no_run(id))?;
    Ok(Owner {
        project_id,
        submitted_by,
    })
}

/// Whether `actor` may see a run: its submitter, its project's members and leads, admin and
/// finance.
pub fn may_view(actor: &Account, parents: &Parents, project: i64, submitted_by: i64) -> bool {
    actor.id == submitted_by || actor.may_view(project, parents)
}

/// Cancels a run: at once while it waits; through its agent (SIGTERM, grace period) while it
/// runs. Allowed to its submitter, the project's leads and admins.
///
/// # Errors
/// 404 for an unknown or invisible run, 403 for others, 409 `not_cancellable` once it ended.
pub async fn cancel(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    parents: &Parents,
    id: i64,
) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    service::serialize_with_passes(&mut tx).await?;
    let o = owner(&mut *tx, id).await?;
    if !may_view(actor, parents, o.project_id, o.submitted_by) {
        return Err(no_run(id));
    }
    if actor.id != o.submitted_by && !actor.leads(o.project_id, parents) {
        return Err(AppError::Forbidden(i18n::t("err-cancel-forbidden")));
    }
    let (state, stop_kind): (String, Option<String>) =
        sqlx::query_as("SELECT state, stop_kind FROM runs WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
    let by = Said::new("event-cancelled").arg("by", &actor.name);
    // Cancelled already: asking again changes nothing and adds nothing to the timeline.
    let again = state == "stopping" && stop_kind.as_deref() == Some("cancelled");
    match state.as_str() {
        "waiting_approval" | "queued" => {
            sqlx::query("UPDATE runs SET state = 'cancelled', ended_at = now(), wait_reason = NULL, estimated_start = NULL WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            event(&mut tx, id, "cancelled", &by, None).await?;
            wake(&mut tx).await?;
        }
        "starting" | "running" => {
            // An admin stopping a protected run on a draining node: that drain needed a human.
            if actor.is_admin() {
                crate::db::drains::note_protected_stop(&mut tx, id).await?;
            }
            service::begin_stop(&mut tx, pool, site, id, "cancelled").await?;
            event(&mut tx, id, "cancel_requested", &by, None).await?;
            refresh_holds(&mut tx).await?;
        }
        "stopping" if again => {}
        "stopping" => {
            sqlx::query("UPDATE runs SET stop_kind = 'cancelled' WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            event(&mut tx, id, "cancel_requested", &by, None).await?;
        }
        other => {
            return Err(AppError::Refused {
                code: "not_cancellable",
                message: i18n::t2(
                    "err-run-ended",
                    "id",
                    id.to_string(),
                    "state",
                    i18n::t(&format!("state-{other}")),
                ),
            });
        }
    }
    // A lead's or admin's cancel of someone else's run is theirs to answer for: audited (a
    // researcher's own cancels are in the run's timeline only).
    if actor.id != o.submitted_by && !again {
        crate::db::audit::record(
            &mut *tx,
            crate::db::audit::Change {
                actor: Some(actor.id),
                action: "run.cancel",
                entity: "run",
                entity_id: Some(id),
                node_id: Some(o.project_id),
                before: Some(serde_json::json!({"state": state})),
                after: Some(serde_json::json!({"state": "cancelled"})),
            },
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Approves (`approve = true`) or denies a run waiting for approval. Allowed to a lead of the
/// run's project or any node above it, and admins. A denial needs a reason; an approval
/// re-checks that the balance covers the minimum-runtime cost.
///
/// # Errors
/// 404 unknown or invisible run, 403 outside the lead's subtree, 409 `not_waiting_approval`,
/// 409 `budget_exceeded`, 422 for a missing denial reason.
pub async fn decide(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    parents: &Parents,
    id: i64,
    approve: bool,
    reason: &str,
) -> Result<(), AppError> {
    let reason = reason.trim();
    if !approve && reason.is_empty() {
        return Err(AppError::invalid("reason", i18n::t("approvals-err-reason")));
    }
    if reason.len() > 2000 {
        return Err(AppError::invalid(
            "reason",
            i18n::t("approvals-err-reason-long"),
        ));
    }
    let mut tx = pool.begin().await?;
    let o = owner(&mut *tx, id).await?;
    if !may_view(actor, parents, o.project_id, o.submitted_by) {
        return Err(no_run(id));
    }
    if !actor.leads(o.project_id, parents) {
        return Err(AppError::Forbidden(i18n::t("approvals-err-not-lead")));
    }
    let row: (String, i64, i64, i32, i64) = sqlx::query_as(
        "SELECT r.state, r.gpus::BIGINT, r.min_runtime_s, m.billing_weight_milli, m.price_per_gpu_hour_minor \
         FROM runs r JOIN gpu_models m ON m.id = r.gpu_model_id WHERE r.id = $1 FOR UPDATE OF r",
    )
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    let (state, gpus, min_runtime, weight, price) = row;
    let project = o.project_id;
    if state != "waiting_approval" {
        return Err(AppError::Refused {
            code: "not_waiting_approval",
            message: i18n::t2(
                "approvals-err-not-waiting",
                "id",
                id.to_string(),
                "state",
                // English keeps the state's code, as the API has always said it.
                if i18n::current() == i18n::Lang::En {
                    state.clone()
                } else {
                    i18n::t(&format!("state-{state}"))
                },
            ),
        });
    }
    if approve {
        let cost = domain::contract_price(gpus, min_runtime, i64::from(weight), price);
        let balance = available_balance(pool, site, project).await?;
        if cost.0 > balance.0 {
            return Err(AppError::Refused {
                code: "budget_exceeded",
                message: i18n::t2(
                    "approvals-err-budget",
                    "balance",
                    balance.display(&site.currency),
                    "cost",
                    cost.display(&site.currency),
                ),
            });
        }
        sqlx::query("UPDATE runs SET state = 'queued', queued_at = now(), decided_by = $2, decided_at = now(), decision_reason = NULLIF($3, '') WHERE id = $1")
            .bind(id)
            .bind(actor.id)
            .bind(reason)
            .execute(&mut *tx)
            .await?;
        let message = if reason.is_empty() {
            Said::new("event-approved").arg("by", &actor.name)
        } else {
            Said::new("event-approved-why")
                .arg("by", &actor.name)
                .arg("reason", reason)
        };
        event(&mut tx, id, "approved", &message, None).await?;
        wake(&mut tx).await?;
        decision_audit(&mut tx, actor, id, project, "run.approve", "queued", reason).await?;
    } else {
        sqlx::query("UPDATE runs SET state = 'denied', ended_at = now(), decided_by = $2, decided_at = now(), decision_reason = $3 WHERE id = $1")
            .bind(id)
            .bind(actor.id)
            .bind(reason)
            .execute(&mut *tx)
            .await?;
        event(
            &mut tx,
            id,
            "denied",
            &Said::new("event-denied")
                .arg("by", &actor.name)
                .arg("reason", reason),
            None,
        )
        .await?;
        decision_audit(&mut tx, actor, id, project, "run.deny", "denied", reason).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Records an approval or denial (`action`: `run.approve` or `run.deny`) in the audit log.
async fn decision_audit(
    conn: &mut PgConnection,
    actor: &Account,
    run: i64,
    project: i64,
    action: &str,
    state: &str,
    reason: &str,
) -> Result<(), sqlx::Error> {
    crate::db::audit::record(
        conn,
        crate::db::audit::Change {
            actor: Some(actor.id),
            action,
            entity: "run",
            entity_id: Some(run),
            node_id: Some(project),
            before: Some(serde_json::json!({"state": "waiting_approval"})),
            after: Some(serde_json::json!({"state": state, "reason": reason})),
        },
    )
    .await
}

/// One run in a list, with what its row shows.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RunRow {
    /// Run id.
    pub id: i64,
    /// Project name.
    pub project: String,
    /// Project id.
    pub project_id: i64,
    /// Cluster name.
    pub cluster: String,
    /// GPU model name.
    pub gpu_model: String,
    /// GPUs.
    pub gpus: i32,
    /// Minimum runtime, seconds.
    pub min_runtime_s: i64,
    /// Time limit, seconds.
    pub time_limit_s: i64,
    /// Priority within the project.
    pub priority: i32,
    /// Resumable.
    pub resumable: bool,
    /// Shell command.
    pub command: String,
    /// State.
    pub state: String,
    /// Submitter's name.
    pub submitted_by: String,
    /// Submission instant.
    #[serde(with = "time::serde::rfc3339")]
    pub submitted_at: time::OffsetDateTime,
    /// Start of the current or last attempt.
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<time::OffsetDateTime>,
    /// End.
    #[serde(with = "time::serde::rfc3339::option")]
    pub ended_at: Option<time::OffsetDateTime>,
    /// Attempts started so far.
    pub attempt: i32,
    /// Why it waits, in words (queued runs).
    pub wait_reason: Option<String>,
    /// Estimated start (queued runs), when known.
    #[serde(with = "time::serde::rfc3339::option")]
    pub estimated_start: Option<time::OffsetDateTime>,
    /// Exit status of the last attempt.
    pub exit_code: Option<i32>,
    /// The approval decision's reason.
    pub decision_reason: Option<String>,
    /// Why it waits, structured, for pages in the viewer's language (not in the API).
    #[serde(skip)]
    pub wait_note: Option<sqlx::types::Json<crate::i18n::wait::WaitNote>>,
    /// Queued allocated runs: its place in its project's line (1 = next), computed when read
    /// ([`place_in_line`]); `None` for other runs.
    #[sqlx(skip)]
    pub position_in_project: Option<i64>,
}

/// Hides from `actor` the names of the projects a fair-share reason names that `actor` may not
/// see (their names are hidden on the program tree and project pages too): in the structured
/// note they become empty (pages then say "another project"), and in the English words the
/// list of names is written with "another project" in their place. Other reasons are left as
/// they are. Returns whether a name was hidden.
pub fn hide_unseen_projects(
    actor: &Account,
    parents: &Parents,
    words: &mut Option<String>,
    note: Option<&mut crate::i18n::wait::WaitNote>,
) -> bool {
    let Some(crate::i18n::wait::WaitNote::Pass {
        reason: crate::scheduler::reason::WaitReason::FairShare { ahead, .. },
        projects,
        ..
    }) = note
    else {
        return false;
    };
    let before = projects.join(", ");
    let mut hidden = false;
    for (id, name) in ahead.as_slice().iter().zip(projects.iter_mut()) {
        if !name.is_empty() && !actor.may_view(id.0, parents) {
            name.clear();
            hidden = true;
        }
    }
    if !hidden {
        return false;
    }
    let after = projects
        .iter()
        .map(|p| if p.is_empty() { "another project" } else { p })
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(w) = words.as_mut() {
        *w = w.replacen(&before, &after, 1);
    }
    true
}

/// [`hide_unseen_projects`] on each row.
fn hide_unseen_in_rows(actor: &Account, parents: &Parents, rows: &mut [RunRow]) {
    for r in rows {
        let _ = hide_unseen_projects(
            actor,
            parents,
            &mut r.wait_reason,
            r.wait_note.as_mut().map(|n| &mut n.0),
        );
    }
}

/// The API's words for a run waiting for approval, which no pass writes (passes write the
/// reasons of queued runs): "Waits for a lead's approval: its protected contract (H GPU-hours)
/// is above the project's self-service limit.", as its page says, in English like every
/// reason the API gives. Other rows are left as they are.
pub fn explain_approval_wait(row: &mut RunRow) {
    if row.state != "waiting_approval" || row.wait_reason.is_some() {
        return;
    }
    let milli = (i64::from(row.gpus) * row.min_runtime_s * 1000 + 3599) / 3600;
    let en = crate::i18n::Lang::En;
    row.wait_reason = Some(format!(
        "{} {}",
        crate::i18n::message(en, "run-waits-approval", &[]),
        crate::i18n::message(
            en,
            "run-waits-approval-why",
            &[("hours", &domain::format_protected_gpu_hours(milli, true))],
        )
    ));
}

/// Sets the place in its project's line of each queued allocated run among `rows`: the order
/// in which the scheduler considers a project's waiting runs of one pool (priority, highest
/// first, then the second it was queued, then id; docs/design.md section 3.1), counting the
/// project's queued allocated runs on the same cluster and GPU model (runs of another pool
/// wait for other GPUs, not ahead of it). Computed when read rather than stored with the waiting reason: it
/// changes with every start of the project while the reason stays.
///
/// # Errors
/// Database errors.
pub async fn place_in_line(pool: &PgPool, rows: &mut [RunRow]) -> Result<(), AppError> {
    let queued: Vec<i64> = rows
        .iter()
        .filter(|r| r.state == "queued" && r.min_runtime_s > 0)
        .map(|r| r.id)
        .collect();
    if queued.is_empty() {
        return Ok(());
    }
    let projects: Vec<i64> = rows
        .iter()
        .filter(|r| queued.contains(&r.id))
        .map(|r| r.project_id)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let places: HashMap<i64, i64> = sqlx::query_as(
        "SELECT id, place FROM (SELECT id, row_number() OVER (PARTITION BY project_id, cluster_id, gpu_model_id \
         ORDER BY priority DESC, extract(epoch FROM queued_at)::BIGINT, id) AS place \
         FROM runs WHERE state = 'queued' AND min_runtime_s > 0 AND project_id = ANY($1)) line \
         WHERE id = ANY($2)",
    )
    .bind(&projects)
    .bind(&queued)
    .fetch_all(pool)
    .await?
    .into_iter()
    .collect();
    for r in rows.iter_mut() {
        r.position_in_project = places.get(&r.id).copied();
    }
    Ok(())
}

const ROW_SELECT: &str = "SELECT r.id, t.name AS project, r.project_id, c.name AS cluster, m.name AS gpu_model, r.gpus, \
     r.min_runtime_s, r.time_limit_s, r.priority, r.resumable, r.command, r.state, u.name AS submitted_by, r.submitted_at, \
     r.started_at, r.ended_at, r.attempt, r.wait_reason, r.estimated_start, r.exit_code, r.decision_reason, r.wait_note \
     FROM runs r JOIN tree_nodes t ON t.id = r.project_id JOIN clusters c ON c.id = r.cluster_id \
     JOIN gpu_models m ON m.id = r.gpu_model_id JOIN users u ON u.id = r.submitted_by";

/// Which runs a list shows.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Filter {
    /// `mine` (submitted by me), `projects` (of projects I am a member of or lead), `all`
    /// (everything I may see; the default).
    #[serde(default)]
    pub scope: Option<String>,
    /// Only this state (`active` = queued, starting, running or stopping).
    #[serde(default)]
    pub state: Option<String>,
    /// Only this project (name).
    #[serde(default)]
    pub project: Option<String>,
    /// Only this cluster (name).
    #[serde(default)]
    pub cluster: Option<String>,
    /// At most this many (default 200, at most 1000), newest first.
    #[serde(default)]
    pub limit: Option<i64>,
    /// Only runs with a smaller id: the keyset cursor of the next (older) page, the last id of
    /// the page before ([`Page::next_before`]). Text as it came, read by [`list_page`]: a
    /// whole number from 1 to 2^63 - 1, anything else is refused with a message.
    #[serde(default)]
    pub before: Option<String>,
}

/// The default number of runs a list shows.
pub const LIST_DEFAULT: i64 = 200;

/// The most runs one page of a list shows.
pub const LIST_MAX: i64 = 1_000;

/// One page of the runs an actor may see ([`list_page`]), newest first.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page's runs, at most the filter's limit.
    pub rows: Vec<RunRow>,
    /// How many runs match the filter in all (every page, the cursor aside).
    pub total: i64,
    /// How many of those are newer than this page (0 on the first page).
    pub newer: i64,
    /// The cursor (`before`) of the next, older page: the last id of this one, when older runs
    /// that match remain; `None` on the last page.
    pub next_before: Option<i64>,
}

/// Reads a `before` cursor: `None` when absent or blank.
///
/// # Errors
/// 422 on `before` when it is not a whole number from 1 to `i64::MAX` (letters, a sign, a
/// decimal point, too many digits).
pub fn parse_before(text: Option<&str>) -> Result<Option<i64>, AppError> {
    let Some(text) = text.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    match text.parse::<i64>() {
        Ok(id) if id >= 1 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(id)),
        _ => Err(AppError::invalid(
            "before",
            i18n::t1("err-runs-before", "got", crate::domain::quote(text)),
        )),
    }
}

/// The states a run can be in.
pub const STATES: &[&str] = &[
    "waiting_approval",
    "denied",
    "queued",
    "starting",
    "running",
    "stopping",
    "succeeded",
    "failed",
    "cancelled",
    "preempted",
    "lost",
];

/// The tree nodes under the nodes `actor` leads (their lead grants, admin or not).
fn led(actor: &Account, parents: &Parents) -> Vec<i64> {
    parents
        .0
        .keys()
        .copied()
        .filter(|&n| {
            actor
                .lead_nodes()
                .any(|l| parents.is_ancestor_or_self(l, n))
        })
        .collect()
}

/// The projects `actor` leads or is a member of.
fn own_projects(actor: &Account, parents: &Parents) -> Vec<i64> {
    let mut ids = led(actor, parents);
    ids.extend(actor.projects.iter().copied());
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The project ids `actor` may see runs of (`None` = all).
fn visible_projects(actor: &Account, parents: &Parents) -> Option<Vec<i64>> {
    (!actor.sees_everything()).then(|| own_projects(actor, parents))
}

/// The conditions of a list: `$1` the visible projects (`NULL` = all), `$2` the actor, `$3`
/// the scope, `$4` the actor's own projects, `$5` the state, `$6` the project name, `$7` the
/// cluster name; over `runs r`, `tree_nodes t` and `clusters c`.
const LIST_WHERE: &str = "($1::BIGINT[] IS NULL OR r.project_id = ANY($1) OR r.submitted_by = $2) \
     AND ($3 <> 'mine' OR r.submitted_by = $2) \
     AND ($3 <> 'projects' OR r.project_id = ANY($4)) \
     AND ($5::TEXT IS NULL OR r.state = $5 OR ($5 = 'active' AND r.state IN ('queued', 'starting', 'running', 'stopping'))) \
     AND ($6::TEXT IS NULL OR lower(t.name) = lower($6)) \
     AND ($7::TEXT IS NULL OR lower(c.name) = lower($7))";

/// Runs `actor` may see, filtered, newest first: the rows of [`list_page`] and the cursor of
/// the next (older) page when there is one (its `before`), without counting what matches.
///
/// # Errors
/// 422 for an unknown state or scope, or a `before` that is not a run id.
pub async fn list(
    pool: &PgPool,
    actor: &Account,
    parents: &Parents,
    filter: &Filter,
) -> Result<(Vec<RunRow>, Option<i64>), AppError> {
    let c = Conditions::of(actor, parents, filter)?;
    let (mut rows, next_before) = c.rows(pool).await?;
    hide_unseen_in_rows(actor, parents, &mut rows);
    Ok((rows, next_before))
}

/// One page of the runs `actor` may see, filtered, newest first: at most the filter's `limit`
/// (default [`LIST_DEFAULT`], clamped to 1 ..= [`LIST_MAX`]) of those with an id below its
/// `before` (all when absent), with how many match in all and how many are newer than the
/// page, and the cursor of the next page (keyset paging by id, as the ledger's
/// [`crate::ledger::entries`]).
///
/// # Errors
/// 422 for an unknown state or scope, or a `before` that is not a run id.
pub async fn list_page(
    pool: &PgPool,
    actor: &Account,
    parents: &Parents,
    filter: &Filter,
) -> Result<Page, AppError> {
    let c = Conditions::of(actor, parents, filter)?;
    let (mut rows, next_before) = c.rows(pool).await?;
    hide_unseen_in_rows(actor, parents, &mut rows);
    let (total, newer): (i64, i64) = c
        .bind(sqlx::query_as(&format!(
            "SELECT count(*), count(*) FILTER (WHERE r.id >= $8) \
             FROM runs r JOIN tree_nodes t ON t.id = r.project_id JOIN clusters c ON c.id = r.cluster_id \
             WHERE {LIST_WHERE}"
        )))
        .fetch_one(pool)
        .await?;
    Ok(Page {
        rows,
        total,
        newer,
        next_before,
    })
}

/// A list's filter, checked, as the parameters of [`LIST_WHERE`].
struct Conditions<'f> {
    visible: Option<Vec<i64>>,
    actor: i64,
    scope: &'f str,
    mine: Vec<i64>,
    state: Option<&'f str>,
    project: Option<&'f str>,
    cluster: Option<&'f str>,
    before: i64,
    limit: i64,
}

impl<'f> Conditions<'f> {
    fn of(actor: &Account, parents: &Parents, filter: &'f Filter) -> Result<Self, AppError> {
        let scope = filter.scope.as_deref().unwrap_or("all");
        if !["mine", "projects", "all"].contains(&scope) {
            return Err(AppError::invalid("scope", i18n::t("err-runs-scope")));
        }
        let state = filter.state.as_deref().filter(|s| !s.is_empty());
        if let Some(s) = state
            && s != "active"
            && !STATES.contains(&s)
        {
            return Err(AppError::invalid(
                "state",
                i18n::t2(
                    "err-runs-state",
                    "got",
                    crate::domain::quote(s),
                    "states",
                    STATES.join(", "),
                ),
            ));
        }
        let before = parse_before(filter.before.as_deref())?;
        Ok(Self {
            visible: visible_projects(actor, parents),
            actor: actor.id,
            scope,
            // "My projects": the ones the actor is a member of or leads.
            mine: own_projects(actor, parents),
            state,
            project: filter
                .project
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty()),
            cluster: filter
                .cluster
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty()),
            before: before.unwrap_or(i64::MAX),
            limit: filter.limit.unwrap_or(LIST_DEFAULT).clamp(1, LIST_MAX),
        })
    }

    /// Binds `$1` to `$8` (`$8`: the cursor).
    fn bind<'q, O>(
        &'q self,
        q: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
        q.bind(&self.visible)
            .bind(self.actor)
            .bind(self.scope)
            .bind(&self.mine)
            .bind(self.state)
            .bind(self.project)
            .bind(self.cluster)
            .bind(self.before)
    }

    /// The page's rows, with their place in line, and the next page's cursor.
    async fn rows(&self, pool: &PgPool) -> Result<(Vec<RunRow>, Option<i64>), AppError> {
        let sql =
            format!("{ROW_SELECT} WHERE {LIST_WHERE} AND r.id < $8 ORDER BY r.id DESC LIMIT $9");
        let mut rows: Vec<RunRow> = self
            .bind(sqlx::query_as(&sql))
            .bind(self.limit + 1)
            .fetch_all(pool)
            .await?;
        let more = rows.len() as i64 > self.limit;
        rows.truncate(self.limit as usize);
        let next_before = if more {
            rows.last().map(|r| r.id)
        } else {
            None
        };
        place_in_line(pool, &mut rows).await?;
        Ok((rows, next_before))
    }
}

/// Runs waiting for approval that `actor` may decide (a lead's subtree, everything for
/// admins), oldest first, at most 1,000.
///
/// # Errors
/// Database errors.
pub async fn approvals(
    pool: &PgPool,
    actor: &Account,
    parents: &Parents,
) -> Result<Vec<RunRow>, AppError> {
    let led: Option<Vec<i64>> = (!actor.is_admin()).then(|| led(actor, parents));
    let sql = format!(
        "{ROW_SELECT} WHERE r.state = 'waiting_approval' AND ($1::BIGINT[] IS NULL OR r.project_id = ANY($1)) \
         ORDER BY r.id LIMIT 1000"
    );
    Ok(sqlx::query_as::<_, RunRow>(&sql)
        .bind(led)
        .fetch_all(pool)
        .await?)
}

/// One entry of a run's timeline.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Event {
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    /// What: submitted, approved, denied, started, running, preempted, requeued, succeeded,
    /// failed, cancel_requested, cancelled, lost, time_limit, ...
    pub kind: String,
    /// In words.
    pub message: String,
    /// For a preemption, the run it made room for.
    pub for_run: Option<i64>,
    /// The attempt it belongs to.
    pub attempt: i32,
    /// The message as a [`Said`] (JSON), for pages in other languages; `None` for entries
    /// written before timeline entries had one.
    #[serde(skip)]
    pub note: Option<serde_json::Value>,
}

impl Event {
    /// The entry's message in the current language (the stored English for old entries).
    pub fn words(&self) -> String {
        Said::from_json(self.note.as_ref())
            .map_or_else(|| self.message.clone(), |s| s.render(i18n::current()))
    }
}

/// Where one attempt ran on one node.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Placement {
    /// Attempt.
    pub attempt: i32,
    /// Node name.
    pub node: String,
    /// GPU indices on the node.
    pub gpus: Vec<i32>,
    /// assigned, running or exited.
    pub process: String,
    /// Exit status once exited.
    pub exit_code: Option<i32>,
    /// While the attempt runs: the latest utilization its agent reported for each of its
    /// GPUs, percent (`None` where unknown).
    pub utilization: Option<Vec<Option<i16>>>,
    /// On a Slurm cluster: the attempt's Slurm job (`gpus` are then the indices Slurm gave
    /// it, its `CUDA_VISIBLE_DEVICES`, once it runs).
    pub slurm_job: Option<i64>,
    /// `held` (a gang member held until every member can start: another run's process still
    /// uses GPUs of one of its nodes) or `never_started` (stopped before its process started);
    /// empty otherwise. For pages; the API's `process` says `assigned` and `exited`.
    #[serde(skip)]
    pub note: String,
}

/// Everything the run page shows.
#[derive(Debug, Clone, Serialize)]
pub struct Detail {
    /// The run.
    #[serde(flatten)]
    pub run: RunRow,
    /// Working directory.
    pub workdir: Option<String>,
    /// Extra environment, secret values shown as [`MASK`].
    pub env: BTreeMap<String, String>,
    /// The names of the environment variables kept secret (their values are never shown).
    pub secret_env: Vec<String>,
    /// Timeline, oldest first.
    pub events: Vec<Event>,
    /// Placements of every attempt.
    pub placements: Vec<Placement>,
    /// What its time cost, every attempt together.
    pub charges: Charges,
    /// Whether the viewer may cancel it now.
    pub can_cancel: bool,
    /// Whether the viewer may approve or deny it now.
    pub can_decide: bool,
}

/// What a run's time cost, every attempt together, from its ledger postings: charged as it ran
/// (its minimum runtime's cost is only held, not a price), prepaid by its project's capacity
/// contract, or free (unallocated, or past the budget).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct Charges {
    /// Money taken from the project's budget, minor units.
    pub charged_minor: i64,
    /// GPU-seconds charged.
    pub charged_gpu_seconds: i64,
    /// GPU-seconds on its capacity contract, paid with the contract.
    pub prepaid_gpu_seconds: i64,
    /// GPU-seconds recorded free.
    pub free_gpu_seconds: i64,
}

/// A run's page data, for those who may see it.
///
/// # Errors
/// 404 for unknown or invisible runs.
pub async fn detail(
    pool: &PgPool,
    actor: &Account,
    parents: &Parents,
    id: i64,
) -> Result<Detail, AppError> {
    let o = owner(pool, id).await?;
    if !may_view(actor, parents, o.project_id, o.submitted_by) {
        return Err(no_run(id));
    }
    let mut run = sqlx::query_as::<_, RunRow>(&format!("{ROW_SELECT} WHERE r.id = $1"))
        .bind(id)
        .fetch_one(pool)
        .await?;
    place_in_line(pool, std::slice::from_mut(&mut run)).await?;
    hide_unseen_in_rows(actor, parents, std::slice::from_mut(&mut run));
    let (workdir, env, secret_env): (
        Option<String>,
        sqlx::types::Json<BTreeMap<String, String>>,
        Vec<String>,
    ) = sqlx::query_as("SELECT workdir, env, secret_env_names FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await?;
    let mut env = env.0;
    for name in &secret_env {
        env.insert(name.clone(), MASK.to_string());
    }
    let mut events = sqlx::query_as::<_, Event>(
        "SELECT at, kind, message, for_run, attempt, note FROM run_events WHERE run_id = $1 ORDER BY id",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    // The run a preemption made room for is named only to those who may see it (found by a
    // check: a researcher's timeline linked another project's run, which answered 404).
    let others: Vec<i64> = events.iter().filter_map(|e| e.for_run).collect();
    if !others.is_empty() {
        let seen: std::collections::HashSet<i64> = sqlx::query_as::<_, (i64, i64, i64)>(
            "SELECT id, project_id, submitted_by FROM runs WHERE id = ANY($1)",
        )
        .bind(&others)
        .fetch_all(pool)
        .await?
        .into_iter()
        .filter(|&(_, project, by)| may_view(actor, parents, project, by))
        .map(|(run, _, _)| run)
        .collect();
        for e in &mut events {
            e.for_run = e.for_run.filter(|r| seen.contains(r));
        }
    }
    let placements = sqlx::query_as::<_, Placement>(
        "SELECT p.attempt, n.name AS node, COALESCE(p.executor_gpus, p.gpu_indices) AS gpus, p.proc_state AS process, p.exit_code, \
                CASE WHEN r.state IN ('starting', 'running') AND p.attempt = r.attempt AND n.gpu_utilization IS NOT NULL \
                     THEN ARRAY(SELECT n.gpu_utilization[i + 1] FROM unnest(p.gpu_indices) AS i) END AS utilization, \
                (SELECT j.job_id FROM slurm_jobs j WHERE j.run_id = p.run_id AND j.attempt = p.attempt) AS slurm_job, \
                CASE WHEN p.held AND p.proc_state = 'assigned' THEN 'held' WHEN p.never_started THEN 'never_started' ELSE '' END AS note \
         FROM run_placements p JOIN nodes n ON n.id = p.node_id JOIN runs r ON r.id = p.run_id \
         WHERE p.run_id = $1 ORDER BY p.attempt, n.name",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    let charges = sqlx::query_as::<_, Charges>(
        "SELECT coalesce(sum(amount_minor), 0)::BIGINT AS charged_minor, \
                coalesce(sum(gpu_seconds) FILTER (WHERE kind = 'usage' AND contract_id IS NULL), 0)::BIGINT AS charged_gpu_seconds, \
                coalesce(sum(gpu_seconds) FILTER (WHERE kind = 'usage' AND contract_id IS NOT NULL), 0)::BIGINT AS prepaid_gpu_seconds, \
                coalesce(sum(gpu_seconds) FILTER (WHERE kind = 'usage_free'), 0)::BIGINT AS free_gpu_seconds \
         FROM ledger_postings WHERE run_id = $1 AND kind IN ('usage', 'usage_free')",
    )
    .bind(id)
    .fetch_one(pool)
    .await?;
    let live = [
        "waiting_approval",
        "queued",
        "starting",
        "running",
        "stopping",
    ];
    let can_cancel = live.contains(&run.state.as_str())
        && (actor.id == o.submitted_by || actor.leads(o.project_id, parents));
    let can_decide = run.state == "waiting_approval" && actor.leads(o.project_id, parents);
    Ok(Detail {
        run,
        workdir,
        env,
        secret_env,
        events,
        placements,
        charges,
        can_cancel,
        can_decide,
    })
}

/// Recent preemptions and node losses of runs `actor` submitted (for their home page), the
/// last 7 days, newest first, at most 20: run id, when, why, and whether its node was lost
/// (the agent fell silent or the node went away) rather than the run preempted.
///
/// # Errors
/// Database errors.
pub async fn preemption_notices(
    pool: &PgPool,
    actor: &Account,
) -> Result<Vec<(i64, time::OffsetDateTime, String, bool)>, AppError> {
    let rows: Vec<(i64, time::OffsetDateTime, String, bool, Option<serde_json::Value>)> =
        sqlx::query_as(
            // One notice per attempt and kind: a node loss writes the cause ("node lost: no
            // heartbeat") and the run's end ("not resumable"); the first, with the cause, stands.
            "SELECT run_id, at, message, lost, note FROM ( \
               SELECT DISTINCT ON (e.run_id, e.attempt, e.kind) e.id, e.run_id, e.at, e.message, e.kind = 'lost' AS lost, e.note \
               FROM run_events e JOIN runs r ON r.id = e.run_id \
               WHERE r.submitted_by = $1 AND e.kind IN ('preempted', 'lost') AND e.at > now() - interval '7 days' \
               ORDER BY e.run_id, e.attempt, e.kind, e.id) first \
             ORDER BY id DESC LIMIT 20",
        )
        .bind(actor.id)
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(run, at, message, lost, note)| {
            let words =
                Said::from_json(note.as_ref()).map_or(message, |s| s.render(i18n::current()));
            (run, at, words, lost)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{NewRun, describe_exit, looks_secret, parse_before};

    #[test]
    fn a_list_cursor_is_a_whole_number_from_one() {
        assert_eq!(parse_before(None).unwrap(), None);
        assert_eq!(parse_before(Some(" ")).unwrap(), None);
        assert_eq!(parse_before(Some("42")).unwrap(), Some(42));
        assert_eq!(parse_before(Some(" 7 ")).unwrap(), Some(7));
        assert_eq!(
            parse_before(Some("9223372036854775807")).unwrap(),
            Some(i64::MAX)
        );
        for bad in [
            "0",
            "-1",
            "+5",
            "1.5",
            "1e3",
            "abc",
            "12abc",
            "\u{663}",
            "9223372036854775808",
            "99999999999999999999999",
        ] {
            let e = parse_before(Some(bad)).unwrap_err();
            assert_eq!(
                e.status(),
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "{bad}"
            );
        }
    }

    #[test]
    fn secret_looking_names_and_secret_values_never_print() {
        for name in [
            "HF_TOKEN",
            "aws_secret_access_key",
            "API_KEY",
            "DbPassword",
            "token",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["SEED", "WANDB_MODE", "PATH", "PASS"] {
            assert!(!looks_secret(name), "{name}");
        }
        let run = NewRun {
            env: [
                ("HF_TOKEN".into(), "hf_a1".into()),
                ("SEED".into(), "7".into()),
            ]
            .into(),
            secret_env: [("WANDB_API".into(), "w_b2".into())].into(),
            ..NewRun::default()
        };
        let printed = format!("{run:?}");
        assert!(
            !printed.contains("hf_a1") && !printed.contains("w_b2"),
            "{printed}"
        );
        assert!(printed.contains("\"SEED\": \"7\""), "{printed}");
    }

    #[test]
    fn exit_statuses_name_their_signal_or_cause() {
        assert_eq!(describe_exit(0), "status 0");
        assert_eq!(describe_exit(3), "status 3");
        assert_eq!(describe_exit(128 + 9), "status 137 (killed by SIGKILL)");
        assert_eq!(describe_exit(128 + 15), "status 143 (killed by SIGTERM)");
        assert!(describe_exit(127).contains("command not found"));
        // Not a signal number: just the status.
        assert_eq!(describe_exit(128), "status 128");
        assert_eq!(describe_exit(255), "status 255");
        assert_eq!(describe_exit(-1), "status -1");
    }
}
