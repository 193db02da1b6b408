//! Readers for the cost exports people have (docs/ai-use-cases.md, "Imports"); pure, no I/O:
//!
//! - `openai`: the OpenAI organization costs API response (`GET /v1/organization/costs`,
//!   platform.openai.com/docs/api-reference/usage/costs): `data[]` daily buckets with
//!   `start_time`/`end_time` (Unix seconds) and `results[]` with `amount.value` (a number in
//!   the currency's unit), `amount.currency`, `line_item`, `project_id`.
//! - `anthropic`: the Anthropic Admin API cost report (`GET /v1/organizations/cost_report`):
//!   `data[]` buckets with `starting_at`/`ending_at` (RFC 3339) and `results[]` with `amount`,
//!   a decimal string in the currency's lowest unit (cents), `currency`, `workspace_id`,
//!   `description`, `model`.
//! - `github`: the GitHub billing usage report CSV (`date, product, sku, quantity, unit_type,
//!   applied_cost_per_quantity, gross_amount, discount_amount, net_amount`, with
//!   `cost_center_name` or `organization`); amounts in USD, the currency GitHub bills in.
//! - `focus`: a FOCUS 1.x CSV (focus.finops.org): `BilledCost`, `BillingCurrency`,
//!   `ChargePeriodStart`, `ChargePeriodEnd`, `ServiceName`, `SubAccountId`, `Tags` (a JSON
//!   object), `ChargeDescription`.
//!
//! Every reader turns a file into [`Line`]s with the amount in millionths of the file's
//! currency, or refuses the whole file with a message that names the record and field.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::i18n;

/// The largest number of cost lines in one file.
pub const MAX_LINES: usize = 100_000;

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenAI organization costs API JSON.
    OpenAi,
    /// Anthropic Admin API cost report JSON.
    Anthropic,
    /// GitHub billing usage report CSV.
    GitHub,
    /// FOCUS 1.x CSV.
    Focus,
}

impl Format {
    /// All formats, in the order forms offer them.
    pub const ALL: [Self; 4] = [Self::Focus, Self::OpenAi, Self::Anthropic, Self::GitHub];

    /// Parses `openai`, `anthropic`, `github` or `focus`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Some(Self::OpenAi),
            "anthropic" => Some(Self::Anthropic),
            "github" => Some(Self::GitHub),
            "focus" => Some(Self::Focus),
            _ => None,
        }
    }

    /// The stored code.
    pub fn code(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::GitHub => "github",
            Self::Focus => "focus",
        }
    }

    /// A label for people, in the current language.
    pub fn label(self) -> String {
        crate::i18n::t(match self {
            Self::OpenAi => "ai-format-openai",
            Self::Anthropic => "ai-format-anthropic",
            Self::GitHub => "ai-format-github",
            Self::Focus => "ai-format-focus",
        })
    }
}

/// One cost line of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The service (`OpenAI API`, `Anthropic API`, `GitHub Copilot`, FOCUS `ServiceName`).
    pub service: String,
    /// The values mapping rules match: project, workspace, cost centre, organization,
    /// sub-account, tags as `key=value`.
    pub scopes: Vec<String>,
    /// What was bought (line item, model and token type, SKU, charge description).
    pub description: String,
    /// Start of the charge period.
    pub start: jiff::Timestamp,
    /// End of the charge period (at or after the start).
    pub end: jiff::Timestamp,
    /// Amount in millionths of the file's currency (may be negative: a credit).
    pub amount_micro: i64,
    /// The same in 10^-12 of the file's currency: what a conversion with a rate multiplies,
    /// so the converted amount is rounded to the millionth once, not twice.
    pub amount_pico: i128,
    /// The amount as written in the file.
    pub original: String,
    /// A canonical text of the whole record, hashed for idempotency.
    pub key: String,
    /// The key earlier releases gave a CSV line (its columns in the file's order, empty ones
    /// included), so lines imported before are still recognised; `None` where it is `key`.
    pub legacy_key: Option<String>,
}

/// A file read.
#[derive(Clone, Debug)]
pub struct Parsed {
    /// Its format.
    pub format: Format,
    /// Its one currency, ISO 4217 upper case.
    pub currency: String,
    /// Its cost lines.
    pub lines: Vec<Line>,
}

