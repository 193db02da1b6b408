//! The simulated site: cluster (`--cluster`), program tree (`--tree`), and the mapping of trace
//! jobs to runs per policy.
//!
//! # Defaults (documented, overridable)
//! - **Cluster:** one pool of 8-GPU nodes of model `GPU`, the fewest nodes that make the trace's
//!   mean GPU demand (GPU-seconds / span of submissions) at most 60 % of capacity (whole nodes:
//!   less on small traces, 42 % on ITP cluster05's 24 GPUs, which the output prints), and at
//!   least enough for the largest job, and no more than would hold every job at once. For Philly that is 78 nodes (624 GPUs; demand peaks at twice that); the VCs'
//!   2,816 GPUs would leave the cluster 13 % busy and no policy would matter, while 75 % builds
//!   queues of days under every policy (the full trace's published median queue is 189 s).
//! - **Tree:** flat; one project per tenant; shares proportional to each tenant's GPU-hours of
//!   work that is not best effort (basis points, rounded down, at least 0.01 %). A tenant whose
//!   work is all best effort (OpenB `BE`, native `min_runtime` 0) gets a share of 0: best-effort work is unallocated
//!   under `tranche` (free, preemptible, never counted as received), so an entitlement for it
//!   would be owed work that no allocated run of the tenant can ever receive. The tree is the
//!   same for every policy; owed still differs a little between policies, because it is capped
//!   hour by hour at demand and a job is demand until it ends, which each policy decides.
//! - **Runs:** time limit = the job's real duration (a perfect estimate; `native` may say
//!   otherwise); GPU model = the job's own (`native` column `gpu_model`), else the only pool's
//!   (a `--cluster` of several pools needs every job's model). Under `tranche`: minimum runtime = min(time limit,
//!   1 h) (OpenB `BE` pods: 0, unallocated); priority within the project 1 for small jobs
//!   (1 GPU and under 15 minutes), else 0 (priority only orders a project's own runs, so
//!   researchers have no reason to inflate it). Under `legacy`: every job declares the same
//!   (high) priority, and each team's cap on non-preemptible GPUs is its entitlement (effective
//!   share x cluster GPUs, rounded down). Under `fifo`: arrival order only.
//! - **Preemption cost:** jobs are resumable and checkpoint every 30 minutes of run time; a
//!   preempted job loses the work since its last checkpoint and is requeued with the rest,
//!   queued from the moment of its preemption (as the service requeues it: its project's
//!   runs submitted meanwhile come before it).

use crate::scheduler::{
    Cluster, ClusterId, GpuModel, ModelId, Node, NodeId, NodeState, PolicyKind, Project, ProjectId,
    Share, Snapshot, TreeNode, TreeNodeId,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::trace::Job;

/// One pool of the cluster spec: `MODEL:NODESxGPUS`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PoolSpec {
    /// GPU model name.
    pub model: String,
    /// Number of nodes.
    pub nodes: u32,
    /// GPUs per node (1..=64).
    pub gpus_per_node: u32,
}

/// The most GPUs a simulated cluster has, all pools together: a replay's passes grow with the
/// cluster (100,000 GPUs replay ITP cluster04 in about 3 s; 8 million, which `--cluster
/// GPU:1000000x8` once asked for, ran for minutes with nothing said).
pub const MAX_CLUSTER_GPUS: u64 = 100_000;

/// Parses `--cluster`: comma-separated `MODEL:NODESxGPUS` (e.g. `H100:64x8,B200:10x8`).
///
/// # Errors
/// Syntax, zero or negative counts, more than 64 GPUs per node or [`MAX_CLUSTER_GPUS`] in all,
/// a model listed twice.
pub fn parse_cluster(spec: &str) -> anyhow::Result<Vec<PoolSpec>> {
    let mut out: Vec<PoolSpec> = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let err =
            || anyhow::anyhow!("--cluster: {part:?} is not MODEL:NODESxGPUS (e.g. H100:64x8)");
        let (model, size) = part.split_once(':').ok_or_else(err)?;
        let (n, g) = size.split_once(['x', 'X']).ok_or_else(err)?;
        let nodes: i64 = n.trim().parse().map_err(|_| err())?;
        let gpus: i64 = g.trim().parse().map_err(|_| err())?;
        let model = model.trim();
        if model.is_empty() {
            return Err(err());
        }
        if nodes <= 0 || gpus <= 0 {
            anyhow::bail!("--cluster: {part:?}: node and GPU counts must be positive");
        }
        if gpus > 64 {
            anyhow::bail!("--cluster: {part:?}: at most 64 GPUs per node");
        }
        let before: u64 = out
            .iter()
            .map(|p| u64::from(p.nodes) * u64::from(p.gpus_per_node))
            .sum();
        if before + (nodes as u64).saturating_mul(gpus as u64) > MAX_CLUSTER_GPUS {
            anyhow::bail!(
                "--cluster: {spec:?}: at most 100,000 GPUs in all (the replay grows with the cluster)"
            );
        }
        if out.iter().any(|p| p.model == model) {
            anyhow::bail!("--cluster: model {model} is listed twice");
        }
        out.push(PoolSpec {
            model: model.to_string(),
            nodes: nodes as u32,
            gpus_per_node: gpus as u32,
        });
    }
    if out.is_empty() {
        anyhow::bail!("--cluster: no pool given");
    }
    Ok(out)
}

