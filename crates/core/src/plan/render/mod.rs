//! Renderers: text for terminals and status, markdown for pull-request
//! comments, versioned JSON for machines (its top-level `id` is the plan id).

pub mod json;
pub mod markdown;
pub mod text;

/// `384 GiB`, `1.4 MiB`: sizes in binary units, as the warehouse and `du -h` count them.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v >= 100.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The totals both renderers print: what changes, then the step counts.
pub fn totals(s: &crate::plan::Summary) -> (String, String) {
    (
        format!(
            "{} to add, {} to change, {} to destroy",
            s.add, s.change, s.destroy
        ),
        format!(
            "{} · {} · {}{}",
            plural(s.steps, "step"),
            plural(s.rewrites, "rewrite"),
            plural(s.warnings, "warning"),
            if s.maintenance > 0 {
                format!(" · {} maintenance", s.maintenance)
            } else {
                String::new()
            }
        ),
    )
}

/// What was refused: `2 tables`, `1 schema and 1 table`, `1 table and 2 views, functions or volumes`.
pub fn refused(plan: &crate::plan::Plan) -> String {
    let schemas = plan.schemas.iter().filter(|s| !s.is_accepted()).count();
    let objects = plan.objects.iter().filter(|o| o.is_refused()).count();
    let tables = plan.summary.rejected.saturating_sub(schemas + objects);
    let mut parts = vec![];
    if schemas > 0 {
        parts.push(plural(schemas, "schema"));
    }
    if tables > 0 || schemas + objects == 0 {
        parts.push(plural(tables, "table"));
    }
    if objects > 0 {
        parts.push(
            plural(objects, "view, function or volume")
                .replace("view, function or volumes", "views, functions or volumes"),
        );
    }
    parts.join(" and ")
}

/// `1 step`, `2 steps`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes() {
        assert_eq!(super::human_bytes(0), "0 B");
        assert_eq!(super::human_bytes(1023), "1023 B");
        assert_eq!(super::human_bytes(1_500_000), "1.4 MiB");
        assert_eq!(super::human_bytes(412_000_000_000), "384 GiB");
        assert_eq!(super::human_bytes(3 << 30), "3.0 GiB");
    }
}
