//! `tranche demo`: loads a realistic demo organisation — three programs, fifteen teams and
//! forty projects; clusters of 1,024 H100, 256 B200 and 88 B300 GPUs in 8-GPU nodes; GPU models
//! with billing weights and prices; one user per role; and a cluster `local` without nodes,
//! served by node agents started on this machine. Loading twice changes nothing.

use serde_json::json;
use sqlx::PgPool;

use crate::auth::password;
use crate::db::audit::{self, Change};

/// A demo user as printed: `user: NAME password: PASSWORD role: ROLE`.
#[derive(Clone, Debug)]
pub struct DemoUser {
    /// User name.
    pub name: String,
    /// Generated password (printed once).
    pub password: String,
    /// Role name.
    pub role: &'static str,
}

/// The program tree: (program, share %, [(team, share %, [(project, share %)])]).
type Team = (&'static str, u16, &'static [(&'static str, u16)]);
const PROGRAMS: &[(&str, u16, &[Team])] = &[
    (
        "Foundation Models",
        50,
        &[
            (
                "Pretraining",
                30,
                &[
                    ("fm-pretrain-7b", 40),
                    ("fm-pretrain-70b", 25),
                    ("fm-tokenizer", 20),
                    ("fm-long-context", 15),
                ],
            ),
            (
                "Post-training",
                25,
                &[("fm-rlhf", 50), ("fm-sft", 30), ("fm-reward-models", 20)],
            ),
            (
                "Multimodal",
                20,
                &[
                    ("fm-vision-language", 50),
                    ("fm-speech", 30),
                    ("fm-video", 20),
                ],
            ),
            ("Evaluation", 15, &[("fm-evals", 60), ("fm-red-team", 40)]),
            (
                "Efficiency",
                10,
                &[("fm-distillation", 60), ("fm-quantization", 40)],
            ),
        ],
    ),
    (
        "Applied Research",
        30,
        &[
            (
                "Biology",
                30,
                &[
                    ("ar-protein-folding", 50),
                    ("ar-genomics", 30),
                    ("ar-drug-screening", 20),
                ],
            ),
            (
                "Climate",
                25,
                &[("ar-weather", 50), ("ar-ocean", 30), ("ar-carbon", 20)],
            ),
            (
                "Robotics",
                20,
                &[
                    ("ar-manipulation", 50),
                    ("ar-locomotion", 30),
                    ("ar-sim2real", 20),
                ],
            ),
            ("Code", 15, &[("ar-code-gen", 60), ("ar-code-review", 40)]),
            (
                "Materials",
                10,
                &[("ar-crystals", 60), ("ar-batteries", 40)],
            ),
        ],
    ),
    (
        "Infrastructure & Safety",
        20,
        &[
            (
                "Interpretability",
                30,
                &[("is-circuits", 50), ("is-probing", 30), ("is-sae", 20)],
            ),
            (
                "Alignment",
                25,
                &[
                    ("is-oversight", 50),
                    ("is-honesty", 30),
                    ("is-robustness", 20),
                ],
            ),
            (
                "Systems",
                20,
                &[
                    ("is-kernels", 50),
                    ("is-networking", 30),
                    ("is-checkpointing", 20),
                ],
            ),
            ("Platform", 15, &[("is-ci-gpus", 60), ("is-notebooks", 40)]),
            (
                "Security",
                10,
                &[("is-model-security", 60), ("is-privacy", 40)],
            ),
        ],
    ),
];

/// GPU models: (name, billing weight in thousandths, price per weighted GPU-hour in minor units).
const MODELS: &[(&str, i32, i64)] = &[
    ("H100", 1000, 250),
    ("B200", 1800, 250),
    ("B300", 2500, 250),
];

/// Clusters: (name, GPU model, 8-GPU nodes).
const CLUSTERS: &[(&str, &str, usize)] = &[
    ("h100-east", "H100", 128),
    ("b200-west", "B200", 32),
    ("b300-lab", "B300", 11),
];

/// The demo users: (name, role, lead node or member projects).
const USERS: &[(&str, &str)] = &[
    ("demo-admin", "admin"),
    ("demo-finance", "finance"),
    ("demo-lead", "lead"),
    ("demo-researcher", "researcher"),
];

/// Loads the demo organisation in one transaction. Returns `None` when it is already loaded.
///
/// # Errors
/// Database errors (for example a name already used by a node the site created itself).
pub async fn load(pool: &PgPool) -> anyhow::Result<Option<Vec<DemoUser>>> {
    let mut tx = pool.begin().await?;
    // One loader at a time; the flag decides.
    sqlx::query("SELECT pg_advisory_xact_lock(727274)")
        .execute(&mut *tx)
        .await?;
    let loaded: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM site_flags WHERE name = 'demo_loaded')")
            .fetch_one(&mut *tx)
            .await?;
    if loaded {
        return Ok(None);
    }
    let root: i64 = match sqlx::query_scalar::<_, i64>(
        "SELECT id FROM tree_nodes WHERE parent_id IS NULL",
    )
    .fetch_optional(&mut *tx)
    .await?
    {
        Some(id) => id,
        None => sqlx::query_scalar(
            "INSERT INTO tree_nodes (name, share_bp) VALUES ('Organisation', 10000) RETURNING id",
        )
        .fetch_one(&mut *tx)
        .await?,
    };
    let insert_node = "INSERT INTO tree_nodes (parent_id, name, is_project, share_bp) VALUES ($1, $2, $3, $4) RETURNING id";
    let mut lead_node = 0;
    let mut researcher_projects = Vec::new();
    for (program, pshare, teams) in PROGRAMS {
        let pid: i64 = sqlx::query_scalar(insert_node)
            .bind(root)
            .bind(program)
            .bind(false)
            .bind(i32::from(*pshare) * 100)
            .fetch_one(&mut *tx)
            .await?;
        if lead_node == 0 {
            lead_node = pid;
        }
        for (team, tshare, projects) in *teams {
            let tid: i64 = sqlx::query_scalar(insert_node)
                .bind(pid)
                .bind(team)
                .bind(false)
                .bind(i32::from(*tshare) * 100)
                .fetch_one(&mut *tx)
                .await?;
            for (project, share) in *projects {
                let id: i64 = sqlx::query_scalar(insert_node)
                    .bind(tid)
                    .bind(project)
                    .bind(true)
                    .bind(i32::from(*share) * 100)
                    .fetch_one(&mut *tx)
                    .await?;
                sqlx::query(
                    "INSERT INTO projects (node_id, self_service_gpu_hours) VALUES ($1, 64)",
                )
                .bind(id)
                .execute(&mut *tx)
                .await?;
                if researcher_projects.len() < 2 && lead_node == pid {
                    researcher_projects.push(id);
                }
            }
        }
    }
    for (name, weight, price) in MODELS {
        sqlx::query("INSERT INTO gpu_models (name, billing_weight_milli, price_per_gpu_hour_minor) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING")
            .bind(name)
            .bind(weight)
            .bind(price)
            .execute(&mut *tx)
            .await?;
    }
    for (cluster, model, nodes) in CLUSTERS {
        let cid: i64 = sqlx::query_scalar("INSERT INTO clusters (name) VALUES ($1) RETURNING id")
            .bind(cluster)
            .fetch_one(&mut *tx)
            .await?;
        // Declared before the history the demo records (a day before its first day), so the
        // ended periods it charges have these nodes' entitlements.
        sqlx::query(
            "INSERT INTO nodes (cluster_id, name, gpu_model_id, gpu_count, created_at) \
             SELECT $1, $2 || '-' || lpad(i::text, 3, '0'), (SELECT id FROM gpu_models WHERE name = $3), 8, \
                    now() - make_interval(days => $5) FROM generate_series(1, $4) i",
        )
        .bind(cid)
        .bind(cluster)
        .bind(model)
        .bind(*nodes as i32)
        .bind((HISTORY_DAYS + 1) as i32)
        .execute(&mut *tx)
        .await?;
    }
    // Served by `tranche agent` processes: nodes appear when agents register.
    sqlx::query("INSERT INTO clusters (name) VALUES ('local')")
        .execute(&mut *tx)
        .await?;
    let mut users = Vec::new();
    for (name, role) in USERS {
        let pw = password::generate();
        let hash = tokio::task::spawn_blocking({
            let pw = pw.clone();
            move || password::hash(&pw)
        })
        .await??;
        let uid: i64 = sqlx::query_scalar(
            "INSERT INTO users (name, password_hash) VALUES ($1, $2) RETURNING id",
        )
        .bind(name)
        .bind(hash)
        .fetch_one(&mut *tx)
        .await?;
        let node = (*role == "lead").then_some(lead_node);
        sqlx::query("INSERT INTO role_grants (user_id, role, node_id) VALUES ($1, $2, $3)")
            .bind(uid)
            .bind(role)
            .bind(node)
            .execute(&mut *tx)
            .await?;
        if *role == "researcher" {
            for p in &researcher_projects {
                sqlx::query("INSERT INTO project_members (project_id, user_id) VALUES ($1, $2)")
                    .bind(p)
                    .bind(uid)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        users.push(DemoUser {
            name: (*name).to_string(),
            password: pw,
            role,
        });
    }
    sqlx::query("INSERT INTO site_flags (name, value) VALUES ('demo_loaded', 'true')")
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: None,
            action: "demo.load",
            entity: "site",
            entity_id: None,
            node_id: None,
            before: None,
            after: Some(json!({"programs": PROGRAMS.len(), "clusters": CLUSTERS.len(), "users": USERS.len()})),
        },
    )
    .await?;
    // The demo's tree stands for all of its history (load_history): no snapshot of the tree
    // before it (db::tree::load_period would give its past periods no shares).
    sqlx::query("DELETE FROM tree_snapshots WHERE taken_at = now()")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Some(users))
}

/// Days of past runs [`load_history`] records.
pub const HISTORY_DAYS: i64 = 30;

/// What [`load_history`] recorded.
#[derive(Debug, Clone, Default)]
pub struct HistoryLoaded {
    /// Per cluster: (cluster, recorded runs).
    pub clusters: Vec<(String, crate::metrics::record::Recorded)>,
    /// Usage postings written (one per project, pool and day, and kind).
    pub postings: u64,
    /// GPU-seconds charged to budgets.
    pub charged_gpu_seconds: i64,
    /// GPU-seconds recorded free (beyond a project's balance, or unallocated).
    pub free_gpu_seconds: i64,
    /// Money charged, minor units of the site's currency.
    pub charged_minor: i64,
}

/// Declares the demo's `local` nodes (`names`, 8 H100 each) for a node agent on this machine.
/// They count as installed for as long as the demo's history goes back (their declaration
/// instant is left unknown), as the demo's other clusters do: the budgets its history grants
/// for past months and those months' reports then count the same GPUs.
///
/// # Errors
/// Refused names (see [`crate::db::inventory::declare_nodes`]); database errors.
pub async fn declare_local_nodes(
    pool: &PgPool,
    names: &[String],
) -> Result<(), crate::error::AppError> {
    crate::db::inventory::declare_nodes(pool, None, "local", names, "H100", "8").await?;
    sqlx::query("UPDATE nodes SET created_at = NULL WHERE name = ANY($1)")
        .bind(names)
        .execute(pool)
        .await?;
    Ok(())
}

/// Records about [`HISTORY_DAYS`] days of past runs for the demo organisation's clusters
/// (not `local`): jobs drawn by a fixed-seed generator (projects weighted by their effective
/// share times a demand factor of 0.3 to 2, gangs of 1 to 64 GPUs, run times log-uniform
/// between 5 minutes and 24 hours, arrivals spread evenly to about 80% of the GPU-time),
/// replayed through the scheduling core ([`crate::sim::replay`], policy `tranche`) and written
/// with [`crate::metrics::record`], ending a minute before now. The GPU-time the runs held is
/// charged to their projects' budgets at the instants it was used, per project, pool and day
/// ([`crate::metrics::record::daily_usage`], [`crate::ledger::charge_usage_at`]; the days of
/// the previous budget period into that period's budget, granted then), in time order across
/// the clusters, so spend reports and fair-share standings include the history. Returns
/// `None` when the history is already there or the demo organisation is not loaded; the
/// runs, events and postings are written in one transaction.
///
/// # Errors
/// Database errors (nothing is recorded then).
pub async fn load_history(
    pool: &PgPool,
    site: &crate::config::Site,
) -> anyhow::Result<Option<HistoryLoaded>> {
    use crate::scheduler::{PolicyKind, Share};
    use crate::sim::{replay, setup, trace::Job};
    use rand::{Rng, SeedableRng};

    let mut lock = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(727275)")
        .execute(&mut *lock)
        .await?;
    let (loaded, history): (bool, bool) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM site_flags WHERE name = 'demo_loaded'), \
                EXISTS (SELECT 1 FROM site_flags WHERE name = 'demo_history')",
    )
    .fetch_one(&mut *lock)
    .await?;
    if !loaded || history {
        return Ok(None);
    }
    // The history's submitter is an account of its own that cannot sign in and belongs to no
    // project: recorded under a real user, every past run of every project would be that
    // user's own, and so visible to them whatever their projects.
    let submitter: i64 = sqlx::query_scalar(
        "INSERT INTO users (name, password_hash, disabled) VALUES ('demo-history', NULL, true) \
         ON CONFLICT (name) DO UPDATE SET disabled = true RETURNING id",
    )
    .fetch_one(&mut *lock)
    .await?;
    sqlx::query(
        "INSERT INTO role_grants (user_id, role, node_id) SELECT $1, 'researcher', NULL \
         WHERE NOT EXISTS (SELECT 1 FROM role_grants WHERE user_id = $1)",
    )
    .bind(submitter)
    .execute(&mut *lock)
    .await?;
    // The demo tree as the simulator's (paths of names), and the database id of each project.
    let mut tree = Vec::new();
    let mut ids: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    for (program, pshare, teams) in PROGRAMS {
        tree.push(setup::TreeEntry {
            path: (*program).to_string(),
            share: Share(u32::from(*pshare) * 100),
        });
        for (team, tshare, projects) in *teams {
            tree.push(setup::TreeEntry {
                path: format!("{program}/{team}"),
                share: Share(u32::from(*tshare) * 100),
            });
            for (project, share) in *projects {
                tree.push(setup::TreeEntry {
                    path: format!("{program}/{team}/{project}"),
                    share: Share(u32::from(*share) * 100),
                });
                let id: i64 =
                    sqlx::query_scalar("SELECT id FROM tree_nodes WHERE name = $1 AND is_project")
                        .bind(*project)
                        .fetch_one(&mut *lock)
                        .await?;
                ids.insert((*project).to_string(), id);
            }
        }
    }
    let span = HISTORY_DAYS * 86_400;
    let mut rng = rand::rngs::StdRng::seed_from_u64(20_261_201);
    let mut out = HistoryLoaded::default();
    let mut usage = Vec::new();
    for (cluster, model, nodes) in CLUSTERS {
        let gpus = (*nodes * 8) as u32;
        let pools = vec![setup::PoolSpec {
            model: (*model).to_string(),
            nodes: *nodes as u32,
            gpus_per_node: 8,
        }];
        // Projects' weights: effective share times a demand factor.
        let site0 = setup::build_site(&pools, &tree, &[])?;
        let weights: Vec<(String, f64)> = site0
            .names
            .iter()
            .map(|(id, name)| (name.clone(), site0.effective[id] * rng.gen_range(0.3..2.0)))
            .collect();
        let total_w: f64 = weights.iter().map(|w| w.1).sum();
        let budget = 0.8 * f64::from(gpus) * span as f64;
        let sizes = [1u32, 1, 1, 2, 4, 8, 8, 16, 32, 64];
        let mut jobs = Vec::new();
        let mut used = 0f64;
        while used < budget {
            let mut pick = rng.gen_range(0.0..total_w);
            let mut tenant = weights[0].0.clone();
            for (name, w) in &weights {
                if pick < *w {
                    tenant = name.clone();
                    break;
                }
                pick -= w;
            }
            let g = sizes[rng.gen_range(0..sizes.len())].min(gpus / 4).max(1);
            let duration = (300f64 * (288f64).powf(rng.gen_range(0.0..1.0))) as i64;
            used += f64::from(g) * duration as f64;
            jobs.push(Job {
                line: jobs.len() as u64 + 2,
                submit: rng.gen_range(0..span - duration.min(span / 2)),
                duration,
                gpus: g,
                tenant,
                min_runtime: None,
                time_limit: None,
                priority: None,
                best_effort: false,
                model: None,
            });
        }
        jobs.sort_by_key(|j| (j.submit, j.line));
        let sim = setup::build_site(&pools, &tree, &jobs)?;
        let plans = setup::plan(&sim, &jobs, PolicyKind::Tranche);
        let rep = replay::replay(&sim, &plans, PolicyKind::Tranche, (0, span), &|_| {});
        let shift = jiff::Timestamp::now().as_second() - 60 - rep.end.max(span);
        let (cid, mid): (i64, i64) = sqlx::query_as(
            "SELECT c.id, m.id FROM clusters c, gpu_models m WHERE c.name = $1 AND m.name = $2",
        )
        .bind(*cluster)
        .bind(*model)
        .fetch_one(&mut *lock)
        .await?;
        let target = crate::metrics::record::Target {
            cluster: cid,
            gpu_model: mid,
            submitter,
            projects: sim
                .names
                .iter()
                .map(|(id, name)| (*id, ids[name]))
                .collect(),
            shift_s: shift,
            health: vec![(0, rep.end.max(span), gpus, gpus)],
            command: "python train.py  # recorded demo history".into(),
        };
        let rec = crate::metrics::record::write(&mut lock, &target, &plans, &rep).await?;
        usage.extend(crate::metrics::record::daily_usage(
            &target,
            &rep,
            &site.time_zone,
        )?);
        out.clusters.push(((*cluster).to_string(), rec));
    }
    usage.sort_by_key(|u| (u.at, u.project, u.cluster, u.gpu_model, u.allocated));
    for u in usage {
        let charge = crate::ledger::charge_usage_at(
            pool,
            &mut lock,
            site,
            jiff::Timestamp::from_second(u.at)?,
            u.project,
            (u.cluster, u.gpu_model),
            u.gpu_seconds,
            u.allocated,
            None,
        )
        .await
        .map_err(|e| anyhow::anyhow!("charging the demo history: {e}"))?;
        out.postings +=
            u64::from(charge.charged_gpu_seconds > 0) + u64::from(charge.free_gpu_seconds > 0);
        out.charged_gpu_seconds += charge.charged_gpu_seconds;
        out.free_gpu_seconds += charge.free_gpu_seconds;
        out.charged_minor += charge.charged_minor;
    }
    sqlx::query("INSERT INTO site_flags (name, value) VALUES ('demo_history', $1)")
        .bind(format!("{HISTORY_DAYS} days"))
        .execute(&mut *lock)
        .await?;
    lock.commit().await?;
    // Thousands of rows at once: without fresh statistics the planner takes these tables for
    // empty until autovacuum comes by, and the metrics' reads of the history's events ran
    // for seconds (a scan per row) on the first pages after `demo`.
    sqlx::query("ANALYZE runs, run_events, ledger_postings")
        .execute(pool)
        .await?;
    Ok(Some(out))
}

