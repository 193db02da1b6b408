//! The audit log page: admins and finance see everything, leads their subtrees.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use tower_sessions::Session;

use crate::auth::{CurrentUser, Parents};
use crate::db::audit;
use crate::error::AppError;
use crate::state::AppState;
use crate::web::{Layout, render};

struct EntryRow {
    at: String,
    who: String,
    action: String,
    entity: String,
    entity_id: Option<i64>,
    before: String,
    after: String,
}

#[derive(askama::Template)]
#[template(path = "audit.html")]
struct AuditPage {
    layout: Layout,
    everything: bool,
    entries: Vec<EntryRow>,
}

fn json_text(v: Option<serde_json::Value>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "—".into())
}

async fn audit_page(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    if !me.sees_everything() && me.lead_nodes().next().is_none() {
        return Err(AppError::Forbidden(
            "the audit log is for admins, finance and leads".into(),
        ));
    }
    let parents = Parents::load(&state.pool).await?;
    let entries = audit::visible(&state.pool, &me, &parents, 500)
        .await?
        .into_iter()
        .map(|e| EntryRow {
            at: e
                .at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            who: e.actor.unwrap_or_else(|| "system".into()),
            action: e.action,
            entity: e.entity,
            entity_id: e.entity_id,
            before: json_text(e.before),
            after: json_text(e.after),
        })
        .collect();
    render(&AuditPage {
        layout: Layout::for_user(&session, &me, "/audit").await?,
        everything: me.sees_everything(),
        entries,
    })
}

/// `GET /audit`.
pub fn router() -> Router<AppState> {
    Router::new().route("/audit", get(audit_page))
}
