//! `weft kernel install`: the kernelspec (`kernel.json` and the logos) in the place Jupyter
//! looks for it, as `jupyter kernelspec install` would put it.

use std::path::{Path, PathBuf};

/// Where the kernelspec goes, as `jupyter kernelspec install` names the places.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallPlace {
    /// The user's data directory: `$JUPYTER_DATA_DIR`, or `~/.local/share/jupyter`.
    User,
    /// The running Python environment's: `$VIRTUAL_ENV` or `$CONDA_PREFIX`, `/share/jupyter`.
    SysPrefix,
    /// `PREFIX/share/jupyter`.
    Prefix(PathBuf),
}

/// The Weft mark: a woven W, warp and weft threads.
const LOGO_SVG: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">
<rect width="64" height="64" rx="12" fill="#1d3557"/>
<path d="M10 16 L20 48 L32 24 L44 48 L54 16" fill="none" stroke="#f1faee" stroke-width="6" stroke-linejoin="round" stroke-linecap="round"/>
<path d="M8 32 H56" stroke="#e63946" stroke-width="4" stroke-linecap="round" opacity="0.9"/>
</svg>
"##;

/// Writes the kernelspec for `executable` (this binary); gives the directory it wrote.
pub fn install(place: &InstallPlace, executable: &Path) -> Result<PathBuf, String> {
    let root = match place {
        InstallPlace::User => user_data_dir()?,
        InstallPlace::SysPrefix => {
            let prefix = std::env::var_os("VIRTUAL_ENV")
                .or_else(|| std::env::var_os("CONDA_PREFIX"))
                .ok_or("--sys-prefix needs an active Python environment (VIRTUAL_ENV or CONDA_PREFIX)")?;
            PathBuf::from(prefix).join("share").join("jupyter")
        }
        InstallPlace::Prefix(prefix) => prefix.join("share").join("jupyter"),
    };
    let dir = root.join("kernels").join("weft");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let spec = serde_json::json!({
        "argv": [executable.display().to_string(), "kernel", "--connection-file", "{connection_file}"],
        "display_name": "Weft",
        "language": "weft",
        "interrupt_mode": "message",
        "metadata": { "debugger": false },
    });
    let text = serde_json::to_string_pretty(&spec).map_err(|e| e.to_string())?;
    write(&dir.join("kernel.json"), text.as_bytes())?;
    write(&dir.join("logo-svg.svg"), LOGO_SVG.as_bytes())?;
    Ok(dir)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Jupyter's per-user data directory, as `jupyter --data-dir` gives it on Linux.
fn user_data_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("JUPYTER_DATA_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(data).join("jupyter"));
    }
    let home = std::env::var_os("HOME").ok_or("HOME is not set: give --prefix")?;
    Ok(PathBuf::from(home).join(".local").join("share").join("jupyter"))
}
