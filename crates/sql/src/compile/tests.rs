use std::collections::BTreeMap;

use super::*;
use crate::ddl::DEFAULTS_FEATURE;
use delta_operator_core::model::type_syntax::parse_type;
use delta_operator_core::model::{Check, DataType, ForeignKey, Mask, PrimaryKey, StructField};

fn t() -> TableRef {
    TableRef::new("main", "sales", "orders")
}

fn sql(a: Action) -> Vec<String> {
    compile(&t(), &a, None).expect("compiles")
}

#[test]
fn comments_and_properties() {
    assert_eq!(
        sql(Action::SetTableComment {
            comment: "it's \\ ${x}".into()
        }),
        vec![r"COMMENT ON TABLE `main`.`sales`.`orders` IS 'it\'s \\ $\{x}'"]
    );
    assert_eq!(
        sql(Action::SetTableComment {
            comment: String::new()
        }),
        vec!["COMMENT ON TABLE `main`.`sales`.`orders` IS NULL"]
    );
    assert_eq!(
        sql(Action::SetColumnComment {
            path: vec!["a".into(), "b".into()].into(),
            comment: "x\ny".into()
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a`.`b` COMMENT 'x\ny'"]
    );
    let p = BTreeMap::from([("k'".to_string(), "v\\".to_string())]);
    assert_eq!(
        sql(Action::SetProperties { properties: p }),
        vec![r"ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('k\'' = 'v\\')"]
    );
    assert_eq!(
        sql(Action::UnsetProperties {
            keys: vec!["a".into(), "b".into()]
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` UNSET TBLPROPERTIES IF EXISTS ('a', 'b')"]
    );
    assert_eq!(
        sql(Action::Claim {
            marker: "ns/orders".into(),
            constraints: None,
            scope: delta_operator_core::model::Scope::Full,
        }),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta-operator.io/owner' = 'ns/orders')"
        ]
    );
    // a narrow scope is recorded in the same write as the marker
    assert_eq!(
        sql(Action::Claim {
            marker: "ns/orders".into(),
            constraints: None,
            scope: delta_operator_core::model::Scope::Tags,
        }),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta-operator.io/owner' = 'ns/orders', 'delta-operator.io/scope' = 'tags')"
        ]
    );
}

/// A streaming table, materialized view or view takes its own ALTER, COMMENT ON for comments,
/// and refuses by name what its maker owns.
#[test]
fn streaming_tables_materialized_views_and_views_take_their_own_statements() {
    use delta_operator_core::model::{ObservedTable, TableKind};
    let on = |kind: TableKind, a: Action| {
        let live = ObservedTable {
            kind,
            ..ObservedTable::new(t(), vec![])
        };
        compile(&t(), &a, Some(&live))
    };
    let tags = || Action::SetTableTags {
        tags: BTreeMap::from([("domain".to_string(), "sales".to_string())]),
    };
    for (kind, keyword) in [
        (TableKind::StreamingTable, "STREAMING TABLE"),
        (TableKind::MaterializedView, "MATERIALIZED VIEW"),
        (TableKind::View, "VIEW"),
    ] {
        assert_eq!(
            on(kind, tags()).unwrap(),
            vec![format!(
                "ALTER {keyword} `main`.`sales`.`orders` SET TAGS ('domain' = 'sales')"
            )]
        );
        assert_eq!(
            on(
                kind,
                Action::UnsetColumnTags {
                    column: "a".into(),
                    keys: vec!["pii".into()]
                }
            )
            .unwrap(),
            vec![format!(
                "ALTER {keyword} `main`.`sales`.`orders` ALTER COLUMN `a` UNSET TAGS ('pii')"
            )]
        );
        assert_eq!(
            on(
                kind,
                Action::SetColumnComment {
                    path: vec!["a".into()].into(),
                    comment: "it's".into()
                }
            )
            .unwrap(),
            vec![r"COMMENT ON COLUMN `main`.`sales`.`orders`.`a` IS 'it\'s'"]
        );
        assert_eq!(
            on(
                kind,
                Action::SetTableComment {
                    comment: "x".into()
                }
            )
            .unwrap(),
            vec!["COMMENT ON TABLE `main`.`sales`.`orders` IS 'x'"]
        );
        let refused = on(
            kind,
            Action::SetProperties {
                properties: BTreeMap::from([("k".to_string(), "v".to_string())]),
            },
        )
        .unwrap_err()
        .to_string();
        assert!(refused.contains(kind.words()), "{refused}");
    }
    assert_eq!(
        on(
            TableKind::View,
            Action::SetOwner {
                owner: "team".into()
            }
        )
        .unwrap(),
        vec!["ALTER VIEW `main`.`sales`.`orders` OWNER TO `team`"]
    );
    assert_eq!(
        on(
            TableKind::StreamingTable,
            Action::SetOwner {
                owner: "team".into()
            }
        )
        .unwrap(),
        vec!["ALTER STREAMING TABLE `main`.`sales`.`orders` SET OWNER TO `team`"]
    );
    assert!(
        on(
            TableKind::View,
            Action::SetMask {
                column: "a".into(),
                mask: Mask {
                    function: "f".into(),
                    using_columns: vec![]
                }
            }
        )
        .is_err()
    );
}

