//! Signing in to an HTTP MCP server (MCP 2025-11-25 "Authorization"; issue
//! 18 item 8): the authorization-code flow with PKCE on rmcp's
//! `AuthorizationManager` (RFC 9728 protected resource metadata from the
//! 401's `WWW-Authenticate`, RFC 8414 server metadata, the `oauth2` crate's
//! PKCE and token requests). The client is chosen in MCP 2026-07-28's order
//! ([`choose_client`]): a pre-registered one, a Client ID Metadata
//! Document, RFC 7591 dynamic registration. The user
//! opens the link ([`Present`]); the browser comes back to a
//! one-shot listener of ours on 127.0.0.1 ([`Callback`]), which checks the
//! `state` and hands the code over for the token exchange.
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, OAuthClientConfig,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::oauth::TokenStore;
use super::told::Told;
use crate::config::McpOAuthClient;

/// How long the browser gets to come back (inside the 300 s an MCP server
/// has to start in all, see `manager::BACKGROUND_START_LIMIT`).
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(280);
/// The `client_name` of our dynamic registration.
const CLIENT_NAME: &str = "acp-coder";

/// Why signing in failed, in words for the user.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("cannot open the sign-in listener on 127.0.0.1: {0}")]
    Listen(std::io::Error),
    #[error(
        "nobody completed the sign-in within {} s; start a new session to get a new sign-in link",
        .0.as_secs()
    )]
    TimedOut(Duration),
    #[error("you declined the sign-in; start a new session to be asked again")]
    Declined,
    #[error("the authorization server refused the sign-in: {0}")]
    Denied(String),
    #[error(
        "its authorization server registers no clients on the fly; \
         give the client id it issued you (and its secret, if it has one) as \
         `client_id` / `client_secret` under `[mcp_servers.{server}.oauth]` in the config file, \
         or as `clientId` / `clientSecret` under `_meta` \"acp-coder\".oauth in the editor's \
         server entry{}",
        if *.metadata_documents {
            "; it also accepts a Client ID Metadata Document: the https URL of yours goes in \
             `client_metadata_url` / `clientMetadataUrl`"
        } else {
            ""
        }
    )]
    NoClient {
        server: String,
        /// The authorization server accepts Client ID Metadata Documents.
        metadata_documents: bool,
    },
    #[error("{0}")]
    Auth(#[from] AuthError),
}

/// Where the sign-in link goes (issue 18 item 8: "through a URL-mode
/// elicitation when the editor supports it, otherwise a message in the
/// chat"): an ACP `elicitation/create` in URL mode (ACP elicitation, the
/// editor advertised `elicitation.url`), else the session's MCP notices.
pub struct Present<'a> {
    pub editor: &'a crate::editor::Editor,
    /// The chat message (the session's MCP notices, shown at once during a
    /// turn, else at the start of the next); it also ends `session/new`'s
    /// wait for this server.
    pub notify: &'a (dyn Fn(Told) + Send + Sync),
    /// Ends `session/new`'s wait for this server (the user is asked instead).
    pub settle: &'a (dyn Fn() + Send + Sync),
    /// True once a prompt turn of the session began: only then does the
    /// editor know the session an elicitation names (`session/new` answered).
    pub turn_begun: tokio::sync::watch::Receiver<bool>,
}

