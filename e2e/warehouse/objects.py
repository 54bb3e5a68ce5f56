"""Unity Catalog objects beside tables: views, SQL functions and volumes (emulated parts).

Emulated Unity Catalog parts in this file (README.md "Views, functions, volumes"):
- Views are real Spark views over the real Delta tables (their text with Spark-side names);
  UC keeps what Spark does not: owner, grants, tags, the query as written
  (TableInfo.view_definition). CREATE OR REPLACE VIEW drops the view's grants and tags, as
  the CREATE VIEW reference says: "Replacing an existing view does not preserve privileges
  granted on the original view." (sql-ref-syntax-ddl-create-view); its properties are the
  new statement's only (Spark's own replace). COMMENT ON TABLE on a view sets the view's
  comment ("TABLE relation_name", sql-ref-syntax-ddl-comment: there is no COMMENT ON VIEW).
- SQL functions are real Spark 4 SQL functions (CREATE FUNCTION ... RETURN expr runs in
  Spark, so a column mask calling one really runs); UC keeps the owner, grants, tags and the
  definition as written (FunctionInfo). CREATE OR REPLACE FUNCTION drops the function's
  grants (the rule the operator's verify probe replace_function_drops_grants checks on a
  real workspace; the reference page does not say either way). Per the reference ("OR
  REPLACE: If specified, the function with the same name and signature (number of
  parameters and parameter types) is replaced. You cannot replace an existing function with
  a different signature.", sql-ref-syntax-ddl-create-sql-function) a replace that changes
  the parameters fails. Python functions (LANGUAGE PYTHON) are not emulated.
- Managed volumes are folders under the emulator's directory (VolumeInfo); owner, grants,
  tags and comment are kept here (sql-ref-syntax-ddl-create-volume, ...-alter-volume,
  ...-drop-volume, COMMENT ON VOLUME). External volumes are not emulated.
"""
import os
import shutil
import threading

from server import SqlError, spark_error
from sqltext import Tok, db_name, enc, quote, render, sql_string
from ucstore import FunctionMeta, TableMeta, VolumeMeta

EMU = None
# CREATE FUNCTION checks Unity Catalog, then Spark makes the function: one at a time, so two
# CREATE FUNCTION IF NOT EXISTS sent at once both succeed
_FUNCTION_DDL = threading.Lock()

# manage-privileges/privileges: what each securable takes
FUNCTION_PRIVS = {"ALL_PRIVILEGES", "EXECUTE", "MANAGE"}
VOLUME_PRIVS = {"ALL_PRIVILEGES", "READ_VOLUME", "WRITE_VOLUME", "APPLY_TAG", "MANAGE"}
# the words that end a RETURNS type (the function's characteristics and body)
_CHARACTERISTICS = {"LANGUAGE", "NOT", "DETERMINISTIC", "COMMENT", "CONTAINS", "READS", "RETURN", "AS",
                    "DEFAULT", "SQL", "ENVIRONMENT"}


def _q3(key):
    return ".".join(quote(p) for p in key)


def perr(msg):
    return SqlError("PARSE_SYNTAX_ERROR", "Syntax error: %s." % msg, "42601")


def routine_not_found(key):
    # Spark's and Databricks' error class for a missing routine (error-classes: ROUTINE_NOT_FOUND,
    # SQLSTATE 42883)
    return SqlError("ROUTINE_NOT_FOUND", "The routine %s cannot be found. Verify the spelling and correctness "
                    "of the schema and catalog." % _q3(key), "42883")


def volume_not_found(key):
    # the class is the emulator's (the DROP VOLUME page names none)
    return SqlError("VOLUME_NOT_FOUND", "The volume %s cannot be found. Verify the spelling and correctness of "
                    "the schema and catalog." % _q3(key), "42704")


def spark_fn(key):
    return quote(db_name(key[0], key[1])) + "." + quote(enc(key[2]))


# =============================================================================== dispatch
def dispatch(ctx, c):
    """The object statements this module takes, or None."""
    for fn in (create_function, drop_function, alter_function, create_volume, drop_volume, alter_volume,
               comment_on, drop_view):
        c.i = 0
        r = fn(ctx, c)
        if r is not None:
            return r
    return None


