"""What the model sees of a server tool: a function to call, and its result as text.

The same text is rendered whether the result was produced in this request's loop or comes
back in the caller's history, so a conversation that resends it keeps its cached prefix.
"""

from __future__ import annotations

from ...core import (
    FetchOutcome,
    JsonObject,
    Message,
    Part,
    SearchOutcome,
    ServerTool,
    ServerToolCallPart,
    ServerToolError,
    ServerToolResultPart,
    Tool,
    ToolCallPart,
    ToolResultPart,
)

SEARCH_SCHEMA: JsonObject = {
    "type": "object", "required": ["query"],
    "properties": {"query": {"type": "string", "description": "what to search the web for"}}}
FETCH_SCHEMA: JsonObject = {
    "type": "object", "required": ["url"],
    "properties": {"url": {"type": "string", "description": "the http(s) address of the "
                           "page to read"}}}
SEARCH_DESCRIPTION = ("Search the web. Returns the title, address and a snippet of each "
                      "result; use it for anything recent or that you do not know.")
FETCH_DESCRIPTION = "Fetch a web page or text document by its address and read its text."

ERROR_WORDS: dict[ServerToolError, str] = {
    "unavailable": "the tool is not available on this server",
    "invalid_tool_input": "the call's input was not valid",
    "max_uses_exceeded": "the tool was used as many times as this request allows",
    "too_many_requests": "the search service is busy; try again later",
    "query_too_long": "the query is too long",
    "url_not_allowed": "that address may not be fetched",
    "url_not_accessible": "that address could not be read",
    "unsupported_content_type": "that document's kind cannot be read",
    "url_too_long": "the address is too long",
}


def function_of(tool: ServerTool) -> Tool:
    """The function the model calls to run ``tool``."""
    if tool.kind == "web_search":
        return Tool(tool.name, SEARCH_DESCRIPTION, dict(SEARCH_SCHEMA))
    return Tool(tool.name, FETCH_DESCRIPTION, dict(FETCH_SCHEMA))


def outcome_text(outcome: SearchOutcome | FetchOutcome) -> str:
    """The result as the model reads it, after its call."""
    if isinstance(outcome, SearchOutcome):
        return _search_text(outcome)
    if outcome.error is not None:
        return f"Fetching {outcome.url} failed: {ERROR_WORDS[outcome.error]}."
    title = f" ({outcome.title})" if outcome.title else ""
    return f"Content of {outcome.url}{title}:\n{outcome.text}"


def _search_text(outcome: SearchOutcome) -> str:
    if outcome.error is not None:
        return f"The web search failed: {ERROR_WORDS[outcome.error]}."
    if not outcome.hits:
        return f"The web search for {outcome.query!r} found nothing."
    lines = [f"Web search results for {outcome.query!r}:"]
    for number, hit in enumerate(outcome.hits, 1):
        lines.append(f"{number}. {hit.title}\n   {hit.url}")
        if hit.page_age:
            lines.append(f"   ({hit.page_age})")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return "\n".join(lines)


def unfold(messages: list[Message]) -> list[Message]:
    """The conversation as the model reads it: an assistant turn that holds server-tool
    calls and their results is cut after each call, its result put in a user turn as a
    client tool's result would be, and the turn goes on after it."""
    out: list[Message] = []
    for message in messages:
        if message.role != "assistant" or not any(
                isinstance(p, ServerToolResultPart) for p in message.parts):
            out.append(message)
            continue
        out.extend(_unfolded(message.parts))
    return out


def _unfolded(parts: list[Part]) -> list[Message]:
    out: list[Message] = []
    said: list[Part] = []
    for part in parts:
        if isinstance(part, ServerToolCallPart):
            said.append(ToolCallPart(part.id, part.name, part.input))
        elif isinstance(part, ServerToolResultPart):
            result = ToolResultPart(part.call_id, outcome_text(part.outcome),
                                    part.outcome.error is not None)
            if said:
                out.append(Message("assistant", said))
                said = []
            if out and out[-1].role == "user":
                out[-1].parts.append(result)
            else:
                out.append(Message("user", [result]))
        else:
            said.append(part)
    if said:
        out.append(Message("assistant", said))
    return out
