//! Scenarios S1-S12 of `shared/cases/scheduler-scenarios.md`, as tests of the core.

use super::support::*;
use crate::scheduler::*;

#[test]
fn s01_usage_must_count() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let hot = b.project(None, "50", 8 * 2 * H);
    let idle = b.project(None, "50", 0);
    // hot holds 4 GPUs (protected); 4 are free.
    b.running(hot, 4, T0 - 2 * H, 8 * H, 10 * H);
    let hot_run = b.waiting(hot, 4, T0 - 60, H, 2 * H);
    let idle_run = b.waiting(idle, 4, T0 - 30, H, 2 * H);
    b.snap.validate().unwrap();
    let out = schedule(&b.snap, T0);
    assert_eq!(started(&out), vec![idle_run]);
    assert!(preemptions(&out).is_empty());
    let reason = reason_of(&out, hot_run);
    assert!(matches!(reason, WaitReason::FairShare { .. }), "{reason:?}");
    assert!(
        reason.describe().contains("fair share"),
        "{}",
        reason.describe()
    );
    assert_eq!(out.project_order, vec![idle, hot]);
    // A zero or negative window is refused at start-up.
    assert_eq!(FairShareWindow::new(0), Err(SnapshotError::BadWindow(0)));
    assert_eq!(FairShareWindow::new(-5), Err(SnapshotError::BadWindow(-5)));
    assert_eq!(FairShareWindow::new(7 * 86_400).unwrap().seconds(), 604_800);
}

#[test]
fn s02_a_run_that_can_never_fit_drives_nothing() {
    let mut b = Builder::new();
    b.nodes(3, 1);
    let pb = b.project(None, "0", 0);
    let pa = b.project(None, "100", 0);
    let w1 = b.running(pb, 1, T0 - H, 0, 10 * H);
    let w4 = WaitingRun {
        id: RunId(9_001),
        project: pa,
        cluster: ClusterId(1),
        model: ModelId(1),
        gpus: 4,
        submitted_at: T0,
        min_runtime_s: H,
        time_limit_s: 2 * H,
        priority: 0,
    };
    let refusal = admit_run(&b.snap, &w4).unwrap_err();
    assert_eq!(
        refusal,
        RunRefusal::LargerThanCluster {
            asked: 4,
            installed: 3
        }
    );
    assert!(refusal.to_string().contains("never start"));
    let w3 = b.waiting(pa, 3, T0 + 1, H, 2 * H);
    assert_eq!(admit_run(&b.snap, b.snap.waiting.last().unwrap()), Ok(()));
    let mut snap = b.snap.clone();
    let out = schedule(&snap, T0 + 2);
    assert_eq!(
        preemptions(&out),
        vec![(w1, PreemptReason::Unallocated, Some(w3))]
    );
    assert_eq!(started(&out), vec![w3]);
    apply(&mut snap, &out, T0 + 2);
    let mut total_preemptions = 1;
    for k in 0..20 {
        let out = schedule(&snap, T0 + 3 + k);
        total_preemptions += preemptions(&out).len();
        assert!(started(&out).is_empty());
        assert!(matches!(reason_of(&out, w1), WaitReason::IdleGpus { .. }));
        apply(&mut snap, &out, T0 + 3 + k);
    }
    assert_eq!(total_preemptions, 1);
}

#[test]
fn s03_preemption_agrees_with_admission_order() {
    let mut b = Builder::new();
    b.nodes(30, 1);
    let a = b.project(None, "45", 25 * 86_400);
    let _bb = b.project(None, "45", 0);
    let c = b.project(None, "10", 5 * 86_400);
    b.running(a, 25, T0 - 5 * H, H, 100 * H);
    b.running(c, 5, T0 - 5 * H, H, 100 * H);
    let a2 = b.waiting(a, 5, T0, H, 10 * H);
    // Independently: c's share/usage ratio beats a's (0.10/(5/30) = 0.6 > 0.45/(25/30) = 0.54).
    let mut snap = b.snap.clone();
    let mut preempted = 0;
    for k in 0..100 {
        let out = schedule(&snap, T0 + k);
        let pos = |p| out.project_order.iter().position(|x| *x == p).unwrap();
        assert!(pos(c) < pos(a));
        preempted += preemptions(&out).len();
        assert!(started(&out).is_empty());
        assert!(out.waiting.iter().any(|w| w.run == a2));
        apply(&mut snap, &out, T0 + k);
    }
    assert_eq!(preempted, 0);
}

#[test]
fn s04_entitlement_inherited_from_a_parent_is_reclaimable() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let g_prog = b.group(None, "50");
    let g = b.project(Some(g_prog), "100", 0);
    // be ran 8 GPUs for the last 60 minutes.
    let be = b.project(None, "50", 8 * H);
    let be_run = b.running(be, 8, T0, 10 * M, 10 * H);
    let g_run = b.waiting(g, 8, T0 + H, H, 4 * H);
    let out = schedule(&b.snap, T0 + H);
    assert_eq!(
        preemptions(&out),
        vec![(
            be_run,
            PreemptReason::FairShare { for_project: g },
            Some(g_run)
        )]
    );
    assert_eq!(started(&out), vec![g_run]);
}

#[test]
fn s05_equal_rank_runs_never_preempt_each_other() {
    let mut b = Builder::new();
    b.nodes(3, 4);
    let p = b.project(None, "100", 0);
    let runs: Vec<RunId> = (0..24)
        .map(|_| b.waiting(p, 1, T0, 30 * M, 2 * H))
        .collect();
    let mut d = Driver::new(b.snap.clone(), T0);
    for r in &runs {
        d.duration.insert(*r, H);
    }
    d.pass();
    d.advance_to(T0 + H);
    d.advance_to(T0 + 2 * H);
    let at = |t: i64| d.started_at.values().filter(|v| v.contains(&t)).count();
    assert_eq!(at(T0), 12);
    assert_eq!(at(T0 + H), 12);
    assert_eq!(d.preempted, 0);
    assert_eq!(d.finished_at.len(), 24);
    assert!(d.finished_at.values().all(|&t| t <= T0 + 2 * H));
}

