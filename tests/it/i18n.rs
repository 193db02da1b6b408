//! The interface in English, Spanish and Basque (docs/i18n.md): how a request's language is
//! chosen, and a Basque researcher and a Spanish finance user in a real browser.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use fantoccini::Locator;

use crate::browser::{browser, click, set_value, sign_in, start_driver, text_of, wait_for_text};
use crate::support::{TestApp, demo_password, tomorrow_at};
use tranche::i18n::Lang;

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
    // This replica rereads the default every few seconds; an admin's change here shows at once.
    app.state.org_language.remember(Lang::Eu);
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
    // The page says the language it is in (before: the organisation's, `es`).
    assert_eq!(
        c.last_headers()
            .get(header::CONTENT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
        Some("eu")
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_basque_researcher_and_a_spanish_finance_user_in_the_browser() {
    let (app, users) = TestApp::with_demo().await;
    let base = app.serve().await;
    // One 8-GPU node on `local` that no agent serves: runs there wait for one.
    app.declare_agent_nodes("web", 1).await;
    let driver = start_driver().await;
    let c = browser(&driver).await;

    // Before signing in, the switch (a plain form, no JavaScript) turns the page Basque.
    c.goto(&format!("{base}/login")).await.unwrap();
    click(&c, "#lang-eu").await;
    wait_for_text(&c, "h1", "Hasi saioa").await;
    let (name, pw) = demo_password(&users, "researcher");
    sign_in(&c, &base, &name, &pw).await;

    // The home page.
    assert_eq!(text_of(&c, "h1").await, format!("Kaixo, {name}"));
    let nav = text_of(&c, "header nav").await;
    assert!(
        nav.contains("Exekuzioak") && nav.contains("Programa-zuhaitza"),
        "{nav}"
    );

    // A form error: a GPU count that is not a number.
    c.goto(&format!("{base}/runs/new")).await.unwrap();
    assert_eq!(text_of(&c, "h1").await, "Bidali exekuzio bat");
    for (select, value) in [
        ("project", "fm-pretrain-7b"),
        ("cluster", "local"),
        ("gpu_model", "H100"),
    ] {
        c.find(Locator::Css(&format!("select[name={select}]")))
            .await
            .unwrap()
            .select_by_value(value)
            .await
            .unwrap();
    }
    set_value(&c, "input[name=gpus]", "bi").await;
    set_value(&c, "textarea[name=command]", "python train.py").await;
    click(&c, "button.confirm").await;
    assert_eq!(
        text_of(&c, ".field-error").await,
        "GPU kopuruak zenbaki oso bat izan behar du (\"bi\" idatzi da)"
    );
    assert_eq!(
        text_of(&c, "p.error[role=alert]").await,
        "Zuzendu behean markatutako eremua."
    );

    // Fixed, it is submitted; no agent serves `local`, so it waits, and says why in Basque.
    set_value(&c, "input[name=gpus]", "2").await;
    click(&c, "button.confirm").await;
    let notice = text_of(&c, ".notice").await;
    assert!(notice.contains("exekuzioa bidali da"), "{notice}");
    let url = c.current_url().await.unwrap().to_string();
    let run: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let note_of = || async {
        sqlx::query_scalar::<_, Option<sqlx::types::Json<tranche::i18n::wait::WaitNote>>>(
            "SELECT wait_note FROM runs WHERE id = $1",
        )
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    crate::live::until(
        std::time::Duration::from_secs(60),
        "the pass to write the waiting reason",
        || async { note_of().await.is_some() },
    )
    .await;
    let note = note_of().await.unwrap();
    let expected = note.render(&tranche::i18n::wait::Render {
        lang: Lang::Eu,
        currency: &app.state.site.currency,
        time_zone: &app.state.site.time_zone,
    });
    let english: String = sqlx::query_scalar("SELECT wait_reason FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_ne!(expected, english);
    c.goto(&url).await.unwrap();
    let why = text_of(&c, "p.wait").await;
    assert!(why.starts_with("Zergatik dagoen zain: "), "{why}");
    assert!(why.contains(&expected), "{why} should contain {expected}");
    assert!(!why.contains(&english), "{why}");
    assert_eq!(text_of(&c, "h1 .state").await, "ilaran");

    // Finance, in Spanish: the report page is Spanish, the CSV keeps its English columns and
    // plain numbers.
    crate::browser::sign_out(&c).await;
    c.goto(&format!("{base}/login")).await.unwrap();
    click(&c, "#lang-es").await;
    wait_for_text(&c, "h1", "Iniciar sesión").await;
    let (fin, fin_pw) = demo_password(&users, "finance");
    sign_in(&c, &base, &fin, &fin_pw).await;
    c.goto(&format!("{base}/reports")).await.unwrap();
    assert_eq!(text_of(&c, "h1").await, "Informes de gasto");
    let link = c.find(Locator::Css("a.csv")).await.unwrap();
    assert_eq!(link.text().await.unwrap(), "Exportar CSV");
    let href = link.attr("href").await.unwrap().unwrap();
    // Money on the page has a decimal comma.
    let cells: serde_json::Value = c
        .execute(
            "return Array.from(document.querySelectorAll('table.report tbody tr.total td.num')).map(c => c.textContent.trim()).filter(t => t.length > 0)",
            vec![],
        )
        .await
        .unwrap();
    let cells: Vec<&str> = cells
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!cells.is_empty());
    assert!(cells.iter().all(|c| c.contains(',')), "{cells:?}");
    let session = c.get_named_cookie("tranche_session").await.unwrap();
    let csv_text = reqwest::Client::new()
        .get(format!("{base}{href}"))
        .header(
            "cookie",
            format!("tranche_session={}; tranche_lang=es", session.value()),
        )
        .header("accept-language", "es-ES,es")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(headers, tranche::ledger::reports::CSV_HEADER.to_vec());
    let first = reader.records().next().unwrap().unwrap();
    let spend = &first[10];
    assert!(
        spend.parse::<f64>().is_ok() && !spend.contains(','),
        "total_spend {spend} is a plain number"
    );
    crate::browser::close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_alert_reaches_a_basque_lead_in_basque() {
    let site = crate::mail::alert_site().await;
    let (app, lead, password) = (&site.app, site.lead, &site.password);
    sqlx::query("UPDATE users SET language = 'eu' WHERE id = $1")
        .bind(lead)
        .execute(&app.pool)
        .await
        .unwrap();
    let messages = site.spend_past_half().await;
    let data = &messages
        .iter()
        .find(|(_, d)| d.contains("(benetakoa)"))
        .expect("the actual-spend alert, in Basque")
        .1;
    assert!(
        data.contains("Subject: Tranche aurrekontu-alerta: p1, % 50 (benetakoa)"),
        "{data}"
    );
    // The body is quoted-printable: undo its soft line breaks.
    let text = data.replace("=\n", "");
    assert!(
        text.contains("p1 proiektuak aurrekontuaren % 50 gastatu du (2026(e)ko")
            && text.contains("60,00 USD / 100,00 USD"),
        "{data}"
    );
    assert!(data.contains("Ikusi proiektua: /projects/"), "{data}");
    // The notification on the home page is Basque too; the stored text stays English.
    let mut c = app.client();
    c.login("lead1", password).await;
    let (_, home, _) = c.get("/").await;
    assert!(
        home.contains("p1 proiektuak aurrekontuaren % 50 gastatu du"),
        "{home}"
    );
    let english: Vec<String> =
        sqlx::query_scalar("SELECT message FROM notifications WHERE user_id = $1")
            .bind(lead)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(
        english
            .iter()
            .any(|m| m.starts_with("p1 has spent 50% of its")),
        "{english:?}"
    );
}

#[tokio::test]
async fn the_run_form_s_checks_and_preview_speak_the_page_s_language() {
    let (app, _) = TestApp::with_demo().await;
    tranche::db::users::set_password(&app.pool, None, "demo-researcher", "researcher-pw-1")
        .await
        .unwrap();
    sqlx::query("UPDATE users SET language = 'es' WHERE name = 'demo-researcher'")
        .execute(&app.pool)
        .await
        .unwrap();
    let mut c = app.client();
    c.login("demo-researcher", "researcher-pw-1").await;
    let (_, form, _) = c.get("/runs/new").await;
    let once = form
        .split("name=\"once\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let fields = |cluster: &'static str, action: &'static str| {
        vec![
            ("project", "fm-pretrain-7b"),
            ("cluster", cluster),
            ("gpu_model", "H100"),
            ("gpus", "2"),
            ("min_runtime", "30"),
            ("time_limit", "60"),
            ("command", "python train.py"),
            ("action", action),
        ]
    };
    let mut refused = fields("local", "submit");
    refused.push(("once", &once));
    let (status, body, _) = c.post("/runs/new", &refused).await;
    assert_eq!(status, StatusCode::CONFLICT);
    // The field at fault is the GPU model the cluster lacks, not the GPU count.
    assert!(
        body.contains(r#"<select name="gpu_model" aria-invalid="true">"#),
        "{body}"
    );
    assert!(
        body.contains("el clúster local no tiene GPU H100 instaladas; elige un modelo de GPU"),
        "{body}"
    );
    // The preview: 2 GPUs x 30 min = 1 GPU-hour at 2.50 USD.
    let mut preview = fields("h100-east", "preview");
    preview.push(("once", &once));
    let (status, body, _) = c.post("/runs/new", &preview).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains("1,0 horas de GPU protegidas, 2,50 USD del presupuesto del proyecto"),
        "{body}"
    );
    // The language switch of a page answering a form comes back to the form's page (a GET of
    // the address the form was sent to answered an empty 405), and such an address visited
    // answers a page that says what it is, in the reader's language.
    assert!(body.contains(r#"name="next" value="/runs/new""#), "{body}");
    let (status, body, _) = c.get("/runs/1/cancel").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        body.contains("esta dirección recibe un formulario al enviarlo"),
        "{body}"
    );
    // And a form sent to a page's address is told that, not the contrary (found by a check).
    let (status, body, _) = c.post("/reports", &[]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        body.contains("esta dirección es una página para visitar"),
        "{body}"
    );
}

/// The text a reader sees on an HTML page: its text nodes and its `title`, `placeholder` and
/// `aria-label` attributes, entities decoded, whitespace collapsed; scripts, styles and code
/// (`<code>`, `<pre>`) left out.
fn visible_texts(html: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = html;
    let decode = |s: &str| {
        s.replace("&#38;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#x27;", "'")
            .replace("&#39;", "'")
            .replace("&nbsp;", " ")
            .replace("&hellip;", "…")
            .replace("&amp;", "&")
    };
    let mut push = |s: &str| {
        let s = decode(s).split_whitespace().collect::<Vec<_>>().join(" ");
        if !s.is_empty() {
            out.push(s);
        }
    };
    while let Some(open) = rest.find('<') {
        push(&rest[..open]);
        let tag_end = rest[open..].find('>').map_or(rest.len(), |e| open + e + 1);
        let tag = &rest[open..tag_end];
        for attr in ["title=\"", "placeholder=\"", "aria-label=\""] {
            if let Some(at) = tag.find(attr) {
                let v = &tag[at + attr.len()..];
                let v = &v[..v.find('"').unwrap_or(v.len())];
                // An example of code (`/home/me/project`, `HF_TOKEN`) is not prose.
                if v.contains(' ') {
                    push(v);
                }
            }
        }
        rest = &rest[tag_end..];
        // Code (commands, variable names, headers) is shown as written.
        for skip in ["<script", "<style", "<title", "<code", "<pre"] {
            if tag.starts_with(skip) {
                let close = format!("</{}", &skip[1..]);
                let end = rest.find(&close).unwrap_or(rest.len());
                if skip == "<title" {
                    push(&rest[..end]);
                }
                rest = &rest[end..];
            }
        }
    }
    push(rest);
    out
}

/// Every value of every text column of the database but those that hold English messages the
/// pages must not show as they are: the demo's names and free texts, which stay as typed.
async fn data_strings(app: &TestApp) -> Vec<String> {
    // Text columns, lists of texts (tags, names) and JSON records (the audit log's states).
    let columns: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns \
         WHERE table_schema = 'public' AND (data_type IN ('text', 'character varying', 'jsonb') \
               OR (data_type = 'ARRAY' AND udt_name IN ('_text', '_varchar')))",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    // English messages, and codes (kinds, states) that pages show in words.
    let messages = [
        "wait_reason",
        "message",
        "executor_error",
        "kind",
        "state",
        "proc_state",
        "stop_kind",
    ];
    let mut out = vec![];
    for (table, column, kind) in columns {
        if messages.contains(&column.as_str()) {
            continue;
        }
        let sql = match kind.as_str() {
            "ARRAY" => {
                format!("SELECT DISTINCT v::text FROM \"{table}\" t, unnest(t.\"{column}\") v")
            }
            "jsonb" => format!(
                "SELECT DISTINCT v #>> '{{}}' FROM \"{table}\" t, jsonb_path_query(t.\"{column}\", 'strict $.**') v \
                 WHERE jsonb_typeof(v) = 'string'"
            ),
            _ => format!(
                "SELECT DISTINCT \"{column}\" FROM \"{table}\" WHERE \"{column}\" IS NOT NULL"
            ),
        };
        let values: Vec<String> = sqlx::query_scalar(&sql).fetch_all(&app.pool).await.unwrap();
        out.extend(values.into_iter().filter(|v| v.len() > 1));
    }
    // Longest first, so that a name containing another is removed whole.
    out.sort_by_key(|v| std::cmp::Reverse(v.len()));
    out
}

/// Words that are the same in English and in the other language, or names that are not ours
/// to translate.
const SAME_IN_ALL: &[&str] = &[
    "Tranche",
    "GPU",
    "GPUs",
    "GPU-hours",
    "ID",
    "CSV",
    "API",
    "UTC",
    "EUR",
    "USD",
    "OK",
    "Slurm",
    "OpenID",
    "OpenAI",
    "Anthropic",
    "GitHub",
    "Copilot",
    "FOCUS",
    // The same word in Spanish.
    "Total",
    "Roles",
    // Units.
    "min",
    "English",
    "Español",
    "Euskara",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_is_in_basque_and_spanish_with_no_english_sentence_left() {
    let (app, users) = TestApp::with_demo().await;
    tranche::demo::load_history(&app.pool, &app.state.site)
        .await
        .unwrap()
        .unwrap();
    let today = jiff::Timestamp::now()
        .to_zoned(app.state.site.time_zone.clone())
        .date();
    tranche::demo::load_use_cases(&app.pool, &app.state.site, today)
        .await
        .unwrap()
        .unwrap();
    let id = |sql: &'static str| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let run = id("SELECT max(id) FROM runs").await;
    let project = id("SELECT node_id FROM projects ORDER BY node_id LIMIT 1").await;
    let tree_node = id("SELECT min(id) FROM tree_nodes WHERE NOT is_project").await;
    let cluster = id("SELECT min(id) FROM clusters").await;
    let node = id("SELECT min(id) FROM nodes").await;
    let use_case = id("SELECT min(id) FROM ai_use_cases").await;
    // A project with runs waiting now, one queued (with the pass's reason) and one for
    // approval: its standing's tables.
    let busy = id("SELECT id FROM tree_nodes WHERE name = 'fm-pretrain-7b'").await;
    let token = app.token_for("demo-researcher").await;
    for (gpus, min_runtime_s) in [(1, 600), (16, 5 * 3600)] {
        let body = serde_json::json!({
            "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
            "gpus": gpus, "min_runtime_s": min_runtime_s, "time_limit_s": 6 * 3600,
            "priority": 0, "resumable": true, "command": "python train.py"
        });
        let (status, answer) = app
            .api("POST", "/api/v1/runs", Some(&token), Some(body))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    tranche::runs::service::pass(&app.state).await.unwrap();
    // A finished run whose process exited on a node: its placements table.
    let placed = id("SELECT min(id) FROM runs WHERE state = 'succeeded'").await;
    sqlx::query(
        "INSERT INTO run_placements (run_id, attempt, node_id, gpu_indices, proc_state, exit_code) \
         SELECT id, attempt, $2, '{0,1}', 'exited', 0 FROM runs WHERE id = $1",
    )
    .bind(placed)
    .bind(node)
    .execute(&app.pool)
    .await
    .unwrap();
    let pages: Vec<(&str, String)> = vec![
        ("admin", "/".into()),
        ("admin", "/runs".into()),
        ("admin", "/runs/new".into()),
        ("admin", format!("/runs/{run}")),
        ("admin", format!("/runs/{placed}")),
        ("lead", "/approvals".into()),
        ("admin", "/tree".into()),
        ("admin", format!("/tree/nodes/{tree_node}")),
        ("admin", format!("/projects/{project}")),
        ("admin", format!("/projects/{busy}")),
        ("researcher", "/".into()),
        ("finance", "/reports".into()),
        ("lead", "/capacity".into()),
        ("lead", "/contracts".into()),
        ("lead", "/contracts/new".into()),
        ("admin", "/dashboard".into()),
        ("admin", "/audit".into()),
        ("researcher", "/account/tokens".into()),
        ("admin", "/admin/inventory".into()),
        ("admin", format!("/admin/clusters/{cluster}")),
        ("admin", format!("/admin/nodes/{node}")),
        ("admin", "/admin/users".into()),
        ("admin", "/admin/settings".into()),
        ("admin", "/ai".into()),
        ("admin", "/ai/new".into()),
        ("admin", "/ai/spend".into()),
        ("admin", format!("/ai/{use_case}")),
        ("admin", format!("/ai/{use_case}/edit")),
    ];
    let data = data_strings(&app).await;
    let mut clients = std::collections::HashMap::new();
    for role in ["admin", "lead", "finance", "researcher"] {
        let (name, pw) = demo_password(&users, role);
        let mut c = app.client();
        c.login(&name, &pw).await;
        clients.insert(role, (c, name));
    }
    let mut left = vec![];
    for (role, path) in &pages {
        let (c, name) = clients.get_mut(role).unwrap();
        let mut texts = std::collections::HashMap::new();
        for lang in Lang::ALL {
            sqlx::query("UPDATE users SET language = $1 WHERE name = $2")
                .bind(lang.code())
                .bind(&*name)
                .execute(&app.pool)
                .await
                .unwrap();
            let (status, body, _) = c.get(path).await;
            assert_eq!(status, StatusCode::OK, "{path} as {role} in {lang}");
            texts.insert(lang, visible_texts(&body));
        }
        let english: std::collections::HashSet<&String> = texts[&Lang::En].iter().collect();
        for lang in [Lang::Es, Lang::Eu] {
            for text in &texts[&lang] {
                if !english.contains(text) {
                    continue;
                }
                // What is left once names, data and numbers are taken out.
                let mut rest = format!(" {text} ");
                for d in &data {
                    if rest.contains(d.as_str()) {
                        rest = rest.replace(d.as_str(), " ");
                    }
                }
                let words: Vec<&str> = rest
                    .split(|c: char| !c.is_alphabetic() && c != '-')
                    .map(|w| w.trim_matches('-'))
                    .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 3)
                    .filter(|w| !SAME_IN_ALL.contains(w))
                    .collect();
                if !words.is_empty() {
                    left.push(format!("{path} ({lang}): {text:?}"));
                }
            }
        }
    }
    left.sort();
    left.dedup();
    assert!(
        left.is_empty(),
        "{} texts left in English:\n{}",
        left.len(),
        left.join("\n")
    );
}

/// A refusal or missing record a tester met in English on Spanish and Basque pages: who asks,
/// the request, and the words each language's page must show.
struct Refusal {
    role: &'static str,
    path: String,
    /// `None` for a GET; else the form POSTed.
    form: Option<Vec<(&'static str, String)>>,
    /// The words in English, Spanish and Basque.
    words: [String; 3],
}

#[tokio::test]
async fn refusals_and_missing_records_speak_the_page_s_language() {
    let (app, users) = TestApp::with_demo().await;
    let id = |sql: &'static str| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    // A project that neither the researcher nor the lead belongs to or leads, and one of the
    // researcher's.
    let sae = id("SELECT id FROM tree_nodes WHERE name = 'is-sae'").await;
    let own = id(
        "SELECT min(project_id) FROM project_members m JOIN users u ON u.id = m.user_id \
                  WHERE u.name = 'demo-researcher'",
    )
    .await;
    let token = app.token_for("demo-researcher").await;
    let body = serde_json::json!({
        "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
        "gpus": 1, "min_runtime_s": 0, "time_limit_s": 3600,
        "priority": 0, "resumable": true, "command": "python train.py"
    });
    let (status, answer) = app
        .api("POST", "/api/v1/runs", Some(&token), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let run = answer["id"].as_i64().unwrap();
    let words = |en: &str, es: &str, eu: &str| [en.to_string(), es.to_string(), eu.to_string()];
    let get = |role, path: String, words| Refusal {
        role,
        path,
        form: None,
        words,
    };
    let post = |role, path: &str, form: &[(&'static str, &str)], words| Refusal {
        role,
        path: path.to_string(),
        form: Some(form.iter().map(|(k, v)| (*k, (*v).to_string())).collect()),
        words,
    };
    let (_, researcher_pw) = demo_password(&users, "researcher");
    let run_form = [
        ("project", "is-sae"),
        ("cluster", "h100-east"),
        ("gpu_model", "H100"),
        ("gpus", "1"),
        ("min_runtime", "0"),
        ("time_limit", "60"),
        ("command", "python train.py"),
        ("action", "preview"),
    ];
    let cases = vec![
        get(
            "researcher",
            "/projects/999999".into(),
            words(
                "no project with id 999999",
                "no hay ningún proyecto con el id 999999",
                "ez dago 999999 id-a duen proiekturik",
            ),
        ),
        get(
            "researcher",
            "/runs/99999999".into(),
            words(
                "no run 99999999",
                "la ejecución 99999999 no existe",
                "99999999 exekuzioa ez dago",
            ),
        ),
        get(
            "researcher",
            format!("/projects/{sae}"),
            // A project the reader may not see answers as a missing one.
            words(
                &format!("no project with id {sae}"),
                &format!("no hay ningún proyecto con el id {sae}"),
                &format!("ez dago {sae} id-a duen proiekturik"),
            ),
        ),
        get(
            "researcher",
            "/admin/settings".into(),
            words(
                "only admins change organisation settings",
                "solo la administración puede cambiar los ajustes de la organización",
                "administratzaileek bakarrik alda ditzakete erakundearen ezarpenak",
            ),
        ),
        get(
            "researcher",
            "/runs/abc".into(),
            words(
                "there is no such page",
                "esa página no existe",
                "orri hori ez dago",
            ),
        ),
        get(
            "finance",
            "/reports?node=abc".into(),
            words(
                "the query string could not be read",
                "no se ha podido leer la cadena de consulta",
                "ezin izan da kontsulta-katea irakurri",
            ),
        ),
        get(
            "finance",
            "/reports?period=abc".into(),
            words(
                "is not a period; use YYYY-MM",
                "no es un periodo; usa AAAA-MM",
                "ez da aldi bat; erabili UUUU-HH",
            ),
        ),
        get(
            "finance",
            "/ai/use-cases.csv?period=abc".into(),
            words("period: ", "periodo: ", "aldia: "),
        ),
        get(
            "finance",
            "/reports?period=1900-01".into(),
            words(
                "reports cover the last 24 months and the next 2; 1900-01 is outside",
                "los informes abarcan los últimos 24 meses y los 2 siguientes; 1900-01 queda fuera",
                "txostenek azken 24 hilabeteak eta hurrengo 2ak hartzen dituzte; 1900-01 kanpoan dago",
            ),
        ),
        get(
            "finance",
            "/reports?cluster=nope".into(),
            words(
                "there is no cluster named",
                "no hay ningún clúster llamado",
                "izeneko klusterrik",
            ),
        ),
        post(
            "researcher",
            "/runs/new",
            &run_form,
            // A project the researcher may not see answers as a missing one.
            words(
                "there is no project named",
                "no hay ningún proyecto llamado",
                "izeneko proiekturik",
            ),
        ),
        post(
            "finance",
            &format!("/runs/{run}/cancel"),
            &[],
            words(
                "only the run's submitter or a lead of its project may cancel it",
                "solo quien envió la ejecución o un responsable de su proyecto puede cancelarla",
                "exekuzioa bidali zuenak edo bere proiektuaren arduradun batek bakarrik utz dezake bertan behera",
            ),
        ),
        post(
            // Finance sees every project and leads none (to a lead of another program the
            // project would be missing).
            "finance",
            &format!("/projects/{sae}/members"),
            &[("user", "demo-finance")],
            words(
                "only an admin or a lead of this project can change its members",
                "solo la administración o un responsable de este proyecto pueden cambiar sus miembros",
                "administratzaile batek edo proiektu honen arduradun batek bakarrik alda ditzake bere kideak",
            ),
        ),
        post(
            "lead",
            &format!("/projects/{own}/members"),
            &[("user", "demo-researcher")],
            words(
                "demo-researcher is already a member",
                "demo-researcher ya es miembro",
                "demo-researcher kidea da jada",
            ),
        ),
        post(
            "lead",
            &format!("/projects/{own}/members/remove"),
            &[("user", "demo-finance")],
            words(
                "demo-finance is not a member",
                "demo-finance no es miembro",
                "demo-finance ez da kidea",
            ),
        ),
        post(
            "researcher",
            "/account/email",
            &[("email", "not-an-address")],
            words(
                "is not an e-mail address",
                "no es una dirección de correo electrónico",
                "ez da helbide elektroniko bat",
            ),
        ),
        post(
            "researcher",
            "/account/password",
            &[
                ("current", "wrong-password"),
                ("new", "a-new-password"),
                ("repeat", "a-new-password"),
            ],
            words(
                "the current password is wrong",
                "la contraseña actual no es correcta",
                "egungo pasahitza ez da zuzena",
            ),
        ),
        post(
            "researcher",
            "/account/password",
            &[
                ("current", researcher_pw.as_str()),
                ("new", "short"),
                ("repeat", "short"),
            ],
            words(
                "a password needs at least 10 characters (this one has 5)",
                "una contraseña necesita al menos 10 caracteres (esta tiene 5)",
                "pasahitz batek gutxienez 10 karaktere behar ditu (honek 5 ditu)",
            ),
        ),
        post(
            "researcher",
            "/account/password",
            &[
                ("current", researcher_pw.as_str()),
                ("new", "a-new-password"),
                ("repeat", "another-password"),
            ],
            words(
                "the two new passwords differ",
                "las dos contraseñas nuevas no coinciden",
                "bi pasahitz berriak ez datoz bat",
            ),
        ),
        post(
            "researcher",
            "/account/tokens/99999/revoke",
            &[],
            words(
                "you have no active token with id 99999",
                "no tienes ningún token activo con el id 99999",
                "ez duzu 99999 id-a duen token aktiborik",
            ),
        ),
    ];
    let mut clients = std::collections::HashMap::new();
    for role in ["lead", "finance", "researcher"] {
        let (name, pw) = demo_password(&users, role);
        let mut c = app.client();
        c.login(&name, &pw).await;
        clients.insert(role, (c, name));
    }
    let mut wrong = vec![];
    for case in &cases {
        let (c, name) = clients.get_mut(case.role).unwrap();
        for (lang, expected) in Lang::ALL.into_iter().zip(&case.words) {
            sqlx::query("UPDATE users SET language = $1 WHERE name = $2")
                .bind(lang.code())
                .bind(&*name)
                .execute(&app.pool)
                .await
                .unwrap();
            let (status, body, _) = match &case.form {
                None => c.get(&case.path).await,
                Some(form) => {
                    // A fresh page first, for the form's CSRF token.
                    c.get("/").await;
                    let fields: Vec<(&str, &str)> =
                        form.iter().map(|(k, v)| (*k, v.as_str())).collect();
                    c.post(&case.path, &fields).await
                }
            };
            assert!(
                status.is_client_error(),
                "{} {} in {lang}: {status}\n{body}",
                case.role,
                case.path
            );
            let text = visible_texts(&body).join(" ");
            if !text.contains(expected.as_str()) {
                wrong.push(format!(
                    "{} ({lang}): wanted {expected:?} in {text:?}",
                    case.path
                ));
            }
            if lang != Lang::En && text.contains(case.words[0].as_str()) {
                wrong.push(format!(
                    "{} ({lang}): English {:?} left",
                    case.path, case.words[0]
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_and_words_built_in_code_follow_the_page_s_language() {
    let (app, users) = TestApp::with_demo().await;
    tranche::demo::load_history(&app.pool, &app.state.site)
        .await
        .unwrap()
        .unwrap();
    let today = jiff::Timestamp::now()
        .to_zoned(app.state.site.time_zone.clone())
        .date();
    tranche::demo::load_use_cases(&app.pool, &app.state.site, today)
        .await
        .unwrap()
        .unwrap();
    // A contract of the project, and a protected run above its self-service limit of 64
    // GPU-hours (16 GPUs x 5 h = 80), which waits for approval.
    let lead = app.token_for("demo-lead").await;
    let contract = serde_json::json!({"project": "fm-pretrain-7b", "cluster": "h100-east",
        "gpu_model": "H100", "gpus": 8, "start": tomorrow_at(9).to_string(),
        "end": tomorrow_at(11).to_string()});
    let (status, bought) = app
        .api("POST", "/api/v1/contracts", Some(&lead), Some(contract))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{bought}");
    let researcher = app.token_for("demo-researcher").await;
    let body = serde_json::json!({
        "project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
        "gpus": 16, "min_runtime_s": 5 * 3600, "time_limit_s": 6 * 3600,
        "priority": 0, "resumable": true, "command": "python train.py"
    });
    let (status, answer) = app
        .api("POST", "/api/v1/runs", Some(&researcher), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let run = answer["id"].as_i64().unwrap();
    // A share with a decimal, shown in its parent's form.
    let project = app.node_id("fm-pretrain-7b").await;
    let parent: i64 = sqlx::query_scalar(
        "UPDATE tree_nodes SET share_bp = 950 WHERE id = $1 RETURNING parent_id",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let (name, pw) = demo_password(&users, "admin");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let mut pages = std::collections::HashMap::new();
    for lang in Lang::ALL {
        sqlx::query("UPDATE users SET language = $1 WHERE name = $2")
            .bind(lang.code())
            .bind(&name)
            .execute(&app.pool)
            .await
            .unwrap();
        for path in [
            format!("/projects/{project}"),
            format!("/runs/{run}"),
            "/tree".to_string(),
            format!("/tree/nodes/{parent}"),
            "/ai/spend".to_string(),
            "/reports".to_string(),
        ] {
            let (status, body, _) = c.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{path} in {lang}");
            pages.insert((lang, path), body);
        }
    }
    let page = |lang: Lang, path: String| {
        let body = &pages[&(lang, path)];
        (visible_texts(body).join(" "), body.clone())
    };
    // (a) The project's contracts: "8 × H100 on h100-east", its state in words.
    let p = format!("/projects/{project}");
    for (lang, what, state) in [
        (Lang::En, "8 × H100 on h100-east", "(scheduled)"),
        (Lang::Es, "8 × H100 en h100-east", "(programado)"),
        (Lang::Eu, "8 × H100", "(programatua)"),
    ] {
        let (text, _) = page(lang, p.clone());
        assert!(text.contains(what), "{lang}: {what} in {text}");
        assert!(text.contains(state), "{lang}: {state} in {text}");
        if lang != Lang::En {
            assert!(!text.contains(" on h100-east"), "{lang}: {text}");
            assert!(!text.contains("(scheduled)"), "{lang}: {text}");
        }
    }
    // (d) English groups thousands of GPU-hours like its money: no `15095.65`, `5599.0`.
    let (en_project, _) = page(Lang::En, p.clone());
    let ungrouped = en_project
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .find(|w| {
            w.split_once('.')
                .is_some_and(|(whole, _)| whole.len() >= 4 && !whole.contains(','))
        });
    assert_eq!(ungrouped, None, "{en_project}");
    // (e) Dates in words: the project's days ("by day" rows and chart) and the reports' period
    // choice and chart title, in CLDR's forms (month names written out by hand here).
    let month = usize::from(today.month() as u8) - 1;
    let es_short = [
        "ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic",
    ][month];
    let eu_short = [
        "urt.", "ots.", "mar.", "api.", "mai.", "eka.", "uzt.", "abu.", "ira.", "urr.", "aza.",
        "abe.",
    ][month];
    let es_long = [
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ][month];
    let eu_long = [
        "urtarrila",
        "otsaila",
        "martxoa",
        "apirila",
        "maiatza",
        "ekaina",
        "uztaila",
        "abuztua",
        "iraila",
        "urria",
        "azaroa",
        "abendua",
    ][month];
    let (year, iso_day) = (today.year(), format!("{:02}-01", today.month()));
    let period = format!("{year}-{:02}", today.month());
    for (lang, first_day, period_name) in [
        (Lang::En, iso_day.clone(), period.clone()),
        (
            Lang::Es,
            format!("1 {es_short}"),
            format!("{es_long} de {year}"),
        ),
        (
            Lang::Eu,
            format!("{eu_short} 1(a)"),
            format!("{year}(e)ko {eu_long}"),
        ),
    ] {
        let (text, _) = page(lang, p.clone());
        assert!(text.contains(&first_day), "{lang}: {first_day} in {text}");
        if lang != Lang::En {
            assert!(!text.contains(&iso_day), "{lang}: {iso_day} in {text}");
        }
        let (text, body) = page(lang, "/reports".into());
        assert!(
            body.contains(&format!(
                "<option value=\"{period}\" selected>{period_name}</option>"
            )),
            "{lang}: {period_name} in {body}"
        );
        if lang != Lang::En {
            assert!(!text.contains(&period), "{lang}: {period} in {text}");
        }
    }
    // Shares read with the language's percent sign.
    let (es_project, _) = page(Lang::Es, p.clone());
    assert!(es_project.contains("9,5 %"), "{es_project}");
    // (b) The timeline's submission: the run header's decimal comma, also in the entry.
    for (lang, words) in [
        (
            Lang::En,
            "(80.0 protected GPU-hours, self-service limit 64)",
        ),
        (
            Lang::Es,
            "(80,0 h GPU protegidas, límite de autoservicio 64)",
        ),
        (Lang::Eu, "(80,0 GPU-ordu babestu"),
    ] {
        let (text, _) = page(lang, format!("/runs/{run}"));
        assert!(text.contains(words), "{lang}: {words} in {text}");
    }
    // (c) The tree's intro names the period's hours once.
    for lang in Lang::ALL {
        let (text, _) = page(lang, "/tree".to_string());
        let intro = text.split(" h)").nth(1).expect("the period's hours");
        assert!(
            !intro.trim_start().starts_with('('),
            "{lang}: the hours twice in {text}"
        );
        assert!(text.contains("UTC"), "{lang}: {text}");
    }
    // (e) A saved 9.5 is shown in the share form as the language writes it.
    for (lang, value) in [(Lang::En, "9.5"), (Lang::Es, "9,5"), (Lang::Eu, "9,5")] {
        let (_, body) = page(lang, format!("/tree/nodes/{parent}"));
        assert!(
            body.contains(&format!("name=\"share_{project}\" value=\"{value}\"")),
            "{lang}: {value} in {body}"
        );
    }
    // (g) Unassigned imported spend: a plural, not "line(s)".
    for lang in Lang::ALL {
        let (text, _) = page(lang, "/ai/spend".to_string());
        assert!(!text.contains("line(s)"), "{lang}: {text}");
    }
    let (en_spend, _) = page(Lang::En, "/ai/spend".to_string());
    assert!(
        en_spend.contains(" lines, ") || en_spend.contains(" line, "),
        "{en_spend}"
    );
    // (h) The tree's effective shares with the language's percent sign (`1,5 %`, `% 1,5`), as
    // the node page's: never a `%` glued to the number.
    for (lang, sign_first) in [(Lang::En, false), (Lang::Es, false), (Lang::Eu, true)] {
        let (_, body) = page(lang, "/tree".to_string());
        let cells: Vec<&str> = body
            .split("<td class=\"num effective\">")
            .skip(1)
            .filter_map(|c| c.split("</td>").next())
            .collect();
        assert!(!cells.is_empty(), "{lang}: {body}");
        for cell in cells {
            let ok = match (lang, sign_first) {
                (Lang::En, _) => cell.ends_with('%') && !cell.ends_with(" %"),
                (_, false) => cell.ends_with(" %"),
                (_, true) => cell.starts_with("% "),
            };
            assert!(ok, "{lang}: {cell:?}");
        }
    }
}
