"""The neutral core: requests, messages, stream events and usage that name neither API.

OpenAI and Anthropic translate to and from these types; the node and the engines only
ever see them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant"]
StopReason = Literal["end_turn", "max_tokens", "stop_sequence"]


@dataclass(frozen=True)
class TextPart:
    text: str


Part = TextPart


@dataclass
class Message:
    role: Role
    parts: list[Part]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts)


@dataclass(frozen=True)
class Sampling:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None


@dataclass
class ChatRequest:
    """A chat request after translation from either wire format."""

    model: str
    messages: list[Message]
    system: str | None = None
    max_tokens: int = 256
    stop: list[str] = field(default_factory=list)
    sampling: Sampling = field(default_factory=Sampling)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True)
class Started:
    """The prompt is counted: what ``message_start`` reports."""

    usage: Usage


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class Finished:
    stop_reason: StopReason
    stop_sequence: str | None
    usage: Usage


ChatEvent = Started | TextDelta | Finished


@dataclass
class ChatResult:
    """A whole reply: what a non-streaming response is built from."""

    text: str
    stop_reason: StopReason
    stop_sequence: str | None
    usage: Usage


def merge_turns(messages: list[Message]) -> list[Message]:
    """Combine consecutive messages of the same role into one turn."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role == message.role:
            merged[-1] = Message(message.role, merged[-1].parts + message.parts)
        else:
            merged.append(Message(message.role, list(message.parts)))
    return merged
