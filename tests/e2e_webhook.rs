//! The validating admission webhook and the CRDs' own limits against a real
//! kube-apiserver + etcd (`e2e/with-controlplane.sh`): `kubectl apply` of a
//! manifest with a mistake fails at once with the text `delta-operator
//! validate` prints for that file; good manifests pass.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use support::e2e::*;

/// The ValidatingWebhookConfiguration's name: the chart's, whose RBAC lets the
/// operator get and patch exactly this one (the tests run as the chart's identity).
const CONFIG: &str = "delta-operator";

/// The tests that install the webhook configuration (one name, `CONFIG`) run one
/// at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Deletes the webhook configuration when the test ends, however it ends.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = kubectl(&[
            "delete",
            "validatingwebhookconfiguration",
            CONFIG,
            "--ignore-not-found",
        ]);
    }
}

/// The webhook configuration the chart installs (`helm template`, default values),
/// pointed at a local operator by URL (the API server runs on this host) instead of
/// the chart's Service, and scoped to one namespace, so the other tests' namespaces
/// never see it. failurePolicy Fail here: a webhook that cannot be reached must fail
/// this test, not let everything through (the chart's default, Ignore, is checked).
fn install_config(ns: &str, port: u16) -> Installed {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new("bash")
        .arg("-c")
        .arg(r#"set -euo pipefail; eval "$(e2e/ship/tools.sh)"; "$HELM_BIN" template delta-operator charts/delta-operator -s templates/webhook.yaml"#)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&String::from_utf8_lossy(&o.stdout)).unwrap();
    let mut config = docs
        .into_iter()
        .find(|d| d["kind"] == "ValidatingWebhookConfiguration")
        .expect("the chart renders a ValidatingWebhookConfiguration");
    assert_eq!(config["metadata"]["name"], CONFIG);
    let hooks = config["webhooks"].as_array_mut().unwrap();
    assert_eq!(hooks.len(), 1);
    let hook = &mut hooks[0];
    assert_eq!(hook["failurePolicy"], "Ignore", "the chart's default");
    assert_eq!(hook["clientConfig"]["service"]["path"], "/validate");
    hook["clientConfig"] = serde_json::json!({"url": format!("https://127.0.0.1:{port}/validate")});
    hook["namespaceSelector"] =
        serde_json::json!({"matchLabels": {"kubernetes.io/metadata.name": ns}});
    hook["failurePolicy"] = "Fail".into();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("webhook.json");
    std::fs::write(&f, config.to_string()).unwrap();
    kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
    Installed
}

/// `kubectl apply -f file`: success and stderr.
fn apply_file(file: &Path) -> (bool, String) {
    let (ok, out, err) = kubectl(&["apply", "-f", file.to_str().unwrap()]);
    (ok, format!("{out}{err}"))
}

/// What `delta-operator validate -f files…` prints for each error, without the
/// `error: <file>: ` each line starts with (an applied object has no file).
fn validate_errors(files: &[&Path], file: &Path) -> Vec<String> {
    let mut args = vec!["validate".to_string()];
    for f in files {
        args.push("-f".into());
        args.push(f.to_str().unwrap().into());
    }
    let o = Command::new(BIN).args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "validate accepted it: {stderr}");
    let prefix = format!("error: {}: ", file.display());
    let mut errors: Vec<String> = Vec::new();
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix(&prefix) {
            errors.push(rest.to_string());
        } else if line.starts_with("    fix: ")
            && let Some(last) = errors.last_mut()
        {
            last.push('\n');
            last.push_str(line);
        }
    }
    assert!(
        !errors.is_empty(),
        "no error of {}: {stderr}",
        file.display()
    );
    errors
}

fn webhook_port(op: &Operator) -> u16 {
    let mut port = 0;
    wait_until(
        "the webhook to listen",
        Duration::from_secs(30),
        || match op
            .log()
            .lines()
            .find_map(|l| l.strip_prefix("webhook listening on "))
            .and_then(|a| a.rsplit(':').next()?.trim().parse().ok())
        {
            Some(p) => {
                port = p;
                Ok(())
            }
            None => Err(op.log()),
        },
    );
    port
}

