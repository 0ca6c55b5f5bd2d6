"""Fused solvers, one file each (the registry in miopy.fusion.registry orders them)."""
