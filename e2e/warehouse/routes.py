"""HTTP routes: Statement Execution 2.0, Warehouses, Unity Catalog 2.1, Workspace 2.0, OAuth M2M, admin."""
import base64
import re
import secrets
import time
import urllib.parse

import facts
import uc_objects
import workspace
from server import ApiError, chunk_json, parse_wait, statement_json
from sqltext import db_name, enc

EMU = None


def chunk_rows():
    return int(EMU.faults.get("chunk_rows") or EMU.cfg.chunk_rows)


def authenticate(h):
    auth = h.headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        raise ApiError(401, "UNAUTHENTICATED", "Credential was not sent or was of an unsupported type for this API.")
    tok = auth[len("Bearer "):].strip()
    if secrets.compare_digest(tok, EMU.cfg.token):
        return EMU.cfg.user
    info = EMU.tokens.get(tok)
    if info and info[1] > time.time():
        return info[0]
    if info:
        raise ApiError(401, "UNAUTHENTICATED", "Token expired.")
    raise ApiError(403, "PERMISSION_DENIED", "Invalid access token.")


def route(h, method, path, q, body, entry):
    def qv(name, default=None):
        v = q.get(name)
        return v[-1] if v else default

    # ------------------------------------------------------------------ admin (no auth)
    if path.startswith("/_emulator/"):
        return admin(h, method, path, q, body)
    # ------------------------------------------------------------------ OAuth M2M
    if path == "/oidc/.well-known/oauth-authorization-server":
        base = "http://%s" % h.headers.get("Host", "127.0.0.1")
        return h._send(200, {"issuer": base + "/oidc", "token_endpoint": base + "/oidc/v1/token",
                             "authorization_endpoint": base + "/oidc/v1/authorize",
                             "grant_types_supported": ["client_credentials"], "scopes_supported": ["all-apis"]})
    if path == "/oidc/v1/token" and method == "POST":
        return token(h, body)
    if not path.startswith("/api/"):
        raise ApiError(404, "ENDPOINT_NOT_FOUND", "No API found for '%s %s'" % (method, path))
    who = authenticate(h)
    entry["principal"] = who

    # ------------------------------------------------------------------ statements
    if path == "/api/2.0/sql/statements" and method == "POST":
        for f in ("statement", "warehouse_id"):
            if not body.get(f):
                raise ApiError(400, "INVALID_PARAMETER_VALUE", "%s is required" % f)
        if body["warehouse_id"] != EMU.cfg.warehouse_id:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", "SQL warehouse %s does not exist." % body["warehouse_id"])
        if EMU.warehouse.get_state() in ("DELETED", "DELETING"):
            raise ApiError(400, "INVALID_STATE", "SQL warehouse %s is deleted." % body["warehouse_id"])
        wait = parse_wait(body.get("wait_timeout"))
        owt = (body.get("on_wait_timeout") or "CONTINUE").upper()
        if owt not in ("CONTINUE", "CANCEL"):
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "on_wait_timeout must be CONTINUE or CANCEL")
        disp = (body.get("disposition") or "INLINE").upper()
        fmt = (body.get("format") or "JSON_ARRAY").upper()
        if disp != "INLINE":
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "disposition %s is not emulated (INLINE only)" % disp)
        if fmt != "JSON_ARRAY":
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "format %s is only supported with disposition EXTERNAL_LINKS" % fmt)
        entry["statement"] = body["statement"]
        st = EMU.submit(body, who)
        entry["statement_id"] = st.id
        if wait > 0 and not st.done.wait(wait):
            if owt == "CANCEL":
                EMU.cancel(st)
                st.done.wait(5)
        return h._send(200, statement_json(st, chunk_rows()))
    m = re.fullmatch(r"/api/2\.0/sql/statements/([^/]+)(/cancel|/result/chunks/(\d+))?", path)
    if m:
        with EMU.stmt_lock:
            st = EMU.statements.get(m.group(1))
        if st is None:
            raise ApiError(404, "NOT_FOUND", "Statement %s not found." % m.group(1))
        if m.group(2) == "/cancel" and method == "POST":
            EMU.cancel(st)
            return h._send(200, {})
        if m.group(3) is not None and method == "GET":
            if st.state != "SUCCEEDED":
                raise ApiError(400, "INVALID_STATE" if st.state != "CLOSED" else "NOT_FOUND",
                               "Statement %s is in state %s; no result available." % (st.id, st.state))
            return h._send(200, chunk_json(st, int(m.group(3)), chunk_rows()))
        if m.group(2) is None and method == "GET":
            return h._send(200, statement_json(st, chunk_rows()))
    # ------------------------------------------------------------------ warehouses
    if path == "/api/2.0/sql/warehouses" and method == "GET":
        return h._send(200, {"warehouses": [EMU.warehouse.info()]})
    m = re.fullmatch(r"/api/2\.0/sql/warehouses/([^/]+)(/start|/stop)?", path)
    if m:
        if m.group(1) != EMU.cfg.warehouse_id:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", "SQL warehouse %s does not exist." % m.group(1))
        if m.group(2) == "/start" and method == "POST":
            EMU.warehouse.start()
            return h._send(200, {})
        if m.group(2) == "/stop" and method == "POST":
            EMU.warehouse.stop()
            return h._send(200, {})
        if m.group(2) is None and method == "GET":
            return h._send(200, EMU.warehouse.info())
    # ------------------------------------------------------------------ Workspace (files, folders)
    if path.startswith("/api/2.0/workspace/"):
        return workspace.route(h, method, path, qv, body)
    # ------------------------------------------------------------------ Unity Catalog
    if path.startswith("/api/2.1/unity-catalog/"):
        if not EMU.spark.ready.is_set():
            raise ApiError(503, "TEMPORARILY_UNAVAILABLE", "The emulator's catalog is still starting.")
        return unity(h, method, path[len("/api/2.1/unity-catalog/"):], qv, body, who)
    raise ApiError(404, "ENDPOINT_NOT_FOUND", "No API found for '%s %s'" % (method, path))


