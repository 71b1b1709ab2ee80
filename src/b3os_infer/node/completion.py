"""Raw completions: the model continues the prompt text itself, no template, no parsing.

The same token loop as chat replies (``decoding.py``), read as plain text.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from ..core import NodeEvent, TextRequest
from ..engine.base import GenerationRequest
from ..observe.context import observed_reply
from ..stops import StopMatcher
from .chat_model import ChatModel
from .decoding import PlainText, TokenLoop
from .output_cap import output_cap


@observed_reply("text_completion")
async def stream_text(model: ChatModel, request: TextRequest) -> AsyncGenerator[NodeEvent, None]:
    """The continuation as events."""
    room = model.room(request.prompt, param="prompt")
    model.check_logit_bias(request.sampling)
    cap = output_cap(request.max_tokens, model.card)
    generation = GenerationRequest(prompt=request.prompt, max_tokens=min(cap, room),
                                   sampling=request.sampling, top_logprobs=request.top_logprobs)
    loop = TokenLoop(model.card.id, generation, cap, PlainText(), StopMatcher(request.stop),
                     model.scored if request.top_logprobs is not None else None)
    async with aclosing(loop.events(model.engine)) as events:
        async for event in events:
            yield event
