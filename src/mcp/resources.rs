//! MCP resources as two model-facing tools (issue 18 item 5; MCP 2025-11-25
//! "Server features: Resources"): `list_mcp_resources {server?}` lists the
//! resources and resource templates of the session's servers that offer
//! resources, `read_mcp_resource {server, uri}` reads one. Both are reads of
//! the servers' own data: kind `read`, allowed in every mode like reads
//! inside the roots (ACP §9 kinds; DESIGN's permission table).
//!
//! The tools are offered while at least one ready server declares the
//! `resources` capability; the manager rebuilds them with the tool list.
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ReadResourceRequestParams;
use rmcp::service::{Peer, RoleClient};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::acp::{ContentBlock, ImageContent, ToolCallContent, ToolKind};
use crate::tools::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, parse_args,
};

pub const LIST: &str = "list_mcp_resources";
pub const READ: &str = "read_mcp_resource";

/// Entries listed per server (a server may have thousands).
const LIST_MAX: usize = 200;

/// A ready server that offers resources.
#[derive(Clone)]
pub struct Server {
    pub name: String,
    pub peer: Peer<RoleClient>,
    /// Answers its input requests (`input_required`, `super::input`).
    pub asker: Arc<super::input::Asker>,
}

impl Server {
    /// `resources/read`, answering the server's input requests in between
    /// (shown with ACP tool call `tool_call`, if any).
    pub async fn read(
        &self,
        uri: &str,
        tool_call: Option<&str>,
    ) -> Result<rmcp::model::ReadResourceResult, super::input::InputError> {
        use super::input::Round;
        use rmcp::model::ReadResourceResponse;
        self.asker
            .drive(tool_call, |input_responses, request_state| {
                let mut params = ReadResourceRequestParams::new(uri.to_owned());
                params.input_responses = input_responses;
                params.request_state = request_state;
                let peer = self.peer.clone();
                async move {
                    match peer.read_resource_once(params).await? {
                        ReadResourceResponse::Complete(r) => Ok(Round::Done(r)),
                        ReadResourceResponse::InputRequired(r) => Ok(Round::Input(r)),
                        _ => Err(rmcp::service::ServiceError::UnexpectedResponse),
                    }
                }
            })
            .await
    }
}

/// `list_mcp_resources` or `read_mcp_resource` over the current servers.
pub struct ResourceTool {
    read: bool,
    servers: Vec<Server>,
    timeout: Duration,
    description: String,
}

impl ResourceTool {
    /// Both tools, or none when no server offers resources.
    pub fn pair(servers: Vec<Server>, timeout: Duration) -> Vec<ResourceTool> {
        if servers.is_empty() {
            return Vec::new();
        }
        let names = servers
            .iter()
            .map(|s| format!("`{}`", s.name))
            .collect::<Vec<_>>()
            .join(", ");
        vec![
            ResourceTool {
                read: false,
                servers: servers.clone(),
                timeout,
                description: format!(
                    "List the resources (and resource templates) of the MCP servers of this session that offer them ({names}). \
                     Omit `server` to list all. Read one with {READ}."
                ),
            },
            ResourceTool {
                read: true,
                servers,
                timeout,
                description: format!(
                    "Read a resource of an MCP server ({names}) by its URI, as listed by {LIST} or given in a resource link."
                ),
            },
        ]
    }

