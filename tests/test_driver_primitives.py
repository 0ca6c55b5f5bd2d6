"""miopy-driver's primitive sub-commands: MIOpenDriver's flags, forward and backward verified."""
from miopy.cli import driver


def test_pool_driver_verifies_every_mode(capsys):
    for mode in ("max", "avg", "avg_in"):
        args = ["pool", "-n", "2", "-c", "3", "-H", "9", "-W", "8", "-y", "3", "-x", "2", "-v", "2", "-u", "1",
                "-p", "1", "-q", "1", "-m", mode, "-i", "1", "--ceil", "1"]
        assert driver.main(args) == 0
        out = capsys.readouterr().out
        assert "Forward Pooling Verifies OK" in out and "Backward Pooling Verifies OK" in out


def test_pool_driver_same_padding_and_bad_input(capsys):
    assert driver.main(["pool", "-n", "1", "-c", "2", "-H", "14", "-W", "14", "-u", "2", "-v", "2", "-z", "same",
                        "-F", "1", "-i", "1"]) == 0
    out = capsys.readouterr().out
    assert "(0, 1, 0, 1)" in out and "output (1, 2, 7, 7)" in out and "Backward" not in out
    assert driver.main(["pool", "-n", "1", "-c", "1", "-H", "2", "-W", "2", "-y", "3"]) == 1
    assert "x_desc.h" in capsys.readouterr().err


def test_softmax_driver_verifies_every_algorithm_and_mode(capsys):
    for algorithm in ("0", "1", "2"):
        for mode in ("0", "1"):
            args = ["softmax", "-n", "2", "-c", "7", "-H", "3", "-W", "4", "-a", algorithm, "-m", mode, "-A", "1.5",
                    "-B", "0.5", "-i", "1"]
            assert driver.main(args) == 0
            out = capsys.readouterr().out
            assert "Forward Softmax Verifies OK" in out and "Backward Softmax Verifies OK" in out
    assert driver.main(["softmax", "-n", "1", "-c", "0"]) == 1
    assert "dims" in capsys.readouterr().err


def test_lrn_driver_verifies_both_modes(capsys):
    for mode, n in (("within", "3"), ("cross", "5"), ("cross", "4")):
        args = ["lrn", "-n", "2", "-c", "6", "-H", "5", "-W", "4", "-N", n, "-A", "0.5", "-m", mode, "-i", "1"]
        assert driver.main(args) == 0
        out = capsys.readouterr().out
        assert "Forward LRN Verifies OK" in out and "Backward LRN Verifies OK" in out
    assert driver.main(["lrn", "-n", "1", "-c", "2", "-H", "2", "-W", "2", "-K", "0"]) == 1
    assert "k:" in capsys.readouterr().err
