"""Tests of the warehouse emulator over HTTP (urllib only); the fixture is conftest.py's."""
import base64
import http.client
import json
import time
import urllib.error
import urllib.request
import uuid

import pytest

from conftest import TIMINGS, uniq


def test_health_and_spark_started(wh):
    h = wh.admin("GET", "/_emulator/health")
    TIMINGS["spark start (s)"] = h["spark_start_seconds"]
    assert h["spark"] == "ready"


def test_auth_pat_and_oauth(wh):
    s, r, hdr = wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid, token=False)
    assert s == 401 and r["error_code"] == "UNAUTHENTICATED" and "x-request-id" in {k.lower() for k in hdr}
    assert wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid, token="nope")[0] == 403
    basic = base64.b64encode(("%s:%s" % (wh.cid, wh.csec)).encode()).decode()
    req = urllib.request.Request(wh.url + "/oidc/v1/token", data=b"grant_type=client_credentials&scope=all-apis",
                                 headers={"Authorization": "Basic " + basic,
                                          "Content-Type": "application/x-www-form-urlencoded"})
    tok = json.loads(urllib.request.urlopen(req).read())
    assert tok["token_type"] == "Bearer" and tok["expires_in"] > 0
    s, r, _ = wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid, token=tok["access_token"])
    assert s == 200 and r["state"] == "RUNNING"
    bad = urllib.request.Request(wh.url + "/oidc/v1/token", data=b"grant_type=client_credentials",
                                 headers={"Authorization": "Basic " + base64.b64encode(b"x:y").decode(),
                                          "Content-Type": "application/x-www-form-urlencoded"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad)
    assert e.value.code == 401 and json.loads(e.value.read())["error"] == "invalid_client"


def test_create_schema_managed_location_is_the_storage_root(wh):
    # Unity Catalog's MANAGED LOCATION (Spark has only LOCATION): emulated, see executor.take_managed_location
    sch = uniq()
    loc = "s3://bucket/it's/%s" % sch
    wh.sql("CREATE SCHEMA IF NOT EXISTS main.%s COMMENT 'c' MANAGED LOCATION 's3://bucket/it''s/%s' "
           "WITH DBPROPERTIES ('k' = 'v')" % (sch, sch))
    s, si, _ = wh.call("GET", "/api/2.1/unity-catalog/schemas/main.%s" % sch)
    assert s == 200, si
    assert si["storage_root"] == loc and si["comment"] == "c" and si["properties"] == {"k": "v"}
    # IF NOT EXISTS on a live schema changes nothing, its location included
    wh.sql("CREATE SCHEMA IF NOT EXISTS main.%s MANAGED LOCATION 's3://elsewhere/x'" % sch)
    assert wh.call("GET", "/api/2.1/unity-catalog/schemas/main.%s" % sch)[1]["storage_root"] == loc


def test_ddl_roundtrip_and_odd_names(wh):
    sch = uniq()
    wh.sql("CREATE SCHEMA main.%s COMMENT 'schéma'" % sch)
    t = "main.%s.`Odd ``name`` ü-1`" % sch
    wh.sql("CREATE TABLE %s (id BIGINT NOT NULL, v INT, `we ird` STRING COMMENT 'it''s \\\\ ü') USING DELTA "
           "TBLPROPERTIES ('delta.enableTypeWidening'='true', 'delta.columnMapping.mode'='name', 'k''ey ü'='v`al') "
           "COMMENT 'tab''le ü'" % t)
    wh.sql("INSERT INTO %s VALUES (1, 10, 'a'), (2, 20, NULL), (3, 30, 'c')" % t)
    rows, r = wh.sql("SELECT id, v, `we ird` FROM %s ORDER BY id" % t)
    assert rows == [["1", "10", "a"], ["2", "20", None], ["3", "30", "c"]]
    cols = r["manifest"]["schema"]["columns"]
    assert [c["type_name"] for c in cols] == ["LONG", "INT", "STRING"]
    # chunking: chunk_rows=2 -> two chunks
    assert r["manifest"]["total_chunk_count"] == 2 and r["manifest"]["total_row_count"] == 3
    assert r["result"]["next_chunk_index"] == 1
    # names round-trip exactly (UC lower-cases table names)
    s, ti, _ = wh.call("GET", "/api/2.1/unity-catalog/tables/" + urllib.request.quote("main.%s.odd `name` ü-1" % sch, safe=""))
    assert s == 200, ti
    assert ti["name"] == "odd `name` ü-1" and ti["comment"] == "tab'le ü"
    assert ti["properties"]["k'ey ü"] == "v`al"
    assert [c["name"] for c in ti["columns"]] == ["id", "v", "we ird"]
    assert ti["columns"][2]["comment"] == "it's \\ ü"
    assert ti["columns"][0]["nullable"] is False and ti["table_type"] == "MANAGED"
    # ALTER ADD COLUMN, type widening, column-mapping rename
    wh.sql("ALTER TABLE %s ADD COLUMNS (extra DECIMAL(10,2) COMMENT 'x')" % t)
    wh.sql("ALTER TABLE %s ALTER COLUMN v TYPE BIGINT" % t)
    wh.sql("ALTER TABLE %s RENAME COLUMN `we ird` TO renamed" % t)
    ti = wh.call("GET", "/api/2.1/unity-catalog/tables/main.%s.odd%%20%%60name%%60%%20%%C3%%BC-1" % sch)[1]
    assert [(c["name"], c["type_text"]) for c in ti["columns"]] == [
        ("id", "bigint"), ("v", "bigint"), ("renamed", "string"), ("extra", "decimal(10,2)")]
    st = wh.fail("ALTER TABLE %s ALTER COLUMN v TYPE INT" % t)
    assert st["error"]["message"].startswith("[") and "SQLSTATE" in st["error"]["message"] and st.get("sql_state")
    # describe detail names are UC names
    rows, _ = wh.sql("DESCRIBE DETAIL %s" % t)
    assert rows[0][2] == "main.%s.odd `name` ü-1" % sch


def test_restore_clone_history(wh):
    sch = uniq()
    wh.sql("CREATE SCHEMA main.%s" % sch)
    wh.sql("CREATE TABLE main.%s.t (a INT) USING DELTA" % sch)
    wh.sql("INSERT INTO main.%s.t VALUES (1)" % sch)
    wh.sql("INSERT INTO main.%s.t VALUES (2)" % sch)
    rows, _ = wh.sql("DESCRIBE HISTORY main.%s.t LIMIT 1" % sch)
    assert rows[0][0] == "2"
    wh.sql("RESTORE TABLE main.%s.t TO VERSION AS OF 1" % sch)
    assert wh.sql("SELECT count(*) FROM main.%s.t" % sch)[0] == [["1"]]
    wh.sql("CREATE TABLE main.%s.c SHALLOW CLONE main.%s.t" % (sch, sch))
    assert wh.sql("SELECT a FROM main.%s.c" % sch)[0] == [["1"]]
    # catalog/schema request fields, 1-part names and named parameters
    rows, _ = wh.sql("SELECT a FROM t WHERE a = :x", catalog="main", schema=sch,
                     parameters=[{"name": "x", "value": "1", "type": "INT"}])
    assert rows == [["1"]]
    rows, _ = wh.sql("SELECT count(*) FROM IDENTIFIER(:t)", parameters=[{"name": "t", "value": "main.%s.c" % sch}])
    assert rows == [["1"]]


def test_tags_grants_constraints_information_schema(wh):
    sch = uniq()
    wh.sql("CREATE SCHEMA main.%s" % sch)
    wh.sql("CREATE TABLE main.%s.p (id BIGINT NOT NULL, name STRING) USING DELTA" % sch)
    wh.sql("CREATE TABLE main.%s.c (id BIGINT NOT NULL, pid BIGINT) USING DELTA" % sch)
    wh.sql("ALTER TABLE main.%s.p SET TAGS ('domain' = 'sales', 'o''k' = 'ü')" % sch)
    wh.sql("ALTER TABLE main.%s.p ALTER COLUMN name SET TAGS ('pii' = 'name')" % sch)
    wh.sql("GRANT SELECT, MODIFY ON TABLE main.%s.p TO `analysts`" % sch)
    wh.sql("REVOKE MODIFY ON TABLE main.%s.p FROM `analysts`" % sch)
    wh.sql("ALTER TABLE main.%s.p ADD CONSTRAINT P_PK PRIMARY KEY (id)" % sch)
    wh.sql("ALTER TABLE main.%s.c ADD CONSTRAINT c_fk FOREIGN KEY (pid) REFERENCES main.%s.p" % (sch, sch))
    wh.sql("ALTER TABLE main.%s.p OWNER TO `owners`" % sch)
    wh.sql("ALTER TABLE main.%s.p ADD CONSTRAINT positive CHECK (id > 0)" % sch)   # real Delta
    st = wh.fail("ALTER TABLE main.%s.c ADD PRIMARY KEY (pid)" % sch)                   # nullable
    assert "nullable" in st["error"]["message"]
    rows, _ = wh.sql("SELECT table_name, tag_name, tag_value FROM main.information_schema.table_tags "
                     "WHERE schema_name = '%s' ORDER BY tag_name" % sch)
    assert rows == [["p", "domain", "sales"], ["p", "o'k", "ü"]]
    rows, _ = wh.sql("SELECT column_name, tag_name, tag_value FROM main.information_schema.column_tags "
                     "WHERE schema_name = '%s'" % sch)
    assert rows == [["name", "pii", "name"]]
    rows, _ = wh.sql("SELECT grantee, privilege_type FROM main.information_schema.table_privileges "
                     "WHERE table_schema = '%s'" % sch)
    assert rows == [["analysts", "SELECT"]]
    rows, _ = wh.sql("SELECT tc.constraint_name, tc.constraint_type, k.column_name FROM main.information_schema.table_constraints tc "
                     "JOIN main.information_schema.key_column_usage k ON tc.constraint_name = k.constraint_name "
                     "WHERE tc.table_schema = '%s' ORDER BY 1" % sch)
    assert rows == [["c_fk", "FOREIGN KEY", "pid"], ["p_pk", "PRIMARY KEY", "id"]]
    rows, _ = wh.sql("SELECT table_name, table_owner FROM main.information_schema.tables WHERE table_schema = '%s' ORDER BY 1" % sch)
    assert rows == [["c", "emulator-user@example.com"], ["p", "owners"]]
    rows, _ = wh.sql("SELECT column_name, ordinal_position, data_type FROM main.information_schema.columns "
                     "WHERE table_schema = '%s' AND table_name = 'p'" % sch)
    assert rows == [["id", "0", "LONG"], ["name", "1", "STRING"]]
    # REST views of the same metadata
    ti = wh.call("GET", "/api/2.1/unity-catalog/tables/main.%s.p" % sch)[1]
    assert ti["owner"] == "owners" and ti["properties"]["delta.constraints.positive"] == "id > 0"
    assert ti["table_constraints"] == [{"primary_key_constraint": {"name": "p_pk", "child_columns": ["id"]}}]
    perms = wh.call("GET", "/api/2.1/unity-catalog/permissions/table/main.%s.p" % sch)[1]
    assert perms == {"privilege_assignments": [{"principal": "analysts", "privileges": ["SELECT"]}]}
    tags = wh.call("GET", "/api/2.1/unity-catalog/entity-tag-assignments/columns/main.%s.p.name/tags" % sch)[1]
    assert tags["tag_assignments"][0]["tag_key"] == "pii"
    # DROP PRIMARY KEY is RESTRICT while an FK references it
    wh.fail("ALTER TABLE main.%s.p DROP PRIMARY KEY" % sch)
    # RENAME COLUMN drops the PK and the FKs that reference it (as UC does)
    st = wh.fail("ALTER TABLE main.%s.p RENAME COLUMN id TO pk_id" % sch)   # Delta: needs column mapping
    wh.sql("ALTER TABLE main.%s.p DROP CONSTRAINT positive" % sch)        # a CHECK would block the rename
    wh.sql("ALTER TABLE main.%s.p SET TBLPROPERTIES ('delta.columnMapping.mode'='name')" % sch)
    wh.sql("ALTER TABLE main.%s.p RENAME COLUMN id TO pk_id" % sch)
    ti = wh.call("GET", "/api/2.1/unity-catalog/tables/main.%s.c" % sch)[1]
    assert "table_constraints" not in ti
    # CREATE OR REPLACE keeps tags/grants/owner, drops PK/FK
    wh.sql("CREATE OR REPLACE TABLE main.%s.p (pk_id BIGINT NOT NULL, name STRING) USING DELTA" % sch)
    ti = wh.call("GET", "/api/2.1/unity-catalog/tables/main.%s.p" % sch)[1]
    assert ti["owner"] == "owners"
    rows, _ = wh.sql("SELECT count(*) FROM main.information_schema.table_tags WHERE schema_name = '%s'" % sch)
    assert rows == [["2"]]
    # DESCRIBE ... AS JSON (emulated)
    rows, _ = wh.sql("DESCRIBE TABLE EXTENDED main.%s.p AS JSON" % sch)
    d = json.loads(rows[0][0])
    assert d["owner"] == "owners" and [c["name"] for c in d["columns"]] == ["pk_id", "name"]


def test_drop_undrop_rename_and_listing(wh):
    sch = uniq()
    wh.sql("CREATE SCHEMA main.%s" % sch)
    for i in range(5):
        wh.sql("CREATE TABLE main.%s.t%d (a INT) USING DELTA" % (sch, i))
    wh.sql("INSERT INTO main.%s.t0 VALUES (7)" % sch)
    wh.sql("GRANT SELECT ON TABLE main.%s.t0 TO `x`" % sch)
    wh.sql("DROP TABLE main.%s.t0" % sch)
    wh.fail("SELECT * FROM main.%s.t0" % sch)
    rows, _ = wh.sql("SHOW TABLES IN main.%s" % sch)
    assert sorted(r[1] for r in rows) == ["t1", "t2", "t3", "t4"] and rows[0][0] == sch
    wh.sql("UNDROP TABLE main.%s.t0" % sch)
    assert wh.sql("SELECT a FROM main.%s.t0" % sch)[0] == [["7"]]
    assert wh.call("GET", "/api/2.1/unity-catalog/permissions/table/main.%s.t0" % sch)[1]["privilege_assignments"]
    wh.sql("ALTER TABLE main.%s.t0 RENAME TO main.%s.renamed" % (sch, sch))
    assert wh.call("GET", "/api/2.1/unity-catalog/permissions/table/main.%s.renamed" % sch)[1]["privilege_assignments"]
    s, r, _ = wh.call("GET", "/api/2.1/unity-catalog/tables/main.%s.t0" % sch)
    assert s == 404 and r["error_code"] == "TABLE_DOES_NOT_EXIST"
    names, tok = [], None
    while True:
        q = "/api/2.1/unity-catalog/tables?catalog_name=main&schema_name=%s&max_results=2&omit_columns=true" % sch
        s, r, _ = wh.call("GET", q + ("&page_token=" + tok if tok else ""))
        names += [t["name"] for t in r["tables"]]
        tok = r.get("next_page_token")
        if not tok:
            break
    assert names == ["renamed", "t1", "t2", "t3", "t4"]
    assert wh.call("GET", "/api/2.1/unity-catalog/schemas/main.%s" % sch)[1]["name"] == sch


def test_wait_timeout_and_cancel(wh):
    wh.admin("POST", "/_emulator/faults", {"hang_pattern": "hang_me"})
    try:
        r = wh.submit("SELECT 'hang_me'", wait="0s")
        assert r["status"]["state"] in ("PENDING", "RUNNING")
        t0 = time.time()
        r = wh.submit("SELECT 'hang_me'", wait="5s")
        assert 4.5 < time.time() - t0 < 10 and r["status"]["state"] == "RUNNING"
        assert wh.call("POST", "/api/2.0/sql/statements/%s/cancel" % r["statement_id"])[0] == 200
        assert wh.wait(r)["status"]["state"] == "CANCELED"
        r = wh.submit("SELECT 'hang_me'", wait="5s", on_wait_timeout="CANCEL")
        assert r["status"]["state"] == "CANCELED"
        s, e, _ = wh.call("POST", "/api/2.0/sql/statements", {"warehouse_id": wh.wid, "statement": "SELECT 1", "wait_timeout": "3s"})
        assert s == 400 and e["error_code"] == "INVALID_PARAMETER_VALUE"
    finally:
        wh.admin("POST", "/_emulator/faults", {"hang_pattern": None})


def test_a_cancel_can_lose_the_race(wh):
    wh.admin("POST", "/_emulator/faults", {"uncancellable_pattern": "keeps_going", "uncancellable_seconds": 3})
    try:
        r = wh.submit("SELECT 'keeps_going'", wait="0s")
        assert wh.call("POST", "/api/2.0/sql/statements/%s/cancel" % r["statement_id"])[0] == 200
        s, now, _ = wh.call("GET", "/api/2.0/sql/statements/%s" % r["statement_id"])
        assert s == 200 and now["status"]["state"] in ("PENDING", "RUNNING")
        assert wh.wait(r)["status"]["state"] == "SUCCEEDED"
    finally:
        wh.admin("POST", "/_emulator/faults", {"uncancellable_pattern": None})


def test_a_slow_statement_runs_then_does_its_work(wh):
    wh.admin("POST", "/_emulator/faults", {"slow_pattern": "takes_a_while", "slow_seconds": 3})
    try:
        t0 = time.time()
        r = wh.submit("SELECT 'takes_a_while'", wait="0s")
        s, now, _ = wh.call("GET", "/api/2.0/sql/statements/%s" % r["statement_id"])
        assert s == 200 and now["status"]["state"] in ("PENDING", "RUNNING")
        done = wh.wait(r)
        assert done["status"]["state"] == "SUCCEEDED" and time.time() - t0 >= 3
        assert done["result"]["data_array"] == [["takes_a_while"]]
        r = wh.submit("SELECT 'takes_a_while'", wait="0s")
        assert wh.call("POST", "/api/2.0/sql/statements/%s/cancel" % r["statement_id"])[0] == 200
        assert wh.wait(r)["status"]["state"] == "CANCELED"
    finally:
        wh.admin("POST", "/_emulator/faults", {"slow_pattern": None})


def test_faults_429_503_drop_latency(wh):
    wh.admin("POST", "/_emulator/faults", {"throttle_next": 1, "retry_after": 3})
    s, r, h = wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid)
    assert s == 429 and r["error_code"] == "REQUEST_LIMIT_EXCEEDED" and h["Retry-After"] == "3"
    wh.admin("POST", "/_emulator/faults", {"unavailable_next": 1})
    s, r, _ = wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid)
    assert s == 503 and r["error_code"] == "TEMPORARILY_UNAVAILABLE"
    assert wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid)[0] == 200
    wh.admin("POST", "/_emulator/faults", {"drop_next": 1})
    host, port = wh.url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/api/2.0/sql/warehouses/" + wh.wid, headers={"Authorization": "Bearer " + wh.token})
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        conn.getresponse()
    wh.admin("POST", "/_emulator/faults", {"statement_latency_ms": 1500})
    try:
        t0 = time.time()
        wh.sql("SELECT 1")
        assert time.time() - t0 >= 1.5
    finally:
        wh.admin("POST", "/_emulator/faults", {"statement_latency_ms": 0})
    before = wh.admin("GET", "/_emulator/requests")["total_statements"]
    wh.sql("SELECT 2")
    assert wh.admin("GET", "/_emulator/requests")["total_statements"] == before + 1


