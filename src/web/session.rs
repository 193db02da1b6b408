//! Signing in and out.

use axum::Router;
use axum::extract::State;

use crate::web::input::{Form, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::ldap::LdapError;
use crate::auth::throttle::{self, ClientAddress, Try};
use crate::auth::{SESSION_EPOCH, SESSION_UNTIL, SESSION_USER, csrf, password, sso};
use crate::db::users;
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
    let wrong = |page: LoginPage| {
        tracing::info!(user = name, %client, "sign-in refused");
        render_status(StatusCode::UNAUTHORIZED, &page)
    };
    let with_layout = |mut page: LoginPage, layout: Layout| {
        page.layout = layout;
        page
    };
    match (stored, &state.sso.ldap) {
        // A local account: its password, and the local sign-in policy.
        (Some((id, hash @ Some(_), epoch)), _) => {
            if !password::verify(form.password.clone(), hash).await {
                let page = with_layout(
                    refuse("wrong user name or password"),
                    login_layout(&session).await?,
                );
                return wrong(page);
            }
            if let Some(only) = users::break_glass_admin(&state.pool).await?
                && only != id
            {
                tracing::info!(
                    user = name,
                    "password sign-in refused: local sign-in is off"
                );
                let page = with_layout(
                    refuse(
                        "password sign-in is turned off here: sign in with your organisation's account",
                    ),
                    login_layout(&session).await?,
                );
                return render_status(StatusCode::FORBIDDEN, &page);
            }
            throttle::succeeded(&state.pool, &client, name).await?;
            begin_session(&session, id, epoch, None).await?;
            tracing::info!(user = name, "signed in");
            Ok(Redirect::to(safe_next(&form.next)).into_response())
        }
        // Not a local account: the directory, when there is one.
        (_, Some(ldap)) => match ldap.authenticate(name, &form.password).await {
            Ok(who) => match sso::apply(&state.pool, &state.sso.mapping, &who).await? {
                Ok((id, epoch)) => {
                    throttle::succeeded(&state.pool, &client, name).await?;
                    begin_session(&session, id, epoch, Some(state.sso.external_session_max_s))
                        .await?;
                    tracing::info!(user = name, source = "ldap", "signed in");
                    Ok(Redirect::to(safe_next(&form.next)).into_response())
                }
                Err(refusal) => {
                    tracing::info!(user = name, source = "ldap", reason = %refusal, "sign-in refused");
                    let page =
                        with_layout(refuse(&refusal.to_string()), login_layout(&session).await?);
                    render_status(StatusCode::FORBIDDEN, &page)
                }
            },
            Err(LdapError::WrongCredentials) => {
                let page = with_layout(
                    refuse("wrong user name or password"),
                    login_layout(&session).await?,
                );
                wrong(page)
            }
            Err(LdapError::Unavailable(cause)) => {
                tracing::warn!(user = name, error = %cause, "LDAP sign-in failed: directory unavailable");
                let page = with_layout(
                    refuse(
                        "the organisation's directory cannot be reached; try again in a few minutes",
                    ),
                    login_layout(&session).await?,
                );
                render_status(StatusCode::SERVICE_UNAVAILABLE, &page)
            }
        },
        // Unknown, or an external account with no directory configured: verify against a
        // dummy hash so timing tells nothing.
        _ => {
            password::verify(form.password.clone(), None).await;
            let page = with_layout(
                refuse("wrong user name or password"),
                login_layout(&session).await?,
            );
            wrong(page)
        }
    }
}

/// Starts a signed-in session for `user_id`: a fresh session id (no fixation), the epoch the
/// session is valid for, a fresh CSRF token and, for external accounts, an absolute expiry
/// `max_age_s` seconds from now (checked by [`crate::auth::CurrentUser`]).
///
/// # Errors
/// Session store failures.
pub async fn begin_session(
    session: &Session,
    user_id: i64,
    epoch: i32,
    max_age_s: Option<i64>,
) -> Result<(), AppError> {
    let internal = |e: tower_sessions::session::Error| AppError::Internal(e.into());
    session.cycle_id().await.map_err(internal)?;
    session
        .insert(SESSION_USER, user_id)
        .await
        .map_err(internal)?;
    session
        .insert(SESSION_EPOCH, epoch)
        .await
        .map_err(internal)?;
    if let Some(max) = max_age_s {
        let until = jiff::Timestamp::now().as_second() + max;
        session
            .insert(SESSION_UNTIL, until)
            .await
            .map_err(internal)?;
    }
    csrf::rotate(session).await?;
    Ok(())
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
