//! Rules and laws.

use super::regressions::key_moved_under_a_foreign_key;
use super::*;

struct RuleCase {
    name: &'static str,
    plan: TablePlan,
    /// Exactly these rules, in this order.
    rules: Vec<&'static str>,
}

fn rule_case(
    name: &'static str,
    caps: Capabilities,
    edit: impl FnOnce(&mut DesiredTable, &mut ObservedTable),
    rules: Vec<&'static str>,
) -> RuleCase {
    let (mut d, mut o) = orders();
    edit(&mut d, &mut o);
    RuleCase {
        name,
        plan: plan_table(&d, Some(&o), &caps),
        rules,
    }
}

fn rule_cases() -> Vec<RuleCase> {
    let s = |v: &str| v.to_string();
    let identity = Identity {
        always: true,
        start: 1,
        increment: 1,
    };
    let mut create_on_lake = orders().0;
    create_on_lake.tags.insert(s("pii"), Some(s("no")));
    create_on_lake.tags.insert(s("unset-is-fine"), None);
    create_on_lake.grants.push(Grant {
        principal: s("analysts"),
        privileges: vec![Privilege::new("SELECT")],
    });
    create_on_lake.owner = Some(s("data-eng"));
    create_on_lake.cluster_by = Some(vec![s("id")]);
    create_on_lake.primary_key = Some(PrimaryKey {
        name: None,
        columns: vec![s("id")],
    });
    dcol(&mut create_on_lake, "note").mask = Some(Mask {
        function: s("f"),
        using_columns: vec![],
    });
    dcol(&mut create_on_lake, "note").default = Some(s("'x'"));
    dcol(&mut create_on_lake, "id").identity = Some(identity.clone());
    let no_drops = Capabilities {
        drop_column: Strategy::Unsupported,
        ..lake()
    };
    vec![
        // laws
        rule_case(
            "case drift",
            dbx(),
            |d, _| dcol(d, "amount").name = s("Amount"),
            vec!["ColumnSpellingMustMatchCatalog"],
        ),
        rule_case(
            "case drift of a nested field",
            dbx(),
            |d, o| {
                d.columns.push(col("address", "struct<City:string>"));
                o.columns.push(ocol("address", "struct<city:string>"));
            },
            vec!["ColumnSpellingMustMatchCatalog"],
        ),
        rule_case(
            "owned by another resource",
            dbx(),
            |_, o| {
                o.properties
                    .insert(OWNER_PROPERTY.into(), s("billing/orders"));
            },
            vec!["OwnedByAnotherResource"],
        ),
        rule_case(
            "writer features the lake cannot write",
            lake(),
            |d, o| {
                o.unsupported_features = vec![s("deletionVectors")];
                d.comment = Some(s("x"));
            },
            vec!["UnsupportedTableFeatures"],
        ),
        // rules
        rule_case(
            "renamedFrom while both columns are live",
            dbx(),
            |d, o| {
                let c = dcol(d, "note");
                c.name = s("remark");
                c.renamed_from = Some(s("note"));
                o.columns.push(ocol("remark", "string"));
            },
            vec!["AmbiguousColumnRename"],
        ),
        rule_case(
            "struct to array without using",
            dbx(),
            |d, o| {
                d.columns.push(col("address", "array<string>"));
                o.columns.push(ocol("address", "struct<city:string>"));
            },
            vec!["ConversionNeedsUsing"],
        ),
        rule_case(
            "a struct becoming an array on the lake without using",
            lake(),
            |d, o| {
                d.columns.push(col("address", "array<string>"));
                o.columns.push(ocol("address", "struct<zip:int>"));
            },
            vec!["ConversionNeedsUsing"],
        ),
        rule_case(
            "identity added to an existing column",
            dbx(),
            {
                let identity = identity.clone();
                move |d, _| dcol(d, "id").identity = Some(identity)
            },
            vec!["ColumnKindCannotChange"],
        ),
        rule_case(
            "generation expression changed",
            lake(),
            |d, o| {
                let mut c = col("day", "date");
                c.generated = Some(s("cast(ts as date)"));
                d.columns.push(c);
                let mut l = ocol("day", "date");
                l.generated = Some(s("to_date(ts)"));
                o.columns.push(l);
            },
            vec!["ColumnKindCannotChange"],
        ),
        rule_case(
            "a generated column added to an existing table",
            lake(),
            |d, _| {
                let mut c = col("day", "date");
                c.generated = Some(s("cast(ts as date)"));
                d.columns.push(c);
            },
            vec!["ColumnKindCannotChange"],
        ),
        rule_case(
            "a streaming table governed at scope Full, even without drift",
            dbx(),
            |_, o| o.kind = delta_operator_core::model::TableKind::StreamingTable,
            vec!["ScopeTooWideForKind"],
        ),
        rule_case(
            "a narrow scope's declared column type differs from the live one",
            dbx(),
            |d, _| {
                d.scope = Scope::Annotations;
                dcol(d, "amount").data_type = DataType::Long;
            },
            vec!["UnmanagedAspectDrift"],
        ),
        RuleCase {
            name: "create with what the lake has no notion of",
            plan: plan_table(&create_on_lake, None, &lake()),
            rules: vec![
                "NotSupportedByBackend", // tags
                "NotSupportedByBackend", // grants
                "NotSupportedByBackend", // owner
                "NotSupportedByBackend", // clusterBy
                "NotSupportedByBackend", // primary key
                "NotSupportedByBackend", // id identity
                "NotSupportedByBackend", // note mask
                "NotSupportedByBackend", // note default
            ],
        },
        rule_case(
            "grants, tags, masks, defaults, keys, clustering, owner on a lake update",
            lake(),
            |d, _| {
                d.grants.push(Grant {
                    principal: s("analysts"),
                    privileges: vec![Privilege::new("SELECT")],
                });
                d.tags.insert(s("pii"), Some(s("no")));
                dcol(d, "note").tags.insert(s("pii"), Some(s("yes")));
                dcol(d, "note").mask = Some(Mask {
                    function: s("f"),
                    using_columns: vec![],
                });
                dcol(d, "note").default = Some(s("'x'"));
                d.primary_key = Some(PrimaryKey {
                    name: None,
                    columns: vec![s("id")],
                });
                d.cluster_by = Some(vec![s("id")]);
                d.owner = Some(s("data-eng"));
            },
            vec!["NotSupportedByBackend"; 8],
        ),
        rule_case(
            "a backend that cannot drop columns at all",
            no_drops,
            |d, _| d.columns.retain(|c| c.name != "note"),
            vec!["NotSupportedByBackend"],
        ),
        rule_case(
            "a NOT NULL column added without using",
            dbx(),
            |d, _| d.columns.push(not_null(col("status", "string"))),
            vec!["NonNullableColumnAdd"],
        ),
        rule_case(
            "a NOT NULL nested field added, even with using",
            dbx(),
            |d, o| {
                let mut c = col("address", "struct<city:string,zip:string not null>");
                c.using = Some(s("named_struct('city', address.city, 'zip', '')"));
                d.columns.push(c);
                o.columns.push(ocol("address", "struct<city:string>"));
            },
            vec!["NonNullableColumnAdd"],
        ),
        rule_case(
            "nested NOT NULL where SET NOT NULL is a rewrite",
            Capabilities {
                set_not_null: Strategy::Rewrite,
                ..lake()
            },
            |d, o| {
                d.columns
                    .push(col("address", "struct<city:string not null>"));
                o.columns.push(ocol("address", "struct<city:string>"));
            },
            vec!["NestedNotNullNeedsInPlaceAlter"],
        ),
        rule_case(
            "column mapping turned on on the lake",
            lake(),
            |d, _| {
                d.properties
                    .insert(s("delta.columnMapping.mode"), Some(s("name")));
            },
            vec!["PropertyTransitionNotSupported"],
        ),
        rule_case(
            "column mapping name to id on databricks",
            dbx(),
            |d, o| {
                d.properties
                    .insert(s("delta.columnMapping.mode"), Some(s("id")));
                o.properties
                    .insert(s("delta.columnMapping.mode"), s("name"));
            },
            vec!["PropertyTransitionNotSupported"],
        ),
        rule_case(
            "column mapping turned off",
            dbx(),
            |d, o| {
                d.properties.insert(s("delta.columnMapping.mode"), None);
                o.properties
                    .insert(s("delta.columnMapping.mode"), s("name"));
            },
            vec!["PropertyTransitionNotSupported"],
        ),
        rule_case(
            "a rewrite of a table with a generated column",
            lake(),
            |d, o| {
                let mut c = col("day", "date");
                c.generated = Some(s("cast(ts as date)"));
                d.columns.push(c);
                let mut l = ocol("day", "date");
                l.generated = Some(s("CAST(ts AS date)"));
                o.columns.push(l);
                let n = dcol(d, "note");
                n.name = s("remark");
                n.renamed_from = Some(s("note"));
            },
            vec!["RewriteRefused"],
        ),
        rule_case(
            "a rewrite of a table with a mask, a row filter and an identity column",
            dbx(),
            {
                let identity = identity.clone();
                move |d, o| {
                    d.partitioned_by = Some(vec![s("note")]);
                    lcol(o, "note").mask = Some(Mask {
                        function: s("f"),
                        using_columns: vec![],
                    });
                    lcol(o, "id").identity = Some(identity);
                    o.row_filter = Some(s("main.sec.only_mine"));
                }
            },
            vec!["RewriteRefused"],
        ),
        RuleCase {
            name: "a table whose Delta log cannot be read",
            plan: plan_table(
                &orders().0,
                Some(&ObservedTable::unreadable(
                    tref("orders"),
                    s("the commit file _delta_log/00000000000000000003.json is empty"),
                )),
                &lake(),
            ),
            rules: vec!["TableUnreadable"],
        },
        RuleCase {
            name: "a primary key moved while another table's foreign key references it",
            plan: key_moved_under_a_foreign_key().0,
            rules: vec!["PrimaryKeyReferenced"],
        },
        RuleCase {
            name: "a foreign key the manifest set refuses (its parent is not declared)",
            plan: plan_table(
                &{
                    let mut d = orders().0;
                    d.refusals.push(delta_operator_core::model::SpecRefusal {
                        path: s("spec.constraints[0].foreignKey.references"),
                        message: s("main.sales.customers is not declared in these manifests"),
                        fix: s("declare the referenced table too"),
                    });
                    d
                },
                Some(&orders().1),
                &dbx(),
            ),
            rules: vec!["ForeignKeyInvalid"],
        },
        RuleCase {
            name: "a column name Delta refuses without column mapping, at create",
            plan: plan_table(
                &desired(
                    "orders",
                    vec![col("id", "bigint"), col("unit price", "int")],
                ),
                None,
                &lake(),
            ),
            rules: vec!["NameNeedsColumnMapping"],
        },
        rule_case(
            "an added column whose name needs column mapping, on the lake",
            lake(),
            |d, _| d.columns.push(col("a=b", "int")),
            vec!["NameNeedsColumnMapping"],
        ),
        rule_case(
            "a rewrite of a column-mapped table on the lake",
            lake(),
            |d, o| {
                o.properties
                    .insert(s("delta.columnMapping.mode"), s("name"));
                d.properties
                    .insert(s("delta.columnMapping.mode"), Some(s("name")));
                dcol(d, "amount").data_type =
                    delta_operator_core::model::type_syntax::parse_type("bigint").unwrap();
            },
            vec!["ColumnMappingNotWritable"],
        ),
        rule_case(
            "a column added to a column-mapped table on the lake",
            lake(),
            |d, o| {
                o.properties
                    .insert(s("delta.columnMapping.mode"), s("name"));
                d.columns.push(col("extra", "int"));
            },
            vec!["ColumnMappingNotWritable"],
        ),
        rule_case(
            "a using: that reads a column the table does not have",
            lake(),
            |d, _| {
                let c = dcol(d, "amount");
                c.data_type =
                    delta_operator_core::model::type_syntax::parse_type("string").unwrap();
                c.using = Some(s("CAST(amont AS STRING)"));
                c.using_columns = vec![s("amont")];
            },
            vec!["UsingReadsUnknownColumn"],
        ),
    ]
}