impl Present<'_> {
    /// Shows `link` and waits for `back` (the browser's return). A declined
    /// or cancelled elicitation ends the sign-in; an editor that fails the
    /// elicitation gets the chat message instead. Either way the elicitation
    /// is completed (`elicitation/complete`) once the flow is over.
    async fn wait(
        &self,
        server: &str,
        link: &str,
        back: impl std::future::Future<Output = Outcome>,
    ) -> Outcome {
        // The endpoint, not the link: its `state` guards the callback.
        let endpoint = link.split('?').next().unwrap_or(link);
        let url_mode = self.editor.can_elicit_url();
        tracing::info!(server = %server, %endpoint, url_mode, "MCP server needs sign-in; link presented to the user");
        if !url_mode {
            (self.notify)(told(server, link));
            return back.await;
        }
        (self.settle)();
        let _ = self.turn_begun.clone().wait_for(|b| *b).await;
        let id = format!("elicit_{:016x}", fastrand::u64(..));
        let message = format!(
            "MCP server `{server}` needs you to sign in. Open the link in your browser; it returns to acp-coder on this computer and works for {} minutes.",
            SIGN_IN_WAIT.as_secs() / 60
        );
        let ask = self.editor.open_url_with_id(None, &id, &message, link);
        tokio::pin!(back);
        let outcome = tokio::select! {
            // The browser came back before the editor answered.
            outcome = &mut back => outcome,
            answer = ask => match answer {
                Ok(crate::editor::Answer::Accept(_)) => back.await,
                Ok(_) => return Err(OAuthError::Declined),
                Err(e) => {
                    tracing::warn!(server = %server, error = %e, "URL elicitation failed; the sign-in link goes to the chat");
                    (self.notify)(told(server, link));
                    back.await
                }
            },
        };
        self.editor.complete_elicitation(&id);
        outcome
    }
}

/// The chat message (or the notice) asking the user to open `link` to sign
/// in to `server`.
fn told(server: &str, link: &str) -> Told {
    let after = format!(
        "The browser then returns to acp-coder on this computer; the link works for {} minutes. \
         The server's tools are added once you are signed in.",
        SIGN_IN_WAIT.as_secs() / 60
    );
    Told::info(
        format!(
            "MCP server `{server}` needs you to sign in. Open this link in your browser:\n\n{link}\n\n{after}"
        ),
        format!("MCP server `{server}` needs you to sign in"),
        format!("Open this link in your browser:\n\n{link}\n\n{after}"),
    )
}

