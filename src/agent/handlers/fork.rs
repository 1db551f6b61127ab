//! `session/fork` (unstable, `unstable_session_fork`; ACP §15; issue 17
//! item 4): a new session whose history is the source session's as stored
//! now, with its own id and log; the source is untouched. The base of "edit
//! an earlier prompt and resubmit" in editors.
//!
//! The fork is made on disk: the source's records (everything but its meta
//! record) are copied into the new session's log, which is then restored
//! like `session/resume` (history, mode, model, title, tool ids), with the
//! cwd, additional directories and MCP servers the fork request names.
//!
//! At a session cursor (`cursorId`, unstable; `history::cursors`): only the
//! records before the cursor are copied, with the checkpoints up to it, and
//! the files the source changed after it are restored.
use std::sync::Arc;

use crate::acp::LoadSessionRequest;
use crate::rpc::{Reply, RpcError};

use super::dirs::absolute_dir;
use super::lifecycle::new_session_id;
use crate::agent::Agent;
use crate::agent::history::cursors;
use crate::agent::store::{self, Record, Summary};

impl Agent {
    pub(in crate::agent) async fn fork_session(
        self: &Arc<Self>,
        req: LoadSessionRequest,
    ) -> Result<Reply, RpcError> {
        absolute_dir("params.cwd", &req.cwd)?;
        let initial = super::config::initial_options(req.config_options.as_ref())?;
        self.usable_settings()?;
        let mut records = self.read_records(&req.session_id)?;
        // A fork at a cursor: the records before it (ACP: an unknown cursor
        // is `-32602`, never a fork of the whole session).
        let at = match &req.cursor_id {
            None => None,
            Some(cursor) => {
                let (end, checkpoint) = cursors::find(&records, cursor).ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "params.cursorId: {cursor:?} is not a cursor of session {:?}; use one its cursor_update announced",
                        req.session_id
                    ))
                })?;
                records.truncate(end);
                Some(checkpoint)
            }
        };
        let id = new_session_id();
        let now = store::now_rfc3339();
        let summary = Summary {
            session_id: id.clone(),
            cwd: req.cwd.clone(),
            additional_directories: req.additional_directories.clone(),
            title: self.store.summary(&req.session_id).and_then(|s| s.title),
            created_at: now.clone(),
            updated_at: now,
        };
        {
            let log = self.store.create(&summary);
            for record in records.iter().filter(|r| !matches!(r, Record::Meta { .. })) {
                log.append(record).map_err(|e| {
                    RpcError::internal(format!("could not write the forked session's log: {e}"))
                })?;
            }
            log.sync();
        }
        if let Some(upto) = at {
            let (from, to) = (
                self.store.checkpoints_dir(&req.session_id),
                self.store.checkpoints_dir(&id),
            );
            if let Err(e) = cursors::copy_checkpoints(&from, &to, upto) {
                tracing::warn!(error = %e, "the fork's /undo checkpoints were not copied");
            }
        }
        let source = req.session_id.clone();
        tracing::info!(source = %req.session_id, session = %id, records = records.len(), "session forked");
        let (session, _) = self
            .restore_session(LoadSessionRequest {
                session_id: id.clone(),
                ..req
            })
            .await?;
        if let Some(upto) = at {
            // Through the source session, which the editor knows (the
            // fork's id is not announced yet).
            let editor = crate::editor::Editor::new(self.peer.clone(), self.client_caps(), &source);
            let dir = self.store.checkpoints_dir(&source);
            let report =
                cursors::restore_after(&editor, &session.cwd, &session.roots(), &dir, upto).await;
            tracing::info!(
                source = %source,
                session = %session.id,
                restored = ?report.restored,
                deleted = ?report.deleted,
                skipped = ?report.skipped,
                "files restored for a fork at a cursor"
            );
        }
        self.apply_initial_options(&session, &initial).await;
        self.answer_new(id, session).await
    }
}
