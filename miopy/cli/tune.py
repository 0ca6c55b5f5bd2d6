"""miopy-tune: tune solvers' params on any family's problems and store the winners in the user perf DB.

``miopy-tune COMMAND [flags]`` takes any miopy-driver command (conv, convfp16, pool, softmax, lrn, bnorm,
tensorop, dropout, activ, CBAInfer, ...: each family's driver) with its flags describing the problem; without a
command it is ``conv`` (MIOpenDriver conv flags). Convolution problems may also come from --network NAME (its
unique layers at batch size -n) or --onnx MODEL (the convolutions that model runs, at --batch); --file PATH takes
miopy-driver / MIOpenDriver command lines of any family, one per line. Each applicable solver with a grid is
tuned with the chosen strategy; a table per problem compares default and tuned times. An interrupted run resumes
where it stopped: every measured point is in the user DB's tuning log. A fused convolution is tuned as its
convolution (its params are the convolution's records).

--workers N runs the tuning jobs (one per problem and solver) on a local Dask cluster of N worker
processes (one per GPU, or N on the CPU), --scheduler ADDRESS on an existing one; --find adds a find job
per problem after its tuning jobs, filling the find DB. This needs the extra: pip install 'miopy[distributed]'.
"""
from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import config, db, families
from ..conv import heuristic_model, heuristic_training, networks
from ..conv.driver import COMMANDS as CONV_COMMANDS
from ..conv.problem import directions, map_problem
from ..errors import BadParam, MiopyError, check
from ..find import tensor_bytes
from ..handle import Handle
from ..plan import check_fits
from ..tuning import STRATEGIES, Compiler, SearchSpace, TuneOptions, TuneResult, tunable, tune_problem
from ..tuning.tuner import default_budget

PROGRAMS = ("./bin/MIOpenDriver", "MIOpenDriver", "miopy-driver")
DEFAULT_COMMAND = "conv"


def drivers() -> dict[str, ModuleType]:
    """Every family's driver module, by the commands its add_parsers adds."""
    out = {}
    for family in families.FAMILIES:
        driver = family.module("driver")
        commands = argparse.ArgumentParser().add_subparsers()
        driver.add_parsers(commands)
        out.update(dict.fromkeys(commands.choices, driver))
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="miopy-tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for driver in dict.fromkeys(drivers().values()):
        driver.add_parsers(sub)
    for command, p in sub.choices.items():
        p.description = f"tune the problem of miopy-driver {command}'s flags (the run, time and verify flags are " \
                        "accepted and ignored)"
        _tuning_arguments(p)
        if command in CONV_COMMANDS:
            _convolution_sources(p)
    return ap


class _Once:
    """ap's add_argument, passing over an option a driver already defines with the same meaning (-S, --seed:
    the same dest)."""

    def __init__(self, ap: argparse.ArgumentParser):
        self.ap = ap

    def add_argument(self, *flags: str, **kwargs: Any) -> None:
        if not any(flag in self.ap._option_string_actions for flag in flags):
            self.ap.add_argument(*flags, **kwargs)

    def add_mutually_exclusive_group(self):
        return self.ap.add_mutually_exclusive_group()


def _tuning_arguments(parser: argparse.ArgumentParser) -> None:
    ap = _Once(parser)
    ap.add_argument("-S", "--solver", default=None, help="tune this solver only (by id)")
    ap.add_argument("--file", type=Path, help="tune the problems of miopy-driver / MIOpenDriver command lines")
    ap.add_argument("--strategy", choices=sorted(STRATEGIES), default="local",
                    help="search strategy (fast: batched multi-start local search with priors and an early "
                         "timing cut, for use with --time-budget)")
    ap.add_argument("--budget", type=int, default=None,
                    help="most points measured per solver (default 32; fast: 128)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per solver and problem")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds per problem, shared among its solvers (smallest search spaces first)")
    ap.add_argument("--cut", type=float, default=None,
                    help="early timing cut: a point whose first run is this many times the best so far is not "
                         "timed further (> 1; default: fast 1.5, other strategies none)")
    ap.add_argument("--patience", type=int, default=None, help="stop after this many points without a better one")
    ap.add_argument("--jobs", type=int, default=None, help="compile workers (default min(4, CPUs); 0: in-process)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random strategies")
    cluster = ap.add_mutually_exclusive_group()
    cluster.add_argument("--workers", type=int, default=None,
                         help="tune on a local Dask cluster of this many worker processes (one per device)")
    cluster.add_argument("--scheduler", default=None, help="tune on the Dask cluster at this scheduler address")
    ap.add_argument("--find", action="store_true", help="with a cluster: also run find per problem (find DB)")


