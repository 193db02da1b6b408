//! Sign-in, sign-out, CSRF, first run.

use axum::http::StatusCode;

use crate::support::{TestApp, demo_password};

#[tokio::test]
async fn login_with_right_password_opens_a_session() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    c.get("/login").await;
    let (status, _, location) = c
        .post(
            "/login",
            &[("name", "admin"), ("password", &pw), ("next", "/tree")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some("/tree"));
    let (status, body, _) = c.get("/tree").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("Program tree") && body.contains("Organisation"));
}

#[tokio::test]
async fn wrong_password_is_refused_and_keeps_the_name() {
    let (app, _) = TestApp::with_admin().await;
    let mut c = app.client();
    c.get("/login").await;
    let (status, body, _) = c
        .post(
            "/login",
            &[("name", "admin"), ("password", "not-the-password")],
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.contains("wrong user name or password"));
    assert!(body.contains("value=\"admin\""), "the typed name is kept");
    let (_, _, location) = c.get("/").await;
    assert!(
        location.unwrap_or_default().starts_with("/login"),
        "no session was opened"
    );
}

#[tokio::test]
async fn unknown_user_gets_the_same_answer() {
    let (app, _) = TestApp::with_admin().await;
    let mut c = app.client();
    c.get("/login").await;
    let (status, body, _) = c
        .post(
            "/login",
            &[("name", "nobody"), ("password", "whatever-it-is")],
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.contains("wrong user name or password"));
}

#[tokio::test]
async fn logout_ends_the_session() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    c.login("admin", &pw).await;
    let (status, _, _) = c.get("/").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, location) = c.post("/logout", &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some("/login"));
    let (_, _, location) = c.get("/").await;
    assert_eq!(location.as_deref(), Some("/login?next=%2F"));
}

#[tokio::test]
async fn session_id_changes_at_login() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    let (_, _, _) = c.get("/login").await;
    let before = c.csrf();
    c.login("admin", &pw).await;
    assert_ne!(before, c.csrf(), "the CSRF token rotates at sign-in");
}

#[tokio::test]
async fn post_without_csrf_token_is_rejected_and_changes_nothing() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    c.login("admin", &pw).await;
    let root = app.node_id("Organisation").await;
    let fields = vec![
        ("name".to_string(), "Sneaky".to_string()),
        ("kind".into(), "group".into()),
        ("share".into(), "10".into()),
    ];
    let (status, body, _) = c
        .post_raw(
            &format!("/tree/nodes/{root}/children"),
            &fields,
            Some("http://localhost"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("reload the page"));
    let mut with_wrong = fields.clone();
    with_wrong.push(("csrf".into(), "0".repeat(64)));
    let (status, _, _) = c
        .post_raw(
            &format!("/tree/nodes/{root}/children"),
            &with_wrong,
            Some("http://localhost"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM tree_nodes WHERE name = 'Sneaky'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 0);
}

#[tokio::test]
async fn post_from_another_origin_is_rejected_even_with_the_token() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    c.login("admin", &pw).await;
    let root = app.node_id("Organisation").await;
    let fields = vec![
        ("name".to_string(), "Sneaky".to_string()),
        ("kind".into(), "group".into()),
        ("share".into(), "10".into()),
        ("csrf".into(), c.csrf().unwrap()),
    ];
    let (status, _, _) = c
        .post_raw(
            &format!("/tree/nodes/{root}/children"),
            &fields,
            Some("http://evil.example"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = c
        .post_raw(
            &format!("/tree/nodes/{root}/children"),
            &fields,
            Some("http://localhost"),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "the same form from our origin works"
    );
}

#[tokio::test]
async fn first_run_creates_one_admin_once() {
    let app = TestApp::new().await;
    let first = tranche::db::users::first_run(&app.pool).await.unwrap();
    assert!(first.is_some());
    let second = tranche::db::users::first_run(&app.pool).await.unwrap();
    assert!(second.is_none());
    let admins: i64 = sqlx::query_scalar("SELECT count(*) FROM role_grants WHERE role = 'admin'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(admins, 1);
}

#[tokio::test]
async fn passwords_are_stored_as_argon2id() {
    let (app, _) = TestApp::with_admin().await;
    let hash: String = sqlx::query_scalar("SELECT password_hash FROM users WHERE name = 'admin'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
}

#[tokio::test]
async fn only_relative_next_redirects_are_followed() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    c.get("/login").await;
    let (_, _, location) = c
        .post(
            "/login",
            &[
                ("name", "admin"),
                ("password", &pw),
                ("next", "//evil.example/x"),
            ],
        )
        .await;
    assert_eq!(location.as_deref(), Some("/"));
}

#[tokio::test]
async fn demo_loads_once() {
    let (app, users) = TestApp::with_demo().await;
    assert_eq!(users.len(), 4);
    let roles: Vec<&str> = users.iter().map(|u| u.role).collect();
    assert_eq!(roles, ["admin", "finance", "lead", "researcher"]);
    assert!(
        tranche::demo::load(&app.pool).await.unwrap().is_none(),
        "second load changes nothing"
    );
    let (programs, teams, projects): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE p.parent_id IS NULL AND NOT t.is_project), \
                count(*) FILTER (WHERE p.parent_id IS NOT NULL AND NOT t.is_project), \
                count(*) FILTER (WHERE t.is_project) \
         FROM tree_nodes t JOIN tree_nodes p ON p.id = t.parent_id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((programs, teams, projects), (3, 15, 40));
    let gpus: Vec<(String, i64)> = sqlx::query_as(
        "SELECT c.name, sum(n.gpu_count)::bigint FROM nodes n JOIN clusters c ON c.id = n.cluster_id GROUP BY c.name ORDER BY c.name",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        gpus,
        vec![
            ("b200-west".into(), 256),
            ("b300-lab".into(), 88),
            ("h100-east".into(), 1024)
        ]
    );
    // Siblings' shares sum to exactly 100% everywhere in the demo.
    let sums: Vec<i64> = sqlx::query_scalar("SELECT sum(share_bp)::bigint FROM tree_nodes WHERE parent_id IS NOT NULL GROUP BY parent_id")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert!(sums.iter().all(|s| *s == 10_000), "{sums:?}");
}

#[tokio::test]
async fn a_signed_out_deep_link_comes_back_after_login() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    let (status, _, location) = c.get("/admin/users?x=1").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        location.as_deref(),
        Some("/login?next=%2Fadmin%2Fusers%3Fx%3D1")
    );
    let (_, body, _) = c.get("/login?next=%2Fadmin%2Fusers%3Fx%3D1").await;
    assert!(body.contains("name=\"next\" value=\"/admin/users?x=1\""));
    let (_, _, location) = c
        .post(
            "/login",
            &[
                ("name", "admin"),
                ("password", &pw),
                ("next", "/admin/users?x=1"),
            ],
        )
        .await;
    assert_eq!(location.as_deref(), Some("/admin/users?x=1"));
}

