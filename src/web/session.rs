//! Signing in and out.

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{SESSION_USER, csrf, password};
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

async fn login(
    State(state): State<AppState>,
    session: Session,
    axum::Form(form): axum::Form<LoginForm>,
) -> Result<Response, AppError> {
    let stored: Option<(i64, Option<String>)> =
        sqlx::query_as("SELECT id, password_hash FROM users WHERE name = $1 AND NOT disabled")
            .bind(form.name.trim())
            .fetch_optional(&state.pool)
            .await?;
    let (user_id, hash) = match stored {
        Some((id, hash)) => (Some(id), hash),
        None => (None, None),
    };
    let ok = password::verify(form.password.clone(), hash).await;
    match user_id.filter(|_| ok) {
        Some(id) => {
            // A fresh session id on every sign-in (no fixation), and a fresh CSRF token.
            session
                .cycle_id()
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            session
                .insert(SESSION_USER, id)
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            csrf::rotate(&session).await?;
            tracing::info!(user = form.name.trim(), "signed in");
            Ok(Redirect::to(safe_next(&form.next)).into_response())
        }
        None => {
            tracing::info!(user = form.name.trim(), "sign-in refused");
            render_status(
                StatusCode::UNAUTHORIZED,
                &LoginPage {
                    layout: login_layout(&session).await?,
                    error: Some("wrong user name or password".into()),
                    name: form.name,
                    next: form.next,
                },
            )
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
