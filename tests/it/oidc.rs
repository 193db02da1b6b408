//! Sign-in with OpenID Connect against a real provider: the `oidc-provider` package from the
//! npm registry, run by `tests/oidc/provider.mjs` on a loopback port with its own login and
//! consent pages. Users, groups and faults live in a JSON file the provider reads at every
//! request, so a test changes them between sign-ins. Tranche serves on a real port; the tests
//! go through the whole redirect dance over HTTP (and once in a headless Chromium).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tranche::auth::oidc::{Oidc, OidcSettings};
use tranche::auth::sso::CAUSE;

use crate::sso::{app_with_providers, grants, memberships, user_count};
use crate::support::TestApp;

const CLIENT_ID: &str = "tranche";
const CLIENT_SECRET: &str = "tranche-test-client-secret-7f3a";

/// `tests/oidc`, where the provider script and its `node_modules` are.
fn script_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc")
}

/// Installs the provider's npm packages (from `package-lock.json`) once, when missing.
fn npm_ci_once() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = script_dir();
        if dir.join("node_modules/oidc-provider/package.json").exists() {
            return;
        }
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("the OIDC tests need Node 20 and npm (Debian: apt-get install nodejs npm)");
        assert!(
            out.status.success(),
            "npm ci in tests/oidc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The provider process, killed when dropped.
struct Provider {
    child: Option<Child>,
    dir: PathBuf,
    port: u16,
    /// The callback the client is registered with.
    redirect_uri: String,
    post_logout_uri: String,
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Provider {
    /// Writes the state file for `tranche` (Tranche's base URL) and starts the provider on a
    /// free port, signing with a fresh key.
    fn start(tranche: &str) -> Self {
        npm_ci_once();
        let dir = std::env::temp_dir().join(format!(
            "tranche-oidc-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut p = Self {
            child: None,
            dir,
            port: free_port(),
            redirect_uri: format!("{tranche}/login/oidc/callback"),
            post_logout_uri: format!("{tranche}/login"),
        };
        p.set(&json!({}), &json!({}));
        p.launch("key1.json", None);
        p
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the process with the key in `key_file` (made when missing) and, when given,
    /// another issuer than its address; waits until it listens.
    fn launch(&mut self, key_file: &str, issuer: Option<&str>) {
        let log = std::fs::File::create(self.dir.join(format!("{key_file}.log"))).unwrap();
        let mut cmd = Command::new("node");
        cmd.arg(script_dir().join("provider.mjs"))
            .args(["--port", &self.port.to_string()])
            .arg("--state")
            .arg(self.dir.join("state.json"))
            .arg("--key")
            .arg(self.dir.join(key_file))
            .stdout(Stdio::piped())
            .stderr(log);
        if let Some(i) = issuer {
            cmd.args(["--issuer", i]);
        }
        let mut child = cmd.spawn().expect("start node tests/oidc/provider.mjs");
        let stdout = child.stdout.take().unwrap();
        self.child = Some(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("listening") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!(
                    "the OpenID provider did not start: {}",
                    std::fs::read_to_string(self.dir.join(format!("{key_file}.log")))
                        .unwrap_or_default()
                )
            });
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Rewrites the state file: `users` (name to `{"groups": [...]}`) and `faults`.
    fn set(&self, users: &Value, faults: &Value) {
        let state = json!({
            "client": {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uri": self.redirect_uri,
                "post_logout_redirect_uri": self.post_logout_uri,
            },
            "users": users,
            "faults": faults,
        });
        let tmp = self.dir.join("state.json.tmp");
        std::fs::write(&tmp, state.to_string()).unwrap();
        std::fs::rename(&tmp, self.dir.join("state.json")).unwrap();
    }

    /// The `kid` of the key the provider signs with now.
    async fn kid(&self) -> String {
        let jwks: Value = reqwest::get(format!("{}/jwks", self.issuer()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        jwks["keys"][0]["kid"].as_str().unwrap().to_string()
    }
}

/// The relying party's settings for `provider`, with `timeout`.
fn settings(issuer: &str, tranche: &str, timeout: Duration) -> OidcSettings {
    OidcSettings {
        issuer: issuer.to_string(),
        client_id: CLIENT_ID.into(),
        client_secret: Some(tranche::config::Secret::new(CLIENT_SECRET)),
        redirect_url: format!("{tranche}/login/oidc/callback"),
        post_logout_url: format!("{tranche}/login"),
        scopes: vec!["profile".into()],
        name_claim: "preferred_username".into(),
        groups_claim: "groups".into(),
        display_name: "Example Login".into(),
        timeout,
        ca_file: None,
    }
}

/// Tranche on a real port with OpenID Connect against `issuer` (made by `make`, which gets
/// Tranche's base URL).
struct Rp {
    app: TestApp,
    base: String,
}

async fn tranche_with(listener: tokio::net::TcpListener, issuer: &str, timeout: Duration) -> Rp {
    let base = format!("http://{}", listener.local_addr().unwrap());
    let oidc = Arc::new(Oidc::new(settings(issuer, &base, timeout)).unwrap());
    let (app, _) = app_with_providers(None, Some(oidc), 3600).await;
    tokio::spawn(tranche::serve(
        listener,
        app.state.clone(),
        std::future::pending(),
    ));
    Rp { app, base }
}

/// A provider and Tranche wired to each other.
async fn pair() -> (Provider, Rp) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let provider = Provider::start(&base);
    let rp = tranche_with(listener, &provider.issuer(), Duration::from_secs(3)).await;
    (provider, rp)
}

/// A minimal browser over HTTP: no redirects followed on its own, cookies kept per host and
/// port (enough for Tranche and the provider, which set no cookie domains).
struct Browser {
    http: reqwest::Client,
    jar: HashMap<String, HashMap<String, String>>,
}

struct Answer {
    status: StatusCode,
    body: String,
    location: Option<String>,
}

fn origin_of(url: &str) -> String {
    let u = reqwest::Url::parse(url).unwrap();
    u.origin().ascii_serialization()
}

impl Browser {
    fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap(),
            jar: HashMap::new(),
        }
    }

    fn cookies(&self, url: &str) -> Option<String> {
        let jar = self.jar.get(&origin_of(url))?;
        if jar.is_empty() {
            return None;
        }
        Some(
            jar.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; "),
        )
    }

    async fn answer(&mut self, url: &str, res: reqwest::Response) -> Answer {
        let jar = self.jar.entry(origin_of(url)).or_default();
        for c in res.headers().get_all(reqwest::header::SET_COOKIE) {
            let c = c.to_str().unwrap();
            let pair = c.split(';').next().unwrap();
            let (k, v) = pair.split_once('=').unwrap();
            let expired = c.to_ascii_lowercase().contains("expires=thu, 01 jan 1970")
                || c.to_ascii_lowercase().contains("max-age=0");
            if expired || v.is_empty() {
                jar.remove(k);
            } else {
                jar.insert(k.to_string(), v.to_string());
            }
        }
        let status = res.status();
        let location = res.headers().get(reqwest::header::LOCATION).map(|l| {
            reqwest::Url::parse(url)
                .unwrap()
                .join(l.to_str().unwrap())
                .unwrap()
                .to_string()
        });
        Answer {
            status,
            body: res.text().await.unwrap(),
            location,
        }
    }

    async fn get(&mut self, url: &str) -> Answer {
        let mut req = self.http.get(url);
        if let Some(c) = self.cookies(url) {
            req = req.header(reqwest::header::COOKIE, c);
        }
        let res = req.send().await.unwrap();
        self.answer(url, res).await
    }

    async fn post(&mut self, url: &str, fields: &[(&str, &str)]) -> Answer {
        let mut req = self
            .http
            .post(url)
            .header(reqwest::header::ORIGIN, origin_of(url))
            .form(fields);
        if let Some(c) = self.cookies(url) {
            req = req.header(reqwest::header::COOKIE, c);
        }
        let res = req.send().await.unwrap();
        self.answer(url, res).await
    }

    /// Whether Tranche at `base` sees this browser signed in.
    async fn signed_in(&mut self, base: &str) -> bool {
        let a = self.get(&format!("{base}/account/tokens")).await;
        a.status == StatusCode::OK
    }

    /// The CSRF token of a Tranche page.
    async fn csrf(&mut self, url: &str) -> String {
        let a = self.get(url).await;
        crate::support::csrf_in(&a.body).expect("a page with a CSRF token")
    }
}

/// The `action` of the first form in `html` (the provider's pages have one).
fn form_action(html: &str) -> String {
    let at = html.find("action=\"").expect("a form") + "action=\"".len();
    html[at..].split('"').next().unwrap().replace("&amp;", "&")
}

/// Clicks "Sign in with ..." and goes through the provider's login and consent pages as
/// `login`, up to (not including) the callback to Tranche; returns the callback URL.
async fn to_callback(b: &mut Browser, base: &str, login: &str) -> String {
    let start = b.get(&format!("{base}/login/oidc?next=/tree")).await;
    assert_eq!(start.status, StatusCode::SEE_OTHER, "{}", start.body);
    let mut url = start.location.unwrap();
    for _ in 0..12 {
        if url.starts_with(base) {
            return url;
        }
        let a = b.get(&url).await;
        if let Some(next) = a.location {
            url = next;
            continue;
        }
        assert_eq!(a.status, StatusCode::OK, "provider page {url}: {}", a.body);
        let action = reqwest::Url::parse(&url)
            .unwrap()
            .join(&form_action(&a.body))
            .unwrap()
            .to_string();
        let answer = if a.body.contains("name=\"prompt\" value=\"login\"") {
            b.post(
                &action,
                &[("prompt", "login"), ("login", login), ("password", "any")],
            )
            .await
        } else if a.body.contains("name=\"prompt\" value=\"consent\"") {
            b.post(&action, &[("prompt", "consent")]).await
        } else {
            panic!("unexpected provider page at {url}: {}", a.body);
        };
        url = answer
            .location
            .unwrap_or_else(|| panic!("the provider did not redirect: {}", answer.body));
    }
    panic!("no callback to Tranche after 12 steps");
}

/// A whole sign-in as `login`; returns Tranche's answer to the callback.
async fn sign_in(b: &mut Browser, base: &str, login: &str) -> Answer {
    let callback = to_callback(b, base, login).await;
    b.get(&callback).await
}

async fn audit_entries(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn alice_and_bob(alice_groups: &[&str]) -> Value {
    json!({
        "alice": {"groups": alice_groups},
        "bob": {"groups": ["detection"]},
        "dave": {"groups": ["coffee-club"]},
    })
}

#[tokio::test]
async fn oidc_first_sign_in_creates_the_account_and_the_next_reapplies_the_mapping() {
    let (provider, rp) = pair().await;
    provider.set(&alice_and_bob(&["vision-leads", "detection"]), &json!({}));

    // The login page offers the provider.
    let mut b = Browser::new();
    let page = b.get(&format!("{}/login", rp.base)).await;
    assert!(
        page.body.contains("Sign in with Example Login"),
        "{}",
        page.body
    );

    let a = sign_in(&mut b, &rp.base, "alice").await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    assert_eq!(a.location.as_deref(), Some(&*format!("{}/tree", rp.base)));
    assert!(b.signed_in(&rp.base).await);
    let (source, subject, hash): (String, String, Option<String>) = sqlx::query_as(
        "SELECT external_source, external_subject, password_hash FROM users WHERE name = 'alice'",
    )
    .fetch_one(&rp.app.pool)
    .await
    .unwrap();
    assert_eq!(
        (source.as_str(), subject.as_str(), hash),
        ("oidc", "alice", None)
    );
    assert_eq!(
        grants(&rp.app, "alice").await,
        [
            (
                "lead".to_string(),
                Some("Vision".to_string()),
                "idp".to_string()
            ),
            ("researcher".to_string(), None, "idp".to_string()),
        ]
    );
    assert_eq!(
        memberships(&rp.app, "alice").await,
        [("Detection".to_string(), "idp".to_string())]
    );
    let created: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'user.create' AND actor_id IS NULL \
         AND after->>'source' = 'oidc' AND after->>'cause' = $1",
    )
    .bind(CAUSE)
    .fetch_one(&rp.app.pool)
    .await
    .unwrap();
    assert_eq!(created, 1);

    // A grant given by hand survives re-mapping.
    let alice_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'alice'")
        .fetch_one(&rp.app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO role_grants (user_id, role, source) VALUES ($1, 'finance', 'manual')")
        .bind(alice_id)
        .execute(&rp.app.pool)
        .await
        .unwrap();

    // Alice leaves "detection" at the provider: her next sign-in removes the mapped
    // researcher role and the Detection membership, audited, and keeps the rest.
    provider.set(&alice_and_bob(&["vision-leads"]), &json!({}));
    let mut b2 = Browser::new();
    let a = sign_in(&mut b2, &rp.base, "alice").await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    assert_eq!(
        grants(&rp.app, "alice").await,
        [
            ("finance".to_string(), None, "manual".to_string()),
            (
                "lead".to_string(),
                Some("Vision".to_string()),
                "idp".to_string()
            ),
        ]
    );
    assert!(memberships(&rp.app, "alice").await.is_empty());
    let removed: Vec<String> =
        sqlx::query_scalar("SELECT action FROM audit_log WHERE before->>'cause' = $1 ORDER BY id")
            .bind(CAUSE)
            .fetch_all(&rp.app.pool)
            .await
            .unwrap();
    assert_eq!(removed, ["user.revoke", "member.remove"]);
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE name = 'alice'")
        .fetch_one(&rp.app.pool)
        .await
        .unwrap();
    assert_eq!(users, 1, "the same account, found again by its subject");

    // Someone in no mapped group is refused and gets no account.
    let before = user_count(&rp.app).await;
    let a = sign_in(&mut Browser::new(), &rp.base, "dave").await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert!(a.body.contains("none of the groups"), "{}", a.body);
    assert_eq!(user_count(&rp.app).await, before);
}

/// Checks a refused sign-in: the status, the message on the login page, and that the
/// browser has no session.
async fn assert_refused(rp: &Rp, b: &mut Browser, a: &Answer, status: StatusCode, words: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert!(
        a.body.contains(words),
        "expected {words:?} in the page: {}",
        a.body
    );
    assert!(
        a.body.contains("Sign in with Example Login"),
        "the page offers to start again"
    );
    assert!(!b.signed_in(&rp.base).await, "no session after a refusal");
}

#[tokio::test]
async fn oidc_bad_answers_and_tokens_are_refused_and_change_nothing() {
    let (provider, rp) = pair().await;
    let users = json!({
        "alice": {"groups": ["vision-leads", "detection"]},
        "erin": {"groups": ["detection"]},
    });
    provider.set(&users, &json!({}));
    // Alice's account exists already; erin's would be created by a sign-in.
    assert_eq!(
        sign_in(&mut Browser::new(), &rp.base, "alice").await.status,
        StatusCode::SEE_OTHER
    );
    let alice_grants = grants(&rp.app, "alice").await;
    let users_before = user_count(&rp.app).await;
    let audit_before = audit_entries(&rp.app).await;
    let unchanged = |what: &'static str| {
        let app = &rp.app;
        let alice_grants = alice_grants.clone();
        async move {
            assert_eq!(
                user_count(app).await,
                users_before,
                "{what}: no account created"
            );
            assert_eq!(
                audit_entries(app).await,
                audit_before,
                "{what}: nothing audited"
            );
            assert_eq!(
                grants(app, "alice").await,
                alice_grants,
                "{what}: alice unchanged"
            );
        }
    };
    let bad_state = "does not belong to this browser session or was already used";

    // Missing state.
    let mut b = Browser::new();
    let callback = to_callback(&mut b, &rp.base, "erin").await;
    let mut url = reqwest::Url::parse(&callback).unwrap();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "state")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.query_pairs_mut().clear().extend_pairs(&kept);
    let a = b.get(url.as_str()).await;
    assert_refused(&rp, &mut b, &a, StatusCode::BAD_REQUEST, bad_state).await;
    // The pending sign-in was used up by that attempt: the genuine answer fails too.
    let a = b.get(&callback).await;
    assert_refused(&rp, &mut b, &a, StatusCode::BAD_REQUEST, bad_state).await;
    unchanged("missing state").await;

    // Wrong state.
    let mut b = Browser::new();
    let callback = to_callback(&mut b, &rp.base, "erin").await;
    let mut url = reqwest::Url::parse(&callback).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "state" {
                format!("{v}x")
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(&pairs);
    let a = b.get(url.as_str()).await;
    assert_refused(&rp, &mut b, &a, StatusCode::BAD_REQUEST, bad_state).await;
    unchanged("wrong state").await;

    // A callback that arrives in another browser (a leaked URL) has no sign-in to finish.
    let mut b = Browser::new();
    let callback = to_callback(&mut b, &rp.base, "erin").await;
    let mut other = Browser::new();
    let a = other.get(&callback).await;
    assert_refused(&rp, &mut other, &a, StatusCode::BAD_REQUEST, bad_state).await;
    unchanged("another browser").await;

    // A replayed authorization code: alice signs in, and her used code is then given to
    // another browser's callback with that browser's own, valid state. Tranche sends the
    // code to the provider, which refuses it.
    let mut b = Browser::new();
    let first = to_callback(&mut b, &rp.base, "alice").await;
    let used_code = reqwest::Url::parse(&first)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    assert_eq!(b.get(&first).await.status, StatusCode::SEE_OTHER);
    assert_eq!(
        audit_entries(&rp.app).await,
        audit_before,
        "an unchanged mapping writes nothing"
    );
    let mut other = Browser::new();
    let second = to_callback(&mut other, &rp.base, "alice").await;
    let mut url = reqwest::Url::parse(&second).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "code" {
                used_code.clone()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(&pairs);
    let a = other.get(url.as_str()).await;
    assert_refused(&rp, &mut other, &a, StatusCode::FORBIDDEN, "invalid_grant").await;
    // And a plain replay of the first callback finds no sign-in in progress.
    let mut third = Browser::new();
    let a = third.get(&first).await;
    assert_refused(&rp, &mut third, &a, StatusCode::BAD_REQUEST, bad_state).await;
    unchanged("replayed code").await;

    // Genuinely signed ID tokens that fail a check.
    for (faults, words) in [
        (json!({"bad_signature": true}), "signature does not verify"),
        (
            json!({"audience": "some-other-client"}),
            "issued to another client",
        ),
        (json!({"expired": true}), "has expired"),
        (
            json!({"nonce": "a-nonce-of-another-sign-in"}),
            "nonce is not this sign-in",
        ),
    ] {
        provider.set(&users, &faults);
        let mut b = Browser::new();
        let a = sign_in(&mut b, &rp.base, "erin").await;
        assert_refused(&rp, &mut b, &a, StatusCode::FORBIDDEN, words).await;
        // Alice, whose account exists, is not changed either (her groups changed meanwhile).
        let changed = json!({"alice": {"groups": []}, "erin": {"groups": ["detection"]}});
        provider.set(&changed, &faults);
        let mut b = Browser::new();
        let a = sign_in(&mut b, &rp.base, "alice").await;
        assert_refused(&rp, &mut b, &a, StatusCode::FORBIDDEN, words).await;
        unchanged("a faulty ID token").await;
    }
    provider.set(&users, &json!({}));
    assert_eq!(
        sign_in(&mut Browser::new(), &rp.base, "erin").await.status,
        StatusCode::SEE_OTHER,
        "without faults erin signs in"
    );
}

#[tokio::test]
async fn oidc_token_from_another_issuer_is_refused() {
    // The provider names itself http://localhost:PORT in its tokens, but its discovery
    // document (as a misconfigured proxy might) claims the address Tranche was given.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut provider = Provider::start(&base);
    provider.stop();
    let other = format!("http://localhost:{}", provider.port);
    provider.launch("key1.json", Some(&other));
    let users = json!({"erin": {"groups": ["detection"]}});
    provider.set(&users, &json!({"discovery_issuer": provider.issuer()}));
    let rp = tranche_with(listener, &provider.issuer(), Duration::from_secs(3)).await;
    // The callback's `iss` parameter (RFC 9207) gives it away first.
    let mut b = Browser::new();
    let a = sign_in(&mut b, &rp.base, "erin").await;
    assert_refused(
        &rp,
        &mut b,
        &a,
        StatusCode::FORBIDDEN,
        "comes from another issuer",
    )
    .await;
    // A provider that sends no `iss` parameter: the ID token's `iss` is checked.
    let mut b = Browser::new();
    let callback = to_callback(&mut b, &rp.base, "erin").await;
    let mut url = reqwest::Url::parse(&callback).unwrap();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "iss")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    assert_eq!(kept.len(), 2, "code and state left: {kept:?}");
    url.query_pairs_mut().clear().extend_pairs(&kept);
    let a = b.get(url.as_str()).await;
    assert_refused(
        &rp,
        &mut b,
        &a,
        StatusCode::FORBIDDEN,
        "issued by another issuer",
    )
    .await;
    assert_eq!(user_count(&rp.app).await, 1, "only the first-run admin");

    // Without the rewrite, discovery itself shows the mismatch: nobody can start.
    provider.set(&users, &json!({}));
    let rp2 = tranche_with(
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        &provider.issuer(),
        Duration::from_secs(3),
    )
    .await;
    let a = b.get(&format!("{}/login/oidc", rp2.base)).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.body);
}

#[tokio::test]
async fn oidc_provider_down_or_slow_gives_a_clear_page_and_no_session() {
    let (mut provider, rp) = pair().await;
    let users = json!({"erin": {"groups": ["detection"]}});
    provider.set(&users, &json!({}));

    // Slow: the token endpoint answers after 5 s, Tranche waits 3 s.
    provider.set(&users, &json!({"slow_token_ms": 5000}));
    let mut b = Browser::new();
    let callback = to_callback(&mut b, &rp.base, "erin").await;
    let started = std::time::Instant::now();
    let a = b.get(&callback).await;
    let waited = started.elapsed();
    assert_refused(
        &rp,
        &mut b,
        &a,
        StatusCode::SERVICE_UNAVAILABLE,
        "did not answer in time",
    )
    .await;
    assert!(
        waited < Duration::from_millis(4900),
        "Tranche gave up at its timeout, not after the provider's answer ({waited:?})"
    );
    assert_eq!(user_count(&rp.app).await, 1);

    // Down between the start and the callback.
    provider.set(&users, &json!({}));
    let mut b = Browser::new();
    let callback = to_callback(&mut b, &rp.base, "erin").await;
    provider.stop();
    let a = b.get(&callback).await;
    assert_refused(
        &rp,
        &mut b,
        &a,
        StatusCode::SERVICE_UNAVAILABLE,
        "cannot be reached",
    )
    .await;

    // Down before anything was discovered: the button's target says so.
    let rp2 = tranche_with(
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        &provider.issuer(),
        Duration::from_secs(3),
    )
    .await;
    let mut b = Browser::new();
    let a = b.get(&format!("{}/login/oidc", rp2.base)).await;
    assert_refused(
        &rp2,
        &mut b,
        &a,
        StatusCode::SERVICE_UNAVAILABLE,
        "cannot be reached",
    )
    .await;
    assert_eq!(user_count(&rp.app).await, 1);
}

#[tokio::test]
async fn oidc_key_rotation_refetches_the_key_set() {
    let (mut provider, rp) = pair().await;
    let users = json!({"alice": {"groups": ["detection"]}});
    provider.set(&users, &json!({}));
    assert_eq!(
        sign_in(&mut Browser::new(), &rp.base, "alice").await.status,
        StatusCode::SEE_OTHER
    );
    let old_kid = provider.kid().await;
    // The provider restarts with a new signing key; Tranche still holds the old key set.
    provider.stop();
    provider.launch("key2.json", None);
    assert_ne!(provider.kid().await, old_kid);
    let mut b = Browser::new();
    let a = sign_in(&mut b, &rp.base, "alice").await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    assert!(b.signed_in(&rp.base).await);
}

#[tokio::test]
async fn oidc_sign_out_ends_the_providers_session_too() {
    let (provider, rp) = pair().await;
    provider.set(&json!({"alice": {"groups": ["detection"]}}), &json!({}));
    let mut b = Browser::new();
    assert_eq!(
        sign_in(&mut b, &rp.base, "alice").await.status,
        StatusCode::SEE_OTHER
    );
    let csrf = b.csrf(&format!("{}/account/tokens", rp.base)).await;
    let a = b
        .post(&format!("{}/logout", rp.base), &[("csrf", &csrf)])
        .await;
    // A page that refreshes to the provider's end-session endpoint at once (a redirect would
    // break the pages' `form-action 'self'` policy in browsers), with a link.
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let href = a
        .body
        .split("id=\"provider-sign-out\" href=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("a link to the provider's sign-out")
        .to_string();
    assert!(
        a.body.contains(&format!("content=\"0; url={href}\"")),
        "{}",
        a.body
    );
    let to = reqwest::Url::parse(&href.replace("&amp;", "&").replace("&#38;", "&")).unwrap();
    assert_eq!(
        to.as_str().split('?').next().unwrap(),
        format!("{}/session/end", provider.issuer())
    );
    let q: HashMap<String, String> = to.query_pairs().into_owned().collect();
    assert_eq!(q["client_id"], CLIENT_ID);
    assert_eq!(q["post_logout_redirect_uri"], format!("{}/login", rp.base));
    assert_eq!(q["id_token_hint"].split('.').count(), 3, "an ID token");
    assert!(!b.signed_in(&rp.base).await, "Tranche's session ended");

    // The provider's own confirmation page, then back to Tranche's login page.
    let page = b.get(to.as_str()).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let action = form_action(&page.body);
    let xsrf = page
        .body
        .split("name=\"xsrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the logout form's xsrf")
        .to_string();
    let action = reqwest::Url::parse(to.as_str())
        .unwrap()
        .join(&action)
        .unwrap();
    let done = b
        .post(action.as_str(), &[("xsrf", &xsrf), ("logout", "yes")])
        .await;
    assert_eq!(
        done.location.as_deref(),
        Some(&*format!("{}/login", rp.base)),
        "{}",
        done.body
    );
    // Signing in again needs the provider's login page again.
    let start = b.get(&format!("{}/login/oidc", rp.base)).await;
    let mut url = start.location.unwrap();
    let mut saw_login = false;
    for _ in 0..4 {
        let a = b.get(&url).await;
        if a.body.contains("name=\"prompt\" value=\"login\"") {
            saw_login = true;
            break;
        }
        match a.location {
            Some(l) if !l.starts_with(&rp.base) => url = l,
            _ => break,
        }
    }
    assert!(saw_login, "the provider's session ended too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_browser_signs_in_on_the_providers_pages_and_out_again() {
    use crate::browser::{browser, click, set_value, start_driver};
    use fantoccini::Locator;

    let (provider, rp) = pair().await;
    provider.set(
        &json!({"alice": {"groups": ["vision-leads", "detection"]}}),
        &json!({}),
    );
    let driver = start_driver().await;
    let c = browser(&driver).await;

    c.goto(&format!("{}/login", rp.base)).await.unwrap();
    click(&c, "#sign-in-with-provider").await;
    // The provider's own login page.
    c.wait()
        .for_element(Locator::Css("input[name=login]"))
        .await
        .unwrap();
    assert!(
        c.current_url()
            .await
            .unwrap()
            .as_str()
            .starts_with(&provider.issuer())
    );
    set_value(&c, "input[name=login]", "alice").await;
    set_value(&c, "input[name=password]", "alice-password").await;
    click(&c, "button[type=submit]").await;
    // Its consent page.
    c.wait()
        .for_element(Locator::Css("input[name=prompt][value=consent]"))
        .await
        .unwrap();
    click(&c, "button[type=submit]").await;
    // Back in Tranche, signed in with the mapped grants.
    c.wait()
        .for_element(Locator::Css("header nav"))
        .await
        .unwrap();
    let url = c.current_url().await.unwrap();
    assert!(url.as_str().starts_with(&rp.base), "{url}");
    let header = c
        .find(Locator::Css("header"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(header.contains("alice"), "{header}");
    assert_eq!(
        memberships(&rp.app, "alice").await,
        [("Detection".to_string(), "idp".to_string())]
    );
    assert_eq!(
        grants(&rp.app, "alice").await,
        [
            (
                "lead".to_string(),
                Some("Vision".to_string()),
                "idp".to_string()
            ),
            ("researcher".to_string(), None, "idp".to_string()),
        ]
    );
    c.goto(&format!("{}/tree", rp.base)).await.unwrap();
    let tree = c
        .find(Locator::Css("main"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        tree.contains("Detection"),
        "the lead sees their subtree: {tree}"
    );

    // Sign out: Tranche, then the provider's confirmation, then Tranche's login page.
    click(&c, "form.signout button").await;
    c.wait()
        .for_element(Locator::Css("button[name=logout]"))
        .await
        .unwrap();
    click(&c, "button[name=logout]").await;
    c.wait()
        .for_element(Locator::Css("form[action='/login']"))
        .await
        .unwrap();
    assert!(
        c.current_url()
            .await
            .unwrap()
            .as_str()
            .starts_with(&format!("{}/login", rp.base))
    );
    c.goto(&format!("{}/account/tokens", rp.base))
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("form[action='/login']"))
        .await
        .unwrap();
    crate::browser::close(c).await;
}
