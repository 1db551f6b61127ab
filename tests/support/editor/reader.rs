//! The reader task: every line from the agent parsed, checked and routed.
use super::*;

pub(super) async fn reader_loop<R: AsyncRead + Unpin>(shared: Arc<Shared>, reader: R) {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {
                let terminated = buf.last() == Some(&b'\n');
                if terminated {
                    buf.pop();
                }
                let line = match String::from_utf8(buf.clone()) {
                    Ok(l) => l,
                    Err(_) => {
                        let lossy = String::from_utf8_lossy(&buf).into_owned();
                        shared.lock().transcript.push((Dir::In, lossy.clone()));
                        shared.error(format!("the agent wrote a non-UTF-8 line: {lossy:?}"));
                        continue;
                    }
                };
                shared.lock().transcript.push((Dir::In, line.clone()));
                if !terminated {
                    shared.error(format!(
                        "the agent's last line is not newline-terminated: {}",
                        shorten(&line, 500)
                    ));
                }
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => handle_message(&shared, v),
                    Err(e) => shared.error(format!(
                        "the agent wrote a line that is not JSON ({e}): {}",
                        shorten(&line, 500)
                    )),
                }
                shared.bump();
            }
            Err(e) => {
                shared.error(format!("reading the agent's stdout failed: {e}"));
                break;
            }
        }
    }
    {
        let mut st = shared.lock();
        st.closed = true;
        // Dropping the senders fails every pending request loudly.
        st.pending.clear();
    }
    shared.bump();
}

pub(super) fn handle_message(shared: &Arc<Shared>, msg: Value) {
    let mut st = shared.lock();
    st.messages.push(msg.clone());
    if let Err(e) = schema::check_agent_message(&msg, &st.editor_requests) {
        st.errors.push(e);
    }
    let id = msg.get("id").and_then(RpcId::from_json);
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    match (method, id) {
        (Some(method), Some(id)) => {
            // A request from the agent.
            st.reverse_requests.push(msg.clone());
            if st.agent_requests.contains_key(&id) {
                st.errors.push(format!(
                    "the agent reused request id {id} while its earlier request is unanswered"
                ));
            }
            st.agent_requests.insert(id.clone(), method.clone());
            drop(st);
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            let shared = shared.clone();
            tokio::spawn(async move {
                if let Some(result) = handle_agent_request(&shared, &id, &method, &params).await {
                    shared.respond(id, result).await;
                }
            });
        }
        (Some(method), None) => {
            if method == "session/update" {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                if let Some(sid) = params["sessionId"].as_str()
                    && !st.known_sessions.contains(sid)
                {
                    st.errors.push(format!(
                        "session/update for session {sid:?}, which the editor does not know (yet)"
                    ));
                }
                // A subagent's child session, announced on a known parent
                // (ACP: before any of its own traffic), becomes known.
                if params["update"]["sessionUpdate"] == "subagent_update"
                    && let (Some(parent), Some(child)) = (
                        params["sessionId"].as_str(),
                        params["update"]["sessionId"].as_str(),
                    )
                    && st.known_sessions.contains(parent)
                {
                    let cwd = st.session_cwds.get(parent).cloned();
                    st.known_sessions.insert(child.to_owned());
                    if let Some(cwd) = cwd {
                        st.session_cwds.insert(child.to_owned(), cwd);
                    }
                }
                st.updates.push(params);
            } else if method == "mcp/message" {
                drop(st);
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                mcp_acp::handle_notification(shared, &params);
            } else if method == "$/cancel_request" {
                // The agent gave up on one of its requests: answer a held
                // permission request the way ACP expects (cancelled).
                let target = msg["params"].get("requestId").and_then(RpcId::from_json);
                if let Some(target) = target.clone()
                    && let Some(i) = st.held_elicitations.iter().position(|h| *h == target)
                {
                    st.held_elicitations.remove(i);
                    drop(st);
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        shared
                            .respond(target, Ok(json!({"action": "cancel"})))
                            .await;
                    });
                } else if let Some(target) = target.clone()
                    && let Some(i) = st.held_ignored.iter().position(|h| *h == target)
                {
                    st.held_ignored.remove(i);
                    drop(st);
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        shared
                            .respond(target, Err(RpcError::new(-32800, "request cancelled")))
                            .await;
                    });
                } else if let Some(target) = target
                    && st.held_permissions.iter().any(|(h, _)| *h == target)
                {
                    drop(st);
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        shared
                            .respond(target, Ok(json!({"outcome": {"outcome": "cancelled"}})))
                            .await;
                    });
                }
            }
        }
        (None, Some(id)) => {
            let method = st.editor_requests.remove(&id);
            let params = st.editor_request_params.remove(&id);
            let outcome = if let Some(error) = msg.get("error") {
                Err(RpcError::from_json(error))
            } else {
                Ok(msg.get("result").cloned().unwrap_or(Value::Null))
            };
            if let (Some("session/new" | "session/fork"), Ok(result)) =
                (method.as_deref(), &outcome)
                && let Some(sid) = result["sessionId"].as_str()
            {
                st.known_sessions.insert(sid.to_owned());
                if let Some(cwd) = params.as_ref().and_then(|p| p["cwd"].as_str()) {
                    st.session_cwds.insert(sid.to_owned(), PathBuf::from(cwd));
                }
            }
            if let Some(tx) = st.pending.remove(&id) {
                let _ = tx.send(outcome);
            }
        }
        (None, None) => {}
    }
}
