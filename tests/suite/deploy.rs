//! The container image and the Kubernetes manifests (deploy/, Containerfile,
//! docs/deploy.md): validated against the Kubernetes schemas, and held to
//! what the binary does (its version, its `serve` flags, its health path).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

const MANIFESTS: [&str; 2] = [
    "deploy/kubernetes/acp-coder.yaml",
    "deploy/kubernetes/sandbox-template.yaml",
];

/// The Python with `kubernetes-validate` (ACP_CODER_K8S_PYTHON, set by scripts/test.sh).
fn k8s_python() -> String {
    let var = "ACP_CODER_K8S_PYTHON";
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set; install the validator with `python3 -m venv DIR && DIR/bin/pip install kubernetes-validate==1.37.0` and set {var}=DIR/bin/python (scripts/test.sh does)"
        ),
    }
}

/// Runs tests/deploy/validate_k8s.py on `files`: (exit success, its JSON report).
fn validate(files: &[PathBuf]) -> (bool, serde_json::Value) {
    let out = Command::new(k8s_python())
        .arg(root().join("tests/deploy/validate_k8s.py"))
        .args(files)
        .output()
        .expect("run the validator");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "validator output is not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), report)
}

#[test]
#[ignore = "needs kubernetes-validate (ACP_CODER_K8S_PYTHON; scripts/test.sh installs it)"]
fn kubernetes_manifests_pass_the_kubernetes_schemas() {
    let files: Vec<PathBuf> = MANIFESTS.iter().map(|m| root().join(m)).collect();
    let (ok, report) = validate(&files);
    assert!(ok, "{report:#}");
    let checked: Vec<&str> = report["checked"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for kind in [
        "Deployment/acp-coder",
        "Service/acp-coder",
        "SandboxTemplate/acp-coder",
        "SandboxWarmPool/acp-coder",
    ] {
        assert!(
            checked.iter().any(|c| c.ends_with(kind)),
            "{kind} not checked: {checked:?}"
        );
    }

    // The validator is not a rubber stamp: a misspelt field of the pod, of
    // the Service and of the warm pool each fail it.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let text = format!("{}\n---\n{}", read(MANIFESTS[0]), read(MANIFESTS[1]))
        .replacen("readinessProbe:", "readinesProbe:", 1)
        .replace("sessionAffinity:", "sessionAfinity:")
        .replace("sandboxTemplateRef:", "templateRef:");
    std::fs::write(&bad, text).unwrap();
    let (ok, report) = validate(&[bad]);
    assert!(!ok, "{report:#}");
    let errors = report["errors"].to_string();
    for field in ["readinesProbe", "sessionAfinity", "templateRef"] {
        assert!(errors.contains(field), "{field} not reported: {errors}");
    }
}

/// The image and the manifests name the binary's own version, run `serve`
/// with flags it has, probe the path it answers, and keep the session store
/// on the volume.
#[test]
fn the_image_and_the_manifests_agree_with_the_binary() {
    let version = env!("CARGO_PKG_VERSION");
    let containerfile = read("Containerfile");
    assert!(
        containerfile.contains(r#"ENTRYPOINT ["acp-coder", "serve"]"#),
        "the image's entry point is `acp-coder serve`"
    );
    assert!(containerfile.contains(r#"CMD ["--listen", "0.0.0.0:8080"]"#));
    assert!(containerfile.contains("EXPOSE 8080"));
    assert!(containerfile.contains("USER 10001:10001"), "non-root");
    assert!(containerfile.contains(r#"VOLUME ["/data"]"#));
    assert!(
        containerfile.contains("XDG_DATA_HOME=/data"),
        "the store is on the volume"
    );
    assert!(containerfile.contains("GET /health"));
    assert!(containerfile.contains("--locked"));

    for m in MANIFESTS {
        let text = read(m);
        assert!(
            text.contains(&format!("image: localhost/acp-coder:{version}")),
            "{m} names the image of version {version}"
        );
        for needle in [
            "- --listen",
            "- 0.0.0.0:8080",
            "- --token-file",
            "path: /health",
            "runAsNonRoot: true",
            "runAsUser: 10001",
            "mountPath: /data",
        ] {
            assert!(text.contains(needle), "{m} lacks {needle:?}");
        }
    }
    // The flags the manifests and the image use are the binary's.
    let help = Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .args(["serve", "--help"])
        .output()
        .expect("acp-coder serve --help");
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--listen", "--token-file"] {
        assert!(
            help.contains(flag),
            "`acp-coder serve` has no {flag}: {help}"
        );
    }
    // The validator's copy of the agent-sandbox schemas is the one the
    // manifests' apiVersion names.
    let crds: serde_json::Value =
        serde_json::from_str(&read("tests/deploy/agent-sandbox-crds.json")).unwrap();
    assert_eq!(crds["SandboxTemplate"]["version"], "v1beta1");
    assert!(read(MANIFESTS[1]).contains("apiVersion: extensions.agents.x-k8s.io/v1beta1"));
}

/// The image's HEALTHCHECK command (bash alone, no HTTP client in the image)
/// passes against a running `serve` and fails once it has stopped.
#[tokio::test]
async fn the_images_health_check_asks_serve() {
    use crate::support::{FakeModel, remote::Served};
    let containerfile = read("Containerfile");
    let line = containerfile
        .lines()
        .find(|l| l.trim_start().starts_with("CMD [\"bash\""))
        .expect("the HEALTHCHECK's CMD line");
    let argv: Vec<String> =
        serde_json::from_str(line.trim_start().trim_start_matches("CMD").trim()).unwrap();
    assert_eq!(argv[..2], ["bash", "-c"]);
    let model = FakeModel::start().await;
    let mut served = Served::start(&model, &[], &[]).await;
    let port = served.addr.rsplit(':').next().unwrap().to_owned();
    let script = argv[2].replace("/8080", &format!("/{port}"));
    let check = || {
        Command::new("bash")
            .args(["-c", &script])
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run bash")
    };
    assert!(check().success(), "the health check fails against serve");
    served.terminate().await;
    assert!(!check().success(), "the health check passes with no server");
}
