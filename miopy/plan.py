"""Plans: a solution bound to a handle once, then run many times (MIOpen's invokers, cuDNN's plans).

Building a plan validates nothing about the problem (the family did that) but does all the remaining
work once: it builds (or fetches from the kernel cache) every kernel into kernel objects of its own, sets
every scalar argument, fixes the launch sizes and takes its workspace. ``Plan.run`` then checks only what
can change per call (each buffer's type, dtype, size, layout and context, and that no output aliases an
input) with cheap comparisons, sets the buffer arguments that changed since the last run and enqueues
every kernel back to back with no host synchronisation. Error messages are formatted only on failure.

A ``Sequence`` records plan runs with their buffers (``with handle.capture() as seq``) and replays them
with one call, for fixed-shape loops such as an inference pass.
"""
from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import families
from .device import DeviceInfo, allocation_reason
from .errors import BadParam, LaunchError, NotApplicable, OutOfResources, check
from .kernel_cache import KernelCache, KernelSpec
from .solver import KernelLaunch, Solution, round_up
from .tensor import TensorDesc, as_float32, holds_bool

_ARRAY = cl_array.Array
T = TypeVar("T")
_MEMORY = cl.MemoryObjectHolder
_MEM_PARENT = cl.mem_info.ASSOCIATED_MEMOBJECT
_MEM_OFFSET = cl.mem_info.OFFSET
_SCALARS: frozenset[Any] = frozenset({np.float32, np.int32, np.uint32, np.int64, np.uint64})   # kernel scalar arguments
_BOOLS = frozenset({bool, np.bool_})   # equal to 1 and 0, but not numbers a caller meant


class PlanHandle(Protocol):
    """What a plan uses of its handle (a miopy.handle.Handle is one). Stated here because handle.py builds
    plans and so sits above this module (imports point down): mypy checks every use of a plan's handle."""

    @property
    def context(self) -> cl.Context: ...
    @property
    def queue(self) -> cl.CommandQueue: ...
    @property
    def info(self) -> DeviceInfo: ...
    @property
    def kernels(self) -> KernelCache: ...
    @property
    def lock(self) -> contextlib.AbstractContextManager[Any]: ...
    @property
    def plans(self) -> PlanCache: ...
    @property
    def state(self) -> dict[str, Any]: ...
    @property
    def recording(self) -> list | None: ...

    def scratch(self, slot: str, nbytes: int) -> cl.Buffer: ...


@dataclass(frozen=True)
class Operand:
    """What a plan expects of one buffer: the kernel role it binds, the user's name for it (in errors),
    its descriptor and whether the plan writes it. nbytes, the NumPy dtype and packedness are computed once."""

    role: str
    field: str
    desc: TensorDesc
    written: bool = False
    nbytes: int = dataclasses.field(init=False, repr=False, compare=False)
    numpy_dtype: np.dtype = dataclasses.field(init=False, repr=False, compare=False)
    packed: bool = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "nbytes", self.desc.nbytes)
        object.__setattr__(self, "numpy_dtype", self.desc.dtype.numpy)
        object.__setattr__(self, "packed", getattr(self.desc, "is_packed", True))   # byte buffers have no layout


def operands(tensors: Mapping[str, TensorDesc], outputs: Seq[str],
             fields: Mapping[str, str] | None = None) -> tuple[Operand, ...]:
    """Operands for a problem's tensors (role -> desc); fields renames roles for the user's messages."""
    fields = fields or {}
    return tuple(Operand(role, fields.get(role, role), desc, role in outputs) for role, desc in tensors.items())


