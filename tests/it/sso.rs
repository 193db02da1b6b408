//! Sign-in through the organisation's identity provider: a real OpenLDAP `slapd` started by
//! each test on loopback (StartTLS required, with a certificate authority the test makes with
//! `openssl`), loaded with users and groups by `ldapadd`; the mapping file's rules applied at
//! sign-in and re-applied at the next, the local sign-in policy and the external session age.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use tranche::auth::ldap::LdapSettings;
use tranche::auth::sso::{CAUSE, Mapping, Sso};
use tranche::db::tree::{self as tree_db, NodeKind};
use tranche::domain::Share;

use crate::support::TestApp;

const BASE: &str = "dc=example,dc=org";
const ROOT_DN: &str = "cn=admin,dc=example,dc=org";
const ROOT_PW: &str = "root-secret";
const READER_DN: &str = "cn=reader,dc=example,dc=org";
const READER_PW: &str = "reader-secret";

/// A private `slapd` on a free loopback port, killed when dropped.
struct Slapd {
    child: std::process::Child,
    dir: PathBuf,
    port: u16,
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A certificate authority and a server certificate for 127.0.0.1 signed by it.
fn make_certificates(dir: &Path) {
    let p = |f: &str| dir.join(f).to_string_lossy().into_owned();
    run(Command::new("openssl").args([
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=Tranche test CA",
        "-keyout",
        &p("ca.key"),
        "-out",
        &p("ca.pem"),
    ]));
    run(Command::new("openssl").args([
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        &p("server.key"),
        "-out",
        &p("server.csr"),
    ]));
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(Command::new("openssl").args([
        "x509",
        "-req",
        "-in",
        &p("server.csr"),
        "-CA",
        &p("ca.pem"),
        "-CAkey",
        &p("ca.key"),
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &p("ext.cnf"),
        "-out",
        &p("server.pem"),
    ]));
}

impl Slapd {
    /// Starts slapd with StartTLS required for every operation (`security tls=1`), a service
    /// account that may read everything, and the users and groups of [`DIRECTORY`].
    async fn start() -> Self {
        let slapd = ["/usr/sbin/slapd", "/usr/local/libexec/slapd"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("slapd is not installed (scripts/test installs slapd and ldap-utils)");
        let dir = std::env::temp_dir().join(format!(
            "tranche-slapd-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(dir.join("db")).unwrap();
        make_certificates(&dir);
        let d = dir.to_string_lossy();
        std::fs::write(
            dir.join("slapd.conf"),
            format!(
                "include /etc/ldap/schema/core.schema\n\
                 include /etc/ldap/schema/cosine.schema\n\
                 include /etc/ldap/schema/inetorgperson.schema\n\
                 pidfile {d}/slapd.pid\n\
                 argsfile {d}/slapd.args\n\
                 modulepath /usr/lib/ldap\n\
                 moduleload back_mdb\n\
                 TLSCACertificateFile {d}/ca.pem\n\
                 TLSCertificateFile {d}/server.pem\n\
                 TLSCertificateKeyFile {d}/server.key\n\
                 security tls=1\n\
                 database mdb\n\
                 maxsize 10485760\n\
                 suffix \"{BASE}\"\n\
                 rootdn \"{ROOT_DN}\"\n\
                 rootpw {ROOT_PW}\n\
                 directory {d}/db\n\
                 access to attrs=userPassword by self write by anonymous auth by * none\n\
                 access to * by dn.exact=\"{READER_DN}\" read by self read by * none\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.join("slapd.log")).unwrap();
        let child = Command::new(slapd)
            .args(["-f", &format!("{d}/slapd.conf"), "-h"])
            .arg(format!("ldap://127.0.0.1:{port}/"))
            .args(["-d", "256"])
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start slapd");
        let me = Self { child, dir, port };
        // Ready once it answers over StartTLS.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ok = me
                .tool("ldapwhoami")
                .args(["-D", ROOT_DN, "-w", ROOT_PW])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "slapd did not come up: {}",
                std::fs::read_to_string(me.dir.join("slapd.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        me.modify("ldapadd", DIRECTORY);
        me
    }

    /// An OpenLDAP client tool aimed at this server over StartTLS (`-ZZ`: TLS or nothing).
    fn tool(&self, name: &str) -> Command {
        let mut c = Command::new(name);
        c.env("LDAPTLS_CACERT", self.dir.join("ca.pem"))
            .env("LDAPTLS_REQCERT", "demand")
            .args([
                "-x",
                "-ZZ",
                "-H",
                &format!("ldap://127.0.0.1:{}/", self.port),
            ]);
        c
    }

    /// Runs `ldapadd` or `ldapmodify` as the directory's root with `ldif` on its input.
    fn modify(&self, tool: &str, ldif: &str) {
        use std::io::Write;
        let mut child = self
            .tool(tool)
            .args(["-D", ROOT_DN, "-w", ROOT_PW])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(ldif.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{tool} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Tranche's settings for this directory, searching as the service account.
    fn settings(&self) -> LdapSettings {
        LdapSettings {
            url: format!("ldap://127.0.0.1:{}", self.port),
            ca_file: Some(self.dir.join("ca.pem")),
            bind_dn: Some(READER_DN.into()),
            bind_password: Some(tranche::config::Secret::new(READER_PW)),
            user_base: format!("ou=people,{BASE}"),
            user_filter: "(uid={name})".into(),
            name_attribute: "uid".into(),
            group_base: format!("ou=groups,{BASE}"),
            group_filter: "(member={dn})".into(),
            group_attribute: "cn".into(),
            timeout: Duration::from_secs(5),
        }
    }
}

/// People and groups (a `groupOfNames` needs a member, so the service account pads one):
/// alice leads Vision and works in Detection; bob works in Detection; carol
/// is in finance; dave is in a group no rule names.
const DIRECTORY: &str = "\
dn: dc=example,dc=org
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: cn=reader,dc=example,dc=org
objectClass: person
cn: reader
sn: reader
userPassword: reader-secret

dn: ou=people,dc=example,dc=org
objectClass: organizationalUnit
ou: people

dn: ou=groups,dc=example,dc=org
objectClass: organizationalUnit
ou: groups

dn: uid=alice,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: alice
cn: Alice
sn: A
userPassword: alice-password

dn: uid=bob,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: bob
cn: Bob
sn: B
userPassword: bob-password

dn: uid=carol,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: carol
cn: Carol
sn: C
userPassword: carol-password

dn: uid=dave,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: dave
cn: Dave
sn: D
userPassword: dave-password

dn: cn=vision-leads,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: vision-leads
member: uid=alice,ou=people,dc=example,dc=org
member: cn=reader,dc=example,dc=org

dn: cn=detection,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: detection
member: uid=alice,ou=people,dc=example,dc=org
member: uid=bob,ou=people,dc=example,dc=org

dn: cn=finance-team,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: finance-team
member: uid=carol,ou=people,dc=example,dc=org

dn: cn=coffee-club,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: coffee-club
member: uid=dave,ou=people,dc=example,dc=org
";

pub(crate) const MAPPING: &str = r#"
[[rule]]
group = "vision-leads"
role = "lead"
node = "Vision"

[[rule]]
group = "detection"
role = "researcher"

[[rule]]
group = "detection"
project = "Detection"

[[rule]]
group = "finance-team"
role = "finance"
"#;

/// A test app with the first-run admin, a Vision team with a Detection project under it, and
/// sign-in through `ldap`.
async fn app_with(ldap: LdapSettings, max_age_s: i64) -> (TestApp, String) {
    app_with_providers(Some(ldap), None, max_age_s).await
}

/// A test app with the first-run admin, a Vision team with a Detection project under it, the
/// mapping of [`MAPPING`] and sign-in through these providers.
pub(crate) async fn app_with_providers(
    ldap: Option<LdapSettings>,
    oidc: Option<std::sync::Arc<tranche::auth::oidc::Oidc>>,
    max_age_s: i64,
) -> (TestApp, String) {
    let (app, admin_pw) = TestApp::with_admin().await;
    let admin = app.admin().await;
    let root = app.node_id("Organisation").await;
    let vision = tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "Vision",
        NodeKind::Group,
        Share::parse_percent("50").unwrap(),
    )
    .await
    .unwrap();
    tree_db::create_node(
        &app.pool,
        &admin,
        vision,
        "Detection",
        NodeKind::Project,
        Share::parse_percent("100").unwrap(),
    )
    .await
    .unwrap();
    let sso = Sso {
        mapping: Mapping::parse(MAPPING).unwrap(),
        ldap,
        oidc,
        external_session_max_s: max_age_s,
    };
    let state = app.state.clone().with_sso(sso);
    let app = TestApp {
        router: tranche::web::app(state.clone()),
        state,
        ..app
    };
    (app, admin_pw)
}

/// `(role, lead node name, source)` of a user's grants, sorted.
pub(crate) async fn grants(app: &TestApp, name: &str) -> Vec<(String, Option<String>, String)> {
    sqlx::query_as(
        "SELECT g.role, t.name, g.source FROM role_grants g JOIN users u ON u.id = g.user_id \
         LEFT JOIN tree_nodes t ON t.id = g.node_id WHERE u.name = $1 ORDER BY 1, 2, 3",
    )
    .bind(name)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// `(project name, source)` of a user's memberships, sorted.
pub(crate) async fn memberships(app: &TestApp, name: &str) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT t.name, m.source FROM project_members m JOIN users u ON u.id = m.user_id \
         JOIN tree_nodes t ON t.id = m.project_id WHERE u.name = $1 ORDER BY 1, 2",
    )
    .bind(name)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

pub(crate) async fn user_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Posts the login form; returns (status, body, location).
async fn sign_in(
    c: &mut crate::support::Client,
    name: &str,
    password: &str,
) -> (StatusCode, String, Option<String>) {
    c.get("/login").await;
    c.post(
        "/login",
        &[("name", name), ("password", password), ("next", "/")],
    )
    .await
}

/// Whether the client's session is signed in (the home page answers instead of sending to
/// the login page).
async fn signed_in(c: &mut crate::support::Client) -> bool {
    let (status, _, location) = c.get("/").await;
    match status {
        StatusCode::OK => true,
        StatusCode::SEE_OTHER => {
            assert!(location.unwrap().starts_with("/login"));
            false
        }
        other => panic!("home page answered {other}"),
    }
}

fn s(v: &str) -> String {
    v.to_string()
}

#[tokio::test]
async fn ldap_sign_in_maps_groups_and_the_next_sign_in_removes_a_dropped_group() {
    let slapd = Slapd::start().await;
    let (app, admin_pw) = app_with(slapd.settings(), 3600).await;

    let mut c = app.client();
    let (status, body, location) = sign_in(&mut c, "alice", "alice-password").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(location.as_deref(), Some("/"));
    assert!(signed_in(&mut c).await);
    let (source, subject): (Option<String>, Option<String>) =
        sqlx::query_as("SELECT external_source, external_subject FROM users WHERE name = 'alice'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(source.as_deref(), Some("ldap"));
    assert_eq!(
        subject.as_deref(),
        Some("uid=alice,ou=people,dc=example,dc=org")
    );
    assert_eq!(
        grants(&app, "alice").await,
        vec![
            (s("lead"), Some(s("Vision")), s("idp")),
            (s("researcher"), None, s("idp")),
        ]
    );
    assert_eq!(
        memberships(&app, "alice").await,
        vec![(s("Detection"), s("idp"))]
    );
    // The Users page tells mapped grants from hand-given ones.
    let mut a = app.client();
    a.login("admin", &admin_pw).await;
    let (_, users_page, _) = a.get("/admin/users").await;
    assert!(
        users_page.contains("lead of Vision (from the identity provider)"),
        "{users_page}"
    );
    // The lead sees her team's page.
    let vision = app.node_id("Vision").await;
    let (status, _, _) = c.get(&format!("/tree/nodes/{vision}")).await;
    assert_eq!(status, StatusCode::OK);

    // An admin gives alice finance and Detection membership by hand.
    let admin = app.admin().await;
    let alice: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'alice'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    tranche::db::users::grant(&app.pool, Some(admin.id), alice, "finance", None)
        .await
        .unwrap();
    tranche::db::users::grant(&app.pool, Some(admin.id), alice, "researcher", None)
        .await
        .unwrap();
    let detection = app.node_id("Detection").await;
    sqlx::query("INSERT INTO project_members (project_id, user_id) VALUES ($1, $2)")
        .bind(detection)
        .bind(alice)
        .execute(&app.pool)
        .await
        .unwrap();

    // The directory drops alice from detection and from vision-leads.
    slapd.modify(
        "ldapmodify",
        "dn: cn=detection,ou=groups,dc=example,dc=org\nchangetype: modify\ndelete: member\nmember: uid=alice,ou=people,dc=example,dc=org\n\n\
         dn: cn=vision-leads,ou=groups,dc=example,dc=org\nchangetype: modify\ndelete: member\nmember: uid=alice,ou=people,dc=example,dc=org\n",
    );
    let revokes_before = app.audit_count("user.revoke").await;
    let mut c2 = app.client();
    let (status, body, _) = sign_in(&mut c2, "alice", "alice-password").await;
    // Still signed in: the grants given by hand remain.
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(
        grants(&app, "alice").await,
        vec![
            (s("finance"), None, s("manual")),
            (s("researcher"), None, s("manual")),
        ]
    );
    assert_eq!(
        memberships(&app, "alice").await,
        vec![(s("Detection"), s("manual"))]
    );
    assert_eq!(app.audit_count("user.revoke").await, revokes_before + 2);
    let causes: Vec<serde_json::Value> = sqlx::query_scalar(
        "SELECT before FROM audit_log WHERE action IN ('user.revoke', 'member.remove') AND actor_id IS NULL ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(causes.len(), 3, "{causes:?}");
    assert!(causes.iter().all(|c| c["cause"] == CAUSE), "{causes:?}");
    let created: serde_json::Value = sqlx::query_scalar(
        "SELECT after FROM audit_log WHERE action = 'user.create' AND entity_id = $1",
    )
    .bind(alice)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(created["cause"], CAUSE);
}

#[tokio::test]
async fn ldap_refuses_wrong_passwords_unmapped_users_and_filter_metacharacters() {
    let slapd = Slapd::start().await;
    let (app, _) = app_with(slapd.settings(), 3600).await;
    let users = user_count(&app).await;

    for (name, password) in [
        ("alice", "not-her-password"),
        // An empty password would be an unauthenticated bind, which slapd accepts.
        ("alice", ""),
        ("nobody", "alice-password"),
        // Unescaped, `(uid=c*)` would find carol alone and her password would sign in.
        ("c*", "carol-password"),
        ("*", "carol-password"),
        ("carol)(uid=*", "carol-password"),
        ("carol\\2a", "carol-password"),
    ] {
        let mut c = app.client();
        let (status, body, _) = sign_in(&mut c, name, password).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name:?}: {body}");
        assert!(
            body.contains("wrong user name or password"),
            "{name:?}: {body}"
        );
        assert!(!signed_in(&mut c).await, "{name:?}");
    }
    assert_eq!(user_count(&app).await, users, "no account was created");

    // dave is in no group a rule names: refused, and no account is made for him.
    let mut c = app.client();
    let (status, body, _) = sign_in(&mut c, "dave", "dave-password").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body.contains("none of the groups that give access"),
        "{body}"
    );
    assert!(body.contains("value=\"dave\""), "the name is kept: {body}");
    assert!(!signed_in(&mut c).await);
    assert_eq!(user_count(&app).await, users);

    // bob signs in, then leaves his only group: his next sign-in removes his grants and is
    // refused, and his API token no longer reaches his project.
    let mut c = app.client();
    let (status, body, _) = sign_in(&mut c, "bob", "bob-password").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(
        memberships(&app, "bob").await,
        vec![(s("Detection"), s("idp"))]
    );
    slapd.modify(
        "ldapmodify",
        "dn: cn=detection,ou=groups,dc=example,dc=org\nchangetype: modify\ndelete: member\nmember: uid=bob,ou=people,dc=example,dc=org\n",
    );
    let mut c = app.client();
    let (status, body, _) = sign_in(&mut c, "bob", "bob-password").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(!signed_in(&mut c).await);
    assert!(grants(&app, "bob").await.is_empty());
    assert!(memberships(&app, "bob").await.is_empty());
}

#[tokio::test]
async fn ldap_down_or_untrusted_is_a_clear_error_and_no_session() {
    let slapd = Slapd::start().await;
    // A directory whose certificate is signed by an authority we do not trust: StartTLS fails.
    let other_ca = std::env::temp_dir().join(format!("tranche-other-ca-{}", std::process::id()));
    std::fs::create_dir_all(&other_ca).unwrap();
    make_certificates(&other_ca);
    let mut untrusted = slapd.settings();
    untrusted.ca_file = Some(other_ca.join("ca.pem"));
    // Nothing listening.
    let mut down = slapd.settings();
    down.url = format!("ldap://127.0.0.1:{}", free_port());
    for settings in [untrusted, down] {
        let (app, _) = app_with(settings, 3600).await;
        let users = user_count(&app).await;
        let mut c = app.client();
        let (status, body, _) = sign_in(&mut c, "alice", "alice-password").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(body.contains("directory cannot be reached"), "{body}");
        assert!(!signed_in(&mut c).await);
        assert_eq!(user_count(&app).await, users);
    }
    let _ = std::fs::remove_dir_all(other_ca);
}

#[tokio::test]
async fn external_sessions_end_at_their_maximum_age() {
    let slapd = Slapd::start().await;
    let (app, admin_pw) = app_with(slapd.settings(), 2).await;
    let mut c = app.client();
    let (status, body, _) = sign_in(&mut c, "carol", "carol-password").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let started = Instant::now();
    assert!(signed_in(&mut c).await);
    // Polled: the session ends two seconds after sign-in, however active it is.
    while signed_in(&mut c).await {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the session outlived its maximum age"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(started.elapsed() >= Duration::from_secs(1));
    // A local account's session has no such limit.
    let mut a = app.client();
    a.login("admin", &admin_pw).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(signed_in(&mut a).await);
}

#[tokio::test]
async fn local_sign_in_can_be_turned_off_except_for_a_break_glass_admin() {
    let slapd = Slapd::start().await;
    let (app, admin_pw) = app_with(slapd.settings(), 3600).await;
    let (_, researcher_pw) =
        tranche::db::users::create(&app.pool, None, "rita", "researcher", None)
            .await
            .unwrap();
    let rita_token = app.token_for("rita").await;
    // An external account (no local password) cannot be the break-glass one.
    let mut c = app.client();
    sign_in(&mut c, "carol", "carol-password").await;

    let mut a = app.client();
    a.login("admin", &admin_pw).await;
    for (name, message) in [
        ("", "name the break-glass admin"),
        ("nobody", "there is no user named"),
        ("rita", "holds no admin role given by hand"),
        ("carol", "has no local password"),
    ] {
        let (status, body, _) = a
            .post("/admin/sign-in", &[("local", "off"), ("break_glass", name)])
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {body}");
        assert!(body.contains(message), "{name}: {body}");
        assert!(
            body.contains(&format!("name=\"break_glass\" value=\"{name}\"")),
            "{body}"
        );
    }
    assert_eq!(app.audit_count("site.local_sign_in").await, 0);
    let (status, _, _) = a
        .post(
            "/admin/sign-in",
            &[("local", "off"), ("break_glass", "admin")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(app.audit_count("site.local_sign_in").await, 1);
    let (_, page, _) = a.get("/admin/users").await;
    assert!(
        page.contains("except the break-glass admin <strong>admin</strong>"),
        "{page}"
    );

    // rita's password no longer signs her in; her API token still works.
    let mut r = app.client();
    let (status, body, _) = sign_in(&mut r, "rita", &researcher_pw).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("password sign-in is turned off"), "{body}");
    assert!(!signed_in(&mut r).await);
    let (status, me) = app.api("GET", "/api/v1/me", Some(&rita_token), None).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    // The break-glass admin and directory accounts still sign in.
    let mut b = app.client();
    b.login("admin", &admin_pw).await;
    assert!(signed_in(&mut b).await);
    let mut d = app.client();
    let (status, _, _) = sign_in(&mut d, "bob", "bob-password").await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    // Back on.
    let (status, _, _) = a.post("/admin/sign-in", &[("local", "on")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let mut r = app.client();
    let (status, _, _) = sign_in(&mut r, "rita", &researcher_pw).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(app.audit_count("site.local_sign_in").await, 2);
}

#[tokio::test]
async fn ldap_sign_in_never_takes_over_a_local_account() {
    let slapd = Slapd::start().await;
    let (app, _) = app_with(slapd.settings(), 3600).await;
    // A local carol exists before the directory's carol first signs in.
    let (_, local_pw) = tranche::db::users::create(&app.pool, None, "carol", "researcher", None)
        .await
        .unwrap();
    let users = user_count(&app).await;
    let audit_entries: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    // The directory password is not the local one: the name goes to the local account.
    let mut c = app.client();
    let (status, body, _) = sign_in(&mut c, "carol", "carol-password").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(!signed_in(&mut c).await);
    // The local password still works, and nothing was mapped onto the local account.
    let mut c = app.client();
    let (status, _, _) = sign_in(&mut c, "carol", &local_pw).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        grants(&app, "carol").await,
        vec![(s("researcher"), None, s("manual"))]
    );
    assert_eq!(user_count(&app).await, users);
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(after, audit_entries);

    // A local account without a password (made by hand, never given one) with the same name
    // as a directory user: the directory sign-in is refused, naming the clash.
    sqlx::query("INSERT INTO users (name) VALUES ('bob')")
        .execute(&app.pool)
        .await
        .unwrap();
    let mut c = app.client();
    let (status, body, _) = sign_in(&mut c, "bob", "bob-password").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body.contains("already exists and is not linked to your organisation account"),
        "{body}"
    );
    assert!(!signed_in(&mut c).await);
    assert!(grants(&app, "bob").await.is_empty());
}
