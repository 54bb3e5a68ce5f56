#!/usr/bin/env bash
# Build the operator binary: the one build command of the Dockerfile, also run by
# e2e/ship/check.sh on the host, so the Dockerfile's build is exercised on every
# `make test`.
# Usage: build-binary.sh PROFILE [OUTDIR]
#   PROFILE  release (the image) | dev (the host: the same `cargo build` as `make test`,
#            so it costs nothing after it)
#   OUTDIR   if given, the binary is copied to OUTDIR/delta-operator
# Stdout: the binary's path. CARGO_TARGET_DIR defaults to the shared cache
# ${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/target.
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=${1:-}
outdir=${2:-}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/target}
case $profile in
  # exactly the Makefile's build: another feature set would rebuild and relink the binary twice
  dev) cargo build --locked --workspace --all-targets >&2; dir=debug ;;
  release) cargo build --locked --release --bin delta-operator >&2; dir=release ;;
  *) echo "usage: $0 dev|release [OUTDIR]" >&2; exit 2 ;;
esac
bin=$CARGO_TARGET_DIR/$dir/delta-operator
[[ -x $bin ]] || { echo "build-binary.sh: $bin was not built" >&2; exit 1; }
if [[ -n $outdir ]]; then
  mkdir -p "$outdir"
  cp "$bin" "$outdir/delta-operator"
  bin=$outdir/delta-operator
fi
echo "$bin"
