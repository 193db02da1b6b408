//! Test support: a fresh migrated database per test on a real PostgreSQL (DATABASE_URL's
//! server when set, else an embedded cluster the tests start once under /tmp), the app
//! called in-process, and a small cookie-keeping client that fills in CSRF tokens.

use std::sync::OnceLock;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};
use tower::ServiceExt;
use tranche::config::Site;
use tranche::db::embedded::Embedded;
use tranche::demo::DemoUser;
use tranche::state::AppState;

/// Where the tests' server is: options for its maintenance database, and a URL pattern with
/// `{db}` in place of the database name, for server processes the tests start.
fn server() -> &'static (PgConnectOptions, String) {
    static SERVER: OnceLock<(PgConnectOptions, String)> = OnceLock::new();
    SERVER.get_or_init(|| {
        if let Ok(url) = std::env::var("DATABASE_URL")
            .map(|u| u.trim().to_string())
            .and_then(|u| {
                if u.is_empty() {
                    Err(std::env::VarError::NotPresent)
                } else {
                    Ok(u)
                }
            })
        {
            let options = url
                .parse::<PgConnectOptions>()
                .expect("DATABASE_URL must be a PostgreSQL URL");
            let (base, query) = url.split_once('?').unwrap_or((&url, ""));
            let scheme_end = base.find("://").map_or(0, |i| i + 3);
            let path_start = base[scheme_end..]
                .find('/')
                .map_or(base.len(), |i| scheme_end + i);
            let mut pattern = format!("{}/{{db}}", &base[..path_start]);
            if !query.is_empty() {
                pattern.push('?');
                pattern.push_str(query);
            }
            return (options, pattern);
        }
        let dir = std::env::var("TRANCHE_TEST_DATA_DIR")
            .unwrap_or_else(|_| "/tmp/tranche-test-pg".into());
        let embedded = Embedded::ensure_running(std::path::Path::new(&dir))
            .expect("cannot start the embedded PostgreSQL for tests");
        // The cluster stays up for later test runs (and `.ci/run` stops it).
        let options = embedded.connect_options("postgres");
        let pattern = embedded.database_url("{db}");
        std::mem::forget(embedded);
        (options, pattern)
    })
}

/// Drops databases left by earlier test processes, once per process.
async fn sweep_once(conn: &mut sqlx::PgConnection) {
    static SWEPT: OnceLock<()> = OnceLock::new();
    if SWEPT.set(()).is_err() {
        return;
    }
    let old: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'tranche_test_%'")
            .fetch_all(&mut *conn)
            .await
            .unwrap_or_default();
    for db in old {
        // Databases of a test process still running (another `cargo test`) are left alone.
        let owner = db
            .strip_prefix("tranche_test_")
            .and_then(|rest| rest.split('_').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists()) {
            continue;
        }
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
            .execute(&mut *conn)
            .await;
    }
}

/// A fresh, migrated, empty database and the app over it.
pub struct TestApp {
    pub pool: PgPool,
    pub state: AppState,
    pub router: Router,
    /// The test database's name.
    pub database: String,
}

impl TestApp {
    /// A fresh database with only the migrations applied.
    pub async fn new() -> Self {
        Self::with_site(Site::for_tests()).await
    }

    /// A fresh database with these site settings.
    pub async fn with_site(site: Site) -> Self {
        let server = tokio::task::spawn_blocking(server).await.unwrap().0.clone();
        let mut conn = sqlx::PgConnection::connect_with(&server)
            .await
            .expect("cannot reach the test PostgreSQL");
        let name = format!("tranche_test_{}_{}", std::process::id(), rand_suffix());
        sweep_once(&mut conn).await;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        conn.close().await.ok();
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .connect_with(server.clone().database(&name))
            .await
            .expect("connect test database");
        tranche::db::migrate(&pool).await.expect("migrations");
        let state = AppState::new(pool.clone(), site);
        let router = tranche::web::app(state.clone());
        Self {
            pool,
            state,
            router,
            database: name,
        }
    }

