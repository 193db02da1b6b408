//! Domain values with parsing constructors, so invalid values cannot travel: shares, money,
//! GPU counts, names, and the entitlement arithmetic.

use std::fmt;

use crate::i18n::{t, t1};

/// A share of the parent node, in basis points (1 bp = 0.01%; 10,000 = 100%).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Share(u16);

/// Why a share did not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShareError {
    /// Empty input.
    #[error("enter a share as a percentage, for example 25 or 12.5")]
    Empty,
    /// Not a decimal number.
    #[error("{} is not a number; enter a percentage such as 25 or 12.5", quote(.0))]
    NotANumber(String),
    /// Below zero.
    #[error("a share cannot be negative (got {})", excerpt(.0))]
    Negative(String),
    /// Above 100%.
    #[error("a share cannot exceed 100% (got {})", excerpt(.0))]
    OverHundred(String),
    /// More than two decimals.
    #[error("a share has at most two decimals (got {})", excerpt(.0))]
    TooPrecise(String),
}

impl ShareError {
    /// The message in the current language (the API's English is [`fmt::Display`]'s, the
    /// same words).
    pub fn message(&self) -> String {
        use crate::i18n::{t, t1};
        match self {
            Self::Empty => t("node-share-empty"),
            Self::NotANumber(got) => t1("node-share-not-a-number", "got", quote(got)),
            Self::Negative(got) => t1("node-share-negative", "got", excerpt(got)),
            Self::OverHundred(got) => t1("node-share-over-hundred", "got", excerpt(got)),
            Self::TooPrecise(got) => t1("node-share-too-precise", "got", excerpt(got)),
        }
    }
}

impl Share {
    /// 100%.
    pub const FULL: Share = Share(10_000);

    /// From basis points; `None` above 10,000.
    pub fn from_bp(bp: u16) -> Option<Self> {
        (bp <= 10_000).then_some(Self(bp))
    }

    /// Parses a percentage such as `25`, `12.5`, `12,5`, `33.33` or `40%` (at most two
    /// decimals; separators as [`decimal_parts`] reads them).
    ///
    /// # Errors
    /// Empty, non-numeric, negative, over 100 or more than two decimals.
    pub fn parse_percent(input: &str) -> Result<Self, ShareError> {
        let s = input.trim().trim_end_matches('%').trim();
        if s.is_empty() {
            return Err(ShareError::Empty);
        }
        if let Some(rest) = s.strip_prefix('-') {
            if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return Err(ShareError::Negative(input.trim().to_string()));
            }
            return Err(ShareError::NotANumber(input.trim().to_string()));
        }
        let Some((whole, frac)) = decimal_parts(s) else {
            return Err(ShareError::NotANumber(input.trim().to_string()));
        };
        if frac.len() > 2 {
            return Err(ShareError::TooPrecise(input.trim().to_string()));
        }
        let whole_trimmed = whole.trim_start_matches('0');
        if whole_trimmed.len() > 3 {
            return Err(ShareError::OverHundred(input.trim().to_string()));
        }
        let w: u32 = if whole_trimmed.is_empty() {
            0
        } else {
            whole_trimmed.parse().unwrap_or(u32::MAX)
        };
        let f: u32 = format!("{frac:0<2}").parse().unwrap_or(0);
        let bp = w * 100 + f;
        if bp > 10_000 {
            return Err(ShareError::OverHundred(input.trim().to_string()));
        }
        Ok(Self(bp as u16))
    }

    /// Basis points, 0..=10,000.
    pub fn bp(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Share {
    /// Formats as a percentage without trailing zeros: `25%`, `12.5%`, `33.33%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bp(i64::from(self.0)))?;
        f.write_str("%")
    }
}

/// Formats basis points as a percentage number without the sign: 1250 -> `12.5`.
pub fn format_bp(bp: i64) -> String {
    let whole = bp / 100;
    let frac = (bp % 100).abs();
    match frac {
        0 => whole.to_string(),
        f if f % 10 == 0 => format!("{whole}.{}", f / 10),
        f => format!("{whole}.{f:02}"),
    }
}

/// Reads a typed non-negative decimal number into its whole and fraction digits, accepting
/// both conventions people type: `1,234.5` (English) and `1.234,5` (Spanish, Basque).
///
/// Rules (docs/i18n.md): spaces and `_` are ignored. When both `.` and `,` occur, the last
/// one is the decimal separator and the other groups thousands. When one of them occurs more
/// than once, it groups thousands. When one occurs once, it is the decimal separator, except
/// when exactly three digits follow it: then the page's language decides (`,` groups in
/// English, `.` in Spanish and Basque), so `1.234` is one thousand two hundred and
/// thirty-four on a Spanish page and a number with three decimals on an English one. Groups
/// must be of exactly three digits after the first (one to three).
///
/// Returns `None` when the text is not a number by these rules (letters, a sign, misplaced
/// separators); the whole part may be empty (`.5`).
pub fn decimal_parts(input: &str) -> Option<(String, String)> {
    let s: String = input
        .trim()
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '\u{a0}' | '\u{202f}'))
        .collect();
    let is_sep = |c: char| c == '.' || c == ',';
    let last = s.rfind(is_sep);
    let decimal = match last {
        None => None,
        Some(at) => {
            let l = s[at..].chars().next()?;
            let other = if l == '.' { ',' } else { '.' };
            let count = s.matches(l).count();
            if s.contains(other) {
                (count == 1).then_some(l)?;
                Some(at)
            } else if count > 1 {
                None
            } else {
                let grouping = match crate::i18n::current() {
                    crate::i18n::Lang::En => ',',
                    _ => '.',
                };
                let tail = &s[at + 1..];
                (tail.len() != 3 || at == 0 || l != grouping).then_some(at)
            }
        }
    };
    let (whole, frac) = match decimal {
        Some(at) => (&s[..at], &s[at + 1..]),
        None => (s.as_str(), ""),
    };
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    let groups: Vec<&str> = whole.split(is_sep).collect();
    // Groups after the first have three digits; a grouped number does not begin with 0
    // (`0,001` is not one).
    let grouped_well = groups.len() == 1
        || ((1..=3).contains(&groups[0].len())
            && !groups[0].starts_with('0')
            && groups[1..].iter().all(|g| g.len() == 3));
    if !grouped_well || !groups.iter().all(|g| digits(g)) || !digits(frac) {
        return None;
    }
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    Some((groups.concat(), frac.to_string()))
}

/// A typed decimal number rewritten with a decimal point and no grouping, as
/// [`decimal_parts`] reads it (`1.234,5` -> `1234.5`), for parsers of plain decimals; `None`
/// when it is not a number by those rules.
pub fn plain_decimal(input: &str) -> Option<String> {
    let (whole, frac) = decimal_parts(input)?;
    let whole = if whole.is_empty() { "0".into() } else { whole };
    Some(if frac.is_empty() {
        whole
    } else {
        format!("{whole}.{frac}")
    })
}

