//! The kubectl plugin: the same binary, installed as `kubectl-delta`, or run as
//! `delta-operator kubectl …`. It reads what the operator wrote into status and
//! writes only the approval annotation; it never talks to a backend. `undo`
//! prints the commands that undo the last applied plan, from its restore points.

use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::{CliError, Exit};
use crate::controller::{APPROVE, PAUSED};
use crate::spec::crd::{ApprovalStatus, Condition, LastApplied, PlanStatus};
use crate::spec::{DeltaSchema, DeltaTable};
use delta_operator_api::reason::Reason;
use delta_operator_api::spec::objects::{DeltaFunction, DeltaObjectStatus, DeltaView, DeltaVolume};

#[derive(Parser, Debug)]
#[command(
    name = "kubectl delta",
    bin_name = "kubectl delta",
    version,
    about = "Review and approve delta-operator plans: kubectl delta plan|approve|drift|undo"
)]
pub struct KubectlCli {
    #[command(flatten)]
    pub args: KubectlArgs,
}

#[derive(clap::Args, Debug)]
pub struct KubectlArgs {
    /// The namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    #[command(subcommand)]
    pub command: KubectlCommand,
}

#[derive(Subcommand, Debug)]
pub enum KubectlCommand {
    /// Print the plan the operator wrote into status. NAME is a DeltaTable, or `deltaschema/NAME`,
    /// `deltaview/NAME` (dv), `deltafunction/NAME` (dfn), `deltavolume/NAME` (dvol).
    Plan {
        name: String,
        /// The whole plan, when status holds a cut of it (from the ConfigMap the operator keeps).
        #[arg(long)]
        full: bool,
    },
    /// Show the plan, then approve exactly that plan (the annotation pins its id).
    Approve {
        name: String,
        /// Approve without asking.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Wait until the operator has applied the approved plan (or refused it).
        #[arg(long)]
        wait: bool,
        /// How long --wait waits: 30s, 5m.
        #[arg(long, default_value = "5m", value_parser = super::parse_duration)]
        timeout: Duration,
    },
    /// Print the commands that undo the last applied plan (from its restore points). Changes nothing.
    Undo { name: String },
    /// List every DeltaTable, DeltaSchema, DeltaView, DeltaFunction and DeltaVolume with a
    /// pending plan. Exit 2 when there is one.
    Drift {
        /// In every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
}

impl View {
    /// Status holds a cut of the plan (the operator keeps the whole in a ConfigMap).
    fn is_cut(&self) -> bool {
        self.plan
            .as_ref()
            .and_then(|p| p.text.as_deref())
            .is_some_and(|t| t.contains("prints the whole plan (the ConfigMap"))
    }
}

/// The parts of a DeltaTable or a DeltaSchema the plugin shows.
struct View {
    kind: &'static str,
    namespace: String,
    name: String,
    target: Option<String>,
    generation: Option<i64>,
    observed_generation: Option<i64>,
    conditions: Vec<Condition>,
    plan: Option<PlanStatus>,
    paused: bool,
    resource_version: Option<String>,
    /// The id of the plan last applied, and when.
    last_applied: Option<(String, String)>,
    /// The `delta-operator.io/approve` annotation.
    annotation: Option<String>,
    /// status.approval: the approvals already spent.
    spent: Option<ApprovalStatus>,
}

impl View {
    fn of_table(t: &DeltaTable) -> Self {
        let s = t.status.clone().unwrap_or_default();
        View {
            last_applied: s.last_applied.map(|l| (l.plan_id, l.time)),
            spent: s.approval,
            ..View::new(
                "deltatable",
                t,
                s.table,
                s.observed_generation,
                s.conditions,
                s.plan,
            )
        }
    }

    fn of_schema(t: &DeltaSchema) -> Self {
        let s = t.status.clone().unwrap_or_default();
        View {
            last_applied: s.last_applied.map(|l| (l.plan_id, l.time)),
            spent: s.approval,
            ..View::new(
                "deltaschema",
                t,
                s.schema,
                s.observed_generation,
                s.conditions,
                s.plan,
            )
        }
    }

    /// A DeltaView, DeltaFunction or DeltaVolume (`kind` as `parse_name` names it).
    fn of_object<K: ResourceExt>(kind: &'static str, o: &K, s: Option<&DeltaObjectStatus>) -> Self {
        let s = s.cloned().unwrap_or_default();
        View {
            last_applied: s.last_applied.map(|l| (l.plan_id, l.time)),
            spent: s.approval,
            ..View::new(
                kind,
                o,
                s.object,
                s.observed_generation,
                s.conditions,
                s.plan,
            )
        }
    }

