//! The interface's languages: English, Spanish and Basque (docs/i18n.md).
//!
//! Messages live in Fluent files (`locales/{en,es,eu}/AREA.ftl`), embedded in the binary and
//! parsed once, on first use, into one bundle per language shared by every request; numbers,
//! money and dates are formatted from CLDR data by ICU4X ([`format`]). A request's language is
//! resolved once by [`middleware`] (the user's choice, else the `tranche_lang` cookie, else
//! `Accept-Language`, else the organisation's default) and kept in a task-local for the
//! request's handler, so templates and messages ask [`current`] instead of threading it
//! through every function. Code outside a page request (the API, background tasks) sees
//! English unless it enters [`scope`] itself.

#[cfg(test)]
mod completeness;
pub mod format;
pub mod notice;
pub mod said;
pub mod wait;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::LazyLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};

/// A language of the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English (`en`).
    En,
    /// Spanish (`es`).
    Es,
    /// Basque (`eu`).
    Eu,
}

impl Lang {
    /// Every language, in the order the switch shows them.
    pub const ALL: [Lang; 3] = [Lang::En, Lang::Es, Lang::Eu];

    /// The BCP 47 code: `en`, `es`, `eu`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Es => "es",
            Lang::Eu => "eu",
        }
    }

    /// The language's own name, for the switch: `English`, `Español`, `Euskara`.
    pub fn native_name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::Es => "Español",
            Lang::Eu => "Euskara",
        }
    }

    /// Parses a code or a language tag (`eu`, `es-ES`, `EN_gb`): its primary subtag decides;
    /// `None` for any other language.
    pub fn parse(tag: &str) -> Option<Lang> {
        let primary = tag.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        match primary.as_str() {
            "en" => Some(Lang::En),
            "es" => Some(Lang::Es),
            "eu" => Some(Lang::Eu),
            _ => None,
        }
    }

    /// The best language of an `Accept-Language` header (RFC 9110 section 12.5.4): the one
    /// with the highest `q` (earlier wins a tie; `q=0` refuses), `None` when it names none of
    /// ours.
    pub fn from_accept_language(header: &str) -> Option<Lang> {
        let mut best: Option<(Lang, u16)> = None;
        for item in header.split(',') {
            let mut parts = item.split(';');
            let Some(lang) = parts.next().and_then(Lang::parse) else {
                continue;
            };
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(1000, |q| {
                    q.trim()
                        .parse::<f32>()
                        .map_or(0, |v| (v.clamp(0.0, 1.0) * 1000.0) as u16)
                });
            if q > 0 && best.is_none_or(|(_, b)| q > b) {
                best = Some((lang, q));
            }
        }
        best.map(|(l, _)| l)
    }
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// The Fluent sources of each area of the interface, embedded: (language, file name, text),
/// for every language and every area in [`sources!`]'s list. Each language has a file of each
/// area, with the same messages (src/i18n/completeness.rs); a message id is unique across a
/// language's files.
macro_rules! sources {
    ($($area:literal),* $(,)?) => {
        [$(
            (Lang::En, concat!("en/", $area, ".ftl"),
                include_str!(concat!("../../locales/en/", $area, ".ftl"))),
            (Lang::Es, concat!("es/", $area, ".ftl"),
                include_str!(concat!("../../locales/es/", $area, ".ftl"))),
            (Lang::Eu, concat!("eu/", $area, ".ftl"),
                include_str!(concat!("../../locales/eu/", $area, ".ftl"))),
        )*]
    };
}

/// Every message file: `tranche` (the layout, sign-in, home, runs, projects, the tree,
/// reports, account, settings, alerts), `operations` (cluster, nodes, inventory, users,
/// capacity, dashboard, idle flags, audit), `register` (AI use cases), `contracts` (capacity
/// contracts, approvals, the ledger).
pub const SOURCES: &[(Lang, &str, &str)] =
    &sources!("tranche", "operations", "register", "contracts");

/// One parsed bundle per language, built once.
struct Catalog {
    bundles: HashMap<Lang, FluentBundle<FluentResource>>,
}

