"""Whether a request may run server tools (the key's ``server_tools`` scope), and the
service that runs them."""

from __future__ import annotations

from ...core import ChatRequest
from ...errors import PermissionDenied
from .tool_run import ServerTools

SCOPE = "server_tools"


def service_for(chat: ChatRequest, allowed: bool, service: ServerTools | None,
                param: str = "tools") -> ServerTools:
    """The server-tool service for this request (one without backends where the node has
    none: its tools then answer ``unavailable``); a request that offers server tools with a
    key that lacks the scope is refused (403 ``missing_scope``) before anything runs."""
    if chat.server_tools and not allowed:
        raise PermissionDenied(f"{param}: this key lacks the {SCOPE!r} scope, which "
                               "web_search and web_fetch tools need", code="missing_scope",
                               param=param)
    return service or ServerTools()