/// The AI use cases of the demo: the example table of docs/ai-use-cases.md's source, as
/// (name, owner team, bag, allowed data, AI action, human review, monthly limit in major
/// units, metric, stop rule, FOCUS tag value of its spend).
type UseCaseRow = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    i64,
    &'static str,
    &'static str,
    &'static str,
);
const USE_CASES: &[UseCaseRow] = &[
    (
        "Support ticket triage",
        "Support",
        "critical",
        "support e-mail and category history",
        "summarise, classify and propose urgency",
        "before replying to the customer",
        300,
        "time to first classification",
        "more than 5% of urgent tickets misclassified in a month, or any data used beyond support e-mail",
        "support",
    ),
    (
        "Document RAG",
        "Technical office",
        "team",
        "approved internal manuals",
        "answer with sources",
        "review by the area lead",
        500,
        "useful answers with the correct source",
        "fewer than 60% useful answers with the correct source two months running",
        "technical-office",
    ),
    (
        "B2B leads",
        "Sales",
        "team",
        "forms and the authorised CRM",
        "prepare a fit sheet",
        "sales decides the next step",
        250,
        "qualified leads accepted",
        "fewer than 10 qualified leads accepted in a month",
        "sales",
    ),
];

/// A FOCUS 1.x file of the demo's outside AI spend, in `currency`, one line per service and
/// day from the first day of the month before `today` to `today` (UTC days): Azure OpenAI
/// for triage, Azure OpenAI and Azure AI Search for the document assistant, Amazon Bedrock
/// for sales, and a weekly Azure AI Speech line no rule maps (it stays unassigned).
pub fn demo_focus_file(today: jiff::civil::Date, currency: &str) -> String {
    let first = today
        .first_of_month()
        .checked_sub(jiff::Span::new().months(1))
        .unwrap_or(today);
    let mut out = String::from(
        "BilledCost,BillingCurrency,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeDescription,ServiceName,ProviderName,SubAccountId,Tags\n",
    );
    let mut day = first;
    let mut n: i64 = 0;
    while day <= today {
        let next = day.tomorrow().unwrap_or(day);
        let mut line = |cents: i64,
                        desc: &str,
                        service: &str,
                        provider: &str,
                        sub: &str,
                        tags: &str| {
            out.push_str(&format!(
                "{}.{:02},{currency},{day}T00:00:00Z,{next}T00:00:00Z,Usage,{desc},{service},{provider},{sub},\"{tags}\"\n",
                cents / 100,
                cents % 100
            ));
        };
        line(
            800 + (n % 5) * 75,
            "GPT-4o mini tokens",
            "Azure OpenAI",
            "Microsoft",
            "sub-support-prod",
            "{\"\"team\"\":\"\"support\"\"}",
        );
        line(
            1000 + (n % 7) * 60,
            "Embeddings and completions",
            "Azure OpenAI",
            "Microsoft",
            "sub-techoffice",
            "{\"\"team\"\":\"\"technical-office\"\"}",
        );
        line(
            210,
            "Vector search units",
            "Azure AI Search",
            "Microsoft",
            "sub-techoffice",
            "{\"\"team\"\":\"\"technical-office\"\"}",
        );
        line(
            750 + (n % 4) * 125,
            "Claude Haiku on Bedrock",
            "Amazon Bedrock",
            "AWS",
            "acct-sales",
            "{\"\"team\"\":\"\"sales\"\"}",
        );
        if n % 7 == 0 {
            line(
                999,
                "Speech to text minutes",
                "Azure AI Speech",
                "Microsoft",
                "sub-marketing",
                "{}",
            );
        }
        day = next;
        n += 1;
    }
    out
}

