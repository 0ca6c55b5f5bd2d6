"""LRN solvers, one file each (the registry in miopy.lrn.registry orders them)."""
