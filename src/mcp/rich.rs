//! Rich tool results for the model (issue 18 item 7). Chat-completions tool
//! messages carry text only, so the images a call returned (MCP tools give
//! them as `image` content, which the editor shows as ACP image content,
//! ACP §9) follow the batch of tool results as one user message of image
//! parts, when the model accepts images (`images = false` in its
//! `[models."…"]` table turns that off).
use crate::acp::{ContentBlock, ToolCallContent};
use crate::llm::{ChatMessage, UserPart};

/// Images kept per batch of tool calls (the rest are named, not sent).
const MAX_IMAGES: usize = 8;
/// Largest image sent to the model, as base64 characters (~5 MB decoded):
/// bigger ones are refused by the endpoints anyway.
const MAX_IMAGE_BASE64: usize = 7_000_000;

/// The `data:` URLs of the images in a call's editor content.
pub fn images_of(content: &[ToolCallContent]) -> Vec<String> {
    content
        .iter()
        .filter_map(|c| match c {
            ToolCallContent::Content {
                content: ContentBlock::Image(i),
            } if i.mime_type.starts_with("image/") => {
                Some(format!("data:{};base64,{}", i.mime_type, i.data))
            }
            _ => None,
        })
        .collect()
}

/// The user message that shows the model the images of a batch of calls
/// (`(tool_call_id, data URL)` pairs), if there are any.
pub fn images_message(images: &[(String, String)]) -> Option<ChatMessage> {
    if images.is_empty() {
        return None;
    }
    let mut parts = vec![UserPart::Text(
        "The images returned by the tool calls above follow (the user sees them too).".into(),
    )];
    let mut left_out = Vec::new();
    let mut sent = 0;
    for (call, url) in images {
        if sent >= MAX_IMAGES || url.len() > MAX_IMAGE_BASE64 {
            left_out.push(call.as_str());
            continue;
        }
        sent += 1;
        parts.push(UserPart::Text(format!("Image from tool call {call}:")));
        parts.push(UserPart::ImageUrl(url.clone()));
    }
    if !left_out.is_empty() {
        parts.push(UserPart::Text(format!(
            "Images of calls {} are not included (more than {MAX_IMAGES} images, or larger than about 5 MB).",
            left_out.join(", ")
        )));
    }
    Some(ChatMessage::User(parts))
}

/// Added to a call's result when its images are not sent to the model.
pub const NOT_SENT: &str =
    "(The image was shown to the user only: this model is configured with `images = false`.)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::ImageContent;

    #[test]
    fn images_go_after_the_results_within_bounds() {
        let img = |mime: &str| ToolCallContent::Content {
            content: ContentBlock::Image(ImageContent {
                data: "AAAA".into(),
                mime_type: mime.into(),
                uri: None,
            }),
        };
        let urls = images_of(&[
            img("image/png"),
            ToolCallContent::text("x"),
            img("text/html"),
        ]);
        assert_eq!(urls, ["data:image/png;base64,AAAA"]);
        assert!(images_message(&[]).is_none());
        let mut many: Vec<(String, String)> = (0..10)
            .map(|i| (format!("c{i}"), urls[0].clone()))
            .collect();
        many.push(("big".into(), "x".repeat(MAX_IMAGE_BASE64 + 1)));
        let Some(ChatMessage::User(parts)) = images_message(&many) else {
            panic!("no message")
        };
        let sent = parts
            .iter()
            .filter(|p| matches!(p, UserPart::ImageUrl(_)))
            .count();
        assert_eq!(sent, MAX_IMAGES);
        let UserPart::Text(last) = parts.last().unwrap() else {
            panic!()
        };
        assert!(last.contains("c8, c9, big"), "{last}");
    }
}
