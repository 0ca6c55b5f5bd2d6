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

import dataclasses
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
from ..solver import ceil_div, round_up
from ..tensor import MATH_MODES, TensorDesc
from .problem import ConvDesc, ConvProblem, Direction

logger = logging.getLogger(__name__)

FORMAT = 2                   # 2: reference-relative targets, FEATURES below; 1 (FEATURES_V1) still loads
FORMATS = (1, 2)
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
FEATURES_V1 = ("fwd", "bwd_data", "bwd_weights", "log2_c_per_group", "log2_k_per_group", "log2_h", "log2_w",
               "log2_pq", "log2_n", "r", "s", "stride", "pad", "dilation", "log2_groups", "depthwise", "is_1x1",
               "log2_flops", "log2_reduction", "log2_bytes", "log2_intensity", "log2_gemm_m", "log2_gemm_k")
FEATURES = FEATURES_V1 + ("flat_1x1", "log2_vector_cols", "vector_waste16", "vector_waste8", "log2_tile_channels",
                          "tile_channels_div4", "tile_channels_div8", "tile_channels_div6", "log2_dir_gemm_m",
                          "log2_dir_gemm_n", "log2_dir_gemm_k", "log2_outputs", "channel_waste16", "log2_q",
                          "strided")
Records = Mapping[str, Mapping[str, float]]   # problem key -> {solver id: time in ms}


def features(p: ConvProblem) -> np.ndarray:
    """The problem's shape as the model's feature vector (FEATURES order; format-1 models read the first
    len(FEATURES_V1)). Beyond the sizes: the direction's own GEMM (rows written, columns, reduction), the
    output elements it writes, how well its output row fills 8- and 16-wide vectors (a 1x1 stride-1
    unpadded layer's plane as one row) and how its written channels divide into register tiles."""
    lg = math.log2
    bytes_ = sum(d.nbytes for d in (p.x, p.w, p.y))
    d = p.direction
    flat = (p.r, p.s, p.stride_h, p.stride_w) == (1, 1, 1, 1) and p.conv.pads == (0, 0, 0, 0)
    if flat:
        cols = p.out_h * p.out_w
    else:
        cols = ceil_div(p.in_w, p.stride_w) if d is Direction.BACKWARD_DATA else p.out_w
    tile = p.c_per_group if d is Direction.BACKWARD_DATA else p.k_per_group
    crs, krs = p.c_per_group * p.r * p.s, p.k_per_group * p.r * p.s
    if d is Direction.FORWARD:
        m, n, k, outs = p.k_per_group, p.n * p.out_h * p.out_w, crs, p.n * p.k * p.out_h * p.out_w
    elif d is Direction.BACKWARD_DATA:
        m, n, k, outs = p.c_per_group, p.n * p.in_h * p.in_w, krs, p.n * p.c * p.in_h * p.in_w
    else:
        m, n, k, outs = p.k_per_group, crs, p.n * p.out_h * p.out_w, p.k * crs
    packed = p.k if d is Direction.FORWARD else p.c
    return np.array([d is Direction.FORWARD, d is Direction.BACKWARD_DATA,
                     d is Direction.BACKWARD_WEIGHTS, lg(p.c_per_group), lg(p.k_per_group), lg(p.in_h),
                     lg(p.in_w), lg(p.out_h * p.out_w), lg(p.n), p.r, p.s, p.stride_h, p.pad_h, p.dil_h,
                     lg(p.groups), p.groups > 1 and p.c_per_group == 1, p.r == p.s == 1, lg(p.flops()),
                     lg(p.reduction_length()), lg(bytes_), lg(p.flops() / bytes_), lg(p.n * p.out_h * p.out_w),
                     lg(crs),
                     flat, lg(cols), round_up(cols, 16) / cols, round_up(cols, 8) / cols, lg(tile),
                     tile % 4 == 0, tile % 8 == 0, tile % 6 == 0, lg(m), lg(n), lg(k), lg(outs),
                     round_up(packed, 16) / packed, lg(p.out_w), p.stride_h > 1 or p.stride_w > 1],
                    dtype=np.float64)


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


def _tree_depth(tree) -> int:
    return 1 + max(_tree_depth(tree[2]), _tree_depth(tree[3])) if isinstance(tree, list) else 0


def _complete(tree, depth: int, feat: np.ndarray, thr: np.ndarray, leaf: np.ndarray, node: int = 0) -> None:
    """Write tree into complete-binary-tree arrays of depth (node i's children 2i+1, 2i+2; leaves after the
    2^depth - 1 splits); a leaf above the bottom becomes always-left splits (threshold +inf) down to it."""
    level = int(math.log2(node + 1))
    if level == depth:
        leaf[node - (2 ** depth - 1)] = float(tree)
        return
    if isinstance(tree, list):
        feat[node], thr[node], left, right = int(tree[0]), float(tree[1]), tree[2], tree[3]
    else:
        feat[node], thr[node], left, right = 0, math.inf, tree, tree
    _complete(left, depth, feat, thr, leaf, 2 * node + 1)
    _complete(right, depth, feat, thr, leaf, 2 * node + 2)


