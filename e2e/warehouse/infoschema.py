"""<catalog>.information_schema.* views, built per query from Spark's catalog + the UC store.

Each referenced view becomes a temp view in the statement's own Spark session (column
names and meanings follow docs.databricks.com/sql/language-manual/information-schema/*).
"""
import datetime

import facts
from server import SqlError
from sqltext import quote

S, I, T = "STRING", "INT", "TIMESTAMP"
VIEWS = {
    "catalogs": [("catalog_name", S), ("catalog_owner", S), ("comment", S), ("created", T), ("created_by", S),
                 ("last_altered", T), ("last_altered_by", S)],
    "schemata": [("catalog_name", S), ("schema_name", S), ("schema_owner", S), ("comment", S), ("created", T),
                 ("created_by", S), ("last_altered", T), ("last_altered_by", S)],
    "tables": [("table_catalog", S), ("table_schema", S), ("table_name", S), ("table_type", S),
               ("is_insertable_into", S), ("commit_action", S), ("table_owner", S), ("comment", S),
               ("created", T), ("created_by", S), ("last_altered", T), ("last_altered_by", S),
               ("data_source_format", S), ("storage_sub_directory", S), ("storage_path", S)],
    "columns": [("table_catalog", S), ("table_schema", S), ("table_name", S), ("column_name", S),
                ("ordinal_position", I), ("column_default", S), ("is_nullable", S), ("full_data_type", S),
                ("data_type", S), ("numeric_precision", I), ("numeric_scale", I), ("partition_index", I),
                ("comment", S)],
    "catalog_tags": [("catalog_name", S), ("tag_name", S), ("tag_value", S)],
    "schema_tags": [("catalog_name", S), ("schema_name", S), ("tag_name", S), ("tag_value", S)],
    "table_tags": [("catalog_name", S), ("schema_name", S), ("table_name", S), ("tag_name", S), ("tag_value", S)],
    "column_tags": [("catalog_name", S), ("schema_name", S), ("table_name", S), ("column_name", S),
                    ("tag_name", S), ("tag_value", S)],
    "table_constraints": [("constraint_catalog", S), ("constraint_schema", S), ("constraint_name", S),
                          ("table_catalog", S), ("table_schema", S), ("table_name", S), ("constraint_type", S),
                          ("is_deferrable", S), ("initially_deferred", S), ("enforced", S), ("comment", S)],
    "key_column_usage": [("constraint_catalog", S), ("constraint_schema", S), ("constraint_name", S),
                         ("table_catalog", S), ("table_schema", S), ("table_name", S), ("column_name", S),
                         ("ordinal_position", I), ("position_in_unique_constraint", I)],
    "constraint_column_usage": [("table_catalog", S), ("table_schema", S), ("table_name", S), ("column_name", S),
                                ("constraint_catalog", S), ("constraint_schema", S), ("constraint_name", S)],
    "referential_constraints": [("constraint_catalog", S), ("constraint_schema", S), ("constraint_name", S),
                                ("unique_constraint_catalog", S), ("unique_constraint_schema", S),
                                ("unique_constraint_name", S), ("match_option", S), ("update_rule", S),
                                ("delete_rule", S)],
    "table_privileges": [("grantor", S), ("grantee", S), ("table_catalog", S), ("table_schema", S),
                         ("table_name", S), ("privilege_type", S), ("is_grantable", S), ("inherited_from", S)],
    "schema_privileges": [("grantor", S), ("grantee", S), ("catalog_name", S), ("schema_name", S),
                          ("privilege_type", S), ("is_grantable", S), ("inherited_from", S)],
    "column_masks": [("table_catalog", S), ("table_schema", S), ("table_name", S), ("column_name", S),
                     ("mask_catalog", S), ("mask_schema", S), ("mask_name", S), ("using_columns", S)],
    # views, routines, volumes, volume_tags (information-schema/views, .../routines,
    # .../volumes, .../volume_tags): the emulated UC objects (objects.py)
    "views": [("table_catalog", S), ("table_schema", S), ("table_name", S), ("view_definition", S),
              ("check_option", S), ("is_updatable", S), ("is_insertable_into", S), ("sql_path", S)],
    "routines": [("specific_catalog", S), ("specific_schema", S), ("specific_name", S), ("routine_catalog", S),
                 ("routine_schema", S), ("routine_name", S), ("routine_type", S), ("data_type", S),
                 ("full_data_type", S), ("character_maximum_length", I), ("character_octet_length", I),
                 ("numeric_precision", I), ("numeric_precision_radix", I), ("numeric_scale", I),
                 ("datetime_precision", I), ("interval_type", S), ("interval_precision", I),
                 ("maximum_cardinality", I), ("routine_body", S), ("routine_definition", S), ("external_name", S),
                 ("external_language", S), ("parameter_style", S), ("is_deterministic", S),
                 ("sql_data_access", S), ("is_null_call", S), ("sql_path", S), ("security_type", S),
                 ("as_locator", S), ("comment", S), ("created", T), ("created_by", S), ("last_altered", T),
                 ("last_altered_by", S)],
    "volumes": [("volume_catalog", S), ("volume_schema", S), ("volume_name", S), ("volume_type", S),
                ("volume_owner", S), ("comment", S), ("created", T), ("created_by", S), ("last_altered", T),
                ("last_altered_by", S), ("storage_location", S)],
    "volume_tags": [("catalog_name", S), ("schema_name", S), ("volume_name", S), ("tag_name", S), ("tag_value", S)],
    "routine_privileges": [("grantor", S), ("grantee", S), ("specific_catalog", S), ("specific_schema", S),
                           ("specific_name", S), ("routine_catalog", S), ("routine_schema", S), ("routine_name", S),
                           ("privilege_type", S), ("is_grantable", S), ("inherited_from", S)],
    "volume_privileges": [("grantor", S), ("grantee", S), ("volume_catalog", S), ("volume_schema", S),
                          ("volume_name", S), ("privilege_type", S), ("is_grantable", S), ("inherited_from", S)],
    "row_filters": [("table_catalog", S), ("table_schema", S), ("table_name", S), ("filter_catalog", S),
                    ("filter_schema", S), ("filter_name", S), ("target_columns", S)],
}
NEEDS_FACTS = {"tables", "columns"}


