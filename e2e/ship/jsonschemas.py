#!/usr/bin/env python3
"""Standalone strict JSON schemas for kubeconform, made offline.

    jsonschemas.py OUTDIR --openapi openapi-v2.json [--crds FILE.yaml ...]

Writes OUTDIR/<kind><suffix>.json in kubeconform's layout
(`-schema-location 'OUTDIR/{{ .ResourceKind }}{{ .KindSuffix }}.json'`): the suffix is
`-<first part of the group>-<version>`, or `-<version>` for the core group.

* Built-in kinds come from the apiserver's /openapi/v2 document (the one the e2e
  control plane serves), one file per definition carrying x-kubernetes-group-version-kind,
  as openapi2jsonschema does with --stand-alone --strict --kubernetes: each file is
  self-contained (the definitions it reaches are copied into it under `definitions`, so
  recursive types need no inlining), every object with `properties` gets
  `additionalProperties: false`, int-or-string becomes string|integer and a Quantity
  string|number.
* CRD kinds come from each version's openAPIV3Schema: `nullable` becomes a null type,
  x-kubernetes-int-or-string string|integer, objects with properties are strict (unless
  x-kubernetes-preserve-unknown-fields), and the root gets apiVersion, kind and metadata
  (ObjectMeta, from the openapi document) and is strict too.

Needs PyYAML for --crds (the test venv has it).
"""
import argparse
import copy
import json
import os
import sys

REF = "#/definitions/"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def file_name(group, version, kind):
    suffix = "-" + group.split(".")[0].lower() if group else ""
    return f"{kind.lower()}{suffix}-{version.lower()}.json"


def refs_in(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith(REF):
            out.add(r[len(REF):])
        for v in node.values():
            refs_in(v, out)
    elif isinstance(node, list):
        for v in node:
            refs_in(v, out)


def reachable(defs, roots):
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in defs:
            raise SystemExit(f"jsonschemas.py: $ref to a missing definition {name}")
        seen.add(name)
        found = set()
        refs_in(defs[name], found)
        todo.extend(found - seen)
    return seen


def strict_openapi(node):
    """Built-in definitions: strict objects, int-or-string and Quantity as the apiserver reads them."""
    if isinstance(node, dict):
        if node.get("format") == "int-or-string":
            return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        out = {k: strict_openapi(v) for k, v in node.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [strict_openapi(v) for v in node]
    return node


def prepare_defs(openapi):
    defs = {name: strict_openapi(d) for name, d in openapi["definitions"].items()}
    if QUANTITY in defs:  # YAML `cpu: 1` is a number; the apiserver accepts it
        defs[QUANTITY] = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    return defs


def standalone(body, defs):
    names = set()
    refs_in(body, names)
    schema = {"$schema": "http://json-schema.org/draft-04/schema#"}
    schema.update(body)
    if names:
        schema["definitions"] = {n: defs[n] for n in sorted(reachable(defs, names))}
    return schema


def strict_crd(node):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in ("properties", "patternProperties", "definitions"):
                out[k] = {pk: strict_crd(pv) for pk, pv in v.items()}
            elif k in ("items", "additionalProperties", "not") and isinstance(v, dict):
                out[k] = strict_crd(v)
            elif k in ("allOf", "anyOf", "oneOf") and isinstance(v, list):
                out[k] = [strict_crd(x) for x in v]
            else:
                out[k] = v
        if out.pop("x-kubernetes-int-or-string", False):
            out.pop("type", None)
            out = {"oneOf": [{"type": "string"}, {"type": "integer"}], **out}
        if out.pop("nullable", False):
            t = out.get("type")
            if isinstance(t, str):
                out["type"] = [t, "null"]
            elif "oneOf" in out:
                out["oneOf"] = out["oneOf"] + [{"type": "null"}]
        preserve = out.get("x-kubernetes-preserve-unknown-fields") is True
        if "properties" in out and "additionalProperties" not in out and not preserve:
            out["additionalProperties"] = False
        return out
    return node


def crd_schemas(path, defs):
    import yaml  # PyYAML: only needed for CRDs

    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    out = {}
    for crd in docs:
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            body = copy.deepcopy(v["schema"]["openAPIV3Schema"])
            props = body.setdefault("properties", {})
            props["apiVersion"] = {"type": "string", "enum": [f"{group}/{v['name']}"]}
            props["kind"] = {"type": "string", "enum": [kind]}
            props["metadata"] = {"$ref": REF + OBJECT_META}
            body = strict_crd(body)
            body.setdefault("required", [])
            for r in ("apiVersion", "kind", "metadata"):
                if r not in body["required"]:
                    body["required"].append(r)
            out[file_name(group, v["name"], kind)] = standalone(body, defs)
    if not out:
        raise SystemExit(f"jsonschemas.py: no CustomResourceDefinition in {path}")
    return out


def builtin_schemas(openapi, defs):
    out = {}
    for name, d in openapi["definitions"].items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            # List kinds and the like are written too; kubeconform picks by kind and apiVersion
            fn = file_name(gvk.get("group", ""), gvk["version"], gvk["kind"])
            body = copy.deepcopy(defs[name])
            props = body.get("properties", {})
            api_version = (gvk["group"] + "/" if gvk.get("group") else "") + gvk["version"]
            if "apiVersion" in props:
                props["apiVersion"] = {"type": "string", "enum": [api_version]}
            if "kind" in props:
                props["kind"] = {"type": "string", "enum": [gvk["kind"]]}
            out.setdefault(fn, standalone(body, defs))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--openapi", required=True, help="the apiserver's /openapi/v2 document (JSON)")
    ap.add_argument("--crds", nargs="*", default=[], help="CRD YAML files")
    a = ap.parse_args()
    with open(a.openapi) as f:
        openapi = json.load(f)
    if "definitions" not in openapi or not openapi["definitions"]:
        raise SystemExit(f"jsonschemas.py: {a.openapi} has no definitions (not an /openapi/v2 document?)")
    defs = prepare_defs(openapi)
    schemas = builtin_schemas(openapi, defs)
    for c in a.crds:
        schemas.update(crd_schemas(c, defs))
    os.makedirs(a.outdir, exist_ok=True)
    for fn, s in schemas.items():
        with open(os.path.join(a.outdir, fn), "w") as f:
            json.dump(s, f)
    print(f"jsonschemas.py: {len(schemas)} schemas in {a.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
