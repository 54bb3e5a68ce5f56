#!/usr/bin/env python3
"""Checks on a rendered chart (or kustomize build) that a schema cannot express.

    policy.py RENDERED.yaml --release-namespace NS [--replicas N] [--watch-namespace NS]
              [--write-config FILE]

* RBAC is exactly what `delta-operator run` calls (the list below, read from
  crates/controller/src/, kube-runtime's events.rs and kube-lease-manager's state.rs): no verb
  more, none less, Leases only in the release namespace, and the webhook configuration
  (get, patch) by its one name only, when the operator patches its self-signed CA in.
* The admission webhook, when rendered: --webhook-addr on the container's `webhook` port,
  which its Service targets; either --webhook-config naming the rendered configuration
  (self-signed CA) or --webhook-cert-dir on a mounted Secret with cert-manager's CA
  injection; an explicit failurePolicy.
* The Deployment runs non-root with a read-only root filesystem, no privilege
  escalation, no capabilities, the RuntimeDefault seccomp profile, requests and a memory
  limit, /healthz and /readyz on the --listen port, POD_NAMESPACE and POD_NAME from the
  downward API, --leader-elect at every replica count, the config mounted where
  --config points, and every local lake root on a writable volume.
--write-config writes the rendered config.yaml (check.sh loads it with the operator).
Prints each problem and exits 1 if there is any.
"""
import argparse
import sys

import yaml

# (namespace or "*" for cluster-wide, apiGroup, resource) -> verbs
def expected_rbac(release_ns, watch_ns, webhook_config=None):
    scope = watch_ns or "*"
    extra = {}
    if webhook_config:
        # the self-signed CA into the caBundle (crates/controller/src/webhook.rs), one name only
        extra[("*", "admissionregistration.k8s.io", "validatingwebhookconfigurations")] = {"get", "patch"}
    return extra | {
        (scope, "delta-operator.io", "deltatables"): {"list", "watch", "patch"},
        (scope, "delta-operator.io", "deltaschemas"): {"list", "watch"},
        # views, functions, volumes: finalizers (deletionPolicy Delete) like tables
        (scope, "delta-operator.io", "deltaviews"): {"list", "watch", "patch"},
        (scope, "delta-operator.io", "deltafunctions"): {"list", "watch", "patch"},
        (scope, "delta-operator.io", "deltavolumes"): {"list", "watch", "patch"},
        (scope, "delta-operator.io", "deltatables/status"): {"patch"},
        (scope, "delta-operator.io", "deltaschemas/status"): {"patch"},
        (scope, "delta-operator.io", "deltaviews/status"): {"patch"},
        (scope, "delta-operator.io", "deltafunctions/status"): {"patch"},
        (scope, "delta-operator.io", "deltavolumes/status"): {"patch"},
        (scope, "events.k8s.io", "events"): {"create", "patch"},
        # the whole plan when status holds a cut (server-side apply: patch, and create the first time)
        (scope, "", "configmaps"): {"create", "patch"},
        # list: sharded replicas (--shards > 1) list the labelled member and shard Leases
        (release_ns, "coordination.k8s.io", "leases"): {"get", "list", "create", "patch"},
    }


problems = []


def problem(msg):
    problems.append(msg)


def get(obj, *path, default=None):
    for p in path:
        if isinstance(obj, dict) and p in obj:
            obj = obj[p]
        elif isinstance(obj, list) and isinstance(p, int) and p < len(obj):
            obj = obj[p]
        else:
            return default
    return obj


