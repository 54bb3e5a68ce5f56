"""The warehouse emulator for its tests over HTTP (urllib only): the `wh` fixture and its client.

Uses a running emulator when WAREHOUSE_DIR's env is exported (source DIR/env), else starts one
with start.sh (chunk size 2, so chunking is exercised) and stops it at the end.
"""
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMINGS = {}


@pytest.fixture(scope="session")
def wh():
    started = None
    if not os.environ.get("WAREHOUSE_URL"):
        t0 = time.time()
        env = dict(os.environ, WAREHOUSE_CHUNK_ROWS="2")
        d = subprocess.run([os.path.join(HERE, "start.sh")], env=env, check=True, capture_output=True, text=True).stdout.strip()
        TIMINGS["start.sh (s)"] = round(time.time() - t0, 1)
        started = d
        env_vars = {}
        for line in open(os.path.join(d, "env")):
            k, v = line.replace("export ", "").strip().split("=", 1)
            env_vars[k] = v
    else:
        env_vars = {k: os.environ[k] for k in ("WAREHOUSE_URL", "DATABRICKS_TOKEN", "DATABRICKS_WAREHOUSE_ID",
                                                "DATABRICKS_CLIENT_ID", "DATABRICKS_CLIENT_SECRET")}
    c = Client(env_vars)
    c.admin("POST", "/_emulator/faults", {"chunk_rows": 2})
    yield c
    c.admin("DELETE", "/_emulator/faults")
    print("\nTIMINGS", json.dumps(TIMINGS))
    if started:
        subprocess.run([os.path.join(HERE, "stop.sh"), started], check=False)


class Client:
    def __init__(self, env):
        self.url = env["WAREHOUSE_URL"]
        self.token = env["DATABRICKS_TOKEN"]
        self.wid = env["DATABRICKS_WAREHOUSE_ID"]
        self.cid, self.csec = env["DATABRICKS_CLIENT_ID"], env["DATABRICKS_CLIENT_SECRET"]

    def call(self, method, path, body=None, token=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        h = {"Content-Type": "application/json"}
        if token is not False:
            h["Authorization"] = "Bearer " + (token or self.token)
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.loads(r.read() or b"{}"), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}"), dict(e.headers)

    def admin(self, method, path, body=None):
        return self.call(method, path, body, token=False)[1]

    def submit(self, sql, wait="50s", **kw):
        body = {"warehouse_id": self.wid, "statement": sql, "wait_timeout": wait, "disposition": "INLINE",
                "format": "JSON_ARRAY", **kw}
        s, r, _ = self.call("POST", "/api/2.0/sql/statements", body)
        assert s == 200, r
        return r

    def wait(self, r, timeout=300):
        t0 = time.time()
        while r["status"]["state"] in ("PENDING", "RUNNING"):
            assert time.time() - t0 < timeout, r
            time.sleep(0.2)
            r = self.call("GET", "/api/2.0/sql/statements/" + r["statement_id"])[1]
        return r

    def sql(self, sql, **kw):
        t0 = time.time()
        r = self.wait(self.submit(sql, **kw))
        TIMINGS.setdefault("statements", []).append(round(time.time() - t0, 2))
        assert r["status"]["state"] == "SUCCEEDED", r["status"]
        rows = list(r.get("result", {}).get("data_array", []))
        nxt = r.get("result", {}).get("next_chunk_internal_link")
        while nxt:
            c = self.call("GET", nxt)[1]
            rows += c["data_array"]
            nxt = c.get("next_chunk_internal_link")
        return rows, r

    def fail(self, sql, **kw):
        r = self.wait(self.submit(sql, **kw))
        assert r["status"]["state"] == "FAILED", r
        return r["status"]


def uniq(prefix="s"):
    return prefix + uuid.uuid4().hex[:6]
