//! A local model server found without configuration: with no API key and
//! no base URL set anywhere, the usual loopback servers are asked for their
//! models (`GET /v1/models`) at once, within [`BUDGET`] in all, and the
//! first in [`DEFAULT_SERVERS`] order that lists a model is used.
//!
//! A listener another user owns is not asked (issue 42 item 8: whoever
//! binds 11434 first would become everyone's model): on Linux the owner of
//! the listening socket must be this user or root
//! ([`crate::platform::net::listener_owner`]); where the system does not say,
//! the server chosen is named in every `session/new` answer's `_meta`, in
//! `/status` and in the first session's notice. Model ids the listener
//! supplies are used only when plain ([`plain_model_id`]).
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
            let port = reqwest::Url::parse(base).ok()?.port_or_known_default()?;
            if let crate::platform::net::Owner::Other(uid) =
                crate::platform::net::listener_owner(port)
            {
                tracing::warn!(server = %name, url = %base, uid, "a local model server on this port belongs to another user: not used");
                return None;
            }
            let work = async {
                let resp = client.get(format!("{base}/models")).send().await.ok()?;
                if !resp.status().is_success() {
                    return None;
                }
                let v: Value = resp.json().await.ok()?;
                let mut models = model_ids(&v);
                models.retain(|m| {
                    let plain = plain_model_id(m);
                    if !plain {
                        tracing::warn!(server = %name, "a local server listed a model id that is not plain text: skipped");
                    }
                    plain
                });
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

/// The longest model id of a local server acp-coder uses.
const MODEL_ID_MAX: usize = 128;

/// Whether a model id a local listener supplied is plain enough to show and
/// use: ASCII letters, digits and `. _ : / @ + -`, at most [`MODEL_ID_MAX`]
/// long. No Markdown link, escape sequence or control character can ride
/// into the notice, `/status` or `_meta`.
pub fn plain_model_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MODEL_ID_MAX
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/@+-".contains(c))
}

/// The local server in use, as every `session/new` answer's `_meta`
/// (`"acp-coder": {"localServer": …}`) names it; `None` when a configured
/// endpoint is used.
pub fn chosen(settings: &Settings) -> Option<Value> {
    let name = settings.local_server.as_ref()?;
    Some(serde_json::json!({
        "name": name,
        "url": settings.base_url,
        "model": settings.model,
    }))
}

/// `/status`'s line about the local server in use, if one is.
pub fn status_line(settings: &Settings) -> Option<String> {
    let name = settings.local_server.as_ref()?;
    Some(format!(
        "- **Model server**: the local {name} server at {}, found without configuration (set base_url to choose another)",
        settings.base_url
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 42 item 8: a listener's model name is shown and used only
    /// when plain: no Markdown link, no escape or control character, not
    /// over-long.
    #[test]
    fn only_plain_model_ids_of_a_local_server_are_used() {
        for ok in [
            "qwen2.5-coder:7b",
            "llama3.1:8b-instruct-q4_K_M",
            "org/Model-7B@q4+fast",
        ] {
            assert!(plain_model_id(ok), "{ok}");
        }
        for bad in [
            "",
            "[click me](https://evil.example)",
            "model\u{1b}]8;;https://evil.example\u{7}x",
            "model\u{1b}[2J",
            "two\nlines",
            "tab\there",
            "right\u{202e}to-left",
            "<img src=x>",
            "`code`",
            "spaced name",
        ] {
            assert!(!plain_model_id(bad), "{bad:?}");
        }
        assert!(plain_model_id(&"m".repeat(MODEL_ID_MAX)));
        assert!(!plain_model_id(&"m".repeat(MODEL_ID_MAX + 1)));
        let v = serde_json::json!({"data": [{"id": "[x](http://e)"}, {"id": "good-1"}]});
        let mut ids = model_ids(&v);
        ids.retain(|m| plain_model_id(m));
        assert_eq!(ids, ["good-1"]);
    }
}
