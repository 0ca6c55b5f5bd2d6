"""Activation solvers, one file each (the registry in miopy.activation.registry orders them)."""
