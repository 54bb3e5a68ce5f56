//! The dependency graph of a plan: tables, views and functions, and what
//! each reads or calls. It orders the apply (dependencies first) and blocks
//! what depends on something refused.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::object::{ObjectOutcome, ObjectPlan};
use super::planner::{Outcome, TablePlan};
use super::rules::{Rule, RuleFailure};
use crate::model::{ObjectKind, ObjectRef, TableRef};

/// A node of the graph: a table or a view, function or volume.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    Table(TableRef),
    Object(ObjectRef),
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Table(t) => t.fmt(f),
            Node::Object(o) => o.fmt(f),
        }
    }
}

/// Why one node depends on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// A foreign key's parent (validation reports their cycles).
    ForeignKey,
    /// A relation or function a view, function or mask reads or calls.
    Reads,
}

/// The nodes of a plan (its tables, then its objects, by position) and what
/// each depends on. Only names in the plan make edges: a relation or
/// function outside it is nobody's to order.
pub struct Graph {
    pub nodes: Vec<Node>,
    deps: Vec<Vec<(usize, Edge)>>,
}

/// A mask's function name, resolved against the table's catalog and schema
/// (one- and two-part names qualified; backticks removed).
pub fn resolve_function(name: &str, table: &TableRef) -> Option<TableRef> {
    let mut parts = vec![];
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = name.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' if quoted && chars.peek() == Some(&'`') => {
                chars.next();
                cur.push('`');
            }
            '`' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    parts.push(cur);
    if parts.iter().any(String::is_empty) {
        return None;
    }
    match parts.as_slice() {
        [f] => Some(TableRef::new(&table.catalog, &table.schema, f)),
        [s, f] => Some(TableRef::new(&table.catalog, s, f)),
        [c, s, f] => Some(TableRef::new(c, s, f)),
        _ => None,
    }
}

impl Graph {
    /// The graph of these plans: foreign keys and column masks of declared
    /// tables, and what declared views and functions read.
    pub fn of(tables: &[TablePlan], objects: &[ObjectPlan]) -> Graph {
        let mut nodes: Vec<Node> = tables
            .iter()
            .map(|t| Node::Table(t.table.clone()))
            .collect();
        nodes.extend(objects.iter().map(|o| Node::Object(o.object.clone())));
        let mut relations: BTreeMap<TableRef, usize> = BTreeMap::new();
        let mut functions: BTreeMap<TableRef, usize> = BTreeMap::new();
        for (i, t) in tables.iter().enumerate() {
            relations.entry(t.table.clone()).or_insert(i);
        }
        for (j, o) in objects.iter().enumerate() {
            let i = tables.len() + j;
            match o.object.kind {
                ObjectKind::View => {
                    relations.entry(o.object.as_table_ref()).or_insert(i);
                }
                ObjectKind::Function => {
                    functions.entry(o.object.as_table_ref()).or_insert(i);
                }
                ObjectKind::Volume => {}
            }
        }
        let mut deps: Vec<Vec<(usize, Edge)>> = vec![vec![]; nodes.len()];
        for (i, t) in tables.iter().enumerate() {
            let Some(d) = &t.desired else { continue };
            for fk in &d.foreign_keys {
                if fk.references != t.table
                    && let Some(&p) = relations.get(&fk.references)
                {
                    deps[i].push((p, Edge::ForeignKey));
                }
            }
            for c in &d.columns {
                if let Some(m) = &c.mask
                    && let Some(f) = resolve_function(&m.function, &t.table)
                    && let Some(&p) = functions.get(&f)
                {
                    deps[i].push((p, Edge::Reads));
                }
            }
        }
        for (j, o) in objects.iter().enumerate() {
            let i = tables.len() + j;
            let Some(d) = &o.desired else { continue };
            for r in &d.reads.relations {
                if let Some(&p) = relations.get(r) {
                    deps[i].push((p, Edge::Reads));
                }
            }
            for f in &d.reads.functions {
                if let Some(&p) = functions.get(f) {
                    deps[i].push((p, Edge::Reads));
                }
            }
        }
        for d in &mut deps {
            d.sort_by_key(|(p, e)| (*p, *e == Edge::ForeignKey));
            d.dedup_by_key(|(p, _)| *p);
        }
        Graph { nodes, deps }
    }

