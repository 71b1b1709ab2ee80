"""Rate-limit headers in each API's style, from a snapshot taken at admission.

Anthropic: ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
{limit,remaining,reset}`` with reset in RFC 3339. ``tokens`` is the more restrictive of
the input and output buckets. OpenAI: ``x-ratelimit-{limit,remaining,reset}-{requests,
tokens}`` with reset as a duration (``6s``, ``120ms``), and the same for
``input-tokens`` and ``output-tokens``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ...http.formats import ApiName
from .limits import BucketState, Snapshot


def _tightest_tokens(snap: Snapshot) -> BucketState:
    return min(snap.buckets["input_tokens"], snap.buckets["output_tokens"],
               key=lambda b: b.remaining / max(1, b.limit))


def _rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"


def _named(snap: Snapshot) -> dict[str, BucketState]:
    return {"requests": snap.buckets["requests"], "tokens": _tightest_tokens(snap),
            "input-tokens": snap.buckets["input_tokens"],
            "output-tokens": snap.buckets["output_tokens"]}


def anthropic_headers(snap: Snapshot) -> dict[str, str]:
    headers = {}
    for name, bucket in _named(snap).items():
        prefix = f"anthropic-ratelimit-{name}"
        headers[f"{prefix}-limit"] = str(bucket.limit)
        headers[f"{prefix}-remaining"] = str(bucket.remaining)
        headers[f"{prefix}-reset"] = _rfc3339(snap.at + bucket.reset_seconds)
    return headers


def openai_headers(snap: Snapshot) -> dict[str, str]:
    headers = {}
    for name, bucket in _named(snap).items():
        headers[f"x-ratelimit-limit-{name}"] = str(bucket.limit)
        headers[f"x-ratelimit-remaining-{name}"] = str(bucket.remaining)
        headers[f"x-ratelimit-reset-{name}"] = _duration(bucket.reset_seconds)
    return headers


def ratelimit_headers(api: ApiName, snap: Snapshot) -> dict[str, str]:
    return anthropic_headers(snap) if api == "anthropic" else openai_headers(snap)
