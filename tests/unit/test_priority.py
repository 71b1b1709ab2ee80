"""Interactive work first: the class a generation gets from where it runs
(engine/priority.py), and the order and share of each step the llama.cpp scheduler gives
each class (engine/llamacpp/precedence.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from b3os_infer.engine.base import GenerationRequest
from b3os_infer.engine.llamacpp.precedence import (
    BACKGROUND_STEP_TOKENS,
    PromptBudget,
    interactive_first,
    interactive_prefills,
    this_step,
    unseated_interactive,
)
from b3os_infer.engine.priority import Priority, background, current_priority


@dataclass
class Request:
    priority: Priority


@dataclass
class Seq:
    """A sequence as the scheduler keeps it: its request, and its prompt still to compute
    (a decoding one holds one token, its last)."""

    name: str
    priority: Priority
    prefilling: bool = False
    request: Request = field(init=False)
    feed: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.request = Request(self.priority)
        self.feed = [1, 2, 3] if self.prefilling else [1]


def names(sequences: list[Seq]) -> list[str]:
    return [s.name for s in sequences]


def test_generations_are_interactive_unless_started_inside_background():
    assert current_priority() == "interactive"
    assert GenerationRequest(prompt=[1], max_tokens=1).priority == "interactive"
    with background():
        assert current_priority() == "background"
    assert current_priority() == "interactive"


def test_tasks_started_inside_background_are_background_and_tasks_started_outside_are_not():
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


def test_only_a_prefilling_interactive_sequence_makes_the_background_ones_yield():
    decoding = Seq("i", "interactive")
    batch = [Seq("b1", "background", prefilling=True), Seq("b2", "background")]
    assert not interactive_prefills([decoding, *batch])   # a background prefill: no yield
    assert interactive_prefills([*batch, Seq("j", "interactive", prefilling=True)])


def test_a_step_runs_interactive_first_and_only_interactive_sequences_while_yielding():
    batch = [Seq("b1", "background", prefilling=True), Seq("b2", "background")]
    members = [*batch, Seq("i", "interactive"), Seq("j", "interactive", prefilling=True)]
    assert names(this_step(members, yielding=False)) == ["i", "j", "b1", "b2"]
    assert names(this_step(members, yielding=True)) == ["i", "j"]
    assert this_step(batch, yielding=True) == []   # a lane of background work sits it out


def test_a_step_reads_its_members_once_so_a_generator_of_them_is_enough():
    members = (s for s in [Seq("b", "background"), Seq("i", "interactive")])
    assert names(this_step(members, yielding=False)) == ["i", "b"]


def test_interactive_sequences_left_without_a_slot_are_counted_and_background_ones_not():
    assert unseated_interactive([Seq("b", "background"), Seq("i", "interactive"),
                                 Seq("j", "interactive", prefilling=True)]) == 2
    assert unseated_interactive([Seq("b", "background")]) == 0


def test_interactive_prompts_take_the_whole_budget_and_background_ones_a_bounded_share():
    budget = PromptBudget(512)
    assert budget.grant(Seq("i", "interactive", True), 400) == 400
    assert budget.grant(Seq("b1", "background", True), 500) == min(112, BACKGROUND_STEP_TOKENS)


def test_the_background_share_is_for_all_background_chunks_of_a_step_together():
    budget = PromptBudget(512, background=32)
    assert budget.grant(Seq("b1", "background", True), 20) == 20
    assert budget.grant(Seq("b2", "background", True), 20) == 12
    assert budget.grant(Seq("b3", "background", True), 20) == 0
    assert budget.grant(Seq("i", "interactive", True), 600) == 512 - 32   # what is left


def test_no_chunk_takes_more_than_it_wants_or_than_the_step_has_left():
    budget = PromptBudget(40)
    assert budget.grant(Seq("i", "interactive", True), 3) == 3
    background = min(37, BACKGROUND_STEP_TOKENS)
    assert budget.grant(Seq("b", "background", True), 500) == background
    assert budget.grant(Seq("j", "interactive", True), 500) == 40 - 3 - background