fn schema_yaml(ns: &str, name: &str, catalog: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {{catalog: {catalog}}}\n"
    )
}

fn orders_yaml(ns: &str, amount_type: &str, partitioned_by: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {{name: orders, namespace: {ns}}}
spec:
  schemaRef: sales
  columns:
    - {{name: order_id, type: bigint, nullable: false}}
    - {{name: amount, type: {amount_type}}}
    - {{name: order_date, type: date}}
  partitionedBy: [{partitioned_by}]
"
    )
}

#[test]
fn kubectl_apply_is_refused_with_what_validate_prints() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let ns = namespace("webhook");
    drop(Installed); // none left over from an interrupted run
    let op = Operator::start(
        &ns,
        ALL,
        &["--webhook-addr", "127.0.0.1:0", "--webhook-config", CONFIG],
    );
    let port = webhook_port(&op);
    // not ready while the API server cannot trust it: its CA is not in a configuration yet
    wait_until("the controllers to start", Duration::from_secs(30), || {
        if op.log().contains("controllers started") {
            Ok(())
        } else {
            Err(op.log())
        }
    });
    let readyz = op.http("/readyz");
    assert!(readyz.contains("503"), "{readyz}");
    let _installed = install_config(&ns, port);
    // the operator patches its CA in, then says it is ready
    wait_until("the caBundle", Duration::from_secs(30), || {
        let (_, out, _) = kubectl(&[
            "get",
            "validatingwebhookconfiguration",
            CONFIG,
            "-o",
            "jsonpath={.webhooks[0].clientConfig.caBundle}",
        ]);
        if out.trim().is_empty() {
            Err("no caBundle yet".into())
        } else {
            Ok(())
        }
    });
    wait_until("/readyz 200", Duration::from_secs(30), || {
        let r = op.http("/readyz");
        if r.starts_with("HTTP/1.1 200") {
            Ok(())
        } else {
            Err(r)
        }
    });
    let ca = kubectl_ok(&[
        "get",
        "validatingwebhookconfiguration",
        CONFIG,
        "-o",
        "jsonpath={.webhooks[0].clientConfig.caBundle}",
    ]);
    let ca = Command::new("base64")
        .args(["-d"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(ca.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let ca = String::from_utf8_lossy(&ca.stdout).into_owned();
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    assert!(!ca.contains("PRIVATE KEY"), "a key in the caBundle");

    let dir = tempfile::tempdir().unwrap();
    let sales = dir.path().join("sales.yaml");
    std::fs::write(&sales, schema_yaml(&ns, "sales", "main")).unwrap();
    let (ok, out) = apply_file(&sales);
    assert!(ok, "a good DeltaSchema was refused: {out}");

    // a table with two mistakes: a misspelt type, a partition column that is not a column
    let orders = dir.path().join("orders.yaml");
    std::fs::write(&orders, orders_yaml(&ns, "strin", "order_day")).unwrap();
    let expected = validate_errors(&[&sales, &orders], &orders);
    assert!(expected.len() >= 2, "{expected:?}");
    let (ok, out) = apply_file(&orders);
    assert!(!ok, "the typo was applied: {out}");
    assert!(out.contains("denied the request"), "{out}");
    for e in &expected {
        assert!(
            out.contains(e.as_str()),
            "kubectl's error lacks\n{e}\nin\n{out}"
        );
    }
    assert!(
        out.contains("spec.columns[1].type") && out.contains("fix: "),
        "{out}"
    );
    let (exists, _, _) = kubectl(&["get", "deltatable", "orders", "-n", &ns]);
    assert!(!exists, "a refused table exists");

    // fixed, it passes and the operator makes it
    std::fs::write(&orders, orders_yaml(&ns, "int", "order_date")).unwrap();
    let (ok, out) = apply_file(&orders);
    assert!(ok, "a good DeltaTable was refused: {out}");
    wait_condition(&ns, "deltatable", "orders", "Ready", "True", None);

    // an update that brings a mistake in is refused the same way
    std::fs::write(&orders, orders_yaml(&ns, "int", "order_day")).unwrap();
    let expected = validate_errors(&[&sales, &orders], &orders);
    let (ok, out) = apply_file(&orders);
    assert!(!ok, "the bad update was applied: {out}");
    for e in &expected {
        assert!(
            out.contains(e.as_str()),
            "kubectl's error lacks\n{e}\nin\n{out}"
        );
    }

    // a DeltaSchema's mistake: a reserved property (the CRD schema cannot say it)
    let bad_schema = dir.path().join("bad-schema.yaml");
    std::fs::write(
        &bad_schema,
        format!(
            "{}  properties: {{delta.minReaderVersion: '3'}}\n",
            schema_yaml(&ns, "other", "main")
                .replace("spec: {catalog: main}", "spec:\n  catalog: main")
        ),
    )
    .unwrap();
    let expected = validate_errors(&[&bad_schema], &bad_schema);
    let (ok, out) = apply_file(&bad_schema);
    assert!(!ok, "the bad DeltaSchema was applied: {out}");
    for e in &expected {
        assert!(
            out.contains(e.as_str()),
            "kubectl's error lacks\n{e}\nin\n{out}"
        );
    }

    // a DeltaView whose query does not parse: refused with what validate prints (spec.query)
    let view = |query: &str| {
        format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaView\nmetadata: {{name: recent, namespace: {ns}}}\nspec:\n  schemaRef: sales\n  query: \"{query}\"\n"
        )
    };
    let recent = dir.path().join("recent.yaml");
    std::fs::write(&recent, view("SELEC order_id FROM orders")).unwrap();
    let expected = validate_errors(&[&sales, &recent], &recent);
    let (ok, out) = apply_file(&recent);
    assert!(!ok, "the bad DeltaView was applied: {out}");
    assert!(
        out.contains("denied the request") && out.contains("spec.query"),
        "{out}"
    );
    for e in &expected {
        assert!(
            out.contains(e.as_str()),
            "kubectl's error lacks\n{e}\nin\n{out}"
        );
    }
    let (exists, _, _) = kubectl(&["get", "deltaview", "recent", "-n", &ns]);
    assert!(!exists, "a refused view exists");
    std::fs::write(&recent, view("SELECT order_id FROM orders")).unwrap();
    let (ok, out) = apply_file(&recent);
    assert!(ok, "a good DeltaView was refused: {out}");

    // a schema that hands its tables' tags to dbt: a table declaring tags is refused
    let shared = dir.path().join("shared.yaml");
    std::fs::write(
        &shared,
        schema_yaml(&ns, "shared", "main").replace(
            "spec: {catalog: main}",
            "spec:\n  catalog: main\n  handOff: {to: dbt, aspects: [Tags]}",
        ),
    )
    .unwrap();
    let (ok, out) = apply_file(&shared);
    assert!(ok, "a schema with a hand-off was refused: {out}");
    let tagged = dir.path().join("tagged.yaml");
    std::fs::write(
        &tagged,
        format!(
            "{}  tags: {{domain: sales}}\n",
            orders_yaml(&ns, "int", "order_date")
                .replace("name: orders", "name: tagged")
                .replace("schemaRef: sales", "schemaRef: shared")
        ),
    )
    .unwrap();
    let expected = validate_errors(&[&shared, &tagged], &tagged);
    assert!(
        expected
            .iter()
            .any(|e| e.contains("spec.tags") && e.contains("handed off to dbt")),
        "{expected:?}"
    );
    let (ok, out) = apply_file(&tagged);
    assert!(!ok, "a handed-off part was admitted: {out}");
    for e in &expected {
        assert!(
            out.contains(e.as_str()),
            "kubectl's error lacks\n{e}\nin\n{out}"
        );
    }

    // a table applied before its schema is not refused: the operator waits for the schema
    let early = dir.path().join("early.yaml");
    std::fs::write(
        &early,
        orders_yaml(&ns, "int", "order_date")
            .replace("name: orders", "name: early")
            .replace("schemaRef: sales", "schemaRef: later"),
    )
    .unwrap();
    let (ok, out) = apply_file(&early);
    assert!(ok, "a table before its schema was refused: {out}");
    assert!(
        out.contains("Warning") && out.contains("spec.schemaRef"),
        "{out}"
    );
    // the refusals never quote a key
    assert!(!op.log().contains("PRIVATE KEY"), "{}", op.log());
}

/// What the CRD schema itself can say is refused by the API server with no
/// webhook at all (this namespace has none): the webhook's failurePolicy is
/// Ignore in the chart, so these hold even while the operator is down.
#[test]
fn crd_limits_hold_without_the_webhook() {
    let ns = namespace("crd-limits");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("m.yaml");
    // the schema the tables name, for `validate` (the cluster has none: nothing else to refuse)
    let sales = dir.path().join("sales.yaml");
    std::fs::write(&sales, schema_yaml(&ns, "sales", "main")).unwrap();
    let validate = |files: &[&Path]| {
        let mut c = Command::new(BIN);
        c.arg("validate");
        for file in files {
            c.arg("-f").arg(file);
        }
        let o = c.output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let refused = |yaml: &str, needles: &[&str]| {
        std::fs::write(&f, yaml).unwrap();
        let (ok, out) = apply_file(&f);
        assert!(!ok, "applied: {yaml}\n{out}");
        for n in needles {
            assert!(out.contains(n), "{n:?} not in {out}");
        }
        // and `validate` refuses it too (the CRD never refuses what validate accepts)
        let files: Vec<&Path> = if yaml.contains("kind: DeltaTable") {
            vec![&sales, &f]
        } else {
            vec![&f]
        };
        let (ok, err) = validate(&files);
        assert!(!ok, "validate accepted {yaml}");
        assert!(err.contains(needles[0]), "validate: {err}");
    };
    // CEL: a catalog that would be a path
    refused(
        &schema_yaml(&ns, "bad", "main.sales"),
        &["spec.catalog", "must not contain '.'"],
    );
    refused(
        &schema_yaml(&ns, "bad", "_DELTA_LOG"),
        &["spec.catalog", "_delta_log"],
    );
    // maxLength
    refused(
        &schema_yaml(&ns, "bad", &"c".repeat(256)),
        &["spec.catalog", "255"],
    );
    // maxItems: five clustering keys
    let five = orders_yaml(&ns, "int", "order_date").replace(
        "  partitionedBy: [order_date]\n",
        "  clusterBy: [order_id, amount, order_date, order_id, amount]\n",
    );
    refused(&five, &["spec.clusterBy", "4"]);
    // CEL: a foreign key naming more columns than it references
    let fk = format!(
        "{}  constraints:\n    - foreignKey: {{columns: [order_id, amount], references: customers, referencedColumns: [id]}}\n",
        orders_yaml(&ns, "int", "order_date")
    );
    refused(
        &fk,
        &["spec.constraints[0].foreignKey", "referencedColumns"],
    );

    // what validate accepts passes: names left null, the longest names, four keys
    let good = format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales, namespace: {ns}}}\nspec: {{catalog: {}, name: null, comment: null}}\n---\n{}",
        "c".repeat(255),
        orders_yaml(&ns, "int", "order_date").replace(
            "  partitionedBy: [order_date]\n",
            &format!(
                "  name: {}\n  clusterBy: [order_id, amount, order_date]\n  constraints:\n    - check: {{name: positive, expression: amount > 0}}\n",
                "t".repeat(211)
            ),
        )
    );
    std::fs::write(&f, &good).unwrap();
    let (ok, err) = validate(&[&f]);
    assert!(ok, "{err}");
    let (ok, out) = apply_file(&f);
    assert!(ok, "{out}");
}

