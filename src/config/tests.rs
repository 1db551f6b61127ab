//! Unit tests of config loading (kept apart: the module is long enough).
use super::*;
use std::collections::HashMap;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn precedence_flag_env_file_default() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        "model = \"file-model\"\nbase_url = \"http://file/v1\"\n",
    )
    .unwrap();
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(s.model.as_deref(), Some("file-model"));
    assert_eq!(s.base_url, "http://file/v1");
    let s = Settings::load_with(
        &over,
        &env_of(&[(MODEL_ENV, "env-model"), (BASE_URL_ENV, "http://env/v1/")]),
    )
    .unwrap();
    assert_eq!(s.model.as_deref(), Some("env-model"));
    assert_eq!(s.base_url, "http://env/v1");
    let over = Overrides {
        model: Some("flag-model".into()),
        ..over
    };
    let s = Settings::load_with(&over, &env_of(&[(MODEL_ENV, "env-model")])).unwrap();
    assert_eq!(s.model.as_deref(), Some("flag-model"));
    let s =
        Settings::load_with(&Overrides::default(), &env_of(&[("HOME", "/nonexistent")])).unwrap();
    assert_eq!(s.base_url, DEFAULT_BASE_URL);
    assert!(s.model.is_none());
}

#[test]
fn credentials_rules() {
    let s =
        Settings::load_with(&Overrides::default(), &env_of(&[("HOME", "/nonexistent")])).unwrap();
    let msg = s.missing_credentials().unwrap();
    assert!(msg.contains("OPENAI_API_KEY"), "{msg}");
    let s = Settings::load_with(
        &Overrides::default(),
        &env_of(&[(BASE_URL_ENV, "http://127.0.0.1:11434/v1")]),
    )
    .unwrap();
    assert!(s.missing_credentials().is_none());
    let s = Settings::load_with(&Overrides::default(), &env_of(&[(API_KEY_ENV, "sk-x")])).unwrap();
    assert!(s.missing_credentials().is_none());
    assert!(!format!("{s:?}").contains("sk-x"));
}

#[test]
fn bad_file_is_reported_with_path() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "modle = 1\n").unwrap();
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    let err = Settings::load_with(&over, &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("c.toml") && err.contains("modle"), "{err}");
}

#[test]
fn mcp_servers_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        r#"
mcp_startup_timeout_secs = 3
mcp_tool_timeout_secs = 20
[mcp_servers.files]
command = "npx"
args = ["-y", "server"]
env = { TOKEN = "secret-value" }
[mcp_servers.remote]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer x" }
[mcp_servers.old]
type = "sse"
url = "http://127.0.0.1:9/sse"
[mcp_servers.off]
command = "x"
enabled = false
"#,
    )
    .unwrap();
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(s.mcp_startup_timeout, Duration::from_secs(3));
    assert_eq!(s.mcp_tool_timeout, Duration::from_secs(20));
    let names: Vec<&str> = s.mcp_servers.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["files", "old", "remote"]);
    assert!(
        matches!(&s.mcp_servers[0].transport, McpTransportSpec::Stdio { env, .. } if env[0].0 == "TOKEN")
    );
    assert!(matches!(
        &s.mcp_servers[1].transport,
        McpTransportSpec::Sse { .. }
    ));
    assert!(matches!(
        &s.mcp_servers[2].transport,
        McpTransportSpec::Http { .. }
    ));
    assert!(!format!("{s:?}").contains("secret-value"));

    for (text, want) in [
        ("[mcp_servers.a]\nargs = []\n", "needs `command`"),
        (
            "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
            "not both",
        ),
        (
            "[mcp_servers.a]\ntype = \"ws\"\nurl = \"http://h\"\n",
            "\"ws\"",
        ),
        ("[mcp_servers.a]\nurl = \"ftp://h\"\n", "http://"),
        ("[mcp_servers.a]\ncommand = \"x\"\nheaderz = 1\n", "headerz"),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let err = Settings::load_with(&over, &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{text}: {err}");
    }
}

