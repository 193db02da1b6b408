//! The input boundary: every form, query string and JSON body passes the text rule
//! ([`crate::domain::control_char`]) here, before any handler sees it, so no field of any
//! request can carry a NUL byte (which PostgreSQL refuses to store), another control
//! character or invalid UTF-8 into the application.
//!
//! Pages use [`Form`] and [`Query`] instead of axum's; the API's `ApiJson` and `ApiQuery`
//! call [`check_json`] and [`check_pairs`]; path parameters (`ApiPath`, `PagePath`) pass
//! [`check_path`]. A refused form is answered 422 with a page that
//! names the field and gives the person's input back in a form to correct and send again; the
//! API answers `{"error": {"code": "invalid_text", "field": ...}}`.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::domain;
use crate::error::AppError;
use crate::web::{Layout, render_status};

/// Fields that take several lines (a run's command, its environment and secret environment):
/// tab, line feed and carriage return are allowed in them, in forms and in JSON bodies (where
/// `env.NAME` is the value of one variable).
pub const MULTILINE_FIELDS: [&str; 3] = ["command", "env", "secret_env"];

/// Fields whose values are never shown back: the sign-in password, the password change
/// form's three fields and a run's secret environment.
const SECRET_FIELDS: [&str; 5] = ["password", "current", "new", "repeat", "secret_env"];

fn secret(name: &str) -> bool {
    SECRET_FIELDS.contains(&name)
}

/// Whether the field at `path` (`command`, `env.PATH`, `nodes[0].name`) takes several lines.
fn multiline(path: &str) -> bool {
    let top = path.split(['.', '[']).next().unwrap_or(path);
    MULTILINE_FIELDS.contains(&top)
}

/// Fields a program makes up rather than a person types: an agent's label (host and process,
/// from the machine's host name). Bidirectional formatting characters are allowed in them, as
/// refusing would stop the agent; pages show them without invisible characters.
const MACHINE_LABELS: [&str; 1] = ["agent"];

/// Checks one text value of the field at `path` against the text rule.
///
/// # Errors
/// 422 `invalid_text` naming the field, the character and its position.
pub fn check_text(path: &str, value: &str) -> Result<(), AppError> {
    let lines = multiline(path);
    match domain::control_char_in(value, lines, MACHINE_LABELS.contains(&path)) {
        None => Ok(()),
        Some(c) => Err(AppError::InvalidText {
            field: domain::excerpt(path),
            message: crate::i18n::ta(
                "input-control-char",
                &[
                    ("field", &domain::excerpt(path)),
                    ("code", &format!("{:04X}", u32::from(c.character))),
                    ("position", &c.position.to_string()),
                    (
                        "rule",
                        &crate::i18n::t(if lines {
                            "input-rule-multiline"
                        } else {
                            "input-rule-line"
                        }),
                    ),
                ],
            ),
        }),
    }
}

/// Checks decoded form or query fields: each name and value against the text rule.
///
/// # Errors
/// 422 `invalid_text` for the first field at fault.
pub fn check_pairs(pairs: &[(String, String)]) -> Result<(), AppError> {
    for (name, value) in pairs {
        check_text("field name", name)?;
        check_text(name, value)?;
    }
    Ok(())
}

