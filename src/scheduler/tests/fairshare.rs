//! Unit tests of the fair-share ranking and of small pieces of the pass.

use super::support::*;
use crate::scheduler::*;
use std::cmp::Ordering;

#[test]
fn share_key_compares_exactly_and_idle_first() {
    let k = |share, usage| ShareKey { share, usage };
    // 0.45 / 25 < 0.10 / 5
    assert_eq!(k(4500, 25).compare(&k(1000, 5)), Ordering::Less);
    assert_eq!(
        k(1000, 0).compare(&k(9000, 1)),
        Ordering::Greater,
        "idle ranks first"
    );
    assert_eq!(
        k(2000, 0).compare(&k(1000, 0)),
        Ordering::Greater,
        "larger share among idle"
    );
    assert_eq!(
        k(0, 0).compare(&k(1, 1_000_000)),
        Ordering::Less,
        "zero share last"
    );
    assert_eq!(k(5000, 10).compare(&k(2500, 5)), Ordering::Equal);
}

#[test]
fn depth_first_walk_keeps_subtrees_together() {
    // root A (50%) -> a1 (50%, heavy), a2 (50%, idle); root B (50%) -> b1 (100%, light).
    // A's subtree usage 100, B's 10: B ranks first, then A's children idle-first.
    let mut b = Builder::new();
    let ga = b.group(None, "50");
    let gb = b.group(None, "50");
    let a1 = b.project(Some(ga), "50", 100);
    let a2 = b.project(Some(ga), "50", 0);
    let b1 = b.project(Some(gb), "100", 10);
    let fs = FairShare::new(&b.snap, &Default::default());
    assert_eq!(fs.order(), vec![b1, a2, a1]);
    assert!(fs.strictly_below(a1, b1));
    assert!(!fs.strictly_below(b1, a1));
    assert!(!fs.strictly_below(a1, a1));
}

#[test]
fn shares_parse_and_sums_over_100_are_refused() {
    assert_eq!(Share::parse_percent("45"), Ok(Share(4500)));
    assert_eq!(Share::parse_percent("12.5%"), Ok(Share(1250)));
    assert_eq!(Share::parse_percent("0.05"), Ok(Share(5)));
    for bad in ["", "abc", "101", "-3", "1.234", "1e2"] {
        assert!(Share::parse_percent(bad).is_err(), "{bad}");
    }
    let mut b = Builder::new();
    b.project(None, "60", 0);
    b.project(None, "50", 0);
    let err = b.snap.validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        "shares under the top level sum to 110%, more than 100%"
    );
}

#[test]
fn validate_refuses_double_held_gpus() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let p = b.project(None, "100", 0);
    b.running(p, 4, T0, H, H);
    let mut dup = b.snap.running[0].clone();
    dup.id = RunId(77);
    b.snap.running.push(dup);
    assert!(matches!(
        b.snap.validate(),
        Err(SnapshotError::BadPlacement {
            problem: "is held twice",
            ..
        })
    ));
}

#[test]
fn best_fit_prefers_the_fullest_node_that_holds_the_gang() {
    let mut b = Builder::new();
    let nodes = b.nodes(3, 8);
    let p = b.project(None, "100", 0);
    b.running(p, 8, T0, H, H); // node 0 full
    b.running(p, 5, T0, H, H); // node 1: 3 free
    let r = b.waiting(p, 3, T0, H, H);
    let out = schedule(&b.snap, T0);
    assert_eq!(
        out.decisions[0],
        Decision::Start {
            run: r,
            placement: vec![(nodes[1], vec![5, 6, 7])],
            contract: None,
            contract_gpus: 0,
            non_preemptible: false
        }
    );
}