#[test]
fn an_http_servers_oauth_client_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        r#"
[mcp_servers.remote]
url = "https://example.invalid/mcp"
[mcp_servers.remote.oauth]
client_id = "acp-coder-1"
client_secret = "oauth-client-secret-value"
client_metadata_url = "https://acp.example/client.json"
"#,
    )
    .unwrap();
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    let oauth = &s.mcp_servers[0].oauth;
    assert_eq!(oauth.client_id.as_deref(), Some("acp-coder-1"));
    assert_eq!(
        oauth.client_metadata_url.as_deref(),
        Some("https://acp.example/client.json")
    );
    // A secret: redacted everywhere, never in Debug.
    assert!(
        s.secret_values()
            .contains(&"oauth-client-secret-value".to_owned())
    );
    assert!(!format!("{s:?}").contains("oauth-client-secret-value"));
    assert!(format!("{s:?}").contains("acp-coder-1"));

    for (text, want) in [
        (
            "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a.oauth]\nclient_id = \"c\"\n",
            "`oauth` is for http/sse servers",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h\"\n[mcp_servers.a.oauth]\nclient_secret = \"s\"\n",
            "`oauth.client_secret` needs the client id",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h\"\n[mcp_servers.a.oauth]\nclient_metadata_url = \"http://h/c.json\"\n",
            "must be an https URL with a path",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h\"\n[mcp_servers.a.oauth]\nclient_metadata_url = \"https://h/\"\n",
            "must be an https URL with a path",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h\"\n[mcp_servers.a.oauth]\nclientid = \"c\"\n",
            "clientid",
        ),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let err = Settings::load_with(&over, &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{text}: {err}");
    }
}

#[test]
fn local_endpoints() {
    for u in [
        "http://localhost:11434/v1",
        "http://127.0.0.1:8080",
        "http://[::1]:8000/v1",
        "http://192.168.1.5:8000/v1",
        "http://box.local/v1",
    ] {
        assert!(is_local_endpoint(u), "{u}");
    }
    for u in [
        "https://api.openai.com/v1",
        "https://openrouter.ai/api/v1",
        "http://8.8.8.8/v1",
    ] {
        assert!(!is_local_endpoint(u), "{u}");
    }
}

#[test]
fn default_mode_is_read_as_a_mode_and_a_bad_one_lists_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    std::fs::write(&cfg, "default_mode = \"full-auto\"\n").unwrap();
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(s.default_mode, Mode::FullAuto);
    std::fs::write(&cfg, "default_mode = \"yolo\"\n").unwrap();
    let e = Settings::load_with(&over, &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("default_mode \"yolo\""), "{e}");
    assert!(
        e.contains("read-only, plan, ask, accept-edits, full-auto"),
        "{e}"
    );
    assert!(e.contains("c.toml"), "{e}");
}

#[test]
fn full_auto_without_sandbox_is_off_unless_the_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    std::fs::write(&cfg, "model = \"m\"\n").unwrap();
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert!(!s.full_auto_without_sandbox);
    std::fs::write(&cfg, "full_auto_without_sandbox = true\n").unwrap();
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert!(s.full_auto_without_sandbox);
}

/// `memory_files` holds file names; a path is refused with the key named.
#[test]
fn memory_files_are_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    std::fs::write(&cfg, "model = \"m\"\n").unwrap();
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(s.memory_files, None);
    std::fs::write(&cfg, "memory_files = [\"AGENTS.md\", \"CLAUDE.md\"]\n").unwrap();
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(
        s.memory_files.as_deref(),
        Some(&["AGENTS.md".to_owned(), "CLAUDE.md".to_owned()][..])
    );
    for bad in ["../notes.md", "docs/AGENTS.md", "", ".."] {
        std::fs::write(&cfg, format!("memory_files = [{bad:?}]\n")).unwrap();
        let e = Settings::load_with(&over, &env_of(&[])).unwrap_err();
        assert!(e.to_string().contains("memory_files"), "{bad}: {e}");
    }
}

