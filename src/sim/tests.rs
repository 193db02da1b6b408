//! Tests of the loaders and the replay on small trace samples (tests/data).

use super::setup::{build_site, default_cluster, default_tree, parse_cluster, parse_tree, plan};
use super::trace::{Format, load, load_from, philly_instant};
use super::*;
use crate::scheduler::PolicyKind;
use std::path::Path;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn s08_philly_repeated_hour_rule() {
    let tr = load(&data("philly-sample.csv"), Format::Philly, false).unwrap();
    let rows = std::fs::read_to_string(data("philly-sample.csv"))
        .unwrap()
        .lines()
        .count() as u64
        - 1;
    // Never dropped.
    assert_eq!(tr.jobs.len() as u64, rows);
    let mut lines: Vec<u64> = tr.jobs.iter().map(|j| j.line).collect();
    lines.sort_unstable();
    assert_eq!(lines, (2..=rows + 1).collect::<Vec<_>>());
    // The seven repeated-hour jobs (lines 2-8) are read at their first occurrence, PDT (UTC-7):
    // 2017-11-05 01:32:10 PDT = 08:32:10 UTC = 1509870730.
    let repeated: Vec<_> = tr
        .jobs
        .iter()
        .filter(|j| (2..=8).contains(&j.line))
        .collect();
    assert_eq!(repeated.len(), 7);
    let first = tr.jobs.iter().find(|j| j.line == 2).unwrap();
    assert_eq!(first.submit, 1_509_870_730);
    // Sorted by instant, they keep their wall-clock order: 01:02, 01:12, 01:22, 01:32, 01:42,
    // 01:46, 01:52 (file lines 8, 7, 6, 2, 5, 3, 4).
    let order: Vec<u64> = repeated.iter().map(|j| j.line).collect();
    assert_eq!(order, vec![8, 7, 6, 2, 5, 3, 4]);
    let gaps: Vec<i64> = repeated
        .windows(2)
        .map(|w| w[1].submit - w[0].submit)
        .collect();
    assert_eq!(gaps, vec![600, 600, 600, 600, 260, 340]);
    // Standard time and the spring-forward gap.
    assert_eq!(
        philly_instant("2017-12-01 10:00:00").unwrap(),
        1_512_151_200
    ); // 18:00 UTC
    assert_eq!(
        philly_instant("2017-03-12 02:30:00").unwrap(),
        1_489_314_600
    ); // 03:30 PDT = 10:30 UTC
    assert!(philly_instant("2017-13-01 00:00:00").is_err());
}

/// A native trace's minimum runtime is at most the site maximum (8 h, as the service's
/// default), and a priority outside i32 is named out of range, not "not an integer".
#[test]
fn native_rows_refuse_minimum_runtimes_above_eight_hours_and_name_priority_overflow() {
    let head = "submit,duration,gpus,project,min_runtime,time_limit,priority\n";
    let load = |row: &str| {
        load_from(format!("{head}{row}\n").as_bytes(), Format::Native, false)
            .map(|t| t.jobs[0].min_runtime)
            .map_err(|e| e.to_string())
    };
    assert_eq!(load("0,40000,1,a,28800,40000,0"), Ok(Some(28_800)));
    assert_eq!(
        load("0,40000,1,a,28801,40000,0").unwrap_err(),
        "line 2, field `min_runtime`: \"28801\" is above the site maximum of 28800 s (8 h)"
    );
    assert_eq!(
        load("0,10,1,a,0,10,2147483648").unwrap_err(),
        "line 2, field `priority`: \"2147483648\" is out of range (-2147483648 to 2147483647)"
    );
    assert_eq!(
        load("0,10,1,a,0,10,1.5").unwrap_err(),
        "line 2, field `priority`: \"1.5\" is not an integer"
    );
    // A '/' would make the default tree a path whose parent is missing (it panicked).
    assert!(
        load("0,10,1,team/a,0,10,0")
            .unwrap_err()
            .starts_with("line 2, field `project`: \"team/a\" contains '/'"),
    );
    // Likewise the tenants of the public formats: Philly's virtual cluster, OpenB's class
    // (found by a new-user check: both panicked).
    let philly = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,a/b\n";
    let err = load_from(philly.as_bytes(), Format::Philly, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("line 2, field `cluster`: \"a/b\" contains '/'"),
        "{err}"
    );
    let openb = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
                 p,1000,1024,1,1000,,LS/x,Running,0,100,0\n";
    let err = load_from(openb.as_bytes(), Format::Openb, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("line 2, field `qos`: \"LS/x\" contains '/'"),
        "{err}"
    );
}

