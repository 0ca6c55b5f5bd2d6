"""Small ONNX graphs built with onnx.helper for the runner's tests, and the comparison with onnxruntime."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
TOLERANCE = 1e-4   # hybrid |a - e| / (1 + |e|) against onnxruntime


class GraphMaker:
    """Collects nodes and random initializers; model() wraps them with float inputs and outputs."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, array, name: str | None = None) -> str:
        self._count += 1
        name = name or f"c{self._count}"
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, *shape: int, positive: bool = False, scale: float = 1.0) -> str:
        a = (scale * self.rng.standard_normal(shape)).astype(np.float32)
        return self.const(np.abs(a) + 0.5 if positive else a)

    def node(self, op: str, inputs: Sequence[str], outputs: int | Sequence[str] = 1, **attrs) -> str:
        self._count += 1
        names = [f"v{self._count}_{i}" for i in range(outputs)] if isinstance(outputs, int) else list(outputs)
        self.nodes.append(helper.make_node(op, list(inputs), names, name=f"{op.lower()}{self._count}", **attrs))
        return names[0]

    def conv(self, x: str, c: int, k: int, r: int = 3, bias: bool = True, **attrs) -> str:
        w = self.weight(k, c // attrs.get("group", 1), r, r, scale=1.0 / np.sqrt(c * r * r))
        return self.node("Conv", [x, w] + ([self.weight(k)] if bias else []), **attrs)

    def bn(self, x: str, c: int) -> str:
        params = [self.weight(c, positive=True), self.weight(c), self.weight(c), self.weight(c, positive=True)]
        return self.node("BatchNormalization", [x, *params], epsilon=1e-3)

    def model(self, inputs: Mapping[str, Sequence[int | str]], outputs: Sequence[str],
              opset: int = OPSET) -> onnx.ModelProto:
        ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
        graph = helper.make_graph(self.nodes, "test", ins, outs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def hybrid_error(got: np.ndarray, expected: np.ndarray) -> float:
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    return float(np.max(np.abs(got - expected) / (1.0 + np.abs(expected)), initial=0.0))


def onnxruntime_outputs(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    from miopy.onnx.reference import onnxruntime_session
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime_session(model, options)
    return session.run(None, dict(feeds))


def random_feeds(model: onnx.ModelProto, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    init = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name not in init:
            shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds
