//! The command line: `plan`, `apply`, `validate`, `crds`, `import`, `read`,
//! and the undo commands `restore` and `undrop`.
//! Exit codes: 0 ok (no changes), 1 error, 2 changes planned, 3 stale plan,
//! 4 refused (needs approval), 5 another apply holds a table.

mod apply;
mod approvals;
mod error;
mod import;
mod import_objects;
pub mod kubectl;
mod maintain;
mod plan;
pub mod undo;
mod verify;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};

use crate::backend::AnyBackend;
use crate::backend::lake::lock::Unlocked;
use crate::config::Config;
use crate::engine::{Inputs, lower};
use crate::spec::{Manifests, load_paths};

pub use error::{
    CliError, EXIT_CHANGES, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_LOCKED, EXIT_OK, EXIT_REFUSED,
    EXIT_STALE, Exit, finish,
};

#[derive(Parser, Debug)]
#[command(
    name = "delta-operator",
    version,
    about = "Delta Lake tables declared as Kubernetes resources: plan, apply, validate"
)]
pub struct Cli {
    /// The operator config (targets). Without one, the target `lake` is ./lake.
    #[arg(long, short = 'c', global = true, env = "DELTA_OPERATOR_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show what apply would do. Exit 0: no changes; 2: changes; 1: error.
    Plan(plan::PlanArgs),
    /// Apply the plan. Destructive steps need --approve <plan id>; exit 4 when refused.
    Apply(apply::ApplyArgs),
    /// Run only the maintenance steps due (compaction, vacuum, checkpoints) for the
    /// manifests, with apply's flags and exit codes; a Manual table's needs --approve.
    Maintain(apply::ApplyArgs),
    /// Check manifests offline. Exit 1 on any error.
    Validate {
        /// Manifest files or folders.
        #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
        files: Vec<PathBuf>,
    },
    /// Print the CustomResourceDefinitions.
    Crds,
    /// Write manifests for the live tables of a schema.
    Import(import::ImportArgs),
    /// Write the observed state of the declared tables to a file (for offline plans and bug reports).
    Read(plan::ReadArgs),
    /// Run the controllers against the cluster in KUBECONFIG (or in-cluster config).
    Run(RunArgs),
    /// The kubectl plugin (installed as `kubectl-delta`): plan, approve, drift.
    Kubectl(kubectl::KubectlArgs),
    /// Probe a Databricks workspace's behaviour in a scratch schema. Exit 0: every probe held; 1: otherwise.
    Verify(verify::VerifyArgs),
    /// Go back to a version of a lake table (the undo plans print): `restore main.sales.orders --version 2`.
    Restore(undo::RestoreArgs),
    /// Bring a dropped lake table back from the lake's trash: `undrop main.sales.orders [--from ENTRY]`.
    Undrop(undo::UndropArgs),
    /// Break the lock of a table whose apply died (every target): `unlock main.sales.orders`.
    Unlock {
        /// `catalog.schema.table`.
        table: String,
        #[arg(long, short = 't')]
        target: Option<String>,
        /// Break it even if its holder may still be running (see the message without it).
        #[arg(long)]
        force: bool,
    },
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Watch only this namespace (default: all).
    #[arg(long)]
    pub namespace: Option<String>,
    /// The namespace of the apply and leader Leases.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub lease_namespace: String,
    /// How often a table is re-checked for drift (jittered ±10%): 30s, 10m, 1h.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub drift_interval: std::time::Duration,
    /// Address for /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub listen: String,
    /// Run the controllers only while holding the leader Lease (for replicas > 1).
    #[arg(long)]
    pub leader_elect: bool,
    /// This process's identity in Leases (default: hostname and pid).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Reconciles run at once, per controller (DeltaTables, DeltaSchemas): bounds the
    /// memory and CPU of reads when thousands of tables are (re)checked together.
    /// Applies are bounded further, per target (`maxConcurrentApplies`).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_reconciles: u16,
    /// Lease duration in seconds; a holder that stops renewing loses it after this long.
    #[arg(long, default_value_t = 15)]
    pub lease_seconds: u64,
    /// Spread the DeltaTables and DeltaSchemas over this many shards (by a hash of their
    /// namespace, or their label delta-operator.io/shard), each held by one replica through
    /// its Lease `delta-operator-shard-<i>`; a replica that dies hands its shards over.
    /// Above 1 needs --leader-elect. 1: one leader reconciles everything.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub shards: u32,
    /// After SIGTERM, how long a running step may take to end (its statements are asked to
    /// cancel at once); then the operator stops following it, writes Interrupted (naming any
    /// statement that may still run) and exits. Keep it below the pod's grace period.
    #[arg(long, default_value = "45s", value_parser = parse_duration)]
    pub shutdown_grace: std::time::Duration,
    /// How many times in a row an apply step may end the operator process (out of memory,
    /// killed) before its table is Stalled with reason CrashLoop instead of resumed into the
    /// same step again; a graceful shutdown's hand-off does not count.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_step_interruptions: u32,
    /// Serve the validating admission webhook (HTTPS, POST /validate) on this address,
    /// e.g. 0.0.0.0:8443. Off unless given (the chart gives it).
    #[arg(long)]
    pub webhook_addr: Option<String>,
    /// A folder holding tls.crt and tls.key (cert-manager's Secret, mounted), re-read when
    /// they change. Without one, a self-signed CA is made at start.
    #[arg(long, requires = "webhook_addr")]
    pub webhook_cert_dir: Option<PathBuf>,
    /// The ValidatingWebhookConfiguration whose caBundle this process sets to its CA
    /// (the self-signed one, or the cert dir's ca.crt).
    #[arg(long, requires = "webhook_addr")]
    pub webhook_config: Option<String>,
    /// The names of the self-signed certificate: DNS names or IP addresses, comma-separated
    /// (the chart gives the webhook Service's names).
    #[arg(long, value_delimiter = ',', default_value = "localhost,127.0.0.1")]
    pub webhook_host: Vec<String>,
}

