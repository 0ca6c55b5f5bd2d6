"""Every public argument is checked: booleans are not integers, limits and counts are in range, the CLIs
say what is wrong in one line (naming the flag, or the line of a --file) and never print a traceback.

The warm-path cases and the driver commands come from every family of miopy.families: its WARM and DRIVER
tables (tests/families/<family>.py), one DRIVER entry for each command of its driver's COMMANDS."""
import argparse
import math

import numpy as np
import pytest

import miopy
from miopy import BadParam, ConvDesc, TensorDesc
from miopy.cli import driver as driver_cli
from miopy.cli import tune as tune_cli
from miopy.conv import registry
from miopy.families import FAMILIES
from miopy.find import find_problem
from miopy.tuning import Compiler, TuneOptions
from tests import families
from tests.families.common import Driver, WarmArrays
from tests.helpers import make_problem

X_DESC, W_DESC = TensorDesc("FP32", (1, 4, 6, 6)), TensorDesc("FP32", (4, 4, 3, 3))
SMALL = ["-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "4", "-y", "3", "-x", "3", "-p", "1", "-q", "1"]
NAIVE = miopy.ConvAlgoPerf("ConvDirectNaive", "naive", 1.0, 0, {"WG": 64})
TEST = "test_validation"
ARGS = ("bad arguments to the API: booleans for integers (dims, groups, budget, patience), strings, NaN and "
        "out-of-range values for workspace_limit, alpha/beta, activation scalars, tuning limits, compile jobs, "
        "find's solvers; a timer that returns no time", "BadParam naming the argument; nothing enqueued, the "
        "output unchanged; a solver whose timer returned no time skipped with that reason", TEST)
CLI = ("bad flags to miopy-driver and miopy-tune (negative iteration counts, time limits, jobs, budgets, seeds; "
       "NaN; a tensor over the device's largest allocation; a missing --file)",
       "one error line naming the flag (or OutOfResources), exit status 1 (argparse's usage error for a choice), "
       "no traceback, nothing run", TEST)
CLI_MORE = ("bad flags to miopy-run and to every primitive command of miopy-driver (negative or zero iteration "
            "counts, negative seeds and batches, a --json path in no directory; a tensor over the device's largest "
            "allocation); a miopy-tune --file with no driver line", "one error line naming the flag (or "
            "OutOfResources, refused before any host data is made), exit status 1, no traceback, nothing run",
            TEST)
FILE = ("miopy-tune --file with bad driver lines (a non-number, a zero size, an unknown choice, an unclosed "
        "quote) among good ones", "each bad line skipped with its file:line number and reason, the good line "
        "tuned, exit status 1; comments and other commands passed over", TEST)


@pytest.mark.parametrize("dims", [(True, 8, 10, 10), (1, 8, np.bool_(True), 10), (1.0, 8, 10, 10), ("1", 8, 10, 10)])
def test_descriptor_dims_must_be_integers(dims, report):
    with pytest.raises(BadParam) as info:
        TensorDesc("FP32", dims)
    assert info.value.field == "dims"
    report.tally(*ARGS)


@pytest.mark.parametrize("groups", [True, 2.0, "2"])
def test_groups_must_be_an_integer(groups, report):
    with pytest.raises(BadParam, match="groups"):
        ConvDesc(1, groups=groups)
    report.tally(*ARGS)


@pytest.mark.parametrize("limit", ["x", -1, True, 1.5, [4]])
def test_find_workspace_limit_is_checked(handle, limit, report):
    with pytest.raises(BadParam) as info:
        miopy.find_convolution(handle, X_DESC, W_DESC, ConvDesc(1), workspace_limit=limit)
    assert info.value.field == "workspace_limit"
    with pytest.raises(BadParam):
        miopy.get_solutions(handle, make_problem(1, 1, 4, 6, 6, 4, 3, 3, 1), workspace_limit=limit)
    report.tally(*ARGS, repetitions=2)


@pytest.mark.parametrize("solvers", ["ConvDirectNaive", ["ConvDirectNaive"], 3])
def test_find_solvers_must_be_solver_objects(handle, solvers, report):
    with pytest.raises(BadParam, match="solvers"):
        miopy.find_convolution(handle, X_DESC, W_DESC, ConvDesc(1), solvers=solvers)
    report.tally(*ARGS)


@pytest.mark.parametrize("value", [True, False, "1", 1e39, float("inf"), None, np.bool_(True)])
@pytest.mark.parametrize("field", ["alpha", "beta"])
def test_alpha_and_beta_are_finite_float32_numbers(handle, field, value, report):
    x = handle.to_device(np.ones(X_DESC.dims, np.float32))
    y = handle.to_device(np.full(X_DESC.dims, 7.0, np.float32))
    with pytest.raises(BadParam) as info:
        miopy.convolution_forward(handle, X_DESC, x, W_DESC, handle.to_device(np.ones(W_DESC.dims, np.float32)),
                                  ConvDesc(1), X_DESC, y, algo=NAIVE, **{field: value})
    assert info.value.field == field
    assert np.all(y.get() == 7.0)
    report.tally(*ARGS)


@pytest.mark.parametrize("value", [True, "0.5", float("nan"), 1e40])
def test_activation_scalars_are_checked(handle, value, report):
    x = handle.to_device(np.ones(X_DESC.dims, np.float32))
    with pytest.raises(BadParam, match="alpha"):
        miopy.activation_forward(handle, "leaky_relu", value, 0.0, 0.0, X_DESC, x, X_DESC, x)
    report.tally(*ARGS)


def test_a_timer_that_returns_no_time_skips_its_solver(handle, report):
    problem = make_problem(1, 1, 4, 6, 6, 4, 3, 3, 1)
    naive, direct = registry.get("ConvDirectNaive"), registry.get("ConvDirectLocal")
    answers = {"ConvDirectNaive": float("nan"), "ConvDirectLocal": 2.0}
    result = find_problem(handle, problem, timer=lambda h, plan, b: answers[plan.solver_id], solvers=[naive, direct])
    assert [r.solver_id for r in result] == ["ConvDirectLocal"]
    assert "the timer returned nan" in result.skipped["ConvDirectNaive"]
    report.tally(*ARGS)


@pytest.mark.parametrize("options, field", [
    (dict(budget=True), "budget"), (dict(budget=0), "budget"), (dict(budget=2.5), "budget"),
    (dict(time_limit_s=-1), "time_limit_s"), (dict(time_limit_s=math.nan), "time_limit_s"),
    (dict(time_limit_s=0), "time_limit_s"), (dict(time_limit_s="10"), "time_limit_s"),
    (dict(patience=0), "patience"), (dict(patience=False), "patience"), (dict(seed=-1), "seed"),
    (dict(cut=1.0), "cut"), (dict(cut="2"), "cut"), (dict(cut=math.inf), "cut"),
    (dict(time_budget_s=0), "time_budget_s"), (dict(time_budget_s=math.inf), "time_budget_s")])
def test_tune_options_are_checked(options, field, report):
    with pytest.raises(BadParam) as info:
        TuneOptions(**options)
    assert info.value.field == field
    report.tally(*ARGS)


@pytest.mark.parametrize("jobs", [-1, True, 1.5, "2"])
def test_compile_jobs_are_checked(handle, jobs, report):
    with pytest.raises(BadParam, match="jobs"):
        Compiler(handle, jobs)
    report.tally(*ARGS)


# -- the CLIs: one line, no traceback ---------------------------------------------------------------------
def _one_error_line(capsys, program: str, flag: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{program}: error: ") and flag in err[0], err
    return err[0]


@pytest.mark.parametrize("flags, flag", [(["-i", "-5"], "-i"), (["-i", "0"], "-i"), (["-s", "-1"], "-s"),
                                         (["-g", "3"], "-g"), (["-g", "0"], "-g")])
def test_driver_refuses_bad_counts(capsys, flags, flag, report):
    assert driver_cli.main(["conv", *SMALL, *flags]) == 1
    _one_error_line(capsys, "miopy-driver", flag)
    report.tally(*CLI)


@pytest.mark.parametrize("flags", [["-t", "2"], ["-V", "-1"]])
def test_driver_flags_of_two_values_are_checked_by_the_parser(capsys, flags, report):
    with pytest.raises(SystemExit) as info:
        driver_cli.main(["conv", *SMALL, *flags])
    assert info.value.code == 2 and "invalid choice" in capsys.readouterr().err
    report.tally(*CLI)


def test_driver_refuses_a_tensor_the_device_cannot_hold_in_one_line(capsys, handle, report):
    c = handle.info.max_alloc_bytes // 4 // (1024 * 1024) + 1   # x just over the largest allocation
    assert driver_cli.main(["conv", "-n", "1", "-c", str(c), "-H", "1024", "-W", "1024", "-k", "1", "-y", "1",
                            "-x", "1", "-F", "1"]) == 1
    line = _one_error_line(capsys, "miopy-driver", "OutOfResources")
    assert "largest allocation" in line
    report.tally(*CLI)


@pytest.mark.parametrize("flags, flag", [
    (["--time-limit", "-1"], "--time-limit"), (["--time-limit", "nan"], "--time-limit"),
    (["--jobs", "-1"], "--jobs"), (["--patience", "0"], "--patience"), (["--budget", "0"], "--budget"),
    (["--seed", "-3"], "--seed"), (["--file", "/nonexistent/commands.txt"], "--file"),
    (["--time-budget", "-1"], "--time-budget"), (["--time-budget", "nan"], "--time-budget"),
    (["--cut", "0.5"], "--cut"), (["--strategy", "fast", "--cut", "inf"], "--cut")])
def test_tune_refuses_bad_limits_before_any_work(capsys, flags, flag, report):
    assert tune_cli.main([*SMALL, *flags]) == 1
    _one_error_line(capsys, "miopy-tune", flag)
    report.tally(*CLI)


def test_tune_refuses_a_tensor_the_device_cannot_hold_in_one_line(capsys, handle, fresh_dbs, report):
    c = handle.info.max_alloc_bytes // 4 // (1024 * 1024) + 1
    assert tune_cli.main(["-n", "1", "-c", str(c), "-H", "1024", "-W", "1024", "-k", "1", "-y", "1", "-x", "1",
                          "-F", "1", "--jobs", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "OutOfResources" in err[0] and "largest allocation" in err[0], err
    report.tally(*CLI)


def test_tune_file_skips_bad_lines_with_their_numbers_and_tunes_the_rest(tmp_path, capsys, fresh_dbs, report):
    good = "miopy-driver conv " + " ".join(SMALL) + " -F 1"
    path = tmp_path / "commands.txt"
    path.write_text("\n".join(["# layers", good, "MIOpenDriver conv -n x -c 4", "something else",
                               "miopy-driver conv -n 0 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -F 1",
                               "MIOpenDriver conv -F 3", "miopy-driver conv -n 1 -H 'unclosed"]) + "\n")
    assert tune_cli.main(["--file", str(path), "-S", "ConvDirectNaive", "--budget", "1", "--jobs", "0"]) == 1
    captured = capsys.readouterr()
    skipped = [line for line in captured.err.splitlines() if line.startswith("miopy-tune: skipped")]
    assert [line.split(":")[2] for line in skipped] == ["3", "5", "6", "7"], skipped
    assert "invalid int value: 'x'" in skipped[0] and "N must be positive" in skipped[1]
    assert "invalid choice" in skipped[2] and "cannot split" in skipped[3]
    assert "4 line(s) of" in captured.err
    assert "1 problem(s)" in captured.out and "ConvDirectNaive" in captured.out
    report.tally(*FILE, repetitions=4)


def test_driver_lines_parse_driver_commands_and_pass_over_others():
    lines = ["./bin/MIOpenDriver conv -n 2 -c 8 -H 9 -W 9 -k 4 -y 3 -x 3 -t 1 -V 0",
             "MIOpenDriver conv -n 1 -c 4 -H 6 -W 6 -k 4 -y 1 -x 1 -F 2 -S 0", "# a comment",
             "miopy-driver conv -n 1 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -g 2 -m trans",
             "MIOpenDriver convfp16 -n 1", "something else", "miopy-driver conv -u two", "MIOpenDriver convbfp16 -n 1"]
    parsed, bad = tune_cli.driver_lines(lines)
    assert [(n, a.batchsize, a.in_channels, a.fil_h, a.forw, a.group_count, a.mode, a.dtype) for n, a in parsed] == [
        (1, 2, 8, 3, 0, 1, "conv", "FP32"), (2, 1, 4, 1, 2, 1, "conv", "FP32"), (4, 1, 4, 3, 0, 2, "trans", "FP32"),
        (5, 1, 3, 3, 0, 1, "conv", "FP16")]
    assert [n for n, _ in bad] == [7]


# -- booleans on warm paths, flags, the ONNX session, miopy-run and the primitive drivers ----------------------
WARM = ("a boolean where a number or a mode belongs, on a call whose int twin already ran (a memo key cannot tell "
        "True from 1); flags given as 0 / 1 / a string", "BadParam naming the argument, as on a cold call; "
        "nothing enqueued", TEST)


WARM_CASES = families.table("WARM")   # name -> common.Warm


@pytest.mark.parametrize("name", list(WARM_CASES))
def test_a_bool_is_refused_on_a_warm_path_too(handle, name, report):
    case, arrays = WARM_CASES[name], WarmArrays.on(handle)
    case.call(handle, arrays, case.good)   # builds the plan the bool's key would find
    handle.finish()
    with pytest.raises(BadParam):
        case.call(handle, arrays, case.bad)
    report.tally(*WARM)


ONNX = ("bad arguments to the ONNX InferenceSession (batch and input shapes as booleans, floats, strings; find "
        "as a string; feeds of a list, of another context, of the session's own input array)", "BadParam naming "
        "the argument; the session's own input array fed back runs (nothing to copy) and matches a NumPy feed",
        TEST)


def _onnx_model():
    pytest.importorskip("onnx")
    from tests.onnx_models import GraphMaker
    g = GraphMaker(3)
    out = g.node("Relu", [g.conv("x", 3, 4)])
    return g.model({"x": ["N", 3, 8, 8]}, [out])


@pytest.mark.parametrize("kwargs, field", [
    ({"batch": True}, "batch"), ({"batch": 1.5}, "batch"), ({"batch": "2"}, "batch"), ({"batch": 0}, "batch"),
    ({"input_shapes": {"x": (True, 3, 8, 8)}}, "input_shapes['x']"),
    ({"input_shapes": {"x": "abc"}}, "input_shapes['x']"), ({"input_shapes": {"x": (0, 3, 8, 8)}}, "input_shapes['x']"),
    ({"batch": 1, "find": "yes"}, "find")])
def test_onnx_session_arguments_are_checked(handle, kwargs, field, report):
    from miopy.onnx import InferenceSession
    with pytest.raises(BadParam) as info:
        InferenceSession(_onnx_model(), handle, **kwargs)
    assert info.value.field == field
    report.tally(*ONNX)


def test_onnx_feeds_are_checked_and_the_sessions_own_input_may_be_fed_back(handle, report):
    import pyopencl as cl
    import pyopencl.array as cl_array

    from miopy.onnx import InferenceSession
    session = InferenceSession(_onnx_model(), handle, batch=1)
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype(np.float32)
    expect = session.run(None, {"x": x})[0]
    for feed in (x.tolist(), cl_array.to_device(cl.CommandQueue(cl.Context(devices=[handle.device])), x)):
        with pytest.raises(BadParam, match="input_feed\\['x'\\]"):
            session.run(None, {"x": feed})
    session.input_array("x").set(x)
    got = session.run_device(None, {"x": session.input_array("x")})[0].get()
    assert np.array_equal(got, expect)
    report.tally(*ONNX, repetitions=3)


@pytest.mark.parametrize("flags, flag", [(["--iters", "-3"], "--iters"), (["--iters", "0"], "--iters"),
                                         (["--seed", "-1"], "--seed"), (["--batch", "0"], "--batch"),
                                         (["--json", "/nonexistent/dir/out.json"], "--json")])
def test_miopy_run_refuses_bad_flags_in_one_line(tmp_path, capsys, flags, flag, report):
    import onnx

    from miopy.cli import run as run_cli
    path = tmp_path / "m.onnx"
    onnx.save(_onnx_model(), str(path))
    assert run_cli.main([str(path), "--batch", "1", *flags]) == 1
    _one_error_line(capsys, "miopy-run", flag)
    report.tally(*CLI_MORE)


def _commands() -> list[str]:
    """Every family's miopy-driver commands (its driver module's COMMANDS), in the order of FAMILIES."""
    return [command for family in FAMILIES for command in getattr(family.module("driver"), "COMMANDS", ())]


def _driver_commands() -> dict[str, Driver]:
    """Every family's driver commands with their DRIVER entries (a command without one is left out here and
    fails test_every_family_brings_its_validation_data)."""
    drivers = families.table("DRIVER")
    return {command: drivers[command] for command in _commands() if command in drivers}


DRIVERS = _driver_commands()
PRIMITIVES = [command for command, driver in DRIVERS.items() if driver.iterations]   # those taking -i
SEEDS = [pytest.param(command, seed, id=f"{command}-{seed}") for command, driver in DRIVERS.items()
         for seed in driver.seeds]


def test_every_family_brings_its_validation_data():
    """Each family of miopy.families has tests/families/<name>.py with WARM and DRIVER, no name in two families,
    and a DRIVER entry for exactly the commands its driver module's COMMANDS names; those are the sub-commands
    miopy-driver has."""
    problems = families.missing(("WARM", "DRIVER"))
    problems += [f"{family.package}.driver has no COMMANDS (the sub-commands it adds)" for family in FAMILIES
                 if not hasattr(family.module("driver"), "COMMANDS")]
    drivers, commands = families.table("DRIVER"), _commands()
    problems += [f"miopy-driver {command} (COMMANDS of a family's driver) has no DRIVER entry in tests/families"
                 for command in commands if command not in drivers]
    problems += [f"DRIVER entry {command!r} is in no family's driver COMMANDS" for command in drivers
                 if command not in commands]
    assert not problems, "\n".join(problems)
    sub = next(a for a in driver_cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(commands), "a family's driver COMMANDS differ from the sub-commands it adds"


@pytest.mark.parametrize("command", PRIMITIVES)
@pytest.mark.parametrize("flags, flag", [(["-i", "-5"], "-i"), (["-i", "0"], "-i")])
def test_primitive_drivers_refuse_bad_counts(capsys, command, flags, flag, report):
    assert driver_cli.main([command, "-t", "1", *flags]) == 1
    _one_error_line(capsys, "miopy-driver", flag)
    report.tally(*CLI_MORE)


@pytest.mark.parametrize("command, seed", SEEDS)
def test_primitive_drivers_refuse_a_negative_seed(capsys, command, seed, report):
    assert driver_cli.main([command, seed, "-1"]) == 1
    _one_error_line(capsys, "miopy-driver", seed)
    report.tally(*CLI_MORE)


@pytest.mark.parametrize("command", list(DRIVERS))
def test_primitive_drivers_refuse_a_tensor_the_device_cannot_hold_before_making_data(capsys, handle, monkeypatch,
                                                                                    command, report):
    c = handle.info.max_alloc_bytes // 4 // (1024 * 1024) + 1   # x just over the largest allocation (FP32)
    monkeypatch.setattr(np.random, "default_rng", None)   # making host data for it would fail loudly
    assert driver_cli.main([command, *DRIVERS[command].big(c)]) == 1
    line = _one_error_line(capsys, "miopy-driver", "OutOfResources")
    assert "largest allocation" in line
    report.tally(*CLI_MORE)


def test_tune_file_without_a_driver_line_stops_with_one_line(tmp_path, capsys, report):
    path = tmp_path / "commands.txt"
    path.write_text("conv -n 1 -c 4 -H 6 -W 6 -k 4\n# a comment\n")
    assert tune_cli.main(["--file", str(path)]) == 1
    line = _one_error_line(capsys, "miopy-tune", "--file")
    assert "holds no driver line" in line
    report.tally(*CLI_MORE)


@pytest.mark.parametrize("kwargs, field", [({"device": "gpu"}, "device"), ({"device": 0}, "device"),
                                           ({"context": 3}, "context"), ({"math_mode": "x"}, "math_mode")])
def test_handle_arguments_are_checked(kwargs, field, report):
    with pytest.raises(BadParam) as info:
        miopy.Handle(**kwargs)
    assert info.value.field == field
    report.tally(*ARGS)
