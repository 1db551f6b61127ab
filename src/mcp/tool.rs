//! One MCP tool as a model-facing [`Tool`]: a call is a `tools/call` request
//! (MCP 2025-11-25 "Server features: Tools"), shown to the editor as an ACP
//! tool call (ACP §9) and permitted as [`Access::External`].
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, ServerResult, Tool as McpToolDef,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::Value;

use super::client::Progress;
use super::input::{Asker, InputError, Round};

use crate::acp::{ContentBlock, ResourceContents, ToolCallContent, ToolKind};
use crate::tools::{Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput};

/// A tool of a connected MCP server, under its model-facing name.
pub struct McpTool {
    /// `mcp__<server>__<tool>` (see [`super::names`]).
    pub model_name: String,
    pub server: String,
    pub def: McpToolDef,
    description: String,
    pub peer: Peer<RoleClient>,
    pub timeout: Duration,
    /// Where this server's progress notifications are routed.
    progress: Arc<Progress>,
    /// Answers an `input_required` result's requests (`super::input`).
    asker: Option<Arc<Asker>>,
}

impl McpTool {
    pub fn new(
        model_name: String,
        server: &str,
        def: McpToolDef,
        peer: Peer<RoleClient>,
        timeout: Duration,
    ) -> Self {
        let description = def
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("Tool {} of the MCP server {server}.", def.name));
        Self {
            model_name,
            server: server.to_owned(),
            def,
            description,
            peer,
            timeout,
            progress: Arc::default(),
            asker: None,
        }
    }

    /// Shares the server's progress routing (see [`super::client`]).
    pub fn with_progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// Answers the server's input requests (`input_required` results).
    pub fn with_asker(mut self, asker: Arc<Asker>) -> Self {
        self.asker = Some(asker);
        self
    }

    fn read_only(&self) -> bool {
        self.def
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false)
    }

    /// Only an explicit `destructiveHint: true` (the MCP default is true for
    /// any tool not read-only, which would make every call ask in full-auto).
    fn destructive(&self) -> bool {
        !self.read_only()
            && self
                .def
                .annotations
                .as_ref()
                .and_then(|a| a.destructive_hint)
                .unwrap_or(false)
    }

    fn open_world(&self) -> bool {
        self.def
            .annotations
            .as_ref()
            .and_then(|a| a.open_world_hint)
            .unwrap_or(false)
    }

    /// What the permission request says about the tool beyond its title.
    fn notes(&self) -> Vec<ToolCallContent> {
        let mut notes = Vec::new();
        if self.destructive() {
            notes.push(format!(
                "The MCP server {} marks this tool as destructive: it may delete or overwrite data.",
                self.server
            ));
        }
        if self.open_world() {
            notes.push(format!(
                "The MCP server {} marks this tool as open-world: it reaches outside this machine (the web or other external systems).",
                self.server
            ));
        }
        notes.into_iter().map(ToolCallContent::text).collect()
    }

    fn display_title(&self) -> String {
        let tool = self
            .def
            .title
            .as_deref()
            .or(self
                .def
                .annotations
                .as_ref()
                .and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.def.name);
        crate::tools::sanitize_title(&format!("{}: {tool}", self.server), 120)
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.model_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        Value::Object((*self.def.input_schema).clone())
    }

    /// `read` for tools annotated `readOnlyHint`, `delete` for an explicit
    /// `destructiveHint`, else `other` (ACP §9 kinds).
    fn kind(&self) -> ToolKind {
        if self.read_only() {
            ToolKind::Read
        } else if self.destructive() {
            ToolKind::Delete
        } else {
            ToolKind::Other
        }
    }

    fn title(&self, _args: &Value) -> String {
        self.display_title()
    }

    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let Value::Object(arguments) = args else {
            return Err(ToolError::InvalidArgs(
                "the arguments must be a JSON object".into(),
            ));
        };
        Ok(Invocation {
            title: self.display_title(),
            kind: self.kind(),
            locations: Vec::new(),
            content: self.notes(),
            access: Access::External {
                tool: self.model_name.clone(),
                read_only: self.read_only(),
                destructive: self.destructive(),
            },
            action: Box::new(Call {
                peer: self.peer.clone(),
                server: self.server.clone(),
                tool: self.def.name.to_string(),
                arguments,
                timeout: self.timeout,
                progress: self.progress.clone(),
                asker: self.asker.clone(),
                tool_call_id: ctx.tool_call_id.clone(),
            }),
        })
    }
}

