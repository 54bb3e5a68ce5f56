//! `holds`: false before a step, true after.

use super::*;
use delta_operator_core::model::property;

struct HoldsCase {
    name: &'static str,
    caps: Capabilities,
    desired: DesiredTable,
    before: ObservedTable,
    after: ObservedTable,
    /// Titles of the steps the plan must contain (each is checked).
    expect: Vec<&'static str>,
}

fn holds_cases() -> Vec<HoldsCase> {
    let s = |v: &str| v.to_string();
    let mut out = Vec::new();

    // rename + drop + widen on databricks: prerequisites and column steps
    let (mut d, before) = orders();
    let c = dcol(&mut d, "note");
    c.name = s("remark");
    c.renamed_from = Some(s("note"));
    dcol(&mut d, "amount").data_type = DataType::Long;
    d.columns.retain(|c| c.name != "id");
    let mut after = before.clone();
    after.columns.retain(|c| c.name != "id");
    lcol(&mut after, "note").name = s("remark");
    lcol(&mut after, "amount").data_type = DataType::Long;
    after
        .properties
        .insert(s("delta.columnMapping.mode"), s("name"));
    after
        .properties
        .insert(s("delta.enableTypeWidening"), s("true"));
    out.push(HoldsCase {
        name: "databricks column changes",
        caps: dbx(),
        desired: d,
        before,
        after,
        expect: vec![
            "enable columnMapping",
            "enable typeWidening",
            "RENAME COLUMN note TO remark",
            "ALTER COLUMN amount TYPE bigint",
            "DROP COLUMN id",
        ],
    });

    // metadata of every kind
    let (mut d, mut before) = orders();
    before.properties.remove(OWNER_PROPERTY);
    before.properties.insert(s("delta.appendOnly"), s("true"));
    before.tags.insert(s("old"), s("1"));
    before.checks.push(Check {
        name: s("stale"),
        expression: s("id > 0"),
    });
    before.grants.push(Grant {
        principal: s("analysts"),
        privileges: vec![Privilege::new("SELECT"), Privilege::new("MODIFY")],
    });
    before.foreign_keys.push(fk_to("gone"));
    owning(
        &mut before,
        &["check:stale", "fk:parent_id->main.sales.gone(id)"],
    );
    lcol(&mut before, "note").tags.insert(s("old"), s("1"));
    d.comment = Some(s("All orders"));
    d.properties.insert(s("delta.appendOnly"), None);
    d.properties
        .insert(s("delta.logRetentionDuration"), Some(s("interval 30 days")));
    d.tags.insert(s("old"), None);
    d.tags.insert(s("domain"), Some(s("sales")));
    d.columns.push(col("status", "string"));
    d.columns.push(col("address", "struct<city:string>"));
    before.columns.push(ocol("address", "struct<city:string>"));
    if let DataType::Struct { fields } = &mut dcol(&mut d, "address").data_type {
        fields.push(StructField {
            name: s("zip"),
            data_type: DataType::String,
            nullable: true,
            comment: None,
        });
    }
    dcol(&mut d, "amount").nullable = false;
    dcol(&mut d, "id").nullable = true;
    let note = dcol(&mut d, "note");
    note.comment = Some(s("free text"));
    note.tags.insert(s("old"), None);
    note.tags.insert(s("pii"), Some(s("yes")));
    note.mask = Some(Mask {
        function: s("main.sec.redact"),
        using_columns: vec![],
    });
    note.default = Some(s("'n/a'"));
    d.checks.push(Check {
        name: s("positive"),
        expression: s("amount > 0"),
    });
    d.primary_key = Some(PrimaryKey {
        name: None,
        columns: vec![s("id")],
    });
    d.foreign_keys.push(ForeignKey {
        name: None,
        columns: vec![s("id")],
        references: tref("customers"),
        referenced_columns: vec![s("id")],
    });
    d.cluster_by = Some(vec![s("id")]);
    d.grants.push(Grant {
        principal: s("analysts"),
        privileges: vec![Privilege::new("SELECT")],
    });
    d.owner = Some(s("data-eng"));
    let mut after = before.clone();
    after
        .properties
        .insert(OWNER_PROPERTY.into(), marker("orders"));
    after.properties.remove("delta.appendOnly");
    after
        .properties
        .insert(s("delta.logRetentionDuration"), s("interval 30 days"));
    after
        .properties
        .insert(CONSTRAINTS_PROPERTY.into(), d.constraints_record().unwrap());
    // the default needs its table feature, a step of its own
    after.properties.insert(
        property::FEATURE_ALLOW_COLUMN_DEFAULTS.into(),
        property::FEATURE_SUPPORTED.into(),
    );
    after.comment = Some(s("All orders"));
    after.tags = BTreeMap::from([(s("domain"), s("sales"))]);
    after.columns.push(ocol("status", "string"));
    lcol(&mut after, "address").data_type = ty("struct<city:string,zip:string>");
    lcol(&mut after, "amount").nullable = false;
    lcol(&mut after, "id").nullable = true;
    let n = lcol(&mut after, "note");
    n.comment = Some(s("free text"));
    n.tags = BTreeMap::from([(s("pii"), s("yes"))]);
    n.mask = Some(Mask {
        function: s("main.sec.redact"),
        using_columns: vec![],
    });
    n.default = Some(s("'n/a'"));
    after.checks = vec![Check {
        name: s("positive"),
        expression: s("amount > 0"),
    }];
    after.primary_key = d.primary_key.clone();
    after.foreign_keys = d.foreign_keys.clone();
    after.cluster_by = Some(vec![s("id")]);
    after.grants = vec![Grant {
        principal: s("analysts"),
        privileges: vec![Privilege::new("SELECT")],
    }];
    after.owner = Some(s("data-eng"));
    out.push(HoldsCase {
        name: "databricks metadata",
        caps: dbx(),
        desired: d,
        before,
        after,
        expect: vec![
            "enable allowColumnDefaults",
            "CLAIM ownership",
            "COMMENT ON TABLE",
            "SET TBLPROPERTIES (delta.logRetentionDuration)",
            "UNSET TBLPROPERTIES (delta.appendOnly)",
            "SET TAGS (domain)",
            "UNSET TAGS (old)",
            "ADD COLUMN status",
            "ADD COLUMN address.zip",
            "SET NOT NULL amount",
            "DROP NOT NULL id",
            "COMMENT ON COLUMN note",
            "SET TAGS on note",
            "UNSET TAGS on note",
            "SET MASK on note",
            "SET DEFAULT on note",
            "DROP CONSTRAINT stale",
            "ADD CONSTRAINT positive CHECK",
            "ADD PRIMARY KEY",
            "ADD FOREIGN KEY → main.sales.customers",
            "DROP FOREIGN KEY → main.sales.gone",
            "CLUSTER BY (id)",
            "REVOKE MODIFY FROM analysts",
            "SET OWNER data-eng",
        ],
    });

    // a grant that adds
    let (mut d, before) = orders();
    d.grants.push(Grant {
        principal: s("analysts"),
        privileges: vec![Privilege::new("SELECT")],
    });
    let mut after = before.clone();
    after.grants.push(Grant {
        principal: s("ANALYSTS"),
        privileges: vec![Privilege::new("select")],
    });
    out.push(HoldsCase {
        name: "grant",
        caps: dbx(),
        desired: d,
        before,
        after,
        expect: vec!["GRANT SELECT TO analysts"],
    });

    // lake rewrites: write-once (rename, drop) and staged (widen)
    let (mut d, before) = orders();
    let c = dcol(&mut d, "note");
    c.name = s("remark");
    c.renamed_from = Some(s("note"));
    let mut after = before.clone();
    lcol(&mut after, "note").name = s("remark");
    out.push(HoldsCase {
        name: "lake rename",
        caps: lake(),
        desired: d,
        before,
        after,
        expect: vec!["REPLACE TABLE (from itself)"],
    });

    let (mut d, mut before) = orders();
    lcol(&mut before, "amount").data_type = DataType::Long;
    d.partitioned_by = Some(vec![s("note")]);
    let mut after = before.clone();
    lcol(&mut after, "amount").data_type = DataType::Int;
    after.partitioned_by = vec![s("note")];
    out.push(HoldsCase {
        name: "lake narrow and partition",
        caps: lake(),
        desired: d,
        before,
        after,
        expect: vec!["STAGE rewritten data", "REPLACE TABLE (from staging)"],
    });
    out
}

