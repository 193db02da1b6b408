//! Slurm's command-line tools (`sinfo`, `squeue`, `sbatch`, `scancel`, `scontrol`), each called
//! through `tokio::process` with a timeout, a clean environment (the server's own variables,
//! secrets among them, never reach a job) and `SLURM_CONF` when configured; and the pure parsers
//! of their `--json` and `--parsable` answers (Slurm 22.05's `openapi/v0.0.38` shapes).

use std::collections::BTreeMap;
use std::process::Stdio;

use serde::Deserialize;
use tokio::io::AsyncWriteExt;

use crate::config::SlurmSettings;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    /// No answer: the tool timed out, could not be started, or says the controller cannot be
    /// reached. Nothing is known; the call may or may not have taken effect.
    #[error("{0}")]
    Unreachable(String),
    /// The controller answered and refused (the tool's message, first lines).
    #[error("{0}")]
    Refused(String),
}

/// Messages of Slurm's tools that mean the controller did not answer.
const UNREACHABLE: &[&str] = &[
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Communication connection failure",
    "Zero Bytes were transmitted or received",
    "Unable to establish a connection",
];

/// Runs `program args` with `input` on its standard input; returns its standard output.
///
/// # Errors
/// [`CliError::Unreachable`] on a timeout, a tool that cannot start or a controller that does
/// not answer; [`CliError::Refused`] for any other failure, with the tool's message.
pub async fn call(
    settings: &SlurmSettings,
    program: &str,
    args: &[String],
    input: Option<&str>,
) -> Result<String, CliError> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .env("LANG", "C.UTF-8")
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(conf) = &settings.conf {
        cmd.env("SLURM_CONF", conf);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| CliError::Unreachable(format!("cannot run {program}: {e}")))?;
    if let Some(text) = input
        && let Some(mut stdin) = child.stdin.take()
    {
        let text = text.to_string();
        tokio::spawn(async move {
            let _ = stdin.write_all(text.as_bytes()).await;
        });
    }
    let out = match tokio::time::timeout(settings.timeout, child.wait_with_output()).await {
        Err(_) => {
            return Err(CliError::Unreachable(format!(
                "{program} gave no answer within {} s",
                settings.timeout.as_secs()
            )));
        }
        Ok(Err(e)) => return Err(CliError::Unreachable(format!("{program}: {e}"))),
        Ok(Ok(out)) => out,
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let message: String = stderr
        .lines()
        .chain(stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect::<Vec<_>>()
        .join("; ");
    let message = if message.is_empty() {
        format!("{program} failed with {}", out.status)
    } else {
        message.chars().take(500).collect()
    };
    if UNREACHABLE.iter().any(|m| message.contains(m)) {
        Err(CliError::Unreachable(message))
    } else {
        Err(CliError::Refused(message))
    }
}

/// Our state of a node, from Slurm's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    /// IDLE, MIXED, ALLOCATED, COMPLETING.
    Up,
    /// DRAIN (drained or draining).
    Draining,
    /// DOWN, NOT_RESPONDING, FAIL, or a state Tranche does not know.
    Down,
}

impl NodeState {
    /// Tranche's spelling: `up`, `draining`, `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Up => "up",
            NodeState::Draining => "draining",
            NodeState::Down => "down",
        }
    }

    /// Maps Slurm's base state and flags: IDLE/MIXED/ALLOCATED/COMPLETING are up, DRAIN or
    /// DRAINING/DRAINED are draining, DOWN/NOT_RESPONDING/FAIL and anything else are down.
    /// NOT_RESPONDING wins over DRAIN, DRAIN over the base state.
    pub fn from_slurm(state: &str, flags: &[String]) -> Self {
        let has = |f: &str| {
            flags.iter().any(|x| x.eq_ignore_ascii_case(f))
                || state.to_ascii_uppercase().split('+').any(|x| x == f)
        };
        let base = state
            .split('+')
            .next()
            .unwrap_or("")
            .trim_end_matches(['*', '~', '#', '!', '%', '$', '@', '^', '-'])
            .to_ascii_uppercase();
        if has("NOT_RESPONDING") || has("FAIL") || base == "DOWN" || base == "FAIL" {
            NodeState::Down
        } else if has("DRAIN") || base == "DRAINED" || base == "DRAINING" || base == "DRAIN" {
            NodeState::Draining
        } else if matches!(base.as_str(), "IDLE" | "MIXED" | "ALLOCATED" | "COMPLETING") {
            NodeState::Up
        } else {
            NodeState::Down
        }
    }
}