def need_schema(ctx, cat, sch):
    from server import schema_not_found
    if cat not in EMU.store.catalogs or not EMU.spark.db_exists(db_name(cat, sch)):
        raise schema_not_found(cat, sch)


def function_meta(key):
    with EMU.store.lock:
        return EMU.store.functions.get("%s.%s.%s" % key)


def need_function(ctx, parts):
    key = ctx.resolve(parts)
    m = function_meta(key)
    if m is None:
        raise routine_not_found(key)
    return key, m


def need_volume(ctx, parts):
    key = ctx.resolve(parts)
    with EMU.store.lock:
        m = EMU.store.volumes.get("%s.%s.%s" % key)
    if m is None:
        raise volume_not_found(key)
    return key, m


def is_view(ctx, key):
    c, s, t = key
    if not ctx.table_exists(c, s, t):
        return False
    return EMU.spark.catalog_table(db_name(c, s), enc(t)).tableType().name() == "VIEW"


# =============================================================================== views
def view_query_text(toks):
    """The query of CREATE ... VIEW ... AS <query> as written: the text after the first AS at
    the top level (column lists, COMMENT and TBLPROPERTIES come before it)."""
    depth = 0
    for i, t in enumerate(toks):
        if t.kind == "op" and t.text == "(":
            depth += 1
        elif t.kind == "op" and t.text == ")":
            depth -= 1
        elif depth == 0 and t.up == "AS":
            return render(toks[i + 1:]).strip()
    return None


def view_created(ctx, key, existed_view, replace, text):
    """After Spark made or replaced the view: what Unity Catalog keeps about it."""
    store = EMU.store
    full = "%s.%s.%s" % key
    with store.lock:
        m = store.tables.get(full)
        if m is None or not existed_view:
            m = store.tables[full] = TableMeta(ctx.who)
        elif replace:
            # "Replacing an existing view does not preserve privileges granted on the original
            # view." (sql-ref-syntax-ddl-create-view); its tags go with it. The owner stays
            # ("To replace an existing view you must be its owner").
            old = m
            m = store.tables[full] = TableMeta(old.owner, table_id=old.table_id)
            m.created_at, m.created_by = old.created_at, old.created_by
            m.touch(ctx.who)
        else:
            return        # IF NOT EXISTS on an existing view: nothing changed
        m.view_definition = text


def drop_view(ctx, c):
    """DROP VIEW [IF EXISTS] v: Spark drops the view; its UC metadata goes with it."""
    if not c.kw("DROP", "VIEW"):
        return None
    ie = c.kw("IF", "EXISTS")
    parts = c.name()
    c.expect_end()
    key = ctx.resolve(parts)
    cat, sch, name = key
    if not ctx.table_exists(cat, sch, name):
        if ie:
            return [], []
        from server import not_found
        raise not_found(key)
    if not is_view(ctx, key):
        raise SqlError("WRONG_COMMAND_FOR_OBJECT_TYPE",
                       "The operation DROP VIEW requires a VIEW. But %s is a TABLE. Use DROP TABLE instead." % _q3(key),
                       "42809")
    ctx.spark("DROP VIEW %s.%s" % (quote(db_name(cat, sch)), quote(enc(name))))
    EMU.store.drop_table_meta("%s.%s.%s" % key)
    return [], []


def comment_on_view_column(ctx, key, column, val):
    """COMMENT ON COLUMN v.col IS {'c' | NULL} on a view: kept in Unity Catalog (the view's
    TableMeta.view_column_comments, shown in TableInfo.columns); the column must be one of the
    view's. A CREATE OR REPLACE VIEW starts a new TableMeta, so the comments go with it (the
    replace is a DROP and a CREATE, sql-ref-syntax-ddl-create-view)."""
    fields = ctx.schema_fields(*key)
    name = next((f.name for f in fields if f.name.lower() == column.lower()), None)
    if name is None:
        raise SqlError("UNRESOLVED_COLUMN.WITH_SUGGESTION",
                       "A column, variable, or function parameter with name %s cannot be resolved. "
                       "Did you mean one of the following? [%s]."
                       % (quote(column), ", ".join(quote(f.name) for f in fields)), "42703")
    m = ctx.meta(*key)
    with EMU.store.lock:
        # "" clears it, over a comment of the CREATE's column list too
        m.view_column_comments[name] = val or ""
        m.touch(ctx.who)


