//! The MCP handshake on any transport, and its failures in words.
use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle_and_ct,
};
use rmcp::transport::IntoTransport;
use tokio_util::sync::CancellationToken;

/// A handshake failure in words: rmcp's transport errors name Rust types;
/// the causes (connection refused, HTTP status) are in the source chain.
pub(super) fn init_error(e: &ClientInitializeError) -> String {
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

/// Whether a handshake broke because the server answered `server/discover`
/// after rmcp had given up on it and sent `initialize` (see [`handshake`]).
pub(super) fn discovery_timed_out(e: &ClientInitializeError) -> bool {
    matches!(
        e,
        ClientInitializeError::ConflictInitResponseId(..)
            | ClientInitializeError::UncorrelatedErrorResponse { .. }
    )
}