    fn new<K: ResourceExt>(
        kind: &'static str,
        o: &K,
        target: Option<String>,
        observed: Option<i64>,
        conditions: Vec<Condition>,
        plan: Option<PlanStatus>,
    ) -> Self {
        View {
            kind,
            namespace: o.namespace().unwrap_or_default(),
            name: o.name_any(),
            target,
            generation: o.meta().generation,
            observed_generation: observed,
            conditions,
            plan,
            paused: o.annotations().get(PAUSED).is_some_and(|v| v == "true"),
            resource_version: o.resource_version(),
            last_applied: None,
            annotation: o.annotations().get(APPROVE).cloned(),
            spent: None,
        }
    }

    /// The annotation, when its value was already spent by an apply.
    fn spent_annotation(&self) -> Option<&str> {
        let a = self.annotation.as_deref()?;
        self.spent.as_ref().filter(|s| s.spent(a)).map(|_| a)
    }

    /// A line about the approval on the resource, when it was spent.
    fn approval_line(&self) -> Option<String> {
        let a = self.spent_annotation()?;
        let s = self.spent.as_ref()?;
        let when = if s.value == a {
            format!("by plan {} applied at {}", s.plan_id, s.spent_at)
        } else {
            "by an earlier apply".into()
        };
        Some(format!(
            "Approval: {APPROVE}={a} is spent ({when}); it approves nothing again\n"
        ))
    }

    fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == "True")
    }

    /// A plan with steps the operator has not run.
    fn pending(&self) -> Option<&PlanStatus> {
        self.plan
            .as_ref()
            .filter(|p| !p.steps.is_empty() || p.approve_command.is_some())
    }

    /// Why the pending plan has not run, in a few words.
    fn state(&self) -> String {
        if self.observed_generation < self.generation {
            return "not planned yet".into();
        }
        if self.paused {
            return "paused".into();
        }
        if self
            .plan
            .as_ref()
            .is_some_and(|p| p.approve_command.is_some())
        {
            if let Some(a) = self.spent_annotation() {
                return format!("awaiting a new approval ({a} is spent)");
            }
            return "awaiting approval".into();
        }
        if let Some(c) = self.condition("Stalled") {
            return format!("stalled: {}", c.reason);
        }
        if self.condition("Ready").is_some() && self.condition("Drifted").is_some() {
            return "observe only".into();
        }
        "applying".into()
    }
}

pub async fn run(args: KubectlArgs) -> Result<Exit, CliError> {
    run_inner(args).await.map_err(CliError::Kubectl)
}

async fn run_inner(args: KubectlArgs) -> Result<Exit, String> {
    let client = Client::try_default()
        .await
        .map_err(|e| format!("cannot reach the cluster from KUBECONFIG: {e}"))?;
    let ns = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    match args.command {
        KubectlCommand::Plan { name, full } => {
            let view = get(&client, &ns, &name).await?;
            let whole = if full && view.is_cut() {
                Some(whole_plan(&client, &ns, &view).await?)
            } else {
                None
            };
            match whole {
                Some(text) => print!(
                    "{text}State: {}\n{}",
                    view.state(),
                    view.approval_line().unwrap_or_default()
                ),
                None => print!("{}", show(&view)),
            }
            Ok(if view.pending().is_some() {
                Exit::Changes
            } else {
                Exit::Ok
            })
        }
        KubectlCommand::Approve {
            name,
            yes,
            wait,
            timeout,
        } => approve(&client, &ns, &name, yes, wait.then_some(timeout)).await,
        KubectlCommand::Undo { name } => {
            print!("{}", undo(&client, &ns, &name).await?);
            Ok(Exit::Ok)
        }
        KubectlCommand::Drift { all_namespaces } => {
            drift(&client, (!all_namespaces).then_some(ns.as_str())).await
        }
    }
}

/// `orders`, `dt/orders`, `deltatable/orders`, `ds/sales`, `deltaschema/sales`.
fn parse_name(name: &str) -> Result<(&'static str, &str), String> {
    match name.split_once('/') {
        None => Ok(("deltatable", name)),
        Some(("dt" | "deltatable" | "deltatables" | "deltatable.delta-operator.io", n)) => {
            Ok(("deltatable", n))
        }
        Some(("ds" | "deltaschema" | "deltaschemas" | "deltaschema.delta-operator.io", n)) => {
            Ok(("deltaschema", n))
        }
        Some(("dv" | "deltaview" | "deltaviews" | "deltaview.delta-operator.io", n)) => {
            Ok(("deltaview", n))
        }
        Some((
            "dfn" | "deltafunction" | "deltafunctions" | "deltafunction.delta-operator.io",
            n,
        )) => Ok(("deltafunction", n)),
        Some(("dvol" | "deltavolume" | "deltavolumes" | "deltavolume.delta-operator.io", n)) => {
            Ok(("deltavolume", n))
        }
        Some((kind, _)) => Err(format!(
            "unknown kind '{kind}' in '{name}': use NAME (a DeltaTable), deltatable/NAME, deltaschema/NAME, deltaview/NAME, deltafunction/NAME or deltavolume/NAME"
        )),
    }
}