# =============================================================================== functions
def _split_top(toks, sep=","):
    """Significant tokens split on top-level `sep` (parentheses and <...> nest)."""
    out, cur, depth = [], [], 0
    for t in toks:
        if t.kind == "op" and t.text in ("(", "<"):
            depth += 1
        elif t.kind == "op" and t.text in (")", ">"):
            depth -= 1
        if depth == 0 and t.kind == "op" and t.text == sep:
            out.append(cur)
            cur = []
            continue
        cur.append(t)
    if cur:
        out.append(cur)
    return out


def _text(toks):
    """Significant tokens back to text (one space between words, none around punctuation)."""
    s = ""
    for t in toks:
        if s and not (t.kind == "op" and t.text in (",", ")", ">", "(", "<", ".")) and not s.endswith(("(", "<", ".")):
            s += " "
        s += t.text
    return s


def parse_type(text):
    """A type text as Spark reads it (a pyspark DataType), or a PARSE_SYNTAX_ERROR."""
    from pyspark.sql.types import _parse_datatype_string
    try:
        return _parse_datatype_string(text)
    except Exception as e:  # noqa: BLE001
        raise perr("invalid type %r (%s)" % (text, str(e).split("\n")[0][:200]))


def create_function(ctx, c):
    """CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS] f(p T [DEFAULT e] [COMMENT 'c'], ...)
    [RETURNS T | RETURNS TABLE (...)] [characteristics] RETURN {expression | query}
    (sql-ref-syntax-ddl-create-sql-function); TEMPORARY functions are Spark's alone."""
    if not c.kw("CREATE"):
        return None
    replace = c.kw("OR", "REPLACE")
    if not c.kw("FUNCTION"):
        return None
    fn_tok = c.t[c.i - 1]
    ine = c.kw("IF", "NOT", "EXISTS")
    if replace and ine:
        raise perr("OR REPLACE and IF NOT EXISTS cannot both be given")
    parts = c.name()
    key = ctx.resolve(parts)
    need_schema(ctx, key[0], key[1])
    # the parameter list
    lp_tok = c.peek()
    c.expect_op("(")
    start, depth = c.i, 1
    while depth:
        t = c.peek()
        if t is None:
            raise perr("unclosed parameter list")
        if t.kind == "op" and t.text == "(":
            depth += 1
        elif t.kind == "op" and t.text == ")":
            depth -= 1
        c.i += 1
    params = []
    for p in _split_top(c.t[start:c.i - 1]):
        if not p or p[0].kind not in ("ident", "qident"):
            raise perr("expected a parameter name")
        name, rest = p[0].value, p[1:]
        cut = next((k for k, t in enumerate(rest) if t.up in ("DEFAULT", "COMMENT")), len(rest))
        type_toks, rest = rest[:cut], rest[cut:]
        if not type_toks:
            raise perr("parameter %s has no type" % quote(name))
        param = {"name": name, "type_text": _text(type_toks), "comment": None, "default": None}
        while rest:
            if rest[0].up == "DEFAULT":
                k = next((k for k, t in enumerate(rest) if k and t.up == "COMMENT"), len(rest))
                param["default"] = _text(rest[1:k])
                rest = rest[k:]
            elif rest[0].up == "COMMENT" and len(rest) >= 2 and rest[1].kind == "str":
                param["comment"] = rest[1].value
                rest = rest[2:]
            else:
                raise perr("unexpected %r in parameter %s" % (rest[0].text, quote(name)))
        param["data_type"] = parse_type(param["type_text"])
        params.append(param)
    names = [p["name"].lower() for p in params]
    if len(set(names)) != len(names):
        raise SqlError("DUPLICATE_ROUTINE_PARAMETER_NAMES",
                       "Found duplicate name(s) in the parameter list of the user-defined routine %s." % _q3(key), "42734")
    returns, returns_table = None, None
    if c.kw("RETURNS"):
        if c.kw("TABLE"):
            s0 = c.i
            if c.op("("):
                d = 1
                while d:
                    t = c.peek()
                    if t is None:
                        raise perr("unclosed RETURNS TABLE")
                    d += 1 if t.text == "(" else -1 if t.text == ")" else 0
                    c.i += 1
            returns_table = _text(c.t[s0:c.i])
        else:
            s0, d = c.i, 0
            while c.peek() is not None and not (d == 0 and c.peek().up in _CHARACTERISTICS):
                t = c.peek()
                d += 1 if t.text in ("(", "<") else -1 if t.text in (")", ">") else 0
                c.i += 1
            returns = _text(c.t[s0:c.i])
            parse_type(returns)
    deterministic, comment, language, access = None, None, "SQL", "CONTAINS_SQL"
    while not c.at_kw("RETURN") and not c.at_kw("AS"):
        if c.kw("LANGUAGE"):
            language = c.ident().upper()
        elif c.kw("NOT", "DETERMINISTIC"):
            deterministic = False
        elif c.kw("DETERMINISTIC"):
            deterministic = True
        elif c.kw("COMMENT"):
            comment = c.string()
        elif c.kw("CONTAINS", "SQL"):
            access = "CONTAINS_SQL"
        elif c.kw("READS", "SQL", "DATA"):
            access = "READS_SQL_DATA"
        elif c.kw("SQL", "SECURITY", "DEFINER"):
            pass
        else:
            raise perr("unexpected %r in CREATE FUNCTION" % c.rest_text()[:40])
    if language != "SQL" or c.at_kw("AS"):
        raise SqlError("UNSUPPORTED_FEATURE",
                       "The emulator runs SQL functions only (RETURN expr); LANGUAGE %s / AS $$...$$ bodies are "
                       "not emulated." % language, "0A000")
    # the body as written: the original tokens after RETURN
    ret_tok = c.t[c.i]
    c.i += 1
    if c.done():
        raise perr("RETURN needs an expression or a query")
    full_toks = ctx.toks
    at = next(i for i, t in enumerate(full_toks) if t is ret_tok)
    body = render(full_toks[at + 1:]).strip()
    with _FUNCTION_DDL:
        return _make_function(ctx, key, replace, ine, params, returns, returns_table, deterministic, comment, access,
                              body, full_toks, fn_tok, lp_tok)


