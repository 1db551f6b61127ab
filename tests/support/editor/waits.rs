//! Waiting for the agent, and reading what it sent.
use super::*;

impl FakeEditor {
    // --------------------------------------------------------------- waiting

    pub(super) async fn wait_state<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut State) -> Option<T>,
    ) -> T {
        let mut rx = self.shared.version.subscribe();
        let timeout = self.shared.lock().timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            {
                let mut st = self.shared.lock();
                if let Some(t) = f(&mut st) {
                    return t;
                }
                let (errors, closed) = (!st.errors.is_empty(), st.closed);
                drop(st);
                if errors {
                    self.shared
                        .fail(&format!("protocol error while waiting for {what}"));
                }
                if closed {
                    self.shared.fail(&format!(
                        "the agent closed its stdout while waiting for {what}"
                    ));
                }
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                self.shared
                    .fail(&format!("timed out after {timeout:?} waiting for {what}"));
            }
        }
    }

    /// Waits for the first message from the agent (of all received so far
    /// and to come) matching `pred`; returns it.
    pub async fn wait_for(&self, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_state("a matching message", |st| {
            st.messages.iter().find(|m| pred(m)).cloned()
        })
        .await
    }

    /// Like [`Self::wait_for`], only among messages received after the first
    /// `from` (see [`Self::message_count`]).
    pub async fn wait_for_after(&self, from: usize, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_state("a matching message", |st| {
            st.messages.iter().skip(from).find(|m| pred(m)).cloned()
        })
        .await
    }

    /// Number of messages received from the agent so far.
    pub fn message_count(&self) -> usize {
        self.shared.lock().messages.len()
    }

    /// The next `session/update` params not yet returned by this method.
    pub async fn next_update(&self) -> Value {
        self.wait_state("the next session/update", |st| {
            let u = st.updates.get(st.update_cursor).cloned()?;
            st.update_cursor += 1;
            Some(u)
        })
        .await
    }

    /// Waits for a `session/update` of `session_id` whose `update` object
    /// matches `pred`; returns the `update` object.
    pub async fn wait_for_update(&self, session_id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_state(
            &format!("a matching session/update for {session_id}"),
            |st| {
                st.updates
                    .iter()
                    .filter(|u| u["sessionId"] == session_id)
                    .map(|u| &u["update"])
                    .find(|u| pred(u))
                    .cloned()
            },
        )
        .await
    }

    /// Waits until the agent sent a request with this method; returns it.
    pub async fn wait_for_reverse_request(&self, method: &str) -> Value {
        self.wait_state(&format!("a {method} request from the agent"), |st| {
            st.reverse_requests
                .iter()
                .find(|r| r["method"] == method)
                .cloned()
        })
        .await
    }

    /// Waits until the agent's stdout is closed.
    pub async fn wait_closed(&self) {
        let mut rx = self.shared.version.subscribe();
        let timeout = self.shared.lock().timeout;
        let done = tokio::time::timeout(timeout, async {
            loop {
                rx.borrow_and_update();
                if self.shared.lock().closed {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        if done.is_err() {
            self.shared.fail("the agent did not close its stdout");
        }
    }

    /// Waits for the agent's `$/cancel_request` → the id of the request it
    /// withdraws.
    pub async fn wait_for_cancel_request(&self) -> RpcId {
        let withdrawn = self.wait_for(|m| m["method"] == "$/cancel_request").await;
        RpcId::from_json(&withdrawn["params"]["requestId"])
            .unwrap_or_else(|| self.shared.fail(&format!("no request id in {withdrawn}")))
    }

    /// Waits for the agent process to exit (spawned agents only).
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let Some(child) = self.child.as_mut() else {
            self.shared
                .fail("wait_exit: the agent was not spawned by this editor");
        };
        match tokio::time::timeout(timeout, child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => self.shared.fail(&format!("waiting for the agent: {e}")),
            Err(_) => self
                .shared
                .fail(&format!("the agent did not exit within {timeout:?}")),
        }
    }

    /// Closes the agent's input and expects the spawned agent to exit
    /// successfully within 5 s, as it does at the end of its input.
    pub async fn shut_down(mut self) {
        self.close_stdin().await;
        let status = self.wait_exit(Duration::from_secs(5)).await;
        if !status.success() {
            self.shared.fail(&format!(
                "the agent exited with {status} at the end of its input"
            ));
        }
    }

    /// Kills the spawned agent.
    pub async fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill().await;
        }
    }

    /// The spawned agent's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    // ------------------------------------------------------------ inspection

    /// Every parsed message from the agent.
    pub fn messages(&self) -> Vec<Value> {
        self.shared.lock().messages.clone()
    }

    /// Every raw line from the agent.
    pub fn raw_lines(&self) -> Vec<String> {
        self.shared
            .lock()
            .transcript
            .iter()
            .filter(|(d, _)| *d == Dir::In)
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// Fails the test with this message and the transcript.
    pub fn fail(&self, msg: &str) -> ! {
        self.shared.fail(msg)
    }

    /// All `session/update` params, in order.
    pub fn updates(&self) -> Vec<Value> {
        self.shared.lock().updates.clone()
    }

    /// The `update` objects of one session, in order.
    pub fn updates_for(&self, session_id: &str) -> Vec<Value> {
        self.shared
            .lock()
            .updates
            .iter()
            .filter(|u| u["sessionId"] == session_id)
            .map(|u| u["update"].clone())
            .collect()
    }

    /// The `update` objects of one session with this `sessionUpdate` kind.
    pub fn updates_of_kind(&self, session_id: &str, kind: &str) -> Vec<Value> {
        self.updates_for(session_id)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    /// Concatenated text of the session's `agent_message_chunk`s.
    pub fn agent_text(&self, session_id: &str) -> String {
        self.chunk_text(session_id, "agent_message_chunk")
    }

    /// Concatenated text of the session's `agent_thought_chunk`s.
    pub fn thought_text(&self, session_id: &str) -> String {
        self.chunk_text(session_id, "agent_thought_chunk")
    }

    pub(super) fn chunk_text(&self, session_id: &str, kind: &str) -> String {
        self.updates_of_kind(session_id, kind)
            .iter()
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }

    /// Every request the agent sent (whole messages).
    pub fn reverse_requests(&self) -> Vec<Value> {
        self.shared.lock().reverse_requests.clone()
    }

    pub fn permission_requests(&self) -> Vec<PermissionRecord> {
        self.shared.lock().permissions.clone()
    }

    /// The tool call ids the agent asked permission for, in order.
    pub fn asked_ids(&self) -> Vec<String> {
        self.permission_requests()
            .iter()
            .map(|p| {
                let id = &p.params["toolCall"]["toolCallId"];
                id.as_str().unwrap_or_default().to_owned()
            })
            .collect()
    }

    pub fn writes(&self) -> Vec<FileWrite> {
        self.shared.lock().writes.clone()
    }

    pub fn reads(&self) -> Vec<FileRead> {
        self.shared.lock().reads.clone()
    }

    pub fn terminal_calls(&self) -> Vec<TerminalCall> {
        self.shared.lock().terminal_calls.clone()
    }

    /// Ids of all terminals created, in order.
    pub fn terminals_created(&self) -> Vec<String> {
        self.shared.lock().terminal_order.clone()
    }

    /// Ids of terminals the agent created but never released.
    pub fn unreleased_terminals(&self) -> Vec<String> {
        let st = self.shared.lock();
        st.terminal_order
            .iter()
            .filter(|id| st.terminals.get(*id).is_some_and(|t| !t.released))
            .cloned()
            .collect()
    }

    #[track_caller]
    pub fn assert_all_terminals_released(&self) {
        let left = self.unreleased_terminals();
        if !left.is_empty() {
            self.shared
                .fail(&format!("terminals never released: {left:?}"));
        }
    }

    /// Protocol/harness errors recorded so far.
    pub fn errors(&self) -> Vec<String> {
        self.shared.lock().errors.clone()
    }

    /// Takes (clears) the recorded errors, so the editor's drop does not
    /// fail the test: for tests that provoke them on purpose.
    pub fn take_errors(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.lock().errors)
    }

    /// Fails now if any protocol error was recorded.
    pub fn assert_no_errors(&self) {
        if !self.shared.lock().errors.is_empty() {
            self.shared.fail("protocol errors recorded");
        }
    }

    /// Everything the agent wrote to stderr so far (spawned agents only).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.shared.stderr.lock().unwrap_or_else(|e| e.into_inner()))
            .into_owned()
    }
}
