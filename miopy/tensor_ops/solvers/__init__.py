"""OpTensor solvers, one file each (see registry.py for their order)."""
