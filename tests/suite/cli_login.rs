//! `acp-coder login` (non-interactive) and the terminal auth method that
//! offers it to editors.

use super::cli_common::CliEnv;
use crate::support::{FakeEditor, FakeModel, Reply, Workspace};
use serde_json::json;

const KEY: &str = "sk-login-secret-abcdef012345";

use crate::support::mode_of;

#[tokio::test]
async fn flags_write_a_private_config_and_keep_other_keys() {
    let env = CliEnv::new();
    let cfg = env.home().join("conf/acp.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(
        &cfg,
        "# mine\nmodel = \"old-model\"\ndefault_mode = \"accept-edits\"\n\n[headers]\n\"X-Team\" = \"blue\"\n",
    )
    .unwrap();
    crate::support::set_mode(&cfg, 0o644);
    let run = env
        .run(&[
            "--config",
            cfg.to_str().unwrap(),
            "login",
            "--base-url",
            "http://127.0.0.1:9/v1/",
            "--api-key",
            KEY,
            "--model",
            "new-model",
        ])
        .await;
    run.assert_code(0);
    assert!(!run.all().contains(KEY), "{}", run.all());
    run.assert_stdout_has("Saved base_url, api_key, model to");
    assert!(mode_of(&cfg).is_none_or(|m| m == 0o600));
    let text = std::fs::read_to_string(&cfg).unwrap();
    let t: toml::Table = text.parse().unwrap();
    assert_eq!(t["base_url"].as_str(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(t["api_key"].as_str(), Some(KEY));
    assert_eq!(t["model"].as_str(), Some("new-model"));
    assert_eq!(t["default_mode"].as_str(), Some("accept-edits"));
    assert_eq!(t["headers"]["X-Team"].as_str(), Some("blue"));
    assert!(text.starts_with("# mine\n"), "{text}");
}

#[tokio::test]
async fn creates_the_default_file_and_the_agent_uses_it() {
    let model = FakeModel::with_replies([Reply::text("configured by login")]).await;
    // No endpoint settings in the environment: only what login saves.
    let env = CliEnv::new().env("MY_PROVIDER_KEY", "test-key");
    let run = env
        .run(&[
            "login",
            "--base-url",
            &model.base_url(),
            "--api-key-env",
            "MY_PROVIDER_KEY",
            "--model",
            "fake-model",
        ])
        .await;
    run.assert_code(0);
    let cfg = env.default_config();
    assert!(mode_of(&cfg).is_none_or(|m| m == 0o600));
    assert!(mode_of(cfg.parent().unwrap()).is_none_or(|m| m == 0o700));
    let t: toml::Table = std::fs::read_to_string(&cfg).unwrap().parse().unwrap();
    assert_eq!(t["api_key_env"].as_str(), Some("MY_PROVIDER_KEY"));
    assert!(t.get("api_key").is_none());

    let ws = Workspace::new();
    let env = env.cwd(ws.path());
    let run = env.run(&["exec", "hello"]).await;
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "configured by login");
    let req = &model.chat_requests()[0];
    assert_eq!(req.body["model"], "fake-model");
    assert_eq!(req.header("authorization"), Some("Bearer test-key"));
}

#[tokio::test]
async fn without_a_terminal_or_flags_it_says_what_to_pass() {
    let env = CliEnv::new();
    let run = env.run(&["login"]).await;
    run.assert_code(2);
    run.assert_stderr_has("no terminal to ask on");
    run.assert_stderr_has("--api-key-env");
    assert!(!env.default_config().exists());
    // Environment values are not saved as if they were flags.
    let run = env
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .run(&["login", "--no-input"])
        .await;
    run.assert_code(2);

    let env = CliEnv::new();
    let run = env
        .run(&["login", "--base-url", "ftp://nope", "--model", "m"])
        .await;
    run.assert_code(2);
    run.assert_stderr_has("must start with http://");
    let run = env
        .run(&["login", "--api-key-env", "NOT A NAME", "--model", "m"])
        .await;
    run.assert_code(2);
}

#[tokio::test]
async fn terminal_auth_is_offered_only_when_the_editor_asks() {
    let method = json!({"type": "terminal", "id": "login", "name": "Log in from a terminal", "args": ["login"]});
    let check = |auth_methods: &serde_json::Value, expect_terminal: bool| {
        let methods = auth_methods.as_array().expect("authMethods");
        assert!(
            methods
                .iter()
                .any(|m| m["id"] == "openai-api-key" && m.get("type").is_none()),
            "{auth_methods}"
        );
        let terminal: Vec<_> = methods.iter().filter(|m| m["type"] == "terminal").collect();
        if expect_terminal {
            assert_eq!(terminal.len(), 1, "{auth_methods}");
            crate::support::assert_json_include(terminal[0], &method);
            assert!(
                terminal[0]["description"]
                    .as_str()
                    .unwrap()
                    .contains("acp-coder login")
            );
        } else {
            assert!(terminal.is_empty(), "{auth_methods}");
        }
    };
    for (caps, expect) in [
        (json!({"fs": {"readTextFile": true}}), false),
        (json!({"auth": {"terminal": false}}), false),
        (json!({"auth": {"terminal": true}}), true),
        (json!({"_meta": {"terminal-auth": true}}), true),
    ] {
        let editor = FakeEditor::spawn(&[], [("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")]);
        let init = editor.initialize(caps.clone()).await;
        check(&init["authMethods"], expect);
        // The terminal method is never accepted by `authenticate`.
        if expect {
            let err = editor
                .request("authenticate", json!({"methodId": "login"}))
                .await
                .unwrap_err();
            assert_eq!(err.code, -32602, "{caps}");
        }
    }
}