/// `--tree` errors name the tree's paths, never the internal ids the core gives its nodes.
#[test]
fn an_empty_trace_says_so() {
    for text in ["", "\n", "\u{feff}"] {
        let e = load_from(text.as_bytes(), Format::Native, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the trace is empty"), "{text:?}: {e}");
    }
}

#[test]
fn tree_shares_over_a_hundred_percent_name_the_parent_path() {
    let err = |spec: &str| parse_tree(spec).unwrap_err().to_string();
    assert_eq!(
        err("lab=60,lab/a=70,lab/b=40,ops=40,ops/c=100"),
        "--tree: shares under lab sum to 110%, more than 100%"
    );
    assert_eq!(
        err("lab=60.5,ops=40"),
        "--tree: shares under the top level sum to 100.5%, more than 100%"
    );
    assert!(parse_tree("lab=60,lab/a=50,lab/b=50,ops=40,ops/c=100").is_ok());
}

#[test]
fn malformed_rows_name_line_and_field_or_are_skipped() {
    let text = "timestamp,duration,num_gpus,gpu_time,cluster\n\
                2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\
                2017-10-09 07:02:55,abc,1,66.0,11cb48\n\
                2017-10-09 07:03:55,66.0,0,0,11cb48\n\
                2017-10-09 07:04:55,66.0,2,132.0,6214e9\n";
    let err = load_from(text.as_bytes(), Format::Philly, false)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "line 3, field `duration`: \"abc\" is not a number");
    let tr = load_from(text.as_bytes(), Format::Philly, true).unwrap();
    assert_eq!((tr.jobs.len(), tr.skipped), (2, 2));
    let short = "job_id,submission_time,duration,num_gpu\nx,1,2\n";
    let err = load_from(short.as_bytes(), Format::Itp, false)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("line 2, field `num_gpu`"), "{err}");
    let missing = "job_id,duration,num_gpu\n";
    let err = load_from(missing.as_bytes(), Format::Itp, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no column `submission_time`"), "{err}");
    let long = "submit,duration,gpus,project\n0,60,1,a,\n0,60,1,a,b\n";
    let err = load_from(long.as_bytes(), Format::Native, false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "line 3: row has 5 fields, the header 4: a value past the last column"
    );
    let tr = load_from(long.as_bytes(), Format::Native, true).unwrap();
    assert_eq!((tr.jobs.len(), tr.skipped), (1, 1));
    let twice = "submit,duration,gpus,project,project\n0,60,1,a,b\n";
    let err = load_from(twice.as_bytes(), Format::Native, false)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "line 1: the header names the column `project` twice");
    // Times in the wrong unit: refused before the replay asks for hourly series over them.
    let far = "submit,duration,gpus,project\n0,60,1,a\n100000000000000,60,1,a\n";
    let err = load_from(far.as_bytes(), Format::Native, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("at most 7305 days"), "{err}");
    let edge = format!(
        "submit,duration,gpus,project\n0,60,1,a\n{},60,1,a\n",
        super::trace::MAX_SPAN_S - 60
    );
    assert_eq!(
        load_from(edge.as_bytes(), Format::Native, false)
            .unwrap()
            .jobs
            .len(),
        2
    );
}

