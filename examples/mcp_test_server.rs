//! A small MCP server for acp-coder's tests, built on rmcp's server side.
//! Test-only: it is an example so that `cargo test` builds it, and it is
//! never installed.
//!
//! ```text
//! mcp_test_server [--delay-ms N] [--exit N] [--pid-file P] [--log P]
//!                 [--many N] [--http 127.0.0.1:0 | --modern]
//! ```
//!
//! - stdio by default; `--http ADDR` serves streamable HTTP at `/mcp` and
//!   prints `listening http://ADDR/mcp` on stdout.
//! - `--delay-ms` sleeps before serving (start-up concurrency tests);
//!   `--exit N` writes to stderr and exits with status N at once.
//! - `--pid-file` records the pid; `--log` appends events (a slow call's
//!   start, cancellations).
//! - `--modern` speaks protocol 2026-07-28 by hand (no rmcp): it answers
//!   `initialize` with that version and sends tool-list changes only on a
//!   `subscriptions/listen` stream.
//!
//! Tools: echo (read-only), add (structured output), image, resources,
//! fail (isError), slow (sleeps `ms`, logs a cancellation), crash (exits
//! mid-call), toggle (adds/removes the tool `extra` and says so), env
//! (reads an environment variable), extra (only after toggle), noisy
//! (hostile notifications: progress for a token of nobody, 1 MB progress
//! messages and log lines, then its answer). `--pad BYTES` makes echo's
//! answers that much longer.
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct TestServer {
    extra: Arc<AtomicBool>,
    log: Option<PathBuf>,
    /// `--many N`: N more tools named `many_0`… (tool-count limit tests).
    many: usize,
    /// `--pad BYTES`: echo answers with this many more bytes (`x`s) after
    /// the text (over-long answer tests).
    pad: usize,
}

fn log_event(log: &Option<PathBuf>, line: &str) {
    if let Some(p) = log
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
    {
        let _ = writeln!(f, "{line}");
    }
}

