"""A toy family (y = scale * x^2, and its gradient) written on the family template, as docs/design.md's worked
example and tests/test_family_template.py's proof that adding a family touches only its package, its kernels,
its tests and one entry in miopy.families.FAMILIES."""
from .api import square_backward, square_forward
from .descriptor import SquareDesc
from .functional import square
from .problem import SquareProblem

TOP_LEVEL = ("SquareDesc", "square_backward", "square_forward")
__all__ = ["SquareDesc", "SquareProblem", "square", "square_backward", "square_forward"]
