"""Long prefills in the log: progress every few seconds with tokens done, total and rate."""

from __future__ import annotations

import logging

from b3os_infer.engine.llamacpp.prefill_log import PrefillLog


def test_progress_is_logged_every_period_with_tokens_and_rate_then_the_end(caplog):
    now = [100.0]
    caplog.set_level(logging.INFO, logger="b3os_infer.engine.prefill")
    progress = PrefillLog("sequence 3", total=6000, cached=1000, every=10.0,
                          clock=lambda: now[0])
    for _ in range(4):        # 512 tokens every 5 s: a line every other step
        now[0] += 5.0
        progress.advance(512)
    now[0] += 5.0
    progress.finish()
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "sequence 3: prefill of 5000 tokens (1000 cached) started",
        "sequence 3: prefill 1024 / 5000 tokens, 102 tok/s",
        "sequence 3: prefill 2048 / 5000 tokens, 102 tok/s",
        "sequence 3: prefill done: 2048 tokens in 25.0 s, 82 tok/s",
    ]


def test_a_cancelled_prefill_says_how_far_it_got(caplog):
    now = [0.0]
    caplog.set_level(logging.INFO, logger="b3os_infer.engine.prefill")
    progress = PrefillLog("sequence 1", total=3000, cached=0, clock=lambda: now[0])
    now[0] = 4.0
    progress.advance(512)
    progress.finish(cancelled=True)
    assert caplog.records[-1].getMessage() == (
        "sequence 1: prefill cancelled after 512 tokens in 4.0 s, 128 tok/s")
