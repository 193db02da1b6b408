//! One application error for pages and the API: user-safe 4xx messages with stable codes;
//! database and unexpected errors become a logged 500 whose cause is never shown.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

/// An error a handler returns.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Input that does not validate: 422 `invalid_input`, naming the field when there is one.
    #[error("{message}")]
    Invalid {
        /// The field at fault, e.g. `share`.
        field: Option<&'static str>,
        /// A message for a person.
        message: String,
    },
    /// A text field with a control character (see [`crate::domain::control_char`]): 422
    /// `invalid_text`, naming the field (`command`, `env.PATH`, `nodes[0].name`).
    #[error("{message}")]
    InvalidText {
        /// The field at fault, as a path into the form or JSON body.
        field: String,
        /// A message for a person.
        message: String,
    },
    /// A well-formed request that contradicts an earlier one, such as an `Idempotency-Key`
    /// repeated with another body: 422 with its own stable `code` (`idempotency_mismatch`).
    #[error("{message}")]
    Unprocessable {
        /// The stable code.
        code: &'static str,
        /// The field (or header) at fault.
        field: Option<&'static str>,
        /// A message for a person.
        message: String,
    },
    /// A request that cannot be read at all (malformed JSON, wrong content type): 400
    /// `malformed_request`.
    #[error("{0}")]
    Malformed(String),
    /// A JSON body whose shape is not the operation's (not an object, a value of the wrong
    /// type, a missing, unknown or repeated field): 422 `invalid_input`, naming the field as a
    /// path into the body (`gpus`, `env.SEED`, `nodes[0].name`) when there is one.
    #[error("{message}")]
    BadShape {
        /// The field at fault, as a path into the body.
        field: Option<String>,
        /// A message for a person, in JSON's terms.
        message: String,
    },
    /// A body over the size limit: 413 `payload_too_large`.
    #[error("the request body is too large (at most 2 MiB)")]
    TooLarge,
    /// Unknown id or name: 404 `not_found`.
    #[error("{0}")]
    NotFound(String),
    /// A request refused by a rule with numbers, such as not enough contractable capacity or
    /// budget: 409 with its own stable `code` (`capacity_exceeded`, `budget_exceeded`, ...).
    #[error("{message}")]
    Refused {
        /// The stable code.
        code: &'static str,
        /// A message for a person, with the numbers.
        message: String,
    },
    /// A state conflict such as a duplicate name: 409 `conflict`.
    #[error("{0}")]
    Conflict(String),
    /// Not signed in (pages, which redirect to the sign-in page): 401 `unauthorized`.
    #[error("sign in first")]
    Unauthorized,
    /// A missing, unknown, expired or revoked bearer token: 401 `unauthorized`, saying which
    /// kind of token the route takes (`agent`: a cluster's agent token, else an API token).
    #[error("{}", if *agent {
        "missing, unknown or revoked agent token: `tranche admin create-agent-token --cluster NAME` makes one"
    } else {
        "missing, unknown, expired or revoked API token: create one on your account page"
    })]
    BadToken {
        /// Whether the route takes an agent token.
        agent: bool,
    },
    /// Signed in but not allowed: 403 `forbidden`.
    #[error("{0}")]
    Forbidden(String),
    /// A missing or wrong CSRF token or a foreign origin: 403 `csrf_failed`.
    #[error("the form expired or came from another site; reload the page and try again")]
    Csrf,
    /// The database cannot be reached now (down, restarting, no connection free in time):
    /// 503 `unavailable` with `Retry-After`, so that clients retry; logged as a warning.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// Anything else: 500 `internal`, logged with its cause chain.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl AppError {
    /// This error with its field renamed by `names` (`(from, to)` pairs; a field not there
    /// keeps its name): the API names the JSON fields it was sent (`period_budget_minor`)
    /// where a check shared with the pages names the form's (`period_budget`).
    #[must_use]
    pub fn renamed(self, names: &[(&str, &'static str)]) -> Self {
        let to = |f: &'static str| {
            names
                .iter()
                .find(|(from, _)| *from == f)
                .map_or(f, |(_, to)| *to)
        };
        match self {
            Self::Invalid {
                field: Some(f),
                message,
            } => Self::Invalid {
                field: Some(to(f)),
                message,
            },
            Self::Unprocessable {
                code,
                field: Some(f),
                message,
            } => Self::Unprocessable {
                code,
                field: Some(to(f)),
                message,
            },
            other => other,
        }
    }

    /// An `Idempotency-Key` already used for another request: 422 `idempotency_mismatch` on
    /// the header (runs and contract purchases).
    pub fn idempotency_mismatch(message: impl Into<String>) -> Self {
        Self::Unprocessable {
            code: "idempotency_mismatch",
            field: Some("Idempotency-Key"),
            message: message.into(),
        }
    }

    /// A validation error on `field`.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: Some(field),
            message: message.into(),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Invalid { .. }
            | Self::BadShape { .. }
            | Self::InvalidText { .. }
            | Self::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Malformed(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Refused { .. } | Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Unauthorized | Self::BadToken { .. } => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::Csrf => StatusCode::FORBIDDEN,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable code used in JSON errors.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid { .. } | Self::BadShape { .. } => "invalid_input",
            Self::InvalidText { .. } => "invalid_text",
            Self::Malformed(_) => "malformed_request",
            Self::TooLarge => "payload_too_large",
            Self::NotFound(_) => "not_found",
            Self::Refused { code, .. } | Self::Unprocessable { code, .. } => code,
            Self::Conflict(_) => "conflict",
            Self::Unauthorized | Self::BadToken { .. } => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::Csrf => "csrf_failed",
            Self::Unavailable(_) => "unavailable",
            Self::Internal(_) => "internal",
        }
    }

    /// The message safe to show a user (internal errors say only that something failed).
    pub fn public_message(&self) -> String {
        match self {
            Self::Internal(_) => crate::i18n::t("error-internal"),
            Self::Unavailable(_) => crate::i18n::t("error-unavailable"),
            Self::Csrf => crate::i18n::t("error-csrf"),
            Self::TooLarge => crate::i18n::t("err-too-large"),
            other => other.to_string(),
        }
    }

    fn log(&self) {
        match self {
            Self::Internal(e) => tracing::error!(error = format!("{e:#}"), "internal error"),
            Self::Unavailable(e) => tracing::warn!(error = %e, "database unavailable"),
            _ => {}
        }
    }

    /// Headers the answer carries: `Retry-After` for 503.
    fn headers(&self) -> Option<[(axum::http::header::HeaderName, &'static str); 1]> {
        matches!(self, Self::Unavailable(_))
            .then_some([(axum::http::header::RETRY_AFTER, RETRY_AFTER_S)])
    }
}