def check_rbac(docs, sa_name, release_ns, watch_ns, webhook_config=None):
    roles = {}
    for d in docs:
        if d["kind"] in ("ClusterRole", "Role"):
            ns = "*" if d["kind"] == "ClusterRole" else d["metadata"].get("namespace", release_ns)
            roles[(d["kind"], ns, d["metadata"]["name"])] = d.get("rules", [])
    granted = {}
    bound = 0
    for d in docs:
        if d["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        subjects = d.get("subjects", [])
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name and s.get("namespace") == release_ns for s in subjects):
            problem(f"{d['kind']} {d['metadata']['name']} does not bind ServiceAccount {release_ns}/{sa_name}")
            continue
        if len(subjects) != 1:
            problem(f"{d['kind']} {d['metadata']['name']} binds more than the operator's ServiceAccount: {subjects}")
        bound += 1
        binding_ns = "*" if d["kind"] == "ClusterRoleBinding" else d["metadata"].get("namespace", release_ns)
        ref = d["roleRef"]
        role_ns = "*" if ref["kind"] == "ClusterRole" else binding_ns
        key = (ref["kind"], role_ns, ref["name"])
        if key not in roles:
            problem(f"{d['kind']} {d['metadata']['name']} refers to {ref['kind']} {ref['name']}, which the chart does not render")
            continue
        for rule in roles[key]:
            if rule.get("nonResourceURLs"):
                problem(f"{ref['kind']} {ref['name']}: unexpected rule {rule}")
            if rule.get("resourceNames") and not (
                webhook_config
                and rule.get("resources") == ["validatingwebhookconfigurations"]
                and rule.get("resourceNames") == [webhook_config]
            ):
                problem(f"{ref['kind']} {ref['name']}: unexpected rule {rule}")
            if rule.get("resources") == ["validatingwebhookconfigurations"] and rule.get("resourceNames") != [webhook_config]:
                problem(f"{ref['kind']} {ref['name']}: webhook configurations granted beyond the chart's own: {rule}")
            for g in rule.get("apiGroups", []):
                for r in rule.get("resources", []):
                    for v in rule.get("verbs", []):
                        if "*" in (g, r, v):
                            problem(f"{ref['kind']} {ref['name']}: wildcard in {rule}")
                        granted.setdefault((binding_ns, g, r), set()).add(v)
    if bound == 0:
        problem("no binding grants the operator's ServiceAccount anything")
    want = expected_rbac(release_ns, watch_ns, webhook_config)
    for key in sorted(set(want) | set(granted)):
        w, g = want.get(key, set()), granted.get(key, set())
        if w - g:
            problem(f"RBAC: missing {sorted(w - g)} on {key[2]} ({key[1] or 'core'}) in {'all namespaces' if key[0] == '*' else 'namespace ' + key[0]}: the operator calls them")
        if g - w:
            problem(f"RBAC: {sorted(g - w)} on {key[2]} ({key[1] or 'core'}) in {'all namespaces' if key[0] == '*' else 'namespace ' + key[0]} is more than the operator calls")


