"""Runs one statement: parameters, UC-only statements (emulated), name rewriting, Spark."""
import re
import time

import facts
from server import SqlError, cell, not_found, schema_not_found, spark_error
from sqltext import (Cursor, SqlSyntaxError, Tok, db_name, db_parts, dec, enc, lex, quote, render,
                     sig, spark_table, split_statements, sql_string, parse_multipart)
from ucstore import SecurableMeta, now_ms

EMU = None

SCHEMA_KW = {"SCHEMA", "DATABASE", "NAMESPACE"}
TABLE_KW = {"TABLE", "FROM", "JOIN", "INTO", "UPDATE", "CLONE", "REFERENCES", "DETAIL", "HISTORY",
            "DESCRIBE", "DESC", "VIEW", "OVERWRITE", "OPTIMIZE", "VACUUM", "RESTORE", "TBLPROPERTIES"}
SKIP_BACK = {"IF", "NOT", "EXISTS", "EXTENDED", "FORMATTED", "SHALLOW", "DEEP", "TEMPORARY", "GLOBAL"}
FROM_FUNCS = {"EXTRACT", "TRIM", "SUBSTRING", "SUBSTR", "OVERLAY", "POSITION"}
TABLE_PRIVS = {"SELECT", "MODIFY", "ALL_PRIVILEGES", "APPLY_TAG", "MANAGE", "BROWSE", "REFRESH"}
# UC's privileges on a schema (manage-privileges/privileges: the privilege types by securable)
SCHEMA_PRIVS = {"ALL_PRIVILEGES", "APPLY_TAG", "CREATE_FUNCTION", "CREATE_MATERIALIZED_VIEW", "CREATE_MODEL",
                "CREATE_TABLE", "CREATE_VOLUME", "EXECUTE", "EXTERNAL_USE_SCHEMA", "MANAGE", "MODIFY",
                "READ_VOLUME", "REFRESH", "SELECT", "USE_SCHEMA", "WRITE_VOLUME"}
# the securable kinds GRANT / REVOKE / SHOW GRANTS take after ON
OBJECT_KINDS = ("TABLE", "VIEW", "SCHEMA", "DATABASE", "CATALOG", "FUNCTION", "VOLUME")
INFO_VIEWS = None
NOT_NAMES = {"DETAIL", "HISTORY", "TABLE", "EXTENDED", "FORMATTED", "SCHEMA", "DATABASE", "NAMESPACE", "FUNCTION",
             "QUERY", "CATALOG", "IF", "SELECT", "VALUES", "WITH", "LATERAL", "TO", "AS", "COLUMN", "COLUMNS",
             "VIEW", "TABLES", "SHALLOW", "DEEP", "IDENTIFIER", "OR", "REPLACE", "NOT", "EXISTS", "TEMPORARY"}


def perr(msg):
    return SqlError("PARSE_SYNTAX_ERROR", "Syntax error: %s." % msg, "42601")


# =============================================================================== params
def substitute_params(toks, params):
    by = {}
    for p in params or []:
        if "name" not in p:
            raise SqlError("UNBOUND_SQL_PARAMETER", "parameters need a name (only named markers are supported)", "42P02")
        by[p["name"]] = p
    out = []
    for t in toks:
        if t.kind != "param":
            out.append(t)
            continue
        p = by.get(t.value)
        if p is None:
            raise SqlError("UNBOUND_SQL_PARAMETER", "Found the unbound parameter: %s." % t.value, "42P02")
        typ = (p.get("type") or "STRING").upper()
        v = p.get("value")
        if v is None:
            lit = "CAST(NULL AS %s)" % typ
        elif typ == "STRING":
            lit = sql_string(str(v))
        else:
            lit = "CAST(%s AS %s)" % (sql_string(str(v)), typ)
        out.extend(lex(lit) if typ != "STRING" else [Tok("str", lit, str(v))])
    return out


