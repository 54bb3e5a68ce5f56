"""Probe what a Spark Connect server (start.sh: Spark + Delta Lake) does with the DDL/DML the
operator may send, on path-addressed Delta tables.  Findings: FACTS.md beside this file.

Usage (a client venv with pyspark-client==4.2.0, pandas<3, pyarrow, grpcio, grpcio-status,
googleapis-common-protos):
    . DIR/env && python e2e/spark-connect/probe.py [ROOT]    # ROOT default /tmp/probe (wiped)
Prints one JSON object per statement and a summary table.  The client must run on the
server's machine: it checks table files on disk.
"""
import json
import logging
import os
import shutil
import sys
import threading
import time

# pyspark-client 4.2.0 imports pyspark.testing at connect time, which exits unless
# SPARK_HOME is set (to anything).
os.environ.setdefault("SPARK_HOME", "/nonexistent")
from pyspark.sql import SparkSession  # noqa: E402
import pyspark.sql.connect.client.core as core  # noqa: E402
from google.rpc import error_details_pb2  # noqa: E402

logging.disable(logging.CRITICAL)   # the client logs every server error as JSON otherwise

# Spy on the gRPC error the client receives (status code, ErrorInfo) to show the wire shape.
LAST = {}
_from_call = core.rpc_status.from_call


def _spy(call):
    st = _from_call(call)
    LAST.clear()
    LAST["grpc_code"] = call.code().name
    if st is not None:
        for d in st.details:
            if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                d.Unpack(info)
                LAST["reason"] = info.reason
                LAST["metadata"] = dict(info.metadata)
    return st


core.rpc_status.from_call = _spy

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/probe"
shutil.rmtree(ROOT, ignore_errors=True)
BASE = ROOT + "/main/sales"
os.makedirs(BASE)


def path(name):
    return BASE + "/" + name


def T(name):
    """delta.`<path>` with backticks in the path doubled."""
    return "delta.`%s`" % path(name).replace("`", "``")


spark = SparkSession.builder.remote(os.environ["SPARK_CONNECT_URL"]).getOrCreate()
RESULTS = []


def cell(v):
    if isinstance(v, (list, tuple)):
        return [cell(x) for x in v]
    if isinstance(v, dict):
        return {k: cell(x) for k, x in v.items()}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def q(sec, sql, cols=None, rows=8, quiet=False):
    """Run sql; record OK + rows (only `cols` if given) or ERR + condition/SQLSTATE/message."""
    t0 = time.time()
    r = {"sec": sec, "sql": sql}
    try:
        out = spark.sql(sql).collect()
        r["ok"] = True
        got = [row.asDict(recursive=True) for row in out]
        if cols:
            got = [{k: d.get(k) for k in cols} for d in got]
        r["rows"] = cell(got[:rows])
        if len(got) > rows:
            r["more_rows"] = len(got) - rows
    except Exception as e:  # noqa: BLE001
        r["ok"] = False
        r["exc"] = type(e).__name__
        cond = getattr(e, "getCondition", None)
        r["condition"] = cond() if cond else None
        st = getattr(e, "getSqlState", None)
        r["sqlstate"] = st() if st else None
        msg = str(e).split("\n\nJVM stacktrace:")[0]
        r["message"] = msg[:600]
        if LAST:
            r["wire"] = dict(LAST)
    r["ms"] = int((time.time() - t0) * 1000)
    if not quiet:
        RESULTS.append(r)
        print(json.dumps(r, ensure_ascii=False), flush=True)
    return r


def note(sec, what, value):
    r = {"sec": sec, "note": what, "value": cell(value)}
    RESULTS.append(r)
    print(json.dumps(r, ensure_ascii=False), flush=True)


def cols_of(name):
    return [(d["col_name"], d["data_type"], d["comment"])
            for d in (row.asDict() for row in spark.sql("DESCRIBE %s" % T(name)).collect())]


def detail(name, keys=("description", "properties", "minReaderVersion", "minWriterVersion",
                       "tableFeatures", "clusteringColumns", "partitionColumns")):
    d = spark.sql("DESCRIBE DETAIL %s" % T(name)).collect()[0].asDict(recursive=True)
    return {k: d.get(k) for k in keys}


CREATE = "CREATE TABLE %s (id BIGINT, name STRING) USING DELTA"