def buffer_of(value: Any, field: str, desc: TensorDesc | None = None, nbytes: int | None = None,
              context: cl.Context | None = None) -> Any:
    """The cl.Buffer behind value (a pyopencl Array or Buffer), checked against desc / nbytes / context.

    A Buffer is raw memory the descriptor describes from its first byte. An Array must hold its tensor in
    the layout its descriptor states: either it has the descriptor's dims and (byte) strides, or it is
    C-contiguous storage of another shape (a flat array holding a strided tensor's span, say) and the
    descriptor is read from its first byte. An Array with an offset (a view starting inside another array)
    is refused: kernels address buffers from their start.
    """
    if isinstance(value, _ARRAY):
        size, buf, ctx = _array_bytes(value, field, desc), value.base_data, value.context
    elif isinstance(value, _MEMORY):
        size, buf, ctx = value.size, value, None
    else:
        raise BadParam(field, f"expected a pyopencl Array or Buffer, got {type(value).__name__}")
    need = desc.nbytes if desc is not None else (nbytes or 0)
    if size < need:
        raise BadParam(field, f"buffer holds {size} bytes, descriptor needs {need}")
    if context is not None:
        if ctx is None:
            ctx = buf.context  # type: ignore[union-attr]
        if ctx is not context and ctx != context:
            raise BadParam(field, "buffer belongs to another OpenCL context than the handle's")
    return buf


def _array_bytes(value: cl_array.Array, field: str, desc: Any) -> int:
    """The bytes of value's buffer that the descriptor may address, after checking its dtype and layout."""
    if desc is not None and value.dtype != desc.dtype.numpy:
        raise BadParam(field, f"dtype {value.dtype} != descriptor {desc.dtype.value}")
    if value.offset != 0:
        raise BadParam(field, f"array view starting {value.offset} bytes into its buffer: kernels address buffers "
                              "from their start; pass a copy (or a Buffer and a descriptor whose strides describe it)")
    contiguous = value.flags.c_contiguous
    dims = getattr(desc, "dims", None)   # None: no descriptor, or a byte buffer's (a size only)
    if dims is None or (contiguous and (desc.is_packed or tuple(value.shape) != dims)):
        if not contiguous:
            raise BadParam(field, f"array with strides {value.strides} is not C-contiguous")
        return value.nbytes
    itemsize = desc.dtype.itemsize
    if tuple(value.shape) == desc.dims and tuple(value.strides) == tuple(s * itemsize for s in desc.strides):
        return value.base_data.size  # type: ignore[union-attr,return-value]
    layout = "C-contiguous" if contiguous else f"strides {value.strides} (bytes)"
    raise BadParam(field, f"array of shape {value.shape} with {layout} does not have its descriptor's layout "
                          f"(dims {desc.dims}, element strides {desc.strides}): pass a C-contiguous copy, or an "
                          "array (or Buffer) laid out as the descriptor states")


def extent(buf: Any) -> tuple[int, int]:
    """(the cl_mem at the root of buf, buf's byte offset in it): a sub-buffer's parent and origin, or
    the buffer itself at 0."""
    try:
        parent = buf.get_info(_MEM_PARENT)
    except (cl.Error, AttributeError, TypeError):   # not a plain cl_mem: it is its own root
        return buf.int_ptr, 0
    if parent is None:
        return buf.int_ptr, 0
    return parent.int_ptr, buf.get_info(_MEM_OFFSET)


def overlap_reason(spans: Mapping[str, tuple[Any, int]], written: Seq[str],
                   may_alias: frozenset = frozenset()) -> tuple[str, str] | None:
    """The first (written field, other field) whose byte ranges overlap, or None. spans maps each field to
    (buffer, bytes used from its start); pairs in may_alias may be the very same range (in place)."""
    where = {name: (extent(buf), used) for name, (buf, used) in spans.items()}
    for out in written:
        (root, start), used = where[out]
        for other, ((o_root, o_start), o_used) in where.items():
            if other == out or o_root != root or not (o_start < start + used and start < o_start + o_used):
                continue
            if other not in written and o_start == start and frozenset((out, other)) in may_alias:
                continue
            return out, other
    return None