#[test]
fn s06_an_over_served_project_cannot_evict_an_under_served_one() {
    let mut b = Builder::new();
    b.nodes(32, 8);
    let pre = b.project(None, "25", 128 * 86_400);
    let mid = b.project(None, "75", 128 * 86_400);
    let pre_runs: Vec<RunId> = (0..16)
        .map(|_| b.running(pre, 8, T0 - 5 * H, H, 100 * H))
        .collect();
    let mid_runs: Vec<RunId> = (0..16)
        .map(|_| b.running(mid, 8, T0 - 5 * H, H, 100 * H))
        .collect();
    let new_pre: Vec<RunId> = (0..6)
        .map(|k| b.waiting(pre, 8, T0 + k, H, 10 * H))
        .collect();
    let mut snap = b.snap.clone();
    let out = schedule(&snap, T0 + 10);
    assert!(preemptions(&out).is_empty());
    for r in &new_pre {
        let reason = reason_of(&out, *r);
        // Nothing of mid waits: pre holds more than its entitlement and mid's GPUs are within
        // mid's, which the reason says in words of shares.
        assert!(matches!(reason, WaitReason::OverShare { .. }), "{reason:?}");
        assert!(reason.describe().contains("fair share"));
    }
    apply(&mut snap, &out, T0 + 10);
    let mut b2 = Builder {
        snap,
        ..Builder::new()
    };
    let big = b2.waiting(mid, 16, T0 + 20, H, 10 * H);
    let out = schedule(&b2.snap, T0 + 30);
    let pre_set: Vec<RunId> = preemptions(&out).iter().map(|(r, _, _)| *r).collect();
    assert!(!pre_set.is_empty());
    assert!(
        pre_set.iter().all(|r| pre_runs.contains(r)),
        "only pre's runs are preempted"
    );
    assert!(pre_set.iter().all(|r| !mid_runs.contains(r)));
    assert!(pre_set.len() * 8 <= 16, "at most 16 GPUs of pre");
    assert_eq!(started(&out), vec![big]);
}

#[test]
fn s07_two_contracts_cannot_promise_the_same_gpus() {
    let b200 = ModelId(2);
    let plan = [CapacityPlan {
        cluster: ClusterId(1),
        model: b200,
        installed: 8,
        contractable_bp: 10_000,
    }];
    let ten = T0 + 10 * H;
    let twelve = T0 + 12 * H;
    let cand = |gpus| ContractCandidate {
        cluster: ClusterId(1),
        model: b200,
        gpus,
        start: ten,
        end: twelve,
        price_per_gpu_hour: 500,
        balance: Some(1_000_000),
    };
    let as_planned = |c: &ContractCandidate| PlannedContract {
        cluster: c.cluster,
        model: c.model,
        gpus: c.gpus,
        start: c.start,
        end: c.end,
    };
    for (first, second) in [(6, 4), (4, 6)] {
        let a = cand(first);
        assert_eq!(
            admit_contract(&plan, &[], &a),
            Ok(i64::from(first) * 2 * 500)
        );
        let refused = admit_contract(&plan, &[as_planned(&a)], &cand(second)).unwrap_err();
        assert_eq!(
            refused,
            ContractRefusal::Capacity {
                at: ten,
                promised: first,
                contractable: 8,
                asked: second
            }
        );
        assert!(
            refused
                .to_string()
                .contains("not enough contractable capacity")
        );
    }
    // Half-open windows: 12:00-14:00 does not overlap 10:00-12:00.
    let r1 = as_planned(&cand(6));
    let later = ContractCandidate {
        start: twelve,
        end: twelve + 2 * H,
        ..cand(8)
    };
    assert!(admit_contract(&plan, std::slice::from_ref(&r1), &later).is_ok());
    // A partly overlapping window is refused at the first instant of overlap.
    let overlap = ContractCandidate {
        start: T0 + 11 * H,
        end: T0 + 13 * H,
        ..cand(3)
    };
    assert_eq!(
        admit_contract(&plan, &[r1], &overlap),
        Err(ContractRefusal::Capacity {
            at: T0 + 11 * H,
            promised: 6,
            contractable: 8,
            asked: 3
        })
    );
    // A contractable fraction of 50% of 8 GPUs is 4.
    let half = [CapacityPlan {
        contractable_bp: 5_000,
        ..plan[0].clone()
    }];
    assert!(admit_contract(&half, &[], &cand(4)).is_ok());
    assert!(matches!(
        admit_contract(&half, &[], &cand(5)),
        Err(ContractRefusal::Capacity {
            contractable: 4,
            ..
        })
    ));
}

#[test]
fn s09_budgets_never_go_negative() {
    // 100 GPU-hours left at 200 per GPU-hour; a 120 GPU-hour contract is refused.
    let plan = [CapacityPlan {
        cluster: ClusterId(1),
        model: ModelId(1),
        installed: 16,
        contractable_bp: 10_000,
    }];
    let c = ContractCandidate {
        cluster: ClusterId(1),
        model: ModelId(1),
        gpus: 12,
        start: T0,
        end: T0 + 10 * H,
        price_per_gpu_hour: 200,
        balance: Some(100 * 200),
    };
    assert_eq!(
        admit_contract(&plan, &[], &c),
        Err(ContractRefusal::Budget {
            cost: 120 * 200,
            balance: 100 * 200
        })
    );
    // Runs: the balance covers one 4-GPU x 1 h minimum runtime (800) but not a second.
    let mut b = Builder::new();
    b.nodes(2, 8);
    let p = b.project(None, "100", 0);
    b.project_mut(p).balance = Some(1_000);
    let r1 = b.waiting(p, 4, T0, H, 2 * H);
    let r2 = b.waiting(p, 4, T0 + 1, H, 2 * H);
    let free_run = b.waiting(p, 4, T0 + 2, 0, 2 * H);
    let out = schedule(&b.snap, T0 + 10);
    assert_eq!(started(&out), vec![r1, free_run]);
    assert_eq!(
        reason_of(&out, r2),
        &WaitReason::Budget {
            needs: 800,
            has: 200
        }
    );
    assert!(
        reason_of(&out, r2)
            .describe()
            .starts_with("budget exhausted: needs 800, has 200")
    );
}

