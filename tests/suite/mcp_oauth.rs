//! OAuth for HTTP MCP servers (issue 18 item 8) against the official Python
//! SDK's authorization and resource server (tests/fixtures/mcp_py_oauth_server.py;
//! .ci/run installs the SDK): the 401, the link in the chat, the browser (a
//! plain HTTP client here) following it back to the agent's loopback
//! listener, the tools, the 0600 token file no log repeats, the restart that
//! reuses it, the refresh of an expired token, the sign-out.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp_common::{free_port, mcp_python, new_session, tool_result};
use crate::support::{FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, full_capabilities};

/// The OAuth-protected server over `transport` (`streamable-http` or
/// `sse`): the running server (dropping it stops the server), the
/// `mcpServers` naming it `py`, and its grant log.
async fn oauth_server(transport: &str) -> (RunningServer, Value, PathBuf) {
    oauth_server_with(transport, "dcr").await
}

/// [`oauth_server`] whose authorization server knows clients as `clients`
/// says (`dcr`, `preregistered`, `cimd`: see the fixture).
async fn oauth_server_with(transport: &str, clients: &str) -> (RunningServer, Value, PathBuf) {
    let python = mcp_python();
    let dir = tempfile::tempdir().unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_py_oauth_server.py");
    let port = free_port();
    let events = dir.path().join("grants.log");
    let child = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(port.to_string())
        .arg(transport)
        .arg(&events)
        .arg(clients)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the Python OAuth MCP server");
    // The SDK imports slowly on a loaded machine: a generous bound.
    let began = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "the Python OAuth server did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (kind, path) = if transport == "sse" {
        ("sse", "/sse")
    } else {
        ("http", "/mcp")
    };
    let url = format!("http://127.0.0.1:{port}{path}");
    let servers = json!([{"type": kind, "name": "py", "url": url, "headers": []}]);
    (
        RunningServer {
            _child: child,
            _dir: dir,
        },
        servers,
        events,
    )
}