impl Parsed {
    /// The SHA-256 of each line: its format, canonical record and how many identical records
    /// came before it in the file (so two equal lines of one file are two lines, and a line
    /// seen in an earlier file is recognised).
    pub fn line_hashes(&self) -> Vec<Vec<u8>> {
        self.hashes(|l| &l.key)
    }

    /// [`Self::line_hashes`] of the keys earlier releases gave the lines ([`Line::legacy_key`]).
    pub fn legacy_line_hashes(&self) -> Vec<Vec<u8>> {
        self.hashes(|l| l.legacy_key.as_deref().unwrap_or(&l.key))
    }

    fn hashes<'a>(&'a self, key: impl Fn(&'a Line) -> &'a str) -> Vec<Vec<u8>> {
        let mut seen: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        self.lines
            .iter()
            .map(|l| {
                let k = key(l);
                let n = seen.entry(k).or_default();
                let mut h = Sha256::new();
                h.update(self.format.code().as_bytes());
                h.update([0]);
                h.update(k.as_bytes());
                h.update([0]);
                h.update(n.to_string().as_bytes());
                *n += 1;
                h.finalize().to_vec()
            })
            .collect()
    }
}

/// The SHA-256 of a file's bytes.
pub fn file_hash(bytes: &[u8]) -> Vec<u8> {
    Sha256::digest(bytes).to_vec()
}

/// Reads `bytes` as `format`.
///
/// # Errors
/// A message naming the record and field at fault: not UTF-8, not JSON or CSV, a missing
/// column or field, an amount or instant that does not parse, several currencies, no lines,
/// over [`MAX_LINES`].
pub fn parse(format: Format, bytes: &[u8]) -> Result<Parsed, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        i18n::t1(
            "ai-import-not-utf8",
            "byte",
            i18n::format::count(e.valid_up_to() as i64),
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (currency, lines) = match format {
        Format::OpenAi => openai(text)?,
        Format::Anthropic => anthropic(text)?,
        Format::GitHub => github(text)?,
        Format::Focus => focus(text)?,
    };
    if lines.is_empty() {
        return Err(i18n::t("ai-import-no-lines"));
    }
    // The text rule of every other input (docs/design.md): a control character in a service,
    // scope or description would be stored, shown as if absent, and match no mapping rule.
    for (i, l) in lines.iter().enumerate() {
        let texts = std::iter::once(&l.service)
            .chain(&l.scopes)
            .chain(std::iter::once(&l.description));
        for t in texts {
            if let Some(c) = crate::domain::control_char(t, false) {
                return Err(i18n::ta(
                    "ai-import-control-char",
                    &[
                        ("line", &i18n::format::count(i as i64 + 1)),
                        ("code", &format!("{:04X}", u32::from(c.character))),
                        (
                            "text",
                            &crate::domain::excerpt(&t.replace(
                                |c: char| {
                                    crate::domain::control_char(c.encode_utf8(&mut [0; 4]), false)
                                        .is_some()
                                },
                                "?",
                            )),
                        ),
                    ],
                ));
            }
        }
    }
    if lines.len() > MAX_LINES {
        return Err(i18n::t2(
            "ai-import-too-many",
            "count",
            i18n::format::count(lines.len() as i64),
            "max",
            i18n::format::count(MAX_LINES as i64),
        ));
    }
    Ok(Parsed {
        format,
        currency: currency.unwrap_or_else(|| "USD".into()),
        lines,
    })
}

/// Parses a decimal number (`12.5`, `-0.000123`, `1.5e-7`) as an integer of
/// `10^-decimals` units, rounding half away from zero.
///
/// # Errors
/// Not a number, or too large.
pub fn decimal(text: &str, decimals: i32) -> Result<i64, String> {
    decimal_wide(text, decimals).and_then(|v| i64::try_from(v).map_err(|_| too_large(text.trim())))
}

