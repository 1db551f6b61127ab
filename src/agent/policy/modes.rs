//! Session modes (DESIGN §3 "Modes and permissions"), exposed both as ACP modes
//! (§5.5) and as a `mode` select config option (§5.6), kept in sync.
use crate::acp::{
    SelectTag, SessionConfigOption, SessionConfigSelectOption, SessionMode, SessionModeState,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    ReadOnly,
    Ask,
    AcceptEdits,
    FullAuto,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::ReadOnly, Mode::Ask, Mode::AcceptEdits, Mode::FullAuto];

    pub fn id(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept-edits",
            Mode::FullAuto => "full-auto",
        }
    }

    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Read only",
            Mode::Ask => "Ask",
            Mode::AcceptEdits => "Accept edits",
            Mode::FullAuto => "Full auto",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Reads and searches only; edits and commands are refused",
            Mode::Ask => "Asks before every edit and command",
            Mode::AcceptEdits => "Edits files in the project without asking; asks before commands",
            Mode::FullAuto => {
                "Edits and runs commands without asking; still asks outside the project"
            }
        }
    }

    pub fn state(current: Mode) -> SessionModeState {
        SessionModeState {
            current_mode_id: current.id().into(),
            available_modes: Mode::ALL
                .into_iter()
                .map(|m| SessionMode {
                    id: m.id().into(),
                    name: m.name().into(),
                    description: m.description().into(),
                })
                .collect(),
        }
    }

    pub fn config_option(current: Mode) -> SessionConfigOption {
        SessionConfigOption {
            id: "mode".into(),
            name: "Mode".into(),
            description: Some("How much the agent may do without asking".into()),
            category: Some("mode".into()),
            kind: SelectTag::Select,
            current_value: current.id().into(),
            options: Mode::ALL
                .into_iter()
                .map(|m| SessionConfigSelectOption {
                    value: m.id().into(),
                    name: m.name().into(),
                    description: Some(m.description().into()),
                })
                .collect(),
        }
    }
}
