//! Imported spend of outside services and the mapping rules that assign it to use cases
//! (docs/ai-use-cases.md, "Imports"), and each use case's spend in a month: its linked GPU
//! projects' ledger spend plus the imported lines assigned to it.
//!
//! Amounts of imported lines are kept in millionths of the site's currency (a cent is
//! 10,000): one API line can cost a fraction of a cent. Sums are shown as [`Money`], rounded
//! half away from zero to the cent ([`micro_to_money`]).

use std::collections::HashMap;

use serde_json::json;
use sqlx::PgPool;

use crate::ai::import::{self, Format, Parsed};
use crate::auth::{Account, Parents};
use crate::db::audit::{self, Change};
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::ledger::{Period, to_time};

/// Millionths of a currency unit in one minor unit (a cent).
pub const MICRO_PER_MINOR: i64 = 10_000;

/// Millionths of the currency as money, rounded half away from zero to the minor unit (any
/// `i64`, the extremes included).
pub fn micro_to_money(micro: i64) -> Money {
    let (micro, per) = (i128::from(micro), i128::from(MICRO_PER_MINOR));
    let rounded = if micro >= 0 {
        (micro + per / 2) / per
    } else {
        (micro - per / 2) / per
    };
    // |micro| / 10^4 always fits.
    Money(i64::try_from(rounded).unwrap_or(0))
}

/// A sum PostgreSQL computed in `numeric` (`sum(bigint)`), read as text: as an `i64`, or the
/// nearest end of the range (logged) for a sum stored before imports were bounded
/// ([`import`] keeps every sum of imported lines in range).
fn checked_sum(text: &str, what: &str) -> i64 {
    let wide: i128 = text.trim().parse().unwrap_or(0);
    i64::try_from(wide).unwrap_or_else(|_| {
        tracing::warn!(sum = %text, what, "a sum of imported spend is out of range; shown at the range's end");
        if wide < 0 { i64::MIN } else { i64::MAX }
    })
}

/// Who may import spend and see unassigned lines: admin and finance.
pub fn may_import(me: &Account) -> bool {
    me.sees_everything()
}

/// A mapping rule: lines of `source` (or any format) whose service is `service` (or any) and
/// one of whose scopes is `scope` (or any) belong to the use case.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct Rule {
    /// Id.
    pub id: i64,
    /// The use case.
    pub use_case_id: i64,
    /// Its name.
    pub use_case: String,
    /// `any` or a format code.
    pub source: String,
    /// Service name, '' for any.
    pub service: String,
    /// Project / workspace / cost centre / tag `key=value`, '' for any.
    pub scope: String,
}

impl Rule {
    /// Whether the rule matches a line (names compared case-insensitively).
    pub fn matches(&self, source: &str, service: &str, scopes: &[String]) -> bool {
        (self.source == "any" || self.source == source)
            && (self.service.is_empty() || self.service.eq_ignore_ascii_case(service))
            && (self.scope.is_empty() || scopes.iter().any(|s| s.eq_ignore_ascii_case(&self.scope)))
    }

    /// Whether a line could match both rules as far as the rules' names tell: their formats,
    /// services and scopes are each the same or one of them is "any" (two different scopes
    /// are taken as lines of different owners, though a line may carry both).
    fn overlaps(&self, other: &Self) -> bool {
        let same = |a: &str, b: &str, any: &str| a == any || b == any || a.eq_ignore_ascii_case(b);
        same(&self.source, &other.source, "any")
            && same(&self.service, &other.service, "")
            && same(&self.scope, &other.scope, "")
    }

    /// Rules with both a service and a scope come before those with one of them.
    fn specificity(&self) -> u8 {
        u8::from(!self.service.is_empty())
            + u8::from(!self.scope.is_empty())
            + u8::from(self.source != "any")
    }
}

