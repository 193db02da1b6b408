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
        sqlx::query(
            "INSERT INTO nodes (cluster_id, name, gpu_model_id, gpu_count) \
             SELECT $1, $2 || '-' || lpad(i::text, 3, '0'), (SELECT id FROM gpu_models WHERE name = $3), 8 FROM generate_series(1, $4) i",
        )
        .bind(cid)
        .bind(cluster)
        .bind(model)
        .bind(*nodes as i32)
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
    tx.commit().await?;
    Ok(Some(users))
}
