//! The server side of the node agent protocol (`docs/agent-protocol.md`): cluster agent tokens,
//! node registration, and the sync call that is at once heartbeat, process report and long poll
//! for assignments.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::db::audit;
use crate::error::AppError;
use crate::i18n::said::Said;
use crate::state::AppState;

use super::service::{lose_node, serialize_with_passes};
use super::wake;

/// Creates an agent token for the cluster named `cluster` and returns it (the only time it
/// exists in clear: `tra_` and 64 hex digits; only its SHA-256 is stored), audited as
/// `agent_token.create` by the system (the command line).
///
/// # Errors
/// NotFound for an unknown cluster; Refused (`not_agent_cluster`) for a cluster another
/// executor serves; database errors.
pub async fn create_token(pool: &PgPool, cluster: &str) -> Result<String, AppError> {
    let id = crate::db::inventory::cluster_id(pool, cluster)
        .await?
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "no cluster named {cluster}",
                cluster = crate::domain::quote(cluster)
            ))
        })?;
    let executor: String = sqlx::query_scalar("SELECT executor FROM clusters WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await?;
    if executor != "agent" {
        return Err(AppError::Refused {
            code: "not_agent_cluster",
            message: format!(
                "cluster {} is served by {executor}, not by node agents",
                crate::domain::quote(cluster)
            ),
        });
    }
    let token = format!("tra_{}", crate::auth::random_hex(32));
    // The token and its audit entry in one statement.
    sqlx::query(
        "WITH t AS (INSERT INTO agent_tokens (cluster_id, token_hash) VALUES ($1, $2) RETURNING id) \
         INSERT INTO audit_log (action, entity, entity_id, after) \
         SELECT 'agent_token.create', 'agent_token', t.id, jsonb_build_object('cluster', c.name) \
         FROM t, clusters c WHERE c.id = $1",
    )
    .bind(id)
    .bind(Sha256::digest(token.as_bytes()).as_slice())
    .execute(pool)
    .await?;
    Ok(token)
}

/// Revokes every agent token of a cluster (each audited as `agent_token.revoke`); returns how
/// many were active.
///
/// # Errors
/// NotFound for an unknown cluster; database errors.
pub async fn revoke_tokens(pool: &PgPool, cluster: &str) -> Result<u64, AppError> {
    let id = crate::db::inventory::cluster_id(pool, cluster)
        .await?
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "no cluster named {cluster}",
                cluster = crate::domain::quote(cluster)
            ))
        })?;
    // The revocations and one audit entry per token in one statement.
    Ok(sqlx::query(
        "WITH t AS (UPDATE agent_tokens SET revoked_at = now() WHERE cluster_id = $1 AND revoked_at IS NULL RETURNING id) \
         INSERT INTO audit_log (action, entity, entity_id, before, after) \
         SELECT 'agent_token.revoke', 'agent_token', t.id, jsonb_build_object('cluster', c.name, 'revoked', false), \
                jsonb_build_object('cluster', c.name, 'revoked', true) \
         FROM t, clusters c WHERE c.id = $1",
    )
    .bind(id)
    .execute(pool)
    .await?
    .rows_affected())
}

/// The cluster an agent token belongs to; `None` for unknown or revoked tokens.
///
/// # Errors
/// Database errors.
pub async fn cluster_for_token(pool: &PgPool, token: &str) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT cluster_id FROM agent_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
    )
    .bind(Sha256::digest(token.as_bytes()).as_slice())
    .fetch_optional(pool)
    .await
}

/// One node an agent serves.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Node name (host name).
    pub name: String,
    /// GPUs on it, 1..=64.
    pub gpus: i32,
    /// GPU model as the agent knows it (`H100` or nvidia-smi's `NVIDIA H100 80GB HBM3`).
    pub gpu_model: String,
}

/// `POST /api/v1/agent/register` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Register {
    /// The nodes, 1..=1024.
    pub nodes: Vec<NodeSpec>,
    /// How the agent describes itself (`HOST pid PID`), at most 200 characters; shown on the
    /// admin cluster page.
    #[serde(default)]
    pub agent: Option<String>,
    /// The session the registering agent last held (its state directory keeps it): a node
    /// whose live session is this one is taken over at once, instead of refused with
    /// `node_in_use` until it times out (the same agent restarted after a crash).
    #[serde(default)]
    pub previous_session: Option<String>,
}

/// Matches an agent's GPU model text to a site model: exact (case-insensitive), else the
/// longest model name that appears as a word of the text.
fn match_model<'a>(text: &str, models: &'a [(i64, String)]) -> Option<&'a (i64, String)> {
    let lower = text.trim().to_lowercase();
    if let Some(m) = models.iter().find(|(_, n)| n.to_lowercase() == lower) {
        return Some(m);
    }
    let words: HashSet<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    models
        .iter()
        .filter(|(_, n)| words.contains(n.to_lowercase().as_str()))
        .max_by_key(|(_, n)| n.len())
}

/// A node of a register that the inventory does not allow.
struct Refusal {
    node: Option<i64>,
    name: String,
    code: &'static str,
    message: String,
}

/// Refused nodes listed in the audit entry of one refused register (the count gives them all).
pub const REFUSALS_AUDITED: usize = 20;