/// All rules, most specific first, then oldest first: the first that matches a line wins.
///
/// # Errors
/// Database errors.
pub async fn rules(db: impl sqlx::PgExecutor<'_>) -> Result<Vec<Rule>, sqlx::Error> {
    let mut rules: Vec<Rule> = sqlx::query_as(
        "SELECT r.id, r.use_case_id, u.name AS use_case, r.source, r.service, r.scope \
         FROM ai_mapping_rules r JOIN ai_use_cases u ON u.id = r.use_case_id ORDER BY r.id",
    )
    .fetch_all(db)
    .await?;
    rules.sort_by_key(|r| (std::cmp::Reverse(r.specificity()), r.id));
    Ok(rules)
}

/// The use case the first matching rule gives a line.
pub fn assign(rules: &[Rule], source: &str, service: &str, scopes: &[String]) -> Option<i64> {
    rules
        .iter()
        .find(|r| r.matches(source, service, scopes))
        .map(|r| r.use_case_id)
}

/// Adds a mapping rule, audited as `spend_rule.create`, and assigns the unassigned lines it
/// matches. Admin, finance and whoever manages the use case may add rules; a lead's rule may
/// not be more specific than a rule of a use case they do not manage on the same lines
/// ([`Rule::overlaps`]), which it would take from it. Returns the rule's id and how many lines
/// it assigned.
///
/// # Errors
/// 422 for an unknown source, an empty rule or over-long texts; 409 `rule_exists` for a rule
/// already there; 404/403 for the use case; 403 for a lead's rule that would take another
/// team's lines.
pub async fn add_rule(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
    use_case_id: i64,
    source: &str,
    service: &str,
    scope: &str,
) -> Result<(i64, u64), AppError> {
    let (source, service, scope) = (source.trim(), service.trim(), scope.trim());
    if source != "any" && Format::parse(source).is_none() {
        return Err(AppError::invalid("source", i18n::t("ai-err-source")));
    }
    if service.is_empty() && scope.is_empty() {
        return Err(AppError::invalid("scope", i18n::t("ai-err-rule-empty")));
    }
    if service.chars().count() > 200 || scope.chars().count() > 200 {
        return Err(AppError::invalid("scope", i18n::t("ai-err-rule-long")));
    }
    let uc = crate::ai::get(pool, use_case_id).await?;
    if !(me.sees_everything() || uc.may_manage(me, parents)) {
        return Err(AppError::Forbidden(i18n::t("ai-err-rule-forbidden")));
    }
    let mut tx = pool.begin().await?;
    // A lead maps lines to their own use cases, never away from another team's: a rule more
    // specific than another use case's rule on the same lines would win them (finance and
    // admins, who see every use case, may).
    if !me.sees_everything() {
        let new = Rule {
            id: 0,
            use_case_id,
            use_case: uc.name.clone(),
            source: source.to_owned(),
            service: service.to_owned(),
            scope: scope.to_owned(),
        };
        for r in rules(&mut *tx).await? {
            if r.use_case_id == use_case_id
                || !new.overlaps(&r)
                || new.specificity() <= r.specificity()
            {
                continue;
            }
            let theirs = crate::ai::get(pool, r.use_case_id).await?;
            if !theirs.may_manage(me, parents) {
                return Err(AppError::Forbidden(i18n::t1(
                    "ai-err-rule-takes",
                    "use_case",
                    r.use_case,
                )));
            }
        }
    }
    let id: Option<i64> = sqlx::query_scalar(
        "INSERT INTO ai_mapping_rules (use_case_id, source, service, scope, created_by) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (source, service, scope) DO NOTHING RETURNING id",
    )
    .bind(use_case_id)
    .bind(source)
    .bind(service)
    .bind(scope)
    .bind(me.id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(id) = id else {
        return Err(AppError::Refused {
            code: "rule_exists",
            message: i18n::t("ai-err-rule-exists"),
        });
    };
    let all = rules(&mut *tx).await?;
    let unassigned: Vec<(i64, String, String, Vec<String>)> = sqlx::query_as(
        "SELECT id, source, service, scopes FROM ai_spend_rows WHERE use_case_id IS NULL FOR UPDATE",
    )
    .fetch_all(&mut *tx)
    .await?;
    let ids: Vec<i64> = unassigned
        .iter()
        .filter(|(_, src, svc, scopes)| assign(&all, src, svc, scopes) == Some(use_case_id))
        .map(|(id, ..)| *id)
        .collect();
    let assigned = sqlx::query("UPDATE ai_spend_rows SET use_case_id = $1 WHERE id = ANY($2)")
        .bind(use_case_id)
        .bind(&ids)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "spend_rule.create",
            entity: "ai_mapping_rule",
            entity_id: Some(id),
            node_id: Some(uc.owner_node_id),
            before: None,
            after: Some(json!({
                "use_case_id": use_case_id, "source": source, "service": service, "scope": scope,
                "lines_assigned": assigned,
            })),
        },
    )
    .await?;
    tx.commit().await?;
    Ok((id, assigned))
}

