//! Malformed and unexpected input: every bad frame gets the right JSON-RPC
//! error (or none, for notifications) and the agent keeps reading.

use super::common::{ready, spawn};
use crate::support::{FakeEditor, FakeModel, RpcId, Workspace, full_capabilities};
use serde_json::{Value, json};

/// Waits for the next error response with a null id after message `from`.
async fn next_null_id_error(editor: &FakeEditor, from: usize) -> Value {
    editor
        .wait_for_after(from, |m| m["id"].is_null() && m.get("error").is_some())
        .await
}

/// Proves the agent still answers: an `initialize` round trip.
async fn still_answers(editor: &FakeEditor) {
    let r = editor
        .request("initialize", json!({"protocolVersion": 1}))
        .await
        .unwrap_or_else(|e| editor.fail(&format!("the agent stopped answering: {e}")));
    assert_eq!(r["protocolVersion"], 1);
}

#[tokio::test]
async fn garbage_frames_get_errors_with_null_ids_and_reading_continues() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    let cases: [(&[u8], i64, &str); 5] = [
        (b"this is not json\n", -32700, "Parse error"),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\xff\xfe\"}\n",
            -32700,
            "UTF-8",
        ),
        (b"[]\n", -32600, "batch"),
        (b"42\n", -32600, "Invalid request"),
        (b"{\"jsonrpc\":\"2.0\"}\n", -32600, "Invalid request"),
    ];
    for (bytes, code, needle) in cases {
        let from = editor.message_count();
        editor.send_raw_bytes(bytes).await.expect("write");
        let answer = next_null_id_error(&editor, from).await;
        let shown = String::from_utf8_lossy(bytes);
        assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{shown}: {message}");
        assert_eq!(
            editor.message_count(),
            from + 1,
            "exactly one answer to {shown}"
        );
    }
    // Blank lines are skipped silently.
    let from = editor.message_count();
    editor.send_raw("   ").await.expect("write");
    still_answers(&editor).await;
    assert_eq!(editor.message_count(), from + 1);
}

#[tokio::test]
async fn unknown_methods_and_notifications() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;

    let err = editor
        .request_unchecked("no/such_method", json!({}))
        .await
        .expect_err("unknown method");
    assert_eq!(err.code, -32601, "{err}");
    assert!(err.message.contains("no/such_method"), "{err}");

    // Extension requests the agent does not know: method not found too.
    let err = editor
        .request("_x/y", json!({"anything": 1}))
        .await
        .expect_err("unknown extension request");
    assert_eq!(err.code, -32601, "{err}");
    assert!(err.message.contains("_x/y"), "{err}");

    // Notifications are never answered, known or not.
    let from = editor.message_count();
    editor.notify("_x/notice", json!({"k": 1})).await;
    editor
        .send_raw(r#"{"jsonrpc":"2.0","method":"no/such_notification","params":{}}"#)
        .await
        .expect("write");
    editor
        .send_raw(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"wrong":true}}"#)
        .await
        .expect("write");
    still_answers(&editor).await;
    assert_eq!(
        editor.message_count(),
        from + 1,
        "only the initialize answer: {:#?}",
        &editor.messages()[from..]
    );
}

#[tokio::test]
async fn invalid_params_name_the_field() {
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    let editor = &r.editor;

    let err = editor
        .request_unchecked("session/new", json!({"mcpServers": []}))
        .await
        .expect_err("missing cwd");
    assert_eq!(err.code, -32602, "{err}");
    assert!(
        err.message.contains("params.cwd: missing field `cwd`"),
        "{err}"
    );

    let err = editor
        .request_unchecked("session/new", json!({"cwd": 42, "mcpServers": []}))
        .await
        .expect_err("cwd of the wrong type");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("params.cwd"), "{err}");

    let err = editor
        .request(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await
        .expect_err("relative cwd");
    assert_eq!(err.code, -32602, "{err}");
    assert!(
        err.message
            .contains("params.cwd: expected an absolute path"),
        "{err}"
    );

    let err = editor
        .request_unchecked(
            "session/prompt",
            json!({"sessionId": r.sid, "prompt": "not a list"}),
        )
        .await
        .expect_err("prompt of the wrong type");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("params.prompt"), "{err}");

    let err = editor
        .request_unchecked(
            "session/prompt",
            json!({"sessionId": r.sid, "prompt": [{"type": "text", "text": 5}]}),
        )
        .await
        .expect_err("nested field of the wrong type");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("params.prompt"), "{err}");

    // Optional parts the schema marks `x-deserialize-default-on-error` read
    // as absent instead (an outside review: `"clientCapabilities": null`
    // failed `initialize`, and so the whole connection).
    let init = editor
        .request_unchecked(
            "initialize",
            json!({"protocolVersion": 1, "clientInfo": 7, "clientCapabilities": null, "_meta": 5}),
        )
        .await
        .expect("malformed optional parts are dropped");
    assert_eq!(init["protocolVersion"], 1);

    let err = editor
        .request(
            "session/set_mode",
            json!({"sessionId": r.sid, "modeId": "yolo"}),
        )
        .await
        .expect_err("unknown mode");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("params.modeId"), "{err}");

    // The session was not disturbed by any of it.
    assert!(model.chat_requests().is_empty());
}

