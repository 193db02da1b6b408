//! The home page, per role.

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
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
    notifications: Vec<NotificationView>,
    unread: usize,
    runs: crate::web::runs::HomeRuns,
}

struct NotificationView {
    message: String,
    link: String,
    when: String,
    read: bool,
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
    let notifications: Vec<NotificationView> =
        crate::ledger::alerts::notifications(&state.pool, me.id)
            .await?
            .into_iter()
            .map(|n| NotificationView {
                message: n.message,
                link: n.link,
                when: crate::domain::format_local(
                    crate::ledger::to_jiff(n.created_at),
                    &state.site.time_zone,
                ),
                read: n.read,
            })
            .collect();
    let unread = notifications.iter().filter(|n| !n.read).count();
    let runs = crate::web::runs::home_runs(&state, &me).await?;
    render(&HomePage {
        runs,
        notifications,
        unread,
        layout: Layout::for_user(&session, &me, "/").await?,
        roles: me.role_names(),
        period: period_label(&tree.period_start, &tree.period_end),
        time_zone: state.site.time_zone_name.clone(),
        led,
        projects,
        is_admin: me.is_admin(),
    })
}

async fn read_all(
    State(state): State<AppState>,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    crate::ledger::alerts::mark_read(&state.pool, me.id, jiff::Timestamp::now()).await?;
    Ok(axum::response::Redirect::to("/").into_response())
}

/// `GET /` and `POST /notifications/read`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/notifications/read", axum::routing::post(read_all))
}