/// Parses a conversion rate (site currency per unit of the file's), e.g. `0.92` or `0,92`
/// (separators as [`crate::domain::decimal_parts`] reads them), as millionths.
///
/// # Errors
/// 422 `invalid_input` on `rate` when it is not a positive decimal of at most six decimals.
pub fn parse_rate(text: &str) -> Result<i64, AppError> {
    // At most six decimals: a seventh would be rounded away, not applied.
    let typed = crate::domain::plain_decimal(text).filter(|t| {
        t.split_once('.')
            .is_none_or(|(_, frac)| frac.trim_end_matches('0').len() <= 6)
    });
    match typed.as_deref().map(|t| import::decimal(t, 6)) {
        Some(Ok(r)) if r > 0 => Ok(r),
        _ => Err(AppError::invalid(
            "rate",
            i18n::t1("ai-err-rate", "got", domain::quote(text.trim())),
        )),
    }
}

/// What an import adds (or would add, for a preview) per use case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Share {
    /// Use case id, `None` for unassigned lines.
    pub use_case_id: Option<i64>,
    /// Its name, `unassigned` for none.
    pub use_case: String,
    /// New lines.
    pub lines: usize,
    /// Their amount, millionths of the site's currency.
    pub amount_micro: i64,
}

/// The result of an import or its preview.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// Format code.
    pub format: &'static str,
    /// The file's currency.
    pub currency: String,
    /// The rate applied (site currency per file unit, as given), if any.
    pub rate: Option<String>,
    /// Lines in the file.
    pub lines: usize,
    /// Lines not imported before (added, or to be added).
    pub new_lines: usize,
    /// Lines already imported by an earlier file.
    pub skipped_lines: usize,
    /// Whether this very file was imported before (then nothing is added).
    pub already_imported: bool,
    /// Amount of the new lines in the site's currency, millionths.
    pub amount_micro: i64,
    /// The new lines per use case (unassigned last).
    pub shares: Vec<Share>,
    /// The first and last day the file covers, in the organisation's time zone.
    pub covers: (String, String),
    /// The import's id, once imported.
    pub import_id: Option<i64>,
}

