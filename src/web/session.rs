//! Signing in and out.

use axum::Router;
use axum::extract::State;

use crate::web::input::{Form, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::throttle::{self, ClientAddress, Try};
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

async fn login(
    State(state): State<AppState>,
    session: Session,
    ClientAddress(client): ClientAddress,
    Form(form): Form<LoginForm>,
) -> Result<Response, AppError> {
    let name = form.name.trim();
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
    // Throttled by address and name together, before the name is looked up: the answer is
    // the same whether or not such a user exists.
    if let Try::Wait(seconds) = throttle::begin(&state.pool, &client, name).await? {
        tracing::info!(user = name, %client, wait_s = seconds, "sign-in delayed: too many failures");
        let mut page = refuse(&format!(
            "too many failed sign-ins for this name from your address: try again in {seconds} s"
        ));
        page.layout = login_layout(&session).await?;
        let mut response = render_status(StatusCode::TOO_MANY_REQUESTS, &page)?;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        return Ok(response);
    }
    let stored: Option<(i64, Option<String>, i32)> = sqlx::query_as(
        "SELECT id, password_hash, session_epoch FROM users WHERE name = $1 AND NOT disabled",
    )
    .bind(name)
    .fetch_optional(&state.pool)
    .await?;
    let (user, hash) = match stored {
        Some((id, hash, epoch)) => (Some((id, epoch)), hash),
        None => (None, None),
    };
    // Verify even for unknown users (against a dummy hash), so timing tells nothing.
    let ok = password::verify(form.password.clone(), hash).await;
    match user {
        Some((id, epoch)) if ok => {
            throttle::succeeded(&state.pool, &client, name).await?;
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
            tracing::info!(user = name, "signed in");
            Ok(Redirect::to(safe_next(&form.next)).into_response())
        }
        _ => {
            tracing::info!(user = name, %client, "sign-in refused");
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
