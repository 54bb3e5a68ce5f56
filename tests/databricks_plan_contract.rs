//! The plan is the contract, on the warehouse emulator (real Delta Lake on
//! Spark): every statement a JSON plan shows for a step is what the warehouse
//! then receives, in order, with nothing else written; placeholders are bound
//! to the run; the checks before SET NOT NULL and ADD CONSTRAINT refuse with
//! the count of offending rows before the ALTER is sent; a plan whose
//! statements were changed has another id and is refused by the executor.
//!
//! `make test` exports DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID
//! and WAREHOUSE_URL; without them every test here fails (never skips).

mod support;

use delta_operator::apply::{ApplyError, StepStatus, apply, run_plan};
use delta_operator::engine::Inputs;
use delta_operator::plan::render::json;
use delta_operator::plan::{CheckWhen, Plan, Statement, id::plan_id};
use serde_json::Value;
use support::warehouse::{Wh, env};
use support::{manifests, table};

/// This suite's manifests (additive schema, table `t`) and the plan a reviewer saw, applied.
trait Suite {
    fn m(&self, body: &str) -> Inputs;
    async fn apply_shown(&self, inputs: &Inputs) -> (Plan, Vec<String>);
    fn sent_since(&self, since: u64) -> Vec<String>;
}

impl Suite for Wh {
    fn m(&self, body: &str) -> Inputs {
        self.manifests(Some("additive"), &table("t", body))
    }
    /// Applies the plan a JSON round trip gives back (what a reviewer saw), approved.
    async fn apply_shown(&self, inputs: &Inputs) -> (Plan, Vec<String>) {
        let shown = json::parse(&json::render(&self.plan(inputs).await)).expect("round trip");
        let since = log_size();
        let (_, report) = apply(
            &self.b,
            inputs,
            Some(&shown.id),
            Some(&shown.id),
            &support::options(),
        )
        .await
        .unwrap_or_else(|e| panic!("apply: {e}"));
        assert!(!report.failed(), "{report:#?}");
        (shown, self.sent_since(since))
    }
    /// The statements the emulator received since `since` that name this test's schema.
    fn sent_since(&self, since: u64) -> Vec<String> {
        let log = admin_get(&format!("/_emulator/requests?since={since}"));
        log["requests"]
            .as_array()
            .expect("requests")
            .iter()
            .filter_map(|r| r["statement"].as_str())
            .filter(|s| s.contains(&self.schema))
            .map(str::to_string)
            .collect()
    }
}

fn admin_get(path: &str) -> Value {
    let url = format!("{}{path}", env("WAREHOUSE_URL"));
    let text = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                reqwest::get(&url)
                    .await
                    .unwrap_or_else(|e| panic!("GET {url}: {e}"))
                    .text()
                    .await
                    .unwrap()
            })
    })
    .join()
    .unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn log_size() -> u64 {
    admin_get("/_emulator/requests?since=1000000000")["total_requests"]
        .as_u64()
        .expect("total")
}

