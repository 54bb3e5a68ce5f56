"""Views, SQL functions and volumes: what Unity Catalog keeps beside tables (objects.py,
uc_objects.py), read back through SQL, information_schema and the UC REST API."""
import os

from conftest import uniq

UC = "/api/2.1/unity-catalog/"


def setup_table(wh):
    sch = uniq("obj")
    wh.sql("CREATE SCHEMA main.%s" % sch)
    wh.sql("CREATE TABLE main.%s.t (a INT, b STRING) USING delta" % sch)
    wh.sql("INSERT INTO main.%s.t VALUES (1, 'x'), (2, 'y')" % sch)
    return sch


def grants(wh, kind, full):
    s, r, _ = wh.call("GET", UC + "permissions/%s/%s" % (kind, full))
    assert s == 200, r
    return {pa["principal"]: pa["privileges"] for pa in r["privilege_assignments"]}


def test_a_view_is_a_spark_view_over_the_table_and_uc_keeps_its_query_as_written(wh):
    sch = setup_table(wh)
    v = "main.%s.v" % sch
    wh.sql("CREATE VIEW %s (a COMMENT 'the key', b) COMMENT 'a view' TBLPROPERTIES ('team' = 'x') "
           "AS SELECT a, b FROM t WHERE a > 1" % v, catalog="main", schema=sch)
    rows, _ = wh.sql("SELECT a, b FROM %s" % v)
    assert rows == [["2", "y"]]
    s, ti, _ = wh.call("GET", UC + "tables/" + v)
    assert s == 200, ti
    assert ti["table_type"] == "VIEW"
    assert ti["view_definition"] == "SELECT a, b FROM t WHERE a > 1"      # as written, not Spark's names
    assert ti["comment"] == "a view" and ti["properties"]["team"] == "x"
    assert ti["properties"]["view.catalogAndNamespace.part.0"] == "main"
    assert ti["properties"]["view.catalogAndNamespace.part.1"] == sch
    assert [(c["name"], c.get("comment")) for c in ti["columns"]] == [("a", "the key"), ("b", None)]
    s, lst, _ = wh.call("GET", UC + "tables?catalog_name=main&schema_name=%s" % sch)
    assert {t["name"]: t["table_type"] for t in lst["tables"]} == {"t": "MANAGED", "v": "VIEW"}
    rows, _ = wh.sql("SELECT table_name, view_definition, check_option FROM main.information_schema.views "
                     "WHERE table_schema = '%s'" % sch)
    assert rows == [["v", "SELECT a, b FROM t WHERE a > 1", "NONE"]]
    # COMMENT ON TABLE names a view too ("TABLE relation_name"); there is no COMMENT ON VIEW
    wh.sql("COMMENT ON TABLE %s IS 'changed'" % v)
    assert wh.call("GET", UC + "tables/" + v)[1]["comment"] == "changed"
    wh.sql("COMMENT ON TABLE %s IS NULL" % v)
    assert "comment" not in wh.call("GET", UC + "tables/" + v)[1]
    # SET/UNSET TBLPROPERTIES are Spark's own on a view
    wh.sql("ALTER VIEW %s SET TBLPROPERTIES ('k2' = 'v2')" % v)
    wh.sql("ALTER VIEW %s UNSET TBLPROPERTIES ('team')" % v)
    props = wh.call("GET", UC + "tables/" + v)[1]["properties"]
    assert props.get("k2") == "v2" and "team" not in props


def test_comment_on_column_of_a_view_is_kept_in_uc_and_a_replace_drops_it(wh):
    sch = setup_table(wh)
    v = "main.%s.v" % sch
    wh.sql("CREATE VIEW %s (a COMMENT 'the key', b) AS SELECT a, b FROM main.%s.t" % (v, sch))
    # "relation_name must identify a table, ... a view" (sql-ref-syntax-ddl-comment, DBR 16.1+)
    wh.sql("COMMENT ON COLUMN %s.b IS 'bee'" % v)
    wh.sql("COMMENT ON COLUMN %s.a IS NULL" % v)
    cols = wh.call("GET", UC + "tables/" + v)[1]["columns"]
    assert [(c["name"], c.get("comment")) for c in cols] == [("a", None), ("b", "bee")]
    st = wh.fail("COMMENT ON COLUMN %s.zz IS 'x'" % v)
    assert "UNRESOLVED_COLUMN" in st["error"]["message"], st
    # a replace is a drop and a create: the comments go with it
    wh.sql("CREATE OR REPLACE VIEW %s AS SELECT a, b FROM main.%s.t" % (v, sch))
    cols = wh.call("GET", UC + "tables/" + v)[1]["columns"]
    assert [c.get("comment") for c in cols] == [None, None]


