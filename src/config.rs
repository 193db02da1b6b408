//! Configuration: read once from flags and the environment, failing fast.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A secret string that never prints: `Debug` and `Display` show `[redacted]`.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The secret itself; call only where it is used, never to log.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Where the database is: an external server (`DATABASE_URL`) or the embedded cluster kept in
/// the data directory.
#[derive(Clone, Debug)]
pub enum DatabaseSource {
    /// A PostgreSQL connection URL given by the operator.
    Url(Secret),
    /// The private cluster under `DATA_DIR/postgres`.
    Embedded,
}

/// Settings shared by every subcommand that touches the database.
#[derive(Clone, Debug, clap::Args)]
pub struct DbArgs {
    /// Directory for Tranche's state (the embedded PostgreSQL cluster lives in `DIR/postgres`).
    #[arg(long, env = "TRANCHE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

/// Site settings that pages and arithmetic need; read from the environment once.
#[derive(Clone, Debug)]
pub struct Site {
    /// ISO 4217 code shown next to money, e.g. `EUR` (`TRANCHE_CURRENCY`, default `USD`).
    pub currency: String,
    /// IANA time zone of the organisation, e.g. `Europe/Berlin` (`TRANCHE_TIME_ZONE`, default `UTC`).
    pub time_zone: jiff::tz::TimeZone,
    /// Its name as configured.
    pub time_zone_name: String,
    /// The zones the budget periods follow: `time_zone` throughout until
    /// [`crate::ledger::zones::record`] reads the recorded ones (a changed `time_zone` takes
    /// effect for periods at the end of the current one).
    pub periods: crate::domain::PeriodCalendar,
    /// Whether session cookies carry the `Secure` flag (`TRANCHE_SECURE_COOKIES`, default false;
    /// set it to true behind HTTPS).
    pub secure_cookies: bool,
    /// Percent of each cluster's GPUs of a model that capacity contracts may hold at any instant
    /// (`TRANCHE_CONTRACTABLE_PERCENT`, default 70).
    pub contractable_percent: u8,
    /// Percent of a contract's price refunded when it is cancelled before its start
    /// (`TRANCHE_CONTRACT_REFUND_PERCENT`, default 100).
    pub refund_percent: u8,
    /// Outgoing mail for budget alerts, when `TRANCHE_SMTP_URL` and `TRANCHE_SMTP_FROM` are set.
    pub smtp: Option<Smtp>,
    /// Longest minimum runtime a run may ask for, seconds (`TRANCHE_MAX_MIN_RUNTIME_S`,
    /// default 8 h, docs/design.md section 2).
    pub max_min_runtime_s: i64,
    /// Seconds between SIGTERM and SIGKILL when a run is stopped (`TRANCHE_GRACE_S`, default 30).
    pub grace_s: i64,
    /// Seconds without a sync after which a node agent counts as lost and its runs are requeued
    /// or end as lost (`TRANCHE_AGENT_TIMEOUT_S`, default 30).
    pub agent_timeout_s: i64,
    /// Seconds between scheduling passes when nothing wakes the loop (`TRANCHE_TICK_S`,
    /// default 5).
    pub tick_s: i64,
    /// Whether the client address for sign-in throttling is the last `X-Forwarded-For` entry
    /// (`TRANCHE_TRUST_FORWARDED_FOR`, default false; set it to true only behind a reverse
    /// proxy that appends it, else clients could choose their own address).
    pub trust_forwarded_for: bool,
    /// The bearer token a Prometheus scrape of `/metrics` must present
    /// (`TRANCHE_METRICS_TOKEN`); unset, `/metrics` is off (404).
    pub metrics_token: Option<Secret>,
    /// A running run whose GPUs all report utilization under this percentage is idle
    /// (`TRANCHE_IDLE_UTILIZATION_PERCENT`, default 5; docs/design.md section 5).
    pub idle_utilization_percent: u8,
    /// Seconds a run stays idle before it is flagged to its submitter and its project's leads
    /// (`TRANCHE_IDLE_AFTER_S`, default 1800).
    pub idle_after_s: i64,
    /// Percent of short runs (time limit at most 15 minutes) that may find no GPU idle on
    /// arrival, which the idle GPUs each pool keeps for them are sized for
    /// (`TRANCHE_SHORT_RUN_BLOCKING_PERCENT`, 1 to 100, default 10; 100 keeps none;
    /// docs/design.md section 3.7).
    pub short_run_blocking_percent: u8,
    /// How the Slurm bridge calls Slurm's tools (docs/slurm.md).
    pub slurm: SlurmSettings,
}

/// The Slurm bridge's settings: `TRANCHE_SLURM_CONF` (the `slurm.conf` the tools read, passed
/// as `SLURM_CONF`; unset: Slurm's default), `TRANCHE_SLURM_TIMEOUT_S` (seconds each call may
/// take, default 10), `TRANCHE_SLURM_POLL_S` (seconds between rounds, default 2) and
/// `TRANCHE_SLURM_USER` (the Unix user jobs run as, through `sbatch --uid`, which needs Tranche
/// to run as root or as Slurm's `SlurmUser`; unset: the user `tranche serve` runs as).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmSettings {
    /// The `slurm.conf` path given to every command as `SLURM_CONF`.
    pub conf: Option<std::path::PathBuf>,
    /// Longest time one command may take before it counts as no answer.
    pub timeout: std::time::Duration,
    /// Time between two rounds of the bridge while nothing wakes it.
    pub poll: std::time::Duration,
    /// The Unix user jobs run as, when not Tranche's own.
    pub user: Option<String>,
}