/// Reads a file, converts it to the site's currency and either previews (`commit` false:
/// nothing is written) or imports it in one transaction: the file and its new lines, each
/// assigned by the rules, audited as `spend.import`. The same file again adds nothing
/// (`already_imported`); lines an earlier file brought are skipped.
///
/// # Errors
/// 403 for anyone but admin and finance; 422 `malformed_file` (field `file`) for a file that
/// does not read, naming the record; 422 `currency_mismatch` (field `rate`) for a file in
/// another currency without a rate; 422 on `rate` for a bad rate or a rate given for a file
/// already in the site's currency; database errors. Nothing is written on any error.
#[expect(
    clippy::too_many_arguments,
    reason = "one import's inputs, all distinct"
)]
pub async fn import(
    pool: &PgPool,
    me: &Account,
    site: &crate::config::Site,
    format: Format,
    file_name: &str,
    bytes: &[u8],
    rate: Option<&str>,
    commit: bool,
) -> Result<Outcome, AppError> {
    if !may_import(me) {
        return Err(AppError::Forbidden(i18n::t("ai-spend-only-finance")));
    }
    let parsed: Parsed = import::parse(format, bytes).map_err(|m| AppError::Unprocessable {
        code: "malformed_file",
        field: Some("file"),
        message: i18n::t2("ai-err-malformed", "format", format.label(), "problem", m),
    })?;
    // Every line inside the months the reports cover, or none is imported: a line dated outside
    // them would be stored and assigned where no report, register page or CSV can show it.
    let covered = crate::ledger::reports::covered_periods(jiff::Timestamp::now(), site);
    let (first, last) = (covered[0], covered[covered.len() - 1]);
    if let Some((n, line)) = parsed
        .lines
        .iter()
        .enumerate()
        .find(|(_, l)| l.start < first.start || l.start >= last.end)
    {
        return Err(AppError::Unprocessable {
            code: "malformed_file",
            field: Some("file"),
            message: i18n::ta(
                "ai-import-line-outside",
                &[
                    ("line", &(n + 1)),
                    (
                        "start",
                        &line
                            .start
                            .to_zoned(site.time_zone.clone())
                            .date()
                            .to_string(),
                    ),
                    ("from", &first.label(site)),
                    ("to", &last.label(site)),
                ],
            ),
        });
    }
    let site_currency = site.currency.as_str();
    let rate = rate.map(str::trim).filter(|r| !r.is_empty());
    let rate_micro = match (parsed.currency == site_currency, rate) {
        (true, None) => None,
        (true, Some(_)) => {
            return Err(AppError::invalid(
                "rate",
                i18n::t1("ai-err-rate-not-needed", "currency", site_currency),
            ));
        }
        (false, None) => {
            return Err(AppError::Unprocessable {
                code: "currency_mismatch",
                field: Some("rate"),
                message: i18n::t2(
                    "ai-err-currency-mismatch",
                    "file",
                    &parsed.currency,
                    "currency",
                    site_currency,
                ),
            });
        }
        (false, Some(r)) => Some(parse_rate(r)?),
    };
    // Amounts and their sums in i128, refused (malformed_file, nothing imported) where a line
    // or a sum a report reads would leave i64.
    let too_large = |problem: String| AppError::Unprocessable {
        code: "malformed_file",
        field: Some("file"),
        message: i18n::t2(
            "ai-err-malformed",
            "format",
            format.label(),
            "problem",
            problem,
        ),
    };
    // With a rate, the file's amount as written (kept to 10^-12) times the rate, rounded to
    // the millionth once.
    let convert = |n: usize, line: &import::Line| -> Result<i64, AppError> {
        let v = match rate_micro {
            None => Some(i128::from(line.amount_micro)),
            Some(r) => line.amount_pico.checked_mul(i128::from(r)).map(|v| {
                // 10^-12 units times millionths: 10^-18 units, 10^12 to the millionth.
                let half = 500_000_000_000_i128 * v.signum();
                (v + half) / 1_000_000_000_000
            }),
        };
        v.and_then(|v| i64::try_from(v).ok()).ok_or_else(|| {
            too_large(i18n::ta(
                "ai-import-line-too-large",
                &[
                    ("line", &(n + 1)),
                    ("amount", &domain::quote(&parsed.lines[n].original)),
                ],
            ))
        })
    };
    let file_hash = import::file_hash(bytes);
    let hashes = parsed.line_hashes();
    // Lines stored before the key was made independent of the column order carry the key
    // of that time: a line is known under either.
    let legacy = parsed.legacy_line_hashes();
    let file_name = domain::excerpt(file_name.trim());
    let file_name = if file_name.is_empty() {
        format!("{}-export", format.code())
    } else {
        file_name.chars().take(255).collect()
    };

    let mut tx = pool.begin().await?;
    // One import at a time: two uploads of overlapping files cannot both add a line.
    sqlx::query("SELECT pg_advisory_xact_lock(727275)")
        .execute(&mut *tx)
        .await?;
    let already: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM ai_spend_imports WHERE file_sha256 = $1)")
            .bind(&file_hash)
            .fetch_one(&mut *tx)
            .await?;
    let known: std::collections::HashSet<Vec<u8>> = sqlx::query_scalar(
        "SELECT row_sha256 FROM ai_spend_rows WHERE row_sha256 = ANY($1) OR row_sha256 = ANY($2)",
    )
    .bind(&hashes)
    .bind(&legacy)
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .collect();
    let all_rules = rules(&mut *tx).await?;
    let names: HashMap<i64, String> =
        sqlx::query_as::<_, (i64, String)>("SELECT id, name FROM ai_use_cases")
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect();
    let mut fresh = Vec::new();
    for (n, ((line, hash), old)) in parsed.lines.iter().zip(&hashes).zip(&legacy).enumerate() {
        if already || known.contains(hash) || known.contains(old) {
            continue;
        }
        let uc = assign(&all_rules, format.code(), &line.service, &line.scopes);
        fresh.push((line, hash, uc, convert(n, line)?));
    }
    // Every sum a read computes (per import, per use case, per month, unassigned) is a sum of
    // some of the stored lines: it stays in range while the stored and new lines' absolute
    // amounts together do.
    let new_abs: i128 = fresh.iter().map(|(.., a)| i128::from(*a).abs()).sum();
    let stored_abs: String =
        sqlx::query_scalar("SELECT coalesce(sum(abs(amount_micro)), 0)::text FROM ai_spend_rows")
            .fetch_one(&mut *tx)
            .await?;
    let stored_abs: i128 = stored_abs.trim().parse().unwrap_or(i128::MAX);
    if stored_abs.saturating_add(new_abs) > i128::from(i64::MAX) {
        return Err(too_large(i18n::t1(
            "ai-import-total-too-large",
            "max",
            micro_to_money(i64::MAX).display(site_currency),
        )));
    }
    let mut shares: Vec<Share> = Vec::new();
    for (_, _, uc, amount) in &fresh {
        match shares.iter_mut().find(|s| s.use_case_id == *uc) {
            Some(s) => {
                s.lines += 1;
                s.amount_micro += amount;
            }
            None => shares.push(Share {
                use_case_id: *uc,
                use_case: uc
                    .and_then(|id| names.get(&id).cloned())
                    .unwrap_or_else(|| "unassigned".into()),
                lines: 1,
                amount_micro: *amount,
            }),
        }
    }
    shares.sort_by(|a, b| {
        (a.use_case_id.is_none(), &a.use_case).cmp(&(b.use_case_id.is_none(), &b.use_case))
    });
    let first = parsed.lines.iter().map(|l| l.start).min();
    let last = parsed.lines.iter().map(|l| l.end).max();
    // Days in the organisation's zone, as the months the lines count in.
    let day = |t: Option<jiff::Timestamp>| {
        t.map(|t| t.to_zoned(site.time_zone.clone()).date().to_string())
            .unwrap_or_default()
    };
    let amount_micro: i64 = fresh.iter().map(|(.., a)| *a).sum();
    let mut outcome = Outcome {
        format: format.code(),
        currency: parsed.currency.clone(),
        rate: rate_micro.and(rate.map(str::to_string)),
        lines: parsed.lines.len(),
        new_lines: fresh.len(),
        skipped_lines: parsed.lines.len() - fresh.len(),
        already_imported: already,
        amount_micro,
        shares,
        covers: (
            day(first),
            day(last.map(|l| l - jiff::SignedDuration::from_secs(1))),
        ),
        import_id: None,
    };
    if !commit || already {
        return Ok(outcome);
    }
    let import_id: i64 = sqlx::query_scalar(
        "INSERT INTO ai_spend_imports (source, file_name, file_sha256, currency, rate_micro, rows_new, rows_skipped, amount_micro, imported_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(format.code())
    .bind(&file_name)
    .bind(&file_hash)
    .bind(&parsed.currency)
    .bind(rate_micro)
    .bind(i32::try_from(outcome.new_lines).unwrap_or(i32::MAX))
    .bind(i32::try_from(outcome.skipped_lines).unwrap_or(i32::MAX))
    .bind(amount_micro)
    .bind(me.id)
    .fetch_one(&mut *tx)
    .await?;
    for chunk in fresh.chunks(1000) {
        let mut q = sqlx::QueryBuilder::new(
            "INSERT INTO ai_spend_rows (import_id, row_sha256, source, service, scopes, description, period_start, period_end, amount_micro, original_amount, original_currency, use_case_id) ",
        );
        q.push_values(chunk, |mut b, (line, hash, uc, amount)| {
            b.push_bind(import_id)
                .push_bind((*hash).clone())
                .push_bind(format.code())
                .push_bind(&line.service)
                .push_bind(&line.scopes)
                .push_bind(&line.description)
                .push_bind(to_time(line.start))
                .push_bind(to_time(line.end))
                .push_bind(*amount)
                .push_bind(&line.original)
                .push_bind(&parsed.currency)
                .push_bind(*uc);
        });
        q.build().execute(&mut *tx).await?;
    }
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "spend.import",
            entity: "ai_spend_import",
            entity_id: Some(import_id),
            node_id: None,
            before: None,
            after: Some(json!({
                "format": format.code(), "file_name": file_name, "currency": parsed.currency,
                "rate": outcome.rate, "new_lines": outcome.new_lines,
                "skipped_lines": outcome.skipped_lines, "amount_micro": amount_micro,
            })),
        },
    )
    .await?;
    tx.commit().await?;
    outcome.import_id = Some(import_id);
    Ok(outcome)
}