/// An rmcp authorization manager for `url` with its tokens in `store`:
/// a stored sign-in is used (and refreshed shortly before it expires);
/// without one, requests go out unauthenticated until the server asks.
/// `client` is the configured sign-in client: a stored sign-in of another
/// client id than the configured one is dropped (signing in again), and a
/// configured secret is used for the token requests (never stored).
pub async fn manager(
    url: &str,
    store: Arc<TokenStore>,
    client: &McpOAuthClient,
) -> Result<AuthorizationManager, OAuthError> {
    crate::net::install_crypto();
    let mut m = AuthorizationManager::new(url).await?;
    let stored = store.exists();
    m.set_credential_store(SharedStore(store.clone()));
    if stored {
        // Discovery runs again here (the stored client id needs the server's
        // token endpoint); a failure leaves the manager without tokens and
        // the server's 401 starts a new sign-in. Every endpoint it names is
        // checked before a refresh can use one (issue 42 item 7).
        let metadata = match m.resolve_metadata().await {
            Ok(found) => {
                check_endpoints(&found.metadata)?;
                m.set_metadata(found.metadata.clone());
                Some(found.metadata)
            }
            Err(e) => {
                tracing::warn!(url = %url, error = %e, "MCP OAuth metadata not found for the stored sign-in");
                None
            }
        };
        match m.initialize_from_store().await {
            Ok(true) => {
                let stored_id = m.get_credentials().await.ok().map(|(id, _)| id);
                let secret = match (&client.client_id, stored_id) {
                    (Some(configured), Some(stored)) if *configured != stored => {
                        tracing::info!(url = %url, "the configured OAuth client id changed: the stored sign-in is dropped");
                        store.remove().map_err(|e| {
                            OAuthError::Auth(AuthError::CredentialStoreError(e.to_string()))
                        })?;
                        let mut fresh = AuthorizationManager::new(url).await?;
                        fresh.set_credential_store(SharedStore(store));
                        return Ok(fresh);
                    }
                    (Some(_), Some(id)) => match (&client.client_secret, &metadata) {
                        (Some(secret), Some(metadata)) => {
                            secret_may_go(url, client, metadata)?;
                            Some((id, secret.clone()))
                        }
                        _ => None,
                    },
                    (None, Some(id)) => store.client_secret().map(|s| (id, s)),
                    (_, None) => None,
                };
                if let Some((client_id, secret)) = secret {
                    m.configure_client(
                        OAuthClientConfig::new(client_id, url).with_client_secret(secret),
                    )?;
                }
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(url = %url, error = %e, "stored MCP sign-in not usable"),
        }
    }
    Ok(m)
}

/// Which client acp-coder signs in as (MCP 2026-07-28 "Client
/// registration", in its order): the configured pre-registered client, else
/// the configured Client ID Metadata Document when the authorization server
/// supports them, else dynamic registration when it offers that. Otherwise
/// the error says what to configure.
async fn choose_client(
    m: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    client: &McpOAuthClient,
    (server, url, redirect, scopes): (&str, &str, &str, &[&str]),
    store: &TokenStore,
) -> Result<(), OAuthError> {
    let owned: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
    if let Some(id) = &client.client_id {
        tracing::info!(server = %server, "MCP sign-in with the pre-registered client id");
        let mut config = OAuthClientConfig::new(id, redirect).with_scopes(owned);
        if let Some(secret) = &client.client_secret {
            secret_may_go(url, client, metadata)?;
            config = config.with_client_secret(secret);
        }
        store.set_client_secret(None);
        m.configure_client(config)?;
        return Ok(());
    }
    let cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if let Some(url) = client.client_metadata_url.as_deref().filter(|_| cimd) {
        tracing::info!(server = %server, "MCP sign-in with the Client ID Metadata Document");
        store.set_client_secret(None);
        m.configure_client(OAuthClientConfig::new(url, redirect).with_scopes(owned))?;
        return Ok(());
    }
    if metadata.registration_endpoint.is_none() {
        return Err(OAuthError::NoClient {
            server: server.to_owned(),
            metadata_documents: cimd,
        });
    }
    tracing::info!(server = %server, "MCP sign-in with dynamic client registration");
    let config = m.register_client(CLIENT_NAME, redirect, scopes).await?;
    store.set_client_secret(config.client_secret.clone());
    Ok(())
}

/// Runs the sign-in for `server` at `url` after its 401 carrying
/// `challenge` (`WWW-Authenticate`): discovery, registration, the link, the
/// browser's return, the token exchange. The tokens end up in `store`.
pub async fn sign_in(
    (server, url, client): (&str, &str, &McpOAuthClient),
    challenge: &str,
    store: Arc<TokenStore>,
    present: &Present<'_>,
    wait: Duration,
) -> Result<AuthorizationManager, OAuthError> {
    crate::net::install_crypto();
    let mut m = AuthorizationManager::new(url).await?;
    m.set_credential_store(SharedStore(store.clone()));
    let found = m.resolve_metadata_from_challenge(Some(challenge)).await?;
    tracing::info!(server = %server, source = ?found.source, "MCP OAuth metadata found");
    let metadata = found.metadata.clone();
    m.set_metadata(found.metadata);
    let callback = Callback::bind().await?;
    let redirect = callback.redirect_uri();
    let link =
        authorization_link(&mut m, &metadata, client, (server, url, &redirect), &store).await?;
    let state = reqwest::Url::parse(&link)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| AuthError::InternalError("the sign-in link has no state".into()))?;
    let back = present
        .wait(server, &link, callback.wait(&state, wait))
        .await?;
    crate::secrets::learn([back.code.clone()]);
    m.exchange_code_for_token_with_issuer(&back.code, &state, back.issuer.as_deref())
        .await?;
    tracing::info!(server = %server, "MCP server sign-in complete");
    Ok(m)
}

