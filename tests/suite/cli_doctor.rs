//! `acp-coder doctor` against the scripted model's `GET /models`.

use super::cli_common::CliEnv;
use crate::support::{FakeModel, Reply};

const KEY: &str = "sk-doctor-secret-9876543210";

#[tokio::test]
async fn all_good() {
    let model = FakeModel::start().await;
    model.set_models(&["fake-model", "other-model"]);
    let env = CliEnv::new().env("OPENAI_API_KEY", KEY);
    let cfg = env.default_config();
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "base_url = \"{}\"\nmodel = \"fake-model\"\n\n[mcp_servers.shell]\ncommand = \"sh\"\n\n[mcp_servers.web]\nurl = \"https://example.com/mcp\"\n",
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
        run.assert_stdout_has(
            "✓ model fake-model (from the config file) is listed by the endpoint",
        );
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
        out.contains("✓ MCP server web: URL https://example.com/mcp is valid"),
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
            "✓ endpoint {} answers (2 models listed)",
            model.base_url()
        )),
        "{out}"
    );
    assert!(
        out.contains("✓ model fake-model (from the config file) is listed"),
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
        out.contains("✗ model missing-model (from ACP_CODER_MODEL) is not listed by the endpoint"),
        "{out}"
    );
    assert!(out.contains("→ available: a-model, b-model"), "{out}");
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
    assert!(out.contains("→ is the server running?"), "{out}");
    assert!(out.contains("failed; fix the lines marked ✗"), "{out}");

    let env = CliEnv::new().env("OPENAI_BASE_URL", "https://api.invalid/v1");
    let run = env.run(&["doctor"]).await;
    run.assert_code(1);
    run.assert_stdout_has("✗ no API key for https://api.invalid/v1 (OPENAI_API_KEY is not set)");
    run.assert_stdout_has("acp-coder login");
}
