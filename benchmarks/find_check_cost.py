"""What find's accuracy check costs: the same find with the check on and off, kernels already compiled
(so only the check's own work differs: one poisoned run and a read-back per candidate, the naive
reference's run once per find, the host comparison).

    python -m benchmarks.find_check_cost --set alexnet -n 1 --directions 1,2,4 [--limit 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import sys

import miopy
from benchmarks import harness
from miopy.conv import networks
from miopy.conv.problem import Direction
from miopy.find import find_problem


def measure(handle, problem, repeats: int) -> dict:
    find_problem(handle, problem, mode="normal", store=False, verify=True)     # compile everything once
    out = {}
    for verify in (False, True):
        def find(verify=verify):
            return find_problem(handle, problem, mode="normal", store=False, verify=verify)
        out["on" if verify else "off"] = harness.wall_ms(find, handle.finish, rounds=repeats, warmup=0) / 1e3
    result = find_problem(handle, problem, mode="normal", store=False, verify=True)
    out.update(problem=problem.key(), candidates=len(result) + len(result.rejected), check=result.check,
               rejected=result.rejected, overhead_s=out["on"] - out["off"],
               max_errors={r.solver_id: r.max_error for r in result})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="alexnet")
    ap.add_argument("-n", "--batch", type=int, default=1)
    ap.add_argument("--directions", default="1,2,4")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    handle = miopy.Handle()
    rows = []
    for layer in networks.layer_set(args.set)[:args.limit]:
        for d in args.directions.split(","):
            row = measure(handle, layer.problem(args.batch, Direction(int(d))), args.repeats)
            rows.append(row)
            print(f"{row['problem']:60s} off {row['off'] * 1e3:8.1f} ms  on {row['on'] * 1e3:8.1f} ms  "
                  f"(+{row['overhead_s'] * 1e3:.1f} ms, {row['candidates']} candidates, {row['check']})", flush=True)
    total_on, total_off = sum(r["on"] for r in rows), sum(r["off"] for r in rows)
    print(f"total: off {total_off:.3f} s, on {total_on:.3f} s (+{100 * (total_on / total_off - 1):.0f}%)")
    harness.write_json(args.json, harness.new_record(handle, set=args.set, batch=args.batch, rows=rows))
    return 0



def section(source: harness.Source) -> list[str]:
    """The results pages' table of one run: each find's seconds with the check off and on."""
    data, rows = source.data, source.data["rows"]
    off, on = sum(r["off"] for r in rows), sum(r["on"] for r in rows)
    table = harness.md_table(["problem", "candidates", "check", "off s", "on s", "overhead ms"],
                             [[f"`{r['problem']}`", r["candidates"], r["check"], f"{r['off']:.3f}", f"{r['on']:.3f}",
                               f"{r['overhead_s'] * 1e3:+.0f}"] for r in rows])
    return ([f"### {source.name}", "", f"{source.meta.get('device')}, {data['set']} at N={data['batch']}: "
             f"`{source.meta.get('command', '-')}`.", ""] + table
            + ["", f"In all: {off:.2f} s off, {on:.2f} s on ({100 * (on / off - 1):+.0f}%).", ""])

if __name__ == "__main__":
    sys.exit(main())