@dataclass(frozen=True)
class SolverModel:
    """One solver's boosted trees: predicted log2 time relative to the model's reference (format 1: to the
    best) = base + rate * sum(tree(x)). Evaluated as arrays (every tree made complete to the deepest's
    depth), so a prediction is a few NumPy operations whatever the number of trees."""

    base: float
    rate: float
    trees: tuple

    @functools.cached_property
    def _arrays(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        depth = max((_tree_depth(t) for t in self.trees), default=0)
        splits = 2 ** depth - 1
        feat = np.zeros((len(self.trees), max(splits, 1)), dtype=np.intp)
        thr = np.full((len(self.trees), max(splits, 1)), math.inf)
        leaf = np.zeros((len(self.trees), 2 ** depth))
        for i, tree in enumerate(self.trees):
            _complete(tree, depth, feat[i], thr[i], leaf[i])
        return depth, feat, thr, leaf

    def predict(self, x: np.ndarray) -> float:
        if not self.trees:
            return self.base
        depth, feat, thr, leaf = self._arrays
        rows = np.arange(len(self.trees))
        node = np.zeros(len(self.trees), dtype=np.intp)
        for _ in range(depth):
            node = 2 * node + 1 + (x[feat[rows, node]] > thr[rows, node])
        return self.base + self.rate * float(leaf[rows, node - (2 ** depth - 1)].sum())


@dataclass(frozen=True)
class Model:
    """Per-solver time predictors for the devices whose names contain one of ``match``."""

    match: tuple[str, ...]
    solvers: Mapping[str, SolverModel]
    trained_on: int = 0          # problems in the training records
    source: str = ""             # where it was loaded from (messages)
    format: int = FORMAT         # 1: FEATURES_V1, targets relative to the best; 2: FEATURES, to reference
    reference: str = ""          # format 2: the solver whose time the targets are relative to
    params: Mapping[str, float] = dataclasses.field(default_factory=dict)   # training hyper-parameters

    def matches(self, device_name: str) -> bool:
        return any(m.lower() in device_name.lower() for m in self.match)

    def scores(self, problem: ConvProblem) -> dict[str, float]:
        """Predicted log2 time of every solver the model knows on problem, relative to a common reference
        (lower is better: only the order matters)."""
        x = features(problem)[:len(FEATURES_V1) if self.format == 1 else len(FEATURES)]
        return {sid: m.predict(x) for sid, m in self.solvers.items()}

    def to_json(self) -> str:
        names = FEATURES_V1 if self.format == 1 else FEATURES
        return json.dumps({"format": self.format, "kind": "miopy-conv-heuristic", "features": list(names),
                           "match": list(self.match), "trained_on": self.trained_on,
                           "reference": self.reference, "params": dict(self.params),
                           "solvers": {sid: {"base": m.base, "rate": m.rate, "trees": list(m.trees)}
                                       for sid, m in self.solvers.items()}}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, source: str = "") -> Model:
        """Parse and validate; ValueError when the file is not a model of a format this version reads."""
        data = json.loads(text)
        fmt = data.get("format") if isinstance(data, dict) else None
        names = {1: FEATURES_V1, 2: FEATURES}.get(fmt) if type(fmt) is int else None
        if names is None or data.get("features") != list(names):
            raise ValueError(f"not a model of format {' or '.join(map(str, FORMATS))} with its features")
        match = data["match"]
        if not isinstance(match, list) or not all(isinstance(m, str) and m for m in match):
            raise ValueError("match must be a list of device-name substrings")
        solvers = {}
        for sid, m in data["solvers"].items():
            trees = tuple(m["trees"])
            for tree in trees:
                _check_tree(tree, len(names))
            solvers[str(sid)] = SolverModel(float(m["base"]), float(m["rate"]), trees)
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise ValueError("params must be an object")
        return cls(tuple(match), solvers, int(data.get("trained_on", 0)), source, int(data["format"]),
                   str(data.get("reference", "")), {str(k): float(v) for k, v in params.items()})


def _check_tree(tree, n_features: int) -> None:
    if isinstance(tree, list):
        if len(tree) != 4 or not isinstance(tree[0], int) or not 0 <= tree[0] < n_features:
            raise ValueError(f"malformed tree node {tree!r:.60}")
        float(tree[1])
        _check_tree(tree[2], n_features)
        _check_tree(tree[3], n_features)
    elif not isinstance(tree, (int, float)) or not math.isfinite(tree):
        raise ValueError(f"malformed leaf {tree!r:.60}")


# -- training ----------------------------------------------------------------------------------------------
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


def shipped_choice(model: Model, problem: ConvProblem, ran: Sequence[str]) -> str:
    """The solver (among ran) that immediate mode would pick with model serving the device: the model's order
    over the shape rule's (heuristic.rank), so a solver the model never saw keeps the shape rule's place
    rather than losing to every known one (a held-out fold can hold a solver's only training layer, as the one
    classifier layer of the GPU sets holds ConvGemv1x1's)."""
    from . import heuristic, registry  # heuristic imports this module
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
