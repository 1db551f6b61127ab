//! HTTPS for every HTTP client the agent builds (the model endpoint, HTTP
//! MCP servers, MCP sign-in): one crypto provider (ring; reqwest is built
//! without one to keep the build small), and the platform's certificate
//! verifier built at the first handshake instead of with the client.
//!
//! rustls-platform-verifier reads and parses every system root certificate
//! when it is constructed, and reqwest constructs it in `Client::build`: perf
//! showed it as the largest part of the first `session/new` (PEM and base64
//! decoding of ~150 roots), and the parsed roots stay in memory. A loopback
//! or LAN endpoint over plain HTTP never needs them, and a remote one only
//! when it first connects. Verification itself is unchanged: the same
//! verifier, with the same provider, decides every certificate.
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, Error, SignatureScheme};

/// Installs the process-wide crypto provider, once. rmcp's OAuth client
/// builds its own reqwest client, which needs it installed.
pub fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder with [`client_config`]'s TLS and reqwest's
/// defaults otherwise (proxies from the environment with `NO_PROXY`,
/// redirects), for `http://` and `https://` alike.
pub fn client_builder() -> Result<reqwest::ClientBuilder, Error> {
    install_crypto();
    Ok(reqwest::Client::builder().tls_backend_preconfigured(client_config()?))
}

/// The rustls configuration reqwest would build (TLS 1.2 and 1.3, HTTP/1.1
/// by ALPN), with the platform verifier made lazy.
pub fn client_config() -> Result<rustls::ClientConfig, Error> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyVerifier {
            provider,
            inner: OnceLock::new(),
        }))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[derive(Debug)]
struct LazyVerifier {
    provider: Arc<CryptoProvider>,
    inner: OnceLock<Result<rustls_platform_verifier::Verifier, Error>>,
}

impl LazyVerifier {
    fn get(&self) -> Result<&rustls_platform_verifier::Verifier, Error> {
        self.inner
            .get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        self.get()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.get()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.get()?.verify_tls13_signature(message, cert, dss)
    }

    /// What the platform verifier answers (its provider's schemes), without
    /// loading the roots: this is asked for every ClientHello.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The accept loop of the agent's servers (`serve`, `a2a`): takes TCP
/// connections until SIGTERM or SIGINT, at most `limit` at once (a new one
/// past it is closed, and `what` names the server in the warning), each with
/// `TCP_NODELAY` (small JSON replies and SSE events go out at once, not
/// after a delayed ACK), and runs `serve` on each in a task of its own,
/// holding its place until `serve` returns. A failed accept is retried
/// after 50 ms.
pub async fn accept_until_terminated<F, Fut>(
    listener: tokio::net::TcpListener,
    limit: usize,
    what: &str,
    serve: F,
) where
    F: Fn(tokio::net::TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(limit));
    let shutdown = crate::rpc::terminated();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::warn!("{what}: too many connections; closing a new one");
            continue;
        };
        let connection = serve(stream);
        tokio::spawn(async move {
            connection.await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_loaded_on_first_use_only() {
        install_crypto();
        let provider = CryptoProvider::get_default().unwrap().clone();
        let lazy = LazyVerifier {
            provider: provider.clone(),
            inner: OnceLock::new(),
        };
        let schemes = lazy.supported_verify_schemes();
        assert!(lazy.inner.get().is_none(), "no roots for the ClientHello");
        // Same schemes as the platform verifier itself offers.
        if let Ok(real) = rustls_platform_verifier::Verifier::new(provider) {
            assert_eq!(schemes, real.supported_verify_schemes());
        }
        assert!(client_config().is_ok());
    }
}
