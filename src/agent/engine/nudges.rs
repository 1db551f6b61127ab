//! A small model's reply that would end the turn too early. Weak models
//! stop at the first failed call and explain the error as their answer, or
//! write a tool's result themselves instead of calling the tool, or make a
//! plan, mark it done and stop there, or tell the user how to do the task
//! (or show the code) instead of doing it, or change files and stop without
//! running the tests the request named. In the small-model mode such a
//! reply gets one message back, once per turn for each kind, and the turn
//! goes on; a refused call (the user said no) or a cancelled one is never
//! pushed on.
use super::repeats::Outcome;

/// Sent when the model answers right after a call that failed.
pub const AFTER_FAILURE: &str = "Your last tool call failed, so the task is not done yet. Read the error, then try again another way with the tools: correct the path or the arguments, look first (list_directory, glob, grep, read_file), or run a command. If it truly cannot be done, say why in one sentence.";
/// Sent when the model answers after making only a plan.
pub const ONLY_PLANNED: &str = "Nothing has been done yet: no tool has read or changed anything in this turn, and a plan does not do the steps. Do the task now with the tools (read_file, edit_file, run_command, …), then answer.";
/// Sent when the model, having changed nothing, tells the user how to do
/// the task or shows code.
pub const INSTRUCTED: &str = "Nothing in the project has changed. Do not tell or show the user how to do the task: do it yourself now with the tools (read_file, edit_file, write_file, run_command), then answer with what you did or found. If your reply only answered a question, give that answer again in one sentence.";
/// Sent when the model ends the turn with changes that no command has
/// checked since they were made (commands being offered).
pub const UNVERIFIED: &str = "You changed files, and no command has checked them since. If the project has tests or a build (the request may name the command), run it now with run_command and fix what fails. If there is nothing to run, give your final answer again.";
/// Sent when the model wrote a tool result itself.
pub const FABRICATED: &str = "You wrote a <tool_response> yourself, but tool results come only from the tools, when you call them. Call the tool you need now, or give your final answer.";

/// What one turn has pushed back, and how its last call ended.
#[derive(Debug, Default)]
pub struct Nudges {
    on: bool,
    last_call_failed: bool,
    /// The turn has made calls, and every one only noted a plan.
    only_planned: bool,
    /// A call read or changed something.
    acted: bool,
    /// A call changed something.
    changed: bool,
    /// A call changed something and no command has run since.
    unchecked: bool,
    /// `run_command` is offered to the model in this turn.
    can_run: bool,
    unverified_sent: bool,
    after_failure_sent: bool,
    only_planned_sent: bool,
    fabricated_sent: bool,
    instructed_sent: bool,
    /// Replies sent back because their call did not parse.
    pub broken_calls_sent: u32,
    /// What this turn's calls did, as the agent recorded it: files
    /// changed, and commands run.
    files_changed: Vec<String>,
    commands_run: Vec<String>,
    /// The model was told once that its answer claimed what did not happen.
    claim_told: bool,
}

impl Nudges {
    /// `on` in the small-model mode only.
    pub fn new(on: bool) -> Self {
        Self {
            on,
            ..Self::default()
        }
    }

    /// How the latest call of the turn ended.
    pub fn call_finished(&mut self, outcome: Outcome, refused: bool, cancelled: bool) {
        self.last_call_failed = outcome == Outcome::Failed && !refused && !cancelled;
        self.acted |= matches!(outcome, Outcome::Looked | Outcome::Changed);
        self.changed |= outcome == Outcome::Changed;
        self.unchecked |= outcome == Outcome::Changed;
        self.only_planned = outcome == Outcome::Noted && !self.acted;
    }

    /// Whether the model is offered `run_command` (set before each request).
    pub fn commands_offered(&mut self, yes: bool) {
        self.can_run = yes;
    }

    /// A reply without calls, `text` its text: the message to send back
    /// instead of ending the turn, if any.
    pub fn on_final_reply(&mut self, text: &str) -> Option<&'static str> {
        // For every model: a plan alone is not a finish.
        if !self.only_planned_sent && self.only_planned && (self.on || claims_done(text)) {
            self.only_planned_sent = true;
            return Some(ONLY_PLANNED);
        }
        if !self.on {
            return None;
        }
        if !self.fabricated_sent && text.to_ascii_lowercase().contains("<tool_response>") {
            self.fabricated_sent = true;
            return Some(FABRICATED);
        }
        if !self.after_failure_sent && self.last_call_failed {
            self.after_failure_sent = true;
            return Some(AFTER_FAILURE);
        }
        if !self.only_planned_sent && self.only_planned {
            self.only_planned_sent = true;
            return Some(ONLY_PLANNED);
        }
        if !self.instructed_sent && !self.changed && (tells_how(text) || text.contains("```")) {
            self.instructed_sent = true;
            return Some(INSTRUCTED);
        }
        if !self.unverified_sent && self.unchecked && self.can_run {
            self.unverified_sent = true;
            return Some(UNVERIFIED);
        }
        None
    }
}