impl Default for SlurmSettings {
    fn default() -> Self {
        Self {
            conf: None,
            timeout: std::time::Duration::from_secs(10),
            poll: std::time::Duration::from_secs(2),
            user: None,
        }
    }
}

impl SlurmSettings {
    /// Reads the `TRANCHE_SLURM_*` variables.
    ///
    /// # Errors
    /// A timeout or poll interval that is not a number of seconds from 1 to 600, or a user
    /// name with characters a Unix name never has.
    pub fn from_env() -> anyhow::Result<Self> {
        let text = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let secs = |name: &str, default: u64| -> anyhow::Result<std::time::Duration> {
            match text(name) {
                None => Ok(std::time::Duration::from_secs(default)),
                Some(v) => match v.parse::<u64>() {
                    Ok(s) if (1..=600).contains(&s) => Ok(std::time::Duration::from_secs(s)),
                    _ => {
                        anyhow::bail!("{name} must be a number of seconds from 1 to 600, got {v:?}")
                    }
                },
            }
        };
        let user = text("TRANCHE_SLURM_USER");
        if let Some(u) = &user
            && !u
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            anyhow::bail!("TRANCHE_SLURM_USER must be a Unix user name, got {u:?}");
        }
        Ok(Self {
            conf: text("TRANCHE_SLURM_CONF").map(Into::into),
            timeout: secs("TRANCHE_SLURM_TIMEOUT_S", 10)?,
            poll: secs("TRANCHE_SLURM_POLL_S", 2)?,
            user,
        })
    }
}

/// An SMTP relay: `TRANCHE_SMTP_URL` such as `smtps://user:password@mail.example.org` or
/// `smtp://relay.internal:25?tls=required` (lettre's URL format; the URL is a secret), and the
/// sender address `TRANCHE_SMTP_FROM`.
#[derive(Clone, Debug)]
pub struct Smtp {
    /// The relay's URL, with credentials.
    pub url: Secret,
    /// The sender, e.g. `Tranche <tranche@example.org>`.
    pub from: String,
}

