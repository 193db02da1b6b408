//! Server-side SVG charts, drawn with `plotters` (SVG backend, no system fonts needed): stacked
//! bars of contract and run spend (spend reports), and two series per label, stacked or side by
//! side (the metrics dashboard). Legends and axis names are in the current language.

use plotters::prelude::*;

use crate::i18n;

/// One bar: a label and two stacked amounts in minor units (contracts, runs).
pub type Bar = (String, i64, i64);

const CONTRACTS: RGBColor = RGBColor(47, 91, 211);
const RUNS: RGBColor = RGBColor(33, 150, 110);

/// Draws stacked bars (contracts below, runs above) with a legend; amounts in major units of
/// `currency`. Returns the SVG document, or an empty string when drawing fails.
pub fn stacked_bars(title: &str, bars: &[Bar], currency: &str) -> String {
    let major: Vec<(String, f64, f64)> = bars
        .iter()
        .map(|(l, c, r)| (l.clone(), *c as f64 / 100.0, *r as f64 / 100.0))
        .collect();
    let (contracts, runs) = (i18n::t("chart-contracts"), i18n::t("chart-runs"));
    two_series(
        title,
        &major,
        (&contracts, &runs),
        currency,
        Arrangement::Stacked,
    )
}

/// How [`two_series`] draws its two values per label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrangement {
    /// The second value on top of the first.
    Stacked,
    /// The two bars next to each other.
    SideBySide,
}

/// Draws two values per label (`(label, first, second)`) as stacked or side-by-side bars,
/// with a legend of `names` and the y axis described by `y_desc`. Returns the SVG document,
/// or an empty string when drawing fails.
pub fn two_series(
    title: &str,
    bars: &[(String, f64, f64)],
    names: (&str, &str),
    y_desc: &str,
    arrangement: Arrangement,
) -> String {
    let mut svg = String::new();
    if draw_two(&mut svg, title, bars, names, y_desc, arrangement).is_err() {
        tracing::warn!(title, "chart drawing failed");
        return String::new();
    }
    svg
}

fn draw_two(
    svg: &mut String,
    title: &str,
    bars: &[(String, f64, f64)],
    names: (&str, &str),
    y_desc: &str,
    arrangement: Arrangement,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(svg, (640, 280)).into_drawing_area();
    root.fill(&WHITE)?;
    let stacked = arrangement == Arrangement::Stacked;
    let max = bars
        .iter()
        .map(|(_, a, b)| if stacked { a + b } else { a.max(*b) })
        .fold(0.0_f64, f64::max)
        .max(1.0)
        * 1.15;
    let n = bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(28)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5_f64..(n - 0.5), 0.0_f64..max)?;
    let labels: Vec<String> = bars.iter().map(|(l, _, _)| l.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len().max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .y_label_formatter(&|y| axis_number(*y, max))
        .draw()?;
    let first = |i: usize, a: f64| {
        let x = i as f64;
        let (l, r) = if stacked {
            (x - 0.35, x + 0.35)
        } else {
            (x - 0.35, x)
        };
        Rectangle::new([(l, 0.0), (r, a)], CONTRACTS.filled())
    };
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, a, _))| first(i, *a)))?
        .label(names.0)
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], CONTRACTS.filled()));
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, a, b))| {
            let x = i as f64;
            if stacked {
                Rectangle::new([(x - 0.35, *a), (x + 0.35, a + b)], RUNS.filled())
            } else {
                Rectangle::new([(x, 0.0), (x + 0.35, *b)], RUNS.filled())
            }
        }))?
        .label(names.1)
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], RUNS.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}

/// One day of an owed-versus-received chart: label, owed to date, received to date (GPU-hours).
pub type OwedPoint = (String, f64, f64);

const OWED: RGBColor = RGBColor(120, 120, 120);

/// Draws owed (hour by hour, entitlement capped at demand: docs/design.md section 5) and received GPU-hours, cumulative per day of the period,
/// as two lines with a legend. Returns the SVG document, or an empty string when drawing fails.
pub fn owed_received(title: &str, points: &[OwedPoint]) -> String {
    let mut svg = String::new();
    if draw_owed(&mut svg, title, points).is_err() {
        tracing::warn!(title, "chart drawing failed");
        return String::new();
    }
    svg
}