def test_create_or_replace_view_drops_grants_tags_and_properties_and_keeps_the_owner(wh):
    sch = setup_table(wh)
    v = "main.%s.v" % sch
    wh.sql("CREATE VIEW %s TBLPROPERTIES ('p' = '1') AS SELECT a FROM main.%s.t" % (v, sch))
    wh.sql("ALTER VIEW %s SET TAGS ('domain' = 'sales')" % v)
    wh.sql("GRANT SELECT ON VIEW %s TO `analysts`" % v)
    wh.sql("ALTER VIEW %s OWNER TO `data-eng`" % v)
    assert grants(wh, "table", v) == {"analysts": ["SELECT"]}
    rows, _ = wh.sql("SELECT tag_name FROM main.information_schema.table_tags WHERE schema_name = '%s'" % sch)
    assert rows == [["domain"]]
    wh.sql("CREATE OR REPLACE VIEW %s AS SELECT a, b FROM main.%s.t" % (v, sch))
    # "Replacing an existing view does not preserve privileges granted on the original view."
    assert grants(wh, "table", v) == {}
    rows, _ = wh.sql("SHOW GRANTS ON VIEW %s" % v)
    assert rows == []
    rows, _ = wh.sql("SELECT tag_name FROM main.information_schema.table_tags WHERE schema_name = '%s'" % sch)
    assert rows == []
    ti = wh.call("GET", UC + "tables/" + v)[1]
    assert "p" not in ti["properties"]
    assert ti["owner"] == "data-eng"
    assert ti["view_definition"] == "SELECT a, b FROM main.%s.t" % sch
    # ALTER VIEW ... AS keeps grants and tags and changes the definition
    wh.sql("GRANT SELECT ON VIEW %s TO `auditors`" % v)
    wh.sql("ALTER VIEW %s AS SELECT b FROM main.%s.t" % (v, sch))
    assert grants(wh, "table", v) == {"auditors": ["SELECT"]}
    assert wh.call("GET", UC + "tables/" + v)[1]["view_definition"] == "SELECT b FROM main.%s.t" % sch
    wh.sql("REVOKE SELECT ON VIEW %s FROM `auditors`" % v)
    wh.sql("CREATE OR REPLACE VIEW %s AS SELECT a, b FROM main.%s.t" % (v, sch))
    # IF NOT EXISTS on an existing view changes nothing
    wh.sql("GRANT SELECT ON VIEW %s TO `analysts`" % v)
    wh.sql("CREATE VIEW IF NOT EXISTS %s AS SELECT 1 AS one" % v)
    assert grants(wh, "table", v) == {"analysts": ["SELECT"]}
    assert wh.call("GET", UC + "tables/" + v)[1]["view_definition"] == "SELECT a, b FROM main.%s.t" % sch


def test_drop_view_drops_only_views_and_forgets_their_metadata(wh):
    sch = setup_table(wh)
    v = "main.%s.v" % sch
    wh.sql("CREATE VIEW %s AS SELECT a FROM main.%s.t" % (v, sch))
    wh.sql("GRANT SELECT ON VIEW %s TO `analysts`" % v)
    st = wh.fail("DROP VIEW main.%s.t" % sch)
    assert st["error"]["message"].startswith("[WRONG_COMMAND_FOR_OBJECT_TYPE]"), st
    st = wh.fail("ALTER VIEW main.%s.t SET TAGS ('k' = 'v')" % sch)
    assert st["error"]["message"].startswith("[EXPECT_VIEW_NOT_TABLE"), st
    wh.sql("DROP VIEW %s" % v)
    assert wh.call("GET", UC + "tables/" + v)[0] == 404
    st = wh.fail("DROP VIEW %s" % v)
    assert st["error"]["message"].startswith("[TABLE_OR_VIEW_NOT_FOUND]"), st
    wh.sql("DROP VIEW IF EXISTS %s" % v)
    wh.sql("CREATE VIEW %s AS SELECT a FROM main.%s.t" % (v, sch))
    assert grants(wh, "table", v) == {}


