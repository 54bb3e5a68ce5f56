//! Rewrites: projections, staging, the clone before, put-backs after a replace.

use super::*;

#[test]
fn rename_on_the_lake_copies_the_old_column_once() {
    let (mut d, o) = orders();
    let c = dcol(&mut d, "note");
    c.name = "remark".into();
    c.renamed_from = Some("note".into());
    let p = plan_table(&d, Some(&o), &lake());
    let s = step(&p, "REPLACE TABLE (from itself)");
    let Action::Rewrite {
        rewrite,
        phase: RewritePhase::WriteOnce,
    } = &s.action
    else {
        panic!("{:?}", s.action)
    };
    let sources: Vec<(&str, &Source)> = rewrite
        .columns
        .iter()
        .map(|c| (c.field.name.as_str(), &c.source))
        .collect();
    assert_eq!(
        sources,
        vec![
            ("id", &Source::Copy { from: "id".into() }),
            (
                "amount",
                &Source::Copy {
                    from: "amount".into()
                }
            ),
            (
                "remark",
                &Source::Copy {
                    from: "note".into()
                }
            ),
        ]
    );
    assert!(rewrite.drops.is_empty());
    assert!(!rewrite.converts());
    assert_eq!(s.class, RiskClass::Rewrite);
    assert_eq!(s.est_bytes, Some(SIZE), "a rewrite shows the table's size");
    assert_eq!(undo_of(&p, s), restore());
}

#[test]
fn a_lossy_cast_on_the_lake_is_staged_with_sizes_and_a_restore_point() {
    let (mut d, mut o) = orders();
    lcol(&mut o, "amount").data_type = DataType::Long;
    dcol(&mut d, "amount").data_type = DataType::Int;
    let p = plan_table(&d, Some(&o), &lake());
    type Phase = (RewritePhase, Option<u64>, Option<Undo>, Vec<usize>);
    let phases: Vec<Phase> = p
        .steps()
        .iter()
        .map(|s| match &s.action {
            Action::Rewrite { phase, rewrite } => {
                assert_eq!(
                    rewrite.columns[1].source,
                    Source::Cast {
                        from: "amount".into(),
                        from_type: DataType::Long
                    }
                );
                (*phase, s.est_bytes, undo_of(&p, s), s.serves.clone())
            }
            other => panic!("not a rewrite: {other:?}"),
        })
        .collect();
    assert_eq!(
        phases,
        vec![
            (RewritePhase::Stage, Some(SIZE), None, vec![0]),
            (RewritePhase::Replace, Some(SIZE), restore(), vec![0]),
            (RewritePhase::DropStaging, None, None, vec![0]),
        ]
    );
    let plan = plan::finish(&lake(), vec![p], vec![]);
    assert_eq!(
        plan.summary.rewrites, 1,
        "stage + replace + drop staging is one rewrite"
    );
    assert_eq!(plan.summary.steps, 3);
    assert_eq!(plan.risk(), Some(RiskClass::Rewrite));
}

#[test]
fn a_lossless_cast_on_the_lake_is_written_once() {
    let (mut d, o) = orders();
    dcol(&mut d, "amount").data_type = DataType::Long;
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(steps(&p), vec!["1. REPLACE TABLE (from itself) [rewrite]"]);
    let Action::Rewrite {
        rewrite,
        phase: RewritePhase::WriteOnce,
    } = &p.steps()[0].action
    else {
        panic!("{:?}", p.steps())
    };
    assert_eq!(
        rewrite.columns[1].source,
        Source::Cast {
            from: "amount".into(),
            from_type: DataType::Int
        }
    );
    assert!(!rewrite.converts(), "int → bigint cannot lose a value");
    assert!(
        p.steps()[0]
            .notes
            .iter()
            .any(|n| n.contains("cannot lose a value") && n.contains("amount")),
        "{:?}",
        p.steps()[0].notes
    );
    assert_eq!(undo_of(&p, &p.steps()[0]), restore());
}

