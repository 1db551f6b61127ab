//! Drives the real agent binary with the official ACP Rust SDK (client side),
//! so interoperability does not rest on our own fake editor alone.

use crate::support::{FakeModel, Reply, SpawnOptions, TIMEOUT, Workspace, agent_command};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, ContentChunk, FileSystemCapabilities, Implementation,
    InitializeRequest, NewSessionRequest, PromptRequest, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, SessionUpdate, StopReason, TextContent, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::schema::{NewSessionResponse, PromptResponse, SessionId};
use agent_client_protocol::{Agent, ByteStreams, Client, ConnectTo};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio_util::compat::Compat;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// The agent binary against `model` (HOME = `home`) as a plain child
/// process, and its stdio as the SDK's transport.
pub(super) fn sdk_transport(
    model: &FakeModel,
    home: &Path,
) -> (Child, ByteStreams<Compat<ChildStdin>, Compat<ChildStdout>>) {
    let opts = SpawnOptions {
        envs: model.agent_env(),
        ..SpawnOptions::default()
    };
    let mut child = agent_command(&opts, home).spawn().expect("spawn acp-coder");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    (child, transport)
}

/// An SDK agent answering `initialize` and `session/new` (as
/// `sdk-session`); the test adds its `session/prompt` handler.
macro_rules! sdk_agent {
    () => {
        Agent
            .v1()
            .on_receive_request(
                async |request: InitializeRequest, responder, _cx: ConnectionTo<Client>| {
                    responder.respond(agent_client_protocol::v1::schema::InitializeResponse::new(
                        request.protocol_version,
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async |_request: NewSessionRequest,
                       responder: Responder<NewSessionResponse>,
                       _cx: ConnectionTo<Client>| {
                    responder.respond(NewSessionResponse::new(SessionId::new("sdk-session")))
                },
                agent_client_protocol::on_receive_request!(),
            )
    };
}

/// What the official client saw during one text turn.
struct Turn {
    stop_reason: StopReason,
    /// Concatenated `agent_message_chunk` text.
    text: String,
    notifications: Vec<SessionNotification>,
}

/// initialize → session/new → session/prompt(`prompt`) with the official
/// SDK client over `transport`, answering fs and permission requests.
async fn text_turn(
    transport: impl ConnectTo<Client> + 'static,
    cwd: PathBuf,
    prompt: &'static str,
) -> agent_client_protocol::Result<Turn> {
    let text = Arc::new(Mutex::new(String::new()));
    let notifications = Arc::new(Mutex::new(Vec::<SessionNotification>::new()));
    let stop_reason = Client
        .v1()
        .name("official-sdk-test-client")
        .on_receive_notification(
            {
                let text = text.clone();
                let notifications = notifications.clone();
                async move |n: SessionNotification, _cx| {
                    if let SessionUpdate::AgentMessageChunk(ContentChunk {
                        content: ContentBlock::Text(t),
                        ..
                    }) = &n.update
                    {
                        text.lock().unwrap().push_str(&t.text);
                    }
                    notifications.lock().unwrap().push(n);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |_request: RequestPermissionRequest, responder, _cx| {
                // A plain text turn must not ask for permission.
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Cancelled,
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                let content = std::fs::read_to_string(&request.path).unwrap_or_default();
                responder.respond(ReadTextFileResponse::new(content))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| {
                std::fs::write(&request.path, &request.content).expect("write file");
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(
                            ClientCapabilities::new().fs(FileSystemCapabilities::new()
                                .read_text_file(true)
                                .write_text_file(true)),
                        )
                        .client_info(Implementation::new("official-sdk-test-client", "0.0.0")),
                )
                .block_task()
                .await?;
            assert_eq!(init.protocol_version, ProtocolVersion::V1);

            let session = cx
                .send_request(NewSessionRequest::new(cwd))
                .block_task()
                .await?;
            let response = cx
                .send_request(PromptRequest::new(
                    session.session_id.clone(),
                    vec![ContentBlock::Text(TextContent::new(prompt))],
                ))
                .block_task()
                .await?;
            Ok(response.stop_reason)
        })
        .await?;
    // Notifications are dispatched in arrival order, before the prompt
    // response that follows them.
    let text = text.lock().unwrap().clone();
    let notifications = std::mem::take(&mut *notifications.lock().unwrap());
    Ok(Turn {
        stop_reason,
        text,
        notifications,
    })
}

#[tokio::test]
async fn official_sdk_client_runs_a_text_turn() {
    let model = FakeModel::start().await;
    model.push(Reply::text("hello"));
    let ws = Workspace::builder().file("README.md", "# demo\n").build();
    let home = tempfile::tempdir().expect("temp HOME");

    let (mut child, transport) = sdk_transport(&model, home.path());
    let stderr = child.stderr.take().expect("stderr");
    // Keep the agent's stderr for the failure message.
    let stderr_task = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut stderr = stderr;
        let mut out = String::new();
        let _ = stderr.read_to_string(&mut out).await;
        out
    });

    let outcome = tokio::time::timeout(
        TIMEOUT,
        text_turn(transport, ws.path().to_path_buf(), "say hello"),
    )
    .await;
    let _ = child.start_kill();
    let stderr = tokio::time::timeout(std::time::Duration::from_secs(5), stderr_task)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let turn = match outcome {
        Ok(Ok(turn)) => turn,
        Ok(Err(e)) => panic!("ACP error in the official client: {e:?}\nagent stderr:\n{stderr}"),
        Err(_) => {
            panic!("the official client timed out after {TIMEOUT:?}\nagent stderr:\n{stderr}")
        }
    };
    assert_eq!(
        turn.stop_reason,
        StopReason::EndTurn,
        "agent stderr:\n{stderr}"
    );
    assert_eq!(
        turn.text, "hello",
        "agent_message_chunk text; notifications: {:?}",
        turn.notifications
    );
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 1, "one model call for one text reply");
    let last = requests[0]
        .last_message()
        .expect("messages sent to the model");
    assert_eq!(last["role"], "user");
    assert!(
        last.to_string().contains("say hello"),
        "the prompt reaches the model: {last}"
    );
}

/// The client code above, checked against an agent built with the same SDK,
/// so a failure of the test above is about acp-coder, not this file.
#[tokio::test]
async fn official_client_code_works_against_an_sdk_agent() {
    let agent = sdk_agent!().on_receive_request(
        async |request: PromptRequest,
               responder: Responder<PromptResponse>,
               cx: ConnectionTo<Client>| {
            for part in ["hel", "lo"] {
                cx.send_notification(SessionNotification::new(
                    request.session_id.clone(),
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
                        TextContent::new(part),
                    ))),
                ))?;
            }
            responder.respond(PromptResponse::new(StopReason::EndTurn))
        },
        agent_client_protocol::on_receive_request!(),
    );
    let ws = Workspace::new();
    let turn = tokio::time::timeout(TIMEOUT, text_turn(agent, ws.path().to_path_buf(), "hi"))
        .await
        .expect("no deadlock")
        .expect("turn succeeds");
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    assert_eq!(turn.text, "hello");
    assert_eq!(turn.notifications.len(), 2);
}

