//! The user's own account: API tokens (create, list, revoke) and password change.

use axum::Router;
use axum::extract::State;

use crate::web::input::Form;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser, SESSION_EPOCH, password, tokens};
use crate::error::AppError;
use crate::state::AppState;
use crate::web::{Layout, PagePath, flash, render_status};

/// Session key carrying a just-created token to the next page view (shown once, then removed).
const NEW_TOKEN: &str = "new_token";

struct TokenRow {
    id: i64,
    label: String,
    created: String,
    used: String,
    revoked: Option<String>,
}

#[derive(askama::Template)]
#[template(path = "account.html")]
struct AccountPage {
    layout: Layout,
    created: Option<String>,
    error: Option<String>,
    password_error: Option<String>,
    email_error: Option<String>,
    email: String,
    form_label: String,
    tokens: Vec<TokenRow>,
    /// The user's language choice: `en`, `es`, `eu` or `auto`.
    language: &'static str,
}

async fn page(
    state: &AppState,
    session: &Session,
    me: &Account,
    error: Option<String>,
    password_error: Option<String>,
    email_form: Option<(String, String)>,
    label: String,
) -> Result<Response, AppError> {
    let stored_email: Option<String> = sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
        .bind(me.id)
        .fetch_one(&state.pool)
        .await?;
    let (email, email_error) = match email_form {
        Some((typed, message)) => (typed, Some(message)),
        None => (stored_email.unwrap_or_default(), None),
    };
    let rows = tokens::list(&state.pool, me.id).await?;
    let created = match session
        .get::<String>(NEW_TOKEN)
        .await
        .map_err(|e| AppError::Internal(e.into()))?
    {
        Some(t) => {
            session
                .remove::<String>(NEW_TOKEN)
                .await
                .map_err(|e| AppError::Internal(e.into()))?;
            Some(t)
        }
        None => None,
    };
    let status = if error.is_some() || password_error.is_some() || email_error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    render_status(
        status,
        &AccountPage {
            layout: Layout::for_user(session, me, "/account/tokens").await?,
            created,
            error,
            password_error,
            email_error,
            email,
            form_label: label,
            language: me.language.map_or("auto", |l| l.code()),
            tokens: {
                // In the site's time zone and the page's language, as every other page's
                // instants ([`crate::domain::format_local`]).
                let at = |t: time::OffsetDateTime| {
                    crate::domain::format_local(crate::ledger::to_jiff(t), &state.site.time_zone)
                };
                rows.into_iter()
                    .map(|t| TokenRow {
                        id: t.id,
                        label: t.label,
                        created: at(t.created_at),
                        used: t
                            .last_used_at
                            .map_or_else(|| crate::i18n::t("account-never"), at),
                        revoked: t.revoked_at.map(at),
                    })
                    .collect()
            },
        },
    )
}

async fn get_account(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    page(&state, &session, &me, None, None, None, String::new()).await
}

#[derive(serde::Deserialize, Default)]
struct TokenForm {
    #[serde(default)]
    label: String,
}

async fn create_token(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<TokenForm>,
) -> Result<Response, AppError> {
    if f.label.chars().count() > 100 {
        return page(
            &state,
            &session,
            &me,
            Some(crate::i18n::t("account-label-too-long")),
            None,
            None,
            f.label,
        )
        .await;
    }
    let token = tokens::create(&state.pool, Some(me.id), me.id, f.label.trim()).await?;
    // Shown once on the next page view (reloading it does not create another); only the
    // token's hash is stored in the database.
    session
        .insert(NEW_TOKEN, token)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    Ok(Redirect::to("/account/tokens").into_response())
}

async fn revoke_token(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    if tokens::revoke(&state.pool, me.id, id, false).await? {
        flash(&session, crate::i18n::t("account-flash-token-revoked")).await?;
        Ok(Redirect::to("/account/tokens").into_response())
    } else {
        Err(AppError::NotFound(crate::i18n::t1(
            "account-err-no-token",
            "id",
            id.to_string(),
        )))
    }
}

#[derive(serde::Deserialize, Default)]
struct PasswordForm {
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
    #[serde(default)]
    repeat: String,
}

async fn change_password(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<PasswordForm>,
) -> Result<Response, AppError> {
    let hash: Option<String> = sqlx::query_scalar("SELECT password_hash FROM users WHERE id = $1")
        .bind(me.id)
        .fetch_one(&state.pool)
        .await?;
    let problem = if !password::verify(f.current.clone(), hash).await {
        Some(crate::i18n::t("account-err-current-password"))
    } else if f.new != f.repeat {
        Some(crate::i18n::t("account-err-passwords-differ"))
    } else {
        password::check_new(&f.new).err()
    };
    if let Some(p) = problem {
        return page(&state, &session, &me, None, Some(p), None, String::new()).await;
    }
    crate::db::users::set_password(&state.pool, Some(me.id), &me.name, &f.new).await?;
    // Other sessions end; this one continues with the new epoch.
    let epoch: i32 = sqlx::query_scalar("SELECT session_epoch FROM users WHERE id = $1")
        .bind(me.id)
        .fetch_one(&state.pool)
        .await?;
    session
        .insert(SESSION_EPOCH, epoch)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    flash(&session, crate::i18n::t("account-flash-password-changed")).await?;
    Ok(Redirect::to("/account/tokens").into_response())
}

#[derive(serde::Deserialize, Default)]
struct EmailForm {
    #[serde(default)]
    email: String,
}

async fn set_email(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<EmailForm>,
) -> Result<Response, AppError> {
    match crate::db::users::set_email(&state.pool, me.id, &f.email).await {
        Ok(()) => {
            flash(&session, crate::i18n::t("account-flash-email-saved")).await?;
            Ok(Redirect::to("/account/tokens").into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            page(
                &state,
                &session,
                &me,
                None,
                None,
                Some((f.email, message)),
                String::new(),
            )
            .await
        }
        Err(e) => Err(e),
    }
}

/// `/account/...`: tokens, password, e-mail.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account/tokens", get(get_account).post(create_token))
        .route("/account/tokens/{id}/revoke", post(revoke_token))
        .route("/account/password", post(change_password))
        .route("/account/email", post(set_email))
}