# =============================================================================== context
class Ctx:
    def __init__(self, emu, st, toks):
        self.emu, self.st, self.toks = emu, st, toks
        req = st.req
        self.cat = (req.get("catalog") or emu.cfg.default_catalog).lower()
        self.sch = (req.get("schema") or "default").lower()
        self.who = st.who
        self.sess = None

    # -------------------------------------------------------------- helpers
    def session(self):
        if self.sess is None:
            sp = self.emu.spark
            self.sess = sp.session.newSession()
            db = db_name(self.cat, self.sch)
            if sp.db_exists(db):
                self.sess.catalog.setCurrentDatabase(db)
            self.sess.sparkContext.setJobGroup(self.st.id, "statement " + self.st.id, True)
            self.st.spark_started = True
        return self.sess

    def catalogs(self):
        return set(self.emu.store.catalogs)

    def resolve(self, parts):
        parts = [p.lower() for p in parts]
        if len(parts) == 3:
            return tuple(parts)
        if len(parts) == 2:
            return (self.cat, parts[0], parts[1])
        if len(parts) == 1:
            return (self.cat, self.sch, parts[0])
        raise SqlError("REQUIRES_SINGLE_PART_NAMESPACE", "%s is not a valid table name." % ".".join(quote(p) for p in parts), "42K05")

    def resolve_schema(self, parts):
        parts = [p.lower() for p in parts]
        if len(parts) == 2:
            return tuple(parts)
        if len(parts) == 1:
            return (self.cat, parts[0])
        raise perr("invalid schema name")

    def table_exists(self, c, s, t):
        return c in self.emu.store.catalogs and self.emu.spark.table_exists(db_name(c, s), enc(t))

    def need_table(self, parts):
        c, s, t = self.resolve(parts)
        if not self.table_exists(c, s, t):
            raise not_found((c, s, t))
        return c, s, t

    def schema_fields(self, c, s, t):
        return self.session().table(spark_table(c, s, t)).schema.fields

    def column(self, c, s, t, name):
        for f in self.schema_fields(c, s, t):
            if f.name.lower() == name.lower():
                return f
        raise SqlError("UNRESOLVED_COLUMN.WITHOUT_SUGGESTION",
                       "A column, variable, or function parameter with name %s cannot be resolved." % quote(name), "42703")

    def meta(self, c, s, t):
        return self.emu.store.table("%s.%s.%s" % (c, s, t), owner_if_new=self.emu.cfg.user)

    def spark(self, text, raw=False):
        df = self.session().sql(text)
        fields = df.schema.fields
        rows = df.collect()
        if raw:
            return [(f.name, f.dataType) for f in fields], [list(r) for r in rows]
        is_ts = [f.dataType.typeName() == "timestamp" for f in fields]
        out = [[cell(v, is_ts[i]) for i, v in enumerate(r)] for r in rows]
        return [(f.name, f.dataType) for f in fields], out

    # -------------------------------------------------------------- dispatch
    def run(self):
        self.pending_kind = None
        self.pipeline_relations()
        r = self.dispatch()
        if self.pending_kind is not None:
            (c, s, t), kind = self.pending_kind
            store = self.emu.store
            with store.lock:
                store.table("%s.%s.%s" % (c, s, t), owner_if_new=self.who).kind = kind
        return r

    def dispatch(self):
        c = Cursor(self.toks)
        for fn in (self.uc_objects, self.uc_alter_table, self.uc_alter_securable, self.uc_grant, self.uc_show_grants,
                   self.uc_set_tag_on, self.uc_catalog_stmts, self.uc_undrop, self.uc_drop_table,
                   self.uc_describe_json, self.uc_comment_on_column, self.uc_show_schemas, self.uc_show_policies):
            c.i = 0
            r = fn(c)
            if r is not None:
                return r
        return self.passthrough()

    def uc_objects(self, c):
        import objects
        return objects.dispatch(self, c)

    # -------------------------------------------------------------- pass-through to Spark
    def passthrough(self):
        s = sig(self.toks)
        words = [t.up for t in s[:6]]
        head = " ".join(w or "" for w in words)
        kind, target = self.classify(s)
        existed = None
        if target is not None and kind in ("create_table", "drop_schema", "create_schema"):
            if kind == "create_table":
                existed = self.table_exists(*target) if target[0] in self.emu.store.catalogs else False
        managed = None
        view_text = None
        if kind == "create_view" and target is not None:
            import objects
            key, _replace = target
            existed = objects.is_view(self, key)
            view_text = objects.view_query_text(self.toks)
        if kind == "alter_view_as" and target is not None:
            import objects
            view_text = objects.view_query_text(self.toks)
        if kind == "drop_schema" and target is not None:
            import objects
            objects.drop_schema_objects(*target, cascade=any(t.up == "CASCADE" for t in s))
        if kind == "create_schema" and target is not None:
            existed = self.emu.spark.db_exists(db_name(*target))
            managed = self.take_managed_location()
        text, infoviews = self.rewrite()
        if infoviews:
            import infoschema
            sess = self.session()
            for cat, view, tmp in infoviews:
                infoschema.register(self.emu, self, sess, cat, view, tmp)
        if kind == "drop_schema" and target:
            self.purge_trash(*target)
        show_tables = head.startswith("SHOW TABLES") or head.startswith("SHOW VIEWS")
        cols, rows = self.spark(text, raw=show_tables)
        if kind == "create_view":
            import objects
            objects.view_created(self, target[0], existed, target[1], view_text)
        if kind == "alter_view_as":
            # ALTER VIEW v AS query: a new definition, grants and tags kept (sql-ref-syntax-ddl-alter-view)
            m = self.meta(*target)
            with self.emu.store.lock:
                m.view_definition = view_text
                m.touch(self.who)
        self.post(kind, target, existed)
        if managed is not None and not existed:
            with self.emu.store.lock:
                self.emu.store.schemas["%s.%s" % target].managed_location = managed
        if show_tables:
            cols = [("database" if n == "namespace" else n, dt) for n, dt in cols]
            keep = []
            for r in rows:
                if r[1] is not None and r[1].startswith("__"):
                    continue
                p = db_parts(r[0]) if r[0] else None
                if p:
                    r[0] = p[1]
                r[1] = dec(r[1]) if r[1] else r[1]
                r[2] = cell(r[2])
                keep.append(r)
            rows = keep
        return cols, rows

    def take_managed_location(self):
        """EMULATED: Unity Catalog's CREATE SCHEMA ... MANAGED LOCATION '<url>' (Spark has only
        LOCATION, a path it would create). The clause is taken out of the statement before Spark
        sees it and the URL kept as the schema's storage root, as SchemaInfo.storage_root reports
        it; the check that the URL lies in an external location the caller may use is not
        emulated."""
        toks = self.toks
        idx = [i for i, t in enumerate(toks) if t.kind not in ("ws", "comment")]
        for n in range(len(idx) - 2):
            a, b, c = (toks[idx[n]], toks[idx[n + 1]], toks[idx[n + 2]])
            if a.up == "MANAGED" and b.up == "LOCATION" and c.kind == "str":
                for i in idx[n:n + 3]:
                    toks[i] = type(a)("ws", " ")
                return c.value
        return None

    def classify(self, s):
        """(kind, target) for the statements whose success changes UC metadata."""
        c = Cursor(self.toks)
        try:
            if c.kw("CREATE", "OR", "REPLACE", "VIEW") or c.kw("CREATE", "VIEW"):
                replace = c.t[1].up == "OR"
                c.kw("IF", "NOT", "EXISTS")
                return "create_view", (self.resolve(c.name()), replace)
            c.i = 0
            if c.kw("CREATE", "OR", "REPLACE", "TABLE") or c.kw("REPLACE", "TABLE") or c.kw("CREATE", "TABLE"):
                c.kw("IF", "NOT", "EXISTS")
                return "create_table", self.resolve(c.name())
            c.i = 0
            if c.kw("ALTER", "VIEW"):
                tgt = self.resolve(c.name())
                if c.at_kw("AS"):
                    return "alter_view_as", tgt
                return None, None
            c.i = 0
            if c.kw("ALTER", "TABLE"):
                tgt = self.resolve(c.name())
                if c.kw("RENAME", "TO"):
                    return ("rename_table", (tgt, self.resolve(c.name())))
                if c.kw("RENAME", "COLUMN"):
                    old = c.name()
                    c.expect_kw("TO")
                    return ("rename_column", (tgt, ".".join(old), c.ident()))
                if c.kw("DROP", "COLUMN") or c.kw("DROP", "COLUMNS"):
                    c.kw("IF", "EXISTS")
                    names = []
                    paren = c.op("(")
                    names.append(".".join(c.name()))
                    while c.op(","):
                        names.append(".".join(c.name()))
                    return ("drop_columns", (tgt, names))
                return ("alter_table", tgt)
            c.i = 0
            if c.kw("CREATE", "SCHEMA") or c.kw("CREATE", "DATABASE"):
                c.kw("IF", "NOT", "EXISTS")
                return "create_schema", self.resolve_schema(c.name())
            c.i = 0
            if c.kw("DROP", "SCHEMA") or c.kw("DROP", "DATABASE"):
                c.kw("IF", "EXISTS")
                return "drop_schema", self.resolve_schema(c.name())
        except SqlSyntaxError:
            pass
        return None, None

    def post(self, kind, target, existed):
        store = self.emu.store
        if kind == "create_table":
            full = "%s.%s.%s" % target
            with store.lock:
                m = store.tables.get(full)
                if not existed or m is None:
                    from ucstore import TableMeta
                    store.tables[full] = TableMeta(self.who)
                else:
                    # CREATE OR REPLACE keeps the table id, owner, grants, table tags and the tags
                    # of same-name columns; PK/FK must be re-added (see README).
                    m.pk, m.fks = None, []
                    names = {f.name.lower() for f in self.schema_fields(*target)}
                    m.column_tags = {k: v for k, v in m.column_tags.items() if k.lower() in names}
                    m.masks = {k: v for k, v in m.masks.items() if k.lower() in names}
                    m.touch(self.who)
        elif kind == "rename_table":
            old, new = target
            store.rename_table("%s.%s.%s" % old, "%s.%s.%s" % new)
        elif kind == "rename_column":
            tgt, old, new = target
            store.rename_column("%s.%s.%s" % tgt, old, new)
        elif kind == "drop_columns":
            tgt, names = target
            for n in names:
                store.drop_column("%s.%s.%s" % tgt, n)
        elif kind == "create_schema":
            with store.lock:
                store.schemas.setdefault("%s.%s" % target, SecurableMeta(self.who))
        elif kind == "drop_schema":
            import objects
            objects.forget_schema_objects(*target)
            pre = "%s.%s." % target
            with store.lock:
                store.schemas.pop("%s.%s" % target, None)
                for k in [k for k in store.tables if k.startswith(pre)]:
                    store.tables.pop(k)
                store.dropped = [d for d in store.dropped if not d["full_name"].startswith(pre)]
        elif kind == "alter_table":
            m = store.tables.get("%s.%s.%s" % target)
            if m:
                m.touch(self.who)

    def purge_trash(self, cat, sch):
        db = db_name(cat, sch)
        if not self.emu.spark.db_exists(db):
            return
        from server import seq
        for ti in seq(self.emu.spark.jcatalog().listTables(db)):
            if ti.table().startswith("__dropped_"):
                self.session().sql("DROP TABLE IF EXISTS %s.%s" % (quote(db), quote(ti.table()))).collect()

    # -------------------------------------------------------------- name rewriting
    def rewrite(self):
        """UC names -> Spark names in table and schema positions. Returns (sql, infoviews)."""
        toks = self.toks
        cats = self.catalogs()
        out, infoviews = [], []
        first = [t.up for t in sig(toks)[:2]]
        stmt = first[0] if first else None
        show_cols = first == ["SHOW", "COLUMNS"]
        parens = []          # for each open '(': is it a FROM-taking function (EXTRACT ...)?
        sigs = []            # significant tokens emitted so far (original)
        i, n = 0, len(toks)
        while i < n:
            t = toks[i]
            if t.kind == "op" and t.text == "(":
                prev = sigs[-1] if sigs else None
                parens.append(bool(prev is not None and prev.up in FROM_FUNCS))
            elif t.kind == "op" and t.text == ")" and parens:
                parens.pop()
            if t.kind not in ("ident", "qident") or (sigs and sigs[-1].kind == "op" and sigs[-1].text == "."):
                out.append(t.text)
                if t.kind not in ("ws", "comment"):
                    sigs.append(t)
                i += 1
                continue
            # a name group: IDENTIFIER('...') or a.b.c
            j, parts, is_identifier_clause = i, [], False
            if t.up == "IDENTIFIER":
                k = i + 1
                while k < n and toks[k].kind == "ws":
                    k += 1
                if k < n and toks[k].text == "(":
                    k2 = k + 1
                    while k2 < n and toks[k2].kind == "ws":
                        k2 += 1
                    if k2 < n and toks[k2].kind == "str":
                        k3 = k2 + 1
                        while k3 < n and toks[k3].kind == "ws":
                            k3 += 1
                        if k3 < n and toks[k3].text == ")":
                            parts = parse_multipart(toks[k2].value)
                            j = k3 + 1
                            is_identifier_clause = True
            if not is_identifier_clause:
                parts = [t.value]
                j = i + 1
                while j + 1 < n and toks[j].kind == "op" and toks[j].text == "." and toks[j + 1].kind in ("ident", "qident"):
                    parts.append(toks[j + 1].value)
                    j += 2
            # what precedes the group
            k = len(sigs) - 1
            while k >= 0 and sigs[k].up in SKIP_BACK:
                k -= 1
            prevkw = sigs[k].up if k >= 0 else None
            prev2 = sigs[k - 1].up if k >= 1 else None
            nxt = toks[j] if j < n else None
            in_from_func = bool(parens and parens[-1])
            lparts = [p.lower() for p in parts]
            repl = None
            # information_schema
            if len(parts) >= 2 and lparts[-2] == "information_schema" and len(parts) in (2, 3):
                cat = lparts[0] if len(parts) == 3 else self.cat
                view = lparts[-1]
                tmp = "__uc_info_%s_%s" % (enc(cat), enc(view))
                infoviews.append((cat, view, tmp))
                repl = quote(tmp)
            elif len(parts) >= 3 and lparts[0] in cats and not (prevkw in SCHEMA_KW):
                repl = spark_table(lparts[0], lparts[1], lparts[2]) + "".join("." + quote(p) for p in parts[3:])
            elif len(parts) >= 3 and prevkw in TABLE_KW and not in_from_func and lparts[0] not in cats and \
                    not (nxt is not None and nxt.text == "(" and prevkw in ("FROM", "JOIN")):
                if stmt == "CREATE" or stmt == "REPLACE":
                    raise SqlError("NO_SUCH_CATALOG_EXCEPTION", "Catalog '%s' was not found." % parts[0], "42704")
                raise not_found(lparts[:3])
            elif (prevkw in SCHEMA_KW or (stmt == "SHOW" and not show_cols and prevkw in ("IN", "FROM"))) and \
                    not (len(parts) == 1 and t.kind == "ident" and t.up in ("IF", "NOT", "EXISTS")):
                if len(parts) == 2:
                    repl = quote(db_name(lparts[0], lparts[1]))
                elif len(parts) == 1:
                    repl = quote(db_name(self.cat, lparts[0]))
            elif len(parts) == 1 and t.kind == "ident" and t.up in NOT_NAMES:
                pass
            elif len(parts) <= 2 and not in_from_func and (
                    (prevkw in TABLE_KW and not (prevkw in ("FROM", "JOIN") and nxt is not None and nxt.text == "("))
                    or (prevkw == "TO" and prev2 == "RENAME")
                    or (prevkw == "USING" and stmt == "MERGE")
                    or (prevkw == "LIKE" and stmt == "CREATE")
                    or (show_cols and prevkw in ("IN", "FROM"))) and \
                    not (prevkw == "VIEW" and prev2 == "LATERAL"):
                c, s, tb = self.resolve(parts)
                repl = spark_table(c, s, tb)
            if repl is not None and stmt in ("SELECT", "WITH") and prevkw in ("FROM", "JOIN") and \
                    len(parts) <= 3 and not (nxt is not None and nxt.text == "(") and not repl.startswith("`__uc_info"):
                # EMULATED: a read of a table with column masks / a row filter applies them
                import objects
                key = tuple(lparts) if len(parts) == 3 else self.resolve(parts)
                sub = None if objects.qualified_read(toks, j) else objects.masked_relation(self, key, repl)
                if sub is not None:
                    repl = sub if objects.alias_follows(toks, j) else sub + " AS " + quote(enc(key[2]))
            if repl is None:
                out.append(render(toks[i:j]))
            else:
                out.append(repl)
            for tt in toks[i:j]:
                if tt.kind not in ("ws", "comment"):
                    sigs.append(tt)
            i = j
        return "".join(out), infoviews

    # =========================================================== pipeline relations
    # Streaming tables and materialized views are made by pipelines on Databricks; here
    # `CREATE STREAMING TABLE t (cols)` / `CREATE MATERIALIZED VIEW t AS query` make a Delta
    # table in Spark and record its type (TableInfo.table_type), so the operator reads them as
    # what they are. Their ALTER takes only what the SQL reference lists
    # (sql-ref-syntax-ddl-alter-streaming-table, ...-alter-materialized-view): tags, owner, row
    # filter and ALTER COLUMN {COMMENT | SET/DROP MASK | SET/UNSET TAGS}; anything else
    # (SET TBLPROPERTIES, ADD COLUMN, ...) is a syntax error. ALTER TABLE on one is refused
    # (the emulator's words): the operator must name what it alters.
    PIPELINE_KINDS = {"STREAMING": ("TABLE", "STREAMING_TABLE"), "MATERIALIZED": ("VIEW", "MATERIALIZED_VIEW")}
    ALTER_ALLOWED = (("SET", "TAGS"), ("UNSET", "TAGS"), ("SET", "OWNER"), ("OWNER", "TO"),
                     ("SET", "ROW"), ("DROP", "ROW"), ("ALTER", "COLUMN"))
    COLUMN_ALLOWED = (("COMMENT",), ("SET", "MASK"), ("DROP", "MASK"), ("SET", "TAGS"), ("UNSET", "TAGS"))

    def _drop_word(self, idx):
        """The statement without the significant token at toks[idx] and the space after it."""
        t = self.toks
        j = idx + 1
        while j < len(t) and t[j].kind == "ws":
            j += 1
        self.toks = t[:idx] + t[j:]

    def pipeline_relations(self):
        s = [(i, t) for i, t in enumerate(self.toks) if t.kind not in ("ws", "comment")]
        up = [t.up for _, t in s[:4]]
        if len(up) < 3 or up[0] not in ("CREATE", "ALTER") or up[1] not in self.PIPELINE_KINDS:
            if len(up) >= 3 and up[0] == "ALTER" and up[1] == "TABLE":
                self._refuse_alter_table_on_pipeline_relation()
            return
        second, kind = self.PIPELINE_KINDS[up[1]]
        if up[2] != second:
            return
        c = Cursor(self.toks)
        c.i = 0
        c.kw(up[0], up[1], second)
        c.kw("IF", "NOT", "EXISTS")
        parts = c.name()
        if up[0] == "CREATE":
            self._drop_word(s[1][0])                      # CREATE TABLE ...
            if up[1] == "MATERIALIZED":                   # ... VIEW -> TABLE ... USING delta AS
                s2 = [(i, t) for i, t in enumerate(self.toks) if t.kind not in ("ws", "comment")]
                i_view = s2[1][0]
                self.toks[i_view] = Tok("ident", "TABLE", "TABLE")
            self._using_delta()
            self.pending_kind = (self.resolve(parts), kind)
            return
        full = self.resolve(parts)
        m = self.emu.store.tables.get("%s.%s.%s" % full)
        if m is None or m.kind != kind:
            raise SqlError("EXPECT_%s" % kind, "%s is not a %s." % (".".join(quote(p) for p in full),
                           kind.lower().replace("_", " ")), "42809")
        words = [t.up for t in sig(self.toks)]
        # the clause after ALTER <KIND> <name>
        k = 3 + (len(parts) * 2 - 1)
        clause = tuple(words[k:k + 2])
        if not any(clause[:len(a)] == a for a in self.ALTER_ALLOWED):
            raise perr("%s is not a clause ALTER %s accepts" % (" ".join(words[k:k + 2]), " ".join(up[1:3])))
        if clause == ("ALTER", "COLUMN"):
            after = tuple(words[k + 3:k + 5])
            if not any(after[:len(a)] == a for a in self.COLUMN_ALLOWED):
                raise perr("%s is not a column clause ALTER %s accepts" % (" ".join(after), " ".join(up[1:3])))
        self._drop_word(s[1][0])                          # ALTER TABLE <name> <clause>
        if up[1] == "MATERIALIZED":
            s2 = [(i, t) for i, t in enumerate(self.toks) if t.kind not in ("ws", "comment")]
            self.toks[s2[1][0]] = Tok("ident", "TABLE", "TABLE")

    def _using_delta(self):
        """A pipeline's relation is a Delta table: `USING delta` unless the statement names a
        format, before a top-level AS (CTAS) or at the end."""
        depth, at = 0, None
        for i, t in enumerate(self.toks):
            if t.kind == "op" and t.text == "(":
                depth += 1
            elif t.kind == "op" and t.text == ")":
                depth -= 1
            elif depth == 0 and t.up == "USING":
                return
            elif depth == 0 and t.up == "AS" and at is None:
                at = i
        extra = [Tok("ws", " "), Tok("ident", "USING"), Tok("ws", " "), Tok("ident", "delta"), Tok("ws", " ")]
        if at is None:
            self.toks = self.toks + extra[:-1]
        else:
            self.toks = self.toks[:at] + extra[1:] + [Tok("ws", " ")] + self.toks[at:]

    def _refuse_alter_table_on_pipeline_relation(self):
        c = Cursor(self.toks)
        c.kw("ALTER", "TABLE")
        try:
            full = self.resolve(c.name())
        except SqlSyntaxError:
            return
        m = self.emu.store.tables.get("%s.%s.%s" % full)
        if m is not None and m.kind is not None:
            raise SqlError("EXPECT_TABLE_NOT_%s" % m.kind, "%s is a %s: use ALTER %s." % (
                ".".join(quote(p) for p in full), m.kind.lower().replace("_", " "),
                m.kind.replace("_", " ")), "42809")

    # =========================================================== UC-only statements
    def uc_alter_table(self, c):
        if not (c.kw("ALTER", "TABLE") or c.kw("ALTER", "VIEW")):
            return None
        try:
            parts = c.name()
        except SqlSyntaxError:
            return None
        if c.t[1].up == "VIEW" and (c.at_kw("SET", "TAGS") or c.at_kw("UNSET", "TAGS") or c.at_kw("OWNER", "TO")
                                    or c.at_kw("SET", "OWNER")):
            import objects
            key = self.resolve(parts)
            if self.table_exists(*key) and not objects.is_view(self, key):
                # as Spark words it for ALTER VIEW ... SET TBLPROPERTIES on a table
                raise SqlError("EXPECT_VIEW_NOT_TABLE.USE_ALTER_TABLE", "The table %s does not support ALTER VIEW. "
                               "Please use ALTER TABLE instead." % _q3(key), "42809")
        store = self.emu.store
        if c.kw("SET", "TAGS") or c.kw("UNSET", "TAGS"):
            unset = c.t[c.i - 2].up == "UNSET"
            ct, cs, tt = self.need_table(parts)
            m = self.meta(ct, cs, tt)
            with store.lock:
                self.apply_tags(c, m.tags, unset)
                m.touch(self.who)
            return [], []
        if c.at_kw("ALTER", "COLUMN") or c.at_kw("CHANGE", "COLUMN"):
            save = c.i
            c.i += 2
            col = ".".join(c.name())
            if c.kw("SET", "TAGS") or c.kw("UNSET", "TAGS"):
                unset = c.t[c.i - 2].up == "UNSET"
                ct, cs, tt = self.need_table(parts)
                f = self.column(ct, cs, tt, col)
                m = self.meta(ct, cs, tt)
                with store.lock:
                    tags = m.column_tags.setdefault(f.name, {})
                    self.apply_tags(c, tags, unset)
                    if not tags:
                        m.column_tags.pop(f.name, None)
                    m.touch(self.who)
                return [], []
            if c.kw("SET", "MASK"):
                ct, cs, tt = self.need_table(parts)
                f = self.column(ct, cs, tt, col)
                fn = self.qualify_fn(c.name())
                using = []
                if c.kw("USING", "COLUMNS"):
                    using = [self.column(ct, cs, tt, x).name for x in c.ident_list()]
                c.expect_end()
                import objects
                objects.check_mask_function(self, fn, 1 + len(using))
                m = self.meta(ct, cs, tt)
                with store.lock:
                    m.masks[f.name] = {"function_name": fn, "using_column_names": using}
                    m.touch(self.who)
                return [], []
            if c.kw("DROP", "MASK"):
                c.expect_end()
                ct, cs, tt = self.need_table(parts)
                f = self.column(ct, cs, tt, col)
                m = self.meta(ct, cs, tt)
                with store.lock:
                    m.masks.pop(f.name, None)
                    m.touch(self.who)
                return [], []
            c.i = save
            return None
        if c.kw("SET", "ROW", "FILTER"):
            ct, cs, tt = self.need_table(parts)
            fn = self.qualify_fn(c.name())
            c.expect_kw("ON")
            cols = [self.column(ct, cs, tt, x).name for x in c.ident_list()] if not (c.peek(1) and c.peek(1).text == ")") else (c.expect_op("("), c.expect_op(")"), [])[2]
            c.expect_end()
            import objects
            objects.check_mask_function(self, fn, len(cols))
            m = self.meta(ct, cs, tt)
            with store.lock:
                m.row_filter = {"function_name": fn, "input_column_names": cols}
                m.touch(self.who)
            return [], []
        if c.kw("DROP", "ROW", "FILTER"):
            c.expect_end()
            ct, cs, tt = self.need_table(parts)
            m = self.meta(ct, cs, tt)
            with store.lock:
                m.row_filter = None
                m.touch(self.who)
            return [], []
        for flag in ("ENABLE", "DISABLE", "INHERIT"):
            if c.kw(flag, "PREDICTIVE", "OPTIMIZATION"):
                c.expect_end()
                ct, cs, tt = self.need_table(parts)
                m = self.meta(ct, cs, tt)
                with store.lock:
                    m.predictive_optimization = None if flag == "INHERIT" else flag
                    m.touch(self.who)
                return [], []
        if c.kw("SET", "OWNER", "TO") or c.kw("OWNER", "TO"):
            principal = self.principal(c)
            c.expect_end()
            ct, cs, tt = self.need_table(parts)
            m = self.meta(ct, cs, tt)
            with store.lock:
                m.owner = principal
                m.touch(self.who)
            return [], []
        if c.kw("ADD"):
            return self.add_key_constraint(c, parts)
        if c.kw("DROP", "PRIMARY", "KEY"):
            if_exists = c.kw("IF", "EXISTS")
            cascade = c.kw("CASCADE")
            c.kw("RESTRICT")
            c.expect_end()
            ct, cs, tt = self.need_table(parts)
            full = "%s.%s.%s" % (ct, cs, tt)
            with store.lock:
                m = self.meta(ct, cs, tt)
                if not m.pk:
                    if if_exists:
                        return [], []
                    raise SqlError("DELTA_CONSTRAINT_DOES_NOT_EXIST", "Cannot drop nonexistent primary key from table %s." % _q3((ct, cs, tt)), "42704")
                self.drop_pk(full, m, cascade)
            return [], []
        if c.kw("DROP", "FOREIGN", "KEY"):
            if_exists = c.kw("IF", "EXISTS")
            cols = [x.lower() for x in c.ident_list()]
            ct, cs, tt = self.need_table(parts)
            with store.lock:
                m = self.meta(ct, cs, tt)
                keep = [fk for fk in m.fks if [x.lower() for x in fk["columns"]] != cols]
                if len(keep) == len(m.fks) and not if_exists:
                    raise SqlError("DELTA_CONSTRAINT_DOES_NOT_EXIST", "Cannot drop nonexistent foreign key (%s) from table %s." % (", ".join(cols), _q3((ct, cs, tt))), "42704")
                m.fks = keep
            return [], []
        if c.kw("DROP", "CONSTRAINT"):
            if_exists = c.kw("IF", "EXISTS")
            name = c.ident()
            cascade = c.kw("CASCADE")
            ct, cs, tt = self.resolve(parts)
            full = "%s.%s.%s" % (ct, cs, tt)
            with store.lock:
                m = store.tables.get(full)
                if m and m.pk and m.pk["name"] == name:
                    self.drop_pk(full, m, cascade)
                    return [], []
                if m and any(fk["name"] == name for fk in m.fks):
                    m.fks = [fk for fk in m.fks if fk["name"] != name]
                    return [], []
            return None   # a CHECK constraint: Delta handles it
        return None

    def drop_pk(self, full, m, cascade):
        refs = [(k, fk) for k, o in self.emu.store.tables.items() for fk in o.fks if ".".join(fk["parent"]) == full]
        if refs and not cascade:
            raise SqlError("DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE" if False else "CONSTRAINT_DEPENDENCY",
                           "Cannot drop the primary key %s because foreign key %s references it. Use CASCADE." %
                           (quote(m.pk["name"]), quote(refs[0][1]["name"])), "2BP01")
        for k, fk in refs:
            o = self.emu.store.tables[k]
            o.fks = [x for x in o.fks if x is not fk]
        m.pk = None

    def add_key_constraint(self, c, parts):
        start = c.i
        name = None
        if c.kw("CONSTRAINT"):
            name = c.ident().lower()    # UC lower-cases constraint names
        if c.kw("PRIMARY", "KEY"):
            ct, cs, tt = self.need_table(parts)
            c.expect_op("(")
            cols, ts = [], []
            while True:
                f = self.column(ct, cs, tt, c.ident())
                cols.append(f.name)
                if c.kw("TIMESERIES"):
                    ts.append(f.name)
                if not c.op(","):
                    break
            c.expect_op(")")
            rely = self.key_options(c)
            for col in cols:
                if self.column(ct, cs, tt, col).nullable:
                    raise SqlError("DELTA_NONNULLABLE_COLUMN_REQUIRED" if False else "UC_PRIMARY_KEY_NULLABLE_COLUMN",
                                   "Cannot create the primary key %s because its child column(s) %s is nullable. Please change the column nullability and retry."
                                   % (quote(name or (tt + "_pk")), quote(col)), "42831")
            with self.emu.store.lock:
                m = self.meta(ct, cs, tt)
                if m.pk:
                    raise SqlError("MULTIPLE_PRIMARY_KEYS" if False else "UC_PRIMARY_KEY_ALREADY_EXISTS",
                                   "Table %s already has a primary key %s." % (_q3((ct, cs, tt)), quote(m.pk["name"])), "42710")
                m.pk = {"name": name or (tt + "_pk"), "columns": cols, "rely": rely, "timeseries": ts}
                m.touch(self.who)
            return [], []
        if c.kw("FOREIGN", "KEY"):
            ct, cs, tt = self.need_table(parts)
            cols = [self.column(ct, cs, tt, x).name for x in c.ident_list()]
            c.expect_kw("REFERENCES")
            pc, ps, pt = self.need_table(c.name())
            pcols = None
            if c.peek() is not None and c.peek().text == "(":
                pcols = [self.column(pc, ps, pt, x).name for x in c.ident_list()]
            rely = self.key_options(c)
            with self.emu.store.lock:
                pm = self.meta(pc, ps, pt)
                if not pm.pk:
                    raise SqlError("UC_FOREIGN_KEY_PARENT_WITHOUT_PRIMARY_KEY",
                                   "Cannot create the foreign key %s: the parent table %s has no primary key." %
                                   (quote(name or ""), _q3((pc, ps, pt))), "42830")
                if pcols is None:
                    pcols = list(pm.pk["columns"])
                if [x.lower() for x in pcols] != [x.lower() for x in pm.pk["columns"]]:
                    raise SqlError("UC_FOREIGN_KEY_PARENT_COLUMNS_MISMATCH",
                                   "Foreign key parent columns %s do not match the primary key of %s." %
                                   ("(" + ", ".join(quote(x) for x in pcols) + ")", _q3((pc, ps, pt))), "42830")
                if len(pcols) != len(cols):
                    raise SqlError("UC_FOREIGN_KEY_COLUMN_COUNT_MISMATCH", "Foreign key column count differs from the parent key.", "42830")
                m = self.meta(ct, cs, tt)
                fkname = name or ("%s_%s_fk" % (tt, pt))
                if any(fk["name"] == fkname for fk in m.fks) or (m.pk and m.pk["name"] == fkname):
                    raise SqlError("CONSTRAINT_ALREADY_EXISTS", "Constraint %s already exists." % quote(fkname), "42710")
                m.fks.append({"name": fkname, "columns": cols, "parent": (pc, ps, pt), "parent_columns": pcols, "rely": rely})
                m.touch(self.who)
            return [], []
        c.i = start - 1
        return None   # ADD COLUMN(S) / ADD CONSTRAINT ... CHECK: Delta handles it

    def key_options(self, c):
        rely = False
        while not c.done():
            if c.kw("NOT", "ENFORCED") or c.kw("DEFERRABLE") or c.kw("INITIALLY", "DEFERRED") or \
                    c.kw("NORELY") or c.kw("MATCH", "FULL") or c.kw("ON", "UPDATE", "NO", "ACTION") or \
                    c.kw("ON", "DELETE", "NO", "ACTION"):
                continue
            if c.kw("RELY"):
                rely = True
                continue
            if c.kw("ENFORCED"):
                raise SqlError("UNSUPPORTED_CONSTRAINT_CHARACTERISTIC", "Constraint characteristic 'ENFORCED' is not supported.", "0A000")
            raise perr("unexpected %r" % c.rest_text()[:30])
        return rely

    def qualify_fn(self, parts):
        parts = [p.lower() for p in parts]
        if len(parts) == 1:
            parts = [self.cat, self.sch] + parts
        elif len(parts) == 2:
            parts = [self.cat] + parts
        return ".".join(parts)

    def principal(self, c):
        t = c.peek()
        if t is None:
            raise perr("expected a principal")
        c.i += 1
        if t.kind in ("ident", "qident", "str"):
            return t.value
        raise perr("expected a principal")

    def apply_tags(self, c, tags, unset):
        c.expect_op("(")
        items = []
        while True:
            k = c.string() if c.peek() is not None and c.peek().kind == "str" else c.ident()
            v = None
            if not unset and c.op("="):
                v = c.string() if c.peek() is not None and c.peek().kind == "str" else c.ident()
            items.append((k, v))
            if not c.op(","):
                break
        c.expect_op(")")
        c.expect_end()
        for k, v in items:
            if unset:
                tags.pop(k, None)
                continue
            if len(k) > 255 or len(v or "") > 1000 or k != k.strip():
                raise SqlError("INVALID_PARAMETER_VALUE", "Invalid tag key or value %r (keys: up to 255 characters, no leading/trailing spaces; values: up to 1000)." % k, "22023")
            tags[k] = v if v is not None else ""
        if len(tags) > 50:
            raise SqlError("INVALID_PARAMETER_VALUE", "A securable can have at most 50 tags.", "22023")

    def uc_alter_securable(self, c):
        if not (c.kw("ALTER", "SCHEMA") or c.kw("ALTER", "DATABASE") or c.kw("ALTER", "CATALOG")):
            return None
        kind = c.t[1].up
        parts = c.name()
        if not (c.at_kw("SET", "TAGS") or c.at_kw("UNSET", "TAGS") or c.at_kw("SET", "OWNER") or c.at_kw("OWNER", "TO")):
            return None
        sec = self.securable(kind, parts)
        store = self.emu.store
        if c.kw("SET", "TAGS") or c.kw("UNSET", "TAGS"):
            with store.lock:
                self.apply_tags(c, sec.tags, c.t[c.i - 2].up == "UNSET")
        else:
            c.kw("SET")
            c.expect_kw("OWNER", "TO")
            p = self.principal(c)
            c.expect_end()
            with store.lock:
                sec.owner = p
        return [], []

    def securable(self, kind, parts):
        store = self.emu.store
        if kind in ("FUNCTION", "VOLUME"):
            import objects
            return (objects.need_function if kind == "FUNCTION" else objects.need_volume)(self, parts)[1]
        if kind == "CATALOG":
            cat = parts[0].lower()
            if cat not in store.catalogs:
                raise SqlError("NO_SUCH_CATALOG_EXCEPTION", "Catalog '%s' was not found." % cat, "42704")
            return store.catalogs[cat]
        cat, sch = self.resolve_schema(parts)
        if not self.emu.spark.db_exists(db_name(cat, sch)):
            raise schema_not_found(cat, sch)
        with store.lock:
            return store.schemas.setdefault("%s.%s" % (cat, sch), SecurableMeta(self.emu.cfg.user))

    def uc_grant(self, c):
        if not (c.kw("GRANT") or c.kw("REVOKE")):
            return None
        revoke = c.t[0].up == "REVOKE"
        privs, cur = [], []
        while not c.at_kw("ON"):
            t = c.peek()
            if t is None:
                raise perr("expected ON")
            c.i += 1
            if t.text == ",":
                privs.append("_".join(cur))
                cur = []
            else:
                cur.append(t.text.upper())
        privs.append("_".join(cur))
        privs = ["ALL_PRIVILEGES" if p in ("ALL", "ALL_PRIVILEGES") else p for p in privs]
        c.expect_kw("ON")
        kind = "TABLE"
        if c.peek() is not None and c.peek().up in OBJECT_KINDS and \
                c.peek(1) is not None and c.peek(1).kind in ("ident", "qident"):
            kind = {"VIEW": "TABLE", "DATABASE": "SCHEMA"}.get(c.peek().up, c.peek().up)
            c.i += 1
        parts = c.name()
        c.expect_kw("FROM" if revoke else "TO")
        principal = self.principal(c)
        c.expect_end()
        if kind == "TABLE":
            sec = self.meta(*self.need_table(parts))
            bad = [p for p in privs if p not in TABLE_PRIVS]
            if bad:
                raise SqlError("INVALID_PARAMETER_VALUE.PRIVILEGE",
                               "Privilege %s is not valid for TABLE." % bad[0].replace("_", " "), "22023")
        else:
            sec = self.securable(kind, parts)
            import objects
            valid = {"SCHEMA": SCHEMA_PRIVS, "FUNCTION": objects.FUNCTION_PRIVS, "VOLUME": objects.VOLUME_PRIVS}.get(kind)
            bad = [p for p in privs if valid is not None and p not in valid]
            if bad:
                raise SqlError("INVALID_PARAMETER_VALUE.PRIVILEGE",
                               "Privilege %s is not valid for %s." % (bad[0].replace("_", " "), kind), "22023")
        with self.emu.store.lock:
            cur = sec.grants.setdefault(principal, set())
            if revoke:
                cur.difference_update(privs)
                if not cur:
                    sec.grants.pop(principal, None)
            else:
                cur.update(privs)
        return [], []

    def uc_show_grants(self, c):
        if not c.kw("SHOW", "GRANTS") and not c.kw("SHOW", "GRANT"):
            return None
        principal = None
        if not c.at_kw("ON"):
            principal = self.principal(c)
        c.expect_kw("ON")
        kind = "TABLE"
        if c.peek() is not None and c.peek().up in OBJECT_KINDS and \
                c.peek(1) is not None and c.peek(1).kind in ("ident", "qident"):
            kind = {"VIEW": "TABLE", "DATABASE": "SCHEMA"}.get(c.peek().up, c.peek().up)
            c.i += 1
        parts = c.name()
        if kind == "TABLE":
            key = self.need_table(parts)
            sec = self.meta(*key)
            okey = ".".join(key)
        else:
            sec = self.securable(kind, parts)
            okey = ".".join(self.resolve_schema(parts)) if kind == "SCHEMA" else \
                ".".join(self.resolve(parts)) if kind in ("FUNCTION", "VOLUME") else parts[0].lower()
        from pyspark.sql.types import StringType
        cols = [("Principal", StringType()), ("ActionType", StringType()), ("ObjectType", StringType()), ("ObjectKey", StringType())]
        rows = []
        with self.emu.store.lock:
            for p, privs in sorted(sec.grants.items()):
                if principal is not None and p != principal:
                    continue
                for pr in sorted(privs):
                    rows.append([p, pr.replace("_", " "), kind, okey])
        return cols, rows

    def uc_set_tag_on(self, c):
        if not (c.kw("SET", "TAG", "ON") or c.kw("UNSET", "TAG", "ON")):
            return None
        unset = c.t[0].up == "UNSET"
        kind = c.ident().upper()
        parts = c.name()
        k = c.string() if c.peek() is not None and c.peek().kind == "str" else c.ident()
        v = None
        if not unset and c.op("="):
            v = c.string() if c.peek() is not None and c.peek().kind == "str" else c.ident()
        c.expect_end()
        store = self.emu.store
        if kind in ("TABLE", "VIEW"):
            tags = self.meta(*self.need_table(parts)).tags
        elif kind == "COLUMN":
            key = self.need_table(parts[:-1])
            f = self.column(*key, parts[-1])
            tags = self.meta(*key).column_tags.setdefault(f.name, {})
        else:
            tags = self.securable(kind, parts).tags
        with store.lock:
            if unset:
                tags.pop(k, None)
            else:
                if k in tags:
                    raise SqlError("TAG_ALREADY_EXISTS" if False else "INVALID_PARAMETER_VALUE",
                                   "Tag %s is already assigned; use SET TAGS to change its value." % quote(k), "42710")
                tags[k] = v or ""
        return [], []

    def uc_catalog_stmts(self, c):
        store = self.emu.store
        if c.kw("CREATE", "CATALOG"):
            ine = c.kw("IF", "NOT", "EXISTS")
            cat = c.ident().lower()
            comment = None
            if c.kw("COMMENT"):
                comment = c.string()
            self.emu.create_catalog(cat, self.who, ine, comment)
            return [], []
        if c.kw("DROP", "CATALOG"):
            ie = c.kw("IF", "EXISTS")
            cat = c.ident().lower()
            cascade = c.kw("CASCADE")
            if cat not in store.catalogs:
                if ie:
                    return [], []
                raise SqlError("NO_SUCH_CATALOG_EXCEPTION", "Catalog '%s' was not found." % cat, "42704")
            schemas = facts.list_schemas(self.emu, cat)
            if not cascade and [s for s in schemas if s != "default" or facts.list_tables(self.emu, cat, s)]:
                raise SqlError("SCHEMA_NOT_EMPTY" if False else "CATALOG_NOT_EMPTY", "Catalog %s is not empty. Use CASCADE." % quote(cat), "2BP01")
            import objects
            for s in schemas:
                self.purge_trash(cat, s)
                self.session().sql("DROP DATABASE %s CASCADE" % quote(db_name(cat, s))).collect()
                objects.forget_schema_objects(cat, s)
            with store.lock:
                store.catalogs.pop(cat, None)
                for d in (store.schemas, store.tables):
                    for k in [k for k in d if k.startswith(cat + ".")]:
                        d.pop(k)
            return [], []
        if c.kw("USE", "CATALOG") or c.kw("USE", "SCHEMA") or c.kw("USE", "DATABASE") or c.kw("USE"):
            # Statements are independent on the Statement Execution API: only validate.
            kind = c.t[1].up if len(c.t) > 1 and c.t[1].up in ("CATALOG", "SCHEMA", "DATABASE") else None
            parts = c.name()
            if kind == "CATALOG":
                if parts[0].lower() not in store.catalogs:
                    raise SqlError("NO_SUCH_CATALOG_EXCEPTION", "Catalog '%s' was not found." % parts[0], "42704")
            else:
                cat, sch = self.resolve_schema(parts)
                if not self.emu.spark.db_exists(db_name(cat, sch)):
                    raise schema_not_found(cat, sch)
            return [], []
        if c.kw("SHOW", "CATALOGS"):
            from pyspark.sql.types import StringType
            return [("catalog", StringType())], [[k] for k in sorted(store.catalogs)]
        return None

    def uc_show_schemas(self, c):
        if not (c.kw("SHOW", "SCHEMAS") or c.kw("SHOW", "DATABASES")):
            return None
        cat = self.cat
        if c.kw("IN") or c.kw("FROM"):
            cat = c.ident().lower()
        like = None
        c.kw("LIKE")
        if c.peek() is not None and c.peek().kind == "str":
            like = c.string()
        from pyspark.sql.types import StringType
        names = facts.list_schemas(self.emu, cat) + ["information_schema"]
        if like:
            rx = re.compile("^(" + "|".join(re.escape(p).replace(r"\*", ".*") for p in like.split("|")) + ")$", re.I)
            names = [n for n in names if rx.match(n)]
        return [("databaseName", StringType())], [[n] for n in sorted(names)]

    def uc_show_policies(self, c):
        """SHOW [EFFECTIVE] POLICIES ON {CATALOG | SCHEMA | TABLE} name (sql-ref-syntax-aux-show-policies).
        ABAC policies are not emulated, so the documented columns come back with no rows."""
        if not (c.kw("SHOW", "POLICIES", "ON") or c.kw("SHOW", "EFFECTIVE", "POLICIES", "ON")):
            return None
        kind = c.ident().upper()
        parts = c.name()
        c.expect_end()
        if kind == "TABLE":
            self.need_table(parts)
        elif kind in ("SCHEMA", "CATALOG"):
            self.securable(kind, parts)
        else:
            raise perr("expected CATALOG, SCHEMA or TABLE after ON")
        from pyspark.sql.types import StringType
        return [(n, StringType()) for n in ("Policy Name", "Policy Type", "Catalog", "Schema", "Table", "Comment")], []

    def uc_undrop(self, c):
        if c.kw("SHOW", "TABLES", "DROPPED"):
            cat, sch = self.cat, self.sch
            if c.kw("IN") or c.kw("FROM"):
                cat, sch = self.resolve_schema(c.name())
            from pyspark.sql.types import StringType, LongType
            rows = []
            with self.emu.store.lock:
                for d in self.emu.store.dropped:
                    dc, ds, dt = d["key"]
                    if (dc, ds) == (cat, sch):
                        rows.append([dc, ds, dt, d["table_id"], "MANAGED", _iso_ms(d["dropped_at"]), d["dropped_by"]])
            return [("catalogName", StringType()), ("schemaName", StringType()), ("tableName", StringType()),
                    ("tableId", StringType()), ("tableType", StringType()), ("deletedAt", StringType()),
                    ("userName", StringType())], rows
        c.i = 0
        if not c.kw("UNDROP", "TABLE"):
            return None
        store = self.emu.store
        with store.lock:
            if c.kw("WITH", "ID"):
                tid = c.string()
                cands = [d for d in store.dropped if d["table_id"] == tid]
                label = "with id '%s'" % tid
            else:
                key = self.resolve(c.name())
                cands = [d for d in store.dropped if d["key"] == key]
                label = _q3(key)
            c.expect_end()
            if not cands:
                raise SqlError("UC_UNDROP_RESOURCE_NOT_FOUND" if True else "", "Cannot undrop table %s: no dropped table found." % label, "42704")
            d = cands[-1]
            cat, sch, tbl = d["key"]
            if self.table_exists(cat, sch, tbl):
                raise SqlError("TABLE_OR_VIEW_ALREADY_EXISTS",
                               "Cannot create table or view %s because it already exists." % _q3(d["key"]), "42P07")
            self.session().sql("ALTER TABLE %s.%s RENAME TO %s.%s" % (
                quote(d["db"]), quote(d["trash"]), quote(d["db"]), quote(enc(tbl)))).collect()
            store.dropped.remove(d)
            m = d["meta"]
            m.pk, m.fks = None, []    # UNDROP does not restore PK/FK
            store.tables["%s.%s.%s" % d["key"]] = m
        return [], []

    def uc_drop_table(self, c):
        if not c.kw("DROP", "TABLE"):
            return None
        ie = c.kw("IF", "EXISTS")
        parts = c.name()
        c.kw("PURGE")
        c.expect_end()
        key = self.resolve(parts)
        cat, sch, tbl = key
        if cat not in self.emu.store.catalogs or not self.table_exists(*key):
            if ie:
                return [], []
            raise not_found(key)
        db, stbl = db_name(cat, sch), enc(tbl)
        ttype = self.emu.spark.catalog_table(db, stbl).tableType().name()
        store = self.emu.store
        full = "%s.%s.%s" % key
        with store.lock:
            if ttype == "MANAGED":
                # Kept aside (same database: Spark renames within one) so UNDROP can bring it back.
                trash = store.next_trash_name()
                self.session().sql("ALTER TABLE %s.%s RENAME TO %s.%s" % (quote(db), quote(stbl), quote(db), quote(trash))).collect()
                m = store.drop_table_meta(full) or self.meta(*key)
                store.tables.pop(full, None)
                store.dropped.append({"key": key, "full_name": full, "table_id": m.table_id, "db": db, "trash": trash,
                                      "meta": m, "dropped_at": now_ms(), "dropped_by": self.who})
            else:
                self.session().sql("DROP %s %s.%s" % ("VIEW" if ttype == "VIEW" else "TABLE", quote(db), quote(stbl))).collect()
                store.drop_table_meta(full)
        return [], []

    def uc_describe_json(self, c):
        if not (c.kw("DESCRIBE") or c.kw("DESC")):
            return None
        c.kw("TABLE")
        if not c.kw("EXTENDED"):
            return None
        save = c.i
        try:
            parts = c.name()
        except SqlSyntaxError:
            return None
        if not c.kw("AS", "JSON"):
            c.i = save
            return None
        c.expect_end()
        key = self.need_table(parts)
        from pyspark.sql.types import StringType
        return [("json_metadata", StringType())], [[facts.TableFacts(self.emu, *key).describe_json()]]

    def uc_comment_on_column(self, c):
        if not c.kw("COMMENT", "ON", "COLUMN"):
            return None
        parts = c.name()
        c.expect_kw("IS")
        if c.kw("NULL"):
            val = ""
        else:
            val = c.string()
        c.expect_end()
        key = self.need_table(parts[:-1])
        import objects
        if objects.is_view(self, key):
            # "relation_name must identify a table, a streaming table, a view, or a materialized
            # view" (sql-ref-syntax-ddl-comment, DBR 16.1+): Spark cannot alter a view's column,
            # so Unity Catalog keeps the comment (objects.comment_on_view_column)
            objects.comment_on_view_column(self, key, parts[-1], val)
            return [], []
        self.spark("ALTER TABLE %s ALTER COLUMN %s COMMENT %s" % (spark_table(*key), quote(parts[-1]), sql_string(val)))
        return [], []


def _q3(key):
    return ".".join(quote(p) for p in key)


def _iso_ms(ms):
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def run_statement(emu, st):
    try:
        parts = split_statements(st.sql)
    except SqlSyntaxError as e:
        raise perr(str(e))
    if not parts:
        raise perr("empty statement")
    if len(parts) > 1:
        raise SqlError("PARSE_SYNTAX_ERROR", "Syntax error: the Statement Execution API runs one statement per request.", "42601")
    toks = substitute_params(parts[0], st.req.get("parameters"))
    ctx = Ctx(emu, st, toks)
    try:
        return ctx.run()
    except SqlSyntaxError as e:
        raise perr(str(e))
    finally:
        if ctx.sess is not None:
            try:
                ctx.sess.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            except Exception:  # noqa: BLE001
                pass
