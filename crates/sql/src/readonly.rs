//! Statements that only read: the ones this crate writes for a plan's
//! measurements, and how a runner recognises any statement that only reads
//! (safe to send again when a connection drops).

use delta_operator_core::model::TableRef;

use crate::quote::Names;

/// The table's size and file count (`sizeInBytes`), for a plan that rewrites or scans it.
pub fn describe_detail(names: &Names, t: &TableRef) -> String {
    format!("DESCRIBE DETAIL {}", names.table(t))
}

/// The table's current Delta version (the restore point).
pub fn history_head(names: &Names, t: &TableRef) -> String {
    format!("DESCRIBE HISTORY {} LIMIT 1", names.table(t))
}

/// The table's newest `limit` versions, for the windows of its restore points.
pub fn history_recent(names: &Names, t: &TableRef, limit: usize) -> String {
    format!("DESCRIBE HISTORY {} LIMIT {limit}", names.table(t))
}

/// A statement that only reads: safe to send again when a connection drops.
pub fn is_read_only(statement: &str) -> bool {
    let first = statement
        .trim_start()
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    ["SELECT", "DESCRIBE", "SHOW", "WITH", "DESC", "EXPLAIN"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_statements() {
        assert!(is_read_only("  select 1"));
        assert!(is_read_only("DESCRIBE HISTORY t LIMIT 1"));
        assert!(is_read_only("SHOW TABLES"));
        assert!(!is_read_only("ALTER TABLE t ADD COLUMN x int"));
        assert!(!is_read_only("CREATE TABLE t (a int)"));
        assert!(!is_read_only("selective"));
    }
}
