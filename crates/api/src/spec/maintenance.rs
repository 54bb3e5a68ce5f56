//! `maintenance:` blocks: merged field by field (the table's over its
//! schema's over its target's), checked (each error names its field) and
//! lowered into the core's [`Maintenance`] with every default filled in.

use super::crd::{CheckpointSpec, CompactionSpec, MaintenanceSpec, VacuumSpec};
use super::error::SpecError;
use delta_operator_core::model::maintenance::defaults;
use delta_operator_core::model::names::printable;
use delta_operator_core::model::{Checkpointing, Compaction, Maintenance, Vacuum};

/// Delta's retention safety check: a vacuum below this many hours may
/// remove files a running reader or writer still needs.
pub const SAFE_RETAIN_HOURS: u64 = 168;

/// The smallest and largest `targetFileSize` accepted.
pub const MIN_TARGET_FILE_BYTES: u64 = 1024 * 1024;
pub const MAX_TARGET_FILE_BYTES: u64 = 1 << 40;

/// `a` where it says something, else `b`.
fn or<T: Clone>(a: &Option<T>, b: &Option<T>) -> Option<T> {
    a.clone().or_else(|| b.clone())
}

/// Merges two optional blocks field by field: `top` wins where it says something.
fn block<T>(top: &Option<T>, base: &Option<T>, merge: impl Fn(&T, &T) -> T) -> Option<T>
where
    T: Clone,
{
    match (top, base) {
        (Some(t), Some(b)) => Some(merge(t, b)),
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (None, None) => None,
    }
}

impl MaintenanceSpec {
    /// `self` over `base`, field by field.
    pub fn over(&self, base: &MaintenanceSpec) -> MaintenanceSpec {
        MaintenanceSpec {
            compaction: block(&self.compaction, &base.compaction, |t, b| CompactionSpec {
                when_small_files: or(&t.when_small_files, &b.when_small_files),
                target_file_size: or(&t.target_file_size, &b.target_file_size),
                z_order_by: or(&t.z_order_by, &b.z_order_by),
                every: or(&t.every, &b.every),
            }),
            vacuum: block(&self.vacuum, &base.vacuum, |t, b| VacuumSpec {
                retain_hours: or(&t.retain_hours, &b.retain_hours),
                allow_short_retention: or(&t.allow_short_retention, &b.allow_short_retention),
                keep_restore_points_days: or(
                    &t.keep_restore_points_days,
                    &b.keep_restore_points_days,
                ),
                every: or(&t.every, &b.every),
            }),
            checkpoint: block(&self.checkpoint, &base.checkpoint, |t, b| CheckpointSpec {
                every_versions: or(&t.every_versions, &b.every_versions),
            }),
        }
    }

    /// The core's maintenance, defaults filled in. Assumes `check` passed
    /// (an unparsable size or duration takes the default).
    pub fn lower(&self) -> Maintenance {
        Maintenance {
            compaction: self.compaction.as_ref().map(|c| Compaction {
                when_small_files: c.when_small_files.unwrap_or(defaults::WHEN_SMALL_FILES),
                target_file_bytes: c
                    .target_file_size
                    .as_deref()
                    .and_then(|s| parse_size(s).ok())
                    .unwrap_or(defaults::TARGET_FILE_BYTES),
                z_order_by: c.z_order_by.clone().unwrap_or_default(),
                every_ms: c.every.as_deref().and_then(|s| parse_duration_ms(s).ok()),
            }),
            vacuum: self.vacuum.as_ref().map(|v| Vacuum {
                retain_hours: v.retain_hours.unwrap_or(defaults::RETAIN_HOURS),
                allow_short_retention: v.allow_short_retention.unwrap_or(false),
                keep_restore_points_days: v
                    .keep_restore_points_days
                    .unwrap_or(defaults::KEEP_RESTORE_POINTS_DAYS),
                every_ms: v
                    .every
                    .as_deref()
                    .and_then(|s| parse_duration_ms(s).ok())
                    .unwrap_or(defaults::VACUUM_EVERY_MS),
            }),
            checkpoint: self.checkpoint.as_ref().map(|c| Checkpointing {
                every_versions: c
                    .every_versions
                    .unwrap_or(defaults::CHECKPOINT_EVERY_VERSIONS),
            }),
        }
    }
}