#[test]
fn s10_a_large_gang_does_not_starve() {
    let mut b = Builder::new();
    b.nodes(4, 8);
    let small = b.project(None, "50", 0);
    let big = b.project(None, "50", 0);
    let mut d = Driver::new(b.snap.clone(), T0 - 2 * H);
    let mut small_runs = Vec::new();
    let mut big_run = None;
    let mut t = T0 - 2 * H;
    let mut reserved_at = None;
    while t <= T0 + 3 * H {
        let mut bb = Builder {
            snap: d.snap.clone(),
            next: 10_000 + (t - T0 + 3 * H),
        };
        let r = bb.waiting(small, 1, t, H, H);
        if t == T0 {
            big_run = Some(bb.waiting(big, 32, t, H, 2 * H));
        }
        d.snap = bb.snap;
        d.duration.insert(r, H);
        small_runs.push(r);
        let out = d.advance_to(t);
        if let Some(br) = big_run
            && reserved_at.is_none()
        {
            reserved_at = out
                .waiting
                .iter()
                .find(|w| w.run == br)
                .and_then(|w| w.estimated_start);
        }
        t += 5 * M;
    }
    let big_run = big_run.unwrap();
    let big_start = d.started_at[&big_run][0];
    let reserved_at = reserved_at.expect("big run had a reserved start");
    assert!(big_start <= T0 + H, "big started at +{} s", big_start - T0);
    assert!(big_start <= reserved_at.max(T0));
    for r in &small_runs {
        for &s in d.started_at.get(r).into_iter().flatten() {
            if s >= T0 && s < big_start {
                assert!(
                    s + H <= reserved_at,
                    "small run {r} started at +{} past the reservation",
                    s - T0
                );
            }
        }
    }
    assert_eq!(d.preempted, 0);
}

#[test]
fn s11_one_gpu_model_does_not_block_another() {
    let mut b = Builder::new();
    let b300 = b.model("B300");
    let b200 = b.model("B200");
    b.nodes_of(b300, 2, 8);
    b.nodes_of(b200, 5, 8);
    let p = b.project(None, "100", 0);
    b.running_of(b300, p, 16, T0 - H, 8 * H, 10 * H);
    let head = b.waiting_of(b300, p, 8, T0 - 100, H, 2 * H);
    let behind: Vec<RunId> = (0..5)
        .map(|k| b.waiting_of(b200, p, 8, T0 - 50 + k, H, 2 * H))
        .collect();
    let out = schedule(&b.snap, T0);
    assert_eq!(started(&out), behind);
    let reason = reason_of(&out, head);
    assert!(reason.describe().contains("B300"), "{}", reason.describe());
}

#[test]
fn s12_minimum_runtime_is_honoured() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let over = b.project(None, "10", 8 * 10 * M);
    let under = b.project(None, "90", 0);
    let over_run = b.running(over, 8, T0 - 10 * M, H, 10 * H);
    let under_run = b.waiting(under, 8, T0, H, 4 * H);
    let mut d = Driver::new(b.snap.clone(), T0);
    let out = d.pass();
    assert!(preemptions(&out).is_empty());
    let protection_ends = T0 + 50 * M;
    assert_eq!(
        reason_of(&out, under_run),
        &WaitReason::Protected {
            until: protection_ends
        }
    );
    assert!(
        reason_of(&out, under_run)
            .describe()
            .contains("2026-10-01 00:50 UTC")
    );
    for t in [T0 + 10 * M, T0 + 49 * M, protection_ends - 1] {
        let out = d.advance_to(t);
        assert!(preemptions(&out).is_empty(), "preempted at {t}");
    }
    let out = d.advance_to(protection_ends);
    assert_eq!(
        preemptions(&out),
        vec![(
            over_run,
            PreemptReason::Entitlement { for_project: under },
            Some(under_run)
        )]
    );
    assert_eq!(started(&out), vec![under_run]);
}