/// The server process and its scratch directory, both gone when dropped.
struct RunningServer {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

/// A HOME for the agent (where its token file goes), a workspace and a
/// model.
async fn fresh_agent_home() -> (tempfile::TempDir, Workspace, FakeModel) {
    let home = tempfile::tempdir().unwrap();
    (home, Workspace::new(), FakeModel::start().await)
}

/// The user's browser following the sign-in link: the agent's loopback
/// listener answers 200 with the page.
async fn follow_sign_in_link(link: &str) -> String {
    crate::support::install_crypto_provider();
    let page = reqwest::get(link).await.unwrap();
    assert_eq!(page.status(), 200);
    page.text().await.unwrap()
}

/// `/mcp` shows the server signed in and its tool answers the signed-in
/// caller; the `/mcp` answer.
async fn assert_signed_in(editor: &FakeEditor, model: &FakeModel, sid: &str, call: &str) -> String {
    let status = wait_ready(editor, sid).await;
    assert!(status.contains("sign-in: signed in"), "{status}");
    let caller = call_whoami(editor, model, sid, call).await;
    assert!(caller.starts_with("signed-in caller"), "{caller}");
    status
}

/// The first turn: the server answers 401 and the chat shows a sign-in link
/// to 127.0.0.1; the agent's text and the link.
async fn first_turn_shows_a_sign_in_link(
    editor: &FakeEditor,
    model: &FakeModel,
    sid: &str,
) -> (String, String) {
    model.push(Reply::text("hello"));
    editor.prompt(sid, "hi").await;
    let text = editor.agent_text(sid);
    let link = text
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/authorize?"))
        .unwrap_or_else(|| panic!("no sign-in link in the chat: {text}"))
        .to_owned();
    (text, link)
}

/// Only the owner may read or write `file` (Unix modes; Windows files
/// keep the ACL of the user's profile).
fn assert_private(file: &Path) {
    if let Some(mode) = acp_coder::platform::fs::mode(&std::fs::metadata(file).unwrap()) {
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
}

/// What the agent said to `text` (a slash command).
async fn answer_to(editor: &FakeEditor, sid: &str, text: &str) -> String {
    let before = editor.agent_text(sid).len();
    editor.prompt(sid, text).await;
    editor.agent_text(sid)[before..].to_owned()
}

/// The grants in order (`register`, `authorization_code`, `refresh_token`).
fn grants(events: &Path) -> Vec<String> {
    grant_lines(events)
        .iter()
        .map(|l| l.split(' ').next().unwrap_or_default().to_owned())
        .collect()
}

/// The grant log's lines: token grants name their client id.
fn grant_lines(events: &Path) -> Vec<String> {
    std::fs::read_to_string(events)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn agent(model: &FakeModel, home: &Path) -> FakeEditor {
    agent_with(model, home, full_capabilities()).await
}

async fn agent_with(model: &FakeModel, home: &Path, caps: Value) -> FakeEditor {
    agent_configured(model, home, caps, "").await
}

/// The agent with `extra` appended to its config file.
async fn agent_configured(model: &FakeModel, home: &Path, caps: Value, extra: &str) -> FakeEditor {
    let config = home.join("config.toml");
    std::fs::write(
        &config,
        format!("default_mode = \"full-auto\"\nmcp_startup_timeout_secs = 60\n{extra}"),
    )
    .unwrap();
    let editor = FakeEditor::spawn_with(SpawnOptions {
        args: vec!["--config".into(), config.display().to_string()],
        envs: model.agent_env(),
        home: Some(home.to_path_buf()),
        cwd: None,
        program: None,
    });
    editor.initialize(caps).await;
    editor
}

/// Runs `/mcp` until the server is ready; the last answer.
async fn wait_ready(editor: &FakeEditor, sid: &str) -> String {
    let began = Instant::now();
    loop {
        let answer = answer_to(editor, sid, "/mcp").await;
        if answer.contains("ready, 1 tools") {
            return answer;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the server never became ready: {answer}\n{}",
            editor.agent_text(sid)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The model calls `whoami`; what the tool returned.
async fn call_whoami(editor: &FakeEditor, model: &FakeModel, sid: &str, id: &str) -> String {
    model.push(Reply::tool_call(id, "mcp__py__whoami", json!({})));
    model.push(Reply::text("done"));
    editor.prompt(sid, "who am I?").await;
    tool_result(model, model.chat_requests().len() - 1, id)
}

fn token_file(home: &Path) -> PathBuf {
    let dir = home.join(".local/share/acp-coder/mcp-oauth");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn tokens(file: &Path) -> (String, String) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let t = &v["credentials"]["token_response"];
    (
        t["access_token"].as_str().unwrap().to_owned(),
        t["refresh_token"].as_str().unwrap().to_owned(),
    )
}

/// Every file under `dir` but the token files, as text.
fn everything_but_tokens(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if !path.ends_with("mcp-oauth") {
                everything_but_tokens(&path, out);
            }
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn oauth_sign_in_reuse_refresh_and_sign_out_with_the_python_sdk() {
    let (_server, servers, events) = oauth_server("streamable-http").await;
    let (home, ws, model) = fresh_agent_home().await;

    // 1. The server answers 401: the sign-in link is shown in the chat.
    let editor = agent(&model, home.path()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers.clone()).await;
    let (text, link) = first_turn_shows_a_sign_in_link(&editor, &model, &sid).await;
    assert!(
        text.contains("MCP server `py` needs you to sign in"),
        "{text}"
    );
    assert!(link.contains("code_challenge_method=S256"), "{link}");
    assert!(
        link.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"),
        "{link}"
    );

    // 2. The user's browser follows it; the redirect lands on the agent.
    assert!(follow_sign_in_link(&link).await.contains("Signed in"));

    // 3. Tools listed and callable; /mcp says signed in.
    let status = assert_signed_in(&editor, &model, &sid, "w1").await;
    assert!(status.contains("/mcp logout py"), "{status}");
    assert_eq!(grants(&events), ["register", "authorization_code"]);

    // 4. One 0600 token file; its tokens appear nowhere else.
    let file = token_file(home.path());
    assert_private(&file);
    let (access, refresh) = tokens(&file);
    let transcript = editor.raw_lines().join("\n");
    drop(editor);
    let mut rest = transcript;
    everything_but_tokens(home.path(), &mut rest);
    assert!(rest.contains("MCP OAuth tokens stored"), "no log found");
    assert!(!rest.contains(&access) && !rest.contains(&refresh));

    // 5. A restart reuses the stored token: no new sign-in.
    let editor = agent(&model, home.path()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers.clone()).await;
    assert_signed_in(&editor, &model, &sid, "w2").await;
    assert!(!editor.agent_text(&sid).contains("/authorize?"));
    assert_eq!(grants(&events), ["register", "authorization_code"]);
    drop(editor);

    // 6. An expired token is refreshed (with the stored refresh token).
    let mut stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    stored["credentials"]["token_received_at"] = json!(1);
    std::fs::write(&file, stored.to_string()).unwrap();
    let editor = agent(&model, home.path()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers.clone()).await;
    assert_signed_in(&editor, &model, &sid, "w3").await;
    assert_eq!(
        grants(&events),
        ["register", "authorization_code", "refresh_token"]
    );
    let (access2, _) = tokens(&file);
    assert_ne!(access2, access);
    assert_private(&file);

    // 7. Sign-out deletes the token; /mcp says a sign-in is needed.
    let said = answer_to(&editor, &sid, "/mcp logout py").await;
    assert!(said.contains("Signed out of MCP server `py`"), "{said}");
    assert!(!file.exists());
    let said = answer_to(&editor, &sid, "/mcp").await;
    assert!(said.contains("sign-in: needs sign-in"), "{said}");
    let said = answer_to(&editor, &sid, "/mcp logout nosuch").await;
    assert!(said.contains("No MCP server is named `nosuch`"), "{said}");
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn oauth_sign_in_over_legacy_sse_with_the_python_sdk() {
    let (_server, servers, events) = oauth_server("sse").await;
    let (home, ws, model) = fresh_agent_home().await;
    let editor = agent(&model, home.path()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    let (_, link) = first_turn_shows_a_sign_in_link(&editor, &model, &sid).await;
    follow_sign_in_link(&link).await;
    assert_signed_in(&editor, &model, &sid, "s1").await;
    assert_eq!(grants(&events), ["register", "authorization_code"]);
    assert_private(&token_file(home.path()));
}

/// The `elicitation/create` requests the agent sent.
fn url_elicitations(editor: &FakeEditor) -> Vec<Value> {
    editor
        .reverse_requests()
        .into_iter()
        .filter(|r| r["method"] == "elicitation/create")
        .map(|r| r["params"].clone())
        .collect()
}

/// Issue 18 item 8: an editor with `elicitation.url` gets the sign-in link
/// as a URL elicitation (not in the chat); declining ends the sign-in;
/// accepting and following the link signs in, and the elicitation is
/// completed.
#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn oauth_link_goes_through_a_url_elicitation_when_the_editor_has_it() {
    let (_server, servers, events) = oauth_server("streamable-http").await;
    let (home, ws, model) = fresh_agent_home().await;
    let mut caps = full_capabilities();
    caps["elicitation"] = json!({"url": {}});

    // 1. Declined (the fake editor declines when no answer is queued).
    let editor = agent_with(&model, home.path(), caps.clone()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers.clone()).await;
    model.push(Reply::text("hello"));
    editor.prompt(&sid, "hi").await;
    let asked = url_elicitations(&editor);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["mode"], "url");
    assert!(
        asked[0]["url"].as_str().unwrap().contains("/authorize?"),
        "{}",
        asked[0]
    );
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("MCP server `py` needs you to sign in"),
        "{}",
        asked[0]
    );
    let text = editor.agent_text(&sid);
    assert!(!text.contains("/authorize?"), "no link in the chat: {text}");
    let began = Instant::now();
    while !editor.agent_text(&sid).contains("you declined the sign-in") {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the refusal was not reported: {}",
            editor.agent_text(&sid)
        );
        model.push(Reply::text("again"));
        editor.prompt(&sid, "again").await;
    }
    assert_eq!(grants(&events), ["register"]);
    drop(editor);

    // 2. Accepted: the user's browser follows the link; signed in.
    let editor = agent_with(&model, home.path(), caps).await;
    editor.push_elicitation_answer(Some(json!({"action": "accept"})));
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    // The link is asked for once the editor knows the session (a turn began).
    editor.prompt(&sid, "/mcp").await;
    let began = Instant::now();
    let link = loop {
        if let Some(e) = url_elicitations(&editor).first() {
            break e["url"].as_str().unwrap().to_owned();
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no URL elicitation"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let id = url_elicitations(&editor)[0]["elicitationId"].clone();
    follow_sign_in_link(&link).await;
    assert_signed_in(&editor, &model, &sid, "u1").await;
    assert!(!editor.agent_text(&sid).contains("/authorize?"));
    assert!(
        editor
            .messages()
            .iter()
            .any(|m| m["method"] == "elicitation/complete" && m["params"]["elicitationId"] == id),
        "the elicitation was completed"
    );
    assert_eq!(
        grants(&events),
        ["register", "register", "authorization_code"]
    );
}

/// The `url` of the single server in `servers`.
fn url_of(servers: &Value) -> String {
    servers[0]["url"].as_str().unwrap().to_owned()
}

/// The `client_id` of a sign-in link.
fn client_id_of(link: &str) -> String {
    reqwest::Url::parse(link)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "client_id")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

const PRE_SECRET: &str = "acp-pre-secret-0123456789";

/// MCP 2026-07-28 client registration, first choice: a client registered in
/// advance, from the config file, with its secret (a confidential client).
/// The authorization server has no dynamic registration. The secret goes
/// to the token endpoint (code and refresh grants) but is stored nowhere
/// and logged nowhere.
#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn oauth_sign_in_with_a_pre_registered_client_from_the_config_file() {
    let (_server, servers, events) = oauth_server_with("streamable-http", "preregistered").await;
    let (home, ws, model) = fresh_agent_home().await;
    let extra = format!(
        "[mcp_servers.py]\nurl = \"{}\"\n[mcp_servers.py.oauth]\nclient_id = \"acp-pre\"\nclient_secret = \"{PRE_SECRET}\"\n",
        url_of(&servers)
    );
    let editor = agent_configured(&model, home.path(), full_capabilities(), &extra).await;
    let (sid, _) = new_session(&editor, ws.path(), json!([])).await;
    let (_, link) = first_turn_shows_a_sign_in_link(&editor, &model, &sid).await;
    assert_eq!(client_id_of(&link), "acp-pre", "{link}");
    assert!(follow_sign_in_link(&link).await.contains("Signed in"));
    assert_signed_in(&editor, &model, &sid, "p1").await;
    assert_eq!(grant_lines(&events), ["authorization_code acp-pre"]);
    let file = token_file(home.path());
    assert_private(&file);
    let transcript = editor.raw_lines().join("\n");
    drop(editor);

    // An expired token is refreshed with the configured secret.
    let mut stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["credentials"]["client_id"], "acp-pre");
    stored["credentials"]["token_received_at"] = json!(1);
    std::fs::write(&file, stored.to_string()).unwrap();
    let editor = agent_configured(&model, home.path(), full_capabilities(), &extra).await;
    let (sid, _) = new_session(&editor, ws.path(), json!([])).await;
    assert_signed_in(&editor, &model, &sid, "p2").await;
    assert_eq!(
        grant_lines(&events),
        ["authorization_code acp-pre", "refresh_token acp-pre"]
    );
    let transcript = transcript + &editor.raw_lines().join("\n");
    drop(editor);

    // The secret is in the config file only: not in the token file, the
    // frames, the log or anything else under HOME.
    let mut rest = transcript;
    everything_but_tokens(home.path(), &mut rest);
    let rest = rest.replace(&extra, "");
    assert!(rest.contains("pre-registered client id"), "no log found");
    assert!(!rest.contains(PRE_SECRET));
    assert!(!std::fs::read_to_string(&file).unwrap().contains(PRE_SECRET));
}

/// Without dynamic registration and without a configured client, the
/// server fails to start with words saying what to configure; the editor's
/// entry can then carry a (public) pre-registered client id in `_meta`.
#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn oauth_without_dynamic_registration_says_what_to_configure_then_meta_client_signs_in() {
    let (_server, servers, events) = oauth_server_with("streamable-http", "preregistered").await;
    let (home, ws, model) = fresh_agent_home().await;
    let editor = agent(&model, home.path()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers.clone()).await;
    let began = Instant::now();
    let said = loop {
        let said = answer_to(&editor, &sid, "/mcp").await;
        if said.contains("failed to start") {
            break editor.agent_text(&sid);
        }
        assert!(began.elapsed() < Duration::from_secs(60), "{said}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        said.contains("MCP server `py` failed to start: cannot connect: signing in failed: its authorization server registers no clients on the fly"),
        "{said}"
    );
    assert!(said.contains("[mcp_servers.py.oauth]"), "{said}");
    assert!(said.contains("`clientId` / `clientSecret`"), "{said}");
    assert!(!said.contains("/authorize?"), "{said}");
    assert!(grant_lines(&events).is_empty());
    drop(editor);

    let mut servers = servers;
    servers[0]["_meta"] = json!({"acp-coder": {"oauth": {"clientId": "acp-public"}}});
    let editor = agent(&model, home.path()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    let (_, link) = first_turn_shows_a_sign_in_link(&editor, &model, &sid).await;
    assert_eq!(client_id_of(&link), "acp-public", "{link}");
    follow_sign_in_link(&link).await;
    assert_signed_in(&editor, &model, &sid, "m1").await;
    assert_eq!(grant_lines(&events), ["authorization_code acp-public"]);
}

/// MCP 2026-07-28 client registration, second choice: the authorization
/// server advertises Client ID Metadata Documents, and the editor's entry
/// gives the URL of ours (`_meta`): it is the client id, with no
/// registration. (The Python SDK has no server side of CIMD; the fixture
/// advertises it and accepts that one URL, see its docs.)
#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn oauth_sign_in_with_a_client_id_metadata_document() {
    let (_server, mut servers, events) = oauth_server_with("streamable-http", "cimd").await;
    let cimd = "https://acp-coder.test/oauth/client.json";
    servers[0]["_meta"] = json!({"acp-coder": {"oauth": {"clientMetadataUrl": cimd}}});
    let (home, ws, model) = fresh_agent_home().await;
    let editor = agent(&model, home.path()).await;
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    let (_, link) = first_turn_shows_a_sign_in_link(&editor, &model, &sid).await;
    assert_eq!(client_id_of(&link), cimd, "{link}");
    follow_sign_in_link(&link).await;
    assert_signed_in(&editor, &model, &sid, "c1").await;
    assert_eq!(grant_lines(&events), [format!("authorization_code {cimd}")]);
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(token_file(home.path())).unwrap()).unwrap();
    assert_eq!(stored["credentials"]["client_id"], cimd);
}

/// A client that opted into `session.notices` (and has no URL
/// elicitation) gets the sign-in link as a notice, before any prompt, and
/// not in the chat.
#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn oauth_link_is_a_notice_when_the_client_shows_notices() {
    let (_server, servers, events) = oauth_server("streamable-http").await;
    let (home, ws, model) = fresh_agent_home().await;
    let mut caps = full_capabilities();
    caps["session"] = json!({"notices": {}});
    let editor = agent_with(&model, home.path(), caps).await;
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    let began = Instant::now();
    let notice = loop {
        if let Some(n) = editor.updates_of_kind(&sid, "notice").first() {
            break n.clone();
        }
        assert!(began.elapsed() < Duration::from_secs(60), "no notice");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(notice["severity"], "info");
    assert_eq!(notice["title"], "MCP server `py` needs you to sign in");
    let description = notice["description"].as_str().unwrap();
    let link = description
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/authorize?"))
        .unwrap_or_else(|| panic!("no link: {description}"));
    follow_sign_in_link(link).await;
    assert_signed_in(&editor, &model, &sid, "n1").await;
    assert!(!editor.agent_text(&sid).contains("sign in"));
    assert_eq!(grants(&events), ["register", "authorization_code"]);
}

/// A malformed sign-in client in an editor's `_meta` fails that server
/// (before any connection) with words naming the key; the secret is not
/// repeated anywhere.
#[tokio::test]
async fn a_malformed_meta_sign_in_client_fails_the_server_clearly() {
    let (home, ws, model) = fresh_agent_home().await;
    let editor = agent(&model, home.path()).await;
    let port = free_port();
    let servers = json!([
        {"type": "http", "name": "orphan", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": [],
         "_meta": {"acp-coder": {"oauth": {"clientSecret": "orphan-secret-0123456789"}}}},
        {"type": "http", "name": "plain", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": [],
         "_meta": {"acp-coder": {"oauth": {"clientMetadataUrl": "http://me.example/c.json"}}}},
    ]);
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    let said = answer_to(&editor, &sid, "/mcp").await;
    assert!(
        said.contains("MCP server `orphan` failed to start: `_meta.\"acp-coder\".oauth.clientSecret` needs the client id"),
        "{said}"
    );
    assert!(
        said.contains("MCP server `plain` failed to start: `_meta.\"acp-coder\".oauth.clientMetadataUrl` \"http://me.example/c.json\" must be an https URL with a path"),
        "{said}"
    );
    assert!(
        !editor
            .raw_lines()
            .join("\n")
            .contains("orphan-secret-0123456789")
    );
}
