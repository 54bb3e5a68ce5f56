"""Unity Catalog REST 2.1 for functions and volumes (emulated from the API reference):

  GET functions?catalog_name=&schema_name=   {functions: [FunctionInfo], next_page_token?}
  GET functions/{full_name}                  FunctionInfo
  GET volumes?catalog_name=&schema_name=     {volumes: [VolumeInfo], next_page_token?}
  GET volumes/{full_name}                    VolumeInfo
  permissions/{function|volume}/{full_name}  (routes.py, the same store SQL GRANT writes)

FunctionInfo (api/workspace/functions/get): name, catalog_name, schema_name, full_name,
input_params {parameters: [{name, type_text, type_json, type_name, type_precision?,
type_scale?, position, parameter_mode IN, parameter_type PARAM, comment?,
parameter_default?}]} ("A function that takes no arguments omits input_params"),
data_type, full_data_type, return_params (RETURNS TABLE), routine_body SQL,
routine_definition (the text after RETURN as written), parameter_style S, is_deterministic,
sql_data_access, is_null_call false, security_type DEFINER, specific_name, comment, owner,
function_id, metastore_id, created_at/by, updated_at/by.
VolumeInfo (api/workspace/volumes/read): name, catalog_name, schema_name, full_name,
volume_type MANAGED, storage_location, comment, owner, volume_id, metastore_id,
created_at/by, updated_at/by.
Errors: 404 CATALOG_DOES_NOT_EXIST / SCHEMA_DOES_NOT_EXIST / FUNCTION_DOES_NOT_EXIST /
VOLUME_DOES_NOT_EXIST (the last two codes are the emulator's; the status is what matters).
"""
import json
import re
import urllib.parse

import facts
from server import ApiError, type_sql
from sqltext import db_name

METASTORE = "00000000-0000-0000-0000-000000000000"


def _emu():
    import routes
    return routes.EMU


def _type_fields(dt):
    d = {"type_text": dt.simpleString(), "type_json": json.dumps(dt.jsonValue(), separators=(",", ":")),
         "type_name": facts.uc_type_name(dt)}
    if dt.typeName() == "decimal":
        d["type_precision"], d["type_scale"] = dt.precision, dt.scale
    return d


def function_info(key, m):
    cat, sch, name = key
    d = {"name": name, "catalog_name": cat, "schema_name": sch, "full_name": "%s.%s.%s" % key,
         "routine_body": "SQL", "routine_definition": m.body, "parameter_style": "S",
         "is_deterministic": bool(m.deterministic), "sql_data_access": m.data_access, "is_null_call": False,
         "security_type": "DEFINER", "specific_name": name, "owner": m.owner, "function_id": m.function_id,
         "metastore_id": METASTORE, "created_at": m.created_at, "created_by": m.created_by,
         "updated_at": m.updated_at, "updated_by": m.updated_by}
    if m.params:
        ps = []
        for i, p in enumerate(m.params):
            x = {"name": p["name"], "position": i, "parameter_mode": "IN", "parameter_type": "PARAM"}
            x.update(_type_fields(p["data_type"]))
            if p.get("comment"):
                x["comment"] = p["comment"]
            if p.get("default") is not None:
                x["parameter_default"] = p["default"]
            ps.append(x)
        d["input_params"] = {"parameters": ps}
    if m.returns_table is not None:
        d["data_type"], d["full_data_type"] = "TABLE_TYPE", m.returns_table
    elif m.returns:
        from objects import parse_type
        dt = parse_type(m.returns)
        d["data_type"], d["full_data_type"] = facts.uc_type_name(dt), type_sql(dt)
    if m.comment:
        d["comment"] = m.comment
    return d


def volume_info(key, m):
    cat, sch, name = key
    d = {"name": name, "catalog_name": cat, "schema_name": sch, "full_name": "%s.%s.%s" % key,
         "volume_type": "MANAGED", "storage_location": m.storage_location, "owner": m.owner,
         "volume_id": m.volume_id, "metastore_id": METASTORE, "created_at": m.created_at,
         "created_by": m.created_by, "updated_at": m.updated_at, "updated_by": m.updated_by}
    if m.comment:
        d["comment"] = m.comment
    return d


def _schema_or_404(cat, sch):
    emu = _emu()
    if cat not in emu.store.catalogs:
        raise ApiError(404, "CATALOG_DOES_NOT_EXIST", "Catalog '%s' does not exist." % cat)
    if not emu.spark.db_exists(db_name(cat, sch)):
        raise ApiError(404, "SCHEMA_DOES_NOT_EXIST", "Schema '%s.%s' does not exist." % (cat, sch))


KINDS = {"functions": ("functions", function_info, "FUNCTION_DOES_NOT_EXIST", "Function"),
         "volumes": ("volumes", volume_info, "VOLUME_DOES_NOT_EXIST", "Volume")}


def lookup(kind, name):
    """(key, meta) of a function or volume by its full name, or a 404."""
    from routes import split_full
    attr, _, code, label = KINDS[kind + "s"]
    cat, sch, obj = split_full(name, 3, kind)
    _schema_or_404(cat, sch)
    emu = _emu()
    with emu.store.lock:
        m = getattr(emu.store, attr).get("%s.%s.%s" % (cat, sch, obj))
    if m is None:
        raise ApiError(404, code, "%s '%s.%s.%s' does not exist." % (label, cat, sch, obj))
    return (cat, sch, obj), m


def securable(kind, name):
    return lookup(kind, name)[1]


def route(h, method, rest, qv):
    from routes import paginate
    emu = _emu()
    if rest in KINDS and method == "GET":
        attr, info, _, _ = KINDS[rest]
        cat, sch = (qv("catalog_name") or "").lower(), (qv("schema_name") or "").lower()
        if not cat or not sch:
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "catalog_name and schema_name are required")
        _schema_or_404(cat, sch)
        d = getattr(emu.store, attr)
        keys = emu.store.in_schema(d, cat, sch)
        page, nxt = paginate(keys, qv, lambda k: k)
        with emu.store.lock:
            items = [info(tuple(k.split(".", 2)), d[k]) for k in page if k in d]
        out = {rest: items}
        if nxt:
            out["next_page_token"] = nxt
        h._send(200, out)
        return True  # handled (`_send` returns None: the caller would answer 404 after it)
    m = re.fullmatch(r"(functions|volumes)/([^/]+)", rest)
    if m and method == "GET":
        key, meta = lookup(m.group(1)[:-1], urllib.parse.unquote(m.group(2)))
        with emu.store.lock:
            h._send(200, KINDS[m.group(1)][1](key, meta))
        return True
    return None