#[test]
fn temperature_is_checked_and_a_models_own_wins() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    std::fs::write(&cfg, "model = \"m\"\n").unwrap();
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(s.temperature_for("m", false), None);
    assert_eq!(s.temperature_for("m", true), Some(SMALL_MODEL_TEMPERATURE));
    std::fs::write(
        &cfg,
        "temperature = 0.5\n[models.m]\ntemperature = 0.0\n[models.n]\nname = \"N\"\n",
    )
    .unwrap();
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(s.temperature_for("m", true), Some(0.0));
    assert_eq!(s.temperature_for("n", true), Some(0.5));
    assert_eq!(s.temperature_for("other", false), Some(0.5));
    for bad in ["temperature = 3.0\n", "[models.m]\ntemperature = -1.0\n"] {
        std::fs::write(&cfg, bad).unwrap();
        let e = Settings::load_with(&over, &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("temperature must be a number from 0 to 2"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn parse_errors_give_line_column_and_did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    let load = |text: &str| {
        std::fs::write(&cfg, text).unwrap();
        Settings::load_with(&over, &env_of(&[]))
            .unwrap_err()
            .to_string()
    };
    let e = load("model = \"m\"\n  default_mod = \"ask\"\n");
    assert!(e.contains("line 2, column 3"), "{e}");
    assert!(
        e.contains("unknown key `default_mod`; did you mean `default_mode`?"),
        "{e}"
    );
    assert!(!e.contains("at byte"), "{e}");
    let e = load("default_mode = \"acceptedits\"\n");
    assert!(e.contains("did you mean `accept-edits`?"), "{e}");
    let e = load("[models.\"m\"]\ncontext_windw = 4\n");
    assert!(
        e.contains("line 2") && e.contains("`context_window`"),
        "{e}"
    );
    // Nothing close: the valid names, once.
    let e = load("zzzzzzzzzzzzzzzz = 1\n");
    assert!(e.contains("valid: model, base_url"), "{e}");
    assert_eq!(line_column("a\nbé c", 6), (2, 4));
}

#[test]
fn every_value_knows_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "model = \"fm\"\nbase_url = \"http://file/v1\"\n").unwrap();
    let over = Overrides {
        config: Some(cfg.clone()),
        ..Default::default()
    };
    let s = Settings::load_with(&over, &env_of(&[])).unwrap();
    assert_eq!(s.base_url_source, Source::File(cfg.clone()));
    assert_eq!(s.model_source, Source::File(cfg.clone()));
    assert!(s.base_url_overridden.is_none());
    // clap hands the variable's value over as the flag's: still the variable.
    let s = Settings::load_with(
        &Overrides {
            base_url: Some("http://env/v1".into()),
            ..over.clone()
        },
        &env_of(&[(BASE_URL_ENV, "http://env/v1"), (MODEL_ENV, "em")]),
    )
    .unwrap();
    assert_eq!(s.base_url_source, Source::Env(BASE_URL_ENV.into()));
    assert_eq!(s.model_source, Source::Env(MODEL_ENV.into()));
    assert_eq!(s.base_url_overridden.as_deref(), Some("http://file/v1"));
    assert!(s.endpoint_origin().contains("wins over base_url"));
    let s = Settings::load_with(
        &Overrides {
            base_url: Some("http://flag/v1".into()),
            model: Some("flagm".into()),
            ..over.clone()
        },
        &env_of(&[(BASE_URL_ENV, "http://env/v1")]),
    )
    .unwrap();
    assert_eq!(s.base_url_source, Source::Flag);
    assert_eq!(s.model_source, Source::Flag);
    let mut s = Settings::load_with(&Overrides::default(), &env_of(&[("HOME", "/nx")])).unwrap();
    assert_eq!(s.base_url_source, Source::Default);
    s.use_local_server("Ollama", "http://127.0.0.1:11434/v1", Some("q".into()));
    assert_eq!(s.model_source, Source::LocalServer("Ollama".into()));
    assert_eq!(s.base_url_source, Source::LocalServer("Ollama".into()));
    // A bad base URL names its source and the fix there, not the file.
    let e = Settings::load_with(
        &Overrides {
            base_url: Some("not a url".into()),
            ..Default::default()
        },
        &env_of(&[("HOME", "/nx")]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("from the --base-url flag"), "{e}");
    assert!(e.contains("change or drop --base-url"), "{e}");
    assert!(!e.contains("config"), "{e}");
}

/// docs/configuration.md documents every key of the config file, and no
/// key the file does not have (the lists come from the types' own
/// "unknown key" errors).
#[test]
fn the_configuration_reference_lists_every_key() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .unwrap();
    let keys_of = |parse: &dyn Fn(&str) -> String| -> Vec<String> {
        let e = parse("zzzzzzzzzzzzzzzzzzzz = 1");
        let list = e.split("valid: ").nth(1).unwrap_or_else(|| panic!("{e}"));
        list.split(',').map(|k| k.trim().to_owned()).collect()
    };
    let top = keys_of(&|t| did_you_mean(toml::from_str::<FileConfig>(t).unwrap_err().message()));
    let model = keys_of(&|t| did_you_mean(toml::from_str::<ModelConfig>(t).unwrap_err().message()));
    let mcp =
        keys_of(&|t| did_you_mean(toml::from_str::<McpServerConfig>(t).unwrap_err().message()));
    let oauth = keys_of(&|t| {
        did_you_mean(
            toml::from_str::<mcp::McpOAuthConfig>(t)
                .unwrap_err()
                .message(),
        )
    });
    let hook_events = keys_of(&|t| {
        did_you_mean(
            toml::from_str::<hooks::HooksConfig>(t)
                .unwrap_err()
                .message(),
        )
    });
    let hook = keys_of(&|t| {
        did_you_mean(
            toml::from_str::<hooks::HookConfig>(&format!("command = \"x\"\n{t}"))
                .unwrap_err()
                .message(),
        )
    });
    assert!(top.len() > 20 && model.len() > 5 && mcp.len() > 3 && !oauth.is_empty());
    assert!(
        hook_events.len() == 4 && hook.len() == 3,
        "{hook_events:?} {hook:?}"
    );
    // Each key as a table row `| `key` |` (top level), `| `models.*.key` |`
    // and `| `mcp_servers.*.key` |`.
    let keys_part = doc
        .split("## Top-level keys")
        .nth(1)
        .and_then(|rest| rest.split("## An example").next())
        .expect("the key tables of docs/configuration.md");
    let mut documented = Vec::new();
    for line in keys_part.lines() {
        if let Some(rest) = line.strip_prefix("| `")
            && let Some((key, _)) = rest.split_once('`')
        {
            documented.push(key.to_owned());
        }
    }
    let mut wanted: Vec<String> = top.clone();
    wanted.extend(model.iter().map(|k| format!("models.*.{k}")));
    wanted.extend(mcp.iter().map(|k| format!("mcp_servers.*.{k}")));
    wanted.extend(oauth.iter().map(|k| format!("mcp_servers.*.oauth.{k}")));
    wanted.extend(hook_events.iter().map(|k| format!("hooks.{k}")));
    wanted.extend(hook.iter().map(|k| format!("hooks.*.{k}")));
    for k in &wanted {
        assert!(documented.contains(k), "docs/configuration.md lacks `{k}`");
    }
    for k in &documented {
        assert!(
            wanted.contains(k),
            "docs/configuration.md documents `{k}`, which is no key"
        );
    }
}