def check_fits(handle: PlanHandle, sizes: Mapping[str, int]) -> None:
    """OutOfResources unless buffers of these sizes (field -> bytes) fit the handle's device: each under
    its largest allocation, all together under its global memory. Nothing is allocated."""
    reason = allocation_reason(handle.info, sizes)
    if reason is not None:
        raise OutOfResources(f"{reason} on {handle.info.name}")


def array_desc(array: Any, field: str) -> TensorDesc:
    """The packed descriptor of a 4-D C-contiguous pyopencl array (the functional layers' inputs)."""
    if not isinstance(array, _ARRAY):
        raise BadParam(field, f"expected a pyopencl Array, got {type(array).__name__}")
    check(array.ndim == 4, field, f"expected a 4-D array, got shape {array.shape}")
    check(array.flags.c_contiguous, field, "must be C-contiguous")
    return TensorDesc(array.dtype, array.shape)


class Plan:
    """One solution on one handle, ready to run: build once (``Handle.plan`` memoises), run many times.

    run(**buffers) takes the operands by their user names (x, w, y; dy, dx, dw; ...) as pyopencl Arrays or
    Buffers; alpha / beta blend the primary output (out = alpha * result + beta * out) through a
    temporary; workspace overrides the plan's own. Returns the enqueued events.
    """

    def __init__(self, handle: PlanHandle, solution: Solution, ops: Seq[Operand], *, workspace: Any = None,
                 blend_output: str | None = None, may_alias: Seq[tuple[str, str]] = (), problem: Any = None):
        self.handle, self.solution, self.problem = handle, solution, problem
        self.context = handle.context
        self.operands = tuple(ops)
        self._by_field = {op.field: op for op in self.operands}
        self._roles = tuple(op.role for op in self.operands)
        self._written = tuple(op.field for op in self.operands if op.written)
        field_of = {op.role: op.field for op in self.operands}
        self._may_alias = frozenset(frozenset(field_of.get(name, name) for name in pair) for pair in may_alias)
        self._blend = self._by_field_or_role(blend_output) if blend_output else None
        need = solution.workspace_bytes
        # Device limits before anything is built or allocated: every operand, and the workspace the plan takes.
        check_fits(handle, {**{op.field: op.nbytes for op in self.operands},
                            **({"workspace": need} if workspace is None and need else {})})
        self._steps = tuple(_Step(handle, launch) for launch in solution.launches)
        self.workspace = (buffer_of(workspace, "workspace", nbytes=need, context=self.context)
                          if workspace is not None else handle.scratch("workspace", need) if need else None)
        self._blend_steps: tuple[_Step, ...] | None = None
        # One lock per handle: its queue, scratch buffers and kernels' arguments are shared by all its plans,
        # so each run's launches are enqueued back to back, whatever other threads do.
        self._lock = handle.lock
        self._verified: tuple = ()   # weak references to the arrays of the last run whose checks passed
        self.released = False

    # -- introspection -----------------------------------------------------------------------------
    @property
    def solver_id(self) -> str:
        return self.solution.solver_id

    @property
    def params(self) -> dict:
        return dict(self.solution.params)

    @property
    def fields(self) -> tuple[str, ...]:
        """The operand names run() takes, in the plan's order."""
        return tuple(op.field for op in self.operands)

    def __repr__(self) -> str:
        return f"Plan({self.solver_id}, {', '.join(self.fields)})"

    def release(self) -> None:
        """Drop the kernels and workspace; a released plan refuses to run."""
        self.released = True
        self._steps = ()
        self.workspace = None
        self._verified = ()

    # -- running -------------------------------------------------------------------------------------
    def run(self, alpha: float = 1.0, beta: float = 0.0, workspace: Any = None, **buffers: Any) -> list[cl.Event]:
        """Check the buffers (cheaply) and enqueue; the plan's operands by their user names."""
        if len(buffers) != len(self.operands) or any(f not in buffers for f in self._by_field):
            self._bad_fields(buffers)
        return self.run_values(tuple(buffers[op.field] for op in self.operands), alpha, beta, workspace)

    def run_values(self, values: tuple, alpha: float = 1.0, beta: float = 0.0, workspace: Any = None,
                   scalars: Mapping[str, Any] | None = None) -> list[cl.Event]:
        """run() with the operands positionally, in self.operands order (the descriptor API's path);
        scalars binds per-call kernel arguments by role (already checked: activation's alpha, ...)."""
        if self.released:
            raise BadParam("plan", "released: build a new plan")
        bound = self._verified_bound(values) if workspace is None else None
        if bound is None:
            bound = self._bind(values, workspace)
        if scalars:
            bound.update(scalars)
        if alpha == 1.0 and beta == 0.0 and alpha.__class__ not in _BOOLS and beta.__class__ not in _BOOLS:
            return self.enqueue(bound)
        return self._run_blended(bound, _scalar(alpha, "alpha"), _scalar(beta, "beta"))

    def _verified_bound(self, values: tuple) -> dict[str, Any] | None:
        """The warm loop: when values are the very arrays of the last checked run (held weakly: a plan keeps
        no user buffer alive), their buffers by role without checking again; else None."""
        refs = self._verified
        if len(refs) != len(values):
            return None
        for ref, value in zip(refs, values):
            if ref() is not value or value is None:   # a dead reference reads None
                return None
        bound = dict(zip(self._roles, [value.base_data for value in values]))
        if self.workspace is not None:
            bound["workspace"] = self.workspace
        return bound

    def _bind(self, values: tuple, workspace: Any) -> dict[str, Any]:
        """Every value checked against its operand (and for overlap), as a role -> buffer dict. Arrays that
        pass are remembered (weakly) when no workspace was passed: the next run with them skips the checks."""
        checked = self._checked
        buffers = tuple([checked(op, value) for op, value in zip(self.operands, values)])
        if workspace is not None:
            buffers += (buffer_of(workspace, "workspace", nbytes=self.solution.workspace_bytes, context=self.context),)
        self._check_aliasing(buffers)
        bound = dict(zip(self._roles, buffers))
        if workspace is not None:
            bound["workspace"] = buffers[-1]
        elif self.workspace is not None:
            bound["workspace"] = self.workspace
        arrays = workspace is None and all(value.__class__ is _ARRAY for value in values)
        self._verified = tuple(weakref.ref(value) for value in values) if arrays else ()
        return bound

    def enqueue(self, bound: Mapping[str, Any]) -> list[cl.Event]:
        """Enqueue with buffers and scalars already checked, by kernel role (find's and tuning's timers,
        sequences). Sets only the arguments that changed since this plan's last launch."""
        handle = self.handle
        if handle.recording is not None:
            handle.recording.append((self, dict(bound)))
        queue = handle.queue
        with self._lock:
            return [step.launch(queue, bound) for step in self._steps]

    # -- checks ----------------------------------------------------------------------------------------
    def _checked(self, op: Operand, value: Any) -> Any:
        """The buffer behind value if it fits op; the fast path is a handful of attribute comparisons."""
        if value.__class__ is _ARRAY:
            if (op.packed and value.offset == 0 and value.dtype == op.numpy_dtype and value.nbytes >= op.nbytes
                    and value.flags.c_contiguous):
                ctx = value.context
                if ctx is self.context or ctx == self.context:
                    return value.base_data
        return buffer_of(value, op.field, op.desc, context=self.context)

    def _check_aliasing(self, buffers: tuple) -> None:
        """BadParam unless every written buffer's bytes are apart from every other operand's (the same range
        is allowed for in-place pairs); a user workspace (last in buffers when given) counts as written."""
        spans = {op.field: (buf, op.nbytes) for op, buf in zip(self.operands, buffers)}
        written = self._written
        if len(buffers) > len(self.operands):
            spans["workspace"] = (buffers[-1], self.solution.workspace_bytes)
            written += ("workspace",)
        pair = overlap_reason(spans, written, self._may_alias)
        if pair is not None:
            out, other = pair
            same = "are the same buffer" if spans[out][0].int_ptr == spans[other][0].int_ptr else "overlap in memory"
            raise BadParam(out, f"{out} and {other} {same}: this operation does not write {out} in place "
                                f"of {other}; pass a separate {out}")

    def _bad_fields(self, buffers: Mapping[str, Any]) -> None:
        missing = [f for f in self._by_field if f not in buffers]
        extra = [f for f in buffers if f not in self._by_field]
        field = (missing or extra)[0]
        raise BadParam(field, f"plan takes {', '.join(self._by_field)}; missing {missing}, unexpected {extra}")

    def _by_field_or_role(self, name: str) -> Operand:
        for op in self.operands:
            if name in (op.field, op.role):
                return op
        raise BadParam("blend_output", f"no operand {name!r}")

    # -- alpha / beta ------------------------------------------------------------------------------------
    def _run_blended(self, bound: dict, alpha: np.float32, beta: np.float32) -> list[cl.Event]:
        out = self._blend
        if out is None:
            raise BadParam("beta", f"{self.solver_id} has no single output to blend into")
        if not out.desc.is_packed:
            raise BadParam("beta", "alpha/beta blending needs a packed output")
        with self._lock:   # the blend temporary is the handle's: the result and its blend go back to back
            tmp = self.handle.scratch("blend", out.nbytes)
            if self._blend_steps is None:
                self._blend_steps = (_Step(self.handle, blend_launch(out.desc.element_count, out.desc)),)
            events = self.enqueue({**bound, out.role: tmp})
            recording = self.handle.recording
            blend_args = {"out": bound[out.role], "result": tmp, "alpha": alpha, "beta": beta}
            if recording is not None:
                recording.append((_BlendStep(self), blend_args))
            return events + [self._blend_steps[0].launch(self.handle.queue, blend_args)]


