//! Connecting to one MCP server: the transport, the handshake, and our side
//! of the connection (the rmcp client handler), with failures in words.
use rmcp::ClientHandler;
use std::sync::Arc;

use rmcp::model::{ClientConfig, ErrorData, Implementation, ProgressNotificationParam};
#[allow(deprecated)] // roots and logging: see src/mcp/client.rs
use rmcp::model::{ListRootsResult, LoggingMessageNotificationParam};
use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, NotificationContext, RequestContext, RoleClient,
    RunningService, serve_client_with_lifecycle_and_ct,
};
use rmcp::transport::IntoTransport;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerSpec, McpTransportSpec};

use super::manager::{EXIT_WAIT, McpOptions, STDERR_LINES, Service};
use super::stdio::{self, StdioChild};
use super::{McpError, acp_transport, client, oauth, oauth_connect};

pub(super) fn with_stderr(mut text: String, child: &StdioChild) -> String {
    let tail = child.stderr_tail(STDERR_LINES);
    if !tail.is_empty() {
        text.push_str("; its last stderr output: ");
        text.push_str(&tail.join(" | "));
    }
    text
}

/// A handshake failure in words: rmcp's transport errors name Rust types;
/// the causes (connection refused, HTTP status) are in the source chain.
fn init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, context } => {
            let mut text = format!("{context}: {}", error.error);
            // rmcp's HTTP client error does not chain its reqwest cause.
            let client = error
                .error
                .downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>()
                .and_then(|e| match e {
                    rmcp::transport::streamable_http_client::StreamableHttpError::Client(c) => {
                        Some(c as &(dyn std::error::Error + 'static))
                    }
                    _ => None,
                });
            let mut source = client.or_else(|| error.error.source());
            while let Some(s) = source {
                let part = s.to_string();
                if !text.contains(&part) {
                    text.push_str(": ");
                    text.push_str(&part);
                }
                source = s.source();
            }
            text
        }
        ClientInitializeError::ConnectionClosed(during) => {
            format!("the server closed the connection while waiting for the {during}")
        }
        other => other.to_string(),
    }
}

/// The MCP handshake on any transport: `server/discover` first (protocol
/// 2026-07-28, where a server may be stateless and have no `initialize`),
/// and `initialize` when the server answers as one of the older versions
/// (or does not answer the discovery within rmcp's 10 s).
pub(super) async fn handshake<H, T, E, A>(
    handler: H,
    transport: T,
    ct: CancellationToken,
) -> Result<RunningService<RoleClient, H>, ClientInitializeError>
where
    H: rmcp::service::Service<RoleClient>,
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    };
    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, ct).await
}

/// Connects to one server over its transport and does the MCP handshake;
/// an HTTP server that answers 401 gets the OAuth sign-in (`oauth_flow`),
/// its link shown as `present` says.
pub(super) async fn connect(
    spec: &McpServerSpec,
    handler: Handler,
    options: &McpOptions,
    links: Option<&std::sync::Arc<acp_transport::Links>>,
    ct: CancellationToken,
    auth: &oauth::AuthStatus,
    present: super::oauth_flow::Present<'_>,
) -> Result<(Service, Option<StdioChild>), McpError> {
    let sign_in = oauth_connect::SignIn {
        server: &spec.name,
        data_dir: &options.data_dir,
        status: auth,
        present,
        init_error,
    };
    match &spec.transport {
        McpTransportSpec::Stdio { command, args, env } => {
            let (child, stdout, stdin) = stdio::spawn(
                &spec.name,
                command,
                args,
                env,
                &options.cwd,
                &options.secret_env,
            )?;
            match handshake(handler, (stdout, stdin), ct).await {
                Ok(service) => Ok((service, Some(child))),
                Err(e) => {
                    let how = child.wait_then_stop(EXIT_WAIT).await;
                    child.stderr_eof(EXIT_WAIT).await;
                    Err(McpError::Handshake(with_stderr(
                        format!("{} (the process: {how})", init_error(&e)),
                        &child,
                    )))
                }
            }
        }
        McpTransportSpec::Http { url, headers } => {
            let service = sign_in.serve(false, (url, headers), handler, ct).await?;
            Ok((service, None))
        }
        McpTransportSpec::Acp { server_id } => {
            let transport = acp_transport::connect(links, server_id).await?;
            let service = handshake(handler, transport, ct)
                .await
                .map_err(|e| McpError::Handshake(init_error(&e)))?;
            Ok((service, None))
        }
        McpTransportSpec::Sse { url, headers } => {
            let service = sign_in.serve(true, (url, headers), handler, ct).await?;
            Ok((service, None))
        }
    }
}

/// Our side of each connection: forwards tool-list changes; answers roots,
/// progress and log messages through [`client`].
#[derive(Clone)]
pub struct Handler {
    pub(super) changed: mpsc::UnboundedSender<()>,
    pub(super) prompts_changed: mpsc::UnboundedSender<()>,
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
