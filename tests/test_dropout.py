"""Dropout: the Philox generator against its published answers; both solvers draw exactly the reference's
masks (every dtype, layouts, the tail of a packed tensor); keep-rate statistics within a binomial bound;
reproducibility and state evolution; the backward applies the forward's mask; refused input."""
import numpy as np
import pytest

import miopy
from miopy import BadParam, NotSupported, TensorDesc
from miopy.accuracy import max_error
from miopy.dropout import (
    REGISTRY,
    DropoutDirection,
    DropoutProblem,
    Generator,
    dropout,
    dropout_backward,
    dropout_forward,
    dropout_get_reserve_space_size,
    dropout_get_states_size,
    native_dropout,
    native_dropout_backward,
    restore_dropout_descriptor,
    set_dropout_descriptor,
)
from miopy.dropout import reference as ref
from miopy.plan import Plan, operands
from miopy.tensor import strided_view

TOLERANCE = {"FP32": 1e-6, "FP16": 1e-3}
NHWC = (5 * 7 * 3, 1, 7 * 3, 3)   # (2, 3, 5, 7) channels-last


def test_philox_matches_random123_known_answers():
    kat = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
           ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
           ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for counter, key, answer in kat:
        assert tuple(int(v) for v in ref.philox4x32_10(np.array(counter), np.array(key))) == answer


def _states(handle, seed: int, offset: int = 0):
    words = np.array([seed & 0xFFFFFFFF, seed >> 32, offset & 0xFFFFFFFF, offset >> 32], np.uint32)
    return handle.to_device(words.view(np.uint8))


def _run(handle, solver, problem, host: dict, threshold, scale):
    bufs = {role: handle.to_device(a) for role, a in host.items()}
    plan = Plan(handle, solver.solution(problem, {}), operands(problem.tensors(), problem.outputs()))
    plan.run_values(tuple(bufs[r] for r in problem.tensors()), scalars={"threshold": threshold, "scale": scale})
    return {role: b.get() for role, b in bufs.items()}


CASES = [("FP32", (2, 3, 5, 7), None), ("FP16", (2, 3, 5, 7), None), ("FP32", (2, 3, 5, 7), NHWC),
         ("FP32", (1, 4, 8, 8), None)]   # 210 elements: a tail block of 2; 256: none


PAIRS = [(s, case) for s in REGISTRY.ALL for case in CASES if s.id == "DropoutGeneric" or case[2] is None]


@pytest.mark.parametrize("solver,case", PAIRS, ids=[f"{s.id}-{c[0]}-{c[1]}-{c[2] is not None}" for s, c in PAIRS])
def test_solvers_draw_the_reference_mask_and_scale(handle, solver, case):
    dtype, dims, strides = case
    desc = TensorDesc(dtype, dims, strides)
    fwd = DropoutProblem.create(DropoutDirection.FORWARD, desc, desc, state_evo=True)
    assert solver.is_applicable(fwd, handle.info), solver.not_applicable_reason(fwd, handle.info)
    p, seed, offset = 0.4, 2**40 + 77, 2**32 + 5
    threshold, scale = np.uint64(ref.threshold(p)), np.float32(ref.scale(p))
    rng = np.random.default_rng(1)
    x = rng.standard_normal(desc.element_span).astype(desc.dtype.numpy)
    host = {"x": x, "y": np.full_like(x, np.nan), "reserve_space": np.full(desc.element_count, 7, np.uint8),
            "states": _states(handle, seed, offset).get()}
    got = _run(handle, solver, fwd, host, threshold, scale)
    mask = ref.keep_mask(desc.element_count, p, seed, offset)
    assert np.array_equal(got["reserve_space"], mask)
    view = lambda a: strided_view(a, dims, desc.strides)
    assert max_error(view(got["y"]), ref.forward(view(x), mask, p)) <= TOLERANCE[dtype]
    assert tuple(got["states"].view(np.uint32)) == (seed & 0xFFFFFFFF, seed >> 32, 6, 1)   # offset advanced
    bwd = DropoutProblem.create(DropoutDirection.BACKWARD, desc, desc)
    dy = rng.standard_normal(desc.element_span).astype(desc.dtype.numpy)
    back = _run(handle, solver, bwd, {"dy": dy, "dx": np.full_like(dy, np.nan), "reserve_space": mask}, threshold,
                scale)
    assert max_error(view(back["dx"]), ref.backward(view(dy), mask, p)) <= TOLERANCE[dtype]
    assert np.all(view(back["dx"]).ravel()[mask == 0] == 0)