class _BlendStep:
    """The blend launch of a plan, as a recorded sequence entry."""

    def __init__(self, plan: Plan):
        self.plan = plan

    def enqueue(self, bound: Mapping[str, Any]) -> list[cl.Event]:
        assert self.plan._blend_steps is not None
        with self.plan._lock:
            return [self.plan._blend_steps[0].launch(self.plan.handle.queue, bound)]


class _Step:
    """One launch with its own kernel object: fixed scalars set once, per-call scalars when they change,
    buffer arguments on every launch.

    A buffer argument is set on every launch (as a raw pyopencl program does): the plan keeps no user
    buffer alive, so it cannot know that a cl_mem handle equal to the last one is the same object (a freed
    buffer's handle is reused, and drivers such as PoCL resolve a sub-buffer's parent when the argument is
    set: skipping the call then reads freed memory). A scalar argument (activation's alpha, ...) is compared
    by value: setting a NumPy scalar costs pyopencl several microseconds."""

    __slots__ = ("kernel", "global_size", "local_size", "slots", "last", "name")

    def __init__(self, handle: PlanHandle, launch: KernelLaunch):
        self.kernel = handle.kernels.new_kernel(launch.spec)
        self.global_size, self.local_size = launch.global_size, launch.local_size
        self.name = launch.spec.name
        slots = []
        for index, arg in enumerate(launch.args):
            if isinstance(arg, str):
                slots.append((index, arg))
            else:
                self.kernel.set_arg(index, arg)
        self.slots = tuple(slots)
        self.last: list[Any] = [None] * len(launch.args)

    def launch(self, queue: cl.CommandQueue, bound: Mapping[str, Any]) -> cl.Event:
        kernel, last = self.kernel, self.last
        try:
            for index, role in self.slots:
                value = bound[role]
                if value.__class__ in _SCALARS:
                    if last[index] != value:
                        kernel.set_arg(index, value)
                        last[index] = value
                else:
                    kernel.set_arg(index, value)
            return cl.enqueue_nd_range_kernel(queue, kernel, self.global_size, self.local_size)
        except KeyError as exc:
            raise BadParam(str(exc.args[0]), f"kernel {self.name} needs a buffer for role {exc.args[0]!r}") from None
        except cl.Error as exc:
            self.last = [None] * len(last)
            raise _launch_error(exc, self) from exc


