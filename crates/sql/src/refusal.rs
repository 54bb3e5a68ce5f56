//! A statement's refusal as the engine wrote it, plus advice where we know
//! something.
//!
//! The engine's words are never rewritten: the message comes first,
//! verbatim, then the facts that identify it (error code, SQLSTATE, HTTP
//! status, statement and request ids), then at most one paragraph of advice
//! for failures we recognise. Nothing is added for failures we do not.

use std::fmt;

/// One failure reported by the engine: a statement that ended FAILED, or
/// (over HTTP) a refused request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status of a refused request (runners that speak HTTP).
    pub http_status: Option<u16>,
    /// The engine's error code or condition (`BAD_REQUEST`, `DELTA_CONCURRENT_APPEND`, …).
    pub error_code: Option<String>,
    pub sql_state: Option<String>,
    pub message: String,
    /// The request's id, where the engine gives one.
    pub request_id: Option<String>,
    pub statement_id: Option<String>,
}

impl Refusal {
    /// The Spark error class: `[CLASS]` or `[CLASS.SUB]` leading the message, or `ErrorClass=CLASS`.
    pub fn error_class(&self) -> Option<&str> {
        let m = self.message.trim_start();
        if let Some(rest) = m.strip_prefix('[') {
            let end = rest.find(']')?;
            let class = &rest[..end];
            if !class.is_empty()
                && class
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '.')
            {
                return Some(class);
            }
        }
        let at = m.find("ErrorClass=")? + "ErrorClass=".len();
        let class = &m[at..];
        let end = class
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '.'))
            .unwrap_or(class.len());
        (end > 0).then(|| &class[..end])
    }

    /// One paragraph of advice, or none.
    pub fn advice(&self) -> Option<&'static str> {
        advice(self)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        let mut facts = Vec::new();
        if let Some(c) = &self.error_code {
            facts.push(format!("error_code {c}"));
        }
        if let Some(s) = &self.sql_state {
            facts.push(format!("SQLSTATE {s}"));
        }
        if let Some(s) = self.http_status {
            facts.push(format!("HTTP {s}"));
        }
        if let Some(s) = &self.statement_id {
            facts.push(format!("statement {s}"));
        }
        if let Some(r) = &self.request_id {
            facts.push(format!("request id {r}"));
        }
        if !facts.is_empty() {
            write!(f, "\n({})", facts.join(" · "))?;
        }
        if let Some(a) = self.advice() {
            write!(f, "\n\nadvice: {a}")?;
        }
        Ok(())
    }
}

