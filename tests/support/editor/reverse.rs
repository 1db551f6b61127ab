//! Answers to the agent's requests: `fs/*` and `session/request_permission`
//! (terminals in [`super::terminal`], MCP over ACP in [`super::mcp_acp`]).
use super::*;

pub(super) async fn handle_agent_request(
    shared: &Arc<Shared>,
    id: &RpcId,
    method: &str,
    params: &Value,
) -> Option<Result<Value, RpcError>> {
    let (caps, failure) = {
        let mut st = shared.lock();
        if st.ignored.contains(method) {
            st.held_ignored.push(id.clone());
            return None;
        }
        (st.caps, st.failing.get(method).cloned())
    };
    if let Some(error) = failure {
        return Some(Err(error));
    }
    let allowed = match method {
        "fs/read_text_file" => caps.read,
        "fs/write_text_file" => caps.write,
        m if m.starts_with("terminal/") => caps.terminal,
        "elicitation/create" => match params["mode"].as_str() {
            Some("form") => caps.elicit_form,
            Some("url") => caps.elicit_url,
            _ => false,
        },
        _ => true,
    };
    if !allowed {
        shared.error(format!(
            "the agent called {method} although the editor did not advertise that capability"
        ));
        return Some(Err(RpcError::new(
            -32601,
            format!("Method not found: {method}"),
        )));
    }
    match method {
        "fs/read_text_file" => Some(read_text_file(shared, params).await),
        "fs/write_text_file" => Some(write_text_file(shared, params).await),
        "session/request_permission" => request_permission(shared, id, params),
        m if m.starts_with("mcp/") => Some(mcp_acp::handle_request(shared, m, params).await),
        "elicitation/create" => {
            let mut st = shared.lock();
            match st.elicitation_answers.pop_front() {
                Some(Some(answer)) => Some(Ok(answer)),
                Some(None) => {
                    st.held_elicitations.push(id.clone());
                    None
                }
                None => Some(Ok(json!({"action": "decline"}))),
            }
        }
        m if m.starts_with("terminal/") => Some(terminal(shared, m, params).await),
        _ => Some(Err(RpcError::new(
            -32601,
            format!("Method not found: {method}"),
        ))),
    }
}

pub(super) fn absolute_path(
    shared: &Shared,
    method: &str,
    params: &Value,
) -> Result<PathBuf, RpcError> {
    let Some(path) = params["path"].as_str() else {
        return Err(RpcError::new(-32602, "missing path"));
    };
    let path = Path::new(path);
    if !path.is_absolute() {
        shared.error(format!(
            "{method}: path {path:?} is not absolute (ACP requires absolute paths)"
        ));
        return Err(RpcError::new(-32602, "path must be absolute"));
    }
    Ok(normalize(path))
}

pub(super) async fn read_text_file(shared: &Shared, params: &Value) -> Result<Value, RpcError> {
    let path = absolute_path(shared, "fs/read_text_file", params)?;
    let line = params["line"].as_u64();
    let limit = params["limit"].as_u64();
    let buffered = shared.lock().buffers.get(&path).cloned();
    let from_buffer = buffered.is_some();
    // A test never reads gigabytes: past 64 MiB on disk the fake editor
    // records the request and refuses it (the agent should not have asked).
    let on_disk = tokio::fs::metadata(&path).await.map_or(0, |m| m.len());
    if !from_buffer && on_disk > 64 << 20 {
        shared.lock().reads.push(FileRead {
            session_id: params["sessionId"].as_str().unwrap_or_default().to_owned(),
            path: path.clone(),
            line,
            limit,
            from_buffer,
        });
        return Err(RpcError::new(
            -32603,
            format!(
                "fake editor: {} is {on_disk} bytes; not read",
                path.display()
            ),
        ));
    }
    let content = match buffered {
        Some(c) => c,
        None => match tokio::fs::read_to_string(&path).await {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RpcError::new(
                    -32002,
                    format!("Resource not found: {}", path.display()),
                ));
            }
            Err(e) => {
                return Err(RpcError::new(
                    -32603,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        },
    };
    shared.lock().reads.push(FileRead {
        session_id: params["sessionId"].as_str().unwrap_or_default().to_owned(),
        path,
        line,
        limit,
        from_buffer,
    });
    Ok(json!({"content": slice_lines(&content, line, limit)}))
}

pub(super) async fn write_text_file(shared: &Shared, params: &Value) -> Result<Value, RpcError> {
    let path = absolute_path(shared, "fs/write_text_file", params)?;
    let content = params["content"].as_str().unwrap_or_default().to_owned();
    let hook = shared.lock().before_write.clone();
    if let Some(hook) = hook {
        hook(&path);
    }
    let to_disk = {
        let mut st = shared.lock();
        st.writes.push(FileWrite {
            session_id: params["sessionId"].as_str().unwrap_or_default().to_owned(),
            path: path.clone(),
            content: content.clone(),
        });
        if let Some(buf) = st.buffers.get_mut(&path) {
            buf.clone_from(&content);
        }
        st.write_to_disk
    };
    shared.bump();
    if to_disk {
        if let Some(parent) = path.parent() {
            let _ = tokio::fs::create_dir_all(parent).await;
        }
        if let Err(e) = tokio::fs::write(&path, &content).await {
            return Err(RpcError::new(
                -32603,
                format!("cannot write {}: {e}", path.display()),
            ));
        }
    }
    Ok(json!({}))
}

pub(super) fn permission_result(
    shared: &Shared,
    params: &Value,
    decision: &PermissionDecision,
) -> Value {
    let cancelled = json!({"outcome": {"outcome": "cancelled"}});
    let option_id = match decision {
        PermissionDecision::Cancelled | PermissionDecision::NeverAnswer => return cancelled,
        PermissionDecision::Option(id) => {
            let offered = params["options"]
                .as_array()
                .is_some_and(|opts| opts.iter().any(|o| o["optionId"] == *id));
            if !offered {
                shared.error(format!(
                    "scripted permission option {id} but the request offers no such option: {}",
                    params["options"]
                ));
                return cancelled;
            }
            Some((*id).to_owned())
        }
        other => {
            let kind = other.kind().expect("kinded decision");
            let found = params["options"].as_array().and_then(|opts| {
                opts.iter()
                    .find(|o| o["kind"] == kind)
                    .and_then(|o| o["optionId"].as_str().map(str::to_owned))
            });
            if found.is_none() {
                shared.error(format!(
                    "scripted permission decision {kind} but the request offers no such option: {}",
                    params["options"]
                ));
            }
            found
        }
    };
    match option_id {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => cancelled,
    }
}

pub(super) fn request_permission(
    shared: &Shared,
    id: &RpcId,
    params: &Value,
) -> Option<Result<Value, RpcError>> {
    let decision = {
        let mut st = shared.lock();
        let d = st
            .permission_queue
            .pop_front()
            .or_else(|| st.default_permission.clone());
        st.permissions.push(PermissionRecord {
            id: id.clone(),
            params: params.clone(),
            decision: d.clone(),
            result: None,
        });
        d
    };
    shared.bump();
    let Some(decision) = decision else {
        shared.error(format!(
            "unscripted session/request_permission (push_permission or set_default_permission): {params}"
        ));
        return Some(Ok(json!({"outcome": {"outcome": "cancelled"}})));
    };
    if decision == PermissionDecision::NeverAnswer {
        let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
        shared.lock().held_permissions.push((id.clone(), sid));
        return None;
    }
    Some(Ok(permission_result(shared, params, &decision)))
}