def test_keep_rate_within_a_binomial_bound(handle):
    """200704 elements at p = 0.3: the kept count, and the count of each of the four words of a draw, within
    5 standard deviations of the binomial mean."""
    desc = TensorDesc("FP32", (4, 16, 56, 56))
    states = handle.empty((dropout_get_states_size(handle),), np.uint8)
    d = set_dropout_descriptor(handle, 0.3, states, seed=1234)
    x, y = handle.to_device(np.ones(desc.dims, np.float32)), handle.empty(desc.dims)
    reserve = handle.empty((dropout_get_reserve_space_size(desc),), np.uint8)
    dropout_forward(handle, d, desc, desc, x, desc, y, reserve)
    mask = reserve.get()
    for part, n in ((mask, mask.size), *((mask[k::4], mask.size // 4) for k in range(4))):
        assert abs(int(part.sum()) - 0.7 * n) <= 5 * np.sqrt(n * 0.3 * 0.7)
    assert np.allclose(np.unique(y.get()), [0.0, 1 / 0.7])


def test_extreme_rates(handle):
    desc = TensorDesc("FP32", (2, 3, 4, 5))
    states = handle.empty((16,), np.uint8)
    x = handle.to_device(np.random.default_rng(2).standard_normal(desc.dims).astype(np.float32))
    y, reserve = handle.empty(desc.dims), handle.empty((desc.element_count,), np.uint8)
    dropout_forward(handle, set_dropout_descriptor(handle, 0.0, states, 5), None, desc, x, desc, y, reserve)
    assert np.array_equal(y.get(), x.get()) and np.all(reserve.get() == 1)
    dropout_forward(handle, set_dropout_descriptor(handle, 1.0, states, 5), None, desc, x, desc, y, reserve)
    assert np.all(y.get() == 0) and np.all(reserve.get() == 0)


def test_seeds_replay_and_state_evolution(handle):
    desc = TensorDesc("FP32", (2, 3, 8, 8))
    x, y = handle.to_device(np.ones(desc.dims, np.float32)), handle.empty(desc.dims)
    reserve, states = handle.empty((desc.element_count,), np.uint8), handle.empty((16,), np.uint8)

    def masks(seed, evolve, calls=2):
        d = set_dropout_descriptor(handle, 0.5, states, seed, state_evo=evolve)
        out = []
        for _ in range(calls):
            dropout_forward(handle, d, None, desc, x, desc, y, reserve)
            out.append(reserve.get())
        return out

    fixed, evolving, again, other = masks(3, False), masks(3, True), masks(3, True), masks(4, True)
    assert np.array_equal(fixed[0], fixed[1])                 # MIOpen: no evolution, the same mask
    assert np.array_equal(fixed[0], evolving[0]) and not np.array_equal(evolving[0], evolving[1])
    assert all(np.array_equal(a, b) for a, b in zip(evolving, again))
    assert not np.array_equal(evolving[0], other[0])
    restored = restore_dropout_descriptor(handle, 0.5, states, 4, state_evo=True)   # states as left: offset 2
    dropout_forward(handle, restored, None, desc, x, desc, y, reserve)
    assert np.array_equal(reserve.get(), ref.keep_mask(desc.element_count, 0.5, 4, 2))


def test_use_mask_reuses_the_reserve_space(handle):
    desc = TensorDesc("FP32", (1, 2, 3, 6))
    states = handle.empty((16,), np.uint8)
    d = set_dropout_descriptor(handle, 0.5, states, 9, use_mask=True)
    mask = (np.arange(desc.element_count) % 3 == 0).astype(np.uint8)
    x = np.random.default_rng(3).standard_normal(desc.dims).astype(np.float32)
    y = handle.empty(desc.dims)
    dropout_forward(handle, d, desc, desc, handle.to_device(x), desc, y, handle.to_device(mask))
    assert max_error(y.get(), ref.forward(x, mask, 0.5)) <= 1e-6


def test_functional_generator_and_backward(handle):
    x = handle.to_device(np.random.default_rng(4).standard_normal((3, 50, 7)).astype(np.float32))
    gen = Generator(handle, seed=11)
    y1, m1 = native_dropout(x, 0.25, generator=gen)
    y2, m2 = native_dropout(x, 0.25, generator=gen)
    assert not np.array_equal(m1.get(), m2.get())
    gen.manual_seed(11)
    assert np.array_equal(native_dropout(x, 0.25, generator=gen)[1].get(), m1.get())
    assert np.array_equal(m1.get().ravel(), ref.keep_mask(x.size, 0.25, 11, 0))
    assert max_error(y1.get(), ref.forward(x.get(), m1.get(), 0.25)) <= 1e-6
    dy = handle.to_device(np.ones(x.shape, np.float32))
    grad = native_dropout_backward(dy, m2, 0.25)
    assert max_error(grad.get(), ref.backward(np.ones(x.shape), m2.get(), 0.25)) <= 1e-6
    assert dropout(x, 0.25, training=False) is x


def test_bad_input_names_the_field_and_touches_nothing(handle):
    desc = TensorDesc("FP32", (2, 3, 4, 5))
    states = handle.empty((16,), np.uint8)
    d = set_dropout_descriptor(handle, 0.5, states, 1)
    x, y = handle.to_device(np.ones(desc.dims, np.float32)), handle.to_device(np.full(desc.dims, 7.0, np.float32))
    reserve = handle.to_device(np.full(desc.element_count, 9, np.uint8))
    cases = {
        "reserve_space": lambda: dropout_forward(handle, d, None, desc, x, desc, y, handle.empty((10,), np.uint8)),
        "y_desc.dims": lambda: dropout_forward(handle, d, None, desc, x, TensorDesc("FP32", (2, 3, 4, 4)), y, reserve),
        "dropout": lambda: set_dropout_descriptor(handle, 1.5, states, 1),
        "seed": lambda: set_dropout_descriptor(handle, 0.5, states, -1),
        "states": lambda: set_dropout_descriptor(handle, 0.5, handle.empty((8,), np.uint8), 1),
    }
    for field, call in cases.items():
        with pytest.raises(BadParam) as info:
            call()
        assert info.value.field == field
    with pytest.raises(BadParam) as info:
        dropout_backward(handle, d, None, desc, x, desc, y, None)      # a backward without the forward's mask
    assert info.value.field == "reserve_space"
    with pytest.raises(NotSupported):
        dropout_forward(handle, d, TensorDesc("FP32", (1, 3, 4, 5)), desc, x, desc, y, reserve)
    assert np.all(y.get() == 7.0) and np.all(reserve.get() == 9)
    assert tuple(states.get().view(np.uint32)) == (1, 0, 0, 0)


@pytest.mark.parametrize("flags", [["-F", "0", "-p", "0.3", "-l", "5", "-m", "1"], ["-F", "1", "-e", "1", "-t", "1"],
                                   ["-F", "2", "-p", "0.9"]], ids=["both", "forward-mask", "backward"])
def test_driver_dropout_verifies(capsys, flags):
    from miopy.cli import driver
    assert driver.main(["dropout", "-d", "2,3,5,7", *flags]) == 0
    assert "Verifies OK" in capsys.readouterr().out


def test_public_names():
    assert miopy.dropout_forward is dropout_forward
