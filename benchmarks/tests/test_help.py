"""Every benchmark runs as `python -m benchmarks.<name>` from the repository root: its --help prints usage and exits
0 (imports resolve in the package, nothing is measured or written)."""
from __future__ import annotations

import runpy
import sys

import pytest

from benchmarks import harness

PUBLISHED = sorted(p.stem for p in (harness.ROOT / "benchmarks").glob("*.py")
                   if p.stem not in ("__init__", "harness", "torch_conv"))
EXPERIMENTS = sorted(p.stem for p in (harness.ROOT / "benchmarks" / "experiments").glob("*.py")
                     if p.stem != "__init__")


@pytest.mark.parametrize("module", [f"benchmarks.{m}" for m in PUBLISHED]
                         + [f"benchmarks.experiments.{m}" for m in EXPERIMENTS])
def test_help_runs(module, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    monkeypatch.delitem(sys.modules, module, raising=False)   # run as __main__, as `python -m` does
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    assert exit_.value.code in (0, None)
    assert "usage:" in capsys.readouterr().out
