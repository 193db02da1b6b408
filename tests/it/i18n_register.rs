//! The AI use-case register, the capacity-contract pages and the approvals inbox in Basque
//! and Spanish (docs/i18n.md): pages with data on them, form errors that keep the input, and
//! the "stop rule triggered" notification, rendered for a Basque lead. Every expected string
//! is written out by hand.

use axum::http::StatusCode;
use serde_json::json;
use tranche::i18n::Lang;

use crate::ai::{focus_this_month, import, use_case};
use crate::support::{TestApp, demo_password};

/// Gives the demo user `name` the interface language `lang`.
async fn speaks(app: &TestApp, name: &str, lang: &str) {
    sqlx::query("UPDATE users SET language = $2 WHERE name = $1")
        .bind(name)
        .bind(lang)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// This month, as `lang` writes it (`2026(e)ko azaroa`).
fn this_month(app: &TestApp, lang: Lang) -> String {
    let site = &app.state.site;
    let period = tranche::ledger::Period::containing(jiff::Timestamp::now(), site);
    tranche::i18n::format::month_year(lang, period.start.to_zoned(site.time_zone.clone()).date())
}

/// The page's `<h1>`.
fn heading(page: &str) -> &str {
    let start = page.find("<h1>").expect("a heading") + 4;
    let end = page[start..].find("</h1>").unwrap() + start;
    &page[start..end]
}

#[tokio::test]
async fn the_register_speaks_basque_and_spanish() {
    let (app, users) = TestApp::with_demo().await;
    speaks(&app, "demo-lead", "eu").await;
    speaks(&app, "demo-finance", "es").await;
    let lead = app.token_for("demo-lead").await;
    let finance = app.token_for("demo-finance").await;
    let pretraining = app.node_id("Pretraining").await;
    let (status, d) = app
        .api(
            "POST",
            "/api/v1/use-cases",
            Some(&lead),
            Some(use_case("Docs", pretraining, 100_000)),
        )
        .await;
    assert!(status.is_success(), "{d}");
    let docs = d["id"].as_i64().unwrap();
    app.api(
        "POST",
        "/api/v1/spend-rules",
        Some(&finance),
        Some(json!({"use_case_id": docs, "scope": "team=docs"})),
    )
    .await;
    // 10.00 USD for Docs, 5.00 USD that no rule assigns.
    let file = focus_this_month(&app, &[(1_000, "docs"), (500, "elsewhere")]);
    let (status, answer) = import(&app, &finance, "format=focus", &file).await;
    assert!(status.is_success(), "{answer}");
    let month = this_month(&app, Lang::Eu);

    // The register, in Basque.
    let (name, pw) = demo_password(&users, "lead");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let (status, list, _) = c.get("/ai").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(heading(&list), "AA erabilera-kasuak");
    for basque in [
        "<th>Jabe-taldea</th>",
        "<th>Poltsa</th>",
        &format!("Gastua ({month})"),
        "<th class=\"num\">Hileko muga</th>",
        "<td>Taldeko prozesuak</td>",
        "<td>proposatua</td>",
        "<td class=\"num\">10,00 USD</td>",
        "<td class=\"num\">1.000,00 USD</td>",
        "<td class=\"num\">% 1</td>",
        "Erregistratu erabilera-kasu bat",
        "Esportatu CSV",
    ] {
        assert!(list.contains(basque), "{basque} in {list}");
    }
    for english in [
        "AI use cases",
        "Owner team",
        "Monthly limit",
        "Register a use case",
    ] {
        assert!(!list.contains(english), "{english} in {list}");
    }

    // A use case's page.
    let (status, page, _) = c.get(&format!("/ai/{docs}")).await;
    assert_eq!(status, StatusCode::OK);
    for basque in [
        &format!("<h2>Gastua: {month}</h2>"),
        "<dt>Baimendutako datuak</dt>",
        "<dt>Gelditze-araua</dt><dd><span class=\"muted\">bat ere ez</span></dd>",
        "<td class=\"num\">1.000,00 USD (% 1 erabilita)</td>",
        "<h2>Hileko berrikuspena</h2>",
        "<legend>Erabakia</legend>",
        "> jarraitu</label>",
        "Oraindik ez dago erabakirik.",
        "<h2>Esleipen-arauak</h2>",
        "<td>edozein</td><td>team=docs</td>",
        "<option value=\"review\" selected>erantzunak berrikustea</option>",
    ] {
        assert!(page.contains(basque), "{basque} in {page}");
    }
    for english in ["Monthly review", "Mapping rules", "Owner team", "Spend in "] {
        assert!(!page.contains(english), "{english} in {page}");
    }

    // A form error in Basque keeps what was typed.
    let (status, form, _) = c.get("/ai/new").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(heading(&form), "Erregistratu AA erabilera-kasu bat");
    let fields = [
        ("name", "Document RAG"),
        ("owner", "Pretraining"),
        ("bag", "team"),
        ("allowed_data", "approved internal manuals"),
        ("ai_action", "answer with sources"),
        ("human_review", "review by the area lead"),
        ("monthly_limit", "bost ehun"),
        ("metric", "useful answers with the correct source"),
        ("stop_rule", ""),
        ("services", "Anthropic API"),
        ("projects", ""),
    ];
    let (status, form, _) = c.post("/ai", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        form.contains(
            "hileko muga: &#34;bost ehun&#34; ez da zenbateko bat; idatzi 1500,50 bezalako zifrak"
        ),
        "{form}"
    );
    assert!(form.contains("value=\"bost ehun\""), "the input is kept");
    assert!(form.contains("value=\"approved internal manuals\""));
    assert!(!form.contains("is not an amount"), "{form}");

    // Imported spend, for finance in Spanish and then in Basque.
    let (name, pw) = demo_password(&users, "finance");
    let mut f = app.client();
    f.login(&name, &pw).await;
    let (status, spend, _) = f.get("/ai/spend").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(heading(&spend), "Gasto de IA importado");
    for spanish in [
        "<h2>Líneas sin asignar</h2>",
        "<p>1 línea, 5,00 USD.</p>",
        "<h2>Reglas de asignación</h2>",
        "<h2>Importaciones</h2>",
        "nuevas: 2; ya importadas: 0",
        "<th>Descripción</th>",
    ] {
        assert!(spend.contains(spanish), "{spanish} in {spend}");
    }
    for english in [
        "Imported AI spend",
        "Unassigned lines",
        "line(s)",
        "already imported",
    ] {
        assert!(!spend.contains(english), "{english} in {spend}");
    }
    let (_, list, _) = f.get("/ai").await;
    assert_eq!(heading(&list), "Casos de uso de IA");
    assert!(list.contains("<th>Equipo propietario</th>"), "{list}");
    speaks(&app, "demo-finance", "eu").await;
    let (_, spend, _) = f.get("/ai/spend").await;
    assert_eq!(heading(&spend), "AA gastu inportatua");
    assert!(spend.contains("<p>lerro 1, 5,00 USD.</p>"), "{spend}");
}

#[tokio::test]
async fn contracts_and_approvals_speak_basque_and_spanish() {
    let (app, users) = TestApp::with_demo().await;
    speaks(&app, "demo-lead", "eu").await;
    speaks(&app, "demo-finance", "es").await;
    let mut lead = crate::run_pages::login(&app, &users, "lead").await;

    // The purchase form and its price preview.
    let (status, form, _) = lead.get("/contracts/new").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(heading(&form), "Erosi edukiera-kontratu bat");
    assert!(form.contains("Ikusi prezioa") && !form.contains("Preview price"));
    let day = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .tomorrow()
        .unwrap();
    let (start, end) = (format!("{day} 09:00"), format!("{day} 11:00"));
    let fields = [
        ("project", "fm-rlhf"),
        ("cluster", "b300-lab"),
        ("gpu_model", "B300"),
        ("gpus", "2"),
        ("start", start.as_str()),
        ("end", end.as_str()),
    ];
    let (status, preview, _) = lead.post("/contracts/preview", &fields).await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    // 2 GPUs x 2 h x 2.5 x 2.50 = 25.00.
    for basque in [
        "<h2>Prezioaren aurrebista</h2>",
        "<dd>2 × B300, b300-lab klusterrean</dd>",
        "<dt>GPU-orduak</dt><dd>4,0</dd>",
        "<strong>25,00 USD</strong>",
        "= 2 GPU × 2 h × 2,5 pisua × 2,50 USD GPU-ordu haztatu bakoitzeko",
        "Berretsi erosketa",
    ] {
        assert!(preview.contains(basque), "{basque} in {preview}");
    }
    assert!(!preview.contains("Price preview") && !preview.contains("per weighted"));
    let at = preview.find("name=\"quote\" value=\"").unwrap() + "name=\"quote\" value=\"".len();
    let quote = preview[at..].split('"').next().unwrap().to_string();
    let mut confirm = fields.to_vec();
    confirm.push(("quote", &quote));
    let (status, _, location) = lead.post("/contracts", &confirm).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, project, _) = lead.get(&location.unwrap()).await;
    assert!(
        project.contains("kontratua erosi da, 25,00 USD."),
        "{project}"
    );

    // A form error in Basque keeps what was typed.
    let past = [
        ("project", "fm-rlhf"),
        ("cluster", "b300-lab"),
        ("gpu_model", "B300"),
        ("gpus", "2"),
        ("start", "2020-01-01 09:00"),
        ("end", "2020-01-01 11:00"),
    ];
    let (status, form, _) = lead.post("/contracts/preview", &past).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        form.contains("tartea iraganean hasten da (")
            && form.contains("orain ondoren hasi behar da"),
        "{form}"
    );
    assert!(
        form.contains("value=\"2020-01-01 09:00\""),
        "the input is kept"
    );
    assert!(!form.contains("starts in the past"));

    // The contract list, in Basque for the lead and in Spanish for finance.
    let (status, list, _) = lead.get("/contracts").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(heading(&list), "Edukiera-kontratuak");
    for basque in [
        "Edukiera-egutegia",
        "<td>2 × B300, b300-lab klusterrean</td>",
        "<td class=\"num\">25,00 USD</td>",
        // Bought for tomorrow: its window has not begun.
        "<td>programatua</td>",
        "itzuliko dira)</button>",
        "<th>Egoera</th>",
    ] {
        assert!(list.contains(basque), "{basque} in {list}");
    }
    for english in [
        "Capacity contracts",
        "Capacity calendar",
        "active",
        "scheduled",
        " back)",
    ] {
        assert!(!list.contains(english), "{english} in {list}");
    }
    let mut finance = crate::run_pages::login(&app, &users, "finance").await;
    let (_, list, _) = finance.get("/contracts").await;
    assert_eq!(heading(&list), "Contratos de capacidad");
    assert!(
        list.contains("<td>2 × B300 en b300-lab</td>") && list.contains("<td>programado</td>"),
        "{list}"
    );

    // The approvals inbox: a run above the self-service limit (16 GPUs x 5 h = 80 GPU-hours).
    let mut researcher = crate::run_pages::login(&app, &users, "researcher").await;
    let run = crate::run_pages::submit(&mut researcher, "16", "300", "python big.py").await;
    let (status, inbox, _) = lead.get("/approvals").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(heading(&inbox), "Onespenak");
    for basque in [
        &format!(
            "{run}. exekuzioa</a>: 16 × H100, h100-east klusterrean, fm-pretrain-7b proiekturako"
        ),
        "<dt>Bidalia</dt><dd>demo-researcher(e)k, ",
        "<dt>Babestua</dt><dd>80,0 GPU-ordu</dd>",
        "Arrazoia (derrigorrezkoa)",
        "Onetsi</button>",
    ] {
        assert!(inbox.contains(basque), "{basque} in {inbox}");
    }
    for english in [
        "<h1>Approvals</h1>",
        "Protected runs above",
        "GPU-hours",
        "Reason (",
    ] {
        assert!(!inbox.contains(english), "{english} in {inbox}");
    }
    let deny = format!("/runs/{run}/deny");
    let (status, inbox, _) = lead
        .post(&deny, &[("reason", " "), ("from", "approvals")])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        inbox.contains("esan zergatik ukatzen den exekuzioa; ikertzaileak ikusiko du"),
        "{inbox}"
    );
    let (status, _, _) = lead
        .post(
            &deny,
            &[
                ("reason", "handiegia aste honetarako"),
                ("from", "approvals"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, inbox, _) = lead.get("/approvals").await;
    assert!(
        inbox.contains(&format!("{run}. exekuzioa ukatu da."))
            && inbox.contains("Ez dago zure onespenaren zain dagoen exekuziorik."),
        "{inbox}"
    );
}

#[tokio::test]
async fn the_stop_rule_reaches_a_basque_lead_in_basque() {
    let (app, users) = TestApp::with_demo().await;
    speaks(&app, "demo-lead", "eu").await;
    let lead = app.token_for("demo-lead").await;
    let finance = app.token_for("demo-finance").await;
    let pretraining = app.node_id("Pretraining").await;
    let mut ids = Vec::new();
    for name in ["Pager triage", "Ops bot"] {
        let mut body = use_case(name, pretraining, 10_000);
        body["bag"] = json!("critical");
        body["stop_rule"] = json!("any urgent ticket answered without review");
        let (status, u) = app
            .api("POST", "/api/v1/use-cases", Some(&lead), Some(body))
            .await;
        assert!(status.is_success(), "{u}");
        ids.push(u["id"].as_i64().unwrap());
    }
    let (pager, ops) = (ids[0], ids[1]);
    app.api(
        "POST",
        "/api/v1/spend-rules",
        Some(&finance),
        Some(json!({"use_case_id": pager, "scope": "team=support"})),
    )
    .await;
    // 120.00 USD of a 100.00 USD limit: the import checks the limits at once, and the
    // critical use case's stop rule is triggered.
    let file = focus_this_month(&app, &[(12_000, "support")]);
    let (status, answer) = import(&app, &finance, "format=focus", &file).await;
    assert!(status.is_success(), "{answer}");
    let month = this_month(&app, Lang::Eu);
    let lead_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE name = 'demo-lead'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (english, noted): (String, bool) = sqlx::query_as(
        "SELECT message, note IS NOT NULL FROM notifications WHERE user_id = $1 AND link = $2 \
         AND message LIKE 'Stop rule triggered%'",
    )
    .bind(lead_id)
    .bind(format!("/ai/{pager}"))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(
        english.starts_with(
            "Stop rule triggered for Pager triage (critical systems): spent 120.00 USD of its "
        ),
        "the stored text stays English: {english}"
    );
    assert!(noted);

    let (name, pw) = demo_password(&users, "lead");
    let mut c = app.client();
    c.login(&name, &pw).await;
    let (_, home, _) = c.get("/").await;
    let notice = format!(
        "Pager triage erabilera-kasuaren gelditze-araua aktibatu da (sistema kritikoak): 120,00 USD gastatu ditu; muga: 100,00 USD ({month}). Tranche-k ezin du kanpoko zerbitzu bat gelditu: gelditu zuk, eta gero berretsi erabilera-kasuaren orrian"
    );
    assert!(home.contains(&notice), "{notice} in {home}");
    assert!(
        home.contains("gelditze-araua aktibatu da: gelditu zerbitzua, eta gero berretsi")
            && home.contains("hileko muga gainditu du: 120,00 USD / 100,00 USD"),
        "{home}"
    );
    assert!(!home.contains("Stop rule triggered") && !home.contains("over its monthly limit"));

    // The use case's page reads the trigger's reason in Basque.
    let (_, page, _) = c.get(&format!("/ai/{pager}")).await;
    assert!(
        page.contains("<strong>Gelditze-araua aktibatu da</strong> (")
            && page.contains("): 120,00 USD gastatu ditu; muga: 100,00 USD")
            && page.contains("Tranche-k ezin du kanpoko zerbitzu bat gelditu: gelditu zuk, eta gero berretsi behean."),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "Hileko muga gainditu da: 120,00 USD gastatu dira, muga 100,00 USD izanik ({month})."
        )),
        "{page}"
    );
    assert!(page.contains("Berretsi gelditze-araua"), "{page}");
    for english in [
        "Stop rule triggered",
        "Tranche cannot stop",
        "spent 120.00",
        "Over the monthly",
    ] {
        assert!(!page.contains(english), "{english} in {page}");
    }

    // The owner reports the criterion by hand on the other one, then acknowledges it.
    let (status, _, _) = c
        .post(
            &format!("/ai/{ops}/stop-criterion"),
            &[("reason", "erantzun bat berrikusi gabe bidali da")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page, _) = c.get(&format!("/ai/{ops}")).await;
    assert!(
        page.contains("Gelditze-araua aktibatu da; gelditu zerbitzua, eta gero berretsi.")
            && page
                .contains("): gelditze-irizpidea bete da: erantzun bat berrikusi gabe bidali da."),
        "{page}"
    );
    let (status, _, _) = c
        .post(
            &format!("/ai/{ops}/acknowledge"),
            &[("note", "zerbitzua eten da")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page, _) = c.get(&format!("/ai/{ops}")).await;
    assert!(
        page.contains("Gelditze-araua berretsi da.")
            && page.contains("demo-lead erabiltzaileak berretsia, ")
            && page.contains(": zerbitzua eten da</li>"),
        "{page}"
    );
    let (_, home, _) = c.get("/").await;
    assert!(
        home.contains("Ops bot erabilera-kasuaren gelditze-araua aktibatu da (sistema kritikoak): gelditze-irizpidea bete da: erantzun bat berrikusi gabe bidali da."),
        "{home}"
    );
}
