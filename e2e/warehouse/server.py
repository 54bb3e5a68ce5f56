#!/usr/bin/env python3
"""Databricks SQL warehouse + Unity Catalog emulator for delta-operator's tests.

Delta SQL runs on real Delta Lake (delta-spark on pyspark, local mode). Unity-Catalog-only
things (three-level names, tags, grants, PK/FK, masks, row filters, owners,
information_schema, UNDROP, the REST shapes, warehouse states, auth) are emulated here.
See README.md for exactly what is real and what is emulated.

Usage: server.py --dir DIR [--port 0]    (writes DIR/port once listening)
"""
import argparse
import base64
import datetime
import decimal
import json
import os
import re
import socket
import sys
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltext import (Cursor, SqlSyntaxError, db_name, db_parts, enc, lex, quote, render,  # noqa: E402
                     sig, spark_table, split_statements, sql_string, unspark, parse_multipart, Tok)
from ucstore import SecurableMeta, Store, now_ms  # noqa: E402

LOG = None


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


# ============================================================================ config
class Config:
    def __init__(self, args):
        e = os.environ
        self.dir = args.dir
        self.port = args.port
        self.token = e.get("WAREHOUSE_PAT") or "dapi" + uuid.uuid4().hex
        self.warehouse_id = e.get("WAREHOUSE_ID") or uuid.uuid4().hex[:16]
        self.client_id = e.get("WAREHOUSE_CLIENT_ID") or str(uuid.uuid4())
        self.client_secret = e.get("WAREHOUSE_CLIENT_SECRET") or "dose" + uuid.uuid4().hex
        self.user = e.get("WAREHOUSE_USER", "emulator-user@example.com")
        self.token_ttl = int(e.get("WAREHOUSE_TOKEN_TTL", "3600"))
        self.catalogs = [c.strip().lower() for c in e.get("WAREHOUSE_CATALOGS", "main").split(",") if c.strip()]
        self.default_catalog = self.catalogs[0] if self.catalogs else "main"
        self.chunk_rows = int(e.get("WAREHOUSE_CHUNK_ROWS", "1000"))
        self.uc_page_size = int(e.get("WAREHOUSE_UC_PAGE_SIZE", "50"))
        self.concurrency = int(e.get("WAREHOUSE_CONCURRENCY", "4"))
        self.spark_master = e.get("WAREHOUSE_SPARK_MASTER", "local[2]")
        self.driver_memory = e.get("WAREHOUSE_DRIVER_MEMORY", "1g")
        self.jars = e.get("WAREHOUSE_JARS", "")            # comma-separated jar paths
        self.packages = e.get("WAREHOUSE_PACKAGES", "")    # else Maven coordinates (Ivy)
        self.ivy = e.get("WAREHOUSE_IVY", "")
        self.faults = json.loads(e.get("WAREHOUSE_FAULTS", "{}") or "{}")


