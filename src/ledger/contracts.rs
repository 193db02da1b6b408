//! Capacity contracts: a lead buys N GPUs of a model on a cluster for a window `[start, end)`,
//! paid up front from the project's budget. Admission checks, in one transaction serialised per
//! cluster and GPU model, that contracted GPUs never exceed the contractable fraction of the
//! installed GPUs at any instant (scenario S7) and that the budget covers the price (S9).

use serde_json::json;
use sqlx::PgPool;

use crate::auth::Account;
use crate::config::Site;
use crate::db::audit::{self, Change};
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::ledger::{self, to_jiff, to_time};
use crate::scheduler::admission::peak_contracted;

/// How far ahead contracts can be bought, and the capacity calendar's span: 8 weeks.
pub const HORIZON_SECONDS: i64 = 56 * 86_400;

/// GPUs of a model that contracts may hold on a cluster: `floor(installed x percent / 100)`.
pub fn contractable(installed: i64, percent: u8) -> i64 {
    installed * i64::from(percent) / 100
}

/// What a lead asks for.
#[derive(Clone, Debug)]
pub struct Request {
    /// Project name.
    pub project: String,
    /// Cluster name.
    pub cluster: String,
    /// GPU model name.
    pub gpu_model: String,
    /// GPUs.
    pub gpus: i64,
    /// Window start (UTC instant).
    pub start: jiff::Timestamp,
    /// Window end, exclusive.
    pub end: jiff::Timestamp,
    /// The price the buyer saw in the preview, if any: the purchase is refused when the price
    /// has changed since (`price_changed`).
    pub expected_price_minor: Option<i64>,
}

impl Request {
    /// SHA-256 of the request with its window as instants: the fingerprint an
    /// `Idempotency-Key` is stored with, so the same purchase written with another offset or
    /// zone is the same request, and another GPU count or window is not.
    #[must_use]
    pub fn fingerprint(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let text = format!(
            "{}\n{}\n{}\n{}\n{}\n{}\n{:?}",
            self.project.trim(),
            self.cluster.trim(),
            self.gpu_model.trim(),
            self.gpus,
            self.start.as_second(),
            self.end.as_second(),
            self.expected_price_minor
        );
        Sha256::digest(text.as_bytes()).into()
    }
}

/// How a purchase is made once only, whatever the retries.
#[derive(Clone, Copy, Debug)]
pub enum Once<'a> {
    /// The browser's one-time price-preview token: a second purchase with it buys nothing and
    /// is refused as the used preview it is.
    Preview(&'a str),
    /// The API's `Idempotency-Key` of the buyer, with [`Request::fingerprint`]: a repeat with
    /// the same request answers the contract bought first ([`Purchase::Repeated`]).
    Key(crate::runs::Key<'a>),
}

/// What [`buy_once`] did.
#[derive(Debug)]
pub enum Purchase {
    /// A new contract, with the quote it was bought at.
    Bought(Contract, Quote),
    /// The contract the buyer's idempotency key bought before; nothing was bought now.
    Repeated(Contract),
}

/// The contract `actor` bought before with `key`, if any.
///
/// # Errors
/// 422 `idempotency_mismatch` (field `Idempotency-Key`) when the key was used for another
/// request; database errors.
pub async fn repeat_of(
    db: &mut sqlx::PgConnection,
    actor: &Account,
    key: crate::runs::Key<'_>,
) -> Result<Option<Contract>, AppError> {
    let row: Option<(i64, Option<Vec<u8>>)> = sqlx::query_as(
        "SELECT id, idempotency_sha256 FROM contracts WHERE bought_by = $1 AND idempotency_key = $2",
    )
    .bind(actor.id)
    .bind(key.key)
    .fetch_optional(&mut *db)
    .await?;
    match row {
        None => Ok(None),
        Some((id, Some(stored))) if stored.as_slice() != key.fingerprint.as_slice() => {
            Err(AppError::idempotency_mismatch(format!(
                "this Idempotency-Key was already used for another purchase (contract {id}); \
                 send that request again, or use a new key for a new contract"
            )))
        }
        Some((id, _)) => Ok(Some(
            sqlx::query_as::<_, Contract>(&format!("{SELECT_CONTRACT} WHERE c.id = $1"))
                .bind(id)
                .fetch_one(&mut *db)
                .await?,
        )),
    }
}

/// A priced, checked request (the price preview), before or after buying.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Quote {
    /// Project id.
    pub project_id: i64,
    /// Cluster id.
    pub cluster_id: i64,
    /// GPU model id.
    pub gpu_model_id: i64,
    /// GPUs.
    pub gpus: i64,
    /// Window length in seconds.
    pub seconds: i64,
    /// GPU-hours (GPUs x hours).
    pub gpu_hours: f64,
    /// Price in minor units.
    pub price_minor: i64,
    /// Billing weight in thousandths.
    pub billing_weight_milli: i64,
    /// Price per weighted GPU-hour, minor units.
    pub price_per_gpu_hour_minor: i64,
    /// Installed GPUs of the model on the cluster.
    pub installed: i64,
    /// Contractable GPUs.
    pub contractable: i64,
    /// Most GPUs already contracted at an instant of the window.
    pub peak_contracted: i64,
    /// The project's budget balance now, minor units.
    pub balance_minor: i64,
}

