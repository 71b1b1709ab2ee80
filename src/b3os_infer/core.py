"""The neutral core: requests, messages, stream events and usage that name neither API.

OpenAI and Anthropic translate to and from these types; the node and the engines only
ever see them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

# a JSON object as a client sent it (tool inputs, schemas): typed all the way down
JsonObject = dict[str, JsonValue]

Role = Literal["system", "user", "assistant"]
# why a reply ended: the model ended its turn, it reached the caller's token limit, the
# prompt and reply filled the context window first, it wrote one of the caller's stop
# strings, it called tools, or the node paused a turn whose server tools ran too long
StopReason = Literal["end", "length", "window", "stop_string", "tool_calls", "paused"]


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ThinkingPart:
    """Reasoning, with an opaque signature (None when the client could not send one)."""

    thinking: str
    signature: str | None = None


@dataclass(frozen=True)
class RedactedThinkingPart:
    data: str


@dataclass(frozen=True)
class ToolCallPart:
    """A tool call; ``id`` is the caller's id for a call from the history, or one the node
    minted (``ids.call_id``), which each wire format spells its own way."""

    id: str
    name: str
    input: JsonObject


@dataclass(frozen=True)
class ToolResultPart:
    call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    """A tool the model may call. ``inline``: its definition is rendered where the
    conversation loaded it (a ``ToolsChangedPart``), not in the tool list at the top;
    ``withdrawn``: it stays in that list, so the prompt keeps its cached prefix, but the
    conversation took it away, and it can no longer be called."""

    name: str
    description: str | None
    input_schema: JsonObject
    inline: bool = False
    withdrawn: bool = False


@dataclass(frozen=True)
class ToolsChangedPart:
    """Tools offered (``added``) or taken away (``removed``, by name) from this point of
    the conversation on; rendered where it stands, after the prefix that stays cached."""

    added: tuple[Tool, ...] = ()
    removed: tuple[str, ...] = ()


# ---- server tools: tools the node runs itself, inside the model's turn ----------------

ServerToolKind = Literal["web_search", "web_fetch"]


@dataclass(frozen=True)
class Location:
    """Where the caller says its user is, roughly (a search backend may use it)."""

    city: str | None = None
    region: str | None = None
    country: str | None = None
    timezone: str | None = None


@dataclass(frozen=True)
class ServerTool:
    """A tool the node runs itself: offered to the model as a function named ``name``, whose
    calls never leave the node. ``max_uses``: calls allowed in one request (None: no limit);
    ``allowed_domains``/``blocked_domains``: what its results or fetches may come from."""

    kind: ServerToolKind
    name: str
    max_uses: int | None = None
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    location: Location | None = None
    max_content_tokens: int | None = None


@dataclass(frozen=True)
class SearchHit:
    url: str
    title: str
    snippet: str
    page_age: str | None = None


# why a server tool gave no result, in words both APIs have
ServerToolError = Literal["unavailable", "invalid_tool_input", "max_uses_exceeded",
                          "too_many_requests", "query_too_long", "url_not_allowed",
                          "url_not_accessible", "unsupported_content_type", "url_too_long"]


@dataclass(frozen=True)
class SearchOutcome:
    query: str
    hits: tuple[SearchHit, ...] = ()
    error: ServerToolError | None = None


@dataclass(frozen=True)
class FetchOutcome:
    url: str
    title: str | None = None
    text: str = ""
    media_type: str = "text/plain"
    retrieved_at: str | None = None
    error: ServerToolError | None = None


ServerToolOutcome = SearchOutcome | FetchOutcome


@dataclass(frozen=True)
class ServerToolCallPart:
    """A call the node ran itself (``id`` minted by the node, or the caller's from history)."""

    id: str
    name: str
    input: JsonObject


@dataclass(frozen=True)
class ServerToolResultPart:
    call_id: str
    outcome: ServerToolOutcome


Part = (TextPart | ThinkingPart | RedactedThinkingPart | ToolCallPart | ToolResultPart
        | ToolsChangedPart | ServerToolCallPart | ServerToolResultPart)


# whether tools may be called (auto), must be (required), one named tool must be (named),
# or none may be
ToolMode = Literal["auto", "required", "named", "none"]


@dataclass(frozen=True)
class ToolChoice:
    mode: ToolMode = "auto"
    name: str | None = None
    parallel: bool = True


@dataclass(frozen=True)
class Thinking:
    """Reasoning asked for: a budget in tokens, whether its text is shown (``omitted`` and
    ``updates`` send the signature only), and whether the model may decide not to reason
    (Anthropic's ``adaptive``)."""

    budget_tokens: int
    display: Literal["summarized", "omitted", "updates"] = "summarized"
    adaptive: bool = False

    @property
    def shown(self) -> bool:
        return self.display == "summarized"


@dataclass
class Message:
    role: Role
    parts: list[Part]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


@dataclass(frozen=True)
class Sampling:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    # OpenAI's additive penalties, over the tokens generated so far (0 = off)
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    # (token id, bias added to its logit); -100 bans a token, +100 all but forces it
    logit_bias: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class CacheCheck:
    """The caller asks why its prompt did or did not reuse the cached prefix of an earlier
    reply's prompt: ``previous_id`` names that reply (None on a conversation's first turn)."""

    previous_id: str | None = None


@dataclass(frozen=True)
class ClearToolUses:
    """Replace the results of old tool calls with a short placeholder once the prompt is
    past a trigger (``trigger_tokens`` prompt tokens, or ``trigger_tool_uses`` calls; one
    of the two is set), keeping the ``keep`` most recent calls and those of the tools in
    ``exclude``; only if that clears at least ``clear_at_least`` prompt tokens. The calls'
    inputs are cleared too where ``clear_inputs`` says: all (True) or those named."""

    trigger_tokens: int | None = 100_000
    trigger_tool_uses: int | None = None
    keep: int = 3
    clear_at_least: int = 0
    exclude: frozenset[str] = frozenset()
    clear_inputs: bool | frozenset[str] = False


@dataclass(frozen=True)
class ClearThinking:
    """Remove the thinking of earlier assistant turns, keeping that of the ``keep_turns``
    most recent turns that have some (None: keep all)."""

    keep_turns: int | None = 1


ContextEdit = ClearToolUses | ClearThinking


@dataclass
class ChatRequest:
    """A chat request after translation from either wire format."""

    model: str
    messages: list[Message]
    system: str | None = None
    # the most the reply may write, as the client asked; None: it did not say (the model's
    # default output cap, ``node/output_cap.py``)
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    sampling: Sampling = field(default_factory=Sampling)
    tools: list[Tool] = field(default_factory=list)
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    thinking: Thinking | None = None
    response_schema: JsonObject | None = None
    # None: no log-probabilities; N >= 0: each reply token's own and the N most likely
    top_logprobs: int | None = None
    cache_check: CacheCheck | None = None
    # edits of the conversation made before it is rendered, in order; None: none asked for
    # (an empty tuple: asked for, with no edits)
    context_edits: tuple[ContextEdit, ...] | None = None
    # tools the node runs itself; each is offered to the model as a function of
    # ``tools`` too (see node/server_tools)
    server_tools: tuple[ServerTool, ...] = ()


@dataclass
class TextRequest:
    """A raw completion: the prompt is text the model continues, no template around it."""

    model: str
    prompt: list[int]
    # None: the model's default output cap, as for chat
    max_tokens: int | None = 16
    stop: list[str] = field(default_factory=list)
    sampling: Sampling = field(default_factory=Sampling)
    top_logprobs: int | None = None


@dataclass
class Usage:
    """What a reply used. The prompt is counted in two parts: ``input_tokens`` were
    processed, ``cached_tokens`` were read from the prefix cache (``prompt_tokens``, their
    sum, is the whole prompt); each API reports the parts it names."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    # of output_tokens, those generated inside the reasoning section
    reasoning_tokens: int = 0
    # server tools the node ran for the reply
    web_search_requests: int = 0
    web_fetch_requests: int = 0
    # speculative decoding: tokens drafted for the reply, and of those the ones accepted
    drafted_tokens: int = 0
    accepted_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cached_tokens


@dataclass(frozen=True)
class Started:
    """The prompt is counted: what ``message_start`` reports."""

    usage: Usage


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ThinkingEnd:
    """The reasoning section is closed; its signature covers the whole text."""

    signature: str


@dataclass(frozen=True)
class ToolCallStart:
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of the arguments' JSON text; the fragments join into valid JSON."""

    partial_json: str


@dataclass(frozen=True)
class ToolCallEnd:
    input: JsonObject


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token of the reply text, with its log-probability and the best
    alternatives as (text, bytes, logprob). Sent just before the text it produced."""

    text: str
    data: bytes
    logprob: float
    top: tuple[tuple[str, bytes, float], ...] = ()


@dataclass(frozen=True)
class Finished:
    stop_reason: StopReason
    stop_sequence: str | None
    usage: Usage


@dataclass(frozen=True)
class ServerToolCall:
    """The model called a server tool; the node runs it now (its result follows)."""

    id: str
    name: str
    input: JsonObject


@dataclass(frozen=True)
class ServerToolResult:
    call_id: str
    outcome: ServerToolOutcome


ChatEvent = (Started | TextDelta | ThinkingDelta | ThinkingEnd | ToolCallStart | ToolCallDelta
             | ToolCallEnd | TokenLogprob | Finished | ServerToolCall | ServerToolResult)


@dataclass(frozen=True)
class Counted:
    """The reply's usage up to here: what it has used if it is cut short now. The node's
    streams carry it after every counted token; the generation pipeline takes it out, so
    no encoder sees it."""

    usage: Usage


NodeEvent = ChatEvent | Counted


@dataclass
class ChatResult:
    """A whole reply: what a non-streaming response is built from."""

    parts: list[Part]
    stop_reason: StopReason
    stop_sequence: str | None
    usage: Usage
    logprobs: list[TokenLogprob] | None = None


def merge_turns(messages: list[Message]) -> list[Message]:
    """Combine consecutive messages of the same role into one turn."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role == message.role:
            merged[-1] = Message(message.role, merged[-1].parts + message.parts)
        else:
            merged.append(Message(message.role, list(message.parts)))
    return merged
