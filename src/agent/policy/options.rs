//! Session config options (ACP §5.6): mode, model and, where the config says the
//! model supports it, reasoning effort — and the model catalog behind the picker.
use std::time::{Duration, Instant};

use crate::acp::{SelectTag, SessionConfigOption, SessionConfigSelectOption};
use crate::config::Settings;
use crate::llm::Model;

use crate::config::Mode;

pub const MODE: &str = "mode";
pub const MODEL: &str = "model";
pub const REASONING_EFFORT: &str = "reasoning_effort";

/// The models the endpoint lists, fetched at most once per `TTL` and within a
/// bounded time, so `session/new` never hangs on a slow endpoint.
#[derive(Default)]
pub struct Catalog {
    listed: tokio::sync::Mutex<Option<(Instant, Vec<String>)>>,
}

const TTL: Duration = Duration::from_secs(600);
const FAILED_TTL: Duration = Duration::from_secs(30);

impl Catalog {
    /// Configured models first (file order, then the default model), then listed ones.
    pub async fn models(&self, settings: &Settings, model: &dyn Model) -> Vec<String> {
        let listed = self.listed(settings, model).await;
        let mut out: Vec<String> = Vec::new();
        let mut push = |m: &str| {
            if !m.is_empty() && !out.iter().any(|x| x == m) {
                out.push(m.to_owned());
            }
        };
        if let Some(m) = &settings.model {
            push(m);
        }
        for (m, _) in &settings.models {
            push(m);
        }
        for m in &listed {
            push(m);
        }
        out
    }

    /// The endpoint's list (possibly empty), cached.
    pub async fn listed(&self, settings: &Settings, model: &dyn Model) -> Vec<String> {
        let mut slot = self.listed.lock().await;
        if let Some((at, list)) = slot.as_ref() {
            let ttl = if list.is_empty() { FAILED_TTL } else { TTL };
            if at.elapsed() < ttl {
                return list.clone();
            }
        }
        let list = match tokio::time::timeout(settings.models_list_timeout, model.list_models())
            .await
        {
            Ok(Ok(list)) => list,
            Ok(Err(e)) => {
                tracing::info!(error = %e, "listing models failed; offering the configured ones");
                Vec::new()
            }
            Err(_) => {
                tracing::info!("listing models timed out; offering the configured ones");
                Vec::new()
            }
        };
        *slot = Some((Instant::now(), list.clone()));
        list
    }

    /// Forgets the cached list (after `authenticate` changed the endpoint or key).
    pub async fn reset(&self) {
        *self.listed.lock().await = None;
    }
}

/// The default model: configured, else the first the endpoint lists.
pub fn default_model(settings: &Settings, listed: &[String]) -> Option<String> {
    settings.model.clone().or_else(|| listed.first().cloned())
}

/// The complete option list of a session, in priority order.
pub fn config_options(
    settings: &Settings,
    mode: Mode,
    model: Option<&str>,
    models: &[String],
    effort: Option<&str>,
) -> Vec<SessionConfigOption> {
    let mut out = vec![Mode::config_option(mode)];
    if let Some(current) = model {
        let mut ids: Vec<String> = models.to_vec();
        if !ids.iter().any(|m| m == current) {
            ids.insert(0, current.to_owned());
        }
        out.push(SessionConfigOption {
            id: MODEL.into(),
            name: "Model".into(),
            description: Some("The model that answers from the next request on".into()),
            category: Some("model".into()),
            kind: SelectTag::Select,
            current_value: current.to_owned(),
            options: ids
                .iter()
                .map(|id| SessionConfigSelectOption {
                    value: id.clone(),
                    name: settings
                        .model_config(id)
                        .and_then(|c| c.name.clone())
                        .unwrap_or_else(|| id.clone()),
                    description: None,
                })
                .collect(),
        });
        if let Some(cfg) = settings.model_config(current)
            && !cfg.reasoning_efforts.is_empty()
        {
            let current_effort = effort
                .filter(|e| cfg.reasoning_efforts.iter().any(|x| x == e))
                .map(str::to_owned)
                .or_else(|| cfg.default_reasoning_effort.clone())
                .unwrap_or_else(|| cfg.reasoning_efforts[0].clone());
            out.push(SessionConfigOption {
                id: REASONING_EFFORT.into(),
                name: "Reasoning effort".into(),
                description: Some("How much the model thinks before answering".into()),
                category: Some("thought_level".into()),
                kind: SelectTag::Select,
                current_value: current_effort,
                options: cfg
                    .reasoning_efforts
                    .iter()
                    .map(|e| SessionConfigSelectOption {
                        value: e.clone(),
                        name: capitalize(e),
                        description: None,
                    })
                    .collect(),
            });
        }
    }
    out
}

/// The effort to send for a model: the session's choice if the model supports
/// it, else the model's default; `None` for models without efforts.
pub fn effective_effort(settings: &Settings, model: &str, chosen: Option<&str>) -> Option<String> {
    let cfg = settings.model_config(model)?;
    if cfg.reasoning_efforts.is_empty() {
        return None;
    }
    chosen
        .filter(|e| cfg.reasoning_efforts.iter().any(|x| x == e))
        .map(str::to_owned)
        .or_else(|| cfg.default_reasoning_effort.clone())
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelConfig;

    #[test]
    fn options_follow_the_config() {
        let s = Settings {
            models: vec![(
                "o3".into(),
                ModelConfig {
                    reasoning_efforts: vec!["low".into(), "high".into()],
                    default_reasoning_effort: Some("high".into()),
                    name: Some("OpenAI o3".into()),
                    ..Default::default()
                },
            )],
            ..Settings::default()
        };
        let opts = config_options(&s, Mode::Ask, Some("o3"), &["gpt".into()], None);
        let ids: Vec<&str> = opts.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["mode", "model", "reasoning_effort"]);
        assert_eq!(opts[1].options[0].value, "o3");
        assert_eq!(opts[1].options[0].name, "OpenAI o3");
        assert_eq!(opts[2].current_value, "high");
        let opts = config_options(&s, Mode::Ask, Some("gpt"), &["gpt".into()], None);
        assert_eq!(opts.len(), 2);
        assert_eq!(
            effective_effort(&s, "o3", Some("low")).as_deref(),
            Some("low")
        );
        assert_eq!(
            effective_effort(&s, "o3", Some("bogus")).as_deref(),
            Some("high")
        );
        assert_eq!(effective_effort(&s, "gpt", Some("low")), None);
        assert_eq!(config_options(&s, Mode::Ask, None, &[], None).len(), 1);
    }
}
