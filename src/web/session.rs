//! Signing in and out.

use axum::Router;
use axum::extract::State;

use crate::web::input::{Form, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::ldap::LdapError;
use crate::auth::oidc::{
    Oidc, OidcError, PENDING_MAX_S, Pending, SESSION_ID_TOKEN, SESSION_PENDING,
};
use crate::auth::throttle::{self, ClientAddress, Try};
use crate::auth::{SESSION_EPOCH, SESSION_UNTIL, SESSION_USER, csrf, password, sso};
use crate::db::users;
use crate::error::AppError;
use crate::i18n;
use crate::state::AppState;
use crate::web::{Layout, render, render_status};

#[derive(askama::Template)]
#[template(path = "login.html")]
struct LoginPage {
    layout: Layout,
    error: Option<String>,
    name: String,
    next: String,
    /// "Sign in with NAME" and its link, when OpenID Connect is configured.
    provider: Option<(String, String)>,
}

impl LoginPage {
    /// The page for `state`'s settings, with the CSRF token of `layout`.
    fn new(
        state: &AppState,
        layout: Layout,
        error: Option<String>,
        name: String,
        next: String,
    ) -> Self {
        let provider = state.sso.oidc.as_ref().map(|oidc| {
            let query =
                serde_urlencoded::to_string([("next", safe_next(&next))]).unwrap_or_default();
            (
                oidc.settings.display_name.clone(),
                format!("/login/oidc?{query}"),
            )
        });
        Self {
            layout,
            error,
            name,
            next,
            provider,
        }
    }
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

async fn login_page(
    State(state): State<AppState>,
    session: Session,
    Query(q): Query<LoginQuery>,
) -> Result<Response, AppError> {
    if session
        .get::<i64>(SESSION_USER)
        .await
        .map_err(|e| AppError::Internal(e.into()))?
        .is_some()
    {
        return Ok(Redirect::to(safe_next(&q.next)).into_response());
    }
    render(&LoginPage::new(
        &state,
        login_layout(&session).await?,
        None,
        String::new(),
        q.next,
    ))
}

/// The longest user name a sign-in form looks up, in characters.
const LONGEST_SIGN_IN_NAME: usize = 256;

/// The part of a typed user name that a sign-in looks up, throttles and logs: its first
/// [`LONGEST_SIGN_IN_NAME`] characters (shorter than what was typed: refused).
fn sign_in_name(typed: &str) -> &str {
    match typed.char_indices().nth(LONGEST_SIGN_IN_NAME) {
        Some((at, _)) => &typed[..at],
        None => typed,
    }
}

async fn login(
    State(state): State<AppState>,
    session: Session,
    ClientAddress(client): ClientAddress,
    Form(form): Form<LoginForm>,
) -> Result<Response, AppError> {
    // No account has a longer name (local ones have at most 64 characters): a longer one is
    // refused as a wrong password, and only its first characters are looked up, throttled
    // and logged (an unauthenticated caller could otherwise write megabytes of log a request).
    let typed = form.name.trim();
    let name = sign_in_name(typed);
    let refuse = |message: &str| {
        LoginPage::new(
            &state,
            Layout {
                user_name: None,
                nav: vec![],
                active: "",
                csrf: String::new(),
                notice: None,
            },
            Some(message.to_string()),
            form.name.clone(),
            form.next.clone(),
        )
    };
    // Throttled by address and name together, before the name is looked up: the answer is
    // the same whether or not such a user exists.
    if let Try::Wait(seconds) = throttle::begin(&state.pool, &client, name).await? {
        tracing::info!(user = name, %client, wait_s = seconds, "sign-in delayed: too many failures");
        let mut page = refuse(&i18n::t1("login-throttled", "seconds", seconds));
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
    if name.len() < typed.len() {
        let page = with_layout(
            refuse(&i18n::t("login-wrong")),
            login_layout(&session).await?,
        );
        return wrong(page);
    }
    match (stored, &state.sso.ldap) {
        // A local account: its password, and the local sign-in policy.
        (Some((id, hash @ Some(_), epoch)), _) => {
            if !password::verify(form.password.clone(), hash).await {
                let page = with_layout(
                    refuse(&i18n::t("login-wrong")),
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
                    refuse(&i18n::t("login-local-off")),
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
                    let page = with_layout(
                        refuse(&refusal_words(&refusal)),
                        login_layout(&session).await?,
                    );
                    render_status(StatusCode::FORBIDDEN, &page)
                }
            },
            Err(LdapError::WrongCredentials) => {
                let page = with_layout(
                    refuse(&i18n::t("login-wrong")),
                    login_layout(&session).await?,
                );
                wrong(page)
            }
            Err(LdapError::Unavailable(cause)) => {
                tracing::warn!(user = name, error = %cause, "LDAP sign-in failed: directory unavailable");
                let page = with_layout(
                    refuse(&i18n::t("login-directory-down")),
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
                refuse(&i18n::t("login-wrong")),
                login_layout(&session).await?,
            );
            wrong(page)
        }
    }
}

/// Why a directory or identity-provider account may not sign in, in the page's language.
fn refusal_words(refusal: &sso::Refusal) -> String {
    match refusal {
        sso::Refusal::NoAccess => i18n::t("login-no-access"),
        sso::Refusal::BadName(why) => why.clone(),
        sso::Refusal::NameTaken(name) => i18n::t1("login-name-taken", "name", name),
        sso::Refusal::Disabled => i18n::t("login-disabled"),
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

#[derive(serde::Deserialize, Default)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
    /// The issuer that answers (RFC 9207), checked when the provider sends it.
    iss: Option<String>,
}

/// The page shown when an OpenID Connect sign-in does not go through: the login page with
/// the message, and the status that fits the cause.
async fn oidc_refused(
    state: &AppState,
    session: &Session,
    status: StatusCode,
    message: &str,
) -> Result<Response, AppError> {
    let page = LoginPage::new(
        state,
        login_layout(session).await?,
        Some(message.to_string()),
        String::new(),
        String::new(),
    );
    render_status(status, &page)
}

fn oidc_status(e: &OidcError) -> StatusCode {
    match e {
        OidcError::State => StatusCode::BAD_REQUEST,
        OidcError::Refused(_) | OidcError::InvalidToken(_) => StatusCode::FORBIDDEN,
        OidcError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

fn oidc_of(state: &AppState) -> Result<std::sync::Arc<Oidc>, AppError> {
    state
        .sso
        .oidc
        .clone()
        .ok_or_else(|| AppError::NotFound(crate::i18n::t("err-oidc-off")))
}

/// `GET /login/oidc?next=PATH`: keeps a new pending sign-in (state, nonce, PKCE verifier) in
/// the session and sends the browser to the provider.
async fn oidc_begin(
    State(state): State<AppState>,
    session: Session,
    Query(q): Query<LoginQuery>,
) -> Result<Response, AppError> {
    let oidc = oidc_of(&state)?;
    match oidc
        .begin(safe_next(&q.next), jiff::Timestamp::now().as_second())
        .await
    {
        Ok((url, pending)) => {
            session
                .insert(SESSION_PENDING, pending)
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            Ok(Redirect::to(&url).into_response())
        }
        Err(e) => {
            tracing::warn!(error = %e, "OpenID Connect sign-in could not start");
            oidc_refused(
                &state,
                &session,
                oidc_status(&e),
                &i18n::t("login-provider-down"),
            )
            .await
        }
    }
}

/// `GET /login/oidc/callback?code=&state=`: the provider's answer. The pending sign-in is
/// taken out of the session first, so a second use of the same answer finds none.
async fn oidc_callback(
    State(state): State<AppState>,
    session: Session,
    Query(q): Query<CallbackQuery>,
) -> Result<Response, AppError> {
    let oidc = oidc_of(&state)?;
    let pending: Option<Pending> = session
        .remove(SESSION_PENDING)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    let result = async {
        let pending = pending.ok_or(OidcError::State)?;
        let matches = q.state.as_deref().is_some_and(|s| {
            bool::from(subtle::ConstantTimeEq::ct_eq(
                s.as_bytes(),
                pending.state.as_bytes(),
            ))
        });
        if !matches || jiff::Timestamp::now().as_second() - pending.started > PENDING_MAX_S {
            return Err(OidcError::State);
        }
        if q.iss
            .as_deref()
            .is_some_and(|iss| iss != oidc.settings.issuer)
        {
            return Err(OidcError::InvalidToken(
                "the answer comes from another issuer".into(),
            ));
        }
        if let Some(error) = &q.error {
            return Err(OidcError::Refused(match &q.error_description {
                Some(d) => format!("{error} ({d})"),
                None => error.clone(),
            }));
        }
        let code = q
            .code
            .as_deref()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| OidcError::Refused("no authorization code in the answer".into()))?;
        let (who, id_token) = oidc.finish(&pending, code).await?;
        Ok((who, id_token, pending.next))
    }
    .await;
    let (who, id_token, next) = match result {
        Ok(r) => r,
        Err(e) => {
            tracing::info!(reason = %e, source = "oidc", "sign-in refused");
            let status = oidc_status(&e);
            let message = match &e {
                OidcError::Unavailable(_) => i18n::t("login-provider-timeout"),
                OidcError::State => i18n::t("login-oidc-state"),
                OidcError::Refused(why) => i18n::t1("login-oidc-refused", "why", why),
                OidcError::InvalidToken(why) => i18n::t1("login-oidc-invalid", "why", why),
            };
            return oidc_refused(&state, &session, status, &message).await;
        }
    };
    match sso::apply(&state.pool, &state.sso.mapping, &who).await? {
        Ok((id, epoch)) => {
            begin_session(&session, id, epoch, Some(state.sso.external_session_max_s)).await?;
            session
                .insert(SESSION_ID_TOKEN, id_token)
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            tracing::info!(user = %who.name, source = "oidc", "signed in");
            Ok(Redirect::to(safe_next(&next)).into_response())
        }
        Err(refusal) => {
            tracing::info!(user = %who.name, source = "oidc", reason = %refusal, "sign-in refused");
            oidc_refused(
                &state,
                &session,
                StatusCode::FORBIDDEN,
                &refusal_words(&refusal),
            )
            .await
        }
    }
}

/// `POST /logout`: ends the session; after an OpenID Connect sign-in, sends the browser on
/// to the provider's end-session endpoint when its discovery document has one (a page that
/// refreshes to it at once, with a link).
async fn logout(State(state): State<AppState>, session: Session) -> Result<Response, AppError> {
    let id_token: Option<String> = session.get(SESSION_ID_TOKEN).await.ok().flatten();
    session
        .flush()
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    if let (Some(oidc), Some(token)) = (&state.sso.oidc, id_token)
        && let Some(url) = oidc.logout_url(&token).await
    {
        // A page that moves on by itself rather than a redirect: the pages' policy
        // `form-action 'self'` forbids a form's redirect to another site.
        return render(&SignedOut {
            layout: login_layout(&session).await?,
            end_session: url,
            provider: oidc.settings.display_name.clone(),
        });
    }
    Ok(Redirect::to("/login").into_response())
}

#[derive(askama::Template)]
#[template(path = "signed_out.html")]
struct SignedOut {
    /// For the page's language (nobody is signed in any more).
    layout: Layout,
    /// The provider's end-session URL with the hint and the way back.
    end_session: String,
    /// The provider's name.
    provider: String,
}

/// `GET /login`, `POST /login`, `POST /logout`, `GET /login/oidc`, `GET /login/oidc/callback`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .route("/login/oidc", get(oidc_begin))
        .route("/login/oidc/callback", get(oidc_callback))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name no account can have is cut to its first characters (whole characters, never
    /// inside one) before anything looks it up or logs it; a shorter one is kept whole.
    #[test]
    fn an_overlong_sign_in_name_is_cut_short() {
        let long = format!("admin{}", "é".repeat(100_000));
        let kept = sign_in_name(&long);
        assert_eq!(kept.chars().count(), LONGEST_SIGN_IN_NAME);
        assert!(long.starts_with(kept) && kept.len() < long.len());
        let exact = "é".repeat(LONGEST_SIGN_IN_NAME);
        assert_eq!(sign_in_name(&exact), exact);
        assert_eq!(sign_in_name("demo-lead"), "demo-lead");
    }
}
