"""What the fused solvers share."""
from __future__ import annotations

from ...tensor import DataType

FUSED_DTYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16})
