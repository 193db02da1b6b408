//! Alerts (in-app notifications and e-mails) in their reader's language.
//!
//! A budget or use-case alert, and an AI use case's "stop rule triggered", stores, beside its English message (`notifications.message`, kept
//! for old rows and English readers), a [`Notice`] in `notifications.note`; the home page
//! renders it in the reader's language, and e-mails go out in each recipient's language
//! ([`recipient_languages`]).

use serde::{Deserialize, Serialize};

use super::{Lang, format, message};

/// What an alert says, structured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "notice", rename_all = "snake_case")]
pub enum Notice {
    /// A project's spend reached a threshold of its period budget.
    Budget {
        /// The project's name.
        project: String,
        /// The threshold, percent.
        pct: i32,
        /// `actual` or `forecast`.
        kind: String,
        /// The period's first day, in the organisation's time zone.
        month: jiff::civil::Date,
        /// Spend (or forecast), minor units.
        amount: i64,
        /// The period budget, minor units.
        budget: i64,
    },
    /// An AI use case's spend reached a threshold of its monthly limit.
    UseCase {
        /// The use case's name.
        use_case: String,
        /// The threshold, percent.
        pct: i32,
        /// `actual` or `forecast`.
        kind: String,
        /// The month's first day, in the organisation's time zone.
        month: jiff::civil::Date,
        /// Spend (or forecast), minor units.
        amount: i64,
        /// The monthly limit, minor units.
        limit: i64,
    },
    /// A run has held its GPUs idle past the site's limit (runs::idle).
    Idle {
        /// The run.
        run: i64,
        /// Its project's name.
        project: String,
        /// GPUs it holds.
        gpus: i32,
        /// Their model.
        gpu_model: String,
        /// The utilization threshold, percent.
        threshold_pct: i32,
        /// Since when its GPUs were all under it.
        since: jiff::Timestamp,
        /// The organisation's time zone (IANA name) the instant is shown in.
        zone: String,
        /// GPU-seconds held idle so far.
        gpu_seconds: i64,
        /// Their value at the model's billing weight and price, minor units; `None` for a
        /// free (unallocated) run, which is charged nothing.
        value: Option<i64>,
    },
    /// An AI use case of the critical-systems bag raised "stop rule triggered".
    StopRule {
        /// The use case's name.
        use_case: String,
        /// Why it was raised.
        reason: StopReason,
    },
}

/// Why an AI use case's stop rule was triggered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum StopReason {
    /// Its owner reported that the stop criterion is met, in their words.
    Criterion {
        /// What the owner wrote.
        text: String,
    },
    /// Its actual spend reached its monthly limit.
    Limit {
        /// The month's first day, in the organisation's time zone.
        month: jiff::civil::Date,
        /// Spend, minor units.
        amount: i64,
        /// The monthly limit, minor units.
        limit: i64,
    },
}

impl StopReason {
    /// The reason in `lang`, money in `currency`: in English, the text stored with the trigger
    /// (`stop criterion met: ...`, `spent 120.00 EUR of its November 2026 limit of 100.00 EUR`).
    pub fn message(&self, lang: Lang, currency: &str) -> String {
        match self {
            StopReason::Criterion { text } => {
                message(lang, "ai-stop-reason-criterion", &[("text", text)])
            }
            StopReason::Limit {
                month,
                amount,
                limit,
            } => message(
                lang,
                "ai-stop-reason-limit",
                &[
                    ("amount", &format::money(lang, *amount, currency)),
                    ("month", &format::month_year(lang, *month)),
                    ("limit", &format::money(lang, *limit, currency)),
                ],
            ),
        }
    }
}

