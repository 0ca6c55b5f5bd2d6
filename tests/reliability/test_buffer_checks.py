"""Buffers against their descriptors (layout, overlap) and device limits (allocation, memory), checked
before anything is enqueued: a refused call leaves every buffer as it was and the handle usable."""
import dataclasses

import numpy as np
import pyopencl as cl
import pytest

import miopy
from miopy import BadParam, ConvDesc, OutOfResources, TensorDesc
from miopy.accuracy import max_error
from miopy.conv import reference
from miopy.tensor import strided_view

NAIVE = miopy.ConvAlgoPerf("ConvDirectNaive", "naive", 1.0, 0, {"WG": 64})
X_DESC = TensorDesc("FP32", (1, 4, 6, 6))   # with a 3x3 filter and pad 1, y has x's dims
W_DESC = TensorDesc("FP32", (4, 4, 3, 3))
CONV = ConvDesc(1)
POISON = 7.25
TEST = "test_buffer_checks"
LAYOUT = ("pyopencl Array views whose layout is not their descriptor's (strided and offset views, a packed array "
          "for a strided descriptor), to every direction and to conv2d's cold and warm paths",
          "BadParam naming the field before anything was enqueued, every buffer unchanged; arrays laid out as "
          "their descriptor states (a strided view with the view's strides, flat storage of a span) ran and "
          "verified", TEST)
OVERLAP = ("an output sharing memory with another operand: the same buffer (every direction), overlapping "
           "sub-buffers of one buffer, the workspace, find's tensors", "BadParam naming both fields, every buffer "
           "unchanged; disjoint sub-buffers of one buffer and in-place activation ran and verified; a good call "
           "after a refused one ran right", TEST)
LIMITS = ("tensors or workspace over the device's largest allocation or its memory (find, plans)",
          "OutOfResources before any allocation or random data; find skipped a solver whose workspace does not "
          "fit, with its reason, and ranked the others", TEST)
RUNTIME = ("an allocation or a launch failing at run time (MEM_OBJECT_ALLOCATION_FAILURE, simulated)",
           "OutOfResources; the output untouched; the next call on the same handle ran and verified", TEST)
CALLS = {"forward": miopy.convolution_forward, "backward_data": miopy.convolution_backward_data,
         "backward_weights": miopy.convolution_backward_weights}


def _host(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(X_DESC.dims).astype(np.float32),
            "w": rng.standard_normal(W_DESC.dims).astype(np.float32),
            "y": rng.standard_normal(X_DESC.dims).astype(np.float32)}


def _call(handle, direction, x, w, y, **kwargs):
    """The direction's call with the forward roles' buffers (its output is y, dx = x or dw = w)."""
    order = {"forward": (X_DESC, x, W_DESC, w, CONV, X_DESC, y),
             "backward_data": (X_DESC, y, W_DESC, w, CONV, X_DESC, x),
             "backward_weights": (X_DESC, y, X_DESC, x, CONV, W_DESC, w)}[direction]
    return CALLS[direction](handle, *order, algo=NAIVE, **kwargs)


def _contents(handle, *arrays):
    handle.finish()
    return [a.get() for a in arrays]


# -- layout ----------------------------------------------------------------------------------------------
def test_a_strided_view_is_refused_in_every_direction_and_by_conv2d(handle, report):
    host = _host()
    wide = handle.to_device(np.repeat(host["x"], 2, axis=3))   # every other column is x
    view = wide[:, :, :, ::2]
    w, y = handle.to_device(host["w"]), handle.to_device(np.full(X_DESC.dims, POISON, np.float32))
    before = _contents(handle, wide, w, y)
    for direction in CALLS:
        with pytest.raises(BadParam, match="layout") as info:
            _call(handle, direction, view, w, y)
        assert info.value.field in ("x", "dx")
    with pytest.raises(BadParam, match="C-contiguous"):
        miopy.conv2d(view, w, padding=1, handle=handle)
    for got, was in zip(_contents(handle, wide, w, y), before):
        assert np.array_equal(got, was)
    report.tally(*LAYOUT, repetitions=4)