/// An amount of money in integer minor units (cents for USD/EUR); never a float.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Money(pub i64);

impl Money {
    /// The largest amount Tranche takes as input (a budget, a price, a limit): 10^15 minor
    /// units, ten trillion in a two-decimal currency, so that sums of many stay far from
    /// `i64`'s bound.
    pub const MAX: Money = Money(1_000_000_000_000_000);

    /// Formats with two decimals and thousands separators, e.g. `12,345.67 USD`.
    pub fn display(self, currency: &str) -> String {
        format!("{} {currency}", self.amount())
    }

    /// Formats with two decimals and thousands separators, without currency: `12,345.67`.
    /// In Spanish and Basque pages ([`crate::i18n::current`]): `12.345,67`.
    pub fn amount(self) -> String {
        let lang = crate::i18n::current();
        if lang != crate::i18n::Lang::En {
            return crate::i18n::format::decimal(lang, self.0, -2);
        }
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        format!("{sign}{}.{:02}", group_thousands(abs / 100), abs % 100)
    }

    /// Parses a decimal amount such as `1234.5`, `1,234.50` or `1.234,50` into minor units (two
    /// decimals; separators as [`decimal_parts`] reads them, so `2,50` is two and a half).
    ///
    /// # Errors
    /// Empty, negative, non-numeric, more than two decimals, or too large.
    pub fn parse(input: &str) -> Result<Self, String> {
        let s = input.trim();
        if s.is_empty() {
            return Err(t("inventory-amount-empty"));
        }
        if s.starts_with('-') {
            return Err(t1("inventory-amount-negative", "got", excerpt(s)));
        }
        let Some((whole, frac)) = decimal_parts(s).filter(|(w, _)| !w.is_empty()) else {
            return Err(t1("inventory-amount-not-a-number", "got", quote(s)));
        };
        if frac.len() > 2 {
            return Err(t1("inventory-amount-too-precise", "got", excerpt(s)));
        }
        let whole: i64 = whole
            .parse()
            .map_err(|_| t1("inventory-amount-too-large", "got", excerpt(s)))?;
        let frac: i64 = format!("{frac:0<2}").parse().unwrap_or(0);
        whole
            .checked_mul(100)
            .and_then(|w| w.checked_add(frac))
            .filter(|v| *v <= Money::MAX.0)
            .map(Money)
            .ok_or_else(|| t1("inventory-amount-too-large", "got", excerpt(s)))
    }

    /// The amount as a form field shows it: no grouping, the page's decimal separator
    /// (`1234.50` in English, `1234,50` in Spanish and Basque), read back by [`Money::parse`].
    pub fn input_value(self) -> String {
        let plain = self.plain();
        if crate::i18n::current() == crate::i18n::Lang::En {
            plain
        } else {
            plain.replace('.', ",")
        }
    }