def _make_function(ctx, key, replace, ine, params, returns, returns_table, deterministic, comment, access, body,
                   full_toks, fn_tok, lp_tok):
    store = EMU.store
    full = "%s.%s.%s" % key
    old = function_meta(key)
    if old is not None:
        if ine:
            return [], []
        if not replace:
            raise SqlError("ROUTINE_ALREADY_EXISTS",
                           "Cannot create the routine %s because a routine of that name already exists.\nChoose a "
                           "different name, drop or replace the existing routine, or add the IF NOT EXISTS clause "
                           "to tolerate a pre-existing routine." % _q3(key), "42723")
        old_sig = [p["data_type"].simpleString() for p in old.params]
        new_sig = [p["data_type"].simpleString() for p in params]
        if old_sig != new_sig:
            # "You cannot replace an existing function with a different signature."
            # (sql-ref-syntax-ddl-create-sql-function, OR REPLACE); the class is the emulator's
            raise SqlError("ROUTINE_ALREADY_EXISTS",
                           "Cannot replace the routine %s: a routine of that name with a different signature (%s) "
                           "exists; OR REPLACE keeps the signature (number of parameters and parameter types). "
                           "Drop it first." % (_q3(key), ", ".join(old_sig)), "42723")
    # Spark makes the real function: the statement with the name as Spark knows it
    name_end = next(i for i, t in enumerate(full_toks) if t is lp_tok)
    name_start = next(i for i, t in enumerate(full_toks) if t is fn_tok)
    spark_toks = full_toks[:name_start + 1] + [Tok("ws", " "), Tok("ident", spark_fn(key))] + full_toks[name_end:]
    saved = ctx.toks
    ctx.toks = spark_toks
    try:
        text, _ = ctx.rewrite()
    finally:
        ctx.toks = saved
    ctx.spark(text)
    m = FunctionMeta(ctx.who)
    if old is not None:
        # the replace keeps the owner and drops the grants (see the module's docstring)
        m.owner, m.created_at, m.created_by = old.owner, old.created_at, old.created_by
        m.touch(ctx.who)
    m.params = params
    m.returns, m.returns_table, m.body, m.comment, m.data_access = returns, returns_table, body, comment, access
    info = spark_function_info(ctx, key)
    m.deterministic = info.get("deterministic", True) if deterministic is None else deterministic
    if m.returns is None and m.returns_table is None:
        m.returns = info.get("returns")
    with store.lock:
        store.functions[full] = m
    return [], []


