"""Workspace API 2.0 (files and folders only), emulated in memory from the public docs:
docs.databricks.com/api/workspace-files/v1/{import,export,list,delete,mkdirs,get-status}.md.

Objects are FILEs and DIRECTORYs; notebooks, DBC/HTML/JUPYTER formats, repos and
`direct_download` are not emulated (400). `/`, `/Shared` and `/Users` exist at start.
"""
import base64
import itertools
import threading
import time

from server import ApiError

MAX_BYTES = 10 * 1024 * 1024  # import's documented content limit
NOTEBOOK_EXTENSIONS = (".py", ".sql", ".scala", ".r", ".ipynb", ".rmd")


def now_ms():
    return int(time.time() * 1000)


class Workspace:
    def __init__(self):
        self.lock = threading.Lock()
        self.ids = itertools.count(1000)
        self.objects = {}
        for p in ("/", "/Shared", "/Users"):
            self.objects[p] = self._new("DIRECTORY")

    def _new(self, kind, content=None):
        t = now_ms()
        o = {"object_type": kind, "object_id": next(self.ids), "created_at": t, "modified_at": t}
        if content is not None:
            o["content"] = content
        return o

    @staticmethod
    def norm(path):
        if not isinstance(path, str) or not path.startswith("/"):
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "Path (%s) must be an absolute path." % (path,))
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "Path (%s) is not a valid workspace path." % path)
        return "/" + "/".join(parts)

    @staticmethod
    def parent(path):
        return path.rsplit("/", 1)[0] or "/"

    def info(self, path):
        o = self.objects[path]
        out = {"path": path, "object_type": o["object_type"], "object_id": o["object_id"],
               "resource_id": str(o["object_id"])}
        if o["object_type"] == "FILE":
            out.update(created_at=o["created_at"], modified_at=o["modified_at"], size=len(o["content"]))
        return out

    def missing(self, path):
        return ApiError(404, "RESOURCE_DOES_NOT_EXIST", "Path (%s) doesn't exist." % path)

    # ---------------------------------------------------------------- endpoints
    def import_(self, body):
        path = self.norm(body.get("path"))
        fmt = body.get("format") or "SOURCE"
        if fmt not in ("AUTO", "RAW", "SOURCE"):
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "format %s is not emulated (AUTO, RAW, SOURCE files only)" % fmt)
        if fmt == "SOURCE" and not body.get("language"):
            raise ApiError(400, "INVALID_PARAMETER_VALUE",
                           "The language field is required to import a single file as SOURCE.")
        if fmt in ("SOURCE",) or (fmt == "AUTO" and path.lower().endswith(NOTEBOOK_EXTENSIONS)):
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "notebooks are not emulated: import %s as a file" % path)
        try:
            content = base64.b64decode(body.get("content") or "", validate=True)
        except ValueError:
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "content is not valid base64")
        if len(content) > MAX_BYTES:
            raise ApiError(400, "MAX_NOTEBOOK_SIZE_EXCEEDED", "File size imported is (%d bytes), exceeded max size (%d bytes)"
                           % (len(content), MAX_BYTES))
        overwrite = bool(body.get("overwrite", False))
        with self.lock:
            parent = self.parent(path)
            p = self.objects.get(parent)
            if p is None:
                raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", "The parent folder (%s) does not exist." % parent)
            if p["object_type"] != "DIRECTORY":
                raise ApiError(400, "INVALID_PARAMETER_VALUE", "The parent path (%s) is not a folder." % parent)
            old = self.objects.get(path)
            if old is not None and (not overwrite or old["object_type"] != "FILE"):
                raise ApiError(400, "RESOURCE_ALREADY_EXISTS", "Path (%s) already exists." % path)
            if old is not None:
                old["content"], old["modified_at"] = content, now_ms()
            else:
                self.objects[path] = self._new("FILE", content)
        return {}

    def export(self, q):
        path = self.norm(q("path"))
        fmt = q("format", "SOURCE")
        if fmt not in ("SOURCE", "AUTO", "RAW"):
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "format %s is not emulated (SOURCE, AUTO, RAW)" % fmt)
        if (q("direct_download") or "false").lower() == "true":
            raise ApiError(400, "INVALID_PARAMETER_VALUE", "direct_download is not emulated")
        with self.lock:
            o = self.objects.get(path)
            if o is None:
                raise self.missing(path)
            if o["object_type"] != "FILE":
                raise ApiError(400, "INVALID_PARAMETER_VALUE", "exporting a folder is not emulated: %s" % path)
            content = o["content"]
        ext = path.rsplit(".", 1)[1] if "." in path.rsplit("/", 1)[1] else ""
        return {"content": base64.b64encode(content).decode(), "file_type": ext}

    def list(self, q):
        path = self.norm(q("path"))
        with self.lock:
            o = self.objects.get(path)
            if o is None:
                raise self.missing(path)
            if o["object_type"] != "DIRECTORY":
                return {"objects": [self.info(path)]}
            prefix = path.rstrip("/") + "/"
            kids = sorted(p for p in self.objects if p != path and p.startswith(prefix) and "/" not in p[len(prefix):])
            objects = [self.info(p) for p in kids]
        # an empty folder answers without `objects`, as the API does
        return {"objects": objects} if objects else {}

    def get_status(self, q):
        path = self.norm(q("path"))
        with self.lock:
            if path not in self.objects:
                raise self.missing(path)
            return self.info(path)

    def delete(self, body):
        path = self.norm(body.get("path"))
        recursive = bool(body.get("recursive", False))
        with self.lock:
            if path not in self.objects:
                raise self.missing(path)
            if path == "/":
                raise ApiError(400, "INVALID_PARAMETER_VALUE", "The root folder cannot be deleted.")
            prefix = path + "/"
            below = [p for p in self.objects if p.startswith(prefix)]
            if below and not recursive:
                raise ApiError(400, "DIRECTORY_NOT_EMPTY", "Folder (%s) is not empty." % path)
            for p in below + [path]:
                del self.objects[p]
        return {}

    def mkdirs(self, body):
        path = self.norm(body.get("path"))
        with self.lock:
            parts = [p for p in path.split("/") if p]
            at = ""
            for part in parts:
                at += "/" + part
                o = self.objects.get(at)
                if o is None:
                    self.objects[at] = self._new("DIRECTORY")
                elif o["object_type"] != "DIRECTORY":
                    raise ApiError(400, "RESOURCE_ALREADY_EXISTS",
                                   "Cannot create directory %s: an object exists at %s." % (path, at))
        return {}


WORKSPACE = Workspace()


def route(h, method, path, qv, body):
    """Answers `/api/2.0/workspace/*`; False when the path is not one of its endpoints."""
    name = path[len("/api/2.0/workspace/"):]
    if name == "import" and method == "POST":
        return h._send(200, WORKSPACE.import_(body))
    if name == "export" and method == "GET":
        return h._send(200, WORKSPACE.export(qv))
    if name == "list" and method == "GET":
        return h._send(200, WORKSPACE.list(qv))
    if name == "get-status" and method == "GET":
        return h._send(200, WORKSPACE.get_status(qv))
    if name == "delete" and method == "POST":
        return h._send(200, WORKSPACE.delete(body))
    if name == "mkdirs" and method == "POST":
        return h._send(200, WORKSPACE.mkdirs(body))
    raise ApiError(404, "ENDPOINT_NOT_FOUND", "No API found for '%s %s'" % (method, path))