/// The source of the column named `name` in the table's rewrite.
fn source_of(p: &TablePlan, name: &str) -> Source {
    p.steps()
        .iter()
        .find_map(|s| match &s.action {
            Action::Rewrite { rewrite, .. } => rewrite
                .columns
                .iter()
                .find(|c| c.field.name == name)
                .map(|c| c.source.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no rewrite of {name}: {:?}", steps(p)))
}

fn proj(name: &str, t: &str, source: Source) -> delta_operator_core::plan::steps::Projection {
    delta_operator_core::plan::steps::Projection {
        field: StructField {
            name: name.into(),
            data_type: ty(t),
            nullable: true,
            comment: None,
        },
        source,
    }
}

#[test]
fn projections_rebuild_structs_by_name_and_arrays_of_structs_by_transform() {
    // a struct whose fields are reordered, one widened, one new, one left out
    let (mut d, mut o) = orders();
    o.columns
        .push(ocol("address", "struct<zip:int,city:string,old:string>"));
    d.columns.push(col(
        "address",
        "struct<city:string,zip:bigint,country:string>",
    ));
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        source_of(&p, "address"),
        Source::Struct {
            from: "address".into(),
            fields: vec![
                proj(
                    "city",
                    "string",
                    Source::Copy {
                        from: "city".into()
                    }
                ),
                proj(
                    "zip",
                    "bigint",
                    Source::Cast {
                        from: "zip".into(),
                        from_type: DataType::Int
                    }
                ),
                proj("country", "string", Source::Null),
            ]
        },
        "by name, never by position"
    );
    // leaving a nested field out loses its data: destructive, named
    let s = step(&p, "REPLACE TABLE (from itself)");
    assert_eq!(s.class, RiskClass::Destructive);
    assert!(
        s.warnings.iter().any(|w| w.contains("address.old")),
        "{:?}",
        s.warnings
    );

    // an array of structs: transform, each element rebuilt by name
    let (mut d, mut o) = orders();
    o.columns
        .push(ocol("items", "array<struct<sku:string,qty:int>>"));
    d.columns
        .push(col("items", "array<struct<qty:bigint,sku:string>>"));
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        source_of(&p, "items"),
        Source::Transform {
            from: "items".into(),
            fields: vec![
                proj(
                    "qty",
                    "bigint",
                    Source::Cast {
                        from: "qty".into(),
                        from_type: DataType::Int
                    }
                ),
                proj("sku", "string", Source::Copy { from: "sku".into() })
            ]
        }
    );
    assert_eq!(
        steps(&p),
        vec!["1. REPLACE TABLE (from itself) [rewrite]"],
        "lossless inside: written once"
    );

    // a lossy cast inside a struct is staged
    let (mut d, mut o) = orders();
    o.columns.push(ocol("address", "struct<zip:string>"));
    d.columns.push(col("address", "struct<zip:int>"));
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        steps(&p),
        vec![
            "1. STAGE rewritten data [rewrite]",
            "2. REPLACE TABLE (from staging) [rewrite]",
            "3. DROP staging [meta]"
        ]
    );

    // a new column in a rewrite is CAST(NULL AS T): no ADD COLUMN step first
    let (mut d, mut o) = orders();
    lcol(&mut o, "amount").data_type = DataType::Long;
    dcol(&mut d, "amount").data_type = DataType::Int;
    d.columns.push(col("extra", "date"));
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(source_of(&p, "extra"), Source::Null);
    assert!(
        !steps(&p).iter().any(|s| s.contains("ADD COLUMN")),
        "{:?}",
        steps(&p)
    );
}

#[test]
fn what_has_no_honest_conversion_asks_for_using() {
    for (from, to) in [
        ("struct<a:int>", "array<int>"),
        ("map<string,int>", "map<string,struct<v:int>>"),
        ("map<string,struct<v:int>>", "map<string,struct<v:bigint>>"),
        (
            "array<array<struct<a:int>>>",
            "array<array<struct<a:bigint>>>",
        ),
        ("int", "struct<a:int>"),
    ] {
        let (mut d, mut o) = orders();
        o.columns.push(ocol("x", from));
        d.columns.push(col("x", to));
        let p = plan_table(&d, Some(&o), &lake());
        assert_eq!(
            failures(&p),
            vec!["ConversionNeedsUsing"],
            "{from} → {to}: {:?}",
            steps(&p)
        );
        let Outcome::Rejected { failures } = &p.outcome else {
            unreachable!()
        };
        assert!(failures[0].fix.contains("using:"), "{}", failures[0].fix);
        // with `using:` it is accepted, and the expression is the projection
        dcol(&mut d, "x").using = Some("NULL".into());
        let p = plan_table(&d, Some(&o), &lake());
        assert!(p.is_accepted(), "{from} → {to} with using: {:?}", p.outcome);
        assert_eq!(
            source_of(&p, "x"),
            Source::Using {
                expression: "NULL".into()
            }
        );
    }
    // maps of scalars are cast whole
    let (mut d, mut o) = orders();
    o.columns.push(ocol("m", "map<string,int>"));
    d.columns.push(col("m", "map<string,bigint>"));
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        source_of(&p, "m"),
        Source::Cast {
            from: "m".into(),
            from_type: ty("map<string,int>")
        }
    );
}