    fn server(&self, name: &str) -> Result<&Server, ToolError> {
        self.servers.iter().find(|s| s.name == name).ok_or_else(|| {
            ToolError::InvalidArgs(format!(
                "server: no MCP server named {name:?} offers resources; use one of: {}",
                self.servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    server: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    server: String,
    uri: String,
}

#[async_trait::async_trait]
impl Tool for ResourceTool {
    fn name(&self) -> &str {
        if self.read { READ } else { LIST }
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let names: Vec<&str> = self.servers.iter().map(|s| s.name.as_str()).collect();
        if self.read {
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "enum": names, "description": "The MCP server"},
                    "uri": {"type": "string", "description": "The resource URI"}
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            })
        } else {
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "enum": names, "description": "Only this MCP server"}
                },
                "additionalProperties": false
            })
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, args: &Value) -> String {
        match (self.read, args["server"].as_str(), args["uri"].as_str()) {
            (true, Some(s), Some(u)) => format!("Read MCP resource {s}: {u}"),
            (false, Some(s), _) => format!("List MCP resources of {s}"),
            _ if self.read => "Read an MCP resource".into(),
            _ => "List MCP resources".into(),
        }
    }

    async fn prepare(&self, args: Value, _ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let title = self.title(&args);
        let action: Box<dyn Action> = if self.read {
            let a: ReadArgs = parse_args(args)?;
            let server = self.server(&a.server)?.clone();
            Box::new(Read {
                server,
                uri: a.uri,
                timeout: self.timeout,
            })
        } else {
            let a: ListArgs = parse_args(args)?;
            let servers = match &a.server {
                Some(name) => vec![self.server(name)?.clone()],
                None => self.servers.clone(),
            };
            Box::new(List {
                servers,
                timeout: self.timeout,
            })
        };
        Ok(Invocation {
            title,
            kind: ToolKind::Read,
            locations: Vec::new(),
            content: Vec::new(),
            access: Access::External {
                tool: self.name().to_owned(),
                read_only: true,
                destructive: false,
            },
            action,
        })
    }
}

struct List {
    servers: Vec<Server>,
    timeout: Duration,
}

#[async_trait::async_trait]
impl Action for List {
    async fn run(self: Box<Self>, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut out = Vec::new();
        for s in &self.servers {
            let listed = tokio::time::timeout(self.timeout, async {
                let resources = s.peer.list_all_resources().await?;
                // Templates are optional: a server without them may error.
                let templates = s
                    .peer
                    .list_all_resource_templates()
                    .await
                    .unwrap_or_default();
                Ok::<_, rmcp::service::ServiceError>((resources, templates))
            })
            .await;
            match listed {
                Err(_) => out.push(format!(
                    "Server `{}`: did not answer within {} s.",
                    s.name,
                    self.timeout.as_secs()
                )),
                Ok(Err(e)) => out.push(format!(
                    "Server `{}`: listing its resources failed: {e}",
                    s.name
                )),
                Ok(Ok((resources, templates))) => {
                    let resources: Vec<Value> = resources
                        .iter()
                        .filter_map(|r| serde_json::to_value(r).ok())
                        .collect();
                    let templates: Vec<Value> = templates
                        .iter()
                        .filter_map(|r| serde_json::to_value(r).ok())
                        .collect();
                    out.push(render_list(&s.name, &resources, &templates));
                }
            }
        }
        Ok(ToolOutput::text(out.join("\n\n")))
    }
}

/// One server's resources and templates as lines for the model.
fn render_list(server: &str, resources: &[Value], templates: &[Value]) -> String {
    let line = |v: &Value, key: &str| {
        let mut s = format!(
            "- {} <{}>",
            v["title"].as_str().or(v["name"].as_str()).unwrap_or("?"),
            v[key].as_str().unwrap_or("?")
        );
        if let Some(m) = v["mimeType"].as_str() {
            s.push_str(&format!(" ({m})"));
        }
        if let Some(d) = v["description"].as_str().filter(|d| !d.is_empty()) {
            s.push_str(&format!(" — {}", crate::tools::sanitize_title(d, 300)));
        }
        s
    };
    let mut text = format!(
        "Server `{server}`: {} resource{}",
        resources.len(),
        if resources.len() == 1 { "" } else { "s" }
    );
    for r in resources.iter().take(LIST_MAX) {
        text.push('\n');
        text.push_str(&line(r, "uri"));
    }
    if resources.len() > LIST_MAX {
        text.push_str(&format!("\n… and {} more", resources.len() - LIST_MAX));
    }
    if !templates.is_empty() {
        text.push_str("\nResource templates (fill in the {…} parts and read the URI):");
        for t in templates.iter().take(LIST_MAX) {
            text.push('\n');
            text.push_str(&line(t, "uriTemplate"));
        }
    }
    text
}

