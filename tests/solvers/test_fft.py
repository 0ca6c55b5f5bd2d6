"""ConvFFT: every plane size (8, 16, 32) in every direction with the padding at either edge, non-square and
ragged shapes, fp16, the plane-size rule at its bounds, the reasons, the GPU defaults, and the heuristic's
choice for AlexNet's 5x5 layers. Outputs and workspace are poisoned (tests.helpers.run_solution)."""
import pytest

from miopy.conv import heuristic
from miopy.conv.problem import Direction
from miopy.conv.solvers import fft
from miopy.conv.solvers.fft import ConvFFT, FFTLayout, plane_size
from tests.helpers import check_solution, make_problem
from tests.solvers.test_winograd import H100

SOLVER = ConvFFT()
DIRECTIONS = [Direction.FORWARD, Direction.BACKWARD_DATA, Direction.BACKWARD_WEIGHTS]
# (n, c, h, w, k, r, s, pad): each plane size, begin != end pads, 5x7 / 7x5 filters, counts off the 32-padding
CASES = [
    (1, 4, 4, 4, 3, 5, 5, 2),                 # L = 8
    (2, 5, 10, 11, 6, 5, 5, 0),               # L = 16, no padding
    (2, 5, 10, 11, 6, 5, 5, (4, 0, 1, 3)),    # pads 4 / 1 on H, 0 / 3 on W
    (3, 7, 13, 9, 9, 5, 7, 3),                # 5x7 filter, pad 3
    (2, 3, 9, 12, 4, 7, 5, (0, 2, 6, 1)),     # 7x5 filter, pads 0/6 and 2/1
    (2, 6, 27, 27, 10, 5, 5, 2),              # L = 32: AlexNet conv2's plane
    (35, 33, 6, 6, 34, 5, 5, 2),              # images and channels just past a multiple of 32
]


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_matches_reference(handle, direction, case):
    problem = make_problem(direction, *case)
    assert SOLVER.is_applicable(problem, handle.info), SOLVER.not_applicable_reason(problem, handle.info)
    check_solution(handle, SOLVER, problem, SOLVER.default_params(problem, handle.info))


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
@pytest.mark.parametrize("small_extent", [0, 8, 27], ids=lambda v: f"small{v}")
def test_direct_dft_and_staged_fft_agree(handle, monkeypatch, direction, small_extent):
    """Planes of at most SMALL_EXTENT taps a side take fft_forward_small's direct DFT, the others the staged
    FFT: with 0 no plane takes it (filters, read backwards in backward-data, go through the FFT), with 8 the
    filters do (the default; backward-weights transforms no filter), with 27 every plane does, shifted (dy in
    backward-weights) or not."""
    monkeypatch.setattr(fft, "SMALL_EXTENT", small_extent)
    problem = make_problem(direction, 3, 5, 11, 9, 6, 5, 7, (3, 1, 2, 4))
    layout = FFTLayout.of(problem)
    expected = {0: 0, 8: int(direction is not Direction.BACKWARD_WEIGHTS), 27: 2}[small_extent]   # dy, x: 11x9
    assert len(layout.small_grids) == expected
    params = SOLVER.default_params(problem, handle.info)
    kernels = [launch.spec.name for launch in SOLVER.solution(problem, params).launches]
    assert kernels[:2].count("fft_forward_small") == expected
    check_solution(handle, SOLVER, problem, params)


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
def test_fp16(handle, direction):
    problem = make_problem(direction, 2, 6, 12, 10, 5, 5, 5, 2, dtype="FP16")
    check_solution(handle, SOLVER, problem, SOLVER.default_params(problem, handle.info))


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
def test_error_far_below_the_bound_at_64_channels(handle, direction):
    """The FFT rounds like a sum of log2(L^2) terms: measured 5e-6 to 1.4e-5 here under PoCL (Winograd
    F(3x3,5x5) 3.9e-4 on the same shape in its own test); the bound is 2e-3."""
    problem = make_problem(direction, 2, 64, 20, 20, 64, 5, 5, 2)
    err = check_solution(handle, SOLVER, problem, SOLVER.default_params(problem, handle.info))
    assert err <= 1e-4, f"{direction.name}: error {err:.3g}"


def test_plane_size_at_its_bounds():
    """The smallest power of two on which no output reads a wrapped element that holds data."""
    def size(direction, h, pad):
        return plane_size(make_problem(direction, 1, 1, h, h, 1, 5, 5, pad))
    assert size(Direction.FORWARD, 30, 2) == 32 and size(Direction.FORWARD, 31, 2) == 0
    assert size(Direction.FORWARD, 28, 4) == 32 and size(Direction.FORWARD, 29, 4) == 0
    assert size(Direction.FORWARD, 12, 2) == 16 and size(Direction.FORWARD, 4, 2) == 8
    # backward-data reads dy (h - 4 + 2 pad) with padding 4 - pad
    assert size(Direction.BACKWARD_DATA, 30, 2) == 32 and size(Direction.BACKWARD_DATA, 31, 2) == 0
    assert size(Direction.BACKWARD_WEIGHTS, 27, 2) == 32


@pytest.mark.parametrize("shape,reason", [
    ((3, 3, 1, 1, 1, 1, 8), "under 5 taps"),
    ((5, 5, 2, 2, 1, 1, 8), "stride"),
    ((5, 5, 2, 1, 2, 1, 8), "dilation"),
    ((5, 5, 2, 1, 1, 2, 8), "grouped"),
    ((5, 5, 2, 1, 1, 1, 40), "exceed 32x32"),
])
def test_not_applicable_with_reason(handle, shape, reason):
    r, s, pad, stride, dilation, groups, hw = shape
    problem = make_problem(Direction.FORWARD, 1, 4, hw, hw, 4, r, s, pad, stride, dilation, groups)
    assert reason in SOLVER.not_applicable_reason(problem, handle.info)


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
def test_gpu_defaults_valid_on_alexnet_and_googlenet(direction):
    for n, c, hw, k in ((128, 64, 27, 192), (128, 96, 27, 256), (128, 48, 7, 128), (16, 3, 13, 5)):
        problem = make_problem(direction, n, c, hw, hw, k, 5, 5, 2)
        params = SOLVER.default_params(problem, H100)
        assert SOLVER.is_valid(problem, params, H100), SOLVER.invalid_reason(problem, params, H100)


def test_tilings_must_divide_the_padded_gemm(handle):
    problem = make_problem(Direction.BACKWARD_DATA, 4, 96, 27, 27, 64, 5, 5, 2)   # output rows: 96 channels
    m, n, k = FFTLayout.of(problem).gemm
    assert (m, n, k) == (96, 32, 64)    # complex: 96 input channels out, 4 images padded to 32, 64 reduced
    bad = {"TILE_M": 64, "TILE_N": 32, "WORK_M": 4, "WORK_N": 4, "K_BLK": 16}
    assert "TILE_M=64 does not divide the GEMM's padded 96" in SOLVER.invalid_reason(problem, bad, handle.info)


def test_heuristic_puts_fft_first_on_32_point_planes(handle):
    for direction in DIRECTIONS:
        alexnet = make_problem(direction, 4, 64, 27, 27, 192, 5, 5, 2)
        order, rule = heuristic.preference(alexnet)
        assert order[0] == "fft" and "FFT first" in rule
    googlenet = make_problem(Direction.FORWARD, 4, 48, 7, 7, 128, 5, 5, 2)   # 16-point planes: Winograd
    assert heuristic.preference(googlenet)[0][0] == "winograd"
