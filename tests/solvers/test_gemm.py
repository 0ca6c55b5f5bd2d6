"""The shared GEMM kernel against NumPy, and what the conformance test does not reach in ConvGemm1x1 and
ConvIm2colGemm: stride-2 1x1 in every direction, split inner dimensions, image chunks, bit-identical
backward-weights, and find's workspace limit.
"""
import numpy as np
import pyopencl as cl
import pytest

from miopy.accuracy import max_error
from miopy.conv.problem import Direction
from miopy.conv.solvers import im2col_gemm
from miopy.conv.solvers.gemm_1x1 import ConvGemm1x1
from miopy.conv.solvers.im2col_gemm import ConvIm2colGemm
from miopy.find import find_problem
from miopy.plan import Plan
from miopy.solver import Solution
from miopy.tiled_gemm import GemmShape, IndexMap, gemm_launch, split_reduce_launch
from tests.helpers import check_solution, expected, make_problem, random_tensors, run_solution

SMALL = {"TILE_M": 16, "TILE_N": 16, "WPT_M": 2, "WPT_N": 2, "K_BLK": 4, "SPLIT_K": 1}
WIDE = {"TILE_M": 32, "TILE_N": 64, "WPT_M": 2, "WPT_N": 4, "K_BLK": 8, "SPLIT_K": 1}
TALL = {"TILE_M": 64, "TILE_N": 16, "WPT_M": 8, "WPT_N": 1, "K_BLK": 16, "SPLIT_K": 1}


def _view(flat: np.ndarray, batch: int, rows: int, cols: int, batch_stride: int, row_stride: int,
          col_stride: int, offset: int = 0) -> np.ndarray:
    """The batch x rows x cols matrices stored in flat at the given element strides."""
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], (batch, rows, cols),
                                           (batch_stride * item, row_stride * item, col_stride * item))


