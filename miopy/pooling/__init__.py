"""Pooling: MIOpen's max and average (padding excluded or included) 2-D pooling, forward and backward,
with per-side padding, ceil_mode and max's saved indices; PyTorch-style functional ops."""
from .api import pooling_backward, pooling_forward, pooling_output_desc, pooling_workspace_size
from .descriptor import PoolingDesc, PoolingMode
from .functional import (
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool2d,
    max_pool2d_backward,
)
from .problem import PoolingProblem

# The names miopy re-exports (miopy.<name>); the rest stay miopy.pooling.<name>.
TOP_LEVEL = ("PoolingDesc", "PoolingMode", "adaptive_avg_pool2d", "avg_pool2d", "max_pool2d", "pooling_backward",
            "pooling_forward", "pooling_workspace_size")
__all__ = ["PoolingDesc", "PoolingMode", "PoolingProblem", "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward",
           "avg_pool2d", "avg_pool2d_backward", "max_pool2d", "max_pool2d_backward", "pooling_backward",
           "pooling_forward", "pooling_output_desc", "pooling_workspace_size"]
