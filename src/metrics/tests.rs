//! The definitions against values computed by hand for a small history.

use super::*;

const T0: i64 = 1_764_547_200; // 2025-12-01T00:00:00Z, an hour boundary

/// Two projects of half the pool each on 4 GPUs, two hours; the second hour only 2 GPUs are
/// healthy. A: a protected 2-GPU run the whole first hour. B: a debug 1-GPU run from +600 to
/// +1800 (submitted at 0), and an unallocated 1-GPU run submitted at +3600, started at +3660,
/// preempted at +5400 and still waiting at the end.
fn scripted() -> History {
    History {
        window: (T0, T0 + 7200),
        end: T0 + 9000,
        capacity_gpus: 4.0,
        capacity_before: Vec::new(),
        health: vec![
            HealthSpan {
                from: T0 - 600,
                to: T0 + 3600,
                installed: 4,
                healthy: 4,
            },
            HealthSpan {
                from: T0 + 3600,
                to: T0 + 7200,
                installed: 4,
                healthy: 2,
            },
        ],
        projects: vec![
            ProjectShare {
                id: 1,
                name: "a".into(),
                effective_share: 0.5,
                before: Vec::new(),
            },
            ProjectShare {
                id: 2,
                name: "b".into(),
                effective_share: 0.5,
                before: Vec::new(),
            },
        ],
        runs: vec![
            RunRecord {
                project: 1,
                gpus: 2,
                submitted_at: T0,
                queued_at: T0,
                first_start: Some(T0),
                ended_at: Some(T0 + 3600),
                min_runtime_s: 3600,
            },
            RunRecord {
                project: 2,
                gpus: 1,
                submitted_at: T0,
                queued_at: T0,
                first_start: Some(T0 + 600),
                ended_at: Some(T0 + 1800),
                min_runtime_s: 600,
            },
            RunRecord {
                project: 2,
                gpus: 1,
                submitted_at: T0 + 3600,
                queued_at: T0 + 3600,
                first_start: Some(T0 + 3660),
                ended_at: None,
                min_runtime_s: 0,
            },
        ],
        segments: vec![
            Segment {
                project: 1,
                gpus: 2,
                start: T0,
                end: T0 + 3600,
                allocated: true,
            },
            Segment {
                project: 2,
                gpus: 1,
                start: T0 + 600,
                end: T0 + 1800,
                allocated: true,
            },
            Segment {
                project: 2,
                gpus: 1,
                start: T0 + 3660,
                end: T0 + 5400,
                allocated: false,
            },
        ],
        preemptions: vec![T0 + 5400, T0 + 7200],
        utilization: Some(Utilization {
            busy_gpu_s: 4800.0,
            observed_gpu_s: 8400.0,
        }),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn figures_of_a_scripted_history_equal_the_hand_computed_values() {
    let f = compute(&scripted());
    // Health inside the window only: 4 GPUs x 1 h + 2 GPUs x 1 h healthy of 8 GPU-h.
    assert!(close(f.installed_gpu_hours, 8.0));
    assert!(close(f.healthy_gpu_hours, 6.0));
    assert!(close(f.availability.unwrap(), 0.75));
    // Allocated 2 x 3600 + 1 x 1200 = 8400 GPU-s; unallocated 1 x 1740.
    assert!(close(f.allocated_gpu_hours, 8400.0 / 3600.0));
    assert!(close(f.unallocated_gpu_hours, 1740.0 / 3600.0));
    assert!(close(f.occupancy.unwrap(), 10_140.0 / 21_600.0));
    assert!(close(f.occupancy_allocated.unwrap(), 8400.0 / 21_600.0));
    assert!(close(f.occupancy_unallocated.unwrap(), 1740.0 / 21_600.0));
    // Entitlement 2 GPUs each. A owed 7200 (hour 1), received 7200. B owed 1800 (hour 1:
    // present 1800 s) + 3600 (hour 2: the unallocated run present), received 1200 + 0.
    let a = &f.projects[0];
    let b = &f.projects[1];
    assert!(close(a.owed_gpu_hours, 2.0) && close(a.received_of_owed_gpu_hours, 2.0));
    assert!(close(b.owed_gpu_hours, 1.5) && close(b.received_of_owed_gpu_hours, 1200.0 / 3600.0));
    assert!(close(b.received_gpu_hours, 1200.0 / 3600.0));
    assert!(close(f.impact, 8400.0 / 12_600.0));
    assert!(close(f.projects_served_share.unwrap(), 0.5));
    // Waits: protected 0, debug 600, unallocated 60; all [0, 60, 600]: p50 60, p90 600.
    assert_eq!((f.waits.debug.runs, f.waits.debug.p50_s), (1, 600.0));
    assert_eq!(f.waits.protected.p90_s, 0.0);
    assert_eq!(f.waits.unallocated.p50_s, 60.0);
    assert_eq!((f.waits.all.p50_s, f.waits.all.p90_s), (60.0, 600.0));
    // One preemption inside [from, to) (the one at `to` is outside) per 10140/3600 GPU-h.
    assert_eq!(f.preemptions, 1);
    assert!(close(
        f.preemptions_per_1000_gpu_hours,
        1000.0 * 3600.0 / 10_140.0
    ));
    assert!(close(f.utilization.unwrap(), 4800.0 / 8400.0));
    assert!(close(f.utilization_coverage.unwrap(), 8400.0 / 10_140.0));
}

#[test]
fn nothing_owed_is_full_impact_and_no_installed_gpus_no_availability() {
    let f = compute(&History {
        window: (T0, T0 + 10),
        end: T0 + 10,
        ..History::default()
    });
    assert_eq!(f.impact, 1.0);
    assert_eq!(f.availability, None);
    assert_eq!(f.occupancy, None);
    assert_eq!(f.projects_served_share, None);
    assert_eq!(f.utilization, None);
}

/// Entitlements divide the GPUs installed in each hour (from the health samples), and today's
/// `capacity_gpus` only where no sample covers the time: a pool of 4 GPUs, then 2 (a node
/// removed), then an hour with no sample (8 GPUs today). Project a (half the pool) wants 5
/// GPUs throughout and holds 1.
#[test]
fn owed_follows_the_gpus_installed_hour_by_hour() {
    let span = |h: i64, installed| HealthSpan {
        from: T0 + h * 3600,
        to: T0 + (h + 1) * 3600,
        installed,
        healthy: installed,
    };
    let run = |gpus, first_start| RunRecord {
        project: 1,
        gpus,
        submitted_at: T0,
        queued_at: T0,
        first_start,
        ended_at: None,
        min_runtime_s: 3600,
    };
    let f = compute(&History {
        window: (T0, T0 + 3 * 3600),
        end: T0 + 3 * 3600,
        capacity_gpus: 8.0,
        capacity_before: Vec::new(),
        health: vec![span(0, 4), span(1, 2)],
        projects: vec![ProjectShare {
            id: 1,
            name: "a".into(),
            effective_share: 0.5,
            before: Vec::new(),
        }],
        runs: vec![run(4, None), run(1, Some(T0))],
        segments: vec![Segment {
            project: 1,
            gpus: 1,
            start: T0,
            end: T0 + 3 * 3600,
            allocated: true,
        }],
        ..History::default()
    });
    // Owed per hour: min(5, 0.5 x 4) = 2, min(5, 0.5 x 2) = 1, min(5, 0.5 x 8) = 4 GPU-h.
    let a = &f.projects[0];
    assert!(close(a.owed_gpu_hours, 7.0), "{}", a.owed_gpu_hours);
    // Received 1 GPU-h each hour, all of it within what was owed.
    assert!(close(a.received_of_owed_gpu_hours, 3.0));
    assert!(close(f.impact, 3.0 / 7.0));
}