/// A contract as listed.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct Contract {
    /// Id.
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
    /// Window start, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub starts_at: time::OffsetDateTime,
    /// Window end, UTC, exclusive.
    #[serde(with = "time::serde::rfc3339")]
    pub ends_at: time::OffsetDateTime,
    /// Zone the window was entered in.
    pub time_zone: String,
    /// Price, minor units.
    pub price_minor: i64,
    /// `active`, `ended` (an active contract whose window is over, as read) or `cancelled`.
    pub state: String,
    /// Refund on cancellation, minor units.
    pub refund_minor: Option<i64>,
    /// Buyer's name.
    pub bought_by: Option<String>,
}

const SELECT_CONTRACT: &str = "SELECT c.id, t.name AS project, c.project_id, cl.name AS cluster, m.name AS gpu_model, c.gpus, \
     c.starts_at, c.ends_at, c.time_zone, c.price_minor, \
     CASE WHEN c.state = 'active' AND c.ends_at <= now() THEN 'ended' ELSE c.state END AS state, c.refund_minor, u.name AS bought_by \
     FROM contracts c JOIN tree_nodes t ON t.id = c.project_id JOIN clusters cl ON cl.id = c.cluster_id \
     JOIN gpu_models m ON m.id = c.gpu_model_id LEFT JOIN users u ON u.id = c.bought_by";

