"""Immediate mode against find: how often the shape rule's and the trained model's first choice is within
1.1x of find's best, on the find records of a DB (the model evaluated on held-out layers: 5 folds split by
layer, each layer's three directions together; each fold's model fitted by heuristic_training.fit, the shipped
procedure, on the other folds alone). Optionally fits on every record and writes the model.

    python -m benchmarks.heuristic_eval --db miopy/data/system_perf.db [--device NAME] \\
        [--out miopy/data/heuristic_pocl_cpu.json --match pthread] [--json out.json]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import harness
from miopy.conv import heuristic, heuristic_model, heuristic_training, registry


def shape_choice(problem, ran):
    """The shape rule's first choice among the solvers that ran on problem."""
    known = [x for x in registry.ALL if x.id in ran]   # registry order, as find lists its candidates
    order = heuristic.shape_rank(problem, known)
    return order[0].id if order else ran[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=Path(heuristic_model.DATA_DIR / "system_perf.db"))
    ap.add_argument("--device", default=None, help="records of devices whose id contains this (default all)")
    ap.add_argument("--out", type=Path, default=None, help="train on every record and write the model here")
    ap.add_argument("--match", default=None, help="device-name substrings the written model serves")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--splits", type=int, default=4,
                    help="fold assignments to evaluate the model on (the first is the reported one; the others, "
                         "salted hashes of the layer, show how much the numbers depend on the split)")
    args = ap.parse_args(argv)
    records = heuristic_training.records_from_db(args.db, args.device)
    shape = heuristic_training.evaluate(shape_choice, records)
    splits = [heuristic_training.cross_validate(records, salt=salt)
              for salt in ["", *(f"split{i}" for i in range(1, args.splits))]]
    model = splits[0]
    mean = {key: sum(q[key] for q in splits) / len(splits) for key in ("within_1.1x", "within_1.3x", "geomean")}
    mean.update(problems=model["problems"], worst=max(q["worst"] for q in splits))
    for name, q in (("shape rule", shape), ("model, held out", model),
                    (f"model, {len(splits)} splits", mean)):
        print(f"{name:16s}: {q['problems']} problems, {100 * q.get('within_1.1x', 0):.1f}% within 1.1x, "
              f"{100 * q.get('within_1.3x', 0):.1f}% within 1.3x, geomean {q.get('geomean', 0):.3f}x, "
              f"worst {q.get('worst', 0):.2f}x")
    if args.out:
        trained = heuristic_training.fit(records, (args.match or args.device or "").split(","))
        heuristic_model.write_model(trained, args.out)
        print(f"wrote {args.out}: {trained.trained_on} problems, solvers {sorted(trained.solvers)}")
    record = harness.new_record(
        None, db=str(args.db), match=args.device, shape_rule=shape, model_held_out=model,
        model_held_out_splits=[{k: v for k, v in q.items() if k != "worst_cases"} for q in splits],
        model_held_out_mean_of_splits=mean, features=len(heuristic_model.FEATURES), format=heuristic_model.FORMAT,
        members=list(heuristic_training.GRID))
    record["meta"]["device"] = f"find records of devices matching {args.device!r}" if args.device else "every device"
    harness.write_json(args.json, record)
    return 0



def section(source: harness.Source) -> list[str]:
    """The results pages' table of one evaluation: how often each first choice is within 1.1x / 1.3x of find's best."""
    data = source.data
    rows = []
    for label, key in (("shape rule", "shape_rule"), ("model, held-out layers", "model_held_out"),
                       ("model, mean of the fold assignments", "model_held_out_mean_of_splits")):
        q = data.get(key)
        if q:
            rows.append([label, q["problems"], f"{100 * q['within_1.1x']:.1f}%", f"{100 * q['within_1.3x']:.1f}%",
                         f"{q['geomean']:.3f}x", f"{q['worst']:.2f}x"])
    return ([f"### {source.name}", "", f"{source.meta.get('device')}: `{source.meta.get('command', '-')}`.", ""]
            + harness.md_table(["first choice", "problems", "within 1.1x", "within 1.3x", "geomean", "worst"], rows)
            + [""])

if __name__ == "__main__":
    sys.exit(main())
