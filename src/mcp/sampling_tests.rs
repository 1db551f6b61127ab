use super::*;
use rmcp::model::{ModelHint, ModelPreferences, NumberOrString, ProgressToken};
use serde_json::Value;

fn params(v: Value) -> CreateMessageRequestParams {
    serde_json::from_value(v).unwrap()
}

fn text_request(text: &str) -> CreateMessageRequestParams {
    params(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": 50
    }))
}

/// A turn whose model must never be called (the tests stop before it).
struct NoModel {
    read_only: bool,
    cancel: CancellationToken,
}

#[async_trait::async_trait]
impl TurnModel for NoModel {
    fn model_id(&self) -> String {
        "main".into()
    }
    fn known_models(&self) -> Vec<String> {
        vec!["main".into()]
    }
    fn accepts_images(&self, _: &str) -> bool {
        true
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn cancel(&self) -> CancellationToken {
        self.cancel.clone()
    }
    async fn complete(&self, _: &str, _: Sample) -> Result<Completion, String> {
        panic!("the model must not be called")
    }
}

fn sampler() -> (Arc<Hub>, Arc<Progress>, Sampler, Editor) {
    let conn = crate::rpc::Connection::new(crate::rpc::ServeOptions::default());
    let editor = Editor::new(conn.peer.clone(), Arc::default(), "s");
    let hub = Arc::new(Hub::default());
    let calls = Arc::new(Progress::default());
    let s = Sampler::new(hub.clone(), editor.clone(), "srv", calls.clone());
    (hub, calls, s, editor)
}

#[test]
fn messages_system_prompt_and_limits_reach_the_model() {
    let p = params(json!({
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
            ]},
            {"role": "assistant", "content": {"type": "text", "text": "ok"}}
        ],
        "systemPrompt": "be brief",
        "maxTokens": 77,
        "temperature": 0.5,
        "stopSequences": ["END"]
    }));
    let s = to_sample(&p, true, false).unwrap();
    assert_eq!(s.max_tokens, 77);
    assert_eq!(s.temperature, Some(0.5));
    assert_eq!(s.stop, ["END"]);
    assert_eq!(s.messages[0], ChatMessage::System("be brief".into()));
    let ChatMessage::User(parts) = &s.messages[1] else {
        panic!("{:?}", s.messages[1])
    };
    assert_eq!(parts[0], UserPart::Text("look".into()));
    assert_eq!(
        parts[1],
        UserPart::ImageUrl("data:image/png;base64,AAAA".into())
    );
    assert!(matches!(&parts[2], UserPart::Text(t) if t.contains("audio/wav")));
    assert!(matches!(&s.messages[2], ChatMessage::Assistant { text, .. } if text == "ok"));

    // `images = false`: the image is named, not sent.
    let s = to_sample(&p, false, false).unwrap();
    let ChatMessage::User(parts) = &s.messages[1] else {
        panic!()
    };
    assert!(matches!(&parts[1], UserPart::Text(t) if t.contains("does not take images")));
}

#[test]
fn malformed_requests_get_errors_naming_the_field() {
    let empty = params(json!({"messages": [], "maxTokens": 5}));
    assert!(
        to_sample(&empty, true, false)
            .unwrap_err()
            .message
            .contains("messages is empty")
    );
    let zero = params(
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}], "maxTokens": 0}),
    );
    assert!(
        to_sample(&zero, true, false)
            .unwrap_err()
            .message
            .contains("maxTokens")
    );
    let tools = params(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}],
        "maxTokens": 5,
        "tools": [{"name": "t", "inputSchema": {"type": "object"}}]
    }));
    assert!(
        to_sample(&tools, true, false)
            .unwrap_err()
            .message
            .contains("sampling.tools")
    );
    let tool_use = params(json!({
        "messages": [{"role": "assistant", "content": {"type": "tool_use", "id": "1", "name": "t", "input": {}}}],
        "maxTokens": 5
    }));
    assert!(
        to_sample(&tool_use, true, false)
            .unwrap_err()
            .message
            .contains("messages[0]")
    );
}

