"""Models that load on their first request and unload when idle.

A chat model's engine is an ``OnDemandEngine``: its vocabulary, chat template and card are
read without the weights, so the model is listed, counted and validated against while
unloaded; its first generation loads the weights (concurrent first requests wait for the
same load) and each later one finds them loaded. The ``Keeper`` holds the node's bounds:
how many models may be loaded at once and how much memory their weights and KV may take.
Before a load it unloads the least recently used idle models that stand in the way; a model
idle for its ``keep_alive`` seconds is unloaded by its reaper (-1: never; 0: as soon as
it is idle). A model with work running or waiting, or pinned, is never unloaded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ..engine.base import (
    Engine,
    EngineEvent,
    EngineInfo,
    GenerationRequest,
    KvUsage,
    ReportsProblems,
    kv_usage,
)
from ..errors import Conflict, EngineUnavailable
from ..observe.context import note_load

log = logging.getLogger(__name__)

LoadState = Literal["loaded", "loading", "unloaded"]
NEVER_UNLOAD = -1
DEFAULT_KEEP_ALIVE = 300


class Vocabulary(Protocol):
    """What a node needs of a model's tokens before its weights are loaded."""

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]: ...

    def token_bytes(self, token: int) -> bytes: ...


@dataclass(frozen=True)
class Residency:
    """How one model stays in memory: ``keep_alive`` idle seconds before it is unloaded
    (-1 never, 0 at once); ``weight_bytes`` what its weights take (its file size)."""

    keep_alive: int = DEFAULT_KEEP_ALIVE
    weight_bytes: int = 0


@dataclass(frozen=True)
class Bounds:
    """The node's bounds on loaded models (0: none): how many, and their bytes in all."""

    max_models: int = 0
    max_bytes: int = 0


@dataclass(frozen=True)
class Resident:
    """One chat model's residency, as the admin API and ``status`` show it."""

    id: str
    state: LoadState
    on_demand: bool                  # False: always loaded (scripted, upstream)
    pinned: bool = False
    keep_alive: int = NEVER_UNLOAD
    keep_alive_left: int | None = None   # seconds; None: not loaded, or never unloaded
    memory_bytes: int = 0            # weights and KV while loaded
    load_seconds: float | None = None    # the last load's
    problem: str | None = None


class CannotLoad(EngineUnavailable):
    """A model that could not be loaded; the code names the reason (``model_load_failed``,
    ``model_too_large``, ``models_busy``)."""


