//! ContentBlock (ACP §8): MCP-compatible blocks, discriminated by `type`.
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Meta;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text(TextContent),
    Image(ImageContent),
    Audio(AudioContent),
    ResourceLink(ResourceLink),
    Resource(EmbeddedResource),
    /// A block type this agent does not know; kept so the rest of the prompt still works.
    #[serde(other, skip_serializing)]
    Unknown,
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Meta,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    pub data: String,
    pub mime_type: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    pub uri: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    pub resource: ResourceContents,
}

/// Text or binary contents of an embedded resource (told apart by `text`/`blob`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    Text {
        uri: String,
        text: String,
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    Blob {
        uri: String,
        blob: String,
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// Turns a `file://` URI into a path; other schemes give `None`.
pub fn file_uri_to_path(uri: &str) -> Option<std::path::PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/abs` and `file:///abs`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    Some(std::path::PathBuf::from(percent_decode(rest)))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_block_types_do_not_fail() {
        let blocks: Vec<ContentBlock> = serde_json::from_str(
            r#"[{"type":"text","text":"hi","_meta":{"k":1}},{"type":"hologram","x":1},
                {"type":"resource","resource":{"uri":"file:///a.rs","text":"fn main(){}"}},
                {"type":"resource_link","uri":"file:///a%20b.rs","name":"a b.rs"}]"#,
        )
        .unwrap();
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[1], ContentBlock::Unknown);
        assert!(
            matches!(&blocks[2], ContentBlock::Resource(r) if matches!(r.resource, ResourceContents::Text { .. }))
        );
    }

    #[test]
    fn text_serializes_exactly() {
        let v = serde_json::to_value(ContentBlock::text("x")).unwrap();
        assert_eq!(v, serde_json::json!({"type":"text","text":"x"}));
    }

    #[test]
    fn file_uris() {
        assert_eq!(
            file_uri_to_path("file:///a%20b/c.rs").unwrap(),
            std::path::PathBuf::from("/a b/c.rs")
        );
        assert_eq!(
            file_uri_to_path("file://localhost/x").unwrap(),
            std::path::PathBuf::from("/x")
        );
        assert!(file_uri_to_path("https://x/y").is_none());
        assert_eq!(
            file_uri_to_path("file:///100%").unwrap(),
            std::path::PathBuf::from("/100%")
        );
    }
}