/// Registers an agent's nodes and opens a new session for them. Only nodes an admin declared
/// in the token's cluster can be served, each with exactly its declared GPU model and count,
/// so a leaked agent token can neither add capacity nor receive the runs of a node that does
/// not exist. A refusal is audited (`agent.refused`, one entry per request, listing the first
/// [`REFUSALS_AUDITED`] nodes refused and their count) and changes
/// nothing else. A node whose previous session is still alive (a heartbeat within the
/// timeout) is refused, so a second agent on the same names never takes over a live one's
/// runs; once that session ended, the processes an earlier agent ran there count as lost (the
/// runs are requeued or end as lost), so no attempt ever runs twice. The agent that shows the
/// node's live session (`previous_session`: the same agent, restarted) keeps its runs: the
/// node is listed `kept`, and the agent adopts the processes it left running.
///
/// # Errors
/// 422 for bad names or counts; 409 `undeclared_node` for a node not declared in this cluster,
/// 409 `inventory_mismatch` for one declared with another GPU model or count, 409
/// `node_in_use` for a node another live agent serves (retry once its session ended).
pub async fn register(
    state: &AppState,
    cluster: i64,
    body: Register,
) -> Result<serde_json::Value, AppError> {
    if body.nodes.is_empty() || body.nodes.len() > 1024 {
        return Err(AppError::invalid("nodes", "register 1 to 1024 nodes"));
    }
    if body
        .previous_session
        .as_ref()
        .is_some_and(|s| s.chars().count() > 200)
    {
        return Err(AppError::invalid(
            "previous_session",
            "previous_session is a session id, at most 200 characters",
        ));
    }
    let previous = body.previous_session.clone();
    let label = body
        .agent
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.chars()
                .filter(|&c| !c.is_control() && !crate::domain::is_invisible_format(c))
                .take(200)
                .collect::<String>()
        });
    let models: Vec<(i64, String)> = sqlx::query_as("SELECT id, name FROM gpu_models")
        .fetch_all(&state.pool)
        .await?;
    let mut specs = Vec::new();
    let mut seen = HashSet::new();
    for n in &body.nodes {
        let name = crate::domain::node_name(&n.name).map_err(|m| AppError::invalid("name", m))?;
        if !seen.insert(name.to_lowercase()) {
            return Err(AppError::invalid(
                "name",
                format!("node {name} is listed twice"),
            ));
        }
        if !(1..=64).contains(&n.gpus) {
            return Err(AppError::invalid(
                "gpus",
                format!("node {name}: a node has 1 to 64 GPUs"),
            ));
        }
        specs.push((name, n.gpus, n.gpu_model.trim().to_string()));
    }
    let pool = &state.pool;
    let site = &state.site;
    // The declared inventory: (id, name, cluster, model id, model name, count).
    let lower: Vec<String> = specs.iter().map(|(n, ..)| n.to_lowercase()).collect();
    let declared: Vec<(i64, String, i64, i64, String, i32)> = sqlx::query_as(
        "SELECT n.id, n.name, n.cluster_id, n.gpu_model_id, m.name, n.gpu_count FROM nodes n \
         JOIN gpu_models m ON m.id = n.gpu_model_id WHERE lower(n.name) = ANY($1)",
    )
    .bind(&lower)
    .fetch_all(pool)
    .await?;
    let mut refusals = Vec::new();
    let mut ids = Vec::new();
    for (name, gpus, model_text) in &specs {
        let found = declared
            .iter()
            .find(|d| d.1.to_lowercase() == name.to_lowercase() && d.2 == cluster);
        let Some((id, _, _, model_id, model_name, count)) = found else {
            refusals.push(Refusal {
                node: None,
                name: name.clone(),
                code: "undeclared_node",
                message: format!(
                    "node {name} is not declared in this agent token's cluster; an admin declares it first (cluster page, or `tranche admin declare-nodes`)"
                ),
            });
            continue;
        };
        let reported = match_model(model_text, &models).map(|(m, _)| *m);
        if reported != Some(*model_id) || gpus != count {
            refusals.push(Refusal {
                node: Some(*id),
                name: name.clone(),
                code: "inventory_mismatch",
                message: format!(
                    "node {name} is declared with {count} {model_name} GPUs, this agent reports {gpus} {}; fix the agent's --gpus, or an admin changes the node",
                    crate::domain::quote(model_text)
                ),
            });
            continue;
        }
        ids.push((*id, name.clone()));
    }
    if !refusals.is_empty() {
        // One entry per refused request (a leaked token must not write 1,024 rows a call):
        // the first REFUSALS_AUDITED refused nodes, and how many in all.
        let listed: Vec<serde_json::Value> = refusals
            .iter()
            .take(REFUSALS_AUDITED)
            .map(|r| serde_json::json!({"node": r.name, "node_id": r.node, "reason": r.code, "message": r.message}))
            .collect();
        audit::record(
            pool,
            audit::Change {
                actor: None,
                action: "agent.refused",
                entity: "cluster",
                entity_id: Some(cluster),
                node_id: None,
                before: None,
                after: Some(serde_json::json!({"cluster_id": cluster, "reason": refusals[0].code, "refused": listed, "refused_count": refusals.len(), "agent": label})),
            },
        )
        .await?;
        tracing::warn!(
            cluster,
            refused = refusals.len(),
            first = %refusals[0].message,
            "agent registration refused"
        );
        let shown: Vec<&str> = refusals
            .iter()
            .take(5)
            .map(|r| r.message.as_str())
            .collect();
        let more = refusals.len().saturating_sub(shown.len());
        let mut message = shown.join("; ");
        if more > 0 {
            message.push_str(&format!("; and {more} more"));
        }
        return Err(AppError::Refused {
            code: refusals[0].code,
            message,
        });
    }
    let mut tx = pool.begin().await?;
    serialize_with_passes(&mut tx).await?;
    let number: i64 = sqlx::query_scalar("SELECT nextval('agent_session_seq')")
        .fetch_one(&mut *tx)
        .await?;
    let node_ids: Vec<i64> = ids.iter().map(|(id, _)| *id).collect();
    let session = Session::issue(&state.secret_key, cluster, number, &node_ids);
    let mut out = Vec::new();
    for (id, name) in ids {
        let (live, held): (bool, Option<String>) = sqlx::query_as(
            "SELECT agent_session IS NOT NULL AND agent_seen_at >= now() - make_interval(secs => $2), agent_session \
             FROM nodes WHERE id = $1 FOR NO KEY UPDATE",
        )
        .bind(id)
        .bind(site.agent_timeout_s as f64)
        .fetch_one(&mut *tx)
        .await?;
        // The agent that held the live session, restarted: it takes its nodes over at once.
        let successor = match (&held, &previous) {
            (Some(h), Some(p)) => {
                bool::from(subtle::ConstantTimeEq::ct_eq(h.as_bytes(), p.as_bytes()))
            }
            _ => false,
        };
        if live && !successor {
            return Err(AppError::Refused {
                code: "node_in_use",
                message: format!(
                    "node {name} is served by another agent that is alive (a heartbeat within {} s); two agents must not serve one node: stop it, or wait until it has been silent for {} s",
                    site.agent_timeout_s, site.agent_timeout_s
                ),
            });
        }
        // The same agent, restarted, adopts the processes it left running: its runs stay.
        // Any other agent's predecessor lost its processes with it.
        if !successor {
            lose_node(
                &mut tx,
                pool,
                site,
                id,
                &Said::new("event-agent-restarted").arg("node", &name),
            )
            .await?;
        }
        sqlx::query(
            "UPDATE nodes SET agent_session = $2, agent_seen_at = now(), gpu_utilization = NULL, \
                    agent_label = $3, agent_registered_at = now() WHERE id = $1",
        )
        .bind(id)
        .bind(&session)
        .bind(&label)
        .execute(&mut *tx)
        .await?;
        out.push(serde_json::json!({"id": id, "name": name, "kept": successor}));
    }
    super::refresh_holds(&mut tx).await?;
    wake(&mut tx).await?;
    tx.commit().await?;
    tracing::info!(cluster, nodes = out.len(), "agent registered");
    Ok(serde_json::json!({
        "session": session,
        "nodes": out,
        "heartbeat_s": (site.agent_timeout_s / 3).max(1),
        "timeout_s": site.agent_timeout_s,
    }))
}

