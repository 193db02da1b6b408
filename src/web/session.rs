//! Signing in and out.

use axum::Router;
use axum::extract::State;

use crate::web::input::{Form, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{SESSION_EPOCH, SESSION_USER, csrf, password};
use crate::error::AppError;
use crate::state::AppState;
use crate::web::{Layout, render, render_status};

#[derive(askama::Template)]
#[template(path = "login.html")]
struct LoginPage {
    layout: Layout,
    error: Option<String>,
    name: String,
    next: String,
}

#[derive(serde::Deserialize, Default)]
struct LoginQuery {
    #[serde(default)]
    next: String,
}

#[derive(serde::Deserialize, Default)]
struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
}

/// Only same-site relative paths are followed after login.
fn safe_next(next: &str) -> &str {
    if next.starts_with('/') && !next.starts_with("//") && !next.contains('\\') {
        next
    } else {
        "/"
    }
}

async fn login_layout(session: &Session) -> Result<Layout, AppError> {
    Ok(Layout {
        user_name: None,
        nav: vec![],
        active: "",
        csrf: csrf::token(session).await?,
        notice: None,
    })
}

async fn login_page(session: Session, Query(q): Query<LoginQuery>) -> Result<Response, AppError> {
    if session
        .get::<i64>(SESSION_USER)
        .await
        .map_err(|e| AppError::Internal(e.into()))?
        .is_some()
    {
        return Ok(Redirect::to(safe_next(&q.next)).into_response());
    }
    render(&LoginPage {
        layout: login_layout(&session).await?,
        error: None,
        name: String::new(),
        next: q.next,
    })
}

/// Consecutive failed sign-ins after which an account is locked for [`LOCKOUT_MINUTES`].
const MAX_FAILURES: i32 = 10;
/// How long a locked account refuses sign-ins.
const LOCKOUT_MINUTES: i32 = 15;

async fn login(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<LoginForm>,
) -> Result<Response, AppError> {
    let stored: Option<(i64, Option<String>, i32, bool)> = sqlx::query_as(
        "SELECT id, password_hash, session_epoch, coalesce(locked_until > now(), false) FROM users WHERE name = $1 AND NOT disabled",
    )
    .bind(form.name.trim())
    .fetch_optional(&state.pool)
    .await?;
    let (user, hash) = match stored {
        Some((id, hash, epoch, locked)) => (Some((id, epoch, locked)), hash),
        None => (None, None),
    };
    // Verify even for unknown or locked users, so timing tells nothing.
    let ok = password::verify(form.password.clone(), hash).await;
    let refuse = |message: &str| LoginPage {
        layout: Layout {
            user_name: None,
            nav: vec![],
            active: "",
            csrf: String::new(),
            notice: None,
        },
        error: Some(message.to_string()),
        name: form.name.clone(),
        next: form.next.clone(),
    };
    match user {
        Some((_, _, true)) => {
            tracing::info!(user = form.name.trim(), "sign-in refused: account locked");
            let mut page = refuse(&format!(
                "too many failed sign-ins: this account is locked for {LOCKOUT_MINUTES} minutes"
            ));
            page.layout = login_layout(&session).await?;
            render_status(StatusCode::TOO_MANY_REQUESTS, &page)
        }
        Some((id, epoch, false)) if ok => {
            sqlx::query("UPDATE users SET failed_logins = 0, locked_until = NULL WHERE id = $1")
                .bind(id)
                .execute(&state.pool)
                .await?;
            // A fresh session id on every sign-in (no fixation), and a fresh CSRF token.
            session
                .cycle_id()
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            session
                .insert(SESSION_USER, id)
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            session
                .insert(SESSION_EPOCH, epoch)
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            csrf::rotate(&session).await?;
            tracing::info!(user = form.name.trim(), "signed in");
            Ok(Redirect::to(safe_next(&form.next)).into_response())
        }
        _ => {
            if let Some((id, _, _)) = user {
                sqlx::query(
                    "UPDATE users SET failed_logins = CASE WHEN failed_logins + 1 >= $2 THEN 0 ELSE failed_logins + 1 END, \
                     locked_until = CASE WHEN failed_logins + 1 >= $2 THEN now() + make_interval(mins => $3) ELSE locked_until END WHERE id = $1",
                )
                .bind(id)
                .bind(MAX_FAILURES)
                .bind(LOCKOUT_MINUTES)
                .execute(&state.pool)
                .await?;
            }
            tracing::info!(user = form.name.trim(), "sign-in refused");
            let mut page = refuse("wrong user name or password");
            page.layout = login_layout(&session).await?;
            render_status(StatusCode::UNAUTHORIZED, &page)
        }
    }
}

async fn logout(session: Session) -> Result<Response, AppError> {
    session
        .flush()
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    Ok(Redirect::to("/login").into_response())
}

/// `GET /login`, `POST /login`, `POST /logout`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
}