# ============================================================================ faults
class Faults:
    FIELDS = {
        "statement_latency_ms": 0,     # added before each statement runs
        "request_latency_ms": 0,       # added to every API request
        "throttle_next": 0,            # next N matching requests: 429 + Retry-After
        "retry_after": 1,              # seconds, for 429 (and 503 when set)
        "unavailable_next": 0,         # next N matching requests: 503
        "drop_next": 0,                # next N matching requests: socket closed, no response
        "fault_paths": r"^/(api|oidc)/",   # regex on the path, for the three above
        "fault_methods": "",           # e.g. "POST" to limit them to one method
        "hang_pattern": None,          # regex: statements matching stay RUNNING until cancelled
        "slow_pattern": None,          # regex: statements matching run this much longer ...
        "slow_seconds": 10,            # ... before their work starts (a cancel ends them)
        "uncancellable_pattern": None,  # regex: statements matching ignore cancels for a while
        "uncancellable_seconds": 10,   # ... this long, then succeed
        "fail_pattern": None,          # regex: statements matching FAIL with fail_message
        "fail_message": "[INTERNAL_ERROR] injected failure SQLSTATE: XX000",
        "warehouse_state": None,       # admin only, not kept: sets the state now (STOPPED: a stopped
                                       # warehouse, as after auto-stop; also WAREHOUSE_FAULTS at start)
        "warehouse_start_seconds": 0,  # STARTING -> RUNNING after this long
        "warehouse_never_starts": False,
        "warehouse_autostart": True,   # a statement sent to a STOPPED warehouse starts it
        "chunk_rows": None,            # rows per result chunk (None: WAREHOUSE_CHUNK_ROWS)
        "tag_empty_first_page": False,  # tag listings start with an empty page that carries a
                                        # next_page_token (the API documents such pages)
        "uc_column_types": {},         # "catalog.schema.table.column" -> {type_text, type_name,
                                       # type_json}: what Unity Catalog lists for a column of a type
                                       # Spark here cannot create (GEOGRAPHY, GEOMETRY: DBR-only
                                       # types, documented in the ColumnInfo type_name enum)
    }

    def __init__(self, initial):
        self.lock = threading.Lock()
        self.v = {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.FIELDS.items()}
        self.update(initial)

    def update(self, d):
        with self.lock:
            for k, val in d.items():
                if k in ("warehouse_state",):
                    continue
                if k not in self.FIELDS:
                    raise ValueError("unknown fault knob %r (known: %s)" % (k, ", ".join(sorted(self.FIELDS))))
                self.v[k] = val
            return dict(self.v)

    def reset(self):
        with self.lock:
            self.v = {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.FIELDS.items()}

    def get(self, k):
        with self.lock:
            return self.v[k]

    def take(self, path, method):
        """Consume one injected fault for this request, if any: 'drop' | '429' | '503' | None."""
        with self.lock:
            if not re.search(self.v["fault_paths"] or "", path):
                return None
            if self.v["fault_methods"] and method.upper() not in self.v["fault_methods"].upper().split(","):
                return None
            for k, r in (("drop_next", "drop"), ("throttle_next", "429"), ("unavailable_next", "503")):
                if self.v[k] > 0:
                    self.v[k] -= 1
                    return r
        return None


# ============================================================================ warehouse
class Warehouse:
    def __init__(self, cfg, faults, initial_state):
        self.cfg, self.faults = cfg, faults
        self.lock = threading.Lock()
        self.state = initial_state
        self.ready_at = None
        self.starts = 0         # STOPPED -> STARTING transitions: what a warehouse bills for
        self.changed = threading.Condition(self.lock)

    def get_state(self):
        with self.lock:
            self._advance()
            return self.state

    def start_count(self):
        with self.lock:
            return self.starts

    def _advance(self):
        if self.state == "STARTING" and not self.faults.get("warehouse_never_starts") and \
                self.ready_at is not None and time.time() >= self.ready_at:
            self.state = "RUNNING"
            self.changed.notify_all()

    def start(self):
        with self.lock:
            self._advance()
            if self.state in ("STOPPED", "STOPPING"):
                self.starts += 1
                self.state = "STARTING"
                self.ready_at = time.time() + float(self.faults.get("warehouse_start_seconds") or 0)
                self._advance()

    def stop(self):
        with self.lock:
            self.state = "STOPPED"
            self.ready_at = None

    def set_state(self, st):
        with self.lock:
            self.state = st
            if st == "STARTING":
                self.ready_at = time.time() + float(self.faults.get("warehouse_start_seconds") or 0)

    def info(self):
        st = self.get_state()
        return {
            "id": self.cfg.warehouse_id, "name": "delta-operator emulator", "state": st,
            "cluster_size": "2X-Small", "min_num_clusters": 1, "max_num_clusters": 1,
            "num_clusters": 1 if st == "RUNNING" else 0, "num_active_sessions": 0,
            "auto_stop_mins": 0, "enable_photon": False, "enable_serverless_compute": False,
            "warehouse_type": "PRO", "spot_instance_policy": "COST_OPTIMIZED",
            "channel": {"name": "CHANNEL_NAME_CURRENT"}, "creator_name": self.cfg.user,
            "jdbc_url": "", "odbc_params": {"hostname": "127.0.0.1", "path": "/sql/1.0/warehouses/" + self.cfg.warehouse_id,
                                            "protocol": "http", "port": 0},
            "health": {"status": "HEALTHY" if st in ("RUNNING", "STOPPED") else "DEGRADED",
                       "summary": "emulated warehouse"},
            "tags": {"custom_tags": []},
        }