/// Checks every string of a JSON document (object keys too) against the text rule, naming
/// the field by its path: `project`, `env.PATH`, `nodes[0].name`.
///
/// # Errors
/// 422 `invalid_text` for the first string at fault.
pub fn check_json(value: &Value) -> Result<(), AppError> {
    fn walk(value: &Value, path: &mut String) -> Result<(), AppError> {
        match value {
            Value::String(s) => check_text(if path.is_empty() { "body" } else { path }, s),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    check_text(&format!("name of {path}"), key)?;
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }
    walk(value, &mut String::new())
}

/// Checks the request's path parameters (`/members/{user}`) against the text rule; a path
/// that is not UTF-8 is left to the `Path` extractor that follows (a 404).
///
/// # Errors
/// 422 `invalid_text` for the first parameter at fault.
pub async fn check_path<S: Send + Sync>(parts: &mut Parts, state: &S) -> Result<(), AppError> {
    match axum::extract::RawPathParams::from_request_parts(parts, state).await {
        Ok(params) => {
            for (name, value) in &params {
                check_text(name, value)?;
            }
        }
        Err(axum::extract::rejection::RawPathParamsRejection::InvalidUtf8InPathParam(e)) => {
            // The rejection names the segment only in its text: "Invalid UTF-8 in `id`".
            let text = e.body_text();
            let name = text.split('`').nth(1).unwrap_or("path");
            return Err(not_utf8(name));
        }
        Err(_) => {}
    }
    Ok(())
}

/// Decodes `application/x-www-form-urlencoded` text (a body or a query string) into fields,
/// refusing bytes that are not UTF-8 (axum's decoder would replace them silently).
///
/// # Errors
/// 422 `invalid_text` naming the field whose name or value is not UTF-8.
pub fn decode_pairs(input: &[u8]) -> Result<Vec<(String, String)>, AppError> {
    fn decode(part: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(part.len());
        let mut i = 0;
        while i < part.len() {
            let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
            match part[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < part.len() => match (hex(part[i + 1]), hex(part[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push(h * 16 + l);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                },
                b => out.push(b),
            }
            i += 1;
        }
        out
    }
    let mut pairs = Vec::new();
    for piece in input.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        let (name, value) = match piece.iter().position(|b| *b == b'=') {
            Some(at) => (&piece[..at], &piece[at + 1..]),
            None => (piece, &[][..]),
        };
        let name = decode(name);
        let name = String::from_utf8(name)
            .map_err(|e| not_utf8(&String::from_utf8_lossy(e.as_bytes())))?;
        let value = String::from_utf8(decode(value)).map_err(|_| not_utf8(&name))?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

fn not_utf8(field: &str) -> AppError {
    let field = domain::excerpt(field);
    AppError::InvalidText {
        message: crate::i18n::t1("err-not-utf8", "field", &field),
        field,
    }
}

/// A field of the form given back on the page that refuses it.
struct Field {
    name: String,
    /// The value as sent, control characters shown as symbols (U+0000 as `␀`).
    value: String,
    hidden: bool,
    secret: bool,
    multiline: bool,
    invalid: bool,
}

/// Shows control characters as visible symbols: C0 as the Unicode control pictures
/// (U+2400 to U+241F), DEL as `␡`, C1 as `�`.
/// In a single-line field (`multiline` false) tabs and line breaks too: an `<input>` would
/// hide a tab and drop a line break on sending again.
fn visible(text: &str, multiline: bool) -> String {
    text.chars()
        .map(|c| match u32::from(c) {
            v @ 0..=0x1f if !(multiline && matches!(c, '\t' | '\n' | '\r')) => {
                char::from_u32(0x2400 + v).unwrap_or('\u{fffd}')
            }
            0x7f => '\u{2421}',
            0x80..=0x9f => '\u{fffd}',
            _ => c,
        })
        .collect()
}

#[derive(askama::Template)]
#[template(path = "input_error.html")]
struct RefusedForm {
    layout: Layout,
    message: String,
    action: String,
    fields: Vec<Field>,
}

/// The 422 page for a form refused by the text rule: the message naming the field, and the
/// person's input (secrets left out) in a form that sends it to the same address again.
fn refused_form(error: AppError, action: &str, raw: &[u8]) -> Response {
    let bad = match &error {
        AppError::InvalidText { field, .. } => field.clone(),
        _ => String::new(),
    };
    let pairs = serde_urlencoded::from_bytes::<Vec<(String, String)>>(raw).unwrap_or_default();
    let csrf = pairs
        .iter()
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let fields = pairs
        .into_iter()
        .filter(|(k, _)| k != "csrf")
        .map(|(name, value)| Field {
            hidden: matches!(name.as_str(), "once" | "quote" | "next" | "action"),
            secret: secret(&name),
            multiline: multiline(&name),
            invalid: domain::excerpt(&name) == bad,
            value: if secret(&name) {
                String::new()
            } else {
                visible(&value, multiline(&name))
            },
            name: visible(&name, false),
        })
        .collect();
    let page = RefusedForm {
        layout: Layout {
            user_name: None,
            nav: Vec::new(),
            active: "",
            csrf,
            notice: None,
        },
        message: error.public_message(),
        action: action.to_string(),
        fields,
    };
    render_status(StatusCode::UNPROCESSABLE_ENTITY, &page)
        .unwrap_or_else(IntoResponse::into_response)
}

/// A form body (`application/x-www-form-urlencoded`) for pages, read like axum's `Form` after
/// every field passed the text rule. A refused form is answered 422 with the form given back
/// (see the module documentation); a body that is not a form is a 400 page.
pub struct Form<T>(pub T);

/// The address and body of a page's form, or the answer for a request that is no form (400)
/// or too large (413).
async fn form_body<S: Send + Sync>(req: Request, state: &S) -> Result<(String, Bytes), Response> {
    let action = req.uri().path().to_string();
    let is_form = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.trim_start()
                .starts_with("application/x-www-form-urlencoded")
        });
    if !is_form {
        return Err(AppError::Malformed(crate::i18n::t("err-not-a-form")).into_response());
    }
    let bytes = Bytes::from_request(req, state).await.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            AppError::TooLarge.into_response()
        } else {
            AppError::Malformed(r.body_text()).into_response()
        }
    })?;
    Ok((action, bytes))
}

