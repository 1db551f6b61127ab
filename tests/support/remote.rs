//! `acp-coder serve` under test (issue 46): the server process, and the fake
//! editor driving it over the network, HTTP + SSE or WebSocket, through a
//! bridge that turns its lines into the transport's messages and back (so
//! every frame is schema-checked as on stdio).
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;

use super::{FakeEditor, FakeModel, SpawnOptions, agent_command};

/// A running `acp-coder serve`.
pub struct Served {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    stderr: Arc<Mutex<String>>,
    pub home: tempfile::TempDir,
}

impl Served {
    /// `acp-coder serve --listen 127.0.0.1:0 --port-file … ARGS` with the
    /// fake model and `envs`; returns once it listens.
    pub async fn start(model: &FakeModel, args: &[&str], envs: &[(&str, &str)]) -> Served {
        let home = tempfile::tempdir().unwrap();
        let port_file = home.path().join("port");
        let mut all: Vec<String> = vec!["serve".into()];
        if !args.contains(&"--listen") {
            all.extend(["--listen".into(), "127.0.0.1:0".into()]);
        }
        all.extend(["--port-file".into(), port_file.to_str().unwrap().to_owned()]);
        all.extend(args.iter().map(|s| (*s).to_owned()));
        let mut env = model.agent_env();
        env.extend(envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let opts = SpawnOptions {
            args: all,
            envs: env,
            home: Some(home.path().to_owned()),
            cwd: None,
            program: None,
        };
        let mut child = agent_command(&opts, home.path())
            .spawn()
            .expect("spawn serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let addr = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Ok(text) = std::fs::read_to_string(&port_file)
                    && text.ends_with('\n')
                {
                    return text.trim().to_owned();
                }
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "serve exited ({status}) before listening:\n{}",
                        stderr.lock().unwrap()
                    );
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("serve listens within 30 s");
        Served {
            child,
            addr,
            stderr,
            home,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/acp", self.addr)
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The session store of the served agents.
    pub fn data_dir(&self) -> PathBuf {
        self.home.path().join(".local/share/acp-coder")
    }

    /// SIGTERM (Unix; Windows: killed), then waits for the exit.
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = i32::try_from(self.child.id().expect("serve runs")).unwrap();
        #[cfg(unix)]
        // SAFETY: signalling our own child process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        #[cfg(not(unix))]
        let _ = (pid, self.child.start_kill());
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("serve exits within 30 s of SIGTERM")
            .unwrap()
    }

    /// A fake editor on a new WebSocket connection.
    pub async fn websocket(&self, token: Option<&str>) -> FakeEditor {
        websocket_editor(&self.addr, token).await
    }

    /// A fake editor on HTTP + SSE (its `initialize` opens the connection).
    pub fn http(&self, token: Option<&str>) -> FakeEditor {
        http_editor(&self.url(), token)
    }
}

/// The fake editor over `ws://ADDR/acp`.
pub async fn websocket_editor(addr: &str, token: Option<&str>) -> FakeEditor {
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://{addr}/acp").into_client_request().unwrap();
    if let Some(t) = token {
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (socket, response) = tokio_tungstenite::client_async(request, tcp)
        .await
        .expect("WebSocket upgrade");
    assert!(
        response.headers().contains_key("acp-connection-id"),
        "{response:?}"
    );
    let (mut sink, mut source) = socket.split();
    let (editor_side, bridge_side) = tokio::io::duplex(1 << 20);
    let (er, ew) = tokio::io::split(editor_side);
    let (br, mut bw) = tokio::io::split(bridge_side);
    let editor = FakeEditor::connect(er, ew);
    tokio::spawn(async move {
        let mut lines = BufReader::new(br).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if sink.send(Message::text(line)).await.is_err() {
                return;
            }
        }
        let _ = sink.close().await;
    });
    tokio::spawn(async move {
        while let Some(Ok(message)) = source.next().await {
            if let Message::Text(t) = message
                && bw
                    .write_all(format!("{}\n", t.as_str()).as_bytes())
                    .await
                    .is_err()
            {
                return;
            }
        }
    });
    editor
}

/// What the HTTP bridge of one fake editor shares.
struct Bridge {
    url: String,
    token: Option<String>,
    client: reqwest::Client,
    connection: Mutex<Option<String>>,
    streams: Mutex<HashSet<String>>,
    out: tokio::sync::Mutex<tokio::io::WriteHalf<tokio::io::DuplexStream>>,
}

impl Bridge {
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut r = self.client.request(method, &self.url);
        if let Some(t) = &self.token {
            r = r.bearer_auth(t);
        }
        if let Some(c) = self.connection.lock().unwrap().as_ref() {
            r = r.header("acp-connection-id", c);
        }
        r
    }

    async fn to_editor(&self, line: &str) {
        let mut out = self.out.lock().await;
        let _ = out.write_all(format!("{line}\n").as_bytes()).await;
    }

    /// Opens the connection's stream (`None`) or a session's, once.
    fn open(self: &Arc<Self>, session: Option<&str>) -> futures::future::BoxFuture<'static, ()> {
        let bridge = self.clone();
        let session = session.map(str::to_owned);
        Box::pin(async move {
            let key = session.clone().unwrap_or_default();
            if !bridge.streams.lock().unwrap().insert(key) {
                return;
            }
            let mut req = bridge
                .request(reqwest::Method::GET)
                .header("accept", "text/event-stream");
            if let Some(s) = &session {
                req = req.header("acp-session-id", s);
            }
            let resp = req.send().await.expect("GET /acp");
            assert_eq!(resp.status().as_u16(), 200, "stream of {session:?}");
            tokio::spawn(async move {
                let mut events = sse_stream::SseStream::from_bytes_stream(resp.bytes_stream());
                while let Some(Ok(event)) = events.next().await {
                    let Some(data) = event.data else { continue };
                    // A new session: open its stream (frames wait for it meanwhile).
                    if let Ok(v) = serde_json::from_str::<Value>(&data)
                        && let Some(s) = v["result"]["sessionId"].as_str()
                    {
                        bridge.open(Some(s)).await;
                    }
                    bridge.to_editor(&data).await;
                }
            });
        })
    }
}