/// Everything between the server metadata and the link: every endpoint
/// checked ([`check_endpoints`]) before any request (registration
/// included), the client chosen (a configured secret only for its issuer,
/// [`secret_may_go`]), the link made and checked.
async fn authorization_link(
    m: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    client: &McpOAuthClient,
    (server, url, redirect): (&str, &str, &str),
    store: &TokenStore,
) -> Result<String, OAuthError> {
    check_endpoints(metadata)?;
    let scopes = m.select_scopes(None, &[]);
    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    choose_client(
        m,
        metadata,
        client,
        (server, url, redirect, &scope_refs),
        store,
    )
    .await?;
    let link = m.get_authorization_url(&scope_refs).await?;
    check_link(&link)?;
    Ok(link)
}

/// Every endpoint of the server metadata is https or loopback (issue 42
/// item 7): the authorization endpoint (the link), and the token,
/// registration and revocation endpoints, which get codes, verifiers,
/// refresh tokens and client secrets. An outside review's server named a
/// plain `http://` token endpoint on another host, and a pre-registered
/// client's secret went there by HTTP Basic.
fn check_endpoints(metadata: &AuthorizationMetadata) -> Result<(), AuthError> {
    web_address("authorization endpoint", &metadata.authorization_endpoint)?;
    web_address("token endpoint", &metadata.token_endpoint)?;
    if let Some(registration) = &metadata.registration_endpoint {
        web_address("registration endpoint", registration)?;
    }
    if let Some(revocation) = metadata.additional_fields.get("revocation_endpoint") {
        match revocation.as_str() {
            Some(r) => web_address("revocation endpoint", r)?,
            None => {
                return Err(AuthError::OAuthError(
                    "the server's revocation endpoint is not a string; refusing to sign in".into(),
                ));
            }
        }
    }
    Ok(())
}

/// A configured client secret goes only to the authorization server it was
/// issued by (issue 42 item 7): the metadata's `issuer` must be the
/// configured `issuer`, or, without one, lie on the MCP server's own origin.
fn secret_may_go(
    url: &str,
    client: &McpOAuthClient,
    metadata: &AuthorizationMetadata,
) -> Result<(), OAuthError> {
    let named = metadata.issuer.as_deref().unwrap_or("");
    let same = match &client.issuer {
        Some(configured) => configured.trim_end_matches('/') == named.trim_end_matches('/'),
        None => match (reqwest::Url::parse(url), reqwest::Url::parse(named)) {
            (Ok(a), Ok(b)) => a.origin() == b.origin(),
            _ => false,
        },
    };
    if same {
        return Ok(());
    }
    let expected = match &client.issuer {
        Some(configured) => configured.clone(),
        None => reqwest::Url::parse(url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| url.to_owned()),
    };
    let named = if named.is_empty() { "no issuer" } else { named };
    Err(AuthError::OAuthError(format!(
        "the sign-in names the authorization server {named}, but the configured client secret \
         belongs to {expected}: it is not sent. If {named} did issue it, set `issuer` under \
         `[mcp_servers.NAME.oauth]` in the config file (or `issuer` beside `clientSecret` in the \
         editor's `_meta` \"acp-coder\".oauth)"
    ))
    .into())
}

/// A sign-in endpoint must be a web address: https, or http to this
/// machine. A hostile server's metadata must not make the chat show a
/// `javascript:` or `file:` link, nor send anything by plain HTTP to another
/// machine.
fn web_address(what: &str, address: &str) -> Result<(), AuthError> {
    let url = reqwest::Url::parse(address).map_err(|e| {
        AuthError::OAuthError(format!(
            "the server's {what} {address:?} is not an address ({e}); refusing to sign in"
        ))
    })?;
    let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        other => Err(AuthError::OAuthError(format!(
            "the server's {what} {}://{} is not an https address; refusing to use it",
            other,
            url.host_str().unwrap_or("")
        ))),
    }
}