/// Reads a form that passed the text rule into `T` (422 when it does not fit).
fn read_form<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    serde_urlencoded::from_bytes::<T>(bytes).map_err(|e| AppError::Invalid {
        field: None,
        message: domain::shorten_quoted(&crate::i18n::t1(
            "err-form-unreadable",
            "why",
            e.to_string(),
        )),
    })
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Form<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (action, bytes) = form_body(req, state).await?;
        if let Err(e) = decode_pairs(&bytes).and_then(|pairs| check_pairs(&pairs)) {
            return Err(refused_form(e, &action, &bytes));
        }
        read_form(&bytes)
            .map(Self)
            .map_err(IntoResponse::into_response)
    }
}

/// A form body read as [`Form`] reads it, except that a form refused by the text rule goes to
/// the handler with the error (422 `invalid_text`) rather than to the generic page, so that it
/// re-renders its own form: the message next to the field, the input kept. The values of a
/// refused form come with their control characters shown as symbols (U+0000 as `␀`), as the
/// generic page shows them, so nothing the rule refused reaches the handler's work. A body
/// that is not UTF-8, or that does not fit `T` once shown so, gets the generic page.
pub struct CheckedForm<T>(pub T, pub Option<AppError>);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for CheckedForm<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (action, bytes) = form_body(req, state).await?;
        let pairs = decode_pairs(&bytes).map_err(|e| refused_form(e, &action, &bytes))?;
        let Err(e) = check_pairs(&pairs) else {
            return read_form(&bytes)
                .map(|form| Self(form, None))
                .map_err(IntoResponse::into_response);
        };
        let shown: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(name, value)| {
                let value = visible(&value, multiline(&name));
                (name, value)
            })
            .collect();
        match serde_urlencoded::to_string(&shown)
            .ok()
            .and_then(|q| serde_urlencoded::from_str::<T>(&q).ok())
        {
            Some(form) => Ok(Self(form, Some(e))),
            None => Err(refused_form(e, &action, &bytes)),
        }
    }
}

/// A query string for pages, read like axum's `Query` after every field passed the text
/// rule; refusals are error pages (422 `invalid_text`, 400 for a query that does not fit).
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        check_pairs(&decode_pairs(query.as_bytes())?)?;
        serde_urlencoded::from_str::<T>(query)
            .map(Self)
            .map_err(|e| {
                AppError::Malformed(domain::shorten_quoted(&crate::i18n::t1(
                    "err-query-unreadable",
                    "why",
                    e.to_string(),
                )))
            })
    }
}