def test_warehouse_start_and_never_start(wh):
    try:
        wh.admin("POST", "/_emulator/faults", {"warehouse_state": "STOPPED", "warehouse_start_seconds": 3})
        assert wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid)[1]["state"] == "STOPPED"
        starts = wh.admin("GET", "/_emulator/requests?since=1000000000")["warehouse_starts"]
        r = wh.submit("SELECT 1", wait="0s")            # auto-starts; PENDING = waiting for warehouse
        assert r["status"]["state"] == "PENDING"
        assert wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid)[1]["state"] == "STARTING"
        log = wh.admin("GET", "/_emulator/requests?since=1000000000")
        assert log["warehouse_starts"] == starts + 1 and log["warehouse_state"] == "STARTING", log
        t0 = time.time()
        assert wh.wait(r)["status"]["state"] == "SUCCEEDED"
        assert time.time() - t0 >= 1.5
        assert wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid)[1]["state"] == "RUNNING"
        wh.admin("POST", "/_emulator/faults", {"warehouse_state": "STOPPED", "warehouse_never_starts": True,
                                               "warehouse_autostart": False})
        r = wh.submit("SELECT 1", wait="5s")
        assert r["status"]["state"] == "PENDING"
        assert wh.admin("GET", "/_emulator/requests?since=1000000000")["warehouse_starts"] == starts + 1, \
            "no auto-start: still one start"
        assert wh.call("POST", "/api/2.0/sql/warehouses/%s/start" % wh.wid)[0] == 200
        time.sleep(1)
        assert wh.call("GET", "/api/2.0/sql/warehouses/" + wh.wid)[1]["state"] == "STARTING"
        assert wh.admin("GET", "/_emulator/requests?since=1000000000")["warehouse_starts"] == starts + 2
        wh.call("POST", "/api/2.0/sql/statements/%s/cancel" % r["statement_id"])
        assert wh.wait(r)["status"]["state"] == "CANCELED"
    finally:
        wh.admin("POST", "/_emulator/faults", {"warehouse_state": "RUNNING", "warehouse_never_starts": False,
                                               "warehouse_autostart": True, "warehouse_start_seconds": 0})