struct Call {
    peer: Peer<RoleClient>,
    server: String,
    tool: String,
    arguments: serde_json::Map<String, Value>,
    timeout: Duration,
    progress: Arc<Progress>,
    asker: Option<Arc<Asker>>,
    tool_call_id: String,
}

#[async_trait::async_trait]
impl Action for Call {
    /// Dropping this future (the turn was cancelled) drops rmcp's request,
    /// which sends `notifications/cancelled` to the server (MCP
    /// "Utilities: Cancellation"); so does the timeout.
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Call {
            peer,
            server,
            tool,
            arguments,
            timeout,
            progress,
            asker,
            tool_call_id,
        } = *self;
        let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
        let round = |input_responses, request_state| {
            let mut params = params.clone();
            params.input_responses = input_responses;
            params.request_state = request_state;
            let (peer, progress) = (peer.clone(), progress.clone());
            let (editor, id) = (ctx.editor.clone(), tool_call_id.clone());
            async move { call_with_progress(&peer, params, &progress, &editor, &id).await }
        };
        let call = async {
            match &asker {
                Some(asker) => asker.drive(Some(&tool_call_id), round).await,
                None => match round(None, None).await {
                    Ok(Round::Done(r)) => Ok(r),
                    Ok(Round::Input(_)) => {
                        Err(InputError::Request(ServiceError::UnexpectedResponse))
                    }
                    Err(e) => Err(InputError::Request(e)),
                },
            }
        };
        let result = match tokio::time::timeout(timeout, call).await {
            Err(_) => {
                return Err(ToolError::Failed(format!(
                    "the MCP tool {tool} of server {server} did not answer within {} s and was cancelled \
                     (the limit is mcp_tool_timeout_secs in the acp-coder config)",
                    timeout.as_secs()
                )));
            }
            Ok(Err(InputError::Request(e))) => {
                return Err(ToolError::Failed(call_error(&server, &tool, &e)));
            }
            Ok(Err(e)) => {
                return Err(ToolError::Failed(format!(
                    "the MCP tool {tool} of server {server} did not finish: {e}"
                )));
            }
            Ok(Ok(r)) => r,
        };
        let value = serde_json::to_value(&result).unwrap_or(Value::Null);
        let out = convert(&value);
        if result.is_error == Some(true) {
            let text = if out.for_model.trim().is_empty() {
                "(no details)".to_owned()
            } else {
                out.for_model
            };
            return Err(ToolError::Failed(format!(
                "the MCP tool {tool} of server {server} reported an error: {text}"
            )));
        }
        Ok(out)
    }
}

/// One round of `tools/call` with rmcp's progress token routed to the ACP
/// tool call while it runs (MCP "Utilities: Progress"). Dropped before the
/// answer (turn cancelled, timeout), it sends `notifications/cancelled` for
/// the request.
async fn call_with_progress(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    progress: &Progress,
    editor: &crate::editor::Editor,
    tool_call_id: &str,
) -> Result<Round<CallToolResult>, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let _routed = progress.register(
        handle.progress_token.clone(),
        editor.clone(),
        tool_call_id.to_owned(),
    );
    let mut abandon = Abandon(Some((peer.clone(), handle.id.clone())));
    let answer = handle.await_response().await;
    abandon.0 = None;
    match answer? {
        ServerResult::CallToolResult(r) => Ok(Round::Done(r)),
        // Protocol 2026-07-28: the server needs answers first (`super::input`).
        ServerResult::InputRequiredResult(r) => Ok(Round::Input(r)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Sends `notifications/cancelled` for a request whose answer nobody awaits.
struct Abandon(Option<(Peer<RoleClient>, RequestId)>);

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some((peer, id)) = self.0.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move {
                let reason = "the agent's user cancelled the call, or it timed out".to_owned();
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                    .await;
            });
        }
    }
}

fn call_error(server: &str, tool: &str, e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => format!(
            "the MCP server {server} refused the call of {tool}: {} (JSON-RPC error {})",
            data.message, data.code.0
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
            "the MCP server {server} is gone (its connection closed) before {tool} finished; \
             its tools are no longer available"
        ),
        other => format!("the MCP tool {tool} of server {server} failed: {other}"),
    }
}