/// Cross-check of the fake editor: an agent built with the official SDK
/// (streaming chunks, reverse fs and permission requests, its own request
/// ids) must run a turn through `FakeEditor` without a single protocol error.
#[tokio::test]
async fn fake_editor_interoperates_with_an_sdk_agent() {
    use crate::support::{FakeEditor, PermissionDecision, full_capabilities};
    use agent_client_protocol::v1::schema::{
        PermissionOption, PermissionOptionKind, ToolCallUpdate, ToolCallUpdateFields,
    };

    fn chunk(session: &SessionId, text: &str) -> SessionNotification {
        SessionNotification::new(
            session.clone(),
            SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
                TextContent::new(text),
            ))),
        )
    }

    let agent = sdk_agent!().on_receive_request(
        async |request: PromptRequest,
               responder: Responder<PromptResponse>,
               cx: ConnectionTo<Client>| {
            let worker = cx.clone();
            // Reverse requests must not block the dispatch loop.
            cx.spawn(async move {
                let session = request.session_id.clone();
                let Some(ContentBlock::Text(path)) = request.prompt.first() else {
                    return responder
                        .respond_with_error(agent_client_protocol::Error::invalid_params());
                };
                worker.send_notification(chunk(&session, "reading…"))?;
                let read = worker
                    .send_request(ReadTextFileRequest::new(session.clone(), path.text.clone()))
                    .block_task()
                    .await?;
                worker.send_notification(chunk(&session, &read.content))?;
                let permission = worker
                    .send_request(RequestPermissionRequest::new(
                        session.clone(),
                        ToolCallUpdate::new(
                            "call_1",
                            ToolCallUpdateFields::new().title("Edit notes.txt"),
                        ),
                        vec![
                            PermissionOption::new(
                                "once",
                                "Allow once",
                                PermissionOptionKind::AllowOnce,
                            ),
                            PermissionOption::new(
                                "always",
                                "Always allow",
                                PermissionOptionKind::AllowAlways,
                            ),
                            PermissionOption::new("no", "Reject", PermissionOptionKind::RejectOnce),
                        ],
                    ))
                    .block_task()
                    .await?;
                let outcome = serde_json::to_value(&permission.outcome).expect("json");
                worker.send_notification(chunk(&session, &outcome["optionId"].to_string()))?;
                responder.respond(PromptResponse::new(StopReason::EndTurn))
            })
        },
        agent_client_protocol::on_receive_request!(),
    );

    let (editor_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (editor_read, editor_write) = tokio::io::split(editor_io);
    let agent_task = tokio::spawn(agent.connect_to(ByteStreams::new(
        agent_write.compat_write(),
        agent_read.compat(),
    )));

    let ws = Workspace::builder().file("notes.txt", "on disk\n").build();
    let editor = FakeEditor::connect(editor_read, editor_write);
    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(init["protocolVersion"], 1);
    let session = editor.new_session(ws.path()).await;
    assert_eq!(session, "sdk-session");
    editor.open_buffer(ws.join("notes.txt"), "unsaved\n");
    editor.push_permission(PermissionDecision::AllowAlways);
    let result = editor
        .prompt(&session, ws.join("notes.txt").to_str().expect("utf-8 path"))
        .await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(editor.agent_text(&session), "reading…unsaved\n\"always\"");
    assert!(editor.reads()[0].from_buffer);
    assert_eq!(
        editor.permission_requests()[0].decision,
        Some(PermissionDecision::AllowAlways)
    );
    editor.assert_no_errors();
    editor.close_stdin().await;
    let _ = tokio::time::timeout(TIMEOUT, agent_task).await;
}
