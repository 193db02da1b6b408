//! This machine's GPUs: `nvidia-smi` readings or a declared fake inventory.

use super::*;

// ---------------------------------------------------------------------------------------------
// GPUs
// ---------------------------------------------------------------------------------------------

/// One line of `nvidia-smi --query-gpu=index,name,utilization.gpu --format=csv,noheader,nounits`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuReading {
    /// GPU index.
    pub index: u32,
    /// Model name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Utilization percent, `None` when nvidia-smi prints `[N/A]` or similar.
    pub utilization: Option<u8>,
}

/// Parses nvidia-smi's CSV output (see [`GpuReading`]); readings come back sorted by index.
///
/// # Errors
/// A line without three fields or with a non-numeric index; no GPU at all.
pub fn parse_nvidia_smi(csv: &str) -> anyhow::Result<Vec<GpuReading>> {
    let mut gpus = Vec::new();
    for line in csv.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut fields = line.split(',').map(str::trim);
        let (Some(index), Some(name), Some(util), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            anyhow::bail!("unexpected nvidia-smi line {line:?}");
        };
        let index = index
            .parse()
            .with_context(|| format!("unexpected GPU index in nvidia-smi line {line:?}"))?;
        let utilization = util.parse::<u8>().ok().map(|u| u.min(100));
        gpus.push(GpuReading {
            index,
            name: name.to_string(),
            utilization,
        });
    }
    anyhow::ensure!(!gpus.is_empty(), "nvidia-smi lists no GPU");
    gpus.sort_by_key(|g| g.index);
    Ok(gpus)
}

/// The GPUs of each node this agent serves.
#[derive(Clone, Debug)]
pub(super) struct Gpus {
    pub(super) count: u32,
    pub(super) model: String,
    auto: bool,
}

impl Gpus {
    pub(super) async fn detect(spec: &GpuSpec) -> anyhow::Result<Self> {
        match spec {
            GpuSpec::Declared { count, model } => Ok(Gpus {
                count: *count,
                model: model.clone(),
                auto: false,
            }),
            GpuSpec::Auto => {
                let readings = query_nvidia_smi().await.context(
                    "--gpus auto needs a working nvidia-smi; declare the GPUs instead, e.g. --gpus 8xH100",
                )?;
                let model = readings[0].name.clone();
                if readings.iter().any(|g| g.name != model) {
                    tracing::warn!(%model, "GPUs of several models; registering the first");
                }
                Ok(Gpus {
                    count: u32::try_from(readings.len())?,
                    model,
                    auto: true,
                })
            }
        }
    }

    /// Utilization per GPU index: from nvidia-smi, or all unknown.
    pub(super) async fn utilization(&self) -> Vec<Option<u8>> {
        let mut out = vec![None; self.count as usize];
        if self.auto {
            match query_nvidia_smi().await {
                Ok(readings) => {
                    for r in readings {
                        if let Some(slot) = out.get_mut(r.index as usize) {
                            *slot = r.utilization;
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %format!("{e:#}"), "nvidia-smi failed"),
            }
        }
        out
    }
}

pub(super) async fn query_nvidia_smi() -> anyhow::Result<Vec<GpuReading>> {
    let run = tokio::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=index,name,utilization.gpu",
            "--format=csv,noheader,nounits",
        ])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .context("nvidia-smi did not answer within 10 s")?
        .context("cannot run nvidia-smi")?;
    anyhow::ensure!(
        out.status.success(),
        "nvidia-smi failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout))
}
