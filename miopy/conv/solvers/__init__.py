"""Convolution solvers, one file (or, for the tensor-core solver, one package) each; the registry in
miopy.conv.registry orders them."""
