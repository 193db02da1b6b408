//! The home page, per role.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use tower_sessions::Session;

use crate::auth::CurrentUser;
use crate::error::AppError;
use crate::state::AppState;
use crate::web::{Layout, period_label, render};

#[derive(askama::Template)]
#[template(path = "home.html")]
struct HomePage {
    layout: Layout,
    roles: Vec<&'static str>,
    period: String,
    time_zone: String,
    led: Vec<(i64, String, String)>,
    projects: Vec<(i64, String, String, String)>,
    is_admin: bool,
}

async fn home(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let led = me
        .lead_nodes()
        .filter_map(|id| tree.node(id))
        .map(|n| (n.id, n.name.clone(), n.effective.percent()))
        .collect();
    let projects = me
        .projects
        .iter()
        .filter_map(|id| tree.node(*id))
        .map(|n| {
            (
                n.id,
                n.name.clone(),
                n.effective.percent(),
                n.money_total.display(&state.site.currency),
            )
        })
        .collect();
    render(&HomePage {
        layout: Layout::for_user(&session, &me, "/").await?,
        roles: me.role_names(),
        period: period_label(&tree.period_start, &tree.period_end),
        time_zone: state.site.time_zone_name.clone(),
        led,
        projects,
        is_admin: me.is_admin(),
    })
}

/// `GET /`.
pub fn router() -> Router<AppState> {
    Router::new().route("/", get(home))
}