#[test]
fn cluster_and_tree_specs_refuse_bad_input() {
    assert_eq!(parse_cluster("H100:64x8").unwrap()[0].nodes, 64);
    for bad in [
        "H100",
        "H100:0x8",
        "H100:4x0",
        "H100:-1x8",
        "H100:4x65",
        ":4x8",
        "A:1x1,A:2x2",
        "H100:axb",
        // More than 100,000 GPUs in all (a million nodes once replayed for minutes).
        "GPU:1000000x8",
        "A:6250x8,B:6251x8",
    ] {
        assert!(parse_cluster(bad).is_err(), "{bad}");
    }
    let most = parse_cluster("A:6250x8,B:6250x8").unwrap();
    assert_eq!(
        most.iter().map(|p| p.nodes * p.gpus_per_node).sum::<u32>(),
        100_000
    );
    // The default cluster stays within the same bound: a job larger is rejected, not built for.
    let huge = "submit,duration,gpus,project
0,10,1000000,x
";
    let tr = load_from(huge.as_bytes(), Format::Native, false).unwrap();
    let pools = default_cluster(&tr.jobs);
    assert_eq!(pools[0].nodes * pools[0].gpus_per_node, 100_000);
    assert!(parse_tree("a=50,a/x=100,b=50").is_ok());
    assert!(parse_tree("a=abc").is_err());
    assert!(parse_tree("a/x=100").is_err(), "parent missing");
    assert!(parse_tree("a=10,a=20").is_err());
    let text = "submit,duration,gpus,project\n0,10,1,x\n5,10,1,y\n";
    let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
    let pools = parse_cluster("H100:1x8").unwrap();
    let err = build_site(&pools, &parse_tree("x=60").unwrap(), &tr.jobs).unwrap_err();
    assert!(err.to_string().contains("[\"y\"]"), "{err}");
}

/// Two projects on one 8-GPU node, computed by hand: fifo runs jobs in arrival order.
#[test]
fn native_replay_counts_and_waits() {
    let text = "submit,duration,gpus,project,min_runtime\n\
                0,100,8,a,50\n\
                10,100,4,b,50\n\
                20,50,4,a,50\n\
                30,10,16,b,5\n";
    let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
    let site = build_site(
        &parse_cluster("H100:1x8").unwrap(),
        &parse_tree("a=50,b=50").unwrap(),
        &tr.jobs,
    )
    .unwrap();
    let plans = plan(&site, &tr.jobs, PolicyKind::Fifo);
    let window = (0, 30);
    let rep = replay::replay(&site, &plans, PolicyKind::Fifo, window, &|_| {});
    let s = replay::summarize(&site, &plans, &rep, window);
    assert_eq!(
        (
            s.jobs.total,
            s.jobs.completed,
            s.jobs.waiting,
            s.jobs.rejected
        ),
        (4, 3, 0, 1)
    );
    // a1 0..100; b1 and a2 start at 100 (waits 0, 90, 80).
    assert_eq!(rep.jobs[1].first_start, Some(100));
    assert_eq!(rep.jobs[2].first_start, Some(100));
    assert_eq!(s.wait_s.p50, 80.0);
    assert_eq!(s.wait_s.p90, 90.0);
    // Window 0..30: a1 holds 8 GPUs -> occupancy 1.0.
    assert!((s.occupancy - 1.0).abs() < 1e-9);
}

/// A 4-GPU run holds half the node while an 8-GPU gang waits from 10 to 100 and a 5 s
/// one-GPU job arrives at 20: fifo keeps the job behind the gang (4 GPUs idle for 90 s while
/// runs wait, then none: the gang holds all 8 while the job waits 100..110); tranche backfills
/// the job at 20 (it ends before the gang's reservation at 100), so one of the 4 is busy 5 s.
/// One GPU: an unallocated run (b) starts at 0 and is preempted at 10 by an allocated one (a,
/// until 60); a second run of a arrives at 20 and waits for the GPU at 60; b restarts at 70.
/// The estimate accuracy compares the first estimate with the first start, so only estimates
/// given before the first start count: b's estimates (of its restart) do not.
#[test]
fn only_estimates_before_the_first_start_are_counted() {
    let text = "submit,duration,gpus,project,min_runtime\n\
                0,100,1,b,0\n\
                10,50,1,a,50\n\
                20,10,1,a,10\n";
    let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
    let site = build_site(
        &parse_cluster("H100:1x1").unwrap(),
        &parse_tree("a=50,b=50").unwrap(),
        &tr.jobs,
    )
    .unwrap();
    let plans = plan(&site, &tr.jobs, PolicyKind::Tranche);
    let window = (0, 20);
    let rep = replay::replay(&site, &plans, PolicyKind::Tranche, window, &|_| {});
    let starts: Vec<_> = rep.jobs.iter().map(|o| o.first_start).collect();
    assert_eq!(starts, [Some(0), Some(10), Some(60)]);
    assert_eq!(rep.preemptions, 1);
    assert_eq!(
        rep.first_estimate[0], None,
        "b waited only after its first start"
    );
    assert_eq!(rep.first_estimate[1], None, "a started on arrival");
    assert_eq!(rep.first_estimate[2].map(|(at, _)| at), Some(60));
    let s = replay::summarize(&site, &plans, &rep, window);
    assert_eq!((s.estimates.waited, s.estimates.estimated), (1, 1));
    assert_eq!(s.estimates.error_s.p90, 0.0);
}