class OnDemandEngine:
    """An engine that is built when first needed and dropped when idle."""

    def __init__(self, model_id: str, build: Callable[[], Engine], vocabulary: Vocabulary,
                 info: EngineInfo, keeper: Keeper, residency: Residency = Residency()) -> None:
        self.model_id = model_id
        self._build = build
        self._vocabulary = vocabulary
        # what it serves: as asked until its first load, then what the load gave
        self.info = info
        self.keeper = keeper
        self.residency = residency
        self.pinned = False
        self.engine: Engine | None = None
        self.failure: str | None = None     # why its last load failed, until one succeeds
        self.last_used = time.monotonic()
        self.loaded_bytes = 0
        self.load_seconds: float | None = None
        self._loading: asyncio.Task[Engine] | None = None
        self._users = 0
        self._listeners: list[Callable[[EngineInfo], None]] = []
        keeper.track(self)

    # ---- what the node reads, loaded or not -----------------------------------------

    @property
    def state(self) -> LoadState:
        if self.engine is not None:
            return "loaded"
        return "loading" if self._loading is not None else "unloaded"

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return self._vocabulary.tokenize(text, add_special=add_special)

    def token_bytes(self, token: int) -> bytes:
        return self._vocabulary.token_bytes(token)

    def on_loaded(self, listener: Callable[[EngineInfo], None]) -> None:
        """``listener`` gets the engine's info after each load (the window it serves)."""
        self._listeners.append(listener)

    def busy(self) -> bool:
        if self._users or self._loading is not None:
            return True
        load = self.engine.load() if self.engine is not None else {}
        return bool(load.get("active") or load.get("waiting"))

    def idle_for(self, now: float) -> float:
        return 0.0 if self.busy() else now - self.last_used

    def keep_alive_left(self, now: float) -> float | None:
        """Seconds until the reaper unloads it; None when it is not loaded or never will be."""
        keep = self.residency.keep_alive
        if self.engine is None or self.pinned or keep < 0:
            return None
        return max(keep - self.idle_for(now), 0.0) if not self.busy() else float(keep)

    def resident(self, now: float) -> Resident:
        left = self.keep_alive_left(now)
        return Resident(self.model_id, self.state, True, self.pinned,
                        self.residency.keep_alive, None if left is None else round(left),
                        self.loaded_bytes, self.load_seconds, self.problem())

    # ---- the engine seam ---------------------------------------------------------------

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[EngineEvent, None]:
        self._users += 1
        try:
            engine = await self.ensure_loaded()
            async for event in engine.generate(request):
                yield event
        finally:
            self._users -= 1
            self.last_used = time.monotonic()
            self.keeper.wake()

    def healthy(self) -> bool:
        """A model that is not loaded is healthy: its next request loads it. A load that
        failed is its ``problem`` (that request's 503 said why), not the node's health."""
        return self.engine is None or self.engine.healthy()

    def problem(self) -> str | None:
        if self.failure is not None:
            return self.failure
        if isinstance(self.engine, ReportsProblems):
            return self.engine.problem()
        return None

    def load(self) -> dict[str, int]:
        load = self.engine.load() if self.engine is not None else {"active": 0, "waiting": 0}
        if self.engine is None and self._users:
            load = {**load, "waiting": load.get("waiting", 0) + self._users}
        return load

    def kv_usage(self) -> KvUsage | None:
        return kv_usage(self.engine) if self.engine is not None else None

    async def start(self) -> None:
        """Nothing loads at start unless asked (``preload``)."""

    async def close(self) -> None:
        if self._loading is not None:
            self._loading.cancel()
        await self.unload()

    # ---- loading and unloading -------------------------------------------------------

    async def ensure_loaded(self) -> Engine:
        """The loaded engine; the first caller starts the load, later ones wait for it.

        A caller that goes away while waiting leaves the load running for the others."""
        if self.engine is not None:
            self.last_used = time.monotonic()
            return self.engine
        if self._loading is None:
            self._loading = asyncio.create_task(self._load())
        began = time.perf_counter_ns()
        try:
            return await asyncio.shield(self._loading)
        except CannotLoad as exc:   # each waiter its own error: answering one changes it
            raise CannotLoad(exc.message, code=exc.code, retry_after=exc.retry_after,
                             detail=exc.detail) from None
        finally:
            note_load(began, time.perf_counter_ns())

    async def _load(self) -> Engine:
        try:
            async with self.keeper.loading(self):
                began = time.monotonic()
                log.info("loading %s (%s of weights)", self.model_id,
                         _size(self.residency.weight_bytes))
                engine = await self._built()
                await engine.start()
                self.load_seconds = time.monotonic() - began
                self.engine, self.failure, self.info = engine, None, engine.info
                self.loaded_bytes = self.residency.weight_bytes + _kv_bytes(engine)
                self.last_used = time.monotonic()
                log.info("loaded %s in %.1f s: %s", self.model_id, self.load_seconds,
                         engine.info.description)
                for listener in self._listeners:
                    listener(engine.info)
                return engine
        except CannotLoad as exc:
            if exc.code != "models_busy":     # no room now is not the model's problem
                self.failure = exc.message
            raise
        finally:
            self._loading = None

    async def _built(self) -> Engine:
        try:
            return await asyncio.to_thread(self._build)
        except (OSError, RuntimeError, ValueError) as exc:
            log.error("could not load %s: %s", self.model_id, exc)
            raise CannotLoad(f"{self.model_id} could not be loaded; the server log says why",
                             code="model_load_failed", detail=str(exc)) from exc

    async def unload_when_idle(self) -> bool:
        """Unload it now, unpinned, unless work runs or waits on it (then a 409)."""
        async with self.keeper.held():
            if self.busy():
                raise Conflict(f"{self.model_id} has requests running or waiting; unload it "
                               "when they are done", code="model_busy")
            self.pinned = False
            return await self.unload()

    async def unload(self) -> bool:
        """Drop the weights and KV; False when nothing was loaded."""
        engine, self.engine = self.engine, None
        if engine is None:
            return False
        self.loaded_bytes = 0
        await engine.close()
        log.info("unloaded %s", self.model_id)
        return True


def load_state(engine: object) -> LoadState:
    """A model's state from its engine: an engine that does not load on demand is loaded."""
    return engine.state if isinstance(engine, OnDemandEngine) else "loaded"


def residency_report(engine: object, now: float) -> dict[str, bool | int | str]:
    """What ``/healthz`` says of a model's residency: its state, and when it loads on
    demand its memory, whether it is pinned and, while loaded, the seconds of keep-alive
    left (-1: never unloaded); read from its ``Resident``."""
    if not isinstance(engine, OnDemandEngine):
        return {"state": "loaded"}
    resident = engine.resident(now)
    report: dict[str, bool | int | str] = {"state": resident.state,
                                           "memory_bytes": resident.memory_bytes,
                                           "pinned": resident.pinned}
    if resident.state == "loaded":
        left = resident.keep_alive_left
        report["keep_alive_left"] = -1 if left is None else left
    return report


