"""miopy-db: inspect, export, import and merge perf and find DBs, so records tuned on one machine or a
cluster reach others.

    miopy-db show [--db PATH] [--device TEXT] [--problem TEXT]   counts per device, then the records
    miopy-db export OUT.txt [--db PATH] [--device TEXT]          records as text (below)
    miopy-db import IN.txt [--db PATH]                           text records into a DB (merged)
    miopy-db merge A.db B.db ... --out OUT.db                    DB files into one (merged)

--db defaults to the user DB (MIOPY_USER_DB_PATH or the user data directory). Merging keeps, for each
(device, problem, solver), the faster perf record, and for each (device, problem) the newer find record.

The text format follows MIOpen's perf DB text files (one line per problem, solvers separated by ';'),
grouped by device:

    [perf Portable Computing Language|pthread-AMD EPYC|3.0|2CU]
    64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F=ConvDirectLocal:{"K_BLK":8,...}@0.412;ConvGemm1x1:...
    [find <device id>]
    <problem key>=<solver>:<time ms>,<workspace bytes>,<algorithm>,<params JSON>;...   (ranked, best first)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from .. import config, db
from ..errors import BadParam, MiopyError
from ..version import __version__

HEADER = "# miopy DB export, format 1"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="miopy-db", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="counts per device, then the records")
    export = sub.add_parser("export", help="write records as text")
    export.add_argument("out", type=Path)
    imp = sub.add_parser("import", help="read text records into a DB (merged)")
    imp.add_argument("src", type=Path)
    for p in (show, export, imp):
        p.add_argument("--db", type=Path, default=None, help="DB file (default: the user DB)")
    for p in (show, export):
        p.add_argument("--device", default="", help="only devices whose id contains this text")
        p.add_argument("--problem", default="", help="only problems whose key contains this text")
    merge = sub.add_parser("merge", help="merge DB files into one")
    merge.add_argument("sources", type=Path, nargs="+")
    merge.add_argument("--out", type=Path, required=True)
    return ap


# -- records as plain rows -----------------------------------------------------------------------------------
def perf_rows(store: db.Store) -> list[tuple]:
    """(device, problem, solver, params JSON, time_ms, miopy_version, date) of every perf record."""
    return db.PerfDb(store, "DB").rows()


def find_rows(store: db.Store) -> dict[tuple[str, str], list[tuple]]:
    """(device, problem) -> its ranked rows (solver, algorithm, time_ms, workspace, params JSON, version, date)."""
    out: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for device, problem, _rank, *rest in store.query(
            "SELECT device, problem, rank, solver, algorithm, time_ms, workspace, params, miopy_version, date "
            "FROM find ORDER BY device, problem, rank"):
        out[(device, problem)].append(tuple(rest))
    return dict(out)


def merge_into(store: db.Store, perf: list[tuple], finds: dict[tuple[str, str], list[tuple]]) -> tuple[int, int]:
    """Merge rows into store: the faster perf record per (device, problem, solver), the newer find record
    per (device, problem). Returns how many perf and find records were written."""
    existing = {row[:3]: row for row in perf_rows(store)}
    statements: list = []
    for row in perf:
        kept = existing.get(row[:3])
        if kept is None or _time(row[4]) < _time(kept[4]):
            existing[row[:3]] = row
            statements.append(("INSERT OR REPLACE INTO perf VALUES (?, ?, ?, ?, ?, ?, ?)", tuple(row)))
    current = find_rows(store)
    written = 0
    for (device, problem), rows in finds.items():
        have = current.get((device, problem))
        if have and have[0][-1] >= rows[0][-1]:   # ISO dates compare as text
            continue
        written += 1
        statements.append(("DELETE FROM find WHERE device = ? AND problem = ?", (device, problem)))
        statements += [("INSERT INTO find VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (device, problem, rank, *row))
                       for rank, row in enumerate(rows)]
    if statements and not store.write(statements):
        raise MiopyError(f"could not write {store.path}")
    return sum(1 for s in statements if s[0].startswith("INSERT OR REPLACE")), written


def _time(value) -> float:
    return math.inf if value is None else float(value)


# -- text format ---------------------------------------------------------------------------------------------
def export_text(store: db.Store, device: str = "", problem: str = "") -> str:
    lines = [HEADER]
    by_device: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for dev, prob, solver, params, time_ms, *_ in perf_rows(store):
        if device in dev and problem in prob:
            by_device[dev][prob].append(f"{solver}:{_compact(params)}@{'inf' if time_ms is None else time_ms}")
    for dev in sorted(by_device):
        lines.append(f"[perf {dev}]")
        lines += [f"{prob}={';'.join(entries)}" for prob, entries in sorted(by_device[dev].items())]
    finds: dict[str, list[str]] = defaultdict(list)
    for (dev, prob), rows in sorted(find_rows(store).items()):
        if device in dev and problem in prob:
            entries = [f"{s}:{'inf' if t is None else t},{ws},{alg},{_compact(params)}" for s, alg, t, ws, params, *_
                       in rows]
            finds[dev].append(f"{prob}={';'.join(entries)}")
    for dev in sorted(finds):
        lines.append(f"[find {dev}]")
        lines += finds[dev]
    return "\n".join(lines) + "\n"


def parse_text(text: str) -> tuple[list[tuple], dict[tuple[str, str], list[tuple]]]:
    """Perf rows and find rows from export_text's format; BadParam names the line of anything else."""
    version, date = __version__, datetime.now(timezone.utc).isoformat(timespec="seconds")
    perf, finds, section, device = [], {}, None, ""
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section, _, device = line[1:-1].partition(" ")
            if section not in ("perf", "find") or not device:
                raise BadParam(f"line {number}", f"unknown section {line!r}")
            continue
        problem, eq, body = line.partition("=")
        if section is None or not eq:
            raise BadParam(f"line {number}", "expected [perf DEVICE] / [find DEVICE] or PROBLEM=records")
        try:
            entries = [_entry(section, e) for e in body.split(";")]
        except (ValueError, json.JSONDecodeError) as exc:
            raise BadParam(f"line {number}", f"malformed record ({exc})") from None
        if section == "perf":
            perf += [(device, problem, solver, params, t, version, date) for solver, params, t in entries]
        else:
            finds[(device, problem)] = [(s, alg, t, ws, params, version, date) for s, t, ws, alg, params in entries]
    return perf, finds