/// Converts a `CallToolResult` (as JSON) for the model and the editor:
/// text as is, images and audio as a note for the model (the blocks go to the
/// editor; the agent sends the images to the model after the results, see
/// [`super::rich`]), embedded resources inlined, resource links described, and
/// `structuredContent` as JSON unless a text block already carries it.
pub fn convert(result: &Value) -> ToolOutput {
    let mut model = Vec::<String>::new();
    let mut content = Vec::new();
    for raw in result["content"].as_array().into_iter().flatten() {
        let block: ContentBlock =
            serde_json::from_value(raw.clone()).unwrap_or(ContentBlock::Unknown);
        model.push(block_for_model(&block, raw));
        if !matches!(block, ContentBlock::Unknown) {
            content.push(ToolCallContent::Content { content: block });
        }
    }
    let structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    if let Some(s) = &structured
        && !carried_as_text(&content, s)
    {
        let json = serde_json::to_string(s).unwrap_or_default();
        model.push(format!("structuredContent: {json}"));
        content.push(ToolCallContent::text(
            serde_json::to_string_pretty(s).unwrap_or(json),
        ));
    }
    let for_model = if model.is_empty() {
        "(the tool returned no content)".to_owned()
    } else {
        model.join("\n")
    };
    ToolOutput {
        for_model,
        content,
        locations: None,
        raw_output: structured,
    }
}

/// What the model reads for one content block (`raw` names an unknown type).
fn block_for_model(block: &ContentBlock, raw: &Value) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!(
            "[image: {}, {} bytes; shown to the user]",
            i.mime_type,
            i.data.len() / 4 * 3
        ),
        ContentBlock::Audio(a) => format!(
            "[audio: {}, {} bytes{}]",
            a.mime_type,
            a.data.len() / 4 * 3,
            if super::rich::audio_format(&a.mime_type).is_some() {
                ""
            } else {
                "; a format models do not take (only WAV and MP3 audio is sent)"
            }
        ),
        ContentBlock::ResourceLink(l) => {
            let mut s = format!("[resource link: {} <{}>", l.name, l.uri);
            if let Some(m) = &l.mime_type {
                s.push_str(&format!(" ({m})"));
            }
            if let Some(d) = &l.description {
                s.push_str(&format!(" — {d}"));
            }
            s.push(']');
            s
        }
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::Text { uri, text, .. } => format!(
                "<resource uri=\"{uri}\">\n{}\n</resource>",
                text.trim_end_matches('\n')
            ),
            ResourceContents::Blob {
                uri,
                blob,
                mime_type,
            } => format!(
                "[embedded binary resource {uri} ({}, {} bytes)]",
                mime_type.as_deref().unwrap_or("unknown type"),
                blob.len() / 4 * 3
            ),
        },
        ContentBlock::Unknown => format!(
            "[content of type {} not shown]",
            raw["type"].as_str().unwrap_or("?")
        ),
    }
}

/// Whether a text block already carries `structured` as JSON (servers often
/// send both, MCP 2025-11-25 "Structured Content").
fn carried_as_text(content: &[ToolCallContent], structured: &Value) -> bool {
    content.iter().any(|c| {
        matches!(c, ToolCallContent::Content { content: ContentBlock::Text(t) }
            if serde_json::from_str::<Value>(&t.text).ok().as_ref() == Some(structured))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_convert_for_model_and_editor() {
        let out = convert(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///x.txt", "name": "x.txt", "mimeType": "text/plain"},
                {"type": "resource", "resource": {"uri": "mem://a", "text": "body\n", "mimeType": "text/plain"}},
                {"type": "hologram"}
            ],
            "structuredContent": {"sum": 3}
        }));
        assert!(
            out.for_model
                .starts_with("hello\n[image: image/png, 3 bytes; shown to the user]")
        );
        assert!(
            out.for_model
                .contains("[resource link: x.txt <file:///x.txt> (text/plain)]")
        );
        assert!(
            out.for_model
                .contains("<resource uri=\"mem://a\">\nbody\n</resource>")
        );
        assert!(
            out.for_model
                .contains("[content of type hologram not shown]")
        );
        assert!(out.for_model.ends_with("structuredContent: {\"sum\":3}"));
        assert_eq!(out.content.len(), 5, "4 blocks and the structured JSON");
        assert_eq!(out.raw_output, Some(json!({"sum": 3})));

        let out = convert(&json!({
            "content": [{"type": "text", "text": "{\"sum\": 3}"}],
            "structuredContent": {"sum": 3}
        }));
        assert_eq!(out.for_model, "{\"sum\": 3}", "not repeated");
        assert_eq!(
            convert(&json!({"content": []})).for_model,
            "(the tool returned no content)"
        );
    }
}