fn smtp_from_env() -> anyhow::Result<Option<Smtp>> {
    let url = std::env::var("TRANCHE_SMTP_URL")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let from = std::env::var("TRANCHE_SMTP_FROM")
        .ok()
        .filter(|v| !v.trim().is_empty());
    match (url, from) {
        (None, None) => Ok(None),
        (Some(url), Some(from)) => {
            from.parse::<lettre::message::Mailbox>().map_err(|e| {
                anyhow::anyhow!("TRANCHE_SMTP_FROM {from:?} is not an e-mail address: {e}")
            })?;
            lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::from_url(&url)
                .map_err(|_| anyhow::anyhow!("TRANCHE_SMTP_URL is not a valid SMTP URL (smtp://host:port or smtps://user:password@host)"))?;
            Ok(Some(Smtp {
                url: Secret::new(url),
                from,
            }))
        }
        _ => anyhow::bail!(
            "set both TRANCHE_SMTP_URL and TRANCHE_SMTP_FROM to send budget alerts by e-mail, or neither"
        ),
    }
}

fn seconds_var(name: &str, default: i64) -> anyhow::Result<i64> {
    seconds(name, std::env::var(name).ok().as_deref(), default, 0)
}

/// Seconds from `raw`, the value of variable `name`: `default` when unset or blank, else a
/// whole number from `min` to 30 days.
fn seconds(name: &str, raw: Option<&str>, default: i64, min: i64) -> anyhow::Result<i64> {
    const MAX: i64 = 30 * 86_400;
    match raw.map(str::trim) {
        None | Some("") => Ok(default),
        Some(v) => match v.parse::<i64>() {
            Ok(s) if (min..=MAX).contains(&s) => Ok(s),
            _ => anyhow::bail!("{name} must be a number of seconds from {min} to {MAX}, got {v:?}"),
        },
    }
}

/// A boolean variable: unset, empty, `false` or `0` is false; `true` or `1` is true.
fn bool_var(name: &str) -> anyhow::Result<bool> {
    match std::env::var(name).as_deref() {
        Err(_) | Ok("") | Ok("false") | Ok("0") => Ok(false),
        Ok("true") | Ok("1") => Ok(true),
        Ok(other) => anyhow::bail!("{name} must be true or false, got {other:?}"),
    }
}

fn percent_var(name: &str, default: u8) -> anyhow::Result<u8> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => match v.trim().parse::<u8>() {
            Ok(p) if p <= 100 => Ok(p),
            _ => anyhow::bail!("{name} must be a whole percentage from 0 to 100, got {v:?}"),
        },
    }
}

impl Site {
    /// Seconds between two passes beyond which the server counts as having been down (or its
    /// scheduler stalled), so agent silence is counted afresh from the pass after it: two
    /// thirds of the agent timeout (an agent that synced just before the outage is then still
    /// within its timeout when it can sync again), and at least two ticks, so a quiet server's
    /// regular passes never count as an outage.
    pub fn watch_gap_s(&self) -> i64 {
        (self.agent_timeout_s * 2 / 3).max(2 * self.tick_s)
    }