# ---------------------------------------------------------------- 0 versions, wire shape
note(0, "spark.version (client session)", spark.version)
q(0, "SELECT version() AS v")
q(0, "SELECT * FROM delta.`%s`" % path("missing"))

# ---------------------------------------------------------------- 1 ADD COLUMN
q(1, CREATE % T("t"))
q(1, "INSERT INTO %s VALUES (1, 'a'), (2, NULL)" % T("t"))
q(1, "ALTER TABLE %s ADD COLUMN x INT COMMENT 'c'" % T("t"))
q(1, "ALTER TABLE %s ADD COLUMN s STRUCT<a: INT>" % T("t"))
q(1, "ALTER TABLE %s ADD COLUMN s.b STRING COMMENT 'nested'" % T("t"))
q(1, "ALTER TABLE %s ADD COLUMNS (y INT, z STRING)" % T("t"))
q(1, "ALTER TABLE %s ADD COLUMN x INT" % T("t"))
q(1, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS x INT" % T("t"))
note(1, "DESCRIBE t", cols_of("t"))

# ---------------------------------------------------------------- 2 column mapping, RENAME/DROP
q(2, "ALTER TABLE %s RENAME COLUMN y TO y2" % T("t"))
q(2, "ALTER TABLE %s DROP COLUMN z" % T("t"))
q(2, "ALTER TABLE %s SET TBLPROPERTIES ('delta.columnMapping.mode'='name', "
     "'delta.minReaderVersion'='2', 'delta.minWriterVersion'='5')" % T("t"))
q(2, "ALTER TABLE %s RENAME COLUMN y TO y2" % T("t"))
q(2, "ALTER TABLE %s DROP COLUMN z" % T("t"))
q(2, "ALTER TABLE %s DROP COLUMNS (y2)" % T("t"))
q(2, "ALTER TABLE %s DROP COLUMN IF EXISTS nope" % T("t"))
q(2, "ALTER TABLE %s RENAME COLUMN s.b TO b2" % T("t"))
note(2, "DESCRIBE t", cols_of("t"))
note(2, "DESCRIBE DETAIL t", detail("t"))

# ---------------------------------------------------------------- 3 type widening
q(3, CREATE % T("t3"))
q(3, "ALTER TABLE %s ADD COLUMN x INT" % T("t3"))
q(3, "ALTER TABLE %s ALTER COLUMN x TYPE BIGINT" % T("t3"))
q(3, "ALTER TABLE %s SET TBLPROPERTIES ('delta.enableTypeWidening'='true')" % T("t"))
q(3, "ALTER TABLE %s ALTER COLUMN x TYPE BIGINT" % T("t"))
q(3, "ALTER TABLE %s ALTER COLUMN x TYPE INT" % T("t"))
q(3, "ALTER TABLE %s ALTER COLUMN name TYPE INT" % T("t"))
q(3, "ALTER TABLE %s CHANGE COLUMN x x BIGINT" % T("t"))
note(3, "DESCRIBE DETAIL t", detail("t", ("properties", "tableFeatures")))

# ---------------------------------------------------------------- 4 NOT NULL
q(4, CREATE % T("t4"))
q(4, "ALTER TABLE %s ALTER COLUMN name SET NOT NULL" % T("t4"))
q(4, "INSERT INTO %s VALUES (1, 'a')" % T("t4"))
q(4, "ALTER TABLE %s ALTER COLUMN name SET NOT NULL" % T("t4"))
q(4, "ALTER TABLE %s ALTER COLUMN name SET NOT NULL" % T("t"))   # t has a NULL name
q(4, "CREATE TABLE %s (id BIGINT NOT NULL, name STRING) USING DELTA" % T("t4nn"))
q(4, "INSERT INTO %s VALUES (NULL, 'a')" % T("t4nn"))
q(4, "ALTER TABLE %s ALTER COLUMN id DROP NOT NULL" % T("t4nn"))
q(4, "ALTER TABLE %s ALTER COLUMN id DROP NOT NULL" % T("t4nn"))
q(4, "ALTER TABLE %s ALTER COLUMN id SET NOT NULL" % T("t4nn"))
note(4, "DESCRIBE t4nn", cols_of("t4nn"))

# ---------------------------------------------------------------- 5 CHECK constraints
q(5, "ALTER TABLE %s ADD CONSTRAINT c CHECK (id > 0)" % T("t"))
q(5, "ALTER TABLE %s ADD CONSTRAINT c CHECK (id > 0)" % T("t"))
q(5, "INSERT INTO %s (id, name) VALUES (-1, 'neg')" % T("t"))
q(5, "ALTER TABLE %s ADD CONSTRAINT c2 CHECK (id > 1)" % T("t"))
note(5, "DESCRIBE DETAIL t properties", detail("t", ("properties",)))
q(5, "SHOW TBLPROPERTIES %s" % T("t"), rows=40)
q(5, "ALTER TABLE %s DROP CONSTRAINT IF EXISTS c" % T("t"))
q(5, "ALTER TABLE %s DROP CONSTRAINT IF EXISTS c" % T("t"))
q(5, "ALTER TABLE %s DROP CONSTRAINT c" % T("t"))

# ---------------------------------------------------------------- 6 comments
q(6, "COMMENT ON TABLE %s IS 'x'" % T("t"))
q(6, "ALTER TABLE %s ALTER COLUMN name COMMENT 'y'" % T("t"))
q(6, "COMMENT ON COLUMN %s.name IS 'y2'" % T("t"))
note(6, "DESCRIBE DETAIL t", detail("t", ("description", "properties")))
q(6, "SHOW TBLPROPERTIES %s" % T("t"), rows=40)
q(6, "DESCRIBE TABLE EXTENDED %s" % T("t"), rows=40)
q(6, "ALTER TABLE %s SET TBLPROPERTIES ('comment'='via property')" % T("t"))
note(6, "DESCRIBE DETAIL t after SET TBLPROPERTIES comment", detail("t", ("description", "properties")))
q(6, "COMMENT ON TABLE %s IS NULL" % T("t"))
note(6, "DESCRIBE DETAIL t after COMMENT IS NULL", detail("t", ("description",)))
q(6, "COMMENT ON TABLE %s IS 'x'" % T("t"))
note(6, "DESCRIBE t", cols_of("t"))

# ---------------------------------------------------------------- 7 liquid clustering
q(7, CREATE % T("t7"))
q(7, "ALTER TABLE %s CLUSTER BY (id)" % T("t7"))
note(7, "DESCRIBE DETAIL t7", detail("t7", ("clusteringColumns", "tableFeatures", "minWriterVersion")))
q(7, "ALTER TABLE %s CLUSTER BY (id, name)" % T("t7"))
q(7, "ALTER TABLE %s CLUSTER BY NONE" % T("t7"))
note(7, "DESCRIBE DETAIL t7 after NONE", detail("t7", ("clusteringColumns", "tableFeatures")))
q(7, "CREATE TABLE %s (id BIGINT, name STRING) USING DELTA CLUSTER BY (id)" % T("p2"))
note(7, "DESCRIBE DETAIL p2", detail("p2", ("clusteringColumns", "tableFeatures", "minWriterVersion")))
q(7, "CREATE TABLE %s (id BIGINT, name STRING) USING DELTA PARTITIONED BY (name) CLUSTER BY (id)" % T("p2b"))
q(7, "CREATE TABLE %s (id BIGINT, name STRING) USING DELTA PARTITIONED BY (name)" % T("p2c"))
q(7, "ALTER TABLE %s CLUSTER BY (id)" % T("p2c"))
q(7, "CREATE TABLE %s (id BIGINT, m MAP<STRING,INT>) USING DELTA CLUSTER BY (m)" % T("p2d"))
q(7, "OPTIMIZE %s" % T("p2"))
q(7, "ALTER TABLE %s CLUSTER BY AUTO" % T("p2"))

# ---------------------------------------------------------------- 8 identity, generated, defaults
q(8, "CREATE TABLE %s (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1), "
     "name STRING) USING DELTA" % T("t8id"))
q(8, "INSERT INTO %s (name) VALUES ('a'), ('b')" % T("t8id"))
q(8, "INSERT INTO %s (id, name) VALUES (10, 'c')" % T("t8id"))
q(8, "SELECT * FROM %s ORDER BY id" % T("t8id"))
q(8, "CREATE TABLE %s (id BIGINT GENERATED BY DEFAULT AS IDENTITY, name STRING) USING DELTA" % T("t8idd"))
q(8, "INSERT INTO %s (id, name) VALUES (10, 'c')" % T("t8idd"))
q(8, "ALTER TABLE %s ADD COLUMN id2 BIGINT GENERATED ALWAYS AS IDENTITY" % T("t8id"))
q(8, "ALTER TABLE %s ALTER COLUMN id SYNC IDENTITY" % T("t8idd"))
note(8, "DESCRIBE DETAIL t8id", detail("t8id", ("tableFeatures", "minWriterVersion")))
q(8, "SHOW CREATE TABLE %s" % T("t8id"))
q(8, "CREATE TABLE %s (id BIGINT, d DATE GENERATED ALWAYS AS (CAST('2024-01-01' AS DATE)), "
     "id2 BIGINT GENERATED ALWAYS AS (id * 2)) USING DELTA" % T("t8gen"))
q(8, "INSERT INTO %s (id) VALUES (3)" % T("t8gen"))
q(8, "SELECT * FROM %s" % T("t8gen"))
q(8, "INSERT INTO %s (id, id2) VALUES (4, 9)" % T("t8gen"))
q(8, "ALTER TABLE %s ADD COLUMN g BIGINT GENERATED ALWAYS AS (id + 1)" % T("t8gen"))
q(8, "CREATE TABLE %s (id BIGINT, name STRING DEFAULT 'dflt') USING DELTA" % T("t8def0"))
q(8, "CREATE TABLE %s (id BIGINT, name STRING DEFAULT 'dflt') USING DELTA "
     "TBLPROPERTIES ('delta.feature.allowColumnDefaults'='supported')" % T("t8def"))
q(8, "INSERT INTO %s (id) VALUES (1)" % T("t8def"))
q(8, "ALTER TABLE %s ALTER COLUMN name SET DEFAULT 'other'" % T("t8def"))
q(8, "INSERT INTO %s (id) VALUES (2)" % T("t8def"))
q(8, "SELECT * FROM %s ORDER BY id" % T("t8def"))
q(8, "ALTER TABLE %s ALTER COLUMN name DROP DEFAULT" % T("t8def"))
q(8, "ALTER TABLE %s ALTER COLUMN name SET DEFAULT 'z'" % T("t3"))   # feature not enabled
q(8, "ALTER TABLE %s SET TBLPROPERTIES ('delta.feature.allowColumnDefaults'='supported')" % T("t3"))
q(8, "ALTER TABLE %s ALTER COLUMN name SET DEFAULT 'z'" % T("t3"))
q(8, "ALTER TABLE %s ADD COLUMN w INT DEFAULT 7" % T("t3"))
q(8, "DESCRIBE TABLE EXTENDED %s" % T("t8def"), rows=30)

# ---------------------------------------------------------------- 9 replace, stage, restore, clone
q(9, "DESCRIBE HISTORY %s" % T("t"), cols=["version", "operation"], rows=40)
q(9, "CREATE OR REPLACE TABLE %s USING DELTA TBLPROPERTIES ('delta.enableTypeWidening'='true', "
     "'foo'='bar') AS SELECT id, name, x FROM %s" % (T("t"), T("t")))
q(9, "SELECT * FROM %s ORDER BY id" % T("t"))
note(9, "DESCRIBE t after CORT", cols_of("t"))
note(9, "DESCRIBE DETAIL t after CORT", detail("t"))
q(9, "CREATE TABLE %s USING DELTA AS SELECT * FROM %s VERSION AS OF 3" % (T("t_stage"), T("t")))
q(9, "SELECT * FROM %s" % T("t_stage"))
q(9, "CREATE TABLE %s USING DELTA AS SELECT * FROM %s VERSION AS OF 3" % (T("t_stage"), T("t")))
q(9, "RESTORE TABLE %s TO VERSION AS OF 1" % T("t"))
q(9, "SELECT * FROM %s ORDER BY id" % T("t"))
q(9, "CREATE TABLE IF NOT EXISTS %s SHALLOW CLONE %s" % (T("t_clone"), T("t")))
q(9, "CREATE TABLE IF NOT EXISTS %s SHALLOW CLONE %s" % (T("t_clone"), T("t")))
q(9, "CREATE OR REPLACE TABLE %s SHALLOW CLONE %s VERSION AS OF 0" % (T("t_clone"), T("t")))
q(9, "CREATE TABLE IF NOT EXISTS %s DEEP CLONE %s" % (T("t_deep"), T("t")))
q(9, "DESCRIBE HISTORY %s LIMIT 1" % T("t"))
q(9, "DESCRIBE DETAIL %s" % T("t"))
q(9, "ALTER TABLE %s ADD COLUMN x INT" % T("t"))   # RESTORE to v1 dropped x? (v1 = INSERT)
q(9, "UPDATE %s SET x = (1) WHERE x IS NULL" % T("t"))
q(9, "SELECT * FROM %s ORDER BY id" % T("t"))
q(9, "REPLACE TABLE %s (id BIGINT, name STRING) USING DELTA" % T("t_clone"))
q(9, "REPLACE TABLE %s (id BIGINT) USING DELTA" % T("never"))

# ---------------------------------------------------------------- 10 DROP TABLE on a path
note(10, "t_stage exists on disk before DROP", os.path.isdir(path("t_stage") + "/_delta_log"))
q(10, "DROP TABLE IF EXISTS %s" % T("t_stage"))
note(10, "t_stage exists on disk after DROP", os.path.exists(path("t_stage")))
q(10, "DROP TABLE %s" % T("t_deep"))
q(10, "DROP TABLE IF EXISTS %s" % T("never"))
q(10, "SELECT count(*) AS n FROM %s" % T("t_stage"))

# ---------------------------------------------------------------- 11 raise_error
q(11, "SELECT CASE WHEN count(*) > 0 THEN raise_error('msg: table is not empty') ELSE 1 END "
      "AS chk FROM %s" % T("t"))
q(11, "SELECT CASE WHEN 1 = 0 THEN raise_error('never') ELSE 1 END AS chk")
q(11, "SELECT raise_error('USER_RAISED_EXCEPTION', map('errorMessage', 'custom'))")

# ---------------------------------------------------------------- 12 try_cast, time travel
q(12, "SELECT try_cast('abc' AS INT) AS v")
q(12, "SELECT cast('abc' AS INT) AS v")
q(12, "SELECT count(*) AS n FROM %s VERSION AS OF 0" % T("t"))
q(12, "SELECT count(*) AS n FROM %s VERSION AS OF 999" % T("t"))
q(12, "SELECT count(*) AS n FROM %s TIMESTAMP AS OF '2000-01-01'" % T("t"))

# ---------------------------------------------------------------- 13 odd paths
q(13, CREATE % T("t sp"))
q(13, "INSERT INTO %s VALUES (1, 'a')" % T("t sp"))
q(13, "SELECT count(*) AS n FROM %s" % T("t sp"))
q(13, "DESCRIBE DETAIL %s" % T("t sp"), cols=["location", "name"])
note(13, "dirs on disk", sorted(os.listdir(BASE)))
q(13, CREATE % T("t`bt"))
q(13, "SELECT count(*) AS n FROM %s" % T("t`bt"))
q(13, "DESCRIBE DETAIL %s" % T("t`bt"), cols=["location"])
q(13, CREATE % ("delta.`%s`" % path("t%20pct")))
q(13, "DESCRIBE DETAIL delta.`%s`" % path("t%20pct"), cols=["location"])
q(13, "CREATE TABLE delta.`relative/rel` (id INT) USING DELTA")
q(13, "DESCRIBE DETAIL delta.`relative/rel`", cols=["location"])
q(13, "CREATE TABLE delta.`file://%s` (id INT) USING DELTA" % path("t_uri"))
q(13, "SELECT count(*) AS n FROM delta.`%s`" % path("t_uri"))
note(13, "dirs on disk", sorted(os.listdir(BASE)))

# ---------------------------------------------------------------- 14 tags + interrupt
big = T("big")
res = {}


def long_ctas():
    spark.addTag("t1")   # tags are per thread in the Python client
    res["tags"] = sorted(spark.getTags())
    res["r"] = q(14, "CREATE OR REPLACE TABLE %s USING DELTA AS SELECT id, cast(id AS STRING) AS s, "
                     "sha2(cast(id AS STRING), 256) AS h FROM range(0, 200000000)" % big, quiet=True)


th = threading.Thread(target=long_ctas)
t0 = time.time()
th.start()
time.sleep(6)
interrupted = spark.interruptTag("t1")
note(14, "interruptTag('t1') after 6 s returned (operation ids)", interrupted)
th.join(120)
note(14, "tags in the running thread", res.get("tags"))
r = res.get("r", {})
r["sql"] = r.get("sql", "")[:90] + "..."
RESULTS.append(r)
print(json.dumps(r, ensure_ascii=False), flush=True)
note(14, "seconds until the CTAS call returned", round(time.time() - t0, 1))
note(14, "big has a _delta_log after the interrupt", os.path.isdir(path("big") + "/_delta_log"))
q(14, "SELECT 1 AS still_usable")
note(14, "interruptTag('nope') (no such tag)", spark.interruptTag("nope"))


# ---------------------------------------------------------------- 15 existence, leftovers
def listing(name):
    out = []
    for d, _, fs in os.walk(path(name)):
        out += [os.path.relpath(os.path.join(d, f), path(name)) for f in fs if not f.startswith(".")]
        if not fs and d != path(name):
            out.append(os.path.relpath(d, path(name)) + "/")
    return sorted(out)


note(15, "big (interrupted CTAS) files", listing("big"))
q(15, "SELECT count(*) AS n FROM %s" % T("big"))
q(15, "CREATE TABLE %s (id BIGINT) USING DELTA" % T("big"))
note(15, "t8def0 (failed CREATE) files", listing("t8def0"))
q(15, "CREATE TABLE %s (id BIGINT) USING DELTA" % T("t8def0"))
q(15, "CREATE TABLE IF NOT EXISTS %s (id BIGINT) USING DELTA" % T("t8def0"))
q(15, "SELECT count(*) AS n FROM %s" % T("t8def0"))
q(15, "DESCRIBE DETAIL %s" % T("t8def0"), cols=["format", "id", "location"])
q(15, "DROP TABLE IF EXISTS %s" % T("t8def0"))
q(15, "CREATE OR REPLACE TABLE %s (id BIGINT) USING DELTA" % T("big"))
q(15, "SELECT count(*) AS n FROM %s" % T("big"))
os.makedirs(path("emptydir"))
q(15, "CREATE TABLE %s (id BIGINT) USING DELTA" % T("emptydir"))
os.makedirs(path("plaindir"))
open(path("plaindir") + "/f.txt", "w").write("x")
q(15, "CREATE TABLE %s (id BIGINT) USING DELTA" % T("plaindir"))
q(15, "CREATE TABLE %s (id BIGINT, name STRING) USING DELTA" % T("t"))
q(15, "CREATE TABLE IF NOT EXISTS %s (id BIGINT, name STRING) USING DELTA" % T("t"))
q(15, "CREATE TABLE IF NOT EXISTS %s (other INT) USING DELTA" % T("t"))
q(15, "CREATE TABLE IF NOT EXISTS %s USING DELTA AS SELECT 1 AS id" % T("t"))
q(15, "CREATE TABLE IF NOT EXISTS %s SHALLOW CLONE %s" % (T("t_clone2"), T("t7")))
note(15, "t_clone2 files after 1st clone", listing("t_clone2"))
q(15, "CREATE TABLE IF NOT EXISTS %s SHALLOW CLONE %s" % (T("t_clone2"), T("t7")))
q(15, "DROP TABLE %s" % T("t_stage"))
note(15, "t_stage exists on disk after DROP TABLE (no IF EXISTS)", os.path.exists(path("t_stage")))
q(15, "SHOW TBLPROPERTIES %s ('delta.enableTypeWidening')" % T("t"))
q(15, "SET spark.connect.session.manager.defaultSessionTimeout")
q(15, "SET spark.sql.ansi.enabled")
q(15, "DESCRIBE DETAIL %s" % T("missing"))
q(15, "DESCRIBE HISTORY %s" % T("missing"))

# ---------------------------------------------------------------- summary
print("\n| sec | statement | result |")
print("|---|---|---|")
for r in RESULTS:
    if "note" in r:
        continue
    s = r["sql"].replace(ROOT, "…").replace("|", "\\|")
    s = s if len(s) < 110 else s[:107] + "..."
    res_s = "OK" if r["ok"] else "%s %s" % (r.get("condition"), r.get("sqlstate"))
    print("| %s | `%s` | %s |" % (r["sec"], s, res_s))
spark.stop()