/// Does `sent` match the plan's `shown`, its placeholders bound to one value each?
fn matches(shown: &str, sent: &str) -> bool {
    let mut pattern = String::from("^");
    let mut rest = shown;
    while let Some(i) = rest.find('{') {
        pattern.push_str(&regex_escape(&rest[..i]));
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{run}") {
            pattern.push_str("[0-9a-f]{8}");
            rest = t;
        } else if let Some(t) = tail.strip_prefix("{version}") {
            pattern.push_str("[0-9]+");
            rest = t;
        } else {
            pattern.push_str("\\{");
            rest = &tail[1..];
        }
    }
    pattern.push_str(&regex_escape(rest));
    pattern.push('$');
    regex_lite_match(&pattern, sent)
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A tiny matcher for the patterns `matches` builds: literals, `[0-9a-f]{8}` and `[0-9]+`.
fn regex_lite_match(pattern: &str, text: &str) -> bool {
    #[derive(Debug)]
    enum Tok {
        Lit(char),
        Hex8,
        Digits,
    }
    let mut toks = Vec::new();
    let body = pattern.trim_start_matches('^').trim_end_matches('$');
    let mut i = 0;
    let b: Vec<char> = body.chars().collect();
    while i < b.len() {
        let rest: String = b[i..].iter().collect();
        if rest.starts_with("[0-9a-f]{8}") {
            toks.push(Tok::Hex8);
            i += "[0-9a-f]{8}".len();
        } else if rest.starts_with("[0-9]+") {
            toks.push(Tok::Digits);
            i += "[0-9]+".len();
        } else if b[i] == '\\' && i + 1 < b.len() {
            toks.push(Tok::Lit(b[i + 1]));
            i += 2;
        } else {
            toks.push(Tok::Lit(b[i]));
            i += 1;
        }
    }
    let t: Vec<char> = text.chars().collect();
    fn go(toks: &[Tok], t: &[char]) -> bool {
        match toks.first() {
            None => t.is_empty(),
            Some(Tok::Lit(c)) => t.first() == Some(c) && go(&toks[1..], &t[1..]),
            Some(Tok::Hex8) => {
                t.len() >= 8
                    && t[..8].iter().all(|c| c.is_ascii_hexdigit())
                    && go(&toks[1..], &t[8..])
            }
            Some(Tok::Digits) => (1..=t.len())
                .take_while(|&n| t[n - 1].is_ascii_digit())
                .any(|n| go(&toks[1..], &t[n..])),
        }
    }
    go(&toks, &t)
}

fn is_read(s: &str) -> bool {
    let first = s.split_whitespace().next().unwrap_or("");
    ["SELECT", "DESCRIBE", "SHOW", "WITH"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(first))
}

/// Every write the warehouse received is the plan's next statement, in order,
/// and every check the plan shows was sent before (or after) its statements.
fn assert_ran_as_shown(plan: &Plan, sent: &[String]) {
    let mut expected: Vec<(String, bool)> = Vec::new();
    for t in &plan.tables {
        for s in t.steps() {
            for c in s.checks.iter().filter(|c| c.when == CheckWhen::Before) {
                expected.push((c.query.clone(), true));
            }
            expected.extend(s.statements.iter().map(|st| (st.to_string(), false)));
            for c in s.checks.iter().filter(|c| c.when == CheckWhen::After) {
                expected.push((c.query.clone(), true));
            }
        }
    }
    assert!(!expected.is_empty(), "the plan has statements");
    // the writes, in order, are exactly the plan's statements
    let writes: Vec<&String> = sent.iter().filter(|s| !is_read(s)).collect();
    let planned_writes: Vec<&String> = expected
        .iter()
        .filter(|(s, check)| !check && !is_read(s))
        .map(|(s, _)| s)
        .collect();
    assert_eq!(
        writes.len(),
        planned_writes.len(),
        "writes sent:\n{writes:#?}\nplanned:\n{planned_writes:#?}"
    );
    for (sent, shown) in writes.iter().zip(&planned_writes) {
        assert!(matches(shown, sent), "sent:  {sent}\nshown: {shown}");
    }
    // and every statement and check of the plan was sent, in the plan's order
    let mut at = 0;
    for (shown, _) in &expected {
        let found = sent[at..].iter().position(|s| matches(shown, s));
        let Some(i) = found else {
            panic!("not sent (in order): {shown}\nsent:\n{sent:#?}")
        };
        at += i + 1;
    }
}

