"""What both anchor harnesses share: reading the input our bench wrote
(`PLAN_BENCH_INPUT`, delta-operator's model as JSON) and timing a planning
call. Standard library only: it runs in each anchor's own venv."""

import json
import statistics
import sys
import time


def load_input(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if len(data["desired"]) != len(data["observed"]) or not data["desired"]:
        sys.exit(f"{path}: expected one observed table per desired table")
    return data


def time_median_ms(plan_once, runs):
    """Median wall time of `plan_once()` in ms, and its last result.
    The input is built before the first call: only planning is timed."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = plan_once()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), result


def report(tool, data, changed_tables, steps, median_ms, runs, rejected=0):
    """One JSON line for planners.sh's table."""
    print(
        json.dumps(
            {
                "tool": tool,
                "tables": len(data["desired"]),
                "columns": len(data["desired"][0]["columns"]),
                "changed_tables": changed_tables,
                "steps": steps,
                "rejected_tables": rejected,
                "median_ms": round(median_ms, 1),
                "runs": runs,
            }
        )
    )
