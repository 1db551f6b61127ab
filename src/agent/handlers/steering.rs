//! `_session/steering` (codex-acp's extension, advertised in `initialize`
//! as `_meta.steering.supported`): a message for the running turn. It joins
//! the turn at its next model boundary (after the model's reply or the tool
//! calls it asked for), is recorded there, and a load replays it there.
//! When the session is idle it starts a turn of its own, or, if the client
//! sent `_meta.steering.idleBehavior: "promptRequired"`, it is left to the
//! client to send as a prompt.
use std::sync::Arc;

use crate::acp::{PromptRequest, SteeringOutcome, SteeringRequest, SteeringResponse};
use crate::rpc::RpcError;

use crate::agent::Agent;
use crate::agent::turns::SteerFate;

impl Agent {
    pub(in crate::agent) async fn steer(
        self: Arc<Self>,
        req: SteeringRequest,
    ) -> Result<SteeringResponse, RpcError> {
        let session = self.session(&req.session_id)?;
        if req.prompt.is_empty() {
            return Err(RpcError::invalid_params(
                "params.prompt: a steering message needs at least one content block",
            ));
        }
        let idle_prompt_required = req.prompt_required_when_idle();
        let fate = match session.turns.steer(req.prompt.clone()) {
            Some(rx) => rx.await.unwrap_or(SteerFate::Cancelled),
            None => SteerFate::Missed,
        };
        let outcome = match fate {
            SteerFate::Delivered => SteeringOutcome::Injected,
            SteerFate::Cancelled => SteeringOutcome::Failed,
            SteerFate::Missed if idle_prompt_required => SteeringOutcome::PromptRequired,
            SteerFate::Missed => {
                // A turn of its own, registered before the answer so a
                // `session/cancel` right after it finds it. Its updates
                // are the ones a prompt's would be; its end has no response
                // to carry (the client asked for the turn by steering).
                let turn = session.register_turn();
                let prompt = PromptRequest {
                    session_id: req.session_id.clone(),
                    prompt: req.prompt,
                    meta: None,
                };
                let agent = self.clone();
                tokio::spawn(async move {
                    if let Err(e) = agent.prompt(prompt, Some(turn)).await {
                        tracing::warn!(error = %e.message, "the turn a steering message started failed");
                    }
                });
                SteeringOutcome::StartedNewTurn
            }
        };
        tracing::info!(session = %req.session_id, ?outcome, "steering");
        Ok(SteeringResponse { outcome })
    }
}
