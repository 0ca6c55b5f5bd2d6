"""Training and evaluating the immediate-mode model (miopy.conv.heuristic_model): the find records of a DB
as problems and per-solver targets, boosted regression trees fitted to them (``train``, and ``fit``: the
average over a fixed grid, what the shipped models and ``miopy-tune --train-heuristic`` use), and held-out
evaluation that picks as immediate mode does (``cross_validate``; benchmarks/heuristic_eval.py).

Nothing here runs at find time: immediate mode imports only heuristic_model.
"""
from __future__ import annotations

import math
import sqlite3
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..errors import MiopyError
from ..tensor import MATH_MODES, TensorDesc
from . import heuristic, registry
from .heuristic_model import FEATURES, Model, SolverModel, features, rank_by_model
from .problem import ConvDesc, ConvProblem, Direction

Records = Mapping[str, Mapping[str, float]]   # problem key -> {solver id: time in ms}


def problem_from_key(key: str) -> ConvProblem | None:
    """The convolution problem a find-DB key names (ConvProblem.key's format), or None for a key of another
    family or a form this parser does not read (explicit strides)."""
    parts = key.split("-")
    try:
        c, h, w, rs, k, _, _, n, pads, strides, dils, _, layout, dtype, letter = parts[:15]
        rest = parts[15:]
        groups, math_mode = 1, None
        for extra in rest:
            if extra in MATH_MODES:
                math_mode = extra
            elif extra.startswith("g"):
                groups = int(extra[1:])
            else:   # explicit strides ("s..."), or a suffix of a later version
                return None
        r, s = (int(v) for v in rs.split("x"))
        if "," in pads:
            (t, b), (left, right) = (tuple(int(v) for v in side.split(",")) for side in pads.split("x"))
            pad: tuple[int, ...] = (t, b, left, right)
        else:
            pad = tuple(int(v) for v in pads.split("x"))
        direction = {"F": Direction.FORWARD, "B": Direction.BACKWARD_DATA, "W": Direction.BACKWARD_WEIGHTS}[letter]
        if layout != "NCHW":
            return None
        x = TensorDesc(dtype, (int(n), int(c), int(h), int(w)))
        wd = TensorDesc(dtype, (int(k), int(c) // groups, r, s))
        conv = ConvDesc(pad, tuple(int(v) for v in strides.split("x")), tuple(int(v) for v in dils.split("x")),
                        groups)
        return ConvProblem.create(direction, x, wd, conv, math_mode=math_mode)
    except (ValueError, KeyError, MiopyError):
        return None


# -- fitting regression trees (their format: miopy.conv.heuristic_model) -------------------------------------
def _best_split(X: np.ndarray, r: np.ndarray, min_leaf: int) -> tuple[int, float, float] | None:
    """(feature, threshold, gain) of the split of rows X that most reduces r's squared error, or None."""
    n = len(r)
    best: tuple[int, float, float] | None = None
    total, base = r.sum(), r.sum() ** 2 / n
    for f in range(X.shape[1]):
        order = np.argsort(X[:, f], kind="stable")
        xs, cs = X[order, f], np.cumsum(r[order])
        left_n = np.arange(1, n)
        ok = (xs[1:] != xs[:-1]) & (left_n >= min_leaf) & (n - left_n >= min_leaf)
        if not ok.any():
            continue
        left_sum = cs[:-1]
        gain = left_sum ** 2 / left_n + (total - left_sum) ** 2 / (n - left_n) - base
        gain = np.where(ok, gain, -np.inf)
        i = int(np.argmax(gain))
        if best is None or gain[i] > best[2]:
            best = (f, float((xs[i] + xs[i + 1]) / 2), float(gain[i]))
    return best if best is not None and best[2] > 1e-12 else None


def _fit_tree(X: np.ndarray, r: np.ndarray, depth: int, min_leaf: int):
    split = _best_split(X, r, min_leaf) if depth > 0 and len(r) >= 2 * min_leaf else None
    if split is None:
        return float(r.mean())
    f, t, _ = split
    left = X[:, f] <= t
    return [f, t, _fit_tree(X[left], r[left], depth - 1, min_leaf), _fit_tree(X[~left], r[~left], depth - 1, min_leaf)]


def _predict_tree(tree, x: np.ndarray) -> float:
    while isinstance(tree, list):
        tree = tree[2] if x[int(tree[0])] <= tree[1] else tree[3]
    return float(tree)


# -- training ------------------------------------------------------------------------------------------------
def _finite(times: Mapping[str, float]) -> dict[str, float]:
    return {s: t for s, t in times.items() if t is not None and math.isfinite(t) and t > 0}


def reference_solver(records: Records) -> str:
    """Among the solvers that ran on at least 90% of as many records as the most widely applicable one, the
    one within 1.1x of the best in the most records (ties: the one that ran in more, then by name): the
    targets are times relative to it, so comparing it with a rival is one model's prediction, on nearly
    every problem the same way (a solver for 1x1 layers only would leave most records to their best time)."""
    near: dict[str, int] = {}
    ran: dict[str, int] = {}
    for times in records.values():
        finite = _finite(times)
        if finite:
            best = min(finite.values())
            for s, t in finite.items():
                ran[s] = ran.get(s, 0) + 1
                near[s] = near.get(s, 0) + (t <= 1.1 * best)
    wide = [s for s in ran if ran[s] >= 0.9 * max(ran.values())]
    return min(wide, key=lambda s: (-near[s], -ran[s], s)) if wide else ""


def training_rows(records: Records, clip: float = math.inf,
                  reference: str | None = None) -> tuple[list[ConvProblem], list[dict[str, float]]]:
    """Problems with their {solver: log2(time / reference time)} clipped to [-clip, clip], for every record
    whose key parses; the reference time is the reference solver's where it ran, else the record's best
    (reference None: always the best, so the targets are slowdowns >= 0)."""
    problems, targets = [], []
    for key, times in records.items():
        problem = problem_from_key(key)
        finite = _finite(times)
        if problem is None or not finite:
            continue
        ref = finite.get(reference, min(finite.values())) if reference else min(finite.values())
        problems.append(problem)
        targets.append({s: max(-clip, min(math.log2(t / ref), clip)) for s, t in finite.items()})
    return problems, targets


def train(records: Records, match: Sequence[str], rounds: int = 60, depth: int = 2, rate: float = 0.15,
          min_leaf: int = 3, clip: float = 1.0) -> Model:
    """Fit one boosted-tree predictor per solver on records (problem key -> {solver: ms}) of log2(time /
    the reference solver's time) (reference_solver: a solver that is usually near the best, so the close
    calls between it and its rivals are what each rival's model learns). Targets are clipped to +-clip
    (log2: 1.0 = 2x): picking the best needs the near ones told apart, not how far behind the hopeless
    ones are, and unclipped 100x outliers (naive on depthwise layers) swamp the squared loss. fit() averages
    such models over a fixed grid of clip, rate and rounds."""
    reference = reference_solver(records)
    problems, targets = training_rows(records, clip, reference)
    X = np.array([features(p) for p in problems]) if problems else np.zeros((0, len(FEATURES)))
    solvers = {}
    for sid in sorted({s for t in targets for s in t}):
        rows = [i for i, t in enumerate(targets) if sid in t]
        y = np.array([targets[i][sid] for i in rows])
        Xs, base = X[rows], float(y.mean())
        pred, trees = np.full(len(y), base), []
        for _ in range(rounds if len(y) >= 2 * min_leaf else 0):
            tree = _fit_tree(Xs, y - pred, depth, min_leaf)
            if not isinstance(tree, list):
                break
            trees.append(tree)
            pred += rate * np.array([_predict_tree(tree, x) for x in Xs])
        solvers[sid] = SolverModel(base, rate, tuple(trees))
    params = {"rounds": rounds, "depth": depth, "rate": rate, "min_leaf": min_leaf, "clip": clip}
    return Model(tuple(match), solvers, len(problems), reference=reference, params=params)


# The members fit() averages: a fixed grid (clip 0.5 / 1 / 2, each with 60 rounds at rate 0.15 and 120 at
# 0.1; depth 2, 3 rows a leaf), not chosen per data set.
GRID = tuple({"clip": c, "rate": r, "rounds": n} for c in (0.5, 1.0, 2.0) for r, n in ((0.15, 60), (0.1, 120)))


def _scaled(tree, factor: float):
    """tree with its leaves times factor, rounded (leaves to 6 significant digits, thresholds to 6 decimals,
    far finer than any gap between two problems' features) so the JSON stays small."""
    if isinstance(tree, list):
        return [tree[0], round(tree[1], 6), _scaled(tree[2], factor), _scaled(tree[3], factor)]
    return float(f"{float(tree) * factor:.6g}")


def fit(records: Records, match: Sequence[str], grid: Sequence[Mapping] = GRID) -> Model:
    """The average of train()'s models over grid (what --train-heuristic and the shipped models use): one
    boosted-tree predictor per solver whose trees are every member's, leaves scaled by rate / members.
    Averaging the clips and rates, rather than picking one, costs no selection on the data and smooths
    the members' errors on the close calls."""
    members = [train(records, match, **point) for point in grid]
    solvers = {}
    for sid in sorted({s for m in members for s in m.solvers}):
        own = [m.solvers[sid] for m in members if sid in m.solvers]
        solvers[sid] = SolverModel(sum(m.base for m in own) / len(own), 1.0,
                                   tuple(_scaled(t, m.rate / len(own)) for m in own for t in m.trees))
    params = {"members": len(members), "depth": 2, "min_leaf": 3}
    return Model(tuple(match), solvers, members[0].trained_on if members else 0,
                 reference=members[0].reference if members else "", params=params)


def records_from_db(path: Path, device: str | None = None) -> dict[str, dict[str, float]]:
    """The find records of a DB file (user or system), as problem key -> {solver: ms}, for devices whose id
    contains device (all when None). Several devices' records of one problem: the first device's are kept."""
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT device, problem, solver, time_ms FROM find "
                            "ORDER BY device, problem, rank").fetchall()
    finally:
        conn.close()
    out: dict[str, dict[str, float]] = {}
    owner: dict[str, str] = {}
    for dev, key, solver, ms in rows:
        if device is not None and device.lower() not in dev.lower():
            continue
        if owner.setdefault(key, dev) == dev and ms is not None:
            out.setdefault(key, {})[solver] = float(ms)
    return out


# -- evaluating ----------------------------------------------------------------------------------------------
def evaluate(choose, records: Records) -> dict:
    """How good choose(problem, solver ids that ran) -> id is against the measured best of each record:
    fraction within 1.1x, geometric mean and worst ratio, and the worst problems."""
    ratios = []
    for key, times in records.items():
        problem = problem_from_key(key)
        finite = {s: t for s, t in times.items() if t is not None and math.isfinite(t) and t > 0}
        if problem is None or not finite:
            continue
        pick = choose(problem, sorted(finite))
        ratios.append((finite[pick] / min(finite.values()), key, pick))
    if not ratios:
        return {"problems": 0}
    values = np.array([r for r, _, _ in ratios])
    worst = sorted(ratios, reverse=True)[:5]
    return {"problems": len(values), "within_1.1x": float((values <= 1.1).mean()),
            "within_1.3x": float((values <= 1.3).mean()), "geomean": float(np.exp(np.log(values).mean())),
            "worst": float(values.max()), "worst_cases": [{"ratio": r, "problem": k, "chose": p} for r, k, p in worst]}


def layer_of(key: str) -> str:
    """The key without its direction: a layer's three directions share it (held-out splits keep them together)."""
    parts = key.split("-")
    return "-".join(parts[:14] + parts[15:])


def shipped_choice(model: Model, problem: ConvProblem, ran: Sequence[str]) -> str:
    """The solver (among ran) that immediate mode would pick with model serving the device: the model's order
    over the shape rule's (heuristic.rank), so a solver the model never saw keeps the shape rule's place
    rather than losing to every known one (a held-out fold can hold a solver's only training layer, as the one
    classifier layer of the GPU sets holds ConvGemv1x1's)."""
    solvers = [x for x in registry.ALL if x.id in ran]   # registry order, as find lists its candidates
    order = rank_by_model(model, problem, heuristic.shape_rank(problem, solvers))
    return order[0].id if order else ran[0]


def cross_validate(records: Records, match: Sequence[str] = ("any",), folds: int = 5, salt: str = "",
                   **train_args) -> dict:
    """Held-out evaluation: layers (all directions together) split into folds by a hash of their shape
    (and salt: another salt, another split);
    each fold ranked by a model trained on the others: fit()'s (the shipped procedure), or train(**train_args)'s
    when given, over the shape rule as immediate mode ranks (shipped_choice). Returns evaluate()'s summary over
    every held-out problem."""
    picks: dict[str, str] = {}
    keys = list(records)
    fold_of = {k: zlib.crc32((layer_of(k) + salt).encode()) % folds for k in keys}
    for fold in range(folds):
        train_set = {k: records[k] for k in keys if fold_of[k] != fold}
        model = train(train_set, match, **train_args) if train_args else fit(train_set, match)
        for k in keys:
            if fold_of[k] == fold:
                problem = problem_from_key(k)
                ran = sorted(_finite(records[k]))
                if problem is not None and ran:
                    picks[k] = shipped_choice(model, problem, ran)
    return evaluate(lambda p, ran: picks[p.key()] if picks.get(p.key()) in ran else ran[0],
                    {k: records[k] for k in picks})