def _launch_error(exc: cl.Error, step: _Step) -> Exception:
    text = str(exc)
    if "MEM_OBJECT_ALLOCATION_FAILURE" in text or "OUT_OF_RESOURCES" in text or "OUT_OF_HOST_MEMORY" in text:
        return OutOfResources(f"launch of {step.name} ran out of device resources: {exc}")
    return LaunchError(f"launch of {step.name} global={step.global_size} local={step.local_size} failed: {exc}")


def _scalar(value: Any, field: str) -> np.float32:
    return as_float32(value, field)


BLEND_WG = 256


def blend_launch(count: int, desc: TensorDesc) -> KernelLaunch:
    """out = alpha * result + beta * out over count elements (scale.cl)."""
    spec = KernelSpec.make("scale.cl", "blend", desc.dtype.defines)
    return KernelLaunch(spec, (round_up(count, BLEND_WG),), (BLEND_WG,),
                        ("out", "result", "alpha", "beta", np.uint64(count)))


# The key spaces of the plan cache besides the families' (miopy.families): find's and tuning's solutions and
# plans, and the ONNX runner's own steps.
SHARED_KEY_SPACES = frozenset({"find", "onnx"})
PLAN_CACHE_LIMIT = 4096   # entries a handle keeps; the least recently used go first