# ============================================================================ spark
class Spark:
    def __init__(self, cfg):
        self.cfg = cfg
        self.session = None
        self.ready = threading.Event()
        self.error = None
        self.started_s = None

    def start(self):
        t0 = time.time()
        try:
            from pyspark.sql import SparkSession
            wh = os.path.join(self.cfg.dir, "spark-warehouse")
            b = (SparkSession.builder.master(self.cfg.spark_master).appName("delta-warehouse-emulator")
                 .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                 .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                 .config("spark.sql.warehouse.dir", wh)
                 .config("spark.driver.memory", self.cfg.driver_memory)
                 .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "1").config("spark.default.parallelism", "1")
                 .config("spark.databricks.delta.snapshotPartitions", "1")
                 .config("spark.sql.session.timeZone", "UTC")
                 .config("spark.sql.ansi.enabled", "true")
                 .config("spark.databricks.delta.schema.typeCheck.enabled", "true")
                 .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -Dderby.system.home=" + self.cfg.dir)
                 .config("spark.local.dir", os.path.join(self.cfg.dir, "spark-tmp")))
            if self.cfg.jars:
                b = b.config("spark.jars", self.cfg.jars)
            elif self.cfg.packages:
                b = b.config("spark.jars.packages", self.cfg.packages)
                if self.cfg.ivy:
                    b = b.config("spark.jars.ivy", self.cfg.ivy)
            s = b.getOrCreate()
            s.sparkContext.setLogLevel("FATAL")
            self.session = s
            s.sql("SELECT 1").collect()
            self.started_s = round(time.time() - t0, 2)
            log("spark %s ready in %.1fs" % (s.version, self.started_s))
            self.ready.set()
        except Exception as e:  # noqa: BLE001
            self.error = "%s: %s" % (type(e).__name__, e)
            log("spark failed to start:", self.error)
            traceback.print_exc()

    def jcatalog(self):
        return self.session._jsparkSession.sessionState().catalog()

    def databases(self):
        return seq(self.jcatalog().listDatabases())

    def db_exists(self, db):
        return bool(self.jcatalog().databaseExists(db))

    def tables_in(self, db):
        """Spark table names (encoded) in db, UNDROP trash excluded."""
        jc = self.jcatalog()
        out = []
        for ti in seq(jc.listTables(db)):
            name = ti.table()
            if not name.startswith("__"):
                out.append(name)
        return out

    def table_exists(self, db, tbl):
        from py4j.java_gateway import java_import  # noqa: F401
        jvm = self.session._jvm
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(tbl, jvm.scala.Some(db))
        return bool(self.jcatalog().tableExists(ident))

    def catalog_table(self, db, tbl):
        jvm = self.session._jvm
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(tbl, jvm.scala.Some(db))
        return self.jcatalog().getTableMetadata(ident)


def seq(s):
    """A Scala Seq (through py4j) as a Python list."""
    out, it = [], s.iterator()
    while it.hasNext():
        out.append(it.next())
    return out


# ============================================================================ errors
class SqlError(Exception):
    """A statement failure: status.state FAILED with error.message '[CLASS] ... SQLSTATE: X'."""

    def __init__(self, cls, text, sqlstate, error_code="BAD_REQUEST"):
        self.cls, self.sqlstate, self.error_code = cls, sqlstate, error_code
        msg = "[%s] %s" % (cls, text) if cls else text
        if sqlstate and "SQLSTATE" not in msg:
            msg += " SQLSTATE: %s" % sqlstate
        self.message = msg
        super().__init__(msg)


def not_found(parts):
    return SqlError("TABLE_OR_VIEW_NOT_FOUND",
                    "The table or view %s cannot be found. Verify the spelling and correctness of the schema and catalog."
                    % ".".join(quote(p) for p in parts), "42P01")


def schema_not_found(cat, sch):
    return SqlError("SCHEMA_NOT_FOUND", "The schema %s cannot be found. Verify the spelling and correctness of the schema and catalog."
                    % ".".join(quote(p) for p in (cat, sch)), "42704")


def _error_class(e):
    for getter in ("getCondition", "getErrorClass"):
        try:
            cls = getattr(e, getter)()
            if cls:
                return cls
        except Exception:  # noqa: BLE001
            pass
    return None


_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?) SQLSTATE: (\w+)", re.S)


def _raised_error(e):
    """raise_error's error inside a task failure: from the JVM cause chain, else the text."""
    texts = [str(e)]
    j, depth = getattr(e, "_origin", None) or getattr(e, "java_exception", None), 0
    while j is not None and depth < 10:
        try:
            texts.append(str(j.getMessage()))
            j = j.getCause()
        except Exception:  # noqa: BLE001
            break
        depth += 1
    for t in texts:
        m = _RAISED.search(t)
        if m:
            return SqlError("USER_RAISED_EXCEPTION", unspark(m.group(1).strip()), m.group(2))
    return None


