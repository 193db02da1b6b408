//! Numbers, money and dates for a language, from CLDR data compiled into ICU4X.
//!
//! The formatters are built once per language and shared (ICU4X's `sync` feature makes them
//! `Send + Sync`). English keeps the ISO 8601 dates and times the interface has always shown
//! (`2026-12-02 09:30 +01:00`: CLDR's English is the United States' month-first order, which
//! the organisations using Tranche do not read); Spanish and Basque use CLDR's patterns.
//! Money is integer minor units, never a float, followed by the organisation's ISO 4217 code.

use std::sync::LazyLock;

use fixed_decimal::Decimal;
use icu_datetime::FixedCalendarDateTimeFormatter;
use icu_datetime::fieldsets::{MD, YM, YMD, YMDE, YMDT};
use icu_datetime::input::{Date, DateTime, Time};
use icu_datetime::options::TimePrecision;
use icu_decimal::DecimalFormatter;
use icu_decimal::options::DecimalFormatterOptions;

use super::Lang;

use icu_calendar::Gregorian;

struct Formatters {
    decimal: DecimalFormatter,
    long_date: FixedCalendarDateTimeFormatter<Gregorian, YMD>,
    medium_date: FixedCalendarDateTimeFormatter<Gregorian, YMD>,
    weekday_date: FixedCalendarDateTimeFormatter<Gregorian, YMDE>,
    date_time: FixedCalendarDateTimeFormatter<Gregorian, YMDT>,
    /// As `date_time`, with seconds (for an instant that has them).
    date_time_s: FixedCalendarDateTimeFormatter<Gregorian, YMDT>,
    month: FixedCalendarDateTimeFormatter<Gregorian, YM>,
    /// A month with its year, abbreviated (chart labels).
    month_short: FixedCalendarDateTimeFormatter<Gregorian, YM>,
    /// A day of a month, abbreviated, without the year (chart and table labels).
    day_month: FixedCalendarDateTimeFormatter<Gregorian, MD>,
}

fn locale(lang: Lang) -> icu_locale_core::Locale {
    lang.code().parse().expect("a valid locale")
}

fn build(lang: Lang) -> Formatters {
    let loc = locale(lang);
    let prefs = || icu_datetime::DateTimeFormatterPreferences::from(&loc);
    Formatters {
        decimal: DecimalFormatter::try_new((&loc).into(), DecimalFormatterOptions::default())
            .expect("compiled decimal data"),
        long_date: FixedCalendarDateTimeFormatter::try_new(prefs(), YMD::long())
            .expect("compiled date data"),
        medium_date: FixedCalendarDateTimeFormatter::try_new(prefs(), YMD::medium())
            .expect("compiled date data"),
        weekday_date: FixedCalendarDateTimeFormatter::try_new(prefs(), YMDE::medium())
            .expect("compiled date data"),
        date_time: FixedCalendarDateTimeFormatter::try_new(
            prefs(),
            YMDT::medium().with_time_precision(TimePrecision::Minute),
        )
        .expect("compiled date-time data"),
        date_time_s: FixedCalendarDateTimeFormatter::try_new(
            prefs(),
            YMDT::medium().with_time_precision(TimePrecision::Second),
        )
        .expect("compiled date-time data"),
        month: FixedCalendarDateTimeFormatter::try_new(prefs(), YM::long())
            .expect("compiled date data"),
        month_short: FixedCalendarDateTimeFormatter::try_new(prefs(), YM::medium())
            .expect("compiled date data"),
        day_month: FixedCalendarDateTimeFormatter::try_new(prefs(), MD::medium())
            .expect("compiled date data"),
    }
}

static FORMATTERS: LazyLock<[Formatters; 3]> =
    LazyLock::new(|| [build(Lang::En), build(Lang::Es), build(Lang::Eu)]);

fn of(lang: Lang) -> &'static Formatters {
    &FORMATTERS[match lang {
        Lang::En => 0,
        Lang::Es => 1,
        Lang::Eu => 2,
    }]
}