/// What triggers a piece of advice.
enum Trigger {
    /// The error class, by prefix (`QUOTA_EXCEEDED` also matches `QUOTA_EXCEEDED.X`).
    Class(&'static str),
    /// The envelope's or the statement's `error_code`.
    Code(&'static str),
    /// Text anywhere in the message (case-insensitive).
    Text(&'static str),
    Http(u16),
}

/// stevin's list (docs/architecture.md §9), then ours. Order matters: the first match wins.
const ADVICE: &[(Trigger, &str)] = &[
    (
        Trigger::Class("QUOTA_EXCEEDED_EXCEPTION"),
        "This is the limit on active pipelines (materialized views and streaming tables), not on tables.",
    ),
    (
        Trigger::Class("QUOTA_EXCEEDED"),
        "Unity Catalog counts a created table at once and a dropped one late: a dropped table still counts while it can be UNDROPped. Reading the quota (resource-quotas API) triggers a recount, which takes about 30 minutes. On test schemas, ALTER SCHEMA … SET RETAIN DROPPED TO 0 HOURS; the limits can be raised with Databricks support.",
    ),
    (
        Trigger::Class("TABLE_OR_VIEW_NOT_FOUND"),
        "Databricks reports a missing table, schema or catalog all the same way. The operator never creates catalogs or schemas: check that they exist and that the principal has USE CATALOG and USE SCHEMA on them. Objects a mask, filter or foreign key names must exist before the step runs.",
    ),
    (
        Trigger::Class("DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT"),
        "Column mapping, type widening and column defaults are enabled by their own planned steps; any other table feature has to be enabled by hand (the property delta.feature.<name> = 'supported') or declared in the table's properties.",
    ),
    (
        Trigger::Class("UNSUPPORTED_OVERWRITE"),
        "This runtime will not let a statement read the table it overwrites, so a rewrite from the table itself cannot run here.",
    ),
    (
        Trigger::Class("SPECIFY_CLUSTER_BY_WITH_PARTITIONED_BY_IS_NOT_ALLOWED"),
        "A table is either partitioned or clustered: declare partitionedBy: [] to cluster it.",
    ),
    (
        Trigger::Class("DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED"),
        "A partitioned table can only become clustered by a rebuild; the plan should have said so. Please report this plan as a bug.",
    ),
    (
        Trigger::Class("DELTA_CLUSTERING_TO_PARTITIONED_TABLE_WITH_NON_EMPTY_CLUSTERING_COLUMNS"),
        "The clustering has to be removed (ALTER TABLE … CLUSTER BY NONE) before the table can be partitioned; that step did not run.",
    ),
    (
        Trigger::Class("UC_UNDROP_RESOURCE_PAST_CUSTOM_RETENTION_PERIOD"),
        "The table is past its recovery period and cannot be UNDROPped. While a table exists, RESTORE TABLE … TO VERSION AS OF brings back an earlier version.",
    ),
    (
        Trigger::Class("DELTA_UNSUPPORTED_DROP_COLUMN"),
        "Dropping a column needs column mapping (delta.columnMapping.mode = 'name'); the plan's enable columnMapping step must run first.",
    ),
    (
        Trigger::Class("DELTA_UNSUPPORTED_RENAME_COLUMN"),
        "Renaming a column needs column mapping (delta.columnMapping.mode = 'name'); the plan's enable columnMapping step must run first.",
    ),
    (
        Trigger::Class("DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"),
        "Delta changes a column's type in place only for widenings it supports, with delta.enableTypeWidening = 'true' (tinyint→decimal needs at least 10 integer digits, bigint→decimal at least 20); anything else needs a rewrite.",
    ),
    (
        Trigger::Class("DELTA_NOT_NULL_CONSTRAINT_VIOLATED"),
        "The column still holds NULLs. Fill them first (for example with a using: expression and a rewrite), then set NOT NULL.",
    ),
    (
        // Apache Spark's analyzer (OSS Delta) refuses nullable → NOT NULL; Databricks does not
        Trigger::Text("Cannot change nullable column to non-nullable"),
        "This engine cannot make a column NOT NULL in place: Apache Spark and OSS Delta refuse ALTER COLUMN … SET NOT NULL (a Databricks SQL warehouse runs it after checking the data). Nothing was changed. Keep the column nullable (a CHECK (column IS NOT NULL) constraint enforces the same for new rows), or run this plan on a Databricks warehouse.",
    ),
    (
        Trigger::Class("DELTA_NEW_CHECK_CONSTRAINT_VIOLATION"),
        "Existing rows break the new CHECK; Delta validates every row when a CHECK is added. Fix those rows, or the expression, and apply again.",
    ),
    (
        Trigger::Class("UNRESOLVED_ROUTINE"),
        "A mask or row filter names a function that does not exist or that the principal cannot see; it must be a Unity Catalog SQL function, with EXECUTE granted.",
    ),
    (
        Trigger::Class("PERMISSION_DENIED"),
        "The principal the operator runs as lacks a privilege on this object (MODIFY for column and property changes, ownership or MANAGE for owner, grants, masks and filters, APPLY TAG for tags), or USE CATALOG / USE SCHEMA on its parents.",
    ),
    (
        Trigger::Code("PERMISSION_DENIED"),
        "The principal the operator runs as lacks a privilege on this object (MODIFY for column and property changes, ownership or MANAGE for owner, grants, masks and filters, APPLY TAG for tags), or USE CATALOG / USE SCHEMA on its parents.",
    ),
    (
        Trigger::Text("could not be processed by the warehouse"),
        "The warehouse is stopped or cannot start (often serverless without capacity or entitlement). Check its state in the SQL Warehouses page; the operator starts a stopped warehouse and waits for it.",
    ),
    (
        Trigger::Text("Cannot create the resource, please try again later"),
        "The workspace has no capacity (or no entitlement) for this warehouse right now; nothing ran. Try again later, or use another warehouse.",
    ),
    (
        Trigger::Code("UNAUTHENTICATED"),
        "The credential was refused. Set DATABRICKS_TOKEN (a personal access token) or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET (a service principal), or the target's auth in the operator config; a token may have expired.",
    ),
    (
        Trigger::Text("invalid_client"),
        "The OAuth client id or secret was refused: check DATABRICKS_CLIENT_ID / DATABRICKS_CLIENT_SECRET (or the target's auth) and that the service principal has an OAuth secret in this workspace.",
    ),
    (
        Trigger::Http(401),
        "The credential was refused. Set DATABRICKS_TOKEN (a personal access token) or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET (a service principal), or the target's auth in the operator config; a token may have expired.",
    ),
    (
        Trigger::Code("RESOURCE_DOES_NOT_EXIST"),
        "The workspace does not know this object. For a warehouse, check the target's warehouseId (the id in the warehouse's connection details, not its name).",
    ),
    (
        Trigger::Code("REQUEST_LIMIT_EXCEEDED"),
        "The workspace kept rate-limiting after the retry budget was spent: fewer concurrent reconciles against this workspace help.",
    ),
];

fn advice(e: &Refusal) -> Option<&'static str> {
    let class = e.error_class();
    let lower = e.message.to_lowercase();
    ADVICE.iter().find_map(|(t, a)| {
        let hit = match t {
            Trigger::Class(c) => class
                .is_some_and(|k| k == *c || k.strip_prefix(c).is_some_and(|r| r.starts_with('.'))),
            Trigger::Code(c) => e.error_code.as_deref() == Some(*c),
            Trigger::Text(s) => lower.contains(&s.to_lowercase()),
            Trigger::Http(s) => e.http_status == Some(*s),
        };
        hit.then_some(*a)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_by_prefix_and_unknown_gets_nothing() {
        let e = |m: &str| Refusal {
            message: m.into(),
            ..Default::default()
        };
        assert!(
            e("[QUOTA_EXCEEDED.TABLES] too many")
                .advice()
                .is_some_and(|a| a.contains("UNDROP"))
        );
        assert!(
            e("[QUOTA_EXCEEDED_EXCEPTION] pipelines")
                .advice()
                .is_some_and(|a| a.contains("pipelines"))
        );
        assert_eq!(
            e("org.apache.spark.SparkException: ErrorClass=UNSUPPORTED_OVERWRITE x").error_class(),
            Some("UNSUPPORTED_OVERWRITE")
        );
        assert_eq!(e("[SOMETHING_NEW] who knows").advice(), None);
        assert_eq!(e("plain words").error_class(), None);
        assert!(
            e("Statement could not be processed by the warehouse")
                .advice()
                .is_some()
        );
    }
}