#[test]
fn tags() {
    let tags = BTreeMap::from([("pii".to_string(), "e'mail".to_string())]);
    assert_eq!(
        sql(Action::SetTableTags { tags: tags.clone() }),
        vec![r"ALTER TABLE `main`.`sales`.`orders` SET TAGS ('pii' = 'e\'mail')"]
    );
    assert_eq!(
        sql(Action::UnsetTableTags {
            keys: vec!["pii".into()]
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` UNSET TAGS ('pii')"]
    );
    assert_eq!(
        sql(Action::SetColumnTags {
            column: "e`mail".into(),
            tags
        }),
        vec![
            r"ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `e``mail` SET TAGS ('pii' = 'e\'mail')"
        ]
    );
    assert_eq!(
        sql(Action::UnsetColumnTags {
            column: "c".into(),
            keys: vec!["a".into()]
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `c` UNSET TAGS ('a')"]
    );
    assert_eq!(
        compile(
            &t(),
            &Action::SetTableTags {
                tags: BTreeMap::new()
            },
            None
        ),
        Err(SqlError::Empty("SET TAGS"))
    );
}

#[test]
fn grants_use_the_allow_list() {
    assert_eq!(
        sql(Action::Grant {
            principal: "data `team`".into(),
            privileges: vec!["select".into(), "all_privileges".into(), "APPLY TAG".into()]
        }),
        vec![
            "GRANT SELECT, ALL PRIVILEGES, APPLY TAG ON TABLE `main`.`sales`.`orders` TO `data ``team```"
        ]
    );
    assert_eq!(
        sql(Action::Revoke {
            principal: "a@b.com".into(),
            privileges: vec!["MODIFY".into()]
        }),
        vec!["REVOKE MODIFY ON TABLE `main`.`sales`.`orders` FROM `a@b.com`"]
    );
    let bad = compile(
        &t(),
        &Action::Grant {
            principal: "x".into(),
            privileges: vec!["SELECT; DROP TABLE y".into()],
        },
        None,
    );
    assert!(matches!(bad, Err(SqlError::UnknownPrivilege(_))));
}

#[test]
fn columns() {
    let ty =
        parse_type("struct<`a b`:int not null comment 'it\\'s',c:array<string>>").expect("a type");
    let f = StructField {
        name: "s".into(),
        data_type: ty,
        nullable: true,
        comment: Some("c'".into()),
    };
    assert_eq!(
        sql(Action::AddColumn {
            path: vec!["p".into(), "s".into()].into(),
            field: f
        }),
        vec![
            r"ALTER TABLE `main`.`sales`.`orders` ADD COLUMN `p`.`s` struct<`a b`: int NOT NULL COMMENT 'it\'s', `c`: array<string>> COMMENT 'c\''"
        ]
    );
    assert_eq!(
        sql(Action::RenameColumn {
            from: "a`".into(),
            to: "b".into()
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` RENAME COLUMN `a``` TO `b`"]
    );
    assert_eq!(
        sql(Action::DropColumn { name: "x".into() }),
        vec!["ALTER TABLE `main`.`sales`.`orders` DROP COLUMN `x`"]
    );
    assert_eq!(
        sql(Action::AlterColumnType {
            path: vec!["a".into()].into(),
            to: DataType::Decimal {
                precision: 18,
                scale: 2
            }
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a` TYPE decimal(18,2)"]
    );
    assert_eq!(
        sql(Action::SetNotNull {
            path: vec!["s".to_string(), "f".to_string()].into()
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `s`.`f` SET NOT NULL"]
    );
    assert_eq!(
        sql(Action::DropNotNull {
            path: vec!["a".to_string()].into()
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a` DROP NOT NULL"]
    );
}

#[test]
fn prerequisites() {
    assert_eq!(
        sql(Action::EnableColumnMapping),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
        ]
    );
    let mut live = ObservedTable::new(t(), vec![]);
    live.properties
        .insert("delta.minReaderVersion".into(), "1".into());
    live.properties
        .insert("delta.minWriterVersion".into(), "2".into());
    assert_eq!(
        compile(&t(), &Action::EnableColumnMapping, Some(&live)).unwrap_or_default(),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
        ]
    );
    live.properties
        .insert("delta.minReaderVersion".into(), "3".into());
    live.properties
        .insert("delta.minWriterVersion".into(), "7".into());
    assert_eq!(
        compile(&t(), &Action::EnableColumnMapping, Some(&live))
            .unwrap_or_default()
            .len(),
        1
    );
    assert!(
        !compile(&t(), &Action::EnableColumnMapping, Some(&live)).unwrap_or_default()[0]
            .contains("Version")
    );
    assert_eq!(
        sql(Action::EnableTypeWidening),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
        ]
    );
    assert_eq!(
        sql(Action::SetDefault {
            column: "c".into(),
            expression: "current_date()".into()
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `c` SET DEFAULT current_date()"]
    );
    // the table feature a default needs is its own step, never slipped into SET DEFAULT
    assert_eq!(
        sql(Action::EnableColumnDefaults),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"
        ]
    );
    live.properties
        .insert(DEFAULTS_FEATURE.into(), "supported".into());
    assert_eq!(
        compile(
            &t(),
            &Action::SetDefault {
                column: "c".into(),
                expression: "1".into()
            },
            Some(&live)
        )
        .unwrap_or_default()
        .len(),
        1
    );
}

#[test]
fn constraints_masks_clustering() {
    assert_eq!(
        sql(Action::AddCheck {
            check: Check {
                name: "pos".into(),
                expression: "amount >= 0".into()
            }
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `pos` CHECK (amount >= 0)"]
    );
    assert_eq!(
        sql(Action::DropCheck { name: "pos".into() }),
        vec!["ALTER TABLE `main`.`sales`.`orders` DROP CONSTRAINT IF EXISTS `pos`"]
    );
    let live = ObservedTable::new(t(), vec![]);
    assert_eq!(
        compile(
            &t(),
            &Action::SetPrimaryKey {
                key: PrimaryKey {
                    name: None,
                    columns: vec!["id".into()]
                },
                replaces: None,
            },
            Some(&live)
        )
        .unwrap_or_default(),
        vec!["ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `orders_pk` PRIMARY KEY (`id`)"]
    );
    assert_eq!(
        sql(Action::SetPrimaryKey {
            key: PrimaryKey {
                name: Some("pk".into()),
                columns: vec!["a".into(), "b".into()]
            },
            replaces: None,
        })
        .len(),
        2
    );
    let fk = ForeignKey {
        name: Some("fk".into()),
        columns: vec!["cid".into()],
        references: TableRef::new("main", "sales", "customers"),
        referenced_columns: vec!["id".into()],
    };
    assert_eq!(
        sql(Action::AddForeignKey { key: fk.clone() }),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `fk` FOREIGN KEY (`cid`) REFERENCES `main`.`sales`.`customers` (`id`)"
        ]
    );
    assert_eq!(
        sql(Action::DropForeignKey { key: fk }),
        vec!["ALTER TABLE `main`.`sales`.`orders` DROP FOREIGN KEY IF EXISTS (`cid`)"]
    );
    assert_eq!(
        sql(Action::SetMask {
            column: "email".into(),
            mask: Mask {
                function: "main.sec.mask_email".into(),
                using_columns: vec!["region".into()]
            }
        }),
        vec![
            "ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `email` SET MASK `main`.`sec`.`mask_email` USING COLUMNS (`region`)"
        ]
    );
    assert_eq!(
        sql(Action::SetClustering { keys: vec![] }),
        vec!["ALTER TABLE `main`.`sales`.`orders` CLUSTER BY NONE"]
    );
    assert_eq!(
        sql(Action::SetClustering {
            keys: vec!["a".into(), "b".into()]
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` CLUSTER BY (`a`, `b`)"]
    );
    assert_eq!(
        sql(Action::SetOwner {
            owner: "team`x".into()
        }),
        vec!["ALTER TABLE `main`.`sales`.`orders` SET OWNER TO `team``x`"]
    );
    assert_eq!(
        sql(Action::DropTable),
        vec!["DROP TABLE IF EXISTS `main`.`sales`.`orders`"]
    );
}