#[tokio::test]
async fn unknown_session_is_not_found() {
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    for (method, params) in [
        (
            "session/prompt",
            json!({"sessionId": "sess_missing", "prompt": [{"type": "text", "text": "hi"}]}),
        ),
        (
            "session/set_mode",
            json!({"sessionId": "sess_missing", "modeId": "ask"}),
        ),
    ] {
        let err = r
            .editor
            .request(method, params)
            .await
            .expect_err("unknown session");
        assert_eq!(err.code, -32002, "{method}: {err}");
        assert!(err.message.contains("sess_missing"), "{method}: {err}");
    }
    assert!(model.chat_requests().is_empty());
}

#[tokio::test]
async fn ids_are_echoed_exactly() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    let ids: Vec<RpcId> = vec![
        RpcId::Str("req-1".into()),
        RpcId::Str(String::new()),
        RpcId::Str("7".into()),
        RpcId::Str("ünïcødé id with spaces".into()),
        RpcId::Num(0),
        RpcId::Num(-5),
        RpcId::Num(9_007_199_254_740_993), // not representable as an f64
        RpcId::Num(i64::MAX),
    ];
    for id in ids {
        let result = editor
            .request_with_id(id.clone(), "initialize", json!({"protocolVersion": 1}))
            .await
            .unwrap_or_else(|e| editor.fail(&format!("id {id}: {e}")));
        assert_eq!(result["protocolVersion"], 1);
        // The raw frame carries the id byte for byte.
        let wanted = format!("\"id\":{}", id.to_json());
        assert!(
            editor.raw_lines().iter().any(|l| l.contains(&wanted)),
            "no frame with {wanted}"
        );
    }
    // Errors echo the id too.
    let err = editor
        .send_request_with_id(
            "str-err",
            "session/prompt",
            json!({"sessionId": "s", "prompt": []}),
        )
        .await;
    assert_eq!(err.id(), &RpcId::Str("str-err".into()));
    let e = err.response().await.expect_err("unknown session");
    assert_eq!(e.code, -32002);
    let last = editor.messages().last().cloned().expect("answer");
    assert_eq!(last["id"], "str-err");
}

#[tokio::test]
async fn large_frames_up_to_16_mib_are_read_longer_ones_skipped() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;

    // 8 MB of text in a valid request: parsed (the unknown session proves it).
    let big = "x".repeat(8 * 1024 * 1024);
    let err = editor
        .request(
            "session/prompt",
            json!({"sessionId": "sess_big", "prompt": [{"type": "text", "text": big}]}),
        )
        .await
        .expect_err("unknown session");
    assert_eq!(err.code, -32002, "{err}");
    assert!(err.message.contains("sess_big"), "{err}");

    // 17 MB: too long; the agent says so and goes on.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":424242,"method":"initialize","params":{{"protocolVersion":1,"pad":"{}"}}}}"#,
        "y".repeat(17 * 1024 * 1024)
    );
    let from = editor.message_count();
    editor.send_raw(&huge).await.expect("write");
    let answer = next_null_id_error(&editor, from).await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("exceeds the") && message.contains("byte limit"),
        "{message}"
    );
    assert!(message.contains("16777216"), "names the limit: {message}");
    drop(huge);
    still_answers(&editor).await;
    assert!(
        !editor.messages().iter().any(|m| m["id"] == 424242),
        "the over-long request was not executed"
    );
    let ws = Workspace::new();
    editor.new_session(ws.path()).await;
}

