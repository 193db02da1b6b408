//! The web layer: server-rendered pages (one file per area, each with its `router()`), the
//! JSON API under `/api/v1`, and the middleware around them (sessions, CSRF, tracing).

pub mod account;
pub mod admin;
pub mod ai;
pub mod api;
pub mod audit;
pub mod charts;
pub mod contracts;
pub mod home;
pub mod input;
pub mod language;
pub mod metrics;
pub mod project;
pub mod reports;
pub mod runs;
pub mod session;
pub mod tree;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, Session, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;

use crate::auth::{Account, csrf};
use crate::error::AppError;
use crate::i18n;
use crate::state::AppState;

/// What the shared page layout (`templates/base.html`) needs.
pub struct Layout {
    /// The signed-in user's name, `None` on the login page.
    pub user_name: Option<String>,
    /// Navigation links (href, label) for the user's roles, labels in the page's language.
    pub nav: Vec<(&'static str, String)>,
    /// The href of the current area, to mark it in the navigation.
    pub active: &'static str,
    /// The session's CSRF token for forms.
    pub csrf: String,
    /// A one-line confirmation to show ("Shares saved.").
    pub notice: Option<String>,
}

impl Layout {
    /// The layout for a signed-in account.
    ///
    /// # Errors
    /// Session store failures.
    pub async fn for_user(
        session: &Session,
        account: &Account,
        active: &'static str,
    ) -> Result<Self, AppError> {
        let mut links = vec![("/", "nav-home"), ("/runs", "nav-runs")];
        if runs::can_submit(account) {
            links.push(("/runs/new", "nav-submit"));
        }
        if runs::is_lead(account) {
            links.push(("/approvals", "nav-approvals"));
        }
        links.extend([
            ("/tree", "nav-tree"),
            ("/capacity", "nav-capacity"),
            ("/contracts", "nav-contracts"),
            ("/ai", "nav-ai"),
        ]);
        if account.sees_everything() || account.lead_nodes().next().is_some() {
            links.push(("/reports", "nav-spend"));
            links.push(("/dashboard", "nav-metrics"));
            links.push(("/audit", "nav-audit"));
        }
        if account.is_admin() {
            links.push(("/admin/inventory", "nav-inventory"));
            links.push(("/admin/users", "nav-users"));
            links.push(("/admin/settings", "nav-settings"));
        }
        links.push(("/account/tokens", "nav-account"));
        let nav = links
            .into_iter()
            .map(|(href, key)| (href, i18n::t(key)))
            .collect();
        // Read first: removing marks the session modified, which costs a write on every page.
        let notice = match session
            .get::<String>("notice")
            .await
            .map_err(|e| AppError::Internal(e.into()))?
        {
            Some(n) => {
                session
                    .remove::<String>("notice")
                    .await
                    .map_err(|e| AppError::Internal(e.into()))?;
                Some(n)
            }
            None => None,
        };
        Ok(Self {
            user_name: Some(account.name.clone()),
            nav,
            active,
            csrf: csrf::token(session).await?,
            notice,
        })
    }
}

impl Layout {
    /// The page's language (`<html lang>`).
    pub fn lang(&self) -> &'static str {
        i18n::current().code()
    }

    /// The languages for the switch: (code, own name, whether it is the page's).
    pub fn languages(&self) -> Vec<(&'static str, &'static str, bool)> {
        let now = i18n::current();
        i18n::Lang::ALL
            .iter()
            .map(|l| (l.code(), l.native_name(), *l == now))
            .collect()
    }

    /// Where the language switch comes back to: this page.
    pub fn here(&self) -> String {
        i18n::here()
    }

    /// The message `key` in the page's language.
    pub fn t(&self, key: &str) -> String {
        i18n::t(key)
    }

    /// The message `key` with one argument.
    pub fn t1(&self, key: &str, name: &str, value: impl i18n::Arg) -> String {
        i18n::t1(key, name, value)
    }

    /// The message `key` with two arguments.
    pub fn t2(
        &self,
        key: &str,
        n1: &str,
        v1: impl i18n::Arg,
        n2: &str,
        v2: impl i18n::Arg,
    ) -> String {
        i18n::t2(key, n1, v1, n2, v2)
    }

