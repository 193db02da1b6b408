//! What the project page shows a lead and the project's members about how the project stands
//! now (docs/operations.md, "Project page"): its runs (running, and waiting with the core's
//! reason), its usage in the fair-share window against its share and its rank among its
//! siblings, owed versus received this period (the metrics' demand-capped owed,
//! [`owed_received`]; an SVG chart and a table), spend this period with the forecast to the
//! period's end, and its idle flags.
//!
//! One query per part, all by the project's indexes, and a standing is reused for at most
//! [`STANDING_TTL`] ([`StandingCache`]), so many viewers of one project cost one computation a
//! second (README, Benchmarks).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::db::tree::{NodeView, TreeView};
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::scheduler::fairshare::ShareKey;
use crate::state::AppState;
use crate::web::home::IdleView;

/// The fair-share window the scheduler uses, seconds ([`crate::runs::live::USAGE_WINDOW_S`]).
pub const WINDOW_S: i64 = crate::runs::live::USAGE_WINDOW_S;

/// A run of the project now.
#[derive(Clone)]
pub struct RunNow {
    /// Run id.
    pub id: i64,
    /// Submitter's name.
    pub submitter: String,
    /// `4 × H100 on local`.
    pub what: String,
    /// State.
    pub state: String,
    /// For a running run: since when and its protection; for a waiting one: the core's
    /// reason and estimated start.
    pub detail: String,
    /// For a waiting run whose reason names the projects ahead of it by fair share: what
    /// `detail` is worded from, to word it again for a reader who may not see them all
    /// ([`RunNow::for_reader`]).
    pub named: Option<Arc<NamedReason>>,
}

/// What a fair-share waiting reason is worded from ([`crate::web::runs::reason_words`]).
pub struct NamedReason {
    words: Option<String>,
    note: i18n::wait::WaitNote,
    place: Option<i64>,
    estimate: Option<time::OffsetDateTime>,
}

impl RunNow {
    /// The run as `reader` may see it: a fair-share reason's names of projects the reader may
    /// not see become "another project" ([`crate::runs::hide_unseen_projects`]), as on the
    /// runs list and the run's page. The standing is cached for all readers of the project;
    /// this is worded per reader.
    #[must_use]
    pub fn for_reader(
        &self,
        state: &AppState,
        reader: &crate::auth::Account,
        parents: &crate::auth::Parents,
    ) -> RunNow {
        let mut run = self.clone();
        if let Some(n) = &self.named {
            let (mut words, mut note) = (n.words.clone(), n.note.clone());
            if crate::runs::hide_unseen_projects(reader, parents, &mut words, Some(&mut note)) {
                run.detail = crate::web::runs::reason_words(
                    state,
                    words.as_deref(),
                    Some(&note),
                    n.place,
                    n.estimate,
                );
            }
        }
        run
    }
}

/// A sibling (or the project itself) in the fair-share standing.
#[derive(Clone)]
pub struct SiblingRow {
    /// Node id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Share of the parent, as shown.
    pub share: String,
    /// Billing-weighted allocated GPU-hours in the window.
    pub usage: String,
    /// Its part of the siblings' usage, percent.
    pub usage_pct: String,
    /// 1-based rank among the siblings (1 is served first).
    pub rank: usize,
    /// Whether this is the page's project.
    pub me: bool,
}

/// How long a computed standing is shown again before it is computed anew.
pub const STANDING_TTL: Duration = Duration::from_secs(1);

/// How long past [`STANDING_TTL`] an expired standing may still be shown while another viewer
/// computes its successor: the page is at most `STANDING_TTL + STALE_GRACE` old. Past that a
/// viewer computes it in the request (the other failed, or is very slow).
const STALE_GRACE: Duration = Duration::from_millis(500);

/// Recently computed standings by project id and language (the standing holds its sentences
/// and figures formatted for the page's language): under load, the many viewers of a project share
/// one computation per [`STANDING_TTL`]. Each is kept with the version of the project's
/// [`Facts`] it was computed beside, so a write the facts show at once (a contract bought, a
/// budget changed) is never shown beside an older standing. When a standing expires, the
/// first viewer computes it anew in its request; viewers meanwhile are shown the expired one
/// only within [`STALE_GRACE`] of its expiry (no herd of identical computations), and compute
/// it themselves past that. So no page shows a standing older than `STANDING_TTL +
/// STALE_GRACE`, however long nobody looked. Idle flags are kept without the viewer's right to
/// stop them, which the page adds.
#[derive(Default)]
pub struct StandingCache(Mutex<HashMap<(i64, i18n::Lang), CachedStanding>>);

