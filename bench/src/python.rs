//! The Python peers (numpy, JAX, Numba, Taichi on its CPU and Vulkan backends): a virtual
//! environment of the bench's own, with pinned versions, and one process per peer that runs
//! all of that peer's measurements (`bench/peers/peers.py`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// The peers `peers.py` knows, in the order the report lists them.
pub const PEERS: &[&str] = &["numpy", "jax", "numba", "taichi-cpu", "taichi-vulkan"];

/// What the virtual environment holds. A change here makes `weft bench` install again.
const REQUIREMENTS: &[&str] =
    &["numpy==2.4.6", "scipy==1.17.1", "jax[cpu]==0.10.2", "numba==0.68.1", "taichi==1.7.4"];

const SCRIPT: &str = include_str!("../peers/peers.py");

/// One measurement a peer is asked for.
#[derive(Debug, Clone, Serialize)]
pub struct PeerRun {
    pub workload: String,
    pub dir: String,
    pub repeat: usize,
    pub check: bool,
}

/// What the peer said of one run.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PeerResult {
    pub workload: String,
    pub dir: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub loc: Option<usize>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub times_ms: Vec<f64>,
    #[serde(default)]
    pub output: Option<Vec<f64>>,
    #[serde(default)]
    pub error: Option<String>,
    /// The peer has no implementation of this workload, and why.
    #[serde(default)]
    pub missing: Option<String>,
}

/// The environment's directory: `WEFT_BENCH_VENV`, or `weft-bench-venv` in the user's cache.
pub fn venv_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WEFT_BENCH_VENV") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    cache.unwrap_or_else(std::env::temp_dir).join("weft-bench-venv")
}

/// The environment's Python, installing the peers first where they are missing or stale.
pub fn ensure_venv(dir: &Path, say: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let python = dir.join("bin").join("python");
    let marker = dir.join("weft-bench-requirements.txt");
    let wanted = REQUIREMENTS.join("\n");
    if python.exists() && std::fs::read_to_string(&marker).is_ok_and(|had| had == wanted) {
        return Ok(python);
    }
    say(&format!("installing the Python peers into {} ({})", dir.display(), REQUIREMENTS.join(", ")));
    let status = Command::new("python3").args(["-m", "venv"]).arg(dir).status();
    if !status.is_ok_and(|s| s.success()) {
        return Err("`python3 -m venv` failed: is Python 3 with venv installed?".into());
    }
    let status = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(REQUIREMENTS)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        return Err(format!("pip could not install {}", REQUIREMENTS.join(", ")));
    }
    std::fs::write(&marker, wanted).map_err(|e| e.to_string())?;
    Ok(python)
}

/// An error for each of `runs`: the peer could not run them.
pub fn unavailable(runs: &[PeerRun], why: &str) -> Vec<PeerResult> {
    let result = |r: &PeerRun| PeerResult {
        workload: r.workload.clone(),
        dir: r.dir.clone(),
        error: Some(why.to_string()),
        ..PeerResult::default()
    };
    runs.iter().map(result).collect()
}

/// Runs `runs` on `peer`, in `work` (where the script and the plan are written). A peer that
/// cannot start gives an error for each run.
pub fn run_peer(python: &Path, work: &Path, peer: &str, runs: &[PeerRun]) -> Vec<PeerResult> {
    let failed = |why: String| unavailable(runs, &why);
    let script = work.join("peers.py");
    let plan = work.join(format!("plan-{peer}.json"));
    let written = std::fs::write(&script, SCRIPT)
        .and_then(|()| std::fs::write(&plan, serde_json::to_string(runs).unwrap_or_default()));
    if let Err(e) = written {
        return failed(format!("cannot write the plan: {e}"));
    }
    let output = match Command::new(python).arg(&script).arg(peer).arg(&plan).output() {
        Ok(output) => output,
        Err(e) => return failed(format!("cannot start Python: {e}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<PeerResult> =
        stdout.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
    if results.len() < runs.len() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        let mut results = results;
        let why = format!("the peer stopped ({}): {last}", output.status);
        results.extend(failed(why).into_iter().skip(results.len()));
        return results;
    }
    results
}