/// A node of a partition, as `sinfo --json` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmNode {
    /// Slurm's node name (Tranche's node name).
    pub name: String,
    /// GPUs (`gres` `gpu`, any type), 0 when it has none.
    pub gpus: u32,
    /// The GPU type Slurm names (`gpu:h100:8`), if any.
    pub gpu_type: Option<String>,
    /// Our state.
    pub state: NodeState,
    /// Slurm's words: state, flags and reason, for the cluster page.
    pub words: String,
}

#[derive(Deserialize)]
struct SinfoAnswer {
    #[serde(default)]
    nodes: Vec<SinfoNode>,
}

#[derive(Deserialize)]
struct SinfoNode {
    name: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    state_flags: Vec<String>,
    #[serde(default)]
    gres: String,
    #[serde(default)]
    partitions: Vec<String>,
    #[serde(default)]
    reason: String,
}

/// GPUs in a gres string such as `gpu:8`, `gpu:h100:4(S:0-1),shard:2` (0 without `gpu`), and
/// the type if one is named.
pub fn gres_gpus(gres: &str) -> (u32, Option<String>) {
    let mut total = 0;
    let mut kind = None;
    for part in gres.split(',') {
        let part = part.split('(').next().unwrap_or("").trim();
        let part = part.strip_prefix("gres:").unwrap_or(part);
        let fields: Vec<&str> = part.split(':').collect();
        if fields.first() != Some(&"gpu") {
            continue;
        }
        match fields.as_slice() {
            [_, n] => total += n.parse::<u32>().unwrap_or(0),
            [_, t, n] => {
                total += n.parse::<u32>().unwrap_or(0);
                kind = Some((*t).to_string());
            }
            _ => {}
        }
    }
    (total, kind)
}

/// The nodes of `partition` from `sinfo --json`'s answer; `None` when no node belongs to it.
///
/// # Errors
/// An answer that is not `sinfo --json`'s.
pub fn parse_sinfo(json: &str, partition: &str) -> Result<Option<Vec<SlurmNode>>, String> {
    let answer: SinfoAnswer =
        serde_json::from_str(json).map_err(|e| format!("unexpected sinfo --json answer: {e}"))?;
    let nodes: Vec<SlurmNode> = answer
        .nodes
        .into_iter()
        .filter(|n| n.partitions.iter().any(|p| p == partition))
        .map(|n| {
            let (gpus, gpu_type) = gres_gpus(&n.gres);
            let mut words = n.state.to_ascii_uppercase();
            for f in &n.state_flags {
                words.push('+');
                words.push_str(f);
            }
            if !n.reason.is_empty() {
                words.push_str(&format!(" ({})", n.reason));
            }
            SlurmNode {
                state: NodeState::from_slurm(&n.state, &n.state_flags),
                name: n.name,
                gpus,
                gpu_type,
                words,
            }
        })
        .collect();
    Ok((!nodes.is_empty()).then_some(nodes))
}

/// A job, as `squeue --json` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmJob {
    /// Job id.
    pub id: i64,
    /// Job name.
    pub name: String,
    /// Slurm's state: PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    pub state: String,
    /// Why it is in that state (Slurm's reason word).
    pub reason: String,
    /// The owner's user name.
    pub user: String,
    /// The job's comment (Tranche writes [`job_comment`]).
    pub comment: String,
    /// Partition.
    pub partition: String,
    /// Exit status once ended, as a shell shows it (128 + signal for a signal).
    pub exit_code: Option<i32>,
    /// GPUs per node it holds while it runs: node name and GPU indices.
    pub gpus: BTreeMap<String, Vec<i32>>,
    /// When it started (Unix seconds), once it runs or ran.
    pub start_time: Option<i64>,
    /// When it ended (Unix seconds), once ended.
    pub end_time: Option<i64>,
}

