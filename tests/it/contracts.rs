//! Capacity contracts and the ledger on real PostgreSQL: scenarios S7 (concurrent purchases
//! never overbook), S8 (clock changes), S9 (budgets never go negative), money arithmetic, and
//! a property test of random ledger operations.

use axum::http::StatusCode;
use proptest::prelude::*;
use serde_json::json;
use tranche::auth::Account;
use tranche::config::Site;
use tranche::db::tree::{self as tree_db, NodeKind};
use tranche::domain::{self, Money, Share};
use tranche::ledger::{self, contracts};

use crate::support::{TestApp, tomorrow_at};

/// Builds an organisation: one cluster `c` with `nodes` nodes of 8 GPUs of `model` (weight and
/// price as given), and two projects `p1` and `p2` at 50% each, led by `lead1` and `lead2`.
async fn org(app: &TestApp, model: &str, weight: &str, price: &str, nodes: usize) -> Account {
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, model, weight, price)
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    for i in 0..nodes {
        tranche::db::inventory::add_node(&app.pool, &admin, cluster, &format!("n{i}"), model, "8")
            .await
            .unwrap();
    }
    let root = app.node_id("Organisation").await;
    for (p, lead) in [("p1", "lead1"), ("p2", "lead2")] {
        tree_db::create_node(
            &app.pool,
            &admin,
            root,
            p,
            NodeKind::Project,
            Share::parse_percent("50").unwrap(),
        )
        .await
        .unwrap();
        tranche::db::users::create(&app.pool, None, lead, "lead", Some(p))
            .await
            .unwrap();
    }
    admin
}

/// The project's balance in the budget period of tomorrow's windows (contracts are paid from
/// the period in which their window starts; tomorrow may be in the next month).
async fn balance_of(app: &TestApp, project: &str) -> i64 {
    app.balance_at(project, tomorrow_at(12)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s07_two_contracts_cannot_promise_the_same_gpus() {
    let site = Site {
        contractable_percent: 100,
        ..Site::for_tests()
    };
    let http = reqwest::Client::new();
    for round in 0..50 {
        let app = TestApp::with_site(site.clone()).await;
        org(&app, "B200", "1", "1.00", 1).await;
        let base = app.serve().await;
        let (t1, t2) = (app.token_for("lead1").await, app.token_for("lead2").await);
        let (b1, b2) = (balance_of(&app, "p1").await, balance_of(&app, "p2").await);
        let window = (tomorrow_at(10).to_string(), tomorrow_at(12).to_string());
        let buy = |token: String, project: &'static str, gpus: i64| {
            let (http, url, window) = (
                http.clone(),
                format!("{base}/api/v1/contracts"),
                window.clone(),
            );
            async move {
                let res = http
                    .post(url)
                    .bearer_auth(token)
                    .json(&json!({"project": project, "cluster": "c", "gpu_model": "B200", "gpus": gpus, "start": window.0, "end": window.1}))
                    .send()
                    .await
                    .unwrap();
                (
                    res.status().as_u16(),
                    res.json::<serde_json::Value>().await.unwrap(),
                )
            }
        };
        let (r1, r2) = tokio::join!(
            tokio::spawn(buy(t1, "p1", 6)),
            tokio::spawn(buy(t2, "p2", 4))
        );
        let (r1, r2) = (r1.unwrap(), r2.unwrap());
        let outcomes = [r1.0, r2.0];
        assert!(
            outcomes.contains(&201) && outcomes.contains(&409),
            "round {round}: exactly one succeeds: {r1:?} {r2:?}"
        );
        let refused = if r1.0 == 409 { &r1.1 } else { &r2.1 };
        assert_eq!(
            refused["error"]["code"], "capacity_exceeded",
            "round {round}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not enough contractable capacity")
        );
        let promised: i64 = sqlx::query_scalar(
            "SELECT coalesce(sum(gpus), 0)::bigint FROM contracts WHERE state = 'active'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert!(
            promised <= 8,
            "round {round}: {promised} GPUs promised on 8"
        );
        // The refused buyer's budget is untouched; the winner paid 2 h x GPUs x 1.00.
        let (after1, after2) = (balance_of(&app, "p1").await, balance_of(&app, "p2").await);
        if r1.0 == 201 {
            assert_eq!((b1 - after1, b2 - after2), (1200, 0), "round {round}");
        } else {
            assert_eq!((b1 - after1, b2 - after2), (0, 800), "round {round}");
        }
        assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
        app.pool.close().await;
    }
}

#[tokio::test]
async fn s08_a_contract_over_the_clock_change_is_three_real_hours() {
    let berlin = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
    let site = Site {
        time_zone: berlin.clone(),
        time_zone_name: "Europe/Berlin".into(),
        ..Site::for_tests()
    };
    let app = TestApp::with_site(site.clone()).await;
    org(&app, "H100", "1", "2.00", 2).await;
    let lead = app.account("lead1").await;
    let now: jiff::Timestamp = "2026-10-01T08:00:00Z".parse().unwrap();
    let start = domain::parse_instant("2026-10-25 01:30", &berlin, "Europe/Berlin").unwrap();
    let end = domain::parse_instant("2026-10-25 03:30", &berlin, "Europe/Berlin").unwrap();
    let req = contracts::Request {
        project: "p1".into(),
        cluster: "c".into(),
        gpu_model: "H100".into(),
        gpus: 4,
        start,
        end,
        expected_price_minor: None,
    };
    let (c, q) = contracts::buy(&app.pool, &site, &lead, &req, now)
        .await
        .unwrap();
    assert_eq!(
        (c.ends_at - c.starts_at).whole_seconds(),
        3 * 3600,
        "3 h of real time"
    );
    // Charged as 3 h: 4 GPUs x 3 h x 1.0 x 2.00 = 24.00.
    assert_eq!(q.price_minor, 2400);
    // A stale price is refused by the preview as by the purchase, which buys nothing (the
    // preview ignored it: a client could not check a price before buying).
    let stale = contracts::Request {
        expected_price_minor: Some(q.price_minor - 1),
        ..req.clone()
    };
    let refused = contracts::quote(&app.pool, &site, &lead, &stale, now)
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused,
            tranche::error::AppError::Refused {
                code: "price_changed",
                ..
            }
        ),
        "{refused:?}"
    );
    let same = contracts::Request {
        expected_price_minor: Some(q.price_minor),
        ..req.clone()
    };
    assert!(
        contracts::quote(&app.pool, &site, &lead, &same, now)
            .await
            .is_ok()
    );
    assert_eq!(
        tranche::web::contracts::window_label(c.starts_at, c.ends_at, &berlin),
        "2026-10-25 01:30 +02:00 → 2026-10-25 03:30 +01:00 (3 h)"
    );
    // A start that does not exist is refused with a message that says so.
    let err = domain::parse_instant("2026-03-29 02:30", &berlin, "Europe/Berlin").unwrap_err();
    assert!(err.contains("does not exist in Europe/Berlin"), "{err}");
    // Through the API, with a time_zone: the same rule.
    let token = app.token_for("lead1").await;
    let (status, body) = app
        .api("POST", "/api/v1/contracts/quote", Some(&token), Some(json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 1, "start": "2027-03-28 02:30", "end": "2027-03-28 04:00", "time_zone": "Europe/Berlin"})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{body}"
    );
}

