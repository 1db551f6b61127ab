//! Context compaction: before the context window fills, older turns are
//! replaced by a summary the model writes, and the user is told it happened.
//! `/compact` runs the same on demand.
use tokio_util::sync::CancellationToken;

use crate::acp::{
    CompactionStatus, CompactionSummaryChunk, CompactionUpdate, ContentBlock, SessionUpdate,
};
use crate::llm::{ChatMessage, UserPart};
use crate::rpc::RpcError;

use crate::agent::engine::model_call::{self, Outcome, TurnEnv, status};
use crate::agent::session::{History, Session};
use crate::agent::store::{Record, StoredMessage};

/// What started a compaction, which decides how much is summarized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The window is filling up: keep the current turn, summarize the rest.
    Auto,
    /// `/compact`: summarize everything.
    Manual,
}

const INSTRUCTIONS: &str = include_str!("../../../prompts/compact.md");
/// Compact when the next request would use this share of the window.
const THRESHOLD: f64 = 0.8;
/// Each tool output is cut to this many characters in the transcript to summarize.
const TOOL_OUTPUT_IN_TRANSCRIPT: usize = 2000;

fn chars(m: &ChatMessage) -> usize {
    match m {
        ChatMessage::System(t) => t.len(),
        ChatMessage::User(parts) => parts
            .iter()
            .map(|p| match p {
                UserPart::Text(t) => t.len(),
                // Providers bill images at roughly a thousand tokens.
                UserPart::ImageUrl(_) => 4000,
                // Base64 audio: its tokens grow with its length.
                UserPart::InputAudio { data, .. } => data.len() / 8,
            })
            .sum(),
        ChatMessage::Assistant {
            text, tool_calls, ..
        } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>()
        }
        ChatMessage::Tool { content, .. } => content.len(),
    }
}

/// Tokens the next request will take: the last measured count plus an
/// estimate (4 characters a token) of what was added since.
pub fn estimate(session: &Session, history: &History) -> u64 {
    if history.context_tokens > 0 && history.counted_messages <= history.messages.len() + 1 {
        let from = history
            .counted_messages
            .saturating_sub(1)
            .min(history.messages.len());
        let added: usize = history.messages[from..].iter().map(chars).sum();
        return history.context_tokens + (added / 4) as u64;
    }
    let tools: usize = session
        .registry
        .specs()
        .iter()
        .map(|t| t.description.len() + t.parameters.to_string().len())
        .sum();
    let all: usize =
        history.messages.iter().map(chars).sum::<usize>() + session.system_prompt().len() + tools;
    (all / 4) as u64
}

pub fn needed(env: &TurnEnv, session: &Session, history: &History) -> bool {
    estimate(session, history) as f64 >= env.context_window() as f64 * THRESHOLD
}

/// Compacts `history`. Returns whether anything was summarized.
pub async fn run(
    env: &TurnEnv,
    session: &Session,
    history: &mut History,
    cancel: &CancellationToken,
    why: Why,
    focus: Option<&str>,
) -> Result<bool, RpcError> {
    let split = match why {
        Why::Manual => history.messages.len(),
        Why::Auto => history
            .messages
            .iter()
            .rposition(|m| matches!(m, ChatMessage::User(_)))
            .unwrap_or(0),
    };
    if split == 0 {
        // Nothing before the current turn: make room by trimming old tool output.
        return Ok(trim_tool_outputs(history));
    }
    let shown = Shown::start(session);
    let summary = match summarize(env, session, history, split, cancel, focus).await {
        Ok(Some(summary)) => summary,
        Ok(None) => {
            shown.end(session, CompactionStatus::Cancelled, None);
            return Ok(false);
        }
        Err(e) => {
            shown.end(session, CompactionStatus::Failed, Some(e.message.clone()));
            return Err(e);
        }
    };
    let before = history.messages.len();
    let kept = history.messages.split_off(split);
    history.messages = vec![ChatMessage::user_text(format!(
        "[This conversation was compacted to save context. Summary of everything before this point:]\n\n{}",
        summary.trim()
    ))];
    history.messages.extend(kept);
    history.context_tokens = 0;
    history.counted_messages = 0;
    session.record(&Record::Compaction {
        history: history
            .messages
            .iter()
            .filter_map(StoredMessage::from_chat)
            .collect(),
    });
    match &shown {
        Shown::Updates(id) => {
            let chunk = CompactionSummaryChunk {
                compaction_id: id.clone(),
                content: ContentBlock::text(summary.trim()),
            };
            session
                .editor
                .update(&SessionUpdate::CompactionSummaryChunk(chunk));
        }
        Shown::Text => status(
            session,
            &format!("Context compacted: {split} of {before} messages replaced by a summary."),
        ),
    }
    shown.end(session, CompactionStatus::Completed, None);
    Ok(true)
}

/// How the user follows a compaction: `compaction_update`s to a client
/// that advertised `session.compaction` (schema 1.20), status text otherwise.
enum Shown {
    Updates(String),
    Text,
}

