#!/usr/bin/env bash
# Coverage-guided fuzzing of the type parser, the manifest loader and the
# Databricks error parser with cargo-fuzz (libFuzzer) on stable Rust
# (`-s none`: no sanitizer, so no nightly). Installs cargo-fuzz (pinned) under
# the cache, builds the targets there, runs each for SECONDS against its
# committed corpus (fuzz/corpus/<target>, read only; new finds go to a scratch
# folder, `make fuzz` merges them in) and prints the executions. A crash, a
# panic or a stack overflow fails the run, with the input saved under
# fuzz/artifacts/<target>/.
# Usage: fuzz/run.sh SECONDS [merge]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:?usage: fuzz/run.sh SECONDS [merge]}
merge=${2:-}
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
TOOLS=$CACHE/tools
export PATH=$TOOLS/bin:$PATH
if ! cargo fuzz --version 2>/dev/null | grep -q '0.13.2'; then
  cargo install --quiet --root "$TOOLS" cargo-fuzz --version 0.13.2 --locked >&2
fi
TD=$CACHE/fuzz-target
t0=$(date +%s)
cargo fuzz build -s none --target-dir "$TD" >&2
echo "fuzz: built the targets in $(( $(date +%s) - t0 ))s" >&2
total=0
for target in parse_type load_manifest databricks_error parse_sql; do
  scratch=$(mktemp -d)
  log=$scratch.log
  status=0
  cargo fuzz run -s none --target-dir "$TD" "$target" "$scratch" "corpus/$target" -- \
    -dict="dict/$target.dict" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -use_value_profile=1 -print_final_stats=1 >"$log" 2>&1 || status=$?
  # (|| true: a run that died early has no stats, and must still reach the report below)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  echo "fuzz $target: ${execs:-0} executions in ${secs}s, coverage ${cov:-?} edges, corpus $(ls "corpus/$target" | wc -l) + $(ls "$scratch" | wc -l) new inputs"
  if [[ $status -ne 0 ]]; then
    tail -40 "$log" >&2
    echo "fuzz $target FAILED (exit $status): the input is under fuzz/artifacts/$target/" >&2
    exit 1
  fi
  total=$(( total + ${execs:-0} ))
  if [[ -n $merge ]]; then
    cargo fuzz run -s none --target-dir "$TD" "$target" "corpus/$target" "$scratch" -- -merge=1 >/dev/null 2>&1
  fi
  rm -rf "$scratch" "$log"
done
echo "fuzz: $total executions in all"
