"""OpenAI chat completion requests into the neutral core.

Every key is declared here: read and honoured, or listed as accepted and ignored.
Anything else is refused with ``unsupported_parameter`` naming its path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import ChatRequest, Message, Sampling, TextPart
from ..errors import UnsupportedParameter
from ..fields import Fields, invalid, join

IGNORED_TOP_LEVEL = ("user", "metadata", "store", "service_tier", "safety_identifier",
                     "prompt_cache_key", "prompt_cache_options")
DEFAULT_MAX_TOKENS = 1024


@dataclass(frozen=True)
class StreamOptions:
    stream: bool
    include_usage: bool


def decode_chat_request(body: dict[str, Any]) -> tuple[ChatRequest, StreamOptions]:
    fields = Fields(body, ignored=IGNORED_TOP_LEVEL)
    model = fields.take("model", str, required=True)
    messages = _messages(fields)
    system, messages = _split_system(messages)
    n = fields.integer("n", low=1)
    if n not in (None, 1):
        raise UnsupportedParameter("n: only one choice per request is served (n=1)",
                                   param="n")
    max_tokens = fields.integer("max_completion_tokens", low=1)
    legacy_max = fields.integer("max_tokens", low=1)
    sampling = Sampling(
        temperature=_or(fields.number("temperature", low=0.0, high=2.0), 1.0),
        top_p=_or(fields.number("top_p", low=0.0, high=1.0), 1.0),
        seed=fields.take("seed", int),
    )
    options = _stream_options(fields)
    stops = _stops(fields)
    fields.finish()
    request = ChatRequest(model=model, messages=messages, system=system,
                          max_tokens=max_tokens or legacy_max or DEFAULT_MAX_TOKENS,
                          stop=stops, sampling=sampling)
    return request, options


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _stream_options(fields: Fields) -> StreamOptions:
    stream = bool(fields.take("stream", bool))
    raw = fields.take("stream_options", dict)
    include_usage = False
    if raw is not None:
        options = Fields(raw, "stream_options", ignored=("include_obfuscation",))
        include_usage = bool(options.take("include_usage", bool))
        options.finish()
    return StreamOptions(stream, include_usage)


def _stops(fields: Fields) -> list[str]:
    stop = fields.raw("stop")
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or len(stops) > 4:
        raise invalid("stop", "Input should be a string or an array of at most 4 strings")
    for i, item in enumerate(stops):
        if not isinstance(item, str) or not item:
            raise invalid(join("stop", i), "Input should be a non-empty string")
    return list(stops)


_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def _messages(fields: Fields) -> list[Message]:
    items = fields.take("messages", list, required=True)
    if not items:
        raise invalid("messages", "at least one message is required")
    return [_message(item, join("messages", i)) for i, item in enumerate(items)]


def _message(item: Any, path: str) -> Message:
    fields = Fields(item, path, ignored=("name",))
    role = fields.take("role", str, required=True)
    if role not in _ROLES:
        raise UnsupportedParameter(f"{join(path, 'role')}: messages with role {role!r} are "
                                   "not supported on this node", param=join(path, "role"))
    content = fields.raw("content")
    if role == "assistant":
        fields.take("refusal", str)
    fields.finish()
    return Message(_ROLES[role], _content(content, join(path, "content")))  # type: ignore[arg-type]


def _content(content: Any, path: str) -> list[TextPart]:
    if content is None:
        raise invalid(path, "Field required")
    if isinstance(content, str):
        return [TextPart(content)]
    if not isinstance(content, list):
        raise invalid(path, "Input should be a string or an array of content parts")
    parts = []
    for i, part in enumerate(content):
        fields = Fields(part, join(path, i))
        kind = fields.take("type", str, required=True)
        if kind != "text":
            raise UnsupportedParameter(f"{join(path, i)}: content parts of type {kind!r} are "
                                       "not supported by this model", param=join(path, i))
        parts.append(TextPart(fields.take("text", str, required=True)))
        fields.finish()
    return parts


def _split_system(messages: list[Message]) -> tuple[str | None, list[Message]]:
    """Leading system/developer messages become the system prompt."""
    system: list[str] = []
    index = 0
    while index < len(messages) and messages[index].role == "system":
        system.append(messages[index].text)
        index += 1
    rest = messages[index:]
    for offset, message in enumerate(rest):
        if message.role == "system":
            raise UnsupportedParameter(
                f"messages[{index + offset}]: system and developer messages are served only "
                "at the start of the conversation", param=f"messages[{index + offset}]")
    if not rest:
        raise invalid("messages", "at least one user or assistant message is required")
    return ("\n\n".join(system) if system else None), rest