/// `500ms`, `30s`, `10m`, `1h`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration like 30s, 10m or 1h"))?;
    let ms = match unit {
        "ms" => n,
        "s" | "" => n * 1000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        _ => return Err(format!("unknown unit '{unit}' in '{s}': use ms, s, m or h")),
    };
    Ok(std::time::Duration::from_millis(ms))
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// The default log filter. The Delta kernel is off: it logs the errors it
/// returns (which the operator reports itself, on one line), with a backtrace
/// of hundreds of lines when `RUST_BACKTRACE` is set. `DELTA_OPERATOR_LOG`
/// replaces the whole filter.
pub const DEFAULT_LOG: &str =
    "info,kube=warn,deltalake_core=warn,buoyant_kernel=off,datafusion=warn";

pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DELTA_OPERATOR_LOG")
        .unwrap_or_else(|_| DEFAULT_LOG.into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs a command and gives the process's exit code; an error is said on stderr here.
pub async fn run(cli: Cli) -> u8 {
    finish(dispatch(cli).await)
}

async fn dispatch(cli: Cli) -> Result<Exit, CliError> {
    let config = match &cli.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    match cli.command {
        Command::Plan(a) => plan::plan(&config, a).await,
        Command::Apply(a) => apply::apply(&config, a).await,
        Command::Maintain(a) => apply::run(&config, a, maintain::Runs::Maintenance).await,
        Command::Validate { files } => validate(&config, &files),
        Command::Crds => {
            print!("{}", crds_yaml());
            Ok(Exit::Ok)
        }
        Command::Import(a) => import::import(&config, a).await,
        Command::Read(a) => plan::read(&config, a).await,
        Command::Kubectl(a) => kubectl::run(a).await,
        Command::Verify(a) => verify::verify(&config, a).await,
        Command::Restore(a) => undo::restore(&config, a).await,
        Command::Undrop(a) => undo::undrop(&config, a).await,
        Command::Unlock {
            table,
            target,
            force,
        } => unlock(&config, &table, target.as_deref(), force).await,
        Command::Run(a) => {
            let identity = a.identity.unwrap_or_else(|| {
                let host = std::fs::read_to_string("/etc/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_else(|_| "delta-operator".into());
                format!("{host}-{}", std::process::id())
            });
            let opts = crate::controller::RunOptions {
                namespace: a.namespace,
                lease_namespace: a.lease_namespace,
                drift_interval: a.drift_interval,
                listen: a.listen,
                leader_elect: a.leader_elect,
                identity,
                lease_seconds: a.lease_seconds,
                shards: a.shards,
                max_reconciles: a.max_reconciles,
                shutdown_grace: a.shutdown_grace,
                max_step_interruptions: a.max_step_interruptions,
                webhook: a
                    .webhook_addr
                    .map(|addr| crate::controller::webhook::WebhookOptions {
                        addr,
                        cert_dir: a.webhook_cert_dir,
                        config: a.webhook_config,
                        hosts: a.webhook_host,
                    }),
            };
            crate::controller::run(config, opts).await?;
            Ok(Exit::Ok)
        }
    }
}

/// Every CRD as one YAML stream, exactly as committed under crds/.
pub fn crds_yaml() -> String {
    let mut out = String::new();
    for crd in crate::spec::crd::all() {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&crd).expect("a CRD serializes"));
    }
    out
}