#[test]
fn every_rule_fires_alone_and_rejects_the_whole_table() {
    let mut seen = BTreeSet::new();
    let mut errors = Vec::new();
    for case in rule_cases() {
        let p = &case.plan;
        let got = failures(p);
        if got != case.rules {
            errors.push(format!(
                "{}:\n  got      {got:?}\n  expected {:?}\n  outcome  {:#?}",
                case.name, case.rules, p.outcome
            ));
        }
        if !p.steps().is_empty() {
            errors.push(format!(
                "{}: a rejected table has steps: {:?}",
                case.name,
                steps(p)
            ));
        }
        if let Outcome::Rejected { failures } = &p.outcome {
            for f in failures {
                if f.subject.is_empty() || f.message.is_empty() || f.fix.is_empty() {
                    errors.push(format!(
                        "{}: a failure without subject, message or fix: {f:?}",
                        case.name
                    ));
                }
            }
        }
        seen.extend(got);
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let all: BTreeSet<String> = ALL_RULES.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, all, "every rule must have a case");
}

#[test]
fn rule_failures_name_what_to_do() {
    let (mut d, o) = orders();
    dcol(&mut d, "amount").name = "Amount".into();
    let p = plan_table(&d, Some(&o), &dbx());
    let f = failure(&p, "ColumnSpellingMustMatchCatalog");
    assert_eq!(
        (f.subject.as_str(), f.fix.as_str()),
        ("Amount", "spell it 'amount' in the spec")
    );

    let (mut d, mut o) = orders();
    o.unsupported_features = vec!["deletionVectors".into(), "v2Checkpoint".into()];
    d.comment = Some("x".into());
    let p = plan_table(&d, Some(&o), &lake());
    let f = failure(&p, "UnsupportedTableFeatures");
    assert!(
        f.message.contains("lake") && f.message.contains("deletionVectors, v2Checkpoint"),
        "{}",
        f.message
    );

    let (mut d, o) = orders();
    d.columns.push(not_null(col("status", "string")));
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(failure(&p, "NonNullableColumnAdd").subject, "status");
}

