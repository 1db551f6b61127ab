//! The model repeating itself. Weak models loop on a call that fails, or
//! re-read what they have: the same call (same tool, same arguments) in a
//! row, or the same failing call again and again with other calls between
//! (an edit that does not apply, a re-read of the file, the same edit). At
//! [`TELL`] the result says so; at [`STOP`] the turn ends with a reason the
//! user reads, instead of spending the rest of the turn's requests on it.
use serde_json::Value;

use crate::llm::ToolCallRequest;

/// The same call this many times in a row, or the same failing call this
/// many times since anything changed: the model is told.
pub const TELL: u32 = 3;
/// The same call this many times in a row, or the same failing call this
/// many times since anything changed: the turn ends.
pub const STOP: u32 = 5;

/// A call as far as repeats go: its tool and its arguments (keys in any order).
type Key = (String, Value);

/// The calls of one turn, as far as repeats go.
#[derive(Debug, Default)]
pub struct Repeats {
    last: Option<Key>,
    in_a_row: u32,
    /// How often each call failed since the last call that changed
    /// something: the same failing call cannot start to work unless
    /// something changed between.
    failing: Vec<(Key, u32)>,
    /// The call that reached [`STOP`], and how many times.
    stopped: Option<(String, u32)>,
    /// A call read or changed something this turn (not only a plan).
    acted: bool,
    /// The last call that changed something, and how many times in a row
    /// it did with no other change or failure between (reads and plans
    /// between do not count): a repeated success is a repeat too.
    changes: Option<(Key, u32)>,
}

/// What a finished call did, for [`Repeats::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Failed,
    /// It worked and changed nothing (a read, a search).
    Looked,
    /// It only noted something (a plan): nothing was read or changed.
    Noted,
    /// It worked and may have changed something (an edit, a command).
    Changed,
}