class Keeper:
    """The node's loaded models: loads one at a time within the bounds, unloads idle ones."""

    def __init__(self, bounds: Bounds = Bounds(), *, tick_seconds: float = 1.0,
                 memory: Callable[[], int] | None = None) -> None:
        self.bounds = bounds
        self.models: list[OnDemandEngine] = []
        self._lock = asyncio.Lock()
        self._tick = tick_seconds
        self._memory = memory
        self._wake: asyncio.Event | None = None
        self._reaper: asyncio.Task[None] | None = None

    def track(self, model: OnDemandEngine) -> None:
        self.models.append(model)

    def loaded(self) -> list[OnDemandEngine]:
        return [m for m in self.models if m.engine is not None]

    def loading(self, model: OnDemandEngine) -> _LoadSlot:
        return _LoadSlot(self, model)

    def held(self) -> asyncio.Lock:
        """The lock loads and unloads take, one at a time."""
        return self._lock

    async def make_room(self, model: OnDemandEngine) -> None:
        """Unload least recently used idle models until ``model`` fits the bounds."""
        self._check_fits_at_all(model)
        while not self._fits(model):
            victim = self._least_recent_idle(model)
            if victim is None:
                raise CannotLoad(
                    f"{model.model_id} cannot be loaded now: the models loaded are busy or "
                    "pinned and no other fits beside them; retry shortly",
                    code="models_busy", retry_after=5)
            log.info("unloading %s (least recently used) to make room for %s",
                     victim.model_id, model.model_id)
            await victim.unload()

    def _check_fits_at_all(self, model: OnDemandEngine) -> None:
        weights = model.residency.weight_bytes
        limit = self.bounds.max_bytes
        if limit and weights > limit:
            raise CannotLoad(f"{model.model_id} needs {_size(weights)} for its weights, more "
                             f"than the node's bound on loaded models ({_size(limit)})",
                             code="model_too_large")
        available = self._memory() if self._memory is not None else None
        if available is None:
            return
        freeable = sum(m.loaded_bytes for m in self.loaded()
                       if m is not model and not m.busy() and not m.pinned)
        if weights > available + freeable:
            raise CannotLoad(f"{model.model_id} needs {_size(weights)} for its weights and "
                             f"this machine has {_size(available + freeable)} to give it",
                             code="model_too_large")

    def _fits(self, model: OnDemandEngine) -> bool:
        loaded = [m for m in self.loaded() if m is not model]
        if self.bounds.max_models and len(loaded) >= self.bounds.max_models:
            return False
        used = sum(m.loaded_bytes for m in loaded)
        limit = self.bounds.max_bytes
        return not limit or used + model.residency.weight_bytes <= limit

    def _least_recent_idle(self, model: OnDemandEngine) -> OnDemandEngine | None:
        idle = [m for m in self.loaded() if m is not model and not m.busy() and not m.pinned]
        return min(idle, key=lambda m: m.last_used, default=None)

    # ---- the reaper ------------------------------------------------------------------

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def start(self) -> None:
        if self._reaper is None:
            self._wake = asyncio.Event()
            self._reaper = asyncio.create_task(self._reap_forever())

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
            self._reaper = None

    async def reap(self) -> list[str]:
        """Unload every loaded model idle past its keep_alive; their ids."""
        now = time.monotonic()
        gone = []
        for model in self.loaded():
            keep = model.residency.keep_alive
            if model.pinned or keep < 0 or model.busy() or model.idle_for(now) < keep:
                continue
            async with self._lock:
                if model.pinned or model.busy() or model.engine is None:
                    continue
                log.info("unloading %s: idle for %.0f s (keep_alive %d)", model.model_id,
                         model.idle_for(now), keep)
                await model.unload()
                gone.append(model.model_id)
        return gone

    async def _reap_forever(self) -> None:
        assert self._wake is not None
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self._tick)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.reap()
            except Exception:  # noqa: BLE001 - the reaper outlives one failed unload
                log.exception("unloading idle models failed")


class _LoadSlot:
    """The keeper's lock for one load, with room made for it first."""

    def __init__(self, keeper: Keeper, model: OnDemandEngine) -> None:
        self.keeper = keeper
        self.model = model

    async def __aenter__(self) -> None:
        await self.keeper._lock.acquire()
        try:
            await self.keeper.make_room(self.model)
        except BaseException:
            self.keeper._lock.release()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.keeper._lock.release()


def _kv_bytes(engine: Engine) -> int:
    """The KV memory an engine reserved, when it says (``kv_bytes``); else 0."""
    value = getattr(engine, "kv_bytes", 0)
    return value if isinstance(value, int) else 0


def _size(count: int) -> str:
    return f"{count / 2**20:,.0f} MiB"


def file_bytes(path: Path) -> int:
    """A model file's size; 0 when it cannot be read (its load then says why)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