/// Parses a JSON request body into a value, refusing an object that names a field twice
/// (`serde_json::Value` would keep the last silently, so a proxy reading the first and the
/// server reading the last would see two requests).
///
/// # Errors
/// 400 `malformed_request` when it is not JSON (with the position); 422 `invalid_input` for a
/// repeated field (named).
pub fn unique_json(bytes: &[u8]) -> Result<Value, AppError> {
    let not_json = |e: serde_json::Error| {
        AppError::Malformed(format!("Failed to parse the request body as JSON: {e}"))
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let Unique(value) = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        if e.inner().is_data() {
            shape_error(e)
        } else {
            not_json(e.into_inner())
        }
    })?;
    de.end().map_err(not_json)?;
    Ok(value)
}

/// Reads a checked JSON value as the operation's body type.
///
/// # Errors
/// 422 `invalid_input` naming the field: a value of the wrong type, a missing or an unknown
/// field, in JSON's terms (an integer, an object), never the server's type names.
pub fn from_json_value<T: DeserializeOwned>(value: Value) -> Result<T, AppError> {
    serde_path_to_error::deserialize(value).map_err(shape_error)
}

/// Reads a query string as the operation's parameters.
///
/// # Errors
/// 422 `invalid_input` naming the parameter: a value of the wrong type (`limit=abc`), a
/// missing or an unknown one, as for a body ([`from_json_value`]).
pub fn from_query<T: DeserializeOwned>(query: &str) -> Result<T, AppError> {
    serde_path_to_error::deserialize(serde_urlencoded::Deserializer::new(form_urlencoded::parse(
        query.as_bytes(),
    )))
    .map_err(shape_error)
}

fn shape_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> AppError {
    let path = e.path().to_string();
    let text = e.into_inner().to_string();
    // serde_json appends the position; the field says where.
    let text = match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    let named = ["missing field `", "unknown field `", "duplicate field `"]
        .iter()
        .find_map(|p| text.strip_prefix(p))
        .and_then(|rest| rest.split('`').next());
    let field = match (path.as_str(), named) {
        (".", None) => None,
        (".", Some(n)) => Some(n.to_string()),
        (p, Some(n)) if !p.ends_with(n) => Some(format!("{p}.{n}")),
        (p, _) => Some(p.to_string()),
    };
    let words = domain::shorten_quoted(&in_json_terms(&text));
    let field = field.map(|f| domain::excerpt(&f));
    let message = match (&field, named) {
        (Some(f), None) => format!("{f}: {words}"),
        _ => words,
    };
    AppError::BadShape { field, message }
}

/// A deserializer's message in JSON's terms: "expected i64" becomes "expected an integer",
/// "map" an object, "sequence" an array, a struct's name an object. No type's own range is
/// named: it is not the field's (a priority is an i32 but -1,000 to 1,000), which the field's
/// own check names.
fn in_json_terms(message: &str) -> String {
    const TERMS: [(&str, &str); 14] = [
        ("i64", "an integer"),
        ("u64", "an integer from 0"),
        ("usize", "an integer from 0"),
        ("i32", "an integer"),
        ("u32", "an integer from 0"),
        ("i16", "an integer"),
        ("u16", "an integer from 0"),
        ("i8", "an integer"),
        ("u8", "an integer from 0"),
        ("f64", "a number"),
        ("f32", "a number"),
        ("a map", "an object"),
        ("a sequence", "an array"),
        ("unit", "null"),
    ];
    let mut out = message
        .replace("invalid type: map", "invalid type: object")
        .replace("invalid type: sequence", "invalid type: array")
        .replace("invalid type: unit value", "invalid type: null")
        // JSON has one kind of number: an integer beyond 64 bits reads as a float (`1e+20`).
        .replace(
            "invalid type: floating point",
            "invalid value: a number with a fraction or too large,",
        );
    if let Some(at) = out.find("expected ") {
        let rest = &out[at + "expected ".len()..];
        let replaced = if rest.starts_with("struct ") {
            Some("an object".to_string())
        } else {
            TERMS
                .iter()
                .find(|(rust, _)| {
                    rest.strip_prefix(rust)
                        .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric()))
                })
                .map(|(rust, json)| format!("{json}{}", &rest[rust.len()..]))
        };
        if let Some(r) = replaced {
            out.replace_range(at + "expected ".len().., &r);
        }
    }
    out
}

