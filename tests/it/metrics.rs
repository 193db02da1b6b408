//! The metrics (docs/design.md section 5) on the live system: figures from a scripted database
//! history against values computed by hand, `tranche simulate` and the live figures on the same
//! replay, utilization accumulated from agents' heartbeats, the demo's history, and a real
//! Prometheus scraping `/metrics`.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::Value;
use tranche::config::Site;
use tranche::db::tree::{self as tree_db, NodeKind};
use tranche::domain::Share;

use crate::support::TestApp;

fn ts(s: i64) -> String {
    jiff::Timestamp::from_second(s).unwrap().to_string()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Admin, a 4-GPU node of model X in cluster `c`, projects `a` and `b` at 50% each, a lead of
/// `a` and a finance user. Returns (cluster id, model id, project ids a and b, submitter id).
async fn small_org(app: &TestApp) -> (i64, i64, i64, i64, i64) {
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    let model = tranche::db::inventory::create_gpu_model(&app.pool, &admin, "X", "1", "1.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    tranche::db::inventory::add_node(&app.pool, &admin, cluster, "n0", "X", "4")
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    let mut ids = Vec::new();
    for p in ["a", "b"] {
        ids.push(
            tree_db::create_node(
                &app.pool,
                &admin,
                root,
                p,
                NodeKind::Project,
                Share::parse_percent("50").unwrap(),
            )
            .await
            .unwrap(),
        );
    }
    tranche::db::users::create(&app.pool, None, "lead-a", "lead", Some("a"))
        .await
        .unwrap();
    tranche::db::users::create(&app.pool, None, "fin", "finance", None)
        .await
        .unwrap();
    (cluster, model, ids[0], ids[1], admin.id)
}

/// A run row and its events (kind, seconds after `t0`, attempt), as the service writes them.
#[expect(clippy::too_many_arguments)]
async fn scripted_run(
    app: &TestApp,
    ids: (i64, i64, i64, i64),
    gpus: i32,
    min_runtime_s: i64,
    state: &str,
    submitted: i64,
    ended: Option<i64>,
    events: &[(&str, i64, i32)],
) -> i64 {
    let (cluster, model, project, user) = ids;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO runs (project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, time_limit_s, command, state, submitted_at, queued_at, ended_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 7200, 'train', $7, to_timestamp($8), to_timestamp($8), to_timestamp($9)) RETURNING id",
    )
    .bind(project)
    .bind(cluster)
    .bind(model)
    .bind(user)
    .bind(gpus)
    .bind(min_runtime_s)
    .bind(state)
    .bind(submitted as f64)
    .bind(ended.map(|e| e as f64))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    for (kind, at, attempt) in events {
        sqlx::query("INSERT INTO run_events (run_id, kind, attempt, at) VALUES ($1, $2, $3, to_timestamp($4))")
            .bind(id)
            .bind(kind)
            .bind(attempt)
            .bind(*at as f64)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    id
}

#[tokio::test]
async fn live_figures_equal_hand_computed_values_for_a_scripted_history() {
    let app = TestApp::new().await;
    let (cluster, model, a, b, user) = small_org(&app).await;
    // Two whole hours, ending an hour ago.
    let t0 = (jiff::Timestamp::now().as_second() / 3600 - 3) * 3600;
    for (from, to, installed, healthy) in
        [(t0 - 600, t0 + 3600, 4, 4), (t0 + 3600, t0 + 7200, 4, 2)]
    {
        sqlx::query("INSERT INTO gpu_health_samples VALUES ($1, $2, to_timestamp($3), to_timestamp($4), $5, $6)")
            .bind(cluster)
            .bind(model)
            .bind(from as f64)
            .bind(to as f64)
            .bind(installed)
            .bind(healthy)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    // a: a protected 2-GPU run for the first hour.
    let r1 = scripted_run(
        &app,
        (cluster, model, a, user),
        2,
        3600,
        "succeeded",
        t0,
        Some(t0 + 3600),
        &[
            ("submitted", t0, 0),
            ("started", t0, 1),
            ("running", t0 + 5, 1),
            ("succeeded", t0 + 3600, 1),
        ],
    )
    .await;
    // b: a debug run waiting 600 s, running 1,200 s.
    let r2 = scripted_run(
        &app,
        (cluster, model, b, user),
        1,
        600,
        "succeeded",
        t0,
        Some(t0 + 1800),
        &[
            ("submitted", t0, 0),
            ("started", t0 + 600, 1),
            ("succeeded", t0 + 1800, 1),
        ],
    )
    .await;
    // b: an unallocated run waiting 60 s, preempted after 1,740 s, started again after the
    // window; still running (present until now).
    scripted_run(
        &app,
        (cluster, model, b, user),
        1,
        0,
        "running",
        t0 + 3600,
        None,
        &[
            ("submitted", t0 + 3600, 0),
            ("started", t0 + 3660, 1),
            ("preempted", t0 + 5400, 1),
            ("requeued", t0 + 5430, 1),
            ("started", t0 + 7300, 2),
        ],
    )
    .await;
    for (run, busy, observed) in [(r1, 3600.0, 7200.0), (r2, 1200.0, 1200.0)] {
        sqlx::query("INSERT INTO run_utilization VALUES ($1, 1, to_timestamp($2), $3, $4)")
            .bind(run)
            .bind(t0 as f64)
            .bind(busy)
            .bind(observed)
            .execute(&app.pool)
            .await
            .unwrap();
    }

    // By hand: healthy 4 x 3600 + 2 x 3600 = 21,600 of 28,800 GPU-s; allocated 2 x 3600 +
    // 1 x 1200 = 8,400; unallocated 1 x 1,740. Entitlements 2 GPUs each: a owed 7,200 and
    // received it; b owed 1,800 (hour 1) + 3,600 (hour 2, the free run present), received
    // 1,200 within it. Waits: protected 0, debug 600, unallocated 60.
    let healthy = 4.0 * 3600.0 + 2.0 * 3600.0;
    let alloc = 2.0 * 3600.0 + 1200.0;
    let free = 5400.0 - 3660.0;
    let owed = [7200.0, 1800.0 + 3600.0];
    let got = [7200.0, 1200.0];
    let impact = (got[0] + got[1]) / (owed[0] + owed[1]);
    let per_1000 = 1000.0 / ((alloc + free) / 3600.0);
    let q = format!("cluster=c&from={}&to={}", ts(t0), ts(t0 + 7200));

    let fin = app.token_for("fin").await;
    let (status, body) = app
        .api("GET", &format!("/api/v1/metrics?{q}"), Some(&fin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["scope"], "all");
    let pools = body["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 1);
    let p = &pools[0];
    assert_eq!(
        (p["cluster"].as_str(), p["gpu_model"].as_str()),
        (Some("c"), Some("X"))
    );
    assert!(close(num(p, "availability"), healthy / (4.0 * 7200.0)));
    assert!(close(num(p, "occupancy"), (alloc + free) / healthy));
    assert!(close(num(p, "occupancy_allocated"), alloc / healthy));
    assert!(close(num(p, "occupancy_unallocated"), free / healthy));
    assert!(close(num(p, "impact"), impact));
    assert!(close(num(p, "projects_served_share"), 0.5));
    assert!(close(
        num(p, "utilization"),
        (3600.0 + 1200.0) / (7200.0 + 1200.0)
    ));
    assert_eq!(p["waits"]["debug"]["p50_s"], 600.0);
    assert_eq!(p["waits"]["protected"]["p90_s"], 0.0);
    assert_eq!(p["waits"]["unallocated"]["p50_s"], 60.0);
    assert_eq!(p["waits"]["all"]["runs"], 3);
    assert_eq!(p["preemptions"], 1);
    assert!(close(num(p, "preemptions_per_1000_gpu_hours"), per_1000));
    let projects = p["projects"].as_array().unwrap();
    for (i, name) in ["a", "b"].iter().enumerate() {
        let pr = projects.iter().find(|x| x["name"] == *name).unwrap();
        assert!(close(num(pr, "owed_gpu_hours"), owed[i] / 3600.0), "{pr}");
        assert!(
            close(num(pr, "received_of_owed_gpu_hours"), got[i] / 3600.0),
            "{pr}"
        );
    }

    // The CSV carries the same figures.
    let mut client = app.client();
    let fin_pw = "Metrics-test-password-2026";
    tranche::db::users::set_password(&app.pool, None, "fin", fin_pw)
        .await
        .unwrap();
    client.login("fin", fin_pw).await;
    let (status, csv, _) = client.get(&format!("/dashboard.csv?{q}")).await;
    assert_eq!(status, StatusCode::OK, "{csv}");
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let head = rd.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    let pool_row = rows.iter().find(|r| r[col("project")].is_empty()).unwrap();
    let f = |r: &csv::StringRecord, c: &str| r[col(c)].parse::<f64>().unwrap();
    assert!(close(f(pool_row, "availability"), 0.75));
    assert!(close(f(pool_row, "impact"), impact));
    assert!(close(f(pool_row, "debug_wait_p50_s"), 600.0));
    // The page's other figures are columns too.
    assert!(close(f(pool_row, "preemptions"), 1.0));
    assert!(close(
        f(pool_row, "preemptions_per_1000_gpu_hours"),
        per_1000
    ));
    assert!(close(
        f(pool_row, "all_wait_p90_s"),
        p["waits"]["all"]["p90_s"].as_f64().unwrap()
    ));
    assert!(close(
        f(pool_row, "utilization_coverage"),
        p["utilization_coverage"].as_f64().unwrap()
    ));
    let b_row = rows.iter().find(|r| &r[col("project")] == "b").unwrap();
    assert!(close(f(b_row, "owed_gpu_hours"), 1.5));
    // The page shows them (and readable without JavaScript: the charts are inline SVG).
    let (status, html, _) = client.get(&format!("/dashboard?{q}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("75.0%") && html.contains(&format!("{impact:.3}")),
        "{html}"
    );
    assert!(html.contains("<svg") && html.contains("id=\"drains\""));

    // A lead of a sees the pool's aggregates and only a's project figures.
    let lead = app.token_for("lead-a").await;
    let (status, body) = app
        .api("GET", &format!("/api/v1/metrics?{q}"), Some(&lead), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let p = &body["pools"][0];
    assert_eq!(body["scope"], "subtree");
    assert_eq!(p["projects"].as_array().unwrap().len(), 1);
    assert!(close(num(p, "impact"), 1.0));
    assert!(close(num(p, "availability"), 0.75));
    assert_eq!(p["waits"]["all"]["runs"], 1);

    // Bad input: a JSON error naming the field, never a 5xx.
    for (query, field) in [
        ("window=2w", "window"),
        ("from=yesterday", "from"),
        (&*format!("from={}&to={}", ts(t0), ts(t0)), "to"),
        ("window=period&period=1999-01", "period"),
        // A period beside another window was ignored (the last 24 hours answered).
        ("window=7d&period=2026-11", "period"),
    ] {
        let (status, body) = app
            .api("GET", &format!("/api/v1/metrics?{query}"), Some(&fin), None)
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}: {body}");
    }
    // An unknown cluster is a 404 naming it, as every unknown name in the API.
    let (status, body) = app
        .api("GET", "/api/v1/metrics?cluster=nope", Some(&fin), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "not_found", "{body}");
    // A period alone asks for the period window.
    let label = tranche::ledger::Period::containing(jiff::Timestamp::now(), &app.state.site)
        .label(&app.state.site);
    let (status, body) = app
        .api(
            "GET",
            &format!("/api/v1/metrics?period={label}"),
            Some(&fin),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["window"], "period", "{body}");
}

/// A window ending now: runs count to now, and so does the last health sample (taken up to a
/// minute before), so a pool whose every GPU is held is 100% occupied, not more. Before, the
/// healthy GPU-time stopped at the sample while the runs' went on to now (100.8% here).
#[tokio::test]
async fn a_window_ending_now_measures_health_and_runs_over_the_same_time() {
    let app = TestApp::new().await;
    let (cluster, model, a, _, user) = small_org(&app).await;
    let now = jiff::Timestamp::now().as_second();
    let sampled = now - 30;
    sqlx::query(
        "INSERT INTO gpu_health_samples VALUES ($1, $2, to_timestamp($3), to_timestamp($4), 4, 4)",
    )
    .bind(cluster)
    .bind(model)
    .bind((sampled - 7200) as f64)
    .bind(sampled as f64)
    .execute(&app.pool)
    .await
    .unwrap();
    scripted_run(
        &app,
        (cluster, model, a, user),
        4,
        3600,
        "running",
        now - 7200,
        None,
        &[("submitted", now - 7200, 0), ("started", now - 7200, 1)],
    )
    .await;
    let share = tranche::metrics::ProjectShare {
        id: a,
        name: "a".into(),
        effective_share: 0.5,
        before: Vec::new(),
    };
    let scope = |to: i64| tranche::metrics::history::Scope {
        cluster,
        gpu_model: model,
        from: now - 3600,
        to,
        now,
        project: None,
    };
    let live = tranche::metrics::history::load(&app.pool, scope(now), vec![share.clone()], 4.0)
        .await
        .unwrap();
    let figures = tranche::metrics::compute(&live);
    assert!(
        close(figures.occupancy.unwrap(), 1.0),
        "{:?}",
        figures.occupancy
    );
    assert!(
        close(figures.availability.unwrap(), 1.0),
        "{:?}",
        figures.availability
    );
    // Owed over the whole hour: half of 4 GPUs for 3,600 s, all of it received.
    let a_figures = &figures.projects[0];
    assert!(close(a_figures.owed_gpu_hours, 2.0), "{a_figures:?}");
    // A sample older than the longest stretch one may stand for is not stretched to now.
    let stale = tranche::metrics::history::Scope {
        now: sampled + tranche::metrics::history::HEALTH_SAMPLE_MAX_S as i64 + 1,
        to: sampled + tranche::metrics::history::HEALTH_SAMPLE_MAX_S as i64 + 1,
        ..scope(now)
    };
    let h = tranche::metrics::history::load(&app.pool, stale, vec![share], 4.0)
        .await
        .unwrap();
    assert_eq!(h.health.last().unwrap().to, sampled);
}

/// Utilization is stored per run and hour; a window inside an hour, or across two, counts
/// each hour in proportion to the part it covers. Before, a window inside one hour had none.
#[tokio::test]
async fn utilization_of_a_window_inside_an_hour_counts_that_hours_part() {
    let app = TestApp::new().await;
    let (cluster, model, a, _, user) = small_org(&app).await;
    let now = jiff::Timestamp::now().as_second();
    let h = now / 3600 * 3600 - 7200;
    let run = scripted_run(
        &app,
        (cluster, model, a, user),
        4,
        3600,
        "running",
        h,
        None,
        &[("submitted", h, 0), ("started", h, 1)],
    )
    .await;
    for (hour, busy, observed) in [(h, 3600.0, 14_400.0), (h + 3600, 10_800.0, 14_400.0)] {
        sqlx::query("INSERT INTO run_utilization VALUES ($1, 1, to_timestamp($2), $3, $4)")
            .bind(run)
            .bind(hour as f64)
            .bind(busy)
            .bind(observed)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    let load = |from: i64, to: i64| {
        let pool = app.pool.clone();
        async move {
            let h = tranche::metrics::history::load(
                &pool,
                tranche::metrics::history::Scope {
                    cluster,
                    gpu_model: model,
                    from,
                    to,
                    now,
                    project: None,
                },
                Vec::new(),
                4.0,
            )
            .await
            .unwrap();
            tranche::metrics::compute(&h).utilization
        }
    };
    // Inside the first hour: its ratio, 25%.
    let inside = load(h + 600, h + 1800).await.unwrap();
    assert!(close(inside, 0.25), "{inside}");
    // Half of each hour: (1,800 + 5,400) / (7,200 + 7,200) = 50%.
    let across = load(h + 1800, h + 5400).await.unwrap();
    assert!(close(across, 0.5), "{across}");
    // Both whole hours: (3,600 + 10,800) / 28,800.
    let whole = load(h, h + 7200).await.unwrap();
    assert!(close(whole, 0.5), "{whole}");
}

#[tokio::test]
async fn simulate_and_live_agree_on_the_same_replay() {
    use tranche::scheduler::PolicyKind;
    use tranche::sim::{replay, setup, trace};
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/philly-sample.csv");
    let tr = trace::load(&path, trace::Format::Philly, false).unwrap();
    let pools = setup::default_cluster(&tr.jobs);
    let tree = setup::default_tree(&tr.jobs);
    let site = setup::build_site(&pools, &tree, &tr.jobs).unwrap();
    let window = (
        tr.jobs[0].submit,
        tr.jobs[tr.jobs.len() - 1].submit.max(tr.jobs[0].submit + 1),
    );
    let plans = setup::plan(&site, &tr.jobs, PolicyKind::Tranche);
    let rep = replay::replay(&site, &plans, PolicyKind::Tranche, window, &|_| {});
    let summary = replay::summarize(&site, &plans, &rep, window);
    let sim = tranche::metrics::compute(&replay::history(&site, &plans, &rep, window));
    assert!(sim.allocated_gpu_hours > 0.0);

    // The same organisation in the database: the pool's nodes and one project per tenant.
    let app = TestApp::new().await;
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    let pool_spec = &pools[0];
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, &pool_spec.model, "1", "1.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "sim")
        .await
        .unwrap();
    let model: i64 = sqlx::query_scalar("SELECT id FROM gpu_models WHERE name = $1")
        .bind(&pool_spec.model)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO nodes (cluster_id, name, gpu_model_id, gpu_count) SELECT $1, 'n' || i, $2, $3 FROM generate_series(1, $4) i")
        .bind(cluster)
        .bind(model)
        .bind(pool_spec.gpus_per_node as i32)
        .bind(pool_spec.nodes as i32)
        .execute(&app.pool)
        .await
        .unwrap();
    let root = app.node_id("Organisation").await;
    let mut projects = BTreeMap::new();
    for (id, name) in &site.names {
        let bp = tree.iter().find(|e| &e.path == name).unwrap().share.0;
        let db_id = tree_db::create_node(
            &app.pool,
            &admin,
            root,
            name,
            NodeKind::Project,
            Share::parse_percent(&format!("{}.{:02}", bp / 100, bp % 100)).unwrap(),
        )
        .await
        .unwrap();
        projects.insert(*id, db_id);
    }
    // The replay is written into the past, where this tree stood all along (an ended period
    // is owed by the tree it ended with: no snapshot from before these nodes).
    sqlx::query("DELETE FROM tree_snapshots")
        .execute(&app.pool)
        .await
        .unwrap();
    let shift = jiff::Timestamp::now().as_second() - 3600 - rep.end;
    let target = tranche::metrics::record::Target {
        cluster,
        gpu_model: model,
        submitter: admin.id,
        projects,
        shift_s: shift,
        health: vec![(window.0, window.1, site.gpus, site.gpus)],
        command: "replay".into(),
    };
    let mut conn = app.pool.acquire().await.unwrap();
    let rec = tranche::metrics::record::write(&mut conn, &target, &plans, &rep)
        .await
        .unwrap();
    drop(conn);
    assert_eq!(rec.runs, plans.len() as u64);

    let token = app.token_for(&admin.name).await;
    let (status, body) = app
        .api(
            "GET",
            &format!(
                "/api/v1/metrics?cluster=sim&from={}&to={}",
                ts(window.0 + shift),
                ts(window.1 + shift)
            ),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let live = &body["pools"][0];
    let pairs = [
        ("availability", sim.availability.unwrap()),
        ("occupancy", sim.occupancy.unwrap()),
        ("occupancy_unallocated", sim.occupancy_unallocated.unwrap()),
        ("impact", sim.impact),
        (
            "preemptions_per_1000_gpu_hours",
            sim.preemptions_per_1000_gpu_hours,
        ),
    ];
    for (k, v) in pairs {
        assert!(close(num(live, k), v), "{k}: live {} simulate {v}", live[k]);
    }
    // What `tranche simulate` prints is the same definition.
    assert!(close(num(live, "impact"), summary.impact));
    assert!(close(num(live, "occupancy"), summary.occupancy));
    assert_eq!(live["preemptions"], sim.preemptions);
    for class in ["all", "debug", "protected", "unallocated"] {
        let w = match class {
            "all" => sim.waits.all,
            "debug" => sim.waits.debug,
            "protected" => sim.waits.protected,
            _ => sim.waits.unallocated,
        };
        assert_eq!(live["waits"][class]["runs"], w.runs, "{class}");
        assert!(
            close(num(&live["waits"][class], "p50_s"), w.p50_s),
            "{class}"
        );
        assert!(
            close(num(&live["waits"][class], "p90_s"), w.p90_s),
            "{class}"
        );
    }
    for p in &sim.projects {
        let l = live["projects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == p.name.as_str())
            .unwrap();
        assert!(
            close(num(l, "owed_gpu_hours"), p.owed_gpu_hours),
            "{}",
            p.name
        );
        assert!(
            close(num(l, "received_gpu_hours"), p.received_gpu_hours),
            "{}",
            p.name
        );
    }
}

#[tokio::test]
async fn heartbeats_accumulate_busy_and_observed_gpu_seconds() {
    let (app, _base, researcher, _lead, agent) = crate::live::live(crate::live::site()).await;
    // A run on a declared local node, started by the scheduler.
    app.declare_agent_nodes("util-host", 1).await;
    let (status, reg) = app
        .api(
            "POST",
            "/api/v1/agent/register",
            Some(&agent),
            Some(serde_json::json!({"nodes": [{"name": "util-host", "gpus": 8, "gpu_model": "H100"}], "agent": "test"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reg}");
    let session = reg["session"].as_str().unwrap().to_string();
    let node = reg["nodes"][0]["id"].as_i64().unwrap();
    let (status, run) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&researcher),
            Some(serde_json::json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100", "gpus": 2,
                "min_runtime_s": 0, "time_limit_s": 3600, "command": "sleep 600"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{run}");
    let run_id = run["id"].as_i64().unwrap();
    tranche::runs::service::pass(&app.state).await.unwrap();
    let (gpus, attempt): (Vec<i32>, i32) = sqlx::query_as(
        "SELECT gpu_indices, attempt FROM run_placements WHERE run_id = $1 AND node_id = $2",
    )
    .bind(run_id)
    .bind(node)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // GPUs of the run at 40% and 80%, the others idle; the first report starts the clock.
    let mut util = vec![Some(0); 8];
    util[gpus[0] as usize] = Some(40);
    util[gpus[1] as usize] = Some(80);
    let report = serde_json::json!({"session": session, "wait_s": 0,
        "nodes": [{"node": node, "utilization": util}],
        "runs": [{"run": run_id, "attempt": attempt, "node": node, "state": "running"}]});
    let mut at = Vec::new();
    for _ in 0..3 {
        let (status, body) = app
            .api(
                "POST",
                "/api/v1/agent/sync",
                Some(&agent),
                Some(report.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let t: Option<f64> = sqlx::query_scalar(
            "SELECT extract(epoch FROM utilization_at)::FLOAT8 FROM run_placements WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        at.push(t);
        // The next report must come more than a second later to be counted: wait for the
        // database clock to pass it, polling.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let past: bool = sqlx::query_scalar(
                "SELECT coalesce(now() > (SELECT utilization_at FROM run_placements WHERE run_id = $1) + interval '1.05 second', true)",
            )
            .bind(run_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
            if past {
                break;
            }
            assert!(std::time::Instant::now() < deadline);
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    let (busy, observed): (f64, f64) = sqlx::query_as(
        "SELECT sum(busy_gpu_s), sum(observed_gpu_s) FROM run_utilization WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // Counted intervals: from the first counted report to the last.
    let first = at.iter().flatten().next().copied().unwrap();
    let last = at.iter().flatten().last().copied().unwrap();
    let span = last - first;
    assert!(span > 1.0, "{at:?}");
    assert!(
        close(observed, 2.0 * span),
        "observed {observed} span {span}"
    );
    assert!(close(busy, (0.4 + 0.8) * span), "busy {busy} span {span}");
}

#[tokio::test]
async fn project_page_owed_is_the_metrics_demand_capped_owed_and_its_money_is_current() {
    let app = TestApp::new().await;
    let (cluster, model, a, _b, user) = small_org(&app).await;
    let now = jiff::Timestamp::now();
    let period = tranche::ledger::Period::containing(now, &app.state.site);
    // Two whole hours ending at the last full hour, inside this budget period.
    let t0 = (now.as_second() / 3600 - 2) * 3600;
    if t0 < period.start.as_second() {
        eprintln!("skipped: the budget period began less than two hours ago");
        return;
    }
    // a (entitled to 2 of the 4 GPUs): a 4-GPU run for half an hour; a 1-GPU run queued from
    // t0 + 1,800 that never starts and is cancelled at t0 + 5,400.
    scripted_run(
        &app,
        (cluster, model, a, user),
        4,
        3600,
        "succeeded",
        t0,
        Some(t0 + 1800),
        &[
            ("submitted", t0, 0),
            ("started", t0, 1),
            ("succeeded", t0 + 1800, 1),
        ],
    )
    .await;
    scripted_run(
        &app,
        (cluster, model, a, user),
        1,
        3600,
        "cancelled",
        t0 + 1800,
        Some(t0 + 5400),
        &[("submitted", t0 + 1800, 0), ("cancelled", t0 + 5400, 0)],
    )
    .await;
    // By hand: no demand before t0, so nothing owed (the old pro-rata figure would be 2 GPUs x
    // the hours since the period began). Hour t0: demand 4 x 1,800 + 1 x 1,800 = 9,000 GPU-s,
    // capped at 2 x 3,600 = 7,200; received 4 x 1,800 = 7,200. Hour t0 + 1: demand 1 x 1,800,
    // received 0. Owed 9,000 GPU-s = 2.5 GPU-hours, received 2.0 (80%), impact 7,200 / 9,000.
    let (owed, received) = (9000.0 / 3600.0, 7200.0 / 3600.0);
    let pw = "Project-page-password-2026";
    tranche::db::users::set_password(&app.pool, None, "lead-a", pw)
        .await
        .unwrap();
    let mut lead = app.client();
    lead.login("lead-a", pw).await;
    let (status, html, _) = lead.get(&format!("/projects/{a}")).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(
        html.contains(&format!(
            "<strong>{owed:.1}</strong> GPU-hours; received (allocated runs): <strong>{received:.1}</strong> GPU-hours (80%); impact (received of what was owed): <strong>80.0%</strong>"
        )),
        "{html}"
    );
    // The day's row of the table: owed and received to date.
    assert!(
        html.contains(&format!(
            "<td class=\"num\">{owed:.1}</td><td class=\"num\">{received:.1}</td></tr>\n</tbody>"
        )),
        "{html}"
    );
    // The metrics page says the same for the period.
    let token = app.token_for("lead-a").await;
    let (status, body) = app
        .api("GET", "/api/v1/metrics?window=period", Some(&token), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let pr = &body["pools"][0]["projects"][0];
    assert_eq!(pr["id"], a);
    assert!(close(num(pr, "owed_gpu_hours"), owed), "{pr}");
    assert!(close(num(pr, "received_gpu_hours"), received), "{pr}");

    // The project's own writes show at once, though its settings and money are cached: a
    // charge (the balance) and a new member.
    let balance = |body: &Value| body["balance_minor"].as_i64().unwrap();
    let (_, before) = app
        .api("GET", &format!("/api/v1/projects/{a}"), Some(&token), None)
        .await;
    let shown = tranche::domain::Money(balance(&before)).display("USD");
    let (_, html, _) = lead.get(&format!("/projects/{a}")).await;
    assert!(html.contains(&shown), "{shown} in {html}");
    let mut tx = app.pool.begin().await.unwrap();
    tranche::ledger::charge_usage(
        &app.pool,
        &mut tx,
        &app.state.site,
        jiff::Timestamp::now(),
        a,
        (cluster, model),
        3600,
        true,
        None,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    sqlx::query("INSERT INTO project_members (project_id, user_id) SELECT $1, id FROM users WHERE name = 'fin'")
        .bind(a)
        .execute(&app.pool)
        .await
        .unwrap();
    // One GPU-hour of model X: weight 1 x 1.00.
    let after = tranche::domain::Money(balance(&before) - 100).display("USD");
    let (_, html, _) = lead.get(&format!("/projects/{a}")).await;
    assert!(html.contains(&after), "{after} in {html}");
    assert!(html.contains("<li>fin"), "{html}");
}

/// GPU-seconds the recorded attempts held, from the timeline alone (a `started` event to the
/// next event of the same attempt), per (GPU model, whether after `split`, the start of the
/// current budget period; an attempt across it is split there): the ledger's charges
/// recomputed without the replay, the recorder or the ledger. Also every attempt as
/// (start, end, GPUs), s.
async fn held_by_model_and_period(
    app: &TestApp,
    split: i64,
) -> (BTreeMap<(String, bool), i64>, Vec<(i64, i64, i64)>) {
    let events: Vec<(i64, i32, String, i64, i32, String)> = sqlx::query_as(
        "SELECT e.run_id, e.attempt, e.kind, extract(epoch FROM e.at)::BIGINT, r.gpus, m.name \
         FROM run_events e JOIN runs r ON r.id = e.run_id JOIN gpu_models m ON m.id = r.gpu_model_id \
         ORDER BY e.run_id, e.attempt, e.id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut held: BTreeMap<(String, bool), i64> = BTreeMap::new();
    let mut spans = Vec::new();
    let mut open: Option<(i64, i32, i64)> = None;
    for (run, attempt, kind, at, gpus, model) in events {
        if let Some((r, a, start)) = open
            && r == run
            && a == attempt
            && kind != "started"
        {
            let g = i64::from(gpus);
            let before = (at.min(split) - start).max(0);
            let after = (at - start.max(split)).max(0);
            *held.entry((model.clone(), false)).or_default() += g * before;
            *held.entry((model.clone(), true)).or_default() += g * after;
            spans.push((start, at, g));
            open = None;
        }
        if kind == "started" {
            open = Some((run, attempt, at));
        }
    }
    (held, spans)
}

#[tokio::test]
async fn demo_history_is_recorded_once_charged_when_used_and_shows_in_the_metrics() {
    let (app, _users) = TestApp::with_demo().await;
    let site = &app.state.site;
    let loaded = tranche::demo::load_history(&app.pool, site)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(loaded.clusters.len(), 3);
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let count_postings = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM ledger_postings WHERE kind IN ('usage', 'usage_free')",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let postings = count_postings().await;
    assert_eq!(postings as u64, loaded.postings);
    assert!(postings > 100, "{postings}");
    assert_eq!(
        runs as u64,
        loaded.clusters.iter().map(|(_, r)| r.runs).sum::<u64>()
    );
    // Twice: nothing more, neither runs nor postings.
    assert!(
        tranche::demo::load_history(&app.pool, site)
            .await
            .unwrap()
            .is_none()
    );
    let again: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(again, runs);
    assert_eq!(count_postings().await, postings);
    // The history is nobody's own: its submitter cannot sign in, and a researcher sees no
    // past run of a project he is not a member of.
    let submitters: (i64, String, bool, Option<String>) = sqlx::query_as(
        "SELECT count(DISTINCT u.id), min(u.name), bool_and(u.disabled), max(u.password_hash) \
         FROM runs r JOIN users u ON u.id = r.submitted_by",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(submitters, (1, "demo-history".to_string(), true, None));
    let researcher = app.token_for("demo-researcher").await;
    let (status, answer) = app
        .api(
            "GET",
            "/api/v1/runs?project=fm-red-team",
            Some(&researcher),
            None,
        )
        .await;
    // Not the researcher's to see: as a missing project.
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let (status, answer) = app
        .api("GET", "/api/v1/runs?limit=1000", Some(&researcher), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(
        answer["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["project"] != "fm-red-team"),
        "{answer}"
    );
    // Nothing recorded is left for the scheduler, and the ledger balances.
    let active: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM runs WHERE state NOT IN ('succeeded', 'cancelled')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(active, 0);
    assert_eq!(
        tranche::ledger::problems(&app.pool).await.unwrap(),
        Vec::<String>::new()
    );

    // The spend report over the history's window (its periods) equals the GPU-time of the
    // recorded attempts, recomputed from their timelines; the money is those GPU-hours at
    // each model's billing weight and price (each posting rounds to a minor unit).
    let now = jiff::Timestamp::now();
    let current = tranche::ledger::Period::containing(now, site);
    let first = tranche::ledger::Period::containing(
        now - jiff::SignedDuration::from_hours(24 * tranche::demo::HISTORY_DAYS),
        site,
    );
    let (held, spans) = held_by_model_and_period(&app, current.start.as_second()).await;
    let total_held: i64 = held.values().sum();
    assert!(
        (total_held as f64 / 3600.0
            - loaded
                .clusters
                .iter()
                .map(|(_, r)| r.gpu_hours)
                .sum::<f64>())
        .abs()
            < 1e-3
    );
    let finance = app.token_for("demo-finance").await;
    let mut periods = vec![(first, false)];
    if current != first {
        periods.push((current, true));
    }
    let (mut charged_s, mut free_s) = (0_i64, 0_i64);
    for (period, is_current) in periods {
        let label = period
            .start
            .to_zoned(site.time_zone.clone())
            .strftime("%Y-%m")
            .to_string();
        let (status, body) = app
            .api(
                "GET",
                &format!("/api/v1/spend?period={label}"),
                Some(&finance),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for model in ["H100", "B200", "B300"] {
            let row = body["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["depth"] == 0 && r["gpu_model"] == model)
                .unwrap_or_else(|| panic!("no {model} row in {label}: {body}"));
            let expected = held
                .get(&(model.to_string(), is_current))
                .copied()
                .unwrap_or(0);
            let (run_h, free_h) = (num(row, "run_gpu_hours"), num(row, "free_gpu_hours"));
            assert!(
                ((run_h + free_h) * 3600.0 - expected as f64).abs() < 1e-3,
                "{label} {model}: report {run_h} + {free_h} GPU-hours, recorded {expected} GPU-s"
            );
            charged_s += (run_h * 3600.0).round() as i64;
            free_s += (free_h * 3600.0).round() as i64;
            let (weight, price): (i32, i64) = sqlx::query_as(
                "SELECT billing_weight_milli, price_per_gpu_hour_minor FROM gpu_models WHERE name = $1",
            )
            .bind(model)
            .fetch_one(&app.pool)
            .await
            .unwrap();
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM ledger_postings p JOIN gpu_models m ON m.id = p.gpu_model_id \
                 WHERE p.kind = 'usage' AND m.name = $1 AND p.period_start = $2",
            )
            .bind(model)
            .bind(tranche::ledger::to_time(period.start))
            .fetch_one(&app.pool)
            .await
            .unwrap();
            let money = run_h * f64::from(weight) / 1000.0 * price as f64;
            let minor = row["run_minor"].as_i64().unwrap() as f64;
            assert!(
                (minor - money).abs() <= n as f64 * 0.5 + 1e-6,
                "{label} {model}: {minor} charged for {run_h} GPU-hours ({money})"
            );
        }
    }
    assert_eq!(charged_s, loaded.charged_gpu_seconds);
    assert_eq!(free_s, loaded.free_gpu_seconds);
    // The postings stand at the instants the time was used: inside the history's window.
    let (min_at, max_at): (i64, i64) = sqlx::query_as(
        "SELECT extract(epoch FROM min(at))::BIGINT, extract(epoch FROM max(at))::BIGINT \
         FROM ledger_postings WHERE kind IN ('usage', 'usage_free')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let earliest = spans.iter().map(|s| s.0).min().unwrap();
    assert!(
        min_at >= earliest && max_at <= now.as_second(),
        "{min_at}..{max_at}"
    );
    assert!(max_at - min_at > 25 * 86_400, "{min_at}..{max_at}");
    // Fair share: the scheduler's usage (charged postings of the last 7 days, billing-weighted
    // as its pass reads them) covers the recorded time of that window. Postings are daily, so
    // the day at the window's start counts whole: between the time held inside the window and
    // that of one day more.
    if loaded.free_gpu_seconds == 0 {
        let in_ledger: i64 = sqlx::query_scalar(
            "SELECT coalesce(sum(gpu_seconds), 0)::BIGINT FROM ledger_postings \
             WHERE kind = 'usage' AND at > now() - interval '7 days'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        let inside = |days: i64| -> i64 {
            let lo = now.as_second() - days * 86_400;
            spans
                .iter()
                .map(|&(start, end, gpus)| gpus * (end - start.max(lo)).max(0))
                .sum()
        };
        assert!(
            inside(7) <= in_ledger && in_ledger <= inside(8),
            "{} <= {in_ledger} <= {}",
            inside(7),
            inside(8)
        );
    }
    let token = app.token_for("demo-finance").await;
    let (status, body) = app
        .api(
            "GET",
            "/api/v1/metrics?window=30d&cluster=h100-east",
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let p = &body["pools"][0];
    let gpu_h = loaded
        .clusters
        .iter()
        .find(|(c, _)| c == "h100-east")
        .unwrap()
        .1
        .gpu_hours;
    let assigned = num(p, "allocated_gpu_hours") + num(p, "unallocated_gpu_hours");
    // The window starts up to a few minutes after the history does: nearly all of it inside.
    assert!(
        assigned > 0.9 * gpu_h && assigned <= gpu_h + 1e-6,
        "{assigned} of {gpu_h}"
    );
    assert!(num(p, "occupancy") > 0.3, "{p}");
    assert!(num(p, "impact") > 0.5, "{p}");
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the child process on drop.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_metrics_and_answers_a_query() {
    let token = "metrics-test-token-0123456789abcdef";
    let app = TestApp::with_site(Site {
        metrics_token: Some(tranche::config::Secret::new(token)),
        ..Site::for_tests()
    })
    .await;
    tranche::demo::load(&app.pool).await.unwrap().unwrap();
    let base = app.serve().await;
    let http = reqwest::Client::new();
    // Refused without the token or with another; a request counted by its route template.
    let r = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
    let r = http
        .get(format!("{base}/metrics"))
        .bearer_auth("wrong-token-wrong-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
    let r = http
        .get(format!("{base}/api/v1/runs/12345"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
    let text = http
        .get(format!("{base}/metrics"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("tranche_http_requests_total{route=\"/api/v1/runs/{id}\",method=\"GET\",status=\"401\"} 1"), "{text}");
    assert!(!text.contains("12345"));
    // promtool accepts the exposition.
    let mut check = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; scripts/test installs it)");
    use std::io::Write as _;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A real Prometheus scraping the server every 2 seconds.
    let dir = std::env::temp_dir().join(format!("tranche-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("token"), token).unwrap();
    let target = base.trim_start_matches("http://");
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\nscrape_configs:\n  - job_name: tranche\n    authorization:\n      credentials_file: {}\n    static_configs:\n      - targets: ['{target}']\n",
            dir.join("token").display()
        ),
    )
    .unwrap();
    let port = free_port();
    let _prom = Child(
        std::process::Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("prometheus (Debian package prometheus; scripts/test installs it)"),
    );
    // The demo's H100 cluster: 1,024 GPUs, no agent ever served them, so no run can start
    // there: all down, as the scheduler and the Metrics page's availability count them.
    let expected: i64 = sqlx::query_scalar(
        "SELECT sum(n.gpu_count) FROM nodes n JOIN clusters c ON c.id = n.cluster_id WHERE c.name = 'h100-east'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let query = "tranche_gpus{cluster=\"h100-east\",state=\"down\"}";
    // Generous: on a loaded machine Prometheus takes a while to start and scrapes may time out.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let value = loop {
        let answer = http
            .get(format!("http://127.0.0.1:{port}/api/v1/query"))
            .query(&[("query", query)])
            .send()
            .await;
        if let Ok(r) = answer
            && let Ok(v) = r.json::<Value>().await
            && let Some(x) = v["data"]["result"][0]["value"][1].as_str()
        {
            break x.to_string();
        }
        if std::time::Instant::now() >= deadline {
            let targets = match http
                .get(format!("http://127.0.0.1:{port}/api/v1/targets"))
                .send()
                .await
            {
                Ok(r) => r.text().await.unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
            panic!(
                "Prometheus did not answer {query} within 180 s; targets: {targets}; log: {log}"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(value, expected.to_string());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn metrics_endpoint_is_off_without_a_token() {
    let app = TestApp::new().await;
    let (status, _, _) = app
        .send(
            Request::builder()
                .uri("/metrics")
                .header(header::AUTHORIZATION, "Bearer anything-at-all-here")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// What an ended period owed each project is that period's: a share changed since does not
/// move it (found by a new-user check: November's owed, and with it its impact, moved when a
/// lead changed a share in December).
#[tokio::test]
async fn an_ended_periods_owed_keeps_its_shares() {
    let (app, _users) = TestApp::with_demo().await;
    let site = app.state.site.clone();
    tranche::demo::load_history(&app.pool, &site)
        .await
        .unwrap()
        .expect("the history loads once");
    let finance = app.token_for("demo-finance").await;
    let current = tranche::ledger::Period::containing(jiff::Timestamp::now(), &site);
    let last = tranche::ledger::Period::containing(
        current
            .start
            .checked_sub(jiff::SignedDuration::from_secs(1))
            .unwrap(),
        &site,
    );
    let url = format!("/api/v1/metrics?window=period&period={}", last.label(&site));
    // Owed GPU-hours by (cluster, GPU model, project).
    let owed = |body: &Value| -> Vec<((String, String, i64), f64)> {
        let mut out: Vec<((String, String, i64), f64)> = body["pools"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|pool| {
                let key = (
                    pool["cluster"].as_str().unwrap().to_string(),
                    pool["gpu_model"].as_str().unwrap().to_string(),
                );
                pool["projects"].as_array().unwrap().iter().map(move |p| {
                    (
                        (key.0.clone(), key.1.clone(), p["id"].as_i64().unwrap()),
                        num(p, "owed_gpu_hours"),
                    )
                })
            })
            .collect();
        out.sort_by(|a, b| a.partial_cmp(b).unwrap());
        out
    };
    let (status, before) = app.api("GET", &url, Some(&finance), None).await;
    assert_eq!(status, StatusCode::OK, "{before}");
    let before = owed(&before);
    assert!(before.iter().any(|(_, o)| *o > 0.0), "{before:?}");
    // A window across the period's end: its ended part, read alone before the change, must
    // still be what the whole window owes less its current part after it (found by a check:
    // the default 7-day window early in a month read the ended part with today's tree).
    let hours = |t: jiff::Timestamp| t.as_second() / 3600 * 3600;
    let (from, cut) = (hours(last.end) - 5 * 86_400, hours(last.end));
    let to = cut + ((jiff::Timestamp::now().as_second() - cut) / 2 / 3600 * 3600).max(3600);
    let at = |s: i64| jiff::Timestamp::from_second(s).unwrap().to_string();
    let window = |a: i64, b: i64| format!("/api/v1/metrics?from={}&to={}", at(a), at(b));
    let (_, ended_part) = app
        .api("GET", &window(from, cut), Some(&finance), None)
        .await;
    let ended_part = owed(&ended_part);
    // A project's share halves today.
    let project = app.node_id("fm-pretrain-7b").await;
    let (parent, share): (i64, i32) =
        sqlx::query_as("SELECT parent_id, share_bp FROM tree_nodes WHERE id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let admin = app.admin().await;
    tranche::db::tree::set_child_shares(
        &app.pool,
        &site,
        &admin,
        parent,
        &[(
            project,
            tranche::domain::Share::from_bp(u16::try_from(share / 2).unwrap()).unwrap(),
        )],
    )
    .await
    .unwrap();
    let (status, after) = app.api("GET", &url, Some(&finance), None).await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(owed(&after), before);
    let (_, whole) = app
        .api("GET", &window(from, to), Some(&finance), None)
        .await;
    let (_, current_part) = app.api("GET", &window(cut, to), Some(&finance), None).await;
    let (whole, current_part) = (owed(&whole), owed(&current_part));
    for (id, o) in &ended_part {
        let w = whole.iter().find(|(p, _)| p == id).map_or(0.0, |x| x.1);
        let c = current_part
            .iter()
            .find(|(p, _)| p == id)
            .map_or(0.0, |x| x.1);
        assert!((w - c - o).abs() < 1e-6, "{id:?}: {w} - {c} != {o}");
    }
}
