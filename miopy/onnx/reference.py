"""onnxruntime as the reference miopy's results are checked against (miopy-run --verify, the tests, the
network benchmark).

onnx and onnxruntime are released apart: an onnx newer than the installed onnxruntime writes models of an IR
version that onnxruntime refuses ("Unsupported model IR version: 14, max supported IR version: 13"), though
the operators at the model's opset are the same. ``onnxruntime_session`` then lowers the IR version of a copy
to the newest that onnxruntime names and tries once more; any other failure is onnxruntime's to report.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import onnx

_IR_REFUSED = re.compile(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)")


def onnxruntime_session(model: onnx.ModelProto | str | Path, options: Any = None) -> Any:
    """An onnxruntime CPU InferenceSession of model (a ModelProto or a path)."""
    import onnxruntime as ort

    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    kwargs: dict[str, Any] = {"providers": ["CPUExecutionProvider"]}
    if options is not None:
        kwargs["sess_options"] = options
    try:
        return ort.InferenceSession(proto.SerializeToString(), **kwargs)
    except Exception as error:  # onnxruntime's own exception types are not importable by a stable name
        refused = _IR_REFUSED.search(str(error))
        if refused is None or int(refused.group(2)) >= proto.ir_version:
            raise
        lowered = onnx.ModelProto()
        lowered.CopyFrom(proto)
        lowered.ir_version = int(refused.group(2))
        return ort.InferenceSession(lowered.SerializeToString(), **kwargs)
