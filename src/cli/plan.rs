//! `plan` and `read`.

use std::sync::Arc;

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{
    EXIT_CHANGES, EXIT_ERROR, EXIT_OK, Format, check_allowed, choose_target, load_and_lower,
    open_backend, write_file,
};
use crate::config::Config;
use crate::engine::{observe, observe_schemas, plan_against_all, read_and_plan};
use crate::model::{ObservedSchema, ObservedTable};
use crate::plan::render;
use crate::plan::{BackendKind, Capabilities, Plan};

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Manifest files or folders.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// A target named in the config.
    #[arg(long, short = 't')]
    pub target: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Text: show the steps without the statements and checks they run.
    #[arg(long)]
    pub no_sql: bool,
    /// Plan against an observed-state file (from `read`) instead of reading live tables.
    #[arg(long, requires = "backend")]
    pub observed: Option<PathBuf>,
    /// With --observed: whose capabilities to plan with.
    #[arg(long, value_parser = clap::builder::TypedValueParser::map(clap::builder::PossibleValuesParser::new(BackendKind::ALL.map(BackendKind::as_str)), |s: String| s.parse::<BackendKind>().expect("a possible value")))]
    pub backend: Option<BackendKind>,
    /// Also write the plan as JSON to this file.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Take a shallow clone of every table before its first step that could
    /// lose data (as `spec.safety.cloneBeforeRewrite: true` does per table).
    /// Give it to both `plan` and `apply`: it is part of the plan.
    #[arg(long)]
    pub clone_before_rewrite: bool,
}

#[derive(Args, Debug)]
pub struct ReadArgs {
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// Where to write the observed state (JSON).
    #[arg(long, short = 'o', required = true)]
    pub out: PathBuf,
}

/// The observed-state file `read` writes and `plan --observed` reads.
#[derive(Debug, Serialize, Deserialize)]
pub struct StateFile {
    pub format_version: u32,
    pub backend: BackendKind,
    pub tables: Vec<Arc<ObservedTable>>,
    /// The declared schemas' own metadata (comment, properties, owner, grants).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schemas: Vec<ObservedSchema>,
}

pub fn print_plan(plan: &Plan, format: Format, statements: bool) {
    match format {
        Format::Text => print!("{}", render::text::render_with(plan, statements)),
        Format::Markdown => print!("{}", render::markdown::render(plan)),
        Format::Json => print!("{}", render::json::render(plan)),
    }
}

pub async fn plan(config: &Config, a: PlanArgs) -> u8 {
    let Ok((m, mut inputs)) = load_and_lower(&a.files) else {
        return EXIT_ERROR;
    };
    inputs.clone_before_rewrite(a.clone_before_rewrite);
    let plan = if let Some(path) = &a.observed {
        let caps = Capabilities::of(a.backend.unwrap_or(BackendKind::Lake));
        let state: StateFile = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return EXIT_ERROR;
            }
        };
        plan_against_all(
            &inputs,
            &state.tables,
            &state.schemas,
            &caps,
            delta_operator_targets::compiler(caps.backend),
        )
    } else {
        let backend = match choose_target(config, a.target.as_deref(), &m).and_then(|t| {
            check_allowed(config, &t, &mut inputs).and_then(|_| open_backend(config, &t))
        }) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_ERROR;
            }
        };
        match read_and_plan(&backend, &inputs).await {
            Ok((plan, _)) => plan,
            Err(e) => {
                eprintln!("error: reading the tables failed: {e}");
                return EXIT_ERROR;
            }
        }
    };
    print_plan(&plan, a.format, !a.no_sql);
    if let Some(out) = &a.out
        && let Err(e) = write_file(out, &render::json::render(&plan))
    {
        eprintln!("error: {e}");
        return EXIT_ERROR;
    }
    if plan.summary.rejected > 0 {
        EXIT_ERROR
    } else if plan.has_changes() {
        EXIT_CHANGES
    } else {
        EXIT_OK
    }
}

pub async fn read(config: &Config, a: ReadArgs) -> u8 {
    let Ok((m, mut inputs)) = load_and_lower(&a.files) else {
        return EXIT_ERROR;
    };
    let backend = match choose_target(config, a.target.as_deref(), &m)
        .and_then(|t| check_allowed(config, &t, &mut inputs).and_then(|_| open_backend(config, &t)))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_ERROR;
        }
    };
    let observed = match observe(&backend, &inputs).await {
        Ok(tables) => observe_schemas(&backend, &inputs.schemas)
            .await
            .map(|schemas| (tables, schemas)),
        Err(e) => Err(e),
    };
    match observed {
        Ok((tables, schemas)) => {
            let n = tables.len();
            let state = StateFile {
                format_version: crate::plan::FORMAT_VERSION,
                // the target's backend, not always the lake
                backend: crate::backend::Backend::capabilities(&backend).backend,
                tables,
                schemas,
            };
            match write_file(
                &a.out,
                &(serde_json::to_string_pretty(&state).expect("serializes") + "\n"),
            ) {
                Ok(()) => {
                    println!(
                        "wrote the observed state of {n} tables to {}",
                        a.out.display()
                    );
                    EXIT_OK
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    EXIT_ERROR
                }
            }
        }
        Err(e) => {
            eprintln!("error: reading the tables failed: {e}");
            EXIT_ERROR
        }
    }
}
