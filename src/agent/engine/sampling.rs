//! The running turn lent to its MCP servers' sampling requests (issue 18
//! item 2; the MCP side is src/mcp/sampling.rs): the turn's model with its
//! retries, the session's mode, the turn's cancellation, and the usage those
//! calls spend, which the turn adds to its own (`usage_update`, ACP §7, and
//! `PromptResponse.usage`).
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::acp::{Cost, SessionUpdate, UsageUpdate};
use crate::llm::{Completion, Usage};
use crate::mcp::sampling::{Sample, TurnModel};

use crate::agent::engine::model_call::{self, Outcome, TurnEnv};
use crate::agent::session::{History, Session};

/// What one turn lends (see [`crate::mcp::sampling::Hub::lend`]).
pub struct Lender {
    env: TurnEnv,
    session: Arc<Session>,
    cancel: CancellationToken,
    /// Usage of finished sampling calls not yet counted in the turn.
    spent: Mutex<Vec<(String, Usage)>>,
}

impl Lender {
    pub fn new(env: &TurnEnv, session: &Arc<Session>, cancel: &CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            env: env.clone(),
            session: session.clone(),
            cancel: cancel.clone(),
            spent: Mutex::new(Vec::new()),
        })
    }

    /// Adds what sampling spent since the last call to the session's totals
    /// and tells the editor (`usage_update`); the context size is the
    /// turn's, unchanged (sampling does not enter the conversation).
    pub fn count(&self, history: &mut History) {
        let spent = std::mem::take(&mut *self.spent.lock().unwrap_or_else(|e| e.into_inner()));
        if spent.is_empty() {
            return;
        }
        let settings = &self.env.settings;
        let prices = |m: &str| {
            settings
                .model_config(m)
                .and_then(|c| Some((c.input_cost_per_mtok?, c.output_cost_per_mtok?)))
        };
        let mut priced = prices(&self.env.model_id).is_some();
        for (model, u) in spent {
            history.total_prompt_tokens += u.prompt_tokens;
            history.total_completion_tokens += u.completion_tokens;
            if let Some((input, output)) = prices(&model) {
                priced = true;
                history.cost_usd += u.prompt_tokens as f64 * input / 1e6
                    + u.completion_tokens as f64 * output / 1e6;
            }
        }
        self.session
            .editor
            .update(&SessionUpdate::UsageUpdate(UsageUpdate {
                used: history.context_tokens,
                size: self.env.context_window(),
                cost: priced.then(|| Cost {
                    amount: (history.cost_usd * 1e6).round() / 1e6,
                    currency: "USD".into(),
                }),
            }));
    }
}

#[async_trait::async_trait]
impl TurnModel for Lender {
    fn model_id(&self) -> String {
        self.env.model_id.clone()
    }

    fn known_models(&self) -> Vec<String> {
        let s = &self.env.settings;
        s.model
            .iter()
            .cloned()
            .chain(s.models.iter().map(|(m, _)| m.clone()))
            .collect()
    }

    fn accepts_images(&self, model: &str) -> bool {
        self.env.settings.model_accepts_images(model)
    }

    fn accepts_audio(&self, model: &str) -> bool {
        self.env.settings.model_accepts_audio(model)
    }

    fn read_only(&self) -> bool {
        self.session.mode().is_read_only()
    }

    fn cancel(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// A model call without tools and without streaming to the editor
    /// (status lines for retries still show), on `model`'s settings.
    async fn complete(&self, model: &str, sample: Sample) -> Result<Completion, String> {
        let mut env = self.env.clone();
        if model != env.model_id {
            env.reasoning_effort =
                crate::agent::policy::options::effective_effort(&env.settings, model, None);
            env.model_id = model.to_owned();
        }
        let mut request = model_call::request(&env, &sample.messages, Vec::new(), false);
        request.max_tokens = Some(sample.max_tokens);
        request.temperature = sample.temperature;
        request.stop = sample.stop;
        match model_call::call_model(&env, &self.session, &request, &self.cancel, false).await {
            Ok(Outcome::Done(c)) => {
                if let Some(u) = &c.usage {
                    self.spent
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((model.to_owned(), *u));
                }
                Ok(c)
            }
            Ok(Outcome::Cancelled { .. }) => Err("cancelled with the turn".to_owned()),
            Err(e) => Err(e.message),
        }
    }
}
