"""The emulator's own Unity Catalog metadata: what OSS Delta/Spark does not have.

Keyed by lower-cased full name ('cat.sch.tbl'); each table also has a stable table_id that
survives RENAME and CREATE OR REPLACE (as UC keeps the table id on replace).
All access is under Store.lock.
"""
import threading
import time
import uuid


def now_ms():
    return int(time.time() * 1000)


class TableMeta:
    def __init__(self, owner, table_id=None):
        self.table_id = table_id or str(uuid.uuid4())
        self.owner = owner
        self.created_by = owner
        self.created_at = now_ms()
        self.updated_at = self.created_at
        self.updated_by = owner
        self.tags = {}            # key -> value
        self.column_tags = {}     # column name -> {key: value}
        self.grants = {}          # principal -> set(privileges)
        self.pk = None            # {name, columns, rely, timeseries}
        self.fks = []             # [{name, columns, parent: (c,s,t), parent_columns, rely}]
        self.masks = {}           # column -> {function_name, using_column_names}
        self.row_filter = None    # {function_name, input_column_names}
        # ALTER TABLE ... {ENABLE|DISABLE|INHERIT} PREDICTIVE OPTIMIZATION; INHERIT (None) is
        # the account's default here, DISABLE (no metastore enables it)
        self.predictive_optimization = None
        # what a pipeline made: STREAMING_TABLE or MATERIALIZED_VIEW (a Delta table in
        # Spark underneath); None for a table or view, whose type Spark knows
        self.kind = None
        # a view's query as the caller wrote it (TableInfo.view_definition); Spark keeps the
        # text with the emulator's Spark-side names
        self.view_definition = None
        # a view's column comments set by COMMENT ON COLUMN (Spark cannot alter a view's
        # column): column name -> comment, over the comments of its CREATE's column list
        self.view_column_comments = {}

    def touch(self, who):
        self.updated_at = now_ms()
        self.updated_by = who


class SecurableMeta:
    """Catalogs and schemas: owner, tags, grants (comments live in Spark for schemas)."""

    def __init__(self, owner, comment=None):
        self.id = str(uuid.uuid4())
        self.owner = owner
        self.comment = comment
        self.created_at = now_ms()
        self.created_by = owner
        self.updated_at = self.created_at
        self.updated_by = owner
        self.tags = {}
        self.grants = {}
        # a schema's MANAGED LOCATION (emulated: see executor.take_managed_location)
        self.managed_location = None


class FunctionMeta:
    """A SQL function in Unity Catalog (FunctionInfo). The function itself is a real Spark 4
    SQL function (CREATE FUNCTION ... RETURN, run by Spark); this is what UC adds and what
    the caller wrote: parameters [{name, type_text, comment, default}], the return type, the
    body after RETURN, the characteristics."""

    def __init__(self, owner):
        self.function_id = str(uuid.uuid4())
        self.owner = owner
        self.created_by = owner
        self.created_at = now_ms()
        self.updated_at = self.created_at
        self.updated_by = owner
        self.grants = {}
        self.tags = {}
        self.params = []          # [{name, type_text, comment, default}]
        self.returns = None       # the RETURNS type text, None for RETURNS TABLE
        self.returns_table = None  # RETURNS TABLE (...) text
        self.body = ""            # routine_definition: the text after RETURN, as written
        self.deterministic = True
        self.data_access = "CONTAINS_SQL"
        self.comment = None

    def touch(self, who):
        self.updated_at = now_ms()
        self.updated_by = who


class VolumeMeta:
    """A managed volume (VolumeInfo): a folder in the emulator's directory."""

    def __init__(self, owner, storage_location, comment=None):
        self.volume_id = str(uuid.uuid4())
        self.owner = owner
        self.created_by = owner
        self.created_at = now_ms()
        self.updated_at = self.created_at
        self.updated_by = owner
        self.grants = {}
        self.tags = {}
        self.comment = comment
        self.storage_location = storage_location

    def touch(self, who):
        self.updated_at = now_ms()
        self.updated_by = who


class Store:
    def __init__(self):
        self.lock = threading.RLock()
        self.catalogs = {}    # name -> SecurableMeta
        self.schemas = {}     # 'cat.sch' -> SecurableMeta
        self.tables = {}      # 'cat.sch.tbl' -> TableMeta
        self.dropped = []     # [{table_id, full_name, db, trash, meta, dropped_at, dropped_by}]
        self.functions = {}   # 'cat.sch.fn' -> FunctionMeta
        self.volumes = {}     # 'cat.sch.vol' -> VolumeMeta
        self._trash_seq = 0

    @staticmethod
    def key(*parts):
        return ".".join(p.lower() for p in parts)

    def next_trash_name(self):
        with self.lock:
            self._trash_seq += 1
            return "__dropped_%d" % self._trash_seq

    def table(self, full, owner_if_new=None):
        with self.lock:
            m = self.tables.get(full)
            if m is None and owner_if_new is not None:
                m = self.tables[full] = TableMeta(owner_if_new)
            return m

    def in_schema(self, d, cat, sch):
        """The keys of d ('cat.sch.name') in one schema, sorted."""
        pre = "%s.%s." % (cat, sch)
        with self.lock:
            return sorted(k for k in d if k.startswith(pre) and "." not in k[len(pre):])

    def rename_table(self, old, new):
        with self.lock:
            m = self.tables.pop(old, None)
            if m is not None:
                self.tables[new] = m
            old_t = tuple(old.split(".", 2)) if old.count(".") >= 2 else None
            for other in self.tables.values():
                for fk in other.fks:
                    if self.key(*fk["parent"]) == old:
                        fk["parent"] = tuple(new.split(".", 2))
            return m, old_t

    def drop_table_meta(self, full):
        with self.lock:
            return self.tables.pop(full, None)

    def rename_column(self, full, old, new):
        """UC: RENAME COLUMN silently drops PKs (and other tables' FKs) that use the column."""
        with self.lock:
            m = self.tables.get(full)
            if m is None:
                return
            for d in (m.column_tags, m.masks):
                k = _ci_key(d, old)
                if k is not None:
                    d[new] = d.pop(k)
            self._drop_constraints_on_column(full, m, old)

    def drop_column(self, full, col):
        with self.lock:
            m = self.tables.get(full)
            if m is None:
                return
            for d in (m.column_tags, m.masks):
                k = _ci_key(d, col)
                if k is not None:
                    d.pop(k)
            self._drop_constraints_on_column(full, m, col)

    def _drop_constraints_on_column(self, full, m, col):
        lc = col.lower()
        if m.pk and lc in [c.lower() for c in m.pk["columns"]]:
            m.pk = None
            for other in self.tables.values():
                other.fks = [fk for fk in other.fks if not (self.key(*fk["parent"]) == full and
                                                            lc in [c.lower() for c in fk["parent_columns"]])]
        m.fks = [fk for fk in m.fks if lc not in [c.lower() for c in fk["columns"]]]


def _ci_key(d, name):
    if name in d:
        return name
    for k in d:
        if k.lower() == name.lower():
            return k
    return None
