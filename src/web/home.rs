//! The home page, per role.

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_sessions::Session;

use crate::auth::CurrentUser;
use crate::error::AppError;
use crate::state::AppState;
use crate::web::input::Form;
use crate::web::{Layout, PagePath, flash, period_label, render_status};

#[derive(askama::Template)]
#[template(path = "home.html")]
struct HomePage {
    layout: Layout,
    roles: Vec<String>,
    period: String,
    time_zone: String,
    led: Vec<(i64, String, String)>,
    projects: Vec<(i64, String, String, String)>,
    is_admin: bool,
    notifications: Vec<NotificationView>,
    unread: usize,
    runs: crate::web::runs::HomeRuns,
    idle: Vec<IdleView>,
    idle_threshold: u8,
    /// A refused stop: (flag id, message, the reason as typed).
    idle_error: Option<(i64, String, String)>,
    /// AI use cases that need attention: (id, name, what).
    ai_notes: Vec<(i64, String, String)>,
}

/// An open idle flag as the home and project pages show it.
#[derive(Clone)]
pub struct IdleView {
    /// Flag id.
    pub id: i64,
    /// Run id.
    pub run: i64,
    /// Project name.
    pub project: String,
    /// Submitter's name.
    pub submitter: String,
    /// `8 × H100`.
    pub gpus: String,
    /// Idle since, local time.
    pub since: String,
    /// GPU-hours held idle so far.
    pub gpu_hours: String,
    /// Their value at the model's price.
    pub value: String,
    /// Whether the viewer may stop the run (a lead of its project).
    pub can_stop: bool,
}

/// The open idle flags of `project`, as shown to someone who may see the project (who may stop
/// them is the caller's to set).
///
/// # Errors
/// Database errors.
pub async fn project_idle_views(state: &AppState, project: i64) -> Result<Vec<IdleView>, AppError> {
    Ok(crate::runs::idle::project_flags(&state.pool, project)
        .await?
        .into_iter()
        .map(|f| view(state, f, false))
        .collect())
}

fn view(state: &AppState, f: crate::runs::idle::Flag, can_stop: bool) -> IdleView {
    IdleView {
        id: f.id,
        run: f.run_id,
        can_stop,
        gpus: format!("{} × {}", f.gpus, f.gpu_model),
        since: crate::domain::format_local(
            crate::ledger::to_jiff(f.idle_since),
            &state.site.time_zone,
        ),
        gpu_hours: crate::i18n::format::from_plain(crate::i18n::current(), &f.gpu_hours()),
        value: f.value(&state.site.currency),
        project: f.project,
        submitter: f.submitter,
    }
}

/// The open idle flags `me` may see, as shown (of one project when given).
///
/// # Errors
/// Database errors.
pub async fn idle_views(
    state: &AppState,
    me: &crate::auth::Account,
    parents: &crate::auth::Parents,
    project: Option<i64>,
) -> Result<Vec<IdleView>, AppError> {
    Ok(
        crate::runs::idle::open_flags(&state.pool, me, parents, project)
            .await?
            .into_iter()
            .map(|f| {
                let can_stop = me.leads(f.project_id, parents);
                view(state, f, can_stop)
            })
            .collect(),
    )
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
    home_page(&state, &session, &me, None).await
}

async fn home_page(
    state: &AppState,
    session: &Session,
    me: &crate::auth::Account,
    idle_error: Option<(i64, String, String)>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let led = me
        .lead_nodes()
        .filter_map(|id| tree.node(id))
        .map(|n| {
            (
                n.id,
                n.name.clone(),
                crate::i18n::format::basis_points(n.effective.bp_rounded()),
            )
        })
        .collect();
    let projects = me
        .projects
        .iter()
        .filter_map(|id| tree.node(*id))
        .map(|n| {
            (
                n.id,
                n.name.clone(),
                crate::i18n::format::basis_points(n.effective.bp_rounded()),
                n.money_total.display(&state.site.currency),
            )
        })
        .collect();
    let notifications: Vec<NotificationView> =
        crate::ledger::alerts::notifications(&state.pool, me, &tree.parents)
            .await?
            .into_iter()
            .map(|n| NotificationView {
                message: match (&n.note, crate::i18n::current()) {
                    (Some(note), lang) if lang != crate::i18n::Lang::En => {
                        note.message(lang, &state.site.currency)
                    }
                    _ => n.message,
                },
                link: n.link,
                when: crate::domain::format_local(
                    crate::ledger::to_jiff(n.created_at),
                    &state.site.time_zone,
                ),
                read: n.read,
            })
            .collect();
    let unread = notifications.iter().filter(|n| !n.read).count();
    let runs = crate::web::runs::home_runs(state, me).await?;
    let idle = idle_views(state, me, &tree.parents, None).await?;
    let status = if idle_error.is_some() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    } else {
        axum::http::StatusCode::OK
    };
    render_status(
        status,
        &HomePage {
            ai_notes: crate::web::ai::home_notes(state, me).await?,
            idle,
            idle_threshold: state.site.idle_utilization_percent,
            idle_error,
            runs,
            notifications,
            unread,
            layout: Layout::for_user(session, me, "/").await?,
            roles: me
                .role_names()
                .into_iter()
                .map(|r| crate::i18n::t(&format!("role-{r}")))
                .collect(),
            period: period_label(&tree.period_start, &tree.period_end),
            time_zone: tree.period_zone_name(&state.site.time_zone_name),
            led,
            projects,
            is_admin: me.is_admin(),
        },
    )
}

async fn read_all(
    State(state): State<AppState>,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    crate::ledger::alerts::mark_read(&state.pool, me.id, jiff::Timestamp::now()).await?;
    Ok(axum::response::Redirect::to("/").into_response())
}

#[derive(serde::Deserialize, Default)]
struct StopForm {
    #[serde(default)]
    reason: String,
}

/// `POST /idle-flags/{id}/stop`: a lead stops an idle run with a reason; a refused stop
/// re-renders the home page with the message and the reason as typed.
async fn stop_idle(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<StopForm>,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    match crate::runs::idle::stop(&state.pool, &state.site, &me, &tree.parents, id, &f.reason).await
    {
        Ok(run) => {
            flash(
                &session,
                crate::i18n::t1("idle-stopping", "run", run.to_string()),
            )
            .await?;
            Ok(axum::response::Redirect::to(&format!("/runs/{run}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            home_page(&state, &session, &me, Some((id, message, f.reason))).await
        }
        Err(e) => Err(e),
    }
}

/// `GET /`, `POST /notifications/read` and `POST /idle-flags/{id}/stop`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/idle-flags/{id}/stop", axum::routing::post(stop_idle))
        .route("/notifications/read", axum::routing::post(read_all))
}
