//! What a parsed query or function body reads: the relations it names (a CTE
//! is not one), the user functions it calls (two- or three-part names; a
//! one-part name is a built-in) and the columns it reads of each relation,
//! every name resolved to `catalog.schema.name` against a default schema.
//!
//! A walk with sqlparser's `Visitor` keeping a stack of scopes (one per query
//! and per `SELECT`: the relations of its FROM, by alias or name). A column
//! qualified by a relation's alias or name is that relation's; an unqualified
//! one is the relation's of a one-relation scope, and every relation's of a
//! scope of several (over-reported, never missed); in a subquery in an
//! expression (which may read the outer query) also every outer relation's.
//! `*` and `t.*` read the column `*`. Names are lower-cased (Unity Catalog
//! compares them so).

use std::collections::{BTreeSet, HashSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName, ObjectNamePart, Query,
    Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr, TableFactor, TableWithJoins,
    Visit, Visitor,
};

pub use delta_operator_core::model::object::{ColumnRead, Reads};
use delta_operator_core::model::{SchemaRef, TableRef};

/// What `query` reads.
pub(crate) fn of_query(query: &Query, default: &SchemaRef) -> Result<Reads, String> {
    let mut w = Walk::new(default, &[]);
    match query.visit(&mut w) {
        ControlFlow::Break(why) => Err(why),
        ControlFlow::Continue(()) => Ok(w.finish()),
    }
}

/// What `expr` (a function body over `parameters`) reads.
pub(crate) fn of_expr(
    expr: &Expr,
    parameters: &[String],
    default: &SchemaRef,
) -> Result<Reads, String> {
    let mut w = Walk::new(default, parameters);
    match expr.visit(&mut w) {
        ControlFlow::Break(why) => Err(why),
        ControlFlow::Continue(()) => Ok(w.finish()),
    }
}

/// A relation of a scope: the names that qualify its columns, and the table
/// or view it is (none for a CTE, a subquery or a table function).
struct Entry {
    qualifiers: Vec<Vec<String>>,
    table: Option<TableRef>,
}

#[derive(Default)]
struct Scope {
    entries: Vec<Entry>,
    /// Names the scope makes that are no relation's column (LATERAL VIEW's).
    names: Vec<String>,
    /// A subquery in an expression: its unqualified columns may be the outer query's.
    correlated: bool,
}

impl Scope {
    fn tables(&self) -> impl Iterator<Item = &TableRef> {
        self.entries.iter().filter_map(|e| e.table.as_ref())
    }
}

struct Walk<'a> {
    default: &'a SchemaRef,
    scopes: Vec<Scope>,
    /// The CTE names of each query entered.
    ctes: Vec<Vec<String>>,
    /// Whether each query entered is a subquery in an expression.
    queries: Vec<bool>,
    /// Subqueries met in expressions, not yet entered.
    correlated: HashSet<*const Query>,
    /// Function parameters and lambda parameters in force.
    locals: Vec<String>,
    relations: BTreeSet<TableRef>,
    functions: BTreeSet<TableRef>,
    columns: BTreeSet<ColumnRead>,
}

fn lower(parts: &[sqlparser::ast::Ident]) -> Vec<String> {
    parts.iter().map(|i| i.value.to_lowercase()).collect()
}

impl<'a> Walk<'a> {
    fn new(default: &'a SchemaRef, parameters: &[String]) -> Self {
        Walk {
            default,
            scopes: Vec::new(),
            ctes: Vec::new(),
            queries: Vec::new(),
            correlated: HashSet::new(),
            locals: parameters.iter().map(|p| p.to_lowercase()).collect(),
            relations: BTreeSet::new(),
            functions: BTreeSet::new(),
            columns: BTreeSet::new(),
        }
    }

    fn finish(self) -> Reads {
        Reads {
            relations: self.relations.into_iter().collect(),
            functions: self.functions.into_iter().collect(),
            columns: self.columns.into_iter().collect(),
        }
    }

