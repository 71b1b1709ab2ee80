"""The Responses API (``POST /responses``): wire in ``wire/response_*.py``, items into
the core (``decode``, ``tools``, ``sealing``), events out (``output``), the route, and
stored responses (``stored``, ``items``)."""

from .route import count_input_tokens, create_response
from .stored import cancel_response, delete_response, list_input_items, retrieve_response

__all__ = ["cancel_response", "count_input_tokens", "create_response", "delete_response",
           "list_input_items", "retrieve_response"]