/// The default cluster for a trace (module docs).
pub fn default_cluster(jobs: &[Job]) -> Vec<PoolSpec> {
    let largest = jobs.iter().map(|j| j.gpus).max().unwrap_or(1);
    let mean = mean_demand(jobs);
    // Never more nodes than would hold every job at once (submissions over a short span, all
    // at one instant say, would otherwise ask for a cluster larger than all the work).
    let all_at_once = jobs
        .iter()
        .map(|j| u64::from(j.gpus))
        .sum::<u64>()
        .div_ceil(8)
        .min(1_000_000) as u32;
    // At most MAX_CLUSTER_GPUS: a larger job is then rejected as too large, not replayed on a
    // cluster built for it.
    let nodes = ((mean / 0.6 / 8.0).ceil().min(1e6) as u32)
        .min(all_at_once)
        .max(largest.div_ceil(8))
        .clamp(1, (MAX_CLUSTER_GPUS / 8) as u32);
    vec![PoolSpec {
        model: "GPU".into(),
        nodes,
        gpus_per_node: 8,
    }]
}

/// The trace's mean GPU demand: its GPU-seconds over the span of its submissions (1 s when
/// they all come at once), GPUs.
pub fn mean_demand(jobs: &[Job]) -> f64 {
    let gpu_s: f64 = jobs
        .iter()
        .map(|j| j.duration as f64 * f64::from(j.gpus))
        .sum();
    let span = match (jobs.first(), jobs.last()) {
        (Some(a), Some(b)) if b.submit > a.submit => (b.submit - a.submit) as f64,
        _ => 1.0,
    };
    gpu_s / span
}

/// A tree entry of `--tree`: a `/`-separated path and a share of its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Path, e.g. `research/vision`.
    pub path: String,
    /// Share of the parent.
    pub share: Share,
}

/// Parses `--tree`: comma-separated `PATH=PERCENT` (e.g. `lab=60,lab/a=50,lab/b=50,ops=40,ops/c=100`).
/// Leaves (paths that are no other path's prefix) are projects named like the trace's tenants.
///
/// # Errors
/// Syntax, bad percentages, a path listed twice, a path whose parent is not listed, siblings'
/// shares summing to more than 100 % (named by their parent's path).
pub fn parse_tree(spec: &str) -> anyhow::Result<Vec<TreeEntry>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (path, pct) = part
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--tree: {part:?} is not PATH=PERCENT"))?;
        let path = path.trim().trim_matches('/').to_string();
        if path.is_empty() || path.split('/').any(str::is_empty) {
            anyhow::bail!("--tree: {part:?} has an empty path");
        }
        let share =
            Share::parse_percent(pct).map_err(|e| anyhow::anyhow!("--tree: {path}: {e}"))?;
        if !seen.insert(path.clone()) {
            anyhow::bail!("--tree: {path} is listed twice");
        }
        out.push(TreeEntry { path, share });
    }
    for e in &out {
        if let Some((parent, _)) = e.path.rsplit_once('/')
            && !seen.contains(parent)
        {
            anyhow::bail!("--tree: {}: its parent {parent} is not listed", e.path);
        }
    }
    if out.is_empty() {
        anyhow::bail!("--tree: no entry given");
    }
    // Siblings' shares, named by their parent's path (the core's check names internal ids).
    let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
    for e in &out {
        let parent = e.path.rsplit_once('/').map_or("", |(p, _)| p);
        *sums.entry(parent).or_default() += u64::from(e.share.0);
    }
    if let Some((parent, bp)) = sums.into_iter().find(|&(_, bp)| bp > 10_000) {
        let under = if parent.is_empty() {
            "the top level"
        } else {
            parent
        };
        anyhow::bail!(
            "--tree: shares under {under} sum to {}%, more than 100%",
            bp as f64 / 100.0
        );
    }
    Ok(out)
}