/// A response frame is never answered, also one with `"id": null` (a client
/// reporting an error about a frame it could not read) or another odd id: it
/// is logged and ignored (JSON-RPC 2.0 §5; issue 14).
#[tokio::test]
async fn responses_with_null_or_odd_ids_are_not_answered() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    still_answers(&editor).await;
    for frame in [
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":{"x":1},"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":424242,"result":null}"#,
        r#"{"jsonrpc":"2.0","result":{}}"#,
    ] {
        let from = editor.message_count();
        editor.send_raw(frame).await.expect("write");
        still_answers(&editor).await;
        assert_eq!(
            editor.message_count(),
            from + 1,
            "{frame} was answered: {:?}",
            &editor.messages()[from..]
        );
    }
}

/// `TOKIO_WORKER_THREADS` is tokio's own variable, and tokio panics on a
/// value it cannot use: the agent reads it first and ignores a bad one.
#[tokio::test]
async fn a_bad_worker_count_in_the_environment_is_ignored() {
    let model = FakeModel::start().await;
    for value in ["abc", "0", "-1", "99999999999999999999", "3"] {
        let editor = spawn(&model, &[("TOKIO_WORKER_THREADS", value)]);
        still_answers(&editor).await;
    }
}

/// Requests are held to JSON-RPC 2.0: a request without `"jsonrpc": "2.0"`
/// and positional (array) params are refused with the request's own id,
/// where they used to be answered as if nothing were wrong. Responses to
/// the agent's own requests stay lenient (`result: null`, no `jsonrpc`).
#[tokio::test]
async fn requests_need_the_version_and_named_params() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    let cases: [(&str, i64, &str); 4] = [
        (
            r#"{"id":501,"method":"initialize","params":{"protocolVersion":1}}"#,
            -32600,
            "\"jsonrpc\": \"2.0\" is missing",
        ),
        (
            r#"{"jsonrpc":"2.0","id":502,"method":"initialize","params":[1]}"#,
            -32602,
            "positional (array) params are not supported",
        ),
        (
            r#"{"jsonrpc":"2.0","id":503,"method":"session/new","params":["/tmp",[]]}"#,
            -32602,
            "positional (array) params are not supported",
        ),
        (
            r#"{"jsonrpc":"2.0","id":504,"method":"initialize","params":"x"}"#,
            -32602,
            "params must be an object",
        ),
    ];
    for (frame, code, needle) in cases {
        let parsed: Value = serde_json::from_str(frame).unwrap();
        let id = RpcId::Num(parsed["id"].as_i64().unwrap());
        let method = parsed["method"].as_str().unwrap();
        let err = editor
            .send_raw_request(id, method, frame)
            .await
            .response()
            .await
            .expect_err("refused");
        assert_eq!(err.code, code, "{frame}: {err}");
        assert!(err.message.contains(needle), "{frame}: {err}");
    }
    still_answers(&editor).await;
}

/// `session/new` checks its directories before opening anything: a cwd that
/// does not exist or is a file, and a missing `additionalDirectories` entry,
/// are invalid params naming the field (they used to open a session whose
/// every tool call then failed).
#[tokio::test]
async fn session_new_refuses_missing_or_file_directories() {
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    let ws = Workspace::builder().file("a-file.txt", "x").build();
    let missing = ws.join("no-such-dir");
    let file = ws.join("a-file.txt");
    for (params, field, what) in [
        (
            json!({"cwd": missing, "mcpServers": []}),
            "params.cwd",
            "not a readable directory",
        ),
        (
            json!({"cwd": file, "mcpServers": []}),
            "params.cwd",
            "is a file",
        ),
        (
            json!({"cwd": ws.path(), "mcpServers": [], "additionalDirectories": [ws.path(), missing]}),
            "params.additionalDirectories[1]",
            "not a readable directory",
        ),
        (
            json!({"cwd": ws.path(), "mcpServers": [], "additionalDirectories": [file]}),
            "params.additionalDirectories[0]",
            "is a file",
        ),
    ] {
        let err = r
            .editor
            .request("session/new", params.clone())
            .await
            .expect_err("refused");
        assert_eq!(err.code, -32602, "{params}: {err}");
        assert!(err.message.contains(field), "{params}: {err}");
        assert!(err.message.contains(what), "{params}: {err}");
    }
    // The directories themselves are fine.
    r.editor.new_session(ws.path()).await;
    assert!(model.chat_requests().is_empty());
}
