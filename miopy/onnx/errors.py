"""The errors the ONNX runner raises at load time (both MiopyErrors)."""
from __future__ import annotations

from ..errors import MiopyError


class UnsupportedOperator(MiopyError):
    """A node miopy cannot run: an operator it does not implement, or an attribute (or input) value it does
    not support. ``node``, ``op_type`` and ``attribute`` name the culprit (attribute is None when the op
    itself is unsupported)."""

    def __init__(self, node: str, op_type: str, attribute: str | None = None, reason: str = ""):
        where = f"node {node!r} ({op_type})"
        what = f": attribute {attribute!r}" if attribute else ""
        super().__init__(f"{where}{what}: {reason or 'not supported'}")
        self.node, self.op_type, self.attribute, self.reason = node, op_type, attribute, reason


class InvalidModel(MiopyError):
    """The model is malformed (not an ONNX model, a dangling input, a cycle, an opset it does not declare,
    inconsistent shapes); the message says where."""