impl Nudges {
    /// A call that ran (not refused): a file it changed (`path`), or a
    /// command it ran (`command`), for the turn's record.
    pub fn ran(&mut self, file: Option<String>, command: Option<String>) {
        if let Some(f) = file
            && !self.files_changed.contains(&f)
        {
            self.files_changed.push(f);
        }
        if let Some(c) = command {
            self.unchecked = false;
            self.commands_run.push(c);
        }
    }

    /// What the answer `text` claims that the turn's record does not have:
    /// (claims a change that is not there, claims a command that did not run).
    fn false_claims(&self, text: &str) -> (bool, bool) {
        let (change, command) = claims(text);
        (
            change && self.files_changed.is_empty(),
            command && self.commands_run.is_empty(),
        )
    }

    /// For every model: the message that tells the model, once, what the
    /// turn really did when its final answer claims changes or commands
    /// that did not happen.
    pub fn on_false_claim(&mut self, text: &str) -> Option<String> {
        let (change, command) = self.false_claims(text);
        if self.claim_told || !(change || command) {
            return None;
        }
        self.claim_told = true;
        Some(format!(
            "Your answer says you {} but the agent's record of this turn says otherwise: {} Do what the answer says with the tools now, or answer again with only what was actually done.",
            match (change, command) {
                (true, true) => "changed files and ran commands,",
                (true, false) => "changed files,",
                _ => "ran commands,",
            },
            self.record()
        ))
    }

    /// The record the user sees after an answer that still claims what
    /// did not happen, once the model was told.
    pub fn record_after(&self, text: &str) -> Option<String> {
        let (change, command) = self.false_claims(text);
        (self.claim_told && (change || command))
            .then(|| format!("The agent's record of this turn: {}", self.record()))
    }

    fn record(&self) -> String {
        let files = match self.files_changed.as_slice() {
            [] => "nothing was changed".to_owned(),
            f => format!("files changed: {}", f.join(", ")),
        };
        let commands = match self.commands_run.as_slice() {
            [] => "no command was run".to_owned(),
            c => format!("commands run: {}", c.join("; ")),
        };
        format!("{files}; {commands}.")
    }
}

/// What `text` claims was done: (a change to files, a command run). First
/// person, past: "I added", "I've saved", "I then ran".
fn claims(text: &str) -> (bool, bool) {
    const CHANGES: &[&str] = &[
        "added",
        "saved",
        "updated",
        "changed",
        "modified",
        "fixed",
        "created",
        "wrote",
        "edited",
        "replaced",
        "removed",
        "deleted",
        "inserted",
        "renamed",
        "implemented",
    ];
    const COMMANDS: &[&str] = &["ran", "executed", "tested"];
    const SUBJECTS: &[&str] = &[
        "i ",
        "i've ",
        "i have ",
        "i then ",
        "i also ",
        "i've also ",
        "i have also ",
        "i successfully ",
    ];
    let text = text.to_lowercase().replace('\u{2019}', "'");
    let said = |verbs: &[&str]| {
        SUBJECTS.iter().any(|s| {
            verbs.iter().any(|v| {
                let phrase = format!("{s}{v}");
                text.match_indices(&phrase).any(|(i, _)| {
                    let before = text[..i].chars().next_back();
                    let after = text[i + phrase.len()..].chars().next();
                    !before.is_some_and(char::is_alphanumeric)
                        && !after.is_some_and(char::is_alphanumeric)
                })
            })
        })
    };
    // First person, or the passive a small model slips into after being
    // asked to check its work ("the command has been run", "the tests
    // passed"; Qwen2.5-Coder 1.5B on Exercism's matching-brackets).
    let run = [
        "i've run ",
        "i have run ",
        "i've also run ",
        "i have also run ",
        "has been run",
        "have been run",
        "has been executed",
        "have been executed",
        "were run ",
        "were executed",
        "tests passed",
        "tests now pass",
        "tests are passing",
        "all tests pass",
        "all the tests pass",
    ]
    .iter()
    .any(|p| text.contains(p));
    (said(CHANGES), said(COMMANDS) || run)
}

/// Whether `text` says the work is done.
fn claims_done(text: &str) -> bool {
    const WORDS: &[&str] = &[
        "done",
        "complete",
        "finished",
        "implemented",
        "fixed",
        "all set",
        "in place",
    ];
    let text = text.to_lowercase();
    WORDS.iter().any(|w| text.contains(w))
}

