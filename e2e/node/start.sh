#!/usr/bin/env bash
# A real single-node cluster for the tests that need pods: the e2e control plane
# (etcd + kube-apiserver, e2e/controlplane/start.sh, with NODE_IP set) plus
# kube-controller-manager, kube-scheduler, kube-proxy (iptables) and a kubelet on
# containerd + runc (cgroupfs), pods on a CNI bridge. Needs root.
# Usage: start.sh [DIR]   Env: NODE_IMAGES (image tarballs to import into containerd, one
#   per line or space-separated; the pause image among them), PAUSE_IMAGE (its reference),
#   NODE_IP (default: the source address of the default route), START_TIMEOUT (s, default 120).
# Writes $DIR/env (sourced by the tests: KUBECONFIG, NODE_IP, ...) and $DIR/*.log;
# prints DIR on stdout. Fails loudly (never skips) when a part is missing; logs are kept.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[[ $(id -u) == 0 ]] || { echo "node/start.sh: needs root (a kubelet, containerd, iptables)" >&2; exit 1; }
for t in containerd containerd-shim-runc-v2 runc ctr iptables ip curl; do
  command -v "$t" >/dev/null || { echo "node/start.sh: '$t' is required (.ci/run installs it)" >&2; exit 1; }
done
CNI_BIN=${CNI_BIN:-/usr/lib/cni}
for p in bridge host-local loopback portmap; do
  [[ -x $CNI_BIN/$p ]] || { echo "node/start.sh: CNI plugin $CNI_BIN/$p is missing (containernetworking-plugins)" >&2; exit 1; }
done
: "${PAUSE_IMAGE:?node/start.sh: PAUSE_IMAGE is not set (e2e/image/build.sh makes it)}"

paths=$("$HERE/build.sh"); eval "$paths"
paths=$("$HERE/../controlplane/build.sh"); eval "$paths"
export ETCD_BIN KUBE_APISERVER_BIN

NODE_IP=${NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}
[[ -n $NODE_IP ]] || { echo "node/start.sh: no NODE_IP (no default route); set NODE_IP to an address of this host" >&2; exit 1; }
export NODE_IP
NODE_NAME=delta-node
POD_CIDR=10.244.0.0/24
BRIDGE=cni-delta0

DIR=$(NODE_IP=$NODE_IP "$HERE/../controlplane/start.sh" "${1:-}")
# shellcheck disable=SC1091
. "$DIR/env"
P=$DIR/pki
mkdir -p "$DIR/containerd" "$DIR/cni/net.d" "$DIR/kubelet"

