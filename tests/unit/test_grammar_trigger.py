"""A lazy grammar's trigger is found however the reply is cut into tokens, and only the
text from the trigger on is handed to the grammar."""

from __future__ import annotations

import pytest

from b3os_infer.engine.llamacpp.constrained import Trigger

REPLY = 'I will read it.\n<tool_call>\n{"name": "Read"'


@pytest.mark.parametrize("size", [1, 2, 3, 5, 11, 12, 100])
def test_the_trigger_is_found_in_pieces_of_any_size(size):
    trigger = Trigger("<tool_call>")
    pieces = [REPLY[i:i + size] for i in range(0, len(REPLY), size)]
    fed = 0
    for piece in pieces:
        fed += len(piece)
        started = trigger.feed(piece)
        if started is not None:
            break
    assert started is not None
    # from the trigger's start to the end of the piece that completed it
    assert started == REPLY[REPLY.index("<tool_call>"):fed]


def test_text_that_only_resembles_the_trigger_never_starts_it():
    trigger = Trigger("<tool_call>")
    for piece in ["<tool", "_cal", "l", " <tool_", "call", "<tools>", "<tool_cal"]:
        assert trigger.feed(piece) is None
    assert trigger.feed("l>") == "<tool_call>"


def test_a_one_character_trigger():
    trigger = Trigger("{")
    assert trigger.feed("abc") is None
    assert trigger.feed('x{"a') == '{"a'
