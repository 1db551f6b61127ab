//! HTTP plumbing shared by the streamable HTTP transport (MCP 2025-11-25
//! "Transports: Streamable HTTP", rmcp's client) and the legacy SSE one.
use std::collections::HashMap;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::McpError;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Headers the transports set themselves (rmcp refuses them as custom headers).
const RESERVED: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// The user's headers as a map, minus the reserved ones (logged).
fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, McpError> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        if RESERVED.iter().any(|r| k.eq_ignore_ascii_case(r)) {
            tracing::warn!(header = %k, "MCP server header ignored: the transport sets it itself");
            continue;
        }
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| McpError::Config(format!("header name {k:?} is not valid")))?;
        let mut value = HeaderValue::from_str(v)
            .map_err(|_| McpError::Config(format!("the value of header {k:?} is not valid")))?;
        value.set_sensitive(true);
        map.append(name, value);
    }
    Ok(map)
}

/// A client that follows only same-origin redirects, so the user's headers
/// (often credentials) never go to another host.
fn client() -> Result<reqwest::Client, McpError> {
    crate::net::client_builder()
        .map_err(|e| McpError::Config(format!("cannot set up TLS: {e}")))?
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let same = attempt.previous().first().is_some_and(|first| {
                first.scheme() == attempt.url().scheme()
                    && first.host_str() == attempt.url().host_str()
                    && first.port_or_known_default() == attempt.url().port_or_known_default()
            });
            if same && attempt.previous().len() < 10 {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(|e| McpError::Config(format!("cannot build an HTTP client: {e}")))
}

/// A client and the user's headers for the legacy SSE transport.
pub fn client_and_headers(
    headers: &[(String, String)],
) -> Result<(reqwest::Client, HeaderMap), McpError> {
    Ok((client()?, header_map(headers)?))
}

/// rmcp's streamable HTTP client transport for `url` with `headers`; its
/// requests carry the OAuth token `auth` holds, if any (see `oauth_flow`).
pub fn streamable(
    url: &str,
    headers: &[(String, String)],
    auth: rmcp::transport::auth::AuthorizationManager,
) -> Result<StreamableHttpClientTransport<rmcp::transport::AuthClient<reqwest::Client>>, McpError> {
    reqwest::Url::parse(url).map_err(|e| McpError::Config(format!("url {url:?}: {e}")))?;
    let custom: HashMap<HeaderName, HeaderValue> = header_map(headers)?
        .into_iter()
        .filter_map(|(k, v)| Some((k?, v)))
        .collect();
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(
        rmcp::transport::AuthClient::new(client()?, auth),
        config,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_headers_are_dropped() {
        let map = header_map(&[
            ("Accept".into(), "x".into()),
            ("Mcp-Session-Id".into(), "s".into()),
            ("Authorization".into(), "Bearer t".into()),
        ])
        .unwrap();
        assert_eq!(map.len(), 1);
        assert!(map["authorization"].is_sensitive());
        assert!(header_map(&[("bad name".into(), "v".into())]).is_err());
    }
}
