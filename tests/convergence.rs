//! Convergence, property-based, on real Delta tables: for random spec pairs
//! A → B, applying plan(A → B) and planning again gives no changes, and every
//! row survives (only columns a destructive step named are gone).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use deltalake::arrow::array::{ArrayRef, Int64Array};
use proptest::prelude::*;
use support::*;

/// A column as the generator sees it.
#[derive(Debug, Clone)]
struct Col {
    name: String,
    ty: &'static str,
    nullable: bool,
    comment: Option<String>,
    renamed_from: Option<String>,
}

#[derive(Debug, Clone)]
struct Spec {
    cols: Vec<Col>,
    comment: Option<String>,
    props: BTreeMap<String, Option<String>>,
    partition: Option<String>,
}

const TYPES: &[&str] = &[
    "int",
    "bigint",
    "string",
    "double",
    "date",
    "struct<x:int,y:string>",
];

/// Conversions that never lose a value (so a rewrite never fails its check).
fn lossless(from: &str, to: &str) -> bool {
    matches!(
        (from, to),
        ("int", "bigint")
            | ("int", "double")
            | ("int", "string")
            | ("bigint", "string")
            | ("double", "string")
            | ("date", "string")
    )
}

fn render(spec: &Spec) -> String {
    let mut body = String::new();
    if let Some(c) = &spec.comment {
        body.push_str(&format!("  comment: '{c}'\n"));
    }
    body.push_str("  columns:\n");
    for c in &spec.cols {
        body.push_str(&format!(
            "    - name: {}\n      type: '{}'\n      nullable: {}\n",
            c.name, c.ty, c.nullable
        ));
        if let Some(cm) = &c.comment {
            body.push_str(&format!("      comment: '{cm}'\n"));
        }
        if let Some(r) = &c.renamed_from {
            body.push_str(&format!("      renamedFrom: {r}\n"));
        }
    }
    if !spec.props.is_empty() {
        body.push_str("  properties:\n");
        for (k, v) in &spec.props {
            match v {
                Some(v) => body.push_str(&format!("    {k}: '{v}'\n")),
                None => body.push_str(&format!("    {k}: null\n")),
            }
        }
    }
    body.push_str(&format!(
        "  partitionedBy: [{}]\n",
        spec.partition.clone().unwrap_or_default()
    ));
    format!("{SCHEMA}{}", table("t", body.trim_end()))
}

fn spec_a() -> impl Strategy<Value = Spec> {
    (
        proptest::collection::vec(
            (
                0..TYPES.len(),
                any::<bool>(),
                proptest::option::of("[a-z ]{0,8}"),
            ),
            2..5,
        ),
        proptest::option::of("[a-z]{1,6}"),
        proptest::collection::btree_map("p\\.[a-c]", "[a-z0-9]{1,3}", 0..3),
        any::<bool>(),
    )
        .prop_map(|(cols, comment, props, partition)| {
            let cols: Vec<Col> = cols
                .into_iter()
                .enumerate()
                .map(|(i, (t, nullable, comment))| {
                    // the first column is scalar, so every generated table holds rows
                    let ty = if i == 0 && TYPES[t].starts_with("struct") {
                        "bigint"
                    } else {
                        TYPES[t]
                    };
                    Col {
                        name: format!("c{i}"),
                        ty,
                        nullable: nullable || ty.starts_with("struct"),
                        comment,
                        renamed_from: None,
                    }
                })
                .collect();
            let partition = cols
                .iter()
                .find(|c| c.ty == "date" || c.ty == "string")
                .filter(|_| partition)
                .map(|c| c.name.clone());
            Spec {
                cols,
                comment,
                props: props.into_iter().map(|(k, v)| (k, Some(v))).collect(),
                partition,
            }
        })
}

/// One random, acceptable change.
#[derive(Debug, Clone)]
enum Mutation {
    Add(usize),
    Drop(usize),
    Rename(usize),
    Retype(usize, usize),
    Relax(usize),
    Tighten(usize),
    Comment(usize, String),
    TableComment(String),
    SetProp(String, String),
    UnsetProp(usize),
    Partition(bool),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..TYPES.len()).prop_map(Mutation::Add),
        (0..8usize).prop_map(Mutation::Drop),
        (0..8usize).prop_map(Mutation::Rename),
        (0..8usize, 0..TYPES.len()).prop_map(|(c, t)| Mutation::Retype(c, t)),
        (0..8usize).prop_map(Mutation::Relax),
        (0..8usize).prop_map(Mutation::Tighten),
        (0..8usize, "[a-z]{0,6}").prop_map(|(c, s)| Mutation::Comment(c, s)),
        "[a-z]{0,6}".prop_map(Mutation::TableComment),
        ("p\\.[a-d]", "[a-z]{1,3}").prop_map(|(k, v)| Mutation::SetProp(k, v)),
        (0..4usize).prop_map(Mutation::UnsetProp),
        any::<bool>().prop_map(Mutation::Partition),
    ]
}