def test_a_sql_function_runs_in_spark_and_unity_catalog_describes_it(wh):
    sch = setup_table(wh)
    f = "main.%s.plus" % sch
    wh.sql("CREATE FUNCTION %s(x INT COMMENT 'the number', y DECIMAL(10,2) DEFAULT 1) RETURNS DECIMAL(12,2) "
           "NOT DETERMINISTIC COMMENT 'adds' RETURN x + y" % f)
    rows, _ = wh.sql("SELECT %s(a) FROM main.%s.t ORDER BY a" % (f, sch))
    assert rows == [["2.00"], ["3.00"]]
    s, fi, _ = wh.call("GET", UC + "functions/" + f)
    assert s == 200, fi
    assert fi["full_name"] == f and fi["routine_body"] == "SQL" and fi["routine_definition"] == "x + y"
    assert fi["data_type"] == "DECIMAL" and fi["full_data_type"] == "DECIMAL(12,2)"
    assert fi["is_deterministic"] is False and fi["comment"] == "adds" and fi["owner"]
    ps = fi["input_params"]["parameters"]
    assert [(p["name"], p["type_text"], p["type_name"], p["position"], p.get("comment")) for p in ps] == \
        [("x", "int", "INT", 0, "the number"), ("y", "decimal(10,2)", "DECIMAL", 1, None)]
    assert ps[1]["parameter_default"] == "1" and ps[1]["type_precision"] == 10 and ps[1]["type_scale"] == 2
    s, lst, _ = wh.call("GET", UC + "functions?catalog_name=main&schema_name=%s" % sch)
    assert [x["name"] for x in lst["functions"]] == ["plus"]
    assert wh.call("GET", UC + "functions/main.%s.nope" % sch)[0] == 404
    rows, _ = wh.sql("SELECT routine_name, data_type, full_data_type, routine_definition, is_deterministic "
                     "FROM main.information_schema.routines WHERE routine_schema = '%s'" % sch)
    assert rows == [["plus", "DECIMAL", "DECIMAL(12,2)", "x + y", "NO"]]
    # no parameters, no RETURNS: input_params omitted, the return type is Spark's
    wh.sql("CREATE FUNCTION main.%s.one() RETURN 1" % sch)
    fi = wh.call("GET", UC + "functions/main.%s.one" % sch)[1]
    assert "input_params" not in fi and fi["full_data_type"] == "INT" and fi["is_deterministic"] is True
    st = wh.fail("CREATE FUNCTION main.%s.py(x INT) RETURNS INT LANGUAGE PYTHON AS $$ return x $$" % sch)
    assert "not emulated" in st["error"]["message"], st


