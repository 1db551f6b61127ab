//! The context window a server really runs a model with, when the config
//! does not say: a local server is often started with a window far smaller
//! than the model's (llama-server `-c 16384`, Ollama's `num_ctx`), and
//! compaction, tool-output truncation and the prompt must follow that one.
//!
//! Asked concurrently, each bounded by the same timeout, through the
//! client's own reqwest client (proxies, TLS, headers as for chat):
//! - `GET /models` (any server): the listed model's `context_length`
//!   (OpenRouter and others), `max_model_len` (vLLM), `max_context_length`;
//! - on a local endpoint only ([`crate::config::is_local_endpoint`]):
//!   llama-server `GET /props` (`default_generation_settings.n_ctx`),
//!   Ollama `POST /api/show` (the `num_ctx` parameter, else
//!   `model_info.*.context_length`), LM Studio `GET /api/v0/models`
//!   (`loaded_context_length`, else `max_context_length`).
//!
//! The window the server runs with wins over the model's maximum.
//!
//! The answer is kept per endpoint and model for the whole process
//! ([`ask`]): a second session, or a client rebuilt by `authenticate`,
//! never asks again. The asking runs on a task of its own, so that a caller
//! that stops waiting (the first request of a turn waits only briefly)
//! does not stop it.
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::ServerWindow;

/// The most of one answer read (Ollama's `/api/show` carries the license
/// and the template).
const MAX_BODY: usize = 4 << 20;

/// A server's answer, once it is in.
pub(super) type Answer = Shared<BoxFuture<'static, Option<ServerWindow>>>;

/// Every answer asked for in this process, by (endpoint, model).
static ASKED: LazyLock<Mutex<HashMap<(String, String), Answer>>> = LazyLock::new(Default::default);

/// The answer for `model` at `base`: the one asked for earlier in this
/// process, else `start()`'s, driven from now on by a task of its own
/// (needs a Tokio runtime).
pub(super) fn ask(
    base: &str,
    model: &str,
    start: impl FnOnce() -> BoxFuture<'static, Option<ServerWindow>>,
) -> Answer {
    let mut asked = ASKED.lock().unwrap_or_else(PoisonError::into_inner);
    let key = (base.to_owned(), model.to_owned());
    if let Some(answer) = asked.get(&key) {
        return answer.clone();
    }
    let answer = start().shared();
    tokio::spawn(answer.clone());
    asked.insert(key, answer.clone());
    answer
}

/// The answer for `model` at `base` if it is in, without asking.
pub(super) fn known(base: &str, model: &str) -> Option<ServerWindow> {
    let asked = ASKED.lock().unwrap_or_else(PoisonError::into_inner);
    asked
        .get(&(base.to_owned(), model.to_owned()))?
        .peek()
        .copied()
        .flatten()
}

/// What each source said, best first when picking.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Found {
    /// llama-server's running `n_ctx`.
    props: Option<u64>,
    /// Ollama's `num_ctx` parameter of the model.
    num_ctx: Option<u64>,
    /// LM Studio's loaded (else maximum) context length.
    lm_studio: Option<u64>,
    /// The `/models` entry's length.
    listed: Option<u64>,
    /// Ollama's model maximum.
    model_max: Option<u64>,
}

impl Found {
    #[cfg(test)]
    fn window(&self) -> Option<u64> {
        self.pick().map(|w| w.tokens)
    }

    /// The best answer, and which source gave it.
    pub(super) fn pick(&self) -> Option<ServerWindow> {
        [
            (self.props, "llama-server `/props` (n_ctx)"),
            (self.num_ctx, "Ollama `/api/show` (num_ctx)"),
            (self.lm_studio, "LM Studio `/api/v0/models`"),
            (self.listed, "the server's `/models` list"),
            (self.model_max, "Ollama `/api/show` (the model's maximum)"),
        ]
        .into_iter()
        .find_map(|(n, source)| {
            n.filter(|n| *n >= 512)
                .map(|tokens| ServerWindow { tokens, source })
        })
    }
}

/// Asks the server at `base` (the chat base URL, e.g. `…/v1`) for `model`'s
/// window and where it said so; `None` when nothing says.
/// `listing` is the `GET /models` answer when the client already has it.
pub(super) async fn probe(
    client: &reqwest::Client,
    base: &str,
    auth: &HeaderMap,
    model: &str,
    listing: Option<Value>,
    timeout: Duration,
) -> Option<ServerWindow> {
    let base = base.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let local = crate::config::is_local_endpoint(base);
    let get = |url: String| fetch(client.get(url).headers(auth.clone()), timeout);
    let listed = async {
        match listing {
            Some(v) => Some(v),
            None => get(format!("{base}/models")).await,
        }
    };
    let props = async {
        match local {
            true => get(format!("{root}/props")).await,
            false => None,
        }
    };
    let show = async {
        match local {
            true => {
                let body = serde_json::json!({ "model": model });
                let req = client
                    .post(format!("{root}/api/show"))
                    .headers(auth.clone())
                    .json(&body);
                fetch(req, timeout).await
            }
            false => None,
        }
    };
    let lm = async {
        match local {
            true => get(format!("{root}/api/v0/models")).await,
            false => None,
        }
    };
    let (listed, props, show, lm) = futures::join!(listed, props, show, lm);
    let found = read(model, listed, props, show, lm);
    tracing::debug!(?found, model, "context window from the server");
    found.pick()
}