/// Resolves names, checks the caller's right and the window, and prices the request. Does not
/// check capacity or budget (see [`quote`] and [`buy`]).
async fn resolve(
    conn: &mut sqlx::PgConnection,
    site: &Site,
    actor: &Account,
    req: &Request,
    now: jiff::Timestamp,
) -> Result<Quote, AppError> {
    let parents = crate::auth::Parents::load(&mut *conn).await?;
    // A project outside the caller's view is answered as a missing one (a refusal that names
    // it would tell who may not see it that it exists).
    let project_id: i64 = sqlx::query_scalar::<_, i64>(
        "SELECT id FROM tree_nodes WHERE lower(name) = lower($1) AND is_project AND NOT archived",
    )
    .bind(req.project.trim())
    .fetch_optional(&mut *conn)
    .await?
    .filter(|id| actor.sees_node(*id, &parents))
    .ok_or_else(|| {
        AppError::NotFound(i18n::t1(
            "contract-err-no-project",
            "name",
            crate::domain::quote(req.project.trim()),
        ))
    })?;
    if !actor.leads(project_id, &parents) {
        return Err(AppError::Forbidden(i18n::t1(
            "contract-err-not-lead",
            "project",
            req.project.trim(),
        )));
    }
    let cluster_id = crate::db::inventory::cluster_id(&mut *conn, &req.cluster)
        .await?
        .ok_or_else(|| {
            AppError::NotFound(i18n::t1(
                "contract-err-no-cluster",
                "name",
                crate::domain::quote(req.cluster.trim()),
            ))
        })?;
    let (gpu_model_id, weight, price): (i64, i32, i64) = sqlx::query_as(
        "SELECT id, billing_weight_milli, price_per_gpu_hour_minor FROM gpu_models WHERE lower(name) = lower($1)",
    )
    .bind(req.gpu_model.trim())
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| {
        AppError::NotFound(i18n::t1(
            "contract-err-no-model",
            "name",
            crate::domain::quote(req.gpu_model.trim()),
        ))
    })?;
    let installed: i64 = sqlx::query_scalar(&installed_sql())
        .bind(cluster_id)
        .bind(gpu_model_id)
        .fetch_one(&mut *conn)
        .await?;
    if installed == 0 {
        // Nodes of the model that do not count now (lost: their agent stopped) are said so, not
        // "none".
        let declared: i64 = sqlx::query_scalar(
            "SELECT coalesce(sum(gpu_count), 0)::bigint FROM nodes WHERE cluster_id = $1 AND gpu_model_id = $2",
        )
        .bind(cluster_id)
        .bind(gpu_model_id)
        .fetch_one(&mut *conn)
        .await?;
        return Err(AppError::invalid(
            "gpu_model",
            i18n::ta(
                if declared > 0 {
                    "contract-err-gpus-not-counted"
                } else {
                    "contract-err-no-gpus"
                },
                &[
                    ("cluster", &req.cluster.trim()),
                    ("model", &req.gpu_model.trim()),
                    ("declared", &declared),
                ],
            ),
        ));
    }
    if req.gpus < 1 || req.gpus > installed {
        return Err(AppError::invalid(
            "gpus",
            i18n::ta(
                "contract-err-gpu-count",
                &[
                    ("installed", &i18n::format::count(installed)),
                    ("model", &req.gpu_model.trim()),
                    ("cluster", &req.cluster.trim()),
                    ("got", &i18n::format::count(req.gpus)),
                ],
            ),
        ));
    }
    let tz = &site.time_zone;
    if req.start < now {
        return Err(AppError::invalid(
            "start",
            i18n::t1(
                "contract-err-past",
                "start",
                domain::format_local_exact(req.start, tz),
            ),
        ));
    }
    if req.end <= req.start {
        return Err(AppError::invalid(
            "end",
            i18n::t2(
                "contract-err-order",
                "start",
                domain::format_local_exact(req.start, tz),
                "end",
                domain::format_local_exact(req.end, tz),
            ),
        ));
    }
    let seconds = req.end.as_second() - req.start.as_second();
    if seconds < 60 {
        return Err(AppError::invalid("end", i18n::t("contract-err-minute")));
    }
    if req.end.as_second() > now.as_second() + HORIZON_SECONDS {
        let limit = jiff::Timestamp::from_second(now.as_second() + HORIZON_SECONDS).unwrap_or(now);
        return Err(AppError::invalid(
            "end",
            i18n::t1(
                "contract-err-horizon",
                "until",
                domain::format_local(limit, tz),
            ),
        ));
    }
    let price_minor = domain::contract_price(req.gpus, seconds, i64::from(weight), price).0;
    Ok(Quote {
        project_id,
        cluster_id,
        gpu_model_id,
        gpus: req.gpus,
        seconds,
        gpu_hours: req.gpus as f64 * seconds as f64 / 3600.0,
        price_minor,
        billing_weight_milli: i64::from(weight),
        price_per_gpu_hour_minor: price,
        installed,
        contractable: contractable(installed, site.contractable_percent),
        peak_contracted: 0,
        balance_minor: 0,
    })
}

/// Active contract windows on a cluster and model overlapping `[start, end)`.
async fn windows(
    conn: &mut sqlx::PgConnection,
    cluster: i64,
    model: i64,
    start: jiff::Timestamp,
    end: jiff::Timestamp,
) -> Result<Vec<(i64, i64, i64)>, sqlx::Error> {
    let rows: Vec<(time::OffsetDateTime, time::OffsetDateTime, i32)> = sqlx::query_as(
        "SELECT starts_at, ends_at, gpus FROM contracts WHERE cluster_id = $1 AND gpu_model_id = $2 AND state = 'active' \
         AND starts_at < $4 AND ends_at > $3",
    )
    .bind(cluster)
    .bind(model)
    .bind(to_time(start))
    .bind(to_time(end))
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(s, e, g)| (s.unix_timestamp(), e.unix_timestamp(), i64::from(g)))
        .collect())
}