def _operands(shape: GemmShape, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat random A, B, C buffers large enough for shape (plus an offset of 3 elements each)."""
    a_rows = shape.k if shape.trans_a else shape.m
    b_rows = shape.n if shape.trans_b else shape.k
    sizes = (shape.batch * shape.a_batch + a_rows * shape.lda, shape.batch * shape.b_batch + b_rows * shape.ldb,
             shape.batch * shape.c_batch + shape.m * shape.ldc)
    return tuple(rng.standard_normal(size + 3).astype(np.float32) for size in sizes)


def _expected_gemm(shape: GemmShape, a, b, c, beta: float) -> np.ndarray:
    s = shape
    a_mat = (_view(a, s.batch, s.m, s.k, s.a_batch, 1, s.lda, 3) if s.trans_a
             else _view(a, s.batch, s.m, s.k, s.a_batch, s.lda, 1, 3))
    b_mat = (_view(b, s.batch, s.k, s.n, s.b_batch, 1, s.ldb, 3) if s.trans_b
             else _view(b, s.batch, s.k, s.n, s.b_batch, s.ldb, 1, 3))
    out = c.astype(np.float64)
    _view(out, s.batch, s.m, s.n, s.c_batch, s.ldc, 1, 3)[...] = (
        np.matmul(a_mat.astype(np.float64), b_mat) + beta * _view(c, s.batch, s.m, s.n, s.c_batch, s.ldc, 1, 3))
    return out


def _run_launches(handle, launches, host: dict[str, np.ndarray], out: str) -> np.ndarray:
    mf = cl.mem_flags
    bufs = {r: cl.Buffer(handle.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=v) for r, v in host.items()}
    Plan(handle, Solution("gemm-test", {}, tuple(launches)), ()).enqueue(bufs)
    result = np.empty_like(host[out])
    cl.enqueue_copy(handle.queue, result, bufs[out])
    return result


GEMM_CASES = [  # (shape, params, beta)
    (GemmShape(37, 45, 29, 29 + 3, 45 + 1, 45 + 2), SMALL, 0.0),
    (GemmShape(33, 70, 19, 33, 19, 71, trans_a=True, trans_b=True, batch=2, a_batch=19 * 33 + 5,
               b_batch=70 * 19 + 1, c_batch=33 * 71), WIDE, 0.0),
    (GemmShape(70, 17, 40, 70, 17, 17, trans_a=True, batch=3, a_batch=40 * 70, b_batch=40 * 17,
               c_batch=70 * 17), TALL, 1.0),
    (GemmShape(5, 3, 2, 2, 3, 3, trans_b=False, batch=1), SMALL, 0.5),
]


@pytest.mark.parametrize("shape,params,beta", GEMM_CASES, ids=["odd", "trans-ab-batch", "trans-a-beta", "tiny"])
def test_gemm_matches_numpy(handle, shape, params, beta):
    a, b, c = _operands(shape, np.random.default_rng(0))
    launch = gemm_launch(shape, params, "a", "b", "c", (3, 3, 3), beta)
    got = _run_launches(handle, [launch], {"a": a, "b": b, "c": c}, "c")
    want = _expected_gemm(shape, a, b, c, beta)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_split_gemm_sums_partials_in_fixed_order(handle):
    shape = GemmShape(9, 11, 300, 300, 300, 11, trans_b=True, batch=2, a_batch=9 * 300, b_batch=11 * 300,
                      c_batch=99)
    params = {**SMALL, "SPLIT_K": 4}
    a, b, c = _operands(shape, np.random.default_rng(1))
    partials = np.full(4 * shape.c_count, np.nan, np.float32)
    launches = [gemm_launch(shape, params, "a", "b", "p", (3, 3, 0)), split_reduce_launch(shape, 4, "p", "c")]
    host = {"a": a, "b": b, "c": c, "p": partials}
    got = _run_launches(handle, launches, host, "c")
    want = _expected_gemm(shape, a, b, np.zeros_like(c), 0.0)[3:3 + shape.c_count]
    np.testing.assert_allclose(got[:shape.c_count], want, rtol=1e-4, atol=1e-4)
    assert np.array_equal(got, _run_launches(handle, launches, host, "c"))


def test_index_map_reads_a_strided_plane(handle):
    """B's columns are every second element of two 6x7 planes: (image, p, q) -> image*50 + p*14 + q*2."""
    b_map = IndexMap.strided_plane(rows=3, cols=4, row_step=14, col_step=2, image_stride=50)
    shape = GemmShape(6, 24, 5, 5, 100, 24, b_map=b_map)
    a = np.random.default_rng(2).standard_normal(30).astype(np.float32)
    b = np.random.default_rng(3).standard_normal(500).astype(np.float32)
    got = _run_launches(handle, [gemm_launch(shape, SMALL, "a", "b", "c")],
                        {"a": a, "b": b, "c": np.full(6 * 24, np.nan, np.float32)}, "c")
    cols = [img * 50 + p * 14 + q * 2 for img in range(2) for p in range(3) for q in range(4)]
    b_mat = b.reshape(5, 100)[:, cols]
    np.testing.assert_allclose(got.reshape(6, 24), a.reshape(6, 5).astype(np.float64) @ b_mat, rtol=1e-4, atol=1e-4)


# -- solvers -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_1x1_stride_2_every_direction(handle, direction):
    problem = make_problem(direction, 2, 6, 9, 8, 4, 1, 1, stride=2, groups=2)
    solver = ConvGemm1x1()
    check_solution(handle, solver, problem, solver.default_params(problem, handle.info))


class _BiasEpilogue:
    """Stands in for a fusion epilogue: its defines and the role of its operand."""

    args = ("bias",)

    def defines(self) -> dict:
        return {"MIOPY_FUSED": 1, "FUSE_BIAS": 1}

    def key(self) -> str:
        return "bias"


@pytest.mark.parametrize("solver,filter_size", [(ConvIm2colGemm(), 3), (ConvGemm1x1(), 1)], ids=["im2col", "1x1"])
def test_forward_store_takes_the_epilogue(solver, filter_size):
    problem = make_problem(Direction.FORWARD, 2, 4, 6, 5, 6, filter_size, filter_size, groups=2)
    store = solver.solution(problem, SMALL, _BiasEpilogue()).launches[-1]
    defines = dict(store.spec.defines)
    assert store.spec.name == "gemm" and store.args[-1] == "bias"
    assert (defines["GEMM_EPILOGUE"], defines["FUSE_BIAS"]) == ("1", "1")
    assert defines["EPI_PLANE"] == str(problem.out_h * problem.out_w)


@pytest.fixture
def chunked(monkeypatch):
    """Column matrices capped at 6000 bytes, so small problems run over several image chunks."""
    monkeypatch.setattr(im2col_gemm, "COLUMN_CAP_BYTES", 6000)


@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_im2col_over_image_chunks(handle, chunked, direction):
    problem = make_problem(direction, 4, 4, 7, 7, 4, 3, 3, pad=1, stride=(1, 2), dilation=(2, 1), groups=2)
    assert im2col_gemm.images_per_chunk(problem) == 2
    solver = ConvIm2colGemm()
    split = {**SMALL, "SPLIT_K": 4} if direction is Direction.BACKWARD_WEIGHTS else SMALL
    check_solution(handle, solver, problem, split)


@pytest.mark.parametrize("solver,filter_size", [(ConvIm2colGemm(), 3), (ConvGemm1x1(), 1)], ids=["im2col", "1x1"])
def test_backward_weights_is_bit_identical_across_runs(handle, solver, filter_size):
    """Split along the inner dimension (and strided for 1x1): partials are still summed in a fixed order."""
    problem = make_problem(Direction.BACKWARD_WEIGHTS, 3, 8, 10, 10, 8, filter_size, filter_size,
                           pad=filter_size // 2, stride=2 if filter_size == 1 else 1)
    t = random_tensors(problem, seed=5)
    params = {**SMALL, "SPLIT_K": 4}
    assert solver.is_valid(problem, params, handle.info), solver.invalid_reason(problem, params, handle.info)
    solution = solver.solution(problem, params)
    first = run_solution(handle, solution, problem, t)
    assert max_error(first, expected(problem, t)) < 1e-4
    for _ in range(2):
        assert np.array_equal(first, run_solution(handle, solution, problem, t))


def test_find_skips_im2col_when_workspace_limit_is_too_small(handle):
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, pad=1)
    need = ConvIm2colGemm().workspace_bytes(problem)
    assert need > 0
    result = find_problem(handle, problem, workspace_limit=need - 4, timer=lambda *_: 1.0)
    assert "workspace" in result.skipped["ConvIm2colGemm"]
    assert all(record.solver_id != "ConvIm2colGemm" for record in result)
