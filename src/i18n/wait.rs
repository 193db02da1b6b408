//! Waiting reasons in the viewer's language.
//!
//! The scheduling pass stores, beside the English text in `runs.wait_reason` (kept for the
//! API), a [`WaitNote`] in `runs.wait_note` (jsonb): the core's [`WaitReason`] with the names
//! and counts its words need. Pages render it at view time with [`WaitNote::render`].

use serde::{Deserialize, Serialize};

use super::{Arg, Lang, format, message};
use crate::scheduler::reason::WaitReason;

/// What a waiting run's reason needs to be put in words in any language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum WaitNote {
    /// A reason the scheduling pass gave.
    Pass {
        /// The core's reason.
        reason: WaitReason,
        /// The run's GPU model, by name.
        model: String,
        /// GPUs of its model on nodes of its cluster without a live agent.
        offline: u32,
        /// The names of the projects the reason names (a fair-share reason's `ahead`), in order.
        projects: Vec<String>,
        /// Jobs outside Tranche holding GPUs of its Slurm cluster, as the bridge lists them.
        outside: Option<String>,
    },
    /// The Slurm controller of its cluster does not answer.
    ExecutorDown {
        /// The cluster's name.
        cluster: String,
        /// Since when (s since the epoch).
        since: i64,
        /// The controller's last error.
        error: String,
    },
}

impl WaitNote {
    /// Whether its words go with the run's place in its project's line (a fair-share reason:
    /// the runs ahead are other projects', and its own project's runs before it come first).
    #[must_use]
    pub fn names_place_in_line(&self) -> bool {
        matches!(
            self,
            WaitNote::Pass {
                reason: WaitReason::FairShare { .. },
                ..
            }
        )
    }

    /// Whether its words name other projects (a fair-share reason's projects ahead), which a
    /// reader who may not see them must not be shown ([`crate::runs::hide_unseen_projects`]).
    #[must_use]
    pub fn names_projects(&self) -> bool {
        matches!(
            self,
            WaitNote::Pass {
                reason: WaitReason::FairShare { .. },
                projects,
                ..
            } if !projects.is_empty()
        )
    }
}

/// The context a note is rendered in: language, currency and time zone of the organisation.
pub struct Render<'a> {
    /// The viewer's language.
    pub lang: Lang,
    /// ISO 4217 code of the organisation's money.
    pub currency: &'a str,
    /// The organisation's time zone.
    pub time_zone: &'a jiff::tz::TimeZone,
}

impl Render<'_> {
    fn instant(&self, t: i64) -> String {
        match jiff::Timestamp::from_second(t) {
            Ok(ts) => format::instant(self.lang, ts, self.time_zone),
            Err(_) => t.to_string(),
        }
    }

    fn m(&self, key: &str, args: &[(&str, &dyn Arg)]) -> String {
        message(self.lang, key, args)
    }
}

impl WaitNote {
    /// The reason in words in `r.lang`.
    pub fn render(&self, r: &Render<'_>) -> String {
        match self {
            WaitNote::ExecutorDown {
                cluster,
                since,
                error,
            } => r.m(
                "wait-executor-down",
                &[
                    ("cluster", cluster),
                    ("since", &r.instant(*since)),
                    ("error", error),
                ],
            ),
            WaitNote::Pass {
                reason,
                model,
                offline,
                projects,
                outside,
            } => {
                let words = pass_words(r, reason, model, *offline, projects);
                match (reason, outside) {
                    // GPUs that jobs outside Tranche hold are not counted as installed: a run
                    // larger than the rest is not one that can never start.
                    (
                        WaitReason::NodesDraining { gpus } | WaitReason::NeverFits { gpus, .. },
                        Some(o),
                    ) => r.m(
                        "wait-draining-or-outside",
                        &[("gpus", gpus), ("outside", o)],
                    ),
                    (
                        WaitReason::Gpus { .. }
                        | WaitReason::FairShare { .. }
                        | WaitReason::OverShare { .. }
                        | WaitReason::IdleGpus { .. }
                        | WaitReason::Reserved { .. }
                        | WaitReason::BehindReservation { .. },
                        Some(o),
                    ) => r.m("wait-with-outside", &[("reason", &words), ("outside", o)]),
                    _ => words,
                }
            }
        }
    }
}

