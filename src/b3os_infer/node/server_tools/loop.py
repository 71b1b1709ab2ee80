"""The server-tool loop: the model's turn goes on after a server tool ran.

A reply that calls a server tool (a function the request's ``server_tools`` offer) does
not end there: its call is run on the node, its result is added to the conversation after
the call, and the model is asked to continue, in the same request. The caller sees one
reply: the call and its result as ``ServerToolCall``/``ServerToolResult`` events among the
text, one ``Started`` and one ``Finished`` whose usage sums every step. A reply that also
calls client tools ends with ``tool_calls`` as usual. After ``max_steps`` steps that each
ran a server tool, the turn is paused (``paused``): the caller may send the reply back as
it is to let it continue.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field, replace

from ...core import (
    ChatEvent,
    ChatRequest,
    Counted,
    Finished,
    Message,
    NodeEvent,
    Part,
    ServerToolCall,
    ServerToolCallPart,
    ServerToolResult,
    ServerToolResultPart,
    Started,
    StopReason,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    Usage,
)
from ..chat_model import ChatModel, Prompt
from ..folding import Folder
from .tool_run import ServerTools, ToolRun


@dataclass
class _Step:
    """One generation of the turn: what it wrote and which calls it made."""

    folder: Folder = field(default_factory=Folder)
    held: ToolCallStart | None = None
    reasoning: list[str] = field(default_factory=list)
    server_calls: int = 0
    client_calls: int = 0
    finished: Finished | None = None


class ServerToolLoop:
    """Where the caller's reasoning is not shown (``omitted``, ``updates``), the steps still
    generate it shown, so that the turn's later steps render what the model reasoned before
    its call; the caller gets it as it asked, a signature without the text."""

    def __init__(self, model: ChatModel, run: ToolRun, max_steps: int) -> None:
        self.model = model
        self.run = run
        self.max_steps = max_steps
        self.usage = Usage()
        self.hidden = False

    async def stream(self, request: ChatRequest, prompt: Prompt
                     ) -> AsyncGenerator[NodeEvent, None]:
        if request.thinking is not None and not request.thinking.shown:
            self.hidden = True
            request = replace(request, thinking=replace(request.thinking,
                                                        display="summarized"))
        written: list[Part] = []
        current: ChatRequest | None = request
        for number in range(self.max_steps):
            assert current is not None
            step = _Step()
            async for event in self._step(current, prompt, step, first=number == 0):
                yield event
            written.extend(step.folder.parts)
            finished = step.finished
            assert finished is not None
            if finished.stop_reason != "tool_calls" or step.client_calls or \
                    not step.server_calls:
                yield self._finished(finished.stop_reason, finished.stop_sequence)
                return
            if number == self.max_steps - 1:
                break
            current, reason = self._continuation(request, written)
            if current is None:
                yield self._finished(reason, None)
                return
            prompt = self.model.prompt(current)
            if len(prompt.tokens) >= self.model.card.context_window:
                yield self._finished("window", None)
                return
        yield self._finished("paused", None)

    async def _step(self, request: ChatRequest, prompt: Prompt, step: _Step, *,
                    first: bool) -> AsyncGenerator[NodeEvent, None]:
        """One generation; its counts are added to those of the steps before it."""
        before = replace(self.usage)
        async with aclosing(self.model.stream(request, prompt)) as events:
            async for event in events:
                match event:
                    case Finished():
                        self.usage = _plus(before, event.usage)
                        step.finished = event
                        return
                    case Started():
                        yield event if first else Counted(_plus(before, event.usage))
                    case Counted():
                        yield Counted(_plus(before, event.usage))
                    case _:
                        async for out in self._event(event, step):
                            yield out

    async def _event(self, event: ChatEvent, step: _Step) -> AsyncGenerator[ChatEvent, None]:
        if self.hidden and isinstance(event, ThinkingDelta | ThinkingEnd):
            step.folder.add(event)
            if isinstance(event, ThinkingDelta):
                step.reasoning.append(event.text)
            else:
                yield ThinkingEnd(self.model.signer.sign("".join(step.reasoning),
                                                         omitted=True))
            return
        if isinstance(event, ToolCallStart) and self.run.runs(event.name):
            step.held = event
            return
        if isinstance(event, ToolCallDelta) and step.held is not None:
            return
        if isinstance(event, ToolCallEnd) and step.held is not None:
            call = ServerToolCall(step.held.id, step.held.name, event.input)
            step.held = None
            step.server_calls += 1
            yield call
            result = ServerToolResult(call.id, await self.run.run(call.name, call.input))
            step.folder.parts += [ServerToolCallPart(call.id, call.name, call.input),
                                  ServerToolResultPart(call.id, result.outcome)]
            yield result
            return
        if isinstance(event, ToolCallStart):
            step.client_calls += 1
        step.folder.add(event)
        yield event

    def _continuation(self, request: ChatRequest, written: list[Part]
                      ) -> tuple[ChatRequest | None, StopReason]:
        """The request that continues the turn after its server-tool results, or None and
        why the turn ends here."""
        left = self.model.cap(request) - self.usage.output_tokens
        if left <= 0:
            return None, "length"
        choice = request.tool_choice
        if choice.mode in ("required", "named"):   # the forced call was made
            choice = ToolChoice("auto", None, choice.parallel)
        messages = [*request.messages, Message("assistant", list(written))]
        return replace(request, messages=messages, max_tokens=left, tool_choice=choice,
                       context_edits=None), "end"

    def _finished(self, reason: StopReason, stop_sequence: str | None) -> Finished:
        usage = replace(self.usage, web_search_requests=self.run.searches,
                        web_fetch_requests=self.run.fetches)
        return Finished(reason, stop_sequence, usage)


def _plus(base: Usage, step: Usage) -> Usage:
    """The counts of the steps before and of this one."""
    return Usage(input_tokens=base.input_tokens + step.input_tokens,
                 output_tokens=base.output_tokens + step.output_tokens,
                 cached_tokens=base.cached_tokens + step.cached_tokens,
                 reasoning_tokens=base.reasoning_tokens + step.reasoning_tokens,
                 drafted_tokens=base.drafted_tokens + step.drafted_tokens,
                 accepted_tokens=base.accepted_tokens + step.accepted_tokens)


def with_server_tools(model: ChatModel, service: ServerTools, request: ChatRequest,
                      prompt: Prompt) -> AsyncGenerator[NodeEvent, None]:
    """The reply's events: through the loop where the request offers server tools (run by
    ``service``; one without a backend answers each call as ``unavailable``)."""
    if not request.server_tools:
        return model.stream(request, prompt)
    loop = ServerToolLoop(model, service.begin(request.server_tools), service.max_steps)
    return loop.stream(request, prompt)