    /// A `DATABASE_URL` for this test database, for server processes the test starts.
    pub fn database_url(&self) -> String {
        server().1.replace("{db}", &self.database)
    }

    /// A fresh database with the first-run admin (returned password) and root node.
    pub async fn with_admin() -> (Self, String) {
        let app = Self::new().await;
        let pw = tranche::db::users::first_run(&app.pool)
            .await
            .unwrap()
            .expect("first run creates the admin");
        (app, pw)
    }

    /// A fresh database with the demo organisation loaded.
    pub async fn with_demo() -> (Self, Vec<DemoUser>) {
        let app = Self::new().await;
        let users = tranche::demo::load(&app.pool)
            .await
            .unwrap()
            .expect("demo loads once");
        (app, users)
    }

    /// Serves the app on a real loopback port; returns its base URL.
    pub async fn serve(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(tranche::serve(
            listener,
            self.state.clone(),
            std::future::pending(),
        ));
        format!("http://{addr}")
    }

    /// The account of the user called `name`.
    pub async fn account(&self, name: &str) -> tranche::auth::Account {
        let id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .unwrap();
        tranche::auth::Account::load(&self.pool, id)
            .await
            .unwrap()
            .unwrap()
    }

    /// An admin account (the first user with the admin role).
    pub async fn admin(&self) -> tranche::auth::Account {
        let id: i64 =
            sqlx::query_scalar("SELECT min(user_id) FROM role_grants WHERE role = 'admin'")
                .fetch_one(&self.pool)
                .await
                .unwrap();
        tranche::auth::Account::load(&self.pool, id)
            .await
            .unwrap()
            .unwrap()
    }

    /// A browser-like client (cookies, CSRF) for this app.
    pub fn client(&self) -> Client {
        Client {
            router: self.router.clone(),
            cookie: None,
            csrf: None,
            peer: None,
            last_headers: axum::http::HeaderMap::new(),
            page: None,
        }
    }

    /// Sends a raw request through the app.
    pub async fn send(&self, req: Request<Body>) -> (StatusCode, String, axum::http::HeaderMap) {
        send(&self.router, req).await
    }

