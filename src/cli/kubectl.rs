//! The kubectl plugin: the same binary, installed as `kubectl-delta`, or run as
//! `delta-operator kubectl …`. It reads what the operator wrote into status and
//! writes only the approval annotation; it never talks to a backend.

use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::{EXIT_CHANGES, EXIT_ERROR, EXIT_OK};
use crate::controller::{APPROVE, PAUSED};
use crate::spec::crd::{Condition, PlanStatus};
use crate::spec::{DeltaSchema, DeltaTable};
use delta_operator_api::reason::Reason;

#[derive(Parser, Debug)]
#[command(
    name = "kubectl delta",
    bin_name = "kubectl delta",
    version,
    about = "Review and approve delta-operator plans: kubectl delta plan|approve|drift"
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
    /// Print the plan the operator wrote into status. NAME is a DeltaTable, or `deltaschema/NAME`.
    Plan { name: String },
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
    /// List every DeltaTable and DeltaSchema with a pending plan. Exit 2 when there is one.
    Drift {
        /// In every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
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
    /// The id of the plan last applied.
    last_applied: Option<String>,
}

impl View {
    fn of_table(t: &DeltaTable) -> Self {
        let s = t.status.clone().unwrap_or_default();
        View {
            last_applied: s.last_applied.map(|l| l.plan_id),
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
            last_applied: s.last_applied.map(|l| l.plan_id),
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
        }
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

pub async fn run(args: KubectlArgs) -> u8 {
    match run_inner(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_ERROR
        }
    }
}

async fn run_inner(args: KubectlArgs) -> Result<u8, String> {
    let client = Client::try_default()
        .await
        .map_err(|e| format!("cannot reach the cluster from KUBECONFIG: {e}"))?;
    let ns = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    match args.command {
        KubectlCommand::Plan { name } => {
            let view = get(&client, &ns, &name).await?;
            print!("{}", show(&view));
            Ok(if view.pending().is_some() {
                EXIT_CHANGES
            } else {
                EXIT_OK
            })
        }
        KubectlCommand::Approve {
            name,
            yes,
            wait,
            timeout,
        } => approve(&client, &ns, &name, yes, wait.then_some(timeout)).await,
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
        Some((kind, _)) => Err(format!(
            "unknown kind '{kind}' in '{name}': use NAME (a DeltaTable), deltatable/NAME or deltaschema/NAME"
        )),
    }
}

async fn get(client: &Client, ns: &str, name: &str) -> Result<View, String> {
    let (kind, n) = parse_name(name)?;
    let missing = |e: kube::Error| match e {
        kube::Error::Api(s) if s.code == 404 => {
            format!("{kind} '{n}' not found in namespace '{ns}' (use -n to pick the namespace)")
        }
        e => format!("cannot read {kind} '{n}' in namespace '{ns}': {e}"),
    };
    Ok(match kind {
        "deltatable" => View::of_table(
            &Api::<DeltaTable>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?,
        ),
        _ => View::of_schema(
            &Api::<DeltaSchema>::namespaced(client.clone(), ns)
                .get(n)
                .await
                .map_err(missing)?,
        ),
    })
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
) -> Result<u8, String> {
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
        return Ok(EXIT_OK);
    }
    let id = plan.id.clone();
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
            return Ok(EXIT_ERROR);
        }
    }
    // the resourceVersion makes the patch fail if the object changed since it was shown
    let patch =
        json!({"metadata": {"resourceVersion": v.resource_version, "annotations": {APPROVE: id}}});
    let params = PatchParams::default();
    let (kind, n) = parse_name(name)?;
    let result = match kind {
        "deltatable" => Api::<DeltaTable>::namespaced(client.clone(), ns)
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
            "Approved plan {id}: {}/{} annotated {APPROVE}={id}",
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
            Ok(EXIT_OK)
        }
        Some(timeout) => wait_applied(client, ns, name, &id, timeout).await,
    }
}

/// Polls until the approved plan is applied, refused, or replaced.
async fn wait_applied(
    client: &Client,
    ns: &str,
    name: &str,
    id: &str,
    timeout: Duration,
) -> Result<u8, String> {
    let start = Instant::now();
    loop {
        let v = get(client, ns, name).await?;
        if v.last_applied.as_deref() == Some(id) {
            println!("Applied plan {id}.");
            return Ok(EXIT_OK);
        }
        if let Some(c) = v
            .condition("Stalled")
            .filter(|c| c.reason != Reason::ApprovalRequired.to_string())
        {
            return Err(format!("the operator stopped: {}: {}", c.reason, c.message));
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

async fn drift(client: &Client, ns: Option<&str>) -> Result<u8, String> {
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
    let pending: Vec<&View> = views
        .iter()
        .filter(|v| v.pending().is_some() || v.observed_generation < v.generation)
        .collect();
    if pending.is_empty() {
        println!(
            "No pending plans{}.",
            ns.map(|n| format!(" in namespace {n}")).unwrap_or_default()
        );
        return Ok(EXIT_OK);
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
    Ok(EXIT_CHANGES)
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
        let e = parse_name("pod/x").unwrap_err();
        assert!(
            e.contains("unknown kind 'pod'") && e.contains("deltaschema/NAME"),
            "{e}"
        );
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
