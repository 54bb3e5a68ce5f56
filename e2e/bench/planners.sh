#!/usr/bin/env bash
# Benchmark (not a test): our planner against stevin's and delta-engine's on the same input,
# 1,000 tables x 50 columns, in one run, printing one comparison table.
#
#   e2e/bench/planners.sh            (RUNS=5 repetitions per anchor; median)
#
# 1. `cargo bench -p delta-operator-core --bench plan` (release) times ours and, with
#    PLAN_BENCH_INPUT, writes its generated input (desired + observed, our model as JSON);
# 2. throwaway venvs under $DELTA_OPERATOR_CACHE/bench-venv (reused) get stevin==0.4.0a4
#    (Python >= 3.11) and delta-engine==0.14.0 (Python >= 3.12) from PyPI;
# 3. e2e/bench/planners/{stevin,delta_engine}_plan.py translate that same JSON into each
#    tool's model (untimed), then time only its pure planning function.
# A missing interpreter fails the run: set STEVIN_PYTHON / DELTA_ENGINE_PYTHON to point at one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"
runs="${RUNS:-5}"
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the clone
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# at_least PYTHON MAJOR.MINOR: is PYTHON that version or newer?
at_least() { "$1" -c "import sys; sys.exit(sys.version_info < tuple(map(int, '$2'.split('.'))))"; }

# venv DIR PYTHON MAJOR.MINOR PACKAGE VAR: a venv with PACKAGE, made by PYTHON (>= MAJOR.MINOR)
venv() {
  local dir="$cache/bench-venv/$1" py="$2" need="$3" pkg="$4"
  if [[ ! -x $dir/bin/python ]]; then
    command -v "$py" >/dev/null && at_least "$py" "$need" ||
      { echo "planners.sh: $pkg needs Python >= $need: '$py' is missing or older (set $5=...)" >&2; exit 1; }
    "$py" -m venv "$dir"
  fi
  at_least "$dir/bin/python" "$need" ||
    { echo "planners.sh: $dir has $("$dir/bin/python" -V), $pkg needs >= $need (remove it, set $5)" >&2; exit 1; }
  if [[ ! -e $dir/.installed-$pkg ]]; then
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$pkg"
    touch "$dir/.installed-$pkg"
  fi
}
venv stevin "${STEVIN_PYTHON:-python3}" 3.11 stevin==0.4.0a4 STEVIN_PYTHON
venv delta-engine "${DELTA_ENGINE_PYTHON:-python3.12}" 3.12 delta-engine==0.14.0 DELTA_ENGINE_PYTHON

cd "$root"
PLAN_BENCH_INPUT="$work/input.json" cargo bench --locked -p delta-operator-core --bench plan | tee "$work/ours.txt"
[[ -s $work/input.json ]] || { echo "planners.sh: our bench wrote no input" >&2; exit 1; }
"$cache/bench-venv/stevin/bin/python" "$here/planners/stevin_plan.py" "$work/input.json" "$runs" >>"$work/anchors.jsonl"
"$cache/bench-venv/delta-engine/bin/python" "$here/planners/delta_engine_plan.py" "$work/input.json" "$runs" >>"$work/anchors.jsonl"
echo
python3 "$here/planners/table.py" "$work/ours.txt" "$work/anchors.jsonl"