fn reserved(r: &Render<'_>, at: Option<i64>) -> String {
    at.map_or_else(String::new, |t| {
        r.m("wait-reserved-suffix", &[("at", &r.instant(t))])
    })
}

fn pass_words(
    r: &Render<'_>,
    reason: &WaitReason,
    model: &str,
    off: u32,
    projects: &[String],
) -> String {
    let milli = |m: i64| format::decimal_trimmed(r.lang, m.max(0) / 100, -1);
    match reason {
        WaitReason::GpusDown { up: 0, .. } if off > 0 => r.m(
            "wait-no-live-agent",
            &[("offline", &off), ("model", &model)],
        ),
        WaitReason::GpusDown {
            gpus,
            up: installed,
        } if off > 0 => r.m(
            "wait-no-live-agent-enough",
            &[
                ("gpus", gpus),
                ("model", &model),
                ("installed", installed),
                ("offline", &off),
            ],
        ),
        WaitReason::Gpus { gpus, free } if off > 0 => r.m(
            "wait-gpus-some-offline",
            &[
                ("gpus", gpus),
                ("model", &model),
                ("free", free),
                ("offline", &off),
            ],
        ),
        WaitReason::FairShare {
            ahead_total,
            reserved_at,
            ..
        } => {
            let more = ahead_total.saturating_sub(projects.len());
            // A name hidden from the reader (runs::hide_unseen_projects) is empty.
            let list = projects
                .iter()
                .map(|p| {
                    if p.is_empty() {
                        r.m("project-sibling-hidden", &[])
                    } else {
                        p.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            r.m(
                "wait-fair-share",
                &[
                    ("projects", &list),
                    ("more", &more),
                    ("count", ahead_total),
                    ("reserved", &reserved(r, *reserved_at)),
                ],
            )
        }
        WaitReason::OverShare {
            held,
            entitled_milli,
            gpus,
            reserved_at,
        } => r.m(
            "wait-over-share",
            &[
                ("held", held),
                ("model", &model),
                ("entitlement", &milli(*entitled_milli)),
                ("gpus", gpus),
                ("reserved", &reserved(r, *reserved_at)),
            ],
        ),
        WaitReason::IdleGpus {
            gpus,
            free,
            allocated_waiting,
        } => r.m(
            "wait-idle-gpus",
            &[
                ("gpus", gpus),
                ("free", free),
                ("waiting", allocated_waiting),
            ],
        ),
        WaitReason::ShortRunHeadroom { gpus, free, kept } => r.m(
            "wait-short-run-headroom",
            &[("gpus", gpus), ("free", free), ("kept", kept)],
        ),
        WaitReason::Reserved {
            gpus,
            model,
            free,
            at,
        } => r.m(
            "wait-reserved",
            &[
                ("gpus", gpus),
                ("model", model),
                ("free", free),
                ("at", &r.instant(*at)),
            ],
        ),
        WaitReason::BehindReservation { run, at } => r.m(
            "wait-behind-reservation",
            &[("run", &run.0.to_string()), ("at", &r.instant(*at))],
        ),
        WaitReason::Protected { until } => r.m("wait-protected", &[("until", &r.instant(*until))]),
        WaitReason::Gpus { gpus, free } => r.m("wait-gpus", &[("gpus", gpus), ("free", free)]),
        WaitReason::NodesDraining { gpus } => r.m("wait-nodes-draining", &[("gpus", gpus)]),
        WaitReason::Budget { needs, has } => r.m(
            "wait-budget",
            &[
                ("needs", &format::money(r.lang, *needs, r.currency)),
                ("has", &format::money(r.lang, *has, r.currency)),
            ],
        ),
        WaitReason::UnallocatedCap { cap, held } => {
            r.m("wait-unallocated-cap", &[("cap", cap), ("held", held)])
        }
        WaitReason::Contracts { held } => r.m("wait-contracts", &[("held", held)]),
        WaitReason::InLine { ahead } => r.m("wait-in-line", &[("count", ahead)]),
        WaitReason::GpusDown { gpus, up } => r.m("wait-gpus-down", &[("gpus", gpus), ("up", up)]),
        WaitReason::NeverFits { gpus, installed } => r.m(
            "wait-never-fits",
            &[("gpus", gpus), ("installed", installed)],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::reason::Ahead;
    use crate::scheduler::types::ProjectId;

    fn render(note: &WaitNote, lang: Lang) -> String {
        let tz = jiff::tz::TimeZone::get("Europe/Madrid").expect("bundled tz");
        note.render(&Render {
            lang,
            currency: "EUR",
            time_zone: &tz,
        })
    }

    fn pass(reason: WaitReason) -> WaitNote {
        WaitNote::Pass {
            reason,
            model: "H100".into(),
            offline: 0,
            projects: vec!["vision".into(), "nlp".into()],
            outside: None,
        }
    }

    /// One GPU is one GPU, not "1 idle GPUs" (Fluent's plural categories of each language).
    #[test]
    fn idle_gpus_agree_in_number() {
        let one = pass(WaitReason::IdleGpus {
            gpus: 1,
            free: 1,
            allocated_waiting: 0,
        });
        assert!(render(&one, Lang::En).contains("waits for 1 idle GPU of its model"));
        let es = render(&one, Lang::Es);
        assert!(
            es.contains("espera 1 GPU ociosa de su modelo (ahora hay 1 ociosa)"),
            "{es}"
        );
        let two = pass(WaitReason::IdleGpus {
            gpus: 2,
            free: 0,
            allocated_waiting: 3,
        });
        assert!(render(&two, Lang::En).contains("waits for 2 idle GPUs of its model (0 idle now)"));
        assert!(
            render(&two, Lang::En)
                .ends_with("it never preempts; 3 allocated runs waiting for its model come first"),
            "{}",
            render(&two, Lang::En)
        );
        assert!(render(&one, Lang::En).ends_with("it never preempts"));
        assert!(render(&two, Lang::Eu).contains("3 exekuzio esleitu doaz lehenago"));
        assert!(
            render(&two, Lang::Es)
                .contains("espera 2 GPU ociosas de su modelo (ahora hay 0 ociosas)")
        );
    }

    #[test]
    fn a_budget_reason_in_three_languages() {
        let note = pass(WaitReason::Budget {
            needs: 123_456,
            has: 50,
        });
        assert_eq!(
            render(&note, Lang::En),
            "budget exhausted: its minimum runtime costs 1,234.56 EUR, the project has 0.50 EUR left this period (it may still run unallocated with minimum runtime 0)"
        );
        assert_eq!(
            render(&note, Lang::Es),
            "presupuesto agotado: su tiempo mínimo de ejecución cuesta 1234,56 EUR y al proyecto le quedan 0,50 EUR en este periodo (aún puede ejecutarse sin asignación con tiempo mínimo 0)"
        );
        assert_eq!(
            render(&note, Lang::Eu),
            "aurrekontua agortuta: gutxieneko exekuzio-denborak 1.234,56 EUR balio du, eta proiektuari 0,50 EUR geratzen zaizkio aldi honetan (esleipenik gabe exekuta daiteke oraindik, gutxieneko denbora 0 jarrita)"
        );
    }

    #[test]
    fn a_fair_share_reason_names_projects_and_counts() {
        let mut ahead = Ahead::default();
        ahead.push(ProjectId(1));
        ahead.push(ProjectId(2));
        let note = pass(WaitReason::FairShare {
            ahead,
            ahead_total: 5,
            reserved_at: None,
        });
        assert_eq!(
            render(&note, Lang::En),
            "vision, nlp and 3 more come first (within their entitlement or further below their fair share) and hold or wait for the GPUs it needs"
        );
        assert_eq!(
            render(&note, Lang::Eu),
            "vision, nlp eta beste 3 lehenago doaz (beren zuzkiduraren barruan daude edo kuota bidezkoaren azpitik urrunago) eta behar dituen GPUak dauzkate edo haien zain daude"
        );
    }

    #[test]
    fn in_line_has_plural_forms() {
        let one = pass(WaitReason::InLine { ahead: 1 });
        let many = pass(WaitReason::InLine { ahead: 4 });
        assert_eq!(render(&one, Lang::En), "in line: 1 run ahead of it");
        assert_eq!(
            render(&many, Lang::Es),
            "en cola: 4 ejecuciones por delante"
        );
        assert_eq!(render(&one, Lang::Eu), "ilaran: exekuzio 1 aurretik");
    }
}
