//! The validator checked on hand-written messages, good and bad.
use super::*;
use serde_json::json;

fn sent(pairs: &[(RpcId, &str)]) -> HashMap<RpcId, String> {
    pairs
        .iter()
        .map(|(id, m)| (id.clone(), (*m).to_owned()))
        .collect()
}

#[test]
fn agent_message_chunk_passes() {
    let msg = json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "sess-1",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "hello"}
            }
        }
    });
    assert_eq!(
        validate_agent_message(&msg, &HashMap::new()),
        Classified::Notification {
            method: "session/update".into()
        }
    );
}

#[test]
fn bogus_session_update_fails_with_pointer() {
    let msg = json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "sess-1",
            "update": {"sessionUpdate": "agent_mesage_chunk", "content": {"type": "text", "text": "x"}}
        }
    });
    let err = check_agent_message(&msg, &HashMap::new()).unwrap_err();
    assert!(err.contains("session/update"), "{err}");
    assert!(err.contains("/update"), "{err}");
    eprintln!("{err}");

    // Wrong content shape inside a valid variant.
    let msg = json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}}
    });
    let err = check_agent_message(&msg, &HashMap::new()).unwrap_err();
    assert!(err.contains("/update"), "{err}");
}

#[test]
fn initialize_response_passes_and_is_checked() {
    let ids = sent(&[(RpcId::Num(0), "initialize")]);
    let ok = json!({
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "promptCapabilities": {"image": false}},
            "authMethods": [],
            "agentInfo": {"name": "acp-coder", "version": "0.1.0"}
        }
    });
    assert_eq!(
        validate_agent_message(&ok, &ids),
        Classified::Response {
            id: RpcId::Num(0),
            method: Some("initialize".into()),
            is_error: false
        }
    );
    let bad = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "one"}});
    let err = check_agent_message(&bad, &ids).unwrap_err();
    assert!(err.contains("/protocolVersion"), "{err}");
    assert!(err.contains("initialize"), "{err}");
}

#[test]
fn envelope_rules() {
    let ids = sent(&[(RpcId::Str("a".into()), "session/prompt")]);
    let no_version = json!({"id": "a", "result": {"stopReason": "end_turn"}});
    assert!(check_agent_message(&no_version, &ids).is_err());
    let both = json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "end_turn"}, "error": {"code": 1, "message": "x"}});
    assert!(check_agent_message(&both, &ids).is_err());
    let extra =
        json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "end_turn"}, "extra": 1});
    assert!(
        check_agent_message(&extra, &ids)
            .unwrap_err()
            .contains("extra")
    );
    let unknown_id = json!({"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "end_turn"}});
    assert!(check_agent_message(&unknown_id, &ids).is_err());
    let good = json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "end_turn"}});
    validate_agent_message(&good, &ids);
    let bad_stop = json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "done"}});
    assert!(
        check_agent_message(&bad_stop, &ids)
            .unwrap_err()
            .contains("/stopReason")
    );
    let err = json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32603, "message": "boom", "data": {"x": 1}}});
    validate_agent_message(&err, &ids);
    let err_float = json!({"jsonrpc": "2.0", "id": "a", "error": {"code": 1.5, "message": "boom"}});
    assert!(check_agent_message(&err_float, &ids).is_err());
    let err_extra =
        json!({"jsonrpc": "2.0", "id": "a", "error": {"code": 1, "message": "boom", "why": 1}});
    assert!(check_agent_message(&err_extra, &ids).is_err());
    let parse_error =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
    validate_agent_message(&parse_error, &HashMap::new());
}

#[test]
fn unstable_providers_and_mcp_over_acp() {
    let connect =
        json!({"jsonrpc": "2.0", "id": 5, "method": "mcp/connect", "params": {"serverId": "s"}});
    validate_agent_message(&connect, &HashMap::new());
    let no_id = json!({"jsonrpc": "2.0", "id": 5, "method": "mcp/connect", "params": {}});
    assert!(check_agent_message(&no_id, &HashMap::new()).is_err());
    let pending = sent(&[(RpcId::Num(5), "mcp/connect")]);
    let ok = json!({"jsonrpc": "2.0", "id": 5, "result": {"connectionId": "c"}});
    validate_client_message(&ok, &pending);
    let empty = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
    assert!(check_client_message(&empty, &pending).is_err());
    let note = json!({"jsonrpc": "2.0", "method": "mcp/message",
        "params": {"connectionId": "c", "method": "notifications/initialized"}});
    validate_agent_message(&note, &HashMap::new());
    validate_client_message(&note, &HashMap::new());
    let no_conn = json!({"jsonrpc": "2.0", "method": "mcp/message", "params": {"method": "x"}});
    assert!(check_agent_message(&no_conn, &HashMap::new()).is_err());

    let listed = sent(&[(RpcId::Num(1), "providers/list")]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "result": {"providers": [
        {"providerId": "main", "supported": ["openai"], "required": false, "current": null}]}});
    validate_agent_message(&list, &listed);
    let partial =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"providers": [{"providerId": "main"}]}});
    assert!(check_agent_message(&partial, &listed).is_err());
    let set = json!({"jsonrpc": "2.0", "id": 2, "method": "providers/set",
        "params": {"providerId": "main", "apiType": "openai", "baseUrl": "http://h/v1"}});
    validate_client_message(&set, &HashMap::new());
    let acp_server = json!({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {
        "cwd": "/p", "mcpServers": [{"type": "acp", "name": "ed", "serverId": "s1"}]}});
    validate_client_message(&acp_server, &HashMap::new());
}

#[test]
fn reverse_requests_and_client_messages() {
    let perm = json!({
        "jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
        "params": {
            "sessionId": "s",
            "toolCall": {"toolCallId": "call_1", "title": "Edit file"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
            ]
        }
    });
    validate_agent_message(&perm, &HashMap::new());
    let read = json!({"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/tmp/x", "line": 2, "limit": 3}});
    validate_agent_message(&read, &HashMap::new());
    let unknown = json!({"jsonrpc": "2.0", "id": 2, "method": "fs/delete_file", "params": {}});
    assert!(check_agent_message(&unknown, &HashMap::new()).is_err());

    let pending = sent(&[
        (RpcId::Num(0), "session/request_permission"),
        (RpcId::Num(1), "fs/read_text_file"),
    ]);
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
    validate_client_message(&answer, &pending);
    let cancelled =
        json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}});
    validate_client_message(&cancelled, &pending);
    let bad = json!({"jsonrpc": "2.0", "id": 1, "result": {"text": "x"}});
    assert!(check_client_message(&bad, &pending).is_err());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true},
        "clientInfo": {"name": "fake-editor", "version": "0.0.0"}
    }});
    validate_client_message(&init, &HashMap::new());
    let cancel =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}});
    validate_client_message(&cancel, &HashMap::new());
}

/// Frames are checked against schema 1.20.0: its new updates pass, and
/// their rules (a notice's non-empty title) hold.
#[test]
fn schema_1_20_updates_are_known() {
    let update = |u: serde_json::Value| json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}});
    for ok in [
        json!({"sessionUpdate": "notice", "severity": "info", "title": "Prompt queued"}),
        json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"}),
        json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1", "content": {"type": "text", "text": "x"}}),
    ] {
        validate_agent_message(&update(ok), &HashMap::new());
    }
    let bad = update(json!({"sessionUpdate": "notice", "severity": "info", "title": ""}));
    assert!(check_agent_message(&bad, &HashMap::new()).is_err());
}