#[test]
fn draining_node_requeues_after_minimum_runtime_and_reports_empty() {
    let mut b = Builder::new();
    let nodes = b.nodes(2, 4);
    let p = b.project(None, "100", 0);
    let r = b.running(p, 4, T0, H, 10 * H);
    b.snap.nodes[0].state = NodeState::Draining;
    let w = b.waiting(p, 4, T0, H, H);
    let out = schedule(&b.snap, T0 + 10);
    assert!(preemptions(&out).is_empty());
    assert!(out.drained_nodes.is_empty());
    // The waiting run goes to the other node, not the draining one.
    assert_eq!(
        out.decisions[0],
        Decision::Start {
            run: w,
            placement: vec![(nodes[1], vec![0, 1, 2, 3])],
            contract: None,
            contract_gpus: 0,
            non_preemptible: false
        }
    );
    let out = schedule(&b.snap, T0 + H);
    assert_eq!(
        preemptions(&out),
        vec![(r, PreemptReason::NodeDraining { node: nodes[0] }, None)]
    );
    assert_eq!(out.drained_nodes, vec![nodes[0]]);
}

#[test]
fn contract_holds_gpus_and_lends_them_only_to_unallocated_runs() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let owner = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.contract(1, owner, 6, T0, T0 + 2 * H);
    let alloc = b.waiting(other, 4, T0, H, H);
    let free = b.waiting(other, 4, T0, 0, H);
    let out = schedule(&b.snap, T0);
    // Only 2 GPUs are not held: the allocated 4-GPU run waits, the unallocated one borrows.
    assert_eq!(started(&out), vec![free]);
    assert!(matches!(
        reason_of(&out, alloc),
        WaitReason::Contracts { held: 6 } | WaitReason::Reserved { .. }
    ));
    let mut snap = b.snap.clone();
    apply(&mut snap, &out, T0);
    // The owner's run takes its GPUs back from the borrower at once.
    let mut b2 = Builder { snap, next: 5_000 };
    let own = b2.waiting(owner, 6, T0 + 5, H, H);
    let out = schedule(&b2.snap, T0 + 10);
    assert_eq!(
        preemptions(&out),
        vec![(free, PreemptReason::Unallocated, Some(own))]
    );
    assert!(out.decisions.iter().any(
        |d| matches!(d, Decision::Start { run, contract: Some(ContractId(1)), .. } if *run == own)
    ));
}

/// An allocated run starts on a free GPU while free and borrowed GPUs together still cover a
/// contract's hold: the unallocated borrower is not evicted (found by a new-user check: the
/// borrower was preempted "for" a 1-GPU run that started on another, free GPU, then started
/// again on its own GPUs in the next pass, three times over). Over several passes nothing is
/// preempted, and the contract's owner still takes its GPUs back at once.
#[test]
fn a_start_on_free_gpus_does_not_evict_a_contracts_borrower() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let owner = b.project(None, "40", 0);
    let other = b.project(None, "30", 0);
    let third = b.project(None, "30", 0);
    b.contract(1, owner, 7, T0, T0 + 2 * H);
    // 7 busy allocated, 2 borrowed by an unallocated run, 7 free: 9 cover the hold of 7.
    b.running(other, 7, T0 - 60, H, 3 * H);
    let borrower = b.running(other, 2, T0 - 60, 0, 3 * H);
    let newcomer = b.waiting(third, 1, T0, 60, H);
    let mut d = Driver::new(b.snap.clone(), T0);
    let out = d.pass();
    assert_eq!(started(&out), vec![newcomer], "{:?}", out.decisions);
    assert!(preemptions(&out).is_empty(), "{:?}", preemptions(&out));
    for t in [T0 + 60, T0 + 120, T0 + 180] {
        let out = d.advance_to(t);
        assert!(preemptions(&out).is_empty(), "{t}: {:?}", preemptions(&out));
    }
    // The owner's 7-GPU run takes its hold: the 6 free GPUs and one of the borrower's.
    let mut snap = d.snap.clone();
    let mut b2 = Builder {
        snap: snap.clone(),
        next: 9_000,
    };
    let own = b2.waiting(owner, 7, T0 + 200, H, H);
    snap = b2.snap;
    let out = schedule(&snap, T0 + 200);
    assert!(started(&out).contains(&own), "{:?}", out.decisions);
    assert_eq!(
        preemptions(&out),
        vec![(borrower, PreemptReason::Unallocated, Some(own))]
    );
}

