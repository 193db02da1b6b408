//! Submissions written together (docs/design.md section 7, "Submissions written together").
//!
//! Each submission used to be its own `INSERT` and its own commit. Under many concurrent
//! clients the per-statement work of PostgreSQL (parse, plan, executor start, commit record,
//! a round trip) was most of the CPU a submission cost. A [`Combiner`] sends the rows of
//! concurrent submissions to one writer task, which inserts everything queued at that moment
//! with one statement and one commit, and answers each submission with its own outcome.
//!
//! Nothing waits to fill a batch: the writer takes what is queued when it is free, so a lone
//! submission is written at once, alone, and a batch grows only while the previous one is
//! being written. A batch that fails as a whole (a row breaking a constraint that the checks
//! before it missed) is written again row by row, so each submission gets its own answer and
//! no row of another submission is lost or half-written.

use std::sync::OnceLock;

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

use crate::error::AppError;
use crate::i18n::said::Said;

/// At most this many rows per statement (bounded parameter arrays, bounded latency).
const MAX_BATCH: usize = 500;

/// One run to insert, as `runs` stores it, with the text of its first timeline entry.
#[derive(Debug, Clone)]
pub struct NewRow {
    /// Project (tree node id).
    pub project_id: i64,
    /// Cluster id.
    pub cluster_id: i64,
    /// GPU model id.
    pub model_id: i64,
    /// Submitting user.
    pub submitted_by: i64,
    /// GPUs.
    pub gpus: i32,
    /// Minimum runtime, s.
    pub min_runtime_s: i64,
    /// Time limit, s.
    pub time_limit_s: i64,
    /// Priority within the project.
    pub priority: i32,
    /// Requeued when preempted.
    pub resumable: bool,
    /// Command line.
    pub command: String,
    /// Working directory.
    pub workdir: Option<String>,
    /// Environment (JSON object of strings).
    pub env: serde_json::Value,
    /// `queued` or `waiting_approval`.
    pub state: &'static str,
    /// The `submitted` timeline entry.
    pub message: Said,
    /// Idempotency key.
    pub key: Option<String>,
    /// The request's fingerprint with the key (32 bytes).
    pub fingerprint: Option<Vec<u8>>,
    /// Sealed secret environment.
    pub secret_env: Option<Vec<u8>>,
    /// Names of the secret variables.
    pub secret_env_names: Vec<String>,
}

/// What became of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Inserted with this id.
    Inserted(i64),
    /// Its submitter already used its idempotency key: nothing was inserted.
    KeyUsed,
    /// Its project was archived after the submission's checks read it: nothing was inserted.
    /// The insert locks the project's tree row (`FOR SHARE`) and inserts only while it is not
    /// archived; archiving locks that row before it counts the project's runs, so either the
    /// archive sees the run (and is refused) or the run sees the archive.
    ProjectArchived,
}

type Reply = oneshot::Sender<Result<Outcome, AppError>>;

/// Combines concurrent submissions' inserts (module docs). One per [`crate::state::AppState`];
/// its writer task starts with the first submission, on that submission's runtime.
#[derive(Default)]
pub struct Combiner {
    queue: OnceLock<mpsc::UnboundedSender<(NewRow, Reply)>>,
}

impl Combiner {
    /// Inserts `row` (with its timeline entry) and says what became of it ([`Outcome`]).
    ///
    /// # Errors
    /// Database errors of this row's insert.
    pub async fn insert(&self, pool: &PgPool, row: NewRow) -> Result<Outcome, AppError> {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(writer(pool.clone(), rx));
            tx
        });
        let (reply, answer) = oneshot::channel();
        if let Err(mpsc::error::SendError((row, _))) = queue.send((row, reply)) {
            // The writer is gone (its runtime shut down): write this one here.
            return Ok(insert_all(pool, std::slice::from_ref(&row)).await?[0]);
        }
        answer
            .await
            .map_err(|_| AppError::Internal(anyhow::anyhow!("the submission writer stopped")))?
    }
}