/// Behind a reservation a run may still preempt when it ends before the reserved instant: it
/// gives its GPUs back in time, so the reserved gang keeps its start (docs/design.md section
/// 3.2). A run that would outlast the reservation may not.
#[test]
fn a_run_that_ends_before_the_reservation_may_preempt_behind_it() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let hog = b.project(None, "10", 16 * 2 * H);
    let gang = b.project(None, "45", 0);
    let debug = b.project(None, "45", 0);
    // Eight runs past their minimum runtime and eight protected until T0 + 50 min.
    let past: Vec<RunId> = (0..8)
        .map(|_| b.running(hog, 1, T0 - 2 * H, H, 4 * H))
        .collect();
    for _ in 0..8 {
        b.running(hog, 1, T0 - 10 * M, H, 4 * H);
    }
    let gang_run = b.waiting(gang, 16, T0 - M, H, 4 * H);
    let baseline = schedule(&b.snap, T0);
    assert!(preemptions(&baseline).is_empty());
    let reserved = baseline
        .waiting
        .iter()
        .find(|w| w.run == gang_run)
        .and_then(|w| w.estimated_start)
        .expect("the gang holds the reservation");
    assert_eq!(reserved, T0 + 50 * M);

    let mut short = b.clone();
    let quick = short.waiting(debug, 1, T0, 10 * M, 10 * M);
    let out = schedule(&short.snap, T0);
    let moves = preemptions(&out);
    assert_eq!(moves.len(), 1, "{moves:?}");
    assert!(past.contains(&moves[0].0), "{moves:?}");
    assert_eq!(
        (moves[0].1.clone(), moves[0].2),
        (
            PreemptReason::Entitlement { for_project: debug },
            Some(quick)
        )
    );
    assert_eq!(started(&out), vec![quick]);
    let still = out
        .waiting
        .iter()
        .find(|w| w.run == gang_run)
        .and_then(|w| w.estimated_start);
    assert_eq!(still, Some(reserved));

    let mut long = b.clone();
    let slow = long.waiting(debug, 1, T0, 10 * M, 2 * H);
    let out = schedule(&long.snap, T0);
    assert!(preemptions(&out).is_empty(), "{:?}", preemptions(&out));
    assert!(!started(&out).contains(&slow));
    // No GPU is free, but what keeps it waiting is the reservation it would outlast.
    assert_eq!(
        reason_of(&out, slow),
        &WaitReason::BehindReservation {
            run: gang_run,
            at: reserved
        }
    );
}

/// A reservation made later in a pass counts the GPUs of runs started earlier in it: `b`'s
/// 8-GPU run gets a reserved start although `a`'s run started on half the node in the same
/// pass, and a 10-hour run of a project without a share does not take the other half.
#[test]
fn a_reservation_counts_runs_started_in_the_same_pass() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let a = b.project(None, "50", 0);
    let pb = b.project(None, "50", 0);
    let c = b.project(None, "0", 0);
    let first = b.waiting(a, 4, T0 - 3, H, 2 * H);
    let gang = b.waiting(pb, 8, T0 - 2, H, H);
    let long = b.waiting(c, 4, T0 - 1, H, 10 * H);
    let out = schedule(&b.snap, T0);
    assert_eq!(started(&out), vec![first]);
    let reserved = out
        .waiting
        .iter()
        .find(|w| w.run == gang)
        .and_then(|w| w.estimated_start);
    // `a`'s run may be preempted for it once its minimum runtime ends only with `a` ranking
    // strictly below after the move; at that instant an hour of `a`'s 4 GPUs weighs just as
    // much as the 8 GPUs in flight the move gives `b`, a tie, so the estimate is `a`'s time
    // limit: never a start the rules would refuse.
    assert_eq!(reserved, Some(T0 + 2 * H));
    assert!(!started(&out).contains(&long));
    // A pass a minute later finds `a` past the tie and preempts it: the start comes before
    // the estimate, never after.
    let mut d = Driver::new(b.snap.clone(), T0);
    d.pass();
    d.advance_to(T0 + H + M);
    let at = d.started_at.get(&gang).and_then(|s| s.first().copied());
    assert!(at.is_some_and(|t| t <= T0 + 2 * H), "{at:?}");
}

/// A 1-GPU run of a project that holds its entitlement is no starving head: it does not go
/// before another project's runs within their entitlement (and then get preempted by them in
/// the same pass).
#[test]
fn a_small_run_beyond_its_entitlement_does_not_go_first() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    // `pb` ranks first: `pa` has more usage.
    let pa = b.project(None, "50", 8 * 24 * H);
    let pb = b.project(None, "50", 4 * 2 * H);
    for _ in 0..4 {
        b.running(pb, 1, T0 - 2 * H, H, 10 * H);
    }
    let theirs = b.waiting(pb, 1, T0 - 200, H, H);
    let ours: Vec<RunId> = (0..4)
        .map(|k| b.waiting(pa, 1, T0 - 100 + k, H, H))
        .collect();
    let out = schedule(&b.snap, T0);
    assert!(preemptions(&out).is_empty(), "{:?}", preemptions(&out));
    assert_eq!(started(&out), ours);
    assert!(!started(&out).contains(&theirs));
}

/// "The other busy GPUs are within other projects' entitlements" is said only when it is
/// true: here a project without a share holds half the node.
#[test]
fn over_share_is_said_only_when_the_others_hold_their_entitlements() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let a = b.project(None, "50", 4 * H);
    let pb = b.project(None, "50", 0);
    let c = b.project(None, "0", 4 * H);
    b.running(a, 4, T0 - H, H, 2 * H);
    b.running(c, 4, T0 - 10 * M, H, 10 * H);
    let gang = b.waiting(pb, 8, T0 - H, H, H);
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty());
    let reason = reason_of(&out, gang);
    assert!(
        !matches!(reason, WaitReason::OverShare { .. }),
        "{}",
        reason.describe()
    );
}

/// An unallocated run's expected start leaves the GPUs that free up first to the run holding
/// the reservation: it was given the reserved instant itself, which the rules then refuse it.
#[test]
fn an_unallocated_run_is_not_expected_at_another_runs_reserved_start() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let a = b.project(None, "50", 8 * H);
    let pb = b.project(None, "50", 0);
    // Protected until T0 + 50 min; their time limits end at T0 + 1 h and T0 + 2 h.
    b.running(a, 8, T0 - 10 * M, H, 70 * M);
    b.running(a, 8, T0 - 10 * M, H, 130 * M);
    let reserved = b.waiting(pb, 8, T0 - 2, H, 4 * H);
    let free = b.waiting(pb, 8, T0 - 1, 0, H);
    let out = schedule(&b.snap, T0);
    let estimate = |run| {
        out.waiting
            .iter()
            .find(|w| w.run == run)
            .and_then(|w| w.estimated_start)
    };
    // `pb` may evict one of `a`'s runs when its protection ends.
    assert_eq!(estimate(reserved), Some(T0 + 50 * M));
    assert_eq!(estimate(free), Some(T0 + 2 * H));
}

