"""The admin API's bodies: what ``/v1/infer/admin/*`` reads and answers (``api.py``).

Requests are strict (unknown fields refused, JSON types exact), decoded by ``wire_models.decode``
so a mistake is a 400 naming the field; responses never carry a key's hash, and a key's
secret only once, in the answer to its creation.
"""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from ...wire_models import SentModel
from ..access.keys import DEFAULT_SCOPES, KeyRecord

ScopeName = Literal["infer", "models:read", "metrics:read", "server_tools", "admin"]
KeyStatus = Literal["active", "expired", "revoked"]
Bucket = Literal["minute", "hour", "day"]


class KeyCreate(BaseModel):
    """``POST /v1/infer/admin/keys``: the same choices as ``b3os-infer keys create``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str = Field(min_length=1, max_length=200)
    scopes: list[ScopeName] = Field(
        default_factory=lambda: cast(list[ScopeName], list(DEFAULT_SCOPES)), min_length=1)
    models: list[str] | None = None         # None or empty: every model
    expires: str | None = None              # 30d, 12h, 90m, 2w, or an ISO date/time


class KeyObject(SentModel):
    object: Literal["api_key"] = "api_key"
    id: str
    name: str
    scopes: tuple[str, ...]
    models: tuple[str, ...] | None
    created_at: str
    expires_at: str | None
    last_used_at: str | None
    revoked_at: str | None
    status: KeyStatus

    @classmethod
    def of(cls, record: KeyRecord) -> KeyObject:
        status: KeyStatus = "revoked" if record.revoked_at else \
            "expired" if record.expired() else "active"
        return cls(id=record.id, name=record.name, scopes=record.scopes,
                   models=record.models, created_at=record.created_at,
                   expires_at=record.expires_at, last_used_at=record.last_used_at,
                   revoked_at=record.revoked_at, status=status)


class CreatedKey(KeyObject):
    """The answer to a creation: the only time the secret leaves the server."""

    secret: str


class KeyList(SentModel):
    object: Literal["list"] = "list"
    data: list[KeyObject]


class UsagePoint(SentModel):
    start: str          # the bucket's first second, UTC RFC 3339
    key_id: str | None  # None: refused before a key was recognised
    model: str          # "" where the request named no model or was refused first
    requests: int
    errors: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int


class UsageSeries(SentModel):
    object: Literal["usage.series"] = "usage.series"
    bucket: Bucket
    since: str
    keys: dict[str, str]   # key id -> name, for every key in the points
    data: list[UsagePoint]


class ModelResidencyObject(SentModel):
    """``/v1/infer/admin/models``: one chat model's residency (node/lifecycle.py)."""

    object: Literal["model.residency"] = "model.residency"
    id: str
    state: Literal["loaded", "loading", "unloaded"]
    on_demand: bool
    pinned: bool
    keep_alive: int
    keep_alive_left: int | None
    memory_bytes: int
    load_seconds: float | None
    problem: str | None


class ModelResidencyList(SentModel):
    object: Literal["list"] = "list"
    data: list[ModelResidencyObject]