#[tokio::test]
async fn s09_a_purchase_over_the_budget_is_refused_and_charges_nothing() {
    let app = TestApp::new().await;
    let admin = org(&app, "H100", "1", "1.00", 4).await;
    let p1 = app.node_id("p1").await;
    // 100 GPU-hours left: a period budget of 100.00 at 1.00 per GPU-hour.
    let tree = app.state.tree().await.unwrap();
    tree_db::update_project(
        &app.pool,
        &admin,
        p1,
        &tree_db::BudgetUpdate {
            period_budget_minor: Some(10_000),
            money_cap_minor: None,
            self_service_gpu_hours: 64,
            alert_thresholds: None,
        },
        &tree,
        (&app.state.site, jiff::Timestamp::now()),
    )
    .await
    .unwrap();
    assert_eq!(balance_of(&app, "p1").await, 10_000);
    let token = app.token_for("lead1").await;
    // 8 GPUs x 15 h = 120 GPU-hours.
    let body = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": tomorrow_at(1).to_string(), "end": tomorrow_at(16).to_string()});
    let (status, answer) = app
        .api("POST", "/api/v1/contracts", Some(&token), Some(body))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(answer["error"]["code"], "budget_exceeded");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("needs 120.0 H100 GPU-hours")
            && message.contains("has 100.0 GPU-hours left"),
        "{message}"
    );
    assert_eq!(balance_of(&app, "p1").await, 10_000, "nothing charged");
    let contracts: i64 = sqlx::query_scalar("SELECT count(*) FROM contracts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(contracts, 0);
    // 100 GPU-hours exactly fit.
    let body = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": tomorrow_at(1).to_string(), "end": tomorrow_at(13).to_string()});
    let (status, bought) = app.api("POST", "/api/v1/contracts", Some(&token), Some(json!({"start": body["start"], "end": tomorrow_at(1).checked_add(jiff::SignedDuration::from_mins(750)).unwrap().to_string(), "project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8}))).await;
    assert_eq!(status, StatusCode::CREATED);
    // Its window begins tomorrow: scheduled, as the pages say (the API said active).
    assert_eq!(bought["state"], "scheduled", "{bought}");
    assert_eq!(balance_of(&app, "p1").await, 0);
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
}

/// The hours a refused purchase says are left are cut to the tenth shown: 100.95 GPU-hours
/// read "100.9" (they read "100.0", the whole hours with a decimal).
#[tokio::test]
async fn a_refused_purchase_says_the_hours_left_to_the_tenth() {
    let app = TestApp::new().await;
    let admin = org(&app, "H100", "1", "1.00", 4).await;
    let p1 = app.node_id("p1").await;
    let tree = app.state.tree().await.unwrap();
    tree_db::update_project(
        &app.pool,
        &admin,
        p1,
        &tree_db::BudgetUpdate {
            period_budget_minor: Some(10_095),
            money_cap_minor: None,
            self_service_gpu_hours: 64,
            alert_thresholds: None,
        },
        &tree,
        (&app.state.site, jiff::Timestamp::now()),
    )
    .await
    .unwrap();
    let token = app.token_for("lead1").await;
    let body = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": tomorrow_at(1).to_string(), "end": tomorrow_at(16).to_string()});
    let (status, answer) = app
        .api("POST", "/api/v1/contracts", Some(&token), Some(body))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("has 100.9 GPU-hours left"), "{message}");
}

#[tokio::test]
async fn contract_bad_input_is_refused_with_the_numbers() {
    let app = TestApp::new().await;
    org(&app, "B300", "2.5", "2.50", 1).await;
    let token = app.token_for("lead1").await;
    let other = app.token_for("lead2").await;
    let ok = json!({"project": "p1", "cluster": "c", "gpu_model": "B300", "gpus": 2, "start": tomorrow_at(9).to_string(), "end": tomorrow_at(11).to_string()});
    let with = |k: &str, v: serde_json::Value| {
        let mut b = ok.clone();
        b[k] = v;
        b
    };
    let cases = [
        (
            with("start", json!("2020-01-01T00:00:00Z")),
            422,
            "starts in the past",
        ),
        (
            with("end", json!(tomorrow_at(8).to_string())),
            422,
            "end after it starts",
        ),
        (with("gpus", json!(0)), 422, "between 1 and 8"),
        (with("gpus", json!(9)), 422, "between 1 and 8"),
        // Unknown names are 404 (docs/api.md); a model's name in another case is found.
        (with("gpu_model", json!("H100")), 404, "no GPU model named"),
        (with("project", json!("nope")), 404, "no project named"),
        (with("cluster", json!("nowhere")), 404, "nowhere"),
        (
            {
                let mut b = with("gpu_model", json!("b300"));
                b["gpus"] = json!(6);
                b
            },
            409,
            "not enough contractable capacity",
        ),
        (with("start", json!("tomorrow")), 422, "RFC 3339"),
        (
            with("gpus", json!(6)),
            409,
            "not enough contractable capacity",
        ),
    ];
    for (body, status, text) in cases {
        let (got, answer) = app
            .api(
                "POST",
                "/api/v1/contracts",
                Some(&token),
                Some(body.clone()),
            )
            .await;
        assert_eq!(got.as_u16(), status, "{body}: {answer}");
        assert!(
            answer["error"]["message"].as_str().unwrap().contains(text),
            "{body}: {answer}"
        );
    }
    // 70% of 8 GPUs is 5 contractable: 5 fit, then nothing more in the same window.
    let (status, _) = app
        .api(
            "POST",
            "/api/v1/contracts",
            Some(&token),
            Some(with("gpus", json!(5))),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    // A lead cannot buy for a project outside their subtree: outside their view, it is
    // answered as a missing one.
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/contracts",
            Some(&other),
            Some(with("gpus", json!(1))),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let contracts: i64 = sqlx::query_scalar("SELECT count(*) FROM contracts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(contracts, 1);
}

#[tokio::test]
async fn cancel_before_the_start_refunds_and_a_started_contract_stays() {
    let site = Site {
        refund_percent: 90,
        ..Site::for_tests()
    };
    let app = TestApp::with_site(site.clone()).await;
    org(&app, "H100", "1", "1.00", 1).await;
    let token = app.token_for("lead1").await;
    let before = balance_of(&app, "p1").await;
    let (status, c) = app
        .api("POST", "/api/v1/contracts", Some(&token), Some(json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 2, "start": tomorrow_at(9).to_string(), "end": tomorrow_at(14).to_string()})))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    // 2 GPUs x 5 h x 1.00 = 10.00.
    assert_eq!(c["price_minor"], 1000);
    assert_eq!(balance_of(&app, "p1").await, before - 1000);
    let id = c["id"].as_i64().unwrap();
    let (status, cancelled) = app
        .api(
            "POST",
            &format!("/api/v1/contracts/{id}/cancel"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cancelled["refund_minor"], 900);
    assert_eq!(balance_of(&app, "p1").await, before - 100);
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/contracts/{id}/cancel"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "already cancelled");
    // A contract that has started cannot be cancelled.
    let lead = app.admin().await;
    let now = jiff::Timestamp::now();
    let req = contracts::Request {
        project: "p1".into(),
        cluster: "c".into(),
        gpu_model: "H100".into(),
        gpus: 1,
        start: tomorrow_at(15),
        end: tomorrow_at(16),
        expected_price_minor: None,
    };
    let (c, _) = contracts::buy(&app.pool, &site, &lead, &req, now)
        .await
        .unwrap();
    let later = tomorrow_at(15)
        .checked_add(jiff::SignedDuration::from_mins(1))
        .unwrap();
    let err = contracts::cancel(&app.pool, &site, &lead, c.id, later)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has started"), "{err}");
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
    // Once its window is over it reads as ended (it said active for ever).
    sqlx::query("UPDATE contracts SET starts_at = now() - interval '2 hours', ends_at = now() - interval '1 hour' WHERE id = $1")
        .bind(c.id)
        .execute(&app.pool)
        .await
        .unwrap();
    let (_, list) = app
        .api("GET", "/api/v1/contracts", Some(&token), None)
        .await;
    let states: Vec<(i64, String)> = list["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["id"].as_i64().unwrap(),
                k["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(states.contains(&(c.id, "ended".to_string())), "{states:?}");
    assert!(
        states.contains(&(id, "cancelled".to_string())),
        "{states:?}"
    );
}

#[test]
fn money_arithmetic_by_hand() {
    // Mixed models at 2.50 per weighted GPU-hour: 8 H100 (1.0) x 3 h = 60.00; 8 B200 (1.8)
    // x 3 h = 108.00; 4 B300 (2.5) x 90 min = 37.50.
    assert_eq!(domain::contract_price(8, 3 * 3600, 1000, 250), Money(6000));
    assert_eq!(
        domain::contract_price(8, 3 * 3600, 1800, 250),
        Money(10_800)
    );
    assert_eq!(domain::contract_price(4, 5400, 2500, 250), Money(3750));
}

#[tokio::test]
async fn a_contract_crossing_a_period_boundary_is_paid_whole_when_bought() {
    let app = TestApp::new().await;
    org(&app, "B200", "1.8", "2.50", 2).await;
    let admin = app.admin().await;
    let site = app.state.site.clone();
    let now: jiff::Timestamp = "2026-11-20T12:00:00Z".parse().unwrap();
    // 2026-11-30 22:00 to 2026-12-01 02:00 UTC, 8 B200: 4 h x 8 x 1.8 x 2.50 = 144.00, paid in
    // full from November's budget (the period it is bought in); December's is untouched.
    let req = contracts::Request {
        project: "p1".into(),
        cluster: "c".into(),
        gpu_model: "B200".into(),
        gpus: 8,
        start: "2026-11-30T22:00:00Z".parse().unwrap(),
        end: "2026-12-01T02:00:00Z".parse().unwrap(),
        expected_price_minor: None,
    };
    let (c, q) = contracts::buy(&app.pool, &site, &admin, &req, now)
        .await
        .unwrap();
    assert_eq!(q.price_minor, 14_400);
    let (period, amount, secs): (time::OffsetDateTime, i64, i64) =
        sqlx::query_as("SELECT period_start, amount_minor, gpu_seconds FROM ledger_postings WHERE contract_id = $1").bind(c.id).fetch_one(&app.pool).await.unwrap();
    assert_eq!(ledger::to_jiff(period).to_string(), "2026-11-01T00:00:00Z");
    assert_eq!((amount, secs), (14_400, 8 * 4 * 3600));
    let december: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM ledger_accounts WHERE period_start = '2026-12-01T00:00:00Z'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(december, 0);
}

/// A run charged minute by minute pays its whole time's cost rounded once: at weight 1.5 and
/// 2.00 a GPU-hour a GPU-second costs 1/12 of a minor unit, so 400 s in charges of 62, 65, 65,
/// 65, 65, 65 and 13 s cost round(400 / 12) = 33 (rounded one by one: 5 x 6 + 1 = 31).
#[tokio::test]
async fn a_runs_charges_add_up_to_its_time_rounded_once() {
    let app = TestApp::new().await;
    org(&app, "H100", "1.5", "2.00", 1).await;
    let site = app.state.site.clone();
    let now = jiff::Timestamp::now();
    let p1 = app.node_id("p1").await;
    let b1 = app.balance_at("p1", now).await;
    assert!(b1 > 100, "p1 has a budget to spend: {b1}");
    let (cluster, model): (i64, i64) =
        sqlx::query_as("SELECT c.id, m.id FROM clusters c, gpu_models m")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let mut before = 0;
    let mut amounts = Vec::new();
    for secs in [62, 65, 65, 65, 65, 65, 13] {
        let usage = ledger::Usage {
            project: p1,
            cluster,
            gpu_model: model,
            gpu_seconds: secs,
            allocated: true,
            run: None,
            accounted_gpu_seconds: before,
            contract: None,
        };
        let mut tx = app.pool.begin().await.unwrap();
        let c = ledger::charge_usages(&app.pool, &mut tx, &site, now, None, &[usage])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        amounts.push(c[0].charged_minor);
        before += secs;
    }
    assert_eq!(amounts, [5, 6, 5, 5, 6, 5, 1]);
    assert_eq!(amounts.iter().sum::<i64>(), 33);
    assert_eq!(app.balance_at("p1", now).await, b1 - 33);
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
}

/// One random ledger operation.
/// Usages charged together (a pass charging every run that fell due) are charged in their
/// order against each project's running balance, exactly as one charge after another: at
/// weight 1.5 and 2.00 a GPU-hour a GPU-second costs 1/12 of a minor unit.
#[tokio::test]
async fn usages_charged_together_draw_each_balance_in_order() {
    let app = TestApp::new().await;
    org(&app, "H100", "1.5", "2.00", 1).await;
    let site = app.state.site.clone();
    let now = jiff::Timestamp::now();
    let (p1, p2) = (app.node_id("p1").await, app.node_id("p2").await);
    let (b1, b2) = (
        app.balance_at("p1", now).await,
        app.balance_at("p2", now).await,
    );
    assert!(b1 > 10, "p1 has a budget to spend: {b1}");
    let cluster: i64 = sqlx::query_scalar("SELECT id FROM clusters")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let model: i64 = sqlx::query_scalar("SELECT id FROM gpu_models")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let half = b1 / 2;
    let usage = |project, gpu_seconds, allocated| ledger::Usage {
        project,
        cluster,
        gpu_model: model,
        gpu_seconds,
        allocated,
        run: None,
        accounted_gpu_seconds: 0,
        contract: None,
    };
    let usages = [
        usage(p1, 12 * half, true), // costs `half` exactly
        usage(p2, 1_000, false),    // unallocated: free
        usage(p1, 12 * b1, true),   // more than what is left: 12 x (b1 - half) s paid
        usage(p1, 100, true),       // nothing left: free
    ];
    let mut tx = app.pool.begin().await.unwrap();
    let charges = ledger::charge_usages(&app.pool, &mut tx, &site, now, None, &usages)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let left = b1 - half;
    let expect = |minor, paid, free| ledger::Charge {
        charged_minor: minor,
        charged_gpu_seconds: paid,
        free_gpu_seconds: free,
    };
    assert_eq!(
        charges,
        vec![
            expect(half, 12 * half, 0),
            expect(0, 0, 1_000),
            expect(left, 12 * left, 12 * b1 - 12 * left),
            expect(0, 0, 100),
        ]
    );
    assert_eq!(app.balance_at("p1", now).await, 0);
    assert_eq!(app.balance_at("p2", now).await, b2);
    // One posting per paid or free part, in the usages' order.
    let postings: Vec<(String, i64, i64, i64)> = sqlx::query_as(
        "SELECT kind, project_id, amount_minor, gpu_seconds FROM ledger_postings WHERE kind LIKE 'usage%' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let kinds = |k: &str| k.to_string();
    assert_eq!(
        postings,
        vec![
            (kinds("usage"), p1, half, 12 * half),
            (kinds("usage_free"), p2, 0, 1_000),
            (kinds("usage"), p1, left, 12 * left),
            (kinds("usage_free"), p1, 0, 12 * b1 - 12 * left),
            (kinds("usage_free"), p1, 0, 100),
        ]
    );
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    Buy {
        project: usize,
        gpus: i64,
        start_h: i64,
        hours: i64,
    },
    Cancel {
        nth: usize,
    },
    Charge {
        project: usize,
        gpu_seconds: i64,
        allocated: bool,
    },
    NextMonth,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..2usize, 1..9i64, 1..200i64, 1..48i64).prop_map(|(project, gpus, start_h, hours)| {
            Op::Buy {
                project,
                gpus,
                start_h,
                hours,
            }
        }),
        (0..8usize).prop_map(|nth| Op::Cancel { nth }),
        (0..2usize, 0..2_000_000i64, any::<bool>()).prop_map(
            |(project, gpu_seconds, allocated)| Op::Charge {
                project,
                gpu_seconds,
                allocated
            }
        ),
        Just(Op::NextMonth),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random purchases, cancellations (refunds), usage charges and roll-overs keep the ledger
    /// balanced and every budget at or above zero; refused operations change nothing.
    #[test]
    fn ledger_stays_balanced_and_never_negative(ops in proptest::collection::vec(op(), 1..25)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let app = TestApp::new().await;
            let admin = org(&app, "H100", "1", "1.00", 1).await;
            let site = app.state.site.clone();
            let projects = [app.node_id("p1").await, app.node_id("p2").await];
            let cluster: i64 = sqlx::query_scalar("SELECT id FROM clusters").fetch_one(&app.pool).await.unwrap();
            let model: i64 = sqlx::query_scalar("SELECT id FROM gpu_models").fetch_one(&app.pool).await.unwrap();
            let mut now: jiff::Timestamp = "2027-01-03T00:00:00Z".parse().unwrap();
            let mut bought: Vec<i64> = Vec::new();
            for op in ops {
                let postings_before: i64 = sqlx::query_scalar("SELECT count(*) FROM ledger_postings").fetch_one(&app.pool).await.unwrap();
                match op {
                    Op::Buy { project, gpus, start_h, hours } => {
                        let start = now.checked_add(jiff::SignedDuration::from_hours(start_h)).unwrap();
                        let end = start.checked_add(jiff::SignedDuration::from_hours(hours)).unwrap();
                        let req = contracts::Request { project: format!("p{}", project + 1), cluster: "c".into(), gpu_model: "H100".into(), gpus, start, end, expected_price_minor: None };
                        match contracts::buy(&app.pool, &site, &admin, &req, now).await {
                            Ok((c, _)) => bought.push(c.id),
                            Err(_) => {
                                let after: i64 = sqlx::query_scalar("SELECT count(*) FROM ledger_postings WHERE kind <> 'grant'").fetch_one(&app.pool).await.unwrap();
                                let grants_before: i64 = sqlx::query_scalar("SELECT count(*) FROM ledger_postings WHERE kind = 'grant'").fetch_one(&app.pool).await.unwrap();
                                prop_assert!(after + grants_before >= postings_before, "a refusal removed postings");
                            }
                        }
                    }
                    Op::Cancel { nth } => {
                        if let Some(id) = bought.get(nth) {
                            let _ = contracts::cancel(&app.pool, &site, &admin, *id, now).await;
                        }
                    }
                    Op::Charge { project, gpu_seconds, allocated } => {
                        let mut tx = app.pool.begin().await.unwrap();
                        let charge = ledger::charge_usage(&app.pool, &mut tx, &site, now, projects[project], (cluster, model), gpu_seconds, allocated, None).await.unwrap();
                        tx.commit().await.unwrap();
                        prop_assert_eq!(charge.charged_gpu_seconds + charge.free_gpu_seconds, gpu_seconds);
                        if !allocated {
                            prop_assert_eq!(charge.charged_minor, 0);
                        }
                    }
                    Op::NextMonth => {
                        now = now.checked_add(jiff::SignedDuration::from_hours(31 * 24)).unwrap();
                        ledger::roll_over(&app.pool, now, &site).await.unwrap();
                    }
                }
                let problems = ledger::problems(&app.pool).await.unwrap();
                prop_assert!(problems.is_empty(), "{:?}", problems);
                let negative: i64 = sqlx::query_scalar("SELECT count(*) FROM ledger_accounts WHERE kind = 'project_budget' AND balance_minor < 0").fetch_one(&app.pool).await.unwrap();
                prop_assert_eq!(negative, 0);
            }
            // Every contract either stands paid or was refunded by the site's percentage.
            let unmatched: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM contracts c WHERE c.price_minor <> (SELECT coalesce(sum(amount_minor), 0) FROM ledger_postings p WHERE p.contract_id = c.id AND p.kind = 'contract') \
                 OR coalesce(c.refund_minor, 0) <> (SELECT coalesce(sum(amount_minor), 0) FROM ledger_postings p WHERE p.contract_id = c.id AND p.kind = 'refund')",
            )
            .fetch_one(&app.pool)
            .await
            .unwrap();
            prop_assert_eq!(unmatched, 0);
            app.pool.close().await;
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn budget_alerts_fire_once_to_leads_and_finance() {
    let app = TestApp::new().await;
    let admin = org(&app, "H100", "1", "1.00", 2).await;
    tranche::db::users::create(&app.pool, None, "fin", "finance", None)
        .await
        .unwrap();
    let p1 = app.node_id("p1").await;
    let tree = app.state.tree().await.unwrap();
    let update = tree_db::BudgetUpdate {
        period_budget_minor: Some(10_000),
        money_cap_minor: None,
        self_service_gpu_hours: 64,
        alert_thresholds: Some(vec![90, 50, 75]),
    };
    tree_db::update_project(
        &app.pool,
        &admin,
        p1,
        &update,
        &tree,
        (&app.state.site, jiff::Timestamp::now()),
    )
    .await
    .unwrap();
    let token = app.token_for("lead1").await;
    // 8 GPUs x 7.5 h x 1.00 = 60.00 of a 100.00 budget: 60% spent.
    let end = tomorrow_at(1)
        .checked_add(jiff::SignedDuration::from_mins(450))
        .unwrap();
    let (status, body) = app
        .api("POST", "/api/v1/contracts", Some(&token), Some(json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": tomorrow_at(1).to_string(), "end": end.to_string()})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let fired: Vec<(i32, String)> = sqlx::query_as("SELECT threshold_pct, kind FROM budget_alerts WHERE kind = 'actual' ORDER BY threshold_pct").fetch_all(&app.pool).await.unwrap();
    assert_eq!(
        fired,
        vec![(50, "actual".to_string())],
        "only the 50% threshold is reached"
    );
    // Checking again fires nothing new.
    let again = ledger::alerts::check(&app.pool, &app.state.site, jiff::Timestamp::now())
        .await
        .unwrap();
    assert!(again.is_empty(), "{again:?}");
    let (_, lead_notes) = app
        .api("GET", "/api/v1/notifications", Some(&token), None)
        .await;
    let messages: Vec<&str> = lead_notes["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("p1 has spent 50% of its")
                && m.contains("60.00 USD of 100.00 USD")),
        "{messages:?}"
    );
    let fin = app.token_for("fin").await;
    let (_, fin_notes) = app
        .api("GET", "/api/v1/notifications", Some(&fin), None)
        .await;
    assert!(
        !fin_notes["notifications"].as_array().unwrap().is_empty(),
        "finance is told too"
    );
    let other = app.token_for("lead2").await;
    let (_, other_notes) = app
        .api("GET", "/api/v1/notifications", Some(&other), None)
        .await;
    assert!(
        other_notes["notifications"].as_array().unwrap().is_empty(),
        "another project's lead is not"
    );
    let (_, read) = app
        .api("POST", "/api/v1/notifications/read", Some(&token), None)
        .await;
    assert!(read["marked_read"].as_u64().unwrap() >= 1);
    // A lead whose grant is revoked no longer reads the alerts of the project they no longer
    // see (found by a check: a former lead still read them, amounts included).
    sqlx::query(
        "DELETE FROM role_grants WHERE role = 'lead' AND user_id = (SELECT id FROM users WHERE name = 'lead1')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let (_, former) = app
        .api("GET", "/api/v1/notifications", Some(&token), None)
        .await;
    assert_eq!(former["notifications"], json!([]), "{former}");
}

#[tokio::test]
async fn budget_changes_follow_into_the_ledger() {
    let app = TestApp::new().await;
    let admin = org(&app, "H100", "1", "1.00", 2).await;
    let p1 = app.node_id("p1").await;
    let granted = balance_of(&app, "p1").await;
    assert!(granted > 10_000);
    let set = |budget: Option<i64>, cap: Option<i64>| tree_db::BudgetUpdate {
        period_budget_minor: budget,
        money_cap_minor: cap,
        self_service_gpu_hours: 64,
        alert_thresholds: None,
    };
    let update = |u: tree_db::BudgetUpdate| {
        let app = &app;
        let admin = &admin;
        async move {
            let tree = app.state.tree().await.unwrap();
            tree_db::update_project(
                &app.pool,
                admin,
                p1,
                &u,
                &tree,
                (&app.state.site, jiff::Timestamp::now()),
            )
            .await
            .unwrap();
        }
    };
    // Lowered to 100.00: the open budgets follow at once.
    update(set(Some(10_000), None)).await;
    assert_eq!(balance_of(&app, "p1").await, 10_000);
    let token = app.token_for("lead1").await;
    let body = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": tomorrow_at(1).to_string(), "end": tomorrow_at(16).to_string()});
    let (status, answer) = app
        .api("POST", "/api/v1/contracts", Some(&token), Some(body))
        .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "120 GPU-hours do not fit in 100: {answer}"
    );
    // A money cap lowers it further; removing both restores the entitlement's value.
    update(set(Some(10_000), Some(4_000))).await;
    assert_eq!(balance_of(&app, "p1").await, 4_000);
    update(set(None, None)).await;
    assert_eq!(balance_of(&app, "p1").await, granted);
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
    // A price change moves the entitlement's value, not the open budgets: saving the other
    // settings (self-service limit, alert thresholds) moves no money.
    sqlx::query("UPDATE gpu_models SET price_per_gpu_hour_minor = 300 WHERE name = 'H100'")
        .execute(&app.pool)
        .await
        .unwrap();
    update(tree_db::BudgetUpdate {
        self_service_gpu_hours: 65,
        alert_thresholds: Some(vec![50, 91]),
        ..set(None, None)
    })
    .await;
    assert_eq!(balance_of(&app, "p1").await, granted);
    // The project's period budget is the one in effect (nothing is spent this period, so its
    // balance), not today's entitlement's value.
    let current = app.balance_at("p1", jiff::Timestamp::now()).await;
    let (_, answer) = app
        .api("GET", &format!("/api/v1/projects/{p1}"), Some(&token), None)
        .await;
    assert_eq!(answer["period_budget_minor"], current, "{answer}");
    assert_eq!(answer["entitlement_money_minor"], 3 * current, "{answer}");
    sqlx::query("UPDATE gpu_models SET price_per_gpu_hour_minor = 100 WHERE name = 'H100'")
        .execute(&app.pool)
        .await
        .unwrap();
    // Spent money is not clawed back below zero: spend 30.00, then cut the budget to 10.00.
    let body = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 1, "start": tomorrow_at(1).to_string(), "end": tomorrow_at(1).checked_add(jiff::SignedDuration::from_hours(30)).unwrap().to_string()});
    let (status, _) = app
        .api("POST", "/api/v1/contracts", Some(&token), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    update(set(Some(1_000), None)).await;
    assert_eq!(balance_of(&app, "p1").await, 0);
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
    // The budget is what was set, though the postings could not take back what was spent.
    let (_, answer) = app
        .api("GET", &format!("/api/v1/projects/{p1}"), Some(&token), None)
        .await;
    assert_eq!(answer["period_budget_minor"], 1_000, "{answer}");
}

#[tokio::test]
async fn a_confirmation_buys_once_at_the_previewed_price() {
    let (app, users) = TestApp::with_demo().await;
    let (name, pw) = crate::support::demo_password(&users, "lead");
    let mut c = app.client();
    c.login(&name, &pw).await;
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
    // The formula multiplies out: 1 GPU x 80 min x 2.5 x 2.50 = 8.33 (rounded to the cent).
    let (one_start, one_end) = (format!("{day} 13:00"), format!("{day} 14:20"));
    let one = [
        ("project", "fm-rlhf"),
        ("cluster", "b300-lab"),
        ("gpu_model", "B300"),
        ("gpus", "1"),
        ("start", one_start.as_str()),
        ("end", one_end.as_str()),
    ];
    let (status, one_body, _) = c.post("/contracts/preview", &one).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        one_body.contains("8.33 USD")
            && one_body
                .contains("= 1 GPU × 1 h 20 min × weight 2.5 × 2.50 USD per weighted GPU-hour"),
        "{one_body}"
    );
    let (status, body, _) = c.post("/contracts/preview", &fields).await;
    assert_eq!(status, StatusCode::OK);
    // 2 GPUs x 2 h x 2.5 x 2.50 = 25.00.
    assert!(body.contains("25.00 USD"), "the preview shows the price");
    let at = body.find("name=\"quote\" value=\"").unwrap() + "name=\"quote\" value=\"".len();
    let quote = body[at..].split('"').next().unwrap().to_string();
    let mut confirm = fields.to_vec();
    confirm.push(("quote", &quote));
    let (status, _, first) = c.post("/contracts", &confirm).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    // The same confirmation again (a double click) buys nothing and goes where the first went.
    let (status, _, second) = c.post("/contracts", &confirm).await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "a second submission buys nothing"
    );
    assert_eq!(second, first);
    // A preview that was never bought with stays refused.
    let mut unknown = fields.to_vec();
    unknown.push(("quote", "0123456789abcdef0123456789abcdef"));
    let (status, body, _) = c.post("/contracts", &unknown).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("already used or has expired"));
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM contracts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 1);
    // A price change between preview and confirmation is refused.
    let (_, body, _) = c.post("/contracts/preview", &fields).await;
    let at = body.find("name=\"quote\" value=\"").unwrap() + "name=\"quote\" value=\"".len();
    let quote = body[at..].split('"').next().unwrap().to_string();
    sqlx::query("UPDATE gpu_models SET price_per_gpu_hour_minor = 300 WHERE name = 'B300'")
        .execute(&app.pool)
        .await
        .unwrap();
    let mut confirm = fields.to_vec();
    confirm.push(("quote", &quote));
    let (status, body, _) = c.post("/contracts", &confirm).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body.contains("the price changed since the preview"),
        "{}",
        &body[..body.len().min(3000)]
    );
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM contracts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 1);
}

#[tokio::test]
async fn contracts_of_others_are_not_found_and_cancel_conflicts_are_409() {
    let app = TestApp::new().await;
    org(&app, "H100", "1", "1.00", 2).await;
    tranche::db::users::create(&app.pool, None, "res", "researcher", None)
        .await
        .unwrap();
    let lead = app.token_for("lead1").await;
    let (_, c) = app
        .api("POST", "/api/v1/contracts", Some(&lead), Some(json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 1, "start": tomorrow_at(9).to_string(), "end": tomorrow_at(10).to_string()})))
        .await;
    let id = c["id"].as_i64().unwrap();
    // Someone who may not see p1 cannot tell this contract from a missing one.
    let res = app.token_for("res").await;
    let (a, _) = app
        .api(
            "POST",
            &format!("/api/v1/contracts/{id}/cancel"),
            Some(&res),
            None,
        )
        .await;
    let (b, _) = app
        .api("POST", "/api/v1/contracts/999999/cancel", Some(&res), None)
        .await;
    assert_eq!((a, b), (StatusCode::NOT_FOUND, StatusCode::NOT_FOUND));
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/contracts/{id}/cancel"),
            Some(&lead),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app
        .api(
            "POST",
            &format!("/api/v1/contracts/{id}/cancel"),
            Some(&lead),
            None,
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("not_cancellable"))
    );
    // Reports refuse periods they cannot honestly show.
    let (status, body) = app
        .api(
            "GET",
            "/api/v1/spend?period=1999-01",
            Some(&app.token_for("admin").await),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

/// A quote buys nothing and writes nothing: a window in a period whose budget is not open yet
/// is priced against the budget that period would be granted, and no account is opened.
#[tokio::test]
async fn a_quote_for_a_later_period_opens_no_budget() {
    let app = TestApp::new().await;
    org(&app, "H100", "1", "1.00", 2).await;
    let token = app.token_for("lead1").await;
    // Five weeks ahead: always in a later month than today's.
    let start = tomorrow_at(9)
        .checked_add(jiff::SignedDuration::from_hours(24 * 34))
        .unwrap();
    let end = start
        .checked_add(jiff::SignedDuration::from_hours(2))
        .unwrap();
    let counts = || async {
        sqlx::query_as::<_, (i64, i64)>(
            "SELECT (SELECT count(*) FROM ledger_accounts), (SELECT count(*) FROM ledger_postings)",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let before = counts().await;
    let body = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": start.to_string(), "end": end.to_string()});
    let (status, quote) = app
        .api(
            "POST",
            "/api/v1/contracts/quote",
            Some(&token),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{quote}");
    assert_eq!(counts().await, before, "a quote wrote to the ledger");
    // The purchase opens that period's budget, granted with what the quote counted on.
    let (status, answer) = app
        .api("POST", "/api/v1/contracts", Some(&token), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let site = app.state.site.clone();
    let (start_of, _) = ledger::Period::containing(start, &site).bounds();
    let granted: i64 = sqlx::query_scalar(
        "SELECT p.amount_minor FROM ledger_postings p JOIN tree_nodes t ON t.id = p.project_id \
         WHERE p.kind = 'grant' AND t.name = 'p1' AND p.period_start = $1",
    )
    .bind(start_of)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(quote["quote"]["balance_minor"], granted, "{quote}");
}

/// A project with a capacity contract that has not ended cannot be archived: the contract
/// would hold GPUs no run could use. Once cancelled, it can.
#[tokio::test]
async fn a_project_with_a_contract_is_not_archived() {
    let app = TestApp::new().await;
    org(&app, "H100", "1", "1.00", 2).await;
    let lead = app.token_for("lead1").await;
    let admin = app.token_for("admin").await;
    let start = tomorrow_at(9);
    let end = start
        .checked_add(jiff::SignedDuration::from_hours(2))
        .unwrap();
    let (status, bought) = app
        .api(
            "POST",
            "/api/v1/contracts",
            Some(&lead),
            Some(json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 2, "start": start.to_string(), "end": end.to_string()})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{bought}");
    let p1 = app.node_id("p1").await;
    let path = format!("/api/v1/nodes/{p1}");
    let archive = || {
        app.api(
            "PATCH",
            &path,
            Some(&admin),
            Some(json!({"archived": true})),
        )
    };
    let (status, answer) = archive().await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(answer["error"]["code"], "active_contracts", "{answer}");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/contracts/{}/cancel", bought["id"]),
            Some(&lead),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, answer) = archive().await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// Two purchases confirming the same price preview at the same instant (a double click, two
/// tabs) buy once: the other is refused as a used preview and charges nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_preview_buys_once_even_confirmed_twice_at_once() {
    let app = TestApp::new().await;
    let admin = org(&app, "H100", "1", "1.00", 2).await;
    let site = app.state.site.clone();
    let start = tomorrow_at(9);
    let req = contracts::Request {
        project: "p1".into(),
        cluster: "c".into(),
        gpu_model: "H100".into(),
        gpus: 2,
        start,
        end: start
            .checked_add(jiff::SignedDuration::from_hours(2))
            .unwrap(),
        expected_price_minor: None,
    };
    let now = jiff::Timestamp::now();
    let buy = || {
        contracts::buy_once(
            &app.pool,
            &site,
            &admin,
            &req,
            now,
            Some(contracts::Once::Preview("preview-1")),
        )
    };
    let (a, b, c) = tokio::join!(buy(), buy(), buy());
    let results = [a, b, c];
    let bought = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(bought, 1, "{results:?}");
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(
                r,
                tranche::error::AppError::Invalid {
                    field: Some("quote"),
                    ..
                }
            ),
            "{r:?}"
        );
    }
    let (contracts, payments): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM contracts), (SELECT count(*) FROM ledger_postings WHERE kind = 'contract')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((contracts, payments), (1, 1));
}

/// POST /api/v1/contracts with an `Idempotency-Key` header.
async fn buy_with_key(
    app: &TestApp,
    token: &str,
    key: &str,
    body: &serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/api/v1/contracts")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let (status, text, _) = app.send(req).await;
    (status, serde_json::from_str(&text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retried_purchase_with_its_idempotency_key_buys_once() {
    let app = TestApp::new().await;
    let admin = org(&app, "H100", "1", "1.00", 2).await;
    let p1 = app.node_id("p1").await;
    let tree = app.state.tree().await.unwrap();
    // 16.00 of budget: exactly the first purchase (8 GPUs x 2 h at 1.00), so a retry that
    // were bought again would be refused for the budget, not answered with the contract.
    tree_db::update_project(
        &app.pool,
        &admin,
        p1,
        &tree_db::BudgetUpdate {
            period_budget_minor: Some(1_600),
            money_cap_minor: None,
            self_service_gpu_hours: 64,
            alert_thresholds: None,
        },
        &tree,
        (&app.state.site, jiff::Timestamp::now()),
    )
    .await
    .unwrap();
    let token = app.token_for("lead1").await;
    let start = tomorrow_at(9);
    let end = start
        .checked_add(jiff::SignedDuration::from_hours(2))
        .unwrap();
    let body = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": start.to_string(), "end": end.to_string()});
    // Three copies of one request at the same instant: one contract, every answer names it.
    let (a, b, c) = tokio::join!(
        buy_with_key(&app, &token, "buy-1", &body),
        buy_with_key(&app, &token, "buy-1", &body),
        buy_with_key(&app, &token, "buy-1", &body)
    );
    let answers = [a, b, c];
    let created: Vec<_> = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .collect();
    assert_eq!(created.len(), 1, "{answers:?}");
    let id = created[0].1["id"].as_i64().unwrap();
    for (status, answer) in answers.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
        assert_eq!(*status, StatusCode::OK, "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["repeated"], true, "{answer}");
    }
    assert_eq!(balance_of(&app, "p1").await, 0, "paid once");
    // The same window written in another zone is the same request; a later retry is answered
    // with the contract although the budget it spent is gone.
    let zoned = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8,
        "start": start.in_tz("Asia/Tokyo").unwrap().strftime("%Y-%m-%d %H:%M").to_string(),
        "end": end.in_tz("Asia/Tokyo").unwrap().strftime("%Y-%m-%d %H:%M").to_string(),
        "time_zone": "Asia/Tokyo"});
    let (status, again) = buy_with_key(&app, &token, "buy-1", &zoned).await;
    assert_eq!(
        (status, &again["id"]),
        (StatusCode::OK, &json!(id)),
        "{again}"
    );
    // The key with another request buys nothing and says why.
    let other = json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 4, "start": start.to_string(), "end": end.to_string()});
    let (status, refused) = buy_with_key(&app, &token, "buy-1", &other).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "idempotency_mismatch");
    assert_eq!(refused["error"]["field"], "Idempotency-Key");
    // Keys are the buyer's own: another lead's same key is another purchase (refused here
    // for its own reasons, p1 being outside lead2's view, not as a repeat of lead1's).
    let lead2 = app.token_for("lead2").await;
    let (status, answer) = buy_with_key(&app, &lead2, "buy-1", &body).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let (contracts, payments): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM contracts), (SELECT count(*) FROM ledger_postings WHERE kind = 'contract')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((contracts, payments), (1, 1));
    assert!(ledger::problems(&app.pool).await.unwrap().is_empty());
}