/// An imported file as listed.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct ImportRow {
    /// Id.
    pub id: i64,
    /// Format code.
    pub source: String,
    /// File name as uploaded.
    pub file_name: String,
    /// The file's currency.
    pub currency: String,
    /// Rate applied, millionths.
    pub rate_micro: Option<i64>,
    /// Lines added.
    pub rows_new: i32,
    /// Lines skipped as already imported.
    pub rows_skipped: i32,
    /// Amount added, millionths of the site's currency.
    pub amount_micro: i64,
    /// Who imported it.
    pub imported_by: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub imported_at: time::OffsetDateTime,
}

/// The newest 200 imports.
///
/// # Errors
/// Database errors.
pub async fn imports(pool: &PgPool) -> Result<Vec<ImportRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT i.id, i.source, i.file_name, i.currency, i.rate_micro, i.rows_new, i.rows_skipped, i.amount_micro, \
                u.name AS imported_by, i.imported_at \
         FROM ai_spend_imports i LEFT JOIN users u ON u.id = i.imported_by ORDER BY i.id DESC LIMIT 200",
    )
    .fetch_all(pool)
    .await
}

/// An imported cost line as listed.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct SpendLine {
    /// Id.
    pub id: i64,
    /// Format code.
    pub source: String,
    /// Service.
    pub service: String,
    /// Scopes rules match.
    pub scopes: Vec<String>,
    /// What was bought.
    pub description: String,
    /// Charge period start.
    #[serde(with = "time::serde::rfc3339")]
    pub period_start: time::OffsetDateTime,
    /// Amount, millionths of the site's currency.
    pub amount_micro: i64,
    /// As written in the file.
    pub original_amount: String,
    /// The file's currency.
    pub original_currency: String,
}