    /// The message `key` with three arguments.
    #[expect(clippy::too_many_arguments, reason = "three named message arguments")]
    pub fn t3(
        &self,
        key: &str,
        n1: &str,
        v1: impl i18n::Arg,
        n2: &str,
        v2: impl i18n::Arg,
        n3: &str,
        v3: impl i18n::Arg,
    ) -> String {
        i18n::ta(key, &[(n1, &v1), (n2, &v2), (n3, &v3)])
    }
}

/// Path parameters for pages: an id that does not parse is a 404 page, like an unknown one; a
/// parameter with a control character is a 422 page (see [`input::check_path`]).
pub struct PagePath<T>(pub T);

impl<T: serde::de::DeserializeOwned + Send, S: Send + Sync> axum::extract::FromRequestParts<S>
    for PagePath<T>
{
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        input::check_path(parts, state).await?;
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| Self(v))
            .map_err(|_| AppError::NotFound(i18n::t("error-no-such-page")))
    }
}

/// Stores a one-line confirmation shown on the next page.
///
/// # Errors
/// Session store failures.
pub async fn flash(session: &Session, notice: impl Into<String>) -> Result<(), AppError> {
    session
        .insert("notice", notice.into())
        .await
        .map_err(|e| AppError::Internal(e.into()))
}

/// Renders an askama template into an HTML response.
///
/// # Errors
/// Template rendering failures (as a logged 500).
pub fn render(t: &impl askama::Template) -> Result<Response, AppError> {
    Ok(Html(t.render()?).into_response())
}

/// Renders a template with a status (e.g. 422 for a form re-rendered with its error).
///
/// # Errors
/// Template rendering failures.
pub fn render_status(status: StatusCode, t: &impl askama::Template) -> Result<Response, AppError> {
    Ok((status, Html(t.render()?)).into_response())
}

/// Formats a budget period for display with its last day and length:
/// `2026-11-01 to 2026-11-30 (720 h)`; in Spanish `del 1 de noviembre de 2026 al 30 de
/// noviembre de 2026 (720 h)`.
pub fn period_label(start: &jiff::Zoned, end: &jiff::Zoned) -> String {
    let last = end.date().yesterday().unwrap_or(end.date());
    let hours = (end.timestamp().as_second() - start.timestamp().as_second()) / 3600;
    let lang = i18n::current();
    if lang == i18n::Lang::En {
        return format!("{} to {last} ({hours} h)", start.date());
    }
    i18n::ta(
        "home-period-range",
        &[
            ("start", &i18n::format::long_date(lang, start.date())),
            ("end", &i18n::format::long_date(lang, last)),
            ("hours", &hours),
        ],
    )
}

/// A whole number as a page shows it ([`i18n::format::count`]): `1024` in English, `1.024`
/// in Basque.
pub fn int(n: impl Into<i64>) -> String {
    i18n::format::count(n.into())
}

/// Checks budget alerts after a change in spend; a failure is logged, not shown (the
/// roll-over task checks again within a minute).
pub async fn check_alerts(state: &AppState) {
    // Alerts store their English text (beside a note for other readers), so the check runs in
    // English whatever the page's language: amounts in it are written by `Money::display`.
    let checked = i18n::scope(
        i18n::Lang::En,
        crate::ledger::alerts::check(&state.pool, &state.site, jiff::Timestamp::now()),
    )
    .await;
    if let Err(e) = checked {
        tracing::warn!(error = %e, "budget alert check failed");
    }
}

async fn healthz(State(state): State<AppState>) -> Response {
    // A monitor's probe must get an answer in its own timeout: a database that does not answer
    // within HEALTH_TIMEOUT is unavailable (waiting for the pool's acquire timeout, the probe
    // saw no answer at all).
    let ping = sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&state.pool);
    match tokio::time::timeout(HEALTH_TIMEOUT, ping).await {
        Ok(Ok(_)) => (StatusCode::OK, "ok").into_response(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health check: database unavailable");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response()
        }
        Err(_) => {
            tracing::warn!(
                timeout_s = HEALTH_TIMEOUT.as_secs(),
                "health check: the database did not answer"
            );
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response()
        }
    }
}

