//! Our side of each MCP connection (the rmcp client handler): list
//! changes, roots, progress, log messages, elicitation and sampling, each
//! delegated to its module.
use rmcp::ClientHandler;
use std::sync::Arc;

use rmcp::model::{ClientConfig, ErrorData, Implementation, ProgressNotificationParam};
#[allow(deprecated)] // roots and logging: see src/mcp/client.rs
use rmcp::model::{ListRootsResult, LoggingMessageNotificationParam};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::mpsc;

use super::client;

/// Our side of each connection: forwards tool-list changes; answers roots,
/// progress and log messages through [`client`].
#[derive(Clone)]
pub struct Handler {
    pub(super) changed: mpsc::UnboundedSender<()>,
    /// Set on a tool-list change, cleared when the list is read again: the
    /// next turn re-reads a list its change left stale (issue 45 item 10).
    pub(super) stale: Arc<std::sync::atomic::AtomicBool>,
    pub(super) prompts_changed: mpsc::UnboundedSender<()>,
    /// Set on a prompt-list change, cleared when the prompts are read
    /// again: the next turn re-reads a list its change left stale.
    pub(super) prompts_stale: Arc<std::sync::atomic::AtomicBool>,
    pub(super) server: String,
    pub(super) roots: client::Roots,
    pub(super) progress: Arc<client::Progress>,
    /// Where server elicitations go (issue 18 item 3, `super::elicit`).
    pub(super) elicit: Arc<super::elicit::Relay>,
    /// Where server sampling requests go (issue 18 item 2, `super::sampling`).
    pub(super) sampling: Arc<super::sampling::Sampler>,
}

impl ClientHandler for Handler {
    /// `notifications/tools/list_changed` outside a subscription (protocol
    /// versions before 2026-07-28).
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.changed.send(());
    }

    /// `roots/list`: the session's directories (MCP "Client features: Roots").
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(client::list_roots(
            &self.roots.read().unwrap_or_else(|e| e.into_inner()),
        ))
    }

    /// `notifications/progress` for a running call: shown in its tool call.
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.notify(&self.server, &params);
    }

    /// `notifications/prompts/list_changed`: the slash commands are rebuilt.
    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.prompts_stale
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.prompts_changed.send(());
    }

    /// `notifications/message`: to the log file at its level.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        client::log_message(&self.server, &params);
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = client::capabilities();
        capabilities.elicitation = self.elicit.capability();
        capabilities.sampling = Some(Default::default());
        ClientConfig::new(
            capabilities,
            Implementation::new("acp-coder", env!("CARGO_PKG_VERSION")),
        )
    }

    /// A server's `elicitation/create`, relayed to the editor (issue 18 item 3).
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        self.elicit.relay(request).await
    }

    /// A server's `sampling/createMessage`, answered by the session's model
    /// after the user allows it (issue 18 item 2).
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        self.sampling.create_message(params, context.ct).await
    }

    /// A request rmcp could not read into its type (e.g. a form schema that
    /// is not flat): a clear error (issue 18, "bad input from a server").
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        tracing::warn!(server = %self.server, method = %request.method, "MCP server request not understood");
        Err(super::elicit::untyped_request(&request))
    }

    /// `notifications/elicitation/complete` for a relayed URL elicitation.
    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.elicit.notification(&notification);
    }
}