/// Lines no rule matched, newest first (at most 500), and how many there are in all with
/// their amount.
///
/// # Errors
/// Database errors.
pub async fn unassigned(pool: &PgPool) -> Result<(Vec<SpendLine>, i64, i64), sqlx::Error> {
    let lines = sqlx::query_as(
        "SELECT id, source, service, scopes, description, period_start, amount_micro, original_amount, original_currency \
         FROM ai_spend_rows WHERE use_case_id IS NULL ORDER BY period_start DESC, id DESC LIMIT 500",
    )
    .fetch_all(pool)
    .await?;
    let (count, total): (i64, String) = sqlx::query_as(
        "SELECT count(*), coalesce(sum(amount_micro), 0)::text FROM ai_spend_rows WHERE use_case_id IS NULL",
    )
    .fetch_one(pool)
    .await?;
    Ok((lines, count, checked_sum(&total, "unassigned")))
}

/// One use case's spend in a period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Spend {
    /// Linked GPU projects' ledger spend: contracts less refunds plus run usage, minor units.
    pub gpu_minor: i64,
    /// The part of `gpu_minor` that is contracts less refunds (one-off, not a rate), minor
    /// units.
    #[serde(skip)]
    pub gpu_one_off_minor: i64,
    /// Imported lines whose charge period starts in the period, millionths.
    pub imported_micro: i64,
}