/// [`decimal`] as a 128-bit integer, for amounts kept beyond the millionth until they are
/// converted with a rate and rounded once ([`Line::amount_pico`]).
///
/// # Errors
/// Not a number, or too large.
pub fn decimal_wide(text: &str, decimals: i32) -> Result<i128, String> {
    let t = text.trim();
    let bad = || i18n::t1("ai-import-not-number", "got", crate::domain::quote(t));
    let (negative, t2) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (mantissa, exp) = match t2.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().map_err(|_| bad())?),
        None => (t2, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty()
        || !int.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
        || exp.abs() > 30
    {
        return Err(bad());
    }
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let point = int.len() as i64 + i64::from(exp) + i64::from(decimals);
    let mut whole: i128 = 0;
    for i in 0..point.max(0) {
        let d = usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0);
        whole = whole
            .checked_mul(10)
            .and_then(|w| w.checked_add(i128::from(d)))
            .filter(|w| *w < i128::MAX / 100)
            .ok_or_else(|| too_large(t))?;
    }
    let next = if point >= 0 {
        usize::try_from(point)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0)
    } else {
        0
    };
    if next >= 5 {
        whole += 1;
    }
    Ok(if negative { -whole } else { whole })
}

fn too_large(t: &str) -> String {
    i18n::t1("ai-import-too-large", "got", crate::domain::quote(t))
}

/// Parses an instant: RFC 3339 (`2026-11-01T00:00:00Z`), a date-time without offset (UTC),
/// or a date (its midnight UTC).
///
/// # Errors
/// Anything else.
pub fn instant(text: &str) -> Result<jiff::Timestamp, String> {
    let t = text.trim();
    if let Ok(ts) = t.parse::<jiff::Timestamp>() {
        return Ok(ts);
    }
    if let Ok(dt) = t.parse::<jiff::civil::DateTime>() {
        return dt
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map(|z| z.timestamp())
            .map_err(|e| e.to_string());
    }
    if let Ok(d) = t.parse::<jiff::civil::Date>() {
        return d
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map(|z| z.timestamp())
            .map_err(|e| e.to_string());
    }
    Err(i18n::t1(
        "ai-import-not-instant",
        "got",
        crate::domain::quote(t),
    ))
}

/// Records one currency per file: the first seen, then a refusal of any other.
fn one_currency(current: &mut Option<String>, code: &str, at: &str) -> Result<(), String> {
    let code = code.trim().to_ascii_uppercase();
    if code.len() != 3 || !code.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(i18n::t2(
            "ai-import-not-currency",
            "at",
            at,
            "got",
            crate::domain::quote(&code),
        ));
    }
    match current {
        Some(c) if *c != code => Err(i18n::ta(
            "ai-import-mixed",
            &[("at", &at), ("first", c), ("second", &code)],
        )),
        Some(_) => Ok(()),
        None => {
            *current = Some(code);
            Ok(())
        }
    }
}

/// "`at`: `end` is before `start`".
fn before(at: &str, end: &str, start: &str) -> String {
    i18n::ta(
        "ai-import-before",
        &[("at", &at), ("end", &end), ("start", &start)],
    )
}

/// "`at`: `field` is empty".
fn empty(at: &str, field: &str) -> String {
    i18n::t2("ai-import-empty", "at", at, "field", field)
}

fn json_doc(text: &str) -> Result<Vec<Value>, String> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| i18n::t1("ai-import-not-json", "error", e.to_string()))?;
    let data = match &doc {
        Value::Object(m) => m.get("data"),
        _ => None,
    };
    match data {
        Some(Value::Array(buckets)) => Ok(buckets.clone()),
        _ => Err(i18n::t("ai-import-no-data")),
    }
}

fn str_field<'a>(v: &'a Value, field: &str, at: &str) -> Result<&'a str, String> {
    v.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| i18n::t1("ai-import-not-text", "field", format!("{at}.{field}")))
}

fn opt_str(v: &Value, field: &str) -> Option<String> {
    v.get(field)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn results<'a>(bucket: &'a Value, at: &str) -> Result<&'a Vec<Value>, String> {
    bucket
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| i18n::t1("ai-import-not-list", "field", format!("{at}.results")))
}

fn canonical(parts: &[&Value]) -> String {
    parts
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("\u{1f}")
}