/// The default tree (module docs).
pub fn default_tree(jobs: &[Job]) -> Vec<TreeEntry> {
    let mut hours: BTreeMap<&str, f64> = BTreeMap::new();
    for j in jobs {
        // Best-effort work is unallocated: it earns no share (module docs).
        let h = if j.best_effort {
            0.0
        } else {
            j.duration as f64 * f64::from(j.gpus)
        };
        *hours.entry(j.tenant.as_str()).or_default() += h;
    }
    let total: f64 = hours.values().sum::<f64>().max(1.0);
    let n = hours.len() as u32;
    hours
        .into_iter()
        .map(|(t, h)| {
            let bp = if h > 0.0 {
                ((h / total * 10_000.0).floor() as u32).clamp(1, 10_000)
            } else {
                0
            };
            // Leave room for the 1 bp floor of the others.
            TreeEntry {
                path: t.to_string(),
                share: Share(bp.min(10_000 - n.saturating_sub(1))),
            }
        })
        .collect()
}

/// The simulated site: snapshot skeleton, project names and entitlements.
#[derive(Debug, Clone)]
pub struct Site {
    /// Snapshot with clusters, models, nodes, tree and projects (no runs).
    pub base: Snapshot,
    /// Project names by id.
    pub names: BTreeMap<ProjectId, String>,
    /// Project by tenant name.
    pub by_tenant: HashMap<String, ProjectId>,
    /// Effective share (product of fractions from the top) by project.
    pub effective: BTreeMap<ProjectId, f64>,
    /// Installed GPUs per model.
    pub installed: BTreeMap<ModelId, u32>,
    /// Total GPUs.
    pub gpus: u32,
    /// Model of the first pool (where jobs that name no model go: a one-pool cluster).
    pub default_model: ModelId,
    /// Pool model by its `--cluster` name, lowercase.
    pub model_by_name: HashMap<String, ModelId>,
}

