import subprocess
import sys

from miopy.cli import driver

SMALL = ["conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "4", "-y", "3", "-x", "3", "-p", "1", "-q", "1",
         "-i", "1"]


def test_driver_all_directions_verify(capsys):
    assert driver.main(SMALL + ["-F", "0"]) == 0
    out = capsys.readouterr().out
    for name in ("Forward", "Backward Data", "Backward Weights"):
        assert f"{name} Convolution Verifies OK" in out
    assert out.splitlines()[-1].startswith("kernel cache: compiled=")


def test_driver_transpose_mode(capsys):
    assert driver.main(SMALL + ["-m", "trans", "-u", "2", "-v", "2", "-F", "0"]) == 0
    assert capsys.readouterr().out.count("Verifies OK") == 3


def test_driver_reports_bad_input_and_unknown_solver(capsys):
    assert driver.main(SMALL + ["-p", "-1"]) == 1
    assert "pad" in capsys.readouterr().err
    assert driver.main(SMALL + ["-S", "NoSuchSolver"]) == 1
    assert "NoSuchSolver" in capsys.readouterr().err


def test_driver_console_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "miopy.cli.driver", *SMALL, "-F", "1"], capture_output=True, text=True)
    assert out.returncode == 0 and "Forward Convolution Verifies OK" in out.stdout


def test_driver_forced_solver_runs_only_its_directions(capsys):
    assert driver.main(SMALL + ["-F", "0", "-S", "ConvWinograd3x3F2"]) == 0
    out = capsys.readouterr().out
    assert out.count("Verifies OK") == 2 and "Backward Weights Convolution: skipped" in out


def test_driver_convfp16_verifies_every_direction(capsys):
    """MIOpenDriver's FP16 sub-command: half data, verified against float64 of the stored inputs."""
    assert driver.main(["convfp16", *SMALL[1:], "-F", "0", "-m", "trans"]) == 0
    out = capsys.readouterr().out
    assert "FP16" in out.splitlines()[0] and out.count("Verifies OK") == 3


def test_tune_reads_convfp16_lines():
    from miopy.cli.tune import driver_lines
    parsed, bad = driver_lines(["MIOpenDriver convfp16 -n 2 -c 8 -k 8", "miopy-driver conv -n 1", "# other"])
    assert not bad and [flags.dtype for _, flags in parsed] == ["FP16", "FP32"]