impl Spend {
    /// The spend projected to `period`'s end ([`crate::ledger::alerts::forecast`]): contracts
    /// less refunds count once; run usage and imported spend go on at their rate so far.
    #[must_use]
    pub fn forecast(&self, period: Period, now: jiff::Timestamp) -> Money {
        let total = self.total().0;
        Money(crate::ledger::alerts::forecast(
            self.gpu_one_off_minor,
            total.saturating_sub(self.gpu_one_off_minor),
            period,
            now,
        ))
    }

    /// GPU and imported spend together, as money.
    pub fn total(&self) -> Money {
        Money(
            self.gpu_minor
                .saturating_add(micro_to_money(self.imported_micro).0),
        )
    }
}

/// Spend in a period, to be read per use case: each GPU project's ledger spend and each use
/// case's imported spend ([`by_use_case`]).
#[derive(Clone, Debug, Default)]
pub struct SpendBook {
    /// Project id -> contracts less refunds plus run usage, minor units.
    gpu: HashMap<i64, i64>,
    /// Project id -> contracts less refunds alone, minor units.
    one_off: HashMap<i64, i64>,
    /// Use case id -> imported lines whose charge period starts in the period, millionths.
    imported: HashMap<i64, i64>,
}

impl SpendBook {
    fn of(&self, u: &crate::ai::UseCase, hidden: bool) -> Spend {
        let sum = |of: &HashMap<i64, i64>| {
            let projects = |ids: &[i64]| {
                ids.iter()
                    .map(|p| of.get(p).copied().unwrap_or(0))
                    .fold(0i64, i64::saturating_add)
            };
            let seen = projects(&u.project_ids);
            if hidden {
                seen.saturating_add(projects(&u.hidden_project_ids))
            } else {
                seen
            }
        };
        Spend {
            gpu_minor: sum(&self.gpu),
            gpu_one_off_minor: sum(&self.one_off),
            imported_micro: self.imported.get(&u.id).copied().unwrap_or(0),
        }
    }

    /// `u`'s spend as its reader may see it: the GPU spend of the linked projects in
    /// `u.project_ids` (those the reader may see, [`crate::ai::UseCase::as_seen_by`]) and its
    /// imported spend.
    #[must_use]
    pub fn seen(&self, u: &crate::ai::UseCase) -> Spend {
        self.of(u, false)
    }

    /// `u`'s whole spend, the projects hidden from its reader included: what its monthly limit
    /// and stop rule judge.
    #[must_use]
    pub fn whole(&self, u: &crate::ai::UseCase) -> Spend {
        self.of(u, true)
    }
}

