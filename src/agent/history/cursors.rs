//! Session cursors (unstable, schema 1.20 `cursor_update`; the "Session
//! cursors" RFD): rewind by cursor.
//!
//! When the client advertised `clientCapabilities.session.cursors`, each
//! prompt turn that showed something ends (before its response) with a
//! `cursor_update`: a new cursor anchored after the turn's last message or
//! tool call, which accepts `session/fork`. A `cursor` record in the session
//! log marks the place and the last `/undo` checkpoint at that time, so the
//! cursor stays valid after load, resume and a restart.
//!
//! `session/fork` with that `cursorId` makes a session whose history is the
//! source's records before the cursor, with the source's checkpoints up to
//! it (its `/undo` then matches its history), and puts the files back as
//! they were at the cursor: the checkpoints the source made after it are
//! restored, newest first, exactly as `/undo` restores them (a file changed
//! since is skipped, never overwritten). Without the capability nothing is
//! sent or recorded.
use std::path::Path;

use crate::acp::{CursorCapabilities, CursorUpdate, SessionUpdate, Supported};
use crate::editor::Editor;

use super::checkpoint::Checkpoints;
use super::undo::{Report, restore_with};
use crate::agent::session::Session;
use crate::agent::store::Record;

/// After a prompt turn: announces a cursor at its end (see the module docs).
pub fn after_turn(session: &Session) {
    let anchor = session.recorder().take_last_entity();
    if !session.editor.capabilities().cursors() {
        return;
    }
    let Some(anchor) = anchor else { return };
    let id = format!("cur_{:016x}", fastrand::u64(..));
    let checkpoint = session.tracker.checkpoints.nth_last(1).map_or(0, |c| c.seq);
    session.record(&Record::Cursor {
        id: id.clone(),
        checkpoint,
    });
    session
        .editor
        .update(&SessionUpdate::CursorUpdate(CursorUpdate {
            cursor_id: id,
            capabilities: CursorCapabilities {
                fork: Some(Supported {}),
            },
            anchor: Some(anchor),
        }));
}

/// Where cursor `id` is in `records`: the number of records before it, and
/// its checkpoint.
pub fn find(records: &[Record], id: &str) -> Option<(usize, u64)> {
    records.iter().enumerate().find_map(|(i, r)| match r {
        Record::Cursor { id: c, checkpoint } if c == id => Some((i, *checkpoint)),
        _ => None,
    })
}

/// Copies the checkpoints of `from` numbered up to `upto` into `to` (the
/// fork's), private like the originals.
pub fn copy_checkpoints(from: &Path, to: &Path, upto: u64) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    let mut made = false;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(seq) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        if seq > upto || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if !made {
            std::fs::DirBuilder::new()
                .recursive(true)
                .owner_only()
                .create(to)?;
            made = true;
        }
        std::fs::copy(entry.path(), to.join(&name))?;
    }
    Ok(())
}

/// Restores the files of the checkpoints in `dir` (the source session's)
/// numbered after `after`, newest first, through `editor`.
pub async fn restore_after(
    editor: &Editor,
    cwd: &Path,
    roots: &[std::path::PathBuf],
    dir: &Path,
    after: u64,
) -> Report {
    let checkpoints = Checkpoints::new(Some(dir.to_path_buf()));
    let mut report = Report::default();
    for n in 1..=checkpoints.count() {
        let Some(cp) = checkpoints.nth_last(n) else {
            break;
        };
        if cp.seq <= after {
            break;
        }
        if cp.gone {
            report.skipped.push(format!(
                "the files of the turn “{}”: its checkpoint was dropped (`checkpoint_max_bytes`)",
                cp.prompt
            ));
            continue;
        }
        let r = restore_with(editor, cwd, roots, &cp).await;
        report.restored.extend(r.restored);
        report.deleted.extend(r.deleted);
        report.skipped.extend(r.skipped);
    }
    report
}