def spark_error(e):
    """Map a pyspark exception to SqlError, turning Spark-side names back into UC names.

    A task failure wraps the error that failed the task (TASK_WRITE_FAILED around
    raise_error's USER_RAISED_EXCEPTION): Databricks reports the wrapped error, its
    class and message (the raise_error documentation), so the emulator does too."""
    if _error_class(e) == "TASK_WRITE_FAILED" or "TASK_WRITE_FAILED" in str(e):
        raised = _raised_error(e)
        if raised:
            return raised
    cls, state = None, None
    for getter in ("getCondition", "getErrorClass"):
        try:
            cls = getattr(e, getter)()
            if cls:
                break
        except Exception:  # noqa: BLE001
            pass
    try:
        state = e.getSqlState()
    except Exception:  # noqa: BLE001
        pass
    msg = str(e)
    m = re.search(r"SQLSTATE: \w+", msg)
    if m:
        msg = msg[:m.end()]
    msg = unspark(msg.strip())
    if cls and msg.startswith("[%s]" % cls):
        msg = msg[len(cls) + 2:].strip()
    if not cls:
        m = re.match(r"\[([A-Z0-9_.]+)\]\s*(.*)", msg, re.S)
        if m:
            cls, msg = m.group(1), m.group(2)
    if not cls:
        # Delta/JVM exceptions without an error class.
        jm = re.search(r"(?:Exception|Error): (.*)", msg)
        text = jm.group(1) if jm else msg
        return SqlError("INTERNAL_ERROR", text.split("\n")[0][:2000], state or "XX000", "INTERNAL_ERROR")
    return SqlError(cls, msg, state)


# ============================================================================ statements
class Statement:
    def __init__(self, sid, req, who):
        self.id = sid
        self.sql = req["statement"]
        self.req = req
        self.who = who
        self.state = "PENDING"
        self.error = None
        self.columns = None     # [(name, dataType)]
        self.rows = None        # [[str|None]]
        self.truncated = False
        self.cancel = threading.Event()
        self.done = threading.Event()
        self.created = time.time()
        self.finished = None
        self.lock = threading.Lock()
        self.spark_started = False


