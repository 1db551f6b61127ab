//! `acp-coder mcp add|list|get|remove` (issue 45 item 7): the MCP servers
//! of the config file, edited with the rest of the file kept.

use super::cli_common::CliEnv;

const FILE: &str = "# my settings\nmodel = \"m\" # the model I like\n\n[mcp_servers.old]\n# a server I keep\ncommand = \"old-server\"\n\n[headers]\n\"X-Team\" = \"blue\"\n";

#[tokio::test]
async fn add_list_get_remove_keep_the_rest_of_the_file() {
    let env = CliEnv::new();
    let cfg = env.home().join("acp.toml");
    std::fs::write(&cfg, FILE).unwrap();
    let c = cfg.to_str().unwrap();
    env.run(&[
        "--config",
        c,
        "mcp",
        "add",
        "--env",
        "TOKEN=s3cret-value",
        "files",
        "--",
        "npx",
        "-y",
        "@scope/server",
        "--root",
        ".",
    ])
    .await
    .assert_code(0)
    .assert_stdout_has("Added MCP server \"files\"");
    env.run(&[
        "--config",
        c,
        "mcp",
        "add",
        "--transport",
        "http",
        "--header",
        "Authorization: Bearer h3ader-value",
        "remote",
        "https://mcp.example.com/mcp",
    ])
    .await
    .assert_code(0);
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.starts_with(FILE.trim_end_matches("\n[headers]\n\"X-Team\" = \"blue\"\n")),
        "{text}"
    );
    assert!(text.contains("# a server I keep") && text.contains("# the model I like"));
    let t: toml::Table = text.parse().unwrap();
    let files = &t["mcp_servers"]["files"];
    assert_eq!(files["command"].as_str(), Some("npx"));
    assert_eq!(
        files["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect::<Vec<_>>(),
        ["-y", "@scope/server", "--root", "."]
    );
    assert_eq!(files["env"]["TOKEN"].as_str(), Some("s3cret-value"));
    let remote = &t["mcp_servers"]["remote"];
    assert_eq!(remote["type"].as_str(), Some("http"));
    assert_eq!(
        remote["headers"]["Authorization"].as_str(),
        Some("Bearer h3ader-value")
    );

    let list = env.run(&["--config", c, "mcp", "list"]).await;
    list.assert_code(0);
    assert_eq!(
        list.stdout.trim(),
        "old: stdio: old-server\nfiles: stdio: npx -y @scope/server --root .\nremote: http: https://mcp.example.com/mcp"
    );
    let get = env.run(&["--config", c, "mcp", "get", "files"]).await;
    get.assert_code(0)
        .assert_stdout_has("env: TOKEN (values hidden)");
    let get2 = env.run(&["--config", c, "mcp", "get", "remote"]).await;
    get2.assert_stdout_has("headers: Authorization (values hidden)");
    let shown = format!("{}{}{}", list.all(), get.all(), get2.all());
    assert!(
        !shown.contains("s3cret") && !shown.contains("h3ader"),
        "secrets shown"
    );

    // What the loader refuses is refused, and the file is not touched.
    let before = std::fs::read_to_string(&cfg).unwrap();
    env.run(&[
        "--config",
        c,
        "mcp",
        "add",
        "--transport",
        "sse",
        "bad",
        "ftp://x",
    ])
    .await
    .assert_code(1)
    .assert_stderr_has("must start with http:// or https://");
    env.run(&["--config", c, "mcp", "add", "files", "--", "other"])
        .await
        .assert_code(1)
        .assert_stderr_has("already in");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), before);

    env.run(&["--config", c, "mcp", "remove", "files"])
        .await
        .assert_code(0);
    env.run(&["--config", c, "mcp", "remove", "remote"])
        .await
        .assert_code(0);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), FILE);
    env.run(&["--config", c, "mcp", "get", "files"])
        .await
        .assert_code(1)
        .assert_stderr_has("no MCP server named \"files\"");
}

#[tokio::test]
async fn add_creates_the_default_file() {
    let env = CliEnv::new();
    env.run(&["mcp", "add", "local", "--", "my-server"])
        .await
        .assert_code(0);
    let text = std::fs::read_to_string(env.default_config()).unwrap();
    assert_eq!(text, "[mcp_servers.local]\ncommand = \"my-server\"\n");
    env.run(&["mcp", "list"])
        .await
        .assert_code(0)
        .assert_stdout_has("local: stdio: my-server");
}
