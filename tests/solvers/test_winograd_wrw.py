"""Winograd backward-weights (F(2x2,3x3), F(4x4,3x3), F(2x2,5x5), F(3x3,5x5)): pads and edge tiles, SPLIT
against one partial, determinism, FP16, applicability and invalid points with reasons, GPU defaults that
fill the device, a short tuning run and warm plans that compile nothing."""
import numpy as np
import pytest

import miopy
from miopy import ConvDesc, Direction, TensorDesc
from miopy.accuracy import max_error
from miopy.conv import heuristic, reference, registry
from miopy.conv.problem import ConvProblem
from miopy.conv.solvers import winograd
from miopy.conv.solvers.winograd import WinogradLayout
from miopy.conv.solvers.winograd_wrw import (
    ConvWinograd3x3F2WrW,
    ConvWinograd3x3F4WrW,
    ConvWinograd5x5F2WrW,
    ConvWinograd5x5F3WrW,
)
from miopy.find import AlgoPerf
from miopy.kernel_cache import KernelCache
from miopy.tuning import TuneOptions, tune_solver
from tests.helpers import check_solution, make_problem, random_tensors, run_solution, with_dtype
from tests.solvers.test_winograd import H100

BWD = Direction.BACKWARD_WEIGHTS
SOLVERS = [ConvWinograd3x3F2WrW(), ConvWinograd3x3F4WrW(), ConvWinograd5x5F2WrW(), ConvWinograd5x5F3WrW()]
IDS = [s.id for s in SOLVERS]


def _shape(solver, pad_index: int, extra: int = 0):
    """N=2, odd sizes whose output leaves partial tiles at the bottom and right edges; pad 0, 1 or r-1."""
    r = solver.filter_size
    pad = (0, 1, r - 1)[pad_index]
    return make_problem(BWD, 2, 5, 9 + extra, 11 + pad, 6, r, r, pad)


@pytest.mark.parametrize("solver", SOLVERS, ids=IDS)
@pytest.mark.parametrize("pad_index", [0, 1, 2], ids=["pad0", "pad1", "pad-max"])
def test_pads_and_partial_edge_tiles(handle, solver, pad_index):
    problem = _shape(solver, pad_index)
    assert solver.is_applicable(problem, handle.info), solver.not_applicable_reason(problem, handle.info)
    check_solution(handle, solver, problem, solver.default_params(problem, handle.info))


@pytest.mark.parametrize("solver", SOLVERS, ids=IDS)
def test_split_partials_match_one_sum_and_repeat_bit_for_bit(handle, solver):
    """Enough tiles for several partial sums (the last chunk short): SPLIT 1, 2 and the largest allowed all
    match float64, and a split run gives the same bits twice (fixed-order second pass, no atomics)."""
    problem = make_problem(BWD, 3, 4, 37, 35, 5, solver.filter_size, solver.filter_size, 1)
    plan = WinogradLayout.of(problem, solver.tile)
    assert plan.max_split >= 2 and plan.tiles % plan.split_chunk(plan.max_split, 8) != 0
    t = random_tensors(problem, seed=3)
    base = solver.default_params(problem, handle.info)
    for split in sorted({1, 2, plan.max_split}):
        params = {**base, "SPLIT": split}
        assert solver.is_valid(problem, params, handle.info), solver.invalid_reason(problem, params, handle.info)
        got = run_solution(handle, solver.solution(problem, params), problem, t)
        err = max_error(got, reference.conv_backward_weights(t["x"], t["y"], problem.w.dims, pad=(1, 1)))
        assert err <= reference.tolerance(solver, problem), f"SPLIT={split}: error {err:.3g}"
        if split > 1:
            again = run_solution(handle, solver.solution(problem, params), problem, t)
            assert got.tobytes() == again.tobytes()


@pytest.mark.parametrize("solver", SOLVERS[:3:2], ids=IDS[:3:2])
def test_fp16_storage(handle, solver):
    problem = with_dtype(_shape(solver, 1, extra=2), "FP16")
    check_solution(handle, solver, problem, solver.default_params(problem, handle.info))