def _ts(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).replace(tzinfo=None) if ms else None


def rows_for(emu, ctx, cat, view):
    store = emu.store
    out = []
    if cat not in store.catalogs:
        raise SqlError("TABLE_OR_VIEW_NOT_FOUND", "The table or view %s cannot be found." %
                       ".".join(quote(p) for p in (cat, "information_schema", view)), "42P01")
    schemas = facts.list_schemas(emu, cat)
    tables = [(s, t) for s in schemas for t in facts.list_tables(emu, cat, s)]
    with store.lock:
        cm = store.catalogs[cat]
        if view == "catalogs":
            for c, m in sorted(store.catalogs.items()):
                out.append((c, m.owner, m.comment, _ts(m.created_at), m.created_by, _ts(m.updated_at), m.updated_by))
        elif view == "schemata":
            for s in schemas + ["information_schema"]:
                m = store.schemas.get("%s.%s" % (cat, s))
                owner = m.owner if m else cm.owner
                out.append((cat, s, owner, None, _ts(m.created_at if m else cm.created_at), m.created_by if m else cm.created_by,
                            _ts(m.updated_at if m else cm.updated_at), m.updated_by if m else cm.updated_by))
        elif view == "catalog_tags":
            for c, m in sorted(store.catalogs.items()):
                out += [(c, k, v) for k, v in sorted(m.tags.items())]
        elif view == "schema_tags":
            for s in schemas:
                m = store.schemas.get("%s.%s" % (cat, s))
                if m:
                    out += [(cat, s, k, v) for k, v in sorted(m.tags.items())]
        elif view in ("routines", "routine_privileges"):
            import uc_objects
            for s in schemas:
                for k in store.in_schema(store.functions, cat, s):
                    m, fn = store.functions[k], k.split(".", 2)[2]
                    if view == "routine_privileges":
                        for p, privs in sorted(m.grants.items()):
                            out += [(m.owner, p, cat, s, fn, cat, s, fn, pr.replace("_", " "), "NO", "NONE")
                                    for pr in sorted(privs)]
                        continue
                    fi = uc_objects.function_info((cat, s, fn), m)
                    out.append((cat, s, fn, cat, s, fn, "FUNCTION", fi.get("data_type"), fi.get("full_data_type"),
                                None, None, None, None, None, None, None, None, None, "SQL", m.body, None, None,
                                "SQL", "YES" if m.deterministic else "NO", m.data_access.replace("_", " "), "NO",
                                None, "DEFINER", "NO", m.comment, _ts(m.created_at), m.created_by,
                                _ts(m.updated_at), m.updated_by))
        elif view in ("volumes", "volume_tags", "volume_privileges"):
            for s in schemas:
                for k in store.in_schema(store.volumes, cat, s):
                    m, vol = store.volumes[k], k.split(".", 2)[2]
                    if view == "volumes":
                        out.append((cat, s, vol, "MANAGED", m.owner, m.comment, _ts(m.created_at), m.created_by,
                                    _ts(m.updated_at), m.updated_by, m.storage_location))
                    elif view == "volume_tags":
                        out += [(cat, s, vol, tk, tv) for tk, tv in sorted(m.tags.items())]
                    else:
                        for p, privs in sorted(m.grants.items()):
                            out += [(m.owner, p, cat, s, vol, pr.replace("_", " "), "NO", "NONE") for pr in sorted(privs)]
        elif view == "schema_privileges":
            for s in schemas:
                m = store.schemas.get("%s.%s" % (cat, s))
                if m:
                    for p, privs in sorted(m.grants.items()):
                        out += [(m.owner, p, cat, s, pr.replace("_", " "), "NO", None) for pr in sorted(privs)]
    if view in NEEDS_FACTS:
        for s, t in tables:
            f = facts.TableFacts(emu, cat, s, t)
            m = f.meta
            if view == "tables":
                out.append((cat, s, t, f.table_type, "YES" if f.table_type != "VIEW" else "NO", "PRESERVE", m.owner,
                            f.comment, _ts(m.created_at), m.created_by, _ts(m.updated_at), m.updated_by,
                            (f.provider or "").upper() or None, None, f.location))
            else:
                for i, fld in enumerate(f.schema.fields):
                    dt = fld.dataType
                    prec = dt.precision if dt.typeName() == "decimal" else None
                    scale = dt.scale if dt.typeName() == "decimal" else None
                    part = f.partition_columns.index(fld.name) if fld.name in f.partition_columns else None
                    out.append((cat, s, t, fld.name, i, fld.metadata.get("CURRENT_DEFAULT"), "YES" if fld.nullable else "NO",
                                dt.simpleString(), facts.uc_type_name(dt), prec, scale, part, fld.metadata.get("comment")))
        return out
    with store.lock:
        for s, t in tables:
            m = store.tables.get("%s.%s.%s" % (cat, s, t))
            if m is None:
                continue
            if view == "views":
                if m.view_definition is not None:
                    out.append((cat, s, t, m.view_definition, "NONE", "NO", "NO", None))
            elif view == "table_tags":
                out += [(cat, s, t, k, v) for k, v in sorted(m.tags.items())]
            elif view == "column_tags":
                for col, tags in sorted(m.column_tags.items()):
                    out += [(cat, s, t, col, k, v) for k, v in sorted(tags.items())]
            elif view == "table_privileges":
                for p, privs in sorted(m.grants.items()):
                    # INHERITED_FROM is not nullable (information-schema/table_privileges); a direct
                    # grant says NONE (stevin filters inherited_from = 'NONE', pinned live)
                    out += [(m.owner, p, cat, s, t, pr.replace("_", " "), "NO", "NONE") for pr in sorted(privs)]
            elif view == "table_constraints":
                if m.pk:
                    out.append((cat, s, m.pk["name"], cat, s, t, "PRIMARY KEY", "YES", "YES", "NO", None))
                for fk in m.fks:
                    out.append((cat, s, fk["name"], cat, s, t, "FOREIGN KEY", "YES", "YES", "NO", None))
            elif view == "key_column_usage":
                if m.pk:
                    out += [(cat, s, m.pk["name"], cat, s, t, col, i + 1, None) for i, col in enumerate(m.pk["columns"])]
                for fk in m.fks:
                    out += [(cat, s, fk["name"], cat, s, t, col, i + 1, i + 1) for i, col in enumerate(fk["columns"])]
            elif view == "constraint_column_usage":
                if m.pk:
                    out += [(cat, s, t, col, cat, s, m.pk["name"]) for col in m.pk["columns"]]
                for fk in m.fks:
                    pc, ps, pt = fk["parent"]
                    out += [(pc, ps, pt, col, cat, s, fk["name"]) for col in fk["parent_columns"]]
            elif view == "referential_constraints":
                for fk in m.fks:
                    pc, ps, pt = fk["parent"]
                    pm = store.tables.get("%s.%s.%s" % (pc, ps, pt))
                    out.append((cat, s, fk["name"], pc, ps, pm.pk["name"] if pm and pm.pk else None, "FULL", "NO ACTION", "NO ACTION"))
            elif view == "column_masks":
                for col, mk in sorted(m.masks.items()):
                    fc, fs, fn = mk["function_name"].split(".", 2)
                    out.append((cat, s, t, col, fc, fs, fn, ",".join(mk["using_column_names"]) or None))
            elif view == "row_filters":
                if m.row_filter:
                    fc, fs, fn = m.row_filter["function_name"].split(".", 2)
                    out.append((cat, s, t, fc, fs, fn, ",".join(m.row_filter["input_column_names"])))
    return out


def register(emu, ctx, sess, cat, view, tmp):
    if view not in VIEWS:
        raise SqlError("TABLE_OR_VIEW_NOT_FOUND", "The table or view %s cannot be found (not emulated)." %
                       ".".join(quote(p) for p in (cat, "information_schema", view)), "42P01")
    schema = ", ".join("%s %s" % (quote(n), t) for n, t in VIEWS[view])
    rows = rows_for(emu, ctx, cat, view)
    sess.createDataFrame(rows, schema).createOrReplaceTempView(tmp)