class PlanCache:
    """What a handle's calls built, to reuse on the next call with the same arguments: plans, call objects,
    solutions. At most ``limit`` entries; the least recently used one goes first (rebuilding an evicted plan
    compiles nothing: its kernels stay in the kernel cache).

    A key is a tuple of hashables (descriptors, enums, shapes) whose first item names its key space and call,
    ``"<space>.<call>"`` ("softmax.forward", "conv.conv2d", "find.solution"): the space is a family's name
    (miopy.families) or a shared layer's (SHARED_KEY_SPACES), so one layer's keys never meet another's and a
    family's entries can be listed (``entries``). State that must outlive eviction (saved indices, dropout's
    generator) lives in ``Handle.state``, not here."""

    def __init__(self, limit: int = PLAN_CACHE_LIMIT):
        self.limit = limit
        self._entries: OrderedDict[tuple, Any] = OrderedDict()

    def get(self, key: tuple) -> Any:
        """The entry under key (now the most recently used), or None."""
        entries = self._entries
        value = entries.get(key)
        if value is not None:
            entries.move_to_end(key)
        return value

    def put(self, key: tuple, value: T) -> T:
        """Store value under key (BadParam for a key outside every key space); returns value."""
        space = key[0].split(".", 1)[0] if key and isinstance(key[0], str) else None
        if space not in _key_spaces():
            raise BadParam("key", f"plan cache key {key[:1]} names no key space ({sorted(_key_spaces())})")
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)
        return value

    def pop(self, key: tuple) -> Any:
        return self._entries.pop(key, None)

    def entries(self, space: str) -> list[tuple[tuple, Any]]:
        """(key, entry) of every entry whose key space and call start with space ("conv", "conv.conv2d")."""
        return [(k, v) for k, v in self._entries.items() if k[0] == space or k[0].startswith(space + ".")]

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def _key_spaces() -> frozenset[str]:
    return frozenset(f.name for f in families.FAMILIES) | SHARED_KEY_SPACES


