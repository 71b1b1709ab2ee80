"""The usage ledger: one row per request, committed when the request ends."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import Engine, case, func, select

from .db import usage
from .keys import utc_now


@dataclass(frozen=True)
class UsageRow:
    request_id: str
    key_id: str | None
    model: str
    route: str
    status: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency_ms: float


@dataclass(frozen=True)
class UsageTotal:
    key_id: str | None
    model: str
    requests: int
    errors: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int


class UsageLedger:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record(self, row: UsageRow) -> None:
        """Write one row in its own transaction, so a later crash cannot lose it."""
        with self.engine.begin() as db:
            db.execute(usage.insert().values(**asdict(row), created_at=utc_now()))

    def rows(self) -> list[UsageRow]:
        columns = [usage.c[name] for name in UsageRow.__dataclass_fields__]
        with self.engine.connect() as db:
            return [UsageRow(*row) for row in db.execute(select(*columns)
                                                         .order_by(usage.c.id)).all()]

    def totals(self) -> list[UsageTotal]:
        query = (select(usage.c.key_id, usage.c.model, func.count(),
                        func.sum(case((usage.c.status >= 400, 1), else_=0)),
                        func.sum(usage.c.input_tokens), func.sum(usage.c.output_tokens),
                        func.sum(usage.c.cached_tokens))
                 .group_by(usage.c.key_id, usage.c.model)
                 .order_by(usage.c.key_id, usage.c.model))
        with self.engine.connect() as db:
            return [UsageTotal(row[0], row[1], *(int(v or 0) for v in row[2:]))
                    for row in db.execute(query).all()]