#[test]
fn hints_pick_a_known_model_or_the_sessions() {
    let known = vec!["gpt-4.1".to_owned(), "claude-3-5-sonnet".to_owned()];
    let mut p = text_request("x");
    assert_eq!(pick_model(&p, "main", &known), "main");
    p.model_preferences = Some(ModelPreferences::new().with_hints(vec![
        ModelHint::new("unknown-model"),
        ModelHint::new("sonnet"),
    ]));
    assert_eq!(pick_model(&p, "main", &known), "claude-3-5-sonnet");
    p.model_preferences = Some(ModelPreferences::new().with_hints(vec![ModelHint::new("gpt-4.1")]));
    assert_eq!(pick_model(&p, "main", &known), "gpt-4.1");
    // A one- or two-letter hint does not pick a model by accident.
    p.model_preferences = Some(ModelPreferences::new().with_hints(vec![ModelHint::new("t")]));
    assert_eq!(pick_model(&p, "main", &known), "main");
}

#[test]
fn stop_reasons_map() {
    assert_eq!(stop_reason(Some(&FinishReason::Length)), "maxTokens");
    assert_eq!(stop_reason(Some(&FinishReason::Stop)), "endTurn");
    assert_eq!(stop_reason(None), "endTurn");
}

#[test]
fn the_prompt_shows_the_request_cut_to_size() {
    let mut p = text_request(&"word ".repeat(10_000));
    p.system_prompt = Some("sys".repeat(10_000));
    let text = describe("srv", &p, "main", true);
    assert!(text.contains("srv asks the model (main)"), "{text}");
    assert!(text.contains("at most 50 tokens"));
    assert!(text.contains("characters in all"));
    assert!(text.len() < 6 * SHOWN_CHARS, "{}", text.len());
    assert!(text.contains("none is given to servers"));
}

/// A lent turn whose model must never be called.
fn no_model(read_only: bool, cancel: CancellationToken) -> Arc<dyn TurnModel> {
    Arc::new(NoModel { read_only, cancel })
}

/// A call of `srv` running in the session, as the sampling request's origin.
fn running_call(calls: &Progress, editor: Editor) -> crate::mcp::client::ProgressGuard<'_> {
    calls.register(
        ProgressToken(NumberOrString::Number(1)),
        editor,
        "call_1".into(),
    )
}

/// Asks for a sample of `text` and returns why it was refused.
async fn refused(s: &Sampler, text: &str) -> ErrorData {
    s.create_message(text_request(text), CancellationToken::new())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn outside_a_turn_or_a_call_of_the_server_it_is_refused() {
    let (hub, calls, s, editor) = sampler();
    let e = refused(&s, "hi").await;
    assert!(e.message.contains("only available while"), "{}", e.message);
    // A turn, but no call of this server running.
    let _lent = hub.lend(no_model(false, CancellationToken::new()));
    let e = refused(&s, "hi").await;
    assert!(e.message.contains("(srv)"), "{}", e.message);
    // A cancelled turn lends nothing.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let _lent = hub.lend(no_model(false, cancel));
    let _running = running_call(&calls, editor);
    let e = refused(&s, "hi").await;
    assert!(e.message.contains("only available while"), "{}", e.message);
}

#[tokio::test]
async fn read_only_refuses_without_asking_and_size_is_bounded() {
    let (hub, calls, s, editor) = sampler();
    let lent = hub.lend(no_model(true, CancellationToken::new()));
    let _running = running_call(&calls, editor);
    let e = refused(&s, "hi").await;
    assert!(e.message.contains("read-only"), "{}", e.message);
    // Checked first, whatever the turn: 10 MB are refused naming the limit.
    drop(lent);
    let e = refused(&s, &"x".repeat(10 << 20)).await;
    assert!(e.message.contains("1048576 bytes (1 MB)"), "{}", e.message);
    assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
}

#[test]
fn a_later_turn_is_not_cleared_by_an_earlier_guard() {
    let hub = Arc::new(Hub::default());
    let turn = || no_model(false, CancellationToken::new());
    let first = hub.lend(turn());
    let _second = hub.lend(turn());
    drop(first);
    assert!(hub.current().is_some());
}
