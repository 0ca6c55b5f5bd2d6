"""Math mode ("strict" / "tf32", cuDNN's math type): validation, precedence (descriptor > handle > env >
strict), problem keys, find and perf DB records keyed by it, and the tensor-core applicability guard."""
import numpy as np
import pytest

import miopy
from miopy import BadParam, ConvDesc, Direction, TensorDesc, db
from miopy.conv import api, registry
from miopy.conv.problem import ConvProblem, map_problem
from miopy.conv.solvers.naive import ConvDirectNaive
from miopy.find import find_problem, get_solutions

NAIVE = registry.get("ConvDirectNaive")
X, W = TensorDesc("FP32", (1, 2, 5, 5)), TensorDesc("FP32", (3, 2, 3, 3))


def _problem(conv_mode=None, handle_mode=None, dtype="FP32") -> ConvProblem:
    return ConvProblem.create(Direction.FORWARD, TensorDesc(dtype, X.dims), TensorDesc(dtype, W.dims),
                              ConvDesc(1, math_mode=conv_mode), math_mode=handle_mode)


class Timer:
    def __init__(self):
        self.calls = 0

    def __call__(self, handle, plan, buffers) -> float:
        self.calls += 1
        return 1.0


@pytest.mark.parametrize("bad", ["TF32", "fast", 1, ""])
def test_bad_math_modes_name_the_field(bad, monkeypatch, handle):
    with pytest.raises(BadParam) as exc:
        ConvDesc(math_mode=bad)
    assert exc.value.field == "math_mode"
    with pytest.raises(BadParam) as exc:
        miopy.Handle(device=handle.device, context=handle.context, math_mode=bad)
    assert exc.value.field == "math_mode"
    with pytest.raises(BadParam) as exc:
        handle.math_mode = bad
    assert exc.value.field == "math_mode" and handle.math_mode is None
    if isinstance(bad, str) and bad:
        monkeypatch.setenv("MIOPY_MATH_MODE", bad + "x")
        with pytest.raises(BadParam) as exc:
            _problem()
        assert exc.value.field == "MIOPY_MATH_MODE"


def test_precedence_descriptor_handle_env_strict(monkeypatch):
    assert _problem().math_mode == "strict"
    monkeypatch.setenv("MIOPY_MATH_MODE", "tf32")
    assert _problem().math_mode == "tf32"
    assert _problem(handle_mode="strict").math_mode == "strict"
    assert _problem(conv_mode="strict", handle_mode="tf32").math_mode == "strict"
    monkeypatch.setenv("MIOPY_MATH_MODE", "strict")
    assert _problem(handle_mode="tf32").math_mode == "tf32"
    assert _problem(conv_mode="tf32", handle_mode="strict").math_mode == "tf32"


def test_keys_carry_the_math_mode_and_fp16_ignores_tf32():
    strict, tf32 = _problem(), _problem("tf32")
    assert strict.key() == "2-5-5-3x3-3-5-5-1-1x1-1x1-1x1-0-NCHW-FP32-F"   # MIOpen's key, unchanged
    assert tf32.key() == strict.key() + "-tf32"
    assert tf32.with_direction(Direction.BACKWARD_DATA).math_mode == "tf32"
    half = _problem("tf32", dtype="FP16")
    assert half.math_mode == "strict" and half.key().endswith("-FP16-F")
    assert ConvDesc(1, math_mode="tf32") != ConvDesc(1) and ConvDesc(1, math_mode=None) == ConvDesc(1)
    transpose = map_problem(Direction.FORWARD, TensorDesc("FP32", (1, 3, 4, 4)), TensorDesc("FP32", (3, 2, 3, 3)),
                            ConvDesc(1, mode="transpose", math_mode="tf32")).problem
    assert transpose.math_mode == "tf32"


def test_tensor_core_solvers_need_tf32_for_fp32():
    class TensorCoreNaive(ConvDirectNaive):
        tensor_cores = True
        dtypes = frozenset(miopy.DataType)

    solver, dev = TensorCoreNaive(), None
    assert "math_mode='tf32'" in solver.not_applicable_reason(_problem(), dev)
    assert solver.not_applicable_reason(_problem("tf32"), dev) is None
    assert NAIVE.not_applicable_reason(_problem("tf32"), dev) is None   # strict solvers serve every mode
    assert solver.not_applicable_reason(_problem(dtype="FP16"), dev) is None   # fp16: no TF32 rounding


def test_find_records_of_one_mode_never_serve_the_other(fresh_dbs, handle, monkeypatch):
    monkeypatch.setattr(registry.REGISTRY, "ALL", (NAIVE,))
    strict, tf32 = _problem(), _problem("tf32")
    found = find_problem(handle, strict, timer=Timer(), mode="normal", store=True)
    assert found[0].math_mode == "strict" and found[0].as_dict()["math_mode"] == "strict"
    assert get_solutions(handle, strict).from_db
    served = get_solutions(handle, tf32)
    assert not served.from_db and served[0].math_mode == "tf32" and served[0].problem_key == tf32.key()
    timer = Timer()
    assert not find_problem(handle, tf32, timer=timer).from_db and timer.calls == 1
    rows = {key for _, key, *_ in db.find_db().store.query("SELECT device, problem FROM find")}
    assert rows == {strict.key()}   # an injected timer's find is not stored


def test_perf_records_are_keyed_by_math_mode(fresh_dbs, handle):
    from miopy.find import params_for
    strict, tf32 = _problem(), _problem("tf32")
    db.user_perf_db().put(handle.info.device_id, tf32.key(), NAIVE.id, {"WG": 128}, 1.0)
    assert params_for(NAIVE, tf32, handle) == ({"WG": 128}, "user perf DB")
    assert params_for(NAIVE, strict, handle)[1] == "default"


def test_handle_default_applies_to_calls_and_their_memo(handle):
    x_desc, w_desc, conv = X, W, ConvDesc(1)
    y_desc = conv.output_desc(x_desc, w_desc)
    rng = np.random.default_rng(0)
    x, w = (handle.to_device(rng.standard_normal(d.dims).astype(np.float32)) for d in (x_desc, w_desc))
    y = handle.empty(y_desc.dims)
    own = miopy.Handle(device=handle.device, context=handle.context)
    algo = miopy.ConvAlgoPerf(NAIVE.id, "naive", 1.0, 0, {"WG": 64})
    api.convolution_forward(own, x_desc, x, w_desc, w, conv, y_desc, y, algo=algo)
    own.math_mode = "tf32"
    api.convolution_forward(own, x_desc, x, w_desc, w, conv, y_desc, y, algo=algo)
    modes = sorted(c.plan.problem.math_mode for _, shape in own.plans.entries("conv.call") for c in shape.calls)
    assert modes == ["strict", "tf32"]


def test_descriptors_and_problems_pickle_with_their_math_mode():
    import pickle
    conv = ConvDesc((0, 1, 0, 1), 2, math_mode="tf32")
    assert pickle.loads(pickle.dumps(conv)) == conv and pickle.loads(pickle.dumps(conv)).math_mode == "tf32"
    problem = _problem("tf32")
    again = pickle.loads(pickle.dumps(problem))
    assert again.math_mode == "tf32" and again.key() == problem.key()