#[test]
fn unsupported_features_only_matter_when_something_would_be_written() {
    let (d, mut o) = orders();
    o.unsupported_features = vec!["deletionVectors".into()];
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(p.action, TableAction::Unchanged);
    assert!(p.is_accepted(), "{:?}", p.outcome);
}

#[test]
fn laws_short_circuit_the_rules() {
    // case drift, plus a NOT NULL add, a forbidden property transition and an
    // unsupported tag: only the law is reported (the rest would be noise)
    let (mut d, o) = orders();
    dcol(&mut d, "amount").name = "AMOUNT".into();
    d.columns.push(not_null(col("status", "string")));
    d.properties
        .insert("delta.columnMapping.mode".into(), Some("name".into()));
    d.tags.insert("pii".into(), Some("no".into()));
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(failures(&p), vec!["ColumnSpellingMustMatchCatalog"]);
    assert!(p.steps().is_empty());
    assert_eq!(
        p.changes.len(),
        3,
        "the changes are still listed: {:?}",
        p.changes
    );

    // two laws at once are both reported, still without the rules
    let (mut d, mut o) = orders();
    dcol(&mut d, "amount").name = "AMOUNT".into();
    d.columns.push(not_null(col("status", "string")));
    o.properties
        .insert(OWNER_PROPERTY.into(), "billing/orders".into());
    let p = plan_table(&d, Some(&o), &dbx());
    let mut got = failures(&p);
    got.sort();
    assert_eq!(
        got,
        vec!["ColumnSpellingMustMatchCatalog", "OwnedByAnotherResource"]
    );
}