/// The link the user is asked to open must be a web address
/// ([`web_address`]).
fn check_link(link: &str) -> Result<(), AuthError> {
    web_address("authorization endpoint", link)
}

/// The `WWW-Authenticate` challenge of a handshake that failed with 401.
pub fn challenge_of(e: &rmcp::service::ClientInitializeError) -> Option<String> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let rmcp::service::ClientInitializeError::TransportError { error, .. } = e else {
        return None;
    };
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()?
    {
        StreamableHttpError::AuthRequired(a) => Some(a.www_authenticate_header.clone()),
        _ => None,
    }
}

/// The `Authorization` header of the legacy SSE transport's requests (rmcp's
/// `AuthClient` covers only streamable HTTP): the stored token, refreshed
/// shortly before it expires; none before the server asked for one.
#[derive(Clone)]
pub struct Bearer(Arc<tokio::sync::Mutex<AuthorizationManager>>);

impl Bearer {
    pub fn new(manager: AuthorizationManager) -> Bearer {
        Bearer(Arc::new(tokio::sync::Mutex::new(manager)))
    }

    pub async fn header(&self) -> Option<String> {
        match self.0.lock().await.get_access_token().await {
            Ok(token) => Some(format!("Bearer {token}")),
            Err(AuthError::AuthorizationRequired) => None,
            Err(e) => {
                tracing::warn!(error = %e, "MCP OAuth token not available; sending without");
                None
            }
        }
    }
}

/// [`TokenStore`] shared between the manager and the caller.
struct SharedStore(Arc<TokenStore>);

#[async_trait::async_trait]
impl rmcp::transport::auth::CredentialStore for SharedStore {
    async fn load(&self) -> Result<Option<rmcp::transport::auth::StoredCredentials>, AuthError> {
        self.0.load().await
    }
    async fn save(&self, c: rmcp::transport::auth::StoredCredentials) -> Result<(), AuthError> {
        self.0.save(c).await
    }
    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }
}

/// What the browser brought back.
#[derive(Debug)]
pub struct Returned {
    pub code: String,
    pub issuer: Option<String>,
}

/// The one-shot redirect listener: 127.0.0.1, an ephemeral port, path
/// `/callback`. Requests elsewhere get 404; a wrong or missing `state` gets
/// 400 and is otherwise ignored (someone else's request must not end the
/// sign-in); the first request with the right `state` ends it.
pub struct Callback {
    listener: TcpListener,
    port: u16,
}

type Outcome = Result<Returned, OAuthError>;

impl Callback {
    pub async fn bind() -> Result<Callback, OAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(OAuthError::Listen)?;
        let port = listener.local_addr().map_err(OAuthError::Listen)?.port();
        Ok(Callback { listener, port })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits at most `wait` for the browser to come back with `state`.
    pub async fn wait(self, state: &str, wait: Duration) -> Outcome {
        let (tx, mut rx) = mpsc::channel::<Outcome>(1);
        let mut connections = tokio::task::JoinSet::new();
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => return Err(OAuthError::TimedOut(wait)),
                Some(outcome) = rx.recv() => return outcome,
                accepted = self.listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let tx = tx.clone();
                    let state = state.to_owned();
                    connections.spawn(async move {
                        let service = service_fn(move |req| {
                            let (status, page, outcome) = answer(&req, &state);
                            let tx = tx.clone();
                            async move {
                                if let Some(o) = outcome {
                                    let _ = tx.try_send(o);
                                }
                                let mut resp = Response::new(page);
                                *resp.status_mut() = status;
                                resp.headers_mut().insert(
                                    hyper::header::CONTENT_TYPE,
                                    hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
                                );
                                Ok::<_, std::convert::Infallible>(resp)
                            }
                        });
                        let conn = hyper::server::conn::http1::Builder::new()
                            .keep_alive(false)
                            .serve_connection(TokioIo::new(stream), service);
                        let _ = tokio::time::timeout(Duration::from_secs(10), conn).await;
                    });
                }
            }
        }
    }
}