#[test]
fn idle_gpu_hours_while_runs_waited_by_hand() {
    let text = "submit,duration,gpus,project,min_runtime\n\
                0,100,4,a,50\n\
                10,10,8,b,10\n\
                20,5,1,a,5\n";
    let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
    let site = build_site(
        &parse_cluster("H100:1x8").unwrap(),
        &parse_tree("a=50,b=50").unwrap(),
        &tr.jobs,
    )
    .unwrap();
    let window = (0, 200);
    for (kind, start_c, idle_gpu_s) in [
        (PolicyKind::Fifo, 110, 4 * 90),
        (PolicyKind::Tranche, 20, 4 * 90 - 5),
    ] {
        let plans = plan(&site, &tr.jobs, kind);
        let rep = replay::replay(&site, &plans, kind, window, &|_| {});
        assert_eq!(rep.jobs[1].first_start, Some(100), "{kind:?}");
        assert_eq!(rep.jobs[2].first_start, Some(start_c), "{kind:?}");
        let s = replay::summarize(&site, &plans, &rep, window);
        let want = f64::from(idle_gpu_s) / 3600.0;
        assert!(
            (s.idle_while_waiting_gpu_hours - want).abs() < 1e-9,
            "{kind:?}: {} GPU-h, want {want}",
            s.idle_while_waiting_gpu_hours
        );
        // A window that ends at 50 sees only 10..50 of the wait (fifo: 4 idle throughout).
        let cut = replay::idle_while_waiting_gpu_hours(&site, &plans, &rep, (0, 50));
        let want_cut = if kind == PolicyKind::Fifo { 160 } else { 155 };
        assert!(
            (cut - f64::from(want_cut) / 3600.0).abs() < 1e-9,
            "{kind:?}: {cut}"
        );
    }
}

#[test]
fn every_format_replays_with_all_jobs_accounted_for() {
    for (file, format) in [
        ("philly-sample.csv", Format::Philly),
        ("itp-cluster01-sample.csv", Format::Itp),
        ("openb-default-sample.csv", Format::Openb),
    ] {
        let args = SimulateArgs {
            trace: data(file),
            format,
            policy: vec![PolicyName::Fifo, PolicyName::Legacy, PolicyName::Tranche],
            cluster: None,
            tree: None,
            json: true,
            skip_bad_rows: false,
            jobs_csv: None,
            short_run_blocking_percent: 10,
        };
        let report = simulate(&args).unwrap();
        // Replayed costliest first, reported in the order asked.
        let names: Vec<&str> = report.policies.iter().map(|p| p.policy.as_str()).collect();
        assert_eq!(names, ["fifo", "legacy", "tranche"], "{file}");
        for p in &report.policies {
            let j = p.jobs;
            assert_eq!(
                j.completed + j.waiting + j.rejected,
                j.total,
                "{file} {}",
                p.policy
            );
            assert_eq!(j.total, report.trace.jobs);
            assert!(
                p.occupancy >= 0.0 && p.occupancy <= 1.0 + 1e-9,
                "{file} {} {}",
                p.policy,
                p.occupancy
            );
            assert!(p.impact >= 0.0 && p.impact <= 1.0 + 1e-9);
        }
        let v = serde_json::to_value(&report).unwrap();
        for key in [
            "jobs",
            "occupancy",
            "occupancy_unallocated",
            "impact",
            "wait_s",
            "small_wait_s",
            "idle_while_waiting_gpu_hours",
            "jct_mean_s",
            "preemptions",
            "preempted_gpu_hours",
            "projects",
        ] {
            assert!(v["policies"][0].get(key).is_some(), "{key}");
        }
        assert!(v["policies"][0]["wait_s"]["p90"].is_number());
        assert!(v["trace"].is_object());
        let table = render(&report);
        assert!(table.contains("small-job wait p50 / p90"));
    }
}