def test_schema_comment_properties_owner_and_grants_read_back_through_uc(wh):
    """COMMENT ON SCHEMA, ALTER SCHEMA ... SET DBPROPERTIES / OWNER TO, GRANT/REVOKE ON SCHEMA run
    as SQL, and UC's GET schemas/{full_name} (comment, properties, owner) and GET
    permissions/schema/{full_name} (privilege_assignments) show them, as the REST reference shapes them."""
    sch = uniq()
    full = "main.%s" % sch
    wh.sql("CREATE SCHEMA %s" % full)
    s, info, _ = wh.call("GET", "/api/2.1/unity-catalog/schemas/" + full)
    assert s == 200 and "comment" not in info and info["properties"] == {}, info
    wh.sql("COMMENT ON SCHEMA `main`.`%s` IS 'it\\'s $\\{x}'" % sch)   # `${` escaped, as the sql crate (quote.rs) writes it
    wh.sql("ALTER SCHEMA `main`.`%s` SET DBPROPERTIES ('team' = 'revenue', 'o''k' = 'v')" % sch)
    wh.sql("ALTER SCHEMA `main`.`%s` OWNER TO `data-eng`" % sch)
    wh.sql("GRANT USE SCHEMA, SELECT, MODIFY ON SCHEMA `main`.`%s` TO `analysts`" % sch)
    wh.sql("REVOKE MODIFY ON SCHEMA `main`.`%s` FROM `analysts`" % sch)
    st = wh.fail("GRANT APPLY SCHEMA ON SCHEMA `main`.`%s` TO `analysts`" % sch)
    assert "[INVALID_PARAMETER_VALUE.PRIVILEGE]" in st["error"]["message"], st
    s, info, _ = wh.call("GET", "/api/2.1/unity-catalog/schemas/" + full)
    assert s == 200
    assert info["comment"] == "it's ${x}", info
    assert info["properties"] == {"o'k": "v", "team": "revenue"}, info
    assert info["owner"] == "data-eng", info
    s, perms, _ = wh.call("GET", "/api/2.1/unity-catalog/permissions/schema/" + full)
    assert s == 200
    assert perms["privilege_assignments"] == [{"principal": "analysts", "privileges": ["SELECT", "USE_SCHEMA"]}], perms
    wh.sql("COMMENT ON SCHEMA `main`.`%s` IS NULL" % sch)
    s, info, _ = wh.call("GET", "/api/2.1/unity-catalog/schemas/" + full)
    assert "comment" not in info, info


