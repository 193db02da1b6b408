//! `tranche bench schedule`: times one scheduling pass on a large synthetic snapshot.
//!
//! Base size (scale 1): 1,250 nodes x 8 GPUs (10,000 GPUs), 2,000 running runs, 50,000 waiting
//! runs, 500 projects in a 4-level tree (top -> 5 programs -> 50 teams -> 500 projects); scale
//! `k` multiplies nodes, runs and projects by `k`. The snapshot is built by a fixed
//! pseudo-random generator, so every run of the bench measures the same input.

use crate::scheduler::*;
use std::time::Instant;

/// Arguments of `tranche bench schedule`.
#[derive(Debug, clap::Args)]
pub struct BenchScheduleArgs {
    /// Only this scale (default: 1, 2 and 4).
    #[arg(long)]
    pub scale: Option<u32>,
    /// Timed passes per scale.
    #[arg(long, default_value_t = 11)]
    pub reps: u32,
}

struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Builds the benchmark snapshot at `scale` and returns it with `now`.
pub fn snapshot(scale: u32) -> (Snapshot, i64) {
    let k = scale.max(1) as usize;
    let now = 1_790_812_800i64;
    let mut rng = Lcg(42);
    let mut s = Snapshot::default();
    s.clusters.push(Cluster {
        id: ClusterId(1),
        name: "bench".into(),
        uniform_gangs: false,
    });
    s.models.push(GpuModel {
        id: ModelId(1),
        name: "H100".into(),
        price_per_gpu_hour: 250,
        billing_weight_milli: 1000,
    });
    for i in 0..1_250 * k {
        s.nodes.push(Node {
            id: NodeId(i as i64 + 1),
            cluster: ClusterId(1),
            model: ModelId(1),
            gpus: 8,
            state: NodeState::Up,
        });
    }
    // Tree: 5k programs (20% of the top each at k=1), 10 teams each, 10 projects each.
    let programs = 5 * k;
    let mut next = 1i64;
    let mut teams = Vec::new();
    for _ in 0..programs {
        let p = TreeNodeId(next);
        next += 1;
        s.tree.push(TreeNode {
            id: p,
            parent: None,
            share: Share(10_000 / programs as u32),
        });
        for _ in 0..10 {
            let t = TreeNodeId(next);
            next += 1;
            s.tree.push(TreeNode {
                id: t,
                parent: Some(p),
                share: Share(1_000),
            });
            teams.push(t);
        }
    }
    for t in &teams {
        for _ in 0..10 {
            let id = ProjectId(next);
            next += 1;
            s.projects.push(Project {
                id,
                parent: Some(*t),
                share: Share(1_000),
                usage_gpu_s: (rng.below(200) * 3_600) as i64,
                balance: None,
                unallocated_gpu_cap: None,
                legacy_cap: 0,
            });
        }
    }
    let np = s.projects.len() as u64;
    // Running: 2,000k runs of 1-8 GPUs, packed node by node.
    let mut node = 0usize;
    let mut used = 0u32;
    for i in 0..2_000 * k {
        let g = [1u32, 1, 2, 4, 8][rng.below(5) as usize];
        if used + g > 8 {
            node += 1;
            used = 0;
        }
        let placement = vec![(NodeId(node as i64 + 1), (used..used + g).collect())];
        used += g;
        let min_rt = if rng.below(10) == 0 { 0 } else { 3_600 };
        s.running.push(RunningRun {
            id: RunId(i as i64 + 1),
            project: s.projects[rng.below(np) as usize].id,
            cluster: ClusterId(1),
            model: ModelId(1),
            placement,
            started_at: now - rng.below(4 * 3_600) as i64,
            min_runtime_s: min_rt,
            time_limit_s: 8 * 3_600,
            priority: 0,
            contract: None,
            non_preemptible: false,
        });
    }
    let base = s.running.len() as i64 + 1;
    for i in 0..50_000 * k {
        let g = [1u32, 1, 1, 2, 4, 8, 16][rng.below(7) as usize];
        s.waiting.push(WaitingRun {
            id: RunId(base + i as i64),
            project: s.projects[rng.below(np) as usize].id,
            cluster: ClusterId(1),
            model: ModelId(1),
            gpus: g,
            submitted_at: now - rng.below(86_400) as i64,
            min_runtime_s: if rng.below(5) == 0 { 0 } else { 1_800 },
            time_limit_s: 3_600 * (1 + rng.below(8) as i64),
            priority: rng.below(3) as i32,
        });
    }
    (s, now)
}

/// Runs the benchmark and prints one line per scale.
///
/// # Errors
/// None in practice; the signature leaves room for I/O errors.
pub fn run(args: &BenchScheduleArgs) -> anyhow::Result<()> {
    let scales: Vec<u32> = match args.scale {
        Some(s) if s >= 1 => vec![s],
        Some(_) => anyhow::bail!("--scale must be at least 1"),
        None => vec![1, 2, 4],
    };
    println!("scale  GPUs    running  waiting  projects  decisions  median ms  min ms  max ms");
    for scale in scales {
        let (snap, now) = snapshot(scale);
        snap.validate()
            .map_err(|e| anyhow::anyhow!("bench snapshot invalid: {e}"))?;
        let warm = schedule(&snap, now);
        let mut times = Vec::with_capacity(args.reps.max(1) as usize);
        for _ in 0..args.reps.max(1) {
            let t = Instant::now();
            let out = schedule(&snap, now);
            times.push(t.elapsed().as_secs_f64() * 1_000.0);
            assert_eq!(out.decisions.len(), warm.decisions.len());
        }
        times.sort_by(f64::total_cmp);
        let gpus: u32 = snap.nodes.iter().map(|n| n.gpus).sum();
        println!(
            "{scale:>5}  {gpus:>6}  {:>7}  {:>7}  {:>8}  {:>9}  {:>9.2}  {:>6.2}  {:>6.2}",
            snap.running.len(),
            snap.waiting.len(),
            snap.projects.len(),
            warm.decisions.len(),
            times[times.len() / 2],
            times[0],
            times[times.len() - 1],
        );
    }
    Ok(())
}
