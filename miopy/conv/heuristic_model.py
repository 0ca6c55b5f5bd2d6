"""Immediate mode from a model: gradient-boosted regression trees (plain NumPy) that predict, for each
solver, how much slower than the best it will be on a problem, trained from find-DB records.

For every solver the target is log2(time / best time), clipped at 2x, over the problems where it ran;
features describe the problem's shape (FEATURES). The candidates the model knows are ranked by predicted
slowdown in the places the shape rule (miopy.conv.heuristic) gives them; a solver the model has not seen
keeps its shape-rule place.

A model is a JSON file (no pickle: loading one runs nothing) that names the devices it serves by substrings of
the device name (``match``), e.g. ["H100", "H200"] for one family. ``model_for(dev)`` takes
MIOPY_HEURISTIC_MODEL when set, else the first model shipped in miopy/data/heuristic_*.json that matches;
a file that is unreadable or malformed is skipped with one warning (the shape rule then ranks).

    miopy-tune --train-heuristic [--db PATH] [--device SUBSTR] --out PATH [--match H100,H200]

retrains from a find DB (the user's by default): see ``train`` and ``records_from_db``.
"""
from __future__ import annotations

import functools
import json
import logging
import math
import sqlite3
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import config
from ..errors import MiopyError
from ..log import warn_once
from ..tensor import MATH_MODES, TensorDesc
from .problem import ConvDesc, ConvProblem, Direction

logger = logging.getLogger(__name__)

FORMAT = 1
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
FEATURES = ("fwd", "bwd_data", "bwd_weights", "log2_c_per_group", "log2_k_per_group", "log2_h", "log2_w",
            "log2_pq", "log2_n", "r", "s", "stride", "pad", "dilation", "log2_groups", "depthwise", "is_1x1",
            "log2_flops", "log2_reduction", "log2_bytes", "log2_intensity", "log2_gemm_m", "log2_gemm_k")
Records = Mapping[str, Mapping[str, float]]   # problem key -> {solver id: time in ms}


def features(p: ConvProblem) -> np.ndarray:
    """The problem's shape as the model's feature vector (FEATURES order)."""
    lg = math.log2
    bytes_ = sum(d.nbytes for d in (p.x, p.w, p.y))
    return np.array([p.direction is Direction.FORWARD, p.direction is Direction.BACKWARD_DATA,
                     p.direction is Direction.BACKWARD_WEIGHTS, lg(p.c_per_group), lg(p.k_per_group), lg(p.in_h),
                     lg(p.in_w), lg(p.out_h * p.out_w), lg(p.n), p.r, p.s, p.stride_h, p.pad_h, p.dil_h,
                     lg(p.groups), p.groups > 1 and p.c_per_group == 1, p.r == p.s == 1, lg(p.flops()),
                     lg(p.reduction_length()), lg(bytes_), lg(p.flops() / bytes_), lg(p.n * p.out_h * p.out_w),
                     lg(p.c_per_group * p.r * p.s)], dtype=np.float64)


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


# -- regression trees -------------------------------------------------------------------------------------
# A tree is a nested list: [feature, threshold, left, right] for a split (x[feature] <= threshold goes
# left), or a float for a leaf.
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


@dataclass(frozen=True)
class SolverModel:
    """One solver's boosted trees: predicted log2 slowdown = base + rate * sum(tree(x))."""

    base: float
    rate: float
    trees: tuple

    def predict(self, x: np.ndarray) -> float:
        return self.base + self.rate * sum(_predict_tree(t, x) for t in self.trees)