impl From<sqlx::Error> for AppError {
    /// A missing row, a taken name or a broken constraint, in the page's language (English
    /// for the API).
    fn from(e: sqlx::Error) -> Self {
        use crate::i18n::{t, t1};
        if let sqlx::Error::RowNotFound = e {
            return Self::NotFound(t("err-db-no-record"));
        }
        // The database is down or restarting, or no connection was free in time: a client
        // should retry, not report a bug.
        let unavailable = match &e {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
            // Class 08 (connection exception), 57P01-57P03 (shutdown, cannot connect now).
            sqlx::Error::Database(db) => db.code().is_some_and(|c| {
                c.starts_with("08") || matches!(c.as_ref(), "57P01" | "57P02" | "57P03")
            }),
            _ => false,
        };
        if unavailable {
            return Self::Unavailable(e.to_string());
        }
        if let Some(db) = e.as_database_error() {
            let constraint = db.constraint().unwrap_or("");
            match db.code().as_deref() {
                Some("23505") => {
                    return Self::Conflict(t1("err-db-taken", "constraint", constraint));
                }
                Some("23514") if constraint == "sibling_shares_at_most_100" => {
                    return Self::invalid("share", t("err-db-sibling-shares"));
                }
                Some("23514") => {
                    return Self::Invalid {
                        field: None,
                        message: t1("err-db-out-of-range", "constraint", constraint),
                    };
                }
                Some("23503") => {
                    return Self::NotFound(t1(
                        "err-db-missing-reference",
                        "constraint",
                        constraint,
                    ));
                }
                _ => {}
            }
        }
        Self::Internal(e.into())
    }
}

impl From<askama::Error> for AppError {
    fn from(e: askama::Error) -> Self {
        Self::Internal(anyhow::anyhow!("template rendering failed: {e}"))
    }
}

impl IntoResponse for AppError {
    /// Renders a small HTML error page (pages); the API wraps errors in [`ApiError`].
    fn into_response(self) -> Response {
        self.log();
        if matches!(self, Self::Unauthorized) {
            return axum::response::Redirect::to("/login").into_response();
        }
        let headers = self.headers();
        (headers, error_page(self.status(), &self.public_message())).into_response()
    }
}

/// Seconds a client is told to wait before retrying a 503.
const RETRY_AFTER_S: &str = "5";

/// The pages' small HTML error page: `status`'s name as the heading and `message`, in the
/// page's language (crate::i18n::middleware; English outside a page request).
pub fn error_page(status: StatusCode, message: &str) -> Response {
    let message = askama::filters::escape(message, askama::filters::Html)
        .map(|m| m.to_string())
        .unwrap_or_default();
    let lang = crate::i18n::current();
    let heading = if lang == crate::i18n::Lang::En {
        status.canonical_reason().unwrap_or("Error").to_string()
    } else {
        crate::i18n::t1("error-heading", "status", status.as_u16())
    };
    let body = format!(
        "<!doctype html><html lang=\"{lang}\"><head><meta charset=\"utf-8\"><title>{} — Tranche</title>\
         <link rel=\"stylesheet\" href=\"/static/style.css\"></head><body><main class=\"narrow\">\
         <h1>{heading}</h1><p class=\"error\">{message}</p><p><a href=\"/\">{}</a></p></main></body></html>",
        crate::i18n::t("error-page-title"),
        crate::i18n::t("error-back"),
    );
    (status, Html(body)).into_response()
}

/// An [`AppError`] answered as JSON: `{"error": {"code": "...", "message": "...", "field": ...}}`.
#[derive(Debug)]
pub struct ApiError(pub AppError);

impl<E: Into<AppError>> From<E> for ApiError {
    fn from(e: E) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.0.log();
        let field = match &self.0 {
            AppError::Invalid { field, .. } => *field,
            AppError::InvalidText { field, .. } => Some(field.as_str()),
            AppError::BadShape { field, .. } => field.as_deref(),
            AppError::Unprocessable { field, .. } => *field,
            _ => None,
        };
        let body = serde_json::json!({
            "error": { "code": self.0.code(), "message": self.0.public_message(), "field": field }
        });
        (self.0.status(), self.0.headers(), axum::Json(body)).into_response()
    }
}
