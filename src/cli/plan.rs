//! `plan` and `read`.

use std::sync::Arc;

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{
    CliError, Exit, Format, check_allowed, choose_target, load_and_lower, open_backend, write_file,
};
use crate::config::Config;
use crate::engine::{observe, observe_objects, observe_schemas, plan_with_objects, read_and_plan};
use crate::model::{ObservedObject, ObservedSchema, ObservedTable};
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
    /// The live views, functions and volumes of the declared schemas, and the
    /// declared ones (Databricks; none elsewhere).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<Arc<ObservedObject>>,
}

pub fn print_plan(plan: &Plan, format: Format, statements: bool) {
    match format {
        Format::Text => print!("{}", render::text::render_with(plan, statements)),
        Format::Markdown => print!("{}", render::markdown::render(plan)),
        Format::Json => print!("{}", render::json::render(plan)),
    }
}

pub async fn plan(config: &Config, a: PlanArgs) -> Result<Exit, CliError> {
    let (m, mut inputs) = load_and_lower(&a.files)?;
    inputs.clone_before_rewrite(a.clone_before_rewrite);
    let plan = if let Some(path) = &a.observed {
        let caps = Capabilities::of(a.backend.unwrap_or(BackendKind::Lake));
        if caps.backend == BackendKind::Lake {
            // what the lake's engine cannot run (as `validate` and admission refuse it)
            let errors = crate::spec::validate::functions_the_lake_lacks(&m, |_| true);
            if !errors.is_empty() {
                return Err(CliError::Manifests(errors));
            }
        }
        let text = std::fs::read_to_string(path).map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })?;
        let state: StateFile = serde_json::from_str(&text).map_err(|source| CliError::Json {
            path: path.clone(),
            source,
        })?;
        plan_with_objects(
            &inputs,
            &state.tables,
            &state.schemas,
            &state.objects,
            &caps,
            delta_operator_targets::compiler(caps.backend),
        )
    } else {
        let target = choose_target(config, a.target.as_deref(), &m)?;
        check_allowed(config, &target, &m, &mut inputs)?;
        let backend = open_backend(config, &target)?;
        read_and_plan(&backend, &inputs)
            .await
            .map_err(CliError::Read)?
            .0
    };
    print_plan(&plan, a.format, !a.no_sql);
    if let Some(out) = &a.out {
        write_file(out, &render::json::render(&plan))?;
    }
    Ok(if plan.summary.rejected > 0 {
        Exit::Failed
    } else if plan.has_changes() {
        Exit::Changes
    } else {
        Exit::Ok
    })
}

pub async fn read(config: &Config, a: ReadArgs) -> Result<Exit, CliError> {
    let (m, mut inputs) = load_and_lower(&a.files)?;
    let target = choose_target(config, a.target.as_deref(), &m)?;
    check_allowed(config, &target, &m, &mut inputs)?;
    let backend = open_backend(config, &target)?;
    let tables = observe(&backend, &inputs).await.map_err(CliError::Read)?;
    let schemas = observe_schemas(&backend, &inputs.schemas)
        .await
        .map_err(CliError::Read)?;
    let objects = observe_objects(&backend, &inputs)
        .await
        .map_err(CliError::Read)?;
    let (n, o) = (tables.len(), objects.len());
    let state = StateFile {
        format_version: crate::plan::FORMAT_VERSION,
        // the target's backend, not always the lake
        backend: crate::backend::Backend::capabilities(&backend).backend,
        tables,
        schemas,
        objects,
    };
    write_file(
        &a.out,
        &(serde_json::to_string_pretty(&state).expect("serializes") + "\n"),
    )?;
    let objects = match o {
        0 => String::new(),
        1 => " and 1 view, function or volume".into(),
        o => format!(" and {o} views, functions or volumes"),
    };
    println!(
        "wrote the observed state of {n} tables{objects} to {}",
        a.out.display()
    );
    Ok(Exit::Ok)
}
