"""Property-based bad input: the convolution calls, given a coherent random problem spoiled by zero to two
random mutations (bad descriptors, mismatched channels or groups, dtype mismatch, wrong y descriptor,
undersized or foreign buffers, invalid tuning values, bad scalars), raise only MiopyError subclasses, and
every buffer passed in comes back untouched when they raise.

Every other public call, and the functional layers, come from each family's tables (PUBLIC_CALLS and FUNCTIONAL
of tests/families/<family>.py, for every family of miopy.families.FAMILIES) and get generic mutations.

Sizes stay tiny so the valid combinations compile in a moment on PoCL.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import miopy
from miopy import ConvAlgoPerf, ConvDesc, MiopyError, TensorDesc
from tests import families
from tests.families.common import HANDLE, POISON, Call, Functional
from tests.reliability.faults import Outcome

# Cases per public call: CI runs 100; the slow job (`pytest -m slow`, on the GPU machine and before a release)
# runs 1000.
SLOW = 1000
CI = 100
SCALES = [pytest.param(CI, id="ci"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)]


def _settings(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

CALLS = {"forward": miopy.convolution_forward, "backward_data": miopy.convolution_backward_data,
         "backward_weights": miopy.convolution_backward_weights}
ROLES = ("x", "w", "y")

GARBAGE = st.sampled_from([None, "a", "3", 2.5, -1, 0, (1,), [1, 2, 3], (1, 2, 3, 4, 5), {"k": 1}, b"x",
                           float("nan"), np.float64(1.5), object()])
SMALL = st.integers(-2, 4)
NEGATIVE = st.integers(-2, -1)
# Dims that are never a valid 4-D shape (valid but different shapes would each build a new program).
BAD_DIMS = st.lists(SMALL, min_size=3, max_size=5).filter(lambda dims: len(dims) != 4 or min(dims) <= 0)


# -- a coherent call, then mutations that spoil it ------------------------------------------------------------
# (n, groups, C/groups, K/groups, h, w, r, s, pad, stride, dilation, mode): the suite's PROBLEMS, and a
# transpose convolution that maps onto the first of them, so no new program is built.
BASES = [(1, 1, 4, 4, 6, 6, 3, 3, 1, 1, 1, "conv"), (2, 2, 3, 2, 7, 5, 3, 3, 0, 2, 1, "conv"),
         (1, 1, 4, 4, 6, 6, 3, 3, 1, 1, 1, "transpose")]


def coherent(base: tuple) -> dict:
    """Arguments of a valid call built from a base problem: descriptor arguments, buffers, no algo."""
    n, groups, c_per_group, k_per_group, h, w, r, s, pad, stride, dil, mode = base
    w_dims = ([groups * k_per_group, c_per_group, r, s] if mode == "conv"
              else [groups * c_per_group, k_per_group, r, s])
    return {"x": {"dtype": "FP32", "dims": [n, groups * c_per_group, h, w], "strides": None},
            "w": {"dtype": "FP32", "dims": w_dims, "strides": None},
            "conv": {"pad": pad, "stride": stride, "dilation": dil, "groups": groups, "mode": mode,
                     "output_padding": 0},
            "y": "derived", "alpha": 1.0, "beta": 0.0, "algo": None,
            "buffers": {role: {"fraction": 1.0, "dtype": np.float32, "kind": "array"} for role in ROLES}}


def _spoil_tensor(args, draw):
    desc = args[draw(st.sampled_from(["x", "w"]))]
    field = draw(st.sampled_from(["dtype", "dims", "strides"]))
    desc[field] = draw({"dtype": st.sampled_from(["FP16", np.float64, np.int32, "bogus", None, 3]),
                        "dims": st.one_of(BAD_DIMS, GARBAGE),
                        "strides": st.one_of(st.lists(st.integers(-1, 40), min_size=4, max_size=4), GARBAGE)}[field])


def _spoil_conv(args, draw):
    field = draw(st.sampled_from(["pad", "stride", "dilation", "groups", "mode", "output_padding"]))
    args["conv"][field] = draw(st.one_of(NEGATIVE, st.tuples(NEGATIVE, SMALL), GARBAGE, st.just("bogus")))


def _mismatch_channels(args, draw):
    """Weights whose input channels no longer match the input's (C/groups for conv, C_in for transpose)."""
    dims = args["w"]["dims"]
    if isinstance(dims, list) and len(dims) == 4:  # not already spoiled
        dims[1 if args["conv"]["mode"] == "conv" else 0] += draw(st.integers(1, 3))