/// Behind a reservation, a run is told the reservation bars it only when GPUs are free for it
/// or a preemption could be made for it: here every GPU is held by one 16-GPU gang, and
/// evicting it for one GPU would exceed the need plus one node's GPUs, so no move exists and
/// the reservation is not the cause (found by a new-user check: fifteen 1-GPU runs "behind
/// the reservation" while the pool was simply full).
#[test]
fn a_full_pool_with_no_possible_move_is_not_blamed_on_the_reservation() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let first = b.project(None, "33", 0);
    let second = b.project(None, "33", H);
    let big = b.project(None, "34", 100 * H);
    // Past its minimum runtime; its time limit ends in an hour.
    b.running(big, 16, T0 - 2 * H, H, 3 * H);
    let gang = b.waiting(first, 8, T0 - 2 * M, H, 4 * H);
    let one = b.waiting(second, 1, T0 - M, 600, 2 * H);
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty() && preemptions(&out).is_empty());
    assert_eq!(reason_of(&out, gang).reserved_at(), Some(T0 + H));
    assert!(
        !matches!(reason_of(&out, one), WaitReason::BehindReservation { .. }),
        "{:?}",
        reason_of(&out, one)
    );
}

/// The GPUs that free go first to the allocated runs waiting for them: an unallocated run is
/// expected once enough have freed for them all and for it, and its reason counts them. It
/// was told the first GPU's end, which the rules then gave to an allocated run (on OpenB its
/// first estimates were days early).
#[test]
fn an_unallocated_run_is_expected_after_the_allocated_runs_waiting() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let a = b.project(None, "50", 0);
    let pb = b.project(None, "50", 0);
    // Eight 1-GPU runs, protected, ending 10, 20, ..., 80 minutes from now.
    for k in 1..=8 {
        b.running(
            if k % 2 == 0 { a } else { pb },
            1,
            T0 - 5 * M,
            H,
            5 * M + k * 10 * M,
        );
    }
    for _ in 0..3 {
        b.waiting(a, 1, T0 - 3 * M, H, 2 * H);
    }
    let free = b.waiting(pb, 1, T0 - 4 * M, 0, 2 * H);
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty());
    let w = out.waiting.iter().find(|w| w.run == free).unwrap();
    assert_eq!(
        w.reason,
        WaitReason::IdleGpus {
            gpus: 1,
            free: 0,
            allocated_waiting: 3
        }
    );
    // The 4th GPU to free: three for the allocated runs, then one for it.
    assert_eq!(w.estimated_start, Some(T0 + 40 * M));
}

/// Idle GPUs held for a reservation are lent to unallocated work, whatever its time limit, and
/// taken back when the reservation is due: the reserved gang starts at its instant by
/// preempting the unallocated run. Before, the unallocated run waited "behind the
/// reservation" and the 4 GPUs stood idle for an hour.
#[test]
fn unallocated_work_borrows_the_gpus_a_reservation_holds() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let a = b.project(None, "50", 4 * H);
    let pb = b.project(None, "50", 0);
    // a's run holds 4 GPUs, protected until T0 + 1 h, when its time limit also ends.
    b.running(a, 4, T0 - 10 * M, 70 * M, 70 * M);
    let gang = b.waiting(pb, 8, T0 - 2, H, 2 * H);
    // Unallocated, with a time limit far past the reserved instant.
    let free = b.waiting(a, 2, T0 - 1, 0, 10 * H);
    let mut d = Driver::new(b.snap.clone(), T0);
    let out = d.pass();
    let reserved = out
        .waiting
        .iter()
        .find(|w| w.run == gang)
        .and_then(|w| w.estimated_start);
    assert_eq!(reserved, Some(T0 + H));
    assert_eq!(started(&out), vec![free]);
    // When a's run ends, the gang takes its 4 GPUs and the 2 lent ones back, at its instant.
    let out = d.advance_to(T0 + H);
    assert_eq!(started(&out), vec![gang]);
    assert_eq!(
        preemptions(&out),
        vec![(free, PreemptReason::Unallocated, Some(gang))]
    );
    assert_eq!(d.started_at[&gang], vec![T0 + H]);
}

/// A node down may come back: a run larger than the GPUs of the nodes up, but not than every
/// node of its pool, is admitted and waits for GPUs down (not "never fits"); only a run larger
/// than every node, down ones included, never fits. The counts are the nodes' GPUs, by hand.
#[test]
fn a_node_down_makes_a_run_wait_not_never_fit() {
    let mut b = Builder::new();
    let nodes = b.nodes(2, 8);
    let p = b.project(None, "100", 0);
    b.snap
        .nodes
        .iter_mut()
        .find(|n| n.id == nodes[1])
        .unwrap()
        .state = NodeState::Down;
    let twelve = b.waiting(p, 12, T0, H, 2 * H);
    assert_eq!(admit_run(&b.snap, b.snap.waiting.last().unwrap()), Ok(()));
    let seventeen = b.waiting(p, 17, T0 + 1, H, 2 * H);
    assert_eq!(
        admit_run(&b.snap, b.snap.waiting.last().unwrap()),
        Err(RunRefusal::LargerThanCluster {
            asked: 17,
            installed: 16
        })
    );
    b.snap.validate().unwrap();
    let out = schedule(&b.snap, T0 + 2);
    assert!(started(&out).is_empty());
    assert_eq!(
        reason_of(&out, twelve),
        &WaitReason::GpusDown { gpus: 12, up: 8 }
    );
    assert!(
        reason_of(&out, twelve)
            .describe()
            .contains("waiting for nodes that are down"),
        "{}",
        reason_of(&out, twelve).describe()
    );
    assert_eq!(
        reason_of(&out, seventeen),
        &WaitReason::NeverFits {
            gpus: 17,
            installed: 16
        }
    );
    // Draining counts as installed and up: the 12-GPU run is behind the 8 GPUs up, no more.
    let mut b = Builder::new();
    let nodes = b.nodes(2, 8);
    let p = b.project(None, "100", 0);
    for n in b.snap.nodes.iter_mut().filter(|n| n.id == nodes[1]) {
        n.state = NodeState::Draining;
    }
    let twelve = b.waiting(p, 12, T0, H, 2 * H);
    let out = schedule(&b.snap, T0 + 2);
    assert!(!matches!(
        reason_of(&out, twelve),
        WaitReason::GpusDown { .. } | WaitReason::NeverFits { .. }
    ));
    // Larger than the GPUs up, it names the drain, also while the draining node's GPUs are
    // busy and others are free (it said "waiting for 12 GPUs; 6 free now").
    let mut b = Builder::new();
    let nodes = b.nodes(2, 8);
    let p = b.project(None, "100", 0);
    // First fit: the 8-GPU run fills the first node, which drains; 2 of the other's are busy.
    b.running(p, 8, T0 - H, H, 4 * H);
    b.running(p, 2, T0 - H, H, 4 * H);
    for n in b.snap.nodes.iter_mut().filter(|n| n.id == nodes[0]) {
        n.state = NodeState::Draining;
    }
    let twelve = b.waiting(p, 12, T0, H, 2 * H);
    let out = schedule(&b.snap, T0 + 2);
    assert_eq!(
        reason_of(&out, twelve),
        &WaitReason::NodesDraining { gpus: 12 }
    );
}

