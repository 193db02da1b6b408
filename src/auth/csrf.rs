//! CSRF protection for every unsafe request to the pages (the API uses bearer tokens, which a
//! browser never sends on its own): the `Origin` (or `Referer`) must name this host, and the
//! form must carry the session's synchronizer token in a `csrf` field (OWASP CSRF cheat sheet,
//! "Synchronizer Token Pattern" plus "Verifying Origin With Standard Headers").

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;
use tower_sessions::Session;

use crate::error::AppError;

const SESSION_KEY: &str = "csrf";
/// Largest form body accepted (2 MiB, as axum's limit on API bodies: one 413 for both).
const MAX_FORM: usize = 2 << 20;

/// The session's CSRF token, created on first use.
///
/// # Errors
/// Session store failures.
pub async fn token(session: &Session) -> Result<String, AppError> {
    if let Some(t) = session
        .get::<String>(SESSION_KEY)
        .await
        .map_err(|e| AppError::Internal(e.into()))?
    {
        return Ok(t);
    }
    let t = super::random_hex(32);
    session
        .insert(SESSION_KEY, &t)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    Ok(t)
}

/// Replaces the session's token (after login and logout).
///
/// # Errors
/// Session store failures.
pub async fn rotate(session: &Session) -> Result<String, AppError> {
    session
        .remove::<String>(SESSION_KEY)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    token(session).await
}

fn origin_ok(req: &Request) -> bool {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    let source = req
        .headers()
        .get(header::ORIGIN)
        .or_else(|| req.headers().get(header::REFERER))
        .and_then(|h| h.to_str().ok());
    match (source, host) {
        // No Origin or Referer (non-browser clients): the token alone decides.
        (None, _) => true,
        (Some(src), Some(host)) => {
            let rest = src.split_once("://").map(|(_, r)| r).unwrap_or("");
            let src_host = rest.split('/').next().unwrap_or("");
            src_host.eq_ignore_ascii_case(host)
        }
        (Some(_), None) => false,
    }
}

/// Middleware: rejects unsafe page requests without a matching origin and token (403).
pub async fn protect(session: Session, req: Request, next: Next) -> Response {
    let unsafe_method = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let path = req.uri().path();
    if !unsafe_method || path.starts_with("/api/") || path.starts_with("/agent/") {
        return next.run(req).await;
    }
    if !origin_ok(&req) {
        return AppError::Csrf.into_response();
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_FORM).await else {
        // Over the limit (or cut off): the same 413 as the API's, never a field error.
        return AppError::TooLarge.into_response();
    };
    let multipart = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|ct| ct.trim_start().starts_with("multipart/form-data"))
        .map(str::to_string);
    let sent = match multipart {
        // A file upload: the token is a field of the multipart body.
        Some(ct) => multipart_token(&ct, bytes.clone()).await,
        None => serde_urlencoded::from_bytes::<Vec<(String, String)>>(&bytes)
            .ok()
            .and_then(|fields| {
                fields
                    .into_iter()
                    .find(|(k, _)| k == SESSION_KEY)
                    .map(|(_, v)| v)
            }),
    };
    let expected = match session.get::<String>(SESSION_KEY).await {
        Ok(v) => v,
        Err(e) => return AppError::Internal(e.into()).into_response(),
    };
    let valid =
        matches!((&sent, &expected), (Some(s), Some(e)) if s.as_bytes().ct_eq(e.as_bytes()).into());
    if !valid {
        return AppError::Csrf.into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The `csrf` field of a `multipart/form-data` body, if it has one.
async fn multipart_token(content_type: &str, bytes: axum::body::Bytes) -> Option<String> {
    use axum::extract::FromRequest;
    let req = axum::http::Request::builder()
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(bytes))
        .ok()?;
    let mut form = axum::extract::Multipart::from_request(req, &())
        .await
        .ok()?;
    while let Ok(Some(field)) = form.next_field().await {
        if field.name() == Some(SESSION_KEY) {
            return field.text().await.ok();
        }
    }
    None
}
