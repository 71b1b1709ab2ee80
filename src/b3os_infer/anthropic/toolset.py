"""The tools of one Messages request as its conversation changes them.

``tools[]`` declares them. A tool with ``defer_loading`` is left out of the prompt, and
cannot be called, until the conversation loads it: a ``tool_reference`` block in a
``tool_result`` (a tool search's answer) or a ``tool_addition`` block (beta
``mid-conversation-tool-changes``), which may also define a tool by value. A
``tool_removal`` block takes one away. A loaded tool's definition is rendered where it was
loaded, and a removal is said where it stands: the tool list at the top of the prompt, and
the cached prefix it starts, stay as they were.
"""

from __future__ import annotations

from dataclasses import replace

from ..core import Tool
from .validate import invalid
from .wire.tools import ToolParam


def tool_of(item: ToolParam, path: str) -> Tool:
    if item.input_schema.get("type") != "object":
        raise invalid(f"{path}.input_schema.type", "Input should be 'object'")
    return Tool(item.name, item.description, dict(item.input_schema))


class ToolSet:
    def __init__(self, items: list[ToolParam]) -> None:
        self.declared: dict[str, Tool] = {}
        self.deferred: set[str] = set()
        for i, item in enumerate(items):
            if item.name in self.declared:
                raise invalid(f"tools[{i}].name", f"tool names must be unique; {item.name!r} "
                              "appears twice")
            self.declared[item.name] = tool_of(item, f"tools[{i}]")
            if item.defer_loading:
                self.deferred.add(item.name)
        self.defined: dict[str, Tool] = {}   # tools defined mid-conversation, by value
        self.offered = {name for name in self.declared if name not in self.deferred}

    def load(self, name: str, path: str) -> Tool | None:
        """Offer the declared tool ``name`` from here on; the tool to announce here, or
        None when it was offered already."""
        tool = self.declared.get(name) or self.defined.get(name)
        if tool is None:
            raise invalid(path, f"no tool named {name!r} in `tools`")
        if name in self.offered:
            return None
        self.offered.add(name)
        return tool

    def define(self, item: ToolParam, path: str) -> Tool:
        """Offer a tool defined by value from here on."""
        if item.name in self.declared:
            raise invalid(f"{path}.name", f"{item.name!r} is declared in `tools`; refer to "
                          "it with a `tool_reference`")
        tool = tool_of(item, path)
        self.defined[item.name] = tool
        self.offered.add(item.name)
        return tool

    def remove(self, name: str, path: str) -> str:
        if name not in self.offered:
            raise invalid(path, f"no tool named {name!r} is offered at this point")
        self.offered.discard(name)
        return name

    def callable_tools(self) -> list[Tool]:
        return [t for t in self.final() if not t.withdrawn]

    def final(self) -> list[Tool]:
        """The request's tools: the listed ones (``withdrawn`` where the conversation took
        them away), then those loaded or defined in the conversation and still offered."""
        listed = [replace(tool, withdrawn=name not in self.offered)
                  for name, tool in self.declared.items() if name not in self.deferred]
        loaded = [replace(tool, inline=True)
                  for name, tool in [*self.declared.items(), *self.defined.items()]
                  if name in self.offered and (name in self.deferred or name in self.defined)]
        return listed + loaded
