//! The lines a stdio server writes, on their way to rmcp's transport, which
//! drops a line over its limit ([`MAX_LINE`], 16 MiB) with a log line and
//! nothing else: an outside review saw a tool call stay `in_progress` for
//! the whole tool timeout (300 s) after a 20 MiB answer. Here an over-long
//! answer is turned into an error answer to the same request, so the call
//! fails at once and says why; the long line itself is never held whole.
//!
//! The request id is read off the line's first and last few KiB (SDKs put
//! it before the result, as `{"jsonrpc":"2.0","id":5,"result":…}`, or after
//! it, as `{"result":…,"jsonrpc":"2.0","id":5}`). A long line that is not
//! an answer (a request or a notification from the server), or whose id
//! cannot be read, is dropped with a log line, as rmcp would.
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line passed on: rmcp's own limit, newline included.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// Bytes kept of each end of an over-long line, to find its id.
const KEPT: usize = 4096;

/// The server's stdout as rmcp should read it: a task copies it line by
/// line, replacing an over-long answer with an error answer.
pub fn bounded<R>(server: &str, stdout: R) -> tokio::io::DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let server = server.to_owned();
    tokio::spawn(async move {
        copy_lines(
            &server,
            BufReader::with_capacity(64 * 1024, stdout),
            theirs,
            MAX_LINE,
        )
        .await;
    });
    ours
}

/// Copies `read` to `write` line by line (lines of at most `max` bytes with
/// their newline); an over-long line becomes [`refusal`]'s error answer, or
/// nothing. Ends at EOF or when `write` is closed.
async fn copy_lines<R, W>(server: &str, mut read: R, mut write: W, max: usize)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut line: Vec<u8> = Vec::new();
    // While dropping an over-long line: its length so far and its tail.
    let mut over: Option<(usize, Vec<u8>)> = None;
    let mut head: Vec<u8> = Vec::new();
    loop {
        let (taken, ended) = {
            let available = match read.fill_buf().await {
                Ok(a) if !a.is_empty() => a,
                _ => break,
            };
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let piece = &available[..take];
            match &mut over {
                Some((len, tail)) => {
                    *len += piece.len();
                    tail.extend_from_slice(piece);
                    if tail.len() > 2 * KEPT {
                        tail.drain(..tail.len() - KEPT);
                    }
                }
                None if line.len() + piece.len() > max => {
                    head = line[..line.len().min(KEPT)].to_vec();
                    if head.len() < KEPT {
                        let more = (KEPT - head.len()).min(piece.len());
                        head.extend_from_slice(&piece[..more]);
                    }
                    let mut tail = line[line.len().saturating_sub(KEPT)..].to_vec();
                    tail.extend_from_slice(piece);
                    over = Some((line.len() + piece.len(), tail));
                    line = Vec::new();
                }
                None => line.extend_from_slice(piece),
            }
            (take, newline.is_some())
        };
        read.consume(taken);
        if !ended {
            continue;
        }
        let out = match over.take() {
            Some((len, tail)) => {
                let refused = refusal(server, &head, &tail, len, max);
                head.clear();
                match refused {
                    Some(l) => l,
                    None => continue,
                }
            }
            None => std::mem::take(&mut line),
        };
        if write.write_all(&out).await.is_err() {
            return;
        }
    }
    // A last line without its newline is passed on as it is.
    if over.is_none() && !line.is_empty() {
        let _ = write.write_all(&line).await;
    }
    let _ = write.shutdown().await;
}

/// The error answer that replaces an over-long answer (`head` and `tail`:
/// its first and last bytes), newline included; `None` (logged) when it is
/// not an answer or its id cannot be read.
fn refusal(server: &str, head: &[u8], tail: &[u8], len: usize, max: usize) -> Option<Vec<u8>> {
    let head = String::from_utf8_lossy(head);
    let tail = String::from_utf8_lossy(tail);
    let (head_id, answer) = scan_head(&head);
    let id = match (answer, head_id) {
        (false, _) => None,
        (true, Some(id)) => Some(id),
        (true, None) => id_at_end(&tail),
    };
    let Some(id) = id else {
        tracing::warn!(
            server,
            len,
            max,
            "MCP server wrote a line over the limit that is not an answer with a readable id; dropped"
        );
        return None;
    };
    tracing::warn!(server, len, max, %id, "MCP server answered with a line over the limit; failing the request");
    let message = format!(
        "the MCP server {server} answered with one line of {len} bytes, over the {max}-byte limit; the answer was dropped (ask the tool for less: a smaller page, range or query)"
    );
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}});
    let mut out = serde_json::to_vec(&error).ok()?;
    out.push(b'\n');
    Some(out)
}