struct CachedStanding {
    at: Instant,
    /// The version of the project's [`Facts`] it was computed beside.
    version: i64,
    standing: Arc<Standing>,
    /// Since when a viewer has been computing its successor.
    refreshing: Option<Instant>,
}

/// What [`StandingCache::get`] found.
enum Lookup {
    /// A standing to show as it is (fresh, or expired within [`STALE_GRACE`] while another
    /// viewer computes its successor).
    Show(Arc<Standing>),
    /// Nothing young enough: this viewer computes it.
    Compute,
}

impl StandingCache {
    /// The standing of `project` to show, computed beside the project's facts at `version`,
    /// or [`Lookup::Compute`] when the caller is to compute it (none, another version,
    /// expired with nobody computing it, or too old to show).
    fn get(&self, project: (i64, i18n::Lang), version: i64, now: Instant) -> Lookup {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(entry) = map.get_mut(&project).filter(|e| e.version == version) else {
            return Lookup::Compute;
        };
        let age = now.saturating_duration_since(entry.at);
        if age < STANDING_TTL {
            return Lookup::Show(entry.standing.clone());
        }
        match entry.refreshing {
            Some(_) if age < STANDING_TTL + STALE_GRACE => Lookup::Show(entry.standing.clone()),
            _ => {
                entry.refreshing = Some(now);
                Lookup::Compute
            }
        }
    }

    /// Keeps `standing`, computed at `at` beside the project's facts at `version`, unless a
    /// standing computed later is already kept.
    fn put(&self, project: (i64, i18n::Lang), version: i64, at: Instant, standing: Arc<Standing>) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() > 1000 {
            map.retain(|_, e| e.at.elapsed() < STANDING_TTL);
        }
        if map
            .get(&project)
            .is_some_and(|e| e.version == version && e.at > at)
        {
            return;
        }
        map.insert(
            project,
            CachedStanding {
                at,
                version,
                standing,
                refreshing: None,
            },
        );
    }
}

/// The project page's settings and money of one project: its settings and members, the
/// balance of its current budget, its budgets of later periods and its contracts. Cached per
/// project by the project's change counter (`change_counters` row `project:ID`, bumped by
/// triggers on its settings, members, budget accounts and contracts) and the budget period, as
/// the tree is ([`crate::db::tree::VersionedCache`]): a page after the project's own write shows
/// it at once.
pub struct Facts {
    /// Settings and members.
    pub settings: crate::db::tree::ProjectSettings,
    /// The current period's budget as its account records it ([`crate::ledger::budget_and_balance`]).
    pub budget: Money,
    /// Balance of the current period's budget.
    pub balance: Money,
    /// Budgets of later periods (opened early by a contract in them): (the month each is
    /// named after, [`crate::ledger::Period::month`]; balance). Shown in each viewer's
    /// language, so kept as money, not text.
    pub later_balances: Vec<(jiff::civil::Date, Money)>,
    /// Contracts, newest window first.
    pub contracts: Vec<crate::ledger::contracts::Contract>,
    /// The project's change counter these facts were read at (the standing shown beside them
    /// is computed at the same version, [`StandingCache`]).
    pub version: i64,
}

/// [`Facts`] by project id ([`crate::db::tree::VersionedCache`]).
pub type FactsCache = crate::db::tree::VersionedCache<i64, Facts>;