def test_replacing_a_function_drops_its_grants_and_keeps_its_signature(wh):
    sch = setup_table(wh)
    f = "main.%s.f" % sch
    wh.sql("CREATE FUNCTION %s(x INT) RETURNS INT RETURN x + 1" % f)
    wh.sql("GRANT EXECUTE ON FUNCTION %s TO `analysts`" % f)
    wh.sql("ALTER FUNCTION %s OWNER TO `data-eng`" % f)
    assert grants(wh, "function", f) == {"analysts": ["EXECUTE"]}
    rows, _ = wh.sql("SHOW GRANTS ON FUNCTION %s" % f)
    assert rows == [["analysts", "EXECUTE", "FUNCTION", f]]
    rows, _ = wh.sql("SELECT grantee, privilege_type FROM main.information_schema.routine_privileges "
                     "WHERE routine_schema = '%s'" % sch)
    assert rows == [["analysts", "EXECUTE"]]
    st = wh.fail("GRANT SELECT ON FUNCTION %s TO `analysts`" % f)
    assert "INVALID_PARAMETER_VALUE.PRIVILEGE" in st["error"]["message"], st
    st = wh.fail("CREATE FUNCTION %s(x INT) RETURNS INT RETURN x" % f)
    assert st["error"]["message"].startswith("[ROUTINE_ALREADY_EXISTS]"), st
    wh.sql("CREATE FUNCTION IF NOT EXISTS %s(x INT) RETURNS INT RETURN x" % f)
    assert grants(wh, "function", f) == {"analysts": ["EXECUTE"]}
    wh.sql("CREATE OR REPLACE FUNCTION %s(x INT) RETURNS INT RETURN x + 2" % f)
    assert grants(wh, "function", f) == {}
    fi = wh.call("GET", UC + "functions/" + f)[1]
    assert fi["routine_definition"] == "x + 2" and fi["owner"] == "data-eng"
    rows, _ = wh.sql("SELECT %s(1)" % f)
    assert rows == [["3"]]
    # "You cannot replace an existing function with a different signature."
    st = wh.fail("CREATE OR REPLACE FUNCTION %s(x BIGINT) RETURNS INT RETURN 0" % f)
    assert st["error"]["message"].startswith("[ROUTINE_ALREADY_EXISTS]"), st
    wh.sql("DROP FUNCTION %s" % f)
    assert wh.call("GET", UC + "functions/" + f)[0] == 404
    st = wh.fail("DROP FUNCTION %s" % f)
    assert st["error"]["message"].startswith("[ROUTINE_NOT_FOUND]"), st
    wh.sql("DROP FUNCTION IF EXISTS %s" % f)
    wh.sql("CREATE FUNCTION %s(x BIGINT) RETURNS BIGINT RETURN x" % f)


def test_a_mask_or_row_filter_needs_an_existing_function_and_is_applied_to_reads(wh):
    sch = setup_table(wh)
    t = "main.%s.t" % sch
    st = wh.fail("ALTER TABLE %s ALTER COLUMN b SET MASK main.%s.missing" % (t, sch))
    assert st["error"]["message"].startswith("[ROUTINE_NOT_FOUND]"), st
    assert st["error"]["message"].count("missing") == 1
    st = wh.fail("ALTER TABLE %s SET ROW FILTER main.%s.missing ON (a)" % (t, sch))
    assert st["error"]["message"].startswith("[ROUTINE_NOT_FOUND]"), st
    wh.sql("CREATE FUNCTION main.%s.redact(s STRING, n INT) RETURNS STRING RETURN concat('*', n)" % sch)
    wh.sql("CREATE FUNCTION main.%s.small(n INT) RETURNS BOOLEAN RETURN n < 2" % sch)
    wh.sql("ALTER TABLE %s ALTER COLUMN b SET MASK main.%s.redact USING COLUMNS (a)" % (t, sch))
    rows, _ = wh.sql("SELECT a, b FROM %s ORDER BY a" % t)
    assert rows == [["1", "*1"], ["2", "*2"]]
    rows, _ = wh.sql("SELECT x.b FROM t x WHERE x.a = 2", catalog="main", schema=sch)
    assert rows == [["*2"]]
    # a time-travel read is left as written (a known difference, README)
    rows, _ = wh.sql("SELECT b FROM %s VERSION AS OF 1 ORDER BY a" % t)
    assert rows == [["x"], ["y"]]
    wh.sql("ALTER TABLE %s SET ROW FILTER main.%s.small ON (a)" % (t, sch))
    rows, _ = wh.sql("SELECT * FROM %s" % t)
    assert rows == [["1", "*1"]]
    ti = wh.call("GET", UC + "tables/" + t)[1]
    assert ti["row_filter"]["function_name"] == "main.%s.small" % sch
    wh.sql("ALTER TABLE %s DROP ROW FILTER" % t)
    wh.sql("ALTER TABLE %s ALTER COLUMN b DROP MASK" % t)
    rows, _ = wh.sql("SELECT b FROM %s ORDER BY a" % t)
    assert rows == [["x"], ["y"]]