#[test]
fn all_failures_of_a_table_are_reported_together_and_no_safe_subset_runs() {
    let (mut d, o) = orders();
    d.comment = Some("a perfectly safe change".into());
    d.columns.push(col("safe", "string"));
    d.columns.push(not_null(col("status", "string")));
    d.properties
        .insert("delta.columnMapping.mode".into(), Some("name".into()));
    d.tags.insert("pii".into(), Some("no".into()));
    let p = plan_table(&d, Some(&o), &lake());
    let mut got = failures(&p);
    got.sort();
    assert_eq!(
        got,
        vec![
            "NonNullableColumnAdd",
            "NotSupportedByBackend",
            "PropertyTransitionNotSupported"
        ]
    );
    assert!(
        p.steps().is_empty(),
        "never a partial safe subset: {:?}",
        steps(&p)
    );
    assert_eq!(p.action, TableAction::Update);
    assert!(
        p.changes
            .iter()
            .any(|c| matches!(c, Change::SetTableComment { .. })),
        "the safe changes are still shown"
    );

    let plan = plan::finish(&lake(), vec![p], vec![]);
    // a refused table is counted as refused, not as a change that will happen
    assert_eq!(
        (
            plan.summary.steps,
            plan.summary.rejected,
            plan.summary.change
        ),
        (0, 1, 0)
    );
    assert!(plan.has_changes());
    assert_eq!(plan.risk(), None);
}

