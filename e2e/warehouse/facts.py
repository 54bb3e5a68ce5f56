"""Facts about tables, read from Spark/Delta and joined with the emulator's UC store.

Used by the UC REST handlers (TableInfo), information_schema and DESCRIBE ... AS JSON.
"""
import json

from sqltext import db_name, db_parts, dec, enc, quote, spark_table, unspark

_UC_TYPE = {"integer": "INT", "long": "LONG", "short": "SHORT", "byte": "BYTE", "string": "STRING",
            "boolean": "BOOLEAN", "double": "DOUBLE", "float": "FLOAT", "date": "DATE",
            "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ", "binary": "BINARY", "void": "NULL",
            "decimal": "DECIMAL", "array": "ARRAY", "map": "MAP", "struct": "STRUCT", "variant": "VARIANT",
            "char": "CHAR", "varchar": "STRING"}


def uc_type_name(dt):
    return _UC_TYPE.get(dt.typeName(), "USER_DEFINED_TYPE")


def lower_type_text(dt):
    """UC ColumnInfo.type_text is Spark's simple string ('bigint', 'decimal(10,2)', 'struct<a:int>')."""
    return dt.simpleString()


class TableFacts:
    def __init__(self, emu, cat, sch, tbl):
        self.cat, self.sch, self.tbl = cat, sch, tbl
        self.emu = emu
        self.full = "%s.%s.%s" % (cat, sch, tbl)
        self.db, self.stbl = db_name(cat, sch), enc(tbl)
        sp = emu.spark
        ct = sp.catalog_table(self.db, self.stbl)
        self.table_type = ct.tableType().name()          # MANAGED | EXTERNAL | VIEW
        self.provider = ct.provider().get() if ct.provider().isDefined() else None
        self.location = ct.location().toString() if self.table_type != "VIEW" else None
        self.created_ms = int(ct.createTime())
        self.view_text = ct.viewText().get() if ct.viewText().isDefined() else None
        sess = sp.session
        try:
            self.schema = sess.table(spark_table(cat, sch, tbl)).schema
        except Exception:
            # a view whose query no longer resolves (a column of its table renamed or dropped):
            # Unity Catalog still lists it, with the columns it was created with
            if self.table_type != "VIEW":
                raise
            from pyspark.sql.types import StructType
            self.schema = StructType.fromJson(json.loads(ct.schema().json()))
        self.detail = None
        self.raw_fields = {}      # Delta's own StructFields (metadata kept), by column name
        self.uc_properties = {}   # what UC adds to TableInfo.properties (see table_info)
        if (self.provider or "").lower() == "delta":
            self.detail = self._delta_facts(sp)
        raw_props = {} if self.detail else _scala_map(ct.properties())
        self.properties = dict(self.detail["properties"]) if self.detail else \
            {k: unspark(v) for k, v in raw_props.items()}
        if self.table_type == "VIEW":
            # Spark's view.catalogAndNamespace.part.N: the current catalog and schema at
            # creation, as Unity Catalog names them
            ns = db_parts(raw_props.get("view.catalogAndNamespace.part.1") or "")
            if ns and self.properties.get("view.catalogAndNamespace.part.0") == "spark_catalog":
                self.properties["view.catalogAndNamespace.part.0"] = ns[0]
                self.properties["view.catalogAndNamespace.part.1"] = ns[1]
        self.comment = (self.detail or {}).get("description") if self.detail else \
            (ct.comment().get() if ct.comment().isDefined() else None)
        self.partition_columns = list((self.detail or {}).get("partitionColumns") or [])
        self.clustering_columns = list((self.detail or {}).get("clusteringColumns") or [])
        with emu.store.lock:
            m = emu.store.tables.get(self.full)
            if m is None:
                m = emu.store.table(self.full, owner_if_new=emu.cfg.user)
            self.meta = m
        if m.kind is not None:                             # a pipeline's relation (executor.py)
            self.table_type = m.kind

    def _delta_facts(self, sp):
        """DESCRIBE DETAIL's facts, read from the Delta log snapshot (no Spark job: a listing of
        200 tables must not run 200 queries), plus what Unity Catalog publishes about a Delta
        table. UC's TableInfo.properties are the Delta configuration, the protocol as
        delta.minReaderVersion / delta.minWriterVersion / delta.feature.<f>=supported, the
        catalog stamps delta.lastUpdateVersion / delta.lastCommitTimestamp and, for a clustered
        table, clusteringColumns as a JSON list of field paths (delta-io/delta kernel
        UnityCatalogUtils.getPropertiesForCreate + CatalogCommitterUtils.extractProtocolProperties;
        terraform's sqlTableIsManagedProperty lists the same keys as service-maintained).
        ColumnInfo.type_json is the Delta schema's StructField as committed, so identity
        (delta.identity.*), generation (delta.generationExpression) and defaults
        (CURRENT_DEFAULT) are in its metadata (terraform reconstructs identity from it)."""
        jvm = sp.session._jvm
        none = jvm.scala.Option.empty()
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(sp.session._jsparkSession, self.location)
        snap = log.update(False, none, none)
        md, proto = snap.metadata(), snap.protocol()
        fields = json.loads(md.schemaString()).get("fields", [])
        self.raw_fields = {f["name"]: f for f in fields}
        features = sorted(seq_of(proto.readerAndWriterFeatureNames()))
        clustering = None
        for dm in seq_of(snap.domainMetadata()):
            if dm.domain() == "delta.clustering" and not dm.removed():
                physical = json.loads(dm.configuration()).get("clusteringColumns") or []
                clustering = [_logical_path(fields, p) for p in physical]
        props = _scala_map(md.configuration())
        uc = {"delta.minReaderVersion": str(proto.minReaderVersion()),
              "delta.minWriterVersion": str(proto.minWriterVersion()),
              "delta.lastUpdateVersion": str(snap.version()),
              "delta.lastCommitTimestamp": str(snap.timestamp())}
        for f in features:
            uc["delta.feature.%s" % f] = "supported"
        if clustering is not None:
            uc["clusteringColumns"] = json.dumps(clustering, separators=(",", ":"), ensure_ascii=False)
        self.uc_properties = uc
        return {"properties": props, "description": md.description() if md.description() is not None else None,
                "partitionColumns": list(seq_of(md.partitionColumns())),
                "clusteringColumns": [".".join(p) for p in clustering or []],
                "minReaderVersion": proto.minReaderVersion(), "minWriterVersion": proto.minWriterVersion(),
                "tableFeatures": features}

    def columns(self):
        out = []
        for i, f in enumerate(self.schema.fields):
            c = {"name": f.name, "type_text": lower_type_text(f.dataType), "type_name": uc_type_name(f.dataType),
                 "type_json": _type_json(self.raw_fields.get(f.name), f), "position": i, "nullable": f.nullable}
            if f.dataType.typeName() == "decimal":
                c["type_precision"], c["type_scale"] = f.dataType.precision, f.dataType.scale
            else:
                c["type_precision"], c["type_scale"] = 0, 0
            # a DBR-only type Unity Catalog lists for this column (the fault knob uc_column_types)
            c.update((self.emu.faults.get("uc_column_types") or {}).get(("%s.%s" % (self.full, f.name)).lower(), {}))
            if f.metadata.get("comment"):
                c["comment"] = f.metadata["comment"]
            vc = _ci_get(getattr(self.meta, "view_column_comments", {}), f.name)
            if vc:
                c["comment"] = vc
            elif vc == "":
                c.pop("comment", None)
            if f.name in self.partition_columns:
                c["partition_index"] = self.partition_columns.index(f.name)
            mk = _ci_get(self.meta.masks, f.name)
            if mk:
                c["mask"] = {"function_name": mk["function_name"], "using_column_names": mk["using_column_names"]}
            out.append(c)
        return out

    def constraints(self):
        out = []
        m = self.meta
        if m.pk:
            pk = {"name": m.pk["name"], "child_columns": list(m.pk["columns"])}
            if m.pk.get("rely"):
                pk["rely"] = True
            if m.pk.get("timeseries"):
                pk["timeseries_columns"] = list(m.pk["timeseries"])
            out.append({"primary_key_constraint": pk})
        for fk in m.fks:
            d = {"name": fk["name"], "child_columns": list(fk["columns"]),
                 "parent_table": ".".join(fk["parent"]), "parent_columns": list(fk["parent_columns"])}
            if fk.get("rely"):
                d["rely"] = True
            out.append({"foreign_key_constraint": d})
        return out

    def table_info(self, omit_columns=False, omit_properties=False):
        m = self.meta
        ti = {"name": self.tbl, "catalog_name": self.cat, "schema_name": self.sch, "full_name": self.full,
              "table_type": self.table_type if self.table_type != "VIEW" else "VIEW",
              "data_source_format": (self.provider or "").upper() or None,
              "owner": m.owner, "table_id": m.table_id,
              "created_at": m.created_at, "created_by": m.created_by,
              "updated_at": m.updated_at, "updated_by": m.updated_by,
              "metastore_id": "00000000-0000-0000-0000-000000000000"}
        if self.location:
            ti["storage_location"] = self.location
        if self.comment:
            ti["comment"] = self.comment
        if self.view_text:
            # the query as the caller wrote it (CREATE VIEW ... AS <query>); Spark's text has
            # the emulator's Spark-side names
            ti["view_definition"] = m.view_definition or unspark(self.view_text)
        if not omit_columns:
            ti["columns"] = self.columns()
        if not omit_properties:
            ti["properties"] = dict(self.properties, **self.uc_properties)
        cons = self.constraints()
        if cons:
            ti["table_constraints"] = cons
        if m.row_filter:
            ti["row_filter"] = {"function_name": m.row_filter["function_name"],
                                "input_column_names": list(m.row_filter["input_column_names"])}
        if self.table_type != "VIEW":
            # as the Tables API shows it: the table's own setting, or inherited (here from
            # the metastore, which leaves it disabled)
            po = getattr(m, "predictive_optimization", None)
            ti["enable_predictive_optimization"] = po or "INHERIT"
            ti["effective_predictive_optimization_flag"] = (
                {"value": po} if po else
                {"value": "DISABLE", "inherited_from_type": "METASTORE",
                 "inherited_from_name": "00000000-0000-0000-0000-000000000000"})
        return {k: v for k, v in ti.items() if v is not None}

    def describe_json(self):
        """DESCRIBE TABLE EXTENDED ... AS JSON (DBR 16.2+ shape; see README)."""
        m = self.meta
        cols = []
        for f in self.schema.fields:
            c = {"name": f.name, "type": type_json(f.dataType), "nullable": f.nullable}
            if f.metadata.get("comment"):
                c["comment"] = f.metadata["comment"]
            if f.metadata.get("CURRENT_DEFAULT"):
                c["default"] = f.metadata["CURRENT_DEFAULT"]
            cols.append(c)
        props = dict(self.properties)
        if self.detail:
            props.setdefault("delta.minReaderVersion", str(self.detail["minReaderVersion"]))
            props.setdefault("delta.minWriterVersion", str(self.detail["minWriterVersion"]))
            for feat in self.detail.get("tableFeatures") or []:
                props.setdefault("delta.feature.%s" % feat, "supported")
        d = {"table_name": self.tbl, "catalog_name": self.cat, "schema_name": self.sch,
             "namespace": [self.sch], "type": self.table_type, "provider": self.provider,
             "columns": cols, "partition_columns": self.partition_columns,
             "owner": m.owner, "table_properties": props,
             "created_time": _iso(m.created_at), "created_by": m.created_by,
             "last_access": "UNKNOWN", "partition_provider": "Catalog",
             "is_managed_location": self.table_type == "MANAGED"}
        if self.clustering_columns:
            d["clustering_columns"] = self.clustering_columns
        if self.location:
            d["location"] = self.location
        d["comment"] = self.comment or ""
        cons = []
        if m.pk:
            cons.append("(%s,PRIMARY KEY (%s))" % (m.pk["name"], ", ".join(quote(c) for c in m.pk["columns"])))
        for fk in m.fks:
            cons.append("(%s,FOREIGN KEY (%s) REFERENCES %s (%s))" % (
                fk["name"], ", ".join(quote(c) for c in fk["columns"]), ".".join(quote(p) for p in fk["parent"]),
                ", ".join(quote(c) for c in fk["parent_columns"])))
        if cons:
            d["table_constraints"] = "[" + ", ".join(cons) + "]"
        if m.masks:
            d["column_masks"] = [{"column_name": c, "function_name": _fn_parts(v["function_name"]),
                                  "using_column_names": list(v["using_column_names"])} for c, v in m.masks.items()]
        if m.row_filter:
            d["row_filter"] = {"function_name": _fn_parts(m.row_filter["function_name"]),
                               "column_names": list(m.row_filter["input_column_names"])}
        return json.dumps(d, ensure_ascii=False)


