"""The same one-token request without any server: the baseline that tells how much
latency each server's own layers (HTTP, authentication, limits, wire formats, usage
accounting) add.

Both baselines go from chat messages to one token in process: chat template, tokens,
engine. llama-cpp-python's ``create_chat_completion`` does all three, so ours does too.
Each runs in this process after its server has stopped, never beside it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from . import workload
from .servers import Setup


def _timed(call: Callable[[], Any], samples: int) -> list[float]:
    for _ in range(10):
        call()
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return times


def our_engine(setup: Setup, samples: int = 200) -> list[float]:
    """Our chat model and engine alone: template, tokens, one token out."""
    from b3os_infer.config import EngineConfig, ModelConfig
    from b3os_infer.node.loader import load_gguf_model
    from b3os_infer.openai_api.decode import decode_chat_request

    model = load_gguf_model(
        ModelConfig(path=setup.model_path, context_window=setup.context_window),
        EngineConfig(threads=setup.threads, parallel=setup.parallel), b"bench")
    request, _ = decode_chat_request({"model": model.card.id, "max_tokens": 1,
                                      "temperature": 0.0,
                                      "messages": workload.short_question()})

    async def run() -> list[float]:
        await model.engine.start()
        loop = asyncio.get_running_loop()

        async def once() -> None:
            generation = model.generation(request, model.prompt(request))
            async for _ in model.engine.generate(generation):
                pass

        try:
            times = []
            for index in range(samples + 10):
                started = loop.time()
                await once()
                if index >= 10:
                    times.append(loop.time() - started)
            return times
        finally:
            await model.engine.close()

    return asyncio.run(run())


def peer_library(setup: Setup, samples: int = 200) -> list[float]:
    """llama-cpp-python's ``Llama`` alone, as its server calls it."""
    import llama_cpp

    llm = llama_cpp.Llama(model_path=setup.model_path, n_ctx=setup.context_window,
                          n_threads=setup.threads, n_threads_batch=setup.threads,
                          verbose=False)
    messages: Any = workload.short_question()
    try:
        return _timed(lambda: llm.create_chat_completion(
            messages, max_tokens=1, temperature=0.0, repeat_penalty=1.0), samples)
    finally:
        llm.close()
