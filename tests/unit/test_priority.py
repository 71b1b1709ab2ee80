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
    current_priority,
    interactive_first,
    prompt_chunk,
    this_step,
    unseated_interactive,
)


@dataclass
class Request:
    priority: Priority


class Seq:
    """A sequence as the engine keeps it: its request, and its prompt still to compute
    (a decoding one holds one token, its last)."""

    def __init__(self, name: str, priority: Priority, prefilling: bool = False) -> None:
        self.name = name
        self.request = Request(priority)
        self.feed = [1, 2, 3] if prefilling else [1]


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
    # a background prefill beside an interactive decode: all run, interactive first
    assert names(this_step([*batch, decoding])) == ["i", "b1", "b2"]
    prefilling = Seq("j", "interactive", prefilling=True)
    assert names(this_step([*batch, decoding, prefilling])) == ["i", "j"]
    assert names(this_step(batch)) == ["b1", "b2"]


def test_interactive_sequences_left_without_a_slot_are_counted_and_background_not():
    assert unseated_interactive([Seq("b", "background"), Seq("i", "interactive"),
                                 Seq("j", "interactive", prefilling=True)]) == 2
    assert unseated_interactive([Seq("b", "background")]) == 0


def test_a_background_prompt_chunk_is_bounded_and_an_interactive_one_takes_the_budget():
    assert prompt_chunk(Seq("i", "interactive", True), 512) == 512
    assert prompt_chunk(Seq("b", "background", True), 512) == BACKGROUND_CHUNK
    assert prompt_chunk(Seq("b", "background", True), 40) == 40
