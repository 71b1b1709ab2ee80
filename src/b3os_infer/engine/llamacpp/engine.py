"""``LlamaCppEngine``: the Engine of engine/base.py over the model, its lanes and the
scheduler thread, and its lifecycle: everything is loaded when it is made, the thread
runs from ``start`` to ``close``, which frees the contexts and the weights."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator

from ...errors import InternalError
from ..base import EngineEvent, EngineInfo, GenerationDone, GenerationRequest, KvUsage, check_fits
from ..memory_plan import available_memory
from .contexts import KV_TYPES, open_disk_cache, open_lanes, plan_kv
from .devices import device_name, gpu_backend, gpu_offload, model_params
from .gguf import quiet_llama
from .lanes import Lane
from .model import Model
from .scheduler import Scheduler
from .sequence import Sequence
from .settings import LlamaCppSettings

# the engine's one log, whichever of its modules writes
log = logging.getLogger("b3os_infer.engine.llamacpp")


class LlamaCppEngine:
    """Continuous batching over llama.cpp contexts (lanes), one KV stream per slot."""

    def __init__(self, settings: LlamaCppSettings) -> None:
        self.settings = settings
        if settings.kv_type not in KV_TYPES:
            raise ValueError(f"kv_type must be one of {', '.join(KV_TYPES)}")
        quiet_llama()
        # read before the weights are loaded, which the budget then takes off
        memory = settings.memory_bytes or available_memory()
        offload = gpu_offload()
        self.device = device_name(settings.placement, offload, gpu_backend())
        if settings.placement.gpu_layers and not offload:
            log.warning("gpu_layers = %d, but this llama.cpp build has no GPU backend: the "
                        "model runs on the CPU (make install LLAMA_BACKEND=cuda|metal|vulkan)",
                        settings.placement.gpu_layers)
        self._model_params = model_params(settings.placement, offload)
        self.model = Model(settings.model_path, self._model_params.params)
        self.trained_window = self.model.trained_window
        self.plan = plan_kv(settings, self.model, memory, self.device)
        self.lanes: list[Lane] = open_lanes(settings, self.model, self.plan, self.device)
        self._disk = open_disk_cache(settings, self.plan.window, self.trained_window)
        self.info = EngineInfo(
            context_window=self.plan.window,
            vocab_size=self.model.vocab_size,
            description=f"llama.cpp on {self.device}, {settings.n_threads} threads, "
                        f"{self.plan.describe()} ({settings.kv_type})",
            applies_grammars=True,
            slots=self.plan.slots,
            device=self.device,
        )
        self._scheduler = Scheduler(settings, self.model, self.lanes, self._disk)

    @property
    def kv_bytes(self) -> int:
        """The KV memory its lanes reserve."""
        return self.plan.bytes()

    @property
    def drafted_tokens(self) -> int:
        """Tokens drafted since start."""
        return self._scheduler.steps.drafted_tokens

    @property
    def accepted_tokens(self) -> int:
        """Drafted tokens the model agreed with, since start."""
        return self._scheduler.steps.accepted_tokens

    # ---- metadata and tokens -------------------------------------------------

    def metadata(self, key: str) -> str | None:
        return self.model.metadata(key)

    def display_name(self) -> str:
        return self.model.display_name()

    def token_text(self, token: int) -> str:
        return self.model.token_text(token)

    @property
    def bos_token_id(self) -> int:
        return self.model.bos_token_id

    @property
    def eos_token_id(self) -> int:
        return self.model.eos_token_id

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return self.model.tokenize(text, add_special=add_special)

    def token_bytes(self, token: int) -> bytes:
        return self.model.token_bytes(token)

    # ---- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        self._scheduler.start()

    async def close(self) -> None:
        scheduler = self._scheduler
        scheduler.stop()
        if scheduler.started:
            await asyncio.to_thread(scheduler.join)
        if self._disk is not None:
            await asyncio.to_thread(self._disk.close)   # the writes queued so far
        for lane in self.lanes:
            lane.close()
        self.model.close()

    def healthy(self) -> bool:
        return self._scheduler.running()

    def load(self) -> dict[str, int]:
        """Also ``interactive_waiting``: interactive sequences the last admission left
        without a slot (precedence.py; the batch runner preempts for them)."""
        scheduler = self._scheduler
        return {"active": len(scheduler.active),
                "waiting": len(scheduler.waiting) + scheduler.inbox.qsize(),
                "interactive_waiting": scheduler.interactive_waiting}

    def kv_usage(self) -> KvUsage:
        """Tokens the slots hold in KV, of all lanes' cells; read from the slots' token
        lists, which the scheduler thread keeps."""
        used = sum(lane.tokens_held() for lane in self.lanes)
        return KvUsage(used, sum(lane.tokens() for lane in self.plan.lanes))

    def cache_stats(self) -> dict[str, int]:
        """Prompt tokens still to compute, and the prefixes saved on disk."""
        return {"prefill_left": self._scheduler.prefill_left(),
                "disk_files": len(self._disk.entries()) if self._disk is not None else 0}

    # ---- the async side ----------------------------------------------------------

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[EngineEvent, None]:
        check_fits(request, self.info.context_window)
        if not self.healthy():
            raise InternalError("the engine is not running")
        sequence = Sequence(request, asyncio.get_running_loop(), asyncio.Queue())
        self._scheduler.inbox.put(sequence)
        try:
            while True:
                event = await sequence.out.get()
                if isinstance(event, BaseException):
                    raise event
                yield event
                if isinstance(event, GenerationDone):
                    return
        finally:
            sequence.cancelled = True