def test_many_channels_and_sixty_four_wide_blocks(handle):
    """Channels over one 32-block and 64-wide GEMM blocks: the padded channel counts (96 -> 128, 40 -> 64)
    take the larger tilings."""
    solver = SOLVERS[0]
    problem = make_problem(BWD, 1, 40, 6, 7, 96, 3, 3, 1)
    assert WinogradLayout.of(problem, 2).padded[:2] == (64, 128)
    params = {"TILE_M": 64, "TILE_N": 64, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16, "SPLIT": 1}
    assert solver.is_valid(problem, params, handle.info), solver.invalid_reason(problem, params, handle.info)
    check_solution(handle, solver, problem, params)


@pytest.mark.parametrize("shape,reason", [
    ((1, 4, 8, 8, 4, 3, 3, 1, 2), "stride"),
    ((1, 4, 8, 8, 4, 3, 3, 1, 1, 2), "dilation"),
    ((1, 4, 8, 8, 4, 3, 3, 1, 1, 1, 2), "grouped"),
    ((1, 4, 8, 8, 4, 5, 5, 1), "filter is 5x5"),
    ((1, 4, 8, 8, 4, 3, 3, 3), "padding"),
])
def test_not_applicable_with_reason(handle, shape, reason):
    assert reason in SOLVERS[0].not_applicable_reason(make_problem(BWD, *shape), handle.info)


def test_other_directions_not_implemented(handle):
    for direction in (Direction.FORWARD, Direction.BACKWARD_DATA):
        assert "not implemented" in SOLVERS[1].not_applicable_reason(make_problem(direction, 1, 4, 8, 8, 4, 3, 3, 1),
                                                                     handle.info)


def test_invalid_points_have_reasons(handle):
    solver, problem = SOLVERS[0], make_problem(BWD, 1, 3, 8, 8, 4, 3, 3, 1)   # 16 tiles, 32 padded channels
    base = solver.default_params(problem, handle.info)
    assert "SPLIT=2 > 1" in solver.invalid_reason(problem, {**base, "SPLIT": 2}, handle.info)
    wide = {**base, "TILE_M": 64, "TILE_N": 64}
    assert "do not divide the padded channels" in solver.invalid_reason(problem, wide, handle.info)
    assert "not in grid" in solver.invalid_reason(problem, {**base, "SPLIT": 3}, handle.info)