/// Numbers placed in messages are written with the language's CLDR digits and separators.
fn fluent_number(lang: Lang, v: &FluentValue) -> Option<String> {
    match v {
        FluentValue::Number(n) if n.value.fract() == 0.0 && n.value.abs() < 1e15 => {
            Some(format::integer(lang, n.value as i64))
        }
        _ => None,
    }
}

/// An empty bundle for `lang`, with our number formatting and without isolation marks.
fn new_bundle(lang: Lang) -> FluentBundle<FluentResource> {
    let id: unic_langid::LanguageIdentifier = lang.code().parse().expect("a valid language code");
    let mut bundle = FluentBundle::new_concurrent(vec![id]);
    // Pages are HTML: Unicode isolation marks around placeables would show up in tests,
    // copies and e-mails; our placeables are names and numbers of one direction.
    bundle.set_use_isolating(false);
    bundle.add_builtins().expect("NUMBER is added once");
    match lang {
        Lang::En => bundle.set_formatter(Some(|v, _| fluent_number(Lang::En, v))),
        Lang::Es => bundle.set_formatter(Some(|v, _| fluent_number(Lang::Es, v))),
        Lang::Eu => bundle.set_formatter(Some(|v, _| fluent_number(Lang::Eu, v))),
    }
    bundle
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    let mut bundles: HashMap<Lang, FluentBundle<FluentResource>> = HashMap::new();
    for &(lang, name, text) in SOURCES {
        let resource = FluentResource::try_new(text.to_string())
            .unwrap_or_else(|(_, errors)| panic!("{name} does not parse: {errors:?}"));
        let bundle = bundles.entry(lang).or_insert_with(|| new_bundle(lang));
        bundle
            .add_resource(resource)
            .unwrap_or_else(|errors| panic!("{name} repeats a message: {errors:?}"));
    }
    Catalog { bundles }
});

/// Parses every bundle now (`tranche serve` calls it at start-up, so that a broken file
/// fails there rather than on the first page).
pub fn load() {
    LazyLock::force(&CATALOG);
}

/// A value placed into a message: text or a number (numbers select plural forms).
pub trait Arg {
    /// As a Fluent value.
    fn to_fluent(&self) -> FluentValue<'static>;
}

impl Arg for str {
    fn to_fluent(&self) -> FluentValue<'static> {
        FluentValue::from(self.to_string())
    }
}

impl Arg for String {
    fn to_fluent(&self) -> FluentValue<'static> {
        FluentValue::from(self.clone())
    }
}

macro_rules! number_arg {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            fn to_fluent(&self) -> FluentValue<'static> {
                FluentValue::from(*self as f64)
            }
        }
    )*};
}
number_arg!(i32, i64, u32, u64, usize, u8, u16);

impl<T: Arg + ?Sized> Arg for &T {
    fn to_fluent(&self) -> FluentValue<'static> {
        (**self).to_fluent()
    }
}

/// The message `key` in `lang` with `args`; a key missing from the files comes back as the key
/// itself (the completeness test keeps that from shipping).
pub fn message(lang: Lang, key: &str, args: &[(&str, &dyn Arg)]) -> String {
    let Some(bundle) = CATALOG.bundles.get(&lang) else {
        return key.to_string();
    };
    let (id, attribute) = key.split_once('.').unwrap_or((key, ""));
    let Some(msg) = bundle.get_message(id) else {
        tracing::warn!(key, lang = lang.code(), "missing message");
        return key.to_string();
    };
    let pattern = if attribute.is_empty() {
        msg.value()
    } else {
        msg.get_attribute(attribute).map(|a| a.value())
    };
    let Some(pattern) = pattern else {
        return key.to_string();
    };
    let mut fluent_args = FluentArgs::new();
    for (name, value) in args {
        fluent_args.set(*name, value.to_fluent());
    }
    let mut errors = vec![];
    let text = bundle.format_pattern(pattern, Some(&fluent_args), &mut errors);
    if !errors.is_empty() {
        tracing::warn!(
            key,
            lang = lang.code(),
            ?errors,
            "message formatting errors"
        );
    }
    text.into_owned()
}

