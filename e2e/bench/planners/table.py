"""Prints planners.sh's comparison table: our bench's lines (its stdout) and
the anchors' JSON lines, with each median's ratio to ours (Databricks).

Usage: table.py OURS.txt ANCHORS.jsonl"""

import json
import re
import sys

OURS = re.compile(
    r"plan (\d+) tables x (\d+) columns \((\w+)\): median ([\d.]+) ms over (\d+) runs"
    r".*· (\d+) changed · (\d+) rejected · (\d+) steps"
)


def main():
    rows = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            m = OURS.search(line)
            if m:
                n, cols, backend, ms, runs, changed, rejected, steps = m.groups()
                rows.append({
                    "tool": f"delta-operator ({backend})", "tables": int(n), "columns": int(cols),
                    "changed_tables": int(changed), "rejected_tables": int(rejected),
                    "steps": int(steps), "median_ms": float(ms), "runs": int(runs),
                })
    ours = next((r for r in rows if r["tool"] == "delta-operator (databricks)"), None)
    if ours is None:
        sys.exit(f"{sys.argv[1]}: no 'plan ... (databricks): median ...' line from our bench")
    with open(sys.argv[2], encoding="utf-8") as f:
        rows += [json.loads(line) for line in f if line.strip()]
    head = ("tool", "tables", "cols/table", "changed tables", "rejected", "steps/actions",
            "median ms", "runs", "× ours")
    body = [
        (r["tool"], str(r["tables"]), str(r["columns"]), str(r["changed_tables"]),
         str(r["rejected_tables"]), str(r["steps"]), f"{r['median_ms']:.1f}", str(r["runs"]),
         f"{r['median_ms'] / ours['median_ms']:.0f}×" if ours["median_ms"] > 0 else "n/a")
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    for line in (head, tuple("-" * w for w in widths), *body):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |")


if __name__ == "__main__":
    main()
