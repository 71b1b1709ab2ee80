"""The Responses API (``POST /responses``): wire in ``wire/response_*.py``, items into
the core (``decode``, ``tools``, ``sealing``), events out (``output``), the route."""

from .route import create_response

__all__ = ["create_response"]
