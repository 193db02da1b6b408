//! Spend reports: rows against hand-computed values, roll-up, and the CSV carrying the same
//! rows as the page and the API.

use axum::http::StatusCode;
use serde_json::json;
use tranche::db::tree::{self as tree_db, NodeKind};
use tranche::domain::Share;
use tranche::ledger::{self, contracts};

use crate::support::{TestApp, tomorrow_at};

/// The test settings with the organisation's time zone `zone` (IANA), as a restart with
/// `TRANCHE_TIME_ZONE=zone` reads them (before [`ledger::zones::record`]).
fn site_in(zone: &str) -> tranche::config::Site {
    let time_zone = jiff::tz::TimeZone::get(zone).unwrap();
    tranche::config::Site {
        periods: tranche::domain::PeriodCalendar::new(time_zone.clone()),
        time_zone,
        time_zone_name: zone.into(),
        ..tranche::config::Site::for_tests()
    }
}

#[tokio::test]
async fn spend_rows_match_hand_computed_values_and_the_csv() {
    let app = TestApp::new().await;
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1", "2.00")
        .await
        .unwrap();
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "B200", "1.8", "2.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "h1", "H100", "8")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "b1", "B200", "8")
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    let g = tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "G",
        NodeKind::Group,
        Share::parse_percent("100").unwrap(),
    )
    .await
    .unwrap();
    let p1 = tree_db::create_node(
        &app.pool,
        &admin,
        g,
        "p1",
        NodeKind::Project,
        Share::parse_percent("50").unwrap(),
    )
    .await
    .unwrap();
    let p2 = tree_db::create_node(
        &app.pool,
        &admin,
        g,
        "p2",
        NodeKind::Project,
        Share::parse_percent("50").unwrap(),
    )
    .await
    .unwrap();
    tranche::db::users::create(&app.pool, None, "fin", "finance", None)
        .await
        .unwrap();
    let site = app.state.site.clone();
    let now = jiff::Timestamp::now();
    // p1: 4 H100 x 3 h x 1.0 x 2.00 = 24.00 (12 GPU-h); p2: 2 B200 x 2 h x 1.8 x 2.00 = 14.40 (4 GPU-h).
    for (project, model, gpus, hours) in [("p1", "H100", 4, 3), ("p2", "B200", 2, 2)] {
        let req = contracts::Request {
            project: project.into(),
            cluster: "c".into(),
            gpu_model: model.into(),
            gpus,
            start: tomorrow_at(8),
            end: tomorrow_at(8 + hours),
            expected_price_minor: None,
        };
        contracts::buy(&app.pool, &site, &admin, &req, now)
            .await
            .unwrap();
    }
    let h100: i64 = sqlx::query_scalar("SELECT id FROM gpu_models WHERE name = 'H100'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let b200: i64 = sqlx::query_scalar("SELECT id FROM gpu_models WHERE name = 'B200'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    // Usage is posted in the period of the contracts' windows (tomorrow may be next month).
    let when = tomorrow_at(8);
    let label = when
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%Y-%m")
        .to_string();
    let mut tx = app.pool.begin().await.unwrap();
    // p1 runs 2 allocated B200 GPU-hours: 2 x 1.8 x 2.00 = 7.20; p2 runs 1 free H100 GPU-hour.
    ledger::charge_usage(
        &app.pool,
        &mut tx,
        &site,
        when,
        p1,
        (cluster, b200),
        7200,
        true,
        None,
    )
    .await
    .unwrap();
    ledger::charge_usage(
        &app.pool,
        &mut tx,
        &site,
        when,
        p2,
        (cluster, h100),
        3600,
        false,
        None,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let token = app.token_for("fin").await;
    let (status, spend) = app
        .api(
            "GET",
            &format!("/api/v1/spend?node={g}&period={label}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{spend}");
    let rows = spend["rows"].as_array().unwrap();
    let row = |node: &str, model: &str| {
        rows.iter()
            .find(|r| r["node"] == node && r["gpu_model"] == model)
            .unwrap_or_else(|| panic!("no row {node} {model}"))
            .clone()
    };
    let g_all = row("G", "all");
    assert_eq!(
        (
            g_all["contract_minor"].as_i64(),
            g_all["run_minor"].as_i64(),
            g_all["spend_minor"].as_i64()
        ),
        (Some(3840), Some(720), Some(4560))
    );
    assert_eq!(
        (
            g_all["contract_gpu_hours"].as_f64(),
            g_all["run_gpu_hours"].as_f64(),
            g_all["free_gpu_hours"].as_f64()
        ),
        (Some(16.0), Some(2.0), Some(1.0))
    );
    let p1_all = row("p1", "all");
    assert_eq!(p1_all["spend_minor"], 3120);
    let p1_b200 = row("p1", "B200");
    assert_eq!(
        (
            p1_b200["run_minor"].as_i64(),
            p1_b200["contract_minor"].as_i64()
        ),
        (Some(720), Some(0))
    );
    let p2_h100 = row("p2", "H100");
    assert_eq!(p2_h100["free_gpu_hours"], 1.0);
    // G's budget is the two projects' period budgets (their entitlements): 100% of 8 H100 and
    // 8 B200 over the period, at 2.00 and 3.60 per GPU-hour.
    let hours = (ledger::Period::containing(when, &site).end.as_second()
        - ledger::Period::containing(when, &site).start.as_second())
        / 3600;
    assert_eq!(
        g_all["budget_minor"].as_i64().unwrap(),
        8 * hours * 200 + 8 * hours * 360
    );

    // The CSV carries exactly the API's rows.
    let mut c = app.client();
    let pw = {
        tranche::db::users::set_password(&app.pool, None, "fin", "finance-password-1")
            .await
            .unwrap();
        "finance-password-1"
    };
    c.login("fin", pw).await;
    let (status, csv_text, _) = c
        .get(&format!("/reports.csv?node={g}&period={label}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), rows.len());
    for (rec, api) in records.iter().zip(rows) {
        assert_eq!(&rec[2], api["node"].as_str().unwrap());
        assert_eq!(&rec[4], api["gpu_model"].as_str().unwrap());
        assert_eq!(
            rec[10].replace('.', "").parse::<i64>().unwrap(),
            api["spend_minor"].as_i64().unwrap()
        );
        // GPU-hours to the thousandth (3.6 GPU-seconds), as the API gives them.
        for (col, key) in [
            (6, "contract_gpu_hours"),
            (8, "run_gpu_hours"),
            (9, "free_gpu_hours"),
        ] {
            assert_eq!(
                rec[col].split('.').nth(1).map(str::len),
                Some(3),
                "{key}: {rec:?}"
            );
            let api_h = api[key].as_f64().unwrap();
            assert!(
                (rec[col].parse::<f64>().unwrap() - api_h).abs() <= 0.0005,
                "{key}: {rec:?} {api_h}"
            );
        }
    }
    // Researchers get no reports.
    tranche::db::users::create(&app.pool, None, "res", "researcher", None)
        .await
        .unwrap();
    let rt = app.token_for("res").await;
    let (status, _) = app.api("GET", "/api/v1/spend", Some(&rt), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, page, _) = c.get(&format!("/reports?node={g}")).await;
    assert!(page.contains("<svg"), "the page has its charts");
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_contract_purchase_counts_once_in_the_forecast_and_only_usage_is_a_rate() {
    let app = TestApp::new().await;
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1", "2.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "h1", "H100", "8")
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    let p = tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "p",
        NodeKind::Project,
        Share::parse_percent("100").unwrap(),
    )
    .await
    .unwrap();
    let site = app.state.site.clone();
    // The period of tomorrow's window, seen 3 hours after it began.
    let period = ledger::Period::containing(tomorrow_at(8), &site);
    let now = period
        .start
        .checked_add(jiff::SignedDuration::from_hours(3))
        .unwrap();
    // A one-off purchase: 4 H100 x 10 h x 2.00 = 80.00.
    let req = contracts::Request {
        project: "p".into(),
        cluster: "c".into(),
        gpu_model: "H100".into(),
        gpus: 4,
        start: tomorrow_at(8),
        end: tomorrow_at(18),
        expected_price_minor: None,
    };
    contracts::buy(&app.pool, &site, &admin, &req, now)
        .await
        .unwrap();
    // And usage: one allocated GPU-hour in the first 3 hours, 2.00.
    let h100: i64 = sqlx::query_scalar("SELECT id FROM gpu_models WHERE name = 'H100'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let mut tx = app.pool.begin().await.unwrap();
    ledger::charge_usage(
        &app.pool,
        &mut tx,
        &site,
        period
            .start
            .checked_add(jiff::SignedDuration::from_hours(2))
            .unwrap(),
        p,
        (cluster, h100),
        3600,
        true,
        None,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let filter = tranche::ledger::reports::Filter {
        period,
        node: p,
        cluster: None,
    };
    let rows = tranche::ledger::reports::rows(&app.pool, &site, &admin, &filter, now)
        .await
        .unwrap();
    let all = rows.iter().find(|r| r.gpu_model == "all").unwrap();
    assert_eq!(all.spend_minor, 8000 + 200);
    // 80.00 once, plus 2.00 per 3 hours over the whole period.
    let hours = (period.end.as_second() - period.start.as_second()) / 3600;
    assert_eq!(all.forecast_minor, Some(8000 + 200 * hours / 3));
    // The budget is the project's entitlement: 8 GPUs x the period x 2.00; the forecast is
    // far below half of it, so no forecast alert fires (the old rate said over 100%).
    let budget = 8 * hours * 200;
    assert_eq!(all.budget_minor, Some(budget));
    assert!((8000 + 200 * hours / 3) * 2 < budget);
    let fired = tranche::ledger::alerts::check(&app.pool, &site, now)
        .await
        .unwrap();
    assert!(fired.is_empty(), "{fired:?}");
}

/// A site that changes `TRANCHE_TIME_ZONE` mid-month and restarts keeps the month's period
/// (no second grant); the new zone's months begin where the old period ends.
#[tokio::test]
async fn a_time_zone_change_takes_effect_at_the_end_of_the_period() {
    let (app, _) = TestApp::with_demo().await;
    let mid_month: jiff::Timestamp = "2026-12-10T12:00:00Z".parse().unwrap();
    let mut site = tranche::config::Site::for_tests();
    ledger::zones::record(&app.pool, &mut site, mid_month)
        .await
        .unwrap();
    let granted = ledger::roll_over(&app.pool, mid_month, &site)
        .await
        .unwrap();
    assert!(granted.granted > 0);
    let accounts = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM ledger_accounts WHERE kind = 'project_budget'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let before = accounts().await;
    let december = ledger::Period::containing(mid_month, &site);
    assert_eq!(december.end.to_string(), "2027-01-01T00:00:00Z");

    // Restart in Madrid (UTC+1 in winter): the month under way keeps its UTC period.
    let mut madrid = site_in("Europe/Madrid");
    ledger::zones::record(&app.pool, &mut madrid, mid_month)
        .await
        .unwrap();
    assert_eq!(ledger::Period::containing(mid_month, &madrid), december);
    let again = ledger::roll_over(&app.pool, mid_month, &madrid)
        .await
        .unwrap();
    assert_eq!(again.granted, 0, "no second grant for December");
    assert_eq!(accounts().await, before);
    // January follows Madrid from where December ended: to 31 January 23:00 UTC.
    let january = ledger::Period::containing("2027-01-15T00:00:00Z".parse().unwrap(), &madrid);
    assert_eq!(january.start, december.end);
    assert_eq!(january.end.to_string(), "2027-01-31T23:00:00Z");
    let february = ledger::Period::containing(january.end, &madrid);
    assert_eq!(february.end.to_string(), "2027-02-28T23:00:00Z");

    // Back to UTC before the change took effect: nothing changes at all.
    let mut utc = tranche::config::Site::for_tests();
    ledger::zones::record(&app.pool, &mut utc, mid_month)
        .await
        .unwrap();
    let zones: i64 = sqlx::query_scalar("SELECT count(*) FROM period_zones")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(zones, 1, "the pending change is dropped");
    assert_eq!(
        ledger::Period::containing("2027-01-15T00:00:00Z".parse().unwrap(), &utc).end,
        "2027-02-01T00:00:00Z".parse().unwrap()
    );
}

/// A budget of next month opened early (a contract bought ahead opens and grants it) follows
/// a change of shares made before the month begins, as the roll-over at its start would have
/// granted it; before, it kept the old share's budget for the whole month.
#[tokio::test]
async fn a_budget_opened_early_follows_a_change_of_shares() {
    let (app, _) = TestApp::with_demo().await;
    let site = &app.state.site;
    let project = app.node_id("fm-tokenizer").await;
    let (parent, share_bp): (i64, i32) =
        sqlx::query_as("SELECT parent_id, share_bp FROM tree_nodes WHERE id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    // A window on the fourth day of next month (UTC, the test site's zone), 10:00 to 11:00.
    let next = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .first_of_month()
        .checked_add(jiff::Span::new().months(1).days(3))
        .unwrap();
    let at = |h: i8| {
        next.at(h, 0, 0, 0)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
    };
    let lead = app.token_for("demo-lead").await;
    let body = serde_json::json!({"project": "fm-tokenizer", "cluster": "h100-east",
        "gpu_model": "H100", "gpus": 1, "start": at(10).to_string(), "end": at(11).to_string()});
    let (status, bought) = app
        .api("POST", "/api/v1/contracts", Some(&lead), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{bought}");
    let early = || async {
        sqlx::query_as::<_, (Option<i64>, i64)>(
            "SELECT budget_minor, balance_minor FROM ledger_accounts \
             WHERE kind = 'project_budget' AND project_id = $1 AND period_start > now()",
        )
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let (before, balance_before) = early().await;
    let before = before.unwrap();
    assert!(before > 0);
    let now = jiff::Timestamp::now();
    let this_month = ledger::budget_and_balance(&app.pool, project, now, site)
        .await
        .unwrap();
    // Half the share, in this month: next month's budget halves (entitlements are linear in
    // the share; a minor unit of rounding either way).
    let admin = app.token_for("demo-admin").await;
    let half = f64::from(share_bp) / 200.0;
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/nodes/{parent}/shares"),
            Some(&admin),
            Some(serde_json::json!({"shares": [{"node": project, "share": half}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (after, balance_after) = early().await;
    let after = after.unwrap();
    assert!((after - before / 2).abs() <= 1, "{before} halved: {after}");
    assert_eq!(
        balance_before - balance_after,
        before - after,
        "the difference went back"
    );
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
    // This month's budget stays as granted (share changes apply from the next period).
    assert_eq!(
        ledger::budget_and_balance(&app.pool, project, now, site)
            .await
            .unwrap(),
        this_month
    );
    // The roll-over leaves it as it is now.
    ledger::roll_over(&app.pool, jiff::Timestamp::now(), site)
        .await
        .unwrap();
    assert_eq!(early().await.0, Some(after));
}

/// `tranche demo` (any command but `serve`) run from a shell without the server's
/// `TRANCHE_TIME_ZONE` follows the recorded zones and changes none: before, it recorded its
/// own zone (UTC) as a change from the end of the month and dropped a change pending.
#[tokio::test]
async fn a_command_other_than_serve_follows_the_recorded_zones() {
    let (app, _) = TestApp::with_admin().await;
    let now: jiff::Timestamp = "2026-12-10T12:00:00Z".parse().unwrap();
    let zones = || async {
        sqlx::query_as::<_, (time::OffsetDateTime, String)>(
            "SELECT effective_from, time_zone FROM period_zones ORDER BY effective_from",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap()
    };
    // On an empty table the first command records its zone, as a first start does.
    let mut berlin = site_in("Europe/Berlin");
    ledger::zones::follow(&app.pool, &mut berlin, now)
        .await
        .unwrap();
    let recorded = zones().await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].1, "Europe/Berlin");
    let mut utc = tranche::config::Site::for_tests();
    ledger::zones::follow(&app.pool, &mut utc, now)
        .await
        .unwrap();
    assert_eq!(zones().await, recorded);
    assert_eq!(utc.time_zone_name, "Europe/Berlin");
    // December in Berlin (UTC+1) begins at 23:00 UTC on 30 November.
    let december = ledger::Period::containing(now, &utc);
    assert_eq!(december.start.to_string(), "2026-11-30T23:00:00Z");
    // The server restarted in New York: a change from the end of December, kept.
    let mut new_york = site_in("America/New_York");
    ledger::zones::record(&app.pool, &mut new_york, now)
        .await
        .unwrap();
    let pending = zones().await;
    assert_eq!(pending.len(), 2);
    let mut utc = tranche::config::Site::for_tests();
    ledger::zones::follow(&app.pool, &mut utc, now)
        .await
        .unwrap();
    assert_eq!(zones().await, pending);
    assert_eq!(
        utc.time_zone_name, "Europe/Berlin",
        "the zone in effect now"
    );
    let january = ledger::Period::containing("2027-01-15T00:00:00Z".parse().unwrap(), &utc);
    // January in New York (UTC-5) from where December ended.
    assert_eq!(january.start, december.end);
    assert_eq!(january.end.to_string(), "2027-02-01T05:00:00Z");
}

/// After `TRANCHE_TIME_ZONE` changes mid-period, the tree's API names the zone the current
/// period still follows (its months are the old zone's until the period ends), as the tree
/// page does; before, it named the newly configured zone beside the old zone's period.
#[tokio::test]
async fn the_tree_api_names_the_zone_the_current_period_follows() {
    let (app, _) = TestApp::with_admin().await;
    let now = jiff::Timestamp::now();
    let mut utc = tranche::config::Site::for_tests();
    ledger::zones::record(&app.pool, &mut utc, now)
        .await
        .unwrap();
    let mut madrid = site_in("Europe/Madrid");
    ledger::zones::record(&app.pool, &mut madrid, now)
        .await
        .unwrap();
    let router = tranche::web::app(tranche::state::AppState::new(app.pool.clone(), madrid));
    let token = app.token_for("admin").await;
    let get = |token: String| {
        axum::http::Request::builder()
            .uri("/api/v1/tree")
            .header("authorization", format!("Bearer {token}"))
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let (status, text, _) = crate::support::send(&router, get(token.clone())).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let tree: serde_json::Value = serde_json::from_str(&text).unwrap();
    let period = ledger::Period::containing(now, &utc);
    assert_eq!(tree["period"]["time_zone"], "UTC", "{}", tree["period"]);
    assert_eq!(tree["period"]["end"], period.end.to_string());
    // Where nothing is pending the configured zone is the period's.
    let (_, text, _) = app.send(get(token)).await;
    let tree: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(tree["period"]["time_zone"], "UTC");
}

/// The project page's days follow the zone the period follows: after a change to a zone west
/// of UTC, the current (UTC) period's first day is still its first of the month, not the
/// day before in the new zone.
#[tokio::test]
async fn a_projects_days_follow_the_zone_of_its_period() {
    let (app, _) = TestApp::with_admin().await;
    let admin = app.admin().await;
    let root = app.node_id("Organisation").await;
    tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "p",
        NodeKind::Project,
        Share::parse_percent("100").unwrap(),
    )
    .await
    .unwrap();
    let now = jiff::Timestamp::now();
    let mut utc = tranche::config::Site::for_tests();
    ledger::zones::record(&app.pool, &mut utc, now)
        .await
        .unwrap();
    let mut west = site_in("America/Los_Angeles");
    ledger::zones::record(&app.pool, &mut west, now)
        .await
        .unwrap();
    let state = tranche::state::AppState::new(app.pool.clone(), west);
    let tree = state.tree().await.unwrap();
    let project = tree.nodes.iter().find(|n| n.name == "p").unwrap();
    let period = ledger::Period::containing(now, &utc);
    let owed = tranche::web::project::owed_received(&state, &tree, project, period, now)
        .await
        .unwrap();
    let first = period.start.to_zoned(jiff::tz::TimeZone::UTC);
    assert_eq!(owed.days[0].0, first.strftime("%m-%d").to_string());
    let today = now.to_zoned(jiff::tz::TimeZone::UTC);
    assert_eq!(
        owed.days.last().unwrap().0,
        today.strftime("%m-%d").to_string()
    );
    assert_eq!(owed.days.len(), usize::from(today.day() as u8));
}

/// The demo grants its past month's budgets late (while loading its history): a project on the
/// default budget is granted that month's entitlement as its report shows it. Before, the
/// grant counted the demo's `local` nodes, declared today, which the ended month's report
/// leaves out (nodes declared after a period's end), so last month's budget exceeded its
/// entitlement for every such project.
#[tokio::test]
async fn the_demos_past_budgets_are_their_months_entitlements() {
    let (app, _) = TestApp::with_demo().await;
    let site = &app.state.site;
    // The `local` nodes, declared today by `tranche demo`.
    tranche::demo::declare_local_nodes(&app.pool, &["today-1".into(), "today-2".into()])
        .await
        .unwrap();
    tranche::demo::load_history(&app.pool, site)
        .await
        .unwrap()
        .expect("the history loads once");
    let now = jiff::Timestamp::now();
    let this = ledger::Period::containing(now, site);
    let last = ledger::Period::containing(this.start - jiff::SignedDuration::from_secs(1), site);
    let finance = app.token_for("demo-finance").await;
    let (status, report) = app
        .api(
            "GET",
            &format!("/api/v1/spend?period={}", last.label(site)),
            Some(&finance),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    // Projects on the default budget that were granted one for that month.
    let default: Vec<i64> = sqlx::query_scalar(
        "SELECT p.node_id FROM projects p WHERE p.period_budget_minor IS NULL AND p.money_cap_minor IS NULL \
         AND EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.kind = 'project_budget' AND a.project_id = p.node_id AND a.period_start = $1)",
    )
    .bind(ledger::to_time(last.start))
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let rows: Vec<&serde_json::Value> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["gpu_model"] == "all" && default.contains(&r["node_id"].as_i64().unwrap()))
        .collect();
    assert!(!rows.is_empty(), "{report}");
    for r in rows {
        assert_eq!(r["budget_minor"], r["entitlement_minor"], "{r}");
    }
}

/// Archiving a project with runs under way is refused (409 on the page and the API, naming
/// both counts); once they ended it archives, and what it booked stays in last period's
/// report: its own row (live then, with its entitlement: the period ended before the archive)
/// and every total above it, on the page, the API and the CSV. Before, the archive went
/// through and the Organisation's total lost the spend.
#[tokio::test]
async fn an_archived_project_keeps_its_spend_and_is_not_archived_while_runs_are_under_way() {
    let (app, pw) = TestApp::with_admin().await;
    let admin = app.admin().await;
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1", "2.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "h1", "H100", "8")
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    let g = tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "G",
        NodeKind::Group,
        Share::parse_percent("100").unwrap(),
    )
    .await
    .unwrap();
    let mut projects = Vec::new();
    for name in ["p1", "p2"] {
        projects.push(
            tree_db::create_node(
                &app.pool,
                &admin,
                g,
                name,
                NodeKind::Project,
                Share::parse_percent("50").unwrap(),
            )
            .await
            .unwrap(),
        );
    }
    let (p1, p2) = (projects[0], projects[1]);
    // The tree has stood like this since before last period.
    sqlx::query("DELETE FROM tree_snapshots")
        .execute(&app.pool)
        .await
        .unwrap();
    let h100: i64 = sqlx::query_scalar("SELECT id FROM gpu_models WHERE name = 'H100'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    // Last period: p1 used 2 allocated H100 GPU-hours (2 x 2.00 = 4.00), p2 one (2.00).
    let site = app.state.site.clone();
    let now = jiff::Timestamp::now();
    let this = ledger::Period::containing(now, &site);
    let last = ledger::Period::containing(
        this.start
            .checked_sub(jiff::SignedDuration::from_hours(24))
            .unwrap(),
        &site,
    );
    let label = last
        .start
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%Y-%m")
        .to_string();
    let used_at = last
        .start
        .checked_add(jiff::SignedDuration::from_hours(30))
        .unwrap();
    let mut tx = app.pool.begin().await.unwrap();
    for (project, secs) in [(p1, 7200), (p2, 3600)] {
        ledger::charge_usage_at(
            &app.pool,
            &mut tx,
            &site,
            used_at,
            project,
            (cluster, h100),
            secs,
            true,
            None,
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    // Two runs of p1: one running, one waiting.
    let token = app.token_for("admin").await;
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (status, body) = app
            .api(
                "POST",
                "/api/v1/runs",
                Some(&token),
                Some(
                    serde_json::json!({"project": "p1", "cluster": "c", "gpu_model": "H100",
                    "gpus": 1, "min_runtime_s": 0, "time_limit_s": 3600, "priority": 0,
                    "resumable": false, "command": "sleep 60"}),
                ),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        runs.push(body["id"].as_i64().unwrap());
    }
    sqlx::query("UPDATE runs SET state = 'running', started_at = now(), attempt = 1 WHERE id = $1")
        .bind(runs[0])
        .execute(&app.pool)
        .await
        .unwrap();
    let (status, body) = app
        .api(
            "PATCH",
            &format!("/api/v1/nodes/{p1}"),
            Some(&token),
            Some(serde_json::json!({"archived": true})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "active_runs");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("1 running, 1 waiting"), "{message}");
    let mut c = app.client();
    c.login("admin", &pw).await;
    let (status, page, _) = c.post(&format!("/tree/nodes/{p1}/archive"), &[]).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(page.contains("1 running, 1 waiting"), "{page}");
    let archived = || async {
        sqlx::query_scalar::<_, bool>("SELECT archived FROM tree_nodes WHERE id = $1")
            .bind(p1)
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    assert!(!archived().await, "nothing was archived");
    assert_eq!(app.audit_count("node.archive").await, 0);

    // Once both ended, it archives.
    sqlx::query("UPDATE runs SET state = 'cancelled', ended_at = now() WHERE id = ANY($1)")
        .bind(&runs)
        .execute(&app.pool)
        .await
        .unwrap();
    let (status, _, _) = c.post(&format!("/tree/nodes/{p1}/archive"), &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(archived().await);

    // A submission whose checks read p1 before the archive and whose insert comes after it
    // inserts nothing (runs::batch::Outcome::ProjectArchived), and no other row goes with it.
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let row = tranche::runs::batch::NewRow {
        project_id: p1,
        cluster_id: cluster,
        model_id: h100,
        submitted_by: admin.id,
        gpus: 1,
        min_runtime_s: 0,
        time_limit_s: 60,
        priority: 0,
        resumable: false,
        command: "true".into(),
        workdir: None,
        env: serde_json::json!({}),
        state: "queued",
        message: tranche::i18n::said::Said::new("event-submitted").arg("by", "admin"),
        key: None,
        fingerprint: None,
        secret_env: None,
        secret_env_names: Vec::new(),
    };
    let outcome = app.state.submissions.insert(&app.pool, row).await.unwrap();
    assert_eq!(outcome, tranche::runs::batch::Outcome::ProjectArchived);
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(after, before);

    // Last period's report still has p1's 4.00: its row and the totals of G and Organisation.
    let (status, spend) = app
        .api(
            "GET",
            &format!("/api/v1/spend?node={root}&period={label}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{spend}");
    let rows = spend["rows"].as_array().unwrap();
    let total = |node: &str| {
        rows.iter()
            .find(|r| r["node"] == node && r["gpu_model"] == "all")
            .unwrap_or_else(|| panic!("no total row for {node}: {spend}"))
            .clone()
    };
    assert_eq!(total("Organisation")["spend_minor"], 600);
    assert_eq!(total("G")["spend_minor"], 600);
    assert_eq!(total("p1")["spend_minor"], 400);
    // Archived after last period ended: then it was live, with its half of G's entitlement.
    assert_eq!(total("p1")["archived"], false);
    assert_eq!(
        total("p1")["entitlement_minor"],
        total("p2")["entitlement_minor"]
    );
    assert_eq!(total("p2")["archived"], false);
    let order: Vec<&str> = rows
        .iter()
        .filter(|r| r["gpu_model"] == "all")
        .map(|r| r["node"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["Organisation", "G", "p1", "p2"]);
    assert_eq!(total("p1")["depth"], 2);
    let (status, csv_text, _) = c
        .get(&format!("/reports.csv?node={root}&period={label}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let totals: Vec<(String, String)> = reader
        .records()
        .map(Result::unwrap)
        .filter(|r| &r[4] == "all")
        .map(|r| (r[2].to_string(), r[10].to_string()))
        .collect();
    assert_eq!(
        totals,
        [
            ("Organisation".to_string(), "6.00".to_string()),
            ("G".to_string(), "6.00".to_string()),
            ("p1".to_string(), "4.00".to_string()),
            ("p2".to_string(), "2.00".to_string()),
        ]
    );
    let (status, page, _) = c.get(&format!("/reports?node={root}&period={label}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-node=\"p1\""), "p1 has its rows");
    assert!(!page.contains(">archived<"), "live last period");
    // This period p1 booked only its budget grant: it stays in the budget totals (the ledger's
    // sum of both grants), with no spend; next period it is gone.
    let (_, spend) = app
        .api(
            "GET",
            &format!("/api/v1/spend?node={root}"),
            Some(&token),
            None,
        )
        .await;
    let rows = spend["rows"].as_array().unwrap();
    let now_total = |node: &str| {
        rows.iter()
            .find(|r| r["node"] == node && r["gpu_model"] == "all")
            .unwrap_or_else(|| panic!("no total row for {node}: {spend}"))
            .clone()
    };
    let granted: i64 = sqlx::query_scalar(
        "SELECT sum(p.amount_minor)::bigint FROM ledger_postings p WHERE p.kind = 'grant' AND p.period_start = $1",
    )
    .bind(ledger::to_time(this.start))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(now_total("Organisation")["budget_minor"], granted);
    assert_eq!(now_total("p1")["spend_minor"], 0);
    assert_eq!(now_total("p1")["archived"], true);
    let (_, spend) = app
        .api(
            "GET",
            &format!(
                "/api/v1/spend?node={root}&period={}",
                this.end.to_zoned(jiff::tz::TimeZone::UTC).strftime("%Y-%m")
            ),
            Some(&token),
            None,
        )
        .await;
    assert!(
        spend["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["node"] != "p1"),
        "{spend}"
    );
}

/// After `TRANCHE_TIME_ZONE` changed from UTC to Los Angeles, the month under way still follows
/// UTC and every surface names periods by their own month: the current period is this UTC
/// month in the API, the report's month list, the CSV and `?period=`; the last one is last
/// month; the next one (Los Angeles' first, starting on the last evening of this month there)
/// is next month, on the project page too; the tree page names UTC as the home page does.
/// Before, each period was named after its start in Los Angeles: one month early.
#[tokio::test]
async fn periods_keep_their_own_month_after_a_time_zone_change() {
    let now = jiff::Timestamp::now();
    let utc = jiff::tz::TimeZone::UTC;
    let la = jiff::tz::TimeZone::get("America/Los_Angeles").unwrap();
    let (_, change) = tranche::domain::budget_period(now, &utc);
    let change = change.timestamp();
    let mut site = tranche::config::Site {
        time_zone: la.clone(),
        time_zone_name: "America/Los_Angeles".into(),
        ..tranche::config::Site::for_tests()
    };
    site.periods = tranche::domain::PeriodCalendar::new(utc.clone()).then(change, la.clone());
    let app = TestApp::with_site(site.clone()).await;
    let pw = tranche::db::users::first_run(&app.pool)
        .await
        .unwrap()
        .unwrap();
    let admin = app.admin().await;
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1", "2.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "h1", "H100", "8")
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    let p = tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "p",
        NodeKind::Project,
        Share::parse_percent("100").unwrap(),
    )
    .await
    .unwrap();
    // Month names computed in UTC, where this period began.
    let month = |t: jiff::Timestamp| t.to_zoned(utc.clone()).date().first_of_month();
    let this_month = month(now);
    let last_month = this_month.checked_sub(jiff::Span::new().months(1)).unwrap();
    let next_month = this_month.checked_add(jiff::Span::new().months(1)).unwrap();
    let ym = |d: jiff::civil::Date| d.strftime("%Y-%m").to_string();
    // The next period's budget opened early (as a contract in it would).
    let next = ledger::Period::containing(change, &site);
    assert_eq!(next.start, change);
    let mut conn = app.pool.acquire().await.unwrap();
    ledger::ensure_budget_account(
        &mut conn,
        p,
        next,
        tranche::domain::Money(1234),
        tranche::domain::Money(1234),
    )
    .await
    .unwrap();
    drop(conn);
    assert_eq!(next.label(&site), ym(next_month));
    assert_eq!(
        ledger::Period::containing(now, &site).label(&site),
        ym(this_month)
    );

    let token = app.token_for("admin").await;
    for (query, want) in [
        (String::new(), ym(this_month)),
        (format!("&period={}", ym(this_month)), ym(this_month)),
        (format!("&period={}", ym(last_month)), ym(last_month)),
        (format!("&period={}", ym(next_month)), ym(next_month)),
    ] {
        let (status, spend) = app
            .api(
                "GET",
                &format!("/api/v1/spend?node={root}{query}"),
                Some(&token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{spend}");
        assert_eq!(spend["period"], want.as_str(), "{query}");
        for row in spend["rows"].as_array().unwrap() {
            assert_eq!(row["period"], want.as_str(), "{query}");
        }
    }
    // The last period is a whole UTC month; the next one ends with Los Angeles' next month.
    let (_, spend) = app
        .api(
            "GET",
            &format!("/api/v1/spend?node={root}&period={}", ym(next_month)),
            Some(&token),
            None,
        )
        .await;
    let hours = spend["rows"][0]["entitlement_gpu_hours"].as_f64().unwrap() / 8.0;
    let next_end = next_month
        .checked_add(jiff::Span::new().months(1))
        .unwrap()
        .to_zoned(la.clone())
        .unwrap()
        .timestamp();
    assert_eq!(
        hours as i64,
        (next_end.as_second() - change.as_second()) / 3600
    );

    let mut c = app.client();
    c.login("admin", &pw).await;
    let (status, page, _) = c.get("/reports").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains(&format!(
            "<option value=\"{0}\" selected>{0}</option>",
            ym(this_month)
        )),
        "this month is listed and chosen"
    );
    assert!(page.contains(&format!(
        "<option value=\"{0}\">{0}</option>",
        ym(last_month)
    )));
    for (query, want) in [
        (String::new(), ym(this_month)),
        (format!("?period={}", ym(last_month)), ym(last_month)),
    ] {
        let (status, csv_text, _) = c.get(&format!("/reports.csv{query}")).await;
        assert_eq!(status, StatusCode::OK);
        let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
        let periods: Vec<String> = reader
            .records()
            .map(|r| r.unwrap()[0].to_string())
            .collect();
        assert!(!periods.is_empty());
        assert!(periods.iter().all(|x| *x == want), "{query}: {periods:?}");
    }
    let (_, page, _) = c.get(&format!("/projects/{p}")).await;
    let later = format!("Balance {}", next_month.strftime("%B %Y"));
    assert!(page.contains(&later), "{later} in the project page");
    // The amount follows each viewer's language, whichever viewer filled the page's cache.
    let amount = |page: &str| {
        let at = page
            .find("class=\"balance-later\">")
            .expect("a later balance")
            + 22;
        page[at..page[at..].find(" <span").unwrap() + at].to_string()
    };
    let english = amount(&page);
    assert!(english.contains('.'), "{english}");
    c.post("/account/language", &[("lang", "es")]).await;
    let (_, page, _) = c.get(&format!("/projects/{p}")).await;
    let swapped: String = english
        .chars()
        .map(|ch| match ch {
            '.' => ',',
            ',' => '.',
            other => other,
        })
        .collect();
    assert_eq!(amount(&page), swapped);
    c.post("/account/language", &[("lang", "en")]).await;
    // The tree and home pages name the zone the current period follows: UTC until it ends.
    for path in ["/tree", "/"] {
        let (_, page, _) = c.get(path).await;
        assert!(page.contains("UTC"), "{path}");
        assert!(!page.contains("America/Los_Angeles"), "{path}");
    }
}

/// The spend report's rows for `node` and the period named `label`, read as the holder of
/// `token`.
async fn spend_rows(app: &TestApp, token: &str, node: i64, label: &str) -> Vec<serde_json::Value> {
    let (status, spend) = app
        .api(
            "GET",
            &format!("/api/v1/spend?node={node}&period={label}"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{spend}");
    assert_eq!(spend["period"], label);
    spend["rows"].as_array().unwrap().clone()
}

/// Creates tree node `name` under `parent` at `percent` of it, as `admin`; its id.
async fn node(
    app: &TestApp,
    admin: &tranche::auth::Account,
    parent: i64,
    name: &str,
    kind: NodeKind,
    percent: &str,
) -> i64 {
    tree_db::create_node(
        &app.pool,
        admin,
        parent,
        name,
        kind,
        Share::parse_percent(percent).unwrap(),
    )
    .await
    .unwrap()
}

/// The entitlement (minor units) of `node`'s row for `model` (`all` for its total); `None`
/// when the report has no such row.
fn entitlement_of(rows: &[serde_json::Value], node: &str, model: &str) -> Option<i64> {
    rows.iter()
        .find(|r| r["node"] == node && r["gpu_model"] == model)
        .map(|r| r["entitlement_minor"].as_i64().unwrap())
}

/// A period's entitlements are those of its own capacity and prices. A past period read once,
/// then read again after a model's price and weight changed and a cluster with a new model was
/// added, is unchanged (the API's rows and the CSV); a past period read for the first time
/// after the changes has the price of its end (from the audit log) and no row for the new
/// model; a period that ended before the node was declared has no entitlement; two readers
/// recording the same period at once both succeed and it is recorded once; the current period
/// follows the new price, weight and hardware. Before, every past period was recomputed from
/// today's nodes, weights and prices (the tester's November H100 entitlement doubled after a
/// price change, and a cluster added today appeared in 2025).
#[tokio::test]
async fn ended_periods_keep_their_capacity_and_prices_while_the_current_one_follows_changes() {
    let app = TestApp::new().await;
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    let h100 = tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1", "2.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "h1", "H100", "8")
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    tree_db::create_node(
        &app.pool,
        &admin,
        root,
        "p",
        NodeKind::Project,
        Share::parse_percent("100").unwrap(),
    )
    .await
    .unwrap();
    // The tree has stood like this since before the periods read (its snapshots from now on).
    sqlx::query("DELETE FROM tree_snapshots")
        .execute(&app.pool)
        .await
        .unwrap();
    tranche::db::users::create(&app.pool, None, "fin", "finance", None)
        .await
        .unwrap();
    let fin = app.token_for("fin").await;
    let admin_token = app.token_for("admin").await;
    let site = app.state.site.clone();
    let now = jiff::Timestamp::now();
    let before = |p: ledger::Period| {
        ledger::Period::containing(
            p.start
                .checked_sub(jiff::SignedDuration::from_secs(1))
                .unwrap(),
            &site,
        )
    };
    let current = ledger::Period::containing(now, &site);
    let last = before(current);
    let two_ago = before(last);
    let three_ago = before(two_ago);
    // The node has been there since a day into the period two months ago.
    let declared = two_ago
        .start
        .checked_add(jiff::SignedDuration::from_hours(24))
        .unwrap();
    sqlx::query("UPDATE nodes SET created_at = $1 WHERE name = 'h1'")
        .bind(ledger::to_time(declared))
        .execute(&app.pool)
        .await
        .unwrap();
    // 100% of `gpus` GPUs over the period, at `weight_milli` thousandths and `price` minor
    // units per weighted GPU-hour (every UTC month is whole hours).
    let value = |p: ledger::Period, gpus: i64, weight_milli: i64, price: i64| {
        let hours = (p.end.as_second() - p.start.as_second()) / 3600;
        gpus * hours * weight_milli * price / 1000
    };

    let last_label = last.label(&site);
    let last_before = spend_rows(&app, &fin, root, &last_label).await;
    assert_eq!(
        entitlement_of(&last_before, "p", "H100"),
        Some(value(last, 8, 1000, 200))
    );

    // Today: H100 at weight 1.5 and 5.00, and a new cluster of 8 B300 at weight 2 and 3.00.
    let (status, answer) = app
        .api(
            "PATCH",
            &format!("/api/v1/gpu-models/{h100}"),
            Some(&admin_token),
            Some(
                serde_json::json!({"billing_weight_milli": 1500, "price_per_gpu_hour_minor": 500}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "B300", "2", "3.00")
        .await
        .unwrap();
    let d = tranche::db::inventory::create_cluster(&app.pool, &admin, "d")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, d, "b1", "B300", "8")
        .await
        .unwrap();

    // The period read before the changes is as it was, row for row.
    let last_after = spend_rows(&app, &fin, root, &last_label).await;
    assert_eq!(last_after, last_before);
    assert_eq!(entitlement_of(&last_after, "p", "B300"), None);

    // Two months ago, first read now, by two readers at once: the price of its end, no B300.
    let two_label = two_ago.label(&site);
    let (a, b) = tokio::join!(
        spend_rows(&app, &fin, root, &two_label),
        spend_rows(&app, &fin, root, &two_label)
    );
    assert_eq!(a, b);
    assert_eq!(
        entitlement_of(&a, "p", "H100"),
        Some(value(two_ago, 8, 1000, 200))
    );
    assert_eq!(entitlement_of(&a, "p", "B300"), None);
    let recorded: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM period_capacity_records WHERE period_start = $1), \
                (SELECT count(*) FROM period_capacity WHERE period_start = $1)",
    )
    .bind(ledger::to_time(two_ago.start))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(recorded, (1, 1));

    // Three months ago no node was declared yet: no model rows, no entitlement.
    let three = spend_rows(&app, &fin, root, &three_ago.label(&site)).await;
    assert_eq!(entitlement_of(&three, "p", "all"), Some(0));
    assert_eq!(entitlement_of(&three, "p", "H100"), None);
    assert_eq!(entitlement_of(&three, "p", "B300"), None);

    // The current period follows today's prices and hardware.
    let cur = spend_rows(&app, &fin, root, &current.label(&site)).await;
    let (h, b) = (value(current, 8, 1500, 500), value(current, 8, 2000, 300));
    assert_eq!(entitlement_of(&cur, "p", "H100"), Some(h));
    assert_eq!(entitlement_of(&cur, "p", "B300"), Some(b));
    assert_eq!(entitlement_of(&cur, "p", "all"), Some(h + b));

    // The CSV of the past period carries the recorded figure too.
    tranche::db::users::set_password(&app.pool, None, "fin", "finance-password-1")
        .await
        .unwrap();
    let mut c = app.client();
    c.login("fin", "finance-password-1").await;
    let (status, csv_text, _) = c
        .get(&format!("/reports.csv?node={root}&period={last_label}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let want = value(last, 8, 1000, 200);
    let want = format!("{}.{:02}", want / 100, want % 100);
    let h100_row = reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[2] == "p" && &r[4] == "H100")
        .expect("p's H100 row");
    assert_eq!(&h100_row[12], want.as_str());
    assert!(
        !csv_text.contains("B300"),
        "no B300 row in {last_label}: {csv_text}"
    );
}

/// Every column of a subtree's row is the sum of its children's rows, the forecast too: it is
/// each project's forecast (as its alerts compute it) summed, not the subtree's total
/// extrapolated and rounded once, which read a few minor units apart (found by a new-user
/// check: the Organisation's forecast 238,506,294 against its children's 238,506,293).
#[tokio::test]
async fn a_subtrees_forecast_is_the_sum_of_its_childrens() {
    let (app, _) = TestApp::with_demo().await;
    let site = &app.state.site;
    tranche::demo::load_history(&app.pool, site)
        .await
        .unwrap()
        .expect("the history loads once");
    let finance = app.token_for("demo-finance").await;
    let (status, report) = app.api("GET", "/api/v1/spend", Some(&finance), None).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let rows: Vec<&serde_json::Value> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["gpu_model"] == "all")
        .collect();
    let mut checked = 0;
    for (i, parent) in rows.iter().enumerate() {
        let depth = parent["depth"].as_i64().unwrap();
        let children: Vec<&&serde_json::Value> = rows[i + 1..]
            .iter()
            .take_while(|r| r["depth"].as_i64().unwrap() > depth)
            .filter(|r| r["depth"].as_i64().unwrap() == depth + 1)
            .collect();
        if children.is_empty() {
            continue;
        }
        for column in [
            "spend_minor",
            "run_minor",
            "contract_minor",
            "forecast_minor",
        ] {
            let sum: i64 = children.iter().map(|c| c[column].as_i64().unwrap()).sum();
            assert_eq!(
                parent[column].as_i64().unwrap(),
                sum,
                "{column} of {}",
                parent["node"]
            );
        }
        if parent["forecast_minor"].as_i64().unwrap() > 0 && children.len() > 1 {
            checked += 1;
        }
    }
    assert!(checked > 0, "no subtree with a forecast: {report}");
}

/// A project created in the middle of a period is granted at most what its group has left of
/// its entitlement's value after its siblings' budgets, which stay as they were until the
/// period ends: the children's budgets never sum to more than the parent's (found by a new-user
/// check: a share lowered for next period plus a new project gave Pretraining a budget of
/// 52,811,352 against an entitlement of 48,010,320), whether the roll-over or a submission
/// opens its budget.
#[tokio::test]
async fn a_project_created_mid_period_is_granted_within_its_groups_headroom() {
    let (app, _) = TestApp::with_demo().await;
    let site = &app.state.site;
    let now = jiff::Timestamp::now();
    ledger::roll_over(&app.pool, now, site).await.unwrap();
    let admin = app.token_for("demo-admin").await;
    let pretraining = app.node_id("Pretraining").await;
    let long_context = app.node_id("fm-long-context").await;
    // Lower a sibling's share (its budget stays until the period ends), then add a project.
    let (status, answer) = app
        .api(
            "PUT",
            &format!("/api/v1/nodes/{pretraining}/shares"),
            Some(&admin),
            Some(json!({"shares": [{"node": long_context, "share": "5"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/nodes",
            Some(&admin),
            Some(
                json!({"name": "fm-new", "parent": pretraining, "share": "10", "kind": "project"}),
            ),
        )
        .await;
    assert!(status.is_success(), "{answer}");
    // Opened first by what a submission does (before the minute's roll-over), which grants it
    // the same (found by a check: a submission within the minute got the whole entitlement).
    {
        let new = app.node_id("fm-new").await;
        let mut tx = app.pool.begin().await.unwrap();
        ledger::current_account(&app.pool, &mut tx, new, now, site)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    ledger::roll_over(&app.pool, now, site).await.unwrap();
    let finance = app.token_for("demo-finance").await;
    let period = ledger::Period::containing(now, site).label(site);
    for node in [pretraining, app.node_id("Foundation Models").await] {
        let rows = spend_rows(&app, &finance, node, &period).await;
        let top = rows
            .iter()
            .find(|r| r["depth"] == 0 && r["gpu_model"] == "all")
            .unwrap();
        assert!(
            top["budget_minor"].as_i64().unwrap() <= top["entitlement_minor"].as_i64().unwrap(),
            "{top}"
        );
    }
    // The new project got what was left, no more (here nothing: the lowered share's budget
    // stands until the period ends), from the ledger's own grant.
    let new = app.node_id("fm-new").await;
    let granted: i64 = sqlx::query_scalar(
        "SELECT budget_minor FROM ledger_accounts WHERE kind = 'project_budget' AND project_id = $1 AND period_start = $2",
    )
    .bind(new)
    .bind(ledger::to_time(ledger::Period::containing(now, site).start))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let rows = spend_rows(&app, &finance, pretraining, &period).await;
    let top = rows
        .iter()
        .find(|r| r["depth"] == 0 && r["gpu_model"] == "all")
        .unwrap();
    let others: i64 = rows
        .iter()
        .filter(|r| r["depth"] == 1 && r["gpu_model"] == "all" && r["node_id"] != new)
        .map(|r| r["budget_minor"].as_i64().unwrap())
        .sum();
    let own = rows
        .iter()
        .find(|r| r["node_id"] == new && r["gpu_model"] == "all")
        .unwrap()["entitlement_minor"]
        .as_i64()
        .unwrap();
    assert_eq!(
        granted,
        own.min((top["entitlement_minor"].as_i64().unwrap() - others).max(0)),
        "{rows:?}"
    );
    assert!(
        granted < own,
        "the scenario leaves less than its entitlement: {granted} {own}"
    );
}

/// A database keeps the currency it was first served in (found by a new-user check: `tranche
/// demo` run without the server's `TRANCHE_CURRENCY=EUR` imported its AI spend in USD, counted
/// one to one as euros; and a server restarted with another currency relabelled every amount).
#[tokio::test]
async fn a_database_keeps_the_currency_it_was_first_served_in() {
    let app = TestApp::new().await;
    let eur = tranche::config::Site {
        currency: "EUR".into(),
        ..tranche::config::Site::for_tests()
    };
    ledger::currency::record(&app.pool, &eur).await.unwrap();
    // The same currency again starts; another is refused, naming the recorded one.
    ledger::currency::record(&app.pool, &eur).await.unwrap();
    let usd = tranche::config::Site::for_tests();
    assert_eq!(usd.currency, "USD");
    let err = ledger::currency::record(&app.pool, &usd)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("TRANCHE_CURRENCY=EUR"), "{err}");
    // Other commands follow the recorded one.
    let mut demo = usd;
    ledger::currency::follow(&app.pool, &mut demo)
        .await
        .unwrap();
    assert_eq!(demo.currency, "EUR");
    let recorded: String =
        sqlx::query_scalar("SELECT value FROM site_flags WHERE name = 'currency'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded, "EUR");
}

/// An ended period's entitlements follow the tree as it stood at its end: shares changed, a
/// node moved or made since leave last month's report as it was (found by a new-user check:
/// a lead's share change today rewrote November's entitlement and its value). The current
/// period follows the change.
#[tokio::test]
async fn ended_periods_keep_the_tree_they_ended_with() {
    let (app, _) = TestApp::with_admin().await;
    let OldTree {
        admin,
        root,
        a,
        b,
        token,
        site,
        current,
        last,
    } = old_tree(&app).await;
    // `percent` of 8 GPUs over period `p` at 2.00 a GPU-hour, minor units.
    let value = |p: ledger::Period, percent: i64| {
        8 * (p.end.as_second() - p.start.as_second()) / 3600 * 200 * percent / 100
    };
    let last_label = last.label(&site);
    let before = spend_rows(&app, &token, root, &last_label).await;
    assert_eq!(entitlement_of(&before, "a", "all"), Some(value(last, 60)));
    assert_eq!(entitlement_of(&before, "b", "all"), Some(value(last, 40)));

    // Today: a 30%, b 50%, and a new project c of 20%.
    tree_db::set_child_shares(
        &app.pool,
        &site,
        &admin,
        root,
        &[
            (a, Share::parse_percent("30").unwrap()),
            (b, Share::parse_percent("50").unwrap()),
        ],
    )
    .await
    .unwrap();
    node(&app, &admin, root, "c", NodeKind::Project, "20").await;

    // As it was, row for row: c, made since, is not in it.
    let after = spend_rows(&app, &token, root, &last_label).await;
    assert_eq!(after, before, "last period's report is as it was");
    let now = spend_rows(&app, &token, root, &current.label(&site)).await;
    assert_eq!(entitlement_of(&now, "a", "all"), Some(value(current, 30)));
    assert_eq!(entitlement_of(&now, "b", "all"), Some(value(current, 50)));
    assert_eq!(entitlement_of(&now, "c", "all"), Some(value(current, 20)));
}

/// The tree is kept before a change that changes something, once per transaction: a move to
/// the parent a node already has, or a share set to what it is, keeps nothing (found by a
/// check: each such move copied the whole tree).
#[tokio::test]
async fn the_tree_is_kept_only_before_a_real_change() {
    let app = TestApp::new().await;
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    let root = app.node_id("Organisation").await;
    let g = node(&app, &admin, root, "g", NodeKind::Group, "50").await;
    let p = node(&app, &admin, g, "p", NodeKind::Project, "100").await;
    let kept = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(DISTINCT taken_at) FROM tree_snapshots")
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    let before = kept().await;
    // Already its parent and its share: nothing changes, nothing is kept.
    let _ = tree_db::move_node(&app.pool, &admin, p, g).await;
    sqlx::query("UPDATE tree_nodes SET share_bp = share_bp, parent_id = parent_id WHERE id = $1")
        .bind(p)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept().await, before);
    // A real change keeps the tree as it stood before it: p at 100%.
    sqlx::query("UPDATE tree_nodes SET share_bp = 4000 WHERE id = $1")
        .bind(p)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept().await, before + 1);
    let share: i32 = sqlx::query_scalar(
        "SELECT share_bp FROM tree_snapshots WHERE node_id = $1 ORDER BY taken_at DESC LIMIT 1",
    )
    .bind(p)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(share, 10_000);
}

/// A node that was not live in a period has a report of that period all the same: a group
/// made today, for last period (nothing was owed to it then, and the page's picker of last
/// period does not offer it), and a project archived today, for the current period, whose row
/// the organisation's report lists (both answered 404 before, found by a check).
#[tokio::test]
async fn a_node_not_live_in_a_period_has_its_report_of_it() {
    let (app, pw) = TestApp::with_admin().await;
    let OldTree {
        admin,
        root,
        a,
        token,
        site,
        current,
        last,
        ..
    } = old_tree(&app).await;
    // Today: `a` is opened for the current period, then archived; a new group takes its place.
    let open = spend_rows(&app, &token, root, &current.label(&site)).await;
    assert!(open.iter().any(|r| r["node"] == "a"), "{open:?}");
    tree_db::archive_node(&app.pool, &admin, a).await.unwrap();
    let g = node(&app, &admin, root, "newgroup", NodeKind::Group, "60").await;

    let rows = spend_rows(&app, &token, a, &current.label(&site)).await;
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["node"] == "a"), "{rows:?}");
    let whole = spend_rows(&app, &token, root, &current.label(&site)).await;
    let of_a = |rows: &[serde_json::Value]| -> Vec<serde_json::Value> {
        rows.iter().filter(|r| r["node"] == "a").cloned().collect()
    };
    assert_eq!(
        of_a(&rows)
            .iter()
            .map(|r| r["budget_minor"].clone())
            .collect::<Vec<_>>(),
        of_a(&whole)
            .iter()
            .map(|r| r["budget_minor"].clone())
            .collect::<Vec<_>>(),
        "the archived project's own report agrees with its row in the whole one"
    );
    // Made today: last period it booked nothing and was owed nothing.
    let rows = spend_rows(&app, &token, g, &last.label(&site)).await;
    for r in &rows {
        assert_eq!(r["node"], "newgroup");
        assert_eq!(r["entitlement_minor"].as_i64().unwrap_or(0), 0, "{r}");
    }
    let mut c = app.client();
    c.login("admin", &pw).await;
    let (status, page, _) = c
        .get(&format!("/reports?period={}", last.label(&site)))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !page.contains("newgroup"),
        "last period's picker offers a group made since"
    );
    let (status, page, _) = c
        .get(&format!("/reports?period={}", current.label(&site)))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("newgroup"));
}

/// A site of one 8-GPU H100 node (H100 at 2.00 a GPU-hour) with projects `a` (60%) and `b`
/// (40%) under the root, standing since before last period, as [`old_tree`] makes it.
struct OldTree {
    admin: tranche::auth::Account,
    root: i64,
    a: i64,
    b: i64,
    /// The admin's API token.
    token: String,
    site: std::sync::Arc<tranche::config::Site>,
    current: ledger::Period,
    last: ledger::Period,
}

/// Makes an [`OldTree`] in `app` (its admin made by the first run).
async fn old_tree(app: &TestApp) -> OldTree {
    let admin = app.admin().await;
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1", "2.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "h1", "H100", "8")
        .await
        .unwrap();
    sqlx::query("UPDATE nodes SET created_at = now() - interval '400 days'")
        .execute(&app.pool)
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    let a = node(app, &admin, root, "a", NodeKind::Project, "60").await;
    let b = node(app, &admin, root, "b", NodeKind::Project, "40").await;
    // The tree has stood like this since before last period.
    sqlx::query("DELETE FROM tree_snapshots")
        .execute(&app.pool)
        .await
        .unwrap();
    let site = app.state.site.clone();
    let current = ledger::Period::containing(jiff::Timestamp::now(), &site);
    let last = ledger::Period::containing(
        current
            .start
            .checked_sub(jiff::SignedDuration::from_secs(1))
            .unwrap(),
        &site,
    );
    OldTree {
        admin,
        root,
        a,
        b,
        token: app.token_for("admin").await,
        site,
        current,
        last,
    }
}
