//! Rich tool results for the model (issue 18 item 7). Chat-completions tool
//! messages carry text only, so the images and audio a call returned (MCP
//! tools give them as `image`/`audio` content, which the editor shows as ACP
//! content, ACP §9) follow the batch of tool results as one user message of
//! `image_url` / `input_audio` parts, when the model accepts them: images
//! by default (`images = false` in its `[models."…"]` table turns that off),
//! audio only with `audio = true` (most chat models refuse audio input).
use crate::acp::{ContentBlock, ToolCallContent};
use crate::llm::{ChatMessage, UserPart};

/// Media parts kept per batch of tool calls (the rest are named, not sent).
const MAX_MEDIA: usize = 8;
/// Largest image or audio sent to the model, as base64 characters (~5 MB
/// decoded): bigger ones are refused by the endpoints anyway.
const MAX_MEDIA_BASE64: usize = 7_000_000;

/// The `input_audio` format of an audio MIME type: chat-completions takes
/// `wav` and `mp3` only.
pub fn audio_format(mime: &str) -> Option<&'static str> {
    match mime.split(';').next().unwrap_or("").trim() {
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" | "audio/mpeg3" => Some("mp3"),
        _ => None,
    }
}

/// The model parts of the images and (sendable) audio in a call's editor
/// content.
pub fn media_of(content: &[ToolCallContent]) -> Vec<UserPart> {
    content
        .iter()
        .filter_map(|c| match c {
            ToolCallContent::Content {
                content: ContentBlock::Image(i),
            } if i.mime_type.starts_with("image/") => Some(UserPart::ImageUrl(format!(
                "data:{};base64,{}",
                i.mime_type, i.data
            ))),
            ToolCallContent::Content {
                content: ContentBlock::Audio(a),
            } => audio_format(&a.mime_type).map(|format| UserPart::InputAudio {
                data: a.data.clone(),
                format: format.to_owned(),
            }),
            _ => None,
        })
        .collect()
}

/// Keeps the parts the model accepts; the note for the call's result when
/// some were dropped.
pub fn accepted(
    media: Vec<UserPart>,
    images: bool,
    audio: bool,
) -> (Vec<UserPart>, Option<&'static str>) {
    let (mut kept, mut note) = (Vec::new(), None);
    for part in media {
        match part {
            UserPart::ImageUrl(_) if !images => note = Some(NOT_SENT),
            UserPart::InputAudio { .. } if !audio => note = Some(AUDIO_NOT_SENT),
            p => kept.push(p),
        }
    }
    (kept, note)
}

/// The user message that shows the model the images and audio of a batch
/// of calls (`(tool_call_id, part)` pairs), if there are any.
pub fn media_message(media: &[(String, UserPart)]) -> Option<ChatMessage> {
    if media.is_empty() {
        return None;
    }
    let mut parts = vec![UserPart::Text(
        "The images and audio returned by the tool calls above follow (the user gets them too)."
            .into(),
    )];
    let mut left_out = Vec::new();
    let mut sent = 0;
    for (call, part) in media {
        let (what, size) = match part {
            UserPart::ImageUrl(u) => ("Image", u.len()),
            UserPart::InputAudio { data, .. } => ("Audio", data.len()),
            UserPart::Text(_) => continue,
        };
        if sent >= MAX_MEDIA || size > MAX_MEDIA_BASE64 {
            left_out.push(call.as_str());
            continue;
        }
        sent += 1;
        parts.push(UserPart::Text(format!("{what} from tool call {call}:")));
        parts.push(part.clone());
    }
    if !left_out.is_empty() {
        parts.push(UserPart::Text(format!(
            "Images or audio of calls {} are not included (more than {MAX_MEDIA}, or larger than about 5 MB).",
            left_out.join(", ")
        )));
    }
    Some(ChatMessage::User(parts))
}

/// Added to a call's result when its images are not sent to the model.
pub const NOT_SENT: &str =
    "(The image was shown to the user only: this model is configured with `images = false`.)";
/// Added to a call's result when its audio is not sent to the model.
pub const AUDIO_NOT_SENT: &str = "(The audio went to the user only: audio reaches the model only when its `[models.\"…\"]` table has `audio = true`.)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::{AudioContent, ImageContent};

    fn img(mime: &str) -> ToolCallContent {
        ToolCallContent::Content {
            content: ContentBlock::Image(ImageContent {
                data: "AAAA".into(),
                mime_type: mime.into(),
                uri: None,
            }),
        }
    }

    fn audio(mime: &str) -> ToolCallContent {
        serde_json::from_value(serde_json::json!({
            "type": "content",
            "content": {"type": "audio", "data": "UklG", "mimeType": mime}
        }))
        .unwrap()
    }

    #[test]
    fn images_go_after_the_results_within_bounds() {
        let urls = media_of(&[
            img("image/png"),
            ToolCallContent::text("x"),
            img("text/html"),
        ]);
        assert_eq!(
            urls,
            [UserPart::ImageUrl("data:image/png;base64,AAAA".into())]
        );
        assert!(media_message(&[]).is_none());
        let mut many: Vec<(String, UserPart)> = (0..10)
            .map(|i| (format!("c{i}"), urls[0].clone()))
            .collect();
        many.push((
            "big".into(),
            UserPart::ImageUrl("x".repeat(MAX_MEDIA_BASE64 + 1)),
        ));
        let Some(ChatMessage::User(parts)) = media_message(&many) else {
            panic!("no message")
        };
        let sent = parts
            .iter()
            .filter(|p| matches!(p, UserPart::ImageUrl(_)))
            .count();
        assert_eq!(sent, MAX_MEDIA);
        let UserPart::Text(last) = parts.last().unwrap() else {
            panic!()
        };
        assert!(last.contains("c8, c9, big"), "{last}");
    }

    /// Audio in a format the API takes becomes an `input_audio` part, and
    /// only for a model configured with `audio = true`.
    #[test]
    fn audio_goes_to_models_that_accept_it() {
        let _: AudioContent =
            serde_json::from_value(serde_json::json!({"data": "UklG", "mimeType": "audio/wav"}))
                .unwrap();
        let media = media_of(&[audio("audio/wav"), audio("audio/ogg"), img("image/png")]);
        assert_eq!(media.len(), 2, "ogg is not a format the API takes");
        assert_eq!(
            media[0],
            UserPart::InputAudio {
                data: "UklG".into(),
                format: "wav".into()
            }
        );
        assert_eq!(audio_format("audio/mpeg"), Some("mp3"));
        let (kept, note) = accepted(media.clone(), true, false);
        assert_eq!(kept, [media[1].clone()]);
        assert_eq!(note, Some(AUDIO_NOT_SENT));
        let (kept, note) = accepted(media.clone(), false, true);
        assert_eq!(kept, [media[0].clone()]);
        assert_eq!(note, Some(NOT_SENT));
        let (kept, note) = accepted(media.clone(), true, true);
        assert_eq!((kept.len(), note), (2, None));
        let Some(ChatMessage::User(parts)) = media_message(&[("a1".into(), media[0].clone())])
        else {
            panic!()
        };
        assert_eq!(parts[1], UserPart::Text("Audio from tool call a1:".into()));
        assert_eq!(parts[2], media[0]);
    }
}