def test_the_functional_warm_path_refuses_a_view_of_a_shape_it_has_run(handle, report):
    host = _host()
    w = handle.to_device(host["w"])
    miopy.conv2d(handle.to_device(host["x"]), w, padding=1, handle=handle)   # the plan for this shape
    view = handle.to_device(np.repeat(host["x"], 2, axis=3))[:, :, :, ::2]
    with pytest.raises(BadParam, match="layout"):
        miopy.conv2d(view, w, padding=1, handle=handle)
    report.tally(*LAYOUT)


def test_an_array_with_its_descriptors_strides_is_read_through_them(handle, report):
    host = _host(1)
    wide = handle.to_device(np.repeat(host["x"], 2, axis=3))
    desc = TensorDesc("FP32", X_DESC.dims, tuple(s // 4 for s in wide[:, :, :, ::2].strides))
    y = handle.to_device(np.full(X_DESC.dims, np.nan, np.float32))
    miopy.convolution_forward(handle, desc, wide[:, :, :, ::2], W_DESC, handle.to_device(host["w"]), CONV, X_DESC,
                              y, algo=NAIVE)
    expect = reference.conv_forward(host["x"], host["w"], (1, 1), (1, 1))
    assert max_error(y.get(), expect) < 1e-4
    report.tally(*LAYOUT)


def test_flat_storage_of_a_strided_tensor_is_accepted_a_packed_array_is_not(handle, report):
    host = _host(2)
    desc = TensorDesc("FP32", X_DESC.dims, (288, 72, 12, 2))   # every other element of a (1, 4, 6, 12) tensor
    flat = np.repeat(host["x"], 2, axis=3).ravel()
    y = handle.to_device(np.full(X_DESC.dims, np.nan, np.float32))
    w = handle.to_device(host["w"])
    miopy.convolution_forward(handle, desc, handle.to_device(flat), W_DESC, w, CONV, X_DESC, y, algo=NAIVE)
    expect = reference.conv_forward(strided_view(flat, desc.dims, desc.strides), host["w"], (1, 1), (1, 1))
    assert max_error(y.get(), expect) < 1e-4
    packed = handle.to_device(np.zeros(desc.dims, np.float32))   # dims as stated, but packed: ambiguous
    with pytest.raises(BadParam, match="layout"):
        miopy.convolution_forward(handle, desc, packed, W_DESC, w, CONV, X_DESC, y, algo=NAIVE)
    report.tally(*LAYOUT, repetitions=2)


def test_an_array_view_with_an_offset_is_refused(handle, report):
    host = _host()
    longer = handle.to_device(np.concatenate([np.zeros((1,) + X_DESC.dims[1:], np.float32), host["x"]]))
    with pytest.raises(BadParam, match="starting 576 bytes"):
        _call(handle, "forward", longer[1:], handle.to_device(host["w"]), handle.empty(X_DESC.dims))
    report.tally(*LAYOUT)


# -- overlap -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("direction", sorted(CALLS))
def test_the_output_may_not_be_an_input(handle, direction, report):
    host = _host(3)
    x, w, y = (handle.to_device(host[r]) for r in "xwy")
    before = _contents(handle, x, w, y)
    if direction == "backward_weights":   # dw's dims are not x's: x's raw buffer is big enough to be dw
        with pytest.raises(BadParam, match="dw and x are the same buffer"):
            _call(handle, direction, x.base_data, x.base_data, y)
    else:
        with pytest.raises(BadParam, match="the same buffer") as info:
            _call(handle, direction, x, w, x) if direction == "forward" else _call(handle, direction, y, w, y)
        assert info.value.field in ("y", "dx")
    for got, was in zip(_contents(handle, x, w, y), before):
        assert np.array_equal(got, was)
    report.tally(*OVERLAP)


def test_overlapping_sub_buffers_are_refused_disjoint_ones_run(handle, report):
    host = _host(4)
    nbytes = X_DESC.nbytes
    big = handle.to_device(np.concatenate([host["x"].ravel(), np.full(3 * nbytes // 4, POISON, np.float32)]))
    align = handle.device.mem_base_addr_align // 8   # bytes
    shift = -(-nbytes // 2 // align) * align          # y starts inside x's bytes
    x_sub = big.base_data.get_sub_region(0, nbytes)
    w = handle.to_device(host["w"])
    with pytest.raises(BadParam, match="overlap in memory"):
        _call(handle, "forward", x_sub, w, big.base_data.get_sub_region(shift, nbytes))
    apart = -(-nbytes // align) * align
    y_sub = big.base_data.get_sub_region(apart, nbytes)
    _call(handle, "forward", x_sub, w, y_sub)
    got = big.get()[apart // 4:apart // 4 + nbytes // 4].reshape(X_DESC.dims)
    assert max_error(got, reference.conv_forward(host["x"], host["w"], (1, 1), (1, 1))) < 1e-4
    report.tally(*OVERLAP, repetitions=2)


def test_a_refused_call_between_good_ones_changes_nothing(handle, report):
    host = _host(5)
    x, w, y = (handle.to_device(host[r]) for r in "xwy")
    expect = reference.conv_forward(host["x"], host["w"], (1, 1), (1, 1))
    _call(handle, "forward", x, w, y)
    with pytest.raises(BadParam):
        _call(handle, "forward", x, w, x)
    y2 = handle.to_device(np.full(X_DESC.dims, np.nan, np.float32))
    _call(handle, "forward", x, w, y2)
    assert max_error(y2.get(), expect) < 1e-4 and np.array_equal(x.get(), host["x"])
    report.tally(*OVERLAP, repetitions=3)


def test_in_place_activation_runs_a_shifted_overlap_does_not(handle, report):
    desc = TensorDesc("FP32", (1, 2, 4, 32))
    host = np.random.default_rng(6).standard_normal(desc.dims).astype(np.float32)
    x = handle.to_device(host)
    miopy.activation_forward(handle, "relu", 0.0, 0.0, 0.0, desc, x, desc, x)
    assert np.array_equal(x.get(), np.maximum(host, 0))
    align = handle.device.mem_base_addr_align // 8
    big = handle.to_device(np.zeros(desc.element_count + align, np.float32))
    with pytest.raises(BadParam, match="overlap in memory"):
        miopy.activation_forward(handle, "relu", 0.0, 0.0, 0.0, desc, big.base_data.get_sub_region(0, desc.nbytes),
                                 desc, big.base_data.get_sub_region(align, desc.nbytes))
    report.tally(*OVERLAP, repetitions=2)


def test_a_workspace_overlapping_an_operand_is_refused(handle, report):
    from miopy.conv import registry
    host = _host(7)
    w = handle.to_device(host["w"])
    y = handle.to_device(np.full(X_DESC.dims, POISON, np.float32))
    rec = miopy.find_convolution(handle, X_DESC, W_DESC, CONV, solvers=[registry.get("ConvIm2colGemm")])[0]
    shared = np.zeros(max(rec.workspace_bytes, X_DESC.nbytes) // 4, np.float32)
    shared[:X_DESC.element_count] = host["x"].ravel()
    shared = handle.to_device(shared)   # x at its start, and big enough to be the workspace
    with pytest.raises(BadParam, match="workspace and x are the same buffer"):
        miopy.convolution_forward(handle, X_DESC, shared, W_DESC, w, CONV, X_DESC, y, algo=rec, workspace=shared)
    assert np.all(y.get() == POISON)
    report.tally(*OVERLAP)


def test_find_refuses_tensors_that_share_memory_and_names_missing_ones(handle, report):
    host = _host(8)
    x, w = handle.to_device(host["x"]), handle.to_device(host["w"])
    with pytest.raises(BadParam, match="share memory"):
        miopy.find_convolution(handle, X_DESC, W_DESC, CONV, tensors={"x": x, "w": w, "y": x}, solvers=[])
    with pytest.raises(BadParam, match="missing \\['y'\\]"):
        miopy.find_convolution(handle, X_DESC, W_DESC, CONV, tensors={"x": x, "w": w})
    report.tally(*OVERLAP, repetitions=2)


# -- device limits ------------------------------------------------------------------------------------------
def _limited(handle, **limits) -> miopy.Handle:
    """A handle on the same device whose DeviceInfo states smaller limits."""
    small = miopy.Handle(context=handle.context)
    small.info = dataclasses.replace(small.info, **limits)
    return small


def test_a_tensor_over_the_largest_allocation_is_refused_before_anything_is_allocated(handle, monkeypatch, report):
    big_x = TensorDesc("FP32", (1, 1024, 1024, 1025))   # 4.3 GB: over a 4 GiB (or smaller) largest allocation
    w = TensorDesc("FP32", (1, 1024, 1, 1))
    small = _limited(handle, max_alloc_bytes=min(handle.info.max_alloc_bytes, 4 << 30))
    monkeypatch.setattr(cl, "Buffer", None)   # any allocation would fail loudly
    with pytest.raises(OutOfResources, match="x needs 4299161600 bytes .* largest allocation"):
        miopy.find_convolution(small, big_x, w, ConvDesc())
    with pytest.raises(OutOfResources, match="largest allocation"):
        miopy.convolution_plan(small, 1, big_x, w, ConvDesc(), algo=NAIVE)
    report.tally(*LIMITS, repetitions=2)


def test_tensors_over_the_global_memory_are_refused(handle, report):
    small = _limited(handle, global_mem_bytes=2 * X_DESC.nbytes)   # x and y fit, with w they do not
    with pytest.raises(OutOfResources, match="x \\+ w \\+ y need .* over the device's memory"):
        miopy.find_convolution(small, X_DESC, TensorDesc("FP32", (4, 4, 1, 1)), ConvDesc())
    report.tally(*LIMITS)


def test_find_skips_a_solver_whose_workspace_the_device_cannot_allocate(handle, report):
    from miopy.conv import registry
    im2col = registry.get("ConvIm2colGemm")
    problem_ws = im2col.workspace_bytes(miopy.conv.problem.ConvProblem.create(1, X_DESC, W_DESC, CONV))
    small = _limited(handle, max_alloc_bytes=problem_ws - 1)
    result = miopy.find_convolution(small, X_DESC, W_DESC, CONV,
                                    solvers=[im2col, registry.get("ConvDirectNaive")])
    assert [r.solver_id for r in result] == ["ConvDirectNaive"]
    assert "workspace needs" in result.skipped["ConvIm2colGemm"] and "largest allocation" in \
        result.skipped["ConvIm2colGemm"]
    report.tally(*LIMITS)


def _allocation_failure(function: str) -> cl.Error:
    return cl.MemoryError(cl._cl._ErrorRecord(function, cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, "test"))


def test_a_launch_that_runs_out_of_memory_leaves_the_output_and_the_handle_usable(handle, monkeypatch, report):
    host = _host(9)
    x, w = handle.to_device(host["x"]), handle.to_device(host["w"])
    y = handle.to_device(np.full(X_DESC.dims, POISON, np.float32))
    _call(handle, "forward", x, w, handle.empty(X_DESC.dims))   # the plan exists
    real = cl.enqueue_nd_range_kernel

    def fail(*args, **kwargs):
        raise _allocation_failure("clEnqueueNDRangeKernel")

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", fail)
    with pytest.raises(OutOfResources, match="ran out of device resources"):
        _call(handle, "forward", x, w, y)
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", real)
    assert np.all(y.get() == POISON)
    _call(handle, "forward", x, w, y)
    assert max_error(y.get(), reference.conv_forward(host["x"], host["w"], (1, 1), (1, 1))) < 1e-4
    report.tally(*RUNTIME)


def test_an_allocation_that_fails_is_out_of_resources(handle, monkeypatch, report):
    def fail(*args, **kwargs):
        raise _allocation_failure("clCreateBuffer")

    monkeypatch.setattr(cl, "Buffer", fail)
    with pytest.raises(OutOfResources, match="cannot allocate 64 bytes"):
        handle.alloc(64)
    report.tally(*RUNTIME)


# -- every public call of every family --------------------------------------------------------------------
# The calls and their valid arguments come from the fuzzer's table, which new families join as they land.
EVERY_CALL = ("every buffer of every public call of every family (pooling, LRN, softmax, batch norm, tensor ops, "
              "dropout, activation, fusion) given a strided view of its shape, and every output given the very "
              "buffer of another operand of its shape", "a view: BadParam naming the field, every buffer unchanged "
              "(but the y and x that MIOpen's pooling and LRN backward take and never read); an output aliasing "
              "an input: BadParam, every buffer unchanged, or (the operations documented in-place safe) the very "
              "result of separate buffers", TEST)
UNREAD = {("pooling_backward", 4), ("pooling_backward", 8), ("lrn_backward", 4)}   # MIOpen's y and x, not read


def _fresh(handle, name: str, seed: int):
    """The call's valid arguments with every buffer filled with positive random numbers (a valid variance)."""
    from tests.reliability.test_bad_input_fuzz import HANDLE, PUBLIC_CALLS
    call = PUBLIC_CALLS[name](handle.queue)
    rng = np.random.default_rng(seed)
    values = [handle if v is HANDLE else v for v in call.original]
    for i, arg in enumerate(call.args):
        if arg.kind == "buffer":
            values[i] = handle.to_device((rng.random(arg.value.shape) + 0.5).astype(np.float32))
    call.prepare(handle)
    return call, values


def _snapshot(queue, value) -> bytes:
    from tests.reliability.test_bad_input_fuzz import _snapshot as snapshot
    return snapshot(queue, value)


def _buffers(call) -> list[int]:
    return [i for i, arg in enumerate(call.args) if arg.kind == "buffer"]


def _public_call_names() -> list[str]:
    from tests.reliability.test_bad_input_fuzz import PUBLIC_CALLS
    return sorted(PUBLIC_CALLS)


@pytest.mark.parametrize("name", _public_call_names())
def test_every_buffer_of_every_public_call_refuses_a_strided_view(handle, name, report):
    call, values = _fresh(handle, name, 0)
    checked = 0
    for i in _buffers(call):
        if (name, i) in UNREAD:
            continue
        dims = call.original[call.args[i].desc].dims
        spoiled = list(values)
        spoiled[i] = handle.to_device(np.full(dims[:3] + (2 * dims[3],), POISON, np.float32))[:, :, :, ::2]
        before = [_snapshot(handle.queue, spoiled[j]) for j in _buffers(call)]
        with pytest.raises(BadParam, match="layout|C-contiguous"):
            call.function(*spoiled)
        handle.finish()
        assert [_snapshot(handle.queue, spoiled[j]) for j in _buffers(call)] == before
        checked += 1
    assert checked
    report.tally(*EVERY_CALL, repetitions=checked)


def _run_outputs(handle, name: str, dst: int, src: int, alias: bool) -> tuple[list, bool]:
    """Run name with buffer dst replaced by src's very buffer (alias) or by a copy of src's contents;
    returns every buffer's contents afterwards and whether the call raised BadParam."""
    call, values = _fresh(handle, name, 1)
    values[dst] = values[src] if alias else handle.to_device(values[src].get())
    buffers = [values[j] for j in _buffers(call)]
    before = _contents(handle, *buffers)
    try:
        call.function(*values)
    except BadParam:
        for got, was in zip(_contents(handle, *buffers), before):
            assert np.array_equal(got, was, equal_nan=True), "a refused call wrote"
        return before, True
    return _contents(handle, *buffers), False


@pytest.mark.parametrize("name", _public_call_names())
def test_an_output_aliasing_an_input_is_refused_or_computed_right_in_place(handle, name, report):
    call, values = _fresh(handle, name, 1)
    indices = _buffers(call)
    before = _contents(handle, *[values[j] for j in indices])
    call.function(*values)
    after = _contents(handle, *[values[j] for j in indices])
    outputs = {j for j, was, now in zip(indices, before, after) if not np.array_equal(was, now, equal_nan=True)}
    assert outputs, "the valid call wrote nothing"
    pairs = [(out, other) for out in sorted(outputs) for other in indices
             if other != out and values[other].shape == values[out].shape]
    for out, other in pairs:
        for dst, src in ((out, other), (other, out)):
            separate, _ = _run_outputs(handle, name, dst, src, alias=False)
            shared, refused = _run_outputs(handle, name, dst, src, alias=True)
            if refused:
                continue
            assert not {dst, src} <= outputs, f"two outputs ({dst}, {src}) in one buffer were accepted"
            position = {j: k for k, j in enumerate(indices)}
            for j in outputs:   # the shared buffer holds what the separate run wrote to the output of the pair
                got = shared[position[src if j == dst else j]]
                assert np.allclose(got, separate[position[j]], rtol=1e-5, atol=1e-6), (name, dst, src, j)
    report.tally(*EVERY_CALL, repetitions=2 * len(pairs))
