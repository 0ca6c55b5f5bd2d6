"""Softmax solvers, one file each (the registry in miopy.softmax.registry orders them)."""