fn openai(text: &str) -> Result<(Option<String>, Vec<Line>), String> {
    let mut currency = None;
    let mut lines = Vec::new();
    for (b, bucket) in json_doc(text)?.iter().enumerate() {
        let at = format!("data[{b}]");
        let time = |f: &str| -> Result<jiff::Timestamp, String> {
            bucket
                .get(f)
                .and_then(Value::as_i64)
                .and_then(|s| jiff::Timestamp::from_second(s).ok())
                .ok_or_else(|| i18n::t1("ai-import-not-unix", "field", format!("{at}.{f}")))
        };
        let (start, end) = (time("start_time")?, time("end_time")?);
        if end < start {
            return Err(before(&at, "end_time", "start_time"));
        }
        for (r, result) in results(bucket, &at)?.iter().enumerate() {
            let at = format!("{at}.results[{r}]");
            let amount = result
                .get("amount")
                .ok_or_else(|| i18n::t1("ai-import-missing", "field", format!("{at}.amount")))?;
            let value = match amount.get("value") {
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::String(s)) => s.clone(),
                _ => {
                    return Err(i18n::t1(
                        "ai-import-not-number-field",
                        "field",
                        format!("{at}.amount.value"),
                    ));
                }
            };
            let amount_micro = decimal(&value, 6).map_err(|e| format!("{at}.amount.value: {e}"))?;
            let amount_pico =
                decimal_wide(&value, 12).map_err(|e| format!("{at}.amount.value: {e}"))?;
            one_currency(
                &mut currency,
                str_field(amount, "currency", &format!("{at}.amount"))?,
                &at,
            )?;
            let project = opt_str(result, "project_id");
            lines.push(Line {
                service: "OpenAI API".into(),
                scopes: project.into_iter().collect(),
                description: opt_str(result, "line_item")
                    .unwrap_or_else(|| "(no line item)".into()),
                start,
                end,
                amount_micro,
                amount_pico,
                original: value,
                key: canonical(&[
                    bucket.get("start_time").unwrap_or(&Value::Null),
                    bucket.get("end_time").unwrap_or(&Value::Null),
                    result,
                ]),
                legacy_key: None,
            });
        }
    }
    Ok((currency, lines))
}

fn anthropic(text: &str) -> Result<(Option<String>, Vec<Line>), String> {
    let mut currency = None;
    let mut lines = Vec::new();
    for (b, bucket) in json_doc(text)?.iter().enumerate() {
        let at = format!("data[{b}]");
        let start = instant(str_field(bucket, "starting_at", &at)?)
            .map_err(|e| format!("{at}.starting_at: {e}"))?;
        let end = instant(str_field(bucket, "ending_at", &at)?)
            .map_err(|e| format!("{at}.ending_at: {e}"))?;
        if end < start {
            return Err(before(&at, "ending_at", "starting_at"));
        }
        for (r, result) in results(bucket, &at)?.iter().enumerate() {
            let at = format!("{at}.results[{r}]");
            // A decimal string in the currency's lowest unit: cents, so 10^4 millionths each.
            let cents = match result.get("amount") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => {
                    return Err(i18n::t1(
                        "ai-import-not-decimal-string",
                        "field",
                        format!("{at}.amount"),
                    ));
                }
            };
            let amount_micro = decimal(&cents, 4).map_err(|e| format!("{at}.amount: {e}"))?;
            let amount_pico = decimal_wide(&cents, 10).map_err(|e| format!("{at}.amount: {e}"))?;
            one_currency(&mut currency, str_field(result, "currency", &at)?, &at)?;
            let workspace = opt_str(result, "workspace_id");
            let description = match (opt_str(result, "description"), opt_str(result, "model")) {
                (Some(d), _) => d,
                (None, Some(m)) => m,
                (None, None) => opt_str(result, "cost_type").unwrap_or_else(|| "(cost)".into()),
            };
            lines.push(Line {
                service: "Anthropic API".into(),
                scopes: workspace.into_iter().collect(),
                description,
                start,
                end,
                amount_micro,
                amount_pico,
                original: format!("{cents} (cents)"),
                key: canonical(&[
                    bucket.get("starting_at").unwrap_or(&Value::Null),
                    bucket.get("ending_at").unwrap_or(&Value::Null),
                    result,
                ]),
                legacy_key: None,
            });
        }
    }
    Ok((currency, lines))
}

/// A CSV file's records with a column lookup that names missing columns.
struct Csv {
    headers: Vec<String>,
    /// Records with their line number in the file.
    records: Vec<(u64, csv::StringRecord)>,
}