def spark_function_info(ctx, key):
    """What Spark says of the function it made (DESCRIBE FUNCTION EXTENDED): the return type
    when RETURNS was left out, and whether it is deterministic."""
    out = {}
    try:
        _, rows = ctx.spark("DESCRIBE FUNCTION EXTENDED %s" % spark_fn(key), raw=True)
    except Exception:  # noqa: BLE001
        return out
    for (line,) in rows:
        k, _, v = (line or "").partition(":")
        if k.strip() == "Returns":
            out["returns"] = v.strip()
        elif k.strip() == "Deterministic":
            out["deterministic"] = v.strip() == "true"
    return out


def drop_function(ctx, c):
    """DROP [TEMPORARY] FUNCTION [IF EXISTS] f (sql-ref-syntax-ddl-drop-function)."""
    if not c.kw("DROP", "FUNCTION"):
        return None
    ie = c.kw("IF", "EXISTS")
    key = ctx.resolve(c.name())
    c.expect_end()
    if function_meta(key) is None:
        if ie:
            return [], []
        raise routine_not_found(key)
    try:
        ctx.spark("DROP FUNCTION IF EXISTS %s" % spark_fn(key))
    except Exception as e:  # noqa: BLE001
        raise spark_error(e)
    with EMU.store.lock:
        EMU.store.functions.pop("%s.%s.%s" % key, None)
    return [], []


def alter_function(ctx, c):
    """ALTER FUNCTION f { [SET] OWNER TO p | SET TAGS (...) | UNSET TAGS (...) }
    (sql-ref-syntax-ddl-alter-function)."""
    if not c.kw("ALTER", "FUNCTION"):
        return None
    key, m = need_function(ctx, c.name())
    return _owner_or_tags(ctx, c, m, "FUNCTION")


def _owner_or_tags(ctx, c, m, kind):
    store = EMU.store
    if c.kw("SET", "TAGS") or c.kw("UNSET", "TAGS"):
        unset = c.t[c.i - 2].up == "UNSET"
        with store.lock:
            ctx.apply_tags(c, m.tags, unset)
            m.touch(ctx.who)
        return [], []
    c.kw("SET")
    if c.kw("OWNER", "TO"):
        p = ctx.principal(c)
        c.expect_end()
        with store.lock:
            m.owner = p
            m.touch(ctx.who)
        return [], []
    raise perr("ALTER %s takes [SET] OWNER TO, SET TAGS or UNSET TAGS here" % kind)


# =============================================================================== volumes
def volume_dir(key):
    return os.path.join(EMU.cfg.dir, "volumes", enc(key[0]), enc(key[1]), enc(key[2]))