#[test]
fn holds_is_false_before_and_true_after_every_step() {
    let mut errors = Vec::new();
    for case in holds_cases() {
        let p = plan_table(&case.desired, Some(&case.before), &case.caps);
        assert!(p.is_accepted(), "{}: {:#?}", case.name, p.outcome);
        let titles: Vec<String> = p.steps().iter().map(|s| s.action.title()).collect();
        for e in &case.expect {
            if !titles.iter().any(|t| t == e) {
                errors.push(format!("{}: no step {e:?} in {titles:?}", case.name));
            }
        }
        for s in p.steps() {
            if matches!(
                s.action,
                Action::Rewrite {
                    phase: RewritePhase::DropStaging,
                    ..
                }
            ) {
                // the staging copy is not part of the table: never "already true"
                if holds(&s.action, Some(&case.after)) {
                    errors.push(format!("{}: DROP staging holds", case.name));
                }
                continue;
            }
            if holds(&s.action, Some(&case.before)) {
                errors.push(format!(
                    "{}: {} already holds before",
                    case.name,
                    s.action.title()
                ));
            }
            if !holds(&s.action, Some(&case.after)) {
                errors.push(format!(
                    "{}: {} does not hold after",
                    case.name,
                    s.action.title()
                ));
            }
        }
        // plan → apply → re-plan is empty
        let again = plan_table(&case.desired, Some(&case.after), &case.caps);
        if !again.steps().is_empty() || !again.changes.is_empty() {
            errors.push(format!(
                "{}: re-plan after is not empty: {:?} {:?}",
                case.name,
                again.changes,
                steps(&again)
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn holds_for_whole_tables() {
    let (d, o) = orders();
    let create = Action::CreateTable { table: Box::new(d) };
    assert!(!holds(&create, None));
    assert!(holds(&create, Some(&o)));
    assert!(!holds(&Action::DropTable, Some(&o)));
    assert!(holds(&Action::DropTable, None));
    // anything else on a missing table does not hold
    assert!(!holds(
        &Action::SetTableComment {
            comment: "x".into()
        },
        None
    ));
}

#[test]
fn holds_for_a_rewrite_checks_the_whole_shape() {
    let (_, o) = orders();
    let rewrite = Rewrite::default();
    let write_once =
        |columns: Vec<(&str, &str, bool)>, partitioned_by: Vec<&str>| Action::Rewrite {
            rewrite: Rewrite {
                columns: columns
                    .into_iter()
                    .map(
                        |(n, t, nullable)| delta_operator_core::plan::steps::Projection {
                            field: StructField {
                                name: n.into(),
                                data_type: ty(t),
                                nullable,
                                comment: None,
                            },
                            source: Source::Copy { from: n.into() },
                        },
                    )
                    .collect(),
                partitioned_by: partitioned_by.into_iter().map(String::from).collect(),
                ..rewrite.clone()
            },
            phase: RewritePhase::WriteOnce,
        };
    let same = vec![
        ("id", "bigint", false),
        ("amount", "int", true),
        ("note", "string", true),
    ];
    assert!(holds(&write_once(same.clone(), vec![]), Some(&o)));
    assert!(
        !holds(&write_once(same.clone(), vec!["note"]), Some(&o)),
        "partitioning differs"
    );
    assert!(
        !holds(
            &write_once(
                vec![
                    ("id", "bigint", true),
                    ("amount", "int", true),
                    ("note", "string", true)
                ],
                vec![]
            ),
            Some(&o)
        ),
        "nullability differs"
    );
    assert!(
        !holds(
            &write_once(
                vec![
                    ("id", "bigint", false),
                    ("amount", "int", true),
                    ("NOTE", "string", true)
                ],
                vec![]
            ),
            Some(&o)
        ),
        "spelling differs"
    );
    assert!(
        !holds(&write_once(same[..2].to_vec(), vec![]), Some(&o)),
        "a column too many live"
    );
}