/// The fake editor over `POST /acp` and its SSE streams.
pub fn http_editor(url: &str, token: Option<&str>) -> FakeEditor {
    let (editor_side, bridge_side) = tokio::io::duplex(1 << 20);
    let (er, ew) = tokio::io::split(editor_side);
    let (br, bw) = tokio::io::split(bridge_side);
    let editor = FakeEditor::connect(er, ew);
    let bridge = Arc::new(Bridge {
        url: url.to_owned(),
        token: token.map(str::to_owned),
        client: {
            super::install_crypto_provider();
            reqwest::Client::new()
        },
        connection: Mutex::new(None),
        streams: Mutex::new(HashSet::new()),
        out: tokio::sync::Mutex::new(bw),
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(br).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let session = v["params"]["sessionId"].as_str();
            let first = bridge.connection.lock().unwrap().is_none();
            if !first && let Some(s) = session {
                bridge.open(Some(s)).await;
            }
            let mut req = bridge
                .request(reqwest::Method::POST)
                .header("content-type", "application/json")
                .body(line.clone());
            if let Some(s) = session {
                req = req.header("acp-session-id", s);
            }
            let resp = req.send().await.expect("POST /acp");
            let status = resp.status().as_u16();
            if first {
                let id = resp
                    .headers()
                    .get("acp-connection-id")
                    .map(|h| h.to_str().unwrap().to_owned());
                let body = resp.text().await.unwrap();
                *bridge.connection.lock().unwrap() = id;
                bridge.to_editor(&body).await;
                bridge.open(None).await;
            } else if status != 202 {
                // Refused: the editor sees an error answer.
                let body = resp.text().await.unwrap_or_default();
                if !v["id"].is_null() && v.get("method").is_some() {
                    let e = json!({"jsonrpc": "2.0", "id": v["id"], "error": {"code": -32000, "message": format!("HTTP {status}: {body}")}});
                    bridge.to_editor(&e.to_string()).await;
                }
            }
        }
        let _ = bridge.request(reqwest::Method::DELETE).send().await;
    });
    editor
}
