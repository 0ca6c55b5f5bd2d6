"""Local response normalisation: MIOpen's cross-channel and within-channel LRN, forward (saving the scale)
and backward; PyTorch-style local_response_norm."""
from .api import lrn_backward, lrn_forward, lrn_workspace_size
from .descriptor import LRNDesc, LRNMode
from .functional import local_response_norm, local_response_norm_backward
from .problem import LRNProblem

# The names miopy re-exports (miopy.<name>); the rest stay miopy.lrn.<name>.
TOP_LEVEL = ("LRNDesc", "LRNMode", "local_response_norm", "lrn_backward", "lrn_forward", "lrn_workspace_size")
__all__ = ["LRNDesc", "LRNMode", "LRNProblem", "local_response_norm", "local_response_norm_backward",
           "lrn_backward", "lrn_forward", "lrn_workspace_size"]
