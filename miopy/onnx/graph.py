"""An ONNX model as a small graph the runner works on: nodes with decoded attributes, constants as NumPy
arrays, graph inputs and outputs with their shapes. Loading checks the structure (opset, names, order);
which operators and attributes are supported is checked by miopy.onnx.ops.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .errors import InvalidModel, UnsupportedOperator

MIN_OPSET = 13
DOMAINS = ("", "ai.onnx")


@dataclass
class Node:
    """One operator: inputs and outputs by value name ("" for an omitted optional input), attributes
    decoded to Python values. ``fused`` collects what graph passes folded into it (miopy.onnx.passes)."""

    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    fused: dict[str, Any] = field(default_factory=dict)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, index: int) -> str:
        """The name of input index, or "" when it is omitted."""
        return self.inputs[index] if index < len(self.inputs) else ""

    @property
    def label(self) -> str:
        """The node's name with the ops fused into it, for tables: "conv1+bn1+relu1"."""
        return "+".join([self.name, *self.fused.get("names", ())])


@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output: its name, shape (None for a symbolic dimension) and NumPy dtype."""

    name: str
    shape: tuple[int | None, ...] | None
    dtype: np.dtype


@dataclass
class Graph:
    nodes: list[Node]
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    constants: dict[str, np.ndarray]
    opset: int
    name: str = "graph"


def load_model(source: Any) -> onnx.ModelProto:
    """A ModelProto from a path, bytes or a ModelProto; InvalidModel when it is none of these."""
    if isinstance(source, onnx.ModelProto):
        return source
    try:
        if isinstance(source, (bytes, bytearray)):
            return onnx.load_from_string(bytes(source))
        if isinstance(source, (str, os.PathLike)):
            return onnx.load(os.fspath(source))
    except (OSError, ValueError) as exc:
        raise InvalidModel(f"cannot read an ONNX model from {source!r}: {exc}") from exc
    except Exception as exc:   # protobuf's DecodeError and friends
        raise InvalidModel(f"not an ONNX model: {type(exc).__name__}: {exc}") from exc
    raise InvalidModel(f"expected a path, bytes or an onnx.ModelProto, got {type(source).__name__}")


def opset_of(model: onnx.ModelProto) -> int:
    """The default domain's opset; InvalidModel when none is declared."""
    for entry in model.opset_import:
        if entry.domain in DOMAINS:
            return int(entry.version)
    raise InvalidModel("the model declares no opset of the default ONNX domain")


def upgraded(model: onnx.ModelProto) -> onnx.ModelProto:
    """model at opset 13 or later: older models go through ONNX's version converter."""
    if opset_of(model) >= MIN_OPSET:
        return model
    from onnx import version_converter
    try:
        return version_converter.convert_version(model, MIN_OPSET)
    except Exception as exc:
        raise InvalidModel(f"opset {opset_of(model)} is below {MIN_OPSET} and ONNX's version converter "
                           f"failed on it: {exc}") from exc


def graph_of(model: onnx.ModelProto) -> Graph:
    """The runner's graph of model (opset >= 13 after conversion), structure checked."""
    model = upgraded(model)
    g = model.graph
    constants = {t.name: _array(t) for t in g.initializer}
    nodes = [_node(n, i) for i, n in enumerate(g.node)]
    inputs = [_value_info(v) for v in g.input if v.name not in constants]
    outputs = [_value_info(v) for v in g.output]
    graph = Graph(nodes, inputs, outputs, constants, opset_of(model), g.name or "graph")
    _check_structure(graph)
    return graph


def _node(proto: onnx.NodeProto, index: int) -> Node:
    name = proto.name or (proto.output[0] if proto.output else f"{proto.op_type}_{index}")
    if proto.domain not in DOMAINS:
        raise UnsupportedOperator(name, f"{proto.domain}.{proto.op_type}", None,
                                  f"operators of domain {proto.domain!r} are not supported")
    attrs = {a.name: _attribute(a, name, proto.op_type) for a in proto.attribute}
    return Node(name, proto.op_type, list(proto.input), list(proto.output), attrs)


def _attribute(attr: onnx.AttributeProto, node: str, op: str) -> Any:
    if attr.ref_attr_name:
        raise UnsupportedOperator(node, op, attr.name, "attribute references (functions) are not supported")
    if attr.type == onnx.AttributeProto.GRAPH or attr.type == onnx.AttributeProto.GRAPHS:
        raise UnsupportedOperator(node, op, attr.name, "subgraphs are not supported")
    value = helper.get_attribute_value(attr)
    if isinstance(value, onnx.TensorProto):
        return _array(value)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value


def _array(tensor: onnx.TensorProto) -> np.ndarray:
    try:
        return numpy_helper.to_array(tensor)
    except Exception as exc:
        raise InvalidModel(f"tensor {tensor.name!r} cannot be read: {exc}") from exc


def _value_info(value: onnx.ValueInfoProto) -> ValueInfo:
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        raise InvalidModel(f"graph input/output {value.name!r} is a {kind}, not a tensor")
    tensor = value.type.tensor_type
    shape = None
    if tensor.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tensor.shape.dim)
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    except (KeyError, TypeError):
        raise InvalidModel(f"graph input/output {value.name!r}: unknown element type {tensor.elem_type}") from None
    return ValueInfo(value.name, shape, dtype)


def _check_structure(graph: Graph) -> None:
    """Every input is defined before use (the ONNX order), every value is produced once, outputs exist."""
    defined = set(graph.constants) | {v.name for v in graph.inputs}
    for node in graph.nodes:
        for name in node.inputs:
            if name and name not in defined:
                raise InvalidModel(f"node {node.name!r} ({node.op}) reads {name!r}, which no earlier node, "
                                   "input or initializer defines")
        for name in node.outputs:
            if name and name in defined:
                raise InvalidModel(f"node {node.name!r} ({node.op}) redefines value {name!r}")
            defined.add(name)
    missing = [v.name for v in graph.outputs if v.name not in defined]
    if missing:
        raise InvalidModel(f"graph outputs {missing} are produced by no node")
    if not graph.outputs:
        raise InvalidModel("the graph has no outputs")