#[tokio::test]
async fn every_statement_a_plan_shows_is_what_the_warehouse_receives() {
    let wh = Wh::new("pc", "all").await;
    let v1 = wh.m(concat!(
        "  comment: orders\n",
        "  properties: {team: sales, stale: 'yes'}\n",
        "  columns:\n",
        "    - {name: id, type: bigint}\n",
        "    - {name: amount, type: int}\n",
        "    - {name: status, type: string}\n",
        "    - {name: note, type: string, comment: free text}\n",
        "  constraints:\n",
        "    - check: {name: amount_positive, expression: amount > 0}\n",
    ));
    let (plan, sent) = wh.apply_shown(&v1).await;
    assert_ran_as_shown(&plan, &sent);
    wh.sql(&format!(
        "INSERT INTO {} VALUES (1, 10, 'new', 'a'), (2, 20, 'paid', NULL)",
        wh.q("t")
    ))
    .await;
    // in place: comment, properties set and unset, a column added, a comment,
    // a widening (with its feature), a rename and a drop (with column
    // mapping), a CHECK dropped and one added (checked first)
    let v2 = wh.m(concat!(
        "  comment: \"orders, it's ${x}\"\n",
        "  properties: {team: finance, stale: null}\n",
        "  columns:\n",
        "    - {name: id, type: bigint}\n",
        "    - {name: amount, type: bigint}\n",
        "    - {name: state, type: string, renamedFrom: status}\n",
        "    - {name: channel, type: string, comment: where it came from}\n",
        "  constraints:\n",
        "    - check: {name: amount_small, expression: amount < 1000}\n",
    ));
    let (plan, sent) = wh.apply_shown(&v2).await;
    let titles: Vec<String> = plan.tables[0]
        .steps()
        .iter()
        .map(|s| s.action.title())
        .collect();
    for want in [
        "COMMENT ON TABLE",
        "ADD COLUMN channel",
        "RENAME COLUMN status TO state",
        "DROP COLUMN note",
        "ADD CONSTRAINT amount_small CHECK",
    ] {
        assert!(titles.iter().any(|t| t == want), "{want} in {titles:#?}");
    }
    assert_ran_as_shown(&plan, &sent);
    let since = log_size();
    assert!(
        !wh.plan(&v2).await.has_changes(),
        "applied as planned: nothing left"
    );
    assert!(
        !wh.sent_since(since)
            .iter()
            .any(|s| s.starts_with("DESCRIBE DETAIL")),
        "a plan that scans nothing measures nothing"
    );
    // a staged rewrite: placeholders bound to the run and the version it starts from
    // (no NOT NULL column: its put-back, ALTER COLUMN … SET NOT NULL, is Databricks-only)
    let v3 = wh.m(concat!(
        "  comment: \"orders, it's ${x}\"\n",
        "  properties: {team: finance}\n",
        "  columns:\n",
        "    - {name: id, type: bigint}\n",
        "    - {name: amount, type: bigint}\n",
        "    - {name: state, type: int, using: \"CASE state WHEN 'new' THEN 0 ELSE 1 END\"}\n",
        "    - {name: channel, type: string, comment: where it came from}\n",
        "  constraints:\n",
        "    - check: {name: amount_small, expression: amount < 1000}\n",
    ));
    let (plan, sent) = wh.apply_shown(&v3).await;
    let stage = plan.tables[0]
        .steps()
        .iter()
        .find(|s| s.action.title() == "STAGE rewritten data")
        .expect("a stage");
    assert!(
        stage.statements[0].to_string().contains("{run}")
            && stage.statements[0].to_string().contains("{version}"),
        "{:?}",
        stage.statements
    );
    assert!(
        stage.checks.iter().any(|c| c.when == CheckWhen::After),
        "the staged check is shown"
    );
    assert!(
        stage.est_bytes.is_some_and(|b| b > 0),
        "the size read by DESCRIBE DETAIL: {:?}",
        stage.est_bytes
    );
    assert!(
        sent.iter().any(|s| s.starts_with("DESCRIBE DETAIL")),
        "measured once the plan rewrites it"
    );
    assert_ran_as_shown(&plan, &sent);
    assert!(!wh.plan(&v3).await.has_changes());
}