    /// An API call with a bearer token and an optional JSON body.
    pub async fn api(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<serde_json::Value>,
    ) -> (StatusCode, serde_json::Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = match body {
            Some(b) => req
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(b.to_string()))
                .unwrap(),
            None => req.body(Body::empty()).unwrap(),
        };
        let (status, text, _) = self.send(req).await;
        let json = serde_json::from_str(&text).unwrap_or_else(|_| {
            panic!("API answered non-JSON ({status}) for {method} {path}: {text}")
        });
        (status, json)
    }

    /// Creates an API token for the user named `name`.
    pub async fn token_for(&self, name: &str) -> String {
        let id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .unwrap();
        tranche::auth::tokens::create(&self.pool, None, id, "test")
            .await
            .unwrap()
    }

    /// A node's id by name.
    pub async fn node_id(&self, name: &str) -> i64 {
        sqlx::query_scalar("SELECT id FROM tree_nodes WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// A node's share in basis points.
    pub async fn share_bp(&self, name: &str) -> i32 {
        sqlx::query_scalar("SELECT share_bp FROM tree_nodes WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// A project's budget balance in the period containing `at` (minor units).
    pub async fn balance_at(&self, project: &str, at: jiff::Timestamp) -> i64 {
        let id = self.node_id(project).await;
        tranche::ledger::balance(&self.pool, id, at, &self.state.site)
            .await
            .unwrap()
            .0
    }

    /// Declares, in the `local` cluster, those of `names` that are not nodes yet, each with 8
    /// H100: what an admin does before an agent may serve them.
    pub async fn declare_nodes(&self, names: &[&str]) {
        let mut missing = Vec::new();
        for name in names {
            let exists: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM nodes WHERE name = $1)")
                    .bind(name)
                    .fetch_one(&self.pool)
                    .await
                    .unwrap();
            if !exists {
                missing.push((*name).to_string());
            }
        }
        if !missing.is_empty() {
            tranche::db::inventory::declare_nodes(&self.pool, None, "local", &missing, "H100", "8")
                .await
                .unwrap();
        }
    }

    /// Declares the nodes `tranche agent --name NAME --nodes N --gpus 8xH100` serves.
    pub async fn declare_agent_nodes(&self, name: &str, nodes: u32) {
        let names = tranche::agent::node_names(name, nodes);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.declare_nodes(&names).await;
    }

    /// A raw API call: `body` sent as it is with `content_type`; the answer as JSON.
    pub async fn api_raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, serde_json::Value) {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, content_type);
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let (status, text, _) = self.send(req.body(Body::from(body)).unwrap()).await;
        let json = serde_json::from_str(&text).unwrap_or_else(|_| {
            panic!("API answered non-JSON ({status}) for {method} {path}: {text}")
        });
        (status, json)
    }

    /// Number of audit entries with `action`.
    pub async fn audit_count(&self, action: &str) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = $1")
            .bind(action)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}_{nanos}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Sends a raw request through `router` (an app built on other settings than a [`TestApp`]'s).
pub async fn send(
    router: &Router,
    req: Request<Body>,
) -> (StatusCode, String, axum::http::HeaderMap) {
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = axum::body::to_bytes(res.into_body(), 16 << 20)
        .await
        .unwrap();
    (
        status,
        String::from_utf8_lossy(&bytes).into_owned(),
        headers,
    )
}

/// Finds `name="csrf" value="..."` in a page.
pub fn csrf_in(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    Some(html[at..].split('"').next()?.to_string())
}

/// A browser-like client: keeps the session cookie and the page's CSRF token.
pub struct Client {
    router: Router,
    cookie: Option<String>,
    csrf: Option<String>,
    /// The client address the app sees (as a real connection's peer address would be).
    peer: Option<std::net::SocketAddr>,
    last_headers: axum::http::HeaderMap,
    /// The last page fetched: a same-origin POST carries it as its `Referer`, as a browser's
    /// form on that page does.
    page: Option<String>,
}

impl Client {
    /// The same client connecting from `ip` (port 40000), as `tranche::serve` reports a
    /// connection's peer address.
    pub fn connecting_from(mut self, ip: &str) -> Self {
        self.peer = Some(std::net::SocketAddr::new(ip.parse().unwrap(), 40000));
        self
    }

    fn with_peer(&self, mut req: Request<Body>) -> Request<Body> {
        if let Some(peer) = self.peer {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        req
    }

    fn remember(&mut self, headers: &axum::http::HeaderMap, body: &str) {
        if let Some(c) = headers
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
        {
            self.cookie = Some(c.split(';').next().unwrap().to_string());
        }
        if let Some(t) = csrf_in(body) {
            self.csrf = Some(t);
        }
    }

    /// GET a page; returns (status, body, Location header).
    pub async fn get(&mut self, path: &str) -> (StatusCode, String, Option<String>) {
        let mut req = Request::builder()
            .uri(path)
            .header(header::HOST, "localhost");
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c);
        }
        let req = self.with_peer(req.body(Body::empty()).unwrap());
        let (status, body, headers) = send(&self.router, req).await;
        self.page = Some(path.to_string());
        self.remember(&headers, &body);
        (
            status,
            body,
            headers
                .get(header::LOCATION)
                .map(|l| l.to_str().unwrap().to_string()),
        )
    }

    /// POST a form with the current CSRF token (unless `fields` already has one) and a
    /// same-origin `Origin` header.
    pub async fn post(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
    ) -> (StatusCode, String, Option<String>) {
        let mut all: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        if !fields.iter().any(|(k, _)| *k == "csrf") {
            all.push(("csrf".into(), self.csrf.clone().unwrap_or_default()));
        }
        self.post_raw(path, &all, Some("http://localhost")).await
    }

    /// POST exactly these fields with the given `Origin` (none when `None`).
    pub async fn post_raw(
        &mut self,
        path: &str,
        fields: &[(String, String)],
        origin: Option<&str>,
    ) -> (StatusCode, String, Option<String>) {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let mut req = Request::builder()
            .method("POST")
            .uri(path)
            .header(header::HOST, "localhost")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(o) = origin {
            req = req.header(header::ORIGIN, o);
            if let Some(page) = &self.page {
                req = req.header(header::REFERER, format!("{o}{page}"));
            }
        }
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c);
        }
        let req = self.with_peer(req.body(Body::from(body)).unwrap());
        let (status, body, headers) = send(&self.router, req).await;
        self.last_headers = headers.clone();
        self.remember(&headers, &body);
        (
            status,
            body,
            headers
                .get(header::LOCATION)
                .map(|l| l.to_str().unwrap().to_string()),
        )
    }

    /// POST a `multipart/form-data` form: text `fields` (the CSRF token added unless given)
    /// and one file field `file` named `file_name` with `content`, same-origin.
    pub async fn post_multipart(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        file_name: &str,
        content: &[u8],
    ) -> (StatusCode, String, Option<String>) {
        let boundary = "----tranche-test-boundary-7d1f";
        let mut body: Vec<u8> = Vec::new();
        let text = |name: &str, value: &str, body: &mut Vec<u8>| {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        };
        if !fields.iter().any(|(k, _)| *k == "csrf") {
            let token = self.csrf.clone().unwrap_or_default();
            text("csrf", &token, &mut body);
        }
        for (k, v) in fields {
            text(k, v, &mut body);
        }
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(content);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut req = Request::builder()
            .method("POST")
            .uri(path)
            .header(header::HOST, "localhost")
            .header(header::ORIGIN, "http://localhost")
            .header(
                header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            );
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c);
        }
        let req = self.with_peer(req.body(Body::from(body)).unwrap());
        let (status, body, headers) = send(&self.router, req).await;
        self.last_headers = headers.clone();
        self.remember(&headers, &body);
        (
            status,
            body,
            headers
                .get(header::LOCATION)
                .map(|l| l.to_str().unwrap().to_string()),
        )
    }

    /// The headers of the last POST's answer.
    pub fn last_headers(&self) -> &axum::http::HeaderMap {
        &self.last_headers
    }

    /// The session cookie (`name=value`), once the app has set one.
    pub fn cookie(&self) -> Option<&str> {
        self.cookie.as_deref()
    }

    /// The current CSRF token.
    pub fn csrf(&self) -> Option<String> {
        self.csrf.clone()
    }

    /// Signs in; panics when the app does not redirect.
    pub async fn login(&mut self, name: &str, password: &str) {
        self.get("/login").await;
        let (status, body, _) = self
            .post(
                "/login",
                &[("name", name), ("password", password), ("next", "/")],
            )
            .await;
        assert_eq!(
            status,
            StatusCode::SEE_OTHER,
            "login of {name} failed: {body}"
        );
        // Load a page to pick up the rotated CSRF token.
        self.get("/").await;
    }
}

/// The password of the demo user with `role`.
pub fn demo_password(users: &[DemoUser], role: &str) -> (String, String) {
    let u = users
        .iter()
        .find(|u| u.role == role)
        .expect("demo user for role");
    (u.name.clone(), u.password.clone())
}

/// Tomorrow (UTC) at `hour`:00 — a window start that is always in the future.
pub fn tomorrow_at(hour: i8) -> jiff::Timestamp {
    let day = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .tomorrow()
        .unwrap();
    day.at(hour, 0, 0, 0)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .unwrap()
        .timestamp()
}
