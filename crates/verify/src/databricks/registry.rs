//! The probe table: every Databricks probe, in the order they run, with the page
//! it cites, the assumption, why it matters and its flags.

use super::columns::*;
use super::features::*;
use super::grants::*;
use super::layout::*;
use super::objects::*;
use super::policies::*;
use super::replace::*;
use super::statements::*;
use super::{Bench, CheckFuture, Probe};
use crate::outcome::Flags;

macro_rules! probe {
    ($name:literal, $url:literal, $assumes:literal, $matters:literal, $flags:expr, $f:ident) => {{
        fn check(b: &Bench) -> CheckFuture<'_> {
            Box::pin($f(b))
        }
        Probe {
            name: $name,
            docs_url: $url,
            assumes: $assumes,
            matters: $matters,
            flags: $flags,
            check,
        }
    }};
}

const NONE: Flags = Flags {
    slow: false,
    keeps_dropped: false,
    creates_policy: false,
};
const SLOW: Flags = Flags {
    slow: true,
    keeps_dropped: false,
    creates_policy: false,
};
const KEEPS_DROPPED: Flags = Flags {
    slow: false,
    keeps_dropped: true,
    creates_policy: false,
};
const CREATES_POLICY: Flags = Flags {
    slow: false,
    keeps_dropped: false,
    creates_policy: true,
};

