"""Interactive work first (engine/priority.py): the class a generation gets from where it
runs, and the order and share an engine's step gives each class."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from b3os_infer.engine.base import GenerationRequest
from b3os_infer.engine.priority import (
    BACKGROUND_CHUNK,
    Priority,
    background,
    chunk_limit,
    current_priority,
    interactive_first,
    interactive_prefills,
    runs_now,
)


@dataclass
class Seq:
    name: str
    priority: Priority
    prefilling: bool = False


def names(sequences: list[Seq]) -> list[str]:
    return [s.name for s in sequences]


def test_generations_are_interactive_unless_started_inside_background():
    assert current_priority() == "interactive"
    assert GenerationRequest(prompt=[1], max_tokens=1).priority == "interactive"
    with background():
        assert current_priority() == "background"
    assert current_priority() == "interactive"


def test_tasks_started_inside_background_are_background_and_others_are_not():
    async def seen() -> Priority:
        await asyncio.sleep(0)
        return current_priority()

    async def main() -> tuple[Priority, Priority]:
        with background():
            batch = asyncio.create_task(seen())
        other = asyncio.create_task(seen())
        return await batch, await other

    assert asyncio.run(main()) == ("background", "interactive")


def test_interactive_sequences_come_first_each_class_in_its_own_order():
    mixed = [Seq("b1", "background"), Seq("i1", "interactive"), Seq("b2", "background"),
             Seq("i2", "interactive")]
    assert names(interactive_first(mixed)) == ["i1", "i2", "b1", "b2"]


def test_background_sequences_sit_out_the_steps_while_an_interactive_one_prefills():
    decoding = Seq("i", "interactive")
    batch = [Seq("b1", "background", prefilling=True), Seq("b2", "background")]
    assert not interactive_prefills([decoding, *batch])   # a background prefill: no yield
    prefilling = Seq("j", "interactive", prefilling=True)
    members = [*batch, decoding, prefilling]
    assert interactive_prefills(members)
    assert names(runs_now(members, yielding=True)) == ["i", "j"]
    assert names(runs_now(members, yielding=False)) == ["b1", "b2", "i", "j"]


def test_a_background_prompt_chunk_is_bounded_and_an_interactive_one_takes_the_budget():
    assert chunk_limit("interactive", 512) == 512
    assert chunk_limit("background", 512) == BACKGROUND_CHUNK
    assert chunk_limit("background", 40) == 40
