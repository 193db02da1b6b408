//! The user's own API tokens.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser, tokens};
use crate::error::AppError;
use crate::state::AppState;
use crate::web::{Layout, render_status};

#[derive(askama::Template)]
#[template(path = "account.html")]
struct TokensPage {
    layout: Layout,
    created: Option<String>,
    error: Option<String>,
    form_label: String,
    tokens: Vec<(String, String, String)>,
}

async fn page(
    state: &AppState,
    session: &Session,
    me: &Account,
    created: Option<String>,
    error: Option<String>,
    label: String,
) -> Result<Response, AppError> {
    let rows: Vec<(String, time::OffsetDateTime, Option<time::OffsetDateTime>)> =
        sqlx::query_as("SELECT label, created_at, last_used_at FROM api_tokens WHERE user_id = $1 ORDER BY id DESC")
            .bind(me.id)
            .fetch_all(&state.pool)
            .await?;
    let fmt = |t: time::OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    render_status(
        status,
        &TokensPage {
            layout: Layout::for_user(session, me, "/account/tokens").await?,
            created,
            error,
            form_label: label,
            tokens: rows
                .into_iter()
                .map(|(l, c, u)| (l, fmt(c), u.map(fmt).unwrap_or_else(|| "never".into())))
                .collect(),
        },
    )
}

async fn get_tokens(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    page(&state, &session, &me, None, None, String::new()).await
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
    axum::Form(f): axum::Form<TokenForm>,
) -> Result<Response, AppError> {
    if f.label.chars().count() > 100 {
        return page(
            &state,
            &session,
            &me,
            None,
            Some("a label has at most 100 characters".into()),
            f.label,
        )
        .await;
    }
    let token = tokens::create(&state.pool, me.id, f.label.trim()).await?;
    // Shown once on this response; only its hash is stored.
    page(&state, &session, &me, Some(token), None, String::new()).await
}

/// `GET/POST /account/tokens`.
pub fn router() -> Router<AppState> {
    Router::new().route("/account/tokens", get(get_tokens).post(create_token))
}
