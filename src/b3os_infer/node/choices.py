"""Several choices of one request, generated side by side and read as one stream.

The engine batches the choices like any concurrent requests; here their event streams
are interleaved, each event tagged with its choice, and one ``AllFinished`` closes the
whole with the usage of all choices (the prompt counted once, the outputs summed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing, suppress
from dataclasses import dataclass, replace

from ..core import ChatEvent, ChatResult, Finished, Sampling, Usage
from .folding import Folder


@dataclass(frozen=True)
class ChoiceEvent:
    index: int
    event: ChatEvent


@dataclass(frozen=True)
class AllFinished:
    usage: Usage


def final_usage(item: ChoiceEvent | AllFinished) -> Usage | None:
    """The usage of the whole, from the item that ends a merged stream."""
    return item.usage if isinstance(item, AllFinished) else None


def seeded(sampling: Sampling, choice: int) -> Sampling:
    """Choice ``i`` of a seeded request samples with ``seed + i``: reproducible, yet
    different from its siblings."""
    if sampling.seed is None or choice == 0:
        return sampling
    return replace(sampling, seed=sampling.seed + choice)


def total_usage(finals: list[Usage]) -> Usage:
    """The usage of choices of one prompt: the prompt once, everything else summed."""
    first = finals[0]
    return Usage(first.input_tokens, sum(u.output_tokens for u in finals), first.cached_tokens,
                 sum(u.reasoning_tokens for u in finals),
                 web_search_requests=sum(u.web_search_requests for u in finals),
                 web_fetch_requests=sum(u.web_fetch_requests for u in finals),
                 drafted_tokens=sum(u.drafted_tokens for u in finals),
                 accepted_tokens=sum(u.accepted_tokens for u in finals))


def merged(streams: list[AsyncGenerator[ChatEvent, None]],
           combine: Callable[[list[Usage]], Usage] = total_usage
           ) -> AsyncGenerator[ChoiceEvent | AllFinished, None]:
    """Events of every stream as they come; a failure in one ends them all. ``combine``
    makes the usage of the whole from each choice's (in choice order)."""
    if len(streams) == 1:
        return _single(streams[0], combine)
    return _interleaved(streams, combine)


async def _single(stream: AsyncGenerator[ChatEvent, None],
                  combine: Callable[[list[Usage]], Usage]
                  ) -> AsyncGenerator[ChoiceEvent | AllFinished, None]:
    """The common case, one choice, without tasks."""
    async with aclosing(stream):
        async for event in stream:
            yield ChoiceEvent(0, event)
            if isinstance(event, Finished):
                yield AllFinished(combine([event.usage]))


async def _pump(index: int, stream: AsyncGenerator[ChatEvent, None],
                queue: asyncio.Queue[tuple[int, ChatEvent | BaseException | None]]) -> None:
    """One choice's events into the shared queue, then None (or its failure)."""
    try:
        async with aclosing(stream):
            async for event in stream:
                await queue.put((index, event))
        await queue.put((index, None))
    except Exception as exc:  # noqa: BLE001 - handed to the reader
        await queue.put((index, exc))


async def _interleaved(streams: list[AsyncGenerator[ChatEvent, None]],
                       combine: Callable[[list[Usage]], Usage]
                       ) -> AsyncGenerator[ChoiceEvent | AllFinished, None]:
    queue: asyncio.Queue[tuple[int, ChatEvent | BaseException | None]] = asyncio.Queue()
    tasks = [asyncio.create_task(_pump(i, s, queue)) for i, s in enumerate(streams)]
    finals: dict[int, Usage] = {}
    try:
        running = len(tasks)
        while running:
            index, item = await queue.get()
            if item is None:
                running -= 1
                continue
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, Finished):
                finals[index] = item.usage
            yield ChoiceEvent(index, item)
        yield AllFinished(combine([finals[i] for i in sorted(finals)]))
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with suppress(asyncio.CancelledError):
                await task


async def fold_choices(events: AsyncGenerator[ChoiceEvent | AllFinished, None], count: int
                       ) -> tuple[list[ChatResult], Usage]:
    """Every choice whole, and the usage of all of them."""
    folders = [Folder() for _ in range(count)]
    results: list[ChatResult | None] = [None] * count
    async with aclosing(events):
        async for item in events:
            if isinstance(item, AllFinished):
                return [r for r in results if r is not None], item.usage
            event = item.event
            if isinstance(event, Finished):
                results[item.index] = folders[item.index].result(event)
            else:
                folders[item.index].add(event)
    raise RuntimeError("the generation ended without a final event")