/// A read that failed, in words that say what to do.
fn read_error(kind: &str, n: &str, ns: &str, e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) if s.code == 404 => {
            format!("{kind} '{n}' not found in namespace '{ns}' (use -n to pick the namespace)")
        }
        e => format!("cannot read {kind} '{n}' in namespace '{ns}': {e}"),
    }
}

async fn get(client: &Client, ns: &str, name: &str) -> Result<View, String> {
    let (kind, n) = parse_name(name)?;
    let missing = |e: kube::Error| read_error(kind, n, ns, e);
    Ok(match kind {
        "deltatable" => View::of_table(
            &Api::<DeltaTable>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?,
        ),
        "deltaview" => {
            let o = Api::<DeltaView>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?;
            View::of_object(kind, &o, o.status.as_ref())
        }
        "deltafunction" => {
            let o = Api::<DeltaFunction>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?;
            View::of_object(kind, &o, o.status.as_ref())
        }
        "deltavolume" => {
            let o = Api::<DeltaVolume>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?;
            View::of_object(kind, &o, o.status.as_ref())
        }
        _ => View::of_schema(
            &Api::<DeltaSchema>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?,
        ),
    })
}

/// The whole plan the operator keeps in a ConfigMap when status holds a cut of it.
async fn whole_plan(client: &Client, ns: &str, v: &View) -> Result<String, String> {
    let name = delta_operator_controller::decide::whole_plan_configmap(v.kind, &v.name);
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), ns);
    let cm = api
        .get_opt(&name)
        .await
        .map_err(|e| format!("reading ConfigMap {name} in {ns}: {e}"))?
        .ok_or_else(|| {
            format!("the plan in status is cut, but ConfigMap {name} in {ns} is not there (yet); `delta-operator plan -f <manifests>` prints the whole plan")
        })?;
    cm.data
        .and_then(|d| d.get("plan.txt").cloned())
        .ok_or_else(|| format!("ConfigMap {name} in {ns} holds no plan.txt"))
}

/// The plan as the text renderer printed it, or a line saying why there is none.
fn show(v: &View) -> String {
    let who = format!("{}/{} -n {}", v.kind, v.name, v.namespace);
    if v.observed_generation < v.generation {
        return format!(
            "{who}: the operator has not planned generation {} yet (it has seen {}); try again in a moment.\n",
            v.generation.unwrap_or(0),
            v.observed_generation.unwrap_or(0)
        );
    }
    let Some(p) = &v.plan else {
        let why = v
            .condition("Stalled")
            .or(v.condition("Reconciling"))
            .map(|c| format!(" ({}: {})", c.reason, c.message))
            .unwrap_or_default();
        return format!("{who}: no pending plan{why}.\n");
    };
    let mut out = match &p.text {
        Some(t) => t.clone(),
        // written by an operator before status.plan.text existed
        None => {
            let mut s = format!("{}\n", v.target.as_deref().unwrap_or(&v.name));
            for l in &p.steps {
                s.push_str(&format!("    {l}\n"));
            }
            s + &format!("Plan: {}\nPlan id: {}\n", p.summary, p.id)
        }
    };
    out.push_str(&format!("State: {}\n", v.state()));
    if let Some(line) = v.approval_line() {
        out.push_str(&line);
    }
    if p.approve_command.is_some() {
        out.push_str(&format!(
            "Approve: kubectl delta approve {}/{} -n {}\n",
            v.kind, v.name, v.namespace
        ));
    }
    out
}