/// Makes `session` the session of the nodes in `replaced` (id, the session the database
/// records), each only while it still records that session, all or none; true when done.
/// Logged and audited (`agent.session_restored`).
async fn adopt_session(
    pool: &PgPool,
    cluster: i64,
    session: &str,
    replaced: &[(i64, &str)],
) -> Result<bool, AppError> {
    let ids: Vec<i64> = replaced.iter().map(|(n, _)| *n).collect();
    let olds: Vec<&str> = replaced.iter().map(|(_, s)| *s).collect();
    let mut tx = pool.begin().await?;
    let done = sqlx::query(
        "UPDATE nodes SET agent_session = $3, agent_seen_at = now() \
         FROM unnest($1::bigint[], $2::text[]) AS r(id, old) \
         WHERE nodes.id = r.id AND nodes.agent_session = r.old AND nodes.cluster_id = $4",
    )
    .bind(&ids)
    .bind(&olds)
    .bind(session)
    .bind(cluster)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if done != ids.len() as u64 {
        return Ok(false);
    }
    audit::record(
        &mut *tx,
        audit::Change {
            actor: None,
            action: "agent.session_restored",
            entity: "cluster",
            entity_id: Some(cluster),
            node_id: None,
            before: None,
            after: Some(serde_json::json!({"cluster_id": cluster, "nodes": ids})),
        },
    )
    .await?;
    tx.commit().await?;
    tracing::warn!(
        cluster,
        nodes = ?ids,
        "an agent's session is newer than the database's record of its nodes (the database was restored from an earlier backup): it keeps serving them"
    );
    Ok(true)
}

/// An agent session id, `NUMBER-RANDOM-MAC`: the number of its registration (sequence
/// `agent_session_seq`, which a restore never takes back), 16 random bytes, and an
/// HMAC-SHA256 under the server's secret key of the cluster, the number, the random part and
/// the node ids the session serves (first 16 bytes), all in lowercase hex. The MAC lets a
/// sync prove that this server issued the session for these nodes even when its database no
/// longer records it (restored from an earlier backup): docs/agent-protocol.md section 1.
/// Sessions from before numbering (32 hex digits) count as number 0 and prove nothing.
struct Session;

impl Session {
    /// A new session id for registration `number` of `nodes` in `cluster`.
    fn issue(
        key: &crate::auth::secrets::SecretKey,
        cluster: i64,
        number: i64,
        nodes: &[i64],
    ) -> String {
        let random = crate::auth::random_hex(16);
        let mac = Self::mac(key, cluster, number, &random, nodes);
        format!("{number:x}-{random}-{mac}")
    }

    fn mac(
        key: &crate::auth::secrets::SecretKey,
        cluster: i64,
        number: i64,
        random: &str,
        nodes: &[i64],
    ) -> String {
        let mut nodes = nodes.to_vec();
        nodes.sort_unstable();
        nodes.dedup();
        let listed: Vec<String> = nodes.iter().map(i64::to_string).collect();
        let data = format!(
            "tranche agent session v1\n{cluster}\n{number}\n{random}\n{}",
            listed.join(",")
        );
        hex::encode(&key.fingerprint(data.as_bytes())[..16])
    }

    /// The registration number of a session id; 0 for one from before numbering or one that
    /// does not parse.
    fn number(session: &str) -> i64 {
        session
            .split_once('-')
            .and_then(|(n, _)| i64::from_str_radix(n, 16).ok())
            .filter(|n| *n > 0)
            .unwrap_or(0)
    }

    /// The registration number of `session` when this server issued it for exactly `nodes`
    /// of `cluster` (its MAC holds), else `None`.
    fn vouched(
        key: &crate::auth::secrets::SecretKey,
        cluster: i64,
        session: &str,
        nodes: &[i64],
    ) -> Option<i64> {
        let mut parts = session.splitn(3, '-');
        let (number, random, mac) = (parts.next()?, parts.next()?, parts.next()?);
        let number = i64::from_str_radix(number, 16).ok().filter(|n| *n > 0)?;
        let expected = Self::mac(key, cluster, number, random, nodes);
        bool::from(subtle::ConstantTimeEq::ct_eq(
            expected.as_bytes(),
            mac.as_bytes(),
        ))
        .then_some(number)
    }
}

/// `POST /api/v1/agent/stop` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stop {
    /// Session from registration.
    pub session: String,
}

/// Ends an agent's session when the agent stops cleanly (SIGTERM, Ctrl-C): its nodes are lost
/// at once instead of after the heartbeat timeout, so nothing new is placed there, and their
/// runs are handled as for any lost node (resumable ones requeued, others ended as lost;
/// a stopping run ends). Returns `{"nodes": N}`, the nodes released; 0 for a session that
/// already ended.
///
/// # Errors
/// Database errors.
pub async fn stop(
    state: &AppState,
    cluster: i64,
    body: Stop,
) -> Result<serde_json::Value, AppError> {
    let pool = &state.pool;
    let mut tx = pool.begin().await?;
    serialize_with_passes(&mut tx).await?;
    let nodes: Vec<(i64, String)> = sqlx::query_as(
        "UPDATE nodes SET agent_session = NULL WHERE cluster_id = $1 AND agent_session = $2 RETURNING id, name",
    )
    .bind(cluster)
    .bind(&body.session)
    .fetch_all(&mut *tx)
    .await?;
    for (id, name) in &nodes {
        lose_node(
            &mut tx,
            pool,
            &state.site,
            *id,
            &Said::new("event-agent-stopped").arg("node", name),
        )
        .await?;
    }
    super::refresh_holds(&mut tx).await?;
    wake(&mut tx).await?;
    tx.commit().await?;
    tracing::info!(
        cluster,
        nodes = nodes.len(),
        "agent stopped; its nodes are lost"
    );
    Ok(serde_json::json!({"nodes": nodes.len()}))
}

/// One node's heartbeat figures.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeReport {
    /// Node id from registration.
    pub node: i64,
    /// Per GPU index: utilization percent 0..=100, `null` where unknown.
    #[serde(default)]
    pub utilization: Vec<Option<i32>>,
}

/// One process the agent reports.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReport {
    /// Run id.
    pub run: i64,
    /// Attempt.
    pub attempt: i32,
    /// Node id.
    pub node: i64,
    /// `running` or `exited`.
    pub state: String,
    /// Exit status once exited normally, 0 to [`MAX_EXIT_CODE`], or -1 when the agent could
    /// not learn it; an `exited` report has exactly one of it and `signal`, a `running` one
    /// neither.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Signal number when killed by one, 1 to [`MAX_SIGNAL`] (the exit code recorded is 128
    /// plus it).
    #[serde(default)]
    pub signal: Option<i32>,
    /// For an exited process, how many whole seconds ago it ended, by the agent's clock, 0 to
    /// [`MAX_EXITED_S_AGO`]: the run ends and is charged at that instant (a process that ended
    /// while the server was down is not charged for the outage). Absent means now.
    #[serde(default)]
    pub exited_s_ago: Option<i64>,
    /// For an exited process whose command never ran because of its node (the agent's state
    /// or log directory cannot be written, no process can be started): why, 1 to
    /// [`MAX_FAULT_CHARS`] characters on one line. The pass requeues the run (nothing ran)
    /// and drains the node (docs/agent-protocol.md section 2).
    #[serde(default)]
    pub fault: Option<String>,
}

