//! Rebuilding a stored session: its model history and the updates that replay
//! the conversation to the editor (ACP §5.3: `session/load` replays the whole
//! conversation before it answers).
use std::collections::HashSet;

use crate::acp::{ContentChunk, Plan, SessionUpdate};
use crate::llm::ChatMessage;

use crate::agent::store::{Record, StoredMessage};

#[derive(Default)]
pub struct Restored {
    /// Set by `session/load` when another process holds the session's log
    /// (its pid, when known): the session is open read-only.
    pub held_by: Option<Option<u32>>,
    pub cwd: Option<String>,
    pub additional_directories: Vec<String>,
    /// Added by `/add-dir` during the session, in order.
    pub added_directories: Vec<String>,
    pub created_at: Option<String>,
    pub history: Vec<ChatMessage>,
    pub replay: Vec<SessionUpdate>,
    pub mode: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub title: Option<String>,
    pub tool_ids: HashSet<String>,
}

/// The replayed message id of record `n`. A turn's thought and its answer
/// are two messages live (`turn.rs` gives each its own id), so they stay two
/// on replay: the thought gets the `_thought` suffix (issue 17, "small fixes").
fn message_id(n: usize) -> Option<String> {
    Some(format!("replay_{n}"))
}

fn thought_id(n: usize) -> Option<String> {
    Some(format!("replay_{n}_thought"))
}

/// Folds records into a session state. Never fails: odd records are skipped.
///
/// Each replayed update remembers the model-history message it belongs to,
/// so that an `/undo` or `/rewind` (a [`Record::Undo`]) removes the undone
/// turns' user messages, answers and tool calls (with their diffs) from the
/// replay as it removes them from the history: a reloaded session shows what
/// the model sees. Updates from before a compaction stay (their messages are
/// only a summary now, which an undo cannot split).
pub fn restore(records: Vec<Record>) -> Restored {
    let mut r = Restored::default();
    // Per replayed update: the history index of its message.
    let mut at: Vec<Option<usize>> = Vec::new();
    for (n, record) in records.into_iter().enumerate() {
        // User and assistant updates belong to the message they push; tool
        // calls and plans to the last message of their turn so far.
        let next_message = Some(r.history.len());
        let last_message = Some(r.history.len().saturating_sub(1));
        let owner = match &record {
            Record::User { .. } | Record::Assistant(_) => next_message,
            _ => last_message,
        };
        match record {
            Record::Meta {
                cwd,
                additional_directories,
                created_at,
                ..
            } => {
                r.cwd = Some(cwd);
                r.additional_directories = additional_directories;
                r.created_at = Some(created_at);
            }
            Record::AddDir { path } => {
                if !r.added_directories.contains(&path) {
                    r.added_directories.push(path);
                }
            }
            Record::User { prompt, message } => {
                for block in prompt {
                    r.replay.push(SessionUpdate::UserMessageChunk(ContentChunk {
                        content: block,
                        message_id: message_id(n),
                    }));
                }
                r.history.push(message.to_chat());
            }
            Record::Assistant(a) => {
                if !a.reasoning.is_empty() {
                    r.replay.push(SessionUpdate::agent_thought(
                        a.reasoning.clone(),
                        thought_id(n),
                    ));
                }
                if !a.text.is_empty() {
                    r.replay
                        .push(SessionUpdate::agent_text(a.text.clone(), message_id(n)));
                }
                r.history.push(a.to_chat());
            }
            Record::ToolCall { call } => {
                r.tool_ids.insert(call.tool_call_id.clone());
                r.replay.push(SessionUpdate::ToolCall(*call));
            }
            Record::ToolResult {
                tool_call_id,
                content,
            } => r.history.push(ChatMessage::Tool {
                tool_call_id,
                content,
            }),
            Record::Plan { entries } => r.replay.push(SessionUpdate::Plan(Plan { entries })),
            Record::Mode { mode } => r.mode = Some(mode),
            Record::Model { model } => r.model = Some(model),
            Record::ReasoningEffort { effort } => r.reasoning_effort = effort,
            Record::Title { title } => r.title = Some(title),
            Record::Compaction { history } => {
                r.history = history.iter().map(StoredMessage::to_chat).collect();
                at.iter_mut().for_each(|a| *a = None);
            }
            Record::Undo { start, end } => {
                let end = if start <= end && end <= r.history.len() {
                    r.history.drain(start..end);
                    end
                } else {
                    r.history.truncate(start);
                    usize::MAX
                };
                undo_replay(&mut r.replay, &mut at, start, end);
            }
            Record::Cursor { .. } | Record::Unknown => {}
        }
        at.resize(r.replay.len(), owner);
    }
    r.history = well_formed(std::mem::take(&mut r.history));
    r
}

/// Drops the replayed updates of history messages `[start, end)` and moves
/// those of later messages down, as [`Record::Undo`] does to the history.
fn undo_replay(
    replay: &mut Vec<SessionUpdate>,
    at: &mut Vec<Option<usize>>,
    start: usize,
    end: usize,
) {
    let mut keep = at.iter().map(|a| !a.is_some_and(|i| i >= start && i < end));
    replay.retain(|_| keep.next().unwrap_or(true));
    at.retain(|a| !a.is_some_and(|i| i >= start && i < end));
    for a in at.iter_mut().flatten() {
        if *a >= end {
            *a -= end - start;
        }
    }
}

/// The result given to a call whose result was never recorded.
pub const INTERRUPTED: &str = "Error: interrupted; the agent stopped before this call finished.";

