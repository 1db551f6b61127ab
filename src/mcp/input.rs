//! Input-required results (MCP 2026-07-28 "Multi round-trip requests"): a
//! server of that version answers `tools/call`, `prompts/get` or
//! `resources/read` with `resultType: "input_required"` and a map of input
//! requests (elicitation, sampling, roots) instead of sending those requests
//! itself. The agent answers each the way it answers a server's own request
//! ([`super::elicit`]: the editor's form or URL, shown with the tool call;
//! [`super::sampling`]: the same permission question), then sends the same
//! request again with `inputResponses` and the echoed `requestState`.
//!
//! At most [`MAX_ROUNDS`] rounds, [`MAX_PER_ROUND`] input requests in one
//! round and [`MAX_PER_CALL`] in all the rounds of one request (issue 42
//! item 6: one `tools/call` put 300 questions to the editor in one round);
//! past a bound the request fails before any of that round's requests is
//! answered. A cancelled turn drops the call's future,
//! which ends the round being answered at once (and rmcp sends
//! `notifications/cancelled` for a request in flight).
use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{InputRequest, InputRequests, InputRequiredResult, InputResponses};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::client::{self, Roots};
use super::elicit::Relay;
use super::sampling::Sampler;

/// Rounds of one request before the agent gives up (rmcp's default, which
/// the other SDKs use too).
pub const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// Input requests (questions, sampling, roots) one round may hold.
pub const MAX_PER_ROUND: usize = 5;

/// Input requests all the rounds of one request may hold together.
pub const MAX_PER_CALL: usize = 20;

/// How one server's input requests are answered: its elicitation relay, its
/// sampler and the session's roots (the same ones its handler uses).
pub struct Asker {
    pub(super) elicit: Arc<Relay>,
    pub(super) sampling: Arc<Sampler>,
    pub(super) roots: Roots,
}

/// What one round of a request gave.
pub enum Round<T> {
    Done(T),
    Input(InputRequiredResult),
}

/// Why a request with input rounds did not finish.
#[derive(Debug)]
pub enum InputError {
    /// The request itself failed (rmcp's error, in the caller's words).
    Request(rmcp::service::ServiceError),
    /// An input request could not be answered (a refused sampling, a form
    /// the editor rejected).
    Answer(ErrorData),
    /// The server asked again after [`MAX_ROUNDS`] rounds.
    Rounds,
    /// One round held more than [`MAX_PER_ROUND`] input requests.
    TooManyInRound(usize),
    /// The rounds together held more than [`MAX_PER_CALL`] input requests
    /// (how many had been answered, and how many the next round held).
    TooManyInCall { answered: usize, asked: usize },
    /// `input_required` with neither input requests nor a request state.
    Empty,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Request(e) => write!(f, "{e}"),
            InputError::Answer(e) => {
                write!(f, "answering its request for input failed: {}", e.message)
            }
            InputError::Rounds => write!(
                f,
                "it still asked for input after {MAX_ROUNDS} rounds of answers; acp-coder stops there"
            ),
            InputError::TooManyInRound(n) => write!(
                f,
                "it asked {n} questions at once (acp-coder answers at most {MAX_PER_ROUND} in one round); none was put to the user and the call failed: ask the server's maintainers to ask fewer"
            ),
            InputError::TooManyInCall { answered, asked } => write!(
                f,
                "after {answered} answered questions it asked {asked} more (acp-coder answers at most {MAX_PER_CALL} for one call); the call failed: ask the server's maintainers to ask fewer"
            ),
            InputError::Empty => write!(
                f,
                "it answered input_required with neither inputRequests nor requestState (MCP requires one)"
            ),
        }
    }
}

impl Asker {
    pub fn new(elicit: Arc<Relay>, sampling: Arc<Sampler>, roots: Roots) -> Self {
        Self {
            elicit,
            sampling,
            roots,
        }
    }

    /// Sends a request with `send(inputResponses, requestState)` until the
    /// server gives its result, answering its input requests in between;
    /// `tool_call` is the ACP tool call they are shown with.
    pub async fn drive<T, F, Fut>(
        &self,
        tool_call: Option<&str>,
        mut send: F,
    ) -> Result<T, InputError>
    where
        F: FnMut(Option<InputResponses>, Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<Round<T>, rmcp::service::ServiceError>>,
    {
        let (mut responses, mut state) = (None, None);
        let mut state_only = 0u32;
        let mut answered = 0usize;
        for _ in 0..MAX_ROUNDS {
            let asked = match send(responses.take(), state.take()).await {
                Ok(Round::Done(result)) => return Ok(result),
                Ok(Round::Input(asked)) => asked,
                Err(e) => return Err(InputError::Request(e)),
            };
            let requests = asked.input_requests.unwrap_or_default();
            if requests.is_empty() {
                if asked.request_state.is_none() {
                    return Err(InputError::Empty);
                }
                // Only a state to echo (the server is not ready yet): a short,
                // growing pause as rmcp's own helpers make.
                tokio::time::sleep(Duration::from_millis(50 << state_only.min(2))).await;
                state_only += 1;
            } else {
                state_only = 0;
                if requests.len() > MAX_PER_ROUND {
                    tracing::warn!(
                        count = requests.len(),
                        "MCP server asked too many questions in one round (input_required): the call fails"
                    );
                    return Err(InputError::TooManyInRound(requests.len()));
                }
                if answered + requests.len() > MAX_PER_CALL {
                    tracing::warn!(
                        answered,
                        count = requests.len(),
                        "MCP server asked too many questions for one call (input_required): the call fails"
                    );
                    return Err(InputError::TooManyInCall {
                        answered,
                        asked: requests.len(),
                    });
                }
                answered += requests.len();
                tracing::info!(
                    count = requests.len(),
                    "MCP server asked for input (input_required)"
                );
                responses = Some(
                    self.answer(requests, tool_call)
                        .await
                        .map_err(InputError::Answer)?,
                );
            }
            state = asked.request_state;
        }
        Err(InputError::Rounds)
    }

    /// Answers one round's requests, one after the other (a user sees one
    /// question at a time), keyed as the server keyed them.
    #[allow(deprecated)] // roots: see src/mcp/client.rs
    async fn answer(
        &self,
        requests: InputRequests,
        tool_call: Option<&str>,
    ) -> Result<InputResponses, ErrorData> {
        let mut out = InputResponses::new();
        for (key, request) in requests {
            let value = match request {
                InputRequest::Elicitation(r) => {
                    to_value(self.elicit.relay_in(r.params, tool_call).await?)?
                }
                InputRequest::CreateMessage(r) => to_value(
                    self.sampling
                        .create_message_in(r.params, CancellationToken::new(), tool_call)
                        .await?,
                )?,
                InputRequest::ListRoots(_) => to_value(client::list_roots(
                    &self.roots.read().unwrap_or_else(|e| e.into_inner()),
                ))?,
                // rmcp's enum is non-exhaustive: a kind this build does not know.
                #[allow(unreachable_patterns)]
                _ => {
                    return Err(ErrorData::invalid_params(
                        format!("inputRequests.{key}: not a request acp-coder answers"),
                        None,
                    ));
                }
            };
            out.insert(key, value);
        }
        Ok(out)
    }
}

fn to_value(v: impl serde::Serialize) -> Result<Value, ErrorData> {
    serde_json::to_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}