    /// Reads the site settings from the environment.
    ///
    /// # Errors
    /// An unknown time zone or a malformed boolean.
    pub fn from_env() -> anyhow::Result<Self> {
        let currency = std::env::var("TRANCHE_CURRENCY").unwrap_or_else(|_| "USD".into());
        if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_uppercase()) {
            anyhow::bail!(
                "TRANCHE_CURRENCY must be a three-letter ISO 4217 code such as EUR, got {currency:?}"
            );
        }
        let time_zone_name = std::env::var("TRANCHE_TIME_ZONE").unwrap_or_else(|_| "UTC".into());
        let time_zone = jiff::tz::TimeZone::get(&time_zone_name).map_err(|e| {
            anyhow::anyhow!(
                "TRANCHE_TIME_ZONE {time_zone_name:?} is not a known IANA time zone: {e}"
            )
        })?;
        let secure_cookies = bool_var("TRANCHE_SECURE_COOKIES")?;
        let trust_forwarded_for = bool_var("TRANCHE_TRUST_FORWARDED_FOR")?;
        Ok(Self {
            currency,
            periods: crate::domain::PeriodCalendar::new(time_zone.clone()),
            time_zone,
            time_zone_name,
            secure_cookies,
            contractable_percent: percent_var("TRANCHE_CONTRACTABLE_PERCENT", 70)?,
            refund_percent: percent_var("TRANCHE_CONTRACT_REFUND_PERCENT", 100)?,
            smtp: smtp_from_env()?,
            max_min_runtime_s: seconds_var("TRANCHE_MAX_MIN_RUNTIME_S", 8 * 3600)?,
            grace_s: seconds_var("TRANCHE_GRACE_S", 30)?,
            // Agents heartbeat every third of it, at least every second: 3 s at the least.
            agent_timeout_s: seconds(
                "TRANCHE_AGENT_TIMEOUT_S",
                std::env::var("TRANCHE_AGENT_TIMEOUT_S").ok().as_deref(),
                30,
                3,
            )?,
            tick_s: seconds_var("TRANCHE_TICK_S", 5)?.max(1),
            trust_forwarded_for,
            metrics_token: match std::env::var("TRANCHE_METRICS_TOKEN") {
                Ok(t) if t.trim().len() >= 16 => Some(Secret::new(t.trim())),
                Ok(t) if !t.trim().is_empty() => {
                    anyhow::bail!(
                        "TRANCHE_METRICS_TOKEN must be at least 16 characters (openssl rand -hex 32)"
                    )
                }
                _ => None,
            },
            idle_utilization_percent: percent_var("TRANCHE_IDLE_UTILIZATION_PERCENT", 5)?,
            idle_after_s: seconds_var("TRANCHE_IDLE_AFTER_S", 1800)?,
            short_run_blocking_percent: match std::env::var("TRANCHE_SHORT_RUN_BLOCKING_PERCENT") {
                Ok(v) if !v.trim().is_empty() => match v.trim().parse::<u8>() {
                    Ok(p @ 1..=100) => p,
                    _ => anyhow::bail!(
                        "TRANCHE_SHORT_RUN_BLOCKING_PERCENT must be a whole percentage from 1 to 100 (100 keeps no GPUs for short runs), got {v:?}"
                    ),
                },
                _ => crate::scheduler::DEFAULT_SHORT_RUN_BLOCKING_PERCENT,
            },
            slurm: SlurmSettings::from_env()?,
        })
    }

    /// Settings for tests: USD, UTC, insecure cookies, the default 70% contractable and full
    /// refunds.
    pub fn for_tests() -> Self {
        Self {
            currency: "USD".into(),
            time_zone: jiff::tz::TimeZone::UTC,
            time_zone_name: "UTC".into(),
            periods: crate::domain::PeriodCalendar::new(jiff::tz::TimeZone::UTC),
            secure_cookies: false,
            contractable_percent: 70,
            refund_percent: 100,
            smtp: None,
            max_min_runtime_s: 8 * 3600,
            grace_s: 30,
            agent_timeout_s: 30,
            tick_s: 5,
            trust_forwarded_for: false,
            metrics_token: None,
            idle_utilization_percent: 5,
            idle_after_s: 1800,
            short_run_blocking_percent: crate::scheduler::DEFAULT_SHORT_RUN_BLOCKING_PERCENT,
            slurm: SlurmSettings::default(),
        }
    }
}

/// Where `tranche serve` listens (`--listen`, env `TRANCHE_LISTEN`, default `127.0.0.1:8080`).
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "TRANCHE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Reads `DATABASE_URL` (empty counts as unset).
pub fn database_source() -> DatabaseSource {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => DatabaseSource::Url(Secret::new(url)),
        _ => DatabaseSource::Embedded,
    }
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn seconds_are_whole_and_in_range() {
        let t = |raw: Option<&str>, min| seconds("X", raw, 30, min);
        assert_eq!(t(None, 0).unwrap(), 30);
        assert_eq!(t(Some("  "), 0).unwrap(), 30);
        assert_eq!(t(Some(" 0 "), 0).unwrap(), 0);
        assert_eq!(t(Some("2592000"), 0).unwrap(), 2_592_000);
        assert_eq!(t(Some("3"), 3).unwrap(), 3);
        for bad in ["0", "2", "-1", "2592001", "1.5", "ten"] {
            let e = t(Some(bad), 3).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("X must be a number of seconds from 3 to 2592000, got {bad:?}")
            );
        }
    }
}
