//! Model-facing names of MCP tools: `mcp__<server>__<tool>`.
//!
//! OpenAI-compatible endpoints accept function names matching
//! `^[A-Za-z0-9_-]{1,64}$`, so everything else becomes `_`, long names are cut
//! (keeping a short hash of the original so the cut stays stable across
//! `tools/list_changed` refreshes) and names that still collide get a `_2`,
//! `_3`, … suffix in list order.
use std::collections::HashSet;

/// The longest function name the model endpoints accept.
pub const MAX_NAME: usize = 64;
const PREFIX: &str = "mcp__";

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".into() } else { out }
}

/// FNV-1a: a small stable hash (the std hasher is randomly seeded).
fn fnv(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// `mcp__<server>__<tool>`, sanitized and at most [`MAX_NAME`] characters.
pub fn model_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    // All ASCII after sanitizing, so byte cuts are char cuts.
    let tag = format!("_{:08x}", fnv(&format!("{server}\0{tool}")));
    format!("{}{tag}", &full[..MAX_NAME - tag.len()])
}

/// Names for `(server, tool)` pairs, unique among themselves and distinct
/// from `taken`, in the given order (earlier entries keep the plain name).
pub fn assign<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    taken: &HashSet<String>,
) -> Vec<String> {
    let mut used: HashSet<String> = taken.clone();
    let mut out = Vec::new();
    for (server, tool) in pairs {
        let base = model_name(server, tool);
        let mut name = base.clone();
        let mut n = 2;
        while used.contains(&name) {
            let suffix = format!("_{n}");
            let keep = base.len().min(MAX_NAME - suffix.len());
            name = format!("{}{suffix}", &base[..keep]);
            n += 1;
        }
        used.insert(name.clone());
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_cut_and_unique() {
        assert_eq!(model_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(model_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
        assert_eq!(model_name("é", ""), "mcp______");
        let long = model_name("server", &"x".repeat(100));
        assert_eq!(long.len(), MAX_NAME);
        assert_eq!(long, model_name("server", &"x".repeat(100)), "stable");
        assert_ne!(long, model_name("server", &"x".repeat(101)));
        let valid = |n: &str| {
            n.len() <= MAX_NAME
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        let names = assign(
            [("a", "t.x"), ("a", "t_x"), ("a", "t x"), ("b", "t")],
            &HashSet::new(),
        );
        assert_eq!(
            names,
            ["mcp__a__t_x", "mcp__a__t_x_2", "mcp__a__t_x_3", "mcp__b__t"]
        );
        let l = "y".repeat(80);
        let names = assign([("s", l.as_str()), ("s", l.as_str())], &HashSet::new());
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| valid(n)), "{names:?}");
    }
}