impl SlurmJob {
    /// Whether it still holds or waits for resources (not ended).
    pub fn is_active(&self) -> bool {
        matches!(
            self.state.as_str(),
            "PENDING"
                | "CONFIGURING"
                | "RUNNING"
                | "COMPLETING"
                | "SUSPENDED"
                | "REQUEUED"
                | "RESIZING"
                | "SIGNALING"
                | "STAGE_OUT"
                | "REQUEUE_HOLD"
                | "REQUEUE_FED"
        )
    }

    /// Whether its processes run now (GPUs held).
    pub fn is_running(&self) -> bool {
        matches!(
            self.state.as_str(),
            "RUNNING" | "COMPLETING" | "SUSPENDED" | "SIGNALING" | "STAGE_OUT"
        )
    }
}

#[derive(Deserialize)]
struct SqueueAnswer {
    #[serde(default)]
    jobs: Vec<SqueueJob>,
}

#[derive(Deserialize)]
struct SqueueJob {
    job_id: i64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    job_state: String,
    #[serde(default)]
    state_reason: String,
    #[serde(default)]
    user_name: String,
    #[serde(default)]
    comment: String,
    #[serde(default)]
    partition: String,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default)]
    gres_detail: Vec<String>,
    #[serde(default)]
    job_resources: Option<JobResources>,
    #[serde(default)]
    tres_per_node: String,
    #[serde(default)]
    start_time: serde_json::Value,
    #[serde(default)]
    end_time: serde_json::Value,
}

/// A time of `squeue --json`: Unix seconds, as a number (Slurm 22.05) or as
/// `{"set": true, "number": N}` (later versions); `None` when unset or 0.
fn slurm_time(v: &serde_json::Value) -> Option<i64> {
    let n = match v {
        serde_json::Value::Object(o) => {
            if o.get("set").and_then(serde_json::Value::as_bool) == Some(false) {
                return None;
            }
            o.get("number")?.as_i64()?
        }
        v => v.as_i64()?,
    };
    (n > 0).then_some(n)
}

#[derive(Deserialize, Default)]
struct JobResources {
    #[serde(default)]
    allocated_nodes: Vec<AllocatedNode>,
}

#[derive(Deserialize)]
struct AllocatedNode {
    nodename: String,
}

/// GPU indices in a `gres_detail` entry such as `gpu:3(IDX:0-2)` or `gpu:h100:4(IDX:0,2,5-6)`.
pub fn gres_indices(detail: &str) -> Vec<i32> {
    let Some(start) = detail.find("IDX:") else {
        return Vec::new();
    };
    let list = detail[start + 4..].split(')').next().unwrap_or("");
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<i32>(), b.trim().parse::<i32>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(i) = part.trim().parse::<i32>() {
                    out.push(i);
                }
            }
        }
    }
    out
}

/// A wait status as a shell shows it: the exit code, or 128 + the signal.
pub fn shell_status(raw: i64) -> i32 {
    let signal = (raw & 0x7f) as i32;
    if signal != 0 {
        128 + signal
    } else {
        ((raw >> 8) & 0xff) as i32
    }
}

/// Jobs from `squeue --json`'s answer.
///
/// # Errors
/// An answer that is not `squeue --json`'s.
pub fn parse_squeue(json: &str) -> Result<Vec<SlurmJob>, String> {
    let answer: SqueueAnswer =
        serde_json::from_str(json).map_err(|e| format!("unexpected squeue --json answer: {e}"))?;
    Ok(answer
        .jobs
        .into_iter()
        .map(|j| {
            let nodes: Vec<String> = j
                .job_resources
                .unwrap_or_default()
                .allocated_nodes
                .into_iter()
                .map(|n| n.nodename)
                .collect();
            let mut gpus = BTreeMap::new();
            let ended = !matches!(
                j.job_state.as_str(),
                "PENDING" | "RUNNING" | "COMPLETING" | "SUSPENDED" | "CONFIGURING" | "SIGNALING"
            );
            if !ended {
                for (i, node) in nodes.iter().enumerate() {
                    let mut idx = j
                        .gres_detail
                        .get(i)
                        .map(|d| gres_indices(d))
                        .unwrap_or_default();
                    if idx.is_empty() {
                        // No detail: count GPUs from the per-node request.
                        let (n, _) = gres_gpus(&j.tres_per_node);
                        idx = (0..n as i32).map(|k| -1 - k).collect();
                    }
                    if !idx.is_empty() {
                        gpus.insert(node.clone(), idx);
                    }
                }
            }
            // A pending job's start time is Slurm's forecast, not a start.
            let started = (j.job_state != "PENDING")
                .then(|| slurm_time(&j.start_time))
                .flatten();
            SlurmJob {
                id: j.job_id,
                name: j.name,
                state: j.job_state,
                reason: j.state_reason,
                user: j.user_name,
                comment: j.comment,
                partition: j.partition,
                exit_code: if ended {
                    j.exit_code.map(shell_status)
                } else {
                    None
                },
                gpus,
                start_time: started,
                end_time: ended.then(|| slurm_time(&j.end_time)).flatten(),
            }
        })
        .collect())
}

