//! What the editor sends: requests, notifications, raw lines, and typed
//! shortcuts for the ACP methods.
use super::*;

impl FakeEditor {
    // --------------------------------------------------------------- sending

    pub(super) fn next_numeric_id(&self) -> RpcId {
        RpcId::Num(self.shared.next_id.fetch_add(1, Ordering::SeqCst))
    }

    /// Sends a request with the next numeric id; returns a handle to await.
    /// The message is checked against the schema first (a malformed request
    /// is a bug in the test: use [`Self::send_request_unchecked`] on purpose).
    pub async fn send_request(&self, method: &str, params: Value) -> PendingRequest {
        let id = self.next_numeric_id();
        self.send_request_inner(id, method, params, true).await
    }

    /// Like [`Self::send_request`] with an explicit id (number or string).
    pub async fn send_request_with_id(
        &self,
        id: impl Into<RpcId>,
        method: &str,
        params: Value,
    ) -> PendingRequest {
        self.send_request_inner(id.into(), method, params, true)
            .await
    }

    /// Sends a request without schema-checking it (for invalid-params tests).
    pub async fn send_request_unchecked(&self, method: &str, params: Value) -> PendingRequest {
        let id = self.next_numeric_id();
        self.send_request_inner(id, method, params, false).await
    }

    pub(super) async fn send_request_inner(
        &self,
        id: RpcId,
        method: &str,
        params: Value,
        check: bool,
    ) -> PendingRequest {
        let msg = json!({"jsonrpc": "2.0", "id": id.to_json(), "method": method, "params": params});
        let line = msg.to_string();
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.shared.lock();
            if check && let Err(e) = schema::check_client_message(&msg, &st.agent_requests) {
                drop(st);
                self.shared
                    .fail(&format!("the test tried to send an invalid request: {e}"));
            }
            if st.pending.contains_key(&id) {
                drop(st);
                self.shared
                    .fail(&format!("request id {id} is already pending"));
            }
            match method {
                "initialize" => {
                    let caps = &params["clientCapabilities"];
                    st.caps = Caps {
                        read: caps["fs"]["readTextFile"] == true,
                        write: caps["fs"]["writeTextFile"] == true,
                        terminal: caps["terminal"] == true,
                        elicit_form: !caps["elicitation"]["form"].is_null(),
                        elicit_url: !caps["elicitation"]["url"].is_null(),
                    };
                }
                // Replayed history arrives before the response.
                "session/load" | "session/resume" => {
                    if let Some(sid) = params["sessionId"].as_str() {
                        st.known_sessions.insert(sid.to_owned());
                        if let Some(cwd) = params["cwd"].as_str() {
                            st.session_cwds.insert(sid.to_owned(), PathBuf::from(cwd));
                        }
                    }
                }
                _ => {}
            }
            st.pending.insert(id.clone(), tx);
            st.editor_requests.insert(id.clone(), method.to_owned());
            st.editor_request_params.insert(id.clone(), params);
            st.transcript.push((Dir::Out, line.clone()));
        }
        if let Err(e) = self.shared.write_line(&line).await {
            self.shared
                .fail(&format!("could not send {method} to the agent: {e}"));
        }
        PendingRequest {
            id,
            method: method.to_owned(),
            rx,
            shared: self.shared.clone(),
        }
    }

    /// Sends a request and waits for its response.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.send_request(method, params).await.response().await
    }

    /// Sends a request with a given id and waits for its response.
    pub async fn request_with_id(
        &self,
        id: impl Into<RpcId>,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        self.send_request_with_id(id, method, params)
            .await
            .response()
            .await
    }

    /// Sends a request without schema-checking it and waits for the response.
    pub async fn request_unchecked(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.send_request_unchecked(method, params)
            .await
            .response()
            .await
    }

    /// Sends a notification (schema-checked).
    pub async fn notify(&self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let line = msg.to_string();
        {
            let mut st = self.shared.lock();
            if let Err(e) = schema::check_client_message(&msg, &st.agent_requests) {
                drop(st);
                self.shared.fail(&format!(
                    "the test tried to send an invalid notification: {e}"
                ));
            }
            st.transcript.push((Dir::Out, line.clone()));
        }
        if let Err(e) = self.shared.write_line(&line).await {
            self.shared
                .fail(&format!("could not send {method} to the agent: {e}"));
        }
    }

    /// Writes `line` as it is, registered as request `id` of `method` so its
    /// answer is awaited like any other: for malformed requests (no
    /// `jsonrpc`, positional params) that still get an answer.
    pub async fn send_raw_request(&self, id: RpcId, method: &str, line: &str) -> PendingRequest {
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.shared.lock();
            st.pending.insert(id.clone(), tx);
            st.editor_requests.insert(id.clone(), method.to_owned());
            st.editor_request_params.insert(id.clone(), Value::Null);
            st.transcript.push((Dir::Out, line.to_owned()));
        }
        if let Err(e) = self.shared.write_line(line).await {
            self.shared
                .fail(&format!("could not send {method} to the agent: {e}"));
        }
        PendingRequest {
            id,
            method: method.to_owned(),
            rx,
            shared: self.shared.clone(),
        }
    }

    /// Writes a raw line (a newline is appended unless present). Nothing is
    /// checked or registered: for garbage-input tests.
    pub async fn send_raw(&self, line: &str) -> std::io::Result<()> {
        self.shared
            .lock()
            .transcript
            .push((Dir::Out, line.trim_end_matches('\n').to_owned()));
        self.shared.write_line(line).await
    }

    /// Writes raw bytes verbatim (no newline added): for non-UTF-8 input.
    pub async fn send_raw_bytes(&self, bytes: &[u8]) -> std::io::Result<()> {
        self.shared
            .lock()
            .transcript
            .push((Dir::Out, String::from_utf8_lossy(bytes).into_owned()));
        let mut w = self.shared.writer.lock().await;
        let Some(w) = w.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the editor closed the agent's stdin",
            ));
        };
        w.write_all(bytes).await?;
        w.flush().await
    }

    /// Closes the agent's stdin (EOF).
    pub async fn close_stdin(&self) {
        if let Some(mut w) = self.shared.writer.lock().await.take() {
            let _ = w.shutdown().await;
        }
    }

    // ------------------------------------------------------- typed shortcuts

    /// `initialize` with protocol version 1 and these `clientCapabilities`
    /// (see [`full_capabilities`]); returns the result, fails on error.
    pub async fn initialize(&self, client_capabilities: Value) -> Value {
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": client_capabilities,
            "clientInfo": {"name": "fake-editor", "title": "Fake Editor", "version": "0.0.0"}
        });
        match self.request("initialize", params).await {
            Ok(r) => r,
            Err(e) => self.shared.fail(&format!("initialize failed: {e}")),
        }
    }

    /// `session/new` (string request id) → the new session id.
    pub async fn new_session(&self, cwd: impl AsRef<Path>) -> String {
        self.new_session_with_servers(cwd, json!([])).await
    }

    /// `session/set_mode` (ACP §9); fails the test on an error.
    pub async fn set_mode(&self, session_id: &str, mode: &str) {
        let params = json!({"sessionId": session_id, "modeId": mode});
        if let Err(e) = self.request("session/set_mode", params).await {
            self.shared.fail(&format!("set_mode {mode}: {e}"));
        }
    }

    /// `session/load` (ACP §8) of a stored session in `cwd`, without MCP
    /// servers → the result; fails the test on an error.
    pub async fn load_session(&self, session_id: &str, cwd: impl AsRef<Path>) -> Value {
        let params = json!({"sessionId": session_id, "cwd": cwd.as_ref(), "mcpServers": []});
        match self.request("session/load", params).await {
            Ok(r) => r,
            Err(e) => self.shared.fail(&format!("session/load {session_id}: {e}")),
        }
    }

    /// `session/resume` (ACP §8, no replay) of a stored session in `cwd` →
    /// the result; fails the test on an error.
    pub async fn resume_session(&self, session_id: &str, cwd: impl AsRef<Path>) -> Value {
        let params = json!({"sessionId": session_id, "cwd": cwd.as_ref()});
        match self.request("session/resume", params).await {
            Ok(r) => r,
            Err(e) => self
                .shared
                .fail(&format!("session/resume {session_id}: {e}")),
        }
    }

    /// `session/new` with these `mcpServers` → the session id.
    pub async fn new_session_with_servers(&self, cwd: impl AsRef<Path>, servers: Value) -> String {
        let result = self.new_session_params(cwd.as_ref(), servers).await;
        result["sessionId"]
            .as_str()
            .unwrap_or_else(|| self.shared.fail("session/new result has no sessionId"))
            .to_owned()
    }

    /// `session/new` (string request id) → the whole result.
    pub async fn new_session_full(&self, cwd: impl AsRef<Path>) -> Value {
        self.new_session_params(cwd.as_ref(), json!([])).await
    }

    pub(super) async fn new_session_params(&self, cwd: &Path, servers: Value) -> Value {
        let n = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        let params = json!({"cwd": cwd, "mcpServers": servers});
        match self
            .request_with_id(format!("new-session-{n}"), "session/new", params)
            .await
        {
            Ok(r) => r,
            Err(e) => self.shared.fail(&format!("session/new failed: {e}")),
        }
    }

    /// Starts `session/prompt` with one text block; await the handle.
    pub async fn start_prompt(&self, session_id: &str, text: &str) -> PendingRequest {
        self.start_prompt_blocks(session_id, vec![json!({"type": "text", "text": text})])
            .await
    }

    /// Starts `session/prompt` with arbitrary content blocks.
    pub async fn start_prompt_blocks(
        &self,
        session_id: &str,
        blocks: Vec<Value>,
    ) -> PendingRequest {
        self.send_request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": blocks}),
        )
        .await
    }

    /// `session/prompt` with one text block → the result (`{stopReason}`);
    /// fails the test on an error response.
    pub async fn prompt(&self, session_id: &str, text: &str) -> Value {
        self.prompt_blocks(session_id, vec![json!({"type": "text", "text": text})])
            .await
    }

    /// `session/prompt` with these content blocks → the result; fails the
    /// test on an error response.
    pub async fn prompt_blocks(&self, session_id: &str, blocks: Vec<Value>) -> Value {
        match self
            .start_prompt_blocks(session_id, blocks)
            .await
            .response()
            .await
        {
            Ok(r) => r,
            Err(e) => self.shared.fail(&format!("session/prompt failed: {e}")),
        }
    }

    /// `session/prompt` with one text block that must fail → its error.
    pub async fn prompt_error(&self, session_id: &str, text: &str) -> RpcError {
        match self.start_prompt(session_id, text).await.response().await {
            Ok(r) => self.shared.fail(&format!(
                "session/prompt succeeded ({r}) where it must fail"
            )),
            Err(e) => e,
        }
    }

    /// Sends `session/cancel`, then (as the spec requires of a client)
    /// answers the session's still-open permission requests with `cancelled`.
    pub async fn cancel(&self, session_id: &str) {
        self.notify("session/cancel", json!({"sessionId": session_id}))
            .await;
        let held: Vec<RpcId> = self
            .shared
            .lock()
            .held_permissions
            .iter()
            .filter(|(_, sid)| sid == session_id)
            .map(|(id, _)| id.clone())
            .collect();
        for id in held {
            self.shared
                .respond(id, Ok(json!({"outcome": {"outcome": "cancelled"}})))
                .await;
        }
    }

    /// Queues the result of the next `elicitation/create` (e.g.
    /// `{"action": "accept", "content": {...}}`); `None` leaves it
    /// unanswered until the agent withdraws it with `$/cancel_request`.
    pub fn push_elicitation_answer(&self, answer: Option<Value>) {
        self.shared.lock().elicitation_answers.push_back(answer);
    }

    /// `elicitation/create` requests still unanswered.
    pub fn held_elicitations(&self) -> usize {
        self.shared.lock().held_elicitations.len()
    }

    /// Answers every held (`NeverAnswer`) permission request.
    pub async fn answer_held_permissions(&self, decision: PermissionDecision) {
        let held: Vec<(RpcId, String)> = self.shared.lock().held_permissions.clone();
        for (id, _) in held {
            let params = self
                .shared
                .lock()
                .permissions
                .iter()
                .find(|p| p.id == id)
                .map(|p| p.params.clone())
                .unwrap_or(Value::Null);
            let result = permission_result(&self.shared, &params, &decision);
            self.shared.respond(id, Ok(result)).await;
        }
    }
}
