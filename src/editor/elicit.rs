//! Asking the user through the editor (`elicitation/create`, ACP §10).
//!
//! Form mode backs the `ask_user` tool and relays MCP servers' form
//! elicitations; URL mode sends the user to a link (an MCP server's own
//! page, an OAuth authorisation page) and is usable by any code that holds
//! the session's [`Editor`] through [`Editor::open_url`]. A mode the editor
//! did not advertise is never requested ([`ElicitError::Unsupported`]).
use serde_json::{Map, Value};

use super::Editor;
use crate::acp::{
    CompleteElicitationNotification, CreateElicitationRequest, CreateElicitationResponse,
    ElicitationAction, ElicitationMode, ElicitationScope, method,
};
use crate::rpc::RpcError;

/// Why an elicitation produced no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ElicitError {
    #[error(
        "the editor does not support {0}-mode elicitation (clientCapabilities.elicitation.{0} was not advertised)"
    )]
    Unsupported(&'static str),
    #[error("the editor failed the elicitation: {}", .0.message)]
    Editor(RpcError),
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Accepted; the form's values (empty in URL mode).
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl From<CreateElicitationResponse> for Answer {
    fn from(r: CreateElicitationResponse) -> Self {
        match r.action {
            ElicitationAction::Accept => Answer::Accept(r.content.unwrap_or_default()),
            ElicitationAction::Cancel => Answer::Cancel,
            ElicitationAction::Decline | ElicitationAction::Other => Answer::Decline,
        }
    }
}

/// A URL-mode elicitation the user accepted: finish it with
/// [`Editor::complete_elicitation`] once the out-of-band flow is done.
#[derive(Debug, Clone)]
pub struct UrlElicitation {
    pub elicitation_id: String,
    pub answer: Answer,
}

impl Editor {
    /// Whether `elicitation/create` in form mode may be sent.
    pub fn can_elicit_form(&self) -> bool {
        self.caps.elicitation.form()
    }

    /// Whether `elicitation/create` in URL mode may be sent.
    pub fn can_elicit_url(&self) -> bool {
        self.caps.elicitation.url()
    }

    /// Asks the user to fill in a form described by `schema` (an object of
    /// primitive properties). `tool_call_id` ties the question to a call.
    /// Dropping the future withdraws the question (`$/cancel_request`).
    pub async fn elicit_form(
        &self,
        tool_call_id: Option<&str>,
        message: &str,
        schema: &Value,
    ) -> Result<Answer, ElicitError> {
        if !self.can_elicit_form() {
            return Err(ElicitError::Unsupported("form"));
        }
        let req = CreateElicitationRequest {
            mode: ElicitationMode::Form {
                scope: ElicitationScope {
                    session_id: &self.session_id,
                    tool_call_id,
                },
                requested_schema: schema,
            },
            message,
        };
        self.send(&req).await
    }

    /// Sends the user to `url` (e.g. an authorisation page) with `message`
    /// saying why; resolves when they accept, decline or cancel. The id in
    /// the result is the one to pass to [`Editor::complete_elicitation`].
    pub async fn open_url(
        &self,
        tool_call_id: Option<&str>,
        message: &str,
        url: &str,
    ) -> Result<UrlElicitation, ElicitError> {
        let elicitation_id = format!("elicit_{:016x}", fastrand::u64(..));
        self.open_url_with_id(tool_call_id, &elicitation_id, message, url)
            .await
            .map(|answer| UrlElicitation {
                elicitation_id,
                answer,
            })
    }

    /// [`Editor::open_url`] with a caller-chosen elicitation id (an MCP
    /// server's own id, relayed unchanged).
    pub async fn open_url_with_id(
        &self,
        tool_call_id: Option<&str>,
        elicitation_id: &str,
        message: &str,
        url: &str,
    ) -> Result<Answer, ElicitError> {
        if !self.can_elicit_url() {
            return Err(ElicitError::Unsupported("url"));
        }
        let req = CreateElicitationRequest {
            mode: ElicitationMode::Url {
                scope: ElicitationScope {
                    session_id: &self.session_id,
                    tool_call_id,
                },
                elicitation_id,
                url,
            },
            message,
        };
        self.send(&req).await
    }

    /// Sends one `elicitation/create` and reads the user's answer.
    async fn send(&self, req: &CreateElicitationRequest<'_>) -> Result<Answer, ElicitError> {
        self.peer
            .request::<_, CreateElicitationResponse>(method::ELICITATION_CREATE, req)
            .await
            .map(Answer::from)
            .map_err(ElicitError::Editor)
    }

    /// `elicitation/complete`: the URL flow `elicitation_id` finished, so the
    /// editor can close whatever it showed for it.
    pub fn complete_elicitation(&self, elicitation_id: &str) {
        if self.can_elicit_url() {
            self.peer.notify(
                method::ELICITATION_COMPLETE,
                &CompleteElicitationNotification { elicitation_id },
            );
        }
    }
}