/// After a change of the GPUs installed in a pool (inside the caller's transaction, which
/// holds the change): the most GPUs active contracts hold at one instant from `now` on, when
/// that is more than the pool may now contract (`floor(installed x percent / 100)`), with
/// that contractable figure; `None` when every contract still fits.
///
/// # Errors
/// Database errors.
pub async fn overbooked(
    conn: &mut sqlx::PgConnection,
    site: &Site,
    (cluster, model): (i64, i64),
    now: jiff::Timestamp,
) -> Result<Option<(i64, i64)>, sqlx::Error> {
    let installed: i64 = sqlx::query_scalar(&installed_sql())
        .bind(cluster)
        .bind(model)
        .fetch_one(&mut *conn)
        .await?;
    // Contracts are bought at most HORIZON ahead: a year covers every window.
    let end = now + jiff::SignedDuration::from_hours(24 * 366);
    let peak = peak_contracted(
        &windows(conn, cluster, model, now, end).await?,
        now.as_second(),
        end.as_second(),
    )
    .0;
    let limit = contractable(installed, site.contractable_percent);
    Ok((peak > limit).then_some((peak, limit)))
}

fn capacity_check(q: &Quote, req: &Request, peak: (i64, i64), site: &Site) -> Result<(), AppError> {
    if peak.0 + q.gpus > q.contractable {
        let at = jiff::Timestamp::from_second(peak.1).unwrap_or(req.start);
        return Err(AppError::Refused {
            code: "capacity_exceeded",
            message: i18n::ta(
                "contract-err-capacity",
                &[
                    ("contractable", &i18n::format::count(q.contractable)),
                    ("installed", &i18n::format::count(q.installed)),
                    ("model", &req.gpu_model.trim()),
                    ("cluster", &req.cluster.trim()),
                    (
                        "percent",
                        &i18n::format::count(i64::from(site.contractable_percent)),
                    ),
                    ("peak", &i18n::format::count(peak.0)),
                    ("at", &domain::format_local(at, &site.time_zone)),
                    (
                        "left",
                        &i18n::format::count((q.contractable - peak.0).max(0)),
                    ),
                    ("gpus", &i18n::format::count(q.gpus)),
                ],
            ),
        });
    }
    Ok(())
}

fn budget_check(q: &Quote, req: &Request, site: &Site) -> Result<(), AppError> {
    if q.price_minor > q.balance_minor {
        let left = domain::gpu_hours_for(
            Money(q.balance_minor),
            q.billing_weight_milli,
            q.price_per_gpu_hour_minor,
        );
        return Err(AppError::Refused {
            code: "budget_exceeded",
            message: i18n::ta(
                "contract-err-budget",
                &[
                    (
                        "hours",
                        &domain::format_milli_gpu_hours((q.gpu_hours * 10.0).round() as i64 * 100),
                    ),
                    ("model", &req.gpu_model.trim()),
                    ("price", &Money(q.price_minor).display(&site.currency)),
                    ("project", &req.project.trim()),
                    (
                        "left",
                        // Down to the tenth shown: never more hours than the balance buys.
                        &domain::format_milli_gpu_hours(((left * 10.0).floor() * 100.0) as i64),
                    ),
                    (
                        "month",
                        &i18n::format::month_year(i18n::current(), site.periods.month(req.start)),
                    ),
                    ("balance", &Money(q.balance_minor).display(&site.currency)),
                ],
            ),
        });
    }
    Ok(())
}

/// 409 `price_changed` when the request names a price (`expected_price_minor`, from an
/// earlier quote) other than the quote's.
fn price_check(q: &Quote, req: &Request, site: &Site) -> Result<(), AppError> {
    match req.expected_price_minor {
        Some(expected) if expected != q.price_minor => Err(AppError::Refused {
            code: "price_changed",
            message: i18n::t2(
                "contract-err-price-changed",
                "then",
                Money(expected).display(&site.currency),
                "now",
                Money(q.price_minor).display(&site.currency),
            ),
        }),
        _ => Ok(()),
    }
}

