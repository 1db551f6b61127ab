//! Where things live (XDG base directories, DESIGN §3 "Model endpoint and
//! configuration") and which endpoints count as local.
use std::path::PathBuf;

/// Loopback, private-network and `.local` hosts are taken as keyless local servers.
pub fn is_local_endpoint(base_url: &str) -> bool {
    let rest = base_url.split("://").nth(1).unwrap_or("");
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    if host == "localhost" || host.ends_with(".local") || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback(),
        Err(_) => false,
    }
}

/// The user's home ([`crate::platform::fs::home_with`]: `HOME`; on
/// Windows `USERPROFILE`, then `HOME`).
fn home_with(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    crate::platform::fs::home_with(|v| env(v).map(Into::into)).unwrap_or_else(|| PathBuf::from("/"))
}

fn xdg(env: &dyn Fn(&str) -> Option<String>, var: &str, fallback: &str) -> PathBuf {
    env(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home_with(env).join(fallback))
}

fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

pub(super) fn config_home_with(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    xdg(env, "XDG_CONFIG_HOME", ".config")
}
pub(super) fn data_home_with(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    xdg(env, "XDG_DATA_HOME", ".local/share")
}
pub(super) fn home() -> PathBuf {
    home_with(&process_env)
}

/// The agent's own directories (config, data, state) and its config file
/// wherever it is: sandboxed commands may not read them (they hold the
/// saved key, MCP OAuth tokens and every project's session logs).
pub(super) fn agent_dirs_with(
    env: &dyn Fn(&str) -> Option<String>,
    config_file: Option<&std::path::Path>,
    data_dir: &std::path::Path,
) -> Vec<PathBuf> {
    let mut v = vec![
        config_home_with(env).join("acp-coder"),
        data_dir.to_path_buf(),
        xdg(env, "XDG_STATE_HOME", ".local/state").join("acp-coder"),
    ];
    v.extend(config_file.map(std::path::Path::to_path_buf));
    v
}

pub fn config_home() -> PathBuf {
    config_home_with(&process_env)
}
pub fn data_home() -> PathBuf {
    data_home_with(&process_env)
}
pub fn state_home() -> PathBuf {
    xdg(&process_env, "XDG_STATE_HOME", ".local/state")
}
