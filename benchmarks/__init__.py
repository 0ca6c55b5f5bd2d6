"""miopy's benchmarks: the published ones at this level, one-off experiments in benchmarks/experiments/, the harness
every one of them times and records with (benchmarks/harness.py), and the results pages built from their recorded
JSON (`python -m benchmarks.report` writes docs/results/). Run each from the repository root as
`python -m benchmarks.<name> --help`."""
