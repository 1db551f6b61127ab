//! OAuth for HTTP MCP servers (MCP 2025-11-25 "Authorization"; issue 18
//! item 8): where tokens live and what `/mcp` says about them.
//!
//! A streamable-HTTP or legacy-SSE server that answers 401 with OAuth
//! metadata gets the authorization-code flow with PKCE ([`super::oauth_flow`],
//! on rmcp's `auth` module and the `oauth2` crate underneath). The tokens it
//! yields are kept here: one file per server URL under
//! `<data dir>/mcp-oauth/`, mode 0600 in a 0700 directory, written atomically,
//! read again on every request so a refresh (rmcp refreshes a token shortly
//! before it expires) or a sign-out is seen at once. Every token read or
//! written is taught to the secrets redactor (DESIGN §4 "Secrets"), so none
//! reaches the log, the editor or a session file.
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The folder of the token files under the data directory.
const DIR: &str = "mcp-oauth";

/// What one token file holds: the server it belongs to (for the reader),
/// the client secret a registration may have issued (rmcp keeps only the
/// client id), and rmcp's credentials (client id, tokens, scopes, issuer).
#[derive(Serialize, Deserialize)]
struct TokenFile {
    server_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    credentials: StoredCredentials,
}

/// The stored sign-in of one server URL (rmcp's [`CredentialStore`]).
#[derive(Debug)]
pub struct TokenStore {
    path: PathBuf,
    url: String,
    /// The client secret of a registration that issued one; written with
    /// the tokens.
    client_secret: Mutex<Option<String>>,
}

impl TokenStore {
    /// The store of `url` under `data_dir`: `mcp-oauth/<host>-<hash>.json`,
    /// the hash (SHA-256 of the whole URL) keeping two paths on one host apart.
    pub fn for_server(data_dir: &Path, url: &str) -> TokenStore {
        let digest = Sha256::digest(url.as_bytes());
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let host: String = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| format!("{h}_{}", u.port_or_known_default().unwrap_or(0)))
            })
            .unwrap_or_else(|| "server".into())
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        TokenStore {
            path: data_dir.join(DIR).join(format!("{host}-{hash}.json")),
            url: url.to_owned(),
            client_secret: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A sign-in is stored for this URL.
    pub fn exists(&self) -> bool {
        self.path.is_file()
    }

    /// Keeps the client secret a registration issued (written with the tokens).
    pub fn set_client_secret(&self, secret: Option<String>) {
        if let Some(s) = &secret {
            crate::secrets::learn([s.clone()]);
        }
        *self.client_secret.lock().unwrap_or_else(|e| e.into_inner()) = secret;
    }

    /// The stored client secret, if the registration issued one.
    pub fn client_secret(&self) -> Option<String> {
        self.client_secret
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Deletes the stored sign-in; false when there was none.
    pub fn remove(&self) -> std::io::Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {
                tracing::info!(url = %self.url, "MCP OAuth sign-in deleted");
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn read(&self) -> Result<Option<TokenFile>, AuthError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error(&self.path, "read", e)),
        };
        match serde_json::from_str::<TokenFile>(&text) {
            Ok(file) => {
                learn(&file);
                Ok(Some(file))
            }
            Err(e) => {
                // A damaged file means signing in again, not a dead server.
                tracing::warn!(path = %self.path.display(), error = %e, "unreadable MCP OAuth token file; signing in again");
                Ok(None)
            }
        }
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let file = TokenFile {
            server_url: self.url.clone(),
            client_secret: self.client_secret(),
            credentials,
        };
        learn(&file);
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        write_private(&self.path, text.as_bytes())
            .map_err(|e| store_error(&self.path, "write", e))?;
        tracing::info!(url = %self.url, path = %self.path.display(), "MCP OAuth tokens stored");
        Ok(())
    }
}

fn store_error(path: &Path, what: &str, e: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(format!("cannot {what} {}: {e}", path.display()))
}

/// Teaches the redactor every secret of a token file.
fn learn(file: &TokenFile) {
    let mut values: Vec<String> = file.client_secret.iter().cloned().collect();
    if let Some(tokens) = &file.credentials.token_response
        && let Ok(serde_json::Value::Object(map)) = serde_json::to_value(tokens)
    {
        for key in ["access_token", "refresh_token", "id_token"] {
            if let Some(serde_json::Value::String(v)) = map.get(key) {
                values.push(v.clone());
            }
        }
    }
    crate::secrets::learn(values);
}

/// Writes `bytes` to `path` atomically, readable by the owner only: a new
/// file created 0600 next to it, then renamed over it; the folder is 0700.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .owner_only()
        .create(dir)?;
    // A folder made earlier (or by someone else) with wider rights is narrowed.
    crate::platform::fs::restrict_dir(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.{:08x}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("token"),
        std::process::id(),
        fastrand::u32(..)
    ));
    replace_private(&tmp, path, bytes)
}