/// A run that must preempt frees only what it needs while the borrowed GPUs left still cover a
/// contract's hold: with every GPU busy, 8 of them held for a contract and lent to two 8-GPU
/// unallocated runs, an allocated 8-GPU run evicts one of them, not both (found by a new-user
/// check: both were evicted and 8 GPUs stood idle, held, until the next pass lent them again).
#[test]
fn a_preemption_frees_no_more_than_the_borrowed_hold_leaves_uncovered() {
    let mut b = Builder::new();
    b.nodes(3, 8);
    let owner = b.project(None, "20", 0);
    let other = b.project(None, "40", 0);
    let third = b.project(None, "40", 0);
    b.contract(1, owner, 8, T0, T0 + 4 * H);
    b.running(other, 8, T0 - H, 60, 10 * H);
    let lent = [
        b.running(other, 8, T0 - 120, 0, 10 * H),
        b.running(other, 8, T0 - 60, 0, 10 * H),
    ];
    let newcomer = b.waiting(third, 8, T0, H, H);
    let out = schedule(&b.snap, T0);
    assert!(started(&out).contains(&newcomer), "{:?}", out.decisions);
    let evicted = preemptions(&out);
    assert_eq!(evicted.len(), 1, "{evicted:?}");
    assert!(lent.contains(&evicted[0].0), "{evicted:?}");
    // The next pass keeps it so: the borrower left covers the hold.
    let mut d = Driver::new(b.snap.clone(), T0);
    d.pass();
    let out = d.advance_to(T0 + 60);
    assert!(preemptions(&out).is_empty(), "{:?}", preemptions(&out));
}

/// A run is never told that its own project's contract holds GPUs "for other projects" (found
/// by a new-user check: a contract holder's 8-GPU run, larger than its 7-GPU contract, was
/// told its own contract's GPUs were held for other projects' contracts); another project's
/// run is told the other projects' held GPUs alone.
#[test]
fn a_contract_holders_run_is_not_told_its_own_hold_is_others() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let owner = b.project(None, "20", 0);
    let other = b.project(None, "80", 0);
    b.contract(1, owner, 3, T0, T0 + 2 * H);
    // Allocated, past its minimum runtime, within its project's entitlement.
    b.running(other, 4, T0 - H, 60, 10 * H);
    // Larger than the 3 held GPUs and the 1 free one together.
    let larger = b.waiting(owner, 5, T0, H, H);
    let out = schedule(&b.snap, T0);
    assert!(!started(&out).contains(&larger), "{:?}", out.decisions);
    assert!(
        !matches!(reason_of(&out, larger), WaitReason::Contracts { .. }),
        "{:?}",
        reason_of(&out, larger)
    );
    let mut b = Builder::new();
    b.nodes(1, 8);
    let owner = b.project(None, "20", 0);
    let other = b.project(None, "80", 0);
    b.contract(1, owner, 4, T0, T0 + 2 * H);
    b.running(other, 2, T0 - 60, H, 10 * H);
    let theirs = b.waiting(other, 4, T0, H, H);
    let out = schedule(&b.snap, T0);
    assert!(
        matches!(reason_of(&out, theirs), WaitReason::Contracts { held: 4 }),
        "{:?}",
        reason_of(&out, theirs)
    );
}

/// A run whose reserved start comes before the protection that blocks it now is told the
/// reserved start, not "protected until" a later instant (found by a new-user check: told
/// "protected until 00:56" while its estimate said 00:10, when other GPUs freed first).
#[test]
fn a_reserved_start_before_the_protection_is_the_reason() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let owner = b.project(None, "55", 0);
    let guard = b.project(None, "5", 0);
    let third = b.project(None, "40", 0);
    // Node 1: a run far beyond its project's entitlement, protected for almost an hour. Node 2:
    // a run within its project's entitlement (no preemption may take it), ending in 10 minutes.
    b.running(guard, 8, T0 - 240, H, 10 * H);
    b.running(owner, 8, T0 - H, 60, H + 600);
    let waiting = b.waiting(third, 8, T0, H, H);
    let out = schedule(&b.snap, T0);
    assert!(!started(&out).contains(&waiting));
    match reason_of(&out, waiting) {
        WaitReason::Protected { until } => {
            panic!("protected until {until}: {:?}", out.decisions)
        }
        other => assert_eq!(other.reserved_at(), Some(T0 + 600), "{other:?}"),
    }
}