#[test]
fn clone_before_rewrite_adds_a_shallow_clone_before_the_first_step_that_could_lose_data() {
    let (mut d, mut o) = orders();
    lcol(&mut o, "amount").data_type = DataType::Long;
    dcol(&mut d, "amount").data_type = DataType::Int;
    let without = plan_table(&d, Some(&o), &lake());
    d.clone_before_rewrite = true;
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        steps(&p),
        vec![
            "1. STAGE rewritten data [rewrite]",
            "2. SHALLOW CLONE to orders__delta_operator_clone_v{version} [meta]",
            "3. REPLACE TABLE (from staging) [rewrite]",
            "4. DROP staging [meta]"
        ],
        "the stage leaves the original untouched: the clone goes right before the replace"
    );
    assert_eq!(
        undo_of(&p, &p.steps()[1]),
        Some(Undo::DropClone {
            name: "orders__delta_operator_clone_v{version}".into()
        })
    );
    assert_ne!(
        plan::finish(&lake(), vec![p], vec![]).id,
        plan::finish(&lake(), vec![without], vec![]).id,
        "the clone is part of the plan"
    );
    // a write-once drop: the clone comes first
    let (mut d, o) = orders();
    d.columns.retain(|c| c.name != "note");
    d.clone_before_rewrite = true;
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        steps(&p),
        vec![
            "1. SHALLOW CLONE to orders__delta_operator_clone_v{version} [meta]",
            "2. REPLACE TABLE (from itself) [destructive]"
        ]
    );
    // nothing that could lose data: no clone
    let (mut d, o) = orders();
    d.comment = Some("x".into());
    d.clone_before_rewrite = true;
    let p = plan_table(&d, Some(&o), &lake());
    assert!(
        !steps(&p).iter().any(|s| s.contains("CLONE")),
        "{:?}",
        steps(&p)
    );
}

#[test]
fn put_backs_follow_a_replace_that_loses_metadata() {
    // Databricks: REPLACE TABLE … AS SELECT loses NOT NULL, CHECKs, comments of
    // converted columns, a renamed column's tags and properties others set
    let (mut d, mut o) = orders();
    o.checks.push(delta_operator_core::model::Check {
        name: "theirs".into(),
        expression: "id > 0".into(),
    });
    o.properties
        .insert("their.retention".into(), "30 days".into());
    lcol(&mut o, "amount").comment = Some("in cents".into());
    lcol(&mut o, "note").tags.insert("pii".into(), "yes".into());
    dcol(&mut d, "amount").data_type = DataType::String;
    dcol(&mut d, "amount").using = Some("format_number(amount, 0)".into());
    let c = dcol(&mut d, "note");
    c.name = "remark".to_string();
    c.renamed_from = Some("note".to_string());
    d.partitioned_by = Some(vec!["remark".to_string()]);
    let p = plan_table(&d, Some(&o), &dbx());
    let titles: Vec<String> = p.steps().iter().map(|s| s.action.title()).collect();
    let at = |t: &str| {
        titles
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("no {t} in {titles:?}"))
    };
    let replace = at("REPLACE TABLE (from itself, rows checked)");
    for put in [
        "SET NOT NULL id",
        "COMMENT ON COLUMN amount",
        "SET TAGS on remark",
        "ADD CONSTRAINT theirs CHECK",
    ] {
        let i = at(put);
        assert!(
            i > replace && i < at("DROP staging"),
            "{put} is put back between the replace and the drop of staging: {titles:?}"
        );
    }
    // the properties (theirs too) are written by the replace itself
    let replace_props = p
        .steps()
        .iter()
        .find_map(|s| match &s.action {
            Action::Rewrite {
                rewrite,
                phase: RewritePhase::ReplaceChecked,
            } => Some(rewrite.properties.clone()),
            _ => None,
        })
        .expect("a checked replace");
    assert_eq!(
        replace_props.get("their.retention").map(String::as_str),
        Some("30 days"),
        "{replace_props:?}"
    );
    // the lake's replace keeps them itself: no put-back steps
    let p = plan_table(&d, Some(&o), &lake());
    assert!(
        p.steps()
            .iter()
            .all(|s| !s.notes.iter().any(|n| n == "put back after the replace")),
        "{:?}",
        steps(&p)
    );
}