class Emulator:
    def __init__(self, cfg):
        self.cfg = cfg
        self.faults = Faults(cfg.faults)
        init_state = cfg.faults.get("warehouse_state", "RUNNING")
        self.warehouse = Warehouse(cfg, self.faults, init_state)
        self.spark = Spark(cfg)
        self.store = Store()
        self.statements = {}
        self.stmt_lock = threading.Lock()
        self.sem = threading.Semaphore(cfg.concurrency)
        self.reqlog = []
        self.reqlog_lock = threading.Lock()
        self.tokens = {}        # OAuth access token -> (principal, expiry)
        self.started = time.time()

    # ------------------------------------------------------------------ bootstrap
    def boot(self):
        self.spark.start()
        if not self.spark.ready.is_set():
            return
        for c in self.cfg.catalogs:
            self.create_catalog(c, self.cfg.user, if_not_exists=True)

    def create_catalog(self, cat, who, if_not_exists=False, comment=None):
        with self.store.lock:
            if cat in self.store.catalogs:
                if if_not_exists:
                    return
                raise SqlError("CATALOG_ALREADY_EXISTS", "Cannot create catalog %s because it already exists." % quote(cat), "42P04")
            self.store.catalogs[cat] = SecurableMeta(who, comment)
        self.spark.session.sql("CREATE DATABASE IF NOT EXISTS %s COMMENT 'Default schema.'" % quote(db_name(cat, "default"))).collect()
        self.store.schemas.setdefault(cat + ".default", SecurableMeta(who))

    # ------------------------------------------------------------------ submit
    def submit(self, req, who):
        sid = "01ef" + uuid.uuid4().hex[4:8] + "-" + uuid.uuid4().hex[:4] + "-" + uuid.uuid4().hex[:4] + "-" + \
            uuid.uuid4().hex[:4] + "-" + uuid.uuid4().hex[:12]
        st = Statement(sid, req, who)
        with self.stmt_lock:
            self.statements[sid] = st
        if self.warehouse.get_state() == "STOPPED" and self.faults.get("warehouse_autostart"):
            self.warehouse.start()
        threading.Thread(target=self._run, args=(st,), daemon=True, name="stmt-" + sid[:8]).start()
        return st

    def cancel(self, st):
        st.cancel.set()
        if st.spark_started and self.spark.session is not None:
            try:
                self.spark.session.sparkContext.cancelJobGroup(st.id)
            except Exception:  # noqa: BLE001
                pass

    def _finish(self, st, state, error=None):
        with st.lock:
            if st.done.is_set():
                return
            st.state = state
            st.error = error
            st.finished = time.time()
            st.done.set()

    def _run(self, st):
        try:
            # PENDING: waiting for the warehouse (and for Spark to be up).
            while True:
                if st.cancel.is_set():
                    return self._finish(st, "CANCELED")
                if self.warehouse.get_state() == "RUNNING" and self.spark.ready.is_set():
                    break
                if self.spark.error:
                    return self._finish(st, "FAILED", SqlError("INTERNAL_ERROR", "warehouse failed: " + self.spark.error, "XX000", "INTERNAL_ERROR"))
                time.sleep(0.05)
            with self.sem:
                with st.lock:
                    if st.cancel.is_set():
                        return self._finish(st, "CANCELED")
                    st.state = "RUNNING"
                lat = self.faults.get("statement_latency_ms") or 0
                if lat and st.cancel.wait(lat / 1000.0):
                    return self._finish(st, "CANCELED")
                # a long statement (the API's wait_timeout + CONTINUE): RUNNING for its time, then
                # its work runs on the table as it is then
                sp = self.faults.get("slow_pattern")
                if sp and re.search(sp, st.sql, re.I | re.S) and \
                        st.cancel.wait(float(self.faults.get("slow_seconds") or 10)):
                    return self._finish(st, "CANCELED")
                # Databricks' cancel is best effort ("may lose the race with completion"): a
                # statement matching this keeps running for its time whatever cancels arrive,
                # then finishes as if no cancel had come
                up = self.faults.get("uncancellable_pattern")
                if up and re.search(up, st.sql, re.I | re.S):
                    time.sleep(float(self.faults.get("uncancellable_seconds") or 10))
                    st.cancel.clear()
                hp = self.faults.get("hang_pattern")
                if hp and re.search(hp, st.sql, re.I | re.S):
                    st.cancel.wait()
                    return self._finish(st, "CANCELED")
                fp = self.faults.get("fail_pattern")
                if fp and re.search(fp, st.sql, re.I | re.S):
                    return self._finish(st, "FAILED", SqlError(None, self.faults.get("fail_message"), "XX000", "INTERNAL_ERROR"))
                try:
                    cols, rows = self.execute(st)
                except SqlError as e:
                    if st.cancel.is_set():
                        return self._finish(st, "CANCELED")
                    return self._finish(st, "FAILED", e)
                except Exception as e:  # noqa: BLE001
                    if st.cancel.is_set():
                        return self._finish(st, "CANCELED")
                    if hasattr(e, "getSqlState") or type(e).__module__.startswith(("pyspark", "py4j")):
                        return self._finish(st, "FAILED", spark_error(e))
                    traceback.print_exc()
                    return self._finish(st, "FAILED", SqlError("INTERNAL_ERROR", "emulator error: %s: %s" % (type(e).__name__, e), "XX000", "INTERNAL_ERROR"))
                limit = st.req.get("row_limit")
                if limit is not None and rows is not None and len(rows) > int(limit):
                    rows = rows[:int(limit)]
                    st.truncated = True
                st.columns, st.rows = cols, rows
                # A cancel that arrives after the work is done loses the race (as on Databricks).
                self._finish(st, "SUCCEEDED")
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            self._finish(st, "FAILED", SqlError("INTERNAL_ERROR", "emulator crashed", "XX000", "INTERNAL_ERROR"))

    # ------------------------------------------------------------------ execute
    def execute(self, st):
        from executor import run_statement
        return run_statement(self, st)


