//! Connecting to one MCP server: the transport and the handshake
//! ([`super::handshake`]), with failures in words (our side of the
//! connection is [`super::handler`]).
use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle_and_ct,
};
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerSpec, McpTransportSpec};

use super::handler::Handler;
use super::handshake::{discovery_timed_out, handshake, init_error};
use super::options::McpOptions;
use super::stdio::{self, StdioChild};
use super::{McpError, acp_transport, oauth, oauth_connect};

/// A connected server: rmcp's service running our [`Handler`].
pub(super) type Service = RunningService<RoleClient, Handler>;

/// After its connection closed, how long a stdio server gets to exit by
/// itself before its group is killed (its exit status goes in the report).
pub(super) const EXIT_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
/// stderr lines quoted when a stdio server fails.
pub(super) const STDERR_LINES: usize = 3;

pub(super) fn with_stderr(mut text: String, child: &StdioChild) -> String {
    let tail = child.stderr_tail(STDERR_LINES);
    if !tail.is_empty() {
        text.push_str("; its last stderr output: ");
        text.push_str(&tail.join(" | "));
    }
    text
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
    spec.oauth
        .check(
            "_meta.\"acp-coder\".oauth.clientSecret",
            "_meta.\"acp-coder\".oauth.clientMetadataUrl",
        )
        .map_err(McpError::Config)?;
    let sign_in = oauth_connect::SignIn {
        server: &spec.name,
        client: &spec.oauth,
        data_dir: &options.data_dir,
        status: auth,
        present,
    };
    match &spec.transport {
        McpTransportSpec::Stdio { command, args, env } => {
            let start = || {
                stdio::spawn(
                    &spec.name,
                    command,
                    args,
                    env,
                    &options.cwd,
                    &options.secret_env,
                )
            };
            let (child, stdout, stdin) = start()?;
            let mut answer = handshake(handler.clone(), (stdout, stdin), ct.clone()).await;
            let mut child = child;
            if let Err(e) = &answer
                && discovery_timed_out(e)
            {
                // rmcp gives `server/discover` 10 s, then sends `initialize`
                // on the same pipe; a server slower than that to start (an
                // `npx` download, a busy machine) answers the discovery late
                // and the handshake breaks. Such a server gets a fresh start
                // with the discovery alone (no time limit), and if it turns
                // out to be of an older version, another with `initialize`.
                tracing::info!(server = %spec.name, error = %e, "MCP server slow to answer server/discover: started again");
                for lifecycle in [
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                    ClientLifecycleMode::Initialize,
                ] {
                    let legacy = matches!(lifecycle, ClientLifecycleMode::Initialize);
                    if legacy && !matches!(&answer, Err(ClientInitializeError::JsonRpcError(_))) {
                        break;
                    }
                    child.stop().await;
                    let (again, stdout, stdin) = start()?;
                    child = again;
                    answer = serve_client_with_lifecycle_and_ct(
                        handler.clone(),
                        (stdout, stdin),
                        lifecycle,
                        ct.clone(),
                    )
                    .await;
                    if answer.is_ok() {
                        break;
                    }
                }
            }
            match answer {
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