@pytest.mark.parametrize("solver", SOLVERS, ids=IDS)
def test_gpu_defaults_fill_the_h100(solver):
    """On GoogLeNet's 5x5, AlexNet conv2-5 and VGG-16 at N=128: applicable where the accuracy rule allows
    (VGG conv1-2 in passes over the tiles; not F(4x4,3x3) on the 224x224 and 112x112 layers, 6.4M and 1.6M
    terms per weight, nor the 5x5 ones on AlexNet conv2's 93k), valid, a workspace of one pass's transformed
    tiles and the partials, and the GEMM's work-groups (K x C x ALPHA^2 blocks times SPLIT) fill the 132
    compute units several times over wherever the split cap allows."""
    from miopy.conv.solvers.winograd_wrw import max_reduction
    layers = [(48, 7, 128, 5, 2), (64, 27, 192, 5, 2), (192, 13, 384, 3, 1), (384, 13, 256, 3, 1),
              (256, 13, 256, 3, 1), (64, 224, 64, 3, 1), (64, 112, 128, 3, 1), (256, 56, 256, 3, 1),
              (512, 28, 512, 3, 1), (512, 14, 512, 3, 1)]
    checked = 0
    for c, hw, k, r, pad in layers:
        problem = make_problem(BWD, 128, c, hw, hw, k, r, r, pad)
        reason = solver.not_applicable_reason(problem, H100)
        if reason is not None:   # the other filter size, or a reduction too long for the solver's accuracy
            too_long = problem.reduction_length() > max_reduction(solver.rounding_units)
            assert r != solver.filter_size or too_long, reason
            continue
        params = solver.default_params(problem, H100)
        assert solver.is_valid(problem, params, H100), solver.invalid_reason(problem, params, H100)
        plan = WinogradLayout.of(problem, solver.tile)
        groups = plan.alpha ** 2 * -(-k // params["TILE_M"]) * -(-c // params["TILE_N"]) * params["SPLIT"]
        assert groups >= 2 * 132 or params["SPLIT"] == plan.max_split, (c, hw, k, params)
        assert solver.workspace_bytes(problem) <= winograd.PASS_BYTES + max(64 << 20, winograd.PASS_BYTES)
        checked += 1
    assert checked >= 1


def test_tuner_runs_a_few_points(fresh_dbs, handle):
    solver, problem = SOLVERS[0], make_problem(BWD, 2, 4, 24, 23, 6, 3, 3, 1)
    result = tune_solver(handle, problem, solver, strategy_name="random", options=TuneOptions(budget=3, seed=1))
    assert result.measured >= 2 and result.best_params is not None
    assert solver.is_valid(problem, result.best_params, handle.info)


def test_plan_warm_calls_compile_nothing(handle, monkeypatch):
    """convolution_plan with a record naming the F(2x2,3x3) weight gradient, SPLIT 2: the answer, then warm
    runs that never reach the kernel cache and give the same bits."""
    solver = SOLVERS[0]
    xd, wd, conv = TensorDesc("FP32", (2, 4, 21, 23)), TensorDesc("FP32", (6, 4, 3, 3)), ConvDesc(1)
    yd = conv.output_desc(xd, wd)
    problem = ConvProblem.create(BWD, xd, wd, conv)
    params = {**solver.default_params(problem, handle.info), "SPLIT": 2}
    record = AlgoPerf(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(problem), params, problem.key())
    plan = miopy.convolution_plan(handle, BWD, xd, wd, conv, yd, algo=record)
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal(xd.dims).astype(np.float32), rng.standard_normal(yd.dims).astype(np.float32)
    dev_x, dev_dy = handle.to_device(x), handle.to_device(dy)
    dev_dw = handle.to_device(np.full(wd.dims, np.nan, np.float32))
    plan.run(x=dev_x, dw=dev_dw, dy=dev_dy)
    first = dev_dw.get()
    want = reference.conv_backward_weights(x, dy, wd.dims, pad=(1, 1))
    assert max_error(first, want) <= reference.tolerance(solver, problem)

    def forbidden(*args, **kwargs):
        raise AssertionError("a warm plan run reached the kernel cache")
    monkeypatch.setattr(KernelCache, "kernel", forbidden)
    for _ in range(2):
        plan.run(x=dev_x, dw=dev_dw, dy=dev_dy)
    assert dev_dw.get().tobytes() == first.tobytes()


def test_registered_and_ranked_by_registry():
    ids = [s.id for s in registry.ALL]
    assert all(s in ids for s in IDS)


def test_heuristic_ranks_the_f2_weight_gradient_first_on_3x3_and_direct_on_5x5(handle):
    """Off the CPU's own solvers: 3x3 backward-weights leads with F(2x2,3x3) (the accurate one, before F4);
    5x5 backward-weights with direct (the 5x5 weight gradients round 4-10x more), then Winograd."""
    three = make_problem(BWD, 2, 32, 12, 12, 32, 3, 3, 1)
    applicable = [s for s in registry.ALL if s.is_applicable(three, handle.info) and s.device_class is None]
    assert [s.id for s in heuristic.rank(three, applicable)[:2]] == ["ConvWinograd3x3F2WrW", "ConvWinograd3x3F4WrW"]
    five = make_problem(BWD, 2, 32, 12, 12, 32, 5, 5, 2)
    order, rule = heuristic.preference(five)
    assert order[:2] == ("direct", "winograd") and "backward-weights" in rule
    assert heuristic.preference(make_problem(Direction.FORWARD, 2, 32, 12, 12, 32, 5, 5, 2))[0][0] == "winograd"


@pytest.mark.parametrize("solver", SOLVERS[:2], ids=IDS[:2])
def test_passes_over_the_tiles_add_into_the_partials(handle, monkeypatch, solver):
    """With PASS_BYTES small the tiles are transformed and multiplied in passes of 256 (the last one short)
    whose GEMMs add into the same partial dU: still the float64 answer, with SPLIT 1 and 2, and a workspace
    sized for one pass."""
    problem = make_problem(BWD, 3, 4, 37, 35, 5, 3, 3, 1)
    whole = solver.workspace_bytes(problem)
    per_tile = (solver.tile + 2) ** 2 * (32 + 32) * 4   # V^T and M^T floats of one tile (channels padded to 32)
    monkeypatch.setattr(winograd, "PASS_BYTES", 256 * per_tile)
    plan = WinogradLayout.of(problem, solver.tile)
    assert plan.pass_tiles == 256 and plan.passes >= 2 and plan.tiles % 256 != 0 and plan.max_split == 2
    assert solver.workspace_bytes(problem) < whole
    for split in (1, 2):
        params = {**solver.default_params(problem, handle.info), "SPLIT": split}
        assert solver.is_valid(problem, params, handle.info), solver.invalid_reason(problem, params, handle.info)
        assert len(solver.solution(problem, params).launches) == 3 * plan.passes + 1
        check_solution(handle, solver, problem, params)


def test_strided_input_and_filter_gradient(handle):
    """x with padded rows (read through its strides) and dw written through a filter descriptor whose taps
    are not packed: every tap lands where the strides say, the gaps stay untouched."""
    n, c, h, w, k = 2, 3, 7, 9, 4
    x_desc = TensorDesc("FP32", (n, c, h, w), strides=(c * h * (w + 3), h * (w + 3), w + 3, 1))
    w_desc = TensorDesc("FP32", (k, c, 3, 3), strides=(c * 12, 12, 4, 1))
    problem = ConvProblem.create(BWD, x_desc, w_desc, ConvDesc(1))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_desc.element_span).astype(np.float32)
    dy = rng.standard_normal(problem.y.dims).astype(np.float32)
    t = {"x": x, "y": dy, "w": np.zeros(w_desc.element_span, np.float32)}
    solver = SOLVERS[0]
    got = run_solution(handle, solver.solution(problem, solver.default_params(problem, handle.info)), problem, t)
    view = lambda flat, d: np.lib.stride_tricks.as_strided(flat, d.dims, [4 * s for s in d.strides])
    want = reference.conv_backward_weights(view(x, x_desc), dy, w_desc.dims, pad=(1, 1))
    assert max_error(view(got, w_desc), want) <= reference.tolerance(solver, problem)
    gaps = np.ones(w_desc.element_span, bool)
    gaps[view(np.arange(w_desc.element_span, dtype=np.float32), w_desc).ravel().astype(int)] = False
    assert np.isnan(got[gaps]).all()   # run_solution poisons the whole output span


@pytest.mark.parametrize("solver", SOLVERS, ids=IDS)
def test_refused_where_predicted_error_passes_1e_3(solver):
    """The accuracy rule: applicable up to max_reduction(rounding_units) terms per weight, refused beyond
    with the predicted error in the reason (issue 16's 1e-3 target on reductions of millions of terms)."""
    from miopy.conv.solvers.winograd_wrw import max_reduction
    r = solver.filter_size
    limit = max_reduction(solver.rounding_units)
    side = int((limit / 2) ** 0.5)   # N=2: the largest square image within the limit, then one just over it
    fits = make_problem(BWD, 2, 4, side, side, 8, r, r, r // 2)
    over = make_problem(BWD, 2, 4, side + 2, side + 2, 8, r, r, r // 2)
    assert fits.reduction_length() <= limit < over.reduction_length()
    assert solver.not_applicable_reason(fits, H100) is None
    assert "predicted fp32 error" in solver.not_applicable_reason(over, H100)