/// What [`load_use_cases`] loaded: the use cases' names and the import's outcome.
pub type UseCasesLoaded = (Vec<String>, crate::ai::spend::Outcome);

/// Loads the demo's AI use cases (docs/ai-use-cases.md): a program `Operations` (0% of the
/// GPUs) with the teams Support, Technical office and Sales, the three use cases of the
/// example table owned by them with their monthly limits in the site's currency, a mapping
/// rule per team tag, and [`demo_focus_file`] imported as demo-admin. Returns `None` when
/// they are loaded already or the demo organisation is not.
///
/// # Errors
/// Database errors; a load cut short is completed by the next one.
pub async fn load_use_cases(
    pool: &PgPool,
    site: &crate::config::Site,
    today: jiff::civil::Date,
) -> anyhow::Result<Option<UseCasesLoaded>> {
    let loaded: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM site_flags WHERE name = 'demo_use_cases_loaded')",
    )
    .fetch_one(pool)
    .await?;
    let admin: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-admin'")
        .fetch_optional(pool)
        .await?;
    let (Some(admin), false) = (admin, loaded) else {
        return Ok(None);
    };
    let me = crate::auth::Account::load(pool, admin)
        .await?
        .ok_or_else(|| anyhow::anyhow!("demo-admin is disabled"))?;
    // Each step is idempotent, and the flag is set last: a load cut short is completed by the
    // next one.
    let root: i64 = sqlx::query_scalar("SELECT id FROM tree_nodes WHERE parent_id IS NULL")
        .fetch_one(pool)
        .await?;
    sqlx::query(
        "INSERT INTO tree_nodes (parent_id, name, share_bp) VALUES ($1, 'Operations', 0) ON CONFLICT (name) DO NOTHING",
    )
    .bind(root)
    .execute(pool)
    .await?;
    let program: i64 = sqlx::query_scalar("SELECT id FROM tree_nodes WHERE name = 'Operations'")
        .fetch_one(pool)
        .await?;
    for team in ["Support", "Technical office", "Sales"] {
        sqlx::query("INSERT INTO tree_nodes (parent_id, name, share_bp) VALUES ($1, $2, 0) ON CONFLICT (name) DO NOTHING")
            .bind(program)
            .bind(team)
            .execute(pool)
            .await?;
    }
    let tree = crate::db::tree::load(
        pool,
        jiff::Timestamp::now(),
        &crate::domain::PeriodCalendar::new(jiff::tz::TimeZone::UTC),
    )
    .await?;
    let mut names = Vec::new();
    for (name, team, bag, data, action, review, limit, metric, stop, tag) in USE_CASES {
        let owner = tree
            .nodes
            .iter()
            .find(|n| n.name == *team)
            .map(|n| n.id)
            .ok_or_else(|| anyhow::anyhow!("demo team {team} missing"))?;
        let draft = crate::ai::Draft {
            name: (*name).into(),
            owner_node_id: owner,
            bag: (*bag).into(),
            allowed_data: (*data).into(),
            ai_action: (*action).into(),
            human_review: (*review).into(),
            monthly_limit: crate::domain::Money(limit * 100),
            metric: (*metric).into(),
            stop_rule: (*stop).into(),
            services: vec!["Azure OpenAI".into(), "Amazon Bedrock".into()],
            project_ids: Vec::new(),
            human_hourly_rate: crate::domain::Money(4_500),
        };
        let existing: Option<i64> =
            sqlx::query_scalar("SELECT id FROM ai_use_cases WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await?;
        let id = match existing {
            Some(id) => id,
            None => crate::ai::create(pool, &me, &tree, draft)
                .await
                .map_err(|e| anyhow::anyhow!("demo use case {name}: {e}"))?,
        };
        crate::ai::set_status(pool, &me, &tree.parents, id, "active")
            .await
            .map_err(|e| anyhow::anyhow!("demo use case {name}: {e}"))?;
        match crate::ai::spend::add_rule(
            pool,
            &me,
            &tree.parents,
            id,
            "focus",
            "",
            &format!("team={tag}"),
        )
        .await
        {
            Ok(_)
            | Err(crate::error::AppError::Refused {
                code: "rule_exists",
                ..
            }) => {}
            Err(e) => anyhow::bail!("demo rule for {name}: {e}"),
        }
        names.push((*name).to_string());
    }
    let file = demo_focus_file(today, &site.currency);
    let outcome = crate::ai::spend::import(
        pool,
        &me,
        site,
        crate::ai::import::Format::Focus,
        &format!("demo-focus-{today}.csv"),
        file.as_bytes(),
        None,
        true,
    )
    .await
    .map_err(|e| anyhow::anyhow!("demo spend import: {e}"))?;
    let mut tx = pool.begin().await?;
    sqlx::query("INSERT INTO site_flags (name, value) VALUES ('demo_use_cases_loaded', 'true') ON CONFLICT DO NOTHING")
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: None,
            action: "demo.load_use_cases",
            entity: "site",
            entity_id: None,
            node_id: Some(program),
            before: None,
            after: Some(json!({"use_cases": names, "spend_lines": outcome.new_lines})),
        },
    )
    .await?;
    // Its programme stands for the demo's whole history too, as the demo's tree does.
    sqlx::query("DELETE FROM tree_snapshots WHERE taken_at = now()")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Some((names, outcome)))
}