/// Every other step kind Databricks runs: a claim, keys, tags, grants and a
/// revoke, the owner, a default, clustering, a clone before a drop, and an
/// orphan's DROP TABLE, each checked against what the warehouse received.
#[tokio::test]
async fn keys_tags_access_defaults_clustering_clone_and_drop_run_as_shown() {
    let wh = Wh::new("pc", "kinds").await;
    let doc = |mode: &str, tables: &[(&str, &str)]| {
        let schema = format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: main, name: {}, mode: {mode}}}\n",
            wh.schema
        );
        let docs: String = tables.iter().map(|(n, b)| table(n, b)).collect();
        manifests(&format!("{schema}{docs}"))
    };
    // a table made outside the operator is claimed when declared
    wh.sql(&format!(
        "CREATE TABLE {} (id BIGINT) USING DELTA",
        wh.q("adopted")
    ))
    .await;
    let customers = "  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: name, type: string}\n  constraints:\n    - primaryKey: {name: customers_pk, columns: [id]}";
    let adopted = "  columns:\n    - {name: id, type: bigint}";
    let t1 = "  columns:\n    - {name: id, type: bigint}\n    - {name: customer_id, type: bigint}\n    - {name: amount, type: int}";
    let v1 = doc(
        "additive",
        &[("customers", customers), ("adopted", adopted), ("t", t1)],
    );
    let (plan, sent) = wh.apply_shown(&v1).await;
    assert!(
        plan.tables
            .iter()
            .flat_map(|t| t.steps())
            .any(|s| s.action.title().starts_with("CLAIM")),
        "the outside table is claimed"
    );
    assert_ran_as_shown(&plan, &sent);
    let t2 = format!(
        concat!(
            "  tags: {{team: sales}}\n",
            "  grants: [{{principal: analysts, privileges: [SELECT]}}]\n",
            "  owner: data-eng\n",
            "  clusterBy: [id]\n",
            "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: customer_id, type: bigint}}\n",
            "    - {{name: amount, type: int, default: '0', tags: {{pii: 'no'}}}}\n",
            "  constraints:\n    - foreignKey: {{name: t_customer, columns: [customer_id], references: main.{}.customers, referencedColumns: [id]}}"
        ),
        wh.schema
    );
    let v2 = doc(
        "additive",
        &[("customers", customers), ("adopted", adopted), ("t", &t2)],
    );
    let (plan, sent) = wh.apply_shown(&v2).await;
    let titles: Vec<String> = plan
        .tables
        .iter()
        .flat_map(|t| t.steps())
        .map(|s| s.action.title())
        .collect();
    assert!(titles.len() >= 7, "{titles:#?}");
    assert_ran_as_shown(&plan, &sent);
    assert!(!wh.plan(&v2).await.has_changes(), "applied as planned");
    // tags and the key removed, another privilege instead, no clustering, a column dropped after a clone
    let t3 = concat!(
        "  tags: {team: null}\n",
        "  grants: [{principal: analysts, privileges: [MODIFY]}]\n",
        "  owner: data-eng\n",
        "  clusterBy: []\n",
        "  safety: {cloneBeforeRewrite: true}\n",
        "  columns:\n    - {name: id, type: bigint}\n    - {name: customer_id, type: bigint}\n",
    );
    let v3 = doc(
        "additive",
        &[("customers", customers), ("adopted", adopted), ("t", t3)],
    );
    let (plan, sent) = wh.apply_shown(&v3).await;
    let titles: Vec<String> = plan
        .tables
        .iter()
        .flat_map(|t| t.steps())
        .map(|s| s.action.title())
        .collect();
    for want in ["REVOKE", "DROP COLUMN amount", "SHALLOW CLONE"] {
        assert!(
            titles.iter().any(|t| t.contains(want)),
            "{want} in {titles:#?}"
        );
    }
    assert_ran_as_shown(&plan, &sent);
    assert!(!wh.plan(&v3).await.has_changes(), "applied as planned");
    // a strict schema drops the table no manifest declares any more
    let v4 = doc("strict", &[("customers", customers), ("adopted", adopted)]);
    let (plan, sent) = wh.apply_shown(&v4).await;
    assert!(
        plan.tables
            .iter()
            .flat_map(|t| t.steps())
            .any(|s| s.action.title() == "DROP TABLE"),
        "{plan:#?}"
    );
    assert_ran_as_shown(&plan, &sent);
}

