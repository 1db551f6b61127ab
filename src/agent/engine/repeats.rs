//! The model repeating itself: the same call (same tool, same arguments) in
//! a row. Weak models loop on a call that fails, or re-read what they have.
//! At [`TELL`] in a row the result says so; at [`STOP`] the turn ends with
//! a reason the user reads, instead of spending the rest of the turn's
//! requests on it.
use serde_json::Value;

use crate::llm::ToolCallRequest;

/// The same call this many times in a row: the model is told.
pub const TELL: u32 = 3;
/// The same call this many times in a row: the turn ends.
pub const STOP: u32 = 5;

/// The calls of one turn, as far as repeats go.
#[derive(Debug, Default)]
pub struct Repeats {
    last: Option<(String, Value)>,
    in_a_row: u32,
    failing_in_a_row: u32,
}

impl Repeats {
    /// Counts a finished call; returns a note to add to its result when the
    /// model repeats itself.
    pub fn record(&mut self, req: &ToolCallRequest, failed: bool) -> Option<String> {
        let args = serde_json::from_str::<Value>(&req.arguments)
            .unwrap_or_else(|_| Value::String(req.arguments.clone()));
        let key = (req.name.clone(), args);
        if self.last.as_ref() == Some(&key) {
            self.in_a_row += 1;
            self.failing_in_a_row = if failed { self.failing_in_a_row + 1 } else { 0 };
        } else {
            self.last = Some(key);
            self.in_a_row = 1;
            self.failing_in_a_row = u32::from(failed);
        }
        if self.failing_in_a_row >= TELL {
            Some(format!(
                "Note: you made this same failing call ({} with the same arguments) {} times in a row, and it failed each time. You are repeating yourself: do not make it again. Read the error above, then change the arguments, use another tool, or tell the user what blocks you.",
                req.name, self.failing_in_a_row
            ))
        } else if self.in_a_row >= TELL {
            Some(format!(
                "Note: you made this same call ({} with the same arguments) {} times in a row; its result is above and will not change. Use it and go on with the task, or answer the user.",
                req.name, self.in_a_row
            ))
        } else {
            None
        }
    }

    /// Why the turn must end, once the model passed [`STOP`].
    pub fn stop_reason(&self) -> Option<String> {
        let (name, _) = self.last.as_ref()?;
        (self.in_a_row >= STOP).then(|| {
            format!(
                "Stopped: the model made the same `{name}` call with the same arguments {} times in a row without making progress. Rephrase the request, give it more detail, or try a stronger model.",
                self.in_a_row
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: "c".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn third_identical_failure_is_told_fifth_stops() {
        let mut r = Repeats::default();
        let c = call(
            "edit_file",
            r#"{"path":"a","old_string":"x","new_string":"x"}"#,
        );
        assert!(r.record(&c, true).is_none());
        // Same arguments in another order and spacing are the same call.
        let same = call(
            "edit_file",
            r#"{"new_string": "x", "path": "a", "old_string": "x"}"#,
        );
        assert!(r.record(&same, true).is_none());
        let note = r.record(&c, true).unwrap();
        assert!(
            note.contains("failing call") && note.contains("3 times"),
            "{note}"
        );
        assert!(r.stop_reason().is_none());
        r.record(&c, true);
        r.record(&c, true);
        let why = r.stop_reason().unwrap();
        assert!(
            why.contains("`edit_file`") && why.contains("5 times"),
            "{why}"
        );
    }

    #[test]
    fn another_call_between_resets_the_count() {
        let mut r = Repeats::default();
        let a = call("read_file", r#"{"path":"a"}"#);
        let b = call("read_file", r#"{"path":"b"}"#);
        r.record(&a, false);
        r.record(&a, false);
        r.record(&b, false);
        assert!(r.record(&a, false).is_none());
        assert!(r.record(&a, false).is_none());
        let note = r.record(&a, false).unwrap();
        assert!(note.contains("will not change"), "{note}");
        // A failing streak counts failures only.
        let mut r = Repeats::default();
        r.record(&a, true);
        r.record(&a, false);
        let note = r.record(&a, true).unwrap();
        assert!(!note.contains("failing"), "{note}");
    }
}