/// The table's maintenance: its own block over its schema's over its
/// target's; None when none of them declares one.
pub fn merged(
    table: Option<&MaintenanceSpec>,
    schema: Option<&MaintenanceSpec>,
    target: Option<&MaintenanceSpec>,
) -> Option<Maintenance> {
    if table.is_none() && schema.is_none() && target.is_none() {
        return None;
    }
    let none = MaintenanceSpec::default();
    let base = schema.unwrap_or(&none).over(target.unwrap_or(&none));
    Some(table.unwrap_or(&none).over(&base).lower())
}

/// A size as a Kubernetes quantity: `134217728`, `128Mi`, `1Gi`, `500M`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{}' is not a size", printable(s)))?;
    let mult: u64 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return Err(format!("'{}' has no unit a size takes", printable(s))),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{}' is too large", printable(s)))
}

/// A duration: one or more `<n><unit>` parts, units `s`, `m`, `h`, `d`
/// (`30m`, `24h`, `7d`, `1h30m`), in milliseconds; never zero.
pub fn parse_duration_ms(s: &str) -> Result<u64, String> {
    let bad = || format!("'{}' is not a duration", printable(s));
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let split = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if split == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..split].parse().map_err(|_| bad())?;
        let unit = rest[split..].chars().next().ok_or_else(bad)?;
        let ms: u64 = match unit {
            's' => 1_000,
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => 86_400_000,
            _ => return Err(bad()),
        };
        total = n
            .checked_mul(ms)
            .and_then(|x| total.checked_add(x))
            .ok_or_else(bad)?;
        rest = &rest[split + unit.len_utf8()..];
    }
    if total == 0 {
        return Err(format!("'{}' is no time at all", printable(s)));
    }
    Ok(total)
}

/// What the block is checked against: the table's declared columns, its
/// partition columns and whether it is clustered; None for a schema's or a
/// target's block (which apply to many tables).
pub struct TableColumns<'a> {
    pub known: &'a dyn Fn(&str) -> Option<SpecError>,
    pub partitioned_by: &'a [String],
    pub clustered: bool,
}

/// Every error in one `maintenance:` block at `path`.
pub fn check(
    m: &MaintenanceSpec,
    path: &str,
    table: Option<&TableColumns<'_>>,
    e: &mut Vec<SpecError>,
) {
    if let Some(c) = &m.compaction {
        let at = |f: &str| format!("{path}.compaction.{f}");
        if let Some(s) = &c.target_file_size {
            match parse_size(s) {
                Err(why) => e.push(SpecError::new(
                    at("targetFileSize"),
                    why,
                    "give a quantity such as 128Mi, 256Mi or 1Gi",
                )),
                Ok(n) if !(MIN_TARGET_FILE_BYTES..=MAX_TARGET_FILE_BYTES).contains(&n) => {
                    e.push(SpecError::new(
                        at("targetFileSize"),
                        format!("'{}' is outside 1Mi to 1Ti", printable(s)),
                        "give a size between 1Mi and 1Ti (default 128Mi)",
                    ))
                }
                Ok(_) => {}
            }
        }
        if c.when_small_files == Some(0) {
            e.push(SpecError::new(
                at("whenSmallFiles"),
                "0 would compact on every plan",
                "give at least 1 (default 100), or use `every:` for a schedule",
            ));
        }
        if let Some(every) = &c.every {
            check_duration(every, &at("every"), e);
        }
        check_z_order(c, &at("zOrderBy"), table, e);
    }
    if let Some(v) = &m.vacuum {
        let at = |f: &str| format!("{path}.vacuum.{f}");
        let hours = v.retain_hours.unwrap_or(defaults::RETAIN_HOURS);
        if hours < SAFE_RETAIN_HOURS && v.allow_short_retention != Some(true) {
            e.push(SpecError::new(
                at("retainHours"),
                format!(
                    "{hours} hours is below Delta's {SAFE_RETAIN_HOURS}-hour safety check: a reader or writer running longer may lose files it reads"
                ),
                format!(
                    "use retainHours: {SAFE_RETAIN_HOURS} or more, or set {path}.vacuum.allowShortRetention: true to accept it"
                ),
            ));
        }
        if let Some(every) = &v.every {
            check_duration(every, &at("every"), e);
        }
    }
    if let Some(c) = &m.checkpoint
        && c.every_versions == Some(0)
    {
        e.push(SpecError::new(
            format!("{path}.checkpoint.everyVersions"),
            "0 would checkpoint on every plan",
            "give at least 1 (default 100)",
        ));
    }
}