/// The answers, read.
pub(super) fn read(
    model: &str,
    listed: Option<Value>,
    props: Option<Value>,
    show: Option<Value>,
    lm: Option<Value>,
) -> Found {
    let num = |v: Option<&Value>| v.and_then(Value::as_u64);
    let entry = |list: &Option<Value>| -> Option<Value> {
        let items = list.as_ref()?;
        let items = items
            .get("data")
            .or_else(|| items.get("models"))?
            .as_array()?;
        items
            .iter()
            .find(|m| {
                m.get("id")
                    .or_else(|| m.get("name"))
                    .and_then(Value::as_str)
                    == Some(model)
            })
            .or_else(|| (items.len() == 1).then(|| &items[0]))
            .cloned()
    };
    let listed_entry = entry(&listed);
    let listed = listed_entry.as_ref().and_then(|m| {
        [
            "context_length",
            "max_model_len",
            "max_context_length",
            "context_window",
        ]
        .iter()
        .find_map(|k| num(m.get(*k)))
        .or_else(|| num(m.pointer("/top_provider/context_length")))
    });
    let props = props.as_ref().and_then(|p| {
        num(p.pointer("/default_generation_settings/n_ctx"))
            .or_else(|| num(p.pointer("/default_generation_settings/params/n_ctx")))
            .or_else(|| num(p.get("n_ctx")))
    });
    let num_ctx = show.as_ref().and_then(|s| {
        let params = s.get("parameters")?.as_str()?;
        params.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
    });
    let model_max = show.as_ref().and_then(|s| {
        s.get("model_info")?
            .as_object()?
            .iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| v.as_u64())
    });
    let lm_studio = entry(&lm).and_then(|m| {
        num(m.get("loaded_context_length")).or_else(|| num(m.get("max_context_length")))
    });
    Found {
        props,
        num_ctx,
        lm_studio,
        listed,
        model_max,
    }
}

/// One answer as JSON; `None` on any failure (this is a best guess).
async fn fetch(req: reqwest::RequestBuilder, timeout: Duration) -> Option<Value> {
    let work = async {
        let mut resp = req.send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.ok()? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BODY {
                return None;
            }
        }
        serde_json::from_slice(&body).ok()
    };
    tokio::time::timeout(timeout, work).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_server_says_it_its_own_way() {
        // llama-server: the running window, not the model's training length.
        let props = json!({"default_generation_settings": {"n_ctx": 16384}, "n_ctx_train": 32768});
        let listed = json!({"data": [{"id": "qwen", "meta": {"n_ctx_train": 32768}}]});
        let f = read("qwen", Some(listed), Some(props), None, None);
        assert_eq!(f.window(), Some(16384));
        assert_eq!(f.pick().unwrap().source, "llama-server `/props` (n_ctx)");
        // Ollama: num_ctx when the model sets it, else the model's maximum.
        let show = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx 8192\ntemperature 0.2",
            "model_info": {"qwen2.context_length": 32768}
        });
        assert_eq!(read("q", None, None, Some(show), None).window(), Some(8192));
        let show = json!({"model_info": {"general.architecture": "llama", "llama.context_length": 131072}});
        assert_eq!(
            read("q", None, None, Some(show), None).window(),
            Some(131072)
        );
        // LM Studio: loaded length, else maximum, of the entry for the model.
        let lm = json!({"data": [
            {"id": "other", "max_context_length": 4096},
            {"id": "qwen2.5-coder", "max_context_length": 32768, "loaded_context_length": 4096}
        ]});
        assert_eq!(
            read("qwen2.5-coder", None, None, None, Some(lm)).window(),
            Some(4096)
        );
        // OpenRouter-style and vLLM listings.
        let or = json!({"data": [{"id": "a/b", "context_length": 200000}]});
        assert_eq!(
            read("a/b", Some(or), None, None, None).window(),
            Some(200000)
        );
        let vllm = json!({"data": [{"id": "m", "max_model_len": 8192}]});
        assert_eq!(read("m", Some(vllm), None, None, None).window(), Some(8192));
        // Nothing said: no guess.
        let bare = json!({"data": [{"id": "gpt"}, {"id": "x"}]});
        assert_eq!(read("gpt", Some(bare), None, None, None).window(), None);
    }
}