def memo_plan(handle, key: tuple, build: Callable[[], T], numbers: tuple = ()) -> T:
    """handle's plan under key (a PlanCache key: "<family>.<call>" first), built by build() on the first call
    (keys are tuples of hashable descriptors and enums: a warm call hashes cached ints and formats nothing).
    numbers are the caller's own values in key (modes, dims, sizes): a bool among them would find the plan of 1
    or 0, so it goes to build(), whose checks refuse it."""
    if numbers and holds_bool(numbers):
        return build()
    try:
        plan = handle.plans.get(key)
    except (AttributeError, TypeError):   # not a Handle, or an unhashable argument: build() says which
        return build()
    if plan is None:
        plan = handle.plans.put(key, build())
    return plan


def saved_by_forward(handle: PlanHandle, family: str) -> dict[int, Any]:
    """The handle's record of buffers a family's forward calls saved data into for the backward (pooling's
    max indices, LRN's scale): device address -> the forward's signature. A backward call looks its buffer
    up and refuses one that no forward with matching descriptors wrote (a cheap dict lookup)."""
    return handle.state.setdefault(f"{family}.saved by forward", {})


# -- building plans from a family's registry (the slow path, memoised per handle) -------------------------
def checked_solution(handle: PlanHandle, problem, solver_id: str, params: dict, epilogue: Any = None) -> Solution:
    """solver_id's solution with params on problem, memoised per handle. Raises NotApplicable, or
    BadParam("params") for tuning values outside the solver's valid space. The slow path: it formats keys."""
    check(isinstance(params, dict), "params", f"must be a dict, got {type(params).__name__}")
    key = ("find.solution", problem.key(), solver_id, tuple(sorted((k, repr(v)) for k, v in params.items())),
           epilogue.key() if epilogue is not None else None)
    solution = handle.plans.get(key)
    if solution is None:
        solver = problem.registry.get(solver_id)
        reason = solver.not_applicable_reason(problem, handle.info)
        if reason is not None:
            raise NotApplicable(f"{solver_id}: {reason}")
        invalid = solver.invalid_reason(problem, params, handle.info)
        if invalid is not None:
            raise BadParam("params", f"{solver_id}: {invalid}")
        solution = (solver.solution(problem, params, epilogue) if epilogue is not None
                    else solver.solution(problem, params))
        handle.plans.put(key, solution)
    return solution


def plan_of(handle: PlanHandle, problem, solution: Solution) -> Plan:
    """A plan of solution on problem with kernel roles as operand names (not memoised: tuning's candidates)."""
    return Plan(handle, solution, operands(problem.tensors(), problem.outputs()),
                blend_output=problem.outputs()[0], problem=problem)


def solution_plan(handle: PlanHandle, problem, solver_id: str, params: dict, epilogue: Any = None) -> Plan:
    """The plan (kernel roles as operand names) of solver_id with params on problem, memoised per handle;
    what find and tuning time. Raises as checked_solution."""
    solution = checked_solution(handle, problem, solver_id, params, epilogue)
    key = ("find.plan", problem.key(), solution)
    plan = handle.plans.get(key)
    if plan is None:
        plan = handle.plans.put(key, plan_of(handle, problem, solution))
    return plan


class Sequence:
    """Plan runs recorded with their buffers, replayed with one call (see Handle.capture).

    Replaying enqueues exactly the recorded launches on the recorded buffers: outputs are written to the
    same arrays the captured calls returned. Shapes and buffers are fixed; new inputs are copied into the
    captured input arrays before a replay.
    """

    def __init__(self, handle: PlanHandle):
        self.handle = handle
        self.steps: list[tuple[Any, dict]] = []

    def __len__(self) -> int:
        return len(self.steps)

    def replay(self) -> list[cl.Event]:
        """Enqueue every recorded run again, back to back; returns the events of the last one."""
        events: list[cl.Event] = []
        with self.handle.lock:   # a recorded run and its blend share the handle's temporary: no thread between
            for runner, bound in self.steps:
                events = runner.enqueue(bound)
        return events
