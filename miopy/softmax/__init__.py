"""Softmax and log-softmax: MIOpen's instance and channel modes, fast / accurate / log algorithms, forward
and backward; PyTorch-style functional ops over any dim."""
from .api import softmax_backward, softmax_forward
from .descriptor import SoftmaxAlgorithm, SoftmaxDesc, SoftmaxMode
from .functional import log_softmax, log_softmax_backward_data, softmax, softmax_backward_data
from .problem import SoftmaxProblem

# The names miopy re-exports (miopy.<name>); the rest stay miopy.softmax.<name>.
TOP_LEVEL = ("SoftmaxAlgorithm", "SoftmaxMode", "softmax_backward", "softmax_forward")
__all__ = ["SoftmaxAlgorithm", "SoftmaxDesc", "SoftmaxMode", "SoftmaxProblem", "log_softmax",
           "log_softmax_backward_data", "softmax", "softmax_backward", "softmax_backward_data", "softmax_forward"]
