"""A fake engine behind the seam: it answers from a script (``script.py``), not a model.

It tokenizes byte by byte (``byte_vocab.py``), renders with a ChatML template of its own
(``templates.py``), and streams each scripted token as the real engines do, so
that the node's template, reply parser, tool-call and reasoning handling, stops, usage
and both wire formats run for real. It honours ``max_tokens`` and reasoning budgets; it
ignores grammars (it says so: ``EngineInfo.applies_grammars`` is false). Every request
it receives is kept in ``received`` (the last ``RECEIVED_KEPT``), so a test can check what
the node sent. With ``prefix_cache`` it reports the longest prefix each prompt shares with
an earlier one as cached, as a real engine whose cache kept everything would.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from ...errors import InternalError
from ..base import (
    Admitted,
    EngineEvent,
    EngineInfo,
    FinishReason,
    GenerationDone,
    GenerationRequest,
    KvUsage,
    TokenEvent,
    check_fits,
)
from ..reasoning import ReasoningTracker
from .byte_vocab import TURN_END, TURN_START, ByteVocab
from .script import Reply, Script
from .templates import TEMPLATES

RECEIVED_KEPT = 1000
# prompts the emulated prefix cache compares a new prompt with, most recent first
_CACHED_PROMPTS = 64


@dataclass(frozen=True)
class Received:
    """One request as the engine got it: its tokens, their text, and the whole request."""

    request: GenerationRequest
    text: str

    @property
    def last_user(self) -> str:
        """The content of the last user turn (with the native template, tool results too)."""
        start = self.text.rfind(TURN_START + "user\n")
        if start < 0:
            return ""
        start += len(TURN_START + "user\n")
        end = self.text.find(TURN_END, start)
        return self.text[start:end if end >= 0 else len(self.text)]


class ScriptedEngine:
    bos_token = ""
    eos_token = TURN_END

    def __init__(self, script: Script) -> None:
        self.vocab = ByteVocab()
        self.received: deque[Received] = deque(maxlen=RECEIVED_KEPT)
        self._prompts: deque[list[int]] = deque(maxlen=_CACHED_PROMPTS)
        self._running = 0
        self._held = 0          # tokens the running replies hold (their "KV")
        self._waiting = 0      # in their ``first_delay_s``: not admitted yet
        self._interactive_waiting = 0   # of those, the interactive ones (engine/priority.py)
        self._started = False
        self.use(script)

    def use(self, script: Script) -> None:
        """Answer from this script from now on (its replies all unused)."""
        self.script = script
        self._used: set[int] = set()
        self._tokens = [[self.vocab.register(p) for p in r.pieces()] for r in script.replies]
        self.info = EngineInfo(context_window=script.context_window,
                               vocab_size=self.vocab.size,
                               description=f"scripted, {len(script.replies)} replies",
                               applies_grammars=False)

    @property
    def chat_template(self) -> str:
        return TEMPLATES[self.script.template]

    # ---- tokens and lifecycle --------------------------------------------------------

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return self.vocab.tokenize(text)

    def token_bytes(self, token: int) -> bytes:
        return self.vocab.token_bytes(token)

    def detokenize(self, tokens: list[int]) -> str:
        return self.vocab.detokenize(tokens)

    async def start(self) -> None:
        self._started = True

    async def close(self) -> None:
        self._started = False

    def healthy(self) -> bool:
        return self._started

    def load(self) -> dict[str, int]:
        return {"active": self._running, "waiting": self._waiting,
                "interactive_waiting": self._interactive_waiting}

    def kv_usage(self) -> KvUsage:
        """The prompt and generated tokens of the running replies, of one window."""
        return KvUsage(self._held, self.info.context_window)

    # ---- generation --------------------------------------------------------------

    def _choose(self, received: Received) -> int:
        for index, reply in enumerate(self.script.replies):
            if index in self._used or not reply.when.matches(received.text,
                                                             received.last_user):
                continue
            if not reply.repeat:
                self._used.add(index)
            return index
        raise InternalError("the script has no reply left for this prompt")

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[EngineEvent, None]:
        check_fits(request, self.info.context_window)
        if not self._started:
            raise InternalError("the engine is not running")
        received = Received(request, self.detokenize(request.prompt))
        self.received.append(received)
        index = self._choose(received)
        reply = self.script.replies[index]
        if reply.first_delay_s:
            interactive = int(request.priority == "interactive")
            self._waiting += 1
            self._interactive_waiting += interactive
            try:
                await asyncio.sleep(reply.first_delay_s)
            finally:
                self._waiting -= 1
                self._interactive_waiting -= interactive
        if (refusal := reply.refusal()) is not None:
            raise refusal
        self._running += 1
        held = 0
        try:
            async for event in self._reply(request, reply, self._tokens[index]):
                step = len(request.prompt) if isinstance(event, Admitted) else \
                    int(isinstance(event, TokenEvent))
                held += step
                self._held += step
                yield event
        finally:
            self._running -= 1
            self._held -= held

    async def _reply(self, request: GenerationRequest, reply: Reply,
                     tokens: list[int]) -> AsyncGenerator[EngineEvent, None]:
        cached = min(self._cached(request.prompt, reply), len(request.prompt) - 1)
        yield Admitted(len(request.prompt), cached)
        reasoning = ReasoningTracker(request.reasoning) if request.reasoning else None
        generated = 0
        pending = list(tokens)
        while pending and generated < request.max_tokens:
            if reply.fail_at is not None and generated >= reply.fail_at:
                raise reply.failure()
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            token = pending.pop(0)
            generated += 1
            yield self._event(token, request)
            if reasoning is not None:
                reasoning.observe(self.vocab.token_bytes(token).decode("utf-8", "replace"))
                if reasoning.must_close(end_of_turn=not pending):
                    pending[:0] = reasoning.close()
        if reply.fail_at is not None and generated >= reply.fail_at:
            raise reply.failure()
        reason: FinishReason = "length" if pending else "eog"
        yield GenerationDone(reason, len(request.prompt), cached, generated)

    def _cached(self, prompt: list[int], reply: Reply) -> int:
        if reply.cached_tokens or not self.script.prefix_cache:
            return reply.cached_tokens
        shared = max((_common_prefix(prompt, earlier) for earlier in self._prompts),
                     default=0)
        self._prompts.appendleft(list(prompt))
        return shared

    def _event(self, token: int, request: GenerationRequest) -> TokenEvent:
        text = self.vocab.token_bytes(token).decode("utf-8", "replace")
        if request.top_logprobs is None:
            return TokenEvent(token, text)
        top = ((token, 0.0),) if request.top_logprobs > 0 else ()
        return TokenEvent(token, text, logprob=0.0, top=top)



def _common_prefix(a: list[int], b: list[int]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count
