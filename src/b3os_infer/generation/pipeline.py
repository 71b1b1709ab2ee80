"""The generation pipeline: what every generation route hands its neutral request to.

A route decodes its wire request, and asks here for the reply's events; it then folds
them into one body or encodes them as its stream. In between, the same for every API:
the output cap (``node/output_cap.py``), the prompt checked against the window before
anything is admitted, admission under the key's limits, the node's streams (one per
choice, through the server-tool loop where the request offers server tools), the usage
tallied from the ``Counted`` events on those streams, and the settling of the ledger
with what the reply used, whole or cut short. The server-timing phases are noted by the
pieces themselves (admission, the node's generations).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, replace

from starlette.requests import Request

from ..core import ChatEvent, ChatRequest, Counted, Finished, NodeEvent, Started, TextRequest, Usage
from ..http.accounting import admit
from ..node.chat_model import ChatModel, Prompt
from ..node.choices import AllFinished, ChoiceEvent, final_usage, merged, seeded, total_usage
from ..node.completion import stream_text
from ..node.output_cap import capped, output_cap
from ..node.server_tools.loop import with_server_tools
from ..node.server_tools.tool_run import ServerTools

Combine = Callable[[list[Usage]], Usage]
Events = AsyncGenerator[ChoiceEvent | AllFinished, None]


@dataclass
class _Tally:
    """The latest usage of each stream of a request."""

    latest: list[Usage]
    combine: Combine

    def so_far(self) -> Usage:
        return self.combine(self.latest)


async def _tallied(index: int, events: AsyncGenerator[NodeEvent, None], tally: _Tally
                   ) -> AsyncGenerator[ChatEvent, None]:
    """A node stream without its ``Counted`` events, whose usage goes to the tally."""
    async with aclosing(events):
        async for event in events:
            if isinstance(event, Counted):
                tally.latest[index] = event.usage
                continue
            if isinstance(event, Started | Finished):
                tally.latest[index] = event.usage
            yield event


async def _run(request: Request, model_id: str, input_tokens: int, max_tokens: int,
               streams: list[AsyncGenerator[NodeEvent, None]],
               combine: Combine = total_usage) -> Events:
    """Admit ``input_tokens`` and ``max_tokens`` for each stream, then the streams side by
    side, settled with their final usage, or the usage so far when they are cut short."""
    admission = await admit(request, model_id, input_tokens, max_tokens * len(streams))
    tally = _Tally([Usage() for _ in streams], combine)
    tallied = [_tallied(i, s, tally) for i, s in enumerate(streams)]
    return admission.watch(merged(tallied, combine), final_usage, tally.so_far)


def plan_chat(model: ChatModel, chat: ChatRequest,
              prompt_of: Callable[[ChatRequest], Prompt] | None = None
              ) -> tuple[ChatRequest, Prompt]:
    """The request with its output cap decided, and its prompt."""
    chat = capped(chat, model.card)
    return chat, (prompt_of or model.prompt)(chat)


async def chat_choices(request: Request, model: ChatModel, chat: ChatRequest, prompt: Prompt,
                       choices: int = 1) -> Events:
    """``choices`` replies to one chat request, each seeded apart."""
    model.room(prompt.tokens)   # a prompt past the window takes nothing from the limits
    streams = [model.stream(replace(chat, sampling=seeded(chat.sampling, i)), prompt)
               for i in range(choices)]
    return await _run(request, chat.model, len(prompt.tokens), model.cap(chat), streams)


async def chat_reply(request: Request, model: ChatModel, chat: ChatRequest, prompt: Prompt,
                     tools: ServerTools | None = None) -> AsyncGenerator[ChatEvent, None]:
    """The one reply to a chat request, through the server-tool loop where it offers server
    tools (run by ``tools``; none: each call is answered ``unavailable``)."""
    model.room(prompt.tokens)
    stream = with_server_tools(model, tools or ServerTools(), chat, prompt)
    events = await _run(request, chat.model, len(prompt.tokens), model.cap(chat), [stream])
    return _one(events)


async def text_choices(request: Request, model: ChatModel, prompts: list[list[int]],
                       base: TextRequest, choices: int) -> Events:
    """``choices`` continuations of each prompt, prompt by prompt; the usage of the whole
    counts each prompt once and every output."""
    cap = output_cap(base.max_tokens, model.card)
    requests = [replace(base, prompt=tokens, max_tokens=cap,
                        sampling=seeded(base.sampling, j))
                for tokens in prompts for j in range(choices)]
    streams = [stream_text(model, r) for r in requests]
    return await _run(request, base.model, sum(map(len, prompts)), cap, streams,
                      _per_prompt(choices))


async def _one(events: Events) -> AsyncGenerator[ChatEvent, None]:
    async with aclosing(events):
        async for item in events:
            if isinstance(item, ChoiceEvent):
                yield item.event


def _per_prompt(n: int) -> Combine:
    """Usage of all choices: each prompt counted once, every output."""
    def combine(finals: list[Usage]) -> Usage:
        firsts = finals[::n]
        return Usage(sum(u.input_tokens for u in firsts), sum(u.output_tokens for u in finals),
                     sum(u.cached_tokens for u in firsts))
    return combine


__all__ = ["Events", "chat_choices", "chat_reply", "plan_chat", "text_choices"]
