"""Text completions and their chunks, with the legacy log-probabilities layout."""

from __future__ import annotations

from typing import Literal, assert_never

from ...core import (
    ChatEvent,
    ChatResult,
    Finished,
    ServerToolCall,
    ServerToolResult,
    Started,
    StopReason,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingEnd,
    TokenLogprob,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from ...http.sse import json_data_frame
from ...node.choices import AllFinished, ChoiceEvent
from ..encode import DONE, usage_of
from ..wire.responses import Completion, CompletionChoice, CompletionUsage, Logprobs
from .decode import LegacyRequest


class CompletionEncoder:
    """A whole text completion (``body``) or its chunks (``chunks``). Choices are numbered
    prompt by prompt (index = prompt * n + choice); ``echoes`` holds each prompt's text
    when it is echoed, else ``""``."""

    def __init__(self, completion_id: str, created: int, legacy: LegacyRequest,
                 echoes: list[str]) -> None:
        self.completion_id, self.created = completion_id, created
        self.legacy = legacy
        self.echoes = echoes
        # per choice: where its next token starts, and scores awaiting their text
        self._offsets: dict[int, int] = {}
        self._pending: dict[int, list[TokenLogprob]] = {}

    def _completion(self, choices: list[CompletionChoice]) -> Completion:
        return Completion(id=self.completion_id, object="text_completion",
                          created=self.created, model=self.legacy.model,
                          system_fingerprint=None, choices=choices)

    def _echo(self, index: int) -> str:
        return self.echoes[index // self.legacy.n]

    def body(self, results: list[ChatResult], usage: Usage) -> Completion:
        choices = []
        for index, result in enumerate(results):
            text = "".join(p.text for p in result.parts if isinstance(p, TextPart))
            choices.append(CompletionChoice(
                index=index, text=self._echo(index) + text,
                logprobs=self._logprobs(result.logprobs or [], 0),
                finish_reason=_legacy_finish(result.stop_reason)))
        completion = self._completion(choices)
        completion.usage = usage_of(usage)
        return completion

    def _logprobs(self, scored: list[TokenLogprob], offset: int) -> Logprobs | None:
        if self.legacy.logprobs is None:
            return None
        offsets = []
        for item in scored:
            offsets.append(offset)
            offset += len(item.text)
        return Logprobs(tokens=[s.text for s in scored],
                        token_logprobs=[s.logprob for s in scored],
                        top_logprobs=[{text: lp for text, _, lp in s.top} for s in scored],
                        text_offset=offsets)

    def _frame(self, choices: list[CompletionChoice], usage: CompletionUsage | None = None
               ) -> bytes:
        completion = self._completion(choices)
        if self.legacy.include_usage:
            completion.usage = usage
        return json_data_frame(completion.to_json())

    def _chunk(self, index: int, text: str, finish: Finished | None = None,
               logprobs: Logprobs | None = None) -> bytes:
        reason = _legacy_finish(finish.stop_reason) if finish is not None else None
        return self._frame([CompletionChoice(index=index, text=text, logprobs=logprobs,
                                             finish_reason=reason)])

    def chunks(self, item: ChoiceEvent | AllFinished) -> list[bytes]:
        if isinstance(item, AllFinished):
            if not self.legacy.include_usage:
                return [DONE]
            return [self._frame([], usage_of(item.usage)), DONE]
        index, event = item.index, item.event
        frames = []
        if index not in self._offsets:
            self._offsets[index], self._pending[index] = 0, []
            if self._echo(index):
                frames.append(self._chunk(index, self._echo(index)))
        return frames + self._event(index, event)

    def _event(self, index: int, event: ChatEvent) -> list[bytes]:
        match event:
            case TokenLogprob():
                self._pending[index].append(event)  # goes out with the text it produced
                return []
            case TextDelta(text=text):
                return [self._chunk(index, text, logprobs=self._scored(index))]
            case Finished():
                # the last chunk has log-probabilities only where tokens are left to score
                logprobs = self._scored(index) if self._pending[index] else None
                return [self._chunk(index, "", event, logprobs)]
            case Started():
                return []   # usage comes once, at the end (AllFinished)
            case (ThinkingDelta() | ThinkingEnd() | ToolCallStart() | ToolCallDelta()
                  | ToolCallEnd() | ServerToolCall() | ServerToolResult()):
                return []   # a raw completion is text only: its stream never has these
            case _:
                assert_never(event)

    def _scored(self, index: int) -> Logprobs | None:
        """The legacy log-probabilities of the tokens held for the next chunk, at their
        offsets in the choice's text (None where none were asked for)."""
        scored, self._pending[index] = self._pending[index], []
        logprobs = self._logprobs(scored, self._offsets[index])
        self._offsets[index] += sum(len(s.text) for s in scored)
        return logprobs


def _legacy_finish(reason: StopReason) -> Literal["stop", "length"]:
    """A raw completion never calls tools: it stops or runs out of tokens."""
    return "length" if reason in ("length", "window") else "stop"
