//! The audit log page: admins and finance see everything, leads their subtrees.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use tower_sessions::Session;

use crate::auth::{CurrentUser, Parents};
use crate::db::audit;
use crate::error::AppError;
use crate::i18n::t;
use crate::state::AppState;
use crate::web::input::Query;
use crate::web::{Layout, render};

struct EntryRow {
    /// In the site's time zone, like every other page.
    at: String,
    who: String,
    action: String,
    entity: String,
    entity_id: Option<i64>,
    /// `field: value` lines.
    before: Vec<(String, String)>,
    after: Vec<(String, String)>,
}

#[derive(askama::Template)]
#[template(path = "audit.html")]
struct AuditPage {
    layout: Layout,
    everything: bool,
    entries: Vec<EntryRow>,
    /// How many entries are shown, as the page writes it.
    shown: String,
    time_zone: String,
    /// The next (older) page's address, when there is one.
    older: Option<String>,
    /// Back to the newest entries, from an older page.
    newest: Option<String>,
}

/// A recorded value in words (in the page's language): strings as they are, `yes`/`no`,
/// `none` for null, lists joined with commas, objects as `field: value` separated by
/// semicolons. Field names and numbers are shown as recorded.
fn value_text(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => t("audit-none"),
        Value::Bool(true) => t("audit-yes"),
        Value::Bool(false) => t("audit-no"),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.is_empty() => t("audit-empty"),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => t("audit-none"),
        Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>().join(", "),
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| format!("{}: {}", k.replace('_', " "), value_text(v)))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// A before or after state as (field, value) lines, the field as the record names it
/// (`owner_node_id`, shown as code in every language; empty for a value that is not an
/// object); none for a missing state.
fn state_lines(v: Option<&serde_json::Value>) -> Vec<(String, String)> {
    match v {
        None => vec![],
        Some(serde_json::Value::Object(fields)) => fields
            .iter()
            .map(|(k, v)| (k.clone(), value_text(v)))
            .collect(),
        Some(other) => vec![(String::new(), value_text(other))],
    }
}

/// The words for an entry's action or record kind in the page's language: the attribute
/// `code` of message `message` (`audit-action.run-cancel` is "Run cancelled"), or `code` as
/// recorded when the files have no words for it.
fn in_words(lang: crate::i18n::Lang, message: &str, code: &str) -> String {
    let key = format!("{message}.{code}");
    let words = crate::i18n::message(lang, &key, &[]);
    if words == key {
        code.to_string()
    } else {
        words
    }
}

/// `?before=ID`: the page of entries older than `ID`.
#[derive(serde::Deserialize)]
struct AuditQuery {
    #[serde(default)]
    before: Option<String>,
}

/// Entries on a page of the audit log.
const PAGE: i64 = 500;

async fn audit_page(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Query(q): Query<AuditQuery>,
) -> Result<Response, AppError> {
    if !me.sees_everything() && me.lead_nodes().next().is_none() {
        return Err(AppError::Forbidden(t("audit-forbidden")));
    }
    let before = crate::runs::parse_before(q.before.as_deref()).map_err(|_| {
        AppError::invalid(
            "before",
            crate::i18n::t1(
                "err-audit-before",
                "got",
                crate::domain::quote(q.before.as_deref().unwrap_or("").trim()),
            ),
        )
    })?;
    let parents = Parents::load(&state.pool).await?;
    let (entries, next_before) = audit::visible(&state.pool, &me, &parents, PAGE, before).await?;
    let lang = crate::i18n::current();
    let entries = entries
        .into_iter()
        .map(|e| EntryRow {
            at: crate::domain::format_local(crate::ledger::to_jiff(e.at), &state.site.time_zone),
            who: e.actor.unwrap_or_else(|| t("audit-system")),
            action: in_words(lang, "audit-action", &e.action.replace('.', "-")),
            entity: in_words(lang, "audit-entity", &e.entity),
            entity_id: e.entity_id,
            before: state_lines(e.before.as_ref()),
            after: state_lines(e.after.as_ref()),
        })
        .collect::<Vec<_>>();
    render(&AuditPage {
        layout: Layout::for_user(&session, &me, "/audit").await?,
        everything: me.sees_everything(),
        shown: crate::web::int(entries.len() as i64),
        entries,
        time_zone: state.site.time_zone_name.clone(),
        older: next_before.map(|b| format!("/audit?before={b}")),
        newest: before.map(|_| "/audit".to_string()),
    })
}

/// `GET /audit`.
pub fn router() -> Router<AppState> {
    Router::new().route("/audit", get(audit_page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_read_as_fields_and_values() {
        let v = json!({"label": "ci", "revoked": false, "alert_thresholds": [50, 75], "cap_minor": null, "nested": {"a_b": 1}});
        let pair = |f: &str, v: &str| (f.to_string(), v.to_string());
        assert_eq!(
            state_lines(Some(&v)),
            [
                pair("alert_thresholds", "50, 75"),
                pair("cap_minor", "none"),
                pair("label", "ci"),
                pair("nested", "a b: 1"),
                pair("revoked", "no"),
            ]
        );
        assert_eq!(state_lines(Some(&json!(3))), [pair("", "3")]);
        assert!(state_lines(None).is_empty());
    }

    /// Every action and record kind the code records (`action: "run.cancel"`, `entity:
    /// "run"` literals, the identity provider's `record_idp(.., "user.grant", ..)` and those
    /// written in SQL, `INSERT INTO audit_log .. 'api_token.create', 'api_token'`) has
    /// words in every language, distinct from the code; an unknown code reads as recorded.
    #[test]
    fn every_recorded_action_and_record_has_words() {
        let mut codes = std::collections::BTreeSet::new();
        let mut files = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (marker, message) in [
                ("action: \"", "audit-action"),
                ("entity: \"", "audit-entity"),
                ("record_idp(&mut tx, \"", "audit-action"),
            ] {
                for piece in text.split(marker).skip(1) {
                    let code = piece.split('"').next().unwrap();
                    if !code.is_empty() && !code.contains(char::is_whitespace) {
                        codes.insert((message, code.to_string()));
                    }
                }
            }
            // Entries written in SQL: `'api_token.create', 'api_token'`.
            for piece in text.split("INSERT INTO audit_log").skip(1) {
                let sql = piece.split('"').next().unwrap();
                let quoted: Vec<&str> = sql.split('\'').skip(1).step_by(2).take(2).collect();
                if let [action, entity] = quoted[..] {
                    codes.insert(("audit-action", action.to_string()));
                    codes.insert(("audit-entity", entity.to_string()));
                }
            }
        }
        assert!(codes.len() > 50, "{codes:?}");
        for lang in crate::i18n::Lang::ALL {
            for (message, code) in &codes {
                let key = format!("{message}.{}", code.replace('.', "-"));
                let words = crate::i18n::message(lang, &key, &[]);
                assert_ne!(words, key, "{} has no words for {code}", lang.code());
            }
        }
        let es = crate::i18n::Lang::Es;
        assert_eq!(
            in_words(es, "audit-action", "run-cancel"),
            "Ejecución cancelada"
        );
        assert_eq!(in_words(es, "audit-action", "run-launch"), "run-launch");
    }
}
