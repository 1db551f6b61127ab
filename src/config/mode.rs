//! The session modes (DESIGN §3 "Modes and permissions"): one type for the
//! config file's `default_mode`, the `--mode` flag and the sessions. How the
//! agent shows them over ACP is in `agent::policy::modes`.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum Mode {
    ReadOnly,
    /// Read-only, and the turn ends with a plan and the question "Start
    /// editing?" (`agent::handlers::plan`).
    Plan,
    Ask,
    AcceptEdits,
    FullAuto,
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::ReadOnly,
        Mode::Plan,
        Mode::Ask,
        Mode::AcceptEdits,
        Mode::FullAuto,
    ];

    /// Whether the mode allows no edit and no command (read-only and plan).
    pub fn is_read_only(self) -> bool {
        matches!(self, Mode::ReadOnly | Mode::Plan)
    }

    pub fn id(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::Plan => "plan",
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept-edits",
            Mode::FullAuto => "full-auto",
        }
    }

    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    /// Every mode id, for messages that list the choices.
    pub fn ids() -> String {
        Mode::ALL.map(Mode::id).join(", ")
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Read only",
            Mode::Plan => "Plan",
            Mode::Ask => "Ask",
            Mode::AcceptEdits => "Accept edits",
            Mode::FullAuto => "Full auto",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Reads and searches only; edits and commands are refused",
            Mode::Plan => {
                "Reads, searches and makes a plan, with no edits or commands; then asks to start editing"
            }
            Mode::Ask => "Asks before every edit and command",
            Mode::AcceptEdits => "Edits files in the project without asking; asks before commands",
            Mode::FullAuto if crate::tools::sandbox::confines_now() => {
                "Edits and runs commands without asking; still asks outside the project"
            }
            Mode::FullAuto if crate::platform::sandbox::full_auto_runs_commands(false) => {
                "Edits and runs commands without asking, unconfined: this system has no command sandbox and the config says full_auto_without_sandbox = true"
            }
            Mode::FullAuto => {
                "Edits files in the project without asking; asks before every command, as this system has no command sandbox"
            }
        }
    }
}

/// The config file's `default_mode` (the file's only mode key): an unknown id
/// is refused with the list of valid ones.
impl TryFrom<String> for Mode {
    type Error = String;

    fn try_from(id: String) -> Result<Self, String> {
        Mode::parse(&id).ok_or_else(|| match super::closest(&id, Mode::ALL.map(Mode::id)) {
            Some(m) => format!("default_mode {id:?} is not a mode; did you mean `{m}`?"),
            None => format!("default_mode {id:?} is not one of {}", Mode::ids()),
        })
    }
}