def check_deployment(docs, replicas, watch_ns, write_config):
    deps = [d for d in docs if d["kind"] == "Deployment"]
    if len(deps) != 1:
        problem(f"expected one Deployment, found {len(deps)}")
        return None
    dep = deps[0]
    name = dep["metadata"]["name"]
    if get(dep, "spec", "replicas") != replicas:
        problem(f"Deployment {name}: replicas {get(dep, 'spec', 'replicas')}, expected {replicas}")
    pod = dep["spec"]["template"]["spec"]
    psc = pod.get("securityContext", {})
    if psc.get("runAsNonRoot") is not True:
        problem("pod securityContext.runAsNonRoot is not true")
    if get(psc, "seccompProfile", "type") != "RuntimeDefault":
        problem("pod securityContext.seccompProfile.type is not RuntimeDefault")
    if psc.get("runAsUser", 1) == 0:
        problem("pod runs as uid 0")
    if pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC"):
        problem("pod uses host namespaces")
    containers = pod.get("containers", [])
    if len(containers) != 1:
        problem(f"expected one container, found {len(containers)}")
        return None
    c = containers[0]
    sc = c.get("securityContext", {})
    for k, v in (("runAsNonRoot", True), ("readOnlyRootFilesystem", True), ("allowPrivilegeEscalation", False)):
        if sc.get(k) is not v:
            problem(f"container securityContext.{k} is not {str(v).lower()}")
    if get(sc, "capabilities", "drop") != ["ALL"] or get(sc, "capabilities", "add"):
        problem(f"container capabilities are not drop [ALL]: {sc.get('capabilities')}")
    if sc.get("privileged"):
        problem("container is privileged")
    res = c.get("resources", {})
    for k in ("cpu", "memory"):
        if not get(res, "requests", k):
            problem(f"container has no {k} request")
    if not get(res, "limits", "memory"):
        problem("container has no memory limit")
    args = c.get("args", [])
    if not args or args[0] != "run":
        problem(f"container args do not start with `run`: {args}")
    flags = dict(a.split("=", 1) if "=" in a else (a, "") for a in args[1:])
    listen = flags.get("--listen", "0.0.0.0:8080")
    port = int(listen.rsplit(":", 1)[1])
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    if ports.get("http") != port:
        problem(f"container port http is {ports.get('http')}, but --listen is {listen}")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        hg = get(c, probe, "httpGet", default={})
        if hg.get("path") != path or hg.get("port") not in ("http", port):
            problem(f"{probe} is not GET {path} on the health port: {c.get(probe)}")
    # at any replica count: a rolling update's new pod must not run the controllers beside
    # the old one (it would report the old pod's running step as cut short)
    if "--leader-elect" not in flags:
        problem(f"--leader-elect missing with {replicas} replica(s)")
    shards = flags.get("--shards", "1")
    if not shards.isdigit() or not 1 <= int(shards) <= 1024:
        problem(f"--shards={shards} is not a shard count from 1 to 1024")
    if watch_ns and flags.get("--namespace") != watch_ns:
        problem(f"--namespace={watch_ns} missing: {args}")
    if not watch_ns and "--namespace" in flags:
        problem("--namespace set without watchNamespace")
    env = {e["name"]: e for e in c.get("env", [])}
    for var, field in (("POD_NAMESPACE", "metadata.namespace"), ("POD_NAME", "metadata.name")):
        if get(env.get(var, {}), "valueFrom", "fieldRef", "fieldPath") != field:
            problem(f"env {var} is not the downward API's {field}")
    # the config: --config points into a mounted ConfigMap with that key
    cfg = flags.get("--config")
    if not cfg:
        problem("no --config flag")
        return None
    cfg_dir, cfg_key = cfg.rsplit("/", 1)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"].rstrip("/"): m for m in c.get("volumeMounts", [])}
    m = mounts.get(cfg_dir)
    cm_name = get(volumes.get(m["name"] if m else "", {}), "configMap", "name")
    cms = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == cm_name]
    if not cms or cfg_key not in cms[0].get("data", {}):
        problem(f"--config {cfg} is not a key of a mounted ConfigMap")
        return None
    config = yaml.safe_load(cms[0]["data"][cfg_key])
    if write_config:
        with open(write_config, "w") as f:
            f.write(cms[0]["data"][cfg_key])
    # every local lake root must be on a writable volume (the root filesystem is read-only)
    writable = [p for p, mm in mounts.items() if not mm.get("readOnly") and ("emptyDir" in volumes.get(mm["name"], {}) or "persistentVolumeClaim" in volumes.get(mm["name"], {}))]
    if "/tmp" not in writable:
        problem("no writable /tmp")
    workdir = c.get("workingDir", "/")
    for tname, t in (config.get("targets") or {}).items():
        root = get(t, "lake", "root")
        if not root or root.startswith("s3://"):
            continue
        path = root[len("file://"):] if root.startswith("file://") else root
        if not path.startswith("/"):
            path = workdir.rstrip("/") + "/" + path
        if not any(path == w or path.startswith(w + "/") for w in writable):
            problem(f"target {tname}: lake root {root} is not on a writable volume ({writable})")
    return pod.get("serviceAccountName")