fn mutate(a: &Spec, ms: &[Mutation]) -> (Spec, Vec<String>) {
    let mut b = a.clone();
    let mut dropped = Vec::new();
    let mut fresh = 0;
    for m in ms {
        let n = b.cols.len();
        let is_part = |b: &Spec, i: usize| b.partition.as_deref() == Some(b.cols[i].name.as_str());
        match m {
            Mutation::Add(t) => {
                fresh += 1;
                b.cols.push(Col {
                    name: format!("new{fresh}"),
                    ty: TYPES[*t],
                    nullable: true,
                    comment: None,
                    renamed_from: None,
                });
            }
            Mutation::Drop(i)
                if n > 2
                    && i % n != 0
                    && !is_part(&b, i % n)
                    && a.cols.iter().any(|c| c.name == b.cols[i % n].name) =>
            {
                dropped.push(b.cols.remove(i % n).name);
            }
            Mutation::Rename(i)
                if !is_part(&b, i % n)
                    && b.cols[i % n].renamed_from.is_none()
                    && a.cols.iter().any(|c| c.name == b.cols[i % n].name) =>
            {
                let c = &mut b.cols[i % n];
                c.renamed_from = Some(c.name.clone());
                c.name = format!("{}_r", c.name);
            }
            Mutation::Retype(i, t)
                if !is_part(&b, i % n) && lossless(b.cols[i % n].ty, TYPES[*t]) =>
            {
                b.cols[i % n].ty = TYPES[*t]
            }
            Mutation::Relax(i) => b.cols[i % n].nullable = true,
            // only columns that hold values in every row (the generator fills existing columns)
            Mutation::Tighten(i)
                if !b.cols[i % n].ty.starts_with("struct")
                    && a.cols.iter().any(|c| c.name == b.cols[i % n].name) =>
            {
                b.cols[i % n].nullable = false
            }
            Mutation::Comment(i, s) => b.cols[i % n].comment = Some(s.clone()),
            Mutation::TableComment(s) => b.comment = Some(s.clone()),
            Mutation::SetProp(k, v) => {
                b.props.insert(k.clone(), Some(v.clone()));
            }
            Mutation::UnsetProp(i) => {
                if let Some(k) = b.props.keys().nth(*i).cloned() {
                    b.props.insert(k, None);
                }
            }
            // a table needs a data column besides its partition column
            Mutation::Partition(on) if n > 1 => {
                b.partition = if *on {
                    b.cols
                        .iter()
                        .find(|c| c.ty == "date" || c.ty == "string")
                        .map(|c| c.name.clone())
                } else {
                    None
                };
            }
            _ => {}
        }
    }
    (b, dropped)
}

const ROWS: i64 = 4;

fn converge(a: Spec, b: Spec, dropped: Vec<String>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let lake = Lake::new();
        let ia = manifests(&render(&a));
        lake.apply(&ia, true).await.unwrap();
        // every scalar column gets a value in every row (cast from bigint)
        let values: Vec<(String, ArrayRef)> = a
            .cols
            .iter()
            .filter(|c| !c.ty.starts_with("struct"))
            .map(|c| {
                (
                    c.name.clone(),
                    Arc::new(Int64Array::from((1..=ROWS).collect::<Vec<_>>())) as ArrayRef,
                )
            })
            .collect();
        lake.append(
            &tref("t"),
            values
                .iter()
                .map(|(n, a)| (n.as_str(), a.clone()))
                .collect(),
        )
        .await;
        assert!(
            !lake.plan(&ia).await.has_changes(),
            "A applied and plans clean"
        );

        let ib = manifests(&render(&b));
        let plan = lake.plan(&ib).await;
        assert_eq!(
            plan.summary.rejected,
            0,
            "the generator makes only acceptable changes:\n{}",
            delta_operator::plan::render::text::render(&plan)
        );
        let destructive = plan.destructive_steps().count() > 0;
        assert_eq!(
            destructive,
            !dropped.is_empty(),
            "a step is destructive exactly when a column is dropped"
        );
        lake.apply(&ib, true).await.unwrap();
        let after = lake.plan(&ib).await;
        assert!(
            !after.has_changes(),
            "B does not converge:\n{}",
            delta_operator::plan::render::text::render(&after)
        );
        assert_eq!(lake.count(&tref("t")).await, ROWS, "rows survive");
        let live = lake.read(&tref("t")).await.unwrap();
        for d in &dropped {
            assert!(live.column(d).is_none(), "{d} was dropped");
        }
        // values of columns that kept their name and type are unchanged
        for c in b
            .cols
            .iter()
            .filter(|c| c.renamed_from.is_none() && !c.ty.starts_with("struct"))
        {
            if let Some(orig) = a.cols.iter().find(|o| o.name == c.name && o.ty == c.ty) {
                let _ = orig;
                let n = lake
                    .query(&tref("t"), &format!("SELECT count(\"{}\") FROM t", c.name))
                    .await;
                assert_eq!(
                    n,
                    vec![ROWS.to_string()],
                    "column {} kept its values",
                    c.name
                );
            }
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 64, ..ProptestConfig::default() })]
    #[test]
    fn plan_apply_replan_converges(a in spec_a(), ms in proptest::collection::vec(mutation(), 1..5)) {
        let (b, dropped) = mutate(&a, &ms);
        converge(a, b, dropped);
    }
}