/// Writes `bytes` to the new file `tmp` (created 0600, never following a
/// link: `create_new`) and renames it over `path`; `tmp` is removed on
/// failure. Shared with `login.rs` (the config file holding API keys).
pub(crate) fn replace_private(tmp: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    use std::io::Write;
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .owner_only()
            .open(tmp)?;
        crate::platform::fs::restrict_file(&f)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    result
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(file) = self.read()? else {
            return Ok(None);
        };
        if file.client_secret.is_some() {
            *self.client_secret.lock().unwrap_or_else(|e| e.into_inner()) = file.client_secret;
        }
        Ok(Some(file.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove()
            .map(|_| ())
            .map_err(|e| store_error(&self.path, "delete", e))
    }
}

/// Whether a server asked for OAuth (set when it answered 401 with a
/// challenge), for `/mcp`.
#[derive(Debug, Default)]
pub struct AuthStatus {
    required: AtomicBool,
}

impl AuthStatus {
    pub fn set_required(&self) {
        self.required.store(true, Ordering::Relaxed);
    }

    /// `/mcp`'s words for the sign-in of `server` at `url`.
    pub fn describe(&self, server: &str, store: &TokenStore) -> String {
        if store.exists() {
            format!("signed in (OAuth; `/mcp logout {server}` signs out)")
        } else if self.required.load(Ordering::Relaxed) {
            "needs sign-in (OAuth; start a new session to get a sign-in link)".into()
        } else {
            "no sign-in required".into()
        }
    }
}

/// The URL of an HTTP or SSE server (the key of its stored sign-in).
pub fn server_url(spec: &crate::config::McpServerSpec) -> Option<&str> {
    use crate::config::McpTransportSpec;
    match &spec.transport {
        McpTransportSpec::Http { url, .. } | McpTransportSpec::Sse { url, .. } => Some(url),
        McpTransportSpec::Stdio { .. } | McpTransportSpec::Acp { .. } => None,
    }
}

/// `/mcp logout <server>`: deletes the stored sign-in of `server` (whose URL
/// is `url`, `None` for a stdio server) and says what happened.
pub fn sign_out(server: &str, url: Option<&str>, data_dir: &Path, status: &AuthStatus) -> String {
    let Some(url) = url else {
        return format!(
            "MCP server `{server}` is not an HTTP server (stdio or in the editor) and has no sign-in."
        );
    };
    match TokenStore::for_server(data_dir, url).remove() {
        Ok(true) => {
            status.set_required();
            format!(
                "Signed out of MCP server `{server}`: its stored token was deleted. Its calls fail until you sign in again (a new session shows a sign-in link)."
            )
        }
        Ok(false) => format!("MCP server `{server}` has no stored sign-in."),
        Err(e) => format!("Could not delete the sign-in of MCP server `{server}`: {e}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(access: &str) -> StoredCredentials {
        let tokens = serde_json::from_value(serde_json::json!({
            "access_token": access,
            "token_type": "bearer",
            "expires_in": 3600,
            "refresh_token": format!("refresh-{access}"),
        }))
        .unwrap();
        StoredCredentials::new("client-1".into(), Some(tokens), vec![], Some(1))
    }

    #[tokio::test]
    async fn tokens_are_stored_0600_one_file_per_url_and_redacted() {
        let mode =
            |p: &Path| crate::platform::fs::mode(&std::fs::metadata(p).unwrap()).map(|m| m & 0o777);
        let dir = tempfile::tempdir().unwrap();
        let a = TokenStore::for_server(dir.path(), "http://127.0.0.1:9/mcp");
        let b = TokenStore::for_server(dir.path(), "http://127.0.0.1:9/other");
        assert_ne!(a.path(), b.path());
        assert!(a.load().await.unwrap().is_none());
        a.save(credentials("tok-aaaaaaaaaaaaaaaa")).await.unwrap();
        if let (Some(file), Some(dir)) = (mode(a.path()), mode(a.path().parent().unwrap())) {
            assert_eq!((file, dir), (0o600, 0o700));
        }
        assert!(!b.exists());
        let loaded = a.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client-1");
        let shown =
            crate::secrets::redact("Bearer tok-aaaaaaaaaaaaaaaa and refresh-tok-aaaaaaaaaaaaaaaa");
        assert!(!shown.contains("tok-aaaaaaaaaaaaaaaa"), "{shown}");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(a.path().parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        a.clear().await.unwrap();
        assert!(!a.exists());
        assert!(a.load().await.unwrap().is_none());
    }

    /// Modes are Unix's; the link itself is made on every system.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_planted_symlink_is_replaced_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let a = TokenStore::for_server(dir.path(), "http://127.0.0.1:9/mcp");
        std::fs::create_dir_all(a.path().parent().unwrap()).unwrap();
        std::fs::set_permissions(
            a.path().parent().unwrap(),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        crate::platform::fs::symlink(&victim, a.path()).unwrap();
        a.save(credentials("tok-bbbbbbbbbbbbbbbb")).await.unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let meta = std::fs::symlink_metadata(a.path()).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dir_mode = std::fs::metadata(a.path().parent().unwrap()).unwrap();
        assert_eq!(dir_mode.permissions().mode() & 0o777, 0o700);
    }

    #[tokio::test]
    async fn a_damaged_file_means_signing_in_again() {
        let dir = tempfile::tempdir().unwrap();
        let a = TokenStore::for_server(dir.path(), "https://example.com/mcp");
        write_private(a.path(), b"{not json").unwrap();
        assert!(a.load().await.unwrap().is_none());
    }

    #[test]
    fn sign_out_says_what_happened() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:9/mcp";
        let status = AuthStatus::default();
        assert!(sign_out("s", None, dir.path(), &status).contains("no sign-in"));
        assert!(sign_out("s", Some(url), dir.path(), &status).contains("no stored sign-in"));
        let store = TokenStore::for_server(dir.path(), url);
        assert_eq!(status.describe("s", &store), "no sign-in required");
        write_private(store.path(), b"{}").unwrap();
        assert!(status.describe("s", &store).starts_with("signed in"));
        assert!(sign_out("s", Some(url), dir.path(), &status).starts_with("Signed out"));
        assert!(status.describe("s", &store).starts_with("needs sign-in"));
    }
}