/// Checks and prices a request without buying it: the price preview. Capacity and budget are
/// checked against the current state (a later purchase may still be refused if others buy
/// first).
///
/// # Errors
/// As [`buy`], `price_changed` included (a client may check a stale price before buying).
pub async fn quote(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    req: &Request,
    now: jiff::Timestamp,
) -> Result<Quote, AppError> {
    let mut conn = pool.acquire().await?;
    let mut q = resolve(&mut conn, site, actor, req, now).await?;
    let peak = peak_contracted(
        &windows(&mut conn, q.cluster_id, q.gpu_model_id, req.start, req.end).await?,
        req.start.as_second(),
        req.end.as_second(),
    );
    q.peak_contracted = peak.0;
    capacity_check(&q, req, peak, site)?;
    // A quote writes nothing: the balance of the period's budget account, or what its grant
    // would be when no account is open yet (a purchase opens it).
    let period = ledger::Period::containing(req.start, site);
    let open: Option<i64> = sqlx::query_scalar(
        "SELECT balance_minor FROM ledger_accounts WHERE kind = 'project_budget' AND project_id = $1 AND period_start = $2",
    )
    .bind(q.project_id)
    .bind(ledger::to_time(period.start))
    .fetch_optional(&mut *conn)
    .await?;
    q.balance_minor = match open {
        Some(b) => b,
        None => ledger::period_budgets(pool, period, site)
            .await?
            .into_iter()
            .find(|(id, _)| *id == q.project_id)
            .map_or(0, |(_, m)| m.0),
    };
    // Less what running runs hold of the current period's balance, as a purchase counts it.
    if period == ledger::Period::containing(now, site) {
        q.balance_minor =
            (q.balance_minor - crate::runs::held_by_runs(&mut conn, q.project_id).await?).max(0);
    }
    // In the purchase's order: capacity, price, budget.
    price_check(&q, req, site)?;
    budget_check(&q, req, site)?;
    Ok(q)
}

/// Buys a contract: in one transaction, serialised per cluster and GPU model, admits it
/// against the capacity plan and the project's budget, records it and posts its price from the
/// project's budget to contract spending. A refusal changes nothing.
///
/// # Errors
/// Invalid input (names, GPU count, window), Forbidden (not a lead of the project),
/// Refused `capacity_exceeded` or `budget_exceeded` with the numbers.
pub async fn buy(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    req: &Request,
    now: jiff::Timestamp,
) -> Result<(Contract, Quote), AppError> {
    match buy_once(pool, site, actor, req, now, None).await? {
        Purchase::Bought(c, q) => Ok((c, q)),
        Purchase::Repeated(c) => {
            Err(anyhow::anyhow!("contract {} repeated without a key", c.id).into())
        }
    }
}