/// Builds every formatter now (start-up), rather than on the first page.
pub fn load() {
    LazyLock::force(&FORMATTERS);
}

/// An integer with the language's grouping: `1,234,567` (en), `1.234.567` (es, eu; Spanish
/// does not group four digits: `1234`).
pub fn integer(lang: Lang, n: i64) -> String {
    of(lang).decimal.format(&Decimal::from(n)).to_string()
}

/// A whole number as the operations pages show it: the plain digits English pages have
/// always shown (`1024`), the language's grouping otherwise (`1024` in Spanish, `1.024` in
/// Basque, as [`integer`]).
pub fn integer_in(lang: Lang, n: i64) -> String {
    match lang {
        Lang::En => n.to_string(),
        _ => integer(lang, n),
    }
}

/// [`integer_in`] in the current language.
pub fn count(n: i64) -> String {
    integer_in(super::current(), n)
}

/// `units` x 10^`exponent` with exactly `-exponent` decimals when `exponent` is negative:
/// `decimal(Lang::Eu, 123456789, -2)` is `1.234.567,89`.
pub fn decimal(lang: Lang, units: i64, exponent: i16) -> String {
    let mut d = Decimal::from(units);
    d.multiply_pow10(exponent);
    of(lang).decimal.format(&d).to_string()
}

/// `x` rounded to `decimals` places, for figures computed as floating point (GPU-hours,
/// percentages): `fixed(Lang::Eu, 13573.214, 1)` is `13.573,2`. English keeps the plain
/// `13573.2` its pages have always shown (no grouping).
pub fn fixed(lang: Lang, x: f64, decimals: u8) -> String {
    if lang == Lang::En || !x.is_finite() {
        return format!("{x:.*}", usize::from(decimals));
    }
    let units = (x * 10f64.powi(i32::from(decimals))).round() as i64;
    decimal(lang, units, -i16::from(decimals))
}

/// `x` rounded to `decimals` places with the language's CLDR grouping in every language,
/// English included: `grouped(Lang::En, 5599.04, 1)` is `5,599.0`, `grouped(Lang::Es,
/// 5599.04, 1)` is `5599,0` (Spanish does not group four digits). For figures that pages
/// show among grouped amounts (the project page's GPU-hours).
pub fn grouped(lang: Lang, x: f64, decimals: u8) -> String {
    if !x.is_finite() {
        return format!("{x:.*}", usize::from(decimals));
    }
    let units = (x * 10f64.powi(i32::from(decimals))).round() as i64;
    decimal(lang, units, -i16::from(decimals))
}

/// A duration in seconds as GPU-hours with at most two decimals, without trailing zeros and
/// with the language's grouping in every language: 54_344_340 s is `15,095.65` (en),
/// `15.095,65` (es, eu); 10_800 s is `3`. Some time under a hundredth is `< 0.01` (`< 0,01`),
/// not `0` (found by a new-user check: "0.01 USD ... for 0 GPU-hours").
pub fn gpu_hours(seconds: i64) -> String {
    let hundredths = (seconds as f64 / 36.0).round() as i64;
    if hundredths == 0 && seconds > 0 {
        return format!("< {}", decimal_trimmed(super::current(), 1, -2));
    }
    decimal_trimmed(super::current(), hundredths, -2)
}

/// A plain decimal as Rust writes it (`1234.56`, `-0.5`, `12`) in `lang`: itself in English,
/// with the language's separators otherwise (`1.234,56` in Basque); text that is no such
/// number comes back as it is.
pub fn from_plain(lang: Lang, text: &str) -> String {
    if lang == Lang::En {
        return text.to_string();
    }
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = whole.strip_prefix('-').unwrap_or(whole);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 18
    {
        return text.to_string();
    }
    match format!("{whole}{frac}").parse::<i64>() {
        Ok(units) => decimal(lang, units, -(frac.len() as i16)),
        Err(_) => text.to_string(),
    }
}