async fn approve(
    client: &Client,
    ns: &str,
    name: &str,
    yes: bool,
    wait: Option<Duration>,
) -> Result<Exit, String> {
    let v = get(client, ns, name).await?;
    print!("{}", show(&v));
    let Some(plan) = v
        .pending()
        .filter(|_| v.observed_generation >= v.generation)
    else {
        return Err("nothing to approve: there is no pending plan for the current spec".into());
    };
    if plan.approve_command.is_none() {
        println!("This plan needs no approval: the operator applies it by itself.");
        return Ok(Exit::Ok);
    }
    let id = plan.id.clone();
    // the value status says approves it: the id, or `<id>-<n>` once the id was spent
    let value = plan.approval.clone().unwrap_or_else(|| id.clone());
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(format!(
                "not asking on a non-terminal: re-run with --yes to approve plan {id}"
            ));
        }
        print!("Approve plan {id} for {}/{}? Type yes: ", v.kind, v.name);
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if answer.trim() != "yes" {
            println!("Not approved.");
            return Ok(Exit::Failed);
        }
    }
    // the resourceVersion makes the patch fail if the object changed since it was shown
    let patch = json!({"metadata": {"resourceVersion": v.resource_version, "annotations": {APPROVE: value}}});
    let params = PatchParams::default();
    let (kind, n) = parse_name(name)?;
    let result = match kind {
        "deltatable" => Api::<DeltaTable>::namespaced(client.clone(), ns)
            .patch(n, &params, &Patch::Merge(&patch))
            .await
            .map(|_| ()),
        "deltaview" => Api::<DeltaView>::namespaced(client.clone(), ns)
            .patch(n, &params, &Patch::Merge(&patch))
            .await
            .map(|_| ()),
        "deltafunction" => Api::<DeltaFunction>::namespaced(client.clone(), ns)
            .patch(n, &params, &Patch::Merge(&patch))
            .await
            .map(|_| ()),
        "deltavolume" => Api::<DeltaVolume>::namespaced(client.clone(), ns)
            .patch(n, &params, &Patch::Merge(&patch))
            .await
            .map(|_| ()),
        _ => Api::<DeltaSchema>::namespaced(client.clone(), ns)
            .patch(n, &params, &Patch::Merge(&patch))
            .await
            .map(|_| ()),
    };
    match result {
        Ok(()) => println!(
            "Approved plan {id}: {}/{} annotated {APPROVE}={value}",
            v.kind, v.name
        ),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            return Err(format!(
                "{}/{} changed while it was shown; nothing was approved. Run the command again to see the current plan.",
                v.kind, v.name
            ));
        }
        Err(e) => return Err(format!("cannot annotate {}/{}: {e}", v.kind, v.name)),
    }
    match wait {
        None => {
            println!(
                "The operator applies it at its next reconcile: kubectl get {} {} -n {} -w",
                v.kind, v.name, v.namespace
            );
            Ok(Exit::Ok)
        }
        Some(timeout) => {
            let before = v.last_applied.clone();
            wait_applied(client, ns, name, &id, &value, before, timeout).await
        }
    }
}

/// `kubectl delta undo NAME`: reads the resource (and, for a table, its
/// DeltaSchema's target) and prints the undo of its last applied plan.
async fn undo(client: &Client, ns: &str, name: &str) -> Result<String, String> {
    let (kind, n) = parse_name(name)?;
    let missing = |e: kube::Error| read_error(kind, n, ns, e);
    if !matches!(kind, "deltatable" | "deltaschema") {
        return Err(format!(
            "{kind}/{n}: undo covers tables (restore points) and schemas; a view, function or volume has no data to restore: the undo of each step is in its plan (kubectl delta plan {kind}/{n}), or revert its manifest in Git"
        ));
    }
    let (last, target) = match kind {
        "deltatable" => {
            let t = Api::<DeltaTable>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?;
            // the target is the DeltaSchema's; a schema that cannot be read leaves it out
            let target = Api::<DeltaSchema>::namespaced(client.clone(), ns)
                .get_opt(&t.spec.schema_ref)
                .await
                .ok()
                .flatten()
                .and_then(|s| s.spec.target);
            (t.status.and_then(|s| s.last_applied), target)
        }
        _ => {
            let s = Api::<DeltaSchema>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?;
            (s.status.and_then(|s| s.last_applied), s.spec.target)
        }
    };
    undo_text(
        kind,
        n,
        ns,
        last.as_ref(),
        target.as_deref(),
        chrono::Utc::now().timestamp_millis(),
    )
}

/// The window status recorded for a restore point, as a line under its
/// command: until when it works (past: it may no longer), or that a VACUUM
/// ended it. None: no window recorded.
fn window_line(last: &LastApplied, point: &str, now_ms: i64) -> Option<(String, bool)> {
    let w = last
        .undo_windows
        .iter()
        .find(|w| w.restore_point == point)?;
    let printable = crate::model::names::printable;
    if w.ended_at.is_some() {
        return Some((printable(&w.window), true));
    }
    let past = w
        .works_until
        .as_deref()
        .and_then(|u| chrono::DateTime::parse_from_rfc3339(u).ok())
        .filter(|u| u.timestamp_millis() <= now_ms);
    let text = match past {
        Some(u) => format!(
            "may no longer work: its retention ended at {}; the next VACUUM may remove its files",
            u.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M UTC")
        ),
        None => printable(&w.window),
    };
    Some((
        format!("{text} (checked {})", printable(&w.checked_at)),
        false,
    ))
}