def token(h, body):
    auth = h.headers.get("Authorization", "")
    cid = csec = None
    if auth.startswith("Basic "):
        try:
            cid, csec = base64.b64decode(auth[6:]).decode().split(":", 1)
            cid, csec = urllib.parse.unquote(cid), urllib.parse.unquote(csec)
        except Exception:  # noqa: BLE001
            pass
    cid = cid or body.get("client_id")
    csec = csec or body.get("client_secret")
    if body.get("grant_type") != "client_credentials":
        return h._send(400, {"error": "unsupported_grant_type", "error_description": "grant_type must be client_credentials"})
    if cid != EMU.cfg.client_id or csec is None or not secrets.compare_digest(csec, EMU.cfg.client_secret):
        return h._send(401, {"error": "invalid_client", "error_description": "Client authentication failed",
                             "error_id": h.request_id})
    scope = body.get("scope") or "all-apis"
    tok = "eyJ" + secrets.token_urlsafe(48)
    EMU.tokens[tok] = (cid, time.time() + EMU.cfg.token_ttl)
    h._send(200, {"access_token": tok, "token_type": "Bearer", "expires_in": EMU.cfg.token_ttl, "scope": scope})


def paginate(items, qv, key):
    mr = qv("max_results")
    tokn = qv("page_token")
    start = 0
    if tokn:
        try:
            last = base64.urlsafe_b64decode(tokn.encode()).decode()
        except Exception:  # noqa: BLE001
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "Invalid page_token")
        start = next((i for i, it in enumerate(items) if key(it) > last), len(items))
    if mr is None:
        return items[start:], None
    n = int(mr)
    if n < 0:
        raise ApiError(400, "INVALID_PARAMETER_VALUE", "max_results must be >= 0")
    n = n or EMU.cfg.uc_page_size
    page = items[start:start + n]
    nxt = None
    if start + n < len(items):
        nxt = base64.urlsafe_b64encode(key(page[-1]).encode()).decode()
    return page, nxt


def split_full(name, n, kind):
    parts = name.split(".")
    if len(parts) != n or not all(parts):
        raise ApiError(400, "INVALID_PARAMETER_VALUE", "Invalid %s name '%s'." % (kind, name))
    return [p.lower() for p in parts[:n - 1]] + [parts[-1].lower()]


def table_or_404(cat, sch, tbl):
    if cat not in EMU.store.catalogs:
        raise ApiError(404, "CATALOG_DOES_NOT_EXIST", "Catalog '%s' does not exist." % cat)
    if not EMU.spark.db_exists(db_name(cat, sch)):
        raise ApiError(404, "SCHEMA_DOES_NOT_EXIST", "Schema '%s.%s' does not exist." % (cat, sch))
    if not EMU.spark.table_exists(db_name(cat, sch), enc(tbl)):
        raise ApiError(404, "TABLE_DOES_NOT_EXIST", "Table '%s.%s.%s' does not exist." % (cat, sch, tbl))