/// Like [`decimal`] but without trailing zeros after the separator: `12,5` and `12`, not
/// `12,50` and `12,00` (shares, GPU counts).
pub fn decimal_trimmed(lang: Lang, units: i64, exponent: i16) -> String {
    let mut d = Decimal::from(units);
    d.multiply_pow10(exponent);
    d.absolute.trim_end();
    of(lang).decimal.format(&d).to_string()
}

/// Basis points as a percentage number in the current language, without the sign:
/// 1250 is `12.5` (en) or `12,5` (es, eu).
pub fn basis_points(bp: i64) -> String {
    decimal_trimmed(super::current(), bp, -2)
}

/// Basis points as a percentage with the language's sign and spacing (the `percent`
/// message): 1250 is `12.5%` (en), `12,5 %` (es), `% 12,5` (eu).
pub fn percent_bp(bp: i64) -> String {
    super::t1("percent", "n", basis_points(bp))
}

/// An amount in minor units (two decimals) with the currency's ISO code after it:
/// `12,345.67 EUR` (en), `12.345,67 EUR` (es, eu).
pub fn money(lang: Lang, minor: i64, currency: &str) -> String {
    format!("{} {currency}", decimal(lang, minor, -2))
}

fn icu_date(d: jiff::civil::Date) -> Option<Date<Gregorian>> {
    Date::try_new_gregorian(i32::from(d.year()), d.month() as u8, d.day() as u8).ok()
}

/// A date in the long form: `2026-12-02` (en), `2 de diciembre de 2026` (es),
/// `2026(e)ko abenduaren 2(a)` (eu).
pub fn long_date(lang: Lang, d: jiff::civil::Date) -> String {
    match (lang, icu_date(d)) {
        (Lang::En, _) | (_, None) => d.to_string(),
        (_, Some(date)) => of(lang).long_date.format(&date).to_string(),
    }
}

/// The month of `d` with its year: `December 2026` (en), `diciembre de 2026` (es),
/// `2026(e)ko abendua` (eu).
pub fn month_year(lang: Lang, d: jiff::civil::Date) -> String {
    match (lang, icu_date(d)) {
        (Lang::En, _) | (_, None) => d.strftime("%B %Y").to_string(),
        (_, Some(date)) => of(lang).month.format(&date).to_string(),
    }
}

/// The month of `d` with its year, abbreviated, for chart labels and period choices where a
/// page lists many: `2026-12` (en, the period's name), `dic 2026` (es), `2026 abe.` (eu).
pub fn month_short(lang: Lang, d: jiff::civil::Date) -> String {
    match (lang, icu_date(d)) {
        (Lang::En, _) | (_, None) => d.strftime("%Y-%m").to_string(),
        (_, Some(date)) => of(lang).month_short.format(&date).to_string(),
    }
}

/// The day and month of `d` without the year, for a month's days in a table or chart:
/// `12-02` (en), `2 dic` (es), `abe. 2` (eu).
pub fn day_month(lang: Lang, d: jiff::civil::Date) -> String {
    match (lang, icu_date(d)) {
        (Lang::En, _) | (_, None) => d.strftime("%m-%d").to_string(),
        (_, Some(date)) => of(lang).day_month.format(&date).to_string(),
    }
}

/// A date in the medium form: `2026-12-02` (en), `2 dic 2026` (es), `2026 abe. 2(a)` (eu).
pub fn medium_date(lang: Lang, d: jiff::civil::Date) -> String {
    match (lang, icu_date(d)) {
        (Lang::En, _) | (_, None) => d.to_string(),
        (_, Some(date)) => of(lang).medium_date.format(&date).to_string(),
    }
}

