//! `acp-coder serve` (issue 46 item 3) with the official Rust SDK's remote
//! client: `agent-client-protocol-http`'s `HttpClient` (its `client`
//! feature), over HTTP + SSE and over WebSocket. The client is its own small
//! package, tests/acp_rs (never a dependency of acp-coder: its `client`
//! feature turns on reqwest's aws-lc-rs TLS, and dev-dependency features
//! would unify into the binary under test); scripts/test.sh builds it and
//! sets `ACP_CODER_ACP_RS_CLIENT`. Same scenario and checks as the Python
//! SDK's (serve.rs).
use std::time::Duration;

use serde_json::Value;

use super::serve::{check_sdk_scenario, script_write};
use crate::support::remote::Served;
use crate::support::{FakeModel, Reply, Workspace};

/// The built tests/acp_rs client (`ACP_CODER_ACP_RS_CLIENT`); the tests
/// that need it are `#[ignore]`d in a plain `cargo test`, and fail saying
/// how to build it when run without it.
fn acp_rs_client() -> String {
    let var = "ACP_CODER_ACP_RS_CLIENT";
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set; build the client with `cargo build --locked --manifest-path tests/acp_rs/Cargo.toml --target-dir DIR` and set {var}=DIR/debug/acp-rs-client (scripts/test.sh does)"
        ),
    }
}

/// tests/acp_rs against `serve`; `scheme` is `http` (HTTP + SSE) or `ws`.
async fn rust_sdk_scenario(scheme: &str) {
    let client = acp_rs_client();
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = Served::start(&model, &[], &[]).await;
    script_write(&model, "a.txt", "written");
    model.push(Reply::text("slow slow slow slow slow slow").hang_after(2));
    let url = s.url().replacen("http://", &format!("{scheme}://"), 1);
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(client)
            .arg(&url)
            .arg(ws.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the SDK client finishes within 120 s")
    .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "acp-rs-client {url} failed\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.stderr()
    );
    let r: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    check_sdk_scenario(&r, &ws);
}

#[tokio::test]
#[ignore = "needs ACP_CODER_ACP_RS_CLIENT (scripts/test.sh builds tests/acp_rs)"]
async fn serve_rust_sdk_over_http_sse() {
    rust_sdk_scenario("http").await;
}

#[tokio::test]
#[ignore = "needs ACP_CODER_ACP_RS_CLIENT (scripts/test.sh builds tests/acp_rs)"]
async fn serve_rust_sdk_over_websocket() {
    rust_sdk_scenario("ws").await;
}