def test_a_managed_volume_is_a_folder_with_comment_tags_owner_and_grants(wh):
    sch = setup_table(wh)
    vol = "main.%s.files" % sch
    wh.sql("CREATE VOLUME %s COMMENT 'landing'" % vol)
    st = wh.fail("CREATE VOLUME %s" % vol)
    assert st["error"]["message"].startswith("[VOLUME_ALREADY_EXISTS]"), st
    wh.sql("CREATE VOLUME IF NOT EXISTS %s" % vol)
    s, vi, _ = wh.call("GET", UC + "volumes/" + vol)
    assert s == 200, vi
    assert vi["volume_type"] == "MANAGED" and vi["comment"] == "landing" and vi["full_name"] == vol
    path = vi["storage_location"][len("file://"):]
    assert os.path.isdir(path)
    wh.sql("COMMENT ON VOLUME %s IS 'raw files'" % vol)
    wh.sql("ALTER VOLUME %s SET TAGS ('domain' = 'sales', 'pii')" % vol)
    wh.sql("ALTER VOLUME %s UNSET TAGS ('pii')" % vol)
    wh.sql("ALTER VOLUME %s OWNER TO `data-eng`" % vol)
    wh.sql("GRANT READ VOLUME, WRITE VOLUME ON VOLUME %s TO `etl`" % vol)
    wh.sql("REVOKE WRITE VOLUME ON VOLUME %s FROM `etl`" % vol)
    st = wh.fail("GRANT SELECT ON VOLUME %s TO `etl`" % vol)
    assert "INVALID_PARAMETER_VALUE.PRIVILEGE" in st["error"]["message"], st
    assert grants(wh, "volume", vol) == {"etl": ["READ_VOLUME"]}
    rows, _ = wh.sql("SHOW GRANTS ON VOLUME %s" % vol)
    assert rows == [["etl", "READ VOLUME", "VOLUME", vol]]
    s, lst, _ = wh.call("GET", UC + "volumes?catalog_name=main&schema_name=%s" % sch)
    (only,) = lst["volumes"]
    assert only["comment"] == "raw files" and only["owner"] == "data-eng"
    rows, _ = wh.sql("SELECT volume_name, volume_type, volume_owner, comment FROM main.information_schema.volumes "
                     "WHERE volume_schema = '%s'" % sch)
    assert rows == [["files", "MANAGED", "data-eng", "raw files"]]
    rows, _ = wh.sql("SELECT volume_name, tag_name, tag_value FROM main.information_schema.volume_tags "
                     "WHERE schema_name = '%s'" % sch)
    assert rows == [["files", "domain", "sales"]]
    s, tags, _ = wh.call("GET", UC + "entity-tag-assignments/volumes/%s/tags" % vol)
    assert [t["tag_key"] for t in tags["tag_assignments"]] == ["domain"], tags
    st = wh.fail("DROP SCHEMA main.%s" % sch)
    assert st["error"]["message"].startswith("[SCHEMA_NOT_EMPTY]"), st
    wh.sql("DROP VOLUME %s" % vol)
    assert wh.call("GET", UC + "volumes/" + vol)[0] == 404 and not os.path.exists(path)
    st = wh.fail("DROP VOLUME %s" % vol)
    assert st["error"]["message"].startswith("[VOLUME_NOT_FOUND]"), st
    wh.sql("DROP VOLUME IF EXISTS %s" % vol)
    st = wh.fail("CREATE EXTERNAL VOLUME %s LOCATION 's3://b/p'" % vol)
    assert "not emulated" in st["error"]["message"], st
    # CASCADE takes volumes and functions with the schema
    wh.sql("CREATE VOLUME %s" % vol)
    wh.sql("CREATE FUNCTION main.%s.f() RETURN 1" % sch)
    wh.sql("DROP SCHEMA main.%s CASCADE" % sch)
    wh.sql("CREATE SCHEMA main.%s" % sch)
    assert wh.call("GET", UC + "volumes/" + vol)[0] == 404
    assert wh.call("GET", UC + "functions/main.%s.f" % sch)[0] == 404