/// The program tree and `project`'s [`Facts`], from the caches when their change counters
/// (read together, in one query) are unchanged.
///
/// # Errors
/// NotFound when `project` is not a project; database errors.
pub async fn tree_and_facts(
    state: &AppState,
    project: i64,
) -> Result<(Arc<TreeView>, Arc<Facts>), AppError> {
    let key = format!("project:{project}");
    let versions = crate::db::tree::counter_versions(&state.pool, &["tree", &key]).await?;
    let (tree_version, version) = (versions[0], versions[1]);
    let now = jiff::Timestamp::now();
    let tree = crate::db::tree::load_at_version(
        &state.pool,
        &state.tree_cache,
        tree_version,
        now,
        &state.site.periods,
    )
    .await?;
    let period = crate::ledger::Period::containing(now, &state.site);
    let period_s = period.start.as_second();
    if let Some(f) = state.project_facts.get(&project, version, period_s) {
        return Ok((tree, f));
    }
    let settings = crate::db::tree::project(&state.pool, project).await?;
    let (budget, balance) =
        crate::ledger::budget_and_balance(&state.pool, project, now, &state.site).await?;
    let rows: Vec<(time::OffsetDateTime, i64)> = sqlx::query_as(
        "SELECT period_start, balance_minor FROM ledger_accounts WHERE kind = 'project_budget' AND project_id = $1 AND period_start > $2 ORDER BY period_start",
    )
    .bind(project)
    .bind(crate::ledger::to_time(period.start))
    .fetch_all(&state.pool)
    .await?;
    let later_balances = rows
        .into_iter()
        .map(|(start, b)| {
            (
                state.site.periods.month(crate::ledger::to_jiff(start)),
                Money(b),
            )
        })
        .collect();
    let contracts = crate::ledger::contracts::of_project(&state.pool, project).await?;
    let facts = Arc::new(Facts {
        settings,
        budget,
        balance,
        later_balances,
        contracts,
        version,
    });
    state
        .project_facts
        .put(project, version, period_s, Arc::clone(&facts));
    Ok((tree, facts))
}

/// Everything the project page adds to the project's settings.
pub struct Standing {
    /// Running (and stopping) runs.
    pub running: Vec<RunNow>,
    /// Waiting runs (queued, waiting for approval), with their reasons.
    pub waiting: Vec<RunNow>,
    /// The project's rank among its siblings and its usage in the fair-share window, as a
    /// sentence in the page's language (HTML: `<strong>` around the rank; its placeables are
    /// numbers formatted here).
    pub rank_line: String,
    /// The siblings by rank.
    pub siblings: Vec<SiblingRow>,
    /// Owed and received GPU-hours this period so far ([`OwedReceived`]), received as a
    /// percentage of owed, and the impact (received of owed, hour by hour at most what was
    /// owed, / owed: the metrics page's figure), as a sentence in the page's language (HTML:
    /// `<strong>` around the figures; `—` for the percentages while nothing is owed).
    pub owed_line: String,
    /// Per day of the period so far: (day, owed to date, received to date), GPU-hours.
    pub days: Vec<(String, String, String)>,
    /// The chart of the same, inline SVG.
    pub chart: String,
    /// Spend this period: contracts (less refunds), runs, total, forecast to the period's end.
    pub spend: (String, String, String, String),
    /// Open idle flags of the project's runs (`can_stop` false: the page sets it per viewer).
    pub idle: Vec<IdleView>,
}

/// The standing of `project`, computed beside its `facts` (the same change counter version:
/// a contract the facts list is in the standing's spend too) and at most [`STANDING_TTL`]
/// plus [`STALE_GRACE`] old ([`StandingCache`]).
///
/// # Errors
/// Database errors.
pub async fn cached_standing(
    state: &AppState,
    tree: &Arc<TreeView>,
    project: &NodeView,
    facts: &Facts,
) -> Result<Arc<Standing>, AppError> {
    let key = (project.id, i18n::current());
    match state.project_cache.get(key, facts.version, Instant::now()) {
        Lookup::Show(s) => Ok(s),
        Lookup::Compute => {
            let at = Instant::now();
            let s = Arc::new(standing(state, tree, project).await?);
            state.project_cache.put(key, facts.version, at, s.clone());
            Ok(s)
        }
    }
}

type RunRow = (
    i64,
    String,
    i32,
    String,
    String,
    String,
    Option<time::OffsetDateTime>,
    i64,
    Option<String>,
    Option<sqlx::types::Json<i18n::wait::WaitNote>>,
    Option<time::OffsetDateTime>,
    Option<i64>,
    Option<time::OffsetDateTime>,
);

