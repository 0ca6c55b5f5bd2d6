"""Immediate mode from a model: gradient-boosted regression trees (plain NumPy) that predict, for each
solver, how much slower than the best it will be on a problem. This module is what immediate mode loads and
evaluates; training, cross-validation and reading find records are miopy.conv.heuristic_training's.

For every solver the target is log2(time / best time), clipped at 2x, over the problems where it ran;
features describe the problem's shape (FEATURES). The candidates the model knows are ranked by predicted
slowdown in the places the shape rule (miopy.conv.heuristic) gives them; a solver the model has not seen
keeps its shape-rule place.

A model is a JSON file (no pickle: loading one runs nothing) that names the devices it serves by substrings of
the device name (``match``), e.g. ["H100", "H200"] for one family. ``model_for(dev)`` takes
MIOPY_HEURISTIC_MODEL when set, else the first model shipped in miopy/data/heuristic_*.json that matches;
a file that is unreadable or malformed is skipped with one warning (the shape rule then ranks).

    miopy-tune --train-heuristic [--db PATH] [--device SUBSTR] --out PATH [--match H100,H200]

retrains from a find DB (the user's by default): see miopy.conv.heuristic_training.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import config
from ..log import warn_once
from ..solver import ceil_div, round_up
from .problem import ConvProblem, Direction

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


# -- evaluating regression trees -----------------------------------------------------------------------------
# A tree is a nested list: [feature, threshold, left, right] for a split (x[feature] <= threshold goes
# left), or a float for a leaf.
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


# -- ranking -------------------------------------------------------------------------------------------------
def rank_by_model(model: Model, problem: ConvProblem, fallback: Sequence) -> list:
    """fallback (the shape rule's order) with the solvers the model knows reordered by predicted slowdown
    among their own places; a solver the model has not seen (added since it was trained, or made for
    another kind of device) keeps the place the shape rule gives it."""
    scores = model.scores(problem)
    known = iter(sorted((s for s in fallback if s.id in scores), key=lambda s: scores[s.id]))
    return [next(known) if s.id in scores else s for s in fallback]


# -- loading -------------------------------------------------------------------------------------------------
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