/// The message of a resource's condition `t`.
fn condition_message(obj: &serde_json::Value, t: &str) -> String {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == t)
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// A DeltaSchema `ns/name` declaring the catalog schema `main.<schema>`.
fn named_schema_yaml(ns: &str, name: &str, schema: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {{catalog: main, name: \"{schema}\"}}\n"
    )
}

/// A catalog schema is one across namespaces (issue 26): a DeltaSchema whose schema name
/// looks like one another namespace already declares (Cyrillic `а` in `sаles`) is refused by
/// an operator watching every namespace, naming both objects (namespace/name) and the fix:
/// by the controller when the webhook is not there (Stalled, InvalidSpec; the older one stays
/// Ready and no lookalike schema is made), and by the webhook at `kubectl apply`.
#[test]
fn a_lookalike_schema_in_another_namespace_is_refused_by_controller_and_webhook() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let a = namespace("lookalike-a");
    let b = namespace("lookalike-b");
    drop(Installed); // none left over from an interrupted run
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    // every namespace is watched (the other tests' leftovers too): only these two may use the lake
    let config = format!(
        "targets:\n  lake:\n    lake: {{root: {}}}\n    namespaces: ['{a}', '{b}']\n    schemas: ['*']\n",
        lake.display()
    );
    let op = Operator::start_cluster_wide(
        &a,
        &config,
        &["--webhook-addr", "127.0.0.1:0", "--webhook-config", CONFIG],
        dir,
    );
    let port = webhook_port(&op);
    let files = tempfile::tempdir().unwrap();
    let apply = |file: &str, yaml: &str| {
        let f = files.path().join(file);
        std::fs::write(&f, yaml).unwrap();
        apply_file(&f)
    };
    // a schema name of this run's own: the other tests' DeltaSchemas (`sales` among them) are
    // watched too, and a lookalike of theirs would be refused naming them instead
    let plain = format!("sales{}", std::process::id());
    let cyrillic = plain.replacen('a', "\u{430}", 1);
    let fullwidth: String = plain
        .chars()
        .map(|c| match c {
            'a'..='z' => char::from_u32(0xff41 + (c as u32 - 'a' as u32)).unwrap_or(c),
            '0'..='9' => char::from_u32(0xff10 + (c as u32 - '0' as u32)).unwrap_or(c),
            _ => c,
        })
        .collect();

    // the controller: no webhook yet, so the lookalike is stored, then refused
    let (ok, out) = apply("a.yaml", &named_schema_yaml(&a, "sales", &plain));
    assert!(ok, "{out}");
    wait_condition(&a, "deltaschema", "sales", "Ready", "True", None);
    let (ok, out) = apply("b.yaml", &named_schema_yaml(&b, "sales", &cyrillic));
    assert!(ok, "{out}");
    let refused = wait_condition(
        &b,
        "deltaschema",
        "sales",
        "Stalled",
        "True",
        Some("InvalidSpec"),
    );
    let message = condition_message(&refused, "Stalled");
    assert!(
        message.contains(&format!("of DeltaSchema {a}/sales"))
            && message.contains("same catalog")
            && message.contains("look the same")
            && message.contains("fix: rename one of them"),
        "{message}"
    );
    let older = get(&a, "deltaschema", "sales");
    assert_eq!(
        condition(&older, "Ready").map(|(s, _)| s).as_deref(),
        Some("True"),
        "the older one is not refused: {}",
        older["status"]
    );
    assert!(
        lake.join("main").join(&plain).is_dir(),
        "the older schema is made"
    );
    assert!(
        !lake.join("main").join(&cyrillic).exists(),
        "the lookalike schema was made"
    );

    // the webhook, for namespace b: a new lookalike is refused at kubectl apply, naming a's
    let _installed = install_config(&b, port);
    wait_until("/readyz 200", Duration::from_secs(30), || {
        let r = op.http("/readyz");
        if r.starts_with("HTTP/1.1 200") {
            Ok(())
        } else {
            Err(r)
        }
    });
    let (ok, out) = apply(
        "b2.yaml",
        &named_schema_yaml(&b, "sales-fullwidth", &fullwidth),
    );
    assert!(!ok, "the lookalike was admitted: {out}");
    assert!(
        out.contains("denied the request")
            && out.contains(&format!("DeltaSchema {b}/sales-fullwidth: spec.name: "))
            && out.contains(&format!("of DeltaSchema {a}/sales"))
            && out.contains("Unicode normalisation")
            && out.contains("fix: rename one of them"),
        "{out}"
    );
    let (exists, _, _) = kubectl(&["get", "deltaschema", "sales-fullwidth", "-n", &b]);
    assert!(!exists, "a refused schema exists");
    // a schema of its own name passes
    let (ok, out) = apply("b3.yaml", &named_schema_yaml(&b, "crm", "crm"));
    assert!(ok, "{out}");
}