/// The `orders` table of `put_backs_…` with everything a replace on
/// Databricks can lose: a table comment, a default on the converted column,
/// a primary key, a foreign key, and the protocol and Delta-assigned keys
/// that must not be put back.
fn orders_with_everything() -> (DesiredTable, ObservedTable) {
    let (mut d, mut o) = orders();
    o.comment = Some("one row per order".into());
    lcol(&mut o, "amount").default = Some("0".into());
    o.primary_key = Some(PrimaryKey {
        name: Some("orders_key".into()),
        columns: vec!["id".into()],
    });
    let fk = ForeignKey {
        name: Some("orders_customer".into()),
        columns: vec!["note".into()],
        references: tref("customers"),
        referenced_columns: vec!["id".into()],
    };
    o.foreign_keys.push(fk.clone());
    d.foreign_keys.push(ForeignKey { name: None, ..fk });
    for (k, v) in [
        ("delta.minReaderVersion", "3"),
        ("delta.minWriterVersion", "7"),
        ("delta.feature.deletionVectors", "supported"),
        ("delta.columnMapping.mode", "name"),
        ("delta.columnMapping.maxColumnId", "3"),
        (
            "delta.rowTracking.materializedRowIdColumnName",
            "_row-id-col-1",
        ),
        ("delta.enableChangeDataFeed", "true"),
        ("their.retention", "30 days"),
    ] {
        o.properties.insert(k.into(), v.into());
    }
    // a cast that may lose values: staged, replaced, put back
    lcol(&mut o, "amount").data_type = DataType::String;
    dcol(&mut d, "amount").using = Some("CAST(amount AS INT)".into());
    (d, o)
}

