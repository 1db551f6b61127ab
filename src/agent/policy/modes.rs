//! Session modes (DESIGN §3 "Modes and permissions"; the type is
//! [`crate::config::Mode`]), exposed both as ACP modes (§5.5) and as a `mode`
//! select config option (§5.6), kept in sync.
use crate::acp::{
    SelectTag, SessionConfigOption, SessionConfigSelectOption, SessionMode, SessionModeState,
};
use crate::config::Mode;

impl Mode {
    /// Where the mode stands from narrowest (read-only, 0) to widest
    /// (full-auto). Plan allows what read-only allows: the same rank, so a
    /// read-only ceiling (an A2A guest's, a parent's) admits it, and the
    /// hand-off to editing offers only modes within the ceiling.
    pub fn rank(self) -> usize {
        match self {
            Mode::ReadOnly | Mode::Plan => 0,
            Mode::Ask => 1,
            Mode::AcceptEdits => 2,
            Mode::FullAuto => 3,
        }
    }

    /// The narrower of `self` and `other`: a ceiling applied.
    pub fn narrower(self, other: Mode) -> Mode {
        if other.rank() < self.rank() {
            other
        } else {
            self
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_narrower_mode_wins() {
        assert_eq!(Mode::FullAuto.narrower(Mode::ReadOnly), Mode::ReadOnly);
        assert_eq!(Mode::ReadOnly.narrower(Mode::FullAuto), Mode::ReadOnly);
        assert_eq!(Mode::Ask.narrower(Mode::AcceptEdits), Mode::Ask);
        assert_eq!(Mode::FullAuto.narrower(Mode::FullAuto), Mode::FullAuto);
        let ranks: Vec<usize> = Mode::ALL.iter().map(|m| m.rank()).collect();
        assert_eq!(ranks, [0, 0, 1, 2, 3]);
        // Plan is as narrow as read-only: either ceiling keeps the other.
        assert_eq!(Mode::Plan.narrower(Mode::ReadOnly), Mode::Plan);
        assert_eq!(Mode::Ask.narrower(Mode::Plan), Mode::Plan);
    }
}