impl Shown {
    fn start(session: &Session) -> Shown {
        if !session.editor.capabilities().compaction() {
            status(session, "Compacting the conversation to free context…");
            return Shown::Text;
        }
        let id = format!("cmp_{:016x}", fastrand::u64(..));
        let shown = Shown::Updates(id);
        shown.send(session, CompactionStatus::InProgress, None);
        shown
    }

    fn end(&self, session: &Session, status: CompactionStatus, error: Option<String>) {
        if let Shown::Updates(_) = self {
            self.send(session, status, error);
        }
    }

    fn send(&self, session: &Session, status: CompactionStatus, error: Option<String>) {
        if let Shown::Updates(id) = self {
            session
                .editor
                .update(&SessionUpdate::CompactionUpdate(CompactionUpdate {
                    compaction_id: id.clone(),
                    status,
                    error,
                }));
        }
    }
}

/// Asks the model for the summary of `history[..split]`; `None` when cancelled.
async fn summarize(
    env: &TurnEnv,
    session: &Session,
    history: &History,
    split: usize,
    cancel: &CancellationToken,
    focus: Option<&str>,
) -> Result<Option<String>, RpcError> {
    let transcript = render(&history.messages[..split], env.context_window());
    let mut ask =
        format!("Here is the conversation so far:\n\n{transcript}\n\nWrite the summary now.");
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        ask.push_str(&format!("\n\nThe user asked to focus on: {f}"));
    }
    let messages = vec![
        ChatMessage::System(INSTRUCTIONS.into()),
        ChatMessage::user_text(ask),
    ];
    let request = model_call::request(env, &messages, Vec::new(), false);
    match model_call::call_model(env, session, &request, cancel, false).await? {
        Outcome::Cancelled { .. } => Ok(None),
        Outcome::Done(c) if c.text.trim().is_empty() => Err(RpcError::internal(
            "the model returned an empty summary; the conversation was left as it was",
        )),
        Outcome::Done(c) => Ok(Some(c.text)),
    }
}

/// A plain-text transcript for the summarizer, newest part kept if too long.
fn render(messages: &[ChatMessage], window: u64) -> String {
    let mut out = String::new();
    for m in messages {
        match m {
            ChatMessage::System(_) => {}
            ChatMessage::User(parts) => {
                out.push_str("## User\n");
                for p in parts {
                    match p {
                        UserPart::Text(t) => out.push_str(t),
                        UserPart::ImageUrl(_) => out.push_str("[image]"),
                        UserPart::InputAudio { .. } => out.push_str("[audio]"),
                    }
                    out.push('\n');
                }
            }
            ChatMessage::Assistant {
                text, tool_calls, ..
            } => {
                out.push_str("## Assistant\n");
                if !text.is_empty() {
                    out.push_str(text);
                    out.push('\n');
                }
                for c in tool_calls {
                    out.push_str(&format!(
                        "[called {} {}]\n",
                        c.name,
                        crate::utf8::shorten(&c.arguments, TOOL_OUTPUT_IN_TRANSCRIPT)
                    ));
                }
            }
            ChatMessage::Tool { content, .. } => {
                out.push_str("## Tool result\n");
                out.push_str(&crate::utf8::shorten(content, TOOL_OUTPUT_IN_TRANSCRIPT));
                out.push('\n');
            }
        }
    }
    // Leave room for the instructions and the answer: at most half the window.
    let max_chars = (window as usize).saturating_mul(2).max(8000);
    if out.len() > max_chars {
        out = format!(
            "[… the oldest part of the conversation is omitted …]\n{}",
            crate::utf8::tail(&out, max_chars)
        );
    }
    out
}

/// Shortens large tool outputs except the two most recent. Returns whether anything changed.
fn trim_tool_outputs(history: &mut History) -> bool {
    let tool_positions: Vec<usize> = history
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, ChatMessage::Tool { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut changed = false;
    for &i in tool_positions.iter().rev().skip(2) {
        // Only outputs well over the cut, so a trimmed one is never trimmed again.
        if let ChatMessage::Tool { content, .. } = &mut history.messages[i]
            && content.len() > TOOL_OUTPUT_IN_TRANSCRIPT * 2
        {
            *content = format!(
                "{}\n[… output trimmed to save context …]",
                crate::utf8::shorten(content, TOOL_OUTPUT_IN_TRANSCRIPT)
            );
            changed = true;
        }
    }
    if changed {
        history.context_tokens = 0;
        history.counted_messages = 0;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_keeps_recent_outputs() {
        let mut h = History::default();
        for i in 0..4 {
            h.messages.push(ChatMessage::Tool {
                tool_call_id: format!("c{i}"),
                content: "x".repeat(5000),
            });
        }
        assert!(trim_tool_outputs(&mut h));
        let lens: Vec<usize> = h.messages.iter().map(chars).collect();
        assert!(lens[0] < 3000 && lens[1] < 3000);
        assert_eq!((lens[2], lens[3]), (5000, 5000));
        assert!(!trim_tool_outputs(&mut h));
    }

    #[test]
    fn transcript_is_bounded() {
        let msgs = vec![
            ChatMessage::user_text("a".repeat(100_000)),
            ChatMessage::user_text("tail"),
        ];
        let t = render(&msgs, 1000);
        assert!(t.len() < 9000 && t.ends_with("tail\n"));
    }
}
