"""``b3os-infer status``: a running server's models at a glance, as ``ollama ps`` shows them.

It reads the server's ``/healthz`` (no key needed: health, running and waiting work, queues,
the process's resident memory, and why a model cannot be served) and, with ``B3OS_API_KEY``,
its model listing (kind, device, window, output limit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from .remote import error_message, get_models, unreachable


class StatusError(Exception):
    """The server could not be read; the message says what to do."""


@dataclass(frozen=True)
class ModelStatus:
    id: str
    healthy: bool
    active: int
    waiting: int
    problem: str | None = None
    kind: str | None = None
    device: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    state: str = "loaded"                   # loaded, loading or unloaded
    memory_bytes: int | None = None         # weights and KV, for a model loaded on demand
    keep_alive_left: int | None = None      # seconds; -1 never unloaded


@dataclass(frozen=True)
class ServerStatus:
    url: str
    models: list[ModelStatus]
    resident_bytes: int | None = None
    queues: dict[str, Any] = field(default_factory=dict)
    listed: bool = False     # the listing was read (a key was given and accepted)


def read(url: str, key: str | None,
         transport: httpx.BaseTransport | None = None) -> ServerStatus:
    """The server's status; its listing too when ``key`` is given."""
    url = url.rstrip("/")
    try:
        with httpx.Client(transport=transport, timeout=10) as client:
            health = client.get(f"{url}/healthz").json()
            listing = _listing(client, url, key) if key else None
    except httpx.HTTPError as exc:
        raise StatusError(unreachable(url, exc)) from exc
    except ValueError as exc:
        raise StatusError(f"{url}/healthz did not answer with JSON: is it B3OS Infer?") from exc
    details = listing or {}
    models = [_model(model_id, state, details.get(model_id, {}))
              for model_id, state in (health.get("models") or {}).items()]
    return ServerStatus(url=url, models=models, resident_bytes=health.get("resident_bytes"),
                        queues=health.get("queues") or {}, listed=listing is not None)


def _listing(client: httpx.Client, url: str, key: str) -> dict[str, dict[str, Any]]:
    response = get_models(client, url, key)
    if response.status_code != 200:
        raise StatusError(f"{url} refused the model listing with B3OS_API_KEY "
                          f"({response.status_code}: {error_message(response)})")
    return {entry["id"]: entry.get("b3os") or {} for entry in response.json().get("data", [])}



def _model(model_id: str, state: Mapping[str, Any], details: Mapping[str, Any]) -> ModelStatus:
    return ModelStatus(id=model_id, healthy=bool(state.get("healthy")),
                       active=int(state.get("active", 0)), waiting=int(state.get("waiting", 0)),
                       problem=state.get("problem"), kind=details.get("kind"),
                       device=details.get("device"),
                       context_window=details.get("context_window"),
                       max_output_tokens=details.get("max_output_tokens"),
                       state=str(state.get("state", "loaded")),
                       memory_bytes=state.get("memory_bytes"),
                       keep_alive_left=state.get("keep_alive_left"))


COLUMNS = ("MODEL", "KIND", "STATE", "DEVICE", "WINDOW", "OUTPUT", "MEMORY", "UNTIL",
           "RUNNING", "WAITING")


def render(status: ServerStatus) -> str:
    """The table, then the server's memory and any model's problem."""
    rows = [COLUMNS, *(_row(m) for m in status.models)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
             .rstrip() for row in rows]
    memory = f"{status.resident_bytes / 2**20:,.0f} MiB" if status.resident_bytes else "unknown"
    lines += ["", f"server {status.url}: resident memory {memory}"]
    if not status.listed:
        lines.append("kind, device, window and output limit need B3OS_API_KEY (models:read)")
    lines += [f"{m.id}: {m.problem}" for m in status.models if m.problem]
    return "\n".join(lines)


def _row(model: ModelStatus) -> tuple[str, ...]:
    return (model.id, model.kind or "-", _state(model), model.device or "-",
            _number(model.context_window), _number(model.max_output_tokens),
            _memory(model.memory_bytes), _until(model.keep_alive_left),
            str(model.active), str(model.waiting))


def _state(model: ModelStatus) -> str:
    if not model.healthy:
        return "unavailable" if model.problem else "unhealthy"
    return "ready" if model.state == "loaded" else model.state


def _memory(count: int | None) -> str:
    return f"{count / 2**20:,.0f} MiB" if count else "-"


def _until(left: int | None) -> str:
    """When keep_alive unloads it: ``4m 10s``, ``forever``, or ``-`` when not loaded."""
    if left is None:
        return "-"
    if left < 0:
        return "forever"
    minutes, seconds = divmod(left, 60)
    return f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"


def _number(value: int | None) -> str:
    return f"{value:,}" if value is not None else "-"
