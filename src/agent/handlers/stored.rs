//! Sessions as the store holds them (ACP §5.4 and the unstable
//! `session/set_title`): list, close, delete, and retitle, each for a
//! session whether or not it is open on this connection.
use std::path::Path;
use std::sync::Arc;

use crate::acp::{
    Empty, ListSessionsRequest, ListSessionsResponse, SessionInfo, SessionInfoUpdate, SessionRef,
    SessionUpdate, SetSessionTitleRequest, SetSessionTitleResponse,
};
use crate::rpc::{Reply, RpcError};
use crate::tools::paths::canonicalize_lenient;

use super::lifecycle::unknown_session;
use crate::agent::Agent;
use crate::agent::store::{self, Record, StoreError, Summary};

/// Sessions per `session/list` page.
const PAGE: usize = 50;

/// The longest title kept, in characters (longer ones are cut, with `…`).
const TITLE_MAX_CHARS: usize = 200;

impl Agent {
    /// `session/list` (ACP §5.4): newest first, optionally only one cwd.
    pub(in crate::agent) fn list_sessions(
        &self,
        req: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, RpcError> {
        let offset = match req.cursor.as_deref() {
            None | Some("") => 0,
            Some(c) => decode_cursor(c).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "params.cursor: {c:?} is not a cursor this agent issued"
                ))
            })?,
        };
        let filter = req
            .cwd
            .as_deref()
            .map(|c| canonicalize_lenient(Path::new(c)));
        let unborn = self
            .unborn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut all: Vec<Summary> = self
            .store
            .list()
            .into_iter()
            .filter(|s| !unborn.contains(&s.session_id))
            .filter(|s| {
                filter
                    .as_ref()
                    .is_none_or(|f| canonicalize_lenient(Path::new(&s.cwd)) == *f)
            })
            .collect();
        all.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        let next = (offset + PAGE < all.len()).then(|| encode_cursor(offset + PAGE));
        let sessions = all
            .into_iter()
            .skip(offset)
            .take(PAGE)
            .map(|s| SessionInfo {
                session_id: s.session_id,
                cwd: s.cwd,
                additional_directories: s.additional_directories,
                title: s.title,
                updated_at: Some(s.updated_at),
            })
            .collect();
        Ok(ListSessionsResponse {
            sessions,
            next_cursor: next,
        })
    }

    /// `session/close` (ACP §5.4): cancels a running turn and frees the session.
    pub(in crate::agent) fn close_session(&self, req: SessionRef) -> Result<Empty, RpcError> {
        let session = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req.session_id);
        match session {
            Some(s) => {
                s.cancel_all();
                s.registry.shutdown();
                crate::tools::process::background::kill_session(&s.id);
                tracing::info!(session = %req.session_id, "session closed");
                Ok(Empty::default())
            }
            None => Err(unknown_session(&req.session_id)),
        }
    }

    /// `session/delete` (ACP §5.4): forgets a session; unknown ids succeed silently.
    pub(in crate::agent) fn delete_session(&self, req: SessionRef) -> Result<Empty, RpcError> {
        if let Some(s) = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req.session_id)
        {
            s.cancel_all();
        }
        crate::tools::process::background::kill_session(&req.session_id);
        self.store.delete(&req.session_id).map_err(|e| match e {
            StoreError::Locked { .. } => locked(&req.session_id, &e),
            e => RpcError::internal(format!(
                "could not delete session {:?}: {e}",
                req.session_id
            )),
        })?;
        tracing::info!(session = %req.session_id, "session deleted");
        Ok(Empty::default())
    }

    /// `session/set_title` (unstable, `sessionCapabilities.title`): stores
    /// the title (normalized: one line, trimmed, at most
    /// [`TITLE_MAX_CHARS`]) for any session `session/list` shows, open here
    /// or not, and answers with it; the session keeps it (no generated
    /// title replaces it). A session open on this connection also gets a
    /// `session_info_update`, after the response.
    pub(in crate::agent) async fn set_title(
        self: &Arc<Self>,
        req: SetSessionTitleRequest,
    ) -> Result<Reply, RpcError> {
        let title = normalize_title(&req.title).ok_or_else(|| {
            RpcError::invalid_params(
                "params.title: the title is empty once trimmed; send one with some text",
            )
        })?;
        let unborn = self
            .unborn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&req.session_id);
        let live = self
            .session(&req.session_id)
            .ok()
            .filter(|s| !unborn && !s.recorder().read_only());
        let Some(session) = live else {
            if unborn {
                return Err(unknown_session(&req.session_id));
            }
            self.retitle_stored(&req.session_id, &title)?;
            return crate::agent::to_raw(&SetSessionTitleResponse { title });
        };
        session.meta.lock().unwrap_or_else(|e| e.into_inner()).title = Some(title.clone());
        session.record(&Record::Title {
            title: title.clone(),
        });
        // On disk (log synced, sidecar written) before the answer.
        session.touch().await;
        tracing::info!(session = %session.id, "title set by the client");
        let mut reply = crate::agent::to_raw(&SetSessionTitleResponse {
            title: title.clone(),
        })?;
        reply.after = Some(Box::new(move || {
            session
                .editor
                .update(&SessionUpdate::SessionInfoUpdate(SessionInfoUpdate {
                    title: Some(title),
                    updated_at: Some(session.meta().updated_at),
                }));
        }));
        Ok(reply)
    }

    /// Retitles a session that is not open here: a title record on its log
    /// (under the log's lock: one writer) and the sidecar `session/list` reads.
    fn retitle_stored(&self, id: &str, title: &str) -> Result<(), RpcError> {
        self.read_records(id)?;
        let claim = self.store.claim(id).map_err(|e| match e {
            StoreError::Locked { .. } => locked(id, &e),
            e => RpcError::internal(format!("could not retitle session {id:?}: {e}")),
        })?;
        let log = self.store.open(id).hold(Some(claim));
        log.append(&Record::Title {
            title: title.to_owned(),
        })
        .map_err(|e| RpcError::internal(format!("could not retitle session {id:?}: {e}")))?;
        log.sync();
        // Without a sidecar, `session/list` rebuilds the summary from the
        // log, title record included.
        if let Some(summary) = self.store.summary(id) {
            let summary = Summary {
                title: Some(title.to_owned()),
                updated_at: store::now_rfc3339(),
                ..summary
            };
            self.store.write_summary(&summary).map_err(|e| {
                RpcError::internal(format!("could not retitle session {id:?}: {e}"))
            })?;
        }
        tracing::info!(session = %id, "stored session retitled by the client");
        Ok(())
    }
}

