//! The end of a prompt turn (issue 45): the user's stop hooks, then plan
//! mode's hand-off. A stop hook that blocks sends the model back to work
//! with its reason, at most [`STOP_LIMIT`] times a turn. When the
//! model ends a turn in plan mode with a plan (`update_plan`), the user is
//! asked "Start editing?" with the modes to switch to; an approval switches
//! the session's mode (`current_mode_update`, the store) and the same turn
//! goes on with the plan.
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::acp::{
    PermissionOption, PermissionOptionKind, PermissionOutcome, SessionUpdate, StopReason, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use crate::agent::Agent;
use crate::agent::engine::turn::{Ending, Next};
use crate::agent::session::{Asker, Session};
use crate::config::{HookEvent, Mode, Settings};

/// What the model is told when the user approves the plan.
pub const APPROVED: &str = "The user approved the plan; carry it out.";

/// The modes an approval may switch to, with the options' names.
const OFFERS: [(Mode, &str); 2] = [
    (Mode::Ask, "Yes, ask before each edit"),
    (Mode::AcceptEdits, "Yes, edit automatically"),
];

/// The option that keeps plan mode.
const KEEP_PLANNING: &str = "keep_planning";

/// How many times a turn's stop hooks may send the model back to work.
pub const STOP_LIMIT: u32 = 3;

/// The end of a turn of a session the editor (or an A2A client) opened.
pub(in crate::agent) struct PromptEnding<'a> {
    agent: &'a Agent,
    settings: &'a Settings,
    /// How often the stop hooks sent the model back in this turn.
    stops: AtomicU32,
}

impl<'a> PromptEnding<'a> {
    pub fn new(agent: &'a Agent, settings: &'a Settings) -> Self {
        PromptEnding {
            agent,
            settings,
            stops: AtomicU32::new(0),
        }
    }

    /// The user's stop hooks: `Some(note)` when one sends the model back.
    async fn stop_hooks(
        &self,
        session: &Arc<Session>,
        answer: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let sent_back = self.stops.load(Ordering::Relaxed);
        let said = crate::agent::hooks::run(
            session,
            self.settings,
            HookEvent::Stop,
            None,
            json!({"stop_hook_active": sent_back > 0, "last_assistant_message": answer}),
            cancel,
        )
        .await;
        let reason = said.blocked?;
        if sent_back >= STOP_LIMIT {
            crate::agent::engine::model_call::status(
                session,
                &format!(
                    "A stop hook sent the model back {STOP_LIMIT} times in this turn; the turn ends here ({reason})"
                ),
            );
            return None;
        }
        self.stops.store(sent_back + 1, Ordering::Relaxed);
        tracing::info!(session = %session.id, "a stop hook sends the model back to work");
        Some(format!(
            "The user's stop hook did not let the turn end yet: {reason}\nDeal with this, then finish."
        ))
    }
}

#[async_trait::async_trait]
impl Ending for PromptEnding<'_> {
    async fn ended(
        &self,
        session: &Arc<Session>,
        planned: bool,
        answer: &str,
        cancel: &CancellationToken,
    ) -> Result<Next, StopReason> {
        if let Some(note) = self.stop_hooks(session, answer, cancel).await {
            return Ok(Next::GoOn(note));
        }
        if cancel.is_cancelled() {
            return Err(StopReason::Cancelled);
        }
        if planned && session.depth == 0 && session.mode() == Mode::Plan {
            return self.agent.start_editing(session, cancel).await;
        }
        Ok(Next::End)
    }
}

/// The modes the hand-off offers: never wider than a guest's ceiling (an
/// A2A client stays within `acp-coder a2a --mode`).
pub fn offered(asker: Asker) -> Vec<(Mode, &'static str)> {
    OFFERS
        .into_iter()
        .filter(|(m, _)| match asker {
            Asker::User => true,
            Asker::Guest(ceiling) => m.rank() <= ceiling.rank(),
        })
        .collect()
}

impl Agent {
    /// Asks "Start editing?"; on a yes switches the mode and goes on.
    async fn start_editing(
        &self,
        session: &Arc<Session>,
        cancel: &CancellationToken,
    ) -> Result<Next, StopReason> {
        let offers = offered(session.asker);
        if offers.is_empty() {
            tracing::info!(session = %session.id, "plan ready; no editing mode within the guest's ceiling to offer");
            return Ok(Next::End);
        }
        let id = session.claim_tool_id("");
        session.editor.update(&SessionUpdate::ToolCall(ToolCall {
            tool_call_id: id.clone(),
            title: "Start editing?".into(),
            name: None,
            kind: ToolKind::SwitchMode,
            status: ToolCallStatus::Pending,
            content: vec![ToolCallContent::text(
                "The plan is ready. Switch out of plan mode and carry it out?",
            )],
            locations: Vec::new(),
            raw_input: Some(json!({"from": Mode::Plan.id()})),
            raw_output: None,
            meta: None,
        }));
        let mut options: Vec<PermissionOption> = offers
            .iter()
            .map(|(m, name)| PermissionOption {
                option_id: m.id().into(),
                name: (*name).into(),
                kind: PermissionOptionKind::AllowOnce,
            })
            .collect();
        options.push(PermissionOption {
            option_id: KEEP_PLANNING.into(),
            name: "No, keep planning".into(),
            kind: PermissionOptionKind::RejectOnce,
        });
        let answer = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            r = session.editor.request_permission(ToolCallUpdate::new(&id), options) => Some(r),
        };
        let finish = |status, text: String| {
            session.editor.update(&SessionUpdate::ToolCallUpdate(
                ToolCallUpdate::new(&id)
                    .status(status)
                    .content(vec![ToolCallContent::text(text)]),
            ));
        };
        let chosen = match answer {
            None | Some(Ok(PermissionOutcome::Cancelled)) => {
                finish(ToolCallStatus::Failed, "Cancelled.".into());
                return Err(StopReason::Cancelled);
            }
            Some(Ok(PermissionOutcome::Selected { option_id })) => {
                offers.iter().find(|(m, _)| m.id() == option_id)
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "the plan hand-off question failed");
                None
            }
        };
        // A session whose mode changed meanwhile (`session/set_mode`) is
        // left as the user set it.
        let Some((mode, _)) = chosen.filter(|_| session.mode() == Mode::Plan) else {
            finish(ToolCallStatus::Completed, "Still in plan mode.".into());
            return Ok(Next::End);
        };
        self.apply_mode(session, *mode).await;
        finish(
            ToolCallStatus::Completed,
            format!("Switched to {} mode.", mode.name()),
        );
        tracing::info!(session = %session.id, mode = mode.id(), "plan approved; the turn goes on");
        Ok(Next::GoOn(APPROVED.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_is_offered_only_modes_within_its_ceiling() {
        let ids = |asker| -> Vec<&str> { offered(asker).iter().map(|(m, _)| m.id()).collect() };
        assert_eq!(ids(Asker::User), ["ask", "accept-edits"]);
        assert!(ids(Asker::Guest(Mode::ReadOnly)).is_empty());
        assert!(ids(Asker::Guest(Mode::Plan)).is_empty());
        assert_eq!(ids(Asker::Guest(Mode::Ask)), ["ask"]);
        assert_eq!(ids(Asker::Guest(Mode::FullAuto)), ["ask", "accept-edits"]);
    }
}