/// Reads the top-level members at the start of a JSON object: the `id`, if
/// it comes before the first nested value, and whether the message is an
/// answer (its first nested member is `result` or `error`, and no `method`
/// came before it).
fn scan_head(head: &str) -> (Option<Value>, bool) {
    let mut id = None;
    let Some(mut rest) = head.trim_start().strip_prefix('{') else {
        return (None, false);
    };
    loop {
        rest = rest.trim_start();
        let mut keys = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let Some(Ok(key)) = keys.next() else {
            return (id, false);
        };
        rest = rest[keys.byte_offset()..].trim_start();
        let Some(after) = rest.strip_prefix(':') else {
            return (id, false);
        };
        rest = after.trim_start();
        if key == "method" {
            return (None, false);
        }
        if rest.starts_with(['{', '[']) || (key == "result" || key == "error") {
            return (id, key == "result" || key == "error");
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let Some(Ok(value)) = values.next() else {
            return (id, false);
        };
        rest = &rest[values.byte_offset()..];
        if key == "id" && (value.is_number() || value.is_string()) {
            id = Some(value);
        }
        let Some(after) = rest.trim_start().strip_prefix(',') else {
            return (id, false);
        };
        rest = after;
    }
}

/// The id of an object that ends `…,"id":5}`.
fn id_at_end(tail: &str) -> Option<Value> {
    let body = tail.trim_end().strip_suffix('}')?;
    let at = body.rfind("\"id\"")?;
    if !body[..at].trim_end().ends_with(',') {
        return None;
    }
    let value = body[at + 4..].trim_start().strip_prefix(':')?.trim();
    let id: Value = serde_json::from_str(value).ok()?;
    (id.is_number() || id.is_string()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(input: Vec<u8>, max: usize) -> String {
        let (mut w, r) = tokio::io::duplex(1 << 16);
        let (out_w, mut out_r) = tokio::io::duplex(1 << 16);
        let copier = tokio::spawn(async move {
            copy_lines("docs", BufReader::with_capacity(7, r), out_w, max).await;
        });
        let feeder = tokio::spawn(async move {
            let _ = w.write_all(&input).await;
            drop(w);
        });
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut out_r, &mut out)
            .await
            .unwrap();
        feeder.await.unwrap();
        copier.await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn short_lines_pass_and_long_answers_become_errors() {
        let pad = "x".repeat(300);
        let input = format!(
            concat!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n",
                "{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"t\":\"{pad}\"}}}}\n",
                "{{\"result\":{{\"t\":\"{pad}\"}},\"jsonrpc\":\"2.0\",\"id\":\"s-3\"}}\n",
                "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":{{\"t\":\"{pad}\"}}}}\n",
                "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"t\":\"{pad}\"}}}}\n",
                "{{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{{\"code\":1,\"message\":\"{pad}\"}}}}\n",
                "{{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{{}}}}"
            ),
            pad = pad
        );
        let out = run(input.into_bytes(), 200).await;
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert_eq!(lines[0]["result"], json!({}));
        for (line, id) in lines[1..4].iter().zip([json!(2), json!("s-3"), json!(5)]) {
            assert_eq!(line["id"], id, "{line}");
            assert_eq!(line["error"]["code"], -32603);
            let message = line["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("the MCP server docs answered with one line of")
                    && message.contains("over the 200-byte limit"),
                "{message}"
            );
        }
        assert_eq!(lines[4]["id"], 6);
    }

    #[test]
    fn ids_are_read_only_where_they_are_top_level() {
        assert_eq!(
            scan_head(r#"{"jsonrpc":"2.0","id":7,"result":{"id":9"#),
            (Some(json!(7)), true)
        );
        assert_eq!(scan_head(r#"{"result":{"id":9,"x":"#), (None, true));
        assert_eq!(
            scan_head(r#"{"id":7,"method":"x","params":{"#),
            (None, false)
        );
        assert_eq!(
            id_at_end(r#"x"}],"jsonrpc":"2.0","id":12}"#),
            Some(json!(12))
        );
        assert_eq!(id_at_end(r#"x","id":12}}"#), None);
        assert_eq!(id_at_end(r#"{"id":12}"#), None);
    }
}