async fn writer(pool: PgPool, mut rx: mpsc::UnboundedReceiver<(NewRow, Reply)>) {
    while let Some(first) = rx.recv().await {
        let mut rows = vec![first.0];
        let mut replies = vec![first.1];
        while rows.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok((row, reply)) => {
                    rows.push(row);
                    replies.push(reply);
                }
                Err(_) => break,
            }
        }
        match insert_all(&pool, &rows).await {
            Ok(ids) => {
                for (reply, id) in replies.into_iter().zip(ids) {
                    let _ = reply.send(Ok(id));
                }
            }
            Err(e) if rows.len() == 1 => {
                if let Some(reply) = replies.pop() {
                    let _ = reply.send(Err(AppError::from(e)));
                }
            }
            Err(_) => {
                for (row, reply) in rows.iter().zip(replies) {
                    let one = insert_all(&pool, std::slice::from_ref(row)).await;
                    let _ = reply.send(one.map(|ids| ids[0]).map_err(AppError::from));
                }
            }
        }
    }
}

/// Inserts `rows` and their `submitted` timeline entries in one statement (one transaction);
/// per row, in order, what became of it.
async fn insert_all(pool: &PgPool, rows: &[NewRow]) -> Result<Vec<Outcome>, sqlx::Error> {
    macro_rules! column {
        ($f:expr) => {
            rows.iter().map($f).collect::<Vec<_>>()
        };
    }
    let answers: Vec<(i64, Option<i64>, bool)> = sqlx::query_as(
        "WITH u AS MATERIALIZED ( \
            SELECT nextval('runs_id_seq') AS id, u.* FROM unnest($1::BIGINT[], $2::BIGINT[], $3::BIGINT[], $4::BIGINT[], \
                $5::INT[], $6::BIGINT[], $7::BIGINT[], $8::INT[], $9::BOOL[], $10::TEXT[], $11::TEXT[], $12::JSONB[], \
                $13::TEXT[], $14::TEXT[], $15::TEXT[], $16::BYTEA[], $17::BYTEA[], $18::JSONB[], $19::JSONB[]) WITH ORDINALITY \
                AS u(project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, time_limit_s, priority, \
                     resumable, command, workdir, env, state, message, idempotency_key, idempotency_sha256, secret_env, \
                     secret_env_names, note, ord)), \
         live AS (SELECT id FROM tree_nodes WHERE id IN (SELECT project_id FROM u) AND NOT archived FOR SHARE), \
         r AS ( \
            INSERT INTO runs (id, project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, time_limit_s, \
                              priority, resumable, command, workdir, env, state, queued_at, idempotency_key, idempotency_sha256, \
                              secret_env, secret_env_names) \
            SELECT id, project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, time_limit_s, priority, \
                   resumable, command, workdir, env, state, CASE WHEN state = 'queued' THEN now() END, idempotency_key, \
                   idempotency_sha256, secret_env, ARRAY(SELECT jsonb_array_elements_text(secret_env_names)) \
            FROM u WHERE u.project_id IN (SELECT id FROM live) ORDER BY ord \
            ON CONFLICT (submitted_by, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING \
            RETURNING id), \
         e AS (INSERT INTO run_events (run_id, kind, message, note) SELECT u.id, 'submitted', u.message, u.note FROM u JOIN r ON r.id = u.id) \
         SELECT u.ord, r.id, u.project_id IN (SELECT id FROM live) FROM u LEFT JOIN r ON r.id = u.id ORDER BY u.ord",
    )
    .bind(column!(|r| r.project_id))
    .bind(column!(|r| r.cluster_id))
    .bind(column!(|r| r.model_id))
    .bind(column!(|r| r.submitted_by))
    .bind(column!(|r| r.gpus))
    .bind(column!(|r| r.min_runtime_s))
    .bind(column!(|r| r.time_limit_s))
    .bind(column!(|r| r.priority))
    .bind(column!(|r| r.resumable))
    .bind(column!(|r| r.command.clone()))
    .bind(column!(|r| r.workdir.clone()))
    .bind(column!(|r| sqlx::types::Json(r.env.clone())))
    .bind(column!(|r| r.state))
    .bind(column!(|r| r.message.english()))
    .bind(column!(|r| r.key.clone()))
    .bind(column!(|r| r.fingerprint.clone()))
    .bind(column!(|r| r.secret_env.clone()))
    .bind(column!(|r| sqlx::types::Json(r.secret_env_names.clone())))
    .bind(column!(|r| r.message.to_json()))
    .fetch_all(pool)
    .await?;
    Ok(answers
        .into_iter()
        .map(|(_, id, live)| match id {
            Some(id) => Outcome::Inserted(id),
            None if live => Outcome::KeyUsed,
            None => Outcome::ProjectArchived,
        })
        .collect())
}