impl Repeats {
    /// Counts a finished call; returns a note to add to its result when the
    /// model repeats itself.
    pub fn record(&mut self, req: &ToolCallRequest, outcome: Outcome) -> Option<String> {
        let args = serde_json::from_str::<Value>(&req.arguments)
            .unwrap_or_else(|_| Value::String(req.arguments.clone()));
        let key = (req.name.clone(), args);
        self.acted |= matches!(outcome, Outcome::Looked | Outcome::Changed);
        if self.last.as_ref() == Some(&key) {
            self.in_a_row += 1;
        } else {
            self.last = Some(key.clone());
            self.in_a_row = 1;
        }
        let failures = match outcome {
            Outcome::Failed => match self.failing.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    self.failing.push((key.clone(), 1));
                    1
                }
            },
            Outcome::Changed => {
                self.failing.clear();
                0
            }
            Outcome::Looked | Outcome::Noted => {
                self.failing.retain(|(k, _)| *k != key);
                0
            }
        };
        match outcome {
            Outcome::Changed => match self.changes.as_mut() {
                Some((k, n)) if *k == key => *n += 1,
                _ => self.changes = Some((key, 1)),
            },
            // Another call that failed (tests that fail after an edit) may
            // be why the same change is made again.
            Outcome::Failed if self.changes.as_ref().is_some_and(|(k, _)| *k != key) => {
                self.changes = None;
            }
            _ => {}
        }
        let successes = match (&self.changes, outcome) {
            (Some((k, n)), Outcome::Changed) if self.last.as_ref() == Some(k) => *n,
            _ => 0,
        };
        let again = self.in_a_row.max(successes);
        if failures >= STOP {
            self.stopped = Some((req.name.clone(), failures));
        } else if again >= STOP {
            self.stopped = Some((req.name.clone(), again));
        }
        if failures >= TELL {
            Some(format!(
                "Note: you have made this same failing call ({} with the same arguments) {failures} times, and it failed each time; nothing has changed since, so it will fail again. You are repeating yourself: do not make it again. Read the error above, then change the arguments (copy the text exactly from the file as shown), use another tool, or tell the user what blocks you.",
                req.name
            ))
        } else if successes >= TELL {
            Some(format!(
                "Note: you made this same call ({} with the same arguments) {successes} times, and it succeeded each time: it is done. You are repeating yourself: do not make it again; go on with the next step, or answer the user.",
                req.name
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

    /// Whether `req` is the call that last changed something, succeeding,
    /// with nothing else changed since: an edit run again would apply a
    /// second time.
    pub fn just_applied(&self, req: &ToolCallRequest) -> bool {
        let args = serde_json::from_str::<Value>(&req.arguments)
            .unwrap_or_else(|_| Value::String(req.arguments.clone()));
        self.changes
            .as_ref()
            .is_some_and(|(k, _)| k.0 == req.name && k.1 == args)
    }

    /// Whether a call of this turn read or changed anything: a plan made
    /// before that is only a plan.
    pub fn acted(&self) -> bool {
        self.acted
    }

    /// Why the turn must end, once the model passed [`STOP`].
    pub fn stop_reason(&self) -> Option<String> {
        let (name, times) = self.stopped.as_ref()?;
        Some(format!(
            "Stopped: the model made the same `{name}` call with the same arguments {times} times without making progress. Rephrase the request, give it more detail, or try a stronger model."
        ))
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
        assert!(r.record(&c, Outcome::Failed).is_none());
        // Same arguments in another order and spacing are the same call.
        let same = call(
            "edit_file",
            r#"{"new_string": "x", "path": "a", "old_string": "x"}"#,
        );
        assert!(r.record(&same, Outcome::Failed).is_none());
        let note = r.record(&c, Outcome::Failed).unwrap();
        assert!(
            note.contains("failing call") && note.contains("3 times"),
            "{note}"
        );
        assert!(r.stop_reason().is_none());
        r.record(&c, Outcome::Failed);
        r.record(&c, Outcome::Failed);
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
        r.record(&a, Outcome::Looked);
        r.record(&a, Outcome::Looked);
        r.record(&b, Outcome::Looked);
        assert!(r.record(&a, Outcome::Looked).is_none());
        assert!(r.record(&a, Outcome::Looked).is_none());
        let note = r.record(&a, Outcome::Looked).unwrap();
        assert!(note.contains("will not change"), "{note}");
        // A failing streak counts failures only.
        let mut r = Repeats::default();
        r.record(&a, Outcome::Failed);
        r.record(&a, Outcome::Looked);
        let note = r.record(&a, Outcome::Failed).unwrap();
        assert!(!note.contains("failing"), "{note}");
    }

    #[test]
    fn the_same_failing_call_with_reads_between_is_told_then_stopped() {
        // Qwen2.5-Coder 1.5B (bench task 01): an edit whose old_string is
        // not in the file, a re-read, the same edit, a re-read, …
        let mut r = Repeats::default();
        let edit = call(
            "edit_file",
            r#"{"path":"ops.py","old_string":"return self.value / 2","new_string":"x"}"#,
        );
        let read = call("read_file", r#"{"path":"ops.py"}"#);
        assert!(r.record(&edit, Outcome::Failed).is_none());
        assert!(r.record(&read, Outcome::Looked).is_none());
        assert!(r.record(&edit, Outcome::Failed).is_none());
        assert!(r.record(&read, Outcome::Looked).is_none());
        let note = r.record(&edit, Outcome::Failed).unwrap();
        assert!(
            note.contains("3 times") && note.contains("failing"),
            "{note}"
        );
        for _ in 0..2 {
            assert!(r.stop_reason().is_none());
            r.record(&read, Outcome::Looked);
            r.record(&edit, Outcome::Failed);
        }
        let why = r.stop_reason().unwrap();
        assert!(
            why.contains("`edit_file`") && why.contains("5 times"),
            "{why}"
        );
    }

    #[test]
    fn the_same_success_again_and_again_is_a_loop() {
        // Issue 47 item 4: the same write, with reads between.
        let mut r = Repeats::default();
        let write = call("write_file", r#"{"path":"a","content":"x"}"#);
        let read = call("read_file", r#"{"path":"a"}"#);
        assert!(r.record(&write, Outcome::Changed).is_none());
        assert!(r.just_applied(&write));
        r.record(&read, Outcome::Looked);
        assert!(r.just_applied(&write));
        assert!(r.record(&write, Outcome::Changed).is_none());
        r.record(&read, Outcome::Looked);
        let note = r.record(&write, Outcome::Changed).unwrap();
        assert!(
            note.contains("3 times") && note.contains("succeeded"),
            "{note}"
        );
        r.record(&write, Outcome::Changed);
        r.record(&write, Outcome::Changed);
        assert!(r.stop_reason().unwrap().contains("5 times"));
        // Another change between: work, not a loop.
        let mut r = Repeats::default();
        let test = call("run_command", r#"{"command":"make test"}"#);
        for i in 0..6 {
            let edit = call(
                "edit_file",
                &format!(r#"{{"path":"a","old_string":"{i}","new_string":"x"}}"#),
            );
            r.record(&test, Outcome::Changed);
            r.record(&edit, Outcome::Changed);
            assert!(!r.just_applied(&test));
        }
        assert!(r.stop_reason().is_none());
    }

    #[test]
    fn a_change_between_failures_starts_the_count_again() {
        // Tests that fail, an edit, the tests again: work, not a loop.
        let mut r = Repeats::default();
        let test = call("run_command", r#"{"command":"make test"}"#);
        let edit = call(
            "edit_file",
            r#"{"path":"a","old_string":"1","new_string":"2"}"#,
        );
        for _ in 0..6 {
            assert!(r.record(&test, Outcome::Failed).is_none());
            r.record(&edit, Outcome::Changed);
        }
        assert!(r.stop_reason().is_none());
    }
}
