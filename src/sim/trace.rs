//! Trace loaders: Philly (Pollux extract), Microsoft ITP (ElasticFlow raw), Alibaba OpenB pod
//! lists, and Tranche's own `native` CSV.
//!
//! # Formats
//! - `philly`: `timestamp,duration,num_gpus,gpu_time,cluster`. `timestamp` is a naive
//!   `YYYY-MM-DD HH:MM:SS` wall clock in US Pacific time. **Rule:** it is read in the zone
//!   `America/Los_Angeles`; a wall time in the repeated hour of a fall-back night (e.g.
//!   2017-11-05 01:00-01:59, seven jobs) is taken at its *first* occurrence (PDT, UTC-7); a wall
//!   time that does not exist (spring-forward gap) is moved forward by the gap (jiff's
//!   "compatible" rule). Both mappings are monotone in wall-clock time, so sorting by instant,
//!   then by line, keeps the wall-clock order of the file's jobs; no job is dropped or reordered
//!   relative to its wall clock. `duration` (s, may have a fraction: rounded up), `num_gpus`
//!   (>= 1), `cluster` is the tenant (virtual cluster).
//! - `itp`: `job_id,submission_time,duration,num_gpu`, times in seconds relative to the start of
//!   the collection (replayed from the Unix epoch). No tenant column: every job goes to one of
//!   8 synthetic projects `t0`..`t7` by the FNV-1a hash of its `job_id` (documented, stable).
//! - `openb`: `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//!   creation_time,deletion_time,scheduled_time`. Pods with `num_gpu = 0` are CPU-only and are
//!   left out (counted). A GPU-sharing pod (`gpu_milli < 1000`) takes one whole GPU: Tranche
//!   allocates whole GPUs. Submit = `creation_time`; duration = `deletion_time` minus
//!   `scheduled_time` (or `creation_time` when never scheduled), at least 1 s. The tenant is the
//!   `qos` class; `BE` (best effort) pods become unallocated runs under `tranche`.
//! - `native`: a header with at least `submit,duration,gpus,project` (submit in s since the
//!   epoch, duration in s, GPUs >= 1, project name without `/`, which separates the levels of
//!   `--tree`) and optionally `min_runtime` (s, at most
//!   8 h, 0 = unallocated, best effort), `time_limit` (s, >= duration), `priority` (integer,
//!   within the project), `gpu_model` (the `--cluster` pool the job ran on; needed when
//!   `--cluster` has several pools). This is what a site can export from its own scheduler's
//!   accounting.

use std::path::Path;

/// Trace formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Philly (Pollux artifact CSV).
    Philly,
    /// Microsoft ITP (ElasticFlow raw traces).
    Itp,
    /// Alibaba OpenB pod list.
    Openb,
    /// Tranche's native CSV.
    Native,
}

impl std::fmt::Display for Format {
    /// The name `--format` takes (`philly`, `itp`, `openb`, `native`), from clap's own.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match clap::ValueEnum::to_possible_value(self) {
            Some(v) => f.write_str(v.get_name()),
            None => write!(f, "{self:?}"),
        }
    }
}

/// One job of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// 1-based line number in the file (header is line 1).
    pub line: u64,
    /// Submission instant (s).
    pub submit: i64,
    /// Real run time (s, >= 1).
    pub duration: i64,
    /// GPUs (gang size, >= 1).
    pub gpus: u32,
    /// Tenant (project) name.
    pub tenant: String,
    /// Explicit minimum runtime (native format), s.
    pub min_runtime: Option<i64>,
    /// Explicit time limit (native format), s.
    pub time_limit: Option<i64>,
    /// Explicit priority (native format).
    pub priority: Option<i32>,
    /// Best-effort job (OpenB `BE`, native `min_runtime` 0): unallocated under `tranche`.
    pub best_effort: bool,
    /// GPU model the job ran on (native `gpu_model`): the `--cluster` pool it goes to.
    pub model: Option<String>,
}

/// A loaded trace, sorted by (submit, line).
#[derive(Debug, Clone)]
pub struct Trace {
    /// Jobs sorted by submission, then line.
    pub jobs: Vec<Job>,
    /// Malformed rows skipped under `--skip-bad-rows`.
    pub skipped: u64,
    /// Rows left out by the format's rule (OpenB CPU-only pods).
    pub excluded: u64,
}