/// The message `key` in the current language, without arguments.
pub fn t(key: &str) -> String {
    message(current(), key, &[])
}

/// The message `key` in the current language with one argument.
pub fn t1(key: &str, name: &str, value: impl Arg) -> String {
    message(current(), key, &[(name, &value)])
}

/// The message `key` in the current language with two arguments.
pub fn t2(key: &str, n1: &str, v1: impl Arg, n2: &str, v2: impl Arg) -> String {
    message(current(), key, &[(n1, &v1), (n2, &v2)])
}

/// The message `key` in the current language with any arguments.
pub fn ta(key: &str, args: &[(&str, &dyn Arg)]) -> String {
    message(current(), key, args)
}

/// What a request knows about its language.
struct Context {
    lang: Cell<Lang>,
    /// The request's path and query, where the language switch comes back to.
    here: String,
}

tokio::task_local! {
    static CONTEXT: Context;
}

/// The current request's language; English outside a request.
pub fn current() -> Lang {
    CONTEXT.try_with(|c| c.lang.get()).unwrap_or(Lang::En)
}

/// The current request's path and query (`/` outside a request).
pub fn here() -> String {
    CONTEXT
        .try_with(|c| c.here.clone())
        .unwrap_or_else(|_| "/".into())
}

/// Switches the current request to `lang` (the signed-in user's own choice, once the account
/// is loaded); nothing outside a request.
pub fn set_current(lang: Lang) {
    let _ = CONTEXT.try_with(|c| c.lang.set(lang));
}

/// Runs `f` with `lang` as the current language (e-mails and notifications for a recipient).
pub async fn scope<F: std::future::Future>(lang: Lang, f: F) -> F::Output {
    CONTEXT
        .scope(
            Context {
                lang: Cell::new(lang),
                here: "/".into(),
            },
            f,
        )
        .await
}

/// Runs the synchronous `f` with `lang` as the current language.
pub fn sync_scope<R>(lang: Lang, f: impl FnOnce() -> R) -> R {
    CONTEXT.sync_scope(
        Context {
            lang: Cell::new(lang),
            here: "/".into(),
        },
        f,
    )
}

/// The cookie that keeps an anonymous visitor's choice.
pub const COOKIE: &str = "tranche_lang";

/// The language a request asks for before its account is known: the `tranche_lang` cookie,
/// else `Accept-Language`; `None` leaves it to the organisation's default.
pub fn requested(headers: &axum::http::HeaderMap) -> Option<Lang> {
    let cookie = headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix("tranche_lang="))
        .and_then(Lang::parse);
    cookie.or_else(|| {
        headers
            .get(axum::http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
            .and_then(Lang::from_accept_language)
    })
}

/// The organisation's default language (`org_settings.default_language`, English when unset).
///
/// # Errors
/// Database errors.
pub async fn org_default(db: impl sqlx::PgExecutor<'_>) -> Result<Lang, sqlx::Error> {
    let code: Option<String> =
        sqlx::query_scalar("SELECT default_language FROM org_settings WHERE id")
            .fetch_optional(db)
            .await?;
    Ok(code.as_deref().and_then(Lang::parse).unwrap_or(Lang::En))
}

/// How long a replica reuses the organisation's default it read (a change made on another
/// replica shows there within this time; this one's own changes at once).
const DEFAULT_TTL: std::time::Duration = std::time::Duration::from_secs(5);

/// The organisation's default language as this replica last read it, and when (one per
/// [`crate::state::AppState`]).
#[derive(Debug, Default)]
pub struct DefaultCache(std::sync::Mutex<Option<(std::time::Instant, Lang)>>);

