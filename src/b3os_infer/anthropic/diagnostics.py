"""``diagnostics.cache_miss_reason``: the node's prompt prints in the Messages API's words.

Every reply's prompt print is remembered under its message id (once its cached tokens are
known), whether or not the request asked; a request that sends ``diagnostics`` gets the
comparison with the reply it names, from what our own prefix cache served.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import core
from ..node.prompt_prints import CacheMiss, PromptPrints, prompt_print
from .wire import responses as wire

Diagnose = Callable[[core.Usage], "wire.Diagnostics | None"]


def diagnosis(prints: PromptPrints, request: core.ChatRequest, message_id: str,
              prompt_tokens: int) -> Diagnose:
    """What the reply carries as ``diagnostics`` once its usage is known."""
    current = prompt_print(request, prompt_tokens)

    def diagnose(usage: core.Usage) -> wire.Diagnostics | None:
        check = request.cache_check
        miss = None
        if check is not None and check.previous_id is not None:
            miss = prints.diagnose(check.previous_id, request, current, usage.cached_tokens)
        prints.remember(message_id, current)
        return None if miss is None else wire.Diagnostics(cache_miss_reason=_reason(miss))

    return diagnose


def _reason(miss: CacheMiss) -> wire.CacheMissChanged | wire.CacheMissUndiagnosed:
    if miss.reason == "previous_not_found":
        return wire.CacheMissUndiagnosed(type="previous_message_not_found")
    if miss.reason == "unavailable":
        return wire.CacheMissUndiagnosed(type="unavailable")
    return wire.CacheMissChanged(type=miss.reason, cache_missed_input_tokens=miss.missed_tokens)
