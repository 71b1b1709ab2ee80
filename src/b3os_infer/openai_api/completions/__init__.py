"""The legacy ``POST /completions``: raw text in, its continuation out.

``decode`` reads the request, ``encode`` writes text completions and their chunks,
``route`` ties them to the model.
"""

from .decode import LegacyRequest, decode_completion_request
from .route import completions

__all__ = ["LegacyRequest", "completions", "decode_completion_request"]
