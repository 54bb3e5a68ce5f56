//! How long Delta keeps what a restore needs: the table's two retention
//! properties, in Delta's interval syntax (`interval 1 week`), parsed as
//! Delta parses them. `delta.deletedFileRetentionDuration` is how long a data
//! file stays after a commit removed it (a VACUUM that honours it deletes it
//! only after that); `delta.logRetentionDuration` how long a version's log
//! entry stays (a checkpoint's log cleanup removes older ones, and with them
//! time travel to those versions).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The property that keeps removed data files.
pub const DELETED_FILE_RETENTION: &str = "delta.deletedFileRetentionDuration";
/// The property that keeps log entries.
pub const LOG_RETENTION: &str = "delta.logRetentionDuration";
/// Delta's default for [`DELETED_FILE_RETENTION`]: `interval 1 week`.
pub const DEFAULT_DELETED_FILE_RETENTION_MS: i64 = 7 * DAY_MS;
/// Delta's default for [`LOG_RETENTION`]: `interval 30 days`.
pub const DEFAULT_LOG_RETENTION_MS: i64 = 30 * DAY_MS;

const SECOND_MS: i64 = 1_000;
const MINUTE_MS: i64 = 60 * SECOND_MS;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;
const WEEK_MS: i64 = 7 * DAY_MS;

/// Why an interval property cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntervalError {
    #[error("'{0}' is empty: an interval is like 'interval 1 week'")]
    Empty(String),
    #[error("'{text}': '{word}' is not a whole number")]
    NotANumber { text: String, word: String },
    #[error("'{text}': {number} has no unit (week, day, hour, minute, second, millisecond)")]
    MissingUnit { text: String, number: String },
    #[error(
        "'{text}': '{unit}' is not a unit Delta takes here (week, day, hour, minute, second, millisecond, microsecond)"
    )]
    UnknownUnit { text: String, unit: String },
    #[error("'{text}': Delta refuses months and years in a retention (they have no fixed length)")]
    MonthsOrYears { text: String },
    #[error("'{text}': a retention cannot be negative")]
    Negative { text: String },
    #[error("'{text}': too long to count in milliseconds")]
    Overflow { text: String },
}

/// Delta's interval syntax as its retention properties take it: an optional
/// `interval` keyword, then one or more `<whole number> <unit>` pairs (summed;
/// units singular or plural, any case: week, day, hour, minute, second,
/// millisecond, microsecond). Months and years are refused, as Delta refuses
/// them for these properties, and so is a negative total. In milliseconds
/// (microseconds are truncated).
pub fn parse_interval(text: &str) -> Result<i64, IntervalError> {
    let mut words = text.split_whitespace().peekable();
    if words
        .peek()
        .is_some_and(|w| w.eq_ignore_ascii_case("interval"))
    {
        words.next();
    }
    if words.peek().is_none() {
        return Err(IntervalError::Empty(text.into()));
    }
    let overflow = || IntervalError::Overflow { text: text.into() };
    let mut micros: i128 = 0;
    while let Some(number) = words.next() {
        let n: i128 = number
            .parse::<i64>()
            .map_err(|_| IntervalError::NotANumber {
                text: text.into(),
                word: number.into(),
            })?
            .into();
        let Some(unit) = words.next() else {
            return Err(IntervalError::MissingUnit {
                text: text.into(),
                number: number.into(),
            });
        };
        let lower = unit.to_ascii_lowercase();
        let singular = lower.strip_suffix('s').unwrap_or(&lower);
        let per: i128 = match singular {
            "week" => WEEK_MS as i128 * 1000,
            "day" => DAY_MS as i128 * 1000,
            "hour" => HOUR_MS as i128 * 1000,
            "minute" => MINUTE_MS as i128 * 1000,
            "second" => SECOND_MS as i128 * 1000,
            "millisecond" => 1000,
            "microsecond" => 1,
            "month" | "year" => return Err(IntervalError::MonthsOrYears { text: text.into() }),
            _ => {
                return Err(IntervalError::UnknownUnit {
                    text: text.into(),
                    unit: unit.into(),
                });
            }
        };
        micros = n
            .checked_mul(per)
            .and_then(|m| micros.checked_add(m))
            .ok_or_else(overflow)?;
    }
    if micros < 0 {
        return Err(IntervalError::Negative { text: text.into() });
    }
    i64::try_from(micros / 1000).map_err(|_| overflow())
}

/// A retention property that cannot be read, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{property}: {error}")]
pub struct RetentionError {
    pub property: String,
    pub error: IntervalError,
}

