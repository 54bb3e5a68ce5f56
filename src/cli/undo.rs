//! `restore` and `undrop`: the undo of a plan's step, as a command that works
//! where the table is. On the lake (no SQL engine) these are the undo lines
//! plans print; on a Databricks target they refuse and print the SQL to run
//! in the workspace, since RESTORE and UNDROP are one statement there.

use std::time::Duration;

use super::{CliError, Exit, open_backend};
use crate::backend::AnyBackend;
use crate::backend::lake::undo::Restored;
use crate::config::Config;
use crate::model::TableRef;
use crate::model::names::{MAX_NAME_BYTES, object_name_problem, printable};

#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// `catalog.schema.table`.
    pub table: String,
    /// The Delta version to go back to (required): a plan's undo line, or a restore point of the apply.
    #[arg(long = "version", allow_hyphen_values = true, value_name = "N")]
    pub version: Option<String>,
    /// The target (default: the config's default target).
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// How long to wait for an apply holding the table: 30s, 2m.
    #[arg(long, default_value = "30s", value_parser = super::parse_duration)]
    pub lock_wait: Duration,
}

#[derive(clap::Args, Debug)]
pub struct UndropArgs {
    /// `catalog.schema.table`.
    pub table: String,
    /// Which dropped copy, when the table was dropped more than once (the refusal lists them).
    #[arg(long, value_name = "ENTRY")]
    pub from: Option<String>,
    /// The target (default: the config's default target).
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// How long to wait for an apply holding the table: 30s, 2m.
    #[arg(long, default_value = "30s", value_parser = super::parse_duration)]
    pub lock_wait: Duration,
}

/// `catalog.schema.table`, each part a name the lake can hold (no `/`, `\`,
/// `..`, control characters, `_delta_log`): the message names the argument and the fix.
pub fn parse_table(arg: &str) -> Result<TableRef, String> {
    let parts: Vec<&str> = arg.split('.').collect();
    let [catalog, schema, table] = parts[..] else {
        return Err(format!(
            "TABLE '{}': expected catalog.schema.table (three names joined by '.'), e.g. main.sales.orders",
            printable(arg)
        ));
    };
    for (what, name) in [("catalog", catalog), ("schema", schema), ("table", table)] {
        if let Some((problem, fix)) = object_name_problem(name, MAX_NAME_BYTES) {
            return Err(format!(
                "TABLE '{}': the {what} name {problem}; {fix}",
                printable(arg)
            ));
        }
    }
    Ok(TableRef::new(catalog, schema, table))
}

/// `--version`: a whole number from 0 up.
pub fn parse_version(arg: Option<&str>) -> Result<u64, String> {
    let Some(arg) = arg else {
        return Err("--version N is required: the Delta version to go back to, as the plan's undo line or the apply's restore point names it".into());
    };
    arg.trim().parse::<u64>().map_err(|_| {
        format!(
            "--version '{}': a Delta version is a whole number from 0 up (at most {}), as the plan's undo line or the apply's restore point shows it",
            printable(arg),
            u64::MAX
        )
    })
}

const REVERT_FIRST: &str = "If a manifest declares this table, revert it in Git (or wherever it is applied from) as well: otherwise the next apply, or the operator at its next reconcile, plans the same change again.";

fn open(config: &Config, target: Option<&str>) -> Result<(String, AnyBackend), CliError> {
    let target = target
        .map(str::to_string)
        .unwrap_or_else(|| config.default_target_name());
    let backend = open_backend(config, &target)?;
    Ok((target, backend))
}

pub async fn restore(config: &Config, a: RestoreArgs) -> Result<Exit, CliError> {
    let (t, version) = match (parse_table(&a.table), parse_version(a.version.as_deref())) {
        (Ok(t), Ok(v)) => (t, v),
        (Err(e), _) | (_, Err(e)) => return Err(CliError::Usage(e)),
    };
    let (target, backend) = open(config, a.target.as_deref())?;
    let lake = match &backend {
        AnyBackend::Lake(l) => l,
        // a Spark Connect target's tables are Delta folders under its root: the lake undoes
        AnyBackend::Spark(s) => s.lake(),
        AnyBackend::Databricks(_) => {
            return Err(CliError::Usage(format!(
                "target '{target}' is a Databricks workspace: `restore` works on lake targets. Run in the workspace (a SQL warehouse or notebook): RESTORE TABLE {} TO VERSION AS OF {version}",
                crate::backend::sql::table_name(&t)
            )));
        }
    };
    match lake.restore(&t, version, a.lock_wait).await? {
        Restored::AlreadyThere { version } => {
            println!("{t} is at version {version} already: nothing to restore");
            Ok(Exit::Ok)
        }
        Restored::Committed {
            was,
            to,
            now,
            files_added,
            files_removed,
        } => {
            println!(
                "restored {t} to version {to}: committed version {now} (was {was}; {files_added} data files back, {files_removed} removed). Its rows, schema, properties and CHECK constraints are version {to}'s."
            );
            println!("{REVERT_FIRST}");
            println!("Undo this restore: delta-operator restore {t} --version {was}");
            Ok(Exit::Ok)
        }
    }
}

pub async fn undrop(config: &Config, a: UndropArgs) -> Result<Exit, CliError> {
    let t = parse_table(&a.table).map_err(CliError::Usage)?;
    let (target, backend) = open(config, a.target.as_deref())?;
    let lake = match &backend {
        AnyBackend::Lake(l) => l,
        // a Spark Connect target's tables are Delta folders under its root: the lake undoes
        AnyBackend::Spark(s) => s.lake(),
        AnyBackend::Databricks(_) => {
            return Err(CliError::Usage(format!(
                "target '{target}' is a Databricks workspace: `undrop` works on lake targets. Run in the workspace: UNDROP TABLE {}",
                crate::backend::sql::table_name(&t)
            )));
        }
    };
    let (entry, version) = lake.undrop(&t, a.from.as_deref(), a.lock_wait).await?;
    println!(
        "undropped {t}: moved back from {} (version {})",
        entry.location,
        version.map_or("?".into(), |v| v.to_string())
    );
    println!("{REVERT_FIRST}");
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_three_lake_names() {
        assert_eq!(
            parse_table("main.sales.orders").unwrap(),
            TableRef::new("main", "sales", "orders")
        );
        for bad in [
            "orders",
            "main.sales",
            "a.b.c.d",
            "main..orders",
            "main.sales..",
            "../etc.sales.orders",
            "main.sa/les.orders",
            "main.sales.o\\rders",
            "main.sales._delta_log",
            "main.sales.\u{1b}[2J",
            "",
        ] {
            let e = parse_table(bad).unwrap_err();
            assert!(e.starts_with("TABLE '"), "{bad:?}: {e}");
            assert!(!e.contains('\u{1b}'), "escaped: {e}");
        }
    }

    #[test]
    fn versions_are_whole_numbers() {
        assert_eq!(parse_version(Some("0")).unwrap(), 0);
        assert_eq!(
            parse_version(Some("18446744073709551615")).unwrap(),
            u64::MAX
        );
        assert!(parse_version(None).unwrap_err().contains("is required"));
        for bad in ["-1", "18446744073709551616", "2.5", "", "two", "1e3"] {
            let e = parse_version(Some(bad)).unwrap_err();
            assert!(
                e.starts_with("--version '") && e.contains("whole number"),
                "{e}"
            );
        }
    }
}