impl Notice {
    /// The notification's text in `lang`, money in `currency`.
    pub fn message(&self, lang: Lang, currency: &str) -> String {
        match self {
            Notice::Budget {
                project,
                pct,
                kind,
                month,
                amount,
                budget,
            } => message(
                lang,
                // Past the whole budget, the threshold crossed (at most 100%) would understate it.
                match (kind == "actual", amount > budget) {
                    (true, false) => "alert-budget-actual",
                    (true, true) => "alert-budget-actual-over",
                    (false, false) => "alert-budget-forecast",
                    (false, true) => "alert-budget-forecast-over",
                },
                &[
                    ("project", project),
                    ("pct", pct),
                    ("month", &format::month_year(lang, *month)),
                    ("amount", &format::money(lang, *amount, currency)),
                    ("budget", &format::money(lang, *budget, currency)),
                ],
            ),
            Notice::UseCase {
                use_case,
                pct,
                kind,
                month,
                amount,
                limit,
            } => message(
                lang,
                match (kind == "actual", amount > limit) {
                    (true, false) => "alert-use-case-actual",
                    (true, true) => "alert-use-case-actual-over",
                    (false, false) => "alert-use-case-forecast",
                    (false, true) => "alert-use-case-forecast-over",
                },
                &[
                    ("name", use_case),
                    ("pct", pct),
                    ("month", &format::month_year(lang, *month)),
                    ("amount", &format::money(lang, *amount, currency)),
                    ("limit", &format::money(lang, *limit, currency)),
                ],
            ),
            Notice::Idle {
                run,
                project,
                gpus,
                gpu_model,
                threshold_pct,
                since,
                zone,
                gpu_seconds,
                value,
            } => {
                let tz = jiff::tz::TimeZone::get(zone).unwrap_or(jiff::tz::TimeZone::UTC);
                let hours = if lang == Lang::En {
                    crate::domain::format_hours(*gpu_seconds)
                } else {
                    format::decimal_trimmed(lang, (*gpu_seconds as f64 / 36.0).round() as i64, -2)
                };
                let (run, gpus, pct) =
                    (run.to_string(), gpus.to_string(), threshold_pct.to_string());
                let since = format::instant(lang, *since, &tz);
                let mut args: Vec<(&str, &dyn super::Arg)> = vec![
                    ("run", &run),
                    ("project", project),
                    ("gpus", &gpus),
                    ("model", gpu_model),
                    ("pct", &pct),
                    ("since", &since),
                    ("hours", &hours),
                ];
                let money = value.map(|v| format::money(lang, v, currency));
                match &money {
                    Some(m) => {
                        args.push(("value", m));
                        message(lang, "alert-idle", &args)
                    }
                    None => message(lang, "alert-idle-free", &args),
                }
            }
            Notice::StopRule { use_case, reason } => message(
                lang,
                "ai-stop-notice",
                &[
                    ("name", use_case),
                    ("reason", &reason.message(lang, currency)),
                ],
            ),
        }
    }

    /// The e-mail's subject and body in `lang`, `link` the page it points to.
    pub fn mail(&self, lang: Lang, currency: &str, link: &str) -> (String, String) {
        let (subject, see) = match self {
            Notice::Budget {
                project, pct, kind, ..
            } => (
                message(
                    lang,
                    "alert-budget-subject",
                    &[("project", project), ("pct", pct), ("kind", kind)],
                ),
                message(lang, "alert-see-project", &[]),
            ),
            Notice::UseCase {
                use_case,
                pct,
                kind,
                ..
            } => (
                message(
                    lang,
                    "alert-use-case-subject",
                    &[("name", use_case), ("pct", pct), ("kind", kind)],
                ),
                message(lang, "alert-see-use-case", &[]),
            ),
            Notice::StopRule { use_case, .. } => (
                message(lang, "ai-stop-subject", &[("name", use_case)]),
                message(lang, "alert-see-use-case", &[]),
            ),
            Notice::Idle { run, .. } => (
                message(lang, "alert-idle-subject", &[("run", &run.to_string())]),
                message(lang, "alert-see-run", &[]),
            ),
        };
        let body = format!("{}.\n\n{see}: {link}\n", self.message(lang, currency));
        (subject, body)
    }
}