/// Gathers the project page's standing for `project` (for anyone who may see the project: all
/// of it is the project's).
///
/// # Errors
/// Database errors.
pub async fn standing(
    state: &AppState,
    tree: &TreeView,
    project: &NodeView,
) -> Result<Standing, AppError> {
    let pool = &state.pool;
    let site = &state.site;
    let tz = &site.time_zone;
    let cur = &site.currency;
    let now = jiff::Timestamp::now();
    let at = |t: time::OffsetDateTime| domain::format_local(crate::ledger::to_jiff(t), tz);

    // Runs now.
    let rows: Vec<RunRow> = sqlx::query_as(
        "SELECT r.id, u.name, r.gpus, m.name, c.name, r.state, r.started_at, \
                CASE WHEN r.budget_spent THEN 0 ELSE r.min_runtime_s END, r.wait_reason, r.wait_note, r.estimated_start, \
         CASE WHEN r.wait_note->'reason'->>'kind' = 'fair_share' THEN line.place END, \
         (SELECT k.ends_at FROM contracts k WHERE k.id = r.contract_id AND k.project_id = r.project_id \
            AND k.state = 'active' AND k.starts_at <= now() AND k.ends_at > now()) \
         FROM runs r LEFT JOIN (SELECT id, row_number() OVER (PARTITION BY cluster_id, gpu_model_id ORDER BY priority DESC, \
         extract(epoch FROM queued_at)::BIGINT, id) AS place FROM runs \
         WHERE project_id = $1 AND state = 'queued' AND min_runtime_s > 0) line ON line.id = r.id \
         JOIN users u ON u.id = r.submitted_by JOIN gpu_models m ON m.id = r.gpu_model_id \
         JOIN clusters c ON c.id = r.cluster_id \
         WHERE r.project_id = $1 AND r.state IN ('waiting_approval', 'queued', 'starting', 'running', 'stopping') \
         ORDER BY r.id LIMIT 500",
    )
    .bind(project.id)
    .fetch_all(pool)
    .await?;
    // In the viewer's language: the cache keeps one standing per project and language.
    let (mut running, mut waiting) = (Vec::new(), Vec::new());
    for (
        id,
        submitter,
        gpus,
        model,
        cluster,
        st,
        started,
        min_rt,
        words,
        note,
        estimate,
        place,
        contract_until,
    ) in rows
    {
        let what = i18n::ta(
            "run-what-on",
            &[("gpus", &gpus), ("model", &model), ("cluster", &cluster)],
        );
        let state_words = crate::web::runs::state_words(&st);
        if st == "queued" || st == "waiting_approval" {
            let detail = if st == "waiting_approval" {
                i18n::t("project-waits-approval")
            } else {
                crate::web::runs::reason_words(
                    state,
                    words.as_deref(),
                    note.as_deref(),
                    place,
                    estimate,
                )
            };
            let named = note
                .filter(|n| n.names_projects())
                .filter(|_| st == "queued")
                .map(|n| {
                    Arc::new(NamedReason {
                        words,
                        note: n.0,
                        place,
                        estimate,
                    })
                });
            waiting.push(RunNow {
                id,
                submitter,
                what,
                state: state_words,
                detail,
                named,
            });
        } else {
            let detail = match started {
                Some(s) => {
                    // Protected for its minimum runtime, and on its contract while the
                    // window lasts (docs/design.md section 3.3).
                    let until = (s + time::Duration::seconds(min_rt))
                        .max(contract_until.unwrap_or(time::OffsetDateTime::UNIX_EPOCH));
                    let protection = if min_rt == 0 {
                        i18n::t("node-unallocated")
                    } else if crate::ledger::to_jiff(until) > now {
                        i18n::t1("node-protected-until", "at", at(until))
                    } else {
                        i18n::t("node-past-min-runtime")
                    };
                    i18n::t2("project-run-since", "at", at(s), "protection", protection)
                }
                None => String::new(),
            };
            running.push(RunNow {
                id,
                submitter,
                what,
                state: state_words,
                detail,
                named: None,
            });
        }
    }

    // Fair-share standing among the siblings: usage of each sibling's subtree in the window,
    // ranked by the scheduling core's own key.
    let parent = project.parent_id;
    let siblings: Vec<&NodeView> = match parent {
        Some(p) => tree.children(p).collect(),
        None => vec![project],
    };
    let projects_under: Vec<(i64, i64)> = tree
        .nodes
        .iter()
        .filter(|n| n.is_project)
        .filter_map(|n| {
            siblings
                .iter()
                .find(|s| tree.parents.is_ancestor_or_self(s.id, n.id))
                .map(|s| (n.id, s.id))
        })
        .collect();
    let ids: Vec<i64> = projects_under.iter().map(|(p, _)| *p).collect();
    let usage: HashMap<i64, i64> = sqlx::query_as::<_, (i64, i64)>(
        "SELECT lp.project_id, (sum(lp.gpu_seconds * m.billing_weight_milli) / 1000)::BIGINT \
         FROM ledger_postings lp JOIN gpu_models m ON m.id = lp.gpu_model_id \
         WHERE lp.kind = 'usage' AND lp.project_id = ANY($1) AND lp.at > now() - make_interval(secs => $2) \
         GROUP BY lp.project_id",
    )
    .bind(&ids)
    .bind(WINDOW_S as f64)
    .fetch_all(pool)
    .await?
    .into_iter()
    .collect();
    let mut by_sibling: HashMap<i64, i64> = HashMap::new();
    for (p, s) in &projects_under {
        *by_sibling.entry(*s).or_default() += usage.get(p).copied().unwrap_or(0);
    }
    let total_usage: i64 = by_sibling.values().sum();
    let mut ranked: Vec<(&NodeView, ShareKey)> = siblings
        .iter()
        .map(|s| {
            (
                *s,
                ShareKey {
                    share: u32::from(s.share.bp()),
                    usage: i128::from(by_sibling.get(&s.id).copied().unwrap_or(0)),
                },
            )
        })
        .collect();
    // Greater key first; ties to the lower id, as the core.
    ranked.sort_by(|(a, ka), (b, kb)| kb.compare(ka).then(a.id.cmp(&b.id)));
    // Two decimals on every row, so a column of figures lines up (5,815.81 beside 5,573.80).
    let hours = |secs: i64| i18n::format::grouped(i18n::current(), secs as f64 / 3600.0, 2);
    let sibling_rows: Vec<SiblingRow> = ranked
        .iter()
        .enumerate()
        .map(|(i, (s, k))| SiblingRow {
            id: s.id,
            name: s.name.clone(),
            share: i18n::format::percent_bp(i64::from(s.share.bp())),
            usage: hours(k.usage as i64),
            usage_pct: i18n::t1(
                "percent",
                "n",
                if total_usage > 0 {
                    i18n::format::fixed(
                        i18n::current(),
                        k.usage as f64 * 100.0 / total_usage as f64,
                        1,
                    )
                } else {
                    "0".into()
                },
            ),
            rank: i + 1,
            me: s.id == project.id,
        })
        .collect();
    let rank = (
        sibling_rows.iter().find(|r| r.me).map_or(1, |r| r.rank),
        sibling_rows.len(),
    );

    // Spend this period, in one pass over the project's postings of the period.
    let period = crate::ledger::Period::containing(now, site);
    let (start, _) = period.bounds();
    let postings: Vec<(String, i64)> = sqlx::query_as(
        "SELECT kind, sum(amount_minor)::BIGINT FROM ledger_postings \
         WHERE project_id = $1 AND period_start = $2 AND kind IN ('usage', 'contract', 'refund') GROUP BY 1",
    )
    .bind(project.id)
    .bind(start)
    .fetch_all(pool)
    .await?;
    let (mut contracts, mut runs) = (0_i64, 0_i64);
    for (kind, amount) in postings {
        match kind.as_str() {
            "contract" => contracts += amount,
            "refund" => contracts -= amount,
            _ => runs += amount,
        }
    }
    let owed = owed_received(state, tree, project, period, now).await?;
    let mut days = Vec::new();
    let mut points = Vec::new();
    let (mut owed_to_date, mut received_to_date) = (0.0, 0.0);
    for (label, o, r) in &owed.days {
        owed_to_date += o;
        received_to_date += r;
        days.push((
            label.clone(),
            i18n::format::grouped(i18n::current(), owed_to_date, 1),
            i18n::format::grouped(i18n::current(), received_to_date, 1),
        ));
        points.push((label.clone(), owed_to_date, received_to_date));
    }
    let chart = crate::web::charts::owed_received(
        &i18n::t1("chart-owed-received-title", "project", &project.name),
        &points,
    );
    let forecast = crate::ledger::alerts::forecast(contracts, runs, period, now);
    let percent = |x: f64, decimals: u8| {
        i18n::t1(
            "percent",
            "n",
            i18n::format::fixed(i18n::current(), x * 100.0, decimals),
        )
    };
    let owed_line = i18n::ta(
        "project-owed-line",
        &[
            (
                "owed",
                &i18n::format::grouped(i18n::current(), owed.owed_gpu_hours, 1),
            ),
            (
                "received",
                &i18n::format::grouped(i18n::current(), owed.received_gpu_hours, 1),
            ),
            (
                "pct",
                &if owed.owed_gpu_hours > 0.0 {
                    percent(owed.received_gpu_hours / owed.owed_gpu_hours, 0)
                } else {
                    "—".into()
                },
            ),
            (
                "impact",
                &owed.impact().map_or_else(|| "—".into(), |i| percent(i, 1)),
            ),
        ],
    );
    let rank_line = i18n::ta(
        "project-rank",
        &[
            ("rank", &rank.0),
            ("count", &rank.1),
            (
                "usage",
                &i18n::format::gpu_hours(by_sibling.get(&project.id).copied().unwrap_or(0)),
            ),
        ],
    );
    Ok(Standing {
        running,
        waiting,
        rank_line,
        siblings: sibling_rows,
        owed_line,
        days,
        chart,
        spend: (
            Money(contracts).display(cur),
            Money(runs).display(cur),
            Money(contracts + runs).display(cur),
            Money(forecast).display(cur),
        ),
        idle: crate::web::home::project_idle_views(state, project.id).await?,
    })
}