/// The estimated start of `run` in `out`.
fn estimate_of(out: &Outcome, run: RunId) -> Option<i64> {
    out.waiting
        .iter()
        .find(|w| w.run == run)
        .and_then(|w| w.estimated_start)
}

/// A waiting run is never told a start that depends on evicting a run larger than its need
/// plus one node's GPUs: a 1-GPU run behind a protected 16-GPU gang waits for the gang's time
/// limit, not its minimum runtime (found by a check: "protected until 09:59", then at 09:59
/// "reserved start about 10:02"). Over passes through the protection's end the estimate stays.
#[test]
fn no_estimate_counts_a_victim_beyond_the_size_bound() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    // The gang's project is owed 0.8 GPU: evicting it would cost less than the run gains.
    let big = b.project(None, "5", 0);
    let small = b.project(None, "50", 0);
    b.project(None, "45", 0);
    let gang = b.running(big, 16, T0 - 10 * M, 20 * M, H);
    let one = b.waiting(small, 1, T0, 10 * M, 15 * M);
    let mut m = Driver::new(b.snap.clone(), T0);
    let gang_end = T0 - 10 * M + H;
    for k in 0..20 {
        let out = m.advance_to(T0 + k * 2 * M);
        assert!(preemptions(&out).is_empty(), "16 GPUs evicted for 1");
        if !started(&out).is_empty() {
            break;
        }
        assert!(
            !matches!(reason_of(&out, one), WaitReason::Protected { .. }),
            "{:?}",
            reason_of(&out, one)
        );
        assert_eq!(estimate_of(&out, one), Some(gang_end), "pass {k}");
    }
    assert!(m.snap.running.iter().any(|r| r.id == gang));
}

/// Victims count as a set in an estimate, as in the move itself: two 1-GPU runs each of whose
/// evictions alone costs their project nothing of its entitlement cost it all of it together,
/// more than the waiting gang gains, so the gang's estimate is their time limits, not the end
/// of their protection (found by a check: told 10:01, then 10:15).
#[test]
fn an_estimate_counts_its_victims_as_a_set() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    // Entitlements of 8 GPUs: `two` 0.72, `gang` 0.24, the rest idle.
    let two = b.project(None, "9", 0);
    let gang = b.project(None, "3", 0);
    b.project(None, "88", 0);
    let protected_until = T0 + 10 * M;
    let ends = T0 + 40 * M;
    for _ in 0..2 {
        b.running(two, 1, T0 - 5 * M, 15 * M, 45 * M);
    }
    let eight = b.waiting(gang, 8, T0, 10 * M, H);
    let out = schedule(&b.snap, T0);
    assert_eq!(estimate_of(&out, eight), Some(ends));
    assert_ne!(
        reason_of(&out, eight),
        &WaitReason::Protected {
            until: protected_until
        }
    );
    // At the protection's end nothing is preempted, and the estimate holds.
    let mut m = Driver::new(b.snap.clone(), T0);
    for t in [T0, protected_until, protected_until + M] {
        let out = m.advance_to(t);
        assert!(preemptions(&out).is_empty());
        assert_eq!(estimate_of(&out, eight), Some(ends), "at {t}");
    }
}

/// Erlang's loss formula, computed here by its closed form `B(h) = (A^h / h!) / sum_k A^k / k!`
/// (not the recursion the core uses): the fewest GPUs with `B <= 10 %`.
#[test]
fn the_short_run_headroom_is_erlangs_loss_formula_at_ten_percent() {
    fn erlang_b(h: u32, a: f64) -> f64 {
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..=h {
            term *= a / f64::from(k);
            sum += term;
        }
        term / sum
    }
    for load in [0.001, 0.03, 0.2, 0.5, 1.0, 3.7, 12.0] {
        let h = short_run_headroom(load, 1_000, 10);
        assert!(erlang_b(h, load) <= 0.1, "{load}: {h}");
        assert!(erlang_b(h - 1, load) > 0.1, "{load}: {h}");
    }
    // By hand: B(1, 0.03) = 0.03 / 1.03; B(1, 0.2) = 1/6, B(2, 0.2) = 0.02 / 1.22.
    assert_eq!(short_run_headroom(0.03, 1_000, 10), 1);
    assert_eq!(short_run_headroom(0.2, 1_000, 10), 2);
    assert_eq!(short_run_headroom(0.0, 1_000, 10), 0);
    assert_eq!(short_run_headroom(f64::NAN, 1_000, 10), 0);
    assert_eq!(short_run_headroom(12.0, 4, 10), 4);
    // A looser target keeps fewer: B(1, 0.2) = 1/6 is within 20 %; 100 % keeps none.
    assert_eq!(short_run_headroom(0.2, 1_000, 20), 1);
    assert_eq!(short_run_headroom(0.2, 1_000, 100), 0);
}