#[tokio::test]
async fn checks_refuse_set_not_null_and_a_check_with_the_count_before_the_alter() {
    let wh = Wh::new("pc", "pre").await;
    let v1 = wh.m("  columns:\n    - {name: id, type: bigint}\n    - {name: amount, type: int}");
    wh.apply_shown(&v1).await;
    wh.sql(&format!(
        "INSERT INTO {} VALUES (1, 10), (2, NULL), (3, NULL), (4, -5)",
        wh.q("t")
    ))
    .await;
    // SET NOT NULL with two NULLs: refused with the count, the ALTER never sent
    let v2 = wh.m("  columns:\n    - {name: id, type: bigint}\n    - {name: amount, type: int, nullable: false}");
    let plan = wh.plan(&v2).await;
    let step = &plan.tables[0].steps()[0];
    assert_eq!(step.action.title(), "SET NOT NULL amount");
    let check = &step.checks[0];
    assert_eq!(check.when, CheckWhen::Before);
    let since = log_size();
    let err = apply(&wh.b, &v2, Some(&plan.id), None, &support::options()).await;
    let report = err.expect("the apply runs").1;
    let failed = report
        .steps
        .iter()
        .find_map(|s| match &s.status {
            StepStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .expect("the step fails");
    assert!(failed.contains("2 rows"), "{failed}");
    let sent = wh.sent_since(since);
    assert!(sent.iter().any(|s| s == &check.query), "{sent:#?}");
    assert!(
        !sent.iter().any(|s| s.contains("SET NOT NULL")),
        "the ALTER is never sent: {sent:#?}"
    );
    // a CHECK that one row fails: the same
    let v3 = wh.m(concat!(
        "  columns:\n    - {name: id, type: bigint}\n    - {name: amount, type: int}\n",
        "  constraints:\n    - check: {name: amount_positive, expression: amount > 0}\n"
    ));
    let plan = wh.plan(&v3).await;
    let since = log_size();
    let report = apply(&wh.b, &v3, Some(&plan.id), None, &support::options())
        .await
        .expect("the apply runs")
        .1;
    let failed = format!("{:?}", report.steps);
    // NULL passes a CHECK in SQL but Delta refuses it (false or unknown): both NULLs and -5 count
    assert!(failed.contains("3 rows"), "{failed}");
    assert!(
        !wh.sent_since(since)
            .iter()
            .any(|s| s.contains("ADD CONSTRAINT")),
        "the ADD CONSTRAINT is never sent"
    );
    // what the check says of NULL is what Delta does: with only NULLs left, Delta refuses too
    wh.sql(&format!("DELETE FROM {} WHERE amount < 0", wh.q("t")))
        .await;
    let direct =
        wh.b.client()
            .execute(
                &format!(
                    "ALTER TABLE {} ADD CONSTRAINT `amount_positive` CHECK (amount > 0)",
                    wh.q("t")
                ),
                &|_: &str| {},
            )
            .await;
    assert!(direct.is_err(), "Delta refuses a CHECK that NULLs fail");
}

/// A new NOT NULL column with `using:`: ADD COLUMN, one UPDATE, then SET NOT
/// NULL behind its check, never a staged copy. OSS Delta (the emulator's
/// engine) has no in-place SET NOT NULL; Databricks has (pinned in
/// databricks_warehouse.rs), so the last statement is refused here, after
/// its check passed.
#[tokio::test]
async fn a_new_not_null_column_is_backfilled_in_place_not_rewritten() {
    let wh = Wh::new("pc", "fill").await;
    let v1 = wh.m("  columns:\n    - {name: id, type: bigint}\n    - {name: amount, type: int}");
    wh.apply_shown(&v1).await;
    wh.sql(&format!(
        "INSERT INTO {} VALUES (1, 10), (2, 20)",
        wh.q("t")
    ))
    .await;
    let v2 = wh.m(concat!(
        "  columns:\n    - {name: id, type: bigint}\n    - {name: amount, type: int}\n",
        "    - {name: cents, type: bigint, nullable: false, using: \"amount * 100\"}\n"
    ));
    let plan = wh.plan(&v2).await;
    let titles: Vec<String> = plan.tables[0]
        .steps()
        .iter()
        .map(|s| s.action.title())
        .collect();
    assert_eq!(
        titles,
        vec![
            "ADD COLUMN cents",
            "BACKFILL cents (UPDATE)",
            "SET NOT NULL cents"
        ]
    );
    let fill = &plan.tables[0].steps()[1];
    assert_eq!(
        fill.statements,
        vec![format!(
            "UPDATE `main`.`{}`.`t` SET `cents` = (amount * 100) WHERE `cents` IS NULL",
            wh.schema
        )]
    );
    assert!(fill.est_bytes.is_some_and(|b| b > 0), "its size is shown");
    let since = log_size();
    let report = apply(&wh.b, &v2, Some(&plan.id), None, &support::options())
        .await
        .expect("runs")
        .1;
    assert!(matches!(report.steps[0].status, StepStatus::Applied));
    assert!(matches!(report.steps[1].status, StepStatus::Applied));
    let StepStatus::Failed { error } = &report.steps[2].status else {
        panic!("OSS Delta refuses SET NOT NULL: {report:#?}")
    };
    assert!(error.contains("non-nullable"), "{error}");
    let sent = wh.sent_since(since);
    let shown: Vec<String> = plan.tables[0]
        .steps()
        .iter()
        .flat_map(|s| {
            s.checks
                .iter()
                .map(|c| c.query.clone())
                .chain(s.statements.iter().map(ToString::to_string))
        })
        .collect();
    let mut at = 0;
    for s in &shown {
        let i = sent[at..]
            .iter()
            .position(|x| x == s)
            .unwrap_or_else(|| panic!("not sent in order: {s}\n{sent:#?}"));
        at += i + 1;
    }
    assert!(
        !sent.iter().any(|s| s.contains("__delta_operator_staging")),
        "no staging copy"
    );
    let rows =
        wh.b.client()
            .execute(
                &format!("SELECT id, cents FROM {} ORDER BY id", wh.q("t")),
                &|_: &str| {},
            )
            .await
            .expect("read")
            .rows;
    assert_eq!(
        rows,
        vec![
            vec![Some("1".to_string()), Some("1000".to_string())],
            vec![Some("2".to_string()), Some("2000".to_string())]
        ]
    );
}

#[tokio::test]
async fn a_changed_statement_changes_the_plan_id_and_is_never_run() {
    let wh = Wh::new("pc", "id").await;
    let v1 = wh.m("  columns:\n    - {name: id, type: bigint}");
    wh.apply_shown(&v1).await;
    let v2 = wh.m("  comment: kept\n  columns:\n    - {name: id, type: bigint}");
    let plan = wh.plan(&v2).await;
    let mut edited = plan.clone();
    let delta_operator::plan::Outcome::Accepted { steps } = &mut edited.tables[0].outcome else {
        panic!("accepted")
    };
    steps[0].statements[0] = Statement::Sql(format!("DROP TABLE {}", wh.q("t")));
    assert_ne!(
        plan_id(edited.backend, &edited.tables),
        plan.id,
        "the id covers the statements"
    );
    let since = log_size();
    let report = run_plan(&wh.b, &edited, &support::options()).await;
    assert!(
        matches!(&report.steps[0].status, StepStatus::Failed { error } if error.contains("not what this operator compiles")),
        "{report:#?}"
    );
    assert!(
        wh.sent_since(since).iter().all(|s| is_read(s)),
        "nothing was written"
    );
    // and an apply pinned to the edited plan's id is stale
    let err = apply(
        &wh.b,
        &v2,
        Some(&plan_id(edited.backend, &edited.tables)),
        None,
        &support::options(),
    )
    .await
    .expect_err("stale");
    assert!(matches!(err, ApplyError::Stale { .. }), "{err}");
}

#[test]
fn the_matcher_binds_placeholders_only() {
    assert!(matches(
        "CREATE `t_{run}` AS SELECT 1 VERSION AS OF {version}",
        "CREATE `t_0a1b2c3d` AS SELECT 1 VERSION AS OF 12"
    ));
    assert!(!matches("CREATE `t_{run}`", "CREATE `t_0a1b2c3`"));
    assert!(!matches("A {version}", "A x"));
    assert!(matches("literal {braces} kept", "literal {braces} kept"));
    assert!(!matches("exact", "exact plus"));
}