def create_volume(ctx, c):
    """CREATE [EXTERNAL] VOLUME [IF NOT EXISTS] v [LOCATION 'path'] [COMMENT 'c']
    (sql-ref-syntax-ddl-create-volume): managed volumes only."""
    if not c.kw("CREATE"):
        return None
    external = c.kw("EXTERNAL")
    if not c.kw("VOLUME"):
        return None
    ine = c.kw("IF", "NOT", "EXISTS")
    key = ctx.resolve(c.name())
    location, comment = None, None
    while not c.done():
        if c.kw("LOCATION"):
            location = c.string()
        elif c.kw("COMMENT"):
            comment = c.string()
        else:
            raise perr("unexpected %r in CREATE VOLUME" % c.rest_text()[:40])
    if external or location is not None:
        raise SqlError("UNSUPPORTED_FEATURE", "External volumes are not emulated (managed volumes only).", "0A000")
    need_schema(ctx, key[0], key[1])
    store = EMU.store
    full = "%s.%s.%s" % key
    with store.lock:
        if full in store.volumes:
            if ine:
                return [], []
            # "If a volume with the same name already exists in the schema VOLUME_ALREADY_EXISTS
            # is raised." (sql-ref-syntax-ddl-create-volume)
            raise SqlError("VOLUME_ALREADY_EXISTS",
                           "Cannot create volume %s because it already exists." % _q3(key), "42710")
        path = volume_dir(key)
        os.makedirs(path, exist_ok=True)
        store.volumes[full] = VolumeMeta(ctx.who, "file://" + path, comment)
    return [], []


def drop_volume(ctx, c):
    """DROP VOLUME [IF EXISTS] v (sql-ref-syntax-ddl-drop-volume): a managed volume's files go."""
    if not c.kw("DROP", "VOLUME"):
        return None
    ie = c.kw("IF", "EXISTS")
    key = ctx.resolve(c.name())
    c.expect_end()
    store = EMU.store
    with store.lock:
        m = store.volumes.pop("%s.%s.%s" % key, None)
    if m is None:
        if ie:
            return [], []
        raise volume_not_found(key)
    shutil.rmtree(volume_dir(key), ignore_errors=True)
    return [], []


def alter_volume(ctx, c):
    """ALTER VOLUME v { [SET] OWNER TO p | SET TAGS (...) | UNSET TAGS (...) }
    (sql-ref-syntax-ddl-alter-volume; RENAME TO is not emulated)."""
    if not c.kw("ALTER", "VOLUME"):
        return None
    key, m = need_volume(ctx, c.name())
    return _owner_or_tags(ctx, c, m, "VOLUME")


def drop_schema_objects(cat, sch, cascade):
    """DROP SCHEMA: without CASCADE a schema holding a volume is not empty; with it, its
    volumes and functions go (Spark drops its own functions)."""
    store = EMU.store
    vols = store.in_schema(store.volumes, cat, sch)
    if vols and not cascade:
        raise SqlError("SCHEMA_NOT_EMPTY", "Cannot drop a schema %s because it contains objects.\nUse DROP SCHEMA "
                       "... CASCADE to drop the schema and all its objects." % _q3((cat, sch)), "2BP01")


def forget_schema_objects(cat, sch):
    store = EMU.store
    with store.lock:
        for d in (store.volumes, store.functions):
            for k in store.in_schema(d, cat, sch):
                d.pop(k)
    shutil.rmtree(os.path.join(EMU.cfg.dir, "volumes", enc(cat), enc(sch)), ignore_errors=True)


# =============================================================================== COMMENT ON
def comment_on(ctx, c):
    """COMMENT ON VOLUME v IS {'c' | NULL}; COMMENT ON TABLE v IS ... for a view
    ("TABLE relation_name", sql-ref-syntax-ddl-comment): Spark refuses COMMENT ON TABLE for a
    view, so the view's comment is set as Spark keeps it (its 'comment' property)."""
    if not c.kw("COMMENT", "ON"):
        return None
    kind = c.peek().up if c.peek() is not None else None
    if kind not in ("VOLUME", "TABLE"):
        return None
    c.i += 1
    parts = c.name()
    c.expect_kw("IS")
    val = None if c.kw("NULL") else c.string()
    c.expect_end()
    if kind == "VOLUME":
        key, m = need_volume(ctx, parts)
        with EMU.store.lock:
            m.comment = val or None
            m.touch(ctx.who)
        return [], []
    key = ctx.resolve(parts)
    if not is_view(ctx, key):
        return None               # a table: Spark/Delta's own COMMENT ON TABLE
    target = "%s.%s" % (quote(db_name(key[0], key[1])), quote(enc(key[2])))
    if val:
        ctx.spark("ALTER VIEW %s SET TBLPROPERTIES ('comment' = %s)" % (target, sql_string(val)))
    else:
        ctx.spark("ALTER VIEW %s UNSET TBLPROPERTIES IF EXISTS ('comment')" % target)
    m = ctx.meta(*key)
    with EMU.store.lock:
        m.touch(ctx.who)
    return [], []