def _mismatch_groups(args, draw):
    """Groups that do not divide the channels."""
    args["conv"]["groups"] = args["x"]["dims"][1] + draw(st.integers(1, 2))


def _mismatch_dtype(args, draw):
    args[draw(st.sampled_from(["x", "w"]))]["dtype"] = "FP16"


def _spoil_y(args, draw):
    args["y"] = draw(st.sampled_from(["wider", "fewer channels", "FP16", "not a desc"]))


def _spoil_buffer(args, draw):
    spec = args["buffers"][draw(st.sampled_from(ROLES))]
    spec.update(draw(st.sampled_from([{"fraction": 0.5}, {"fraction": 0.0}, {"dtype": np.float16},
                                      {"dtype": np.float64}, {"dtype": np.int32}, {"kind": "numpy"},
                                      {"kind": "none"}, {"kind": "buffer", "fraction": 0.5},
                                      {"kind": "offset"}, {"kind": "strided"},
                                      {"kind": "alias", "of": draw(st.sampled_from(ROLES))}])))


def _spoil_scalar(args, draw):
    args[draw(st.sampled_from(["alpha", "beta"]))] = draw(GARBAGE)


def _spoil_algo(args, draw):
    params = draw(st.one_of(st.fixed_dictionaries({"WG": st.one_of(st.integers(-1, 4096), GARBAGE)}),
                            st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), GARBAGE))
    solver = draw(st.sampled_from(["ConvDirectNaive", "ConvDirectNaive", "NoSuchSolver", ""]))
    args["algo"] = draw(st.sampled_from([ConvAlgoPerf(solver, "naive", 1.0, 0, params), "fastest", 3]))


MUTATIONS = {f.__name__[1:]: f for f in (_spoil_tensor, _spoil_conv, _mismatch_channels, _mismatch_groups,
                                          _mismatch_dtype, _spoil_y, _spoil_buffer, _spoil_scalar, _spoil_algo)}


@st.composite
def spoiled_calls(draw) -> tuple[dict, list[str]]:
    """A base problem spoiled by 0 (a fifth of the time), 1 or 2 mutations."""
    args = coherent(draw(st.sampled_from(BASES)))
    count = draw(st.integers(0, 2))
    names = [draw(st.sampled_from(sorted(MUTATIONS))) for _ in range(count)]
    for name in names:
        MUTATIONS[name](args, draw)
    return args, names


# -- building and making the call ---------------------------------------------------------------------------
def _tensor(args: dict) -> TensorDesc:
    return TensorDesc(args["dtype"], args["dims"], args["strides"])


def _y_desc(choice: str, x_desc, w_desc, conv: ConvDesc):
    if choice == "not a desc":
        return (1, 2, 3, 4)
    y = conv.output_desc(x_desc, w_desc)
    n, k, p, q = y.dims
    return {"derived": y, "wider": TensorDesc("FP32", (n, k, p, q + 1)),
            "fewer channels": TensorDesc("FP32", (n, max(k - 1, 1), p, q + (k == 1))),
            "FP16": TensorDesc("FP16", y.dims)}[choice]


