"""Request bodies for fuzzing every POST route: valid seeds, mutated by hypothesis.

A case is a route, the bytes sent, and (when those bytes are plain JSON) the object they
encode, so an SDK can send it too. Mutations, each drawn by hypothesis from a seed:

- a value anywhere replaced by one of the wrong type, a huge or non-finite number, a string
  with lone surrogates or control characters, a deep nesting, a huge array;
- a key removed, an unknown key added, a duplicate key, the top level not an object;
- the bytes truncated, an invalid UTF-8 sequence spliced in, a byte changed, an escape
  written by hand (``\\udcff``, ``\\u0000``), whitespace or a BOM in front.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from b3os_infer.config import default_embedding

MODEL = "b3os/scripted"
EMBEDDING_MODEL = default_embedding().id

ANTHROPIC = ("/v1/messages", "/v1/messages/count_tokens")
OPENAI = ("/chat/completions", "/completions", "/responses", "/responses/input_tokens",
          "/embeddings")
ROUTES = ANTHROPIC + OPENAI

_TOOL_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"]}
_USER = {"role": "user", "content": "What is the weather in Paris?"}
_MESSAGES_TOOLS = [{"name": "get_weather", "description": "Weather", "input_schema": _TOOL_SCHEMA}]
_CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                 "parameters": _TOOL_SCHEMA}}]
_RESPONSE_TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather",
                    "parameters": _TOOL_SCHEMA}]
_ANTHROPIC_HISTORY = [
    _USER,
    {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C"}]},
]
_CHAT_HISTORY = [
    {"role": "system", "content": "Be brief."},
    _USER,
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
]
_RESPONSE_INPUT = [
    {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\": \"Paris\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "18 C"},
]

SEEDS: dict[str, list[dict[str, Any]]] = {
    "/v1/messages": [
        {"model": MODEL, "max_tokens": 16, "messages": [_USER]},
        {"model": MODEL, "max_tokens": 16, "stream": True, "system": "Be brief.",
         "messages": [_USER], "temperature": 0.5, "top_p": 0.9, "stop_sequences": ["END"],
         "metadata": {"user_id": "u1"}},
        {"model": MODEL, "max_tokens": 64, "messages": _ANTHROPIC_HISTORY,
         "tools": _MESSAGES_TOOLS, "tool_choice": {"type": "auto"},
         "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]},
        {"model": MODEL, "max_tokens": 2048, "messages": [_USER],
         "thinking": {"type": "enabled", "budget_tokens": 1024}},
    ],
    "/v1/messages/count_tokens": [
        {"model": MODEL, "messages": [_USER]},
        {"model": MODEL, "messages": _ANTHROPIC_HISTORY, "tools": _MESSAGES_TOOLS,
         "system": "Be brief."},
    ],
    "/chat/completions": [
        {"model": MODEL, "messages": [_USER]},
        {"model": MODEL, "messages": _CHAT_HISTORY, "tools": _CHAT_TOOLS,
         "tool_choice": "auto", "max_completion_tokens": 32, "temperature": 0.2},
        {"model": MODEL, "messages": [_USER], "stream": True,
         "stream_options": {"include_usage": True}, "stop": ["END"], "seed": 7,
         "logprobs": True, "top_logprobs": 2},
        {"model": MODEL, "messages": [_USER], "max_tokens": 16,
         "response_format": {"type": "json_schema",
                             "json_schema": {"name": "w", "schema": _TOOL_SCHEMA}}},
    ],
    "/completions": [
        {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 8},
        {"model": MODEL, "prompt": ["a", "b"], "max_tokens": 8, "stream": True,
         "stop": "\n", "temperature": 0.7, "echo": False},
    ],
    "/responses": [
        {"model": MODEL, "input": "Say hello"},
        {"model": MODEL, "input": _RESPONSE_INPUT, "tools": _RESPONSE_TOOLS,
         "instructions": "Be brief.", "max_output_tokens": 32, "store": False},
        {"model": MODEL, "input": "Think", "stream": True,
         "reasoning": {"effort": "low"}, "text": {"format": {"type": "text"}}},
    ],
    "/embeddings": [
        {"model": EMBEDDING_MODEL, "input": "A man is eating food."},
        {"model": EMBEDDING_MODEL, "input": ["A man is eating.", [101, 2023, 102]],
         "encoding_format": "base64", "dimensions": 384, "input_type": "query",
         "user": "u1"},
    ],
    "/responses/input_tokens": [
        {"model": MODEL, "input": "Say hello"},
        {"model": MODEL, "input": _RESPONSE_INPUT, "tools": _RESPONSE_TOOLS,
         "instructions": "Be brief."},
    ],
}


@dataclass(frozen=True)
class Case:
    route: str
    body: bytes
    sent: Any = None          # the object the body encodes, when it is plain JSON
    mutation: str = ""

    @property
    def api(self) -> str:
        return "anthropic" if self.route in ANTHROPIC else "openai"


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


# Stands for a nesting deeper than ``json.dumps`` itself can write; ``_dumps`` writes it.
DEEP = "\x00deep\x00"
_DEEP_TEXT = json.dumps(DEEP).encode()
_DEEP_DEPTH = 100_000


_strings = st.one_of(
    st.text(max_size=30),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
    st.text(st.characters(max_codepoint=0x1F), max_size=10),
    st.sampled_from(["", " ", "null", "[[[[[[", "{\"a\": NaN}", "1" * 5000, "\u2028",
                     "<|im_start|>system", "</tool_call>", "<think>", "x" * 20_000]),
)
_numbers = st.one_of(
    st.integers(-(2 ** 70), 2 ** 70),
    st.sampled_from([0, -1, 2 ** 31, 2 ** 63, 2 ** 64 + 1, 10 ** 30, -(10 ** 30)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 5e-324, -0.0]),
)
_leaves = st.one_of(st.none(), st.booleans(), _numbers, _strings)
_json = st.recursive(_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_strings, inner, max_size=4)), max_leaves=12)
_weird = st.one_of(
    _json,
    st.builds(_nested, st.sampled_from([20, 60, 300]), _leaves),
    st.just(DEEP),
    st.builds(lambda n, item: [item] * n, st.sampled_from([1000, 10_000]),
              st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))),
    st.builds(lambda n: {f"k{i}": i for i in range(n)}, st.sampled_from([1000, 5_000])),
)


def _dumps(value: Any) -> bytes:
    """JSON as Python writes it (``NaN``, ``Infinity`` included), with ``DEEP`` written as
    100,000 nested arrays."""
    raw = json.dumps(value).encode()
    if _DEEP_TEXT in raw:
        raw = raw.replace(_DEEP_TEXT, b"[" * _DEEP_DEPTH + b"1" + b"]" * _DEEP_DEPTH)
    return raw


def _plain(value: Any) -> Any:
    """The value if it is plain JSON an SDK can send (finite, no lone surrogates)."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode()
        if _DEEP_TEXT[1:-1] in json.dumps(value).encode():
            return None
    except (ValueError, UnicodeEncodeError, RecursionError):
        return None
    return value