    /// The amount as a plain decimal string without currency or grouping, e.g. `1234.50`.
    pub fn plain(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        format!("{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

/// Inserts thousands separators: 1234567 -> `1,234,567`.
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Formats milli-GPU-hours with one decimal and no grouping: 1_234_560 -> `1234.6` (for CSV;
/// rounds exactly like [`format_milli_gpu_hours`]).
pub fn format_milli_gpu_hours_plain(milli: i64) -> String {
    let tenths = (milli + 50).div_euclid(100);
    let sign = if tenths < 0 { "-" } else { "" };
    format!(
        "{sign}{}.{}",
        (tenths / 10).unsigned_abs(),
        (tenths % 10).unsigned_abs()
    )
}

/// Formats protected GPU-hours, which may be a few GPU-minutes: one decimal from one
/// GPU-hour (as [`format_milli_gpu_hours`]), else two decimals, at least `0.01`, so a
/// protected run never reads as `0.0`: 17 (one GPU for a minute) -> `0.02`, 133 -> `0.13`,
/// 1 -> `0.01`; `plain` without
/// grouping and with a decimal point (the API's and the audit's English).
pub fn format_protected_gpu_hours(milli: i64, plain: bool) -> String {
    if milli >= 995 || milli <= 0 {
        return if plain {
            format_milli_gpu_hours_plain(milli)
        } else {
            format_milli_gpu_hours(milli)
        };
    }
    let hundredths = ((milli + 5) / 10).max(1);
    match crate::i18n::current() {
        lang if plain || lang == crate::i18n::Lang::En => format!("0.{hundredths:02}"),
        lang => crate::i18n::format::decimal(lang, hundredths, -2),
    }
}

/// Formats milli-GPU-hours with one decimal and grouping: 1_234_560 -> `1,234.6`.
pub fn format_milli_gpu_hours(milli: i64) -> String {
    let tenths = (milli + 50).div_euclid(100);
    let lang = crate::i18n::current();
    if lang != crate::i18n::Lang::En {
        return crate::i18n::format::decimal(lang, tenths, -1);
    }
    format!(
        "{}{}.{}",
        if tenths < 0 { "-" } else { "" },
        group_thousands((tenths / 10).unsigned_abs()),
        (tenths % 10).abs()
    )
}

/// An effective share as an exact fraction: the product of basis-point shares from the root,
/// `numerator / 10_000^depth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectiveShare {
    /// Product of the shares' basis points.
    pub numerator: i128,
    /// `10_000^depth`.
    pub denominator: i128,
}

impl EffectiveShare {
    /// The root's effective share: 100%.
    pub const ROOT: EffectiveShare = EffectiveShare {
        numerator: 1,
        denominator: 1,
    };

    /// This share times a child's share. Depths beyond eight levels are rescaled to keep the
    /// fraction within `i128` (precision 10^-12, far below a display digit).
    pub fn child(self, share: Share) -> Self {
        let mut next = Self {
            numerator: self.numerator * i128::from(share.bp()),
            denominator: self.denominator * 10_000,
        };
        if next.denominator > 10_i128.pow(32) {
            next = Self {
                numerator: next.numerator / 10_i128.pow(16),
                denominator: next.denominator / 10_i128.pow(16),
            };
        }
        next
    }

    /// In basis points of the organisation, rounded half up (for display).
    pub fn bp_rounded(self) -> i64 {
        ((self.numerator * 10_000 * 2 + self.denominator) / (self.denominator * 2)) as i64
    }

    /// As a percentage with up to two decimals, e.g. `6.25`.
    pub fn percent(self) -> String {
        format_bp(self.bp_rounded())
    }
}

/// The entitlement of one node on one cluster and GPU model over one budget period.
///
/// Formula (docs/design.md section 2): entitlement = effective share x installed GPUs x period
/// length; its money value = GPU-hours x billing weight x price per weighted GPU-hour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entitlement {
    /// GPU-hours in thousandths (rounded half up).
    pub milli_gpu_hours: i64,
    /// Money value in minor units (rounded half up).
    pub money: Money,
}

/// Computes an [`Entitlement`] exactly in integers.
///
/// `gpus` installed GPUs of the model on the cluster, `period_seconds` the budget period's
/// length in seconds, `billing_weight_milli` the weight in thousandths, `price_minor` the price
/// of one weighted GPU-hour in minor units.
pub fn entitlement(
    share: EffectiveShare,
    gpus: i64,
    period_seconds: i64,
    billing_weight_milli: i64,
    price_minor: i64,
) -> Entitlement {
    let gpu_seconds_num = i128::from(gpus) * i128::from(period_seconds) * share.numerator;
    let den = share.denominator * 3600;
    let milli = div_round(gpu_seconds_num * 1000, den);
    let money = div_round(
        gpu_seconds_num * i128::from(billing_weight_milli) * i128::from(price_minor),
        den * 1000,
    );
    Entitlement {
        milli_gpu_hours: milli as i64,
        money: Money(money as i64),
    }
}

/// Integer division rounding half up, for non-negative operands.
fn div_round(num: i128, den: i128) -> i128 {
    (num * 2 + den) / (den * 2)
}

/// Validates a display name for tree nodes: 1..=64 characters, no leading/trailing space,
/// no control characters.
///
/// # Errors
/// The message to show next to the field.
pub fn node_name(input: &str) -> Result<String, String> {
    let name = input.trim();
    if name.is_empty() {
        return Err(t("node-name-required"));
    }
    if name.chars().count() > 64 {
        return Err(t1(
            "node-name-too-long",
            "count",
            crate::i18n::format::count(name.chars().count() as i64),
        ));
    }
    if name
        .chars()
        .any(|c| c.is_control() || is_invisible_format(c))
    {
        return Err(t("node-name-invisible"));
    }
    Ok(name.to_string())
}

/// Whether `c` may not stand in a text shown as one line: a control character, an invisible
/// formatting character ([`is_invisible_format`]), or a line or paragraph separator (U+2028,
/// U+2029). An agent's fault text keeps to this (docs/agent-protocol.md section 2).
pub fn breaks_one_line(c: char) -> bool {
    c.is_control() || is_invisible_format(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Invisible formatting characters that can make one name look like another: zero-width
/// characters, bidirectional overrides and isolates, the byte-order mark.
pub fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{00AD}')
}

/// Validates an identifier-like name (users, clusters, GPU models, nodes): starts with a letter
/// or digit, then letters, digits, `.`, `_` or `-`, at most `max` characters.
///
/// # Errors
/// The message to show next to the field.
pub fn ident(input: &str, what: &str, max: usize) -> Result<String, String> {
    let name = input.trim();
    // The message in the page's language when the files name `what` there, else in English.
    let (lang, noun) = match what {
        "user" => (crate::i18n::current(), t("inventory-noun-user")),
        "cluster" => (crate::i18n::current(), t("inventory-noun-cluster")),
        "GPU model" => (crate::i18n::current(), t("inventory-noun-gpu-model")),
        "node" => (crate::i18n::current(), t("inventory-noun-node")),
        other => (crate::i18n::Lang::En, other.to_string()),
    };
    let count = |n: usize| crate::i18n::format::integer_in(lang, n as i64);
    let message = |key: &str, args: &[(&str, &dyn crate::i18n::Arg)]| {
        let mut all: Vec<(&str, &dyn crate::i18n::Arg)> = vec![("what", &noun)];
        all.extend_from_slice(args);
        crate::i18n::message(lang, key, &all)
    };
    if name.is_empty() {
        return Err(message("inventory-name-required", &[]));
    }
    if name.len() > max {
        return Err(message(
            "inventory-name-too-long",
            &[("max", &count(max)), ("count", &count(name.len()))],
        ));
    }
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        return Err(message("inventory-name-invalid", &[("name", &quote(name))]));
    }
    Ok(name.to_string())
}

/// The most characters of a person's input that an error message quotes back.
pub const QUOTE_CHARS: usize = 60;

/// At most [`QUOTE_CHARS`] characters of `input`, with `…` when it was cut: for error messages
/// that show what was typed (`got 12345…`), so a 200 kB field never comes back in full.
pub fn excerpt(input: &str) -> String {
    match input.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &input[..at]),
        None => input.to_string(),
    }
}

/// [`excerpt`] as a quoted string with control characters escaped (`"gpu\u{0}…"`), the form
/// error messages use to name a value the person typed.
pub fn quote(input: &str) -> String {
    format!("{:?}", excerpt(input))
}