EPH_LOW=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$(( 10000 + RANDOM % (EPH_LOW - 10000) ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "node/start.sh: no free port found" >&2; return 1
}
spawn() { # name cmd...  (as in controlplane/start.sh: own session, pid file, log)
  local name=$1; shift
  setsid sh -c 'echo $$ >"$0"; exec "$@"' "$DIR/$name.pid" "$@" </dev/null >"$DIR/$name.log" 2>&1 &
}
NODE_PARTS=(containerd kube-controller-manager kube-scheduler kube-proxy kubelet)
fail() {
  echo "node/start.sh: $* (logs kept in $DIR; stop with e2e/node/stop.sh $DIR)" >&2
  for f in "${NODE_PARTS[@]}"; do
    [[ -f $DIR/$f.log ]] || continue
    echo "--- last lines of $DIR/$f.log" >&2; tail -n 15 "$DIR/$f.log" >&2 || true
  done
  exit 1
}
trap 'fail "interrupted"' INT TERM
alive() { # name: running, or not yet past writing its pid file
  local pid; pid=$(cat "$DIR/$1.pid" 2>/dev/null || echo 0)
  [[ $pid == 0 ]] || kill -0 "$pid" 2>/dev/null
}

# --- kernel settings pods need (the bridge plugin turns on forwarding itself)
modprobe br_netfilter 2>/dev/null || true
sysctl -qw net.ipv4.ip_forward=1
[[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] || sysctl -qw net.bridge.bridge-nf-call-iptables=1

# --- containerd: its own root, state and socket under DIR; CRI with runc (cgroupfs)
SOCK=$DIR/containerd/containerd.sock
cat >"$DIR/containerd/config.toml" <<TOML
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # no CAP_SYS_RESOURCE here: a negative oom_score_adj (the sandbox asks -998) makes runc fail
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$DIR/cni/net.d"
TOML
cat >"$DIR/cni/net.d/10-delta.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "delta-node", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$DIR/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
spawn containerd containerd --config "$DIR/containerd/config.toml"
for _ in $(seq 1 100); do [[ -S $SOCK ]] && break; alive containerd || fail "containerd exited"; sleep 0.1; done
[[ -S $SOCK ]] || fail "containerd's socket did not appear"
# the images the pods run: no registry is reachable, so they are imported, never pulled
for tar in ${NODE_IMAGES:-}; do
  [[ -f $tar ]] || fail "image tarball $tar is missing"
  ctr -a "$SOCK" -n k8s.io images import "$tar" >"$DIR/import.log" 2>&1 || { cat "$DIR/import.log" >&2; fail "ctr images import $tar"; }
done
images=$(ctr -a "$SOCK" -n k8s.io images ls -q)
grep -qxF "$PAUSE_IMAGE" <<<"$images" || fail "the pause image $PAUSE_IMAGE is not in containerd (add its tarball to NODE_IMAGES)"

# --- controller-manager and scheduler: the admin kubeconfig, no serving port, no election
spawn kube-controller-manager "$KCM_BIN" --kubeconfig="$KUBECONFIG" --leader-elect=false \
  --secure-port=0 --root-ca-file="$P/ca.crt" --service-account-private-key-file="$P/sa.key" \
  --controllers='*,-nodeipam' --v=1
spawn kube-scheduler "$SCHEDULER_BIN" --kubeconfig="$KUBECONFIG" --leader-elect=false \
  --secure-port=0 --v=1

# --- kube-proxy: iptables; conntrack left as the kernel has it (no sysctl writes)
spawn kube-proxy "$KUBE_PROXY_BIN" --kubeconfig="$KUBECONFIG" --hostname-override="$NODE_NAME" \
  --proxy-mode=iptables --cluster-cidr=10.244.0.0/16 --conntrack-max-per-core=0 \
  --healthz-bind-address="127.0.0.1:$(free_port)" --metrics-bind-address="127.0.0.1:$(free_port)" --v=1

# --- kubelet: containerd, cgroupfs on this machine's cgroup v1 layout, eviction thresholds
# low enough that a busy build disk does not mark the node under pressure
cat >"$DIR/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
address: $NODE_IP
port: $(free_port)
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $(free_port)
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
serializeImagePulls: false
YAML
spawn kubelet "$KUBELET_BIN" --config="$DIR/kubelet/config.yaml" --kubeconfig="$KUBECONFIG" \
  --root-dir="$DIR/kubelet/root" --cert-dir="$DIR/kubelet/pki" --hostname-override="$NODE_NAME" \
  --node-ip="$NODE_IP" --v=1

cat >>"$DIR/env" <<ENV
export NODE_IP=$NODE_IP NODE_NAME=$NODE_NAME CONTAINERD_SOCK=$SOCK PAUSE_IMAGE=$PAUSE_IMAGE
ENV

# --- bounded wait: the node Ready, the default ServiceAccount and the root CA ConfigMap
# (pods are refused until the controller-manager made them)
t0=$(date +%s)
deadline=$(( t0 + ${START_TIMEOUT:-120} ))
until kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True \
   && kubectl -n default get serviceaccount default >/dev/null 2>&1 \
   && kubectl -n default get configmap kube-root-ca.crt >/dev/null 2>&1; do
  for part in "${NODE_PARTS[@]}"; do alive "$part" || fail "$part exited"; done
  (( $(date +%s) < deadline )) || fail "node not Ready after ${START_TIMEOUT:-120}s: $(kubectl get node "$NODE_NAME" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}' 2>&1 | tail -3)"
  sleep 0.5
done
trap - INT TERM
echo "node/start.sh: node $NODE_NAME Ready at $NODE_IP in $(( $(date +%s) - t0 ))s; source $DIR/env" >&2
echo "$DIR"
