"""Anthropic Messages requests into the neutral core.

Every key is declared here: read and honoured, or listed as accepted and ignored.
Anything else is refused with ``unsupported_parameter`` naming its path.
"""

from __future__ import annotations

from typing import Any

from ..core import ChatRequest, Message, Sampling, TextPart
from ..errors import InvalidRequest, UnsupportedParameter
from ..fields import Fields, invalid, join

# Keys accepted and ignored: they steer the vendor's infrastructure or caching, which
# here is automatic, and cannot change the answer.
IGNORED_TOP_LEVEL = ("metadata", "service_tier", "cache_control", "inference_geo",
                     "context_management", "speed", "diagnostics")
IGNORED_ON_BLOCKS = ("cache_control",)

SYSTEM_ROLE_MESSAGE = (
    'Unexpected role "system". The Messages API accepts a top-level `system` parameter, '
    'not "system" as an input message role.'
)


def decode_messages_request(body: dict[str, Any]) -> tuple[ChatRequest, bool]:
    """The neutral request and whether the caller asked for a stream."""
    fields = Fields(body, ignored=IGNORED_TOP_LEVEL)
    model = fields.take("model", str, required=True)
    max_tokens = fields.integer("max_tokens", low=1, required=True)
    messages = _messages(fields)
    system = _system(fields)
    stream = bool(fields.take("stream", bool))
    stops = _stop_sequences(fields)
    sampling = Sampling(
        temperature=_or(fields.number("temperature", low=0.0, high=1.0), 1.0),
        top_p=_or(fields.number("top_p", low=0.0, high=1.0), 1.0),
        top_k=_or(fields.integer("top_k", low=0), 0),
    )
    fields.finish()
    request = ChatRequest(model=model, messages=messages, system=system,
                          max_tokens=max_tokens or 1, stop=stops, sampling=sampling)
    return request, stream


def decode_count_tokens_request(body: dict[str, Any]) -> ChatRequest:
    fields = Fields(body, ignored=("cache_control", "context_management", "speed"))
    model = fields.take("model", str, required=True)
    messages = _messages(fields)
    system = _system(fields)
    fields.finish()
    return ChatRequest(model=model, messages=messages, system=system)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _messages(fields: Fields) -> list[Message]:
    items = fields.take("messages", list, required=True)
    if not items:
        raise invalid("messages", "at least one message is required")
    return [_message(item, join("messages", i)) for i, item in enumerate(items)]


def _message(item: Any, path: str) -> Message:
    fields = Fields(item, path)
    role = fields.take("role", str, required=True)
    if role == "system":
        raise InvalidRequest(SYSTEM_ROLE_MESSAGE, param=join(path, "role"))
    if role not in ("user", "assistant"):
        raise invalid(join(path, "role"), "Input should be 'user' or 'assistant'")
    content = fields.raw("content")
    if content is None:
        raise invalid(join(path, "content"), "Field required")
    fields.finish()
    return Message(role, _content(content, join(path, "content")))


def _content(content: Any, path: str) -> list[TextPart]:
    if isinstance(content, str):
        return [TextPart(content)]
    if not isinstance(content, list):
        raise invalid(path, "Input should be a string or an array of content blocks")
    return [_text_block(block, join(path, i)) for i, block in enumerate(content)]


def _text_block(block: Any, path: str) -> TextPart:
    fields = Fields(block, path, ignored=IGNORED_ON_BLOCKS)
    kind = fields.take("type", str, required=True)
    if kind != "text":
        raise UnsupportedParameter(f"{path}: content blocks of type {kind!r} are not "
                                   "supported by this model", param=path)
    text = fields.take("text", str, required=True)
    if not text:
        raise invalid(join(path, "text"), "text content blocks must be non-empty")
    fields.finish()
    return TextPart(text)


def _system(fields: Fields) -> str | None:
    system = fields.raw("system")
    if system is None:
        return None
    if isinstance(system, str):
        return system
    if not isinstance(system, list):
        raise invalid("system", "Input should be a string or an array of text blocks")
    return "\n".join(_text_block(b, join("system", i)).text for i, b in enumerate(system))


def _stop_sequences(fields: Fields) -> list[str]:
    stops = fields.take("stop_sequences", list) or []
    for i, stop in enumerate(stops):
        if not isinstance(stop, str) or not stop:
            raise invalid(join("stop_sequences", i), "Input should be a non-empty string")
    return list(stops)
