#!/usr/bin/env bash
# Stop a control plane made by start.sh and remove its DIR.  Usage: stop.sh DIR
set -euo pipefail
DIR=$(cd "${1:?usage: stop.sh DIR}" && pwd)
# Refuse to rm -rf a directory start.sh did not create.
[[ -f $DIR/env && -f $DIR/pki/tokens.csv ]] || { echo "stop.sh: $DIR is not a start.sh dir" >&2; exit 1; }

for name in kube-apiserver etcd; do   # apiserver first, so it does not log etcd errors
  pid=$(cat "$DIR/$name.pid" 2>/dev/null || echo 0)
  # Signal the pid only while its command line names DIR (guards against pid reuse).
  ours() { grep -qF -- "$DIR" "/proc/$pid/cmdline" 2>/dev/null; }
  if [[ $pid -gt 0 ]] && ours; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do ours || break; sleep 0.1; done
    ! ours || kill -9 "$pid" 2>/dev/null || true   # still alive after 10 s
  fi
done
rm -rf "$DIR"