/// Shortens a message written by a library (serde's "invalid type: string \"...\"",
/// "unknown field `...`") that quotes the input: every `"..."` or `` `...` `` segment longer
/// than [`QUOTE_CHARS`] characters is cut with `…`, and the whole message to 300 characters.
pub fn shorten_quoted(message: &str) -> String {
    let mut out = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' && c != '`' {
            continue;
        }
        let mut inner = String::new();
        let mut closed = false;
        while let Some(d) = chars.next() {
            if d == '\\' && c == '"' {
                inner.push(d);
                if let Some(e) = chars.next() {
                    inner.push(e);
                }
                continue;
            }
            if d == c {
                closed = true;
                break;
            }
            inner.push(d);
        }
        out.push_str(&excerpt(&inner));
        if closed {
            out.push(c);
        }
    }
    match out.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &out[..at]),
        None => out,
    }
}

/// Where a text input breaks the text rule: the first control character and its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlChar {
    /// The character (C0, DEL, C1, or a bidirectional embedding, override or isolate).
    pub character: char,
    /// Its position in the text, counting characters from 1.
    pub position: usize,
}

/// The text rule for every field of every form and JSON body: no control characters (the C0
/// range U+0000 to U+001F, DEL, the C1 range U+0080 to U+009F), except tab, line feed and
/// carriage return in a field that takes several lines (`multiline`, such as a run's
/// command). PostgreSQL cannot store U+0000 in text at all; the others have no business in
/// names and break logs, terminals and CSV files. Nor do the bidirectional embeddings,
/// overrides and isolates (U+202A to U+202E, U+2066 to U+2069), which make a name or a reason
/// read otherwise than it is written ("Trojan Source", CVE-2021-42574), unless `bidi` allows
/// them (a label a machine makes up, shown without its invisible characters); the marks
/// U+200E and U+200F, which right-to-left names may need, are allowed.
///
/// Returns the first offending character, `None` when the text is fine.
pub fn control_char(text: &str, multiline: bool) -> Option<ControlChar> {
    control_char_in(text, multiline, false)
}

/// [`control_char`], with bidirectional formatting characters allowed when `bidi`.
pub fn control_char_in(text: &str, multiline: bool, bidi: bool) -> Option<ControlChar> {
    text.chars()
        .enumerate()
        .find(|(_, c)| {
            (c.is_control() && !(multiline && matches!(c, '\t' | '\n' | '\r')))
                || (!bidi && matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        })
        .map(|(i, character)| ControlChar {
            character,
            position: i + 1,
        })
}

/// A whole number as people type it and as the pages write it (docs/i18n.md): an optional
/// sign, `-`, `+` or the minus sign U+2212 that CLDR's Spanish and Basque formats print, then
/// digits grouped as [`decimal_parts`] reads them (`10.000` on a Spanish page, `10,000` on an
/// English one, `10 000` anywhere), with no decimals. `None` when it is not one, or beyond `i64`.
pub fn typed_integer(input: &str) -> Option<i64> {
    let s = input.trim();
    let (negative, digits) = match s.chars().next()? {
        '-' | '\u{2212}' => (true, &s[s.chars().next()?.len_utf8()..]),
        '+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (whole, frac) = decimal_parts(digits)?;
    if whole.is_empty() || !frac.is_empty() {
        return None;
    }
    let v: i64 = whole.parse().ok()?;
    Some(if negative { -v } else { v })
}

/// Parses a whole number within `min..=max` for the field `what` ([`typed_integer`]).
///
/// # Errors
/// The message to show next to the field.
pub fn int_in(input: &str, what: &str, min: i64, max: i64) -> Result<i64, String> {
    let typed = input.trim();
    // The message in the page's language when the files name `what` there, else in English.
    let (lang, noun) = match what {
        "the GPU count" => (crate::i18n::current(), t("inventory-noun-gpu-count")),
        "an alert threshold" => (crate::i18n::current(), t("project-noun-threshold")),
        "the self-service limit" => (crate::i18n::current(), t("project-noun-self-service")),
        other => (crate::i18n::Lang::En, other.to_string()),
    };
    let v: i64 = typed_integer(typed).ok_or_else(|| {
        crate::i18n::message(
            lang,
            "inventory-number-whole",
            &[("what", &noun), ("got", &quote(typed))],
        )
    })?;
    if v < min || v > max {
        let n = |v: i64| crate::i18n::format::integer_in(lang, v);
        return Err(crate::i18n::message(
            lang,
            "inventory-number-range",
            &[
                ("what", &noun),
                ("min", &n(min)),
                ("max", &n(max)),
                ("got", &n(v)),
            ],
        ));
    }
    Ok(v)
}

/// The budget period containing `now`: the calendar month in the organisation's time zone,
/// as `[start, end)` instants. Its length follows the zone's clock changes (a month with a DST
/// change is an hour shorter or longer).
pub fn budget_period(now: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> (jiff::Zoned, jiff::Zoned) {
    let local = now.to_zoned(tz.clone());
    let start_date = local.date().first_of_month();
    let start = start_date
        .to_zoned(tz.clone())
        .unwrap_or_else(|_| local.clone());
    let end = start_date
        .checked_add(jiff::Span::new().months(1))
        .ok()
        .and_then(|d| d.to_zoned(tz.clone()).ok())
        .unwrap_or_else(|| local.clone());
    (start, end)
}

/// The time zones whose calendar months the budget periods follow: the first zone from the
/// beginning, each later one from the instant a change took effect (always the end of a period,
/// so a period never has two zones). Built from the site's recorded zones
/// ([`crate::ledger::zones`]); a site that never changed zone has one.
///
/// A zone's first period starts where the previous zone's last one ended and ends with the
/// new zone's month that contains the day fifteen days later (docs/design.md, "Budget periods
/// across a time-zone change"), so it is about a month long whichever way the offset moved:
/// never a second period for the same month, never an hour-long one.
#[derive(Clone, Debug)]
pub struct PeriodCalendar {
    /// `(effective from, zone)`, in order; the first entry's instant is ignored.
    zones: Vec<(jiff::Timestamp, jiff::tz::TimeZone)>,
}

impl PeriodCalendar {
    /// Months in one zone throughout.
    pub fn new(tz: jiff::tz::TimeZone) -> Self {
        Self {
            zones: vec![(jiff::Timestamp::MIN, tz)],
        }
    }

    /// The calendar with months in `tz` from `from` on (a period end of this calendar).
    #[must_use]
    pub fn then(mut self, from: jiff::Timestamp, tz: jiff::tz::TimeZone) -> Self {
        self.zones.push((from, tz));
        self
    }

    /// The budget period containing `now`, as `[start, end)` in the zone it follows.
    pub fn period(&self, now: jiff::Timestamp) -> (jiff::Zoned, jiff::Zoned) {
        let i = self
            .zones
            .iter()
            .rposition(|(from, _)| *from <= now)
            .unwrap_or(0);
        let (from, tz) = &self.zones[i];
        let next = self.zones.get(i + 1).map(|(t, _)| *t);
        let (mut start, mut end) = budget_period(now, tz);
        if i > 0 {
            let first_end = budget_period(*from + jiff::SignedDuration::from_hours(15 * 24), tz).1;
            if now < first_end.timestamp() {
                start = from.to_zoned(tz.clone());
                end = first_end;
            }
        }
        if let Some(next) = next.filter(|n| *n < end.timestamp()) {
            end = next.to_zoned(tz.clone());
        }
        (start, end)
    }

    /// The calendar month the budget period containing `now` is named after, as its first
    /// day: the month, in the zone that period follows, of the day fifteen days after its
    /// start. That is the month its start opens in every period but a zone's first, which
    /// starts where the previous zone's last period ended, possibly the evening before the
    /// month in the new zone (the UTC December ends at 31 December 16:00 in Los Angeles, where
    /// January begins): it is named after the month it then runs through. Never the zone
    /// configured now for a period that follows an earlier one.
    pub fn month(&self, now: jiff::Timestamp) -> jiff::civil::Date {
        let (start, _) = self.period(now);
        let tz = start.time_zone().clone();
        start
            .timestamp()
            .checked_add(jiff::SignedDuration::from_hours(15 * 24))
            .unwrap_or(start.timestamp())
            .to_zoned(tz)
            .date()
            .first_of_month()
    }
}

/// Parses a positive decimal with up to three decimals into thousandths: `1.5` or `1,5` -> 1500
/// (separators as [`decimal_parts`] reads them).
///
/// # Errors
/// The message to show next to the field (non-numeric, zero/negative, too precise, over 100).
pub fn parse_milli(input: &str, what: &str) -> Result<i64, String> {
    let t = input.trim();
    // The message in the page's language when the files name `what` there, else in English.
    let (lang, noun) = match what {
        "the billing weight" => (
            crate::i18n::current(),
            crate::i18n::t("inventory-noun-weight"),
        ),
        other => (crate::i18n::Lang::En, other.to_string()),
    };
    let message =
        |key: &str, got: String| crate::i18n::message(lang, key, &[("what", &noun), ("got", &got)]);
    if t.starts_with('-') {
        return Err(message("inventory-number-positive", excerpt(t)));
    }
    let Some((whole, frac)) = decimal_parts(t) else {
        return Err(message("inventory-number-decimal", quote(t)));
    };
    if frac.len() > 3 {
        return Err(message("inventory-number-three-decimals", excerpt(t)));
    }
    if whole.trim_start_matches('0').len() > 3 {
        return Err(message("inventory-number-at-most-100", excerpt(t)));
    }
    let w: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().unwrap_or(0)
    };
    let f: i64 = format!("{frac:0<3}").parse().unwrap_or(0);
    let v = w * 1000 + f;
    if v == 0 {
        return Err(message("inventory-number-positive", excerpt(t)));
    }
    if v > 100_000 {
        return Err(message("inventory-number-at-most-100", excerpt(t)));
    }
    Ok(v)
}

/// Formats thousandths as a decimal without trailing zeros: 1500 -> `1.5`.
pub fn format_milli(v: i64) -> String {
    let s = format!("{}.{:03}", v / 1000, (v % 1000).abs());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parses an instant typed by a person: RFC 3339 with an offset (`2026-10-25T01:30:00+02:00`,
/// `...Z`), or local wall-clock time (`2026-10-25T01:30`, `2026-10-25 01:30[:ss]`) in `tz`.
///
/// Clock changes follow one documented rule: a wall-clock time that does not exist (the hour
/// skipped when clocks go forward) is refused; a time that happens twice (the hour repeated
/// when clocks go back) means its first occurrence, the one with the earlier UTC instant. An
/// explicit offset picks either occurrence.
///
/// # Errors
/// The message to show next to the field.
pub fn parse_instant(
    input: &str,
    tz: &jiff::tz::TimeZone,
    tz_name: &str,
) -> Result<jiff::Timestamp, String> {
    let t = input.trim();
    if t.is_empty() {
        return Err(crate::i18n::t("contract-when-empty"));
    }
    if let Some(ts) = parse_rfc3339(t)? {
        return Ok(ts);
    }
    let civil: jiff::civil::DateTime = t
        .replace(' ', "T")
        .parse()
        .map_err(|_| crate::i18n::t1("contract-when-not-a-time", "got", quote(t)))?;
    let ambiguous = tz.to_ambiguous_zoned(civil);
    if matches!(ambiguous.offset(), jiff::tz::AmbiguousOffset::Gap { .. }) {
        return Err(crate::i18n::t2(
            "contract-when-skipped",
            "time",
            civil.strftime("%Y-%m-%d %H:%M").to_string(),
            "zone",
            tz_name,
        ));
    }
    // Unambiguous or repeated: the earlier instant.
    ambiguous
        .earlier()
        .map(|z| z.timestamp())
        // The only failure left: the instant falls outside jiff's range (about the years
        // -9999 to 9999), e.g. 9999-12-31 23:59 east of UTC.
        .map_err(|_| out_of_range(t))
}

/// Our words for a date and time that reads well but names no instant we can represent
/// (the library's own error text speaks of Unix seconds and parameters).
fn out_of_range(input: &str) -> String {
    crate::i18n::t1("contract-when-out-of-range", "got", quote(input))
}

/// Parses an instant in RFC 3339 with an offset (`2026-12-01T09:00:00+01:00`, `...Z`):
/// `Ok(None)` when the text is not of that form (a local time, a typo).
///
/// # Errors
/// The message to show when it is of that form but outside the supported range (such as
/// `9999-12-31T23:59:00-05:00`), and the "not a time" message when it has an offset RFC 3339
/// does not allow (past ±23:59, or with seconds: jiff's Temporal parser takes up to ±25:59)
/// or a bracketed annotation after it (`+01:00[America/New_York]`, which RFC 3339 does not
/// have): an offset is there, so it is not a local time either.
pub fn parse_rfc3339(input: &str) -> Result<Option<jiff::Timestamp>, String> {
    let t = input.trim();
    if let Ok(p) = jiff::fmt::temporal::Pieces::parse(t)
        && p.offset().is_some()
        && p.time().is_some()
    {
        let offset_ok = match p.offset() {
            Some(jiff::fmt::temporal::PiecesOffset::Numeric(n)) => {
                let s = n.offset().seconds();
                s.abs() < 24 * 3600 && s % 60 == 0
            }
            _ => true,
        };
        if !offset_ok || p.time_zone_annotation().is_some() || t.contains('[') {
            return Err(crate::i18n::t1("contract-when-not-a-time", "got", quote(t)));
        }
    }
    match t.parse::<jiff::Timestamp>() {
        Ok(_) if t.contains('[') => {
            Err(crate::i18n::t1("contract-when-not-a-time", "got", quote(t)))
        }
        Ok(ts) => Ok(Some(ts)),
        Err(_) => match jiff::fmt::temporal::Pieces::parse(t) {
            Ok(p) if p.offset().is_some() && p.time().is_some() => Err(out_of_range(t)),
            _ => Ok(None),
        },
    }
}

/// Formats an instant in `tz` with its UTC offset: `2026-10-25 01:30 +02:00`.
/// Spanish and Basque pages get CLDR's date and time ([`crate::i18n::format::instant`]).
pub fn format_local(ts: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> String {
    crate::i18n::format::instant(crate::i18n::current(), ts, tz)
}

/// As [`format_local`], with the seconds when the instant has any: for instants a person
/// typed (a contract's window), so `09:00:30` does not read back as `09:00`.
pub fn format_local_exact(ts: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> String {
    crate::i18n::format::exact_instant(crate::i18n::current(), ts, tz)
}

/// The price of a capacity contract in minor units: GPUs x hours x billing weight x price per
/// weighted GPU-hour (issue 5), computed exactly from seconds and rounded half up.
pub fn contract_price(
    gpus: i64,
    seconds: i64,
    billing_weight_milli: i64,
    price_minor: i64,
) -> Money {
    let num = i128::from(gpus)
        * i128::from(seconds)
        * i128::from(billing_weight_milli)
        * i128::from(price_minor);
    Money(div_round(num, 3_600_000) as i64)
}

/// How many GPU-hours of a model `amount` buys at its billing weight and price (for messages
/// such as "needs 120 GPU-hours, 100 left"; never used for charging).
pub fn gpu_hours_for(amount: Money, billing_weight_milli: i64, price_minor: i64) -> f64 {
    let per_hour = billing_weight_milli as f64 * price_minor as f64 / 1000.0;
    if per_hour <= 0.0 {
        f64::INFINITY
    } else {
        amount.0 as f64 / per_hour
    }
}

/// Formats a duration in seconds as hours, without trailing zeros: 10800 -> `3`,
/// 7125 -> `1.98` (in English; `1,98` in Spanish and Basque, grouped from 1.000 hours).
pub fn format_hours(seconds: i64) -> String {
    let lang = crate::i18n::current();
    if lang != crate::i18n::Lang::En {
        let hundredths = (seconds as f64 / 36.0).round() as i64;
        return crate::i18n::format::decimal_trimmed(lang, hundredths, -2);
    }
    if seconds % 3600 == 0 {
        return (seconds / 3600).to_string();
    }
    let s = format!("{:.2}", seconds as f64 / 3600.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 3339 offsets run to ±23:59 with no seconds, and no bracketed annotation follows
    /// them: jiff's Temporal parser takes ±25:59 and `[America/New_York]`, refused here with
    /// the "not a time" message, in both parse_rfc3339 and parse_instant (which must not read
    /// them as local times either).
    #[test]
    fn rfc3339_refuses_offsets_past_a_day_and_annotations() {
        let tz = jiff::tz::TimeZone::UTC;
        let at = |s: &str| parse_rfc3339(s).unwrap().unwrap().as_second();
        // 2026-12-01T09:00:00Z is 1,796,115,600 s; an offset of +23:59 is 86,340 s before.
        assert_eq!(at("2026-12-01T09:00:00Z"), 1_796_115_600);
        assert_eq!(at("2026-12-01T09:00:00+23:59"), 1_796_115_600 - 86_340);
        assert_eq!(at("2026-12-01T09:00:00-23:59"), 1_796_115_600 + 86_340);
        for bad in [
            "2026-12-01T09:00:00+24:00",
            "2026-12-01T09:00:00+25:59",
            "2026-12-01T09:00:00-25:00",
            "2026-12-01T09:00:00+01:00:30",
            "2026-12-01T09:00:00+01:00[America/New_York]",
            "2026-12-01T09:00:00Z[UTC]",
            "2026-12-01T09:00:00-05:00[-05:00]",
        ] {
            let want = crate::i18n::t1("contract-when-not-a-time", "got", quote(bad));
            assert_eq!(parse_rfc3339(bad), Err(want.clone()), "{bad}");
            assert_eq!(parse_instant(bad, &tz, "UTC"), Err(want), "{bad}");
        }
        // A local time is still not RFC 3339, for the caller to read in a zone.
        assert_eq!(parse_rfc3339("2026-12-01T09:00"), Ok(None));
    }

    #[test]
    fn form_checks_speak_the_page_s_language_and_stay_english_elsewhere() {
        use crate::i18n::{Lang, sync_scope};
        assert_eq!(
            ident("", "cluster", 64).unwrap_err(),
            "a cluster name is required"
        );
        assert_eq!(
            sync_scope(Lang::Eu, || ident("", "cluster", 64)).unwrap_err(),
            "kluster izena behar da"
        );
        assert_eq!(
            sync_scope(Lang::Es, || ident("a b", "GPU model", 32)).unwrap_err(),
            "\"a b\" no es un nombre de modelo de GPU válido: usa letras, dígitos, '.', '_' o '-', y empieza por una letra o un dígito"
        );
        // A field the files have no word for keeps its English sentence.
        assert_eq!(
            sync_scope(Lang::Eu, || ident("", "partition", 64)).unwrap_err(),
            "a partition name is required"
        );
        assert_eq!(
            sync_scope(Lang::Eu, || int_in("100", "the GPU count", 1, 64)).unwrap_err(),
            "GPU kopuruak 1 eta 64 arteko balio bat izan behar du (100 idatzi da)"
        );
        assert_eq!(
            int_in("x", "the GPU count", 1, 64).unwrap_err(),
            "the GPU count must be a whole number (got \"x\")"
        );
        assert_eq!(
            sync_scope(Lang::Es, || parse_milli("0", "the billing weight")).unwrap_err(),
            "el peso de facturación debe ser positivo (se ha escrito 0)"
        );
        assert_eq!(
            sync_scope(Lang::Eu, || Money::parse("-3")).unwrap_err(),
            "zenbateko bat ezin da negatiboa izan (-3 idatzi da)"
        );
        assert_eq!(
            sync_scope(Lang::Es, || Share::parse_percent("abc")
                .unwrap_err()
                .message()),
            "\"abc\" no es un número; escribe un porcentaje como 25 o 12,5"
        );
        let over = Share::parse_percent("100.01").unwrap_err();
        assert_eq!(sync_scope(Lang::En, || over.message()), over.to_string());
    }

    #[test]
    fn quoted_input_is_cut_at_60_characters() {
        let long = "é".repeat(200_000);
        assert_eq!(excerpt(&long).chars().count(), QUOTE_CHARS + 1);
        assert!(excerpt(&long).ends_with('…'));
        assert_eq!(quote("a\0b"), "\"a\\0b\"");
        assert_eq!(excerpt("short"), "short");
        let serde = format!("invalid type: string \"{long}\", expected i64 at line 1 column 9");
        let short = shorten_quoted(&serde);
        assert!(short.chars().count() < 150, "{short}");
        assert!(
            short.ends_with("expected i64 at line 1 column 9"),
            "{short}"
        );
        let unknown = format!("unknown field `{long}`, expected one of `a`, `b`");
        assert!(shorten_quoted(&unknown).ends_with("expected one of `a`, `b`"));
        assert_eq!(shorten_quoted("a \"b\\\"c\" d"), "a \"b\\\"c\" d");
        let parsed = Share::parse_percent(&"1".repeat(100_000)).unwrap_err();
        assert!(parsed.to_string().len() < 200, "{parsed}");
    }

    #[test]
    fn shares_parse_as_percentages() {
        assert_eq!(Share::parse_percent("25").unwrap().bp(), 2500);
        assert_eq!(Share::parse_percent(" 12.5 % ").unwrap().bp(), 1250);
        assert_eq!(Share::parse_percent("33.33").unwrap().bp(), 3333);
        assert_eq!(Share::parse_percent("100").unwrap().bp(), 10_000);
        assert_eq!(Share::parse_percent("0").unwrap().bp(), 0);
        assert_eq!(Share::parse_percent(".5").unwrap().bp(), 50);
        assert!(matches!(
            Share::parse_percent("abc"),
            Err(ShareError::NotANumber(_))
        ));
        assert!(matches!(
            Share::parse_percent("-5"),
            Err(ShareError::Negative(_))
        ));
        assert!(matches!(
            Share::parse_percent("100.01"),
            Err(ShareError::OverHundred(_))
        ));
        assert!(matches!(
            Share::parse_percent("99999999999"),
            Err(ShareError::OverHundred(_))
        ));
        assert!(matches!(
            Share::parse_percent("1.234"),
            Err(ShareError::TooPrecise(_))
        ));
        assert!(matches!(Share::parse_percent(""), Err(ShareError::Empty)));
        assert!(matches!(
            Share::parse_percent("."),
            Err(ShareError::NotANumber(_))
        ));
        assert_eq!(Share::parse_percent("12.5").unwrap().to_string(), "12.5%");
    }

    #[test]
    fn periods_are_named_after_their_own_month_across_a_zone_change() {
        let utc = jiff::tz::TimeZone::UTC;
        let change: jiff::Timestamp = "2027-01-01T00:00:00Z".parse().unwrap();
        let month = |c: &PeriodCalendar, at: &str| {
            c.month(at.parse().unwrap()).strftime("%Y-%m").to_string()
        };
        for (zone, december_last_instant) in [
            // West: the UTC December starts on 30 November there and ends on its 31 December.
            ("America/Los_Angeles", "2026-12-31T23:59:59Z"),
            // East: January there begins an hour before the UTC December ends.
            ("Pacific/Kiritimati", "2026-12-31T23:59:59Z"),
            ("Europe/Madrid", "2026-12-31T23:59:59Z"),
        ] {
            let tz = jiff::tz::TimeZone::get(zone).unwrap();
            let c = PeriodCalendar::new(utc.clone()).then(change, tz);
            assert_eq!(month(&c, "2026-12-01T00:00:00Z"), "2026-12", "{zone}");
            assert_eq!(month(&c, december_last_instant), "2026-12", "{zone}");
            assert_eq!(month(&c, "2027-01-01T00:00:00Z"), "2027-01", "{zone}");
            assert_eq!(month(&c, "2027-01-20T00:00:00Z"), "2027-01", "{zone}");
            assert_eq!(month(&c, "2027-02-15T00:00:00Z"), "2027-02", "{zone}");
            assert_eq!(month(&c, "2026-11-20T00:00:00Z"), "2026-11", "{zone}");
        }
    }

    #[test]
    fn money_formats_and_parses() {
        assert_eq!(Money(123_456_789).display("EUR"), "1,234,567.89 EUR");
        assert_eq!(Money(5).display("USD"), "0.05 USD");
        assert_eq!(Money::parse("1,500.5").unwrap(), Money(150_050));
        assert!(Money::parse("-1").is_err());
        assert!(Money::parse("1.234").is_err());
        assert!(Money::parse("x").is_err());
    }

    #[test]
    fn periods_across_a_zone_change_tile_time_with_month_long_periods() {
        // Both directions: east (UTC -> Madrid) and west (Madrid -> UTC), changing at the end of
        // December in the old zone.
        let utc = jiff::tz::TimeZone::UTC;
        let madrid = jiff::tz::TimeZone::get("Europe/Madrid").unwrap();
        for (old, new) in [(utc.clone(), madrid.clone()), (madrid, utc)] {
            let december: jiff::Timestamp = "2026-12-15T00:00:00Z".parse().unwrap();
            let change = budget_period(december, &old).1.timestamp();
            let calendar = PeriodCalendar::new(old.clone()).then(change, new.clone());
            let mut at: jiff::Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
            let (mut start, mut end) = calendar.period(at);
            let mut starts = vec![];
            while at < "2027-03-20T00:00:00Z".parse().unwrap() {
                let (s, e) = calendar.period(at);
                assert!(
                    s.timestamp() <= at && at < e.timestamp(),
                    "{at} in [{s}, {e})"
                );
                if s != start {
                    // A new period starts exactly where the previous one ended.
                    assert_eq!(s.timestamp(), end.timestamp(), "{at}");
                    starts.push(s.timestamp());
                    (start, end) = (s, e);
                }
                let days = end.timestamp().duration_since(start.timestamp()).as_hours() / 24;
                assert!((27..=32).contains(&days), "{start} to {end}: {days} days");
                at += jiff::SignedDuration::from_mins(30);
            }
            assert!(
                starts.contains(&change),
                "the new zone starts at the change"
            );
            // After the first period, the new zone's own months.
            let march: jiff::Timestamp = "2027-03-10T00:00:00Z".parse().unwrap();
            assert_eq!(calendar.period(march), budget_period(march, &new));
            assert_eq!(
                starts.len(),
                4,
                "December, January, February, March: {starts:?}"
            );
        }
    }

    #[test]
    fn a_protected_minute_is_not_zero_gpu_hours() {
        use crate::i18n::{Lang, sync_scope};
        assert_eq!(format_protected_gpu_hours(17, true), "0.02");
        assert_eq!(format_protected_gpu_hours(1, false), "0.01");
        assert_eq!(format_protected_gpu_hours(100, false), "0.10");
        assert_eq!(format_protected_gpu_hours(133, false), "0.13");
        assert_eq!(format_protected_gpu_hours(16_000, true), "16.0");
        assert_eq!(
            sync_scope(Lang::Es, || format_protected_gpu_hours(17, false)),
            "0,02"
        );
    }

    #[test]
    fn typed_integers_read_the_forms_pages_print() {
        use crate::i18n::{Lang, sync_scope};
        let int = |lang, s: &str| sync_scope(lang, || typed_integer(s));
        for lang in [Lang::En, Lang::Es, Lang::Eu] {
            assert_eq!(int(lang, " 42 "), Some(42), "{lang:?}");
            assert_eq!(int(lang, "-5"), Some(-5), "{lang:?}");
            // CLDR's Spanish and Basque minus sign, as the pages write "\u{2212}1.000".
            assert_eq!(int(lang, "\u{2212}5"), Some(-5), "{lang:?}");
            assert_eq!(int(lang, "+7"), Some(7), "{lang:?}");
            assert_eq!(int(lang, "10 000"), Some(10_000), "{lang:?}");
            assert_eq!(int(lang, "1.234.567"), Some(1_234_567), "{lang:?}");
            for bad in [
                "",
                "-",
                "1,5",
                "2.50",
                "x",
                "1e3",
                "--1",
                "0,001",
                "99999999999999999999",
            ] {
                assert_eq!(int(lang, bad), None, "{lang:?} {bad:?}");
            }
        }
        // One separator and three digits: grouping in the page's language, else decimals.
        assert_eq!(int(Lang::Es, "\u{2212}1.000"), Some(-1_000));
        assert_eq!(int(Lang::Eu, "10.000"), Some(10_000));
        assert_eq!(int(Lang::Es, "10,000"), None);
        assert_eq!(int(Lang::En, "10,000"), Some(10_000));
        assert_eq!(int(Lang::En, "1.024"), None);
        // The range message's own numbers read back.
        let range = sync_scope(Lang::Eu, || int_in("1.000", "the GPU count", 1, 64)).unwrap_err();
        assert!(range.contains("1.000"), "{range}");
    }

    #[test]
    fn typed_decimals_follow_either_convention() {
        use crate::i18n::{Lang, sync_scope};
        let money = |lang, s: &str| sync_scope(lang, || Money::parse(s)).map(|m| m.0);
        for lang in [Lang::En, Lang::Es, Lang::Eu] {
            // A separator followed by one or two digits is the decimal one, in every language.
            assert_eq!(money(lang, "2,50"), Ok(250), "{lang:?}");
            assert_eq!(money(lang, "2.50"), Ok(250), "{lang:?}");
            assert_eq!(money(lang, "500,5"), Ok(50_050), "{lang:?}");
            // Both present: the last one is the decimal separator.
            assert_eq!(money(lang, "1.234,56"), Ok(123_456), "{lang:?}");
            assert_eq!(money(lang, "1,234.56"), Ok(123_456), "{lang:?}");
            assert_eq!(money(lang, "1 234,56"), Ok(123_456), "{lang:?}");
            // Repeated: thousands.
            assert_eq!(money(lang, "1.234.567"), Ok(123_456_700), "{lang:?}");
            assert_eq!(money(lang, "1,234,567"), Ok(123_456_700), "{lang:?}");
            // Badly grouped or mixed the wrong way round: refused, not guessed.
            for bad in [
                "1,5,00",
                "12,34.5",
                "1.234.5,6,7",
                "1,2345.00",
                ",5",
                "1,,5",
                "0,001",
                "00,050",
                "0.001.000",
            ] {
                assert!(money(lang, bad).is_err(), "{lang:?} {bad}");
            }
        }
        // One separator and three digits: the page's language decides.
        assert_eq!(money(Lang::En, "1,234"), Ok(123_400));
        assert_eq!(money(Lang::Es, "1.234"), Ok(123_400));
        assert_eq!(money(Lang::Eu, "1.234"), Ok(123_400));
        assert!(money(Lang::En, "1.234").is_err());
        assert!(money(Lang::Es, "1,234").is_err());
        // An amount shown on a Spanish page reads back as the same amount.
        let shown = sync_scope(Lang::Es, || Money(1_234_567).amount());
        assert_eq!(money(Lang::Es, &shown), Ok(1_234_567), "{shown}");
        // A form shows an amount the way its page reads it back.
        for lang in [Lang::En, Lang::Es, Lang::Eu] {
            let shown = sync_scope(lang, || Money(123_450).input_value());
            assert_eq!(money(lang, &shown), Ok(123_450), "{lang:?} {shown}");
        }
        assert_eq!(plain_decimal("1.234,5").as_deref(), Some("1234.5"));
        assert_eq!(plain_decimal(",5"), Some("0.5".into()));
        assert_eq!(
            sync_scope(Lang::Es, || crate::ai::spend::parse_rate("0,92")).ok(),
            Some(920_000)
        );
        assert_eq!(
            sync_scope(Lang::Eu, || crate::ai::parse_hours("1,5")).ok(),
            Some(90)
        );
        // Shares and weights read a decimal comma too.
        assert_eq!(Share::parse_percent("12,5").unwrap().bp(), 1250);
        assert_eq!(parse_milli("1,5", "the billing weight"), Ok(1500));
        assert!(parse_milli("1,5,0", "the billing weight").is_err());
    }

    #[test]
    fn entitlement_is_exact() {
        // 50% of 25% = 12.5% of 1,024 GPUs over a 30-day month (720 h):
        // 0.125 * 1024 * 720 = 92,160 GPU-hours; at weight 1.5 and 2.00 per weighted hour:
        // 92,160 * 1.5 * 200 = 27,648,000 minor units.
        let eff = EffectiveShare::ROOT.child(Share(5000)).child(Share(2500));
        assert_eq!(eff.percent(), "12.5");
        let e = entitlement(eff, 1024, 30 * 24 * 3600, 1500, 200);
        assert_eq!(e.milli_gpu_hours, 92_160_000);
        assert_eq!(e.money, Money(27_648_000));
    }

    #[test]
    fn wall_clock_input_follows_the_documented_dst_rule() {
        let tz = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
        // S8: 01:30 (CEST, +02:00) to 03:30 (CET, +01:00) on 2026-10-25 is three real hours.
        let start = parse_instant("2026-10-25T01:30", &tz, "Europe/Berlin").unwrap();
        let end = parse_instant("2026-10-25 03:30", &tz, "Europe/Berlin").unwrap();
        assert_eq!(start.to_string(), "2026-10-24T23:30:00Z");
        assert_eq!(end.to_string(), "2026-10-25T02:30:00Z");
        assert_eq!(end.as_second() - start.as_second(), 3 * 3600);
        assert_eq!(format_local(start, &tz), "2026-10-25 01:30 +02:00");
        assert_eq!(format_local(end, &tz), "2026-10-25 03:30 +01:00");
        // The repeated hour means its first occurrence; an offset picks the second.
        assert_eq!(
            parse_instant("2026-10-25 02:30", &tz, "Europe/Berlin")
                .unwrap()
                .to_string(),
            "2026-10-25T00:30:00Z"
        );
        assert_eq!(
            parse_instant("2026-10-25T02:30:00+01:00", &tz, "Europe/Berlin")
                .unwrap()
                .to_string(),
            "2026-10-25T01:30:00Z"
        );
        // A time that does not exist is refused, saying so.
        let err = parse_instant("2026-03-29 02:30", &tz, "Europe/Berlin").unwrap_err();
        assert!(err.contains("does not exist in Europe/Berlin"), "{err}");
        assert!(parse_instant("tomorrow", &tz, "Europe/Berlin").is_err());
    }

    #[test]
    fn contract_prices_by_hand() {
        // 8 GPUs x 2 h x weight 1.8 x 2.50 = 72.00.
        assert_eq!(contract_price(8, 7200, 1800, 250), Money(7200));
        // 3 GPUs x 90 min x weight 1.0 x 1.99 = 8.955 -> 8.96 (half up).
        assert_eq!(contract_price(3, 5400, 1000, 199), Money(896));
        // 1 GPU x 1 s x weight 2.5 x 2.50 = 0.001736... -> 0.00.
        assert_eq!(contract_price(1, 1, 2500, 250), Money(0));
    }

    #[test]
    fn budget_period_follows_dst() {
        let tz = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
        let now: jiff::Timestamp = "2026-10-15T12:00:00Z".parse().unwrap();
        let (start, end) = budget_period(now, &tz);
        // October 2026 in Berlin has 31 days plus the repeated hour on the 25th.
        assert_eq!(
            end.timestamp().as_second() - start.timestamp().as_second(),
            31 * 86_400 + 3600
        );
    }

    /// Plain GPU-hours (CSV exports, stored events, the API) read the same in every page
    /// language: before, a Spanish or Basque export formatted for the page and then dropped
    /// commas, so 664,903.2 came out as 664.9032 and 0.0 as 00.
    #[test]
    fn plain_gpu_hours_ignore_the_page_language() {
        use crate::i18n::{Lang, sync_scope};
        for lang in [Lang::En, Lang::Es, Lang::Eu] {
            let got: Vec<String> = sync_scope(lang, || {
                [664_903_200, 0, 1_029_696_000, 128_000, -1_250, 49]
                    .map(format_milli_gpu_hours_plain)
                    .to_vec()
            });
            assert_eq!(
                got,
                ["664903.2", "0.0", "1029696.0", "128.0", "-1.2", "0.0"],
                "{lang:?}"
            );
            assert_eq!(
                sync_scope(lang, || format_protected_gpu_hours(128_000, true)),
                "128.0"
            );
        }
        assert_eq!(format_milli_gpu_hours(-1_250), "-1.2");
    }
}