def schema_info(cat, sch):
    store = EMU.store
    m = store.schemas.get("%s.%s" % (cat, sch)) or store.catalogs[cat]
    jdb = EMU.spark.jcatalog().getDatabaseMetadata(db_name(cat, sch))
    d = {"name": sch, "catalog_name": cat, "full_name": "%s.%s" % (cat, sch), "owner": m.owner,
         "schema_id": getattr(m, "id", None), "created_at": m.created_at, "created_by": m.created_by,
         "updated_at": m.updated_at, "updated_by": m.updated_by,
         "storage_root": getattr(m, "managed_location", None) or jdb.locationUri().toString(),
         "metastore_id": "00000000-0000-0000-0000-000000000000", "catalog_type": "MANAGED_CATALOG"}
    if jdb.description():
        d["comment"] = jdb.description()
    # SchemaInfo.properties: the schema's DBPROPERTIES (ALTER SCHEMA ... SET DBPROPERTIES)
    props = facts._scala_map(jdb.properties())
    d["properties"] = {k: v for k, v in sorted(props.items()) if k not in SPARK_RESERVED_DB_PROPS}
    return d


# what Spark keeps among a database's properties itself: not user DBPROPERTIES
SPARK_RESERVED_DB_PROPS = {"comment", "location", "owner", "provider"}