/// Sent, with serde_json's error, when the model's reply is a call whose
/// JSON does not parse.
pub fn broken_call(error: &str) -> String {
    format!(
        "Your tool call could not be read, so it did not run: its JSON does not parse ({error}). Write the call again as valid JSON: inside strings escape every double quote as \\\" and every line break as \\n, and write a backslash as \\\\."
    )
}

/// How many times a turn sends a call that does not parse back.
pub const BROKEN_CALL_TRIES: u32 = 2;

/// Whether `text` tells the user how to do something ("you need to",
/// "follow these steps") rather than saying what was done or found.
fn tells_how(text: &str) -> bool {
    const PHRASES: &[&str] = &[
        "you need to",
        "you'll need to",
        "you will need to",
        "you should ",
        "you can use",
        "you can run",
        "you can modify",
        "you can change",
        "you can replace",
        "you can update",
        "you can add",
        "you can edit",
        "follow these steps",
        "here's how",
        "here is how",
        "steps to ",
    ];
    let text = text.to_lowercase().replace('\u{2019}', "'");
    PHRASES.iter().any(|p| text.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{Changed, Failed, Looked, Noted};

    #[test]
    fn an_answer_right_after_a_failure_is_pushed_on_once() {
        let mut n = Nudges::new(true);
        n.call_finished(Failed, false, false);
        assert_eq!(
            n.on_final_reply("The file does not exist."),
            Some(AFTER_FAILURE)
        );
        n.call_finished(Failed, false, false);
        assert_eq!(n.on_final_reply("It really does not."), None);
        // After a call that worked, an answer ends the turn.
        let mut n = Nudges::new(true);
        n.call_finished(Failed, false, false);
        n.call_finished(Changed, false, false);
        assert_eq!(n.on_final_reply("Done."), None);
    }

    #[test]
    fn a_refused_or_cancelled_call_is_not_pushed_on() {
        let mut n = Nudges::new(true);
        n.call_finished(Failed, true, false);
        assert_eq!(n.on_final_reply("You said no."), None);
        n.call_finished(Failed, false, true);
        assert_eq!(n.on_final_reply("Cancelled."), None);
    }

    #[test]
    fn a_made_up_tool_result_is_pushed_on_once() {
        // Qwen2.5-Coder 1.5B (bench task 06) after two failed calls.
        let mut n = Nudges::new(true);
        let text = "<tool_response>\nError: app.log does not exist\n</tool_response>";
        assert_eq!(n.on_final_reply(text), Some(FABRICATED));
        assert_eq!(n.on_final_reply(text), None);
    }

    #[test]
    fn instructions_instead_of_the_work_are_pushed_on_once() {
        // Qwen2.5-Coder 1.5B (bench tasks 03 and 04) after a failed edit,
        // and with no call at all.
        let told = "To complete the task, you need to follow these steps:\n\n1. **Read the current definition**";
        let mut n = Nudges::new(true);
        assert_eq!(n.on_final_reply(told), Some(INSTRUCTED));
        assert_eq!(n.on_final_reply(told), None);
        let mut n = Nudges::new(true);
        n.call_finished(Looked, false, false);
        assert_eq!(
            n.on_final_reply("Here\u{2019}s how you can do it: open config.json"),
            Some(INSTRUCTED)
        );
        // After a change it is advice on top of the work; a plain answer
        // is an answer.
        let mut n = Nudges::new(true);
        n.call_finished(Changed, false, false);
        assert_eq!(n.on_final_reply("Done. You should run the tests."), None);
        let mut n = Nudges::new(true);
        n.call_finished(Looked, false, false);
        assert_eq!(n.on_final_reply("The limit is 25 MB."), None);
        // Code shown instead of written (task 02).
        let mut n = Nudges::new(true);
        let shown = "Here is the implementation:\n```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```";
        assert_eq!(n.on_final_reply(shown), Some(INSTRUCTED));
    }

    #[test]
    fn changes_no_command_checked_are_pushed_on_once() {
        // Qwen2.5-Coder 1.5B (Exercism acronym): one edit, then "done",
        // the test command the request named never run.
        let mut n = Nudges::new(true);
        n.commands_offered(true);
        n.call_finished(Changed, false, false);
        n.ran(Some("acronym.py".into()), None);
        assert_eq!(
            n.on_final_reply("The function is implemented."),
            Some(UNVERIFIED)
        );
        assert_eq!(n.on_final_reply("There is nothing to run."), None);
        // Tests run, then another edit: that edit is unchecked.
        let mut n = Nudges::new(true);
        n.commands_offered(true);
        n.call_finished(Changed, false, false);
        n.ran(Some("a.py".into()), None);
        n.call_finished(Looked, false, false);
        n.ran(None, Some("python3 -m unittest".into()));
        assert_eq!(n.on_final_reply("Done."), None);
        let mut n = Nudges::new(true);
        n.commands_offered(true);
        n.call_finished(Looked, false, false);
        n.ran(None, Some("python3 -m unittest".into()));
        n.call_finished(Changed, false, false);
        n.ran(Some("a.py".into()), None);
        assert_eq!(n.on_final_reply("Fixed."), Some(UNVERIFIED));
        // No command tool offered, or nothing
        // changed: nothing to check.
        let mut n = Nudges::new(true);
        n.call_finished(Changed, false, false);
        assert_eq!(n.on_final_reply("Done."), None);
        let mut n = Nudges::new(true);
        n.commands_offered(true);
        n.call_finished(Looked, false, false);
        assert_eq!(n.on_final_reply("The limit is 25 MB."), None);
        // Only in the small-model mode.
        let mut n = Nudges::new(false);
        n.commands_offered(true);
        n.call_finished(Changed, false, false);
        assert_eq!(n.on_final_reply("Done."), None);
    }

    #[test]
    fn off_outside_the_small_model_mode() {
        let mut n = Nudges::new(false);
        n.call_finished(Failed, false, false);
        assert_eq!(n.on_final_reply("<tool_response>x</tool_response>"), None);
    }

    #[test]
    fn an_answer_that_claims_what_did_not_happen_is_told_then_recorded() {
        // Issue 47 item 2, for every model.
        let mut n = Nudges::new(false);
        n.call_finished(Looked, false, false);
        let told = n
            .on_false_claim("I added the missing line and then ran the test script.")
            .unwrap();
        assert!(
            told.contains("nothing was changed") && told.contains("no command was run"),
            "{told}"
        );
        assert_eq!(n.on_false_claim("I saved the changes."), None);
        let record = n.record_after("I saved the changes.").unwrap();
        assert!(record.contains("nothing was changed"), "{record}");
        // An answer with nothing claimed, or a claim the record has.
        assert_eq!(n.record_after("The port is 8080."), None);
        let mut n = Nudges::new(false);
        n.ran(Some("app.py".into()), None);
        assert_eq!(n.on_false_claim("I added the docstring to app.py."), None);
        assert!(
            n.on_false_claim("I added it and I ran the tests.")
                .is_some()
        );
        // Not first person past: no claim.
        let mut n = Nudges::new(false);
        assert_eq!(
            n.on_false_claim("You can run the tests; I'd add a check."),
            None
        );
        assert_eq!(n.on_false_claim("Should I run the tests?"), None);
        // The passive, with no command in the record.
        let said = "The project has tests, and the command `run_command` has been run with the following arguments: - command: `python3 -m unittest matching_brackets_test`";
        let mut n = Nudges::new(false);
        n.ran(Some("matching_brackets.py".into()), None);
        let told = n.on_false_claim(said).unwrap();
        assert!(told.contains("no command was run"), "{told}");
        let mut n = Nudges::new(false);
        assert!(n.on_false_claim("All tests pass now.").is_some());
        // What the model wants done is no claim.
        let mut n = Nudges::new(false);
        assert_eq!(
            n.on_false_claim("The tests should pass once this is merged."),
            None
        );
        // With a command in the record, the claim stands.
        let mut n = Nudges::new(false);
        n.ran(None, Some("python3 -m unittest".into()));
        assert_eq!(n.on_false_claim("All tests passed."), None);
    }

    #[test]
    fn a_plan_is_not_a_finish_for_any_model() {
        // Issue 47 item 5: a plan marked completed, then "Done.".
        let mut n = Nudges::new(false);
        n.call_finished(Noted, false, false);
        assert_eq!(n.on_final_reply("Done."), Some(ONLY_PLANNED));
        n.call_finished(Noted, false, false);
        assert_eq!(n.on_final_reply("Done."), None);
        // A question back after a plan is not a claim of work.
        let mut n = Nudges::new(false);
        n.call_finished(Noted, false, false);
        assert_eq!(n.on_final_reply("Which port should it use?"), None);
    }

    #[test]
    fn an_answer_after_only_a_plan_is_pushed_on_once() {
        // Qwen2.5-Coder 1.5B (bench task 03): one plan, marked done, and
        // "please provide the prompt".
        let mut n = Nudges::new(true);
        n.call_finished(Noted, false, false);
        assert_eq!(
            n.on_final_reply("Please provide the prompt."),
            Some(ONLY_PLANNED)
        );
        n.call_finished(Noted, false, false);
        assert_eq!(n.on_final_reply("Done."), None);
        // A plan after real work is just a plan.
        let mut n = Nudges::new(true);
        n.call_finished(Looked, false, false);
        n.call_finished(Noted, false, false);
        assert_eq!(n.on_final_reply("Done."), None);
    }
}