/// How long `/healthz` waits for the database before answering 503.
const HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../../static/style.css"),
    )
        .into_response()
}

/// The pages' 404; under `/api/` (such as `/api/v1/`, with its trailing slash, which the
/// API's own router does not see) the API's JSON 404.
/// A page that failed with 500 while the database cannot be reached (the session layer, which
/// loads and saves sessions there, answers 500 itself) is the 503 error page with
/// `Retry-After`, as the API's answers are (found by a new-user check).
async fn unavailable_pages(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let res = next.run(req).await;
    if res.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return res;
    }
    let reachable = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        sqlx::query("SELECT 1").execute(&state.pool),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    if reachable {
        return res;
    }
    crate::error::AppError::Unavailable("the database cannot be reached".into()).into_response()
}

async fn not_found(uri: axum::http::Uri) -> Response {
    if uri.path() == "/api" || uri.path().starts_with("/api/") {
        return api::not_found().await.into_response();
    }
    AppError::NotFound(i18n::t("error-no-such-page")).into_response()
}

/// The pages' 405: an address that takes a form's submission, visited (a bookmark, a reload
/// after the language switch, a link copied from the address bar): a page in the reader's
/// language that says so, instead of an empty answer.
/// A form sent to an address that is only a page (a POST to a page) is told that instead.
async fn form_only(
    method: axum::http::Method,
    _reader: Result<crate::auth::CurrentUser, Response>,
) -> Response {
    // The extractor applies a signed-in reader's own language; anyone may read the page.
    let key = if method == axum::http::Method::GET || method == axum::http::Method::HEAD {
        "error-form-only"
    } else {
        "error-page-only"
    };
    crate::error::error_page(StatusCode::METHOD_NOT_ALLOWED, &i18n::t(key))
}

/// Runs each request's handler in its own task, so a client that disconnects (an agent
/// dropping a long poll, a closed browser tab) cannot cancel it halfway through a
/// transaction: a future dropped inside sqlx's `begin()` can return a connection to the pool
/// with a transaction still open (sqlx issue 4385), and later writes on it would be lost.
async fn run_to_completion(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    match tokio::spawn(next.run(req)).await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!(error = %e, "request handler panicked");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Builds the whole application: pages, API, health check, static files, with sessions stored
/// in PostgreSQL, CSRF protection and request tracing.
pub fn app(state: AppState) -> Router {
    let store = PostgresStore::new(state.pool.clone());
    let sessions = SessionManagerLayer::new(store)
        .with_name("tranche_session")
        .with_secure(state.site.secure_cookies)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_expiry(Expiry::OnInactivity(time::Duration::hours(12)));
    let pages = Router::new()
        .merge(session::router())
        .merge(home::router())
        .merge(tree::router())
        .merge(admin::router())
        .merge(audit::router())
        .merge(account::router())
        .merge(contracts::router())
        .merge(reports::router())
        .merge(metrics::router())
        .merge(runs::router())
        .merge(ai::router())
        .merge(language::router())
        .fallback(not_found)
        .method_not_allowed_fallback(form_only)
        .layer(axum::middleware::from_fn(csrf::protect))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            i18n::middleware,
        ))
        .layer(sessions)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            unavailable_pages,
        ))
        // Signed-in pages are never cached by browsers or proxies.
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ));
    Router::new()
        .nest("/api/v1", api::router())
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics::prometheus))
        .route("/static/style.css", get(stylesheet))
        .merge(pages)
        .route_layer(axum::middleware::from_fn(metrics::tag_route))
        // No framing (clickjacking), no MIME sniffing, only our own scripts and styles (inline
        // styles carry the tree's indentation and the calendar's colours), no referrer leaks.
        .layer(SetResponseHeaderLayer::overriding(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
        .layer(SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(SetResponseHeaderLayer::overriding(header::REFERRER_POLICY, HeaderValue::from_static("same-origin")))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"),
        ))
        .layer(axum::middleware::from_fn(run_to_completion))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::count_requests,
        ))
        // Spans name the method and path only: a query string may carry a one-time secret
        // (the OpenID provider's code and state on /login/oidc/callback), which no log shows.
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
                tracing::debug_span!("request", method = %req.method(), path = %req.uri().path())
            }),
        )
        .with_state(state)
}
