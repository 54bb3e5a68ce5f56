#!/usr/bin/env bash
# Stop a node made by e2e/node/start.sh and remove its DIR: the kubelet first (so it does
# not restart what is being stopped), every container and its shim, containerd, the other
# parts, the pods' mounts, the CNI bridge and kube-proxy's iptables rules, then the control
# plane (e2e/controlplane/stop.sh).  Usage: stop.sh DIR   (KEEP_LOGS=DEST copies the logs)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=$(cd "${1:?usage: stop.sh DIR}" && pwd)
[[ -f $DIR/env && -f $DIR/pki/tokens.csv && -d $DIR/containerd ]] || { echo "node/stop.sh: $DIR is not a node/start.sh dir" >&2; exit 1; }
if [[ -n ${KEEP_LOGS:-} ]]; then mkdir -p "$KEEP_LOGS" && cp "$DIR"/*.log "$KEEP_LOGS/" 2>/dev/null; fi

stop_pid() { # name: SIGTERM, then SIGKILL after 10 s; only while its command line names DIR
  local pid; pid=$(cat "$DIR/$1.pid" 2>/dev/null || echo 0)
  ours() { grep -qF -- "$DIR" "/proc/$pid/cmdline" 2>/dev/null; }
  if [[ $pid -gt 0 ]] && ours; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do ours || break; sleep 0.1; done
    ! ours || kill -9 "$pid" 2>/dev/null || true
  fi
}
stop_pid kubelet
SOCK=$DIR/containerd/containerd.sock
if [[ -S $SOCK ]]; then
  for t in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
  done
fi
stop_pid containerd
# the shims outlive containerd by design; theirs name DIR's socket
for pid in $(pgrep -f "containerd-shim-runc-v2 .*$DIR" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
for p in kube-proxy kube-scheduler kube-controller-manager; do stop_pid "$p"; done
# kube-proxy's rules and chains (KUBE-*), as `kube-proxy --cleanup` does
if [[ -f $DIR/env ]]; then
  # shellcheck disable=SC1091
  KUBE_PROXY_BIN=$(. <("$HERE/build.sh" 2>/dev/null); echo "${KUBE_PROXY_BIN:-}")
  [[ -z $KUBE_PROXY_BIN ]] || "$KUBE_PROXY_BIN" --cleanup >/dev/null 2>&1 || true
fi
# pods' volumes and the containers' root file systems, deepest first
grep -F " $DIR/" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
ip link del cni-delta0 2>/dev/null || true
"$HERE/../controlplane/stop.sh" "$DIR"
