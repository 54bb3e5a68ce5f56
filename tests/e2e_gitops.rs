//! The GitOps examples in gitops/: Flux (GitRepository, Kustomizations, HelmRelease)
//! and Argo CD (Applications, the argocd-cm health checks). Every file parses, the
//! paths they name exist in this repository, the built-in kinds pass the API server's
//! validation, and the argocd-cm patch is the Lua files, byte for byte, and merges into a
//! live argocd-cm as its header says. (tests/e2e_kstatus.rs runs the Lua checks on the
//! live objects.) Needs the control plane of `e2e/with-controlplane.sh`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::e2e::*;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
}

/// Every document of every YAML file under gitops/, with its file.
fn documents() -> Vec<(PathBuf, Value)> {
    let mut files = vec![];
    yaml_files(&repo().join("gitops"), &mut files);
    files.sort();
    let mut docs = vec![];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let parsed: Vec<Value> = serde_saphyr::from_multiple(&text)
            .unwrap_or_else(|e| panic!("{}: not valid YAML: {e}", f.display()));
        for d in parsed.into_iter().filter(|d| !d.is_null()) {
            for key in ["apiVersion", "kind"] {
                assert!(
                    d[key].is_string(),
                    "{}: a document without {key}: {d}",
                    f.display()
                );
            }
            assert!(
                d["metadata"]["name"].is_string(),
                "{}: a document without metadata.name: {d}",
                f.display()
            );
            docs.push((f.clone(), d));
        }
    }
    docs
}

fn find<'a>(docs: &'a [(PathBuf, Value)], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = docs
        .iter()
        .map(|(_, d)| d)
        .filter(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "{kind}/{name} in gitops/: {found:?}");
    found[0]
}

fn assert_dir(path: &str, who: &str) {
    let p = repo().join(path.trim_start_matches("./"));
    assert!(
        p.is_dir(),
        "{who} names {path}, which is not a folder of this repository"
    );
}

#[test]
fn gitops_manifests_parse_and_name_what_exists() {
    let docs = documents();
    let mut kinds: Vec<String> = docs
        .iter()
        .map(|(_, d)| {
            format!(
                "{} {}",
                d["apiVersion"].as_str().unwrap(),
                d["kind"].as_str().unwrap()
            )
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "argoproj.io/v1alpha1 Application",
            "helm.toolkit.fluxcd.io/v2 HelmRelease",
            "kustomize.toolkit.fluxcd.io/v1 Kustomization",
            "source.toolkit.fluxcd.io/v1 GitRepository",
            "v1 ConfigMap",
            "v1 Namespace",
        ]
    );

    // Flux: the tables wait for the operator, both from the one GitRepository
    let source = find(&docs, "GitRepository", "delta-operator");
    let operator = find(&docs, "Kustomization", "delta-operator");
    let tables = find(&docs, "Kustomization", "delta-tables");
    for k in [operator, tables] {
        assert_eq!(
            k["spec"]["sourceRef"],
            serde_json::json!({"kind": "GitRepository", "name": "delta-operator"}),
            "{k}"
        );
        assert_eq!(
            k["metadata"]["namespace"], source["metadata"]["namespace"],
            "{k}"
        );
        assert_dir(k["spec"]["path"].as_str().unwrap(), "a Flux Kustomization");
        assert_eq!(k["spec"]["wait"], true, "health checks with kstatus: {k}");
    }
    assert_eq!(
        tables["spec"]["dependsOn"],
        serde_json::json!([{"name": "delta-operator"}])
    );
    assert_eq!(tables["spec"]["path"], "./examples");
    let release = find(&docs, "HelmRelease", "delta-operator");
    let chart = &release["spec"]["chart"]["spec"];
    assert_dir(chart["chart"].as_str().unwrap(), "the HelmRelease");
    assert!(
        repo()
            .join(chart["chart"].as_str().unwrap())
            .join("Chart.yaml")
            .is_file(),
        "{chart}"
    );
    assert_eq!(chart["sourceRef"]["name"], "delta-operator");
    assert_eq!(
        release["metadata"]["namespace"], source["metadata"]["namespace"],
        "no cross-namespace source reference"
    );
    // the operator's Kustomization applies the HelmRelease
    let (file, _) = docs
        .iter()
        .find(|(_, d)| d["kind"] == "HelmRelease")
        .unwrap();
    assert_eq!(
        file.parent().unwrap(),
        repo().join(
            operator["spec"]["path"]
                .as_str()
                .unwrap()
                .trim_start_matches("./")
        )
    );
    // the tables' namespace is created with the operator
    find(
        &docs,
        "Namespace",
        tables["spec"]["targetNamespace"].as_str().unwrap(),
    );

    // Argo CD: the chart and the tables, server-side applied, the operator in an earlier wave
    let apps = ["delta-operator", "delta-tables"].map(|n| find(&docs, "Application", n));
    for app in apps {
        assert_dir(
            app["spec"]["source"]["path"].as_str().unwrap(),
            "an Argo CD Application",
        );
        let opts = app["spec"]["syncPolicy"]["syncOptions"].as_array().unwrap();
        assert!(opts.iter().any(|o| o == "ServerSideApply=true"), "{app}");
    }
    assert_eq!(apps[0]["spec"]["source"]["path"], "charts/delta-operator");
    assert_eq!(apps[1]["spec"]["source"]["path"], "examples");
    let wave = |a: &Value| {
        a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
            .as_str()
            .unwrap()
            .parse::<i32>()
            .unwrap()
    };
    assert!(wave(apps[0]) < wave(apps[1]));
}