# ============================================================================ value formatting
def to_jsonable(v):
    if isinstance(v, (datetime.datetime,)):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v.isoformat(timespec="milliseconds")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if hasattr(v, "asDict"):
        return {k: to_jsonable(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, dict):
        return {str(k): to_jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_jsonable(x) for x in v]
    return v


def cell(v, is_ts=False):
    """JSON_ARRAY cells are strings or null."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        s = v.isoformat(timespec="milliseconds")
        return s + "Z" if is_ts else s
    if isinstance(v, (int, float, decimal.Decimal, datetime.date)):
        return str(v) if not isinstance(v, datetime.date) else v.isoformat()
    if isinstance(v, str):
        return unspark(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    return unspark(json.dumps(to_jsonable(v), ensure_ascii=False, separators=(",", ":")))


_TYPE_NAME = {"integer": "INT", "long": "LONG", "short": "SHORT", "byte": "BYTE", "string": "STRING",
              "boolean": "BOOLEAN", "double": "DOUBLE", "float": "FLOAT", "date": "DATE",
              "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP", "binary": "BINARY", "void": "NULL",
              "decimal": "DECIMAL", "array": "ARRAY", "map": "MAP", "struct": "STRUCT",
              "variant": "USER_DEFINED_TYPE", "char": "CHAR", "varchar": "STRING"}
_SQL_NAME = {"integer": "INT", "long": "BIGINT", "short": "SMALLINT", "byte": "TINYINT", "void": "VOID"}


def type_sql(dt):
    """Databricks-style type text: BIGINT, DECIMAL(10,2), ARRAY<INT>, STRUCT<a: INT>."""
    tn = dt.typeName()
    if tn == "array":
        return "ARRAY<%s>" % type_sql(dt.elementType)
    if tn == "map":
        return "MAP<%s, %s>" % (type_sql(dt.keyType), type_sql(dt.valueType))
    if tn == "struct":
        return "STRUCT<%s>" % ", ".join("%s: %s%s" % (f.name, type_sql(f.dataType), "" if f.nullable else " NOT NULL")
                                        for f in dt.fields)
    if tn == "decimal":
        return "DECIMAL(%d,%d)" % (dt.precision, dt.scale)
    return _SQL_NAME.get(tn, dt.simpleString().upper())


def type_name(dt):
    return _TYPE_NAME.get(dt.typeName(), "USER_DEFINED_TYPE")


def column_json(i, name, dt):
    c = {"name": name, "position": i, "type_name": type_name(dt), "type_text": type_sql(dt)}
    if dt.typeName() == "decimal":
        c["type_precision"], c["type_scale"] = dt.precision, dt.scale
    return c


# ============================================================================ HTTP
class ApiError(Exception):
    def __init__(self, status, code, message, headers=None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


EMU = None


def statement_json(st, chunk_rows):
    with st.lock:
        state, err = st.state, st.error
    out = {"statement_id": st.id, "status": {"state": state}}
    if state == "FAILED" and err is not None:
        out["status"]["error"] = {"error_code": err.error_code, "message": err.message}
        if err.sqlstate:
            out["status"]["sql_state"] = err.sqlstate
    if state == "SUCCEEDED":
        cols = st.columns or []
        rows = st.rows or []
        chunks = []
        for off in range(0, len(rows), chunk_rows):
            chunks.append({"chunk_index": len(chunks), "row_offset": off, "row_count": min(chunk_rows, len(rows) - off)})
        out["manifest"] = {
            "format": "JSON_ARRAY",
            "schema": {"column_count": len(cols), "columns": [column_json(i, n, dt) for i, (n, dt) in enumerate(cols)]},
            "total_chunk_count": len(chunks), "chunks": chunks, "total_row_count": len(rows),
            "truncated": st.truncated,
        }
        if chunks:
            out["result"] = chunk_json(st, 0, chunk_rows)
        else:
            out["result"] = {"row_count": 0, "row_offset": 0, "chunk_index": 0} if cols else {}
    return out


def chunk_json(st, idx, chunk_rows):
    rows = st.rows or []
    nchunks = (len(rows) + chunk_rows - 1) // chunk_rows
    if idx < 0 or idx >= max(nchunks, 1) or (nchunks == 0 and idx != 0):
        raise ApiError(400, "INVALID_PARAMETER_VALUE", "chunk_index %d is out of range [0, %d)" % (idx, nchunks))
    off = idx * chunk_rows
    data = rows[off:off + chunk_rows]
    r = {"chunk_index": idx, "row_offset": off, "row_count": len(data), "data_array": data}
    if idx + 1 < nchunks:
        r["next_chunk_index"] = idx + 1
        r["next_chunk_internal_link"] = "/api/2.0/sql/statements/%s/result/chunks/%d" % (st.id, idx + 1)
    return r


def parse_wait(v):
    if v is None:
        return 10.0
    m = re.fullmatch(r"(\d+)s", str(v))
    if not m:
        raise ApiError(400, "INVALID_PARAMETER_VALUE", "wait_timeout must be of the form '<n>s', got %r" % v)
    n = int(m.group(1))
    if n != 0 and not (5 <= n <= 50):
        raise ApiError(400, "INVALID_PARAMETER_VALUE",
                       "wait_timeout must be 0 seconds (disables wait), or between 5 seconds and 50 seconds.")
    return float(n)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "delta-warehouse-emulator"
    sys_version = ""

    def log_message(self, fmt, *args):  # quiet
        pass

    # -- plumbing
    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _send(self, status, obj, headers=None):
        body = b"" if obj is None else json.dumps(obj, ensure_ascii=False).encode()
        # logged before the answer leaves: a client that reads the log next finds its request
        self._record(status)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", self.request_id)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.status = status

    def _error(self, status, code, message, headers=None):
        self._send(status, {"error_code": code, "message": message,
                            "details": [{"@type": "type.googleapis.com/google.rpc.RequestInfo",
                                         "request_id": self.request_id, "serving_data": ""}]}, headers)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    def _handle(self, method):
        self.request_id = str(uuid.uuid4())
        self.status = 0
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, urllib.parse.parse_qs(url.query)
        raw = self._body()
        entry = {"seq": 0, "ts": time.time(), "method": method, "path": path, "request_id": self.request_id}
        self.entry, self.logged = entry, path.startswith("/_emulator/")
        try:
            if not path.startswith("/_emulator/"):
                fault = EMU.faults.take(path, method)
                if fault == "drop":
                    entry["fault"] = "dropped"
                    self._log(entry)
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                lat = EMU.faults.get("request_latency_ms") or 0
                if lat:
                    time.sleep(lat / 1000.0)
                if fault == "429":
                    entry["fault"] = "429"
                    ra = str(int(EMU.faults.get("retry_after") or 1))
                    return self._error(429, "REQUEST_LIMIT_EXCEEDED", "Too many requests. Please wait and retry. (injected)", {"Retry-After": ra})
                if fault == "503":
                    entry["fault"] = "503"
                    return self._error(503, "TEMPORARILY_UNAVAILABLE", "The service is temporarily unavailable. (injected)",
                                       {"Retry-After": str(int(EMU.faults.get("retry_after") or 1))})
            body = {}
            if raw:
                ctype = self.headers.get("Content-Type", "")
                if "application/x-www-form-urlencoded" in ctype:
                    body = {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode()).items()}
                else:
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        raise ApiError(400, "MALFORMED_REQUEST", "Request body is not valid JSON")
            from routes import route
            route(self, method, path, query, body, entry)
        except ApiError as e:
            self._error(e.status, e.code, e.message, e.headers)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            self._error(500, "INTERNAL_ERROR", "emulator error: %s: %s" % (type(e).__name__, e))
        finally:
            if self.status:
                self._record(self.status)

    def _record(self, status):
        if not self.logged:
            self.logged = True
            self.entry["status"] = status
            self._log(self.entry)

    def _log(self, entry):
        with EMU.reqlog_lock:
            entry["seq"] = len(EMU.reqlog)
            EMU.reqlog.append(entry)


def main():
    global EMU
    sys.modules["server"] = sys.modules[__name__]   # one module object for routes/executor
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    # 127.0.0.1 unless a test reaches it from a pod (e2e/node: the node's address)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    cfg = Config(args)
    EMU = Emulator(cfg)
    import routes
    routes.EMU = EMU
    import executor
    executor.EMU = EMU
    import objects
    objects.EMU = EMU
    srv = ThreadingHTTPServer((args.host, cfg.port), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda request, client_address: None   # clients hanging up are normal
    port = srv.server_address[1]
    with open(os.path.join(cfg.dir, "server.json.tmp"), "w") as f:
        json.dump({"port": port, "token": cfg.token, "warehouse_id": cfg.warehouse_id,
                   "client_id": cfg.client_id, "client_secret": cfg.client_secret, "pid": os.getpid()}, f)
    os.replace(os.path.join(cfg.dir, "server.json.tmp"), os.path.join(cfg.dir, "server.json"))
    log("listening on http://%s:%d" % (args.host, port))
    threading.Thread(target=EMU.boot, daemon=True, name="boot").start()
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