@dataclass(frozen=True)
class Model:
    """Per-solver slowdown predictors for the devices whose names contain one of ``match``."""

    match: tuple[str, ...]
    solvers: Mapping[str, SolverModel]
    trained_on: int = 0          # problems in the training records
    source: str = ""             # where it was loaded from (messages)

    def matches(self, device_name: str) -> bool:
        return any(m.lower() in device_name.lower() for m in self.match)

    def scores(self, problem: ConvProblem) -> dict[str, float]:
        """Predicted log2 slowdown of every solver the model knows, on problem (lower is better)."""
        x = features(problem)
        return {sid: m.predict(x) for sid, m in self.solvers.items()}

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "kind": "miopy-conv-heuristic", "features": list(FEATURES),
                           "match": list(self.match), "trained_on": self.trained_on,
                           "solvers": {sid: {"base": m.base, "rate": m.rate, "trees": list(m.trees)}
                                       for sid, m in self.solvers.items()}})

    @classmethod
    def from_json(cls, text: str, source: str = "") -> Model:
        """Parse and validate; ValueError when the file is not a model of this format."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("features") != list(FEATURES):
            raise ValueError(f"not a format-{FORMAT} model with this version's features")
        match = data["match"]
        if not isinstance(match, list) or not all(isinstance(m, str) and m for m in match):
            raise ValueError("match must be a list of device-name substrings")
        solvers = {}
        for sid, m in data["solvers"].items():
            trees = tuple(m["trees"])
            for tree in trees:
                _check_tree(tree)
            solvers[str(sid)] = SolverModel(float(m["base"]), float(m["rate"]), trees)
        return cls(tuple(match), solvers, int(data.get("trained_on", 0)), source)


def _check_tree(tree) -> None:
    if isinstance(tree, list):
        if len(tree) != 4 or not isinstance(tree[0], int) or not 0 <= tree[0] < len(FEATURES):
            raise ValueError(f"malformed tree node {tree!r:.60}")
        float(tree[1])
        _check_tree(tree[2])
        _check_tree(tree[3])
    elif not isinstance(tree, (int, float)) or not math.isfinite(tree):
        raise ValueError(f"malformed leaf {tree!r:.60}")


# -- training ----------------------------------------------------------------------------------------------
def training_rows(records: Records, clip: float = math.inf) -> tuple[list[ConvProblem], list[dict[str, float]]]:
    """Problems with their {solver: min(log2(time / best), clip)} for every record whose key parses."""
    problems, targets = [], []
    for key, times in records.items():
        problem = problem_from_key(key)
        finite = {s: t for s, t in times.items() if t is not None and math.isfinite(t) and t > 0}
        if problem is None or not finite:
            continue
        best = min(finite.values())
        problems.append(problem)
        targets.append({s: min(math.log2(t / best), clip) for s, t in finite.items()})
    return problems, targets


def train(records: Records, match: Sequence[str], rounds: int = 60, depth: int = 2, rate: float = 0.15,
          min_leaf: int = 3, clip: float = 1.0) -> Model:
    """Fit one boosted-tree slowdown predictor per solver on records (problem key -> {solver: ms}). Targets
    are clipped at clip (log2: 1.0 = 2x slower): picking the best needs the near ones told apart, not
    how far behind the hopeless ones are, and unclipped 100x outliers (naive on depthwise layers) swamp the
    squared loss. Defaults chosen by 5-fold held-out evaluation on PoCL records (benchmarks/heuristic_eval.py)."""
    problems, targets = training_rows(records, clip)
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
    return Model(tuple(match), solvers, len(problems))


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


# -- choosing and evaluating -----------------------------------------------------------------------------
def rank_by_model(model: Model, problem: ConvProblem, fallback: Sequence) -> list:
    """fallback (the shape rule's order) with the solvers the model knows reordered by predicted slowdown
    among their own places; a solver the model has not seen (added since it was trained, or made for
    another kind of device) keeps the place the shape rule gives it."""
    scores = model.scores(problem)
    known = iter(sorted((s for s in fallback if s.id in scores), key=lambda s: scores[s.id]))
    return [next(known) if s.id in scores else s for s in fallback]


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


def cross_validate(records: Records, match: Sequence[str] = ("any",), folds: int = 5, **train_args) -> dict:
    """Held-out evaluation: layers (all directions together) split into folds by a hash of their shape;
    each fold ranked by a model trained on the others. Returns evaluate()'s summary over every held-out problem."""
    picks: dict[str, str] = {}
    keys = list(records)
    fold_of = {k: zlib.crc32(layer_of(k).encode()) % folds for k in keys}
    for fold in range(folds):
        train_set = {k: records[k] for k in keys if fold_of[k] != fold}
        model = train(train_set, match, **train_args)
        for k in keys:
            if fold_of[k] == fold:
                problem = problem_from_key(k)
                ran = [s for s, t in records[k].items() if t is not None and math.isfinite(t)]
                if problem is not None and ran:
                    scores = model.scores(problem)
                    picks[k] = min(ran, key=lambda s: scores.get(s, math.inf))
    return evaluate(lambda p, ran: picks[p.key()] if picks.get(p.key()) in ran else ran[0],
                    {k: records[k] for k in picks})


# -- loading ---------------------------------------------------------------------------------------------
def model_for(device_name: str) -> Model | None:
    """The model serving this device: MIOPY_HEURISTIC_MODEL's file when set (if it matches), else the first
    shipped model that matches; None when none does (the shape rule ranks)."""
    return _model_for(device_name, config.heuristic_model())


@functools.lru_cache(maxsize=16)
def _model_for(device_name: str, explicit: str | None) -> Model | None:
    paths = [Path(explicit)] if explicit else sorted(DATA_DIR.glob("heuristic_*.json"))
    for path in paths:
        model = _load(str(path))
        if model is not None and model.matches(device_name):
            return model
    return None


@functools.lru_cache(maxsize=16)
def _load(path: str) -> Model | None:
    try:
        return Model.from_json(Path(path).read_text(), source=path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        warn_once(logger, f"heuristic model {path} is unusable ({type(exc).__name__}: {exc}); "
                          "ranking by the shape rule")
        return None


def write_model(model: Model, path: Path) -> None:
    """Write model's JSON to path atomically (a temporary name, then a rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(model.to_json())
    tmp.replace(path)
    _load.cache_clear()
    _model_for.cache_clear()