def _convolution_sources(ap: argparse.ArgumentParser) -> None:
    """conv's own problem sources and the immediate-mode model's training."""
    ap.add_argument("--dtype", choices=sorted(set(CONV_COMMANDS.values())), default=None,
                    help="data type of the problem the flags describe (default: the command's)")
    source = ap.add_mutually_exclusive_group()
    source.add_argument("--network", help=f"tune the unique conv layers of {sorted(networks.NETWORKS)} at batch -n")
    source.add_argument("--onnx", type=Path, help="tune the convolutions an ONNX model runs (the onnx extra), "
                                                  "in the directions -F asks, at --batch")
    ap.add_argument("--batch", type=int, default=None, help="--onnx: batch size of the model's inputs")
    model = ap.add_argument_group("immediate-mode model (miopy.conv.heuristic_training)")
    model.add_argument("--train-heuristic", action="store_true",
                       help="train the immediate-mode model from a DB's find records and write it to --out")
    model.add_argument("--db", type=Path, default=None, help="DB file to train from (default: the user DB)")
    model.add_argument("--out", type=Path, default=None, help="model file to write (use it with "
                                                              "MIOPY_HEURISTIC_MODEL=PATH)")
    model.add_argument("--device", default=None, help="train on the records of devices whose id contains this "
                                                      "(default: the device with the most records)")
    model.add_argument("--match", default=None, help="comma-separated device-name substrings the model serves "
                                                     "(default: the trained device's name)")


def with_command(argv: list[str]) -> list[str]:
    """argv with conv as the command when it names none (miopy-tune's flags are MIOpenDriver conv's by default)."""
    if argv and (argv[0] in drivers() or argv[0] in ("-h", "--help")):
        return argv
    return [DEFAULT_COMMAND, *argv]


def train_heuristic(args: argparse.Namespace) -> int:
    """--train-heuristic: fit the model on the DB's find records, report its held-out quality, write it."""
    check(args.out is not None, "--out", "--train-heuristic needs --out PATH")
    found: Path | None = args.db or config.user_db_path()
    if found is None:
        raise BadParam("--db", "no user DB: give --db PATH")
    path = Path(found)
    check(path.exists(), "--db", f"no DB file at {path}")
    device = args.device or _busiest_device(path)
    records = heuristic_training.records_from_db(path, device)
    check(len(records) >= 10, "--db", f"{path} holds {len(records)} find records of {device!r}; need >= 10")
    match = args.match.split(",") if args.match else [device.split("|")[1] if "|" in device else device]
    held_out = heuristic_training.cross_validate(records)
    model = heuristic_training.fit(records, match)
    heuristic_model.write_model(model, args.out)
    print(f"miopy-tune: trained on {model.trained_on} problems of {device}; held out (5-fold by layer): "
          f"{100 * held_out['within_1.1x']:.0f}% within 1.1x of find's best, geomean {held_out['geomean']:.3f}x, "
          f"worst {held_out['worst']:.2f}x; wrote {args.out} (serves devices named like {match})")
    return 0


def _busiest_device(path: Path) -> str:
    import sqlite3
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT device, COUNT(DISTINCT problem) AS n FROM find GROUP BY device "
                           "ORDER BY n DESC LIMIT 1").fetchone()
    except sqlite3.Error as exc:
        raise BadParam("--db", f"{path} is not a miopy DB: {exc}") from None
    finally:
        conn.close()
    if row is None:
        raise BadParam("--db", f"{path} holds no find records")
    return row[0]


def problems_of(args: argparse.Namespace) -> tuple[list[Any], list[str]]:
    """The problems the arguments name, each once, in order, and one message per --file line skipped as bad
    (its file and line number and what is wrong with it)."""
    skipped: list[str] = []
    if getattr(args, "network", None):
        found = networks.problems(args.network, args.batchsize, directions(args.forw))
    elif args.file:
        found, skipped = file_problems(args.file)
    elif getattr(args, "onnx", None):
        found = onnx_problems(args.onnx, args.batch, args.forw)
    else:
        found = drivers()[args.command].problems(args)
    return list({p.key(): p for p in found}.values()), skipped