/// A pool where short runs came keeps idle GPUs for them: a run with a longer time limit does
/// not take the last one and says why; a short run arriving in the otherwise full pool starts
/// at once; without short runs in the window nothing is kept (docs/design.md section 3.7).
#[test]
fn a_pool_keeps_idle_gpus_for_short_runs() {
    let build = |load: i64| {
        let mut b = Builder::new();
        b.nodes(2, 4);
        let busy = b.project(None, "50", 0);
        let other = b.project(None, "50", 0);
        b.running(busy, 4, T0 - 600, H, 10 * H);
        b.running(other, 3, T0 - 600, H, 10 * H);
        let long = b.waiting(other, 1, T0 - 60, H, 2 * H);
        let short = b.waiting(busy, 1, T0 - 30, 600, 600);
        b.snap.short_load = vec![ShortLoad {
            cluster: ClusterId(1),
            model: ModelId(1),
            milli_gpus: load,
        }];
        b.snap.validate().unwrap();
        (b, long, short)
    };
    // 0.03 GPUs of short runs on average: one GPU kept.
    let (b, long, short) = build(30);
    let out = schedule(&b.snap, T0);
    assert_eq!(started(&out), vec![short]);
    // Alone, the long run still leaves the kept GPU idle, and is told so.
    let mut alone = b.snap.clone();
    alone.waiting.retain(|w| w.id == long);
    let out = schedule(&alone, T0);
    assert!(started(&out).is_empty());
    assert_eq!(
        reason_of(&out, long),
        &WaitReason::ShortRunHeadroom {
            gpus: 1,
            free: 1,
            kept: 1
        }
    );
    assert!(reason_of(&out, long).describe().contains("short runs"));
    // No short run in the window: nothing kept, the long run starts.
    let (b, long, _) = build(0);
    let mut alone = b.snap.clone();
    alone.waiting.retain(|w| w.id == long);
    assert_eq!(started(&schedule(&alone, T0)), vec![long]);
}

/// A reservation counts the GPUs kept for short runs as not its own: its run is told the
/// instant at which its GPUs and the kept one are free, and starts then; a short run that
/// arrives before and would outlast the reservation may take the kept GPU (docs/design.md
/// section 3.7).
#[test]
fn a_reservation_counts_the_gpus_kept_for_short_runs() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let a = b.project(None, "50", 0);
    let c = b.project(None, "50", 0);
    // Every run protected to its end: a's 4 GPUs free at T0 + 2H, c's at T0 + H and T0 + 3H.
    b.running(a, 4, T0 - 600, 2 * H + 600, 2 * H + 600);
    b.running(c, 1, T0 - 600, H + 600, H + 600);
    b.running(c, 1, T0 - 600, 3 * H + 600, 3 * H + 600);
    let gang = b.waiting(c, 3, T0 - 60, H, 2 * H);
    b.snap.short_load = vec![ShortLoad {
        cluster: ClusterId(1),
        model: ModelId(1),
        milli_gpus: 30,
    }];
    b.snap.validate().unwrap();
    let mut d = Driver::new(b.snap.clone(), T0);
    let out = d.pass();
    // 2 idle, 1 of them kept: 3 free at T0 + H are not enough beside the kept one; at T0 + 2H
    // there are 7.
    assert_eq!(estimate_of(&out, gang), Some(T0 + 2 * H));
    let out = d.advance_to(T0 + H + 60);
    assert_eq!(estimate_of(&out, gang), Some(T0 + 2 * H));
    let short = RunId(77_001);
    d.snap.waiting.push(WaitingRun {
        id: short,
        project: a,
        cluster: ClusterId(1),
        model: ModelId(1),
        gpus: 1,
        submitted_at: T0 + 2 * H - 300,
        min_runtime_s: 600,
        time_limit_s: 900,
        priority: 0,
    });
    let out = d.advance_to(T0 + 2 * H - 300);
    assert_eq!(started(&out), vec![short]);
    d.advance_to(T0 + 2 * H);
    assert_eq!(d.started_at.get(&gang), Some(&vec![T0 + 2 * H]));
}

/// A short run on the GPU its pool keeps does not move a long run's reserved start to the
/// short run's end: the GPU it frees is kept again, so the start is when another GPU frees
/// beside it (found by a new-user check: "reserved start about 22:53", the short run's end,
/// on 55 passes, then 23:37 once it ended; docs/design.md sections 3.6 and 3.7).
#[test]
fn a_short_run_on_the_kept_gpu_does_not_bring_a_long_runs_start_forward() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let a = b.project(None, "40", 0);
    let c = b.project(None, "40", 0);
    let d = b.project(None, "20", 0);
    // Protected to their ends (T0 + H and T0 + 2H): nothing may be evicted.
    b.running(a, 8, T0 - 600, H + 600, H + 600);
    b.running(c, 7, T0 - 600, 2 * H + 600, 2 * H + 600);
    // A short run (time limit 15 minutes) on the one GPU the pool keeps, ending at T0 + 10 min.
    b.running(d, 1, T0 - 300, 600, 900);
    let long = b.waiting(d, 1, T0 - 60, 600, H);
    b.snap.short_load = vec![ShortLoad {
        cluster: ClusterId(1),
        model: ModelId(1),
        milli_gpus: 30,
    }];
    b.snap.validate().unwrap();
    let mut drv = Driver::new(b.snap.clone(), T0);
    // At T0 + H, a's 8 GPUs free: one of them beside the kept one is the first instant it may
    // start. Before the fix, the short run's end (T0 + 10 min) was given.
    let out = drv.pass();
    assert_eq!(
        estimate_of(&out, long),
        Some(T0 + H),
        "{:?}",
        reason_of(&out, long)
    );
    let out = drv.advance_to(T0 + 600 + 60);
    assert!(started(&out).is_empty());
    assert_eq!(
        estimate_of(&out, long),
        Some(T0 + H),
        "{:?}",
        reason_of(&out, long)
    );
    drv.advance_to(T0 + H);
    assert_eq!(drv.started_at.get(&long), Some(&vec![T0 + H]));
}