/// The undo of a last applied plan: for a DeltaTable, `delta-operator restore`
/// to the earliest restore point of each table; for a DeltaSchema (whose
/// applies drop orphans), `delta-operator undrop` of each dropped table. With
/// the steps in order: pause, revert the manifest, run, resume.
pub fn undo_text(
    kind: &str,
    name: &str,
    ns: &str,
    last: Option<&LastApplied>,
    target: Option<&str>,
    now_ms: i64,
) -> Result<String, String> {
    let who = format!("{kind}/{name} -n {ns}");
    let Some(last) = last else {
        return Err(format!(
            "nothing to undo: {who} has no applied plan in its status"
        ));
    };
    // the earliest version per table: going back to it undoes every step after it
    let mut points: std::collections::BTreeMap<String, u64> = Default::default();
    let mut unreadable = Vec::new();
    for p in &last.restore_points {
        let parsed = p.rsplit_once('@').and_then(|(t, v)| {
            let t = super::undo::parse_table(t).ok()?;
            Some((t.to_string(), v.parse::<u64>().ok()?))
        });
        match parsed {
            Some((t, v)) => {
                let e = points.entry(t).or_insert(v);
                *e = (*e).min(v);
            }
            None => unreadable.push(crate::model::names::printable(p)),
        }
    }
    if points.is_empty() {
        return Err(format!(
            "nothing to undo from status: plan {} of {who} recorded no restore point{}. Restore points are recorded before rewrites and destructive steps; metadata steps are undone by changing the manifest back",
            last.plan_id,
            if unreadable.is_empty() {
                String::new()
            } else {
                format!(" that can be read (found: {})", unreadable.join(", "))
            }
        ));
    }
    let flag = target.map(|t| format!(" --target {t}")).unwrap_or_default();
    // a restore's window, where status recorded one: a line under the command
    let mut ended = Vec::new();
    let commands: Vec<String> = points
        .iter()
        .map(|(t, v)| match kind {
            "deltatable" => {
                let command = format!("delta-operator restore {t} --version {v}{flag}");
                match window_line(last, &format!("{t}@{v}"), now_ms) {
                    Some((w, is_ended)) => {
                        if is_ended {
                            ended.push(format!("{t}@{v}: {w}"));
                        }
                        format!("{command}\n       # {w}")
                    }
                    None => command,
                }
            }
            _ => format!("delta-operator undrop {t}{flag}"),
        })
        .collect();
    let mut out = format!(
        "{who}: plan {} applied at {} ({} steps).\n",
        last.plan_id, last.time, last.steps_applied
    );
    out.push_str("warning: revert the manifest in Git (or wherever it is applied from) first, or the operator applies it again.\n");
    // the approval was spent by the apply: it cannot approve the same plan
    // again, but removing it leaves nothing that looks like one
    out.push_str(&format!(
        "1. Pause the resource while you undo, and remove the approval (spent: it approves nothing again, but keep Git and the cluster saying so):\n     kubectl annotate {kind} {name} -n {ns} {PAUSED}=true {APPROVE}-\n"
    ));
    let run = {
        let mut r = String::from(
            "Run, where the operator's lake is (with the operator's --config, or in its pod: kubectl exec -n <operator namespace> deploy/delta-operator -- delta-operator --config /etc/delta-operator/config.yaml ...):\n",
        );
        for c in &commands {
            r.push_str(&format!("     {c}\n"));
        }
        r
    };
    if kind == "deltatable" {
        out.push_str(
            "2. Revert the manifest in Git to what it was before this plan, and let it sync.\n",
        );
        out.push_str(&format!("3. {run}"));
    } else {
        // a DeltaTable applied again before its table is back would create an empty one
        // there, and the undrop would refuse: the table comes back first
        out.push_str(&format!("2. {run}"));
        out.push_str("3. Revert in Git: bring back the DeltaTable manifests of these tables (same names, this namespace), so the schema keeps them; a DeltaTable applied before the undrop creates an empty table in its place.\n");
    }
    out.push_str(&format!(
        "4. Resume:\n     kubectl annotate {kind} {name} -n {ns} {PAUSED}-\n"
    ));
    out.push_str("On a Databricks target these commands refuse and print the SQL to run in the workspace (RESTORE TABLE … TO VERSION AS OF … / UNDROP TABLE …).\n");
    for e in ended {
        out.push_str(&format!(
            "warning: restore point {e}: the restore refuses (its files are gone); restore a later version, or bring the data back from a copy\n"
        ));
    }
    for u in unreadable {
        out.push_str(&format!(
            "warning: restore point '{u}' cannot be read; left out\n"
        ));
    }
    Ok(out)
}