/// The longest fault an agent may report (characters).
pub const MAX_FAULT_CHARS: usize = 500;

/// The longest ago an agent may say a process exited: a week, beyond which its report is
/// refused rather than read as ending a run before the server's records of it.
pub const MAX_EXITED_S_AGO: i64 = 7 * 24 * 3600;

/// How far past a waiting run's attempt count an agent's report of an attempt the database
/// never assigned may raise it (a restore from a backup that missed those attempts).
pub const MAX_ATTEMPT_GAP: i32 = 1_000;

/// The highest signal number an agent may report: Linux's `SIGRTMAX`.
pub const MAX_SIGNAL: i32 = 64;

/// The highest exit status an agent may report (a process's status is 8 bits).
pub const MAX_EXIT_CODE: i32 = 255;

/// The most processes an agent may say it runs in one sync (`running_count`): 1,024 nodes of
/// at most 64 GPUs, one process per GPU.
pub const MAX_RUNNING_COUNT: i64 = 1024 * 64;

/// The highest run id a sync may say its agent started (`started_up_to`): 2^53 - 1, the
/// largest integer every JSON client reads exactly.
pub const MAX_RUN_ID: i64 = (1 << 53) - 1;

/// The longest session id a sync may carry: the ids this server issues are at most 82
/// characters (`NUMBER-RANDOM-MAC` in hex), earlier ones 32.
pub const MAX_SESSION_CHARS: usize = 200;

/// `POST /api/v1/agent/sync` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sync {
    /// Session from registration.
    pub session: String,
    /// Seconds to wait for a change when there is nothing to do, 0..=30.
    #[serde(default)]
    pub wait_s: u64,
    /// Heartbeats, one per node of the session.
    pub nodes: Vec<NodeReport>,
    /// Processes running or exited since the last acknowledged sync.
    #[serde(default)]
    pub runs: Vec<RunReport>,
    /// Delta syncs: the `version` of the last answer this session applied (0 for none yet);
    /// the answer then lists only the orders that changed since. Absent: the answer lists
    /// the whole desired state, as for agents from before delta syncs.
    #[serde(default)]
    pub since: Option<i64>,
    /// Delta syncs: how many processes the agent runs on these nodes, listed in `runs` or
    /// not; with it, `runs` may leave out running processes an earlier answer acknowledged
    /// (docs/agent-protocol.md, "Running-set digest"). Absent: `runs` lists them all.
    #[serde(default)]
    pub running_count: Option<i64>,
    /// With `running_count`: the digest of those processes
    /// ([`crate::agent::running_digest`]), 0 to 2^61 - 2.
    #[serde(default)]
    pub running_digest: Option<i64>,
    /// Delta syncs: the highest run id among the processes the agent has started (or found
    /// recorded in its state directory), 1 to 2^53 - 1. Read only from a sync that saw
    /// versions the database never drew (restored onto a new machine): run ids then continue
    /// above it, so no new run takes an id the agent already ran.
    #[serde(default)]
    pub started_up_to: Option<i64>,
}

/// 409 `stale_session`: `why` names the node and what happened to it.
fn stale_session(why: String) -> AppError {
    AppError::Refused {
        code: "stale_session",
        message: format!("{why}; register again"),
    }
}

