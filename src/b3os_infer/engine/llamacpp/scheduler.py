"""The scheduler thread: it owns the llama contexts and, each turn, takes in new requests,
drops cancelled ones, moves outgrown replies, admits what fits, and steps every lane that
has work. The event loop only ever waits on queues."""

from __future__ import annotations

import logging
import queue
import threading

from ...errors import InternalError, InvalidRequest
from .disk_cache import DiskCache
from .drafting import SharedPool
from .lanes import Lane
from .model import Model
from .placement import Seating
from .precedence import interactive_first, interactive_prefills, this_step, unseated_interactive
from .samplers import sampler_chain
from .sampling import Replies
from .sequence import Outbox, Sequence, failed
from .settings import LlamaCppSettings
from .steps import Steps

# the engine's one log, whichever of its modules writes
log = logging.getLogger("b3os_infer.engine.llamacpp")

_SCHEDULER_STACK_BYTES = 512 * 1024 * 1024


class Scheduler:
    """Sequences waiting and running, and the thread that runs them."""

    def __init__(self, settings: LlamaCppSettings, model: Model, lanes: list[Lane],
                 disk: DiskCache | None) -> None:
        self.model = model
        self.inbox: queue.Queue[Sequence | None] = queue.Queue()
        self.waiting: list[Sequence] = []
        self.active: list[Sequence] = []
        # interactive sequences the last admission left without a slot (load())
        self.interactive_waiting = 0
        self._thread: threading.Thread | None = None
        self.stopping = False
        self._outbox = Outbox()
        self.seating = Seating(settings, lanes, disk, self._outbox)
        self._pool = SharedPool(settings.draft_pool_tokens) if settings.speculative else None
        self.replies = Replies(model, self._outbox, self.seating.long_lane, self.release)
        self.steps = Steps(self.replies, self._pool, self.release)

    def start(self) -> None:
        if self._thread is None:
            # llama.cpp's grammar engine recurses deeply on large tool sets (Claude Code sends
            # dozens of tools); the default thread stack overflows on them
            previous = threading.stack_size(_SCHEDULER_STACK_BYTES)
            try:
                self._thread = threading.Thread(target=self._run, name="llamacpp-scheduler",
                                                daemon=True)
                self._thread.start()
            finally:
                threading.stack_size(previous)

    def stop(self) -> None:
        """Tell the thread to stop (``join`` waits until it has)."""
        self.stopping = True
        self.inbox.put(None)

    @property
    def started(self) -> bool:
        return self._thread is not None

    def join(self) -> None:
        assert self._thread is not None
        self._thread.join()
        self._thread = None

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self.stopping

    def prefill_left(self) -> int:
        """Prompt tokens still to compute."""
        return sum(len(s.feed) for s in self.active if len(s.feed) > 1)

    def _run(self) -> None:
        while not self.stopping:
            self._drain_inbox(block=not self.active and not self.waiting)
            self._reap_cancelled()
            self.seating.move_outgrown(self.active, self.replies.finish)
            self._admit()
            yielding = interactive_prefills(self.active)   # interactive first: precedence.py
            for lane in self.seating.lanes:
                # from the active list as it is now: a step of an earlier lane may have
                # ended sequences (their slot is gone)
                members = this_step((s for s in self.active if s.lane is lane and not s.moving),
                                    yielding=yielding)
                if not members:
                    continue
                try:
                    self.steps.step(lane, members)
                except Exception as exc:  # a failed decode fails the sequences in it
                    log.exception("decode step failed")
                    for sequence in members:
                        self._outbox.put(sequence, failed(exc))
                        self.release(sequence, keep_kv=False)
            self._outbox.flush()  # admission alone may have answered (or refused) some
        for sequence in self.active + self.waiting:
            self._outbox.put(sequence, InternalError("the engine is shutting down"))
            self.release(sequence)
        self._outbox.flush()

    def _drain_inbox(self, *, block: bool) -> None:
        try:
            item = self.inbox.get(timeout=0.5) if block else self.inbox.get_nowait()
        except queue.Empty:
            return
        while True:
            if item is not None:
                self.waiting.append(item)
            try:
                item = self.inbox.get_nowait()
            except queue.Empty:
                return

    def _reap_cancelled(self) -> None:
        self.waiting = [s for s in self.waiting if not s.cancelled]
        for sequence in [s for s in self.active if s.cancelled]:
            self.release(sequence)

    def _admit(self) -> None:
        still: list[Sequence] = []
        for candidate in interactive_first(self.waiting):
            lane = self.seating.lane_for(candidate.request)
            if lane is None:
                still.append(candidate)
                continue
            try:
                candidate.sampler = sampler_chain(self.model.vocab, candidate.request)
            except ValueError as exc:
                self._outbox.put(candidate, InvalidRequest(str(exc)))
                continue
            except Exception as exc:  # never let one request stop the scheduler
                log.exception("building a sampler failed")
                self._outbox.put(candidate, failed(exc))
                continue
            row = self.seating.seat(candidate, lane)
            self.active.append(candidate)
            if row is not None:  # its whole prompt is in KV, its next logits still here
                self.replies.sample(candidate, row)
        self.waiting = still
        self.interactive_waiting = unseated_interactive(still)

    def release(self, sequence: Sequence, *, keep_kv: bool = True) -> None:
        """Free the slot; its KV stays for the next request that shares the prefix (and,
        when long and new, is saved to disk)."""
        if sequence in self.active:
            self.active.remove(sequence)
        if sequence.progress is not None:
            sequence.progress.finish(cancelled=True)
            sequence.progress = None
        self.seating.vacate(sequence, keep_kv=keep_kv)
        if sequence.sampler is not None:
            sequence.sampler.free()
            sequence.sampler = None
        if self._pool is not None and sequence.reply:
            self._pool.add(sequence.reply)
            sequence.reply = []
