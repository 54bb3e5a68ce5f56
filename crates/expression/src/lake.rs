//! What of the allow list the lake's engine lacks. The lake runs a `using:` and
//! checks a CHECK with DataFusion (inside delta-rs), whose function names are not
//! all Spark's: a name it does not know fails the apply ("Invalid function"), and
//! a CHECK calling a function by one of DataFusion's alias names cannot be stored
//! (DataFusion's planner wraps the call in an alias, which delta-rs cannot print
//! back: "Unable to convert expression to string"). Both are refused on a lake
//! target before anything runs. The lists are measured, not guessed: the lake's
//! test `lake_functions` derives them from DataFusion and fails when they drift.

use crate::ParsedExpr;

/// Functions of `ALLOWED_FUNCTIONS` that DataFusion does not have: a call to one
/// fails on the lake, in a CHECK and in a `using:` alike.
pub const LAKE_MISSING_FUNCTIONS: &[&str] = &[
    "add_months",
    "array",
    "array_size",
    "base64",
    "bigint",
    "bin",
    "binary",
    "boolean",
    "ceiling",
    "char",
    "crc32",
    "date",
    "date_add",
    "date_diff",
    "date_from_unix_date",
    "date_sub",
    "dateadd",
    "datediff",
    "day",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "decimal",
    "double",
    "e",
    "endswith",
    "expm1",
    "extract",
    "float",
    "from_utc_timestamp",
    "get_json_object",
    "hash",
    "hex",
    "hour",
    "hypot",
    "if",
    "ilike",
    "int",
    "isnotnull",
    "isnull",
    "last_day",
    "lcase",
    "len",
    "like",
    "locate",
    "log1p",
    "make_timestamp",
    "map_contains_key",
    "minute",
    "mod",
    "month",
    "months_between",
    "negative",
    "next_day",
    "not",
    "pmod",
    "positive",
    "quarter",
    "regexp",
    "regexp_extract",
    "regexp_substr",
    "rint",
    "rlike",
    "second",
    "sha",
    "sha1",
    "sha2",
    "sign",
    "size",
    "smallint",
    "space",
    "split",
    "startswith",
    "string",
    "timestamp",
    "timestamp_micros",
    "timestamp_millis",
    "timestamp_seconds",
    "tinyint",
    "to_utc_timestamp",
    "try_add",
    "try_divide",
    "try_multiply",
    "try_subtract",
    "typeof",
    "ucase",
    "unbase64",
    "unhex",
    "unix_date",
    "unix_micros",
    "unix_millis",
    "unix_seconds",
    "weekday",
    "weekofyear",
    "xxhash64",
    "year",
];

/// What to write instead of some of `LAKE_MISSING_FUNCTIONS`, over a column `x`: the
/// same value in a form both Delta and the lake evaluate (held true by the lake's test).
pub const LAKE_EQUIVALENTS: &[(&str, &str)] = &[
    ("ucase", "upper(x)"),
    ("lcase", "lower(x)"),
    ("len", "character_length(x)"),
    ("ceiling", "ceil(x)"),
    ("isnull", "x IS NULL"),
    ("isnotnull", "x IS NOT NULL"),
    ("year", "EXTRACT(YEAR FROM x)"),
    ("quarter", "EXTRACT(QUARTER FROM x)"),
    ("month", "EXTRACT(MONTH FROM x)"),
    ("day", "EXTRACT(DAY FROM x)"),
    ("dayofmonth", "EXTRACT(DAY FROM x)"),
    ("hour", "EXTRACT(HOUR FROM x)"),
    ("minute", "EXTRACT(MINUTE FROM x)"),
    ("second", "EXTRACT(SECOND FROM x)"),
    ("if", "CASE WHEN x THEN 1 ELSE 0 END"),
];

/// Functions of `ALLOWED_FUNCTIONS` that DataFusion has only as an alias of
/// another name (Spark's name, DataFusion's name): a CHECK calling one cannot be
/// stored by delta-rs, a CHECK calling DataFusion's name can. (A `using:` is only
/// evaluated, never stored: there the alias works.)
pub const LAKE_ALIASES: &[(&str, &str)] = &[
    ("array_contains", "array_has"),
    ("array_join", "array_to_string"),
    ("arrays_overlap", "array_has_any"),
    ("char_length", "character_length"),
    ("date_format", "to_char"),
    ("datepart", "date_part"),
    ("element_at", "map_extract"),
    ("ifnull", "nvl"),
    ("instr", "strpos"),
    ("length", "character_length"),
    ("position", "strpos"),
    ("pow", "power"),
    ("substring_index", "substr_index"),
];

/// Where an expression is used on the lake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LakeUse {
    /// A CHECK constraint: checked on every row, and stored in the table's metadata.
    Check,
    /// A `using:` expression: evaluated once per row by a rewrite.
    Using,
}

/// Why the lake cannot run an expression: the first function it calls that the
/// lake's engine lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LakeFunctionProblem {
    /// DataFusion has no function of this name.
    Missing { function: String },
    /// DataFusion has it only as an alias: a CHECK must call it by its own name.
    StoredUnder {
        function: String,
        datafusion: &'static str,
    },
}

impl LakeFunctionProblem {
    /// What is wrong, to follow the field's name.
    pub fn message(&self) -> String {
        match self {
            LakeFunctionProblem::Missing { function } => format!(
                "calls {function}, which the lake's engine (DataFusion in delta-rs) does not have, so the target's backend (the lake) cannot run it"
            ),
            LakeFunctionProblem::StoredUnder {
                function,
                datafusion,
            } => format!(
                "calls {function}, which the lake's engine (DataFusion in delta-rs) has only under the name {datafusion}: delta-rs cannot store a CHECK that calls it as {function}"
            ),
        }
    }

    /// How to fix it.
    pub fn fix(&self) -> String {
        match self {
            LakeFunctionProblem::Missing { function } => {
                match LAKE_EQUIVALENTS.iter().find(|(f, _)| f == function) {
                    Some((_, instead)) => format!(
                        "write {instead} instead of {function}(x) (the same value, which the lake and Databricks both evaluate), or target a Databricks or Spark backend"
                    ),
                    None => format!(
                        "write it without {function} (with a function both Delta and the lake have, or plain operators and CASE), or target a Databricks or Spark backend"
                    ),
                }
            }
            LakeFunctionProblem::StoredUnder {
                function,
                datafusion,
            } => format!(
                "call {datafusion}(...) instead of {function}(...) (the same function), or target a Databricks or Spark backend"
            ),
        }
    }
}

/// The first function `parsed` calls that the lake cannot run where it is used.
pub fn lake_function_problem(parsed: &ParsedExpr, used: LakeUse) -> Option<LakeFunctionProblem> {
    parsed.functions.iter().find_map(|f| {
        if LAKE_MISSING_FUNCTIONS.contains(&f.as_str()) {
            return Some(LakeFunctionProblem::Missing {
                function: f.clone(),
            });
        }
        let (_, datafusion) = LAKE_ALIASES.iter().find(|(a, _)| a == f)?;
        (used == LakeUse::Check).then(|| LakeFunctionProblem::StoredUnder {
            function: f.clone(),
            datafusion,
        })
    })
}
