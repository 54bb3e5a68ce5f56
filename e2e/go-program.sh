#!/usr/bin/env bash
# Build one of the project's own Go test programs, e2e/<NAME>/ (main.go, go.mod, go.sum),
# into ${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/bin/<NAME>-<hash> and print
# its path. <hash> covers go.mod, go.sum and main.go, so any change rebuilds and an
# unchanged tree returns at once (no `go` call). Modules come from the Go module proxy only.
# Usage: go-program.sh NAME
set -euo pipefail
name=$1
here="$(cd "$(dirname "$0")" && pwd)"
src=$here/$name
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
hash=$(cd "$src" && cat go.mod go.sum main.go | sha256sum | cut -c1-16)
out=$CACHE/bin/$name-$hash
if [[ -x $out ]]; then echo "$out"; exit 0; fi   # fast path

# shellcheck source=go-env.sh
. "$here/go-env.sh"
go_env "$name/build.sh"
export GOFLAGS="$GOFLAGS -mod=readonly"
start=$(date +%s)
echo "$name/build.sh: building $out" >&2
( cd "$src" && go build -ldflags="-s -w" -o "$out.tmp.$$" . ) >&2
mv -f "$out.tmp.$$" "$out"
echo "$name/build.sh: done in $(( $(date +%s) - start ))s" >&2
echo "$out"