/// Each recipient's language: their own choice, else the organisation's default.
///
/// # Errors
/// Database errors.
pub async fn recipient_languages(
    db: impl sqlx::PgExecutor<'_>,
    users: &[i64],
) -> Result<Vec<(i64, Lang)>, sqlx::Error> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT u.id, coalesce(u.language, o.default_language, 'en') FROM users u \
         LEFT JOIN org_settings o ON o.id WHERE u.id = ANY($1) ORDER BY u.id",
    )
    .bind(users)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, code)| (id, Lang::parse(&code).unwrap_or(Lang::En)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(kind: &str) -> Notice {
        Notice::Budget {
            project: "p1".into(),
            pct: 50,
            kind: kind.into(),
            month: jiff::civil::date(2026, 12, 1),
            amount: 6_000,
            budget: 1_000_000,
        }
    }

    #[test]
    fn a_budget_alert_in_three_languages() {
        assert_eq!(
            budget("actual").message(Lang::En, "USD"),
            "p1 has spent 50% of its December 2026 budget: 60.00 USD of 10,000.00 USD"
        );
        assert_eq!(
            budget("actual").message(Lang::Es, "USD"),
            "p1 ha gastado el 50 % de su presupuesto de diciembre de 2026: 60,00 USD de 10.000,00 USD"
        );
        assert_eq!(
            budget("forecast").message(Lang::Eu, "USD"),
            "p1 proiektuak aldiaren amaierarako aurrekontuaren % 50 gastatuko duela aurreikusten da (2026(e)ko abendua): 60,00 USD / 10.000,00 USD"
        );
        let (subject, body) = budget("actual").mail(Lang::Eu, "USD", "/projects/7");
        assert_eq!(subject, "Tranche aurrekontu-alerta: p1, % 50 (benetakoa)");
        assert_eq!(
            body,
            "p1 proiektuak aurrekontuaren % 50 gastatu du (2026(e)ko abendua): 60,00 USD / 10.000,00 USD.\n\nIkusi proiektua: /projects/7\n"
        );
    }

    /// Past the whole budget the notice says so, not the highest threshold crossed (found by
    /// a new-user check: "has spent 90% ...: 31,408.34 EUR of 1.00 EUR").
    #[test]
    fn a_budget_alert_past_the_budget_says_more_than_it() {
        let notice = |kind: &str, amount: i64, budget: i64, pct: i32| Notice::Budget {
            project: "p1".into(),
            pct,
            kind: kind.into(),
            month: jiff::civil::date(2026, 12, 1),
            amount,
            budget,
        };
        let over = |kind: &str| notice(kind, 3_140_834, 100, 90);
        assert_eq!(
            over("actual").message(Lang::En, "EUR"),
            "p1 has spent more than its December 2026 budget: 31,408.34 EUR of 1.00 EUR"
        );
        assert_eq!(
            over("forecast").message(Lang::Es, "EUR"),
            "Se prevé que p1 gaste más que su presupuesto de diciembre de 2026 al final del periodo: 31.408,34 EUR de 1,00 EUR"
        );
        // At the budget exactly, the threshold reached is the truth.
        let at = notice("actual", 100, 100, 100);
        assert!(at.message(Lang::En, "EUR").contains("has spent 100% of"));
    }

    #[test]
    fn an_idle_notice_in_three_languages() {
        let idle = |value| Notice::Idle {
            run: 42,
            project: "p1".into(),
            gpus: 2,
            gpu_model: "H100".into(),
            threshold_pct: 5,
            since: "2026-12-07T07:38:00Z".parse().unwrap(),
            zone: "Europe/Madrid".into(),
            gpu_seconds: 2 * 2700,
            value,
        };
        assert_eq!(
            idle(Some(315)).message(Lang::En, "EUR"),
            "Run 42 (p1) holds 2 H100 GPUs idle (all under 5% utilization) since 2026-12-07 08:38 +01:00: 1.5 GPU-hours, 3.15 EUR so far"
        );
        assert!(
            idle(Some(315))
                .message(Lang::Es, "EUR")
                .ends_with("1,5 GPU-horas, 3,15 EUR hasta ahora"),
            "{}",
            idle(Some(315)).message(Lang::Es, "EUR")
        );
        let free = idle(None).message(Lang::Eu, "EUR");
        assert!(free.contains("1,5 GPU-ordu orain arte (doako"), "{free}");
        assert!(!free.contains("EUR"), "{free}");
        let (subject, body) = idle(None).mail(Lang::Es, "EUR", "/runs/42");
        assert_eq!(subject, "Tranche: la ejecución 42 tiene GPU ociosas");
        assert!(body.ends_with("Ver la ejecución: /runs/42\n"), "{body}");
    }

    #[test]
    fn a_stop_rule_notice_in_three_languages() {
        let limit = Notice::StopRule {
            use_case: "Pager triage".into(),
            reason: StopReason::Limit {
                month: jiff::civil::date(2026, 11, 1),
                amount: 12_000,
                limit: 10_000,
            },
        };
        // English: the text stored in `notifications.message` (src/ai/mod.rs).
        assert_eq!(
            limit.message(Lang::En, "EUR"),
            "Stop rule triggered for Pager triage (critical systems): spent 120.00 EUR of its \
             November 2026 limit of 100.00 EUR. Tranche cannot stop an outside service: stop it, \
             then acknowledge on the use case's page"
        );
        assert_eq!(
            limit.message(Lang::Es, "EUR"),
            "Regla de parada activada para Pager triage (sistemas críticos): ha gastado 120,00 EUR; \
             su límite de noviembre de 2026 es de 100,00 EUR. Tranche no puede detener un servicio \
             externo: detenlo tú y después confírmalo en la página del caso de uso"
        );
        assert_eq!(
            limit.message(Lang::Eu, "EUR"),
            "Pager triage erabilera-kasuaren gelditze-araua aktibatu da (sistema kritikoak): \
             120,00 EUR gastatu ditu; muga: 100,00 EUR (2026(e)ko azaroa). Tranche-k ezin du \
             kanpoko zerbitzu bat gelditu: gelditu zuk, eta gero berretsi erabilera-kasuaren orrian"
        );
        let criterion = StopReason::Criterion {
            text: "a reply went out unreviewed".into(),
        };
        assert_eq!(
            criterion.message(Lang::En, "EUR"),
            "stop criterion met: a reply went out unreviewed"
        );
        assert_eq!(
            criterion.message(Lang::Eu, "EUR"),
            "gelditze-irizpidea bete da: a reply went out unreviewed"
        );
        let (subject, body) = limit.mail(Lang::Eu, "EUR", "/ai/3");
        assert_eq!(
            subject,
            "Tranche AA erabilera-kasua: Pager triage erabilera-kasuaren gelditze-araua aktibatu da"
        );
        assert!(
            body.ends_with(".\n\nIkusi erabilera-kasua: /ai/3\n"),
            "{body}"
        );
    }
}
