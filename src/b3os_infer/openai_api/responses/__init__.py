"""The Responses API (``POST /responses``): wire in ``wire/response_*.py``, items into
the core (``decode``, ``tools``, ``sealing``), events out (``output``), the route."""

from .route import count_input_tokens, create_response

__all__ = ["count_input_tokens", "create_response"]
