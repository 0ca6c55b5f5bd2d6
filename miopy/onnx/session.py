"""InferenceSession: an ONNX model on miopy with onnxruntime's calling convention.

    session = InferenceSession("resnet18.onnx")                  # or a ModelProto; handle=Handle(...)
    name = session.get_inputs()[0].name
    (logits,) = session.run(None, {name: images})               # NumPy in, NumPy out

Loading does all the work once: the graph is checked (an unsupported operator or attribute raises
UnsupportedOperator naming the node, its op type and the attribute), shapes are inferred, constants
folded, batch norms folded into convolutions and activations fused into their epilogues, buffers
planned (``memory`` reports the peak), every node's plan built and the whole pass captured as one
sequence. ``run`` copies the inputs in, replays the sequence and reads the outputs back.

To keep data on the device: ``run_device(output_names, feeds)`` takes NumPy or pyopencl arrays and
returns pyopencl arrays that alias the session's output buffers (valid until the next run), and
``input_array(name)`` is the device array a run reads that input from (fill it, then call
``run_device()`` with no feeds).
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..conv.problem import ConvDesc
from ..errors import BadParam, check
from ..handle import Handle
from ..plan import Sequence as PlanSequence
from ..plan import extent
from ..tensor import TensorDesc, as_flag, as_int, int_tuple
from . import ops as op_specs
from .build import BUILDERS, OVERWRITES, VIEWS, Builder, Step, build_step, conv_geometry, transpose_conv_geometry
from .errors import InvalidModel, UnsupportedOperator
from .graph import Graph, Node, ValueInfo, graph_of, load_model
from .memory import MemoryPlan, plan_memory
from .passes import run_passes

ITEMSIZE = np.dtype(np.float32).itemsize   # every tensor the runner holds is float32


@dataclass(frozen=True)
class NodeArg:
    """A graph input or output as onnxruntime describes it."""

    name: str
    shape: list[int]
    type: str = "tensor(float)"


@dataclass(frozen=True)
class MemoryReport:
    """Device memory of a session: activations (the planned slots' peak), weights, workspaces (bytes)."""

    activations: int
    weights: int
    workspaces: int
    slots: int
    values: int

    @property
    def total(self) -> int:
        return self.activations + self.weights + self.workspaces


def residual_fusion_available() -> bool:
    """Whether the fusion epilogue can add a residual tensor (conv + bias + add + activation)."""
    from ..fusion.epilogue import Epilogue
    return "add" in getattr(Epilogue, "__dataclass_fields__", {})


class InferenceSession:
    """An ONNX model loaded onto a miopy handle (module docstring).

    batch sets the first dimension of every input; input_shapes gives whole shapes by input name (both
    resolve symbolic dimensions). find=True runs find for every convolution before building it.
    """

    def __init__(self, model: Any, handle: Handle | None = None, *, batch: int | None = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None, find: bool = False):
        self.handle = handle if handle is not None else Handle()
        check(isinstance(self.handle, Handle), "handle", "must be a miopy Handle")
        find = as_flag(find, "find")
        loaded = analyse(model, batch, input_shapes)
        self.graph, self.ctx, self.nodes = loaded.graph, loaded.ctx, loaded.nodes
        self._inputs, self._outputs = loaded.inputs, loaded.outputs
        self._prepare(find)

    # -- loading -----------------------------------------------------------------------------------------
    def _prepare(self, find: bool) -> None:
        inputs = [name for name, _ in self._inputs]
        outputs = [name for name, _ in self._outputs]
        self.memory_plan: MemoryPlan = plan_memory(self.nodes, self.ctx.shapes, inputs, outputs, ITEMSIZE, VIEWS,
                                                   OVERWRITES)
        self._slots = [self.handle.alloc(size) for size in self.memory_plan.sizes]
        buffers = {name: self._slots[self.memory_plan.slot(name)] for name in self.memory_plan.root_of}
        self._builder = Builder(self.handle, self.ctx, buffers, find)
        self.steps: list[Step] = []
        for node in self.nodes:
            step = build_step(self._builder, node)
            if step is not None:
                self.steps.append(step)
        self._input_arrays = {name: self._array(name) for name in inputs}
        self._output_arrays = {name: self._array(name) for name in outputs}
        self.sequence, self._ranges = self._capture()

    def _array(self, name: str) -> cl_array.Array:
        return cl_array.Array(self.handle.queue, self.ctx.shapes[name], np.float32,
                              data=self._slots[self.memory_plan.slot(name)])

    def _capture(self) -> tuple[PlanSequence, list[tuple[int, int]]]:
        """Run every step once inside a capture: plans are built and warm, and the pass is one sequence."""
        ranges = []
        with self.handle.capture() as sequence:
            for step in self.steps:
                start = len(sequence)
                step.enqueue()
                ranges.append((start, len(sequence)))
        self.handle.finish()
        return sequence, ranges

    # -- onnxruntime's interface ------------------------------------------------------------------------
    def get_inputs(self) -> list[NodeArg]:
        return [NodeArg(name, list(shape)) for name, shape in self._inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [NodeArg(name, list(shape)) for name, shape in self._outputs]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: Any = None) -> list[np.ndarray]:
        """The outputs named (all when None) as NumPy arrays, for input_feed (name -> NumPy array)."""
        names = self._output_names(output_names)
        self.run_device(names, input_feed)
        out = []
        for name in names:
            host = np.empty(self.ctx.shapes[name], np.float32)
            cl.enqueue_copy(self.handle.queue, host, self._buffer(name))
            out.append(host)
        return out

    def _buffer(self, name: str) -> cl.Buffer:
        return self._slots[self.memory_plan.slot(name)]

    # -- device-resident I/O ------------------------------------------------------------------------------
    def input_array(self, name: str) -> cl_array.Array:
        """The device array a run reads input name from (write it, then run_device() without feeds)."""
        check(name in self._input_arrays, "name", f"no input {name!r}; inputs: {list(self._input_arrays)}")
        return self._input_arrays[name]

    def run_device(self, output_names: Sequence[str] | None = None,
                   input_feed: Mapping[str, Any] | None = None) -> list[cl_array.Array]:
        """Copy input_feed (NumPy or pyopencl arrays) in, run the captured pass, and return the outputs as
        pyopencl arrays aliasing the session's buffers (overwritten by the next run)."""
        names = self._output_names(output_names)
        for name, value in (input_feed or {}).items():
            self._feed(name, value)
        self.sequence.replay()
        return [self._output_arrays[name] for name in names]

    def _output_names(self, output_names: Sequence[str] | None) -> list[str]:
        if output_names is None:
            return [name for name, _ in self._outputs]
        names = list(output_names)
        for name in names:
            check(name in self._output_arrays, "output_names",
                  f"no output {name!r}; outputs: {list(self._output_arrays)}")
        return names

    def _feed(self, name: str, value: Any) -> None:
        target = self._input_arrays.get(name)
        if target is None:
            raise BadParam("input_feed", f"no input {name!r}; inputs: {list(self._input_arrays)}")
        if not isinstance(value, (np.ndarray, cl_array.Array)):
            raise BadParam(f"input_feed[{name!r}]", f"expected a NumPy or pyopencl array, got {type(value).__name__}")
        check(tuple(value.shape) == target.shape, f"input_feed[{name!r}]",
              f"shape {tuple(value.shape)} != the model's {target.shape}")
        check(value.dtype == np.float32, f"input_feed[{name!r}]", f"dtype {value.dtype}, expected float32")
        if isinstance(value, np.ndarray):
            cl.enqueue_copy(self.handle.queue, self._buffer(name), np.ascontiguousarray(value))
            return
        check(value.flags.c_contiguous and value.offset == 0, f"input_feed[{name!r}]",
              "must be a contiguous array without offset")
        check(value.context == self.handle.context, f"input_feed[{name!r}]",
              "belongs to another OpenCL context than the session's handle")
        source: Any = value.base_data
        target_buffer = self._buffer(name)
        if source.int_ptr == target_buffer.int_ptr:   # the session's own input array (input_array): already there
            return
        if extent(source)[0] == extent(target_buffer)[0]:   # a view of the session's memory (an earlier output)
            raise BadParam(f"input_feed[{name!r}]", "shares memory with the session's buffers: pass a copy")
        cl.enqueue_copy(self.handle.queue, target_buffer, source, byte_count=target.nbytes)

    # -- reports ---------------------------------------------------------------------------------------------
    @property
    def memory(self) -> MemoryReport:
        workspaces: dict[int, int] = {}
        for runner, _ in self.sequence.steps:
            plan = getattr(runner, "plan", runner)
            ws = getattr(plan, "workspace", None)
            if ws is not None:
                workspaces[ws.int_ptr] = ws.size
        weights = sum(w.nbytes for w in self._builder.weights)
        return MemoryReport(self.memory_plan.peak_bytes, weights, sum(workspaces.values()),
                            len(self.memory_plan.sizes), len(self.memory_plan.root_of))

    def layers(self) -> list[tuple[str, str, str]]:
        """(label, op types, solver) of every step, in run order."""
        return [(s.node.label, "+".join([s.node.op, *_fused_ops(s.node)]), s.solver) for s in self.steps]

    def profile(self, iters: int = 10, warmup: int = 2) -> tuple[list[float], float]:
        """Per-step device times (median ms over iters, each step timed from its first kernel's start to its
        last's end) and the whole pass's median ms (first start to last end of a replay)."""
        for _ in range(warmup):
            self.sequence.replay()
        self.handle.finish()
        per_step: list[list[float]] = [[] for _ in self.steps]
        totals = []
        for _ in range(iters):
            events = []
            for start, stop in self._ranges:
                step_events = [e for runner, bound in self.sequence.steps[start:stop] for e in runner.enqueue(bound)]
                events.append(step_events)
            cl.wait_for_events([ev[-1] for ev in events if ev])
            for times, ev in zip(per_step, events):
                times.append((ev[-1].profile.end - ev[0].profile.start) * 1e-6 if ev else 0.0)
            first = next(ev[0] for ev in events if ev)
            last = next(ev[-1] for ev in reversed(events) if ev)
            totals.append((last.profile.end - first.profile.start) * 1e-6)
        return [statistics.median(t) for t in per_step], statistics.median(totals)


@dataclass
class Analysed:
    """A model checked, its shapes inferred, constants folded and its graph passes run (no device yet)."""

    graph: Graph
    ctx: op_specs.Context
    nodes: list[Node]
    inputs: list[tuple[str, tuple[int, ...]]]
    outputs: list[tuple[str, tuple[int, ...]]]


def analyse(model: Any, batch: int | None = None,
            input_shapes: Mapping[str, Sequence[int]] | None = None) -> Analysed:
    """Everything loading does before touching a device: raises UnsupportedOperator / InvalidModel."""
    graph = graph_of(load_model(model))
    inputs = [_resolved(v, batch, input_shapes) for v in graph.inputs]
    ctx = op_specs.Context(graph.constants)
    for name, shape in inputs:
        ctx.shapes[name], ctx.dtypes[name] = shape, np.dtype(np.float32)
    for node in graph.nodes:
        op_specs.infer(node, ctx)
    nodes = run_passes(graph, ctx, residual_fusion_available())
    for node in nodes:
        if node.op not in VIEWS and node.op not in BUILDERS:
            raise UnsupportedOperator(node.name, node.op, None, "miopy has no primitive that runs this operator yet")
    outputs = [(v.name, ctx.shapes[v.name]) for v in graph.outputs]
    for name, _ in outputs:
        if name in ctx.consts:
            raise InvalidModel(f"graph output {name!r} is a constant: nothing to run")
    return Analysed(graph, ctx, nodes, inputs, outputs)


def convolutions(model: Any, batch: int | None = None, input_shapes: Mapping[str, Sequence[int]] | None = None
                 ) -> list[tuple[str, TensorDesc, TensorDesc, ConvDesc]]:
    """(layer label, x_desc, w_desc, conv_desc) of every convolution the model runs (Conv, ConvTranspose,
    and Gemm / MatMul as 1x1 convolutions), in the user's terms: map_problem(direction, ...) gives the
    problem of each direction (what miopy-tune --onnx tunes)."""
    loaded = analyse(model, batch, input_shapes)
    out = []
    for node in loaded.nodes:
        if node.op in ("Conv", "Gemm", "MatMul"):
            x_desc, w, _, conv = conv_geometry(loaded.ctx, node)
            out.append((node.label, x_desc, TensorDesc("FP32", w.shape), conv))
        elif node.op == "ConvTranspose":
            out.append((node.label, *transpose_conv_geometry(loaded.ctx, node)))
    return out


def _fused_ops(node: Node) -> list[str]:
    fused = node.fused
    return (["Pad"] if "pre_pads" in fused else []) + list(fused.get("ops", ()))


def _resolved(value: ValueInfo, batch: int | None, shapes: Mapping[str, Sequence[int]] | None) -> tuple[str, tuple]:
    """(name, concrete shape) of a graph input: input_shapes, else the model's with batch as dim 0."""
    if value.dtype != np.float32:
        raise InvalidModel(f"input {value.name!r} is {value.dtype}: only float32 inputs are supported")
    if shapes and value.name in shapes:
        shape = int_tuple(shapes[value.name], f"input_shapes[{value.name!r}]")
        check(all(d >= 1 for d in shape), f"input_shapes[{value.name!r}]", f"dims must be >= 1, got {shape}")
    else:
        if value.shape is None:
            raise InvalidModel(f"input {value.name!r} has no shape: pass input_shapes")
        shape = tuple(d if d is not None else 0 for d in value.shape)
        if batch is not None and shape:
            shape = (as_int(batch, "batch"), *shape[1:])
            check(shape[0] >= 1, "batch", f"must be >= 1, got {batch!r}")
    if any(d < 1 for d in shape):
        raise InvalidModel(f"input {value.name!r} has shape {shape}: pass batch= or input_shapes= for its "
                           "symbolic dimensions")
    return value.name, shape


__all__ = ["Analysed", "InferenceSession", "MemoryReport", "NodeArg", "analyse", "convolutions"]
