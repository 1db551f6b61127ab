//! The editor's terminals (`terminal/*`): real processes in their own
//! process group.
use super::*;

pub(super) async fn terminal(
    shared: &Arc<Shared>,
    method: &str,
    params: &Value,
) -> Result<Value, RpcError> {
    shared.lock().terminal_calls.push(TerminalCall {
        method: method.to_owned(),
        params: params.clone(),
    });
    shared.bump();
    if method == "terminal/create" {
        return create_terminal(shared, params).await;
    }
    let tid = params["terminalId"].as_str().unwrap_or_default().to_owned();
    let (output, mut exit, pgid) = {
        let st = shared.lock();
        match st.terminals.get(&tid) {
            Some(t) if !t.released => (t.output.clone(), t.exit.clone(), t.pgid),
            Some(_) => {
                drop(st);
                shared.error(format!("{method} on released terminal {tid:?}"));
                return Err(RpcError::new(
                    -32602,
                    format!("terminal {tid} was released"),
                ));
            }
            None => {
                drop(st);
                shared.error(format!("{method} on unknown terminal {tid:?}"));
                return Err(RpcError::new(-32602, format!("unknown terminal {tid}")));
            }
        }
    };
    match method {
        "terminal/output" => {
            let (text, truncated) = {
                let o = output.lock().unwrap_or_else(|e| e.into_inner());
                (String::from_utf8_lossy(&o.bytes).into_owned(), o.truncated)
            };
            let mut result = json!({"output": text, "truncated": truncated});
            if let Some(info) = exit.borrow().clone() {
                result["exitStatus"] = info.to_json();
            }
            Ok(result)
        }
        "terminal/wait_for_exit" => {
            let info = exit
                .wait_for(Option::is_some)
                .await
                .map(|i| i.clone())
                .ok()
                .flatten();
            match info {
                Some(info) => Ok(info.to_json()),
                None => Err(RpcError::new(-32603, "terminal vanished")),
            }
        }
        "terminal/kill" => {
            if exit.borrow().is_none()
                && let Some(g) = pgid
            {
                kill_group(g);
            }
            Ok(json!({}))
        }
        "terminal/release" => {
            if exit.borrow().is_none()
                && let Some(g) = pgid
            {
                kill_group(g);
            }
            if let Some(t) = shared.lock().terminals.get_mut(&tid) {
                t.released = true;
            }
            shared.bump();
            Ok(json!({}))
        }
        _ => Err(RpcError::new(-32601, format!("Method not found: {method}"))),
    }
}

pub(super) async fn create_terminal(
    shared: &Arc<Shared>,
    params: &Value,
) -> Result<Value, RpcError> {
    let command = params["command"].as_str().unwrap_or_default().to_owned();
    let args: Vec<String> = params["args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let session = params["sessionId"].as_str().unwrap_or_default();
    let cwd = params["cwd"]
        .as_str()
        .map(PathBuf::from)
        .or_else(|| shared.lock().session_cwds.get(session).cloned());
    let limit = params["outputByteLimit"]
        .as_u64()
        .map(|l| usize::try_from(l).unwrap_or(usize::MAX));

    let mut cmd = if args.is_empty() {
        let (shell, shell_args) = acp_coder::platform::process::shell();
        let mut c = Command::new(shell);
        c.args(shell_args);
        acp_coder::platform::process::push_shell_text(&mut c, &command);
        c
    } else {
        let mut c = Command::new(&command);
        c.args(&args);
        c
    };
    if let Some(cwd) = &cwd {
        cmd.current_dir(cwd);
    }
    if let Some(env) = params["env"].as_array() {
        for var in env {
            if let (Some(k), Some(v)) = (var["name"].as_str(), var["value"].as_str()) {
                cmd.env(k, v);
            }
        }
    }
    acp_coder::platform::process::new_tree(&mut cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Err(RpcError::new(
                -32603,
                format!("cannot start {command:?}: {e}"),
            ));
        }
    };
    let pgid = acp_coder::platform::process::adopt(&child);
    let output = Arc::new(Mutex::new(TermOutput {
        limit,
        ..TermOutput::default()
    }));
    let mut readers = Vec::new();
    let stdout = child
        .stdout
        .take()
        .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>);
    let stderr = child
        .stderr
        .take()
        .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>);
    for pipe in [stdout, stderr].into_iter().flatten() {
        let output = output.clone();
        let shared = shared.clone();
        readers.push(tokio::spawn(async move {
            let mut pipe = pipe;
            let mut buf = vec![0u8; 8192];
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        output
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(&buf[..n]);
                        shared.bump();
                    }
                }
            }
        }));
    }
    let (exit_tx, exit_rx) = watch::channel(None);
    {
        let shared = shared.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            // Let the readers drain what the process wrote (bounded: a
            // background grandchild may keep the pipes open).
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                for r in readers {
                    let _ = r.await;
                }
            })
            .await;
            let info = match status {
                Ok(s) => {
                    use acp_coder::platform::process::{Exit, exit_of, signal_name};
                    match exit_of(s) {
                        Some(Exit::Code(c)) => ExitInfo {
                            code: u32::try_from(c).ok(),
                            signal: None,
                        },
                        Some(Exit::Signal(n)) => ExitInfo {
                            code: None,
                            signal: Some(signal_name(n)),
                        },
                        None => ExitInfo {
                            code: None,
                            signal: None,
                        },
                    }
                }
                Err(_) => ExitInfo {
                    code: None,
                    signal: None,
                },
            };
            let _ = exit_tx.send(Some(info));
            shared.bump();
        });
    }
    let id = {
        let mut st = shared.lock();
        let id = format!("term-{}", st.next_terminal);
        st.next_terminal += 1;
        st.terminals.insert(
            id.clone(),
            Terminal {
                pgid,
                output,
                exit: exit_rx,
                released: false,
            },
        );
        st.terminal_order.push(id.clone());
        id
    };
    shared.bump();
    Ok(json!({"terminalId": id}))
}
