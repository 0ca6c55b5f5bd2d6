"""Every public argument is checked: booleans are not integers, limits and counts are in range, the CLIs
say what is wrong in one line (naming the flag, or the line of a --file) and never print a traceback."""
import math

import numpy as np
import pytest

import miopy
from miopy import BadParam, ConvDesc, TensorDesc
from miopy.cli import driver as driver_cli
from miopy.cli import tune as tune_cli
from miopy.conv import registry
from miopy.find import find_problem
from miopy.tuning import Compiler, TuneOptions
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
    (dict(patience=0), "patience"), (dict(patience=False), "patience"), (dict(seed=-1), "seed")])
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


@pytest.mark.parametrize("flags, flag", [(["-i", "-5"], "-i"), (["-i", "0"], "-i"), (["-s", "-1"], "-s")])
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
    (["--seed", "-3"], "--seed"), (["--file", "/nonexistent/commands.txt"], "--file")])
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
