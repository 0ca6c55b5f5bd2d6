"""ONNX CNN models on miopy (the optional extra ``onnx``: ``pip install miopy[onnx]``).

``InferenceSession(model, handle=None)`` follows onnxruntime's calling convention; see
miopy.onnx.session. Nothing in miopy's core imports this package.
"""
from .errors import InvalidModel, UnsupportedOperator
from .ops import known_ops
from .session import InferenceSession, MemoryReport, NodeArg, analyse, convolutions

__all__ = ["InferenceSession", "InvalidModel", "MemoryReport", "NodeArg", "UnsupportedOperator", "analyse",
           "convolutions", "known_ops"]