fn tool(v: Value) -> Tool {
    serde_json::from_value(v).expect("tool definition")
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    serde_json::from_value(json!({"content": [{"type": "text", "text": text.into()}]})).unwrap()
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let obj = |props: Value, req: Value| json!({"type": "object", "properties": props, "required": req});
        let mut tools = vec![
            tool(
                json!({"name": "echo", "title": "Echo", "description": "Echoes the text back.",
                "inputSchema": obj(json!({"text": {"type": "string"}}), json!(["text"])),
                "annotations": {"readOnlyHint": true}}),
            ),
            tool(
                json!({"name": "noisy", "description": "Sends hostile notifications, then answers.", "inputSchema": obj(json!({}), json!([]))}),
            ),
            tool(json!({"name": "add", "description": "Adds two integers.",
                "inputSchema": obj(json!({"a": {"type": "integer"}, "b": {"type": "integer"}}), json!(["a", "b"])),
                "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}}})),
            tool(
                json!({"name": "image", "description": "Returns a tiny PNG.", "inputSchema": obj(json!({}), json!([]))}),
            ),
            tool(
                json!({"name": "resources", "description": "Returns an embedded resource and a resource link.", "inputSchema": obj(json!({}), json!([]))}),
            ),
            tool(
                json!({"name": "fail", "description": "Always fails.", "inputSchema": obj(json!({}), json!([]))}),
            ),
            tool(
                json!({"name": "slow", "description": "Sleeps ms milliseconds.",
                "inputSchema": obj(json!({"ms": {"type": "integer"}}), json!(["ms"]))}),
            ),
            tool(
                json!({"name": "crash", "description": "Exits the server mid-call.", "inputSchema": obj(json!({}), json!([]))}),
            ),
            tool(
                json!({"name": "toggle", "description": "Adds or removes the tool `extra`.", "inputSchema": obj(json!({}), json!([]))}),
            ),
            tool(
                json!({"name": "env", "description": "Reads an environment variable.",
                "inputSchema": obj(json!({"name": {"type": "string"}}), json!(["name"])),
                "annotations": {"readOnlyHint": true}}),
            ),
        ];
        for i in 0..self.many {
            tools.push(tool(json!({"name": format!("many_{i}"), "description": "Filler.", "inputSchema": obj(json!({}), json!([]))})));
        }
        if self.extra.load(Ordering::SeqCst) {
            tools.push(tool(json!({"name": "extra", "description": "Only there after toggle.", "inputSchema": obj(json!({}), json!([]))})));
        }
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("acp-coder-test-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(serde_json::from_value(json!({"tools": self.tools()})).unwrap())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let result = match request.name.as_ref() {
            "echo" => text_result(
                args["text"].as_str().unwrap_or_default().to_owned() + &"x".repeat(self.pad),
            ),
            "add" => {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                serde_json::from_value(json!({
                    "content": [{"type": "text", "text": format!("the sum is {sum}")}],
                    "structuredContent": {"sum": sum}
                }))
                .unwrap()
            }
            "image" => serde_json::from_value(json!({"content": [
                {"type": "image", "mimeType": "image/png",
                 "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="}
            ]}))
            .unwrap(),
            "resources" => serde_json::from_value(json!({"content": [
                {"type": "resource", "resource": {"uri": "test://notes.txt", "mimeType": "text/plain", "text": "embedded notes"}},
                {"type": "resource_link", "uri": "test://big.bin", "name": "big.bin", "mimeType": "application/octet-stream", "description": "a large file"}
            ]}))
            .unwrap(),
            "fail" => serde_json::from_value(json!({
                "content": [{"type": "text", "text": "it broke on purpose"}], "isError": true
            }))
            .unwrap(),
            "slow" => {
                let ms = args["ms"].as_u64().unwrap_or(1000);
                log_event(&self.log, "started slow");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => text_result(format!("slept {ms} ms")),
                    _ = context.ct.cancelled() => {
                        log_event(&self.log, "cancelled slow");
                        text_result("cancelled")
                    }
                }
            }
            "crash" => {
                eprintln!("test server: crashing on purpose");
                std::process::exit(7);
            }
            "toggle" => {
                let now = !self.extra.fetch_xor(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                text_result(format!("extra is now {}", if now { "on" } else { "off" }))
            }
            "noisy" => {
                let big = "x".repeat(1 << 20);
                let progress = |token: rmcp::model::ProgressToken, message: &str| {
                    let mut p = rmcp::model::ProgressNotificationParam::new(token, 1.0);
                    p.message = Some(message.to_owned());
                    p
                };
                let nobody = rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(
                    "belongs-to-nobody".into(),
                ));
                let _ = context.peer.notify_progress(progress(nobody, "ghost")).await;
                if let Some(token) = context.meta.get_progress_token() {
                    let _ = context.peer.notify_progress(progress(token, &big)).await;
                }
                #[allow(deprecated)]
                let log = rmcp::model::LoggingMessageNotificationParam::new(
                    rmcp::model::LoggingLevel::Error,
                    json!(big),
                );
                #[allow(deprecated)]
                let _ = context.peer.notify_logging_message(log).await;
                text_result("noisy done")
            }
            "env" => {
                let name = args["name"].as_str().unwrap_or_default();
                text_result(std::env::var(name).unwrap_or_else(|_| "<unset>".into()))
            }
            "extra" if self.extra.load(Ordering::SeqCst) => text_result("extra ran"),
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(CallToolResponse::Complete(result))
    }
}

#[derive(Default)]
struct Args {
    delay_ms: u64,
    exit: Option<i32>,
    pid_file: Option<PathBuf>,
    log: Option<PathBuf>,
    http: Option<String>,
    modern: bool,
    many: usize,
    pad: usize,
}

fn parse_args() -> Args {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().expect("flag value");
        match arg.as_str() {
            "--delay-ms" => a.delay_ms = val().parse().expect("ms"),
            "--exit" => a.exit = Some(val().parse().expect("status")),
            "--pid-file" => a.pid_file = Some(val().into()),
            "--log" => a.log = Some(val().into()),
            "--http" => a.http = Some(val()),
            "--modern" => a.modern = true,
            "--many" => a.many = val().parse().expect("count"),
            "--pad" => a.pad = val().parse().expect("bytes"),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    if let Some(p) = &args.pid_file {
        std::fs::write(p, std::process::id().to_string()).expect("pid file");
    }
    if let Some(code) = args.exit {
        eprintln!("test server: configuration missing, exiting with {code}");
        std::process::exit(code);
    }
    if args.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(args.delay_ms)).await;
    }
    let server = TestServer {
        extra: Arc::new(AtomicBool::new(false)),
        log: args.log.clone(),
        many: args.many,
        pad: args.pad,
    };
    if args.modern {
        modern::serve().await;
        return;
    }
    match &args.http {
        None => {
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .expect("stdio handshake");
            let _ = running.waiting().await;
        }
        Some(addr) => http::serve(server, addr).await,
    }
}

mod http {
    use super::TestServer;
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    pub async fn serve(server: TestServer, addr: &str) {
        let service: StreamableHttpService<TestServer, LocalSessionManager> =
            StreamableHttpService::new(
                move || Ok(server.clone()),
                Default::default(),
                StreamableHttpServerConfig::default(),
            );
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        println!("listening http://{}/mcp", listener.local_addr().unwrap());
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let svc = TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    }
}

/// Protocol 2026-07-28 by hand: list changes only on the listen stream.
mod modern {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    const SUB_KEY: &str = "io.modelcontextprotocol/subscriptionId";

    fn tools(second: bool) -> Value {
        let mut t = vec![
            json!({"name": "first", "description": "The first tool.", "inputSchema": {"type": "object"}}),
        ];
        if second {
            t.push(json!({"name": "second", "description": "Added by first.", "inputSchema": {"type": "object"}}));
        }
        json!(t)
    }

    pub async fn serve() {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        let mut out = tokio::io::stdout();
        let mut second = false;
        let mut subscription: Option<Value> = None;
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let id = msg.get("id").cloned();
            let method = msg["method"].as_str().unwrap_or_default();
            let mut send = Vec::new();
            let reply =
                |result: Value| json!({"jsonrpc": "2.0", "id": id.clone(), "result": result});
            match (method, &id) {
                ("initialize", Some(_)) => send.push(reply(json!({
                    "protocolVersion": "2026-07-28",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "modern-test-server", "version": "1.0.0"}
                }))),
                ("tools/list", Some(_)) => send.push(reply(json!({"tools": tools(second), "resultType": "complete"}))),
                ("subscriptions/listen", Some(id)) => {
                    subscription = Some(id.clone());
                    send.push(json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                        "params": {"notifications": {"toolsListChanged": true}, "_meta": {SUB_KEY: id}}}));
                }
                ("tools/call", Some(_)) => {
                    let name = msg["params"]["name"].as_str().unwrap_or_default();
                    if name == "first" {
                        second = true;
                    }
                    send.push(reply(json!({"content": [{"type": "text", "text": format!("{name} ran")}], "resultType": "complete"})));
                    if name == "first"
                        && let Some(sub) = &subscription
                    {
                        send.push(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                            "params": {"_meta": {SUB_KEY: sub}}}));
                    }
                }
                ("ping", Some(_)) => send.push(reply(json!({}))),
                (_, Some(_)) => send.push(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})),
                _ => {}
            }
            for m in send {
                let mut text = m.to_string();
                text.push('\n');
                if out.write_all(text.as_bytes()).await.is_err() {
                    return;
                }
                let _ = out.flush().await;
            }
        }
    }
}
