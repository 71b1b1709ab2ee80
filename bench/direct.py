"""The same one-token request without any server: the baseline that tells how much
latency each server's own layers (HTTP, authentication, limits, wire formats, usage
accounting) add.

Both baselines go from chat messages to one token in process: chat template, tokens,
engine. llama-cpp-python's ``create_chat_completion`` does all three, so ours does too.
A baseline is loaded in this process beside its server once the server's other
measurements are done; the two then take turns in short blocks (never at the same
time), so that the machine's drift over the run reaches both alike.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any, Protocol

from . import workload
from .servers import Setup


class Baseline(Protocol):
    async def __aenter__(self) -> Baseline: ...

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None: ...

    async def once(self) -> float:
        """Seconds for one token from the short question, in process."""
        ...


class OurEngine:
    """Our chat model and engine alone: template, tokens, one token out."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.model: Any = None
        self.request: Any = None

    async def __aenter__(self) -> OurEngine:
        from b3os_infer.compose import load_gguf_model
        from b3os_infer.config import EngineConfig, LlamacppModel
        from b3os_infer.openai_api.decode import decode_chat_request

        setup = self.setup
        self.model = load_gguf_model(
            LlamacppModel(path=setup.model_path, context_window=setup.context_window),
            EngineConfig(threads=setup.threads, parallel=setup.parallel), b"bench")
        self.request, _ = decode_chat_request({"model": self.model.card.id, "max_tokens": 1,
                                               "temperature": 0.0,
                                               "messages": workload.short_question()})
        await self.model.engine.ensure_loaded()   # the load is not what is timed
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.model.engine.close()

    async def once(self) -> float:
        started = time.perf_counter()
        generation = self.model.generation(self.request, self.model.prompt(self.request))
        async for _ in self.model.engine.generate(generation):
            pass
        return time.perf_counter() - started


class PeerLibrary:
    """llama-cpp-python's ``Llama`` alone, as its server calls it."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.llm: Any = None
        self.messages: Any = workload.short_question()

    async def __aenter__(self) -> PeerLibrary:
        import llama_cpp

        setup = self.setup
        self.llm = llama_cpp.Llama(model_path=setup.model_path, n_ctx=setup.context_window,
                                   n_threads=setup.threads, n_threads_batch=setup.threads,
                                   verbose=False)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        self.llm.close()

    async def once(self) -> float:
        started = time.perf_counter()
        self.llm.create_chat_completion(self.messages, max_tokens=1, temperature=0.0,
                                        repeat_penalty=1.0)
        return time.perf_counter() - started