#[tokio::test]
async fn changing_a_password_ends_other_sessions() {
    let (app, pw) = TestApp::with_admin().await;
    let mut first = app.client();
    first.login("admin", &pw).await;
    let mut second = app.client();
    second.login("admin", &pw).await;
    let (status, _, _) = second
        .post(
            "/account/password",
            &[
                ("current", &pw),
                ("new", "a-new-password-1"),
                ("repeat", "a-new-password-1"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, body, _) = second.get("/account/tokens").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the session that changed it goes on"
    );
    assert!(body.contains("your other sessions have ended"));
    let (status, _, location) = first.get("/").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "the other session ended");
    assert!(location.unwrap().starts_with("/login"));
    // The command line does the same.
    tranche::db::users::set_password(&app.pool, None, "admin", "another-password-2")
        .await
        .unwrap();
    let (status, _, _) = second.get("/").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn wrong_current_password_changes_nothing() {
    let (app, pw) = TestApp::with_admin().await;
    let mut c = app.client();
    c.login("admin", &pw).await;
    let (status, body, _) = c
        .post(
            "/account/password",
            &[
                ("current", "nope-nope-nope"),
                ("new", "a-new-password-1"),
                ("repeat", "a-new-password-1"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("the current password is wrong"));
    let (status, body, _) = c
        .post(
            "/account/password",
            &[("current", &pw), ("new", "short"), ("repeat", "short")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("at least 10 characters"));
    let mut again = app.client();
    again.login("admin", &pw).await;
}

/// Moves the pair's delay into the past, as if its wait were over.
async fn wait_over(app: &TestApp, client: &str) {
    sqlx::query(
        "UPDATE sign_in_throttle SET blocked_until = now() - interval '1 second' WHERE client = $1",
    )
    .bind(client)
    .execute(&app.pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn an_attacker_slows_only_their_own_address_and_cannot_lock_the_user_out() {
    let (app, pw) = TestApp::with_admin().await;
    let mut attacker = app.client().connecting_from("203.0.113.9");
    attacker.get("/login").await;
    // Ten wrong passwords in a row, as fast as the server answers.
    let mut statuses = Vec::new();
    for _ in 0..10 {
        let (status, _, _) = attacker
            .post("/login", &[("name", "admin"), ("password", "guess-guess")])
            .await;
        statuses.push(status.as_u16());
    }
    // Three free tries, the fourth sets a 2 s delay: the rest wait it out unchecked.
    assert_eq!(statuses, [401, 401, 401, 401, 429, 429, 429, 429, 429, 429]);
    let (status, body, _) = attacker
        .post("/login", &[("name", "admin"), ("password", &pw)])
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(body.contains("try again in 2 s"), "{body}");
    assert_eq!(attacker.last_headers()["retry-after"], "2");
    // The real admin, from another address, signs in at once.
    let mut admin = app.client().connecting_from("198.51.100.7");
    admin.login("admin", &pw).await;
    let (status, _, _) = admin.get("/account/tokens").await;
    assert_eq!(status, StatusCode::OK);
    // Each further failure doubles the attacker's wait: 4 s, 8 s, 16 s.
    for expected in [4, 8, 16] {
        wait_over(&app, "203.0.113.9").await;
        let (status, _, _) = attacker
            .post("/login", &[("name", "admin"), ("password", "guess-guess")])
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, body, _) = attacker
            .post("/login", &[("name", "admin"), ("password", "guess-guess")])
            .await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert!(
            body.contains(&format!("try again in {expected} s")),
            "{body}"
        );
    }
    // Once the wait is over, the right password works from there too and clears the count.
    wait_over(&app, "203.0.113.9").await;
    let (status, _, _) = attacker
        .post("/login", &[("name", "admin"), ("password", &pw)])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sign_in_throttle WHERE client = '203.0.113.9'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test]
async fn unknown_and_known_accounts_get_the_same_answers() {
    let (app, _) = TestApp::with_admin().await;
    let mut known = app.client().connecting_from("192.0.2.1");
    let mut unknown = app.client().connecting_from("192.0.2.2");
    known.get("/login").await;
    unknown.get("/login").await;
    for attempt in 1..=12 {
        let (known_status, known_body, _) = known
            .post("/login", &[("name", "admin"), ("password", "guess-guess")])
            .await;
        let (unknown_status, unknown_body, _) = unknown
            .post(
                "/login",
                &[("name", "nobody-here"), ("password", "guess-guess")],
            )
            .await;
        assert_eq!(known_status, unknown_status, "attempt {attempt}");
        assert_eq!(
            known.last_headers().get("retry-after"),
            unknown.last_headers().get("retry-after"),
            "attempt {attempt}"
        );
        // The pages differ only in the name typed (and their CSRF tokens).
        let strip = |body: &str, name: &str| {
            body.replace(name, "NAME")
                .split("name=\"csrf\" value=\"")
                .map(|part| {
                    part.split_once('"')
                        .map_or(part, |(_, rest)| rest)
                        .to_string()
                })
                .collect::<Vec<_>>()
                .join("")
        };
        assert_eq!(
            strip(&known_body, "admin"),
            strip(&unknown_body, "nobody-here"),
            "attempt {attempt}"
        );
    }
}

#[tokio::test]
async fn revoked_tokens_stop_working() {
    let (app, _) = TestApp::with_demo().await;
    let token = app.token_for("demo-lead").await;
    let (status, tokens) = app.api("GET", "/api/v1/tokens", Some(&token), None).await;
    assert_eq!(status, StatusCode::OK);
    let id = tokens["tokens"][0]["id"].as_i64().unwrap();
    let (status, _) = app
        .api(
            "DELETE",
            &format!("/api/v1/tokens/{id}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.api("GET", "/api/v1/me", Some(&token), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
}

/// An admin revokes another user's token (a leaked one) without disabling the account: the
/// admin lists the user's tokens, revokes one, and the audit log names both; nobody else can.
#[tokio::test]
async fn an_admin_revokes_another_user_s_token() {
    let (app, _) = TestApp::with_demo().await;
    let lead = app.token_for("demo-lead").await;
    let researcher = app.token_for("demo-researcher").await;
    let admin = app.token_for("demo-admin").await;
    let lead_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-lead'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let path = format!("/api/v1/users/{lead_id}/tokens");
    let (status, _) = app.api("GET", &path, Some(&researcher), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, listed) = app.api("GET", &path, Some(&admin), None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let ids: Vec<i64> = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect();
    let own: i64 = sqlx::query_scalar("SELECT id FROM api_tokens WHERE user_id = $1")
        .bind(lead_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(ids, [own]);
    let (status, _) = app
        .api("GET", "/api/v1/users/999999/tokens", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Another researcher cannot revoke it: not theirs, as if it did not exist.
    let revoke = format!("/api/v1/tokens/{own}");
    let (status, _) = app.api("DELETE", &revoke, Some(&researcher), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.api("GET", "/api/v1/me", Some(&lead), None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = app.api("DELETE", &revoke, Some(&admin), None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, _) = app.api("GET", "/api/v1/me", Some(&lead), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.api("DELETE", &revoke, Some(&admin), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "already revoked");
    let (actor, user): (String, String) = sqlx::query_as(
        "SELECT a.name, l.after->>'user' FROM audit_log l JOIN users a ON a.id = l.actor_id \
         WHERE l.action = 'api_token.revoke' AND l.entity_id = $1",
    )
    .bind(own)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((actor.as_str(), user.as_str()), ("demo-admin", "demo-lead"));
    // The lead's account still works: a new token does.
    let (status, _) = app
        .api(
            "GET",
            "/api/v1/me",
            Some(&app.token_for("demo-lead").await),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn pages_carry_security_headers() {
    let (app, _) = TestApp::with_admin().await;
    let req = axum::http::Request::builder()
        .uri("/login")
        .body(axum::body::Body::empty())
        .unwrap();
    let (_, _, headers) = app.send(req).await;
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(headers["cache-control"], "no-store");
}

/// An admin disables an account: its session ends, its API token and password sign-in are
/// refused, and it comes back when enabled. Nobody disables themselves or the last admin.
#[tokio::test]
async fn a_disabled_account_can_do_nothing_until_enabled() {
    let (app, users) = TestApp::with_demo().await;
    let (name, password) = demo_password(&users, "researcher");
    let mut researcher = app.client();
    researcher.login(&name, &password).await;
    let token = app.token_for(&name).await;
    let user_id = |name: String| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT id FROM users WHERE name = $1")
                .bind(name)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let id = user_id(name.clone()).await;
    let (admin_name, admin_password) = demo_password(&users, "admin");
    let mut admin = app.client();
    admin.login(&admin_name, &admin_password).await;
    let (status, _, _) = admin.post(&format!("/admin/users/{id}/disable"), &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _) = app.api("GET", "/api/v1/me", Some(&token), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the token is refused");
    let (status, _, location) = researcher.get("/runs").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "the session ended");
    assert!(location.unwrap().starts_with("/login"));
    let mut again = app.client();
    again.get("/login").await;
    let (status, page, _) = again
        .post("/login", &[("name", &name), ("password", &password)])
        .await;
    assert_ne!(status, StatusCode::SEE_OTHER, "sign-in refused: {page}");
    let (_, page, _) = admin.get("/admin/users").await;
    assert!(
        page.contains(&format!("/admin/users/{id}/enable")),
        "listed as disabled"
    );
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'user.disable' AND entity_id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited, 1);
    let revoked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM api_tokens WHERE user_id = $1 AND revoked_at IS NOT NULL",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(revoked, 1, "disabling revoked its token");

    // Enabled again through the API: it signs in; its old token stays revoked (it may have
    // leaked), a new one works.
    let admin_token = app.token_for(&admin_name).await;
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/users/{id}/enable"),
            Some(&admin_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, _) = app.api("GET", "/api/v1/me", Some(&token), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let fresh = app.token_for(&name).await;
    let (status, _) = app.api("GET", "/api/v1/me", Some(&fresh), None).await;
    assert_eq!(status, StatusCode::OK);

    // Not oneself; and (from the command line, with no actor) not the last enabled admin.
    let admin_id = user_id(admin_name).await;
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/users/{admin_id}/disable"),
            Some(&admin_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("your own")
    );
    sqlx::query(
        "UPDATE users SET disabled = true WHERE id <> $1 AND id IN \
         (SELECT user_id FROM role_grants WHERE role = 'admin')",
    )
    .bind(admin_id)
    .execute(&app.pool)
    .await
    .unwrap();
    let last = tranche::db::users::set_disabled(&app.pool, None, admin_id, true).await;
    assert!(
        matches!(&last, Err(tranche::error::AppError::Conflict(message)) if message.contains("the last admin")),
        "{last:?}"
    );
    // A disabled admin's grant is revoked while one enabled admin is left (found by a new-user
    // check: it was refused as the last admin's); the last enabled admin's is not.
    let grant = |disabled: bool| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_as::<_, (i64, i64)>(
                "SELECT g.user_id, g.id FROM role_grants g JOIN users u ON u.id = g.user_id \
                 WHERE g.role = 'admin' AND u.disabled = $1 ORDER BY g.id LIMIT 1",
            )
            .bind(disabled)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let old: i64 = sqlx::query_scalar(
        "INSERT INTO users (name, disabled) VALUES ('old-admin', true) RETURNING id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO role_grants (user_id, role) VALUES ($1, 'admin')")
        .bind(old)
        .execute(&app.pool)
        .await
        .unwrap();
    let (user, id) = grant(true).await;
    tranche::db::users::revoke(&app.pool, None, user, id)
        .await
        .unwrap();
    let (user, id) = grant(false).await;
    assert_eq!(user, admin_id);
    let last = tranche::db::users::revoke(&app.pool, None, user, id).await;
    assert!(
        matches!(&last, Err(tranche::error::AppError::Invalid { message, .. }) if message.contains("the last admin")),
        "{last:?}"
    );
}

/// The API tokens page shows when a token was made and used as every other page shows an
/// instant (the site's time zone, the page's language), never RFC 3339 with microseconds.
#[tokio::test]
async fn token_times_are_shown_as_the_other_pages_show_instants() {
    let (app, pw) = TestApp::with_admin().await;
    app.token_for("admin").await;
    let made: jiff::Timestamp = "2026-03-04T05:06:07.123456Z".parse().unwrap();
    let used: jiff::Timestamp = "2026-03-05T21:45:00Z".parse().unwrap();
    sqlx::query("UPDATE api_tokens SET created_at = $1::TEXT::timestamptz, last_used_at = $2::TEXT::timestamptz")
        .bind(made.to_string())
        .bind(used.to_string())
        .execute(&app.pool)
        .await
        .unwrap();
    let mut c = app.client();
    c.login("admin", &pw).await;
    let tz = app.state.site.time_zone.clone();
    let (status, body, _) = c.get("/account/tokens").await;
    assert_eq!(status, StatusCode::OK);
    for ts in [made, used] {
        let words = ts
            .to_zoned(tz.clone())
            .strftime("%Y-%m-%d %H:%M %:z")
            .to_string();
        assert!(body.contains(&words), "{words} in {body}");
    }
    for lang in ["en", "es", "eu"] {
        c.post("/account/language", &[("lang", lang)]).await;
        let (status, body, _) = c.get("/account/tokens").await;
        assert_eq!(status, StatusCode::OK);
        assert!(!body.contains("05:06:07"), "{lang}: {body}");
        assert!(!body.contains(".123456"), "{lang}: {body}");
        assert!(!body.contains("T21:45"), "{lang}: {body}");
    }
}

/// Password sign-in cannot be turned off with no identity provider (only the break-glass admin
/// could sign in), and while it is off the break-glass admin's hand-given admin grant cannot
/// be revoked (nor could the account be disabled): either would lock the site's admins out.
#[tokio::test]
async fn password_sign_in_off_never_locks_the_admins_out() {
    let (app, users) = TestApp::with_demo().await;
    let (admin_name, admin_password) = demo_password(&users, "admin");
    let mut admin = app.client();
    admin.login(&admin_name, &admin_password).await;
    let (status, body, _) = admin
        .post(
            "/admin/sign-in",
            &[("local", "off"), ("break_glass", admin_name.as_str())],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.contains("no identity provider"), "{body}");
    assert_eq!(app.audit_count("site.local_sign_in").await, 0);
    // Turned off as a provider would allow (the rule above is the page's), with a second admin.
    tranche::db::users::set_local_sign_in(&app.pool, None, Some(&admin_name))
        .await
        .unwrap();
    tranche::db::users::create(&app.pool, None, "second-admin", "admin", None)
        .await
        .unwrap();
    let (id, grant): (i64, i64) = sqlx::query_as(
        "SELECT u.id, g.id FROM users u JOIN role_grants g ON g.user_id = u.id AND g.role = 'admin' WHERE u.name = $1",
    )
    .bind(&admin_name)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let token = app.token_for("second-admin").await;
    let path = format!("/api/v1/users/{id}/grants/{grant}");
    let (status, answer) = app.api("DELETE", &path, Some(&token), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("break-glass admin"),
        "{answer}"
    );
    // Back on, the grant may go (the other admin remains).
    tranche::db::users::set_local_sign_in(&app.pool, None, None)
        .await
        .unwrap();
    let (status, answer) = app.api("DELETE", &path, Some(&token), None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}