/// GPUs a contract holds and lends to an unallocated run are still held for the contract: an
/// allocated run of another project that waits for them is told so, not "0 free now" (it
/// could preempt the borrower but for the contract; found by a new-user check).
#[test]
fn a_run_waiting_for_held_gpus_lent_out_is_told_of_the_contract() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let owner = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.contract(1, owner, 2, T0, T0 + 2 * H);
    // Six GPUs busy with protected runs, the two held ones lent to an unallocated run.
    b.running(other, 6, T0 - 60, H, 2 * H);
    b.running(other, 2, T0 - 60, 0, 2 * H);
    let third = b.project(None, "0.01", 0);
    let waiting = b.waiting(third, 1, T0, H, H);
    let out = schedule(&b.snap, T0);
    assert!(!started(&out).contains(&waiting), "{:?}", out.decisions);
    assert!(
        matches!(reason_of(&out, waiting), WaitReason::Contracts { held: 2 }),
        "{:?}",
        reason_of(&out, waiting)
    );
}

/// The owner's run takes its contract's GPUs back from an unallocated borrower at once, also
/// a borrower larger than the run by more than a node (the bound on evicted GPUs is for
/// allocated victims): a 16-GPU free run on two nodes, a 4-GPU run on an 8-GPU contract.
/// Before, the run waited for the borrower's time limit, told a reserved start after its
/// contract's end.
#[test]
fn a_contract_takes_its_gpus_back_from_a_large_unallocated_borrower() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let owner = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.contract(1, owner, 8, T0, T0 + 2 * H);
    let free = b.running(other, 16, T0 - H, 0, 10 * H);
    let own = b.waiting(owner, 4, T0 + 5, 60, 300);
    let out = schedule(&b.snap, T0 + 10);
    assert_eq!(
        preemptions(&out),
        vec![(free, PreemptReason::Unallocated, Some(own))]
    );
    assert!(out.decisions.iter().any(
        |d| matches!(d, Decision::Start { run, contract: Some(ContractId(1)), .. } if *run == own)
    ));
    // Without a contract the bound holds: a 4-GPU run of another project does not evict the
    // 16-GPU free run (12 GPUs beyond its need, more than a node's 8).
    let mut b = Builder::new();
    b.nodes(2, 8);
    let p = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.running(other, 16, T0 - H, 0, 10 * H);
    b.waiting(p, 4, T0 + 5, 60, 300);
    let out = schedule(&b.snap, T0 + 10);
    assert!(preemptions(&out).is_empty());
}

#[test]
fn unallocated_cap_limits_free_runs() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let p = b.project(None, "100", 0);
    b.project_mut(p).unallocated_gpu_cap = Some(3);
    let a = b.waiting(p, 2, T0, 0, H);
    let c = b.waiting(p, 2, T0 + 1, 0, H);
    let out = schedule(&b.snap, T0 + 2);
    assert_eq!(started(&out), vec![a]);
    assert_eq!(
        reason_of(&out, c),
        &WaitReason::UnallocatedCap { cap: 3, held: 2 }
    );
}

#[test]
fn fifo_blocks_behind_the_head_and_legacy_reclaims_quota() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let p = b.project(None, "50", 0);
    let q = b.project(None, "50", 0);
    b.running(p, 4, T0, H, 10 * H);
    let head = b.waiting(p, 8, T0, H, H);
    let small = b.waiting(q, 1, T0 + 1, H, H);
    b.snap.policy.kind = PolicyKind::Fifo;
    let out = schedule(&b.snap, T0 + 2);
    assert!(started(&out).is_empty());
    assert_eq!(reason_of(&out, small), &WaitReason::InLine { ahead: 1 });
    assert!(matches!(reason_of(&out, head), WaitReason::Gpus { .. }));

    // Legacy: q's cap is 4; p's running run is opportunistic (over quota) and is reclaimed.
    let mut b = Builder::new();
    b.nodes(1, 8);
    let p = b.project(None, "50", 0);
    let q = b.project(None, "50", 0);
    b.project_mut(q).legacy_cap = 4;
    let opportunistic = b.running(p, 8, T0, H, 10 * H);
    let want = b.waiting(q, 4, T0, H, H);
    b.snap.policy.kind = PolicyKind::Legacy;
    let out = schedule(&b.snap, T0 + 2);
    assert_eq!(
        preemptions(&out),
        vec![(opportunistic, PreemptReason::LegacyQuota, Some(want))]
    );
    assert!(
        matches!(out.decisions.last(), Some(Decision::Start { run, non_preemptible: true, .. }) if *run == want)
    );
}

