#!/usr/bin/env bash
# Runs independent test suites at the same time (`make test`): each argument is one suite's
# command line. The first streams its output as it runs; the others write to a log that is
# printed, whole, when they end (so the output stays readable). Waits for every suite and
# exits non-zero when any failed, naming it. Each suite mostly waits on its own servers (a
# node's pods, the warehouse's Spark), so side by side the run is about as long as the longest.
set -uo pipefail
logs=$(mktemp -d -t delta-suites.XXXXXX)
pids=() names=()
for i in $(seq 1 $#); do
  cmd=${!i}
  names+=("$cmd")
  if [[ $i == 1 ]]; then
    bash -c "$cmd" & pids+=($!)
  else
    bash -c "$cmd" >"$logs/$i.log" 2>&1 & pids+=($!)
  fi
done
failed=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?
  n=$(( i + 1 ))
  if [[ -f $logs/$n.log ]]; then
    echo "=== output of: ${names[$i]}"
    cat "$logs/$n.log"
  fi
  echo "=== suite ${names[$i]}: exit $rc"
  [[ $rc == 0 ]] || failed+=("${names[$i]}")
done
rm -rf "$logs"
if [[ ${#failed[@]} -gt 0 ]]; then
  printf 'side-by-side.sh: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