/// A period under way keeps the entitlement value it opened with: after a price rise, clearing
/// a budget override or setting a money cap above the budget gives the budget the period
/// opened with, not today's value (found by a new-user check: either raised a project's budget
/// mid-period, while its page said prices apply from the next period).
#[tokio::test]
async fn a_budget_change_mid_period_keeps_the_entitlement_it_opened_with() {
    let app = TestApp::new().await;
    let admin = org(&app, "H100", "1", "1.00", 4).await;
    let p1 = app.node_id("p1").await;
    let site = app.state.site.clone();
    let now = jiff::Timestamp::now();
    tranche::ledger::roll_over(&app.pool, now, &site)
        .await
        .unwrap();
    let budget = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT budget_minor FROM ledger_accounts WHERE kind = 'project_budget' AND project_id = $1 \
             AND period_start <= now() AND period_end > now()",
        )
        .bind(p1)
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let opened = budget().await;
    assert!(opened > 0);
    // The price doubles.
    sqlx::query("UPDATE gpu_models SET price_per_gpu_hour_minor = 200")
        .execute(&app.pool)
        .await
        .unwrap();
    let set = |period_budget_minor: Option<i64>, money_cap_minor: Option<i64>| {
        let (app, admin, site) = (&app, &admin, &site);
        async move {
            let tree = app.state.tree().await.unwrap();
            tree_db::update_project(
                &app.pool,
                admin,
                p1,
                &tree_db::BudgetUpdate {
                    period_budget_minor,
                    money_cap_minor,
                    self_service_gpu_hours: 64,
                    alert_thresholds: None,
                },
                &tree,
                (site, jiff::Timestamp::now()),
            )
            .await
            .unwrap();
        }
    };
    set(None, Some(1_000_000_000)).await;
    assert_eq!(budget().await, opened);
    set(Some(100), None).await;
    assert_eq!(budget().await, 100);
    set(None, None).await;
    assert_eq!(budget().await, opened);
}