fn draw_owed(
    svg: &mut String,
    title: &str,
    points: &[OwedPoint],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(svg, (640, 260)).into_drawing_area();
    root.fill(&WHITE)?;
    let max = points
        .iter()
        .map(|(_, o, r)| o.max(*r))
        .fold(0.0_f64, f64::max)
        .max(1.0)
        * 1.1;
    let n = points.len().max(2) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(28)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0_f64..(n - 1.0), 0.0_f64..max)?;
    let labels: Vec<String> = points.iter().map(|(l, _, _)| l.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(points.len().clamp(2, 8))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(i18n::t("chart-gpu-hours"))
        .y_label_formatter(&|y| axis_number(*y, max))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            points
                .iter()
                .enumerate()
                .map(|(i, (_, o, _))| (i as f64, *o)),
            OWED.stroke_width(2),
        ))?
        .label(i18n::t("chart-owed"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], OWED.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(
            points
                .iter()
                .enumerate()
                .map(|(i, (_, _, r))| (i as f64, *r)),
            RUNS.stroke_width(2),
        ))?
        .label(i18n::t("chart-received"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], RUNS.stroke_width(2)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// A y-axis number in the page's language (CLDR grouping): whole below an axis top of 10 or
/// more, else with the decimals its ticks need (0.2, 0.4, ... on a top of 1.15, which whole
/// numbers would label 0, 0, 0, 1, 1).
fn axis_number(y: f64, top: f64) -> String {
    let decimals = if top >= 10.0 {
        0
    } else if top >= 1.0 {
        1
    } else {
        2
    };
    i18n::format::grouped(i18n::current(), y, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_an_svg_with_the_labels() {
        let svg = stacked_bars(
            "Spend",
            &[
                ("2026-10".into(), 12_000, 3_000),
                ("2026-11".into(), 0, 500),
            ],
            "USD",
        );
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains("2026-10")
                && svg.contains("2026-11")
                && svg.contains("capacity contracts")
        );
        assert!(svg.matches("<rect").count() >= 4);
    }

    /// The y axis's numbers are grouped as the page's language writes them (CLDR).
    #[test]
    fn axis_numbers_follow_the_language() {
        let bars = [("2026-11".into(), 20_000_000, 0)];
        let draw = |lang| i18n::sync_scope(lang, || stacked_bars("Spend", &bars, "USD"));
        let (en, es) = (draw(i18n::Lang::En), draw(i18n::Lang::Es));
        assert!(en.contains("\n100,000\n"), "{en}");
        assert!(es.contains("\n100.000\n"), "{es}");
        assert!(!en.contains("\n100000\n") && !es.contains("\n100000\n"));
    }

    /// Ticks of a small axis keep their decimals (they read 0, 0, 0, 1, 1 rounded).
    #[test]
    fn a_small_axis_keeps_its_decimals() {
        let svg = i18n::sync_scope(i18n::Lang::En, || {
            owed_received(
                "small",
                &[("12-01".into(), 0.4, 0.2), ("12-02".into(), 1.0, 0.9)],
            )
        });
        assert!(svg.contains("\n0.2\n") || svg.contains(">0.2<"), "{svg}");
        let es = i18n::sync_scope(i18n::Lang::Es, || {
            owed_received(
                "small",
                &[("12-01".into(), 0.4, 0.2), ("12-02".into(), 1.0, 0.9)],
            )
        });
        assert!(es.contains("\n0,2\n") || es.contains(">0,2<"), "{es}");
    }

    #[test]
    fn owed_received_draws_two_labelled_lines() {
        let svg = owed_received(
            "fm: owed vs received",
            &[("12-01".into(), 10.0, 4.0), ("12-02".into(), 20.0, 18.0)],
        );
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains("owed (entitlement capped at demand)")
                && svg.contains("received (allocated)")
        );
        assert!(svg.contains("12-01") && svg.contains("12-02"));
        assert!(svg.matches("<polyline").count() >= 2, "{svg}");
    }
}
