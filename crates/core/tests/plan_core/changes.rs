//! Every change kind: the diff's change, and the steps that carry it out.

use super::*;

struct ChangeCase {
    name: &'static str,
    plan: TablePlan,
    changes: Vec<Change>,
    steps: Vec<&'static str>,
}

/// The record's change from `from` (none: no record yet) to `to`.
fn record(from: Option<&[&str]>, to: &[&str]) -> Change {
    Change::SetProperty {
        key: CONSTRAINTS_PROPERTY.to_string(),
        from: from.map(|f| serde_json::to_string(&f).unwrap()),
        to: serde_json::to_string(&to).unwrap(),
    }
}

/// Plans `orders` after `edit` has changed the declared and/or live side.
fn orders_case(
    name: &'static str,
    caps: Capabilities,
    edit: impl FnOnce(&mut DesiredTable, &mut ObservedTable),
    changes: Vec<Change>,
    steps: Vec<&'static str>,
) -> ChangeCase {
    let (mut d, mut o) = orders();
    edit(&mut d, &mut o);
    ChangeCase {
        name,
        plan: plan_table(&d, Some(&o), &caps),
        changes,
        steps,
    }
}

fn change_cases() -> Vec<ChangeCase> {
    let (d0, o0) = orders();
    let s = |v: &str| v.to_string();
    let customers = tref("customers");
    let fk = ForeignKey {
        name: None,
        columns: vec![s("id")],
        references: customers.clone(),
        referenced_columns: vec![s("id")],
    };
    let positive = Check {
        name: s("positive"),
        expression: s("amount > 0"),
    };
    let note_live = ocol("note", "string");
    let mask = Mask {
        function: s("main.sec.redact"),
        using_columns: vec![],
    };
    vec![
        ChangeCase {
            name: "create",
            plan: plan_table(&d0, None, &dbx()),
            changes: vec![Change::CreateTable],
            steps: vec!["1. CREATE TABLE [meta]"],
        },
        orders_case(
            "claim an unmarked table",
            dbx(),
            |_, o| {
                o.properties.remove(OWNER_PROPERTY);
            },
            vec![Change::Claim {
                marker: marker("orders"),
                constraints: None,
                scope: Scope::Full,
            }],
            vec!["1. CLAIM ownership [meta]"],
        ),
        orders_case(
            "a held table's scope narrowed",
            dbx(),
            |d, _| d.scope = Scope::Annotations,
            vec![Change::SetScope {
                from: Scope::Full,
                to: Scope::Annotations,
            }],
            vec!["1. SET TBLPROPERTIES (delta-operator.io/scope) [meta]"],
        ),
        orders_case(
            "table comment",
            dbx(),
            |d, _| d.comment = Some(s("All orders")),
            vec![Change::SetTableComment {
                from: None,
                to: s("All orders"),
            }],
            vec!["1. COMMENT ON TABLE [meta]"],
        ),
        orders_case(
            "set a property",
            lake(),
            |d, _| {
                d.properties.insert(s("delta.appendOnly"), Some(s("true")));
            },
            vec![Change::SetProperty {
                key: s("delta.appendOnly"),
                from: None,
                to: s("true"),
            }],
            vec!["1. SET TBLPROPERTIES (delta.appendOnly) [meta]"],
        ),
        orders_case(
            "null removes a property",
            lake(),
            |d, o| {
                d.properties.insert(s("delta.appendOnly"), None);
                o.properties.insert(s("delta.appendOnly"), s("true"));
            },
            vec![Change::UnsetProperty {
                key: s("delta.appendOnly"),
                from: s("true"),
            }],
            vec!["1. UNSET TBLPROPERTIES (delta.appendOnly) [meta]"],
        ),
        orders_case(
            "set a table tag",
            dbx(),
            |d, _| {
                d.tags.insert(s("pii"), Some(s("no")));
            },
            vec![Change::SetTableTag {
                key: s("pii"),
                from: None,
                to: s("no"),
            }],
            vec!["1. SET TAGS (pii) [meta]"],
        ),
        orders_case(
            "null removes a table tag",
            dbx(),
            |d, o| {
                d.tags.insert(s("pii"), None);
                o.tags.insert(s("pii"), s("no"));
            },
            vec![Change::UnsetTableTag {
                key: s("pii"),
                from: s("no"),
            }],
            vec!["1. UNSET TAGS (pii) [meta]"],
        ),
        orders_case(
            "add a nullable column",
            lake(),
            |d, _| d.columns.push(col("status", "string")),
            vec![Change::AddColumn {
                path: vec![s("status")].into(),
                field: StructField {
                    name: s("status"),
                    data_type: DataType::String,
                    nullable: true,
                    comment: None,
                },
            }],
            vec!["1. ADD COLUMN status [meta]"],
        ),
        orders_case(
            "add a nested field",
            dbx(),
            |d, o| {
                d.columns
                    .push(col("address", "struct<city:string,zip:string>"));
                o.columns.push(ocol("address", "struct<city:string>"));
            },
            vec![Change::AddColumn {
                path: vec![s("address"), s("zip")].into(),
                field: StructField {
                    name: s("zip"),
                    data_type: DataType::String,
                    nullable: true,
                    comment: None,
                },
            }],
            vec!["1. ADD COLUMN address.zip [meta]"],
        ),
        orders_case(
            "drop a column on databricks: column mapping first, destructive",
            dbx(),
            |d, _| d.columns.retain(|c| c.name != "note"),
            vec![Change::DropColumn {
                column: note_live.clone(),
            }],
            vec![
                "1. enable columnMapping [feature]",
                "2. DROP COLUMN note [destructive]",
            ],
        ),
        orders_case(
            "drop a struct field on databricks: in place under column mapping (issue 28: it was a whole-table rewrite)",
            dbx(),
            |d, o| {
                d.columns.push(col("address", "struct<city:string>"));
                o.columns
                    .push(ocol("address", "struct<city:string,legacy_code:string>"));
            },
            vec![Change::DropField {
                path: vec![s("address"), s("legacy_code")].into(),
                field: delta_operator_core::model::StructField {
                    name: s("legacy_code"),
                    data_type: DataType::String,
                    nullable: true,
                    comment: None,
                },
            }],
            vec![
                "1. enable columnMapping [feature]",
                "2. DROP COLUMN address.legacy_code [destructive]",
            ],
        ),
        orders_case(
            "drop a struct field on the lake: a destructive write-once rewrite",
            lake(),
            |d, o| {
                d.columns.push(col("address", "struct<city:string>"));
                o.columns
                    .push(ocol("address", "struct<city:string,legacy_code:string>"));
            },
            vec![Change::DropField {
                path: vec![s("address"), s("legacy_code")].into(),
                field: delta_operator_core::model::StructField {
                    name: s("legacy_code"),
                    data_type: DataType::String,
                    nullable: true,
                    comment: None,
                },
            }],
            vec!["1. REPLACE TABLE (from itself) [destructive]"],
        ),
        orders_case(
            "drop a column on the lake: a destructive write-once rewrite",
            lake(),
            |d, _| d.columns.retain(|c| c.name != "note"),
            vec![Change::DropColumn {
                column: note_live.clone(),
            }],
            vec!["1. REPLACE TABLE (from itself) [destructive]"],
        ),
        orders_case(
            "rename on databricks: column mapping, then RENAME",
            dbx(),
            |d, _| {
                let c = dcol(d, "note");
                c.name = s("remark");
                c.renamed_from = Some(s("note"));
            },
            vec![Change::RenameColumn {
                from: s("note"),
                to: s("remark"),
            }],
            vec![
                "1. enable columnMapping [feature]",
                "2. RENAME COLUMN note TO remark [meta]",
            ],
        ),
        orders_case(
            "rename on the lake: a write-once rewrite",
            lake(),
            |d, _| {
                let c = dcol(d, "note");
                c.name = s("remark");
                c.renamed_from = Some(s("note"));
            },
            vec![Change::RenameColumn {
                from: s("note"),
                to: s("remark"),
            }],
            vec!["1. REPLACE TABLE (from itself) [rewrite]"],
        ),
        orders_case(
            "int to bigint on databricks: type widening, then ALTER",
            dbx(),
            |d, _| dcol(d, "amount").data_type = DataType::Long,
            vec![Change::ChangeType {
                path: vec![s("amount")].into(),
                from: DataType::Int,
                to: DataType::Long,
            }],
            vec![
                "1. enable typeWidening [feature]",
                "2. ALTER COLUMN amount TYPE bigint [meta]",
            ],
        ),
        orders_case(
            "int to bigint on the lake: lossless, written once",
            lake(),
            |d, _| dcol(d, "amount").data_type = DataType::Long,
            vec![Change::ChangeType {
                path: vec![s("amount")].into(),
                from: DataType::Int,
                to: DataType::Long,
            }],
            vec!["1. REPLACE TABLE (from itself) [rewrite]"],
        ),
        orders_case(
            "bigint to int on the lake: staged rewrite",
            lake(),
            |d, o| {
                dcol(d, "amount").data_type = DataType::Int;
                lcol(o, "amount").data_type = DataType::Long;
            },
            vec![Change::ChangeType {
                path: vec![s("amount")].into(),
                from: DataType::Long,
                to: DataType::Int,
            }],
            vec![
                "1. STAGE rewritten data [rewrite]",
                "2. REPLACE TABLE (from staging) [rewrite]",
                "3. DROP staging [meta]",
            ],
        ),
        orders_case(
            "set NOT NULL on databricks",
            dbx(),
            |d, _| dcol(d, "amount").nullable = false,
            vec![Change::SetNullability {
                path: vec![s("amount")].into(),
                nullable: false,
            }],
            vec!["1. SET NOT NULL amount [meta]"],
        ),
        orders_case(
            "set NOT NULL on the lake: counted at the version read, one metadata commit (issue 28: it was a rewrite)",
            lake(),
            |d, _| dcol(d, "amount").nullable = false,
            vec![Change::SetNullability {
                path: vec![s("amount")].into(),
                nullable: false,
            }],
            vec!["1. SET NOT NULL amount [meta]"],
        ),
        orders_case(
            "drop NOT NULL is metadata on both",
            lake(),
            |d, _| dcol(d, "id").nullable = true,
            vec![Change::SetNullability {
                path: vec![s("id")].into(),
                nullable: true,
            }],
            vec!["1. DROP NOT NULL id [meta]"],
        ),
        orders_case(
            "column comment",
            lake(),
            |d, _| dcol(d, "note").comment = Some(s("free text")),
            vec![Change::SetColumnComment {
                path: vec![s("note")].into(),
                from: None,
                to: s("free text"),
            }],
            vec!["1. COMMENT ON COLUMN note [meta]"],
        ),
        orders_case(
            "column tag",
            dbx(),
            |d, _| {
                dcol(d, "note").tags.insert(s("pii"), Some(s("yes")));
            },
            vec![Change::SetColumnTag {
                column: s("note"),
                key: s("pii"),
                from: None,
                to: s("yes"),
            }],
            vec!["1. SET TAGS on note [meta]"],
        ),
        orders_case(
            "null removes a column tag",
            dbx(),
            |d, o| {
                dcol(d, "note").tags.insert(s("pii"), None);
                lcol(o, "note").tags.insert(s("pii"), s("yes"));
            },
            vec![Change::UnsetColumnTag {
                column: s("note"),
                key: s("pii"),
                from: s("yes"),
            }],
            vec!["1. UNSET TAGS on note [meta]"],
        ),
        orders_case(
            "column mask",
            dbx(),
            {
                let mask = mask.clone();
                move |d, _| dcol(d, "note").mask = Some(mask)
            },
            vec![Change::SetMask {
                column: s("note"),
                from: None,
                to: mask.clone(),
            }],
            vec!["1. SET MASK on note [meta]"],
        ),
        orders_case(
            "column default",
            dbx(),
            |d, _| dcol(d, "note").default = Some(s("'n/a'")),
            vec![Change::SetDefault {
                column: s("note"),
                from: None,
                to: s("'n/a'"),
            }],
            // the table feature a default needs first, as for type widening
            vec![
                "1. enable allowColumnDefaults [feature]",
                "2. SET DEFAULT on note [meta]",
            ],
        ),
        orders_case(
            "column default removed (`default: null`)",
            dbx(),
            |d, o| {
                lcol(o, "note").default = Some(s("'n/a'"));
                dcol(d, "note").drops_default = true;
            },
            vec![Change::DropDefault {
                column: s("note"),
                from: s("'n/a'"),
            }],
            // dropping needs no table feature
            vec!["1. DROP DEFAULT on note [meta]"],
        ),
        orders_case(
            "add a CHECK",
            lake(),
            {
                let positive = positive.clone();
                move |d, _| d.checks.push(positive)
            },
            vec![
                Change::AddCheck {
                    check: positive.clone(),
                },
                record(None, &["check:positive"]),
            ],
            vec![
                "1. ADD CONSTRAINT positive CHECK [meta]",
                "2. SET TBLPROPERTIES (delta-operator.io/constraints) [meta]",
            ],
        ),
        orders_case(
            "an undeclared CHECK the operator made is dropped",
            lake(),
            {
                let positive = positive.clone();
                move |_, o| {
                    o.checks.push(positive);
                    owning(o, &["check:positive"]);
                }
            },
            vec![
                Change::DropCheck {
                    check: positive.clone(),
                },
                record(Some(&["check:positive"]), &[]),
            ],
            vec![
                "1. DROP CONSTRAINT positive [meta]",
                "2. SET TBLPROPERTIES (delta-operator.io/constraints) [meta]",
            ],
        ),
        orders_case(
            "an undeclared CHECK another tool made is left alone",
            lake(),
            {
                let positive = positive.clone();
                move |_, o| o.checks.push(positive)
            },
            vec![],
            vec![],
        ),
        orders_case(
            "a changed CHECK is dropped, then added (drop first)",
            lake(),
            {
                let positive = positive.clone();
                move |d, o| {
                    d.checks.push(positive);
                    o.checks.push(Check {
                        name: s("positive"),
                        expression: s("amount >= 0"),
                    });
                }
            },
            vec![
                Change::DropCheck {
                    check: Check {
                        name: s("positive"),
                        expression: s("amount >= 0"),
                    },
                },
                Change::AddCheck {
                    check: positive.clone(),
                },
                record(None, &["check:positive"]),
            ],
            vec![
                "1. DROP CONSTRAINT positive [meta]",
                "2. ADD CONSTRAINT positive CHECK [meta]",
                "3. SET TBLPROPERTIES (delta-operator.io/constraints) [meta]",
            ],
        ),
        orders_case(
            "primary key",
            dbx(),
            |d, _| {
                d.primary_key = Some(PrimaryKey {
                    name: Some(s("orders_pk")),
                    columns: vec![s("id")],
                })
            },
            vec![Change::SetPrimaryKey {
                from: None,
                to: PrimaryKey {
                    name: Some(s("orders_pk")),
                    columns: vec![s("id")],
                },
            }],
            vec!["1. ADD PRIMARY KEY [meta]"],
        ),
        orders_case(
            "add a foreign key",
            dbx(),
            {
                let fk = fk.clone();
                move |d, _| d.foreign_keys.push(fk)
            },
            vec![
                Change::AddForeignKey { key: fk.clone() },
                record(None, &["fk:id->main.sales.customers(id)"]),
            ],
            vec![
                "1. ADD FOREIGN KEY → main.sales.customers [meta]",
                "2. SET TBLPROPERTIES (delta-operator.io/constraints) [meta]",
            ],
        ),
        orders_case(
            "an undeclared foreign key the operator made is dropped",
            dbx(),
            {
                let fk = fk.clone();
                move |_, o| {
                    o.foreign_keys.push(fk);
                    owning(o, &["fk:id->main.sales.customers(id)"]);
                }
            },
            vec![
                Change::DropForeignKey { key: fk.clone() },
                record(Some(&["fk:id->main.sales.customers(id)"]), &[]),
            ],
            vec![
                "1. DROP FOREIGN KEY → main.sales.customers [meta]",
                "2. SET TBLPROPERTIES (delta-operator.io/constraints) [meta]",
            ],
        ),
        orders_case(
            "an undeclared foreign key another tool made is left alone",
            dbx(),
            {
                let fk = fk.clone();
                move |_, o| o.foreign_keys.push(fk)
            },
            vec![],
            vec![],
        ),
        orders_case(
            "partitioning is a rewrite on databricks too",
            dbx(),
            |d, _| d.partitioned_by = Some(vec![s("note")]),
            vec![Change::SetPartitioning {
                from: vec![],
                to: vec![s("note")],
            }],
            // REPLACE TABLE … AS SELECT loses NOT NULL: put back (the
            // properties ride in the replace)
            vec![
                "1. REPLACE TABLE (from itself) [rewrite]",
                "2. SET NOT NULL id [meta]",
            ],
        ),
        orders_case(
            "clustering",
            dbx(),
            |d, _| d.cluster_by = Some(vec![s("id")]),
            vec![Change::SetClustering {
                from: None,
                to: vec![s("id")],
            }],
            vec!["1. CLUSTER BY (id) [meta]"],
        ),
        orders_case(
            "grant",
            dbx(),
            |d, _| {
                d.grants.push(Grant {
                    principal: s("analysts"),
                    privileges: vec![Privilege::new("select")],
                })
            },
            vec![Change::Grant {
                principal: s("analysts"),
                privileges: vec![Privilege::new("SELECT")],
            }],
            vec!["1. GRANT SELECT TO analysts [meta]"],
        ),
        orders_case(
            "a named principal gets exactly what is listed: revoke the rest",
            dbx(),
            |d, o| {
                d.grants.push(Grant {
                    principal: s("analysts"),
                    privileges: vec![Privilege::new("SELECT")],
                });
                o.grants.push(Grant {
                    principal: s("Analysts"),
                    privileges: vec![Privilege::new("SELECT"), Privilege::new("MODIFY")],
                });
            },
            vec![Change::Revoke {
                principal: s("analysts"),
                privileges: vec![Privilege::new("MODIFY")],
            }],
            vec!["1. REVOKE MODIFY FROM analysts [meta]"],
        ),
        orders_case(
            "a privilege read back as Unity Catalog lists it (APPLY_TAG) is the one declared (APPLY TAG)",
            dbx(),
            |d, o| {
                d.grants.push(Grant {
                    principal: s("analysts"),
                    privileges: vec![
                        Privilege::new("APPLY TAG"),
                        Privilege::new("all privileges"),
                    ],
                });
                o.grants.push(Grant {
                    principal: s("analysts"),
                    privileges: vec![
                        Privilege::new("APPLY_TAG"),
                        Privilege::new("ALL_PRIVILEGES"),
                    ],
                });
            },
            vec![],
            vec![],
        ),
        orders_case(
            "owner",
            dbx(),
            |d, o| {
                d.owner = Some(s("data-eng"));
                o.owner = Some(s("alice"));
            },
            vec![Change::SetOwner {
                from: Some(s("alice")),
                to: s("data-eng"),
            }],
            vec!["1. SET OWNER data-eng [meta]"],
        ),
        ChangeCase {
            name: "strict orphan",
            plan: plan_orphan(&o0, true, &dbx()),
            changes: vec![Change::DropTable {
                reason: DropReason::Orphan,
                columns: 3,
            }],
            steps: vec!["1. DROP TABLE [destructive]"],
        },
        ChangeCase {
            name: "deleted resource with deletionPolicy Delete",
            plan: plan_delete(&o0, &lake()),
            changes: vec![Change::DropTable {
                reason: DropReason::Deleted,
                columns: 3,
            }],
            steps: vec!["1. DROP TABLE [destructive]"],
        },
        orders_case(
            "what an interrupted run left",
            lake(),
            |_, o| o.leftovers = vec![leftover()],
            vec![Change::RemoveLeftovers {
                leftovers: vec![leftover()],
            }],
            vec!["1. REMOVE leftovers of interrupted runs (1) [meta]"],
        ),
    ]
}

