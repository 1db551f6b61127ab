//! `acp-coder doctor` against the scripted model's `GET /models`.

use super::cli_common::CliEnv;
use crate::support::{FakeModel, Reply};
use serde_json::json;

/// A loopback port nothing listens on (bound, then let go).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

const KEY: &str = "sk-doctor-secret-9876543210";

#[tokio::test]
async fn all_good() {
    let model = FakeModel::start().await;
    model.set_models(&["fake-model", "other-model"]);
    // An HTTP MCP server that answers `initialize`.
    model.set_route(
        "POST",
        "/mcp",
        Reply::json(json!({"jsonrpc": "2.0", "id": 0, "result": {}})),
    );
    let web = format!("http://{}/mcp", model.addr());
    let env = CliEnv::new().env("OPENAI_API_KEY", KEY);
    let cfg = env.default_config();
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "base_url = \"{}\"\nmodel = \"fake-model\"\n\n[mcp_servers.shell]\ncommand = \"sh\"\n\n[mcp_servers.web]\nurl = \"{web}\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    let run = env.run(&["doctor"]).await;
    // The MCP tables are checked on their own; whether the rest of the file
    // parses depends on the config schema knowing `mcp_servers`.
    let config_ok = run
        .stdout
        .contains(&format!("✓ config file {} parses", cfg.display()));
    if config_ok {
        run.assert_code(0);
        run.assert_stdout_has("All checks passed.");
        run.assert_stdout_has(&format!(
            "✓ model fake-model (from model in {}) is listed by the endpoint",
            cfg.display()
        ));
    }
    let out = &run.stdout;
    assert!(
        out.contains("✓ API key set (from the OPENAI_API_KEY environment variable; not shown)"),
        "{out}"
    );
    assert!(
        out.contains("✓ MCP server shell: command sh found"),
        "{out}"
    );
    assert!(
        out.contains(&format!("✓ MCP server web: {web} answers (HTTP 200)")),
        "{out}"
    );
    assert!(out.contains("logs go to "), "{out}");
    // Which command sandbox applies (issue 14), whatever this kernel has.
    assert!(
        out.contains("commands run sandboxed") || out.contains("no command sandbox"),
        "{out}"
    );
    if crate::support::full_sandbox() {
        assert!(
            out.contains("✓ commands run sandboxed: Landlock ABI"),
            "{out}"
        );
    }
    assert!(!run.all().contains(KEY));

    // Without the MCP tables the file parses today.
    std::fs::write(
        &cfg,
        format!(
            "base_url = \"{}\"\nmodel = \"fake-model\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    let run = env.run(&["doctor"]).await;
    run.assert_code(0);
    let out = &run.stdout;
    assert!(
        out.contains(&format!("✓ config file {} parses", cfg.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "✓ endpoint {} answers (2 models listed; from base_url in {})",
            model.base_url(),
            cfg.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "✓ model fake-model (from model in {}) is listed",
            cfg.display()
        )),
        "{out}"
    );
    assert!(out.contains("All checks passed."), "{out}");
    assert!(!out.contains('✗'), "{out}");
    assert!(!run.all().contains(KEY));
}

#[tokio::test]
async fn problems_are_named_with_a_fix() {
    // The model is not listed; an MCP command is missing.
    let model = FakeModel::start().await;
    model.set_models(&["a-model", "b-model"]);
    let env = CliEnv::with_model(&model).env("ACP_CODER_MODEL", "missing-model");
    let cfg = env.home().join("c.toml");
    std::fs::write(
        &cfg,
        "[mcp_servers.tools]\ncommand = \"acp-coder-no-such-command\"\n",
    )
    .unwrap();
    let run = env
        .run(&["--config", cfg.to_str().unwrap(), "doctor"])
        .await;
    run.assert_code(1);
    let out = &run.stdout;
    assert!(
        out.contains("✗ model missing-model (from the ACP_CODER_MODEL environment variable) is not listed by the endpoint"),
        "{out}"
    );
    assert!(
        out.contains("→ available: a-model, b-model; change or unset ACP_CODER_MODEL"),
        "{out}"
    );
    assert!(
        out.contains("✗ MCP server tools: command acp-coder-no-such-command not found on PATH"),
        "{out}"
    );

    // The endpoint rejects the key.
    model.set_models_reply(Reply::error(401, "Incorrect API key provided"));
    let env = CliEnv::with_model(&model).env("OPENAI_API_KEY", KEY);
    let run = env.run(&["doctor"]).await;
    run.assert_code(1);
    run.assert_stdout_has("rejected the API key (HTTP 401");
    run.assert_stdout_has("→ check the OPENAI_API_KEY environment variable");
    assert!(!run.all().contains(KEY));

    // Nothing listens; no key for a remote default; a broken config file.
    let env = CliEnv::new()
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("ACP_CODER_MODEL", "m");
    let bad = env.home().join("bad.toml");
    std::fs::write(&bad, "modle = \"x\"\n").unwrap();
    let run = env
        .run(&["--config", bad.to_str().unwrap(), "doctor"])
        .await;
    run.assert_code(1);
    let out = &run.stdout;
    assert!(out.contains("✗ config file"), "{out}");
    assert!(out.contains("modle"), "{out}");
    assert!(
        out.contains("✗ cannot reach http://127.0.0.1:9/v1/models"),
        "{out}"
    );
    assert!(
        out.contains("→ is the server running? The base URL comes from the OPENAI_BASE_URL environment variable: change or unset OPENAI_BASE_URL"),
        "{out}"
    );
    assert!(out.contains("failed; fix the lines marked ✗"), "{out}");

    let env = CliEnv::new().env("OPENAI_BASE_URL", "https://api.invalid/v1");
    let run = env.run(&["doctor"]).await;
    run.assert_code(1);
    run.assert_stdout_has("✗ no API key for https://api.invalid/v1 (OPENAI_API_KEY is not set; the base URL comes from the OPENAI_BASE_URL environment variable)");
    run.assert_stdout_has("acp-coder login");
}

/// Issue 44: a bad flag is one problem, fixed at the flag (there is no
/// config file to edit).
#[tokio::test]
async fn a_bad_flag_is_reported_once_with_the_fix_at_the_flag() {
    let env = CliEnv::new();
    let run = env.run(&["--base-url", "not a url", "doctor"]).await;
    run.assert_code(1);
    let out = &run.stdout;
    assert_eq!(out.matches("must start with http://").count(), 1, "{out}");
    assert!(out.contains("(from the --base-url flag)"), "{out}");
    assert!(out.contains("→ change or drop --base-url"), "{out}");
    assert!(!out.contains("edit "), "{out}");
    assert!(!out.contains("config.toml"), "{out}");
}

/// Issue 44: a local server found by itself is named as the source of the
/// endpoint and the model; when none is found, the ports tried are listed.
#[tokio::test]
async fn doctor_names_the_local_server_as_the_source_and_lists_the_ports_tried() {
    let model = FakeModel::start().await;
    model.set_models(&["local-model"]);
    let found = CliEnv::new()
        .env(
            "ACP_CODER_LOCAL_SERVERS",
            &format!("Ollama={}", model.base_url()),
        )
        .env("ACP_CODER_LOCAL_PROBE_MS", "5000");
    let run = found.run(&["doctor"]).await;
    let out = &run.stdout;
    assert!(
        out.contains("model local-model (from the local Ollama server, found by itself)"),
        "{out}"
    );
    assert!(!out.contains("(from the config file)"), "{out}");

    let port = closed_port();
    let none = CliEnv::new().env(
        "ACP_CODER_LOCAL_SERVERS",
        &format!("Ollama=http://127.0.0.1:{port}/v1"),
    );
    let run = none.run(&["doctor"]).await;
    run.assert_stdout_has(&format!(
        "no local model server found (tried Ollama 127.0.0.1:{port})"
    ));
}

/// Issue 44: an HTTP MCP server is asked, not just parsed: nothing
/// listening fails, a 404 fails.
#[tokio::test]
async fn http_mcp_servers_are_probed() {
    let model = FakeModel::start().await;
    let port = closed_port();
    let env = CliEnv::with_model(&model);
    let cfg = env.home().join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[mcp_servers.dead]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\n[mcp_servers.wrong]\nurl = \"http://{}/nothing-here\"\n",
            model.addr()
        ),
    )
    .unwrap();
    let run = env
        .run(&["--config", cfg.to_str().unwrap(), "doctor"])
        .await;
    run.assert_code(1);
    run.assert_stdout_has(&format!(
        "✗ MCP server dead: nothing answers at http://127.0.0.1:{port}/mcp"
    ));
    run.assert_stdout_has("✗ MCP server wrong: ");
    run.assert_stdout_has("answered HTTP 404");
}