/// A malformed row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, field `{field}`: {problem}")]
pub struct RowError {
    /// 1-based line.
    pub line: u64,
    /// The column.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

/// The longest minimum runtime a native trace may give (s): the design's site maximum, 8 h
/// (docs/design.md section 2), the service's default `TRANCHE_MAX_MIN_RUNTIME_S`.
pub const MAX_MIN_RUNTIME_S: i64 = 8 * 3600;

fn bad(line: u64, field: &str, problem: impl Into<String>) -> RowError {
    RowError {
        line,
        field: field.to_string(),
        problem: problem.into(),
    }
}

struct Row<'a> {
    rec: &'a csv::StringRecord,
    cols: &'a std::collections::HashMap<String, usize>,
    line: u64,
}

impl Row<'_> {
    /// The tenant (project name) in `field`: not empty, and without `/`, which separates the
    /// levels of `--tree` (a tenant named with it found no project: the replay panicked).
    fn tenant(&self, field: &str) -> Result<&str, RowError> {
        let tenant = self.get(field)?;
        if tenant.is_empty() {
            return Err(bad(self.line, field, "empty"));
        }
        if tenant.contains('/') {
            return Err(bad(
                self.line,
                field,
                format!(
                    "{tenant:?} contains '/', which separates the levels of --tree: name the project by its last part and give its path in --tree (e.g. --tree team=100,team/a=100 for project a)"
                ),
            ));
        }
        Ok(tenant)
    }

    fn get(&self, field: &str) -> Result<&str, RowError> {
        let i = self
            .cols
            .get(field)
            .ok_or_else(|| bad(self.line, field, "column missing"))?;
        self.rec
            .get(*i)
            .map(str::trim)
            .ok_or_else(|| bad(self.line, field, "value missing"))
    }

    fn opt(&self, field: &str) -> Option<&str> {
        self.cols
            .get(field)
            .and_then(|&i| self.rec.get(i))
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// Seconds, possibly with a fraction (rounded up), finite and >= `min`.
    fn seconds(&self, field: &str, min: i64) -> Result<i64, RowError> {
        let s = self.get(field)?;
        self.seconds_of(field, s, min)
    }

    fn seconds_of(&self, field: &str, s: &str, min: i64) -> Result<i64, RowError> {
        let v: f64 = s
            .parse()
            .map_err(|_| bad(self.line, field, format!("{s:?} is not a number")))?;
        if !v.is_finite() || v.abs() > 1e15 {
            return Err(bad(self.line, field, format!("{s:?} is out of range")));
        }
        let v = v.ceil() as i64;
        if v < min {
            return Err(bad(
                self.line,
                field,
                format!("{s:?} must be at least {min}"),
            ));
        }
        Ok(v)
    }

    fn gpus(&self, field: &str) -> Result<u32, RowError> {
        let s = self.get(field)?;
        let v: i64 = s
            .parse()
            .map_err(|_| bad(self.line, field, format!("{s:?} is not a whole number")))?;
        if !(1..=1_000_000).contains(&v) {
            return Err(bad(
                self.line,
                field,
                format!("{s:?}: a job needs 1 to 1,000,000 GPUs"),
            ));
        }
        Ok(v as u32)
    }
}

/// Parses a Philly wall-clock timestamp by the documented rule (see the module docs).
///
/// # Errors
/// A text that is not `YYYY-MM-DD HH:MM:SS`.
pub fn philly_instant(text: &str) -> Result<i64, String> {
    let dt: jiff::civil::DateTime = jiff::civil::DateTime::strptime("%Y-%m-%d %H:%M:%S", text)
        .map_err(|e| format!("{text:?} is not YYYY-MM-DD HH:MM:SS ({e})"))?;
    let tz = jiff::tz::TimeZone::get("America/Los_Angeles").map_err(|e| e.to_string())?;
    // "compatible" (RFC 5545): a repeated wall time takes the earlier offset, a missing one is
    // moved forward by the gap.
    let z = tz
        .to_ambiguous_zoned(dt)
        .compatible()
        .map_err(|e| e.to_string())?;
    Ok(z.timestamp().as_second())
}