fn validate(config: &Config, files: &[PathBuf]) -> Result<Exit, CliError> {
    let (m, _) = load_and_lower(files)?;
    // what `plan` would refuse on the backend each schema targets
    let mut errors =
        crate::spec::validate::names_needing_column_mapping(&m, |t| config.cannot_map_names(t));
    errors.extend(crate::spec::validate::functions_the_lake_lacks(&m, |t| {
        config.is_lake(t)
    }));
    // what each schema's target hands off to another tool
    errors.extend(crate::spec::validate::handed_off_by_targets(&m, |target| {
        let name = target
            .map(str::to_string)
            .unwrap_or_else(|| config.default_target_name());
        let h = config.target(&name).ok()?.hand_off.clone()?;
        Some((name, h))
    }));
    if !errors.is_empty() {
        return Err(CliError::Manifests(errors));
    }
    let objects = [
        (m.views.len(), "DeltaView"),
        (m.functions.len(), "DeltaFunction"),
        (m.volumes.len(), "DeltaVolume"),
    ];
    let more: String = objects
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, kind)| format!(", {n} {kind}"))
        .collect();
    println!(
        "{} manifests valid ({} DeltaSchema, {} DeltaTable{more})",
        m.schemas.len() + m.tables.len() + objects.iter().map(|(n, _)| n).sum::<usize>(),
        m.schemas.len(),
        m.tables.len()
    );
    Ok(Exit::Ok)
}

/// Loads, validates and lowers; the error lists every problem found.
pub fn load_and_lower(files: &[PathBuf]) -> Result<(Manifests, Inputs), CliError> {
    let (m, errors) = load_paths(files);
    if !errors.is_empty() {
        return Err(CliError::Manifests(errors));
    }
    // planned at the clock's time: maintenance schedules are measured against it
    let inputs = lower(&m)
        .map_err(CliError::Manifests)?
        .at(chrono::Utc::now().timestamp_millis());
    Ok((m, inputs))
}