/// A history every OpenAI-style endpoint accepts, whatever the log held
/// (issue 14: a crash, a damaged line or a second writer): each `tool`
/// message directly follows the assistant message that made the call, each
/// call is answered once, in call order, and call ids are unique.
///
/// - a call without a result (the agent stopped, the line was lost) gets an
///   [`INTERRUPTED`] result;
/// - a result whose call is not in the assistant message just before it
///   (that record was damaged, the result came first, or it repeats one) is
///   dropped;
/// - a call whose id is empty or was used before is dropped with its result;
///   an assistant message left with nothing in it is dropped.
fn well_formed(history: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(history.len());
    let mut used = HashSet::new();
    let mut dropped = 0usize;
    let mut it = history.into_iter().peekable();
    while let Some(message) = it.next() {
        match message {
            ChatMessage::Assistant {
                text,
                reasoning,
                mut tool_calls,
            } => {
                let before = tool_calls.len();
                tool_calls.retain(|c| !c.id.is_empty() && used.insert(c.id.clone()));
                dropped += before - tool_calls.len();
                let mut results = std::collections::HashMap::new();
                while matches!(it.peek(), Some(ChatMessage::Tool { .. })) {
                    if let Some(ChatMessage::Tool {
                        tool_call_id,
                        content,
                    }) = it.next()
                    {
                        if tool_calls.iter().any(|c| c.id == tool_call_id)
                            && !results.contains_key(&tool_call_id)
                        {
                            results.insert(tool_call_id, content);
                        } else {
                            dropped += 1;
                        }
                    }
                }
                if text.is_empty() && reasoning.is_empty() && tool_calls.is_empty() {
                    continue;
                }
                let answers: Vec<ChatMessage> = tool_calls
                    .iter()
                    .map(|c| ChatMessage::Tool {
                        tool_call_id: c.id.clone(),
                        content: results
                            .remove(&c.id)
                            .unwrap_or_else(|| INTERRUPTED.to_owned()),
                    })
                    .collect();
                out.push(ChatMessage::Assistant {
                    text,
                    reasoning,
                    tool_calls,
                });
                out.extend(answers);
            }
            ChatMessage::Tool { .. } => dropped += 1,
            other => out.push(other),
        }
    }
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "the session log held tool calls or results out of place; they were left out of the history"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::ContentBlock;
    use crate::agent::store::{StoredAssistant, StoredPart, StoredToolCall};

    #[test]
    fn replays_in_order_and_repairs_history() {
        let records = vec![
            Record::Meta {
                v: 1,
                cwd: "/p".into(),
                additional_directories: vec![],
                created_at: "t".into(),
            },
            Record::User {
                prompt: vec![ContentBlock::text("fix it")],
                message: StoredMessage::User {
                    parts: vec![StoredPart::Text {
                        text: "fix it".into(),
                    }],
                },
            },
            Record::Assistant(StoredAssistant {
                text: "Looking".into(),
                reasoning: "hmm".into(),
                tool_calls: vec![StoredToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            }),
            Record::Mode {
                mode: "full-auto".into(),
            },
        ];
        let r = restore(records);
        let kinds: Vec<&str> = r
            .replay
            .iter()
            .map(|u| match u {
                SessionUpdate::UserMessageChunk(_) => "user",
                SessionUpdate::AgentThoughtChunk(_) => "thought",
                SessionUpdate::AgentMessageChunk(_) => "text",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["user", "thought", "text"]);
        let ids: Vec<Option<&str>> = r
            .replay
            .iter()
            .map(|u| match u {
                SessionUpdate::AgentThoughtChunk(c) | SessionUpdate::AgentMessageChunk(c) => {
                    c.message_id.as_deref()
                }
                _ => None,
            })
            .collect();
        assert_ne!(
            ids[1], ids[2],
            "a turn's thought and answer are two messages"
        );
        assert_eq!(r.history.len(), 3, "the unanswered call gets a result");
        assert!(
            matches!(&r.history[2], ChatMessage::Tool { tool_call_id, .. } if tool_call_id == "c1")
        );
        assert_eq!(r.mode.as_deref(), Some("full-auto"));
        assert_eq!(r.cwd.as_deref(), Some("/p"));
    }

    fn user(text: &str) -> Record {
        Record::User {
            prompt: vec![ContentBlock::text(text)],
            message: StoredMessage::User {
                parts: vec![StoredPart::Text { text: text.into() }],
            },
        }
    }

    fn answer(text: &str) -> Record {
        Record::Assistant(StoredAssistant {
            text: text.into(),
            reasoning: String::new(),
            tool_calls: vec![],
        })
    }

    fn texts(r: &Restored) -> Vec<String> {
        r.replay
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::UserMessageChunk(c) | SessionUpdate::AgentMessageChunk(c) => {
                    serde_json::to_value(&c.content).ok()?["text"]
                        .as_str()
                        .map(str::to_owned)
                }
                _ => None,
            })
            .collect()
    }

    /// An undone turn is gone from the replay as from the history, and an
    /// undo after it (indexes moved down) removes the right one.
    #[test]
    fn undone_turns_are_not_replayed() {
        let records = vec![
            user("one"),
            answer("a1"),
            user("two"),
            answer("a2"),
            Record::Undo { start: 2, end: 4 },
            user("three"),
            answer("a3"),
            user("four"),
            answer("a4"),
            // `/rewind 1` after the undo: "four" is at index 4 now.
            Record::Undo { start: 4, end: 6 },
        ];
        let r = restore(records);
        assert_eq!(texts(&r), ["one", "a1", "three", "a3"]);
        assert_eq!(r.history.len(), 4);
    }
}