#[test]
fn builtin_kinds_pass_server_side_validation() {
    argocd_namespace(); // argocd-cm's namespace: it must exist for a dry run
    let mut n = 0;
    for (file, d) in documents() {
        if d["apiVersion"] != "v1" {
            continue; // Flux and Argo CD kinds: their CRDs are not installed here
        }
        let (ok, out, err) = kubectl_stdin(
            &["apply", "--dry-run=server", "--validate=strict", "-f", "-"],
            &d.to_string(),
        );
        assert!(
            ok,
            "{}: the API server refuses {} {}: {out}{err}",
            file.display(),
            d["kind"],
            d["metadata"]["name"]
        );
        n += 1;
    }
    assert_eq!(n, 2, "a ConfigMap and a Namespace");
}

/// Every kind with an Argo CD health check (a Lua file each).
const HEALTH_KINDS: [&str; 5] = [
    "DeltaTable",
    "DeltaSchema",
    "DeltaView",
    "DeltaFunction",
    "DeltaVolume",
];

/// The Lua files are the source; argocd-cm-health.yaml must hold them exactly.
#[test]
fn the_argocd_cm_patch_holds_the_lua_files() {
    let o = Command::new(repo().join("gitops/argocd/generate.sh"))
        .arg("--check")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "gitops/argocd/generate.sh --check: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let cm = std::fs::read_to_string(repo().join("gitops/argocd/argocd-cm-health.yaml")).unwrap();
    let cm: Value = serde_saphyr::from_str(&cm).unwrap();
    let data = cm["data"].as_object().unwrap();
    assert_eq!(data.len(), HEALTH_KINDS.len(), "{data:?}");
    for kind in HEALTH_KINDS {
        let lua = std::fs::read_to_string(
            repo().join(format!("gitops/argocd/health/{}.lua", kind.to_lowercase())),
        )
        .unwrap();
        assert_eq!(
            data[&format!("resource.customizations.health.delta-operator.io_{kind}")],
            lua.as_str(),
            "{kind}"
        );
    }
}

/// The patch command in the file's header merges the checks into a live argocd-cm.
#[test]
fn the_argocd_cm_patch_merges_into_a_live_argocd_cm() {
    argocd_namespace();
    let _ = kubectl(&[
        "delete",
        "configmap",
        "argocd-cm",
        "-n",
        "argocd",
        "--ignore-not-found",
    ]);
    let before = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"argocd-cm","namespace":"argocd"},
        "data":{"url":"https://argocd.example.com","resource.customizations.health.delta-operator.io_DeltaTable":"old"}}"#;
    apply_json(before);
    let file = repo().join("gitops/argocd/argocd-cm-health.yaml");
    let header = std::fs::read_to_string(&file).unwrap();
    assert!(
        header.contains(
            "kubectl -n argocd patch configmap argocd-cm --patch-file argocd-cm-health.yaml"
        ),
        "the header shows the command tested here"
    );
    kubectl_ok(&[
        "-n",
        "argocd",
        "patch",
        "configmap",
        "argocd-cm",
        "--patch-file",
        file.to_str().unwrap(),
    ]);
    let live = get("argocd", "configmap", "argocd-cm");
    assert_eq!(
        live["data"]["url"], "https://argocd.example.com",
        "other keys are kept: {live}"
    );
    for kind in HEALTH_KINDS {
        let lua = std::fs::read_to_string(
            repo().join(format!("gitops/argocd/health/{}.lua", kind.to_lowercase())),
        )
        .unwrap();
        assert_eq!(
            live["data"][format!("resource.customizations.health.delta-operator.io_{kind}")],
            lua.as_str(),
            "{kind}"
        );
    }
}

fn kubectl_stdin(args: &[&str], input: &str) -> (bool, String, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", e2e_dir().join("kubeconfig"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The namespace `argocd`, created once per test process (two tests need it).
fn argocd_namespace() {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        apply_json(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"argocd"}}"#)
    });
}

fn apply_json(json: &str) {
    let (ok, out, err) = kubectl_stdin(&["apply", "-f", "-"], json);
    assert!(ok, "kubectl apply {json}: {out}{err}");
}

/// The Spark Connect examples (docs/spark-connect/): each CR parses with the
/// kind and API version it claims, and the chart values name a Spark Connect
/// target that the operator's config loader accepts.
#[test]
fn spark_connect_examples_parse_and_the_values_name_a_target_the_operator_accepts() {
    let dir = repo().join("docs/spark-connect");
    for (file, api, kind) in [
        (
            "kubeflow-sparkconnect.yaml",
            "sparkoperator.k8s.io/v1alpha1",
            "SparkConnect",
        ),
        (
            "apache-sparkconnectserver.yaml",
            "spark.apache.org/v1",
            "SparkApplication",
        ),
    ] {
        let d: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        assert_eq!(
            (d["apiVersion"].as_str(), d["kind"].as_str()),
            (Some(api), Some(kind)),
            "{file}"
        );
        let conf = d["spec"]["sparkConf"].to_string();
        assert!(
            conf.contains("io.delta.sql.DeltaSparkSessionExtension")
                && conf.contains("org.apache.spark.sql.delta.catalog.DeltaCatalog"),
            "{file}: Delta's extension and catalog: {conf}"
        );
    }
    let values: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(dir.join("values-spark-connect.yaml")).unwrap(),
    )
    .unwrap();
    let config = delta_operator::config::Config::parse(&values["config"].to_string())
        .expect("the values' config loads");
    let t = config.target("spark").expect("the spark target");
    assert!(
        matches!(
            t.backend,
            delta_operator::config::TargetBackend::SparkConnect(_)
        ),
        "{t:?}"
    );
    assert_eq!(config.default_target_name(), "spark");
}