/// Every probe, in the order they run: stevin's 24 (docs/architecture.md §9), then ours.
pub fn all() -> Vec<Probe> {
    vec![
        // ---- stevin's 24, adapted to what our planner assumes
        probe!(
            "replace_reads_itself",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-table-using",
            "CREATE OR REPLACE TABLE t … AS SELECT … FROM t reads the table it replaces",
            "A rewrite that converts nothing is one write-once REPLACE from the table itself; if refused, every rewrite must stage a copy first.",
            NONE,
            replace_reads_itself
        ),
        probe!(
            "replace_keeps_tags_and_grants",
            "https://docs.databricks.com/aws/en/delta/drop-table",
            "CREATE OR REPLACE keeps table tags, same-name column tags and grants",
            "The REPLACE step of a rewrite plans no re-tagging or re-granting; if they are lost, the table silently loses its governance.",
            NONE,
            replace_keeps_tags_and_grants
        ),
        probe!(
            "restore_puts_back_replaced",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-restore",
            "RESTORE TABLE … TO VERSION AS OF v brings back a table's schema and rows after a REPLACE",
            "The undo of every rewrite and destructive step is RESTORE to the version recorded before it.",
            NONE,
            restore_puts_back_replaced
        ),
        probe!(
            "clone_outlives_rewrite",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-clone",
            "a shallow clone keeps reading its rows after the source is replaced",
            "cloneBeforeRewrite takes a shallow clone as the backup of a rewrite; it is only a backup if it survives the REPLACE.",
            NONE,
            clone_outlives_rewrite
        ),
        probe!(
            "replace_view_drops_governance",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-view",
            "CREATE OR REPLACE VIEW drops the view's tags, grants and properties",
            "Views are not managed yet; when they are, a replaced view must have its tags, grants and properties re-applied (stevin's rule).",
            NONE,
            replace_view_drops_governance
        ),
        probe!(
            "replace_function_drops_grants",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-sql-function",
            "CREATE OR REPLACE FUNCTION drops the function's grants",
            "Mask and row-filter functions are named, not managed; replacing one outside the operator removes EXECUTE, which breaks reads of masked tables.",
            NONE,
            replace_function_drops_grants
        ),
        probe!(
            "view_definition_as_written",
            "https://docs.databricks.com/aws/en/sql/language-manual/information-schema/views",
            "a view's VIEW_DEFINITION is its query as the CREATE VIEW sent it",
            "A DeltaView's plan compares the live definition (normalised) with the declared query; a rewritten definition would make every plan replace the view.",
            NONE,
            view_definition_as_written
        ),
        probe!(
            "comment_on_table_names_a_view",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-comment",
            "COMMENT ON TABLE sets and clears a view's comment (the statement has TABLE relation_name and no VIEW form)",
            "A DeltaView's comment change is one COMMENT ON TABLE step, not a replace of the view.",
            NONE,
            comment_on_table_names_a_view
        ),
        probe!(
            "mask_needs_existing_function",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-column-mask",
            "ALTER COLUMN … SET MASK naming a function that does not exist is refused, and accepted once it exists",
            "A table whose mask or row filter calls a declared function is ordered after it in one dependency graph.",
            NONE,
            mask_needs_existing_function
        ),
        probe!(
            "replace_function_keeps_signature",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-sql-function",
            "CREATE OR REPLACE FUNCTION with other parameter types is refused (\"You cannot replace an existing function with a different signature\")",
            "A DeltaFunction whose parameters change cannot be one CREATE OR REPLACE: it is a DROP and a CREATE, with its grants put back.",
            NONE,
            replace_function_keeps_signature
        ),
        probe!(
            "nested_not_null_alter",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "a nested field's NOT NULL is dropped and set with an ordinary ALTER COLUMN s.f",
            "Nested nullability changes are planned in place on Databricks (no rewrite).",
            NONE,
            nested_not_null_alter
        ),
        probe!(
            "identity_generated_not_addable",
            "https://docs.databricks.com/aws/en/delta/generated-columns",
            "identity and generated columns can be declared at CREATE but not added to an existing table",
            "The rule ColumnKindCannotChange refuses adding them later, and CREATE TABLE declares them inline.",
            NONE,
            identity_generated_not_addable
        ),
        probe!(
            "check_not_in_create",
            "https://docs.databricks.com/aws/en/tables/constraints",
            "a CHECK cannot be declared inside CREATE TABLE; ALTER TABLE … ADD CONSTRAINT adds it",
            "CREATE TABLE never carries CHECKs: each is its own ADD CONSTRAINT step after the create.",
            NONE,
            check_not_in_create
        ),
        probe!(
            "metadata_widenings_allowed",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "every widening our matrix calls in-place is accepted by ALTER COLUMN … TYPE with type widening on",
            "These type changes are planned as one in-place ALTER after the enable typeWidening step, without a rewrite.",
            NONE,
            metadata_widenings_allowed
        ),
        probe!(
            "nested_changes_in_place",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "map values and keys and array elements widen in place by their path (counters.value, ids.key, scores.element), a nullable field is added inside an array's structs (items.element.unit_price), and a struct field is dropped under column mapping (address.legacy_code)",
            "Nested widenings, adds and drops are planned in place, never as a rewrite of the table (a whole-map ALTER … TYPE is refused: CANNOT_UPDATE_FIELD.MAP_TYPE).",
            NONE,
            nested_changes_in_place
        ),
        probe!(
            "rewrite_widenings_refused",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "the type changes our matrix calls rewrites are refused in place (tinyint→decimal(5,0), bigint→decimal(19,0), narrowing, to string)",
            "These changes are planned as a staged rewrite; if Databricks took them in place, the rewrite would be unnecessary (not unsafe).",
            NONE,
            rewrite_widenings_refused
        ),
        probe!(
            "cluster_keys_at_most_4",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "liquid clustering takes at most 4 keys: 4 are accepted and read back, 5 are refused",
            "Validation refuses clusterBy with more than 4 columns before anything is planned.",
            NONE,
            cluster_keys_at_most_4
        ),
        probe!(
            "cluster_by_auto",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "CLUSTER BY AUTO is accepted and reads back",
            "Automatic clustering can be declared; a table with it must read back as such, or every plan would show drift.",
            NONE,
            cluster_by_auto
        ),
        probe!(
            "partition_after_cluster_none",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "a clustered table can be replaced as a partitioned one after ALTER TABLE … CLUSTER BY NONE",
            "A clustering → partitioning change is a CLUSTER BY NONE step followed by the rebuild.",
            NONE,
            partition_after_cluster_none
        ),
        probe!(
            "insert_overwrite_column_list",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-dml-insert-into",
            "INSERT OVERWRITE t (cols) SELECT … is accepted and replaces the rows",
            "A rewrite can write the converted rows back into the same table with an explicit column list.",
            NONE,
            insert_overwrite_column_list
        ),
        probe!(
            "undrop_brings_back",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-undrop-table",
            "UNDROP TABLE brings back a dropped table with its rows and properties (our owner marker)",
            "UNDROP is the undo shown for every DROP TABLE step, and the owner marker must come back with it.",
            KEEPS_DROPPED,
            undrop_brings_back
        ),
        probe!(
            "ansi_mode",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-ansi-compliance",
            "the warehouse runs in ANSI mode: a cast that cannot convert fails instead of giving NULL",
            "A rewrite's conversion relies on failing casts; without ANSI mode a bad value would become NULL (the NULL check still catches it, later).",
            NONE,
            ansi_mode
        ),
        probe!(
            "missing_catalog_is_error",
            "https://docs.databricks.com/api/workspace/tables/list",
            "listing tables of a catalog that does not exist is an error, not an empty schema",
            "Reads list a schema's tables through Unity Catalog; an empty answer for a missing catalog would plan every table as a create.",
            NONE,
            missing_catalog_is_error
        ),
        probe!(
            "schema_grant_not_table_grant",
            "https://docs.databricks.com/aws/en/sql/language-manual/information-schema/table_privileges",
            "a grant on the schema does not read as a grant on its tables (our read keeps inherited_from = 'NONE')",
            "Grants are diffed per table; an inherited grant read as a direct one would be revoked by the next plan.",
            NONE,
            schema_grant_not_table_grant
        ),
        probe!(
            "table_privileges_inherited_from",
            "https://docs.databricks.com/aws/en/sql/language-manual/information-schema/table_privileges",
            "information_schema.table_privileges marks a direct grant inherited_from = 'NONE' and names where an inherited one comes from",
            "Our read takes a table's own grants as the rows with inherited_from = 'NONE'.",
            NONE,
            table_privileges_inherited_from
        ),
        probe!(
            "mv_left_alone",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-materialized-view",
            "a materialized view is listed with table_type MATERIALIZED_VIEW, which our read tells apart from a table",
            "Materialized views and streaming tables are read as what they are: governed at the annotation scopes only, never shaped, never orphans.",
            SLOW,
            mv_left_alone
        ),
        probe!(
            "effective_policies_columns",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-aux-show-policies",
            "SHOW EFFECTIVE POLICIES ON TABLE lists a schema's ABAC policy with the documented columns",
            "A mask or row filter beside an ABAC policy of the same kind must be cautioned; the policies are read from this statement.",
            CREATES_POLICY,
            effective_policies_columns
        ),
        probe!(
            "no_policy_lists_none",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-aux-show-policies",
            "SHOW EFFECTIVE POLICIES ON TABLE for a table under no policy returns no rows, without error",
            "Reading policies must not fail (or invent policies) for the common table without any.",
            NONE,
            no_policy_lists_none
        ),
        probe!(
            "describe_policy_shape",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-aux-describe-policy",
            "DESCRIBE POLICY names the policy's function and principals",
            "The caution for a mask beside an ABAC policy names the policy's function and who it applies to.",
            CREATES_POLICY,
            describe_policy_shape
        ),
        // ---- ours: Capabilities::databricks(), the rules and the SQL we compile
        probe!(
            "widening_needs_feature",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "without delta.enableTypeWidening an in-place widening is refused; after our enable step it is accepted",
            "Capabilities: widening_needs_feature — every in-place widening is preceded by the [feature] enable typeWidening step.",
            NONE,
            widening_needs_feature
        ),
        probe!(
            "rename_needs_column_mapping",
            "https://docs.databricks.com/aws/en/delta/column-mapping",
            "RENAME COLUMN is refused without column mapping, and accepted (keeping the values) after our enable columnMapping step",
            "Capabilities: rename_column in place, rename_drop_need_column_mapping — a rename is planned as enable columnMapping + RENAME COLUMN.",
            NONE,
            rename_needs_column_mapping
        ),
        probe!(
            "drop_needs_column_mapping",
            "https://docs.databricks.com/aws/en/delta/column-mapping",
            "DROP COLUMN is refused without column mapping, and accepted after our enable columnMapping step",
            "Capabilities: drop_column in place after enable columnMapping.",
            NONE,
            drop_needs_column_mapping
        ),
        probe!(
            "column_mapping_irreversible",
            "https://docs.databricks.com/aws/en/delta/column-mapping",
            "once on, column mapping cannot be set back to 'none'",
            "The rule PropertyTransitionNotSupported refuses name → none; if Databricks allows it, the rule is stricter than needed.",
            NONE,
            column_mapping_irreversible
        ),
        probe!(
            "set_not_null_in_place",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "ALTER COLUMN … SET NOT NULL works in place on a column without NULLs and is refused while NULLs exist",
            "Capabilities: set_not_null in place — SET NOT NULL is one ALTER, and a column with NULLs is refused by Databricks, not rewritten.",
            NONE,
            set_not_null_in_place
        ),
        probe!(
            "drop_not_null_in_place",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "ALTER COLUMN … DROP NOT NULL works in place",
            "Relaxing nullability is a [meta] step.",
            NONE,
            drop_not_null_in_place
        ),
        probe!(
            "restore_undoes_drop_column",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-restore",
            "our undo of DROP COLUMN (RESTORE to the version before) brings the column back with its values",
            "Dropping a column is destructive but in place; the plan's undo line promises RESTORE gets it back.",
            NONE,
            restore_undoes_drop_column
        ),
        probe!(
            "check_validates_existing_rows",
            "https://docs.databricks.com/aws/en/tables/constraints",
            "ADD CONSTRAINT … CHECK is refused when existing rows break it, and is stored as delta.constraints.<name>",
            "The CHECK step warns that every row is validated; our read takes CHECKs from the delta.constraints.* properties.",
            NONE,
            check_validates_existing_rows
        ),
        probe!(
            "default_needs_feature",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "SET DEFAULT is refused until delta.feature.allowColumnDefaults = 'supported'; our compiled step enables it first",
            "A default on an existing table compiles to the feature property and then SET DEFAULT.",
            NONE,
            default_needs_feature
        ),
        probe!(
            "cluster_by_in_place",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "ALTER TABLE … CLUSTER BY (…) and CLUSTER BY NONE change an unpartitioned table's keys in place",
            "Capabilities: clustering — a clusterBy change is one [meta] step, never a rewrite.",
            NONE,
            cluster_by_in_place
        ),
        probe!(
            "comments_clear",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-comment",
            "COMMENT ON TABLE … IS NULL and ALTER COLUMN … COMMENT '' clear comments",
            "A comment removed from the spec compiles to these (warehouses refuse UNSET COMMENT).",
            NONE,
            comments_clear
        ),
        probe!(
            "hostile_names_round_trip",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-identifiers",
            "column names and comments with quotes, backslashes, ${…}, newlines and unicode round-trip exactly through our quoting and our read",
            "Every identifier and literal we write goes through sql::ident and sql::literal; a mismatch would show as drift forever.",
            NONE,
            hostile_names_round_trip
        ),
        probe!(
            "primary_key_statements",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-add-constraint",
            "DROP PRIMARY KEY IF EXISTS is a no-op without a key, ADD CONSTRAINT … PRIMARY KEY works on NOT NULL columns, and the name reads back lower-cased",
            "SetPrimaryKey compiles to DROP PRIMARY KEY IF EXISTS + ADD CONSTRAINT; declared key names must be lower case to match.",
            NONE,
            primary_key_statements
        ),
        probe!(
            "history_gives_version",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-describe-history",
            "DESCRIBE HISTORY … LIMIT 1 has a version column that grows by one per commit",
            "The executor records this version as the restore point before every risky step.",
            NONE,
            history_gives_version
        ),
        probe!(
            "clone_copies_owner_marker",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-clone",
            "a shallow clone copies the source's properties, our owner marker included, and unsetting it on the clone leaves the source's",
            "A backup clone looks like a table of the same resource until its marker is unset; orphan detection depends on the marker.",
            NONE,
            clone_copies_owner_marker
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// `--only` and the report name probes: each name once, each with its page.
    #[test]
    fn every_probe_has_one_name_a_page_and_its_sentences() {
        let all = all();
        let names: BTreeSet<&str> = all.iter().map(|p| p.name).collect();
        assert_eq!(names.len(), all.len());
        for p in &all {
            assert!(p.docs_url.starts_with("https://"), "{}", p.name);
            assert!(!p.assumes.is_empty() && !p.matters.is_empty(), "{}", p.name);
        }
        assert!(
            all.len() >= 24,
            "the 24 of docs/architecture.md §9, then ours"
        );
    }

    #[test]
    fn the_flagged_probes_are_the_slow_the_policy_and_the_dropping_ones() {
        let all = all();
        let flagged = |f: fn(&Flags) -> bool| -> Vec<&str> {
            all.iter().filter(|p| f(&p.flags)).map(|p| p.name).collect()
        };
        assert!(flagged(|f| f.slow).contains(&"mv_left_alone"));
        assert!(!flagged(|f| f.creates_policy).is_empty());
        assert!(!flagged(|f| f.keeps_dropped).is_empty());
    }
}