/// FNV-1a 64-bit hash (stable across platforms and releases).
pub fn fnv1a(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn parse_row(format: Format, row: &Row<'_>) -> Result<Option<Job>, RowError> {
    let line = row.line;
    let job = |submit, duration, gpus, tenant: String| Job {
        line,
        submit,
        duration,
        gpus,
        tenant,
        min_runtime: None,
        time_limit: None,
        priority: None,
        best_effort: false,
        model: None,
    };
    match format {
        Format::Philly => {
            let ts = row.get("timestamp")?;
            let submit = philly_instant(ts).map_err(|e| bad(line, "timestamp", e))?;
            let duration = row.seconds("duration", 1)?;
            let gpus = row.gpus("num_gpus")?;
            let tenant = row.tenant("cluster")?;
            Ok(Some(job(submit, duration, gpus, tenant.to_string())))
        }
        Format::Itp => {
            let id = row.get("job_id")?;
            let submit = row.seconds("submission_time", 0)?;
            let duration = row.seconds("duration", 1)?;
            let gpus = row.gpus("num_gpu")?;
            Ok(Some(job(
                submit,
                duration,
                gpus,
                format!("t{}", fnv1a(id) % 8),
            )))
        }
        Format::Openb => {
            let num = row.get("num_gpu")?;
            let n: i64 = num
                .parse()
                .map_err(|_| bad(line, "num_gpu", format!("{num:?} is not a whole number")))?;
            if n < 0 {
                return Err(bad(line, "num_gpu", "negative"));
            }
            if n == 0 {
                return Ok(None);
            }
            let gpus = row.gpus("num_gpu")?;
            let created = row.seconds("creation_time", 0)?;
            let deleted = row.seconds("deletion_time", 0)?;
            let from = match row.opt("scheduled_time") {
                Some(s) => row.seconds_of("scheduled_time", s, 0)?,
                None => created,
            };
            let qos = row.tenant("qos")?;
            let mut j = job(created, (deleted - from).max(1), gpus, qos.to_string());
            j.best_effort = qos == "BE";
            Ok(Some(j))
        }
        Format::Native => {
            let submit = row.seconds("submit", i64::MIN / 4)?;
            let duration = row.seconds("duration", 1)?;
            let gpus = row.gpus("gpus")?;
            let tenant = row.tenant("project")?;
            let mut j = job(submit, duration, gpus, tenant.to_string());
            if let Some(s) = row.opt("min_runtime") {
                let m = row.seconds_of("min_runtime", s, 0)?;
                if m > MAX_MIN_RUNTIME_S {
                    return Err(bad(
                        line,
                        "min_runtime",
                        format!("{s:?} is above the site maximum of {MAX_MIN_RUNTIME_S} s (8 h)"),
                    ));
                }
                j.min_runtime = Some(m);
                // Unallocated work, as OpenB's best-effort pods: it earns no share.
                j.best_effort = m == 0;
            }
            if let Some(m) = row.opt("gpu_model") {
                j.model = Some(m.to_string());
            }
            if let Some(s) = row.opt("time_limit") {
                let t = row.seconds_of("time_limit", s, 1)?;
                if t < duration {
                    return Err(bad(line, "time_limit", "shorter than the duration"));
                }
                j.time_limit = Some(t);
            }
            if let Some(s) = row.opt("priority") {
                j.priority = Some(s.parse().map_err(|e: std::num::ParseIntError| {
                    let problem = match e.kind() {
                        std::num::IntErrorKind::PosOverflow
                        | std::num::IntErrorKind::NegOverflow => {
                            format!("{s:?} is out of range ({} to {})", i32::MIN, i32::MAX)
                        }
                        _ => format!("{s:?} is not an integer"),
                    };
                    bad(line, "priority", problem)
                })?);
            }
            Ok(Some(j))
        }
    }
}

fn required(format: Format) -> &'static [&'static str] {
    match format {
        Format::Philly => &["timestamp", "duration", "num_gpus", "cluster"],
        Format::Itp => &["job_id", "submission_time", "duration", "num_gpu"],
        Format::Openb => &[
            "num_gpu",
            "qos",
            "creation_time",
            "deletion_time",
            "scheduled_time",
        ],
        Format::Native => &["submit", "duration", "gpus", "project"],
    }
}