#[test]
fn what_satisfies_a_rule_is_accepted() {
    // NonNullableColumnAdd: `using:` fills existing rows. On the lake the new
    // column is part of the projection of a staged rewrite, which also sets
    // NOT NULL; on Databricks it is added nullable, backfilled by one UPDATE
    // and set NOT NULL behind its check (the table written once, not twice)
    let (mut d, o) = orders();
    let mut c = not_null(col("status", "string"));
    c.using = Some("'open'".into());
    d.columns.push(c);
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        steps(&p),
        vec![
            "1. STAGE rewritten data [rewrite]",
            "2. REPLACE TABLE (from staging) [rewrite]",
            "3. DROP staging [meta]",
        ]
    );
    let Action::Rewrite { rewrite, .. } = &p.steps()[1].action else {
        unreachable!()
    };
    let status = rewrite
        .columns
        .iter()
        .find(|c| c.field.name == "status")
        .unwrap();
    assert_eq!(
        status.source,
        Source::Using {
            expression: "'open'".into()
        }
    );
    assert!(!status.field.nullable, "the rewrite sets NOT NULL");
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        steps(&p),
        vec![
            "1. ADD COLUMN status [meta]",
            "2. BACKFILL status (UPDATE) [rewrite]",
            "3. SET NOT NULL status [meta]",
        ]
    );
    assert_eq!(
        p.steps()[1].action,
        Action::Backfill {
            column: "status".into(),
            expression: "'open'".into()
        }
    );
    assert_eq!(p.steps()[1].est_bytes, Some(SIZE), "the size it writes");
    assert!(
        p.steps()[1]
            .notes
            .iter()
            .any(|n| n.contains("once (about 384 GiB)") && n.contains("twice (about 767 GiB)")),
        "both costs: {:?}",
        p.steps()[1].notes
    );
    assert_eq!(p.steps()[2].est_bytes, Some(SIZE), "the check scans it");

    // ConversionNeedsUsing: struct → array with `using:`
    let (mut d, mut o) = orders();
    let mut c = col("address", "array<string>");
    c.using = Some("array(address.city)".into());
    d.columns.push(c);
    o.columns.push(ocol("address", "struct<city:string>"));
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        steps(&p),
        vec![
            "1. STAGE rewritten data [rewrite]",
            "2. REPLACE TABLE (from itself, rows checked) [rewrite]",
            "3. SET NOT NULL id [meta]",
            "4. DROP staging [meta]"
        ]
    );

    // NestedNotNullNeedsInPlaceAlter: databricks alters the nested field in place
    let (mut d, mut o) = orders();
    d.columns
        .push(col("address", "struct<city:string not null>"));
    o.columns.push(ocol("address", "struct<city:string>"));
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(steps(&p), vec!["1. SET NOT NULL address.city [meta]"]);
    assert_eq!(
        p.steps()[0].est_bytes,
        Some(SIZE),
        "SET NOT NULL scans the table"
    );

    // PropertyTransitionNotSupported: none → name is allowed on databricks
    let (mut d, o) = orders();
    d.properties
        .insert("delta.columnMapping.mode".into(), Some("name".into()));
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(p.is_accepted(), "{:?}", p.outcome);

    // ColumnKindCannotChange: an equivalent generation expression is no change
    let (mut d, mut o) = orders();
    let mut c = col("day", "date");
    c.generated = Some("cast(ts  as date)".into());
    d.columns.push(c);
    let mut l = ocol("day", "date");
    l.generated = Some("CAST(ts AS date)".into());
    o.columns.push(l);
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(p.action, TableAction::Unchanged);
    assert!(p.is_accepted());

    // RewriteRefused: the same table without a rewrite is fine
    let (mut d, mut o) = orders();
    lcol(&mut o, "note").mask = Some(Mask {
        function: "f".into(),
        using_columns: vec![],
    });
    d.comment = Some("x".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(p.is_accepted(), "{:?}", p.outcome);
}

