//! Connecting to an HTTP MCP server that may ask for OAuth (MCP 2025-11-25
//! "Authorization"; issue 18 item 8): a stored sign-in is used; a 401 with a
//! challenge runs the sign-in ([`oauth_flow::sign_in`]) and connects again
//! with the new token. Streamable HTTP goes through rmcp's `AuthClient`;
//! the legacy SSE transport (ours) takes a [`oauth_flow::Bearer`].
use std::path::Path;
use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::service::{RoleClient, RunningService};
use tokio_util::sync::CancellationToken;

use super::handshake::{self, init_error};
use super::oauth::{AuthStatus, TokenStore};
use super::oauth_flow::{self, Bearer};
use super::{McpError, http, sse};

/// What a sign-in needs from the server's slot.
pub struct SignIn<'a> {
    pub server: &'a str,
    /// Who to sign in as (the configured client, if any).
    pub client: &'a crate::config::McpOAuthClient,
    pub data_dir: &'a Path,
    pub status: &'a AuthStatus,
    /// Shows the sign-in link to the user (see [`oauth_flow::Present`]).
    pub present: oauth_flow::Present<'a>,
}

impl SignIn<'_> {
    /// The server's token store; a stored sign-in means it uses OAuth.
    async fn stored(
        &self,
        url: &str,
    ) -> Result<(Arc<TokenStore>, rmcp::transport::auth::AuthorizationManager), McpError> {
        let store = Arc::new(TokenStore::for_server(self.data_dir, url));
        if store.exists() {
            self.status.set_required();
        }
        let manager = oauth_flow::manager(url, store.clone(), self.client)
            .await
            .map_err(|e| McpError::Connect(e.to_string()))?;
        Ok((store, manager))
    }

    async fn run(
        &self,
        url: &str,
        challenge: &str,
        store: Arc<TokenStore>,
    ) -> Result<rmcp::transport::auth::AuthorizationManager, McpError> {
        self.status.set_required();
        oauth_flow::sign_in(
            (self.server, url, self.client),
            challenge,
            store,
            &self.present,
            oauth_flow::SIGN_IN_WAIT,
        )
        .await
        .map_err(|e| McpError::Connect(format!("signing in failed: {e}")))
    }

    /// Connects to a streamable HTTP server (or, with `legacy_sse`, an
    /// HTTP+SSE one), signing in when it answers 401 (for SSE: when its
    /// event stream does).
    pub async fn serve<H: ClientHandler + Clone>(
        &self,
        legacy_sse: bool,
        (url, headers): (&str, &[(String, String)]),
        handler: H,
        ct: CancellationToken,
    ) -> Result<RunningService<RoleClient, H>, McpError> {
        let (store, manager) = self.stored(url).await?;
        let failed = |e: rmcp::service::ClientInitializeError| McpError::Handshake(init_error(&e));
        if legacy_sse {
            let (client, headers) = http::client_and_headers(headers)?;
            let connected = sse::SseTransport::connect(
                client.clone(),
                url,
                headers.clone(),
                Bearer::new(manager),
            )
            .await;
            let transport = match connected {
                Err(McpError::SignIn(challenge)) => {
                    let manager = self.run(url, &challenge, store).await?;
                    sse::SseTransport::connect(client, url, headers, Bearer::new(manager)).await?
                }
                other => other?,
            };
            return handshake::handshake(handler, transport, ct)
                .await
                .map_err(failed);
        }
        let transport = http::streamable(url, headers, manager)?;
        let e = match handshake::handshake(handler.clone(), transport, ct.clone()).await {
            Ok(service) => return Ok(service),
            Err(e) => e,
        };
        let Some(challenge) = oauth_flow::challenge_of(&e) else {
            return Err(failed(e));
        };
        let manager = self.run(url, &challenge, store).await?;
        let transport = http::streamable(url, headers, manager)?;
        handshake::handshake(handler, transport, ct)
            .await
            .map_err(failed)
    }
}
