//! `ListTasks` (A2A 1.0 §"List tasks", `lf.a2a.v1.ListTasksRequest`): the
//! server's tasks, most recently updated first, filtered by context, state
//! and update time, in pages with an opaque cursor, as the SDK's reference
//! server lists them (page size 1–100, default 50; artifacts only with
//! `includeArtifacts`; `historyLength` as for `GetTask`).
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::hub::Hub;
use super::tasks::Task;
use super::wire::{self, A2aError, state};

const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 100;

/// A task's place in the listing: (last update, id), compared descending.
type Key = (i128, String);

fn key_of(t: &Task) -> Key {
    (t.updated().unix_timestamp_nanos(), t.id.clone())
}

/// The page token: the key of the last task of the previous page, so it
/// stays valid when that task changes or is forgotten.
fn encode(key: &Key) -> String {
    format!("{}:{}", key.0, key.1)
}

fn decode(token: &str) -> Result<Key, A2aError> {
    token
        .split_once(':')
        .and_then(|(ns, id)| Some((ns.parse().ok()?, id.to_owned())))
        .ok_or_else(|| {
            A2aError::params(format!(
                "pageToken {token:?} is not one this server gave out; list again without pageToken"
            ))
        })
}

pub fn list(hub: &Hub, params: Value) -> Result<Value, A2aError> {
    let p: wire::ListParams = wire::decode(params)?;
    let history = wire::history_length(p.history_length)?;
    let size = p.page_size.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&size) {
        return Err(A2aError::params(format!(
            "pageSize {size}: must be 1 to {MAX_PAGE} (default {DEFAULT_PAGE})"
        )));
    }
    let status = p
        .status
        .filter(|s| !s.is_empty() && s != "TASK_STATE_UNSPECIFIED");
    if let Some(s) = &status
        && !state::ALL.contains(&s.as_str())
    {
        return Err(A2aError::params(format!(
            "status {s:?} is not a task state: use one of {:?}",
            state::ALL
        )));
    }
    let after = p
        .status_timestamp_after
        .as_deref()
        .map(|t| {
            OffsetDateTime::parse(t, &Rfc3339).map_err(|e| {
                A2aError::params(format!(
                    "statusTimestampAfter {t:?} is not an RFC 3339 time like 2026-01-31T12:00:00Z: {e}"
                ))
            })
        })
        .transpose()?;
    let cursor = (!p.page_token.is_empty())
        .then(|| decode(&p.page_token))
        .transpose()?;

    let mut tasks: Vec<(Key, std::sync::Arc<Task>)> = hub
        .list(&p.context_id, status.as_deref())
        .into_iter()
        .filter(|t| after.is_none_or(|a| t.updated() >= a))
        .map(|t| (key_of(&t), t))
        .collect();
    tasks.sort_by(|a, b| b.0.cmp(&a.0));
    let total = tasks.len();
    let start = cursor.map_or(0, |c| tasks.partition_point(|(k, _)| *k >= c));
    let end = (start + size as usize).min(total);
    let next = if end < total {
        encode(&tasks[end - 1].0)
    } else {
        String::new()
    };
    let page: Vec<Value> = tasks[start..end]
        .iter()
        .map(|(_, t)| {
            let mut s = t.snapshot(history);
            if !p.include_artifacts
                && let Some(o) = s.as_object_mut()
            {
                o.remove("artifacts");
            }
            s
        })
        .collect();
    Ok(json!({"tasks": page, "nextPageToken": next, "pageSize": size, "totalSize": total}))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::a2a::hub::Limits;

    fn hub_with(n: usize) -> (Hub, Vec<std::sync::Arc<Task>>) {
        let hub = Hub::new(Limits {
            max_live: 100,
            max_stored: 100,
            idle: Duration::from_secs(60),
        });
        let tasks = (0..n)
            .map(|i| {
                let t = Task::new(&format!("c{i}"), PathBuf::from("/w"), json!({"n": i}));
                hub.start(t.clone()).unwrap();
                t.set_state(state::COMPLETED, None);
                hub.end(&t);
                t
            })
            .collect();
        (hub, tasks)
    }

    fn ids(v: &Value) -> Vec<String> {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn pages_cover_every_task_once_newest_first() {
        let (hub, tasks) = hub_with(5);
        let mut seen = Vec::new();
        let mut token = String::new();
        loop {
            let page = list(&hub, json!({"pageSize": 2, "pageToken": token})).unwrap();
            assert_eq!(page["totalSize"], 5);
            seen.extend(ids(&page));
            token = page["nextPageToken"].as_str().unwrap().to_owned();
            if token.is_empty() {
                break;
            }
        }
        let mut expected: Vec<_> = tasks.iter().map(|t| (key_of(t), t.id.clone())).collect();
        expected.sort_by(|a, b| b.0.cmp(&a.0));
        let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn filters_history_and_artifacts() {
        let (hub, tasks) = hub_with(2);
        tasks[0].add_artifact(json!({"artifactId": "answer", "parts": []}));
        let one = list(&hub, json!({"contextId": "c0"})).unwrap();
        assert_eq!(ids(&one), [tasks[0].id.clone()]);
        assert!(one["tasks"][0].get("artifacts").is_none());
        assert_eq!(one["tasks"][0]["history"], json!([{"n": 0}]));
        let full = list(
            &hub,
            json!({"contextId": "c0", "includeArtifacts": true, "historyLength": 0}),
        )
        .unwrap();
        assert_eq!(full["tasks"][0]["artifacts"][0]["artifactId"], "answer");
        assert_eq!(full["tasks"][0]["history"], json!([]));
        let none = list(&hub, json!({"status": state::WORKING})).unwrap();
        assert_eq!(none["tasks"], json!([]));
        let later = list(
            &hub,
            json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"}),
        )
        .unwrap();
        assert_eq!(later["totalSize"], 0);
        let since = list(
            &hub,
            json!({"statusTimestampAfter": "2000-01-01T00:00:00Z"}),
        )
        .unwrap();
        assert_eq!(since["totalSize"], 2);
    }

    #[test]
    fn bad_params_name_the_field() {
        let (hub, _) = hub_with(1);
        for (params, word) in [
            (json!({"pageSize": 0}), "pageSize"),
            (json!({"pageSize": 101}), "pageSize"),
            (json!({"historyLength": -1}), "historyLength"),
            (json!({"status": "done"}), "status"),
            (json!({"pageToken": "garbage"}), "pageToken"),
            (
                json!({"statusTimestampAfter": "yesterday"}),
                "statusTimestampAfter",
            ),
        ] {
            let e = list(&hub, params.clone()).unwrap_err();
            assert_eq!(e.code, wire::code::INVALID_PARAMS, "{params}");
            assert!(e.message.contains(word), "{params}: {e}");
        }
    }
}