/// Builds the site from specs and checks the trace's tenants against the tree.
///
/// # Errors
/// Tenants missing from the tree, shares over 100 % among siblings, an invalid snapshot.
pub fn build_site(pools: &[PoolSpec], tree: &[TreeEntry], jobs: &[Job]) -> anyhow::Result<Site> {
    let mut base = Snapshot::default();
    base.clusters.push(Cluster {
        id: ClusterId(1),
        name: "sim".into(),
        uniform_gangs: false,
    });
    let mut installed = BTreeMap::new();
    let mut next_node = 1i64;
    for (i, p) in pools.iter().enumerate() {
        let model = ModelId(i as i64 + 1);
        base.models.push(GpuModel {
            id: model,
            name: p.model.clone(),
            price_per_gpu_hour: 100,
            billing_weight_milli: 1000,
        });
        for _ in 0..p.nodes {
            base.nodes.push(Node {
                id: NodeId(next_node),
                cluster: ClusterId(1),
                model,
                gpus: p.gpus_per_node,
                state: NodeState::Up,
            });
            next_node += 1;
        }
        installed.insert(model, p.nodes * p.gpus_per_node);
    }
    let paths: BTreeSet<&str> = tree.iter().map(|e| e.path.as_str()).collect();
    let is_leaf = |p: &str| {
        !paths
            .iter()
            .any(|q| q.len() > p.len() && q.starts_with(p) && q.as_bytes()[p.len()] == b'/')
    };
    let mut inner: HashMap<&str, TreeNodeId> = HashMap::new();
    let mut names = BTreeMap::new();
    let mut by_tenant = HashMap::new();
    // Parents before children: sort by depth then path.
    let mut entries: Vec<&TreeEntry> = tree.iter().collect();
    entries.sort_by_key(|e| (e.path.matches('/').count(), e.path.clone()));
    for (next, e) in (1i64..).zip(entries) {
        let parent = e.path.rsplit_once('/').map(|(p, _)| inner[p]);
        let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
        if is_leaf(&e.path) {
            let id = ProjectId(next);
            if by_tenant.insert(name.clone(), id).is_some() {
                anyhow::bail!("--tree: two projects are named {name}");
            }
            base.projects.push(Project {
                id,
                parent,
                share: e.share,
                usage_gpu_s: 0,
                balance: None,
                unallocated_gpu_cap: None,
                legacy_cap: 0,
            });
            names.insert(id, name);
        } else {
            let id = TreeNodeId(next);
            base.tree.push(TreeNode {
                id,
                parent,
                share: e.share,
            });
            inner.insert(e.path.as_str(), id);
        }
    }
    let mut missing: Vec<&str> = jobs
        .iter()
        .map(|j| j.tenant.as_str())
        .filter(|t| !by_tenant.contains_key(*t))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        anyhow::bail!("--tree: the trace's tenants {missing:?} are not projects of the tree");
    }
    // Each job runs on its own model's pool; a job that names none can only be placed when
    // there is one pool (it was all jobs on the first pool, the others idle but counted as
    // capacity owed to the projects).
    let model_by_name: HashMap<String, ModelId> = base
        .models
        .iter()
        .map(|m| (m.name.to_lowercase(), m.id))
        .collect();
    if let Some(j) = jobs.iter().find(|j| {
        j.model
            .as_ref()
            .is_some_and(|m| !model_by_name.contains_key(&m.to_lowercase()))
    }) {
        anyhow::bail!(
            "line {}: GPU model {:?} is not a pool of the cluster ({}): name every model the trace uses with --cluster MODEL:NODESxGPUS,...",
            j.line,
            j.model.as_deref().unwrap_or_default(),
            pools
                .iter()
                .map(|p| p.model.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if pools.len() > 1
        && let Some(j) = jobs.iter().find(|j| j.model.is_none())
    {
        anyhow::bail!(
            "--cluster has {} pools, but the job of line {} names no GPU model: a job runs on one pool, so with several every job needs one (native column `gpu_model`)",
            pools.len(),
            j.line
        );
    }
    base.validate()
        .map_err(|e| anyhow::anyhow!("--tree/--cluster: {e}"))?;
    let gpus: u32 = installed.values().sum();
    let tree_share: HashMap<TreeNodeId, (Option<TreeNodeId>, f64)> = base
        .tree
        .iter()
        .map(|t| (t.id, (t.parent, t.share.fraction())))
        .collect();
    let mut effective = BTreeMap::new();
    for p in &mut base.projects {
        let mut eff = p.share.fraction();
        let mut cur = p.parent;
        while let Some(c) = cur {
            let (parent, f) = tree_share[&c];
            eff *= f;
            cur = parent;
        }
        effective.insert(p.id, eff);
        p.legacy_cap = (eff * f64::from(gpus)).floor() as u32;
    }
    Ok(Site {
        base,
        names,
        by_tenant,
        effective,
        installed,
        gpus,
        default_model: ModelId(1),
        model_by_name,
    })
}

/// A trace job as a run under one policy.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Submission (s).
    pub submit: i64,
    /// Real duration (s).
    pub duration: i64,
    /// Time limit (s).
    pub time_limit: i64,
    /// GPUs.
    pub gpus: u32,
    /// Project.
    pub project: ProjectId,
    /// Minimum runtime (s).
    pub min_runtime: i64,
    /// Priority.
    pub priority: i32,
    /// GPU model.
    pub model: ModelId,
}

/// Small job: 1 GPU and under 15 minutes (the "debug" class of the metrics).
pub fn is_small(gpus: u32, duration: i64) -> bool {
    gpus == 1 && duration < 900
}

/// Maps trace jobs to runs under `kind` (module docs).
pub fn plan(site: &Site, jobs: &[Job], kind: PolicyKind) -> Vec<Plan> {
    jobs.iter()
        .map(|j| {
            let time_limit = j.time_limit.unwrap_or(j.duration).max(j.duration);
            let small = is_small(j.gpus, time_limit);
            let (min_runtime, priority) = match kind {
                PolicyKind::Tranche => {
                    let m = j.min_runtime.unwrap_or(if j.best_effort {
                        0
                    } else {
                        time_limit.min(3_600)
                    });
                    (m.min(time_limit), j.priority.unwrap_or(i32::from(small)))
                }
                // Everyone is HIGH; no minimum-runtime concept (counted as allocated).
                PolicyKind::Legacy => (time_limit.clamp(1, 3_600), 0),
                PolicyKind::Fifo => (time_limit.clamp(1, 3_600), 0),
            };
            Plan {
                submit: j.submit,
                duration: j.duration,
                time_limit,
                gpus: j.gpus,
                project: site.by_tenant[&j.tenant],
                min_runtime,
                priority,
                model: j
                    .model
                    .as_ref()
                    .and_then(|m| site.model_by_name.get(&m.to_lowercase()).copied())
                    .unwrap_or(site.default_model),
            }
        })
        .collect()
}
