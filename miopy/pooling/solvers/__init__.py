"""Pooling solvers, one file each (the registry in miopy.pooling.registry orders them)."""