def file_problems(path: Path) -> tuple[list[Any], list[str]]:
    """The problems of a --file's driver lines, and a message for each such line whose flags are bad; a file
    that cannot be read is BadParam("--file")."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadParam("--file", f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    commands = drivers()
    lines, bad = driver_lines(text.splitlines(), commands)
    if not lines:
        raise BadParam("--file", f"{path} holds no driver line (lines starting with `./bin/MIOpenDriver`, "
                                 "`MIOpenDriver` or `miopy-driver` and a command): nothing to tune")
    found = []
    for number, argv in lines:
        try:
            found += commands[argv.command].problems(argv)
        except MiopyError as exc:
            bad.append((number, f"{type(exc).__name__}: {exc}"))
    return found, [f"{path}:{number}: {why}" for number, why in sorted(bad)]


class _LineParser(argparse.ArgumentParser):
    """Parses one file line's flags; a bad flag raises instead of exiting the program."""

    def error(self, message: str):
        raise BadParam("line", message)


def driver_lines(lines: Iterable[str], commands: dict[str, ModuleType] | None = None
                 ) -> tuple[list[tuple[int, argparse.Namespace]], list[tuple[int, str]]]:
    """(line number, parsed flags, with .command) of each line that is a miopy-driver or MIOpenDriver command of a
    family, and (line number, what is wrong) of each such line whose flags do not parse. Other lines (comments,
    other programs or commands) are not problems and are passed over; flags that do not describe the problem
    (-t, -V, -i, -S, ...) are ignored. commands: drivers(), when the caller has it."""
    commands = commands or drivers()
    line_parser = _LineParser(add_help=False, allow_abbrev=False)
    sub = line_parser.add_subparsers(dest="command")
    for driver in dict.fromkeys(commands.values()):
        driver.add_parsers(sub)
    parsed, bad = [], []
    for number, line in enumerate(lines, 1):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:   # an unclosed quote: a problem only if the line is a driver command
            words = line.split()
            if _is_driver_line(words, commands):
                bad.append((number, f"cannot split the line: {exc}"))
            continue
        if not _is_driver_line(words, commands):
            continue
        try:
            parsed.append((number, line_parser.parse_known_args(words[1:])[0]))
        except BadParam as exc:
            bad.append((number, f"bad flags: {str(exc).split(': ', 1)[-1]}"))
    return parsed, bad


def _is_driver_line(words: list[str], commands: dict[str, ModuleType]) -> bool:
    return len(words) >= 2 and words[0] in PROGRAMS and words[1] in commands


def onnx_problems(model: Path, batch: int | None, forw: int) -> list[Any]:
    """The problems of every convolution model runs (fusions included: a fused convolution is tuned as its
    plain problem), in the directions forw asks (0: all three)."""
    try:
        from ..onnx import convolutions
    except ImportError as exc:
        raise BadParam("--onnx", f"needs the onnx extra (pip install 'miopy[onnx]'): {exc}") from None
    return [map_problem(d, x, w, conv).problem for _, x, w, conv in convolutions(model, batch)
            for d in directions(forw)]


def tune_one(handle: Handle, problem: Any, args: argparse.Namespace, compiler: Compiler) -> list[TuneResult]:
    """Tune every chosen solver on problem behind a progress bar; returns their results."""
    from tqdm import tqdm  # the bar is the CLI's business; the library does not need tqdm

    check_fits(handle, tensor_bytes(problem))   # before the bar: an error is then one line
    solvers = tunable(handle, problem, [problem.registry.get(args.solver)] if args.solver else None)
    budget = options_of(args).budget or 0
    total = sum(min(budget, len(SearchSpace.of(s, problem, handle.info))) for s in solvers)
    with tqdm(total=total, desc=problem.key(), unit="pt", file=sys.stderr, leave=False) as bar:
        return tune_problem(handle, problem, solvers=solvers, strategy_name=args.strategy, options=options_of(args),
                            compiler=compiler, on_result=lambda _: bar.update(1))