@dataclass(frozen=True)
class Mutation:
    """One drawn change, applied to every seed of every route (``at`` and ``pick``, in
    [0, 1), say where: a fraction of the seed's values, keys or bytes)."""

    kind: str
    at: float
    pick: float = 0.0
    value: Any = None
    data: bytes = b""

    def apply(self, route: str, seed: dict[str, Any]) -> Case:
        return _APPLY[self.kind](self, route, seed)

    @functools.cached_property
    def encoded(self) -> bytes:
        """``value`` as JSON, written once for all the seeds it goes into."""
        return _dumps(self.value)

    @functools.cached_property
    def plain(self) -> bool:
        return _plain(self.value) is not None


def _index(fraction: float, size: int) -> int:
    return min(int(fraction * size), size - 1)


_SLOT = "\x00slot\x00"
_SLOT_TEXT = json.dumps(_SLOT).encode()


def _value(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    paths = _paths(seed)[1:]
    path = paths[_index(m.at, len(paths))]
    raw = _dumps(_replace(seed, path, _SLOT)).replace(_SLOT_TEXT, m.encoded)
    sent = _replace(seed, path, m.value) if m.plain else None
    return Case(route, raw, sent, f"value at {list(path)}")


def _drop(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    keys = sorted(seed)
    key = keys[_index(m.at, len(keys))]
    dropped = {k: v for k, v in seed.items() if k != key}
    return Case(route, _dumps(dropped), _plain(dropped), f"{key} dropped")


def _unknown(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    name = m.data.decode("utf-8", "surrogatepass")
    raw = _dumps({**seed, name: _SLOT}).replace(_SLOT_TEXT, m.encoded)
    plain = m.plain and _plain(name) is not None
    return Case(route, raw, {**seed, name: m.value} if plain else None, "an unknown key")


def _duplicate(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    keys = sorted(seed)
    key = keys[_index(m.at, len(keys))]
    extra = json.dumps(key).encode() + b": " + m.encoded
    return Case(route, b"{" + extra + b", " + _dumps(seed)[1:], None, f"duplicate {key}")


def _top(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    top = [seed] * int(m.at * 3) if m.value is None else m.value
    return Case(route, _dumps(top), _plain(top), "top level not an object")


def _truncate(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    raw = _dumps(seed)
    return Case(route, raw[:_index(m.at, len(raw))], None, "truncated")


def _splice(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    raw = _dumps(seed)
    at = _index(m.at, len(raw))
    cut = at + 1 if m.pick < 0.5 else at     # replace a byte, or insert
    return Case(route, raw[:at] + m.data + raw[cut:], None, f"bytes {m.data[:8]!r} spliced")


def _escape(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    raw = _dumps(seed)
    quotes = [match.start() for match in re.finditer(b'"', raw)]
    where = quotes[_index(m.at, len(quotes))] + 1
    return Case(route, raw[:where] + m.data + raw[where:], None, f"escape {m.data!r}")


def _prefix(m: Mutation, route: str, seed: dict[str, Any]) -> Case:
    return Case(route, m.data + _dumps(seed), None, f"prefix {m.data!r}")


_APPLY = {"value": _value, "drop": _drop, "unknown": _unknown, "duplicate": _duplicate,
          "top": _top, "truncate": _truncate, "splice": _splice, "escape": _escape,
          "prefix": _prefix}

_fraction = st.floats(0, 1, exclude_max=True)
_bad_bytes = st.one_of(
    st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
                     b"\x00", b"\"", b"\\", b"{", b"]", b",", b"\n"]),
    st.binary(min_size=1, max_size=4))
_escapes = st.sampled_from([rb"\udcff", rb"\ud800", rb"\udfff\ud800", rb"\u0000", rb"\ud83d\ude00",
                            rb"\x41", rb"\u12", rb"\\", "\u2028".encode(), b"\t"])
_prefixes = st.sampled_from([b"\xef\xbb\xbf", b"   \n", b"\x00", b"[", b"{}", b"\xff\xfe"])

mutations = st.one_of(
    st.builds(Mutation, st.just("value"), _fraction, value=_weird),
    st.builds(Mutation, st.just("value"), _fraction, value=_weird),
    st.builds(Mutation, st.just("value"), _fraction, value=_weird),
    st.builds(Mutation, st.just("drop"), _fraction),
    st.builds(Mutation, st.just("unknown"), _fraction, value=_json,
              data=st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass"))),
    st.builds(Mutation, st.just("duplicate"), _fraction, value=_json),
    st.builds(Mutation, st.just("top"), _fraction, value=st.one_of(st.none(), _leaves)),
    st.builds(Mutation, st.just("truncate"), _fraction),
    st.builds(Mutation, st.just("splice"), _fraction, _fraction, data=_bad_bytes),
    st.builds(Mutation, st.just("escape"), _fraction, data=_escapes),
    st.builds(Mutation, st.just("prefix"), _fraction, data=_prefixes),
)


# Every value of every seed is also replaced by each of these, in turn (the JSON text).
NASTY: tuple[bytes, ...] = (
    b"null", b"true", b"-1", b"18446744073709551617", b"1e999", b"NaN", b"-Infinity",
    b"9" * 5000, b"{}", b"[]", b'"\\udcff"', b'"' + b"[" * 5000 + b'"', b'"' + b"1" * 5000 + b'"',
    b'"{\\"a\\": NaN}"', b'"' + b"x" * 20_000 + b'"', b"[" * 5000 + b"]" * 5000,
)


def sweep() -> list[Case]:
    """Each value of each seed (objects and arrays too) replaced by each ``NASTY`` text."""
    made = []
    for route, seed in all_seeds():
        for path in _paths(seed)[1:]:
            holed = _dumps(_replace(seed, path, _SLOT))
            made += [Case(route, holed.replace(_SLOT_TEXT, nasty), None,
                          f"value at {list(path)} is {nasty[:12]!r}") for nasty in NASTY]
    return made


def all_seeds() -> list[tuple[str, dict[str, Any]]]:
    return [(route, seed) for route in ROUTES for seed in SEEDS[route]]


# A valid embeddings body runs a real model (tens of ms): one mutation in 4 goes there.
EMBEDDING_SHARE = 4


def bodies(drawn: list[Mutation]) -> list[Case]:
    """Every seed of every route as it is, the sweep, then each mutation applied to each
    seed (to the embeddings seeds, one in ``EMBEDDING_SHARE``); one case per distinct
    (route, bytes)."""
    made = [Case(route, _dumps(seed), seed, "the seed") for route, seed in all_seeds()]
    made += sweep()
    made += [m.apply(route, seed) for n, m in enumerate(drawn) for route, seed in all_seeds()
             if route != "/embeddings" or n % EMBEDDING_SHARE == 0]
    unique: dict[tuple[str, bytes], Case] = {}
    for case in made:
        unique.setdefault((case.route, case.body), case)
    return list(unique.values())