/// A date with its weekday, for the capacity calendar's rows: `Mon 2026-12-07` (en, as it
/// has always been), CLDR's medium form otherwise.
pub fn weekday_date(lang: Lang, d: jiff::civil::Date) -> String {
    match (lang, icu_date(d)) {
        (Lang::En, _) | (_, None) => d.strftime("%a %Y-%m-%d").to_string(),
        (_, Some(date)) => of(lang).weekday_date.format(&date).to_string(),
    }
}

/// An instant in the organisation's time zone `tz`, to the minute, with its UTC offset:
/// `2026-12-02 09:30 +01:00` (en), `2 dic 2026, 09:30 +01:00` (es),
/// `2026 abe. 2(a) (09:30) +01:00` (eu: CLDR puts the time in parentheses).
pub fn instant(lang: Lang, ts: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> String {
    instant_with(lang, ts, tz, false)
}

/// As [`instant`], with the seconds when the instant has any (`09:30:15`): for instants a
/// person typed, such as a contract's window, so they read back as typed.
pub fn exact_instant(lang: Lang, ts: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> String {
    instant_with(lang, ts, tz, true)
}

fn instant_with(lang: Lang, ts: jiff::Timestamp, tz: &jiff::tz::TimeZone, exact: bool) -> String {
    let z = ts.to_zoned(tz.clone());
    let offset = z.strftime("%:z");
    let seconds = exact && z.second() != 0;
    let plain = if seconds {
        "%Y-%m-%d %H:%M:%S %:z"
    } else {
        "%Y-%m-%d %H:%M %:z"
    };
    if lang == Lang::En {
        return z.strftime(plain).to_string();
    }
    let civil = z.datetime();
    let date = icu_date(civil.date());
    let time = Time::try_new(
        civil.hour() as u8,
        civil.minute() as u8,
        civil.second() as u8,
        0,
    )
    .ok();
    let formatter = if seconds {
        &of(lang).date_time_s
    } else {
        &of(lang).date_time
    };
    match (date, time) {
        (Some(date), Some(time)) => {
            format!("{} {offset}", formatter.format(&DateTime { date, time }))
        }
        _ => z.strftime(plain).to_string(),
    }
}

/// A duration in seconds as hours without trailing zeros, in the current language: `1.98` in
/// English (as [`crate::domain::format_hours`] writes it), `1,98` in Spanish and Basque
/// (rounded half up to hundredths).
pub fn hours(seconds: i64) -> String {
    crate::domain::format_hours(seconds)
}

/// A duration in words (units the same in every language): `45 min`, `2 h`, `1 h 30 min`, `11 h 45 min 4 s`, `0 min`.
pub fn duration(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    let parts: Vec<String> = [(h, "h"), (m, "min"), (s, "s")]
        .iter()
        .filter(|(n, _)| *n != 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect();
    if parts.is_empty() {
        "0 min".into()
    } else {
        parts.join(" ")
    }
}

/// Thousandths as a decimal without trailing zeros, in the current language: `1.5` in
/// English (as [`crate::domain::format_milli`] writes it), `1,5` in Spanish and Basque.
pub fn milli(v: i64) -> String {
    match super::current() {
        Lang::En => crate::domain::format_milli(v),
        lang => decimal_trimmed(lang, v, -3),
    }
}

/// A number with one decimal, in the current language: `1234.5` in English (Rust's `{:.1}`,
/// as English pages have always written it), `1234,5` and `1.234,5` in Spanish and Basque.
pub fn tenths(v: f64) -> String {
    fixed(super::current(), v, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every expected value below is written out by hand from CLDR's rules for the language,
    // not produced by the formatter.

    #[test]
    fn durations_read_as_words() {
        assert_eq!(duration(2700), "45 min");
        assert_eq!(duration(7200), "2 h");
        assert_eq!(duration(5400), "1 h 30 min");
        assert_eq!(duration(90), "1 min 30 s");
        assert_eq!(duration(42_304), "11 h 45 min 4 s");
        assert_eq!(duration(0), "0 min");
    }

    #[test]
    fn a_moment_of_gpu_time_is_not_zero_hours() {
        // English outside a page.
        assert_eq!(gpu_hours(10), "< 0.01");
        assert_eq!(gpu_hours(0), "0");
        assert_eq!(gpu_hours(18), "0.01");
        assert_eq!(gpu_hours(10_800), "3");
    }

    #[test]
    fn numbers() {
        assert_eq!(decimal(Lang::En, 123_456_789, -2), "1,234,567.89");
        assert_eq!(decimal(Lang::Es, 123_456_789, -2), "1.234.567,89");
        assert_eq!(decimal(Lang::Eu, 123_456_789, -2), "1.234.567,89");
        assert_eq!(integer(Lang::En, 1234), "1,234");
        assert_eq!(integer(Lang::Es, 1234), "1234");
        assert_eq!(integer(Lang::Eu, 1234), "1.234");
        assert_eq!(integer(Lang::Es, 12_345), "12.345");
        // CLDR's Basque writes the minus sign U+2212.
        assert_eq!(integer(Lang::Eu, -12_345), "\u{2212}12.345");
        assert_eq!(integer(Lang::Es, -12_345), "-12.345");
        assert_eq!(decimal_trimmed(Lang::En, 1250, -2), "12.5");
        assert_eq!(decimal_trimmed(Lang::Es, 1250, -2), "12,5");
        assert_eq!(decimal_trimmed(Lang::Eu, 1200, -2), "12");
        assert_eq!(fixed(Lang::En, 13_573.214, 1), "13573.2");
        assert_eq!(fixed(Lang::Eu, 13_573.214, 1), "13.573,2");
        assert_eq!(fixed(Lang::Es, 1_234.56, 0), "1235");
        assert_eq!(fixed(Lang::Es, 0.05, 1), "0,1");
        assert_eq!(grouped(Lang::En, 5_599.04, 1), "5,599.0");
        assert_eq!(grouped(Lang::Es, 5_599.04, 1), "5599,0");
        assert_eq!(grouped(Lang::Eu, 15_095.65, 1), "15.095,7");
        assert_eq!(grouped(Lang::Es, 15_095.65, 2), "15.095,65");
    }

    #[test]
    fn money_keeps_minor_units_and_the_currency_code() {
        assert_eq!(money(Lang::En, 1_234_567, "EUR"), "12,345.67 EUR");
        assert_eq!(money(Lang::Es, 1_234_567, "EUR"), "12.345,67 EUR");
        assert_eq!(money(Lang::Eu, 123_456_789, "EUR"), "1.234.567,89 EUR");
        assert_eq!(money(Lang::Eu, -5, "USD"), "\u{2212}0,05 USD");
        assert_eq!(money(Lang::Es, -5, "USD"), "-0,05 USD");
        assert_eq!(money(Lang::En, 0, "USD"), "0.00 USD");
    }

    #[test]
    fn dates() {
        let d = jiff::civil::date(2026, 12, 2);
        assert_eq!(long_date(Lang::En, d), "2026-12-02");
        assert_eq!(long_date(Lang::Es, d), "2 de diciembre de 2026");
        assert_eq!(long_date(Lang::Eu, d), "2026(e)ko abenduaren 2(a)");
        assert_eq!(medium_date(Lang::Es, d), "2 dic 2026");
        assert_eq!(month_year(Lang::En, d), "December 2026");
        assert_eq!(month_year(Lang::Es, d), "diciembre de 2026");
        assert_eq!(month_year(Lang::Eu, d), "2026(e)ko abendua");
        assert_eq!(medium_date(Lang::Eu, d), "2026 abe. 2(a)");
        // CLDR's yMMM and MMMd skeletons: es "MMM y", "d MMM"; eu "y MMM", "MMM d(a)".
        assert_eq!(month_short(Lang::En, d), "2026-12");
        assert_eq!(month_short(Lang::Es, d), "dic 2026");
        assert_eq!(month_short(Lang::Eu, d), "2026 abe.");
        assert_eq!(day_month(Lang::En, d), "12-02");
        assert_eq!(day_month(Lang::Es, d), "2 dic");
        assert_eq!(day_month(Lang::Eu, d), "abe. 2(a)");
    }

    #[test]
    fn calendar_days_with_their_weekday() {
        let d = jiff::civil::date(2026, 12, 2);
        assert_eq!(weekday_date(Lang::En, d), "Wed 2026-12-02");
        assert_eq!(weekday_date(Lang::Es, d), "mié, 2 dic 2026");
        assert_eq!(weekday_date(Lang::Eu, d), "2026 abe. 2(a), az.");
    }

    #[test]
    fn plain_decimals_and_counts() {
        assert_eq!(from_plain(Lang::En, "1234.56"), "1234.56");
        assert_eq!(from_plain(Lang::Es, "1234.56"), "1234,56");
        assert_eq!(from_plain(Lang::Eu, "12345.6"), "12.345,6");
        assert_eq!(from_plain(Lang::Eu, "-0.5"), "\u{2212}0,5");
        assert_eq!(from_plain(Lang::Es, "0.953"), "0,953");
        assert_eq!(from_plain(Lang::Es, "12"), "12");
        assert_eq!(from_plain(Lang::Eu, "NaN"), "NaN");
        assert_eq!(integer_in(Lang::En, 1024), "1024");
        assert_eq!(integer_in(Lang::Es, 1024), "1024");
        assert_eq!(integer_in(Lang::Eu, 1024), "1.024");
    }

    #[test]
    fn instants_in_the_organisation_time_zone() {
        let tz = jiff::tz::TimeZone::get("Europe/Madrid").expect("bundled tz");
        let ts: jiff::Timestamp = "2026-12-02T08:30:00Z".parse().expect("an instant");
        assert_eq!(instant(Lang::En, ts, &tz), "2026-12-02 09:30 +01:00");
        assert_eq!(instant(Lang::Es, ts, &tz), "2 dic 2026, 09:30 +01:00");
        assert_eq!(instant(Lang::Eu, ts, &tz), "2026 abe. 2(a) (09:30) +01:00");
        // A typed instant with seconds shows them (a window typed to the second reads as typed).
        let ts: jiff::Timestamp = "2026-12-02T08:30:15Z".parse().expect("an instant");
        assert_eq!(instant(Lang::En, ts, &tz), "2026-12-02 09:30 +01:00");
        assert_eq!(
            exact_instant(Lang::En, ts, &tz),
            "2026-12-02 09:30:15 +01:00"
        );
        assert_eq!(
            exact_instant(Lang::Es, ts, &tz),
            "2 dic 2026, 09:30:15 +01:00"
        );
    }

    #[test]
    fn counts_hours_and_decimals_in_the_current_language() {
        let all = |lang| {
            super::super::sync_scope(lang, || {
                (count(12_345), hours(7125), milli(1500), tenths(1234.56))
            })
        };
        assert_eq!(
            all(Lang::En),
            ("12345".into(), "1.98".into(), "1.5".into(), "1234.6".into())
        );
        let gpu_hours_in = |lang| {
            super::super::sync_scope(lang, || {
                (gpu_hours(54_344_340), gpu_hours(10_800), gpu_hours(7125))
            })
        };
        assert_eq!(
            gpu_hours_in(Lang::En),
            ("15,095.65".into(), "3".into(), "1.98".into())
        );
        assert_eq!(
            gpu_hours_in(Lang::Es),
            ("15.095,65".into(), "3".into(), "1,98".into())
        );
        assert_eq!(
            all(Lang::Es),
            (
                "12.345".into(),
                "1,98".into(),
                "1,5".into(),
                "1234,6".into()
            )
        );
        assert_eq!(
            all(Lang::Eu),
            (
                "12.345".into(),
                "1,98".into(),
                "1,5".into(),
                "1.234,6".into()
            )
        );
    }
}