def _buffer(queue, desc, spec: dict):
    """A poisoned buffer for desc: maybe undersized, of another type, with an offset, or not one at all."""
    if spec["kind"] == "none":
        return None
    need = desc.nbytes if isinstance(desc, TensorDesc) else 64
    count = max(1, int(need * spec["fraction"]) // np.dtype(spec["dtype"]).itemsize)
    if spec["kind"] == "strided" and isinstance(desc, TensorDesc):   # a view every other element of a bigger array
        wide = cl_array.to_device(queue, np.full(desc.dims[:3] + (2 * desc.dims[3],), POISON, spec["dtype"]))
        return wide[:, :, :, ::2]
    host = np.full(count + (spec["kind"] == "offset"), POISON).astype(spec["dtype"])
    if spec["kind"] == "numpy":
        return host
    array = cl_array.to_device(queue, host)
    return {"buffer": array.base_data, "offset": array[1:]}.get(spec["kind"], array)


def _snapshot(queue, value) -> bytes | None:
    """The bytes a buffer holds (all of its base buffer, for a view), to compare before and after a refused
    call."""
    if isinstance(value, cl_array.Array):
        value = value.base_data
    if isinstance(value, np.ndarray):
        return value.tobytes()
    if isinstance(value, cl.Buffer):
        host = np.empty(value.size, np.uint8)
        cl.enqueue_copy(queue, host, value)
        return host.tobytes()
    return None


def _ordered(call: str, descs: dict, buffers: dict, conv: ConvDesc) -> tuple:
    x, w, y = ((descs[r], buffers[r]) for r in ROLES)
    first, second, out = {"forward": (x, w, y), "backward_data": (y, w, x), "backward_weights": (y, x, w)}[call]
    return (*first, *second, conv, *out)


class Tally:
    """How the examples of one property ended, and how many carried each mutation."""

    def __init__(self):
        self.counts = {"raised MiopyError": 0, "ran": 0}

    def add(self, outcome: str) -> None:
        self.counts[outcome] += 1

    def summary(self) -> str:
        return ", ".join(f"{n} {k}" for k, n in self.counts.items())


def _call_once(handle, call: str, args: dict) -> str:
    """Build and make one call; returns how it ended, asserting the two properties on the way."""
    queue = handle.queue
    try:
        descs = {"x": _tensor(args["x"]), "w": _tensor(args["w"])}
        conv = ConvDesc(**args["conv"])
        descs["y"] = _y_desc(args["y"], descs["x"], descs["w"], conv)
    except MiopyError:
        return "raised MiopyError"
    buffers = {role: _buffer(queue, descs[role], args["buffers"][role]) for role in ROLES}
    for role in ROLES:   # an alias is another role's very buffer (the output in place of an input, ...)
        if args["buffers"][role]["kind"] == "alias":
            buffers[role] = buffers[args["buffers"][role]["of"]]
    before = {role: _snapshot(queue, b) for role, b in buffers.items()}
    try:
        CALLS[call](handle, *_ordered(call, descs, buffers, conv), algo=args["algo"], alpha=args["alpha"],
                    beta=args["beta"])
        queue.finish()
    except MiopyError:
        assert {role: _snapshot(queue, b) for role, b in buffers.items()} == before, "a refused call wrote"
        return "raised MiopyError"
    return "ran"


def _record(report, what: str, tally: Tally, examples: int) -> None:
    total = sum(tally.counts.values())
    # Hypothesis stops early once a strategy has no distinct input left to make (the small argument tables of
    # the functional calls hold a few hundred): the slow job asks that it ran its 1000 or exhausted at least
    # three CI runs' worth; CI's 100 must all run.
    wanted = examples if examples < SLOW else min(examples, 3 * CI)
    assert total >= wanted, f"hypothesis ran {total} cases of {examples}"
    what += " [slow job]" if examples >= SLOW else ""
    report.record(Outcome(fault=what, store="-", processes=1, repetitions=total,
                          happened=f"{tally.summary()}; no other exception; every buffer of a refused call "
                                   "untouched", test="test_bad_input_fuzz"))


@pytest.mark.parametrize("examples", SCALES)
def test_spoiled_calls_raise_only_miopy_errors(handle, report, examples):
    for call in CALLS:
        tally = Tally()

        @_settings(examples)
        @given(spoiled_calls())
        def prop(example):
            args, mutations = example
            outcome = _call_once(handle, call, args)  # noqa: B023  (run here, within this iteration)
            assert mutations or outcome == "ran", "an unspoiled call was refused"
            tally.add(outcome)  # noqa: B023

        prop()
        _record(report, f"random bad input to convolution_{call} (descriptors, channels/groups, dtypes, y desc, "
                        "buffers: undersized, foreign, views, the output aliasing an input; tuning values, "
                        "alpha/beta)", tally, examples)


# -- conv2d ------------------------------------------------------------------------------------------------
# Shapes of the suite's first problem (valid) or of no convolution; arguments valid for it (1) or not.
ARRAY = st.fixed_dictionaries({
    "shape": st.one_of(st.sampled_from([(1, 4, 6, 6), (4, 4, 3, 3)]),
                       st.lists(st.integers(0, 3), max_size=5).filter(lambda d: len(d) != 4 or min(d) == 0)),
    "dtype": st.sampled_from([np.float32, np.float32, np.float32, np.float16, np.float64, np.int32]),
    "view": st.sampled_from([False, False, False, True])})   # every other element of a wider array
CONV2D_ARG = st.one_of(st.just(1), NEGATIVE, st.tuples(NEGATIVE, SMALL), GARBAGE)


def _conv2d_array(queue, spec: dict):
    shape = tuple(spec["shape"])
    if spec["view"] and shape:
        wide = cl_array.to_device(queue, np.full(shape[:-1] + (2 * shape[-1],), POISON).astype(spec["dtype"]))
        return wide[..., ::2]
    return cl_array.to_device(queue, np.full(shape, POISON).astype(spec["dtype"]))


@pytest.mark.parametrize("examples", SCALES)
def test_random_conv2d_arguments_raise_only_miopy_errors(handle, report, examples):
    tally = Tally()

    @_settings(examples)
    @given(x=ARRAY, w=ARRAY, stride=CONV2D_ARG, padding=CONV2D_ARG, dilation=CONV2D_ARG, groups=CONV2D_ARG)
    def prop(x, w, stride, padding, dilation, groups):
        arrays = [_conv2d_array(handle.queue, a) for a in (x, w)]
        before = [_snapshot(handle.queue, a) for a in arrays]
        try:
            miopy.conv2d(*arrays, stride=stride, padding=padding, dilation=dilation, groups=groups, handle=handle)
            handle.finish()
        except MiopyError:
            assert [_snapshot(handle.queue, a) for a in arrays] == before
            tally.add("raised MiopyError")
            return
        tally.add("ran")

    prop()
    _record(report, "random conv2d arguments (shapes, dtypes, strided views, stride, padding, dilation, groups)",
            tally, examples)


# -- every other public call with buffers: each family's table (tests/families), generic mutations ----------
PUBLIC_CALLS = families.table("PUBLIC_CALLS")   # name -> a valid call on a queue (common.Call)
BAD_SCALARS = [True, np.bool_(False), "1", float("nan"), float("inf"), 1e39, None, [1.0], object()]
BAD_MODES = [None, "bogus", -1, 99, 2.5, [1], True, object()]


def _spoil_argument(call: Call, index: int, draw, queue) -> None:
    arg = call.args[index]
    if arg.kind == "handle":
        arg.value = draw(st.sampled_from([None, "handle", 3, object()]))
    elif arg.kind == "raw":   # an untyped buffer (dropout's reserve space, LRN's workspace)
        size = call.original[index].size
        arg.value = draw(st.sampled_from([None, np.ones(size, np.uint8),
                                          cl_array.to_device(queue, np.ones(1, np.uint8)),
                                          cl_array.to_device(queue, np.ones(size + 1, np.uint8))[1:]]))
    elif arg.kind == "scalar":
        arg.value = draw(st.sampled_from(BAD_SCALARS))
    elif arg.kind not in ("desc", "buffer"):   # a mode or a descriptor object ("mode", "conv", "pool", ...)
        arg.value = draw(st.sampled_from(BAD_MODES))
    elif arg.kind == "desc":
        valid: TensorDesc = call.original[index]
        dims = valid.dims
        arg.value = draw(st.sampled_from([
            None, (1, 2, 3, 4), TensorDesc("FP32", (dims[0], dims[1] + 1, dims[2], dims[3])),
            TensorDesc("FP16", dims), TensorDesc("FP32", dims, tuple(2 * s for s in valid.strides)),
            TensorDesc("FP32", (dims[0] * 2,) + dims[1:])]))
    else:
        desc: TensorDesc = call.original[arg.desc]
        others = [a.value for a in call.args if a.kind == "buffer" and a is not arg]
        choice = draw(st.sampled_from(["small", "float64", "numpy", "none", "offset", "strided", "alias", "overlap"]))
        count = desc.element_count
        arg.value = {
            "small": lambda: cl_array.to_device(queue, np.full(max(count // 2, 1), POISON, np.float32)),
            "float64": lambda: cl_array.to_device(queue, np.full(desc.dims, POISON)),
            "numpy": lambda: np.full(desc.dims, POISON, np.float32),
            "none": lambda: None,
            "offset": lambda: cl_array.to_device(queue, np.full(count + 1, POISON, np.float32))[1:],
            "strided": lambda: cl_array.to_device(
                queue, np.full(desc.dims[:3] + (2 * desc.dims[3],), POISON, np.float32))[:, :, :, ::2],
            "alias": lambda: draw(st.sampled_from(others)) if others else None,
            "overlap": lambda: _overlapping(queue, draw(st.sampled_from(others)), desc) if others else None,
        }[choice]()


def _overlapping(queue, other, desc: TensorDesc):
    """A sub-buffer that starts inside other's buffer (one alignment step in) and is big enough for desc."""
    base = other.base_data if isinstance(other, cl_array.Array) else other
    align = queue.device.mem_base_addr_align // 8
    if not isinstance(base, cl.Buffer) or base.size < align + desc.nbytes:   # other spoiled already (numpy, None)
        return None
    return base.get_sub_region(align, desc.nbytes)


def test_every_family_brings_its_fuzz_tables():
    """Each family of miopy.families has tests/families/<name>.py with PUBLIC_CALLS and FUNCTIONAL (empty where it
    has none), no name in two families."""
    problems = families.missing(("PUBLIC_CALLS", "FUNCTIONAL"))
    assert not problems, "\n".join(problems)


@st.composite
def spoiled_public_calls(draw, name: str, queue) -> tuple[Call, int]:
    call = PUBLIC_CALLS[name](queue)
    count = draw(st.integers(0, 2))
    for _ in range(count):
        _spoil_argument(call, draw(st.integers(0, len(call.args) - 1)), draw, queue)
    return call, count


@pytest.mark.parametrize("examples", SCALES)
@pytest.mark.parametrize("name", sorted(PUBLIC_CALLS))
def test_every_public_call_given_bad_input_raises_only_miopy_errors(handle, report, name, examples):
    tally = Tally()

    @_settings(examples)
    @given(spoiled_public_calls(name, handle.queue))
    def prop(example):
        call, mutations = example
        call.prepare(handle)
        values = [handle if a.value is HANDLE else a.value for a in call.args]
        buffers = [v for v in values if isinstance(v, (cl_array.Array, cl.Buffer, np.ndarray))]
        buffers += call.watch   # held elsewhere (dropout's states, in its descriptor)
        before = [_snapshot(handle.queue, b) for b in buffers]
        try:
            call.function(*values)
            handle.finish()
        except MiopyError:
            assert mutations, "an unspoiled call was refused"
            assert [_snapshot(handle.queue, b) for b in buffers] == before, "a refused call wrote"
            tally.add("raised MiopyError")
            return
        tally.add("ran")

    prop()
    assert tally.counts["ran"] >= 1, "no valid call ran: the fuzzer spoils everything"
    _record(report, f"random bad input to {name} (handle, modes, scalars, descriptors, buffers: undersized, "
                    "foreign, views, aliasing and overlapping sub-buffers)", tally, examples)


# -- the functional layers: arrays and keyword arguments, spoiled ---------------------------------------------
FUNCTIONAL: dict[str, Functional] = families.table("FUNCTIONAL")
BAD_KEYWORDS = [None, -1, 0, 2.5, "2", True, (1, 2, 3), [1], float("nan"), object()]


@st.composite
def spoiled_functional_calls(draw, name: str) -> tuple[list[dict], dict, int]:
    shapes, keywords = FUNCTIONAL[name].shapes, FUNCTIONAL[name].keywords
    arrays: list[Any] = [{"shape": shape, "dtype": np.float32, "view": False} for shape in shapes]
    keywords = dict(keywords)
    count = draw(st.integers(0, 2))
    for _ in range(count):
        index = draw(st.integers(0, len(arrays) + len(keywords) - 1))
        if index < len(arrays):   # spoilt so that no other valid shape (a new program to build) is made
            shape = shapes[index]
            arrays[index] = draw(st.sampled_from([
                {"shape": shape, "dtype": np.float64, "view": False},
                {"shape": shape, "dtype": np.int32, "view": False},
                {"shape": shape, "dtype": np.float32, "view": True},
                {"shape": shape[1:], "dtype": np.float32, "view": False},
                {"shape": (0,) + shape[1:], "dtype": np.float32, "view": False}, "numpy", None]))
        else:
            keywords[sorted(keywords)[index - len(arrays)]] = draw(st.sampled_from(BAD_KEYWORDS))
    return arrays, keywords, count


@pytest.mark.parametrize("examples", SCALES)
@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_calls_given_bad_input_raise_only_miopy_errors(handle, report, name, examples):
    tally = Tally()

    @_settings(examples)
    @given(spoiled_functional_calls(name))
    def prop(example):
        specs, keywords, mutations = example
        entry = FUNCTIONAL[name]
        arrays = [spec if spec is None else np.ones(entry.shapes[i], np.float32) if spec == "numpy"
                  else _conv2d_array(handle.queue, spec) for i, spec in enumerate(specs)]
        for i in entry.positive:   # ones rather than poison (a variance must be > 0)
            if isinstance(arrays[i], cl_array.Array) and arrays[i].size:
                arrays[i] = cl_array.to_device(handle.queue, np.ones(arrays[i].shape, arrays[i].dtype))
        before = [_snapshot(handle.queue, a) for a in arrays]
        try:
            entry.function(*arrays, handle=handle, **keywords)
            handle.finish()
        except MiopyError:
            assert mutations, "an unspoiled call was refused"
            assert [_snapshot(handle.queue, a) for a in arrays] == before, "a refused call wrote"
            tally.add("raised MiopyError")
            return
        tally.add("ran")

    prop()
    assert tally.counts["ran"] >= 1, "no valid call ran"
    _record(report, f"random bad input to the functional {name} (array shapes, dtypes, strided views, keyword "
                    "arguments)", tally, examples)