# =============================================================================== masks on reads
def check_mask_function(ctx, fn_full, using_count):
    """A column mask / row filter names an existing SQL function (column-mask clause: "A
    scalar SQL UDF with at least one parameter"): else ROUTINE_NOT_FOUND, as Spark and
    Databricks name a missing routine."""
    key = tuple(fn_full.split(".", 2))
    m = function_meta(key)
    if m is None:
        raise routine_not_found(key)
    if m.returns_table is not None:
        raise SqlError("INVALID_PARAMETER_VALUE", "%s is a table function; a mask or row filter needs a scalar SQL "
                       "function." % _q3(key), "22023")
    if len(m.params) < using_count:
        raise SqlError("WRONG_NUM_ARGS", "The function %s takes %d parameter(s), the clause passes %d." %
                       (_q3(key), len(m.params), using_count), "42605")


def masked_relation(ctx, key, spark_name):
    """A read of a table with column masks or a row filter, as a subquery that applies them
    (column-mask clause: "The mask is applied as soon as each row is fetched from the data
    source"), or None when the table has neither."""
    with EMU.store.lock:
        m = EMU.store.tables.get("%s.%s.%s" % key)
        if m is None or (not m.masks and not m.row_filter):
            return None
        masks = dict(m.masks)
        rf = dict(m.row_filter) if m.row_filter else None
    fields = [f.name for f in ctx.schema_fields(*key)]
    cols = []
    for f in fields:
        mk = next((v for k, v in masks.items() if k.lower() == f.lower()), None)
        if mk is None:
            cols.append(quote(f))
            continue
        args = [quote(f)] + [quote(u) for u in mk["using_column_names"]]
        cols.append("%s(%s) AS %s" % (spark_fn(tuple(mk["function_name"].split(".", 2))), ", ".join(args), quote(f)))
    q = "SELECT %s FROM %s" % (", ".join(cols), spark_name)
    if rf:
        q += " WHERE %s(%s)" % (spark_fn(tuple(rf["function_name"].split(".", 2))),
                                ", ".join(quote(x) for x in rf["input_column_names"]))
    return "(" + q + ")"


# words that can follow a relation in FROM and are not its alias
NOT_ALIAS = {"WHERE", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "ON", "USING", "GROUP",
             "ORDER", "LIMIT", "OFFSET", "UNION", "EXCEPT", "INTERSECT", "MINUS", "HAVING", "WINDOW", "LATERAL",
             "SEMI", "ANTI", "CLUSTER", "DISTRIBUTE", "SORT", "TABLESAMPLE", "VERSION", "TIMESTAMP", "PIVOT",
             "UNPIVOT", "QUALIFY", "FOR", "WITH"}


# words after a relation that qualify it (time travel, sampling, options): a masked subquery
# cannot take them, so such a read is left as written (README: known differences)
QUALIFIERS = {"VERSION", "TIMESTAMP", "FOR", "TABLESAMPLE", "WITH"}


def qualified_read(toks, j):
    k = j
    while k < len(toks) and toks[k].kind in ("ws", "comment"):
        k += 1
    return k < len(toks) and (toks[k].up in QUALIFIERS or (toks[k].kind == "op" and toks[k].text == "@"))


def alias_follows(toks, j):
    k = j
    while k < len(toks) and toks[k].kind in ("ws", "comment"):
        k += 1
    if k >= len(toks):
        return False
    t = toks[k]
    if t.up == "AS":
        return True
    return t.kind == "qident" or (t.kind == "ident" and t.up not in NOT_ALIAS)