#[test]
fn default_site_fits_the_largest_job_and_openb_drops_cpu_pods() {
    let tr = load(&data("openb-default-sample.csv"), Format::Openb, false).unwrap();
    let text = std::fs::read_to_string(data("openb-default-sample.csv")).unwrap();
    let cpu_only = text
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(3) == Some("0"))
        .count() as u64;
    assert_eq!(tr.excluded, cpu_only);
    let pools = default_cluster(&tr.jobs);
    let largest = tr.jobs.iter().map(|j| j.gpus).max().unwrap();
    assert!(pools[0].nodes * 8 >= largest);
    let tree = default_tree(&tr.jobs);
    let sum: u32 = tree.iter().map(|e| e.share.0).sum();
    assert!(sum <= 10_000);
    // Twenty 8-GPU jobs of ten days submitted at one instant: the mean demand over a span of
    // submissions of 0 s would ask for millions of nodes; the site holds all twenty at once.
    let text = "submit,duration,gpus,project\n".to_string() + &"0,864000,8,a\n".repeat(20);
    let burst = load_from(text.as_bytes(), Format::Native, false).unwrap();
    assert_eq!(default_cluster(&burst.jobs)[0].nodes, 20);
    // Three one-GPU jobs: one node.
    let text = "submit,duration,gpus,project\n0,100,1,a\n0,100,1,b\n0,100,1,a\n";
    let small = load_from(text.as_bytes(), Format::Native, false).unwrap();
    assert_eq!(default_cluster(&small.jobs)[0].nodes, 1);
}

#[test]
fn jobs_csv_lists_every_job_under_every_policy_with_its_wait() {
    let out = std::env::temp_dir().join(format!("tranche-jobs-{}.csv", std::process::id()));
    let args = SimulateArgs {
        trace: data("philly-sample.csv"),
        format: Format::Philly,
        policy: vec![PolicyName::Fifo, PolicyName::Tranche],
        cluster: None,
        tree: None,
        json: true,
        skip_bad_rows: false,
        jobs_csv: Some(out.clone()),
        short_run_blocking_percent: 10,
    };
    let report = simulate(&args).unwrap();
    let tr = crate::sim::trace::load(&data("philly-sample.csv"), Format::Philly, false).unwrap();
    let rows: Vec<JobRow> = csv::Reader::from_path(&out)
        .unwrap()
        .deserialize()
        .map(Result::unwrap)
        .collect();
    std::fs::remove_file(&out).ok();
    assert_eq!(rows.len(), 2 * tr.jobs.len());
    for (policy, summary) in ["fifo", "tranche"].iter().zip(&report.policies) {
        let mine: Vec<&JobRow> = rows.iter().filter(|r| r.policy == *policy).collect();
        assert_eq!(mine.len(), tr.jobs.len());
        let completed = mine.iter().filter(|r| r.end.is_some()).count() as u64;
        assert_eq!(completed, summary.jobs.completed, "{policy}");
        for (i, (r, j)) in mine.iter().zip(&tr.jobs).enumerate() {
            assert_eq!((r.job, r.line), (i, j.line));
            assert_eq!(
                (r.submit, r.gpus, r.duration_s),
                (j.submit, j.gpus, j.duration)
            );
            assert_eq!(r.project, j.tenant);
            assert_eq!(r.wait_s, r.first_start.map(|s| s - j.submit));
            assert!(r.wait_s.is_none_or(|w| w >= 0), "{policy} job {i}");
            // A job that waited was left waiting by the pass at its arrival, with a reason.
            if r.wait_s.is_some_and(|w| w > 0) {
                assert!(r.first_reason.is_some(), "{policy} job {i}");
            }
            // One that started on arrival was given none, even if preempted later.
            if r.wait_s == Some(0) {
                assert!(r.first_reason.is_none(), "{policy} job {i}");
            }
            // An estimate is foretold by a pass after the submission, and a reservation
            // always comes with one.
            assert!(
                r.first_estimate.is_none_or(|e| e > j.submit),
                "{policy} job {i}"
            );
            assert!(!r.estimate_reserved || r.first_estimate.is_some());
        }
        // The rows carry the estimates the summary's accuracy figures are computed from.
        let estimated = |reserved: bool| {
            mine.iter()
                .filter(|r| r.wait_s.is_some_and(|w| w > 0) && r.first_estimate.is_some())
                .filter(|r| r.estimate_reserved || !reserved)
                .count() as u64
        };
        assert_eq!(estimated(false), summary.estimates.estimated, "{policy}");
        assert_eq!(estimated(true), summary.estimates.reserved, "{policy}");
    }
}