/// Handles one sync: checks the session, records heartbeats and process reports (a process
/// confirmed running, or exited with its status; the next pass turns them into run states),
/// then answers with the desired state of
/// the session's nodes, at once when there is something the agent has not done yet, else
/// after up to `wait_s` seconds or the next change of assignments.
///
/// # Errors
/// 409 `session_replaced` when another agent registered one of the nodes since (this agent
/// should stop), 409 `stale_session` when a node was marked lost (register again);
/// 409 `not_assigned` for a report about a node this session does not serve; 422 for bad
/// figures. A report about a process the node was never assigned records nothing and, when it
/// runs, adds a stop order for it to the answer.
/// Nothing is changed when an error is returned.
pub async fn sync(
    state: &AppState,
    cluster: i64,
    body: Sync,
) -> Result<serde_json::Value, AppError> {
    let pool = &state.pool;
    let site = &state.site;
    if body.nodes.is_empty() || body.nodes.len() > 1024 {
        return Err(AppError::invalid("nodes", "report 1 to 1024 nodes"));
    }
    if body.since.is_some_and(|s| s < 0) {
        return Err(AppError::invalid(
            "since",
            "since is the version of an earlier answer, 0 or more",
        ));
    }
    if body
        .started_up_to
        .is_some_and(|m| body.since.is_none() || !(1..=MAX_RUN_ID).contains(&m))
    {
        return Err(AppError::invalid(
            "started_up_to",
            format!("started_up_to is a run id, 1 to {MAX_RUN_ID}, in a sync with since"),
        ));
    }
    // The running set's count and digest come together, with `since` (delta syncs).
    match (body.running_count, body.running_digest) {
        (None, None) => {}
        (Some(c), Some(d))
            if body.since.is_some()
                && (0..=MAX_RUNNING_COUNT).contains(&c)
                && (0..crate::agent::DIGEST_MODULUS).contains(&d) => {}
        _ => {
            return Err(AppError::invalid(
                "running_count",
                format!(
                    "running_count (0 to {MAX_RUNNING_COUNT}) and running_digest (0 to 2^61 - 2) come together, in a sync with since"
                ),
            ));
        }
    }
    // A signal is a POSIX signal number, 1 to 64 (Linux's real-time signals included); its
    // run's exit code is 128 + the signal, as a shell reports it.
    if let Some(r) = body
        .runs
        .iter()
        .find(|r| r.signal.is_some_and(|s| !(1..=MAX_SIGNAL).contains(&s)))
    {
        return Err(AppError::invalid(
            "signal",
            format!(
                "run {} on node {}: signal {} is not a signal number (1 to {MAX_SIGNAL})",
                r.run,
                r.node,
                r.signal.unwrap_or_default()
            ),
        ));
    }
    // An exit status is what `wait` gives a process that exited normally: 0 to 255, or -1
    // when the agent could not learn it. An exited process has exactly one of a status and a
    // signal; a running one has neither.
    if let Some(r) = body.runs.iter().find(|r| {
        r.exit_code
            .is_some_and(|c| !(-1..=MAX_EXIT_CODE).contains(&c))
            || (r.state == "exited") != (r.exit_code.is_some() ^ r.signal.is_some())
            || (r.state == "running" && r.signal.is_some())
    }) {
        return Err(AppError::invalid(
            "exit_code",
            format!(
                "run {} on node {}: an exited process has either an exit_code (-1 to {MAX_EXIT_CODE}) or a signal, a running one neither",
                r.run, r.node
            ),
        ));
    }
    // How long ago an exit happened: 0 to a week, for exited processes only.
    if let Some(r) = body.runs.iter().find(|r| {
        r.exited_s_ago
            .is_some_and(|s| !(0..=MAX_EXITED_S_AGO).contains(&s) || r.state != "exited")
    }) {
        return Err(AppError::invalid(
            "exited_s_ago",
            format!(
                "run {} on node {}: exited_s_ago is given for an exited process, 0 to {MAX_EXITED_S_AGO} seconds",
                r.run, r.node
            ),
        ));
    }
    // A fault is one line the admin reads, for an exited process only.
    if let Some(r) = body.runs.iter().find(|r| {
        r.fault.as_deref().is_some_and(|f| {
            r.state != "exited"
                || f.trim().is_empty()
                || f.chars().count() > MAX_FAULT_CHARS
                || f.chars().any(crate::domain::breaks_one_line)
        })
    }) {
        return Err(AppError::invalid(
            "fault",
            format!(
                "run {} on node {}: a fault is given for an exited process, one line of 1 to {MAX_FAULT_CHARS} characters",
                r.run, r.node
            ),
        ));
    }
    let node_ids: Vec<i64> = body.nodes.iter().map(|n| n.node).collect();
    // Phases' milliseconds, logged at debug level (`RUST_LOG=tranche::runs::agents=debug`).
    let clock = Instant::now();
    let mut phases: Vec<(&str, f64)> = Vec::new();
    let lap = |phases: &mut Vec<(&str, f64)>, name| {
        phases.push((name, clock.elapsed().as_secs_f64() * 1000.0));
    };
    // A session id this server issued is 82 characters at most (`Session`); a longer one is
    // none of its sessions, refused before anything is read or kept for it.
    if body.session.len() > MAX_SESSION_CHARS {
        return Err(stale_session(
            "the session is not one this server issued".to_string(),
        ));
    }
    // With the nodes: whether run ids must be lifted above `started_up_to` (below).
    let rows: Vec<(i64, Option<String>, i32, bool)> = sqlx::query_as(
        "SELECT id, agent_session, gpu_count, \
                coalesce($3 > (SELECT last_value FROM order_versions) AND $4 > (SELECT last_value FROM runs_id_seq), false) \
         FROM nodes WHERE id = ANY($1) AND cluster_id = $2",
    )
    .bind(&node_ids)
    .bind(cluster)
    .bind(body.since)
    .bind(body.started_up_to)
    .fetch_all(pool)
    .await?;
    let lift_run_ids = rows.first().is_some_and(|r| r.3);
    let rows: Vec<(i64, Option<String>, i32)> =
        rows.into_iter().map(|(n, s, g, _)| (n, s, g)).collect();
    let gpu_count: HashMap<i64, i32> = rows.iter().map(|(id, _, g)| (*id, *g)).collect();
    if let Some(n) = node_ids.iter().find(|n| !gpu_count.contains_key(n)) {
        return Err(stale_session(format!(
            "node {n} is not a node of this cluster"
        )));
    }
    let mut others: Vec<(i64, &str)> = rows
        .iter()
        .filter_map(|(n, s, _)| s.as_deref().filter(|s| *s != body.session).map(|s| (*n, s)))
        .collect();
    if !others.is_empty() && rows.iter().all(|(_, s, _)| s.is_some()) {
        // A session this server issued for these nodes after every session the database
        // records for them: the database was restored from a backup taken before this
        // agent registered. The agent serves on (its processes are the runs the backup knew,
        // or are told to stop below) instead of stopping as a replaced one would.
        let newer = Session::vouched(&state.secret_key, cluster, &body.session, &node_ids)
            .is_some_and(|number| others.iter().all(|(_, s)| Session::number(s) < number));
        if newer && adopt_session(pool, cluster, &body.session, &others).await? {
            others.clear();
        }
    }
    if let Some((n, _)) = others.first() {
        return Err(AppError::Refused {
            code: "session_replaced",
            message: format!(
                "node {n} is served by another agent session (this one was replaced by a later registration, or is unknown); two agents must not serve one node, so this one should stop"
            ),
        });
    }
    if let Some((n, ..)) = rows.iter().find(|(_, s, _)| s.is_none()) {
        return Err(stale_session(format!(
            "node {n} is not served by this session (it was marked lost, or was not in its registration)"
        )));
    }
    // Only now, for a session the database records for these nodes, is the session's lock
    // taken (and kept in memory): before, any string an agent token sent was kept (found by
    // an adversarial check: syncs with random 2 MB session ids grew the server by 290 MB
    // every 150 requests, each answered 409).
    let session_lock = state.agent_locks.of(&body.session);
    let mut confirmed = session_lock.lock().await;
    for n in &body.nodes {
        let count = gpu_count[&n.node];
        if n.utilization.len() > count as usize
            || n.utilization
                .iter()
                .flatten()
                .any(|u| !(0..=100).contains(u))
        {
            return Err(AppError::invalid(
                "utilization",
                format!(
                    "node {}: utilization is one percentage 0..100 (or null) per GPU, {count} GPUs",
                    n.node
                ),
            ));
        }
    }
    // Every report must be about a process this session's nodes were given. Running
    // processes this replica already recorded for the session are left out: nothing to check
    // or write for them.
    let (mut runs, mut attempts, mut nodes, mut exited, mut codes, mut agos, mut faults) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let mut reported_running = HashSet::new();
    for r in &body.runs {
        if r.state == "running" {
            reported_running.insert((r.run, r.attempt, r.node));
            if confirmed.contains(&(r.run, r.attempt, r.node)) {
                continue;
            }
        }
        if !gpu_count.contains_key(&r.node) {
            return Err(AppError::Refused {
                code: "not_assigned",
                message: format!("node {} is not one of this session's nodes", r.node),
            });
        }
        if r.state != "running" && r.state != "exited" {
            return Err(AppError::invalid(
                "state",
                "a reported run is running or exited",
            ));
        }
        runs.push(r.run);
        attempts.push(r.attempt);
        nodes.push(r.node);
        exited.push(r.state == "exited");
        codes.push(r.exit_code.or(r.signal.map(|s| 128 + s)));
        agos.push(r.exited_s_ago.unwrap_or(0));
        faults.push(r.fault.as_deref().map(str::trim));
    }
    // A report about a process the database never gave this node (an agent that outlived a
    // restore of an older backup, or a forged report) records nothing, and a running one is
    // told to stop: refusing the whole sync, as before, left the agent resending it and its
    // nodes without heartbeats until they were lost, while the process kept its GPUs.
    // A process running for a placement the server counts as ended (its run cancelled while
    // the agent still held the start for its GPUs, so the agent's next sync did not list it
    // and the placement was taken as never started; an attempt superseded while its node was
    // thought lost) is told to stop too: nothing else would stop it, and the server has given
    // its GPUs to other runs (found by a check: a run cancelled a moment after its start
    // decision ran its whole `sleep 300` while the next two runs on its GPUs waited, charged,
    // never started). One query finds both kinds: (run, attempt, node, placement known).
    let checked: Vec<(i64, i32, i64, bool)> = if runs.is_empty() {
        Vec::new()
    } else {
        sqlx::query_as(
            "SELECT u.r, u.a, u.n, p.run_id IS NOT NULL \
             FROM unnest($1::BIGINT[], $2::INT[], $3::BIGINT[], $4::BOOL[]) AS u(r, a, n, x) \
             LEFT JOIN run_placements p ON p.run_id = u.r AND p.attempt = u.a AND p.node_id = u.n \
             WHERE p.run_id IS NULL OR (NOT u.x AND p.proc_state = 'exited')",
        )
        .bind(&runs)
        .bind(&attempts)
        .bind(&nodes)
        .bind(&exited)
        .fetch_all(pool)
        .await?
    };
    let (unknown, stale): (Vec<_>, Vec<_>) = checked.into_iter().partition(|c| !c.3);
    let unknown: Vec<(i64, i32, i64)> = unknown.into_iter().map(|c| (c.0, c.1, c.2)).collect();
    let stale: Vec<(i64, i32, i64)> = stale.into_iter().map(|c| (c.0, c.1, c.2)).collect();
    let mut foreign_stops = Vec::new();
    if !unknown.is_empty() {
        // A waiting run of this agent's cluster gets its next attempt numbered past every
        // attempt the agent reports of it, within MAX_ATTEMPT_GAP of its own count: after a
        // restore, a queued run was given the (run, attempt) its agent had already started,
        // which an agent never starts twice (found by a new-user check); unbounded, a forged
        // report of 2^31 - 1 made every pass fail on the next attempt.
        let (r, a): (Vec<i64>, Vec<i32>) = unknown.iter().map(|k| (k.0, k.1)).unzip();
        sqlx::query(
            "UPDATE runs SET attempt = u.a FROM \
             (SELECT r, max(a) AS a FROM unnest($1::BIGINT[], $2::INT[]) AS x(r, a) GROUP BY r) AS u \
             WHERE runs.id = u.r AND runs.state = 'queued' AND runs.cluster_id = $3 \
               AND runs.attempt < u.a AND u.a <= runs.attempt + $4",
        )
        .bind(&r)
        .bind(&a)
        .bind(cluster)
        .bind(MAX_ATTEMPT_GAP)
        .execute(pool)
        .await?;
        let mut keep = Vec::with_capacity(runs.len());
        for i in 0..runs.len() {
            let key = (runs[i], attempts[i], nodes[i]);
            if !unknown.contains(&key) {
                keep.push(i);
                continue;
            }
            tracing::warn!(
                run = key.0,
                attempt = key.1,
                node = key.2,
                exited = exited[i],
                "an agent reported a process this node was never assigned (a restored database?): ignored, stopped if running"
            );
            if !exited[i] {
                foreign_stops.push(crate::executor::StopOrder {
                    run: key.0,
                    attempt: key.1,
                    node: key.2,
                    grace_s: site.grace_s,
                });
            }
        }
        fn pick<T: Copy>(v: &[T], keep: &[usize]) -> Vec<T> {
            keep.iter().map(|&i| v[i]).collect()
        }
        (runs, attempts, nodes, exited, codes, agos, faults) = (
            pick(&runs, &keep),
            pick(&attempts, &keep),
            pick(&nodes, &keep),
            pick(&exited, &keep),
            pick(&codes, &keep),
            pick(&agos, &keep),
            pick(&faults, &keep),
        );
    }
    for &(run, attempt, node) in &stale {
        tracing::warn!(
            run,
            attempt,
            node,
            "an agent reported a process running for an attempt that has ended: told to stop"
        );
        foreign_stops.push(crate::executor::StopOrder {
            run,
            attempt,
            node,
            grace_s: site.grace_s,
        });
    }

    // An agent that saw order versions the database never drew has run what a restore onto a
    // new machine lost, whose fresh sequences continued from the backup's: run ids continue
    // above every run it started, or a new run could take an id it already ran, which it
    // never starts again (found by an adversarial check: such runs stayed `starting`).
    if let Some(top) = body.started_up_to.filter(|_| lift_run_ids) {
        lift_run_ids_above(pool, top).await?;
    }
    lap(&mut phases, "checks");
    // A sync writes only heartbeats and process states, each in one statement; the pass turns
    // them into run states (it is the one writer of those, so syncs never wait on it).
    let mut tx = pool.begin().await?;
    // The heartbeat: written when utilization changed, else at most once a second per node,
    // so frequent syncs stay reads.
    let util_json: Vec<Option<String>> = body
        .nodes
        .iter()
        .map(|n| (!n.utilization.is_empty()).then(|| serde_json::json!(n.utilization).to_string()))
        .collect();
    sqlx::query(
        "UPDATE nodes SET agent_seen_at = now(), \
                gpu_utilization = CASE WHEN u.util IS NULL THEN NULL \
                    ELSE ARRAY(SELECT (x #>> '{}')::SMALLINT FROM jsonb_array_elements(u.util::JSONB) AS x) END \
         FROM unnest($1::BIGINT[], $2::TEXT[]) AS u(id, util) \
         WHERE nodes.id = u.id AND nodes.agent_session = $3 AND (nodes.agent_seen_at < now() - interval '1 second' \
               OR nodes.gpu_utilization IS DISTINCT FROM \
                  CASE WHEN u.util IS NULL THEN NULL \
                       ELSE ARRAY(SELECT (x #>> '{}')::SMALLINT FROM jsonb_array_elements(u.util::JSONB) AS x) END)",
    )
    .bind(&node_ids)
    .bind(&util_json)
    .bind(&body.session)
    .execute(&mut *tx)
    .await?;
    accumulate_utilization(&mut tx, &node_ids, &util_json, site.agent_timeout_s).await?;
    // Idle (squatting) marks of the runs on these nodes (runs::idle).
    if body
        .nodes
        .iter()
        .any(|n| n.utilization.iter().any(Option::is_some))
    {
        super::idle::observe(&mut tx, &node_ids, site.idle_utilization_percent).await?;
    }
    let reports: Vec<crate::executor::ProcessReport> = runs
        .iter()
        .zip(&attempts)
        .zip(&nodes)
        .zip(exited.iter().zip(&codes).zip(&agos).zip(&faults))
        .map(
            |(((r, a), n), (((x, c), ago), f))| crate::executor::ProcessReport {
                run: *r,
                attempt: *a,
                node: *n,
                exited: x.then_some(*c),
                ago_s: *ago,
                fault: f.map(str::to_string),
            },
        )
        .collect();
    lap(&mut phases, "heartbeat");
    let changed = crate::executor::record(&mut tx, &reports).await?;
    lap(&mut phases, "record");
    // A node that could not run a process is drained at once, whatever became of the run
    // meanwhile (found by a check: a fault told after its run was cancelled drained nothing,
    // and the node failed the next run sent to it). Only faults the placement took (not one
    // told on the exit of a process that ran).
    let told: Vec<&crate::executor::ProcessReport> =
        reports.iter().filter(|r| r.fault.is_some()).collect();
    if !told.is_empty() {
        let faulted: Vec<(i64, String)> = sqlx::query_as(
            "SELECT DISTINCT ON (p.node_id) p.node_id, p.fault FROM run_placements p \
             JOIN unnest($1::BIGINT[], $2::INT[], $3::BIGINT[]) AS u(r, a, n) \
               ON p.run_id = u.r AND p.attempt = u.a AND p.node_id = u.n \
             WHERE p.fault IS NOT NULL ORDER BY p.node_id",
        )
        .bind(told.iter().map(|r| r.run).collect::<Vec<_>>())
        .bind(told.iter().map(|r| r.attempt).collect::<Vec<_>>())
        .bind(told.iter().map(|r| r.node).collect::<Vec<_>>())
        .fetch_all(&mut *tx)
        .await?;
        for (node, fault) in &faulted {
            crate::db::inventory::drain_for_fault(&mut tx, *node, fault).await?;
        }
    }
    // Processes of stopping (or superseded) attempts that this agent never started and does
    // not report: nothing to wait for.
    let never_started = sqlx::query(
        "UPDATE run_placements p SET proc_state = 'exited', never_started = true FROM runs r \
         WHERE r.id = p.run_id AND p.node_id = ANY($1) AND p.proc_state = 'assigned' \
         AND (r.state = 'stopping' OR p.attempt <> r.attempt) \
         AND NOT EXISTS (SELECT 1 FROM unnest($2::BIGINT[], $3::INT[], $4::BIGINT[]) AS u(r, a, n) \
                         WHERE u.r = p.run_id AND u.a = p.attempt AND u.n = p.node_id)",
    )
    .bind(&node_ids)
    .bind(&runs)
    .bind(&attempts)
    .bind(&nodes)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    lap(&mut phases, "never_started");
    // Processes confirmed running that this sync no longer reports, running or exited: an
    // agent lists every process it has until the server took its exit, so these are gone
    // and how they ended was never said (a restored database that had them running, exits
    // the agent dropped with a refused sync). Exited now with no status, as on a lost node:
    // the pass ends such a run as lost (requeued when resumable). Before, it stayed running
    // and charged, and a cancel of it never completed. Not in a sync from before a restore
    // (its `since` below `orders_full_before`, or above every version the database has
    // drawn: the agent saw orders the restored database never gave, as after a restore onto
    // a new machine, whose fresh sequences did not lift the backup's): the restored database
    // may have a run running whose process ended since, and the agent tells that exit again
    // on the whole desired state this sync's answer is, so the run ends as its process did;
    // the next sync applies the rule.
    //
    // A delta sync lists only the running processes not yet acknowledged, with the count and
    // digest of all it runs: while they equal the server's of its nodes' running placements
    // (kept by a trigger, so read in one lookup per node whatever the nodes hold), nothing is
    // gone; otherwise the answer asks for the whole list (`report_running`), and the next
    // sync, listing every running process, is checked as above.
    let complete = body
        .running_count
        .is_none_or(|c| c == reported_running.len() as i64);
    // The running set's figures against the server's of the nodes (delta syncs): when they
    // agree, nothing is gone, whether or not the list is whole, and the anti-join over every
    // running placement of the nodes is not run; a whole list that differs (or comes without
    // figures, the previous protocol) is checked by it; a delta that differs asks for the list.
    let figures = body.running_count.zip(body.running_digest);
    let server = match figures {
        Some(_) => Some(crate::executor::nodes_running_digest(&mut tx, &node_ids).await?),
        None => None,
    };
    let agree = figures.is_some() && server == figures;
    let report_running = !agree && !complete;
    let gone: Vec<(i64, i32, i64)> = if agree || report_running {
        if report_running {
            tracing::info!(
                agent = ?figures,
                ?server,
                "an agent's running processes differ from the server's: asking for the whole list"
            );
        }
        Vec::new()
    } else {
        let (all_runs, (all_attempts, all_nodes)): (Vec<i64>, (Vec<i32>, Vec<i64>)) = body
            .runs
            .iter()
            .map(|r| (r.run, (r.attempt, r.node)))
            .unzip();
        sqlx::query_as(
            "UPDATE run_placements p SET proc_state = 'exited', exited_at = now() \
             WHERE p.node_id = ANY($1) AND p.proc_state = 'running' \
             AND NOT EXISTS (SELECT 1 FROM unnest($2::BIGINT[], $3::INT[], $4::BIGINT[]) AS u(r, a, n) \
                             WHERE u.r = p.run_id AND u.a = p.attempt AND u.n = p.node_id) \
             AND NOT ($5 > 0 AND ($5 < coalesce((SELECT value::BIGINT FROM site_flags WHERE name = 'orders_full_before'), 0) \
                                  OR $5 > (SELECT last_value FROM order_versions))) \
             RETURNING p.run_id, p.attempt, p.node_id",
        )
        .bind(&node_ids)
        .bind(&all_runs)
        .bind(&all_attempts)
        .bind(&all_nodes)
        .bind(body.since.unwrap_or(0))
        .fetch_all(&mut *tx)
        .await?
    };
    for (run, attempt, node) in &gone {
        tracing::warn!(
            run,
            attempt,
            node,
            "the agent no longer reports a process it reported running, nor its exit: its run is lost"
        );
    }
    if changed + never_started + gone.len() as u64 > 0 {
        wake(&mut tx).await?;
    }
    lap(&mut phases, if complete { "gone" } else { "digest" });
    tx.commit().await?;
    lap(&mut phases, "commit");
    if complete {
        confirmed.retain(|k| reported_running.contains(k));
    }
    // (A stale process is not: it is told to stop on every sync until it exits.)
    confirmed.extend(
        runs.iter()
            .zip(&attempts)
            .zip(&nodes)
            .zip(&exited)
            .filter(|(_, x)| !**x)
            .map(|(((r, a), n), _)| (*r, *a, *n))
            .filter(|k| !stale.contains(k)),
    );
    drop(confirmed);

    let deadline = Instant::now()
        + Duration::from_secs(
            body.wait_s
                .min(30)
                .min((site.agent_timeout_s / 2).max(1) as u64),
        );
    let mut rx = state.assignments.subscribe();
    let mut phases = Some(phases);
    let running: HashSet<(i64, i32, i64)> = body
        .runs
        .iter()
        .filter(|r| r.state == "running")
        .map(|r| (r.run, r.attempt, r.node))
        .collect();
    loop {
        if let Some(since) = body.since {
            // Delta: anything changed is news; an agent keeps what it was told before.
            let (assignments, mut stops, version, full) = crate::executor::orders_since(
                pool,
                &state.secret_key,
                &node_ids,
                site.grace_s,
                Some(since),
            )
            .await?;
            if let Some(mut phases) = phases.take() {
                lap(&mut phases, "orders");
                tracing::debug!(
                    nodes = node_ids.len(),
                    listed = body.runs.len(),
                    ?phases,
                    "agent sync, ms since its start"
                );
            }
            stops.extend(foreign_stops.iter().cloned());
            let answer = || {
                let mut a = serde_json::json!({"assignments": assignments, "stops": stops, "version": version, "full": full});
                if report_running {
                    a["report_running"] = true.into();
                }
                a
            };
            let now = Instant::now();
            if full
                || report_running
                || !assignments.is_empty()
                || !stops.is_empty()
                || now >= deadline
            {
                return Ok(answer());
            }
            if tokio::time::timeout(deadline - now, rx.changed())
                .await
                .is_err()
            {
                return Ok(answer());
            }
            continue;
        }
        let (assignments, mut stops) =
            crate::executor::orders(pool, &state.secret_key, &node_ids, site.grace_s).await?;
        stops.extend(foreign_stops.iter().cloned());
        // Answer at once when the agent has something to do that it has not shown it did: a
        // process to start, or one to stop that it reports running. (An agent that cannot act
        // yet, say while a GPU is in a grace period, paces itself.)
        let news = assignments
            .iter()
            .any(|a| !running.contains(&(a.run, a.attempt, a.node)))
            || stops
                .iter()
                .any(|s| running.contains(&(s.run, s.attempt, s.node)));
        let now = Instant::now();
        if news || now >= deadline {
            return Ok(serde_json::json!({"assignments": assignments, "stops": stops}));
        }
        if tokio::time::timeout(deadline - now, rx.changed())
            .await
            .is_err()
        {
            return Ok(serde_json::json!({"assignments": assignments, "stops": stops}));
        }
    }
}