/// [`buy`] made once only (`once`): a second purchase with the same price-preview token, even
/// at the same instant, buys nothing and is refused as the used preview it is (422 on
/// `quote`); a repeat of the buyer's idempotency key with the same request answers
/// [`Purchase::Repeated`] with the contract bought first, also when the two arrive together.
///
/// # Errors
/// As [`buy`]; 422 `idempotency_mismatch` when the key was used for another request.
pub async fn buy_once(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    req: &Request,
    now: jiff::Timestamp,
    once: Option<Once<'_>>,
) -> Result<Purchase, AppError> {
    let key = match once {
        Some(Once::Key(key)) => Some(key),
        _ => None,
    };
    // A retry after the first purchase: answered before its checks, which the purchase itself
    // may now fail (the budget it spent, a start now past).
    if let Some(key) = key
        && let Some(c) = repeat_of(&mut *pool.acquire().await?, actor, key).await?
    {
        return Ok(Purchase::Repeated(c));
    }
    let mut tx = pool.begin().await?;
    let mut q = resolve(&mut tx, site, actor, req, now).await?;
    // One purchase at a time per cluster and model: the capacity check and the insert must see
    // the same contracts (scenario S7); two copies of one keyed request meet here.
    sqlx::query("SELECT pg_advisory_xact_lock($1::int, $2::int)")
        .bind(q.cluster_id as i32)
        .bind(q.gpu_model_id as i32)
        .execute(&mut *tx)
        .await?;
    if let Some(key) = key
        && let Some(c) = repeat_of(&mut tx, actor, key).await?
    {
        return Ok(Purchase::Repeated(c));
    }
    let peak = peak_contracted(
        &windows(&mut tx, q.cluster_id, q.gpu_model_id, req.start, req.end).await?,
        req.start.as_second(),
        req.end.as_second(),
    );
    q.peak_contracted = peak.0;
    capacity_check(&q, req, peak, site)?;
    price_check(&q, req, site)?;
    // Paid from the budget of the period in which the window starts: next month's capacity is
    // paid from next month's budget.
    let period = ledger::Period::containing(req.start, site);
    let current = period == ledger::Period::containing(now, site);
    if current {
        // What running runs hold of this period's balance is not for sale: no pass may start
        // or charge runs of the project between the read below and the purchase.
        crate::runs::service::serialize_with_passes(&mut tx).await?;
    }
    let account = ledger::period_account(pool, &mut tx, q.project_id, period, site).await?;
    q.balance_minor =
        sqlx::query_scalar("SELECT balance_minor FROM ledger_accounts WHERE id = $1 FOR UPDATE")
            .bind(account)
            .fetch_one(&mut *tx)
            .await?;
    if current {
        q.balance_minor =
            (q.balance_minor - crate::runs::held_by_runs(&mut tx, q.project_id).await?).max(0);
    }
    budget_check(&q, req, site)?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO contracts (project_id, cluster_id, gpu_model_id, gpus, starts_at, ends_at, time_zone, price_minor, bought_by, \
                                preview_token, idempotency_key, idempotency_sha256) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
    )
    .bind(q.project_id)
    .bind(q.cluster_id)
    .bind(q.gpu_model_id)
    .bind(q.gpus as i32)
    .bind(to_time(req.start))
    .bind(to_time(req.end))
    .bind(&site.time_zone_name)
    .bind(q.price_minor)
    .bind(actor.id)
    .bind(match once {
        Some(Once::Preview(token)) => Some(token),
        _ => None,
    })
    .bind(key.map(|k| k.key))
    .bind(key.map(|k| k.fingerprint.as_slice()))
    .fetch_one(&mut *tx)
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(d) if d.constraint() == Some("contracts_preview_token") => {
            AppError::invalid("quote", i18n::t("contract-expired"))
        }
        // The same key with a request for another cluster or model, at the same instant.
        sqlx::Error::Database(d) if d.constraint() == Some("contracts_idempotency") => {
            AppError::idempotency_mismatch(
                "this Idempotency-Key is being used for another purchase at this moment; \
                 use a new key for a new contract",
            )
        }
        _ => e.into(),
    })?;
    let spend = ledger::global_account(&mut tx, "contract_spend").await?;
    let period_start: time::OffsetDateTime =
        sqlx::query_scalar("SELECT period_start FROM ledger_accounts WHERE id = $1")
            .bind(account)
            .fetch_one(&mut *tx)
            .await?;
    sqlx::query(
        "INSERT INTO ledger_postings (kind, from_account, to_account, amount_minor, project_id, period_start, cluster_id, gpu_model_id, gpu_seconds, contract_id, actor_id, note) \
         VALUES ('contract', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'capacity contract')",
    )
    .bind(account)
    .bind(spend)
    .bind(q.price_minor)
    .bind(q.project_id)
    .bind(period_start)
    .bind(q.cluster_id)
    .bind(q.gpu_model_id)
    .bind(q.gpus * q.seconds)
    .bind(id)
    .bind(actor.id)
    .execute(&mut *tx)
    .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "contract.buy",
            entity: "contract",
            entity_id: Some(id),
            node_id: Some(q.project_id),
            before: None,
            after: Some(json!({
                "project": req.project.trim(), "cluster": req.cluster.trim(), "gpu_model": req.gpu_model.trim(), "gpus": q.gpus,
                "start": req.start.to_string(), "end": req.end.to_string(), "price_minor": q.price_minor
            })),
        },
    )
    .await?;
    let contract = sqlx::query_as::<_, Contract>(&format!("{SELECT_CONTRACT} WHERE c.id = $1"))
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Purchase::Bought(contract, q))
}