#[test]
fn put_backs_restore_the_comment_defaults_and_keys_but_not_the_protocol() {
    let (d, o) = orders_with_everything();
    let p = plan_table(&d, Some(&o), &dbx());
    let all = steps(&p);
    let titles: Vec<String> = p.steps().iter().map(|s| s.action.title()).collect();
    let at = |t: &str| {
        titles
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("no {t} in {all:#?}"))
    };
    let replace = at("REPLACE TABLE (from itself, rows checked)");
    for put in [
        "SET DEFAULT on amount",
        "ADD PRIMARY KEY",
        "ADD FOREIGN KEY → main.sales.customers",
    ] {
        assert!(at(put) > replace, "{put} after the replace: {all:#?}");
    }
    let action = |t: &str| p.steps()[at(t)].action.clone();
    // the table comment is written by the replace itself
    let Action::Rewrite { rewrite, .. } = action("REPLACE TABLE (from itself, rows checked)")
    else {
        unreachable!()
    };
    assert_eq!(rewrite.comment.as_deref(), Some("one row per order"));
    assert!(!titles.iter().any(|t| t == "COMMENT ON TABLE"), "{all:#?}");
    assert_eq!(
        action("SET DEFAULT on amount"),
        Action::SetDefault {
            column: "amount".into(),
            expression: "0".into()
        }
    );
    // the live names are kept where the spec names none
    assert_eq!(
        action("ADD PRIMARY KEY"),
        Action::SetPrimaryKey {
            key: PrimaryKey {
                name: Some("orders_key".into()),
                columns: vec!["id".into()]
            },
            replaces: None,
        }
    );
    let Action::AddForeignKey { key } = action("ADD FOREIGN KEY → main.sales.customers") else {
        unreachable!()
    };
    assert_eq!(key.name.as_deref(), Some("orders_customer"));
    // the properties ride in the replace itself (never a put-back an
    // interruption could skip): what a user or another tool set, not the
    // protocol nor what Delta assigns itself (it refuses those from a user).
    // Change data feed on a column-mapped table is the exception (Delta
    // refuses it in the replace): put back after it, with its record in the
    // replace, which the step after removes
    let props = p
        .steps()
        .iter()
        .find_map(|s| match &s.action {
            Action::Rewrite { rewrite, phase }
                if *phase != RewritePhase::Stage && *phase != RewritePhase::DropStaging =>
            {
                Some(rewrite.properties.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no replace: {all:#?}"));
    assert_eq!(
        props.keys().map(String::as_str).collect::<Vec<_>>(),
        vec![
            OWNER_PROPERTY,
            delta_operator_core::model::PUT_BACK_PROPERTY,
            "delta.columnMapping.mode",
            "their.retention"
        ]
    );
    assert_eq!(
        props[delta_operator_core::model::PUT_BACK_PROPERTY],
        r#"{"delta.enableChangeDataFeed":"true"}"#
    );
    let cdf = at("SET TBLPROPERTIES (delta.enableChangeDataFeed)");
    let record = at("UNSET TBLPROPERTIES (delta-operator.io/put-back)");
    assert!(replace < cdf && cdf < record, "{all:#?}");
    // a run that stopped between them: the next plan puts it back from the record
    let mut stopped = o.clone();
    stopped.properties.remove("delta.enableChangeDataFeed");
    stopped.properties.insert(
        delta_operator_core::model::PUT_BACK_PROPERTY.into(),
        r#"{"delta.enableChangeDataFeed":"true"}"#.into(),
    );
    let (d2, _) = orders_with_everything();
    let mut d2 = d2;
    d2.columns = d.columns.clone();
    d2.columns.iter_mut().for_each(|c| c.using = None);
    for c in &mut stopped.columns {
        if let Some(dc) = d2.columns.iter().find(|x| x.name == c.name) {
            c.data_type = dc.data_type.clone();
        }
    }
    let again = plan_table(&d2, Some(&stopped), &dbx());
    let titles2 = steps(&again);
    assert!(
        titles2
            .iter()
            .any(|t| t.contains("SET TBLPROPERTIES (delta.enableChangeDataFeed)"))
            && titles2
                .iter()
                .any(|t| t.contains("UNSET TBLPROPERTIES (delta-operator.io/put-back)")),
        "{titles2:#?}"
    );
    // and the note lists only what someone chose to set
    let note = p
        .notes
        .iter()
        .find(|n| n.starts_with("properties not in the spec"))
        .unwrap_or_else(|| panic!("no note: {:?}", p.notes));
    assert_eq!(
        note,
        "properties not in the spec, left untouched: delta.columnMapping.mode, delta.enableChangeDataFeed, their.retention"
    );
}

#[test]
fn a_declared_comment_with_a_rewrite_is_written_by_the_replace() {
    let (mut d, o) = orders_with_everything();
    d.comment = Some("orders, one row each".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(
        !p.steps()
            .iter()
            .any(|s| matches!(s.action, Action::SetTableComment { .. })),
        "{:#?}",
        steps(&p)
    );
    let replace = step(&p, "REPLACE TABLE (from itself, rows checked)");
    let Action::Rewrite { rewrite, .. } = &replace.action else {
        unreachable!()
    };
    assert_eq!(rewrite.comment.as_deref(), Some("orders, one row each"));
    // the change is served by that step
    assert!(
        replace
            .serves
            .iter()
            .any(|i| matches!(p.changes[*i], Change::SetTableComment { .. })),
        "{:?}",
        replace.serves
    );
}

#[test]
fn a_rename_with_a_rewrite_on_databricks_is_made_by_the_rewrite() {
    // before: RENAME COLUMN ran in place first, then the stage selected the
    // old name, which was gone (the rename had committed)
    let (mut d, mut o) = orders();
    lcol(&mut o, "amount").data_type = DataType::String;
    dcol(&mut d, "amount").using = Some("CAST(amount AS INT)".into());
    let c = dcol(&mut d, "note");
    c.name = "remark".into();
    c.renamed_from = Some("note".into());
    d.columns.retain(|c| c.name != "id");
    let p = plan_table(&d, Some(&o), &dbx());
    let all = steps(&p);
    assert!(
        !all.iter()
            .any(|s| s.contains("RENAME COLUMN") || s.contains("DROP COLUMN")),
        "the rewrite renames and drops: {all:#?}"
    );
    assert!(
        !all.iter().any(|s| s.contains("column mapping")),
        "no column mapping is needed for a rename the rewrite makes: {all:#?}"
    );
    assert_eq!(
        source_of(&p, "remark"),
        Source::Copy {
            from: "note".into()
        }
    );
    let replace = step(&p, "REPLACE TABLE (from itself, rows checked)");
    assert_eq!(replace.class, RiskClass::Destructive);
    // every change is served by some step
    for i in 0..p.changes.len() {
        assert!(
            p.steps().iter().any(|s| s.serves.contains(&i)),
            "change {:?} served by no step: {all:#?}",
            p.changes[i]
        );
    }
}