struct Read {
    server: Server,
    uri: String,
    timeout: Duration,
}

#[async_trait::async_trait]
impl Action for Read {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Read {
            server,
            uri,
            timeout,
        } = *self;
        let read = server.read(&uri, Some(&ctx.tool_call_id));
        let result = match tokio::time::timeout(timeout, read).await {
            Err(_) => {
                return Err(ToolError::Failed(format!(
                    "the MCP server {} did not answer within {} s (mcp_tool_timeout_secs in the config)",
                    server.name,
                    timeout.as_secs()
                )));
            }
            Ok(Err(e)) => {
                return Err(ToolError::Failed(format!(
                    "the MCP server {} could not read {uri}: {e}",
                    server.name
                )));
            }
            Ok(Ok(r)) => r,
        };
        let value = serde_json::to_value(&result).unwrap_or(Value::Null);
        Ok(convert_contents(&value["contents"]))
    }
}

/// `resources/read` contents for the model and the editor: text inline,
/// images as image content (the model gets them, see [`super::rich`]),
/// other binaries described.
pub fn convert_contents(contents: &Value) -> ToolOutput {
    let mut model = Vec::new();
    let mut content = Vec::new();
    for c in contents.as_array().into_iter().flatten() {
        let uri = c["uri"].as_str().unwrap_or("?");
        let mime = c["mimeType"].as_str();
        if let Some(text) = c["text"].as_str() {
            model.push(format!(
                "<resource uri=\"{uri}\">\n{}\n</resource>",
                text.trim_end_matches('\n')
            ));
            content.push(ToolCallContent::text(text.to_owned()));
        } else if let Some(blob) = c["blob"].as_str() {
            let bytes = blob.len() / 4 * 3;
            match mime.filter(|m| m.starts_with("image/")) {
                Some(m) => {
                    model.push(format!(
                        "[image resource {uri}: {m}, {bytes} bytes; shown to the user]"
                    ));
                    content.push(ToolCallContent::Content {
                        content: ContentBlock::Image(ImageContent {
                            data: blob.to_owned(),
                            mime_type: m.to_owned(),
                            uri: Some(uri.to_owned()),
                        }),
                    });
                }
                None => model.push(format!(
                    "[binary resource {uri} ({}, {bytes} bytes): not shown]",
                    mime.unwrap_or("unknown type")
                )),
            }
        }
    }
    if model.is_empty() {
        model.push("(the resource is empty)".into());
    }
    ToolOutput {
        for_model: model.join("\n"),
        content,
        locations: None,
        raw_output: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_contents_read_well() {
        let text = render_list(
            "ev",
            &[
                json!({"uri": "demo://a", "name": "A", "mimeType": "text/plain", "description": "first\nline"}),
            ],
            &[json!({"uriTemplate": "demo://t/{id}", "name": "T"})],
        );
        assert_eq!(
            text,
            "Server `ev`: 1 resource\n- A <demo://a> (text/plain) — first line\nResource templates (fill in the {…} parts and read the URI):\n- T <demo://t/{id}>"
        );
        let out = convert_contents(&json!([
            {"uri": "demo://a", "text": "hello\n"},
            {"uri": "demo://i", "blob": "AAAA", "mimeType": "image/png"},
            {"uri": "demo://b", "blob": "AAAA", "mimeType": "application/zip"}
        ]));
        assert_eq!(
            out.for_model,
            "<resource uri=\"demo://a\">\nhello\n</resource>\n\
             [image resource demo://i: image/png, 3 bytes; shown to the user]\n\
             [binary resource demo://b (application/zip, 3 bytes): not shown]"
        );
        assert_eq!(crate::mcp::rich::media_of(&out.content).len(), 1);
    }
}