/// The target to use: --target, else the one the schemas name, else the default.
pub fn choose_target(
    config: &Config,
    flag: Option<&str>,
    m: &Manifests,
) -> Result<String, CliError> {
    if let Some(t) = flag {
        return Ok(t.to_string());
    }
    let named: std::collections::BTreeSet<String> = m
        .schemas
        .iter()
        .filter_map(|s| s.resource.spec.target.clone())
        .collect();
    match named.len() {
        0 => Ok(config.default_target_name()),
        1 => Ok(named.into_iter().next().expect("one")),
        _ => Err(CliError::Usage(format!(
            "the manifests name several targets ({}); pass --target",
            named.into_iter().collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Refuses manifests naming a schema outside the target's `schemas:` allow-list, as the
/// operator does, and manifests declaring what the target hands off; gives the schemas whose
/// spec names no mode the target's `defaultSchemaMode` and every table the target's `handOff`.
pub fn check_allowed(
    config: &Config,
    target: &str,
    m: &Manifests,
    inputs: &mut Inputs,
) -> Result<(), CliError> {
    let t = config.target(target)?;
    inputs.target_default_mode(t.default_schema_mode);
    // what the lake's engine cannot run, refused before anything is read (as `validate` does)
    if config.is_lake(Some(target)) {
        let errors = crate::spec::validate::functions_the_lake_lacks(m, |_| true);
        if !errors.is_empty() {
            return Err(CliError::Manifests(errors));
        }
    }
    if let Some(h) = &t.hand_off {
        let errors = crate::spec::validate::handed_off_by_targets(m, |_| {
            Some((target.to_string(), h.clone()))
        });
        if !errors.is_empty() {
            return Err(CliError::Manifests(errors));
        }
        inputs.target_hand_off(&h.lower());
    }
    // the target's maintenance, lowest, under each schema's and table's own
    if let Some(tm) = &t.maintenance {
        for lt in &m.tables {
            let Some(r) = crate::spec::lower::table_ref_of(m, lt) else {
                continue;
            };
            for d in inputs.tables.iter_mut().filter(|d| d.table == r) {
                std::sync::Arc::make_mut(d).maintenance =
                    crate::spec::lower::maintenance_with_target(m, lt, Some(tm));
            }
        }
    }
    let mut schemas: Vec<crate::model::SchemaRef> =
        inputs.schemas.iter().map(|s| s.schema.clone()).collect();
    schemas.extend(inputs.tables.iter().map(|t| t.table.schema_ref()));
    schemas.sort();
    schemas.dedup();
    match schemas.iter().find(|s| !t.allows_schema(s)) {
        Some(s) => Err(CliError::NotAllowed {
            target: target.to_string(),
            schema: s.clone(),
            allowed: t.schemas.clone(),
            untouched: "read or written",
        }),
        None => Ok(()),
    }
}

async fn unlock(
    config: &Config,
    table: &str,
    target: Option<&str>,
    force: bool,
) -> Result<Exit, CliError> {
    // the same checks as restore and undrop: three names the lake can hold
    let t = undo::parse_table(table).map_err(CliError::Usage)?;
    let target = target
        .map(str::to_string)
        .unwrap_or_else(|| config.default_target_name());
    let backend = open_backend(config, &target)?;
    let me = format!(
        "unlock by cli@{}:{}",
        crate::backend::lake::lock::this_host(),
        std::process::id()
    );
    let unlocked = match &backend {
        AnyBackend::Lake(lake) => lake.unlock(&t, &me, force).await,
        // a Spark Connect target's applies take the lake's locks on its root
        AnyBackend::Spark(spark) => spark.lake().unlock(&t, &me, force).await,
        // a Databricks target's, in its workspace lock folder
        AnyBackend::Databricks(dbx) => dbx.unlock(&t, &me, force).await,
    }?;
    match unlocked {
        Unlocked::Broken(was) => {
            println!(
                "unlocked {t}: it was held by {} (run {}, {} pid {})",
                was.holder, was.run, was.host, was.pid
            );
            Ok(Exit::Ok)
        }
        Unlocked::NotLocked => {
            println!("{t} is not locked");
            Ok(Exit::Ok)
        }
        Unlocked::HolderMayBeAlive(e) => {
            let how = if e.holder_is_alive_here() {
                format!(
                    "its process (pid {}) is running on this host: wait for it, or stop it (kill {}) and its lock is free at once",
                    e.pid, e.pid
                )
            } else {
                format!(
                    "its lock is renewed and expires in {}s by itself if that process is dead",
                    e.expires_in_s()
                )
            };
            Err(CliError::HolderMayBeAlive(format!(
                "{t} is held by {} (run {}, on {} pid {}) and may still be applying: {how}. \
                     --force breaks it anyway: another apply may then start beside it; the running apply \
                     stops before its next commit (it finds its lock gone) and removes its own files, but \
                     a statement it already sent to a SQL engine may still finish",
                e.holder, e.run, e.host, e.pid
            )))
        }
    }
}

/// Opens the backend of a named target.
pub fn open_backend(config: &Config, target: &str) -> Result<AnyBackend, CliError> {
    let t = config.target(target)?;
    // the CLI names itself in commits and table locks: `cli@<host>:<pid>`
    let me = format!(
        "cli@{}:{}",
        crate::backend::lake::lock::this_host(),
        std::process::id()
    );
    // a wait for the warehouse that no step reports is said on stderr: the CLI is never silent
    AnyBackend::open(t, Some(&me))
        .map(|b| b.with_wait_notice(std::sync::Arc::new(|m: &str| eprintln!("  {m}"))))
        .map_err(|source| CliError::Target {
            target: target.to_string(),
            source,
        })
}

/// Writes `text` to `path`, creating folders.
pub fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CliError::Io { path, source }
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(path, text).map_err(io(path))
}