/// Single-quotes `s` for `sh`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The `MaxTime` of `scontrol show partition NAME --oneliner`'s answer, in seconds: Slurm's
/// `[DAYS-]HOURS:MINUTES:SECONDS` (or `MINUTES`, `MINUTES:SECONDS`, `DAYS-HOURS[:MINUTES]`);
/// `None` for `UNLIMITED`, `INFINITE` or an answer without it.
pub fn partition_max_time_s(answer: &str) -> Option<i64> {
    let value = answer
        .split_whitespace()
        .find_map(|w| w.strip_prefix("MaxTime="))?;
    let (days, rest) = match value.split_once('-') {
        Some((d, r)) => (d.parse::<i64>().ok()?, r),
        None => (0, value),
    };
    let parts: Vec<i64> = rest
        .split(':')
        .map(|p| p.parse::<i64>().ok())
        .collect::<Option<_>>()?;
    let in_day = match (value.contains('-'), parts.as_slice()) {
        (false, [m]) => m * 60,
        (false, [m, s]) => m * 60 + s,
        (true, [h]) => h * 3600,
        (true, [h, m]) => h * 3600 + m * 60,
        (_, [h, m, s]) => h * 3600 + m * 60 + s,
        _ => return None,
    };
    Some(days * 86_400 + in_day)
}

/// Names Tranche gives its jobs: `tranche-RUN-ATTEMPT`.
pub fn job_name(run: i64, attempt: i32) -> String {
    format!("tranche-{run}-{attempt}")
}

/// The run and attempt of a job named by [`job_name`].
pub fn parse_job_name(name: &str) -> Option<(i64, i32)> {
    let rest = name.strip_prefix("tranche-")?;
    let (run, attempt) = rest.split_once('-')?;
    Some((run.parse().ok()?, attempt.parse().ok()?))
}

/// The comment of Tranche's jobs: `tranche TAG run RUN attempt ATTEMPT`, where `TAG` names the
/// Tranche installation and cluster, so that two installations sharing a Slurm cluster never
/// take each other's jobs for their own.
pub fn job_comment(tag: &str, run: i64, attempt: i32) -> String {
    format!("tranche {tag} run {run} attempt {attempt}")
}

/// What to submit for one attempt of a run.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Run id.
    pub run: i64,
    /// Attempt.
    pub attempt: i32,
    /// The installation's tag for [`job_comment`].
    pub tag: String,
    /// Partition.
    pub partition: String,
    /// Nodes the pass chose.
    pub nodes: Vec<String>,
    /// GPUs on each node.
    pub gpus_per_node: u32,
    /// Time limit, seconds.
    pub time_limit_s: i64,
    /// Command for `sh -c`.
    pub command: String,
    /// Working directory.
    pub workdir: Option<String>,
    /// Environment (with `TRANCHE_RUN_ID` and `TRANCHE_ATTEMPT` added).
    pub env: BTreeMap<String, String>,
    /// The reservation (of a capacity contract) that holds its nodes now, if any.
    pub reservation: Option<String>,
}

impl JobSpec {
    /// `sbatch` arguments ([`JobSpec::args_with`] with the spare minute).
    pub fn args(&self, user: Option<&str>) -> Vec<String> {
        self.args_with(user, true)
    }