def unity(h, method, rest, qv, body, who):
    store = EMU.store
    # tables
    if rest == "tables" and method == "GET":
        cat, sch = (qv("catalog_name") or "").lower(), (qv("schema_name") or "").lower()
        if not cat:
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "catalog_name is required")
        if cat not in store.catalogs:
            raise ApiError(404, "CATALOG_DOES_NOT_EXIST", "Catalog '%s' does not exist." % cat)
        schemas = [sch] if sch else facts.list_schemas(EMU, cat)
        names = []
        for s in schemas:
            if not EMU.spark.db_exists(db_name(cat, s)):
                raise ApiError(404, "SCHEMA_DOES_NOT_EXIST", "Schema '%s.%s' does not exist." % (cat, s))
            names += [(s, t) for t in facts.list_tables(EMU, cat, s)]
        page, nxt = paginate(names, qv, lambda it: "%s.%s" % it)
        omit_c, omit_p = qv("omit_columns") == "true", qv("omit_properties") == "true"
        out = {"tables": [facts.TableFacts(EMU, cat, s, t).table_info(omit_c, omit_p) for s, t in page]}
        if nxt:
            out["next_page_token"] = nxt
        return h._send(200, out)
    m = re.fullmatch(r"tables/([^/]+)(/exists)?", rest)
    if m and method == "GET":
        cat, sch, tbl = split_full(urllib.parse.unquote(m.group(1)), 3, "table")
        if m.group(2):
            ok = cat in store.catalogs and EMU.spark.db_exists(db_name(cat, sch)) and \
                EMU.spark.table_exists(db_name(cat, sch), enc(tbl))
            return h._send(200, {"table_exists": bool(ok)})
        table_or_404(cat, sch, tbl)
        return h._send(200, facts.TableFacts(EMU, cat, sch, tbl).table_info())
    # schemas
    if rest == "schemas" and method == "GET":
        cat = (qv("catalog_name") or "").lower()
        if cat not in store.catalogs:
            raise ApiError(404, "CATALOG_DOES_NOT_EXIST", "Catalog '%s' does not exist." % cat)
        page, nxt = paginate(facts.list_schemas(EMU, cat), qv, lambda s: s)
        out = {"schemas": [schema_info(cat, s) for s in page]}
        if nxt:
            out["next_page_token"] = nxt
        return h._send(200, out)
    m = re.fullmatch(r"schemas/([^/]+)", rest)
    if m and method == "GET":
        cat, sch = split_full(urllib.parse.unquote(m.group(1)), 2, "schema")
        if cat not in store.catalogs:
            raise ApiError(404, "CATALOG_DOES_NOT_EXIST", "Catalog '%s' does not exist." % cat)
        if not EMU.spark.db_exists(db_name(cat, sch)):
            raise ApiError(404, "SCHEMA_DOES_NOT_EXIST", "Schema '%s.%s' does not exist." % (cat, sch))
        return h._send(200, schema_info(cat, sch))
    # catalogs
    m = re.fullmatch(r"catalogs(?:/([^/]+))?", rest)
    if m and method == "GET":
        def ci(c):
            cm = store.catalogs[c]
            return {"name": c, "owner": cm.owner, "comment": cm.comment, "created_at": cm.created_at,
                    "created_by": cm.created_by, "catalog_type": "MANAGED_CATALOG", "id": cm.id}
        if m.group(1):
            c = urllib.parse.unquote(m.group(1)).lower()
            if c not in store.catalogs:
                raise ApiError(404, "CATALOG_DOES_NOT_EXIST", "Catalog '%s' does not exist." % c)
            return h._send(200, ci(c))
        return h._send(200, {"catalogs": [ci(c) for c in sorted(store.catalogs)]})
    # functions and volumes (uc_objects.py)
    r = uc_objects.route(h, method, rest, qv)
    if r is not None:
        return r
    # permissions
    m = re.fullmatch(r"permissions/(table|schema|catalog|function|volume)/([^/]+)", rest)
    if m:
        kind, name = m.group(1), urllib.parse.unquote(m.group(2))
        sec = securable(kind, name)
        if method == "PATCH":
            with store.lock:
                for ch in body.get("changes") or []:
                    p = ch.get("principal")
                    cur = sec.grants.setdefault(p, set())
                    cur.update(x.upper() for x in ch.get("add") or [])
                    cur.difference_update(x.upper() for x in ch.get("remove") or [])
                    if not cur:
                        sec.grants.pop(p, None)
        elif method != "GET":
            raise ApiError(405, "BAD_REQUEST", "method not allowed")
        with store.lock:
            pas = [{"principal": p, "privileges": sorted(v)} for p, v in sorted(sec.grants.items())
                   if qv("principal") in (None, p)]
        # paged as documented: max_results unset = all, 0 = the server's page size, else >= 150
        mr = qv("max_results")
        if mr is not None and mr.isdigit() and 0 < int(mr) < 150:
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "max_results must be 0 or at least 150")
        page, nxt = paginate(pas, qv, lambda pa: pa["principal"])
        out = {"privilege_assignments": page}
        if nxt:
            out["next_page_token"] = nxt
        return h._send(200, out)
    # entity tag assignments
    if rest == "entity-tag-assignments" and method == "POST":
        ta = body.get("tag_assignment") or {}
        tags = tag_map(ta.get("entity_type"), ta.get("entity_name"))
        with store.lock:
            if ta.get("tag_key") in tags:
                raise ApiError(409, "ALREADY_EXISTS", "Tag '%s' already exists on %s." % (ta.get("tag_key"), ta.get("entity_name")))
            tags[ta["tag_key"]] = ta.get("tag_value") or ""
        return h._send(200, tag_json(ta["entity_type"], ta["entity_name"], ta["tag_key"], tags[ta["tag_key"]], who))
    m = re.fullmatch(r"entity-tag-assignments/([^/]+)/([^/]+)/tags(?:/([^/]+))?", rest)
    if m:
        et, en = m.group(1), urllib.parse.unquote(m.group(2))
        tags = tag_map(et, en)
        key = urllib.parse.unquote(m.group(3)) if m.group(3) else None
        with store.lock:
            if key is None and method == "GET":
                if EMU.faults.get("tag_empty_first_page") and not qv("page_token"):
                    # a token that sorts before every key: the next page starts at the first tag
                    first = base64.urlsafe_b64encode(b"\x00").decode()
                    return h._send(200, {"tag_assignments": [], "next_page_token": first})
                items = sorted(tags.items())
                page, nxt = paginate(items, qv, lambda kv: kv[0])
                out = {"tag_assignments": [tag_json(et, en, k, v, None) for k, v in page]}
                if nxt:
                    out["next_page_token"] = nxt
                return h._send(200, out)
            if key is not None and key not in tags and method in ("GET", "DELETE", "PATCH"):
                raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", "Tag '%s' is not assigned to %s." % (key, en))
            if method == "GET":
                return h._send(200, tag_json(et, en, key, tags[key], None))
            if method == "DELETE":
                tags.pop(key)
                return h._send(200, {})
            if method == "PATCH":
                tags[key] = body.get("tag_value") if "tag_value" in body else (body.get("tag_assignment") or {}).get("tag_value", "")
                return h._send(200, tag_json(et, en, key, tags[key], who))
    raise ApiError(404, "ENDPOINT_NOT_FOUND", "No API found for '%s /api/2.1/unity-catalog/%s' (not emulated)" % (method, rest))


def tag_json(et, en, k, v, who):
    d = {"entity_type": et, "entity_name": en, "tag_key": k}
    if v not in (None, ""):
        d["tag_value"] = v
    if who:
        d["updated_by"] = who
    return d