impl Csv {
    fn read(text: &str) -> Result<Self, String> {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(false)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let headers: Vec<String> = reader
            .headers()
            .map_err(|e| i18n::t1("ai-import-not-csv", "error", e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect();
        // A column named twice: which one holds the cost is a guess, so the file is refused.
        for (i, h) in headers.iter().enumerate() {
            if headers[..i]
                .iter()
                .any(|o| o.trim().eq_ignore_ascii_case(h.trim()))
            {
                return Err(i18n::t1(
                    "ai-import-column-twice",
                    "column",
                    crate::domain::excerpt(h.trim()),
                ));
            }
        }
        let mut records = Vec::new();
        for r in reader.records() {
            let r = r.map_err(|e| match e.position() {
                Some(p) => i18n::t2(
                    "ai-import-bad-csv-line",
                    "line",
                    i18n::format::count(p.line() as i64),
                    "error",
                    e.to_string(),
                ),
                None => i18n::t1("ai-import-bad-csv", "error", e.to_string()),
            })?;
            if r.iter().all(str::is_empty) {
                continue;
            }
            records.push((r.position().map_or(0, csv::Position::line), r));
            if records.len() > MAX_LINES {
                break;
            }
        }
        Ok(Self { headers, records })
    }

    fn column(&self, name: &str) -> Option<usize> {
        self.headers
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
    }

    fn require(&self, name: &str) -> Result<usize, String> {
        self.column(name).ok_or_else(|| {
            i18n::t2(
                "ai-import-no-column",
                "column",
                name,
                "columns",
                crate::domain::excerpt(&self.headers.join(", ")),
            )
        })
    }

    /// A record's key: its non-empty cells as `column=value`, columns in lower case and sorted,
    /// so a later export of the same line with another column order or an added empty column
    /// is the same line.
    fn key(&self, r: &csv::StringRecord) -> String {
        let mut cells: Vec<String> = self
            .headers
            .iter()
            .zip(r.iter())
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(h, v)| format!("{}={}", h.trim().to_lowercase(), v.trim()))
            .collect();
        cells.sort_unstable();
        cells.join("\u{1f}")
    }

    /// The key earlier releases gave a record: every cell in the file's order.
    fn legacy_key(&self, r: &csv::StringRecord) -> String {
        self.headers
            .iter()
            .zip(r.iter())
            .map(|(h, v)| format!("{h}={v}"))
            .collect::<Vec<_>>()
            .join("\u{1f}")
    }
}

fn get(r: &csv::StringRecord, i: Option<usize>) -> Option<String> {
    i.and_then(|i| r.get(i))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn github(text: &str) -> Result<(Option<String>, Vec<Line>), String> {
    let csv = Csv::read(text)?;
    let (date, product, sku, net) = (
        csv.require("date")?,
        csv.require("product")?,
        csv.require("sku")?,
        csv.require("net_amount")?,
    );
    let (quantity, unit) = (csv.column("quantity"), csv.column("unit_type"));
    let scope_cols: Vec<(&str, Option<usize>)> = ["cost_center_name", "organization", "repository"]
        .iter()
        .map(|c| (*c, csv.column(c)))
        .collect();
    if scope_cols[0].1.is_none() && scope_cols[1].1.is_none() {
        return Err(i18n::t("ai-import-no-scope-column"));
    }
    let mut lines = Vec::new();
    for (line, r) in &csv.records {
        let at = i18n::t1("ai-import-line", "line", i18n::format::count(*line as i64));
        let day = get(r, Some(date)).ok_or_else(|| empty(&at, "date"))?;
        let start = instant(&day).map_err(|e| format!("{at}: date: {e}"))?;
        let end = start + jiff::SignedDuration::from_hours(24);
        let amount = get(r, Some(net)).ok_or_else(|| empty(&at, "net_amount"))?;
        let amount_micro = decimal(&amount, 6).map_err(|e| format!("{at}: net_amount: {e}"))?;
        let amount_pico =
            decimal_wide(&amount, 12).map_err(|e| format!("{at}: net_amount: {e}"))?;
        let product = get(r, Some(product)).ok_or_else(|| empty(&at, "product"))?;
        let service = if product.eq_ignore_ascii_case("copilot") {
            "GitHub Copilot".to_string()
        } else {
            format!("GitHub {product}")
        };
        let sku = get(r, Some(sku)).unwrap_or_default();
        let description = match (get(r, quantity), get(r, unit)) {
            (Some(q), Some(u)) => format!("{sku} ({q} {u})"),
            _ => sku,
        };
        lines.push(Line {
            service,
            scopes: scope_cols.iter().filter_map(|(_, c)| get(r, *c)).collect(),
            description,
            start,
            end,
            amount_micro,
            amount_pico,
            original: amount,
            key: csv.key(r),
            legacy_key: Some(csv.legacy_key(r)),
        });
    }
    Ok((Some("USD".into()), lines))
}

fn focus(text: &str) -> Result<(Option<String>, Vec<Line>), String> {
    let csv = Csv::read(text)?;
    let (cost, cur, start_c, end_c, service_c) = (
        csv.require("BilledCost")?,
        csv.require("BillingCurrency")?,
        csv.require("ChargePeriodStart")?,
        csv.require("ChargePeriodEnd")?,
        csv.require("ServiceName")?,
    );
    let (sub, tags_c, desc_c) = (
        csv.column("SubAccountId"),
        csv.column("Tags"),
        csv.column("ChargeDescription"),
    );
    let mut currency = None;
    let mut lines = Vec::new();
    for (line, r) in &csv.records {
        let at = i18n::t1("ai-import-line", "line", i18n::format::count(*line as i64));
        let amount = get(r, Some(cost)).ok_or_else(|| empty(&at, "BilledCost"))?;
        let amount_micro = decimal(&amount, 6).map_err(|e| format!("{at}: BilledCost: {e}"))?;
        let amount_pico =
            decimal_wide(&amount, 12).map_err(|e| format!("{at}: BilledCost: {e}"))?;
        one_currency(
            &mut currency,
            &get(r, Some(cur)).ok_or_else(|| empty(&at, "BillingCurrency"))?,
            &at,
        )?;
        let start = instant(&get(r, Some(start_c)).unwrap_or_default())
            .map_err(|e| format!("{at}: ChargePeriodStart: {e}"))?;
        let end = instant(&get(r, Some(end_c)).unwrap_or_default())
            .map_err(|e| format!("{at}: ChargePeriodEnd: {e}"))?;
        if end < start {
            return Err(before(&at, "ChargePeriodEnd", "ChargePeriodStart"));
        }
        let service = get(r, Some(service_c)).ok_or_else(|| empty(&at, "ServiceName"))?;
        let mut scopes: Vec<String> = get(r, sub).into_iter().collect();
        if let Some(tags) = get(r, tags_c) {
            let parsed: Value = serde_json::from_str(&tags)
                .map_err(|_| i18n::t1("ai-import-tags-example", "at", &at))?;
            let Value::Object(map) = parsed else {
                return Err(i18n::t1("ai-import-tags", "at", &at));
            };
            for (k, v) in map {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                scopes.push(format!("{k}={v}"));
            }
        }
        lines.push(Line {
            description: get(r, desc_c).unwrap_or_else(|| service.clone()),
            service,
            scopes,
            start,
            end,
            amount_micro,
            amount_pico,
            original: amount,
            key: csv.key(r),
            legacy_key: Some(csv.legacy_key(r)),
        });
    }
    Ok((currency, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_round_half_away_from_zero() {
        assert_eq!(decimal("12.5", 6), Ok(12_500_000));
        assert_eq!(decimal("0.0000005", 6), Ok(1));
        assert_eq!(decimal("0.0000004", 6), Ok(0));
        assert_eq!(decimal("-1.25", 1), Ok(-13));
        assert_eq!(decimal("1.5e-7", 6), Ok(0));
        assert_eq!(decimal("2.5E-6", 6), Ok(3));
        assert_eq!(decimal("3e2", 0), Ok(300));
        assert_eq!(decimal("123.45", 4), Ok(1_234_500));
        assert_eq!(decimal(".5", 0), Ok(1));
        assert!(decimal("1,5", 2).is_err());
        assert!(decimal("abc", 2).is_err());
        assert!(decimal("", 2).is_err());
        assert!(decimal("99999999999999999999", 6).is_err());
    }

    #[test]
    fn instants() {
        assert_eq!(
            instant("2026-11-01").unwrap(),
            "2026-11-01T00:00:00Z".parse::<jiff::Timestamp>().unwrap()
        );
        assert_eq!(
            instant("2026-11-01T02:00:00+02:00").unwrap(),
            "2026-11-01T00:00:00Z".parse::<jiff::Timestamp>().unwrap()
        );
        assert!(instant("yesterday").is_err());
    }

    #[test]
    fn equal_lines_of_one_file_are_two_lines() {
        let text = "date,product,sku,quantity,unit_type,applied_cost_per_quantity,gross_amount,discount_amount,net_amount,organization\n\
                    2026-11-02,copilot,Copilot Business,1,user-months,19,19,0,19,acme\n\
                    2026-11-02,copilot,Copilot Business,1,user-months,19,19,0,19,acme\n";
        let p = parse(Format::GitHub, text.as_bytes()).unwrap();
        let h = p.line_hashes();
        assert_eq!(h.len(), 2);
        assert_ne!(h[0], h[1]);
        assert_eq!(p.lines[0].amount_micro, 19_000_000);
        assert_eq!(p.lines[0].service, "GitHub Copilot");
        assert_eq!(p.lines[0].scopes, vec!["acme".to_string()]);
    }

    /// A later export of the same line with its columns in another order, or with an added
    /// empty column, is the same line: importing it again adds nothing.
    #[test]
    fn a_line_is_the_same_whatever_the_column_order_or_an_added_empty_column() {
        let one = "date,product,sku,quantity,unit_type,applied_cost_per_quantity,gross_amount,discount_amount,net_amount,organization\n\
                   2026-11-02,copilot,Copilot Business,1,user-months,19,19,0,19,acme\n";
        let other = "organization,net_amount,date,product,sku,quantity,unit_type,applied_cost_per_quantity,gross_amount,discount_amount,InvoiceId\n\
                     acme,19,2026-11-02,copilot,Copilot Business,1,user-months,19,19,0,\n";
        let a = parse(Format::GitHub, one.as_bytes()).unwrap();
        let b = parse(Format::GitHub, other.as_bytes()).unwrap();
        assert_eq!(a.line_hashes(), b.line_hashes());
        // The key of earlier releases still names the first file's line as it was stored.
        assert_ne!(a.legacy_line_hashes(), a.line_hashes());
        assert_ne!(a.legacy_line_hashes(), b.legacy_line_hashes());
        let changed = one.replace(",19,acme", ",20,acme");
        let c = parse(Format::GitHub, changed.as_bytes()).unwrap();
        assert_ne!(a.line_hashes(), c.line_hashes());
    }

    /// A column named twice (in any case) refuses the file: which one holds the cost would be
    /// a guess.
    #[test]
    fn a_column_named_twice_refuses_the_file() {
        let text = "date,product,sku,quantity,unit_type,applied_cost_per_quantity,gross_amount,discount_amount,net_amount,organization,Net_Amount\n\
                    2026-11-02,copilot,Copilot Business,1,user-months,19,19,0,19,acme,20\n";
        let e = parse(Format::GitHub, text.as_bytes()).unwrap_err();
        assert!(e.contains("Net_Amount") && e.contains("twice"), "{e}");
    }

    /// A control character in a service, scope or description refuses the file, naming the
    /// line: stored, it would show as if absent and match no mapping rule.
    #[test]
    fn control_characters_refuse_the_file_naming_the_line() {
        let head = "date,product,sku,quantity,unit_type,applied_cost_per_quantity,gross_amount,discount_amount,net_amount,organization\n\
                    2026-11-02,copilot,Copilot Business,1,user-months,19,19,0,19,acme\n";
        for bad in [
            "2026-11-03,copilot,Copilot\u{1}Business,1,user-months,19,19,0,19,acme\n",
            "2026-11-03,copilot,Copilot Business,1,user-months,19,19,0,19,ac\u{7f}me\n",
        ] {
            let e = parse(Format::GitHub, format!("{head}{bad}").as_bytes()).unwrap_err();
            assert!(
                e.contains("cost line 2") && e.contains("control character"),
                "{e}"
            );
        }
        assert!(parse(Format::GitHub, head.as_bytes()).is_ok());
    }
}