    /// `sbatch` arguments. Slurm's `--time` is the run's time limit in whole minutes, rounded
    /// up, plus one `spare` minute so that Tranche's own stop (SIGTERM, then the grace period)
    /// comes first; without it where the partition's MaxTime refuses that minute.
    pub fn args_with(&self, user: Option<&str>, spare: bool) -> Vec<String> {
        let minutes = (self.time_limit_s.max(1) + 59) / 60 + i64::from(spare);
        let mut args = vec![
            "--parsable".to_string(),
            format!("--job-name={}", job_name(self.run, self.attempt)),
            format!(
                "--comment={}",
                job_comment(&self.tag, self.run, self.attempt)
            ),
            format!("--partition={}", self.partition),
            format!("--nodelist={}", self.nodes.join(",")),
            format!("--nodes={}", self.nodes.len()),
            "--ntasks-per-node=1".to_string(),
            format!("--gres=gpu:{}", self.gpus_per_node),
            format!("--time={minutes}"),
            "--no-requeue".to_string(),
            "--export=ALL".to_string(),
        ];
        // Without a working directory the job runs in /tmp (not in whatever directory the
        // server was started from, where Slurm would also write its output file).
        let dir = self
            .workdir
            .as_deref()
            .filter(|d| !d.is_empty())
            .unwrap_or("/tmp");
        args.push(format!("--chdir={dir}"));
        if let Some(r) = &self.reservation {
            args.push(format!("--reservation={r}"));
        }
        if let Some(u) = user {
            args.push(format!("--uid={u}"));
        }
        args
    }

    /// The batch script: exports the environment, then `exec sh -c COMMAND`.
    pub fn script(&self) -> String {
        let mut s = String::from("#!/bin/sh\n");
        for (k, v) in &self.env {
            s.push_str(&format!("export {k}={}\n", sh_quote(v)));
        }
        s.push_str(&format!("exec /bin/sh -c {}\n", sh_quote(&self.command)));
        s
    }
}

/// Whether `name` may be exported by a shell (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Submits `job`; returns its job id.
///
/// # Errors
/// As [`call`]; an answer without a job id is [`CliError::Unreachable`] (it may have been
/// submitted: the bridge looks it up by name before trying again).
pub async fn submit(settings: &SlurmSettings, job: &JobSpec) -> Result<i64, CliError> {
    let script = job.script();
    let (spared, exact) = (
        job.args_with(settings.user.as_deref(), true),
        job.args_with(settings.user.as_deref(), false),
    );
    let sbatch = |spare: bool| {
        call(
            settings,
            "sbatch",
            if spare { &spared } else { &exact },
            Some(&script),
        )
    };
    // A time limit at the partition's MaxTime is refused with the spare minute: submitted
    // again without it (a refused sbatch created no job), rather than failing a run whose time
    // limit the partition allows.
    let out = match sbatch(true).await {
        Err(CliError::Refused(m)) if m.to_ascii_lowercase().contains("time limit") => {
            tracing::info!(run = job.run, refusal = %m, "sbatch refused the spare minute; submitting at the run's own time limit");
            sbatch(false).await?
        }
        other => other?,
    };
    out.trim()
        .split(';')
        .next()
        .and_then(|id| id.trim().parse().ok())
        .ok_or_else(|| CliError::Unreachable(format!("sbatch answered {out:?}, not a job id")))
}

/// Sends `signal` (TERM, KILL) to every process of the job, its batch shell included.
///
/// # Errors
/// As [`call`].
pub async fn signal(settings: &SlurmSettings, job: i64, signal: &str) -> Result<(), CliError> {
    call(
        settings,
        "scancel",
        &[
            format!("--signal={signal}"),
            "--full".into(),
            job.to_string(),
        ],
        None,
    )
    .await
    .map(drop)
}

/// Cancels the job.
///
/// # Errors
/// As [`call`].
pub async fn cancel(settings: &SlurmSettings, job: i64) -> Result<(), CliError> {
    call(settings, "scancel", &[job.to_string()], None)
        .await
        .map(drop)
}