/// Polls until the approved plan is applied (the approval `value` spent, or a
/// newer apply of plan `id` than `before`), refused, or replaced.
async fn wait_applied(
    client: &Client,
    ns: &str,
    name: &str,
    id: &str,
    value: &str,
    before: Option<(String, String)>,
    timeout: Duration,
) -> Result<Exit, String> {
    let start = Instant::now();
    loop {
        let v = get(client, ns, name).await?;
        let spent = v.spent.as_ref().is_some_and(|s| s.value == value);
        let newer = v.last_applied.as_ref().is_some_and(|l| l.0 == id) && v.last_applied != before;
        if spent || newer {
            println!("Applied plan {id}.");
            return Ok(Exit::Ok);
        }
        // DriftDetected (driftPolicy Fail) waits for this approval as ApprovalRequired does
        let waits = [Reason::ApprovalRequired, Reason::DriftDetected].map(|r| r.to_string());
        if let Some(c) = v
            .condition("Stalled")
            .filter(|c| !waits.contains(&c.reason))
        {
            return Err(format!("the operator stopped: {}: {}", c.reason, c.message));
        }
        // under policy Observe or a pause, the approval acknowledges the drift: nothing applies
        let held = [Reason::Observing, Reason::Paused].map(|r| r.to_string());
        if let Some(c) = v
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready" && held.contains(&c.reason))
            && v.plan.as_ref().is_some_and(|p| p.id == id)
        {
            println!(
                "Acknowledged the drift of plan {id} ({}): nothing is applied; the resource is healthy until its plan changes.",
                c.reason
            );
            return Ok(Exit::Ok);
        }
        if v.plan.as_ref().is_some_and(|p| p.id != id) {
            return Err(format!(
                "the plan changed before it was applied (now {}); nothing of plan {id} ran. Review it again.",
                v.plan.as_ref().map_or("", |p| p.id.as_str())
            ));
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "plan {id} not applied after {}s; the annotation stays, the operator may still apply it",
                timeout.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn drift(client: &Client, ns: Option<&str>) -> Result<Exit, String> {
    let lp = ListParams::default();
    let (tables, schemas) = match ns {
        Some(ns) => (
            Api::<DeltaTable>::namespaced(client.clone(), ns),
            Api::<DeltaSchema>::namespaced(client.clone(), ns),
        ),
        None => (
            Api::<DeltaTable>::all(client.clone()),
            Api::<DeltaSchema>::all(client.clone()),
        ),
    };
    let mut views: Vec<View> = schemas
        .list(&lp)
        .await
        .map_err(|e| format!("cannot list DeltaSchemas: {e}"))?
        .iter()
        .map(View::of_schema)
        .collect();
    views.extend(
        tables
            .list(&lp)
            .await
            .map_err(|e| format!("cannot list DeltaTables: {e}"))?
            .iter()
            .map(View::of_table),
    );
    views.extend(list_objects(client, ns).await?);
    let pending: Vec<&View> = views
        .iter()
        .filter(|v| v.pending().is_some() || v.observed_generation < v.generation)
        .collect();
    if pending.is_empty() {
        println!(
            "No pending plans{}.",
            ns.map(|n| format!(" in namespace {n}")).unwrap_or_default()
        );
        return Ok(Exit::Ok);
    }
    let rows: Vec<[String; 7]> = pending
        .iter()
        .map(|v| {
            let p = v.plan.as_ref();
            [
                v.namespace.clone(),
                format!("{}/{}", v.kind, v.name),
                v.target.clone().unwrap_or_else(|| "-".into()),
                p.map_or("-".into(), |p| p.summary.clone()),
                p.and_then(|p| p.risk.clone()).unwrap_or_else(|| "-".into()),
                p.map_or("-".into(), |p| p.id.clone()),
                v.state(),
            ]
        })
        .collect();
    print!(
        "{}",
        columns(
            [
                "NAMESPACE",
                "RESOURCE",
                "TABLE",
                "PLAN",
                "RISK",
                "PLAN ID",
                "STATE"
            ],
            &rows
        )
    );
    Ok(Exit::Changes)
}

/// Every DeltaView, DeltaFunction and DeltaVolume (of `ns`, or everywhere).
async fn list_objects(client: &Client, ns: Option<&str>) -> Result<Vec<View>, String> {
    async fn list<K>(client: &Client, ns: Option<&str>) -> Result<Vec<K>, String>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned,
    {
        let api = match ns {
            Some(ns) => Api::<K>::namespaced(client.clone(), ns),
            None => Api::<K>::all(client.clone()),
        };
        api.list(&ListParams::default())
            .await
            .map(|l| l.items)
            .map_err(|e| format!("cannot list {}: {e}", K::plural(&())))
    }
    let mut out = Vec::new();
    for o in list::<DeltaView>(client, ns).await? {
        out.push(View::of_object("deltaview", &o, o.status.as_ref()));
    }
    for o in list::<DeltaFunction>(client, ns).await? {
        out.push(View::of_object("deltafunction", &o, o.status.as_ref()));
    }
    for o in list::<DeltaVolume>(client, ns).await? {
        out.push(View::of_object("deltavolume", &o, o.status.as_ref()));
    }
    Ok(out)
}

/// Left-aligned columns, as kubectl prints them.
fn columns<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut width = header.map(str::len);
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let s: Vec<String> = cells
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        s.join("   ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_a_kind_prefix_or_default_to_a_table() {
        assert_eq!(parse_name("orders").unwrap(), ("deltatable", "orders"));
        assert_eq!(parse_name("dt/orders").unwrap(), ("deltatable", "orders"));
        assert_eq!(
            parse_name("deltaschema/sales").unwrap(),
            ("deltaschema", "sales")
        );
        assert_eq!(parse_name("ds/sales").unwrap(), ("deltaschema", "sales"));
        assert_eq!(parse_name("dv/recent").unwrap(), ("deltaview", "recent"));
        assert_eq!(
            parse_name("deltafunction/mask").unwrap(),
            ("deltafunction", "mask")
        );
        assert_eq!(parse_name("dvol/raw").unwrap(), ("deltavolume", "raw"));
        assert_eq!(parse_name("dfn/mask").unwrap(), ("deltafunction", "mask"));
        let e = parse_name("pod/x").unwrap_err();
        assert!(
            e.contains("unknown kind 'pod'") && e.contains("deltaschema/NAME"),
            "{e}"
        );
    }

    fn applied(points: &[&str]) -> LastApplied {
        LastApplied {
            plan_id: "0123456789abcdef".into(),
            time: "2026-12-01T10:00:00Z".into(),
            steps_applied: 2,
            restore_points: points.iter().map(|s| s.to_string()).collect(),
            undo_windows: vec![],
        }
    }

    #[test]
    fn undo_restores_each_table_to_its_earliest_restore_point() {
        let last = applied(&[
            "main.sales.orders@7",
            "main.sales.orders@5",
            "main.sales.x@1",
        ]);
        let out = undo_text("deltatable", "orders", "data", Some(&last), Some("prod"), 0).unwrap();
        assert!(
            out.contains(
                "     delta-operator restore main.sales.orders --version 5 --target prod\n"
            ) && out.contains("delta-operator restore main.sales.x --version 1 --target prod")
                && !out.contains("--version 7"),
            "{out}"
        );
        assert!(out.contains("revert the manifest in Git"), "{out}");
        assert!(
            out.contains(
                "kubectl annotate deltatable orders -n data delta-operator.io/paused=true delta-operator.io/approve-"
            ),
            "{out}"
        );
        let out = undo_text("deltaschema", "sales", "data", Some(&last), None, 0).unwrap();
        assert!(
            out.contains("     delta-operator undrop main.sales.orders\n")
                && !out.contains("--target"),
            "{out}"
        );
        // the table comes back before its DeltaTable does
        let undrop = out.find("delta-operator undrop").unwrap();
        let revert = out.find("bring back the DeltaTable").unwrap();
        assert!(undrop < revert, "{out}");
    }

    #[test]
    fn undo_shows_each_restore_points_window() {
        use delta_operator_api::spec::crd::UndoWindowStatus;
        let mut last = applied(&["main.sales.orders@5", "main.sales.x@1", "main.sales.y@2"]);
        last.undo_windows = vec![
            UndoWindowStatus {
                restore_point: "main.sales.orders@5".into(),
                window: "works until 2026-12-11 14:00 UTC".into(),
                works_until: Some("2026-12-11T14:00:00Z".into()),
                ended_at: None,
                checked_at: "2026-12-04T14:00:00Z".into(),
            },
            UndoWindowStatus {
                restore_point: "main.sales.x@1".into(),
                window:
                    "no longer works: vacuumed at 2026-12-04 15:00 UTC (retention 0 hours)\u{1b}[2J"
                        .into(),
                works_until: None,
                ended_at: Some("2026-12-04T15:00:00Z".into()),
                checked_at: "2026-12-04T16:00:00Z".into(),
            },
        ];
        // 2026-12-05 14:00 UTC
        let now = 1_796_479_200_000;
        let out = undo_text("deltatable", "orders", "data", Some(&last), None, now).unwrap();
        assert!(
            out.contains(
                "     delta-operator restore main.sales.orders --version 5\n       # works until 2026-12-11 14:00 UTC (checked 2026-12-04T14:00:00Z)\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "     delta-operator restore main.sales.x --version 1\n       # no longer works: vacuumed at 2026-12-04 15:00 UTC (retention 0 hours)"
            ) && out.contains("warning: restore point main.sales.x@1: no longer works: vacuumed at 2026-12-04 15:00 UTC")
                && out.contains("the restore refuses"),
            "{out}"
        );
        // none recorded: the command alone
        assert!(
            out.contains("     delta-operator restore main.sales.y --version 2\n     4.")
                || out.contains("     delta-operator restore main.sales.y --version 2\n4."),
            "{out}"
        );
        assert!(!out.contains('\u{1b}'), "{out}");
        // past its window: it may no longer work
        let later = 1_797_084_000_000; // 2026-12-12 14:00 UTC
        let out = undo_text("deltatable", "orders", "data", Some(&last), None, later).unwrap();
        assert!(
            out.contains("# may no longer work: its retention ended at 2026-12-11 14:00 UTC; the next VACUUM may remove its files"),
            "{out}"
        );
    }

    #[test]
    fn undo_without_restore_points_says_why_and_hostile_points_are_left_out() {
        let e = undo_text("deltatable", "orders", "data", None, None, 0).unwrap_err();
        assert!(e.contains("no applied plan"), "{e}");
        let e =
            undo_text("deltatable", "orders", "data", Some(&applied(&[])), None, 0).unwrap_err();
        assert!(e.contains("recorded no restore point"), "{e}");
        let hostile = applied(&[
            "main.sales.orders; rm -rf /@1",
            "../etc.sales.t@1",
            "main.sales.t@-1",
            "main.sales.t@\u{1b}[2J",
            "main.sales.ok@3",
        ]);
        let out = undo_text("deltatable", "orders", "data", Some(&hostile), None, 0).unwrap();
        let commands: Vec<&str> = out
            .lines()
            .filter(|l| l.trim_start().starts_with("delta-operator "))
            .collect();
        assert_eq!(
            commands,
            ["     delta-operator restore main.sales.ok --version 3"],
            "{out}"
        );
        assert!(!out.contains('\u{1b}'), "{out}");
        assert_eq!(out.matches("cannot be read; left out").count(), 4, "{out}");
    }

    #[test]
    fn a_spent_approval_is_shown_as_spent_and_the_new_value_is_offered() {
        let spent = ApprovalStatus {
            plan_id: "0123456789abcdef".into(),
            value: "0123456789abcdef".into(),
            spent_at: "2026-12-01T10:00:00Z".into(),
            ..Default::default()
        };
        let v = View {
            kind: "deltatable",
            namespace: "data".into(),
            name: "orders".into(),
            target: Some("main.sales.orders".into()),
            generation: Some(2),
            observed_generation: Some(2),
            conditions: vec![],
            plan: Some(PlanStatus {
                id: "0123456789abcdef".into(),
                summary: "+0 ~1 -0".into(),
                approve_command: Some("kubectl annotate …".into()),
                approval: Some("0123456789abcdef-2".into()),
                text: Some("main.sales.orders   ~ update\n".into()),
                ..Default::default()
            }),
            paused: false,
            resource_version: None,
            last_applied: None,
            annotation: Some("0123456789abcdef".into()),
            spent: Some(spent),
        };
        assert_eq!(
            v.state(),
            "awaiting a new approval (0123456789abcdef is spent)"
        );
        let out = show(&v);
        assert!(
            out.contains("Approval: delta-operator.io/approve=0123456789abcdef is spent (by plan 0123456789abcdef applied at 2026-12-01T10:00:00Z); it approves nothing again"),
            "{out}"
        );
        // a fresh value on the resource is not spent
        let fresh = View {
            annotation: Some("0123456789abcdef-2".into()),
            ..v
        };
        assert_eq!(fresh.state(), "awaiting approval");
        assert!(fresh.approval_line().is_none());
    }

    #[test]
    fn columns_line_up() {
        let out = columns(
            ["A", "BB"],
            &[["long value".into(), "x".into()], ["s".into(), "yy".into()]],
        );
        assert_eq!(out, "A            BB\nlong value   x\ns            yy\n");
    }
}