/// A project's owed and received GPU-hours over a window, by the metrics' definitions
/// (docs/design.md section 5, [`crate::metrics::compute`]): per pool (cluster and GPU model),
/// hour by hour, owed = min(the GPU-seconds its runs were present, its effective share × the
/// pool's installed GPUs × the hour's seconds); received = its allocated GPU-seconds; summed
/// over the pools. The metrics page's per-project figures for the same window are the same
/// numbers (the same function on the same history, restricted to the project's runs, on which
/// its figures alone depend).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwedReceived {
    /// Owed over the window, GPU-hours.
    pub owed_gpu_hours: f64,
    /// Received over the window, GPU-hours.
    pub received_gpu_hours: f64,
    /// Hour by hour min(received, owed), summed, GPU-hours.
    pub received_of_owed_gpu_hours: f64,
    /// Per day of the window in the zone its period follows: (`MM-DD`, owed, received), GPU-hours.
    pub days: Vec<(String, f64, f64)>,
}

impl OwedReceived {
    /// Received of owed / owed; `None` when nothing was owed.
    pub fn impact(&self) -> Option<f64> {
        (self.owed_gpu_hours > 0.0).then(|| self.received_of_owed_gpu_hours / self.owed_gpu_hours)
    }
}

/// [`OwedReceived`] of `project` from the start of `period` to `now`, with one entry per day
/// (midnight to midnight in the zone the period follows; the last one ends now).
///
/// # Errors
/// Database errors.
pub async fn owed_received(
    state: &AppState,
    tree: &TreeView,
    project: &NodeView,
    period: crate::ledger::Period,
    now: jiff::Timestamp,
) -> Result<OwedReceived, AppError> {
    // Days of the zone the period follows (the previous zone until a change takes effect at
    // the period's end), as its bounds are.
    let tz = &state
        .site
        .periods
        .period(period.start)
        .0
        .time_zone()
        .clone();
    let (from, to) = (
        period.start.as_second(),
        now.as_second().max(period.start.as_second()),
    );
    let start = period.start.to_zoned(tz.clone());
    let mut bounds = vec![from];
    for d in 1.. {
        let b = start
            .checked_add(jiff::Span::new().days(d))
            .map_err(|e| AppError::Internal(e.into()))?
            .timestamp()
            .as_second();
        if b >= to {
            break;
        }
        bounds.push(b);
    }
    bounds.push(to);
    let mut out = OwedReceived {
        days: bounds
            .windows(2)
            .map(|w| {
                let day = jiff::Timestamp::from_second(w[0])
                    .unwrap_or(period.start)
                    .to_zoned(tz.clone())
                    .date();
                let label = crate::i18n::format::day_month(crate::i18n::current(), day);
                (label, 0.0, 0.0)
            })
            .collect(),
        ..OwedReceived::default()
    };
    let share = crate::metrics::ProjectShare {
        id: project.id,
        name: project.name.clone(),
        effective_share: project.effective.numerator as f64 / project.effective.denominator as f64,
        before: Vec::new(),
    };
    let pools =
        crate::metrics::history::project_pools(&state.pool, project.id, (from, to, to)).await?;
    for (cluster, cluster_name, model, model_name) in pools {
        let capacity = tree
            .capacity
            .iter()
            .find(|c| c.cluster == cluster_name && c.gpu_model == model_name)
            .map_or(0.0, |c| c.gpus as f64);
        let mut h = crate::metrics::history::load(
            &state.pool,
            crate::metrics::history::Scope {
                cluster,
                gpu_model: model,
                from,
                to,
                now: to,
                project: Some(project.id),
            },
            vec![share.clone()],
            capacity,
        )
        .await?;
        let whole = crate::metrics::compute(&h);
        if let Some(p) = whole.projects.first() {
            out.owed_gpu_hours += p.owed_gpu_hours;
            out.received_gpu_hours += p.received_gpu_hours;
            out.received_of_owed_gpu_hours += p.received_of_owed_gpu_hours;
        }
        for (day, w) in out.days.iter_mut().zip(bounds.windows(2)) {
            h.window = (w[0], w[1]);
            if let Some(p) = crate::metrics::compute(&h).projects.first() {
                day.1 += p.owed_gpu_hours;
                day.2 += p.received_gpu_hours;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(owed_line: &str) -> Arc<Standing> {
        Arc::new(Standing {
            running: Vec::new(),
            waiting: Vec::new(),
            rank_line: String::new(),
            siblings: Vec::new(),
            owed_line: owed_line.into(),
            days: Vec::new(),
            chart: String::new(),
            spend: Default::default(),
            idle: Vec::new(),
        })
    }

    fn shown(l: Lookup) -> Option<String> {
        match l {
            Lookup::Show(s) => Some(s.owed_line.clone()),
            Lookup::Compute => None,
        }
    }

    /// A standing is shown for `STANDING_TTL`; expired, its first viewer computes it, others
    /// see it within `STALE_GRACE` of the expiry and never later, however long ago it expired;
    /// a new facts version is never shown beside an old standing.
    #[test]
    fn an_expired_standing_is_never_shown_past_its_grace() {
        let cache = StandingCache::default();
        let key = (7, i18n::Lang::En);
        let t0 = Instant::now();
        cache.put(key, 3, t0, standing("old"));
        let ms = |n: u64| t0 + Duration::from_millis(n);
        assert_eq!(shown(cache.get(key, 3, ms(999))).as_deref(), Some("old"));
        assert_eq!(shown(cache.get(key, 4, ms(10))), None, "another version");
        // Expired: the first viewer computes; a second, 200 ms later, sees the old one.
        assert_eq!(shown(cache.get(key, 3, ms(1_000))), None);
        assert_eq!(shown(cache.get(key, 3, ms(1_200))).as_deref(), Some("old"));
        // 1.5 s after it was computed nobody is shown it, even while one computes.
        assert_eq!(shown(cache.get(key, 3, ms(1_500))), None);
        // Long expired (nobody looked for a minute): computed in the request.
        let cache = StandingCache::default();
        cache.put(key, 3, t0, standing("old"));
        assert_eq!(shown(cache.get(key, 3, ms(60_000))), None);
        assert_eq!(shown(cache.get(key, 3, ms(60_001))), None);
        // The fresh one stored is shown; an older computation finishing later does not
        // replace it.
        cache.put(key, 3, ms(60_000), standing("new"));
        cache.put(key, 3, ms(59_000), standing("stale"));
        assert_eq!(shown(cache.get(key, 3, ms(60_100))).as_deref(), Some("new"));
    }
}
