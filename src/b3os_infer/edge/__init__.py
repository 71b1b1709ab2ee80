"""The edge: keys, authentication, request ids and timing, as pure ASGI middleware."""
