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

/// One line of a utilization file: the node it is for (`None`: every node) and a reading per
/// GPU (`None`: unknown).
pub type DeclaredUtilization = (Option<String>, Vec<Option<u8>>);

/// Parses a utilization file (`--utilization-file`) for nodes of `gpus` GPUs. Each non-blank
/// line not starting with `#` is `NODE VALUES`: `NODE` is a node name or `*` (every node);
/// `VALUES` is one percentage 0..=100 for all the node's GPUs, or exactly `gpus` comma-separated
/// entries, each a percentage or `-` (unknown). Example:
///
/// ```text
/// # every GPU idle, but the first two of gpu-1 busy
/// *      3
/// gpu-1  97,88,3,3,3,3,3,3
/// ```
///
/// # Errors
/// A line without both fields, a value that is not a percentage or `-`, a list of another
/// length than `gpus`; the message names the line.
pub fn parse_utilization_file(text: &str, gpus: u32) -> anyhow::Result<Vec<DeclaredUtilization>> {
    let mut out = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| anyhow::anyhow!("utilization file line {}: {why}: {line:?}", no + 1);
        let (node, values) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| bad("expected `NODE VALUES`"))?;
        let value = |v: &str| -> anyhow::Result<Option<u8>> {
            match v.trim() {
                "-" => Ok(None),
                v => match v.parse::<u8>() {
                    Ok(p) if p <= 100 => Ok(Some(p)),
                    _ => Err(bad("a value is a percentage 0 to 100 or `-`")),
                },
            }
        };
        let values: Vec<&str> = values.trim().split(',').collect();
        let readings = if values.len() == 1 {
            vec![value(values[0])?; gpus as usize]
        } else if values.len() == gpus as usize {
            values
                .iter()
                .map(|v| value(v))
                .collect::<anyhow::Result<_>>()?
        } else {
            return Err(bad(&format!(
                "give one value for all GPUs or one per GPU ({gpus})"
            )));
        };
        out.push(((node != "*").then(|| node.to_string()), readings));
    }
    Ok(out)
}

/// The readings a parsed utilization file gives `node`: its last matching line, if any.
pub fn declared_utilization_for(
    lines: &[DeclaredUtilization],
    node: &str,
) -> Option<Vec<Option<u8>>> {
    lines
        .iter()
        .rev()
        .find(|(n, _)| n.as_deref().is_none_or(|n| n.eq_ignore_ascii_case(node)))
        .map(|(_, r)| r.clone())
}

/// The GPUs of each node this agent serves.
#[derive(Clone, Debug)]
pub(super) struct Gpus {
    pub(super) count: u32,
    pub(super) model: String,
    auto: bool,
    /// `--utilization-file`.
    pub(super) file: Option<PathBuf>,
}

impl Gpus {
    /// Whether these are the machine's real GPUs (`--gpus auto`): then an index in another
    /// process's `CUDA_VISIBLE_DEVICES` is a GPU in use; a declared inventory is no machine's.
    pub(super) fn physical(&self) -> bool {
        self.auto
    }

    pub(super) async fn detect(spec: &GpuSpec) -> anyhow::Result<Self> {
        match spec {
            GpuSpec::Declared { count, model } => Ok(Gpus {
                count: *count,
                model: model.clone(),
                auto: false,
                file: None,
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
                    file: None,
                })
            }
        }
    }

    /// The utilization file's lines, read now; `None` without a file or when it cannot be
    /// read or parsed (warned).
    pub(super) fn declared(&self) -> Option<Vec<DeclaredUtilization>> {
        let path = self.file.as_ref()?;
        match std::fs::read_to_string(path)
            .map_err(anyhow::Error::from)
            .and_then(|t| parse_utilization_file(&t, self.count))
        {
            Ok(lines) => Some(lines),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %format!("{e:#}"), "utilization file unusable; reporting unknown");
                None
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
