//! A local model server found without configuration: with no API key and
//! no base URL set anywhere, the usual loopback servers are asked for their
//! models (`GET /v1/models`) at once, within [`BUDGET`] in all, and the
//! first in [`DEFAULT_SERVERS`] order that lists a model is used.
//!
//! [`SERVERS_ENV`] replaces the list (`name=url,name=url`): tests point it
//! at ports they own rather than binding the well-known ones.
use std::time::Duration;

use serde_json::Value;

use crate::config::Settings;

/// The servers asked, in order of preference.
pub const DEFAULT_SERVERS: [(&str, &str); 4] = [
    ("Ollama", "http://127.0.0.1:11434/v1"),
    ("llama-server", "http://127.0.0.1:8080/v1"),
    ("LM Studio", "http://127.0.0.1:1234/v1"),
    ("vLLM", "http://127.0.0.1:8000/v1"),
];

/// The server usually found at `base_url`'s port ("Ollama"), else "the
/// model server", for errors about a dead local endpoint.
pub fn expected_server(base_url: &str) -> String {
    let port = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.port_or_known_default());
    DEFAULT_SERVERS
        .iter()
        .find(|(_, url)| {
            reqwest::Url::parse(url)
                .ok()
                .and_then(|u| u.port())
                .is_some_and(|p| Some(p) == port)
        })
        .map_or_else(
            || "the model server".to_owned(),
            |(name, _)| (*name).to_owned(),
        )
}

/// Replaces [`DEFAULT_SERVERS`]: `name=url` pairs separated by commas.
pub const SERVERS_ENV: &str = "ACP_CODER_LOCAL_SERVERS";

/// The whole probe takes at most this long.
pub const BUDGET: Duration = Duration::from_millis(100);

/// Replaces [`BUDGET`] (milliseconds): tests on a loaded machine give the
/// servers they start the time to answer, so that no result depends on
/// how busy the machine is.
pub const BUDGET_ENV: &str = "ACP_CODER_LOCAL_PROBE_MS";

/// [`BUDGET`], or what [`BUDGET_ENV`] says.
fn budget(env: &dyn Fn(&str) -> Option<String>) -> Duration {
    env(BUDGET_ENV)
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(BUDGET)
}

/// A server that answered with at least one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    pub name: String,
    pub base_url: String,
    pub models: Vec<String>,
}

/// The servers to ask: [`SERVERS_ENV`] when set, else [`DEFAULT_SERVERS`].
pub fn servers(env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    match env(SERVERS_ENV) {
        Some(list) => list
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(n, u)| {
                (
                    n.trim().to_owned(),
                    u.trim().trim_end_matches('/').to_owned(),
                )
            })
            .filter(|(_, u)| crate::config::is_local_endpoint(u))
            .collect(),
        None => DEFAULT_SERVERS
            .iter()
            .map(|(n, u)| ((*n).to_owned(), (*u).to_owned()))
            .collect(),
    }
}

/// Asks every server at once; the first (in list order) that lists a model.
pub async fn find(servers: &[(String, String)], budget: Duration) -> Option<LocalServer> {
    let client = crate::net::client_builder()
        .ok()?
        .no_proxy()
        .connect_timeout(budget)
        .build()
        .ok()?;
    let asks = servers.iter().map(|(name, base)| {
        let client = client.clone();
        async move {
            let work = async {
                let resp = client.get(format!("{base}/models")).send().await.ok()?;
                if !resp.status().is_success() {
                    return None;
                }
                let v: Value = resp.json().await.ok()?;
                let models = model_ids(&v);
                (!models.is_empty()).then(|| LocalServer {
                    name: name.clone(),
                    base_url: base.clone(),
                    models,
                })
            };
            tokio::time::timeout(budget, work).await.ok().flatten()
        }
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .next()
}

/// The model ids of an OpenAI-style `/models` listing (`data`, or Ollama's
/// `models`; each by `id`, else `name`).
pub(super) fn model_ids(v: &Value) -> Vec<String> {
    v.get("data")
        .or_else(|| v.get("models"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| {
                    m.get("id")
                        .or_else(|| m.get("name"))
                        .and_then(Value::as_str)
                })
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// When nothing names an endpoint or a key, points `settings` at the local
/// server found (and its first model, unless one is configured).
pub async fn use_local_server(settings: &mut Settings, env: &dyn Fn(&str) -> Option<String>) {
    if !settings.may_use_local_server() {
        return;
    }
    let Some(found) = find(&servers(env), budget(env)).await else {
        tracing::debug!("no local model server found");
        return;
    };
    tracing::info!(server = %found.name, url = %found.base_url, "using a local model server");
    settings.use_local_server(&found.name, &found.base_url, found.models.first().cloned());
}

/// The local-server notice ([`Settings::local_server_notice`]) for the
/// first session of this process; `None` after it, or when none applies.
pub fn first_session_notice(settings: &Settings) -> Option<String> {
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let notice = settings.local_server_notice()?;
    (!TOLD.swap(true, std::sync::atomic::Ordering::Relaxed)).then_some(notice)
}
