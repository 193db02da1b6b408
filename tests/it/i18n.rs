//! The interface in English, Spanish and Basque (docs/i18n.md): how a request's language is
//! chosen.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};

use crate::support::TestApp;

/// The login page's heading for a request with these headers.
async fn login_heading(app: &TestApp, headers: &[(header::HeaderName, &str)]) -> String {
    let mut req = Request::builder()
        .uri("/login")
        .header(header::HOST, "localhost");
    for (name, value) in headers {
        req = req.header(name, *value);
    }
    let (status, body, _) = app.send(req.body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let start = body.find("<h1>").expect("a heading") + 4;
    let end = body[start..].find("</h1>").unwrap() + start;
    body[start..end].to_string()
}

#[tokio::test]
async fn the_language_comes_from_the_cookie_then_accept_language_then_the_org_default() {
    let (app, _) = TestApp::with_admin().await;
    let al = header::ACCEPT_LANGUAGE;
    assert_eq!(login_heading(&app, &[]).await, "Sign in");
    assert_eq!(
        login_heading(&app, &[(al.clone(), "es-ES,es;q=0.9,en;q=0.5")]).await,
        "Iniciar sesión"
    );
    assert_eq!(
        login_heading(&app, &[(al.clone(), "eu,es;q=0.8")]).await,
        "Hasi saioa"
    );
    // The switch's cookie wins over the browser.
    assert_eq!(
        login_heading(
            &app,
            &[(al.clone(), "es"), (header::COOKIE, "tranche_lang=eu")]
        )
        .await,
        "Hasi saioa"
    );
    // A browser asking for none of ours gets the organisation's default.
    sqlx::query("UPDATE org_settings SET default_language = 'eu'")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        login_heading(&app, &[(al.clone(), "fr-FR,de;q=0.5")]).await,
        "Hasi saioa"
    );
    assert_eq!(login_heading(&app, &[]).await, "Hasi saioa");
}

#[tokio::test]
async fn an_admin_sets_the_default_and_a_user_s_own_choice_wins() {
    let (app, password) = TestApp::with_admin().await;
    let mut c = app.client();
    c.login("admin", &password).await;
    let (status, body, _) = c.get("/admin/settings").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, location) = c
        .post("/admin/settings", &[("default_language", "es")])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some("/admin/settings"));
    assert_eq!(app.audit_count("settings.default_language").await, 1);
    // The admin has no choice of their own: the organisation's default applies.
    let (_, home, _) = c.get("/").await;
    assert!(home.contains("<html lang=\"es\">"), "{home}");
    assert!(home.contains("Hola, admin"), "{home}");
    // Their own choice on the Account page wins, and is stored.
    let (status, _, _) = c.post("/account/language", &[("lang", "eu")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, account, _) = c.get("/account/tokens").await;
    assert!(account.contains("Zure kontua"), "{account}");
    assert!(account.contains("Hizkuntza aldatu da."), "{account}");
    let stored: Option<String> =
        sqlx::query_scalar("SELECT language FROM users WHERE name = 'admin'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(stored.as_deref(), Some("eu"));
    // "auto" follows the browser (here: nothing, so the organisation's Spanish) again.
    c.post("/account/language", &[("lang", "auto")]).await;
    let (_, home, _) = c.get("/").await;
    assert!(home.contains("Hola, admin"), "{home}");
    // An unknown language is refused.
    let (status, _, _) = c.post("/account/language", &[("lang", "fr")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn the_api_keeps_english_whatever_the_browser_asks() {
    let (app, password) = TestApp::with_admin().await;
    let mut c = app.client();
    c.login("admin", &password).await;
    let token = app.token_for("admin").await;
    let req = Request::builder()
        .uri("/api/v1/runs/999999")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::ACCEPT_LANGUAGE, "eu")
        .body(Body::empty())
        .unwrap();
    let (status, body, _) = app.send(req).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["error"]["code"], "not_found");
    assert!(
        json["error"]["message"].as_str().unwrap().is_ascii(),
        "{json}"
    );
}
