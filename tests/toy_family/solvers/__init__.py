"""The toy family's solvers, one file each."""