/// Where the engine adds or drops one CHECK per statement (Databricks, Spark
/// Connect), each is a commit carrying every constraint so far: a plan holds at
/// most `MAX_CHECK_COMMITS` of them, and past it the table is refused naming
/// the field and the fix. The lake commits them at once: no limit there.
#[test]
fn check_commits_are_capped_per_plan_where_each_is_its_own_commit() {
    let max = plan::rules::MAX_CHECK_COMMITS;
    let with_checks = |n: usize| {
        let (mut d, o) = orders();
        for i in 0..n {
            d.checks.push(Check {
                name: format!("c{i}"),
                expression: format!("amount > {i}"),
            });
        }
        (d, o)
    };
    for caps in [dbx(), Capabilities::spark_connect()] {
        let (d, o) = with_checks(max);
        let p = plan_table(&d, Some(&o), &caps);
        assert!(p.is_accepted(), "{:?}", p.outcome);
        let adds = p
            .steps()
            .iter()
            .filter(|s| matches!(s.action, Action::AddCheck { .. }))
            .count();
        assert_eq!(adds, max, "one statement each");
        let (d, o) = with_checks(max + 1);
        for p in [plan_table(&d, Some(&o), &caps), plan_table(&d, None, &caps)] {
            let Outcome::Rejected { failures } = &p.outcome else {
                panic!("refused past the limit: {:?}", p.outcome);
            };
            assert_eq!(failures.len(), 1, "{failures:?}");
            let f = &failures[0];
            assert_eq!(f.rule, "NotSupportedByBackend");
            assert_eq!(f.subject, "spec.constraints");
            assert!(
                f.message
                    .contains(&format!("adds {} and drops 0 CHECK constraints", max + 1))
                    && f.message.contains(&format!("the limit is {max} per plan")),
                "{}",
                f.message
            );
            assert!(
                f.fix.contains("one CHECK (a AND b)")
                    && f.fix.contains(&format!("at most {max} at a time")),
                "{}",
                f.fix
            );
        }
        // drops count too: every live CHECK the spec no longer declares
        let (d, mut o) = orders();
        let mut owned = Vec::new();
        for i in 0..=max {
            o.checks.push(Check {
                name: format!("old{i}"),
                expression: "id > 0".into(),
            });
            owned.push(format!("check:old{i}"));
        }
        let owned: Vec<&str> = owned.iter().map(String::as_str).collect();
        owning(&mut o, &owned);
        let p = plan_table(&d, Some(&o), &caps);
        assert!(
            matches!(&p.outcome, Outcome::Rejected { failures } if failures[0].message.contains(&format!("adds 0 and drops {}", max + 1))),
            "{:?}",
            p.outcome
        );
    }
    // the lake: one commit for all of them
    let (d, o) = with_checks(max + 1);
    let p = plan_table(&d, Some(&o), &lake());
    assert!(p.is_accepted(), "{:?}", p.outcome);
    assert!(
        p.steps()
            .iter()
            .any(|s| matches!(&s.action, Action::AddChecks { checks } if checks.len() == max + 1)),
        "{:?}",
        p.steps()
    );
}