fn leftover() -> delta_operator_core::model::Leftover {
    delta_operator_core::model::Leftover {
        kind: delta_operator_core::model::LeftoverKind::StagingCopy,
        run: "mabc123-0011aabb".into(),
        location: "/lake/.staging/main/sales/orders/mabc123-0011aabb".into(),
        files: 3,
        bytes: 4096,
    }
}

#[test]
fn every_change_kind_is_diffed_and_planned() {
    let mut seen = BTreeSet::new();
    let mut errors = Vec::new();
    for case in change_cases() {
        let p = &case.plan;
        if !p.is_accepted() {
            errors.push(format!("{}: not accepted: {:#?}", case.name, p.outcome));
            continue;
        }
        if p.changes != case.changes {
            errors.push(format!(
                "{}: changes\n  got      {:?}\n  expected {:?}",
                case.name, p.changes, case.changes
            ));
        }
        if steps(p) != case.steps {
            errors.push(format!(
                "{}: steps\n  got      {:?}\n  expected {:?}",
                case.name,
                steps(p),
                case.steps
            ));
        }
        // every change is served by some step (prerequisites serve none)
        for (i, c) in p.changes.iter().enumerate() {
            if !p.steps().iter().any(|s| s.serves.contains(&i)) {
                errors.push(format!(
                    "{}: change {i} ({}) is served by no step",
                    case.name,
                    kind(c)
                ));
            }
        }
        seen.extend(p.changes.iter().map(kind));
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let all: BTreeSet<&str> = ALL_CHANGE_KINDS.into_iter().collect();
    assert_eq!(seen, all, "every Change kind must have a case");
}