def options_of(args: argparse.Namespace) -> TuneOptions:
    """The tuning limits the flags give, each checked (BadParam naming the flag)."""
    budget = default_budget(args.strategy) if args.budget is None else args.budget
    check(budget >= 1, "--budget", f"must be >= 1, got {budget}")
    for flag, value in (("--time-limit", args.time_limit), ("--time-budget", args.time_budget)):
        check(value is None or (math.isfinite(value) and value > 0), flag,
              f"must be a number of seconds > 0, got {value}")
    check(args.cut is None or (math.isfinite(args.cut) and args.cut > 1), "--cut",
          f"must be a number > 1, got {args.cut}")
    check(args.patience is None or args.patience >= 1, "--patience", f"must be >= 1, got {args.patience}")
    check(args.jobs is None or args.jobs >= 0, "--jobs", f"must be >= 0 (0: compile in this process), got {args.jobs}")
    check(args.seed >= 0, "--seed", f"must be >= 0, got {args.seed}")
    check(args.workers is None or args.workers >= 1, "--workers", f"must be >= 1, got {args.workers}")
    return TuneOptions(budget, args.time_limit, args.patience, args.seed, args.cut, args.time_budget)


def table(problem: Any, results: list[TuneResult]) -> str:
    """The closing table of one problem: solver, default and tuned time, speedup, GFLOP/s (where the problem
    counts its FLOPs), params."""
    command = getattr(problem, "driver_command", None)
    lines = [problem.key() + (f"  (miopy-driver {command()})" if command is not None else ""),
             f"  {'solver':<28}{'default ms':>12}{'tuned ms':>12}{'speedup':>9}{'GFLOP/s':>10}  params / points"]
    flops = getattr(problem, "flops", None)
    for r in results:
        timed = math.isfinite(r.best_ms) and r.best_ms > 0
        gflops = flops() / r.best_ms / 1e6 if flops is not None and timed else math.nan
        where = (db.params_key(r.best_params) if r.stored and r.best_params is not None
                 else "not stored: no point verified")
        lines.append(f"  {r.solver_id:<28}{r.default_ms:>12.4f}{r.best_ms:>12.4f}{r.speedup:>8.2f}x{gflops:>10.1f}  "
                     f"{where}; {r.measured} measured, {r.recorded} from the log, {r.failed} failed"
                     + (f", {r.cut} cut" if r.cut else "") + (f"; {r.seconds['total']:.1f} s" if r.seconds else ""))
    if not results:
        lines.append("  no applicable solver has anything to tune")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parser().parse_args(with_command(list(sys.argv[1:] if argv is None else argv)))
    if getattr(args, "dtype", None) is None:
        args.dtype = CONV_COMMANDS.get(args.command)
    try:
        if getattr(args, "train_heuristic", False):
            return train_heuristic(args)
        options_of(args)
        problems, skipped = problems_of(args)
        for message in skipped:
            print(f"miopy-tune: skipped {message}", file=sys.stderr)
        if args.workers is not None or args.scheduler is not None:
            return tune_on_cluster(problems, args) or (1 if skipped else 0)
        handle = Handle()
        print(f"miopy-tune: device {handle.info.name} ({handle.info.platform}); {len(problems)} problem(s); "
              f"strategy {args.strategy}, budget {options_of(args).budget}"
              + (f", {args.time_budget:g} s per problem" if args.time_budget else "")
              + f"; user DB {config.user_db_path() or 'in memory'}")
        with Compiler(handle, args.jobs) as compiler:
            for problem in problems:
                print(table(problem, tune_one(handle, problem, args, compiler)), flush=True)
    except MiopyError as exc:
        print(f"miopy-tune: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print("miopy-tune: error: out of host memory", file=sys.stderr)
        return 1
    if skipped:
        print(f"miopy-tune: {len(skipped)} line(s) of {args.file} skipped (see above)", file=sys.stderr)
        return 1
    return 0


def tune_on_cluster(problems: list[Any], args: argparse.Namespace) -> int:
    """Tuning (and find) jobs on a Dask cluster; the summary table at the end."""
    from ..distributed import cluster, run, tune_jobs  # the optional extra, imported only here
    solvers = [problems[0].registry.get(args.solver)] if args.solver and problems else None
    options = options_of(args)
    jobs = tune_jobs(problems, solvers, strategy=args.strategy, options=options, find=args.find)
    print(f"miopy-tune: {len(jobs)} job(s) for {len(problems)} problem(s) on "
          f"{args.scheduler or f'{args.workers} local worker(s)'}; user DB {config.user_db_path() or 'in memory'}")
    with cluster(workers=args.workers, scheduler=args.scheduler) as client:
        report = run(client, jobs)
    print(report.table(), flush=True)
    return 0 if not report.failed else 1


if __name__ == "__main__":
    sys.exit(main())