/// Longest replay: 20 years (7,305 days) from the first submission to the last end. The
/// metrics keep hourly series over the span, so a trace with times in the wrong unit would
/// otherwise ask for memory by the terabyte.
pub const MAX_SPAN_S: i64 = 7_305 * 86_400;

/// Loads a trace from any reader.
///
/// # Errors
/// A missing or repeated column, a malformed row (line and field named) unless
/// `skip_bad_rows`, in which case the row is skipped and counted, or a span over
/// [`MAX_SPAN_S`].
pub fn load_from<R: std::io::Read>(
    reader: R,
    format: Format,
    skip_bad_rows: bool,
) -> anyhow::Result<Trace> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(reader);
    let headers = rdr.headers()?.clone();
    if headers
        .iter()
        .all(|h| h.trim().trim_start_matches('\u{feff}').is_empty())
    {
        anyhow::bail!(
            "the trace is empty: a `{format}` trace starts with a header naming {:?}",
            required(format)
        );
    }
    let mut cols: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, h) in headers.iter().enumerate() {
        let name = h.trim().trim_start_matches('\u{feff}').to_string();
        if !name.is_empty() && cols.insert(name.clone(), i).is_some() {
            anyhow::bail!("line 1: the header names the column `{name}` twice");
        }
    }
    for c in required(format) {
        if !cols.contains_key(*c) {
            anyhow::bail!(
                "line 1: the header has no column `{c}` (a `{format}` trace needs {:?})",
                required(format)
            );
        }
    }
    let mut jobs = Vec::new();
    let mut skipped = 0;
    let mut excluded = 0;
    let mut rec = csv::StringRecord::new();
    loop {
        let line_guess = rdr.position().line();
        let more = match rdr.read_record(&mut rec) {
            Ok(m) => m,
            Err(e) => {
                let line = e.position().map_or(line_guess, |p| p.line());
                if skip_bad_rows {
                    skipped += 1;
                    continue;
                }
                anyhow::bail!("line {line}: unreadable row: {e}");
            }
        };
        if !more {
            break;
        }
        let line = rec.position().map_or(line_guess, |p| p.line());
        // Values past the header's columns mean a shifted row (a comma inside an unquoted
        // value, say): refused like a short one. Empty ones (trailing commas) are harmless.
        if rec.iter().skip(headers.len()).any(|v| !v.trim().is_empty()) {
            if skip_bad_rows {
                skipped += 1;
                continue;
            }
            anyhow::bail!(
                "line {line}: row has {} fields, the header {}: a value past the last column",
                rec.len(),
                headers.len()
            );
        }
        if rec.len() < headers.len() {
            if skip_bad_rows {
                skipped += 1;
                continue;
            }
            let field = headers.get(rec.len()).unwrap_or("?");
            return Err(bad(
                line,
                field,
                format!("row has {} fields, the header {}", rec.len(), headers.len()),
            )
            .into());
        }
        match parse_row(
            format,
            &Row {
                rec: &rec,
                cols: &cols,
                line,
            },
        ) {
            Ok(Some(j)) => jobs.push(j),
            Ok(None) => excluded += 1,
            Err(e) if skip_bad_rows => {
                let _ = e;
                skipped += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    jobs.sort_by_key(|j| (j.submit, j.line));
    if let (Some(first), Some(end)) = (
        jobs.first().map(|j| j.submit),
        jobs.iter()
            .map(|j| j.submit.saturating_add(j.duration))
            .max(),
    ) && end.saturating_sub(first) > MAX_SPAN_S
    {
        anyhow::bail!(
            "the trace spans {} days from its first submission to its last end; a replay covers at most {} days (are the times in milliseconds?)",
            end.saturating_sub(first) / 86_400,
            MAX_SPAN_S / 86_400
        );
    }
    Ok(Trace {
        jobs,
        skipped,
        excluded,
    })
}

/// Loads a trace file.
///
/// # Errors
/// As [`load_from`], plus an unreadable file.
pub fn load(path: &Path, format: Format, skip_bad_rows: bool) -> anyhow::Result<Trace> {
    let f = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
    load_from(std::io::BufReader::new(f), format, skip_bad_rows)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