/// One line, whitespace runs folded to one space, trimmed, cut at
/// [`TITLE_MAX_CHARS`]; `None` when nothing is left.
fn normalize_title(raw: &str) -> Option<String> {
    let folded = raw
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if folded.is_empty() {
        return None;
    }
    if folded.chars().count() <= TITLE_MAX_CHARS {
        return Some(folded);
    }
    let cut: String = folded.chars().take(TITLE_MAX_CHARS - 1).collect();
    Some(format!("{}…", cut.trim_end()))
}

/// A session held by another process (its log has one writer): the error
/// names the session and the holder's pid.
pub(in crate::agent) fn locked(id: &str, e: &StoreError) -> RpcError {
    let pid = match e {
        StoreError::Locked { pid, .. } => *pid,
        _ => None,
    };
    RpcError::new(crate::rpc::codes::INTERNAL_ERROR, e.to_string())
        .with_data(serde_json::json!({ "sessionId": id, "holderPid": pid }))
}

fn encode_cursor(offset: usize) -> String {
    format!("o{offset:x}")
}

fn decode_cursor(c: &str) -> Option<usize> {
    usize::from_str_radix(c.strip_prefix('o')?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_one_trimmed_line_of_bounded_length() {
        assert_eq!(
            normalize_title("  Fix\n the\tbuild \r\n").as_deref(),
            Some("Fix the build")
        );
        assert_eq!(normalize_title(" \n\t "), None);
        assert_eq!(normalize_title("\u{7}"), None);
        let long = "x".repeat(500);
        let t = normalize_title(&long).unwrap();
        assert_eq!(t.chars().count(), TITLE_MAX_CHARS);
        assert!(t.ends_with('…'));
    }
}