def securable(kind, name):
    store = EMU.store
    if kind == "table":
        cat, sch, tbl = split_full(name, 3, "table")
        table_or_404(cat, sch, tbl)
        return store.table("%s.%s.%s" % (cat, sch, tbl), owner_if_new=EMU.cfg.user)
    if kind == "schema":
        cat, sch = split_full(name, 2, "schema")
        if cat not in store.catalogs or not EMU.spark.db_exists(db_name(cat, sch)):
            raise ApiError(404, "SCHEMA_DOES_NOT_EXIST", "Schema '%s' does not exist." % name)
        from ucstore import SecurableMeta
        with store.lock:
            return store.schemas.setdefault("%s.%s" % (cat, sch), SecurableMeta(EMU.cfg.user))
    if kind in ("function", "volume"):
        return uc_objects.securable(kind, name)
    cat = name.lower()
    if cat not in store.catalogs:
        raise ApiError(404, "CATALOG_DOES_NOT_EXIST", "Catalog '%s' does not exist." % cat)
    return store.catalogs[cat]


def tag_map(et, en):
    if not et or not en:
        raise ApiError(400, "INVALID_PARAMETER_VALUE", "entity_type and entity_name are required")
    if et == "tables":
        return securable("table", en).tags
    if et == "columns":
        parts = en.split(".")
        if len(parts) != 4:
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "column entity_name must be catalog.schema.table.column")
        m = securable("table", ".".join(parts[:3]))
        cat, sch, tbl = [p.lower() for p in parts[:3]]
        names = [f.name for f in EMU.spark.session.table("`%s`.`%s`" % (db_name(cat, sch), enc(tbl))).schema.fields]
        col = next((n for n in names if n.lower() == parts[3].lower()), None)
        if col is None:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", "Column '%s' does not exist." % en)
        return m.column_tags.setdefault(col, {})
    if et == "schemas":
        return securable("schema", en).tags
    if et == "catalogs":
        return securable("catalog", en).tags
    if et in ("volumes", "functions"):
        return securable(et[:-1], en).tags
    raise ApiError(400, "INVALID_PARAMETER_VALUE", "entity_type %s is not emulated" % et)


def admin(h, method, path, q, body):
    if path == "/_emulator/health":
        sp = EMU.spark
        d = {"spark": "ready" if sp.ready.is_set() else ("failed" if sp.error else "starting"),
             "spark_start_seconds": sp.started_s, "error": sp.error, "warehouse_state": EMU.warehouse.get_state(),
             "warehouse_starts": EMU.warehouse.start_count(),
             "uptime_seconds": round(time.time() - EMU.started, 1)}
        return h._send(200 if sp.ready.is_set() else 503, d)
    if path == "/_emulator/faults":
        if method == "POST":
            try:
                v = EMU.faults.update(body)
            except ValueError as e:
                raise ApiError(400, "INVALID_PARAMETER_VALUE", str(e))
            if "warehouse_state" in body:
                EMU.warehouse.set_state(body["warehouse_state"])
            return h._send(200, v)
        if method == "DELETE":
            EMU.faults.reset()
            EMU.warehouse.set_state("RUNNING")
            return h._send(200, EMU.faults.update({}))
        return h._send(200, EMU.faults.update({}))
    if path == "/_emulator/requests":
        if method == "DELETE":
            with EMU.reqlog_lock:
                EMU.reqlog.clear()
            return h._send(200, {})
        since = int((q.get("since") or ["0"])[-1])
        with EMU.reqlog_lock:
            reqs = [dict(e) for e in EMU.reqlog if e["seq"] >= since]
            total = len(EMU.reqlog)
            stm = sum(1 for e in EMU.reqlog if e.get("statement") is not None)
        since_stm = sum(1 for e in reqs if e.get("statement") is not None)
        by = {}
        for e in reqs:
            k = "%s %s" % (e["method"], re.sub(r"/sql/statements/[^/]+", "/sql/statements/{id}", e["path"]))
            by[k] = by.get(k, 0) + 1
        return h._send(200, {"total_requests": total, "total_statements": stm, "statements": since_stm,
                             "warehouse_state": EMU.warehouse.get_state(),
                             "warehouse_starts": EMU.warehouse.start_count(),
                             "by_endpoint": by, "requests": reqs})
    if path == "/_emulator/statements":
        with EMU.stmt_lock:
            sts = [{"statement_id": s.id, "state": s.state, "statement": s.sql,
                    "duration_ms": int(((s.finished or time.time()) - s.created) * 1000)} for s in EMU.statements.values()]
        return h._send(200, {"statements": sts})
    raise ApiError(404, "ENDPOINT_NOT_FOUND", "unknown admin endpoint %s" % path)
