"""A request's server tools: ``web_search_*`` and ``web_fetch_*`` params into the core's
``ServerTool``s, beside the custom tools of the same ``tools`` list."""

from __future__ import annotations

from ..core import Location, ServerTool
from .validate import invalid
from .wire.server_tools import UserLocationParam, WebFetchToolParam, WebSearchToolParam
from .wire.tools import ToolParam

ServerToolParam = WebSearchToolParam | WebFetchToolParam


def split_tools(items: list[ToolParam | ServerToolParam]
                ) -> tuple[list[ToolParam], tuple[ServerTool, ...]]:
    """(custom tools, server tools); a name may appear once in the whole list."""
    custom: list[ToolParam] = []
    server: list[ServerTool] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.name in seen:
            raise invalid(f"tools[{i}].name", f"tool names must be unique; {item.name!r} "
                          "appears twice")
        seen.add(item.name)
        if isinstance(item, ToolParam):
            custom.append(item)
        else:
            server.append(server_tool_of(item, f"tools[{i}]"))
    return custom, tuple(server)


def server_tool_of(item: ServerToolParam, path: str) -> ServerTool:
    if item.allowed_domains and item.blocked_domains:
        raise invalid(f"{path}.blocked_domains", "cannot use both `allowed_domains` and "
                      "`blocked_domains`")
    allowed = tuple(item.allowed_domains or ())
    blocked = tuple(item.blocked_domains or ())
    if isinstance(item, WebSearchToolParam):
        return ServerTool("web_search", item.name, item.max_uses, allowed, blocked,
                          _location(item.user_location))
    return ServerTool("web_fetch", item.name, item.max_uses, allowed, blocked,
                      max_content_tokens=item.max_content_tokens)


def _location(param: UserLocationParam | None) -> Location | None:
    if param is None:
        return None
    return Location(param.city, param.region, param.country, param.timezone)
