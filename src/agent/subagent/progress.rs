//! A subagent shown as one tool call (the editor does not show child
//! sessions): its tool calls become a list in that call's content, updated as
//! they start and end; its messages are not shown (its answer is the call's
//! result).
use std::sync::{Arc, Mutex};

use crate::acp::{SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate};
use crate::editor::{Editor, UpdateObserver};

/// Most lines of progress shown (the newest).
const LINES: usize = 20;

pub struct Progress {
    parent: Editor,
    tool_call_id: String,
    /// The child's calls in order: id, title, status.
    calls: Mutex<Vec<(String, String, ToolCallStatus)>>,
}

impl Progress {
    pub fn new(parent: Editor, tool_call_id: String) -> Arc<Self> {
        Arc::new(Progress {
            parent,
            tool_call_id,
            calls: Mutex::new(Vec::new()),
        })
    }

    /// The observer the child's editor sends its updates to.
    pub fn observer(self: &Arc<Self>) -> UpdateObserver {
        let me = self.clone();
        Arc::new(move |u| me.saw(u))
    }

    fn saw(&self, update: &SessionUpdate) {
        let text = {
            let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
            match update {
                SessionUpdate::ToolCall(c) => {
                    calls.push((c.tool_call_id.clone(), c.title.clone(), c.status));
                }
                SessionUpdate::ToolCallUpdate(u) => {
                    let Some(call) = calls.iter_mut().find(|c| c.0 == u.tool_call_id) else {
                        return;
                    };
                    let before = (call.1.clone(), call.2);
                    if let Some(t) = &u.title {
                        call.1 = t.clone();
                    }
                    if let Some(s) = u.status {
                        call.2 = s;
                    }
                    if (call.1.clone(), call.2) == before {
                        return;
                    }
                }
                _ => return,
            }
            render(&calls)
        };
        self.parent
            .update(&SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                content: Some(vec![ToolCallContent::text(text)]),
                ..ToolCallUpdate::new(&self.tool_call_id)
            }));
    }
}

fn render(calls: &[(String, String, ToolCallStatus)]) -> String {
    let skip = calls.len().saturating_sub(LINES);
    let mut lines: Vec<String> = Vec::new();
    if skip > 0 {
        lines.push(format!("… {skip} earlier steps"));
    }
    for (_, title, status) in &calls[skip..] {
        let mark = match status {
            ToolCallStatus::Completed => "✓",
            ToolCallStatus::Failed => "✗",
            _ => "…",
        };
        lines.push(format!("{mark} {title}"));
    }
    lines.join("\n")
}
