//! Choosing the interface language (docs/i18n.md): the switch on every page, the Account
//! page's choice and the organisation's default on `/admin/settings`.

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser, SESSION_USER};
use crate::error::AppError;
use crate::i18n::{self, Lang};
use crate::state::AppState;
use crate::web::input::Form;
use crate::web::{Layout, flash, render};

#[derive(serde::Deserialize, Default)]
struct SwitchForm {
    #[serde(default)]
    lang: String,
    #[serde(default)]
    next: String,
}

/// Only a path on this site (`/runs?x=1`), never `//host` or a full URL.
fn relative(next: &str) -> &str {
    if next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\") {
        next
    } else {
        "/"
    }
}

/// The `tranche_lang` cookie for `lang`, kept a year (`None` removes it).
fn cookie(state: &AppState, lang: Option<Lang>) -> String {
    let secure = if state.site.secure_cookies {
        "; Secure"
    } else {
        ""
    };
    match lang {
        Some(l) => format!(
            "{}={}; Path=/; Max-Age=31536000; SameSite=Lax; HttpOnly{secure}",
            i18n::COOKIE,
            l.code()
        ),
        None => format!(
            "{}=; Path=/; Max-Age=0; SameSite=Lax; HttpOnly{secure}",
            i18n::COOKIE
        ),
    }
}

/// Stores `lang` as the signed-in user's choice (`None`: follow the browser), audited.
async fn save_choice(state: &AppState, user: i64, lang: Option<Lang>) -> Result<(), AppError> {
    let mut tx = state.pool.begin().await?;
    let before: Option<String> =
        sqlx::query_scalar("SELECT language FROM users WHERE id = $1 FOR UPDATE")
            .bind(user)
            .fetch_one(&mut *tx)
            .await?;
    let after = lang.map(|l| l.code().to_string());
    if before != after {
        sqlx::query("UPDATE users SET language = $2 WHERE id = $1")
            .bind(user)
            .bind(&after)
            .execute(&mut *tx)
            .await?;
        crate::db::audit::record(
            &mut *tx,
            crate::db::audit::Change {
                actor: Some(user),
                action: "user.language",
                entity: "user",
                entity_id: Some(user),
                node_id: None,
                before: Some(serde_json::json!({ "language": before })),
                after: Some(serde_json::json!({ "language": after })),
            },
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// `POST /language`: the switch. Sets the cookie (anonymous visitors keep their choice there)
/// and, when signed in, the user's own choice; back to the page it came from.
async fn switch(
    State(state): State<AppState>,
    session: Session,
    Form(f): Form<SwitchForm>,
) -> Result<Response, AppError> {
    let lang = Lang::parse(&f.lang)
        .ok_or_else(|| AppError::invalid("lang", i18n::t("err-lang-choose")))?;
    let user = session
        .get::<i64>(SESSION_USER)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    if let Some(user) = user {
        save_choice(&state, user, Some(lang)).await?;
    }
    i18n::set_current(lang);
    Ok((
        [(header::SET_COOKIE, cookie(&state, Some(lang)))],
        Redirect::to(relative(&f.next)),
    )
        .into_response())
}

/// `POST /account/language`: the Account page's choice, `auto` to follow the switch's cookie
/// or the browser again.
async fn account_choice(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<SwitchForm>,
) -> Result<Response, AppError> {
    let lang = match f.lang.as_str() {
        "auto" | "" => None,
        other => Some(
            Lang::parse(other)
                .ok_or_else(|| AppError::invalid("lang", i18n::t("err-lang-choose-auto")))?,
        ),
    };
    save_choice(&state, me.id, lang).await?;
    if let Some(l) = lang {
        i18n::set_current(l);
    }
    flash(&session, i18n::t("layout-language-saved")).await?;
    Ok(Redirect::to("/account/tokens").into_response())
}

#[derive(askama::Template)]
#[template(path = "admin/settings.html")]
struct SettingsPage {
    layout: Layout,
    default_language: Lang,
}

fn require_admin(me: &Account) -> Result<(), AppError> {
    if me.is_admin() {
        Ok(())
    } else {
        Err(AppError::Forbidden(i18n::t("err-settings-admins")))
    }
}

/// `GET /admin/settings`: the organisation's default language.
async fn settings(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    require_admin(&me)?;
    render(&SettingsPage {
        layout: Layout::for_user(&session, &me, "/admin/settings").await?,
        default_language: i18n::org_default(&state.pool).await?,
    })
}

#[derive(serde::Deserialize, Default)]
struct SettingsForm {
    #[serde(default)]
    default_language: String,
}

/// `POST /admin/settings`: saves the default language, audited.
async fn save_settings(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Form(f): Form<SettingsForm>,
) -> Result<Response, AppError> {
    require_admin(&me)?;
    let lang = Lang::parse(&f.default_language)
        .ok_or_else(|| AppError::invalid("default_language", i18n::t("err-lang-choose")))?;
    let mut tx = state.pool.begin().await?;
    let before = i18n::org_default(&mut *tx).await?;
    sqlx::query("UPDATE org_settings SET default_language = $1 WHERE id")
        .bind(lang.code())
        .execute(&mut *tx)
        .await?;
    crate::db::audit::record(
        &mut *tx,
        crate::db::audit::Change {
            actor: Some(me.id),
            action: "settings.default_language",
            entity: "org_settings",
            entity_id: None,
            node_id: None,
            before: Some(serde_json::json!({ "default_language": before })),
            after: Some(serde_json::json!({ "default_language": lang })),
        },
    )
    .await?;
    tx.commit().await?;
    state.org_language.remember(lang);
    flash(&session, i18n::t("settings-saved")).await?;
    Ok(Redirect::to("/admin/settings").into_response())
}

/// `POST /language`, `POST /account/language`, `GET`/`POST /admin/settings`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/language", post(switch))
        .route("/account/language", post(account_choice))
        .route("/admin/settings", get(settings).post(save_settings))
}

#[cfg(test)]
mod tests {
    use super::relative;

    #[test]
    fn the_switch_returns_only_to_this_site() {
        assert_eq!(relative("/runs?scope=mine"), "/runs?scope=mine");
        assert_eq!(relative("//evil.example"), "/");
        assert_eq!(relative("/\\evil.example"), "/");
        assert_eq!(relative("https://evil.example/"), "/");
    }
}