def _type_json(raw, field):
    """ColumnInfo.type_json: Delta's committed StructField when there is one, else Spark's."""
    if raw is None:
        return field.json()
    return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)


def _logical_path(fields, physical):
    """A clustering column as stored (physical names under column mapping) → logical names."""
    out, level = [], fields
    for part in physical:
        f = next((x for x in level if (x.get("metadata") or {}).get("delta.columnMapping.physicalName", x["name"]) == part), None)
        if f is None:
            out.append(part)
            level = []
            continue
        out.append(f["name"])
        t = f.get("type")
        level = t.get("fields", []) if isinstance(t, dict) and t.get("type") == "struct" else []
    return out


def seq_of(coll):
    """A Scala collection (Seq or Set, through py4j) as a Python list."""
    out, it = [], coll.iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def _fn_parts(full):
    c, s, f = full.split(".", 2)
    return {"catalog_name": c, "schema_name": s, "function_name": f}


def _iso(ms):
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def type_json(dt):
    """The AS JSON `type` encoding (apache/spark docs/sql-ref-syntax-aux-describe-table.md)."""
    tn = dt.typeName()
    if tn == "array":
        return {"name": "array", "element_type": type_json(dt.elementType), "element_nullable": dt.containsNull}
    if tn == "map":
        return {"name": "map", "key_type": type_json(dt.keyType), "value_type": type_json(dt.valueType),
                "value_nullable": dt.valueContainsNull}
    if tn == "struct":
        fs = []
        for f in dt.fields:
            x = {"name": f.name, "type": type_json(f.dataType), "nullable": f.nullable}
            if f.metadata.get("comment"):
                x["comment"] = f.metadata["comment"]
            fs.append(x)
        return {"name": "struct", "fields": fs}
    if tn == "decimal":
        return {"name": "decimal", "precision": dt.precision, "scale": dt.scale}
    if tn == "string":
        return {"name": "string", "collation": "UTF8_BINARY"}
    if tn == "timestamp":
        return {"name": "timestamp_ltz"}
    return {"name": {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}.get(tn, tn)}


def _ci_get(d, name):
    if name in d:
        return d[name]
    for k, v in d.items():
        if k.lower() == name.lower():
            return v
    return None


def _scala_map(m):
    out = {}
    it = m.iterator()
    while it.hasNext():
        kv = it.next()
        out[kv._1()] = kv._2()
    return out


def list_schemas(emu, cat):
    out = []
    for db in emu.spark.databases():
        p = db_parts(db)
        if p and p[0] == cat:
            out.append(p[1])
    return sorted(out)


def list_tables(emu, cat, sch):
    return sorted(dec(t) for t in emu.spark.tables_in(db_name(cat, sch)))
