"""Local response normalisation: MIOpen's cross-channel and within-channel LRN, forward (saving the scale)
and backward; PyTorch-style local_response_norm."""
from .api import lrn_backward, lrn_forward, lrn_workspace_size
from .descriptor import LRNDesc, LRNMode
from .functional import local_response_norm, local_response_norm_backward
from .problem import LRNProblem

__all__ = ["LRNDesc", "LRNMode", "LRNProblem", "local_response_norm", "local_response_norm_backward",
           "lrn_backward", "lrn_forward", "lrn_workspace_size"]