def test_table_tags_and_grants_read_through_uc_rest_paged(wh):
    """SET TAGS, ALTER COLUMN ... SET TAGS and GRANT run as SQL; the entity tag assignments list
    (tables, columns: cat.sch.tbl.col) and GET permissions/table/{full_name} show them, paged
    as documented: max_results / page_token, a tag page may be empty and still carry a token."""
    sch = uniq()
    full = "main.%s.t" % sch
    wh.sql("CREATE SCHEMA main.%s" % sch)
    wh.sql("CREATE TABLE %s (id BIGINT, Email STRING) USING DELTA" % full)
    wh.sql("ALTER TABLE %s SET TAGS ('domain' = 'sales', 'certified')" % full)
    wh.sql("ALTER TABLE %s ALTER COLUMN Email SET TAGS ('pii' = 'email')" % full)
    base = "/api/2.1/unity-catalog/entity-tag-assignments/"
    s, r, _ = wh.call("GET", base + "tables/%s/tags" % full)
    assert s == 200 and "next_page_token" not in r, r
    assert [(t["tag_key"], t.get("tag_value")) for t in r["tag_assignments"]] == [("certified", None), ("domain", "sales")], r
    assert r["tag_assignments"][1]["entity_type"] == "tables" and r["tag_assignments"][1]["entity_name"] == full, r
    s, r, _ = wh.call("GET", base + "columns/%s.email/tags" % full)
    assert s == 200 and [(t["tag_key"], t["tag_value"]) for t in r["tag_assignments"]] == [("pii", "email")], r
    s, r, _ = wh.call("GET", base + "tables/%s/tags?max_results=1" % full)
    assert len(r["tag_assignments"]) == 1 and r["next_page_token"], r
    s, r, _ = wh.call("GET", base + "tables/%s/tags?max_results=1&page_token=%s" % (full, r["next_page_token"]))
    assert [t["tag_key"] for t in r["tag_assignments"]] == ["domain"] and "next_page_token" not in r, r
    try:
        wh.admin("POST", "/_emulator/faults", {"tag_empty_first_page": True})
        s, r, _ = wh.call("GET", base + "tables/%s/tags" % full)
        assert s == 200 and r["tag_assignments"] == [] and r["next_page_token"], r
        s, r, _ = wh.call("GET", base + "tables/%s/tags?page_token=%s" % (full, r["next_page_token"]))
        assert [t["tag_key"] for t in r["tag_assignments"]] == ["certified", "domain"], r
    finally:
        wh.admin("POST", "/_emulator/faults", {"tag_empty_first_page": False})
    # grants: one by SQL, sixty more through PATCH, read back in pages of the server's size (50)
    wh.sql("GRANT SELECT, MODIFY ON TABLE %s TO `analysts`" % full)
    perms = "/api/2.1/unity-catalog/permissions/table/" + full
    changes = [{"principal": "p%02d" % i, "add": ["SELECT"]} for i in range(60)]
    assert wh.call("PATCH", perms, {"changes": changes})[0] == 200
    s, r, _ = wh.call("GET", perms)
    assert s == 200 and len(r["privilege_assignments"]) == 61 and "next_page_token" not in r
    assert r["privilege_assignments"][0] == {"principal": "analysts", "privileges": ["MODIFY", "SELECT"]}, r
    s, r, _ = wh.call("GET", perms + "?max_results=0")
    assert len(r["privilege_assignments"]) == 50 and r["next_page_token"], r
    s, r2, _ = wh.call("GET", perms + "?max_results=0&page_token=" + r["next_page_token"])
    assert len(r2["privilege_assignments"]) == 11 and "next_page_token" not in r2, r2
    assert wh.call("GET", perms + "?max_results=10")[0] == 400


