#!/usr/bin/env bash
# Build the Argo CD health checker (main.go: a Lua health script run by gopher-lua
# the way Argo CD runs it, over JSON on stdin) into
# ${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/bin/argo-health-<hash>
# and print its path. <hash> covers go.mod, go.sum and main.go, so any change
# rebuilds and an unchanged tree returns at once (no `go` call). Modules come
# from the Go module proxy only, into the same caches as e2e/controlplane/build.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
hash=$(cd "$here" && cat go.mod go.sum main.go | sha256sum | cut -c1-16)
out=$CACHE/bin/argo-health-$hash
if [[ -x $out ]]; then echo "$out"; exit 0; fi   # fast path

command -v go >/dev/null || { echo "argo-health/build.sh: 'go' not found in PATH" >&2; exit 1; }
start=$(date +%s)
export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build
export GOFLAGS="-buildvcs=false -trimpath -mod=readonly" GOWORK=off CGO_ENABLED=0
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
mkdir -p "$CACHE/bin"
echo "argo-health/build.sh: building $out" >&2
( cd "$here" && go build -ldflags="-s -w" -o "$out.tmp.$$" . ) >&2
mv -f "$out.tmp.$$" "$out"
echo "argo-health/build.sh: done in $(( $(date +%s) - start ))s" >&2
echo "$out"