/// A table's two retentions, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// How long a removed data file stays (`delta.deletedFileRetentionDuration`).
    pub deleted_file_ms: i64,
    /// How long a version's log entry stays (`delta.logRetentionDuration`).
    pub log_ms: i64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            deleted_file_ms: DEFAULT_DELETED_FILE_RETENTION_MS,
            log_ms: DEFAULT_LOG_RETENTION_MS,
        }
    }
}

impl Retention {
    /// From a table's properties: each one set is parsed, each one absent
    /// takes Delta's default. Property names are matched without regard to case.
    pub fn of_properties(properties: &BTreeMap<String, String>) -> Result<Self, RetentionError> {
        let read = |name: &str, default: i64| -> Result<i64, RetentionError> {
            match properties
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
            {
                None => Ok(default),
                Some((_, v)) => parse_interval(v).map_err(|error| RetentionError {
                    property: name.into(),
                    error,
                }),
            }
        };
        Ok(Retention {
            deleted_file_ms: read(DELETED_FILE_RETENTION, DEFAULT_DELETED_FILE_RETENTION_MS)?,
            log_ms: read(LOG_RETENTION, DEFAULT_LOG_RETENTION_MS)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_interval_syntax() {
        assert_eq!(parse_interval("interval 1 week"), Ok(WEEK_MS));
        assert_eq!(parse_interval("interval 30 days"), Ok(30 * DAY_MS));
        assert_eq!(parse_interval("INTERVAL 168 HOURS"), Ok(7 * DAY_MS));
        assert_eq!(parse_interval("  interval   2   day  "), Ok(2 * DAY_MS));
        // the keyword is optional, and pairs add up
        assert_eq!(parse_interval("1 day 12 hours"), Ok(DAY_MS + 12 * HOUR_MS));
        assert_eq!(parse_interval("interval 0 seconds"), Ok(0));
        assert_eq!(parse_interval("interval 1500 microseconds"), Ok(1));
        assert_eq!(parse_interval("interval 90 minutes"), Ok(90 * MINUTE_MS));
        assert_eq!(parse_interval("interval 5 milliseconds"), Ok(5));
        // a negative pair is fine while the total is not negative
        assert_eq!(parse_interval("interval 1 day -1 hour"), Ok(23 * HOUR_MS));
    }

    #[test]
    fn delta_interval_errors_say_what_is_wrong() {
        assert!(matches!(parse_interval(""), Err(IntervalError::Empty(_))));
        assert!(matches!(
            parse_interval("interval"),
            Err(IntervalError::Empty(_))
        ));
        assert!(matches!(
            parse_interval("interval one week"),
            Err(IntervalError::NotANumber { word, .. }) if word == "one"
        ));
        assert!(matches!(
            parse_interval("interval 1.5 days"),
            Err(IntervalError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_interval("interval 7"),
            Err(IntervalError::MissingUnit { .. })
        ));
        assert!(matches!(
            parse_interval("interval 7 fortnights"),
            Err(IntervalError::UnknownUnit { unit, .. }) if unit == "fortnights"
        ));
        assert!(matches!(
            parse_interval("interval 1 month"),
            Err(IntervalError::MonthsOrYears { .. })
        ));
        assert!(matches!(
            parse_interval("interval 2 YEARS"),
            Err(IntervalError::MonthsOrYears { .. })
        ));
        assert!(matches!(
            parse_interval("interval -1 day"),
            Err(IntervalError::Negative { .. })
        ));
        assert!(matches!(
            parse_interval("interval 9223372036854775807 weeks"),
            Err(IntervalError::Overflow { .. })
        ));
        // the message names the text
        let e = parse_interval("interval 7 fortnights")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("interval 7 fortnights") && e.contains("fortnights"),
            "{e}"
        );
    }

    #[test]
    fn retention_from_properties_defaults_and_errors() {
        let mut p = BTreeMap::new();
        assert_eq!(Retention::of_properties(&p), Ok(Retention::default()));
        p.insert(
            "delta.deletedFileRetentionDuration".into(),
            "interval 2 days".into(),
        );
        assert_eq!(
            Retention::of_properties(&p),
            Ok(Retention {
                deleted_file_ms: 2 * DAY_MS,
                log_ms: 30 * DAY_MS
            })
        );
        p.insert(
            "DELTA.LOGRETENTIONDURATION".into(),
            "interval 3 days".into(),
        );
        assert_eq!(
            Retention::of_properties(&p).map(|r| r.log_ms),
            Ok(3 * DAY_MS)
        );
        p.insert("delta.logRetentionDuration".into(), "soon".into());
        p.remove("DELTA.LOGRETENTIONDURATION");
        let e = Retention::of_properties(&p).unwrap_err();
        assert_eq!(e.property, LOG_RETENTION);
        assert!(
            e.to_string().starts_with("delta.logRetentionDuration: "),
            "{e}"
        );
    }
}
