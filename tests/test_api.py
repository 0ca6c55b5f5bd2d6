import numpy as np
import pyopencl.array as cl_array
import pytest

import miopy
from miopy import BadParam, ConvDesc, Direction, MiopyError, TensorDesc
from miopy.accuracy import max_error
from miopy.conv import reference
from miopy.find import find_problem
from tests.helpers import make_problem


def _setup(handle, n=2, c=4, h=7, w=7, k=6, r=3, pad=1, stride=1, groups=1):
    rng = np.random.default_rng(0)
    xd, wd = TensorDesc("FP32", (n, c, h, w)), TensorDesc("FP32", (k, c // groups, r, r))
    conv = ConvDesc(pad, stride, 1, groups)
    yd = conv.output_desc(xd, wd)
    x, wt = rng.standard_normal(xd.dims).astype(np.float32), rng.standard_normal(wd.dims).astype(np.float32)
    return xd, wd, yd, conv, x, wt


def test_find_ranks_by_the_injected_timer(handle):
    """The fake timer makes the registry's last solver fastest and the first slowest: find must rank the
    solvers in exactly the timer's order, whatever the registry's."""
    problem = make_problem(Direction.FORWARD, 1, 4, 6, 6, 4, 3, 3, 1)
    applicable = [s.id for s in problem.registry.solvers() if s.is_applicable(problem, handle.info)]
    fake = {sid: 1.0 + i for i, sid in enumerate(reversed(applicable))}   # naive (last) fastest
    calls = []

    def timer(h, prepared, buffers):
        calls.append(prepared.solution.solver_id)
        return fake[prepared.solution.solver_id]

    result = find_problem(handle, problem, timer=timer)
    assert sorted(calls) == sorted(applicable)
    assert [r.solver_id for r in result] == list(reversed(applicable))
    assert [r.time_ms for r in result] == sorted(fake.values())
    assert result[0].solver_id == "ConvDirectNaive" and len(applicable) > 2
    assert all(r.problem_key == problem.key() for r in result)


def test_forward_alpha_beta(handle):
    xd, wd, yd, conv, x, wt = _setup(handle)
    y0 = np.random.default_rng(1).standard_normal(yd.dims).astype(np.float32)
    xa, wa, ya = handle.to_device(x), handle.to_device(wt), handle.to_device(y0)
    miopy.convolution_forward(handle, xd, xa, wd, wa, conv, yd, ya, alpha=0.5, beta=2.0)
    expect = 0.5 * reference.conv_forward(x, wt, conv.pad, conv.stride) + 2.0 * y0
    assert max_error(ya.get(), expect) < 1e-4


def test_conv2d_functional_finds_once(handle):
    xd, wd, yd, conv, x, wt = _setup(handle, groups=2, stride=2)
    xa, wa = handle.to_device(x), handle.to_device(wt)
    y = miopy.conv2d(xa, wa, stride=2, padding=1, groups=2, handle=handle)
    assert max_error(y.get(), reference.conv_forward(x, wt, (1, 1), (2, 2), groups=2)) < 1e-4
    chosen = dict(handle.chosen)
    miopy.conv2d(xa, wa, stride=2, padding=1, groups=2, handle=handle)
    assert handle.chosen == chosen


def test_conv_transpose2d_matches_reference(handle):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = miopy.conv_transpose2d(handle.to_device(x), handle.to_device(w), stride=2, padding=1, output_padding=1,
                               groups=2, handle=handle)
    expect = reference.transpose_forward(x, w, (1, 1), (2, 2), (1, 1), 2, (1, 1))
    assert y.shape == expect.shape and max_error(y.get(), expect) < 1e-4


BAD_CALLS = {
    "small x buffer": lambda d: dict(x=cl_array.zeros(d["q"], 10, np.float32)),
    "wrong dtype": lambda d: dict(w=cl_array.zeros(d["q"], d["wd"].dims, np.float64)),
    "not a buffer": lambda d: dict(x=np.zeros(d["xd"].dims, np.float32)),
    "y desc mismatch": lambda d: dict(yd=TensorDesc("FP32", (2, 6, 5, 5))),
    "algo for other problem": lambda d: dict(algo=miopy.ConvAlgoPerf("ConvDirectNaive", "naive", 1.0, 0,
                                                                      {"WG": 64}, "other-key")),
    "unknown solver": lambda d: dict(algo=miopy.ConvAlgoPerf("NoSuchSolver", "x", 1.0, 0, {})),
    "tuning value off the grid": lambda d: dict(algo=miopy.ConvAlgoPerf("ConvDirectNaive", "naive", 1.0, 0,
                                                                         {"WG": 7})),
    "tuning values missing": lambda d: dict(algo=miopy.ConvAlgoPerf("ConvDirectNaive", "naive", 1.0, 0, {})),
    "alpha not a number": lambda d: dict(alpha="a"),
    "beta not finite": lambda d: dict(beta=float("nan")),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_raises_before_enqueue_and_leaves_output(handle, case):
    xd, wd, yd, conv, x, wt = _setup(handle)
    poison = np.full(yd.dims, 7.0, np.float32)
    args = dict(xd=xd, x=handle.to_device(x), wd=wd, w=handle.to_device(wt), yd=yd, y=handle.to_device(poison),
                algo=None, alpha=1.0, beta=0.0)
    args.update(BAD_CALLS[case](dict(args, q=handle.queue)))
    with pytest.raises(MiopyError):
        miopy.convolution_forward(handle, args["xd"], args["x"], args["wd"], args["w"], conv, args["yd"],
                                  args["y"], algo=args["algo"], alpha=args["alpha"], beta=args["beta"])
    handle.finish()
    assert np.array_equal(args["y"].get(), poison)


def test_bad_field_is_named(handle):
    xd, wd, yd, conv, x, wt = _setup(handle)
    small = cl_array.zeros(handle.queue, 3, np.float32)
    with pytest.raises(BadParam) as info:
        miopy.convolution_backward_data(handle, yd, small, wd, handle.to_device(wt), conv, xd,
                                        handle.to_device(x))
    assert info.value.field == "dy"


def test_workspace_too_small_is_rejected(handle):
    from miopy.conv import registry
    xd, wd, yd, conv, x, wt = _setup(handle)
    rec = miopy.find_convolution(handle, xd, wd, conv, solvers=[registry.get("ConvIm2colGemm")])[0]
    assert rec.workspace_bytes > 4
    poison = np.full(yd.dims, 7.0, np.float32)
    y = handle.to_device(poison)
    with pytest.raises(BadParam, match="workspace"):
        miopy.convolution_forward(handle, xd, handle.to_device(x), wd, handle.to_device(wt), conv, yd,
                                  y, algo=rec, workspace=cl_array.zeros(handle.queue, 1, np.float32))
    assert np.array_equal(y.get(), poison)


def test_log_cmd(handle, monkeypatch, capsys):
    monkeypatch.setenv("MIOPY_LOG_CMD", "1")
    xd, wd, yd, conv, x, wt = _setup(handle, k=5)   # a shape no other test memoises first (log is read at build)
    miopy.convolution_forward(handle, xd, handle.to_device(x), wd, handle.to_device(wt), conv, yd,
                              handle.empty(yd.dims))
    err = capsys.readouterr().err
    assert "miopy-driver conv -n 2 -c 4 -H 7 -W 7 -k 5 -y 3 -x 3 -p 1 -q 1" in err and "-F 1" in err


def test_registry_filters(monkeypatch):
    from miopy.conv import registry
    monkeypatch.setenv("MIOPY_FIND_ONLY_SOLVER", "ConvDirectNaive")
    assert [s.id for s in registry.solvers()] == ["ConvDirectNaive"]
    monkeypatch.delenv("MIOPY_FIND_ONLY_SOLVER")
    monkeypatch.setenv("MIOPY_DISABLE_SOLVERS", "ConvDirectNaive")
    assert "ConvDirectNaive" not in [s.id for s in registry.solvers()]
    monkeypatch.setenv("MIOPY_DISABLE_SOLVERS", "Bogus")
    with pytest.raises(BadParam, match="Bogus"):
        registry.solvers()


def test_call_after_find_compiles_nothing_and_touches_no_disk(handle, monkeypatch):
    xd, wd, yd, conv, x, wt = _setup(handle, c=6, k=4)
    xa, wa, ya = handle.to_device(x), handle.to_device(wt), handle.empty(yd.dims)
    records = miopy.find_convolution(handle, xd, wd, conv)

    def forbidden(*args, **kwargs):
        raise AssertionError("hot path touched the disk cache or compiled")

    monkeypatch.setattr(miopy.kernel_cache.KernelCache, "_load_or_build", forbidden)
    monkeypatch.setattr("builtins.open", forbidden)
    for rec in records:
        miopy.convolution_forward(handle, xd, xa, wd, wa, conv, yd, ya, algo=rec)
        handle.finish()
        assert max_error(ya.get(), reference.conv_forward(x, wt, conv.pad)) < 1e-4
