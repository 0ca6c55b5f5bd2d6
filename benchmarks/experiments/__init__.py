"""One-off experiments: probes, A/B runs and sweeps whose findings live in the engineering notes, not on the results
pages. Run from the repository root as `python -m benchmarks.experiments.<name>`; they use benchmarks.harness like
the published benchmarks, and may break as the library moves on (an experiment whose hooks are gone is deleted)."""