/// A pool's starving head smaller than a node does not take the GPUs kept for short runs:
/// where every project's entitlement is under one GPU, each 1-GPU run first in line is such a
/// head, and it took the kept GPU (found by a new-user check). A head of a whole node may.
#[test]
fn a_small_starving_head_leaves_the_kept_gpus_a_whole_node_gang_does_not() {
    let build = |gpus: u32| {
        let mut b = Builder::new();
        b.nodes(2, 8);
        let tiny = b.project(None, "5", 0);
        let big = b.project(None, "95", 0);
        b.running(big, 8, T0 - 600, H, 10 * H);
        b.running(big, 8 - gpus, T0 - 600, H, 10 * H);
        let head = b.waiting(tiny, gpus, T0 - 60, H, 2 * H);
        b.snap.short_load = vec![ShortLoad {
            cluster: ClusterId(1),
            model: ModelId(1),
            milli_gpus: 30,
        }];
        b.snap.validate().unwrap();
        (b, head)
    };
    // 1 GPU free on the second node, kept: the 1-GPU run (entitlement 0.8 GPU) waits.
    let (b, head) = build(1);
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty(), "{:?}", out.decisions);
    assert!(matches!(
        reason_of(&out, head),
        WaitReason::ShortRunHeadroom { kept: 1, .. }
    ));
    // An 8-GPU gang of the same project on a free node: it starts though that leaves none kept.
    let mut b = Builder::new();
    b.nodes(2, 8);
    let tiny = b.project(None, "5", 0);
    let big = b.project(None, "95", 0);
    b.running(big, 8, T0 - 600, H, 10 * H);
    let gang = b.waiting(tiny, 8, T0 - 60, H, 2 * H);
    b.snap.short_load = vec![ShortLoad {
        cluster: ClusterId(1),
        model: ModelId(1),
        milli_gpus: 30,
    }];
    assert_eq!(started(&schedule(&b.snap, T0)), vec![gang]);
}

/// Behind a reservation, a run stopped by the GPU kept for short runs is told so, not that the
/// reservation bars it: the reservation leaves it a GPU, the kept one is the idle one (found by
/// a new-user check: "GPUs are reserved for run ..." for a run that started when a short run
/// left the kept GPU, the reservation unchanged).
#[test]
fn behind_a_reservation_the_kept_gpu_is_named_when_it_is_the_cause() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let a = b.project(None, "50", H);
    let c = b.project(None, "50", 0);
    // Protected to their ends: a's 4 GPUs free at T0 + 2H, c's 3 at T0 + 3H; 1 GPU idle.
    b.running(a, 4, T0 - 600, 2 * H + 600, 2 * H + 600);
    b.running(c, 3, T0 - 600, 3 * H + 600, 3 * H + 600);
    let gang = b.waiting(c, 3, T0 - 60, H, 2 * H);
    let long = b.waiting(a, 1, T0 - 30, H, 5 * H);
    b.snap.short_load = vec![ShortLoad {
        cluster: ClusterId(1),
        model: ModelId(1),
        milli_gpus: 30,
    }];
    b.snap.validate().unwrap();
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty(), "{:?}", started(&out));
    // At T0 + 2H: 1 idle + 4 freed, 1 kept: the gang's 3 and 1 more.
    assert_eq!(reason_of(&out, gang).reserved_at(), Some(T0 + 2 * H));
    assert_eq!(
        reason_of(&out, long),
        &WaitReason::ShortRunHeadroom {
            gpus: 1,
            free: 1,
            kept: 1
        }
    );
    // Without the kept GPU it starts beside the reservation, which it would outlast.
    let mut none = b.clone();
    none.snap.short_load.clear();
    let out = schedule(&none.snap, T0);
    assert_eq!(started(&out), vec![long]);
}

/// A starving head goes first for its size, not by fair share: a run of another project is
/// not told that the head's project "comes first (within its entitlement or further below its
/// fair share)" (found by a new-user check: two projects were each told the other came first;
/// the one with the head ranked lower). Here the pool is simply full.
#[test]
fn a_starving_head_is_not_named_ahead_by_fair_share() {
    let mut b = Builder::new();
    b.nodes(1, 4);
    let x = b.project(None, "6", 10 * H);
    let y = b.project(None, "94", 0);
    // x's 4 GPUs: protected for 10 more minutes, free at T0 + 30M.
    b.running(x, 4, T0 - 10 * M, 20 * M, 40 * M);
    // 2 GPUs against x's 0.24: a starving head, which holds the reservation.
    let head = b.waiting(x, 2, T0 - 5 * M, 10 * M, 30 * M);
    let run = b.waiting(y, 2, T0 - M, 5 * M, H);
    // It held the reservation after the previous pass: it stays the head, first in the pass.
    b.snap.reserved = vec![head];
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty() && preemptions(&out).is_empty());
    assert_eq!(reason_of(&out, head).reserved_at(), Some(T0 + 30 * M));
    assert_eq!(reason_of(&out, run), &WaitReason::Gpus { gpus: 2, free: 0 });
}