/// The listener's answer to one request: status, page, and the outcome
/// when the request ends the sign-in.
fn answer<B>(req: &Request<B>, state: &str) -> (StatusCode, String, Option<Outcome>) {
    if req.method() != hyper::Method::GET || req.uri().path() != "/callback" {
        return (StatusCode::NOT_FOUND, "Not found.".into(), None);
    }
    let query = req.uri().query().unwrap_or("");
    let pairs: Vec<(String, String)> = reqwest::Url::parse(&format!("http://x/?{query}"))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default();
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if get("state").as_deref() != Some(state) {
        tracing::warn!("MCP sign-in callback with a wrong or missing state ignored");
        return (
            StatusCode::BAD_REQUEST,
            "This is not the sign-in acp-coder started (the state does not match).".into(),
            None,
        );
    }
    if let Some(error) = get("error") {
        let why = match get("error_description") {
            Some(d) => format!("{error}: {d}"),
            None => error,
        };
        let page = format!("Sign-in failed: {why}. You can close this tab.");
        return (
            StatusCode::BAD_REQUEST,
            page,
            Some(Err(OAuthError::Denied(why))),
        );
    }
    match get("code") {
        Some(code) => (
            StatusCode::OK,
            "Signed in. You can close this tab and return to your editor.".into(),
            Some(Ok(Returned {
                code,
                issuer: get("iss"),
            })),
        ),
        None => (
            StatusCode::BAD_REQUEST,
            "The sign-in came back without a code.".into(),
            Some(Err(OAuthError::Denied(
                "the redirect carried no authorization code".into(),
            ))),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(url: &str) -> (u16, String) {
        crate::net::install_crypto();
        let resp = reqwest::get(url).await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    #[tokio::test]
    async fn the_right_state_ends_the_wait_and_others_are_ignored() {
        let cb = Callback::bind().await.unwrap();
        let base = cb.redirect_uri();
        assert!(base.starts_with("http://127.0.0.1:"));
        let waiting = tokio::spawn(cb.wait("s3cret-state", Duration::from_secs(30)));
        let port_base = base.trim_end_matches("/callback").to_owned();
        assert_eq!(get(&format!("{port_base}/other")).await.0, 404);
        assert_eq!(get(&format!("{base}?code=evil&state=guess")).await.0, 400);
        assert_eq!(get(&format!("{base}?code=evil")).await.0, 400);
        let (status, page) = get(&format!(
            "{base}?code=c0de&state=s3cret-state&iss=https%3A%2F%2Fas"
        ))
        .await;
        assert_eq!(status, 200, "{page}");
        let back = waiting.await.unwrap().unwrap();
        assert_eq!(back.code, "c0de");
        assert_eq!(back.issuer.as_deref(), Some("https://as"));
        // One-shot: the listener is gone.
        assert!(reqwest::get(&base).await.is_err());
    }

    #[tokio::test]
    async fn a_refusal_is_reported() {
        let cb = Callback::bind().await.unwrap();
        let base = cb.redirect_uri();
        let waiting = tokio::spawn(cb.wait("st", Duration::from_secs(30)));
        let (status, _) = get(&format!(
            "{base}?state=st&error=access_denied&error_description=no"
        ))
        .await;
        assert_eq!(status, 400);
        let err = waiting.await.unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "the authorization server refused the sign-in: access_denied: no"
        );
    }

    #[test]
    fn only_web_links_are_shown() {
        assert!(check_link("https://as.example/authorize?x=1").is_ok());
        assert!(check_link("http://127.0.0.1:8/authorize").is_ok());
        assert!(check_link("http://as.example/authorize").is_err());
        assert!(check_link("javascript:alert(1)").is_err());
        assert!(check_link("file:///etc/passwd").is_err());
    }

    fn metadata(issuer: &str, token: &str) -> AuthorizationMetadata {
        let mut m = AuthorizationMetadata::default();
        m.issuer = Some(issuer.to_owned());
        m.authorization_endpoint = format!("{issuer}/authorize");
        m.token_endpoint = token.to_owned();
        m.response_types_supported = Some(vec!["code".into()]);
        m.code_challenge_methods_supported = Some(vec!["S256".into()]);
        m
    }

    /// The sign-in up to the link, for a pre-registered client with a
    /// secret; no request leaves the machine (the client is configured, the
    /// link is only made).
    async fn link_for(
        meta: AuthorizationMetadata,
        issuer: Option<&str>,
    ) -> Result<String, OAuthError> {
        crate::net::install_crypto();
        let url = "https://mcp.example/mcp";
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::for_server(dir.path(), url);
        let client = McpOAuthClient {
            client_id: Some("pre-registered".into()),
            client_secret: Some("s3cret-of-the-client".into()),
            client_metadata_url: None,
            issuer: issuer.map(str::to_owned),
        };
        let mut m = AuthorizationManager::new(url).await?;
        m.set_metadata(meta.clone());
        authorization_link(
            &mut m,
            &meta,
            &client,
            ("srv", url, "http://127.0.0.1:9/callback"),
            &store,
        )
        .await
    }

    /// Issue 42 item 7, an outside review's attack: the metadata named a
    /// plain-HTTP token endpoint on another host, and a pre-registered
    /// client's secret went there with the code and the verifier. Every
    /// endpoint is now checked before the link is made (so before any
    /// request), and a configured secret goes only to its own issuer.
    #[tokio::test]
    async fn sign_in_endpoints_are_https_and_a_secret_goes_only_to_its_issuer() {
        let err = link_for(
            metadata("https://mcp.example", "http://example.invalid/token"),
            None,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("token endpoint http://example.invalid is not an https address"),
            "{err}"
        );
        let mut meta = metadata("https://mcp.example", "https://mcp.example/token");
        meta.registration_endpoint = Some("http://example.invalid/register".into());
        let err = link_for(meta, None).await.unwrap_err().to_string();
        assert!(err.contains("registration endpoint http://"), "{err}");
        let mut meta = metadata("https://mcp.example", "https://mcp.example/token");
        meta.additional_fields.insert(
            "revocation_endpoint".into(),
            serde_json::json!("http://example.invalid/revoke"),
        );
        let err = link_for(meta, None).await.unwrap_err().to_string();
        assert!(err.contains("revocation endpoint http://"), "{err}");
        // Another issuer, over https: the secret is not for it.
        let err = link_for(
            metadata("https://as.other.example", "https://as.other.example/token"),
            None,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("belongs to https://mcp.example: it is not sent")
                && err.contains("set `issuer`"),
            "{err}"
        );
        let err = link_for(
            metadata("https://as.other.example", "https://as.other.example/token"),
            Some("https://as.example"),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("belongs to https://as.example"), "{err}");
        // Its own issuer: the MCP server's origin, or the configured one.
        let link = link_for(
            metadata("https://mcp.example", "https://mcp.example/token"),
            None,
        )
        .await
        .unwrap();
        assert!(link.starts_with("https://mcp.example/authorize?"), "{link}");
        let link = link_for(
            metadata("https://as.example", "https://as.example/token"),
            Some("https://as.example/"),
        )
        .await
        .unwrap();
        assert!(link.starts_with("https://as.example/authorize?"), "{link}");
    }

    #[tokio::test]
    async fn nobody_coming_back_times_out_clearly() {
        let cb = Callback::bind().await.unwrap();
        let err = cb.wait("st", Duration::from_millis(50)).await.unwrap_err();
        assert!(matches!(err, OAuthError::TimedOut(_)));
        assert!(err.to_string().contains("start a new session"), "{err}");
    }
}
