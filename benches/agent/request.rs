//! The first model request's size.

use super::*;

pub(super) fn bench_request_size(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let plain = AgentEnv::new(o, "request", model, "");
    let (body, system, tools, tools_bytes) = first_request(&plain, model);
    // Issue 21: 20 skills (descriptions of a typical length, ~250 bytes) in
    // the project; their index goes into the system prompt and `load_skill`
    // into the tools.
    let skilled = AgentEnv::new(o, "request-skills", model, "");
    for i in 0..20 {
        let name = format!("skill-{i:02}");
        let dir = skilled.ws().join(".agents/skills").join(&name);
        std::fs::create_dir_all(&dir).expect("skill dir");
        let description = format!(
            "Prepares and checks release {i} artifacts for the project (bumps versions, \
             updates the changelog from merged pull requests, builds the packages and \
             verifies their signatures). Use when the user asks to cut, tag or publish a \
             release, or mentions changelogs."
        );
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nSteps for {name}.\n"),
        )
        .expect("write SKILL.md");
    }
    let (s_body, s_system, s_tools, s_tools_bytes) = first_request(&skilled, model);
    let row = |what: &str, body: usize, system: usize, tools: usize, tools_bytes: usize| {
        Row::new(
            what,
            format!("{:.1} KB", body as f64 / 1024.0),
            format!(
                "system prompt {:.1} KB + {tools} tool schemas {:.1} KB",
                system as f64 / 1024.0,
                tools_bytes as f64 / 1024.0
            ),
            "—".into(),
            "≤ 16 KB",
        )
        .pass(body <= 16 * 1024)
    };
    vec![
        row(
            "first model request, one-line prompt (JSON body)",
            body,
            system,
            tools,
            tools_bytes,
        ),
        row(
            "first model request with 20 skills (JSON body)",
            s_body,
            s_system,
            s_tools,
            s_tools_bytes,
        ),
    ]
}

/// The first model request of a new session in `env` for a one-line prompt:
/// (body bytes, system prompt bytes, tools, tool schema bytes).
fn first_request(env: &AgentEnv, model: &FakeModel) -> (usize, usize, usize, usize) {
    let mut agent = env.spawn();
    agent.initialize();
    let sid = agent.new_session(&env.ws(), json!([]));
    model.clear();
    model.state.capture_next.store(true, Ordering::SeqCst);
    model.push(Script::Text("done".into()));
    let id = agent.prompt(&sid, "Fix the typo in README.md");
    agent.wait_for(id).result();
    let body = model
        .state
        .captured
        .lock()
        .unwrap()
        .take()
        .expect("captured body");
    let v: Value = serde_json::from_slice(&body).expect("request JSON");
    let system = v["messages"][0]["content"].as_str().map_or(0, str::len);
    let tools = v["tools"].as_array().map_or(0, Vec::len);
    let tools_bytes = v["tools"].to_string().len();
    println!(
        "  first request: {} bytes: system prompt {system} bytes, {tools} tools {tools_bytes} bytes, {} messages",
        body.len(),
        v["messages"].as_array().map_or(0, Vec::len)
    );
    agent.p.close();
    (body.len(), system, tools, tools_bytes)
}