/// `--jobs-csv` writes a project name a spreadsheet would run as a formula as text, and a
/// path it cannot write is refused before the replay.
#[test]
fn jobs_csv_neutralises_formulas_and_refuses_an_unwritable_path() {
    let dir = std::env::temp_dir().join(format!("tranche-formula-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.csv");
    std::fs::write(
        &trace,
        "submit,duration,gpus,project\n0,100,1,=HYPERLINK(1)\n10,100,1,b\n",
    )
    .unwrap();
    let out = dir.join("jobs.csv");
    let mut args = SimulateArgs {
        trace: trace.clone(),
        format: Format::Native,
        policy: vec![PolicyName::Tranche],
        cluster: None,
        tree: None,
        json: true,
        skip_bad_rows: false,
        jobs_csv: Some(out.clone()),
        short_run_blocking_percent: 10,
    };
    simulate(&args).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains(",'=HYPERLINK(1),"), "{text}");
    args.jobs_csv = Some(dir.join("missing").join("jobs.csv"));
    let err = simulate(&args).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).ok();
    assert!(err.starts_with("--jobs-csv "), "{err}");
}

/// Each job runs on its own model's pool (native `gpu_model`): 16 one-GPU jobs, 8 per model,
/// on two 8-GPU pools all start at once (found by a new-user check: every job went to the first
/// pool and half of them waited 2 h beside 8 idle GPUs counted as capacity). A cluster of
/// several pools refuses jobs that name no model, and a model that is not a pool.
#[test]
fn jobs_run_on_their_own_models_pool() {
    let mut text = String::from("submit,duration,gpus,project,gpu_model\n");
    for i in 0..16 {
        let (project, model) = if i < 8 { ("a", "A") } else { ("b", "b") };
        text.push_str(&format!("0,7200,1,{project},{model}\n"));
    }
    let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
    let pools = parse_cluster("A:1x8,B:1x8").unwrap();
    let tree = parse_tree("a=50,b=50").unwrap();
    let site = build_site(&pools, &tree, &tr.jobs).unwrap();
    for kind in [PolicyKind::Fifo, PolicyKind::Legacy, PolicyKind::Tranche] {
        let plans = plan(&site, &tr.jobs, kind);
        let rep = replay::replay(&site, &plans, kind, (0, 7200), &|_| {});
        assert!(
            rep.jobs.iter().all(|j| j.first_start == Some(0)),
            "{kind:?}: {:?}",
            rep.jobs
        );
    }
    let unnamed = "submit,duration,gpus,project\n0,7200,1,a\n";
    let tr = load_from(unnamed.as_bytes(), Format::Native, false).unwrap();
    let e = build_site(&pools, &tree, &tr.jobs).unwrap_err().to_string();
    assert!(e.contains("line 2") && e.contains("gpu_model"), "{e}");
    // One pool: a job without a model goes to it.
    assert!(build_site(&parse_cluster("A:1x8").unwrap(), &tree, &tr.jobs).is_ok());
    let other = "submit,duration,gpus,project,gpu_model\n0,7200,1,a,C\n";
    let tr = load_from(other.as_bytes(), Format::Native, false).unwrap();
    let e = build_site(&pools, &tree, &tr.jobs).unwrap_err().to_string();
    assert!(e.contains("\"C\"") && e.contains("A, B"), "{e}");
}

