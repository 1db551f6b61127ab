//! `[[hooks.EVENT]]` in the user's config file (issue 45 item 6): commands
//! run before and after a tool call, on a prompt, and when a turn would
//! end. Only the user's own config file has them: a project's never does
//! (`agent::hooks` runs them; `docs/hooks.md` has the contract).
use std::time::Duration;

use serde::Deserialize;

/// How long a hook may run when its entry sets no `timeout_secs`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The `[hooks]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    #[serde(default)]
    pub pre_tool: Vec<HookConfig>,
    #[serde(default)]
    pub post_tool: Vec<HookConfig>,
    #[serde(default)]
    pub prompt: Vec<HookConfig>,
    #[serde(default)]
    pub stop: Vec<HookConfig>,
}

/// One `[[hooks.EVENT]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// Tool names the hook is for (tool events only): globs, `|` between
    /// alternatives (`run_command`, `edit_file|write_file`, `mcp_*`); none
    /// or `*`: every tool.
    pub matcher: Option<String>,
    /// A shell line, run like `run_command`'s.
    pub command: String,
    /// Seconds before the hook is stopped (with its process tree). Default 60.
    pub timeout_secs: Option<u64>,
}

/// The events a hook can be configured for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreTool,
    PostTool,
    Prompt,
    Stop,
}

impl HookEvent {
    pub fn id(self) -> &'static str {
        match self {
            HookEvent::PreTool => "pre_tool",
            HookEvent::PostTool => "post_tool",
            HookEvent::Prompt => "prompt",
            HookEvent::Stop => "stop",
        }
    }
}

/// One checked hook.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    matcher: Option<globset::GlobSet>,
    pub command: String,
    pub timeout: Duration,
}

impl Hook {
    /// Whether the hook is for `tool` (`None`: an event without a tool).
    pub fn matches(&self, tool: Option<&str>) -> bool {
        match (&self.matcher, tool) {
            (None, _) => true,
            (Some(set), Some(tool)) => set.is_match(tool),
            (Some(_), None) => false,
        }
    }
}

/// The user's hooks, checked: every matcher a valid glob, no empty command,
/// matchers only on tool events.
#[derive(Debug, Clone, Default)]
pub struct Hooks(Vec<Hook>);

impl Hooks {
    pub fn check(config: HooksConfig) -> Result<Hooks, String> {
        let mut out = Vec::new();
        for (event, list) in [
            (HookEvent::PreTool, config.pre_tool),
            (HookEvent::PostTool, config.post_tool),
            (HookEvent::Prompt, config.prompt),
            (HookEvent::Stop, config.stop),
        ] {
            for (i, h) in list.into_iter().enumerate() {
                let at = format!("hooks.{}[{i}]", event.id());
                if h.command.trim().is_empty() {
                    return Err(format!("{at}: command is empty"));
                }
                let tool_event = matches!(event, HookEvent::PreTool | HookEvent::PostTool);
                let matcher = match h.matcher.as_deref().map(str::trim) {
                    None | Some("") | Some("*") => None,
                    Some(_) if !tool_event => {
                        return Err(format!(
                            "{at}: matcher is for tool events (pre_tool, post_tool) only"
                        ));
                    }
                    Some(m) => {
                        let mut set = globset::GlobSetBuilder::new();
                        for alt in m.split('|') {
                            let glob = globset::Glob::new(alt.trim())
                                .map_err(|e| format!("{at}: matcher {m:?}: {e}"))?;
                            set.add(glob);
                        }
                        Some(
                            set.build()
                                .map_err(|e| format!("{at}: matcher {m:?}: {e}"))?,
                        )
                    }
                };
                out.push(Hook {
                    event,
                    matcher,
                    command: h.command,
                    timeout: h
                        .timeout_secs
                        .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.max(1))),
                });
            }
        }
        Ok(Hooks(out))
    }

    /// The hooks of `event` for `tool`, in file order.
    pub fn for_event(&self, event: HookEvent, tool: Option<&str>) -> Vec<&Hook> {
        self.0
            .iter()
            .filter(|h| h.event == event && h.matches(tool))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(text: &str) -> Result<Hooks, String> {
        #[derive(Deserialize)]
        struct F {
            hooks: HooksConfig,
        }
        let f: F = toml::from_str(text).map_err(|e| e.to_string())?;
        Hooks::check(f.hooks)
    }

    #[test]
    fn matchers_are_globs_with_alternatives() {
        let h = hooks(
            "[[hooks.pre_tool]]\nmatcher = \"edit_file|write_*\"\ncommand = \"x\"\n\
             [[hooks.pre_tool]]\ncommand = \"y\"\ntimeout_secs = 5\n\
             [[hooks.stop]]\ncommand = \"z\"\n",
        )
        .unwrap();
        let names = |tool| -> Vec<String> {
            h.for_event(HookEvent::PreTool, Some(tool))
                .iter()
                .map(|h| h.command.clone())
                .collect()
        };
        assert_eq!(names("edit_file"), ["x", "y"]);
        assert_eq!(names("write_file"), ["x", "y"]);
        assert_eq!(names("run_command"), ["y"]);
        assert_eq!(h.for_event(HookEvent::Stop, None).len(), 1);
        assert_eq!(
            h.for_event(HookEvent::PreTool, Some("run_command"))[0].timeout,
            Duration::from_secs(5)
        );
    }

    #[test]
    fn bad_entries_are_refused() {
        let e = hooks("[[hooks.stop]]\nmatcher = \"run_command\"\ncommand = \"x\"\n").unwrap_err();
        assert!(
            e.contains("hooks.stop[0]") && e.contains("tool events"),
            "{e}"
        );
        let e = hooks("[[hooks.prompt]]\ncommand = \" \"\n").unwrap_err();
        assert!(e.contains("command is empty"), "{e}");
        let e = hooks("[[hooks.pre_tool]]\nmatcher = \"a[\"\ncommand = \"x\"\n").unwrap_err();
        assert!(e.contains("matcher"), "{e}");
        let e = hooks("[[hooks.pre_tools]]\ncommand = \"x\"\n").unwrap_err();
        assert!(e.contains("pre_tools"), "{e}");
    }
}