#[test]
fn a_contract_run_uses_only_its_own_contracts_held_gpus() {
    // 8 GPUs, all held by contracts: 4 for A, 4 for B. An unallocated run of C borrows 2 of
    // them. A's 4-GPU run on its contract finds 6 free GPUs: 4 of them with the borrower's 2
    // still cover B's hold, so it starts without evicting anyone; B's own run then takes its
    // GPUs back from the borrower at once. (Before, A's run evicted the borrower first, which
    // the next pass started again on the GPUs B does not use yet.)
    let mut b = Builder::new();
    b.nodes(1, 8);
    let a = b.project(None, "40", 0);
    let bb = b.project(None, "40", 0);
    let c = b.project(None, "20", 0);
    for (id, project) in [(1, a), (2, bb)] {
        b.contract(id, project, 4, T0, T0 + 2 * H);
    }
    let borrower = b.running(c, 2, T0 - H, 0, 4 * H);
    let own = b.waiting(a, 4, T0, H, H);
    let out = schedule(&b.snap, T0 + 1);
    assert!(preemptions(&out).is_empty(), "{:?}", preemptions(&out));
    assert!(out.decisions.iter().any(
        |d| matches!(d, Decision::Start { run, contract: Some(ContractId(1)), .. } if *run == own)
    ));
    let mut snap = b.snap.clone();
    apply(&mut snap, &out, T0 + 1);
    let mut b2 = Builder { snap, next: 5_000 };
    let theirs = b2.waiting(bb, 4, T0 + 2, H, H);
    let out = schedule(&b2.snap, T0 + 3);
    assert_eq!(
        preemptions(&out),
        vec![(borrower, PreemptReason::Unallocated, Some(theirs))]
    );
    assert!(out.decisions.iter().any(
        |d| matches!(d, Decision::Start { run, contract: Some(ContractId(2)), .. } if *run == theirs)
    ));
}

/// A lead buys a contract to protect a training run that is already running: the window takes
/// that run on (whole gangs, oldest first, up to the contract's GPUs), so it is protected and
/// the contract holds no further GPUs for it. Before, the run stayed off the contract: another
/// project's run preempted it once past its minimum runtime while the contract held 4 GPUs
/// more for a project that had nothing else to run.
#[test]
fn a_contract_takes_on_its_projects_runs_that_its_window_finds_running() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let owner = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.contract(1, owner, 4, T0, T0 + 2 * H);
    let training = b.running(owner, 4, T0 - 2 * H, H, 10 * H);
    let later = b.running(owner, 4, T0 - H + 60, H, 10 * H);
    let want = b.waiting(other, 4, T0, H, H);
    let now = T0 + 120;
    let out = schedule(&b.snap, now);
    assert_eq!(
        out.decisions.first(),
        Some(&Decision::Adopt {
            run: training,
            contract: ContractId(1)
        })
    );
    // The other project's run takes the owner's run that is on no contract, past its
    // minimum runtime, not the one on the contract.
    assert_eq!(
        preemptions(&out)
            .into_iter()
            .map(|p| p.0)
            .collect::<Vec<_>>(),
        vec![later]
    );
    assert_eq!(started(&out), vec![want]);
    let mut snap = b.snap.clone();
    apply(&mut snap, &out, now);
    assert_eq!(
        snap.running
            .iter()
            .find(|r| r.id == training)
            .unwrap()
            .contract,
        Some(ContractId(1))
    );
    // Taken on once: the next pass adopts nothing more and preempts nothing.
    let out = schedule(&snap, now + 60);
    assert!(
        !out.decisions
            .iter()
            .any(|d| matches!(d, Decision::Adopt { .. } | Decision::Preempt { .. })),
        "{:?}",
        out.decisions
    );

    // Whole gangs only: a 4-GPU run is not put on a 2-GPU contract.
    let mut b = Builder::new();
    b.nodes(1, 8);
    let owner = b.project(None, "50", 0);
    b.contract(1, owner, 2, T0, T0 + 2 * H);
    b.running(owner, 4, T0 - 2 * H, H, 10 * H);
    let out = schedule(&b.snap, T0 + 1);
    assert!(
        !out.decisions
            .iter()
            .any(|d| matches!(d, Decision::Adopt { .. }))
    );
}

