"""Responses tools into the core's: functions as they are, custom tools as a function
of one string (``input``), namespaces flattened to ``<namespace>.<name>``. ``ToolNames``
remembers which flat name is which, to spell the model's calls back."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core import JsonObject, Location, ServerTool, Tool, ToolChoice
from ...errors import UnsupportedParameter
from ..decode import invalid
from ..wire.response_tools import (
    CustomToolParam,
    FunctionToolParam,
    NamespaceToolParam,
    ToolChoiceAllowedParam,
    ToolChoiceParam,
    ToolParam,
    WebSearchLocation,
    WebSearchToolParam,
)

NO_ARGUMENTS: JsonObject = {"type": "object", "properties": {}}
CUSTOM_INPUT: JsonObject = {
    "type": "object", "required": ["input"], "additionalProperties": False,
    "properties": {"input": {"type": "string", "description": "the tool's whole input, "
                             "as free-form text"}}}


@dataclass(frozen=True)
class ToolName:
    name: str
    namespace: str | None
    custom: bool


@dataclass
class ToolNames:
    """Flat name (as the model sees it) -> the tool as the client declared it."""

    by_flat: dict[str, ToolName] = field(default_factory=dict)

    def flat(self, name: str, namespace: str | None) -> str:
        return f"{namespace}.{name}" if namespace else name

    def of(self, flat: str) -> ToolName:
        return self.by_flat.get(flat, ToolName(flat, None, custom=False))


def _tool(item: FunctionToolParam | CustomToolParam, flat: str,
          namespace: NamespaceToolParam | None) -> Tool:
    described = [d for d in (namespace.description if namespace else None,
                             item.description) if d]
    description = " ".join(described) or None
    if isinstance(item, CustomToolParam):
        return Tool(flat, description, dict(CUSTOM_INPUT))
    return Tool(flat, description, dict(item.parameters or NO_ARGUMENTS))


def tools_of(items: list[ToolParam]) -> tuple[list[Tool], ToolNames]:
    tools: list[Tool] = []
    names = ToolNames()
    for i, item in enumerate(items):
        members: list[tuple[FunctionToolParam | CustomToolParam, NamespaceToolParam | None,
                            str]]
        if isinstance(item, NamespaceToolParam):
            members = [(m, item, f"tools[{i}].tools[{j}].name")
                       for j, m in enumerate(item.tools)]
        elif isinstance(item, FunctionToolParam | CustomToolParam):
            members = [(item, None, f"tools[{i}].name")]
        else:
            continue   # web search: left out of the prompt
        for member, namespace, path in members:
            flat = names.flat(member.name, namespace.name if namespace else None)
            if flat in names.by_flat:
                raise invalid(path, f"duplicate tool name {flat!r}")
            names.by_flat[flat] = ToolName(member.name, namespace.name if namespace else None,
                                           isinstance(member, CustomToolParam))
            tools.append(_tool(member, flat, namespace))
    return tools, names


_WEB_SEARCH = "web_search"


def web_search_of(items: list[ToolParam]) -> ServerTool | None:
    """The request's web search, as the server tool that runs it (the last one declared)."""
    found = [item for item in items if isinstance(item, WebSearchToolParam)]
    if not found:
        return None
    item = found[-1]
    allowed = tuple(item.filters.allowed_domains or ()) if item.filters else ()
    return ServerTool("web_search", _WEB_SEARCH, allowed_domains=allowed,
                      location=_location(item.user_location))


def _location(given: WebSearchLocation | None) -> Location | None:
    if given is None:
        return None
    return Location(given.city, given.region, given.country, given.timezone)


def allowed_tools(choice: ToolChoiceAllowedParam, tools: list[Tool],
                  names: ToolNames) -> list[Tool]:
    """The tools an ``allowed_tools`` choice lists, in the order of ``tools``; a listed web
    search keeps the search offered where it is."""
    listed: set[str] = set()
    for i, entry in enumerate(choice.tools):
        kind, path = entry.get("type"), f"tool_choice.tools[{i}]"
        if isinstance(kind, str) and kind.startswith(_WEB_SEARCH):
            listed.add(_WEB_SEARCH)
            continue
        if kind not in ("function", "custom"):
            raise UnsupportedParameter(f"{path}.type: only function and custom tools can "
                                       "be allowed here", param=f"{path}.type")
        name, namespace = entry.get("name"), entry.get("namespace")
        flat = names.flat(str(name), namespace if isinstance(namespace, str) else None)
        if flat not in names.by_flat or names.by_flat[flat].custom != (kind == "custom"):
            raise invalid(f"{path}.name", f"no {kind} tool named {flat!r} in `tools`")
        listed.add(flat)
    return [tool for tool in tools if tool.name in listed]


def tool_choice_of(choice: ToolChoiceParam | None, tools: list[Tool],
                   parallel: bool) -> ToolChoice:
    """``tools`` are those offered: for ``allowed_tools``, the allowed ones."""
    if choice is None:
        return ToolChoice("auto" if tools else "none", None, parallel)
    if isinstance(choice, ToolChoiceAllowedParam):
        if choice.mode == "required" and not tools:
            raise invalid("tool_choice.tools", "'required' needs at least one tool")
        return ToolChoice(choice.mode if tools else "none", None, parallel)
    if isinstance(choice, str):
        if choice == "required" and not tools:
            raise invalid("tool_choice", "'required' needs `tools`")
        return ToolChoice(choice, None, parallel)
    if choice.name not in {t.name for t in tools}:
        raise invalid("tool_choice.name", f"no {choice.type} tool named {choice.name!r} "
                      "in `tools`")
    return ToolChoice("named", choice.name, parallel)