/// Cancels a contract before its start, refunding the site's refund percentage of its price to
/// the project's current budget. A started contract cannot be cancelled.
///
/// # Errors
/// NotFound (unknown, or outside what the caller may see), Forbidden (not a lead of the
/// project), Refused `not_cancellable` (already cancelled or started).
pub async fn cancel(
    pool: &PgPool,
    site: &Site,
    actor: &Account,
    id: i64,
    now: jiff::Timestamp,
) -> Result<Contract, AppError> {
    let mut tx = pool.begin().await?;
    let (project_id, state, starts_at, price, cluster_id, model_id): (i64, String, time::OffsetDateTime, i64, i64, i64) =
        sqlx::query_as("SELECT project_id, state, starts_at, price_minor, cluster_id, gpu_model_id FROM contracts WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| AppError::NotFound(i18n::t1("contract-err-not-found", "id", id.to_string())))?;
    let parents = crate::auth::Parents::load(&mut *tx).await?;
    if !actor.may_view(project_id, &parents) {
        // Contracts outside what the caller may see do not exist for them.
        return Err(AppError::NotFound(i18n::t1(
            "contract-err-not-found",
            "id",
            id.to_string(),
        )));
    }
    if !actor.leads(project_id, &parents) {
        return Err(AppError::Forbidden(i18n::t("contract-err-not-lead-cancel")));
    }
    if state != "active" {
        return Err(AppError::Refused {
            code: "not_cancellable",
            message: i18n::t("contract-err-already-cancelled"),
        });
    }
    if to_jiff(starts_at) <= now {
        return Err(AppError::Refused {
            code: "not_cancellable",
            message: i18n::t("contract-err-started"),
        });
    }
    let refund = price * i64::from(site.refund_percent) / 100;
    // Back to the budget it was paid from, while that period lasts; else to the current one.
    let charged: Option<i64> = sqlx::query_scalar(
        "SELECT p.from_account FROM ledger_postings p JOIN ledger_accounts a ON a.id = p.from_account \
         WHERE p.contract_id = $1 AND p.kind = 'contract' AND a.period_end > $2",
    )
    .bind(id)
    .bind(to_time(now))
    .fetch_optional(&mut *tx)
    .await?;
    let account = match charged {
        Some(a) => a,
        None => ledger::current_account(pool, &mut tx, project_id, now, site).await?,
    };
    let spend = ledger::global_account(&mut tx, "contract_spend").await?;
    let period_start: time::OffsetDateTime =
        sqlx::query_scalar("SELECT period_start FROM ledger_accounts WHERE id = $1")
            .bind(account)
            .fetch_one(&mut *tx)
            .await?;
    sqlx::query(
        "INSERT INTO ledger_postings (kind, from_account, to_account, amount_minor, project_id, period_start, cluster_id, gpu_model_id, contract_id, actor_id, note) \
         VALUES ('refund', $1, $2, $3, $4, $5, $6, $7, $8, $9, 'contract cancelled before its start')",
    )
    .bind(spend)
    .bind(account)
    .bind(refund)
    .bind(project_id)
    .bind(period_start)
    .bind(cluster_id)
    .bind(model_id)
    .bind(id)
    .bind(actor.id)
    .execute(&mut *tx)
    .await?;
    sqlx::query("UPDATE contracts SET state = 'cancelled', refund_minor = $1, cancelled_by = $2, cancelled_at = $3 WHERE id = $4")
        .bind(refund)
        .bind(actor.id)
        .bind(to_time(now))
        .bind(id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(actor.id),
            action: "contract.cancel",
            entity: "contract",
            entity_id: Some(id),
            node_id: Some(project_id),
            before: Some(json!({"state": "active", "price_minor": price})),
            after: Some(json!({"state": "cancelled", "refund_minor": refund})),
        },
    )
    .await?;
    let contract = sqlx::query_as::<_, Contract>(&format!("{SELECT_CONTRACT} WHERE c.id = $1"))
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(contract)
}

/// The contracts of one project, newest window first (for its page: the caller checks that the
/// viewer may see the project).
///
/// # Errors
/// Database errors.
pub async fn of_project(pool: &PgPool, project: i64) -> Result<Vec<Contract>, sqlx::Error> {
    sqlx::query_as(&format!(
        "{SELECT_CONTRACT} WHERE c.project_id = $1 ORDER BY c.starts_at DESC, c.id DESC"
    ))
    .bind(project)
    .fetch_all(pool)
    .await
}