/// A gang that needs GPUs a contract holds unused gets a reservation at the contract's end,
/// when they come back, with that instant as its reason. Before, held GPUs never came back in
/// the reservation's count: a 16-GPU gang on a 16-GPU pool with 4 GPUs held got no
/// reservation and no estimate, told "4 free now" while 8 stood idle (a live check).
#[test]
fn a_gang_is_reserved_for_when_a_contracts_held_gpus_come_back() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let owner = b.project(None, "25", 0);
    let other = b.project(None, "25", 0);
    let big = b.project(None, "50", 0);
    b.contract(1, owner, 4, T0, T0 + H);
    // Protected until it ends, half an hour from now.
    b.running(other, 4, T0 - 1800, 3600, 3600);
    let gang = b.waiting(big, 16, T0, 600, 2 * H);
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty());
    assert!(preemptions(&out).is_empty());
    assert!(
        out.decisions
            .iter()
            .any(|d| matches!(d, Decision::Reserve { run, at, gpus: 16 } if *run == gang && *at == T0 + H)),
        "{:?}",
        out.decisions
    );
    assert_eq!(
        reason_of(&out, gang).reserved_at(),
        Some(T0 + H),
        "{:?}",
        reason_of(&out, gang)
    );
}

/// A run on its project's active contract starts on the GPUs the contract holds even behind
/// another project's reservation that it would outlast: those GPUs are the contract's, and
/// the reservation, made after it, counts the run's end instead of the window's (found by a
/// new-user check: a paid contract's GPUs stood idle while its project's run waited "behind
/// the reservation" of another project's gang, reserved for after the window).
#[test]
fn a_contract_run_is_not_held_behind_another_projects_reservation() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    // The gang's project ranks first (it used nothing), the contract's owner after it.
    let owner = b.project(None, "30", 10 * H);
    let gang_project = b.project(None, "30", 0);
    let other = b.project(None, "40", 20 * H);
    b.contract(1, owner, 4, T0 - 60, T0 + 10 * M);
    // Protected until it ends, 50 minutes from now.
    b.running(other, 4, T0 - 10 * M, H, H);
    let gang = b.waiting(gang_project, 8, T0 - 2 * M, 600, 2 * H);
    let paid = b.waiting(owner, 1, T0 - M, 600, H);
    let out = schedule(&b.snap, T0);
    assert_eq!(started(&out), vec![paid]);
    let start = out.decisions.iter().find_map(|d| match d {
        Decision::Start { run, contract, .. } if *run == paid => Some(*contract),
        _ => None,
    });
    assert_eq!(start, Some(Some(ContractId(1))));
    // The gang: 3 GPUs come back at the window's end and 4 at T0 + 50 min, the 8th only when
    // the contract's run ends, an hour from now.
    assert_eq!(reason_of(&out, gang).reserved_at(), Some(T0 + H));
}

/// A run on its contract that ends before the window does gives its GPUs back to the contract,
/// not to the pool: another project's gang that needs them is reserved for the window's end,
/// never for the contract run's end, a start the contract's hold would refuse (found by a
/// new-user check: "reserved start about 17:34" for GPUs held until 18:15).
#[test]
fn a_contract_runs_end_frees_nothing_before_its_window_does() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let owner = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.contract(1, owner, 11, T0 - 300, T0 + H);
    // On the contract, 11 GPUs, ending 19 minutes from now.
    let on = b.running(owner, 11, T0 - 300, 600, 300 + 19 * 60);
    b.snap
        .running
        .iter_mut()
        .find(|r| r.id == on)
        .unwrap()
        .contract = Some(ContractId(1));
    let gang = b.waiting(other, 8, T0, 600, 2 * H);
    let out = schedule(&b.snap, T0);
    assert!(started(&out).is_empty(), "{:?}", out.decisions);
    assert!(preemptions(&out).is_empty(), "{:?}", out.decisions);
    assert_eq!(
        reason_of(&out, gang).reserved_at(),
        Some(T0 + H),
        "{:?}",
        reason_of(&out, gang)
    );
}

