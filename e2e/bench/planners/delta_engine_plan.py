"""Times delta-engine 0.14.0's pure planning function on our bench's input.

`delta_engine.application.planning.plan_changes(desired, observed)` is the one
boundary from state to plan (diff + the laws and rules; accept, reject or
defer); `Engine.sync` calls it per table after its reader. No reader, no SQL
compile (ours doesn't compile at plan time either): the observed tables are
built in memory from the same input, as its `CatalogStateReader` would return.

Usage: delta_engine_plan.py INPUT.json RUNS"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import load_input, report, time_median_ms  # noqa: E402

from delta_engine.application.planning import PlanningAccepted, plan_changes  # noqa: E402
from delta_engine.domain.model import ObservedColumn, ObservedTable, QualifiedName  # noqa: E402
from delta_engine.domain.model.feature import TableFeature  # noqa: E402
from delta_engine.schema import (  # noqa: E402
    Array, Binary, Boolean, Byte, Column, Date, Decimal, DeltaTable, Double, Float,
    Integer, Long, Map, Short, String, Struct, StructField, Timestamp, TimestampNtz, Variant,
)

PRIMITIVE = {
    "boolean": Boolean, "byte": Byte, "short": Short, "int": Integer, "long": Long,
    "float": Float, "double": Double, "string": String, "binary": Binary, "date": Date,
    "timestamp": Timestamp, "timestamp_ntz": TimestampNtz, "variant": Variant,
}


def data_type(t):
    """Our DataType JSON as delta-engine's type. It does not manage element or
    value nullability, so `contains_null` has no counterpart."""
    kind = t["kind"]
    if kind in PRIMITIVE:
        return PRIMITIVE[kind]()
    if kind == "decimal":
        return Decimal(t["precision"], t["scale"])
    if kind == "array":
        return Array(data_type(t["element"]))
    if kind == "map":
        return Map(data_type(t["key"]), data_type(t["value"]))
    if kind == "struct":
        return Struct([StructField(f["name"], data_type(f["type"]), f["nullable"]) for f in t["fields"]])
    # Fail loudly: a type this harness can't hand over would make the work unequal.
    sys.exit(f"delta-engine harness: no translation for {t}")


def main():
    data = load_input(sys.argv[1])
    runs = int(sys.argv[2])
    desired = [
        DeltaTable(
            d["table"]["catalog"], d["table"]["schema"], d["table"]["table"],
            [Column(c["name"], data_type(c["type"]), c["nullable"], c.get("comment") or "") for c in d["columns"]],
        ).to_desired_table()
        for d in data["desired"]
    ]
    observed = [
        ObservedTable(
            QualifiedName(o["table"]["catalog"], o["table"]["schema"], o["table"]["table"]),
            [ObservedColumn(c["name"], data_type(c["type"]), c["nullable"], c.get("comment") or "") for c in o["columns"]],
            # its reader keeps only its six managed keys: our owner marker is not one;
            # a live table with a timestamp_ntz column has the feature
            supported_features=frozenset({TableFeature.TIMESTAMP_NTZ}),
        )
        for o in data["observed"]
    ]

    def plan_once():
        return [plan_changes(d, o) for d, o in zip(desired, observed)]

    median, results = time_median_ms(plan_once, runs)
    actions = [len(getattr(r.diff, "actions", ())) for r in results]
    rejected = sum(1 for r in results if not isinstance(r, PlanningAccepted))
    report("delta-engine 0.14.0", data, sum(1 for a in actions if a), sum(actions), median, runs, rejected)


if __name__ == "__main__":
    main()