/// A JSON value read with [`UniqueVisitor`].
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

/// Builds a `serde_json::Value` as its own visitor does, refusing a repeated object key.
struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        <Unique as serde::Deserialize>::deserialize(d).map(|u| u.0)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Unique(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate field `{}`",
                    domain::excerpt(&key)
                )));
            }
            let Unique(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_strictly() {
        let pairs = decode_pairs(b"a=1+2&b=%41%00&c&d=%zz&e=%4").unwrap();
        assert_eq!(
            pairs,
            [
                ("a".into(), "1 2".into()),
                ("b".into(), "A\0".into()),
                ("c".into(), String::new()),
                ("d".into(), "%zz".into()),
                ("e".into(), "%4".into()),
            ]
        );
        assert!(check_pairs(&pairs).is_err());
        assert!(decode_pairs(b"name=%ff").is_err());
        assert!(decode_pairs(b"%c3=1").is_err());
    }

    #[test]
    fn multiline_fields_take_line_breaks_and_nothing_else() {
        assert!(check_text("command", "a\r\n\tb").is_ok());
        assert!(check_text("env.PATH", "a\nb").is_ok());
        assert!(check_text("project", "a\nb").is_err());
        assert!(check_text("command", "a\0b").is_err());
        assert!(check_text("name", "caf\u{e9} \u{1f600}").is_ok());
        let e = check_json(&serde_json::json!({"nodes": [{"name": "x\u{1b}"}]})).unwrap_err();
        assert!(matches!(e, AppError::InvalidText { ref field, .. } if field == "nodes[0].name"));
        assert_eq!(visible("a\0b\u{7f}", false), "a\u{2400}b\u{2421}");
        assert_eq!(visible("a\tb\r\n", false), "a\u{2409}b\u{240d}\u{240a}");
        assert_eq!(visible("a\tb\r\n", true), "a\tb\r\n");
    }

    #[test]
    fn shape_errors_speak_json_and_name_nested_fields() {
        assert_eq!(
            in_json_terms("invalid type: string \"4\", expected u32"),
            "invalid type: string \"4\", expected an integer from 0"
        );
        assert_eq!(
            in_json_terms("invalid type: sequence, expected struct NewRun with 12 elements"),
            "invalid type: array, expected an object"
        );
        assert_eq!(
            in_json_terms("invalid type: floating point `1e20`, expected u32"),
            "invalid value: a number with a fraction or too large, `1e20`, expected an integer from 0"
        );
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            n: i64,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            items: Vec<Inner>,
        }
        let value = unique_json(br#"{"items": [{"n": 1}, {"n": "x"}]}"#).unwrap();
        match from_json_value::<Outer>(value).unwrap_err() {
            AppError::BadShape { field, message } => {
                assert_eq!(field.as_deref(), Some("items[1].n"));
                assert!(message.ends_with("expected an integer"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let value = unique_json(br#"{"items": [{}]}"#).unwrap();
        match from_json_value::<Outer>(value).unwrap_err() {
            AppError::BadShape { field, .. } => assert_eq!(field.as_deref(), Some("items[0].n")),
            other => panic!("{other:?}"),
        }
        match unique_json(br#"{"a": {"b": 1, "b": 2}}"#).unwrap_err() {
            AppError::BadShape { message, .. } => assert!(message.contains("duplicate field `b`")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            unique_json(b"{\"a\": 1} x"),
            Err(AppError::Malformed(_))
        ));
    }
}