    /// Positions of what node `i` depends on (itself left out).
    pub fn deps_of(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.deps[i]
            .iter()
            .map(|(p, _)| *p)
            .filter(move |p| *p != i)
    }

    /// Every node, dependencies first: by depth (a node after everything it
    /// depends on), then tables before objects, then by name. The members of
    /// a cycle share a depth.
    pub fn order(&self) -> Vec<Node> {
        let adj: Vec<Vec<usize>> = self
            .deps
            .iter()
            .map(|d| d.iter().map(|(p, _)| *p).collect())
            .collect();
        let (comp, count) = components(&adj);
        // Tarjan numbers a component after every component it reaches
        let mut members: Vec<Vec<usize>> = vec![vec![]; count];
        for (v, c) in comp.iter().enumerate() {
            members[*c].push(v);
        }
        let mut depth = vec![0usize; count];
        for c in 0..count {
            let mut d = 0;
            for &v in &members[c] {
                for &w in &adj[v] {
                    if comp[w] != c {
                        d = d.max(depth[comp[w]] + 1);
                    }
                }
            }
            depth[c] = d;
        }
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        let key = |i: &usize| {
            let n = &self.nodes[*i];
            (
                depth[comp[*i]],
                matches!(n, Node::Object(_)),
                n.to_string(),
                n.clone(),
            )
        };
        order.sort_by_cached_key(key);
        order.dedup_by_key(|i| self.nodes[*i].clone());
        order.into_iter().map(|i| self.nodes[i].clone()).collect()
    }

    /// Every node on a cycle of reads (foreign keys left to validation), with
    /// the shortest cycle through it: `a → b → a`.
    pub fn cycles(&self) -> Vec<(usize, String)> {
        let adj: Vec<Vec<usize>> = self
            .deps
            .iter()
            .map(|d| {
                d.iter()
                    .filter(|(_, e)| *e == Edge::Reads)
                    .map(|(p, _)| *p)
                    .collect()
            })
            .collect();
        let (comp, _) = components(&adj);
        let mut out = vec![];
        for v in 0..adj.len() {
            let on_cycle =
                adj[v].contains(&v) || adj[v].iter().any(|&w| w != v && comp[w] == comp[v]);
            if !on_cycle {
                continue;
            }
            let path = self.shortest_cycle(v, &adj, &comp);
            let names: Vec<String> = path.iter().map(|i| self.nodes[*i].to_string()).collect();
            out.push((v, names.join(" → ")));
        }
        out
    }

    /// The shortest path from `v` back to itself within its component (both ends included).
    fn shortest_cycle(&self, v: usize, adj: &[Vec<usize>], comp: &[usize]) -> Vec<usize> {
        if adj[v].contains(&v) {
            return vec![v, v];
        }
        let mut from: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([v]);
        while let Some(u) = queue.pop_front() {
            for &w in &adj[u] {
                if comp[w] != comp[v] {
                    continue;
                }
                if w == v {
                    // u → v closes it: walk back from u to v, then read forward
                    let mut walk = vec![u];
                    let mut x = u;
                    while x != v {
                        let Some(&p) = from.get(&x) else { break };
                        x = p;
                        walk.push(x);
                    }
                    walk.reverse();
                    walk.push(v);
                    return walk;
                }
                if w != v && !from.contains_key(&w) {
                    from.insert(w, u);
                    queue.push_back(w);
                }
            }
        }
        vec![v, v]
    }
}