/// A long training run protected by one contract and then the next (back-to-back windows)
/// goes from the first to the second when the first ends, instead of staying on the ended
/// one, unprotected, while the second holds GPUs for it.
#[test]
fn a_run_goes_from_an_ended_contract_to_the_next() {
    let mut b = Builder::new();
    b.nodes(1, 8);
    let owner = b.project(None, "50", 0);
    b.project(None, "50", 0);
    for (id, start) in [(1, T0), (2, T0 + 2 * H)] {
        b.contract(id, owner, 4, start, start + 2 * H);
    }
    let training = b.running(owner, 4, T0 - H, H, 10 * H);
    let out = schedule(&b.snap, T0 + 60);
    assert_eq!(
        out.decisions.first(),
        Some(&Decision::Adopt {
            run: training,
            contract: ContractId(1)
        })
    );
    let mut snap = b.snap.clone();
    apply(&mut snap, &out, T0 + 60);
    let out = schedule(&snap, T0 + 2 * H + 60);
    assert_eq!(
        out.decisions.first(),
        Some(&Decision::Adopt {
            run: training,
            contract: ContractId(2)
        }),
        "{:?}",
        out.decisions
    );
}

/// On a cluster whose gangs take the same GPU count on every node (Slurm), a gang is placed
/// only on such a split, and no run is evicted for a move that leaves none (found by a new-user
/// check: two runs preempted for an 8-GPU gang placed 5 + 3, which Slurm refused at once).
/// Elsewhere the same sites place it 5 + 3.
#[test]
fn a_uniform_cluster_places_gangs_evenly_or_evicts_nobody() {
    for uniform in [false, true] {
        // 5 GPUs free on the first node, 3 on the second.
        let mut b = Builder::new();
        b.snap.clusters[0].uniform_gangs = uniform;
        b.nodes(2, 8);
        let other = b.project(None, "50", 0);
        let mine = b.project(None, "50", 0);
        b.running(other, 3, T0 - 60, H, 10 * H);
        let filler = b.running(other, 5, T0 - 60, H, 10 * H);
        b.running(other, 5, T0 - 60, H, 10 * H);
        b.snap.running.retain(|r| r.id != filler);
        let gang = b.waiting(mine, 8, T0, H, H);
        let out = schedule(&b.snap, T0);
        assert_eq!(started(&out) == vec![gang], !uniform, "{:?}", out.decisions);
        // 4 + 4 fits: it starts there.
        let mut b2 = b.clone();
        b2.snap.running.clear();
        b2.running(other, 4, T0 - 60, H, 10 * H);
        let filler = b2.running(other, 4, T0 - 60, H, 10 * H);
        b2.running(other, 4, T0 - 60, H, 10 * H);
        b2.snap.running.retain(|r| r.id != filler);
        let out = schedule(&b2.snap, T0);
        assert_eq!(started(&out), vec![gang], "{:?}", out.decisions);
        let placed = out.decisions.iter().find_map(|d| match d {
            Decision::Start { placement, .. } => Some(placement.clone()),
            _ => None,
        });
        let counts: Vec<usize> = placed.unwrap().iter().map(|(_, g)| g.len()).collect();
        assert_eq!(counts, vec![4, 4]);

        // Evicting the only unprotected run (5 GPUs, unallocated, on the first node) frees
        // 5 + 3: no even split.
        let mut b = Builder::new();
        b.snap.clusters[0].uniform_gangs = uniform;
        b.nodes(2, 8);
        let other = b.project(None, "50", 0);
        let mine = b.project(None, "50", 0);
        b.running(other, 2, T0 - 60, H, 10 * H);
        let borrower = b.running(other, 5, T0 - 60, 0, 10 * H);
        b.running(other, 1, T0 - 60, H, 10 * H);
        b.running(other, 5, T0 - 60, H, 10 * H);
        let gang = b.waiting(mine, 8, T0, H, H);
        let out = schedule(&b.snap, T0);
        if uniform {
            assert!(preemptions(&out).is_empty(), "{:?}", out.decisions);
            assert!(started(&out).is_empty(), "{:?}", out.decisions);
        } else {
            assert_eq!(preemptions(&out).len(), 1, "{:?}", out.decisions);
            assert_eq!(preemptions(&out)[0].0, borrower);
            assert_eq!(started(&out), vec![gang]);
        }
    }
}

