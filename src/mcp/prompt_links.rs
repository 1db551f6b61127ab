//! A `resource_link` in the user's prompt (ACP §6 ContentBlock) whose URI
//! belongs to an MCP server is read through that server (issue 18 item 5):
//! a server that lists the URI among its resources, or has a resource
//! template it matches, gets `resources/read` and the model gets the
//! contents. A URI no server claims keeps the agent's usual handling
//! (`file://` read through the editor, others named).
use std::time::Duration;

use rmcp::model::{Resource, ResourceTemplate};

use super::resources::{Server, convert_contents};
use crate::tools::ToolOutput;

/// Resources compared per server (a server may list thousands).
const LIST_MAX: usize = 2000;
/// Longest wait for one server's lists: every prompt with a link asks each
/// server, so a hung one must not hold the turn for a whole call timeout.
const LIST_WAIT: Duration = Duration::from_secs(10);

/// What reading a link gave: the contents (text for the model; images as
/// image content) or why the server that claims the URI failed.
pub type LinkRead = Result<ToolOutput, String>;

/// Reads `uri` through the first server that claims it; `None` when none
/// does.
pub async fn read(servers: Vec<Server>, uri: String, timeout: Duration) -> Option<LinkRead> {
    for server in servers {
        if !claims(&server, &uri, timeout.min(LIST_WAIT)).await {
            continue;
        }
        tracing::info!(server = %server.name, %uri, "prompt resource link read through its MCP server");
        let read = server.read(&uri, None);
        return Some(match tokio::time::timeout(timeout, read).await {
            Err(_) => Err(format!(
                "the MCP server {} did not answer within {} s",
                server.name,
                timeout.as_secs()
            )),
            Ok(Err(e)) => Err(format!(
                "the MCP server {} could not read it: {e}",
                server.name
            )),
            Ok(Ok(r)) => {
                let value = serde_json::to_value(&r).unwrap_or_default();
                Ok(convert_contents(&value["contents"]))
            }
        });
    }
    None
}

/// Whether `server` lists `uri` or has a template that matches it.
async fn claims(server: &Server, uri: &str, timeout: Duration) -> bool {
    let listed = tokio::time::timeout(timeout, server.peer.list_all_resources()).await;
    match listed {
        Ok(Ok(list)) => {
            if list.iter().take(LIST_MAX).any(|r: &Resource| r.uri == uri) {
                return true;
            }
        }
        Ok(Err(e)) => tracing::debug!(server = %server.name, error = %e, "resources/list failed"),
        Err(_) => tracing::debug!(server = %server.name, "resources/list timed out"),
    }
    let templates = tokio::time::timeout(timeout, server.peer.list_all_resource_templates()).await;
    match templates {
        Ok(Ok(list)) => list
            .iter()
            .take(LIST_MAX)
            .any(|t: &ResourceTemplate| template_matches(&t.uri_template, uri)),
        _ => false,
    }
}

/// Whether `uri` is an expansion of the RFC 6570 `template`: literal text
/// must match exactly; `{var}` (and `{var,other}`) stands for one or more
/// characters other than `/`, `?` and `#`; `{+var}` / `{#var}` for any
/// characters; `{/var}`, `{?var}`, `{&var}` (optional parts) for nothing or
/// their prefix and more.
pub fn template_matches(template: &str, uri: &str) -> bool {
    enum Piece<'a> {
        Lit(&'a str),
        Var { any: bool, optional: bool },
    }
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        if open > 0 {
            pieces.push(Piece::Lit(&rest[..open]));
        }
        let expr = &rest[open + 1..open + close];
        pieces.push(match expr.chars().next() {
            Some('+' | '#') => Piece::Var {
                any: true,
                optional: false,
            },
            Some('/' | '?' | '&' | '.' | ';') => Piece::Var {
                any: true,
                optional: true,
            },
            _ => Piece::Var {
                any: false,
                optional: false,
            },
        });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Lit(rest));
    }
    // Backtracking over the pieces (templates are short).
    fn go(pieces: &[Piece<'_>], uri: &str) -> bool {
        let Some((first, more)) = pieces.split_first() else {
            return uri.is_empty();
        };
        match first {
            Piece::Lit(l) => uri.strip_prefix(l).is_some_and(|r| go(more, r)),
            Piece::Var { any, optional } => {
                let min = usize::from(!optional);
                let ends: Vec<usize> = uri
                    .char_indices()
                    .map(|(i, _)| i)
                    .chain([uri.len()])
                    .collect();
                for &end in &ends {
                    let taken = &uri[..end];
                    if !any && taken.contains(['/', '?', '#']) {
                        break;
                    }
                    if taken.len() >= min && go(more, &uri[end..]) {
                        return true;
                    }
                }
                false
            }
        }
    }
    go(&pieces, uri)
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_their_expansions_only() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert!(template_matches(t, "demo://resource/dynamic/text/42"));
        assert!(!template_matches(t, "demo://resource/dynamic/text/"));
        assert!(!template_matches(t, "demo://resource/dynamic/text/4/2"));
        assert!(!template_matches(t, "demo://resource/dynamic/blob/42"));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("x://{a}/{b}", "x://1/2"));
        assert!(!template_matches("x://{a}/{b}", "x://1"));
        assert!(template_matches("x://search{?q}", "x://search"));
        assert!(template_matches("x://search{?q}", "x://search?q=1"));
        assert!(!template_matches("x://{a", "x://1"));
        assert!(template_matches("plain://uri", "plain://uri"));
    }
}