/// Native jobs with a minimum runtime of 0 are unallocated, best effort: a project whose work
/// is all of them earns no share in the default tree (it was given 40 % of the cluster, owed
/// work its runs could never receive, which capped `tranche`'s impact at 0.556).
#[test]
fn unallocated_native_work_earns_no_default_share() {
    let text = "submit,duration,gpus,project,min_runtime\n\
                0,7200,4,a,\n\
                0,7200,4,be,0\n\
                3600,3600,4,a,\n";
    let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
    let tree = default_tree(&tr.jobs);
    let share = |name: &str| tree.iter().find(|e| e.path == name).unwrap().share.0;
    assert_eq!((share("a"), share("be")), (10_000 - 1, 0));
}

/// The pass after one that started runs sees them running, as the live service's next tick
/// does: `legacy` preempts a team's runs above its cap for another team's runs that came in
/// the same second (found by a new-user check: with both teams' jobs at 0 it preempted nothing
/// and b waited 2 h; with b's a second later it preempted 4). a and b have 50 % of 8 GPUs each
/// (caps 4); a's 8 jobs come first in line.
#[test]
fn the_pass_after_a_start_sees_the_run_running() {
    let mut text = String::from("submit,duration,gpus,project\n");
    for project in ["a", "b"] {
        for _ in 0..8 {
            text.push_str(&format!("0,7200,1,{project}\n"));
        }
    }
    let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
    let site = build_site(
        &parse_cluster("A:1x8").unwrap(),
        &parse_tree("a=50,b=50").unwrap(),
        &tr.jobs,
    )
    .unwrap();
    let plans = plan(&site, &tr.jobs, PolicyKind::Legacy);
    let rep = replay::replay(&site, &plans, PolicyKind::Legacy, (0, 7200), &|_| {});
    assert_eq!(rep.preemptions, 4);
    assert_eq!(rep.preempted_at, vec![replay::FOLLOW_UP_S; 4]);
    let b_starts: Vec<Option<i64>> = rep.jobs[8..].iter().map(|j| j.first_start).collect();
    assert_eq!(b_starts[..4], [Some(replay::FOLLOW_UP_S); 4]);
}

/// The kept GPUs follow the live service's short load (docs/design.md section 3.7): the
/// allocated short runs submitted in the last 7 days. One node of 2 GPUs, project a alone: a
/// 600 s run at 0 (allocated: minimum runtime 600 s) is an offered load of 600 / 604,800 GPUs,
/// for which the pool keeps 1 GPU, so a 2-GPU run of 2 h submitted at 1,000 s waits until the
/// short run leaves the window at 604,800 s and starts then, not at the next unrelated event.
/// The same short run unallocated (minimum runtime 0) sizes nothing: the 2-GPU run starts on
/// arrival.
#[test]
fn the_short_load_counts_allocated_short_runs_of_the_last_week() {
    for (min_runtime, want) in [("600", 604_800), ("0", 1_000)] {
        let text = format!(
            "submit,duration,gpus,project,min_runtime\n\
             0,600,1,a,{min_runtime}\n\
             1000,7200,2,a,\n"
        );
        let tr = load_from(text.as_bytes(), Format::Native, false).unwrap();
        let site = build_site(
            &parse_cluster("H100:1x2").unwrap(),
            &parse_tree("a=100").unwrap(),
            &tr.jobs,
        )
        .unwrap();
        let plans = plan(&site, &tr.jobs, PolicyKind::Tranche);
        let rep = replay::replay(&site, &plans, PolicyKind::Tranche, (0, 700_000), &|_| {});
        assert_eq!(rep.jobs[0].first_start, Some(0), "{min_runtime}");
        assert_eq!(rep.jobs[1].first_start, Some(want), "{min_runtime}");
    }
}