fn check_duration(s: &str, path: &str, e: &mut Vec<SpecError>) {
    if let Err(why) = parse_duration_ms(s) {
        e.push(SpecError::new(
            path,
            why,
            "give a duration such as 30m, 24h or 7d",
        ));
    }
}

fn check_z_order(
    c: &CompactionSpec,
    path: &str,
    table: Option<&TableColumns<'_>>,
    e: &mut Vec<SpecError>,
) {
    let Some(cols) = c.z_order_by.as_ref().filter(|z| !z.is_empty()) else {
        return;
    };
    let Some(table) = table else {
        e.push(SpecError::new(
            path,
            "Z-order columns are one table's columns",
            "declare zOrderBy in the DeltaTable's own spec.maintenance.compaction",
        ));
        return;
    };
    if table.clustered {
        e.push(SpecError::new(
            path,
            "a clustered table is laid out by its clusterBy keys: compaction of it is OPTIMIZE alone",
            "remove zOrderBy, or the table's clusterBy",
        ));
    }
    for (i, col) in cols.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if let Some(err) = (table.known)(col).map(|x| SpecError {
            path: at.clone(),
            ..x
        }) {
            e.push(err);
        } else if table
            .partitioned_by
            .iter()
            .any(|p| p.eq_ignore_ascii_case(col))
        {
            e.push(SpecError::new(
                at,
                format!(
                    "'{}' is a partition column: each file holds one value of it already",
                    printable(col)
                ),
                "Z-order by data columns only",
            ));
        }
        if cols[..i].iter().any(|p| p.eq_ignore_ascii_case(col)) {
            e.push(SpecError::new(
                format!("{path}[{i}]"),
                format!("'{}' is listed twice", printable(col)),
                "list each column once",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse_and_refuse() {
        assert_eq!(parse_size("128Mi"), Ok(128 << 20));
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        assert_eq!(parse_size("500M"), Ok(500_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12 MB").is_err());
        assert!(parse_size("Mi").is_err());
        assert!(parse_size("99999999999999999999Ti").is_err());
        assert_eq!(parse_duration_ms("30m"), Ok(30 * 60_000));
        assert_eq!(parse_duration_ms("24h"), Ok(86_400_000));
        assert_eq!(parse_duration_ms("7d"), Ok(7 * 86_400_000));
        assert_eq!(parse_duration_ms("1h30m"), Ok(90 * 60_000));
        for bad in ["", "h", "0h", "24", "3w", "1.5h", "-1h", "h1"] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tables_block_wins_field_by_field_over_its_schemas_and_targets() {
        let table = MaintenanceSpec {
            vacuum: Some(VacuumSpec {
                retain_hours: Some(240),
                ..Default::default()
            }),
            ..Default::default()
        };
        let schema = MaintenanceSpec {
            vacuum: Some(VacuumSpec {
                every: Some("12h".into()),
                retain_hours: Some(200),
                ..Default::default()
            }),
            checkpoint: Some(CheckpointSpec {
                every_versions: Some(10),
            }),
            ..Default::default()
        };
        let target = MaintenanceSpec {
            vacuum: Some(VacuumSpec {
                keep_restore_points_days: Some(3),
                every: Some("1d".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let m = merged(Some(&table), Some(&schema), Some(&target)).expect("declared");
        let v = m.vacuum.expect("vacuum");
        assert_eq!(v.retain_hours, 240);
        assert_eq!(v.every_ms, 12 * 3_600_000);
        assert_eq!(v.keep_restore_points_days, 3);
        assert_eq!(m.checkpoint.expect("checkpoint").every_versions, 10);
        assert!(m.compaction.is_none());
        assert_eq!(merged(None, None, None), None);
    }
}