def check_webhook(docs):
    """The name of the webhook configuration the operator patches (self-signed CA), if any."""
    vwcs = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    deps = [d for d in docs if d["kind"] == "Deployment"]
    if not deps or not get(deps[0], "spec", "template", "spec", "containers"):
        return None
    pod = deps[0]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    flags = dict(a.split("=", 1) if "=" in a else (a, "") for a in c.get("args", [])[1:])
    if not vwcs:
        if any(f.startswith("--webhook") for f in flags):
            problem("--webhook-* flags without a ValidatingWebhookConfiguration")
        return None
    if len(vwcs) != 1:
        problem(f"expected one ValidatingWebhookConfiguration, found {len(vwcs)}")
        return None
    vwc = vwcs[0]
    name = vwc["metadata"]["name"]
    addr = flags.get("--webhook-addr")
    if not addr:
        problem("a ValidatingWebhookConfiguration is rendered but the operator has no --webhook-addr")
        return None
    port = int(addr.rsplit(":", 1)[1])
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    if ports.get("webhook") != port:
        problem(f"container port webhook is {ports.get('webhook')}, but --webhook-addr is {addr}")
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for w in vwc.get("webhooks", []):
        svc = get(w, "clientConfig", "service", default={})
        s = services.get(svc.get("name"))
        if not s:
            problem(f"webhook {w.get('name')}: its Service {svc.get('name')} is not rendered")
        elif not any(p.get("port") == svc.get("port", 443) and p.get("targetPort") in ("webhook", port) for p in get(s, "spec", "ports", default=[])):
            problem(f"webhook {w.get('name')}: Service {svc.get('name')} does not send port {svc.get('port', 443)} to the webhook port")
        if svc.get("path") != "/validate":
            problem(f"webhook {w.get('name')}: path is {svc.get('path')}, the operator serves /validate")
        if w.get("failurePolicy") not in ("Ignore", "Fail"):
            problem(f"webhook {w.get('name')}: failurePolicy must be explicit (Ignore or Fail)")
        if w.get("sideEffects") != "None":
            problem(f"webhook {w.get('name')}: sideEffects is not None")
    injected = "cert-manager.io/inject-ca-from" in (get(vwc, "metadata", "annotations", default={}) or {})
    if "--webhook-config" in flags:
        if flags["--webhook-config"] != name:
            problem(f"--webhook-config={flags['--webhook-config']}, but the configuration is {name}")
        if injected:
            problem("both cert-manager's CA injection and --webhook-config patch the caBundle")
        return name
    cert_dir = flags.get("--webhook-cert-dir")
    if not cert_dir or not injected:
        problem("the webhook has neither --webhook-config (self-signed CA) nor --webhook-cert-dir with cert-manager's CA injection")
        return None
    mounts = {m["mountPath"].rstrip("/"): m for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    m = mounts.get(cert_dir.rstrip("/"))
    if not m or "secret" not in volumes.get(m["name"], {}):
        problem(f"--webhook-cert-dir {cert_dir} is not a mounted Secret")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rendered")
    ap.add_argument("--release-namespace", required=True)
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--watch-namespace", default="")
    ap.add_argument("--write-config")
    a = ap.parse_args()
    with open(a.rendered) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        labels = get(d, "metadata", "labels", default={}) or {}
        for l in ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by"):
            if d["kind"] not in ("CustomResourceDefinition", "Namespace") and l not in labels:
                problem(f"{d['kind']} {d['metadata']['name']} has no label {l}")
    sa = check_deployment(docs, a.replicas, a.watch_namespace, a.write_config)
    if sa:
        if not any(d["kind"] == "ServiceAccount" and d["metadata"]["name"] == sa for d in docs):
            problem(f"the Deployment runs as ServiceAccount {sa}, which is not rendered")
        check_rbac(docs, sa, a.release_namespace, a.watch_namespace, check_webhook(docs))
    for p in problems:
        print(f"policy: {a.rendered}: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"policy: {a.rendered}: ok ({len(docs)} objects)", file=sys.stderr)


if __name__ == "__main__":
    main()