/// Strongly connected components (Tarjan's, without recursion): each node's
/// component, numbered so a component comes after every one it reaches; and
/// how many there are.
fn components(adj: &[Vec<usize>]) -> (Vec<usize>, usize) {
    const NONE: usize = usize::MAX;
    let n = adj.len();
    let (mut index, mut low) = (vec![NONE; n], vec![0; n]);
    let mut on_stack = vec![false; n];
    let mut stack = vec![];
    let mut comp = vec![NONE; n];
    let (mut next, mut count) = (0, 0);
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut calls: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, i)) = calls.last() {
            if i < adj[v].len() {
                if let Some(top) = calls.last_mut() {
                    top.1 += 1;
                }
                let w = adj[v][i];
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                calls.pop();
                if let Some(&(u, _)) = calls.last() {
                    low[u] = low[u].min(low[v]);
                }
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = count;
                        if w == v {
                            break;
                        }
                    }
                    count += 1;
                }
            }
        }
    }
    (comp, count)
}

/// Refuses every table and object on a cycle of reads by `DependencyCycle`,
/// naming the cycle through it.
pub fn refuse_cycles(tables: &mut [TablePlan], objects: &mut [ObjectPlan]) {
    let graph = Graph::of(tables, objects);
    for (i, cycle) in graph.cycles() {
        let node = &graph.nodes[i];
        let failure = RuleFailure {
            rule: Rule::DependencyCycle,
            subject: node.to_string(),
            message: format!(
                "{node} depends on itself: {cycle}; no order can create these"
            ),
            fix: "break the cycle: make one of them read a table instead of the object that reads it back".into(),
        };
        if i < tables.len() {
            tables[i].outcome = Outcome::Rejected {
                failures: vec![failure],
            };
        } else {
            objects[i - tables.len()].outcome = ObjectOutcome::Rejected {
                failures: vec![failure],
            };
        }
    }
}

/// A table or object whose dependency was refused or is blocked is blocked
/// too, naming every such dependency (to a fixed point); the steps it would
/// run are kept for the dry run. Run after planning and after compiling.
pub fn block(tables: &mut [TablePlan], objects: &mut [ObjectPlan]) {
    let graph = Graph::of(tables, objects);
    let deps: Vec<Vec<usize>> = (0..graph.nodes.len())
        .map(|i| graph.deps_of(i).collect())
        .collect();
    if deps.iter().all(Vec::is_empty) {
        return;
    }
    let nt = tables.len();
    loop {
        let failed: Vec<bool> = tables
            .iter()
            .map(|t| !t.is_accepted())
            .chain(objects.iter().map(|o| !o.is_accepted()))
            .collect();
        let mut changed = false;
        for (i, d) in deps.iter().enumerate() {
            let mut by: Vec<&Node> = d
                .iter()
                .filter(|p| failed[**p])
                .map(|p| &graph.nodes[*p])
                .collect();
            if by.is_empty() {
                continue;
            }
            by.sort();
            by.dedup();
            if i < nt {
                let by: Vec<TableRef> = by
                    .into_iter()
                    .map(|n| match n {
                        Node::Table(t) => t.clone(),
                        Node::Object(o) => o.as_table_ref(),
                    })
                    .collect();
                let t = &mut tables[i];
                match &mut t.outcome {
                    Outcome::Rejected { .. } => {}
                    Outcome::Blocked { by: known, .. } if *known == by => {}
                    Outcome::Blocked { by: known, .. } => {
                        *known = by;
                        changed = true;
                    }
                    outcome => {
                        let would_run =
                            match std::mem::replace(outcome, Outcome::Accepted { steps: vec![] }) {
                                Outcome::Accepted { steps } => steps,
                                _ => vec![],
                            };
                        *outcome = Outcome::Blocked { by, would_run };
                        changed = true;
                    }
                }
            } else {
                let by: Vec<String> = by.into_iter().map(Node::to_string).collect();
                let o = &mut objects[i - nt];
                match &mut o.outcome {
                    ObjectOutcome::Rejected { .. } => {}
                    ObjectOutcome::Blocked { by: known, .. } if *known == by => {}
                    ObjectOutcome::Blocked { by: known, .. } => {
                        *known = by;
                        changed = true;
                    }
                    outcome => {
                        let would_run = match std::mem::replace(
                            outcome,
                            ObjectOutcome::Accepted { steps: vec![] },
                        ) {
                            ObjectOutcome::Accepted { steps } => steps,
                            _ => vec![],
                        };
                        *outcome = ObjectOutcome::Blocked { by, would_run };
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return;
        }
    }
}