def test_workspace_files_create_if_absent_export_list_delete_mkdirs(wh):
    """The Workspace API's files and folders as the docs describe them (the operator's table locks)."""
    root = "/Shared/.emu-test-%s" % uuid.uuid4().hex[:8]
    f = root + "/a/00000000000000000001.json"
    b64 = lambda s: base64.b64encode(s).decode()  # noqa: E731
    imp = lambda path, data, **kw: wh.call("POST", "/api/2.0/workspace/import", {  # noqa: E731
        "path": path, "format": "AUTO", "content": b64(data), **kw})
    # a missing parent folder: RESOURCE_DOES_NOT_EXIST; mkdirs makes it and its parents (twice is fine)
    s, r, _ = imp(f, b'{"n":1}')
    assert (s, r["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST"), r
    for _ in range(2):
        s, r, _ = wh.call("POST", "/api/2.0/workspace/mkdirs", {"path": root + "/a"})
        assert (s, r) == (200, {}), r
    # create-if-absent: the first import wins, the second (overwrite false, the default) is refused
    s, r, _ = imp(f, b'{"n":1}', overwrite=False)
    assert (s, r) == (200, {}), r
    s, r, _ = imp(f, b'{"n":2}')
    assert (s, r["error_code"]) == (400, "RESOURCE_ALREADY_EXISTS"), r
    s, r, _ = wh.call("GET", "/api/2.0/workspace/export?path=%s&format=AUTO" % f)
    assert s == 200 and base64.b64decode(r["content"]) == b'{"n":1}' and r["file_type"] == "json", r
    # overwrite: true replaces a file
    s, r, _ = imp(f, b'{"n":3}', overwrite=True)
    assert s == 200, r
    s, r, _ = wh.call("GET", "/api/2.0/workspace/export?path=%s" % f)
    assert base64.b64decode(r["content"]) == b'{"n":3}', r
    # list: the folder's children with their types; a file lists itself; a missing path is 404
    wh.call("POST", "/api/2.0/workspace/mkdirs", {"path": root + "/a/runs"})
    s, r, _ = wh.call("GET", "/api/2.0/workspace/list?path=%s/a" % root)
    assert s == 200, r
    got = {(o["path"], o["object_type"]) for o in r["objects"]}
    assert got == {(f, "FILE"), (root + "/a/runs", "DIRECTORY")}, r
    assert [o["size"] for o in r["objects"] if o["object_type"] == "FILE"] == [7], r
    s, r, _ = wh.call("GET", "/api/2.0/workspace/list?path=%s" % f)
    assert [o["path"] for o in r["objects"]] == [f], r
    s, r, _ = wh.call("GET", "/api/2.0/workspace/list?path=%s/a/runs" % root)
    assert (s, r) == (200, {}), "an empty folder lists no objects: %r" % r
    s, r, _ = wh.call("GET", "/api/2.0/workspace/list?path=%s/none" % root)
    assert (s, r["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST"), r
    s, r, _ = wh.call("GET", "/api/2.0/workspace/export?path=%s/none.json" % root)
    assert (s, r["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST"), r
    # mkdirs over a file: RESOURCE_ALREADY_EXISTS
    s, r, _ = wh.call("POST", "/api/2.0/workspace/mkdirs", {"path": f + "/sub"})
    assert (s, r["error_code"]) == (400, "RESOURCE_ALREADY_EXISTS"), r
    # delete: a non-empty folder needs recursive; a missing path is 404
    s, r, _ = wh.call("POST", "/api/2.0/workspace/delete", {"path": root + "/a"})
    assert (s, r["error_code"]) == (400, "DIRECTORY_NOT_EMPTY"), r
    s, r, _ = wh.call("POST", "/api/2.0/workspace/delete", {"path": f})
    assert (s, r) == (200, {}), r
    s, r, _ = wh.call("POST", "/api/2.0/workspace/delete", {"path": f})
    assert (s, r["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST"), r
    s, r, _ = wh.call("POST", "/api/2.0/workspace/delete", {"path": root, "recursive": True})
    assert (s, r) == (200, {}), r
    s, r, _ = wh.call("GET", "/api/2.0/workspace/get-status?path=%s" % root)
    assert (s, r["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST"), r
    # paths are absolute
    s, r, _ = imp("Shared/x.json", b"{}")
    assert (s, r["error_code"]) == (400, "INVALID_PARAMETER_VALUE"), r


def test_streaming_tables_and_materialized_views_are_typed_and_take_only_their_alter(wh):
    """A pipeline's relation (emulated: CREATE STREAMING TABLE / CREATE MATERIALIZED VIEW make a
    Delta table and record the type) is listed with its table_type; ALTER STREAMING TABLE /
    ALTER MATERIALIZED VIEW take tags, column comments and tags, the owner, and nothing else
    (sql-ref-syntax-ddl-alter-streaming-table); ALTER TABLE on one is refused."""
    sch = uniq()
    wh.sql("CREATE SCHEMA main.%s" % sch)
    st, mv = "main.%s.st" % sch, "main.%s.mv" % sch
    wh.sql("CREATE STREAMING TABLE %s (id BIGINT, amount INT) USING delta" % st)
    wh.sql("CREATE MATERIALIZED VIEW %s USING delta AS SELECT id FROM %s" % (mv, st))
    s, r, _ = wh.call("GET", "/api/2.1/unity-catalog/tables?catalog_name=main&schema_name=%s" % sch)
    kinds = {t["name"]: t["table_type"] for t in r["tables"]}
    assert kinds == {"st": "STREAMING_TABLE", "mv": "MATERIALIZED_VIEW"}, r
    wh.sql("ALTER STREAMING TABLE %s SET TAGS ('source' = 'kafka')" % st)
    wh.sql("ALTER STREAMING TABLE %s ALTER COLUMN amount SET TAGS ('pii' = 'false')" % st)
    wh.sql("COMMENT ON COLUMN %s.amount IS 'in cents'" % st)
    wh.sql("ALTER MATERIALIZED VIEW %s SET TAGS ('tier' = 'gold')" % mv)
    s, r, _ = wh.call("GET", "/api/2.1/unity-catalog/entity-tag-assignments/tables/%s/tags" % st)
    assert [(t["tag_key"], t["tag_value"]) for t in r["tag_assignments"]] == [("source", "kafka")], r
    assert "SET TBLPROPERTIES" in wh.fail("ALTER STREAMING TABLE %s SET TBLPROPERTIES ('a' = 'b')" % st)["error"]["message"]
    assert "ADD COLUMN" in wh.fail("ALTER STREAMING TABLE %s ADD COLUMN x INT" % st)["error"]["message"]
    assert "use ALTER STREAMING TABLE" in wh.fail("ALTER TABLE %s SET TAGS ('a' = 'b')" % st)["error"]["message"]
    assert "not a materialized view" in wh.fail("ALTER MATERIALIZED VIEW %s SET TAGS ('a' = 'b')" % st)["error"]["message"]
