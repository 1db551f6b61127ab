//! `session/fork` (unstable, `unstable_session_fork`; ACP §15; issue 17
//! item 4): a new session whose history is the source session's as stored
//! now, with its own id and log; the source is untouched. The base of "edit
//! an earlier prompt and resubmit" in editors.
//!
//! The fork is made on disk: the source's records (everything but its meta
//! record) are copied into the new session's log, which is then restored
//! like `session/resume` (history, mode, model, title, tool ids), with the
//! cwd, additional directories and MCP servers the fork request names.
use std::sync::Arc;

use crate::acp::LoadSessionRequest;
use crate::rpc::{Reply, RpcError};

use super::lifecycle::{absolute_dir, new_session_id};
use crate::agent::Agent;
use crate::agent::store::{self, Record, Summary};

impl Agent {
    pub(in crate::agent) async fn fork_session(
        self: &Arc<Self>,
        req: LoadSessionRequest,
    ) -> Result<Reply, RpcError> {
        absolute_dir("params.cwd", &req.cwd)?;
        self.usable_settings()?;
        let records = self.read_records(&req.session_id)?;
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
        tracing::info!(source = %req.session_id, session = %id, records = records.len(), "session forked");
        let (session, _) = self
            .restore_session(LoadSessionRequest {
                session_id: id.clone(),
                ..req
            })
            .await?;
        self.answer_new(id, session).await
    }
}
