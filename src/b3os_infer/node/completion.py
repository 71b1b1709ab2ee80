"""Raw completions: the model continues the prompt text itself, no template, no parsing.

The same engine, stop matching, log-probabilities and usage as chat replies; only the
reply is never split into reasoning or tool calls.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from ..core import ChatEvent, Finished, Started, TextDelta, TextRequest, Usage
from ..engine.base import NOT_A_TOKEN, Admitted, GenerationDone, GenerationRequest
from ..observe.context import observed_reply, watch_generation
from ..stops import StopMatcher
from .chat import ChatModel, prompt_usage


@observed_reply("text_completion")
async def stream_text(model: ChatModel, request: TextRequest, so_far: Usage | None = None
                      ) -> AsyncGenerator[ChatEvent, None]:
    """The continuation as events; ``so_far`` keeps the usage up to now (see ``ChatModel.
    stream``)."""
    room = model.room(request.prompt, param="prompt")
    model.check_logit_bias(request.sampling)
    generation = GenerationRequest(prompt=request.prompt,
                                   max_tokens=min(request.max_tokens, room),
                                   sampling=request.sampling, top_logprobs=request.top_logprobs)
    stops = StopMatcher(request.stop)
    cached = generated = 0
    so_far = Usage() if so_far is None else so_far

    def usage() -> Usage:
        return prompt_usage(len(request.prompt), cached, generated)

    engine_events = model.engine.generate(generation)
    async with aclosing(watch_generation(model.card.id, generation, engine_events)) as events:
        async for event in events:
            if isinstance(event, Admitted):
                cached = event.cached_tokens
                started = usage()
                so_far.input_tokens, so_far.cached_tokens = started.input_tokens, cached
                yield Started(started)
            elif isinstance(event, GenerationDone):
                tail = stops.flush()
                if tail:
                    yield TextDelta(tail)
                generated = event.generated_tokens
                done = usage()
                done.drafted_tokens = event.drafted_tokens
                done.accepted_tokens = event.accepted_tokens
                yield Finished("length" if event.reason == "length" else "end", None, done)
                return
            else:
                generated += 0 if event.token == NOT_A_TOKEN else 1
                so_far.output_tokens = generated
                scored = model.scored(event) if request.top_logprobs is not None else None
                if scored is not None:
                    yield scored
                safe, matched = stops.feed(event.text)
                if safe:
                    yield TextDelta(safe)
                if matched is not None:
                    yield Finished("stop_string", matched, usage())
                    return