    /// The parts of `name`, lower-cased; refused when a part is not an identifier.
    fn parts(name: &ObjectName) -> Result<Vec<String>, String> {
        name.0
            .iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(i) => Ok(i.value.to_lowercase()),
                ObjectNamePart::Function(_) => Err(format!(
                    "names '{name}' with a computed part; write the name out"
                )),
            })
            .collect()
    }

    /// `name` resolved to three parts against the default schema.
    fn resolve(&self, parts: &[String], name: &ObjectName) -> Result<TableRef, String> {
        let (c, s) = (&self.default.catalog, &self.default.schema);
        match parts {
            [n] => Ok(TableRef::new(c, s, n)),
            [sc, n] => Ok(TableRef::new(c, sc, n)),
            [ca, sc, n] => Ok(TableRef::new(ca, sc, n)),
            _ => Err(format!(
                "names '{name}' with {} parts; a table, view or function has at most three (catalog.schema.name)",
                parts.len()
            )),
        }
    }

    fn is_cte(&self, parts: &[String]) -> bool {
        matches!(parts, [n] if self.ctes.iter().flatten().any(|c| c == n))
    }

    /// A two- or three-part function name is a user function; a one-part one a built-in.
    fn function(&mut self, name: &ObjectName) -> Result<(), String> {
        let parts = Self::parts(name)?;
        if parts.len() >= 2 {
            let f = self.resolve(&parts, name)?;
            self.functions.insert(f);
        }
        Ok(())
    }

    /// The scope of a FROM list (and LATERAL VIEWs).
    fn scope_of(&self, from: &[TableWithJoins], correlated: bool) -> Scope {
        let mut scope = Scope {
            correlated,
            ..Scope::default()
        };
        for twj in from {
            self.add_factor(&twj.relation, &mut scope.entries);
            for j in &twj.joins {
                self.add_factor(&j.relation, &mut scope.entries);
            }
        }
        scope
    }

    fn add_factor(&self, factor: &TableFactor, entries: &mut Vec<Entry>) {
        let alias_only = |alias: &Option<sqlparser::ast::TableAlias>| Entry {
            qualifiers: alias
                .iter()
                .map(|a| vec![a.name.value.to_lowercase()])
                .collect(),
            table: None,
        };
        match factor {
            TableFactor::Table {
                name, alias, args, ..
            } => {
                let Ok(parts) = Self::parts(name) else {
                    return entries.push(alias_only(alias));
                };
                let table = if args.is_some() || self.is_cte(&parts) {
                    None
                } else {
                    self.resolve(&parts, name).ok()
                };
                let qualifiers = match (alias, &table) {
                    (Some(a), _) => vec![vec![a.name.value.to_lowercase()]],
                    (None, Some(t)) => vec![
                        vec![t.table.clone()],
                        vec![t.schema.clone(), t.table.clone()],
                        vec![t.catalog.clone(), t.schema.clone(), t.table.clone()],
                    ],
                    (None, None) => vec![parts],
                };
                entries.push(Entry { qualifiers, table });
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                self.add_factor(&table_with_joins.relation, entries);
                for j in &table_with_joins.joins {
                    self.add_factor(&j.relation, entries);
                }
                if alias.is_some() {
                    entries.push(alias_only(alias));
                }
            }
            TableFactor::Pivot { table, alias, .. }
            | TableFactor::Unpivot { table, alias, .. }
            | TableFactor::MatchRecognize { table, alias, .. } => {
                self.add_factor(table, entries);
                if alias.is_some() {
                    entries.push(alias_only(alias));
                }
            }
            TableFactor::Derived { alias, .. }
            | TableFactor::TableFunction { alias, .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::JsonTable { alias, .. }
            | TableFactor::OpenJsonTable { alias, .. }
            | TableFactor::XmlTable { alias, .. }
            | TableFactor::SemanticView { alias, .. } => entries.push(alias_only(alias)),
        }
    }

    fn read(&mut self, table: &TableRef, column: &str) {
        self.columns.insert(ColumnRead {
            relation: table.clone(),
            column: column.to_string(),
        });
    }

    /// An unqualified column.
    fn unqualified(&mut self, column: &str) {
        if self.locals.iter().any(|l| l == column) {
            return;
        }
        let mut hits = Vec::new();
        for scope in self.scopes.iter().rev() {
            if scope.names.iter().any(|n| n == column) {
                break;
            }
            if scope.entries.is_empty() {
                continue;
            }
            hits.extend(scope.tables().cloned());
            if !scope.correlated {
                break;
            }
        }
        for t in hits {
            self.read(&t, column);
        }
    }

    /// `a.b`, `t.c`, `s.t.c`, `c.s.t.col.field`: the longest qualifier of the
    /// innermost scope that has one; else the first part is a column (a struct's field read).
    fn qualified(&mut self, parts: &[String]) {
        let mut hits: Vec<(TableRef, String)> = Vec::new();
        let mut matched = false;
        for scope in self.scopes.iter().rev() {
            for e in &scope.entries {
                let q = e
                    .qualifiers
                    .iter()
                    .filter(|q| q.len() < parts.len() && parts[..q.len()] == q[..])
                    .map(Vec::len)
                    .max();
                if let Some(n) = q {
                    matched = true;
                    if let Some(t) = &e.table {
                        hits.push((t.clone(), parts[n].clone()));
                    }
                }
            }
            if matched {
                break;
            }
        }
        if matched {
            for (t, c) in hits {
                self.read(&t, &c);
            }
        } else if let Some(first) = parts.first() {
            let first = first.clone();
            self.unqualified(&first);
        }
    }

    /// `t.*`: every column of the relation `parts` names.
    fn star_of(&mut self, parts: &[String]) {
        let mut hits = Vec::new();
        for scope in self.scopes.iter().rev() {
            let here: Vec<&Entry> = scope
                .entries
                .iter()
                .filter(|e| e.qualifiers.iter().any(|q| q[..] == parts[..]))
                .collect();
            if !here.is_empty() {
                hits.extend(here.iter().filter_map(|e| e.table.clone()));
                break;
            }
        }
        for t in hits {
            self.read(&t, ColumnRead::ALL);
        }
    }

    /// `*`: every column of every relation of the innermost scope that has some.
    fn star(&mut self) {
        let hits: Vec<TableRef> = self
            .scopes
            .iter()
            .rev()
            .find(|s| !s.entries.is_empty())
            .map(|s| s.tables().cloned().collect())
            .unwrap_or_default();
        for t in hits {
            self.read(&t, ColumnRead::ALL);
        }
    }

    fn function_args(&mut self, name: &ObjectName, args: &FunctionArguments) -> Result<(), String> {
        let FunctionArguments::List(list) = args else {
            if let FunctionArguments::Subquery(q) = args {
                self.correlated.insert(&**q as *const Query);
            }
            return Ok(());
        };
        let counts = matches!(&Self::parts(name)?[..], [n] if n == "count");
        for a in &list.args {
            let arg = match a {
                FunctionArg::Named { arg, .. }
                | FunctionArg::ExprNamed { arg, .. }
                | FunctionArg::Unnamed(arg) => arg,
            };
            match arg {
                FunctionArgExpr::Wildcard | FunctionArgExpr::WildcardWithOptions(_) if !counts => {
                    self.star()
                }
                FunctionArgExpr::QualifiedWildcard(n) => {
                    let parts = Self::parts(n)?;
                    self.star_of(&parts);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The leftmost SELECT of a query body (whose scope the query's ORDER BY sees).
fn leftmost_select(body: &SetExpr) -> Option<&Select> {
    let mut b = body;
    loop {
        match b {
            SetExpr::Select(s) => return Some(s),
            SetExpr::SetOperation { left, .. } => b = left,
            SetExpr::Query(q) => b = &q.body,
            _ => return None,
        }
    }
}

fn flow(r: Result<(), String>) -> ControlFlow<String> {
    match r {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => ControlFlow::Break(e),
    }
}

impl Visitor for Walk<'_> {
    type Break = String;

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<String> {
        let correlated = self.correlated.remove(&(q as *const Query));
        let ctes = q
            .with
            .iter()
            .flat_map(|w| &w.cte_tables)
            .map(|c| c.alias.name.value.to_lowercase())
            .collect();
        self.ctes.push(ctes);
        self.queries.push(correlated);
        // the query's ORDER BY reads its (leftmost) SELECT's relations
        let scope = match leftmost_select(&q.body) {
            Some(s) => self.scope_of(&s.from, correlated),
            None => Scope {
                correlated,
                ..Scope::default()
            },
        };
        self.scopes.push(scope);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<String> {
        self.scopes.pop();
        self.queries.pop();
        self.ctes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, s: &Select) -> ControlFlow<String> {
        let correlated = self.queries.last().copied().unwrap_or(false);
        let mut scope = self.scope_of(&s.from, correlated);
        for lv in &s.lateral_views {
            scope.names.extend(lower(&lv.lateral_col_alias));
            if let Ok(parts) = Self::parts(&lv.lateral_view_name) {
                scope.entries.push(Entry {
                    qualifiers: vec![parts],
                    table: None,
                });
            }
        }
        self.scopes.push(scope);
        for item in &s.projection {
            match item {
                SelectItem::Wildcard(_) => self.star(),
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => match Self::parts(n) {
                    Ok(parts) => self.star_of(&parts),
                    Err(e) => return ControlFlow::Break(e),
                },
                _ => {}
            }
        }
        // USING (c) reads c of both sides, NATURAL every column of both
        for twj in &s.from {
            for j in &twj.joins {
                use sqlparser::ast::{JoinConstraint as C, JoinOperator as O};
                let constraint = match &j.join_operator {
                    O::Join(c)
                    | O::Inner(c)
                    | O::Left(c)
                    | O::LeftOuter(c)
                    | O::Right(c)
                    | O::RightOuter(c)
                    | O::FullOuter(c)
                    | O::CrossJoin(c)
                    | O::Semi(c)
                    | O::LeftSemi(c)
                    | O::RightSemi(c)
                    | O::Anti(c)
                    | O::LeftAnti(c)
                    | O::RightAnti(c)
                    | O::StraightJoin(c) => c,
                    O::AsOf { constraint, .. } => constraint,
                    _ => continue,
                };
                match constraint {
                    C::Using(names) => {
                        for n in names {
                            if let Some(ObjectNamePart::Identifier(c)) = n.0.last() {
                                let c = c.value.to_lowercase();
                                self.unqualified(&c);
                            }
                        }
                    }
                    C::Natural => self.star(),
                    _ => {}
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, _: &Select) -> ControlFlow<String> {
        self.scopes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<String> {
        flow((|| match factor {
            TableFactor::Table { name, args, .. } => {
                if args.is_some() {
                    return self.function(name);
                }
                let parts = Self::parts(name)?;
                if !self.is_cte(&parts) {
                    let t = self.resolve(&parts, name)?;
                    self.relations.insert(t);
                }
                Ok(())
            }
            TableFactor::Function { name, .. } => self.function(name),
            _ => Ok(()),
        })())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<String> {
        flow((|| {
            match e {
                Expr::Subquery(q)
                | Expr::Exists { subquery: q, .. }
                | Expr::InSubquery { subquery: q, .. } => {
                    self.correlated.insert(&**q as *const Query);
                }
                Expr::Identifier(i) => {
                    let c = i.value.to_lowercase();
                    self.unqualified(&c);
                }
                Expr::CompoundIdentifier(parts) => self.qualified(&lower(parts)),
                Expr::QualifiedWildcard(n, _) => {
                    let parts = Self::parts(n)?;
                    self.star_of(&parts);
                }
                Expr::Function(f) => {
                    self.function(&f.name)?;
                    self.function_args(&f.name, &f.args)?;
                }
                Expr::Lambda(l) => {
                    self.locals
                        .extend(l.params.iter().map(|p| p.name.value.to_lowercase()));
                }
                _ => {}
            }
            Ok(())
        })())
    }

    fn post_visit_expr(&mut self, e: &Expr) -> ControlFlow<String> {
        if let Expr::Lambda(l) = e {
            let n = l.params.iter().count();
            self.locals.truncate(self.locals.len().saturating_sub(n));
        }
        ControlFlow::Continue(())
    }
}
