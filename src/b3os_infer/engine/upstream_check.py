"""Does the engine behind a node serve what the node's config says it does?

A node forwards to vLLM, SGLang or a llama.cpp server under the config's ``served_name``,
assuming ``context_window``. An engine that lists other names (vLLM and SGLang refuse names
they do not list) or a shorter window (vLLM lists ``max_model_len``) would fail every
request; the node checks at start and whenever the engine comes (back) up, and says what is
wrong instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

MODELS_PATH = "/v1/models"


@dataclass(frozen=True)
class Mismatch:
    """What is wrong, as a b3os error code and a sentence that says what to change."""

    code: str
    message: str


def listing_mismatch(listing: Any, url: str, served_name: str,
                     context_window: int) -> Mismatch | None:
    """The mismatch between an OpenAI-shaped model listing and the config, if any."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        return Mismatch("upstream_listing_unreadable",
                        f"{url}{MODELS_PATH} is not an OpenAI model listing")
    by_id = {e.get("id"): e for e in entries if isinstance(e, dict)}
    if served_name not in by_id:
        names = ", ".join(sorted(str(i) for i in by_id)) or "no model"
        return Mismatch("upstream_model_missing",
                        f"the engine at {url} serves {names}, not {served_name!r}: set "
                        "served_name to the name it lists")
    window = by_id[served_name].get("max_model_len")
    if isinstance(window, int) and window < context_window:
        return Mismatch("upstream_window_too_small",
                        f"the engine at {url} serves {served_name} with a window of "
                        f"{window:,} tokens, less than context_window = {context_window:,}: "
                        "lower context_window or start the engine with a longer one")
    return None


async def check(client: httpx.AsyncClient, url: str, served_name: str,
                context_window: int) -> Mismatch | None:
    """Reads the engine's listing; an engine that does not answer is not a mismatch (the
    health probe reports that)."""
    try:
        response = await client.get(MODELS_PATH, timeout=5)
        if response.status_code != 200:
            return Mismatch("upstream_listing_unreadable",
                            f"{url}{MODELS_PATH} answered {response.status_code}")
        return listing_mismatch(response.json(), url, served_name, context_window)
    except ValueError:
        return Mismatch("upstream_listing_unreadable", f"{url}{MODELS_PATH} is not JSON")
    except httpx.HTTPError:
        return None
