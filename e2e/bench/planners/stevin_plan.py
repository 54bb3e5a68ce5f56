"""Times stevin 0.4.0a4's pure planning path on our bench's input.

Pure path (stevin's own docs; what `stevin.planning.plan_tables` does once the
live tables are read): `differ.ownership` + `differ.diff` + `differ.unmanaged`
per table into a `TableDiff` with its `TableFacts`, the two fingerprints, then
`planner.build_plan`. No warehouse, no introspection: the live tables are built
in memory from the same input, as stevin's reader would hand them over.

Usage: stevin_plan.py INPUT.json RUNS"""

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import load_input, report, time_median_ms  # noqa: E402

from stevin.differ import diff, ownership, unmanaged  # noqa: E402
from stevin.loader import load_spec_text  # noqa: E402
from stevin.model.plan import TableDiff, TableFacts, fingerprint  # noqa: E402
from stevin.model.table import MANAGED_PROPERTY  # noqa: E402
from stevin.planner import build_plan  # noqa: E402

PRIMITIVE = {
    "boolean": "boolean", "byte": "tinyint", "short": "smallint", "int": "int",
    "long": "bigint", "float": "float", "double": "double", "string": "string",
    "binary": "binary", "date": "date", "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz", "variant": "variant",
}


def type_text(t):
    """Our DataType JSON as stevin's type string (its loader parses it)."""
    kind = t["kind"]
    if kind in PRIMITIVE:
        return PRIMITIVE[kind]
    if kind == "decimal":
        return f"decimal({t['precision']},{t['scale']})"
    if kind == "array" and t["contains_null"]:
        return f"array<{type_text(t['element'])}>"
    if kind == "map" and t["value_contains_null"]:
        return f"map<{type_text(t['key'])},{type_text(t['value'])}>"
    if kind == "struct" and not any(f.get("comment") for f in t["fields"]):
        return "struct<" + ",".join(
            f"{f['name']}:{type_text(f['type'])}" + ("" if f["nullable"] else " not null")
            for f in t["fields"]
        ) + ">"
    # Fail loudly: a type this harness can't hand over would make the work unequal.
    sys.exit(f"stevin harness: no translation for {t}")


def spec(table, columns):
    """A stevin table spec; JSON is YAML, so the loader reads it as written."""
    import json

    name = f"{table['catalog']}.{table['schema']}.{table['table']}"
    cols = [
        {
            "name": c["name"],
            "type": type_text(c["type"]),
            "nullable": c["nullable"],
            **({"comment": c["comment"]} if c.get("comment") is not None else {}),
        }
        for c in columns
    ]
    return load_spec_text(json.dumps({"table": name, "columns": cols}), Path("bench.yml"))


def main():
    data = load_input(sys.argv[1])
    runs = int(sys.argv[2])
    desired = [spec(d["table"], d["columns"]) for d in data["desired"]]
    # Live: the same shape, carrying stevin's marker where ours carries ours.
    live = [
        replace(spec(o["table"], o["columns"]), properties=((MANAGED_PROPERTY, "true"),))
        for o in data["observed"]
    ]
    facts = [
        TableFacts(
            l.name,
            exists=True,
            properties=l.properties,
            size_bytes=o.get("size_bytes"),
            delta_version=o.get("version"),
            # a live table with a timestamp_ntz column has the feature
            features=("timestampNtz",),
        )
        for l, o in zip(live, data["observed"])
    ]

    def plan_once():
        diffs = [
            TableDiff(
                d.name,
                (*ownership(d, l), *diff(d, l)),
                f,
                unmanaged(d, l),
                desired=d,
                live=l,
            )
            for d, l, f in zip(desired, live, facts)
        ]
        return build_plan(
            diffs,
            target="bench",
            tool_version="0.4.0a4",
            spec_hash=fingerprint(desired),
            state_fingerprint=fingerprint(live),
        )

    median, plan = time_median_ms(plan_once, runs)
    changed = sum(1 for d in plan.diffs if d.changes)
    refused = len({s.table for s in plan.steps if s.refusal})
    report("stevin 0.4.0a4", data, changed, len(plan.steps), median, runs, refused)


if __name__ == "__main__":
    main()