/// A contract holder's run larger than its contract takes the contract's held GPUs and free
/// ones, on the contract in part (its GPUs prepaid, the others charged; found by a session's
/// check: a 12-GPU run of the holder of an 8-GPU contract waited, on an idle 16-GPU pool, for
/// the window's end, and once it could start, its contract's GPUs were charged again); the
/// GPUs it takes count towards the hold, so the next pass neither holds more for its project
/// nor preempts another project's runs for it.
#[test]
fn a_contract_holders_larger_run_uses_its_hold_and_free_gpus() {
    let mut b = Builder::new();
    b.nodes(3, 8);
    let owner = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.contract(1, owner, 8, T0, T0 + 2 * H);
    let big = b.waiting(owner, 12, T0, H, H);
    let mut d = Driver::new(b.snap.clone(), T0);
    let out = d.pass();
    assert_eq!(started(&out), vec![big], "{:?}", out.decisions);
    // On the contract in part: its 8 GPUs prepaid, the 4 others charged.
    assert!(out.decisions.iter().any(|x| matches!(
        x,
        Decision::Start { run, contract: Some(ContractId(1)), contract_gpus: 8, .. } if *run == big
    )));
    // 12 of 24 GPUs taken, the hold covered by them: another project's 12-GPU run starts on
    // the 12 left, and stays.
    let mut b2 = Builder {
        snap: d.snap.clone(),
        next: 5_000,
    };
    let theirs = b2.waiting(other, 12, T0 + 5, H, H);
    let mut d = Driver::new(b2.snap.clone(), T0 + 10);
    let out = d.pass();
    assert_eq!(started(&out), vec![theirs], "{:?}", out.decisions);
    let out = d.advance_to(T0 + 70);
    assert!(preemptions(&out).is_empty(), "{:?}", preemptions(&out));
}

/// A run larger than each of its project's contracts uses what they all hold for it, and all
/// of it is prepaid: with two 4-GPU contracts a 12-GPU run covers 8 GPUs, and in the passes
/// after, as in the one that started it, both holds count as used by it (found by a check of
/// the first version: the next pass counted it against one contract alone, so the other's 4
/// GPUs were held again, idle, and another project's run was told they were held for others).
#[test]
fn a_run_larger_than_each_contract_uses_them_all_in_every_pass() {
    let mut b = Builder::new();
    b.nodes(2, 8);
    let owner = b.project(None, "50", 0);
    let other = b.project(None, "50", 0);
    b.contract(1, owner, 4, T0, T0 + 2 * H);
    b.contract(2, owner, 4, T0, T0 + 2 * H);
    let big = b.waiting(owner, 12, T0, H, H);
    let mut d = Driver::new(b.snap.clone(), T0);
    let out = d.pass();
    assert!(out.decisions.iter().any(|x| matches!(
        x,
        Decision::Start { run, contract: Some(ContractId(1)), contract_gpus: 8, .. } if *run == big
    )), "{:?}", out.decisions);
    // The next pass: nothing is held any more; the other project's run takes the 4 free GPUs.
    let mut b2 = Builder {
        snap: d.snap.clone(),
        next: 5_000,
    };
    let theirs = b2.waiting(other, 4, T0 + 5, H, H);
    let mut d = Driver::new(b2.snap.clone(), T0 + 10);
    let out = d.pass();
    assert_eq!(started(&out), vec![theirs], "{:?}", out.decisions);
}