/// Contracts visible to `actor` (admin and finance: all; leads: their subtree's projects;
/// researchers: their projects), newest window first, optionally filtered by cluster and model.
///
/// # Errors
/// Database errors.
pub async fn visible(
    pool: &PgPool,
    actor: &Account,
    cluster: Option<&str>,
    gpu_model: Option<&str>,
) -> Result<Vec<Contract>, AppError> {
    let all: Vec<Contract> = sqlx::query_as(&format!(
        "{SELECT_CONTRACT} WHERE ($1::text IS NULL OR lower(cl.name) = lower($1)) AND ($2::text IS NULL OR lower(m.name) = lower($2)) ORDER BY c.starts_at DESC, c.id DESC"
    ))
    .bind(cluster)
    .bind(gpu_model)
    .fetch_all(pool)
    .await?;
    if actor.sees_everything() {
        return Ok(all);
    }
    let parents = crate::auth::Parents::load(pool).await?;
    Ok(all
        .into_iter()
        .filter(|c| actor.may_view(c.project_id, &parents))
        .collect())
}

/// One hour of the capacity calendar.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Slot {
    /// Hour start, UTC.
    pub start: jiff::Timestamp,
    /// Most GPUs contracted at an instant of the hour.
    pub contracted: i64,
}

/// The capacity calendar of a cluster and GPU model: installed and contractable GPUs, and per
/// hour of the next 8 weeks (from the current hour) the most GPUs contracted in that hour.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Calendar {
    /// Installed GPUs.
    pub installed: i64,
    /// Contractable GPUs.
    pub contractable: i64,
    /// Hourly slots.
    pub hours: Vec<Slot>,
}

/// Builds the calendar for a cluster and model (ids).
///
/// # Errors
/// Database errors.
pub async fn calendar(
    pool: &PgPool,
    site: &Site,
    cluster: i64,
    model: i64,
    now: jiff::Timestamp,
) -> Result<Calendar, AppError> {
    let installed: i64 = sqlx::query_scalar(&installed_sql())
        .bind(cluster)
        .bind(model)
        .fetch_one(pool)
        .await?;
    let first = now.as_second() - now.as_second().rem_euclid(3600);
    let last = first + HORIZON_SECONDS;
    let mut conn = pool.acquire().await?;
    let existing = windows(
        &mut conn,
        cluster,
        model,
        jiff::Timestamp::from_second(first).unwrap_or(now),
        jiff::Timestamp::from_second(last).unwrap_or(now),
    )
    .await?;
    let hours = (0..HORIZON_SECONDS / 3600)
        .map(|h| {
            let s = first + h * 3600;
            Slot {
                start: jiff::Timestamp::from_second(s).unwrap_or(now),
                contracted: peak_contracted(&existing, s, s + 3600).0,
            }
        })
        .collect();
    Ok(Calendar {
        installed,
        contractable: contractable(installed, site.contractable_percent),
        hours,
    })
}

/// The GPUs of a cluster's model that count for contracts (`$1` cluster, `$2` model): every
/// node but lost ones ([`crate::db::inventory::COUNTS_TOWARDS_CAPACITY`]).
fn installed_sql() -> String {
    format!(
        "SELECT coalesce(sum(n.gpu_count), 0)::bigint FROM nodes n WHERE n.cluster_id = $1 AND n.gpu_model_id = $2 AND {}",
        crate::db::inventory::COUNTS_TOWARDS_CAPACITY
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_is_found_at_window_starts() {
        // Windows [0,10) 4 GPUs, [5,15) 3 GPUs, [10,20) 2 GPUs.
        let w = [(0, 10, 4), (5, 15, 3), (10, 20, 2)];
        assert_eq!(peak_contracted(&w, 0, 20), (7, 5));
        assert_eq!(peak_contracted(&w, 10, 20), (5, 10));
        assert_eq!(peak_contracted(&w, 15, 20), (2, 15));
        assert_eq!(peak_contracted(&w, 20, 30), (0, 20));
        // Half-open: a window ending at t does not overlap one starting at t.
        assert_eq!(peak_contracted(&[(0, 10, 8)], 10, 12), (0, 10));
    }

    #[test]
    fn contractable_rounds_down() {
        assert_eq!(contractable(88, 70), 61);
        assert_eq!(contractable(8, 100), 8);
        assert_eq!(contractable(8, 0), 0);
    }
}
