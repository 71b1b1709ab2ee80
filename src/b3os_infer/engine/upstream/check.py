"""Does the engine behind a node serve what the node's config says it does?

A node forwards to vLLM, SGLang or a llama.cpp server under the config's ``served_name``,
assuming ``context_window``, and counts prompts with its own tokenizer. An engine that lists
other names (vLLM and SGLang refuse names they do not list) or a shorter window (vLLM lists
``max_model_len``) would fail every request, and one that tokenizes otherwise would read
other token ids than the node sent; the node checks at start and whenever the engine comes
(back) up, and says what is wrong instead. The tokenizer is checked on a probe text, where
the engine can tokenize (vLLM's and llama-server's ``/tokenize``, llama-cpp-python's
``/extras/tokenize``); an engine that cannot is taken at its word.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

MODELS_PATH = "/v1/models"
# words, numbers, code, whitespace runs and text beyond ASCII, where tokenizers differ;
# no special token, since engines differ in whether a text's special tokens are parsed
PROBE_TEXT = ("Tokenizer probe 2026: naïve café, Straße, 日本語のテキスト, emoji 🙂🚀;\n"
              "    def area(r: float) -> float:\n        return 3.14159 * r ** 2  # π r²\n"
              "\tTabs,   spaces,\r\nand CRLF — «quotes» “curly” 'single' 1,234.5e-6%")


@dataclass(frozen=True)
class TokenizeApi:
    """How an engine's server tokenizes a text: its path, the text's field, what else the
    body needs, and whether it names the model."""

    path: str
    field: str
    extra: tuple[tuple[str, Any], ...] = ()
    with_model: bool = False


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


def tokenizer_mismatch(theirs: list[int], ours: list[int], url: str) -> Mismatch | None:
    """The engine's token ids for the probe against the node's; a begin-of-text token the
    engine puts in front whatever it is asked is no mismatch."""
    if theirs == ours or theirs[1:] == ours:
        return None
    at = next((i for i, (a, b) in enumerate(zip(theirs, ours, strict=False)) if a != b),
              min(len(theirs), len(ours)))
    return Mismatch("upstream_tokenizer_mismatch",
                    f"the engine at {url} tokenizes a probe text into {len(theirs)} tokens and "
                    f"the node's tokenizer into {len(ours)}, first differing at token {at}: "
                    "give the node the engine's own tokenizer (tokenizer = the model's "
                    "tokenizer files or its GGUF)")


async def probe_tokenizer(client: httpx.AsyncClient, url: str, served_name: str,
                          api: TokenizeApi, ours: Callable[[str], list[int]]
                          ) -> Mismatch | None:
    """The engine's tokens for ``PROBE_TEXT`` against ``ours``; None when they agree or
    the engine gives none (no such route, an error, another shape)."""
    body: dict[str, Any] = {api.field: PROBE_TEXT, **dict(api.extra)}
    if api.with_model:
        body["model"] = served_name
    try:
        response = await client.post(api.path, json=body, timeout=10)
        tokens = response.json().get("tokens") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(tokens, list) or not all(type(t) is int for t in tokens):
        return None
    return tokenizer_mismatch(tokens, ours(PROBE_TEXT), url)


async def check(client: httpx.AsyncClient, url: str, served_name: str,
                context_window: int, tokenize: TokenizeApi | None = None,
                ours: Callable[[str], list[int]] | None = None) -> Mismatch | None:
    """Reads the engine's listing, then (where it can tokenize) probes its tokenizer; an
    engine that does not answer is not a mismatch (the health probe reports that)."""
    found = await _check_listing(client, url, served_name, context_window)
    if found is None and tokenize is not None and ours is not None:
        return await probe_tokenizer(client, url, served_name, tokenize, ours)
    return found


async def _check_listing(client: httpx.AsyncClient, url: str, served_name: str,
                         context_window: int) -> Mismatch | None:
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
