//! The editor's side of `fs/read_text_file` and `fs/write_text_file` (ACP
//! §9) served from the local disk, for the clients that run the agent in
//! process and play the editor themselves: `exec` and `a2a`.
use std::path::Path;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{FileError, read_local, write_local};
use crate::acp::method;
use crate::rpc::{Reply, RpcError, decode_params};

/// A client that plays the editor for an agent it runs in process (`exec`,
/// `a2a`): reads come from the disk as they are; a write and the permission
/// question are the client's to handle.
#[async_trait::async_trait]
pub trait LocalEditor: Send + Sync + 'static {
    /// The params of `session/request_permission` as the client reads them.
    type Permission: serde::de::DeserializeOwned + Send;

    /// `fs/write_text_file`: by default straight to the disk.
    async fn write_file(&self, p: WriteParams) -> Result<Value, RpcError> {
        write_text_file(&p).await
    }

    /// `session/request_permission` (ACP §9): the response's `outcome`.
    async fn ask_permission(self: Arc<Self>, p: Self::Permission) -> Result<Value, RpcError>;
}

/// Answers one request the agent sends its editor. The agent only sends
/// these three (it advertises no terminal capability to itself); anything
/// else is method-not-found, as JSON-RPC requires.
pub async fn serve<E: LocalEditor>(
    editor: Arc<E>,
    method: String,
    params: Option<Box<RawValue>>,
) -> Result<Reply, RpcError> {
    let p = params.as_deref();
    let result = match method.as_str() {
        method::FS_READ => read_text_file(decode_params(p)?).await?,
        method::FS_WRITE => editor.write_file(decode_params(p)?).await?,
        method::REQUEST_PERMISSION => editor.ask_permission(decode_params(p)?).await?,
        _ => return Err(RpcError::method_not_found(&method)),
    };
    serde_json::value::to_raw_value(&result)
        .map(Reply::from)
        .map_err(RpcError::internal)
}

/// `ReadTextFileRequest`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadParams {
    pub path: String,
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub limit: Option<u64>,
}

/// `WriteTextFileRequest`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteParams {
    #[serde(default)]
    pub session_id: String,
    pub path: String,
    pub content: String,
}

/// `path` if it is absolute (ACP §9: every path is); an invalid-params error
/// naming the field otherwise.
pub fn absolute(path: &str) -> Result<&Path, RpcError> {
    let p = Path::new(path);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(RpcError::invalid_params(format!(
            "params.path: expected an absolute path, got {path:?}"
        )))
    }
}

/// A file error as the editor reports it: not found is ACP's
/// resource-not-found with the file's URI.
fn file_error(e: FileError) -> RpcError {
    match e {
        FileError::NotFound(p) => RpcError::not_found(format!("{} does not exist", p.display()))
            .with_data(json!({ "uri": format!("file://{}", p.display()) })),
        other => RpcError::internal(other),
    }
}

/// `fs/read_text_file`: the file, or the lines `line` (1-based) on, at most `limit`.
pub async fn read_text_file(p: ReadParams) -> Result<Value, RpcError> {
    let text = read_local(absolute(&p.path)?).await.map_err(file_error)?;
    let content = match (p.line, p.limit) {
        (None, None) => text,
        (line, limit) => {
            let skip = line.unwrap_or(1).saturating_sub(1) as usize;
            let take = limit.map_or(usize::MAX, |l| l as usize);
            text.split_inclusive('\n').skip(skip).take(take).collect()
        }
    };
    Ok(json!({ "content": content }))
}

/// `fs/write_text_file`.
pub async fn write_text_file(p: &WriteParams) -> Result<Value, RpcError> {
    write_local(&[], absolute(&p.path)?, &p.content)
        .await
        .map_err(file_error)?;
    Ok(json!({}))
}

/// One thing a permission request shows, for the in-process clients that
/// put it in words (`exec` on the terminal, `a2a` in a task's status).
pub enum Shown<'a> {
    Diff {
        path: &'a str,
        old: Option<&'a str>,
        new: &'a str,
    },
    Text(&'a str),
}

/// The diffs and texts of a permission request's tool call, in order.
pub fn shown(tool_call: &serde_json::Value) -> impl Iterator<Item = Shown<'_>> {
    use serde_json::Value;
    tool_call
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| match c.get("type").and_then(Value::as_str) {
            Some("diff") => Some(Shown::Diff {
                path: c.get("path").and_then(Value::as_str).unwrap_or("?"),
                old: c.get("oldText").and_then(Value::as_str),
                new: c.get("newText").and_then(Value::as_str).unwrap_or(""),
            }),
            Some("content") => c
                .get("content")
                .and_then(|b| b.get("text")?.as_str())
                .map(Shown::Text),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_line_ranges_and_refuses_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "1\n2\n3\n").unwrap();
        let path = f.to_str().unwrap().to_owned();
        let r = read_text_file(ReadParams {
            path: path.clone(),
            line: Some(2),
            limit: Some(1),
        })
        .await
        .unwrap();
        assert_eq!(r["content"], "2\n");
        let e = read_text_file(ReadParams {
            path: "a.txt".into(),
            line: None,
            limit: None,
        })
        .await
        .unwrap_err();
        assert!(e.message.contains("absolute"), "{}", e.message);
        let missing = dir.path().join("nope").to_str().unwrap().to_owned();
        let e = read_text_file(ReadParams {
            path: missing,
            line: None,
            limit: None,
        })
        .await
        .unwrap_err();
        assert!(e.message.contains("does not exist"), "{}", e.message);
    }
}