impl DefaultCache {
    /// [`org_default`], read at most every few seconds: pages whose browser names none of our
    /// languages (benchmarks, scripts) must not cost a query each.
    ///
    /// # Errors
    /// Database errors.
    pub async fn get(&self, db: impl sqlx::PgExecutor<'_>) -> Result<Lang, sqlx::Error> {
        let cached = *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, lang)) = cached
            && at.elapsed() < DEFAULT_TTL
        {
            return Ok(lang);
        }
        let lang = org_default(db).await?;
        self.remember(lang);
        Ok(lang)
    }

    /// Records `lang` as the default just saved (or read).
    pub fn remember(&self, lang: Lang) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((std::time::Instant::now(), lang));
    }
}

/// Middleware for pages: resolves the request's language (cookie, `Accept-Language`, else the
/// organisation's default; [`crate::auth::CurrentUser`] then applies the user's own choice)
/// and runs the rest of the request with it.
pub async fn middleware(
    axum::extract::State(state): axum::extract::State<crate::state::AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let lang = match requested(req.headers()) {
        Some(l) => l,
        None => state
            .org_language
            .get(&state.pool)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot read the default language");
                Lang::En
            }),
    };
    // A page answering a form's submission (a refused form shown again, a price preview) is
    // not one a GET can come back to: the language switch returns to the page the form was
    // on (the browser's same-origin Referer), else home.
    let here = if matches!(
        req.method(),
        &axum::http::Method::GET | &axum::http::Method::HEAD
    ) {
        req.uri()
            .path_and_query()
            .map_or_else(|| "/".to_string(), |p| p.as_str().to_string())
    } else {
        req.headers()
            .get(axum::http::header::REFERER)
            .and_then(|r| r.to_str().ok())
            .and_then(|r| r.parse::<axum::http::Uri>().ok())
            .and_then(|u| u.path_and_query().map(|p| p.as_str().to_string()))
            .filter(|p| p.starts_with('/'))
            .unwrap_or_else(|| "/".to_string())
    };
    CONTEXT
        .scope(
            Context {
                lang: Cell::new(lang),
                here,
            },
            async move {
                let mut response = next.run(req).await;
                // The language the page was written in: the signed-in user's own choice, when
                // they made one, replaced the request's while it ran.
                if let Ok(v) = axum::http::HeaderValue::from_str(current().code()) {
                    response
                        .headers_mut()
                        .entry(axum::http::header::CONTENT_LANGUAGE)
                        .or_insert(v);
                }
                response
            },
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_the_highest_quality_of_ours() {
        assert_eq!(
            Lang::from_accept_language("eu-ES,eu;q=0.9,es;q=0.8"),
            Some(Lang::Eu)
        );
        assert_eq!(
            Lang::from_accept_language("fr-FR, es;q=0.5, en;q=0.7"),
            Some(Lang::En)
        );
        assert_eq!(Lang::from_accept_language("fr, de;q=0.9"), None);
        assert_eq!(Lang::from_accept_language("eu;q=0, es"), Some(Lang::Es));
        assert_eq!(Lang::from_accept_language(""), None);
    }

    #[test]
    fn plural_forms_follow_the_count() {
        let runs = |lang, n: i64| message(lang, "runs-ahead", &[("count", &n)]);
        assert_eq!(runs(Lang::En, 1), "1 run ahead of it");
        assert_eq!(runs(Lang::En, 3), "3 runs ahead of it");
        assert_eq!(runs(Lang::Es, 1), "1 ejecución por delante");
        assert_eq!(runs(Lang::Es, 3), "3 ejecuciones por delante");
        assert_eq!(runs(Lang::Eu, 1), "exekuzio 1 aurretik");
        assert_eq!(runs(Lang::Eu, 3), "3 exekuzio aurretik");
        // Numbers inside messages take the language's separators.
        assert_eq!(runs(Lang::Eu, 12345), "12.345 exekuzio aurretik");
        let never = |n: i64| {
            message(
                Lang::En,
                "wait-never-fits",
                &[("gpus", &n), ("installed", &0)],
            )
        };
        assert!(never(1).starts_with("asks for 1 GPU but"), "{}", never(1));
        assert!(never(2).starts_with("asks for 2 GPUs but"), "{}", never(2));
    }
}