/// Expands a Slurm host list such as `n[1-3,7],gpu01` into names.
pub fn expand_hostlist(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        match (part.find('['), part.ends_with(']')) {
            (Some(open), true) => {
                let prefix = &part[..open];
                for range in part[open + 1..part.len() - 1].split(',') {
                    match range.split_once('-') {
                        Some((a, b)) => {
                            let width = a.len();
                            if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
                                for n in a..=b {
                                    out.push(format!("{prefix}{n:0width$}"));
                                }
                            }
                        }
                        None => out.push(format!("{prefix}{range}")),
                    }
                }
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

/// A reservation, as `scontrol show reservation --oneliner` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// Its name.
    pub name: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// Start and end, as Slurm writes them (`2026-12-02T10:00:00`, local time of the
    /// controller).
    pub start: String,
    /// End.
    pub end: String,
}

/// Reservations from `scontrol show reservation --oneliner` (`No reservations in the system`
/// gives none).
pub fn parse_reservations(text: &str) -> Vec<Reservation> {
    text.lines()
        .filter_map(|line| {
            let field = |key: &str| {
                line.split_whitespace()
                    .find_map(|f| f.strip_prefix(key))
                    .map(str::to_string)
            };
            Some(Reservation {
                name: field("ReservationName=")?,
                nodes: expand_hostlist(&field("Nodes=").unwrap_or_default()),
                start: field("StartTime=").unwrap_or_default(),
                end: field("EndTime=").unwrap_or_default(),
            })
        })
        .collect()
}

/// The name of the reservation mirroring contract `contract`: `tranche-contract-ID-TAG`.
pub fn reservation_name(tag: &str, contract: i64) -> String {
    format!("tranche-contract-{contract}-{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_states_map_as_documented() {
        let none: Vec<String> = vec![];
        for s in ["idle", "MIXED", "allocated", "completing"] {
            assert_eq!(NodeState::from_slurm(s, &none), NodeState::Up, "{s}");
        }
        assert_eq!(NodeState::from_slurm("drained", &none), NodeState::Draining);
        assert_eq!(
            NodeState::from_slurm("draining", &none),
            NodeState::Draining
        );
        assert_eq!(
            NodeState::from_slurm("idle", &["DRAIN".to_string()]),
            NodeState::Draining
        );
        assert_eq!(
            NodeState::from_slurm("IDLE+DRAIN", &none),
            NodeState::Draining
        );
        assert_eq!(NodeState::from_slurm("down", &none), NodeState::Down);
        assert_eq!(NodeState::from_slurm("idle*", &none), NodeState::Up);
        assert_eq!(
            NodeState::from_slurm("idle", &["NOT_RESPONDING".to_string()]),
            NodeState::Down
        );
        assert_eq!(
            NodeState::from_slurm("idle", &["DRAIN".into(), "NOT_RESPONDING".into()]),
            NodeState::Down
        );
        assert_eq!(NodeState::from_slurm("future", &none), NodeState::Down);
    }

    #[test]
    fn gres_strings_give_gpu_counts_and_indices() {
        assert_eq!(gres_gpus("gpu:8"), (8, None));
        assert_eq!(
            gres_gpus("gpu:h100:4(S:0-1),shard:2"),
            (4, Some("h100".into()))
        );
        assert_eq!(gres_gpus("gres:gpu:3"), (3, None));
        assert_eq!(gres_gpus(""), (0, None));
        assert_eq!(gres_gpus("shard:4"), (0, None));
        assert_eq!(gres_indices("gpu:3(IDX:0-2)"), vec![0, 1, 2]);
        assert_eq!(gres_indices("gpu:h100:4(IDX:0,2,5-6)"), vec![0, 2, 5, 6]);
        assert_eq!(gres_indices("gpu:0"), Vec::<i32>::new());
    }

    #[test]
    fn wait_statuses_read_as_a_shell_shows_them() {
        assert_eq!(shell_status(0), 0);
        assert_eq!(shell_status(3 << 8), 3);
        assert_eq!(shell_status(15), 143);
        assert_eq!(shell_status(9), 137);
    }

    #[test]
    fn host_lists_and_reservations_parse() {
        assert_eq!(
            expand_hostlist("n[1-3,7],gpu01"),
            ["n1", "n2", "n3", "n7", "gpu01"]
        );
        assert_eq!(expand_hostlist("g[08-10]"), ["g08", "g09", "g10"]);
        assert_eq!(expand_hostlist(""), Vec::<String>::new());
        let r = parse_reservations(
            "ReservationName=tranche-contract-3-ab StartTime=2026-12-02T10:00:00 EndTime=2026-12-02T12:00:00 Duration=02:00:00 Nodes=n[1-2] NodeCnt=2\n",
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].nodes, ["n1", "n2"]);
        assert_eq!(r[0].start, "2026-12-02T10:00:00");
        assert!(parse_reservations("No reservations in the system").is_empty());
    }

    #[test]
    fn job_names_carry_run_and_attempt() {
        assert_eq!(parse_job_name(&job_name(42, 3)), Some((42, 3)));
        assert_eq!(parse_job_name("tranche-x-1"), None);
        assert_eq!(parse_job_name("train"), None);
    }

    #[test]
    fn the_batch_script_quotes_values_and_the_command() {
        let job = JobSpec {
            run: 7,
            attempt: 2,
            tag: "t1".into(),
            partition: "gpu".into(),
            nodes: vec!["n1".into()],
            gpus_per_node: 3,
            time_limit_s: 61,
            command: "echo 'hi' $X".into(),
            workdir: Some("/tmp".into()),
            env: BTreeMap::from([("X".to_string(), "it's; rm -rf /".to_string())]),
            reservation: None,
        };
        let script = job.script();
        assert!(
            script.contains("export X='it'\\''s; rm -rf /'\n"),
            "{script}"
        );
        assert!(
            script.ends_with("exec /bin/sh -c 'echo '\\''hi'\\'' $X'\n"),
            "{script}"
        );
        let args = job.args(None);
        assert!(args.contains(&"--gres=gpu:3".to_string()));
        let shown = |v: &str| {
            partition_max_time_s(&format!(
                "PartitionName=gpu AllowGroups=ALL Default=NO MaxNodes=UNLIMITED MaxTime={v} MinNodes=0"
            ))
        };
        assert_eq!(shown("01:00:00"), Some(3600));
        assert_eq!(
            shown("2-03:04:05"),
            Some(2 * 86_400 + 3 * 3600 + 4 * 60 + 5)
        );
        assert_eq!(shown("90"), Some(5400));
        assert_eq!(shown("1-12"), Some(86_400 + 12 * 3600));
        assert_eq!(shown("UNLIMITED"), None);
        assert_eq!(partition_max_time_s("PartitionName=gpu"), None);
        assert!(args.contains(&"--nodelist=n1".to_string()));
        // 61 s round up to 2 minutes, plus one so Tranche's own stop comes first.
        assert!(args.contains(&"--time=3".to_string()));
        assert!(args.contains(&"--job-name=tranche-7-2".to_string()));
        assert!(args.contains(&"--chdir=/tmp".to_string()));
        let none = JobSpec {
            workdir: None,
            ..job.clone()
        };
        assert!(none.args(None).contains(&"--chdir=/tmp".to_string()));
        assert!(!is_env_name("A-B") && is_env_name("_A1") && !is_env_name("1A"));
    }

    #[test]
    fn squeue_json_gives_states_codes_and_gpu_indices() {
        let json = r#"{"jobs": [
          {"job_id": 2, "name": "tranche-2-1", "job_state": "RUNNING", "state_reason": "None",
           "user_name": "root", "partition": "gpu", "exit_code": 0, "comment": "tranche t1 run 2 attempt 1",
           "gres_detail": ["gpu:2(IDX:0-1)"], "tres_per_node": "gres:gpu:2",
           "job_resources": {"allocated_nodes": [{"nodename": "n1"}]}},
          {"job_id": 3, "name": "fail", "job_state": "FAILED", "state_reason": "NonZeroExitCode",
           "user_name": "root", "partition": "gpu", "exit_code": 768, "gres_detail": [],
           "job_resources": {"allocated_nodes": [{"nodename": "n1"}]}}]}"#;
        let jobs = parse_squeue(json).unwrap();
        assert_eq!(
            jobs[0].gpus,
            BTreeMap::from([("n1".to_string(), vec![0, 1])])
        );
        assert_eq!(jobs[0].exit_code, None);
        assert_eq!(jobs[0].comment, job_comment("t1", 2, 1));
        assert!(jobs[0].is_running() && jobs[0].is_active());
        assert_eq!(jobs[1].exit_code, Some(3));
        assert!(jobs[1].gpus.is_empty() && !jobs[1].is_active());
    }
}