/// Sets the run id sequence so that the next run's id is above `top`, unless it already is.
/// Submissions draw ids inside their `INSERT INTO runs`: with inserts held off by the table
/// lock, none is drawn between reading the sequence and setting it, so no id is drawn twice.
/// Its own transaction, before the sync writes anything, so it waits on nothing it holds.
///
/// # Errors
/// Database errors.
async fn lift_run_ids_above(pool: &PgPool, top: i64) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    sqlx::query("LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let lifted: Option<i64> = sqlx::query_scalar(
        "SELECT setval('runs_id_seq', $1) WHERE $1 > (SELECT last_value FROM runs_id_seq)",
    )
    .bind(top)
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    if lifted.is_some() {
        tracing::warn!(
            above = top,
            "an agent ran runs the database does not know (restored onto a new machine?): run ids continue above them"
        );
    }
    Ok(())
}

/// Adds a heartbeat's utilization readings to `run_utilization` (the utilization metric,
/// docs/design.md section 5): for each running placement on a reporting node, the seconds
/// since its previous counted report (at most `timeout_s`; the first report only starts the
/// clock) times the busy fraction of each of its GPUs, and times its GPUs with a reading, in
/// the hour of the report. Counted at most once a second per placement.
///
/// # Errors
/// Database errors.
async fn accumulate_utilization(
    conn: &mut sqlx::PgConnection,
    node_ids: &[i64],
    util_json: &[Option<String>],
    timeout_s: i64,
) -> Result<(), AppError> {
    if util_json.iter().all(Option::is_none) {
        return Ok(());
    }
    sqlx::query(
        "WITH u AS (SELECT id, util::JSONB AS util FROM unnest($1::BIGINT[], $2::TEXT[]) AS u(id, util) WHERE util IS NOT NULL), \
         o AS (SELECT q.run_id, q.attempt, q.node_id, q.gpu_indices, q.utilization_at AS prev, u.util \
               FROM run_placements q JOIN u ON u.id = q.node_id \
               WHERE q.proc_state = 'running' AND (q.utilization_at IS NULL OR q.utilization_at < now() - interval '1 second')), \
         p AS (UPDATE run_placements p SET utilization_at = now() FROM o \
               WHERE p.run_id = o.run_id AND p.attempt = o.attempt AND p.node_id = o.node_id \
               RETURNING o.run_id, o.attempt, o.gpu_indices, o.util, \
                         LEAST(coalesce(extract(epoch FROM now() - o.prev)::FLOAT8, 0), $3) AS dt), \
         s AS (SELECT p.run_id, p.attempt, sum(p.dt * (p.util ->> g)::FLOAT8 / 100) AS busy, \
                      sum(p.dt) FILTER (WHERE p.util ->> g IS NOT NULL) AS observed \
               FROM p, unnest(p.gpu_indices) AS g WHERE p.dt > 0 GROUP BY p.run_id, p.attempt) \
         INSERT INTO run_utilization (run_id, attempt, hour, busy_gpu_s, observed_gpu_s) \
         SELECT run_id, attempt, date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', coalesce(busy, 0), observed \
         FROM s WHERE observed > 0 \
         ON CONFLICT (run_id, attempt, hour) DO UPDATE SET busy_gpu_s = run_utilization.busy_gpu_s + EXCLUDED.busy_gpu_s, \
                observed_gpu_s = run_utilization.observed_gpu_s + EXCLUDED.observed_gpu_s",
    )
    .bind(node_ids)
    .bind(util_json)
    .bind(timeout_s as f64)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::match_model;

    #[test]
    fn models_match_by_name_or_word() {
        let models = vec![
            (1, "H100".to_string()),
            (2, "B200".to_string()),
            (3, "H100-NVL".to_string()),
        ];
        assert_eq!(match_model("h100", &models).unwrap().0, 1);
        assert_eq!(match_model("NVIDIA H100 80GB HBM3", &models).unwrap().0, 1);
        assert_eq!(match_model("NVIDIA B200", &models).unwrap().0, 2);
        assert_eq!(match_model("h100-nvl", &models).unwrap().0, 3);
        assert!(match_model("NVIDIA A100-SXM4-80GB", &models).is_none());
    }
}
