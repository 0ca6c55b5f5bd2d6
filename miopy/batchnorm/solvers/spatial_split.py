"""BatchNormSpatialSplit: spatial training forward / backward as a two-stage split reduction."""
from __future__ import annotations

import numpy as np

from ...device import DeviceInfo, local_memory_reason, work_group_reason
from ...kernel_cache import KernelSpec
from ...solver import Arg, KernelLaunch, Params, Solution, round_up
from ...tensor import FLOAT_BYTES
from ..descriptor import BatchNormMode
from ..problem import BatchNormProblem, BnDirection
from .common import (
    BACKWARD_SCALARS,
    ELEMENTWISE_WG,
    FORWARD_SCALARS,
    BatchNormSolver,
    data_defines,
    optional_roles,
    stat_defines,
)

COUNT_BYTES = np.dtype(np.int32).itemsize   # the merge's per-item count (its mean and M2 are float)
CHUNKS_GRID = (1024, 4096, 16384)
GROUP_GRID = (0, 1, 2, 4, 8, 16, 32)   # channels per launch group; 0: all channels in one group
UNUSED_FACTOR = np.float32(0.0)   # the merge of a backward updates no running statistics
# Per-channel floats after the chunk partials, in this order (the kernel's *_OFF defines).
CHANNEL_OFFSETS = ("PIVOT_OFF", "MEAN_OFF", "INV_OFF", "DB_OFF", "DS_OFF")
PER_CHANNEL = len(CHANNEL_OFFSETS)


class BatchNormSpatialSplit(BatchNormSolver):
    """Spreads each channel over ceil(N*H*W / CHUNK) work-groups: stage 1 computes each chunk's mean and
    sum of squared deviations (two-pass within the chunk, shifted by the channel's first value), stage 2
    merges a channel's chunks in a fixed order with Chan's formula, stage 3 is element-wise. The backward
    adds per-chunk sums of dy and dy * (x - mean), merged the same way. Wins on large N*H*W with few
    channels; costs extra launches and a workspace of 2 floats per chunk and 5 per channel.

    GROUP > 0 runs the stages group by group of GROUP channels, so a group's data can still sit in the
    device's cache when its element-wise pass re-reads it (a group of a few MiB to a few tens of MiB, on a
    GPU whose L2 holds it), at the cost of more launches; 0 runs every stage once over all channels."""

    id = "BatchNormSpatialSplit"
    algorithm = "reduce_split"
    directions = frozenset({BnDirection.FORWARD_TRAINING, BnDirection.BACKWARD})
    modes = frozenset({BatchNormMode.SPATIAL})
    grid = {"WG": (64, 128, 256), "CHUNK": CHUNKS_GRID, "GROUP": GROUP_GRID}
    param_doc = {"WG": "work-items per work-group (chunks and merges)", "CHUNK": "elements of a channel per chunk",
                 "GROUP": "channels whose stages run back to back (a divisor of C below C; 0: all at once)"}

    def invalid_reason(self, problem: BatchNormProblem, params: Params, dev: DeviceInfo) -> str | None:
        reason = super().invalid_reason(problem, params, dev)
        if reason is not None:
            return reason
        reason = (work_group_reason(dev, (params["WG"],))
                  or local_memory_reason(dev, params["WG"] * (COUNT_BYTES + 2 * FLOAT_BYTES)))
        group, channels = params["GROUP"], problem.x.c
        if reason is None and group and (group >= channels or channels % group):
            reason = f"GROUP={group} is not a divisor of C={channels} below it (0 takes all channels)"
        return reason

    def default_params(self, problem: BatchNormProblem, dev: DeviceInfo) -> Params:
        chunk = 4096 if problem.count >= 16 * 4096 else 1024
        for wg in (256, 128, 64):
            if self.is_valid(problem, {"WG": wg, "CHUNK": chunk, "GROUP": 0}, dev):
                break
        return {"WG": wg, "CHUNK": chunk, "GROUP": 0}

    def workspace_bytes(self, problem: BatchNormProblem) -> int:
        return FLOAT_BYTES * (2 * problem.x.c * _chunks(problem.count, min(CHUNKS_GRID)) + PER_CHANNEL * problem.x.c)

    def solution(self, problem: BatchNormProblem, params: Params) -> Solution:
        wg, chunk, c = params["WG"], params["CHUNK"], problem.x.c
        group = params["GROUP"] or c
        chunks = _chunks(problem.count, chunk)
        layout = {name: 2 * c * chunks + i * c for i, name in enumerate(CHANNEL_OFFSETS)}
        defines = {**data_defines(problem), **stat_defines(problem), "WG": wg, "CHUNK": chunk, "GROUP": group,
                   **layout}

        def launch(name: str, groups: int, args: tuple[Arg, ...], local: int = wg) -> KernelLaunch:
            spec = KernelSpec.make("batchnorm_spatial.cl", name, defines)
            return KernelLaunch(spec, (groups * local,), (local,), args)

        elements = round_up(problem.x.n * group * problem.x.h * problem.x.w, ELEMENTWISE_WG) // ELEMENTWISE_WG
        saved = optional_roles(problem)
        alpha_data, beta_data, alpha_param, beta_param, _ = BACKWARD_SCALARS
        launches: list[KernelLaunch] = []
        for c0 in map(np.int32, range(0, c, group)):   # the stages of one group of channels, then the next
            stats = launch("bn_spatial_chunk_stats", group * chunks, ("x", "workspace", c0))
            if problem.direction is BnDirection.FORWARD_TRAINING:
                merge_args = ("x", "workspace", *saved, "epsilon", "factor", c0)
                launches += [stats, launch("bn_spatial_merge_stats", group, merge_args),
                             launch("bn_spatial_normalize", elements, ("x", "y", "scale", "bias", "workspace",
                                                                       *FORWARD_SCALARS[:2], c0), ELEMENTWISE_WG)]
                continue
            if not problem.saved:
                launches += [stats, launch("bn_spatial_merge_stats", group,
                                           ("x", "workspace", "epsilon", UNUSED_FACTOR, c0))]
            launches += [
                launch("bn_spatial_chunk_grad", group * chunks, ("x", "dy", "workspace", *saved, c0)),
                launch("bn_spatial_merge_grad", group, ("workspace", "dscale", "dbias", *saved, alpha_param,
                                                        beta_param, c0)),
                launch("bn_spatial_dx", elements, ("x", "dy", "dx", "scale", "workspace", *saved, alpha_data,
                                                   beta_data, c0), ELEMENTWISE_WG)]
        return Solution(self.id, params, tuple(launches), self.workspace_bytes(problem))


def _chunks(count: int, chunk: int) -> int:
    return (count + chunk - 1) // chunk