/// The spend in `period`: per GPU project linked to a use case, and per use case imported.
///
/// # Errors
/// Database errors.
pub async fn by_use_case(db: &PgPool, period: Period) -> Result<SpendBook, sqlx::Error> {
    let (start, end) = period.bounds();
    let mut out = SpendBook::default();
    let gpu: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT p.project_id, coalesce(sum(CASE p.kind WHEN 'refund' THEN -p.amount_minor ELSE p.amount_minor END), 0)::bigint, \
                coalesce(sum(CASE p.kind WHEN 'refund' THEN -p.amount_minor WHEN 'contract' THEN p.amount_minor ELSE 0 END), 0)::bigint \
         FROM ledger_postings p \
         WHERE p.period_start = $1 AND p.kind IN ('usage', 'contract', 'refund') \
           AND p.project_id IN (SELECT project_id FROM ai_use_case_projects) GROUP BY p.project_id",
    )
    .bind(start)
    .fetch_all(db)
    .await?;
    for (project, all, one_off) in gpu {
        out.gpu.insert(project, all);
        out.one_off.insert(project, one_off);
    }
    let imported: Vec<(i64, String)> = sqlx::query_as(
        "SELECT use_case_id, sum(amount_micro)::text FROM ai_spend_rows \
         WHERE use_case_id IS NOT NULL AND period_start >= $1 AND period_start < $2 GROUP BY use_case_id",
    )
    .bind(start)
    .bind(end)
    .fetch_all(db)
    .await?;
    for (id, micro) in imported {
        out.imported
            .insert(id, checked_sum(&micro, "use case month"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: i64, uc: i64, source: &str, service: &str, scope: &str) -> Rule {
        Rule {
            id,
            use_case_id: uc,
            use_case: String::new(),
            source: source.into(),
            service: service.into(),
            scope: scope.into(),
        }
    }

    /// A rate is applied as typed or refused: a seventh decimal was rounded away while the
    /// answer echoed the rate as typed (0.0000009 applied as 0.000001, 11 % off).
    #[test]
    fn rates_have_at_most_six_decimals() {
        assert_eq!(parse_rate("0.92").unwrap(), 920_000);
        assert_eq!(parse_rate("1.000001").unwrap(), 1_000_001);
        assert_eq!(parse_rate("1.50000000").unwrap(), 1_500_000);
        for bad in ["1.0000004", "1.0000005", "0.0000009", "0", "-1", "x"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    /// A contract bought this month counts once in the forecast; run usage and imported
    /// spend go on at their rate (found by a new-user check: a 160 EUR contract was projected
    /// as if it were spent again every few days).
    #[test]
    fn a_forecast_counts_contracts_once() {
        let start = jiff::Timestamp::from_second(1_000_000).unwrap();
        let period = Period {
            start,
            end: start + jiff::SignedDuration::from_hours(240),
        };
        let now = start + jiff::SignedDuration::from_hours(48);
        let spend = Spend {
            gpu_minor: 1_160,
            gpu_one_off_minor: 160,
            // 2.00 imported: 200 minor units.
            imported_micro: 2_000_000,
        };
        assert_eq!(spend.total(), Money(1_360));
        // 160 once, then (1,000 usage + 200 imported) over 2 of 10 days: x5.
        assert_eq!(spend.forecast(period, now), Money(160 + 6_000));
        let refunded = Spend {
            gpu_minor: 1_000,
            gpu_one_off_minor: 0,
            imported_micro: 0,
        };
        assert_eq!(refunded.forecast(period, now), Money(5_000));
    }

    #[test]
    fn the_most_specific_rule_wins() {
        let mut rules = [
            rule(1, 10, "any", "OpenAI API", ""),
            rule(2, 20, "openai", "OpenAI API", "proj_rag"),
        ];
        rules.sort_by_key(|r| (std::cmp::Reverse(r.specificity()), r.id));
        let scopes = vec!["proj_rag".to_string()];
        assert_eq!(assign(&rules, "openai", "openai api", &scopes), Some(20));
        assert_eq!(assign(&rules, "openai", "OpenAI API", &[]), Some(10));
        assert_eq!(assign(&rules, "focus", "Other", &scopes), None);
    }

    #[test]
    fn micro_rounds_to_the_cent() {
        assert_eq!(micro_to_money(5_000), Money(1));
        assert_eq!(micro_to_money(4_999), Money(0));
        assert_eq!(micro_to_money(-5_000), Money(-1));
        assert_eq!(micro_to_money(123_450_000), Money(12_345));
    }
}
