//! A real headless Chromium (through chromedriver) against the app on a real port.
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` and `scripts/test` install them);
//! `TRANCHE_CHROMEDRIVER` and `TRANCHE_CHROMIUM` override their paths.

use std::net::TcpListener as StdListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::support::{TestApp, demo_password};

/// A chromedriver child process, killed on drop.
pub(crate) struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn start_driver() -> Driver {
    let path =
        std::env::var("TRANCHE_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    assert!(
        std::path::Path::new(&path).exists(),
        "browser tests need chromedriver at {path}: install Debian's chromium and chromium-driver (scripts/test does) or set TRANCHE_CHROMEDRIVER"
    );
    let port = StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    // Owned at once, so the process is killed and reaped on every path.
    let driver = Driver { child, port };
    // Wait until the driver accepts connections (readiness, not a timing assumption).
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return driver;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("chromedriver did not listen on port {port}");
}

pub(crate) async fn browser(driver: &Driver) -> Client {
    let chromium = std::env::var("TRANCHE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let profile = std::env::temp_dir().join(format!(
        "tranche-chromium-{}-{}",
        std::process::id(),
        driver.port
    ));
    let caps = json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,1000", format!("--user-data-dir={}", profile.display())
            ]
        }
    });
    let serde_json::Value::Object(caps) = caps else {
        unreachable!()
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("open a Chromium session")
}

/// Ends the browser session once a test's checks have run. A session that does not end cleanly
/// (Chromium slow to quit on a loaded machine) is reported, not failed: it says nothing about
/// the product, and the driver is killed on drop either way.
pub(crate) async fn close(c: Client) {
    if let Err(e) = c.close().await {
        eprintln!("the Chromium session did not end cleanly: {e}");
    }
}

pub(crate) async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Waits for the element and returns its text.
pub(crate) async fn text_of(c: &Client, css: &str) -> String {
    c.wait()
        .for_element(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Waits for an element of class `class` whose text starts with `prefix` and returns its
/// text: after a form is sent, the page it leaves may still show an older element of that
/// class, which `text_of` could find just before it goes stale. `prefix` has no quote.
pub(crate) async fn text_starting(c: &Client, class: &str, prefix: &str) -> String {
    let xpath = format!(
        "//*[contains(concat(' ', normalize-space(@class), ' '), ' {class} ') and starts-with(normalize-space(.), '{prefix}')]"
    );
    c.wait()
        .for_element(Locator::XPath(&xpath))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Waits until a `tag` element reads exactly `text` (no quote in it): after a click that
/// loads another page, the page it leaves may still show an older `tag` element.
pub(crate) async fn wait_for_text(c: &Client, tag: &str, text: &str) {
    let xpath = format!("//{tag}[normalize-space(.)='{text}']");
    c.wait().for_element(Locator::XPath(&xpath)).await.unwrap();
}

pub(crate) async fn set_value(c: &Client, css: &str, value: &str) {
    let field = c.find(Locator::Css(css)).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(value).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_changes_a_share_in_the_browser() {
    let (app, users) = TestApp::with_demo().await;
    let base = app.serve().await;
    let driver = start_driver().await;
    let c = browser(&driver).await;
    let (name, pw) = demo_password(&users, "lead");

    c.goto(&format!("{base}/login")).await.unwrap();
    set_value(&c, "input[name=name]", &name).await;
    set_value(&c, "input[name=password]", &pw).await;
    click(&c, "form[action='/login'] button").await;
    c.wait()
        .for_element(Locator::Css("header nav"))
        .await
        .unwrap();

    // The tree shows shares and entitlements.
    c.goto(&format!("{base}/tree")).await.unwrap();
    let cell = c
        .find(Locator::Css("tr[data-node='Post-training'] td.effective"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(cell, "12.5%");

    // Move 10 points from Pretraining to Post-training.
    let fm = app.node_id("Foundation Models").await;
    let pre = app.node_id("Pretraining").await;
    let post = app.node_id("Post-training").await;
    c.goto(&format!("{base}/tree/nodes/{fm}")).await.unwrap();
    set_value(&c, &format!("input[name=share_{pre}]"), "20").await;
    set_value(&c, &format!("input[name=share_{post}]"), "35").await;
    click(&c, "form.shares button").await;
    let notice = text_of(&c, ".notice").await;
    assert_eq!(notice, "Shares saved.");
    // Post-training is now 50% x 35% = 17.5% of the organisation.
    let cell = c
        .find(Locator::Css("tr[data-node='Post-training'] td.effective"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(cell, "17.5%");
    assert_eq!(app.share_bp("Post-training").await, 3500);

    // An invalid share: the message, the typed value kept, nothing changed.
    set_value(&c, &format!("input[name=share_{post}]"), "abc").await;
    click(&c, "form.shares button").await;
    let error = text_of(&c, ".error").await;
    assert!(error.contains("\"abc\" is not a number"), "{error}");
    let typed = c
        .find(Locator::Css(&format!("input[name=share_{post}]")))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(typed.as_deref(), Some("abc"));
    assert_eq!(app.share_bp("Post-training").await, 3500);

    if let Ok(png) = c.screenshot().await {
        let _ = std::fs::write(std::env::temp_dir().join("tranche-browser-shares.png"), png);
    }
    close(c).await;
}

/// Signs out and waits for the sign-in page it lands on (the page it leaves has no sign-in
/// form), so the next navigation cannot overtake the sign-out.
pub(crate) async fn sign_out(c: &Client) {
    click(c, "form.signout button").await;
    c.wait()
        .for_element(Locator::Css("form[action='/login'] input[name=name]"))
        .await
        .unwrap();
}

pub(crate) async fn sign_in(c: &Client, base: &str, name: &str, pw: &str) {
    c.goto(&format!("{base}/login")).await.unwrap();
    set_value(c, "input[name=name]", name).await;
    set_value(c, "input[name=password]", pw).await;
    click(c, "form[action='/login'] button").await;
    c.wait()
        .for_element(Locator::Css("header nav"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_buys_a_contract_from_the_calendar_and_finance_exports_the_csv() {
    let (app, users) = TestApp::with_demo().await;
    let base = app.serve().await;
    let driver = start_driver().await;
    let c = browser(&driver).await;
    let (lead, lead_pw) = demo_password(&users, "lead");
    sign_in(&c, &base, &lead, &lead_pw).await;
    // The contract is paid from the budget of the period its window starts in (tomorrow's).
    let tomorrow_noon = crate::support::tomorrow_at(12);
    let label = tomorrow_noon
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%Y-%m")
        .to_string();
    let before = app.balance_at("fm-rlhf", tomorrow_noon).await;

    // From the calendar: tomorrow's "buy" link prefills 09:00-17:00 on b200-west.
    c.goto(&format!("{base}/capacity?pool=b200-west%2FB200"))
        .await
        .unwrap();
    let links = c.find_all(Locator::Css("table.heat a")).await.unwrap();
    links[1].click().await.unwrap();
    c.wait()
        .for_element(Locator::Css("form[action='/contracts/preview']"))
        .await
        .unwrap();
    c.find(Locator::Css("select[name=project]"))
        .await
        .unwrap()
        .select_by_value("fm-rlhf")
        .await
        .unwrap();
    set_value(&c, "input[name=gpus]", "8").await;
    click(&c, "form[action='/contracts/preview'] button").await;
    // The price: 8 GPUs x 8 h x weight 1.8 x 2.50 = 288.00.
    let price = text_of(&c, "dd.price strong").await;
    assert_eq!(price, "288.00 USD");
    click(&c, "button.confirm").await;
    let notice = text_of(&c, ".notice").await;
    assert!(
        notice.starts_with("Bought contract #") && notice.ends_with("for 288.00 USD."),
        "{notice}"
    );
    // The project page shows the balance; the budget dropped by the price.
    let after = app.balance_at("fm-rlhf", tomorrow_noon).await;
    assert_eq!(before - after, 28_800, "the budget drops by the price");
    let page_text = c
        .find(Locator::Css("main"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page_text.contains(&tranche::domain::Money(after).display("USD")),
        "the page shows the new balance"
    );

    // Finance: the report page and its CSV carry the same rows.
    sign_out(&c).await;
    let (fin, fin_pw) = demo_password(&users, "finance");
    sign_in(&c, &base, &fin, &fin_pw).await;
    c.goto(&format!("{base}/reports?period={label}"))
        .await
        .unwrap();
    let page: serde_json::Value = c
        .execute(
            "return Array.from(document.querySelectorAll('table.report tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent.trim()))",
            vec![],
        )
        .await
        .unwrap();
    let page = page.as_array().unwrap();
    assert!(page.len() > 59, "every node has a total row and model rows");
    let href = c
        .find(Locator::Css("a.csv"))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    let cookie = c.get_named_cookie("tranche_session").await.unwrap();
    let csv_text = reqwest::Client::new()
        .get(format!("{base}{href}"))
        .header("cookie", format!("tranche_session={}", cookie.value()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), page.len(), "same number of rows");
    for (rec, cells) in records.iter().zip(page) {
        let cells: Vec<String> = cells
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().replace(',', ""))
            .collect();
        if rec[4] == *"all" {
            assert_eq!(cells[0], rec[2], "node name");
        }
        assert_eq!(cells[1], rec[4], "GPU model");
        // Every column but the last is exact; the last, the month's forecast, extrapolates
        // spend over the time elapsed so far, which moves between the page and the export.
        // GPU-hours (columns 6, 8, 9, 11) have three decimals in the CSV, one on the page
        // (rounded half up from the thousandths).
        let tenths = |c: &str| {
            let milli: i64 = c.replace('.', "").parse().unwrap();
            let t = (milli + 50).div_euclid(100);
            format!("{}.{}", t / 10, t % 10)
        };
        let csv_cells: Vec<String> = (5..15)
            .map(|i| {
                if [6, 8, 9, 11].contains(&i) {
                    tenths(&rec[i])
                } else {
                    rec[i].to_string()
                }
            })
            .collect();
        assert_eq!(
            cells[2..12].iter().map(String::as_str).collect::<Vec<_>>(),
            csv_cells,
            "row {} {}",
            &rec[2],
            &rec[4]
        );
        let (on_page, in_csv) = (&cells[12], &rec[15]);
        if on_page.is_empty() || in_csv.is_empty() {
            assert_eq!(
                on_page.as_str(),
                in_csv,
                "forecast of {} {}",
                &rec[2],
                &rec[4]
            );
        } else {
            let (a, b): (f64, f64) = (on_page.parse().unwrap(), in_csv.parse().unwrap());
            assert!(
                (a - b).abs() <= 0.001 * a.abs().max(b.abs()) + 0.01,
                "forecast of {} {}: page {a}, CSV {b}",
                &rec[2],
                &rec[4]
            );
        }
    }
    // The purchase shows: fm-rlhf's B200 contract spend is 288.00 on the page and in the CSV.
    let row = records
        .iter()
        .find(|r| &r[2] == "fm-rlhf" && &r[4] == "B200")
        .unwrap();
    assert_eq!(&row[5], "288.00");
    close(c).await;
}

/// The text of the run page's state tag after loading `url`.
async fn run_state(c: &Client, url: &str) -> String {
    c.goto(url).await.unwrap();
    text_of(c, "h1 .state").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn researcher_submits_a_run_watches_it_run_and_cancels_it() {
    let (app, users) = TestApp::with_demo().await;
    let base = app.serve().await;
    let agent_token = tranche::runs::agents::create_token(&app.pool, "local")
        .await
        .unwrap();
    app.declare_agent_nodes("web", 1).await;
    let dir = crate::live::scratch("browser");
    let _agent = crate::live::agent(&base, &agent_token, "web", 1, &dir);
    let driver = start_driver().await;
    let c = browser(&driver).await;
    let (name, pw) = demo_password(&users, "researcher");
    sign_in(&c, &base, &name, &pw).await;

    c.goto(&format!("{base}/runs/new")).await.unwrap();
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
    set_value(&c, "input[name=gpus]", "2").await;
    set_value(&c, "input[name=min_runtime]", "30").await;
    set_value(&c, "input[name=time_limit]", "60").await;
    let marker = dir.join("visible");
    set_value(
        &c,
        "textarea[name=command]",
        &format!(
            "echo \"$CUDA_VISIBLE_DEVICES $TRANCHE_RUN_ID\" > {}; sleep 600",
            marker.display()
        ),
    )
    .await;
    click(&c, "button[value=preview]").await;
    // 2 GPUs x 30 min = 1 GPU-hour at weight 1.0 x 2.50.
    let preview = text_of(&c, "#preview").await;
    assert!(
        preview.contains("1.0 protected GPU-hours, 2.50 USD"),
        "{preview}"
    );
    click(&c, "button.confirm").await;
    let notice = text_of(&c, ".notice").await;
    assert!(notice.contains("ubmitted"), "{notice}");
    let url = c.current_url().await.unwrap().to_string();
    let run: i64 = url.rsplit('/').next().unwrap().parse().unwrap();

    // The agent runs it: the page shows it running on its node's GPUs.
    crate::live::until(
        Duration::from_secs(60),
        "the run page to say running",
        || async { run_state(&c, &url).await == "running" },
    )
    .await;
    let placement = text_of(&c, "table:last-of-type tbody tr").await;
    assert!(
        placement.contains("web") && placement.contains("0, 1"),
        "{placement}"
    );
    crate::live::until(Duration::from_secs(30), "the command's file", || async {
        marker.exists()
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        format!("0,1 {run}")
    );

    // Cancel from the page: SIGTERM through the agent, then cancelled.
    click(&c, "form[action$='/cancel'] button").await;
    crate::live::until(
        Duration::from_secs(60),
        "the run page to say cancelled",
        || async { run_state(&c, &url).await == "cancelled" },
    )
    .await;
    let timeline = text_of(&c, "table.timeline").await;
    for word in ["submitted", "started", "cancel", "cancelled"] {
        assert!(timeline.contains(word), "{word} in {timeline}");
    }
    close(c).await;
    crate::live::clean_up(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lead_approves_a_protected_run_from_the_inbox() {
    let (app, users) = TestApp::with_demo().await;
    let base = app.serve().await;
    let project = app.node_id("fm-pretrain-7b").await;
    sqlx::query("UPDATE projects SET self_service_gpu_hours = 1 WHERE node_id = $1")
        .bind(project)
        .execute(&app.pool)
        .await
        .unwrap();
    let researcher = app.token_for("demo-researcher").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&researcher),
            Some(json!({"project": "fm-pretrain-7b", "cluster": "h100-east", "gpu_model": "H100",
                        "gpus": 8, "min_runtime_s": 3600, "time_limit_s": 7200, "command": "train"})),
        )
        .await;
    assert_eq!(status.as_u16(), 201, "{answer}");
    assert_eq!(answer["state"], "waiting_approval");
    let run = answer["id"].as_i64().unwrap();

    let driver = start_driver().await;
    let c = browser(&driver).await;
    let (lead, lead_pw) = demo_password(&users, "lead");
    sign_in(&c, &base, &lead, &lead_pw).await;
    // Home tells the lead a run waits, and links to the inbox.
    let home = text_of(&c, "main").await;
    assert!(home.contains("1 run waiting for your approval"), "{home}");
    c.goto(&format!("{base}/approvals")).await.unwrap();
    let entry = text_of(&c, &format!("#run-{run}")).await;
    assert!(
        entry.contains("fm-pretrain-7b") && entry.contains("train"),
        "{entry}"
    );
    set_value(
        &c,
        &format!("#run-{run} form[action$='/approve'] input[name=reason]"),
        "paper deadline",
    )
    .await;
    click(&c, &format!("#run-{run} form[action$='/approve'] button")).await;
    let notice = text_of(&c, ".notice").await;
    assert!(notice.contains(&run.to_string()), "{notice}");
    let state: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(state, "queued");
    // The run page shows the decision to everyone who may see it.
    c.goto(&format!("{base}/runs/{run}")).await.unwrap();
    let page = text_of(&c, "main").await;
    assert!(
        page.contains("approved by demo-lead: paper deadline"),
        "{page}"
    );
    close(c).await;
}

/// The AI use-case register end to end: a lead registers a use case and maps spend to it,
/// finance imports a FOCUS file (preview, then confirm) and sees the spend against the limit
/// and the alert, and the lead records the monthly decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_use_case_from_registration_to_the_monthly_decision() {
    let (app, users) = TestApp::with_demo().await;
    let base = app.serve().await;
    let driver = start_driver().await;
    let c = browser(&driver).await;
    let (lead, lead_pw) = demo_password(&users, "lead");
    let (finance, finance_pw) = demo_password(&users, "finance");

    sign_in(&c, &base, &lead, &lead_pw).await;
    c.goto(&format!("{base}/ai/new")).await.unwrap();
    set_value(&c, "input[name=name]", "Support ticket triage").await;
    c.find(Locator::Css("select[name=owner]"))
        .await
        .unwrap()
        .select_by_value("Pretraining")
        .await
        .unwrap();
    for (field, value) in [
        ("allowed_data", "support e-mail and category history"),
        ("ai_action", "summarise, classify and propose urgency"),
        ("human_review", "before replying to the customer"),
        ("monthly_limit", "300"),
        ("human_hourly_rate", "35"),
        ("metric", "time to first classification"),
        ("services", "Azure OpenAI"),
    ] {
        set_value(&c, &format!("input[name={field}]"), value).await;
    }
    click(&c, "form.use-case-form button").await;
    let notice = text_of(&c, ".notice").await;
    assert_eq!(notice, "Registered the use case Support ticket triage.");
    let id: i64 =
        sqlx::query_scalar("SELECT id FROM ai_use_cases WHERE name = 'Support ticket triage'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    set_value(
        &c,
        "form[action='/ai/rules'] input[name=scope]",
        "team=support",
    )
    .await;
    click(&c, "form[action='/ai/rules'] button").await;
    let notice = text_starting(&c, "notice", "Spend now maps to Support ticket triage").await;
    assert!(
        notice.ends_with("unassigned lines assigned.")
            || notice.ends_with("unassigned line assigned."),
        "{notice}"
    );
    sign_out(&c).await;

    // Finance imports this month's FOCUS export: 210.00 + 120.00 USD for support, 5.00 other.
    sign_in(&c, &base, &finance, &finance_pw).await;
    let period = tranche::ledger::Period::containing(jiff::Timestamp::now(), &app.state.site);
    let day = period.start.to_zoned(jiff::tz::TimeZone::UTC).date();
    let next = day.tomorrow().unwrap();
    let line = |cost: &str, tag: &str| {
        format!(
            "{cost},USD,{day}T00:00:00Z,{next}T00:00:00Z,Azure OpenAI,sub-1,\"{{\"\"team\"\":\"\"{tag}\"\"}}\"\n"
        )
    };
    let file = format!(
        "BilledCost,BillingCurrency,ChargePeriodStart,ChargePeriodEnd,ServiceName,SubAccountId,Tags\n{}{}{}",
        line("210.00", "support"),
        line("120.00", "support"),
        line("5.00", "marketing")
    );
    let path = std::env::temp_dir().join(format!("tranche-focus-{}.csv", std::process::id()));
    std::fs::write(&path, &file).unwrap();
    c.goto(&format!("{base}/ai/spend")).await.unwrap();
    c.find(Locator::Css("select[name=format]"))
        .await
        .unwrap()
        .select_by_value("focus")
        .await
        .unwrap();
    c.find(Locator::Css("input[name=file]"))
        .await
        .unwrap()
        .send_keys(&path.display().to_string())
        .await
        .unwrap();
    click(&c, "form.upload button").await;
    let preview = text_of(&c, ".import-preview").await;
    assert!(
        preview.contains("3 new") && preview.contains("335.00 USD"),
        "{preview}"
    );
    assert!(
        preview.contains("Support ticket triage") && preview.contains("unassigned"),
        "{preview}"
    );
    click(&c, ".import-preview button.confirm").await;
    let notice = text_of(&c, ".notice").await;
    assert_eq!(
        notice,
        "Imported 3 new lines (335.00 USD); 0 already imported."
    );
    let _ = std::fs::remove_file(&path);

    // The register: 330.00 of 300.00, over the limit; the use case's page shows the alert.
    c.goto(&format!("{base}/ai")).await.unwrap();
    let row = text_of(&c, "table.use-cases tbody tr").await;
    assert!(
        row.contains("330.00 USD")
            && row.contains("300.00 USD")
            && row.contains("110%")
            && row.contains("over the limit"),
        "{row}"
    );
    c.goto(&format!("{base}/ai/{id}")).await.unwrap();
    let alerts = text_of(&c, "ul.alerts").await;
    assert!(
        alerts.contains("100% of the monthly limit reached: 330.00 USD of 300.00 USD"),
        "{alerts}"
    );
    assert_eq!(
        text_of(&c, ".over-limit").await,
        "Over the monthly limit: 330.00 USD spent of 300.00 USD in ".to_string()
            + &period
                .start
                .to_zoned(app.state.site.time_zone.clone())
                .strftime("%B %Y")
                .to_string()
            + "."
    );
    sign_out(&c).await;

    // The owner records the decision: expand to 400.
    sign_in(&c, &base, &lead, &lead_pw).await;
    let home = text_of(&c, "section.ai-use-cases").await;
    assert!(
        home.contains("over its monthly limit: 330.00 USD of 300.00 USD"),
        "{home}"
    );
    c.goto(&format!("{base}/ai/{id}")).await.unwrap();
    let month = period
        .start
        .to_zoned(app.state.site.time_zone.clone())
        .strftime("%Y-%m")
        .to_string();
    c.find(Locator::Css("form.review select[name=month]"))
        .await
        .unwrap()
        .select_by_value(&month)
        .await
        .unwrap();
    click(&c, "input[name=decision][value=expand]").await;
    set_value(&c, "input[name=new_limit]", "400").await;
    set_value(&c, "input[name=metric_value]", "4 minutes").await;
    set_value(&c, "input[name=comment]", "worth more tickets").await;
    click(&c, "form.review button").await;
    let notice = text_of(&c, ".notice").await;
    assert_eq!(notice, "Decision recorded: expand.");
    let history = text_of(&c, "table.reviews tbody").await;
    assert!(
        history.contains("expand to 400.00 USD")
            && history.contains("4 minutes")
            && history.contains("330.00 USD of 300.00 USD"),
        "{history}"
    );
    let limit: i64 =
        sqlx::query_scalar("SELECT monthly_limit_minor FROM ai_use_cases WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(limit, 40_000);
    close(c).await;
}
