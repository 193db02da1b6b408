//! Messages written once and read later, by readers of any language: a run's timeline.
//!
//! Code that records such a message builds a [`Said`]: the Fluent key and its arguments. The
//! English text is stored as before (the API and old readers show it); the `Said` is stored
//! beside it as JSON (`run_events.note`), and a page renders it in its reader's language.
//! Arguments are text, whole numbers (which select plural forms and are written with the
//! language's separators) or other `Said`s (a reason inside a sentence, or a list of them),
//! rendered in the same language. A text argument named `hours` is a decimal written as
//! Rust writes it (`80.0`, the API's English) and is shown with the reader's separators
//! (`80,0`), also in entries stored before this rule.

use std::collections::BTreeMap;

use fluent_bundle::FluentValue;
use serde::{Deserialize, Serialize};

use super::{Arg, Lang, message};

/// A message to render later: `key` of the Fluent files with `args`.
///
/// Stored as `{"key": "event-cancelled", "args": {"by": "alice"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Said {
    /// The message's key (the completeness test checks that `Said::new("...")` keys exist).
    pub key: String,
    /// Its arguments by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, SaidArg>,
}

/// One argument of a [`Said`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SaidArg {
    /// A whole number.
    Number(i64),
    /// Text placed as it is (a name, a code, someone's reason).
    Text(String),
    /// Another message, rendered in the same language.
    Said(Box<Said>),
    /// Messages rendered in the same language and joined with `; `.
    List(Vec<Said>),
}

impl From<&str> for SaidArg {
    fn from(v: &str) -> Self {
        SaidArg::Text(v.to_string())
    }
}

impl From<String> for SaidArg {
    fn from(v: String) -> Self {
        SaidArg::Text(v)
    }
}

impl From<&String> for SaidArg {
    fn from(v: &String) -> Self {
        SaidArg::Text(v.clone())
    }
}

impl From<Vec<Said>> for SaidArg {
    fn from(v: Vec<Said>) -> Self {
        SaidArg::List(v)
    }
}

impl From<Said> for SaidArg {
    fn from(v: Said) -> Self {
        SaidArg::Said(Box::new(v))
    }
}

macro_rules! number_said {
    ($($t:ty),*) => {$(
        impl From<$t> for SaidArg {
            fn from(v: $t) -> Self {
                SaidArg::Number(i64::from(v))
            }
        }
    )*};
}
number_said!(i32, i64, u32, u16, u8);

/// The argument name whose text is a plain decimal (GPU-hours) to write with the reader's
/// separators.
const HOURS: &str = "hours";

/// An argument already rendered for one language.
struct Rendered(FluentValue<'static>);

impl Arg for Rendered {
    fn to_fluent(&self) -> FluentValue<'static> {
        self.0.clone()
    }
}

impl Said {
    /// The message `key`, without arguments yet.
    pub fn new(key: &str) -> Self {
        Said {
            key: key.to_string(),
            args: BTreeMap::new(),
        }
    }

    /// The same message with the argument `name` set to `value`.
    #[must_use]
    pub fn arg(mut self, name: &str, value: impl Into<SaidArg>) -> Self {
        self.args.insert(name.to_string(), value.into());
        self
    }

    /// The message in `lang`.
    pub fn render(&self, lang: Lang) -> String {
        let values: Vec<(&str, Rendered)> = self
            .args
            .iter()
            .map(|(name, v)| {
                let value = match v {
                    SaidArg::Number(n) => FluentValue::from(*n as f64),
                    SaidArg::Text(t) if name == HOURS => {
                        FluentValue::from(super::format::from_plain(lang, t))
                    }
                    SaidArg::Text(t) => FluentValue::from(t.clone()),
                    SaidArg::Said(inner) => FluentValue::from(inner.render(lang)),
                    SaidArg::List(all) => FluentValue::from(
                        all.iter()
                            .map(|s| s.render(lang))
                            .collect::<Vec<_>>()
                            .join("; "),
                    ),
                };
                (name.as_str(), Rendered(value))
            })
            .collect();
        let args: Vec<(&str, &dyn Arg)> = values.iter().map(|(n, v)| (*n, v as &dyn Arg)).collect();
        message(lang, &self.key, &args)
    }

    /// The message in English, as stored for the API.
    pub fn english(&self) -> String {
        self.render(Lang::En)
    }

    /// As stored in a `jsonb` column.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// A stored note read back: `None` for old rows (no note) or a note that no longer parses.
    pub fn from_json(v: Option<&serde_json::Value>) -> Option<Said> {
        v.and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_in_three_languages_and_back_from_json() {
        let said = Said::new("event-cancelled").arg("by", "miren");
        assert_eq!(said.english(), "cancelled by miren");
        assert_eq!(said.render(Lang::Es), "cancelada por miren");
        assert_eq!(
            said.render(Lang::Eu),
            "miren erabiltzaileak bertan behera utzia"
        );
        let back = Said::from_json(Some(&said.to_json())).unwrap();
        assert_eq!(back, said);
        assert_eq!(Said::from_json(None), None);
    }

    #[test]
    fn hours_stored_with_a_decimal_point_read_with_the_reader_s_separator() {
        let said = Said::new("event-submitted-approval")
            .arg("by", "miren")
            .arg("hours", "80.0")
            .arg("limit", "64");
        assert!(said.english().contains("(80.0 "), "{}", said.english());
        assert!(
            said.render(Lang::Es)
                .contains("(80,0 h GPU protegidas, límite de autoservicio 64)"),
            "{}",
            said.render(Lang::Es)
        );
        assert!(
            said.render(Lang::Eu).contains("80,0"),
            "{}",
            said.render(Lang::Eu)
        );
    }

    #[test]
    fn numbers_are_grouped_for_the_language_and_nested_messages_follow_it() {
        let said = Said::new("event-history-started").arg("gpus", 1024);
        assert_eq!(said.english(), "started on 1,024 GPUs (recorded history)");
        assert_eq!(
            said.render(Lang::Eu),
            "1.024 GPUtan abiarazia (erregistratutako historia)"
        );
        let exit = Said::new("exit-signal")
            .arg("code", "137")
            .arg("signal", "SIGKILL");
        let outer = Said::new("event-exited").arg("status", exit);
        assert_eq!(
            outer.english(),
            "exited with status 137 (killed by SIGKILL)"
        );
        assert_eq!(
            outer.render(Lang::Es),
            "terminó con estado 137 (terminado por SIGKILL)"
        );
        let places = vec![
            Said::new("event-place")
                .arg("node", "a1")
                .arg("gpus", "0,1"),
            Said::new("event-place").arg("node", "a2").arg("gpus", "3"),
        ];
        let started = Said::new("event-started-on").arg("places", places);
        assert_eq!(started.english(), "started on a1 GPUs 0,1; a2 GPUs 3");
        assert_eq!(
            started.render(Lang::Eu),
            "abiarazia hemen: a1, GPUak: 0,1; a2, GPUak: 3"
        );
    }
}