def _entry(section: str, text: str) -> tuple:
    solver, colon, rest = text.partition(":")
    if not colon or not solver:
        raise ValueError(f"no solver in {text!r}")
    if section == "perf":
        params, _, t = rest.rpartition("@")
        return solver, db.params_key(_params(params)), _number(t)
    t, ws, alg, params = rest.split(",", 3)
    return solver, _number(t), int(ws), alg, db.params_key(_params(params))


def _params(text: str) -> dict:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"params {text!r} are not a JSON object")
    return value


def _number(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _compact(params_json: str) -> str:
    return json.dumps(json.loads(params_json), sort_keys=True, separators=(",", ":"))


# -- commands ------------------------------------------------------------------------------------------------
def _store(path: Path | None, readonly: bool, field: str = "--db") -> db.Store:
    path = path or config.user_db_path()
    if path is None:
        raise BadParam(field, "no user DB: set MIOPY_USER_DB_PATH or pass --db")
    if readonly and not path.is_file():
        raise BadParam(field, f"{path} does not exist")
    fault = db.file_fault(path) if readonly else None
    if fault is not None:   # a file read as a source must be a DB: an unreadable one would merge nothing, silently
        raise BadParam(field, f"{path} is not a readable miopy DB ({fault})")
    return db.Store(path, readonly=readonly)


def show(args: argparse.Namespace) -> None:
    store = _store(args.db, readonly=True)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    perf = [r for r in perf_rows(store) if args.device in r[0] and args.problem in r[1]]
    finds = {k: v for k, v in find_rows(store).items() if args.device in k[0] and args.problem in k[1]}
    for row in perf:
        counts[row[0]][0] += 1
    for device, _ in finds:
        counts[device][1] += 1
    print(f"{store.path}: {len(perf)} perf record(s), {len(finds)} find record(s)")
    for device, (p, f) in sorted(counts.items()):
        print(f"  {device}: {p} perf, {f} find")
    for dev, prob, solver, params, time_ms, version, date in perf:
        print(f"perf {prob} {solver} {time_ms} ms {params} ({version}, {date}) [{dev}]")
    for (dev, prob), rows in sorted(finds.items()):
        print(f"find {prob}: " + " > ".join(f"{r[0]} {r[2]} ms" for r in rows) + f" [{dev}]")


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "show":
            show(args)
        elif args.command == "export":
            args.out.write_text(export_text(_store(args.db, readonly=True), args.device, args.problem))
            print(f"miopy-db: wrote {args.out}")
        elif args.command == "import":
            if not args.src.is_file():
                raise BadParam("src", f"{args.src} does not exist")
            perf, finds = parse_text(args.src.read_text())
            p, f = merge_into(_store(args.db, readonly=False), perf, finds)
            print(f"miopy-db: merged {p} perf and {f} find record(s) into {args.db or config.user_db_path()}")
        else:
            out = db.Store(args.out, readonly=False)
            for source in args.sources:
                src = _store(source, readonly=True, field="sources")
                p, f = merge_into(out, perf_rows(src), find_rows(src))
                print(f"miopy-db: {source}: merged {p} perf and {f} find record(s)")
    except (MiopyError, OSError) as exc:
        print(f"miopy-db: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
