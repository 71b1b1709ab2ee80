"""The field policy of the batch routes, read off their wire models.

``docs/batches.md`` is rendered from this module (``python -m b3os_infer.batches.policy``)
and a test keeps them equal. Each request inside a batch is validated by its own route's
policy (docs/anthropic.md, docs/openai.md, docs/responses.md).
"""

from __future__ import annotations

from ..wire_models import policy_rules, render_tables
from .anthropic import wire as anthropic_wire
from .openai_api import wire as openai_wire
from .openai_api.wire import LINE_FIELDS, UPLOAD_FIELDS

MESSAGE_BATCH_FIELDS = policy_rules(anthropic_wire.BatchCreateParams)
MESSAGE_BATCH_REQUEST_FIELDS = policy_rules(anthropic_wire.BatchRequestParam)
BATCH_FIELDS = policy_rules(openai_wire.BatchCreateParams)

_TABLES = (
    ("Request fields of `POST /v1/infer/v1/messages/batches`", MESSAGE_BATCH_FIELDS),
    ("Fields of each entry of `requests[]`", MESSAGE_BATCH_REQUEST_FIELDS),
    ("Form fields of `POST /v1/infer/files`", UPLOAD_FIELDS),
    ("Request fields of `POST /v1/infer/batches`", BATCH_FIELDS),
    ("Keys of each line of a batch input file", LINE_FIELDS),
)


def render_markdown() -> str:
    """The tables as they appear in docs/batches.md."""
    return render_tables(_TABLES)


if __name__ == "__main__":
    print(render_markdown())
