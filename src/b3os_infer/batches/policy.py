"""The field policy of the batch routes, read off their wire models.

``docs/batches.md`` is rendered from this module (``python -m b3os_infer.batches.policy``)
and a test keeps them equal. Each request inside a batch is validated by its own route's
policy (docs/anthropic.md, docs/openai.md, docs/responses.md).
"""

from __future__ import annotations

from ..wire import Rule, policy_rules, render_tables
from . import anthropic_wire, openai_wire

MESSAGE_BATCH_FIELDS = policy_rules(anthropic_wire.BatchCreateParams)
MESSAGE_BATCH_REQUEST_FIELDS = policy_rules(anthropic_wire.BatchRequestParam)
BATCH_FIELDS = policy_rules(openai_wire.BatchCreateParams)

# multipart fields of POST /files (read in openai_files.py)
UPLOAD_FIELDS = (
    Rule("file", "supported", "JSONL, UTF-8, up to `[batches] max_file_bytes` (32 MiB)"),
    Rule("purpose", "supported", "`batch`; other purposes are refused"),
    Rule("expires_after[anchor]", "ignored", "files are kept until deleted"),
    Rule("expires_after[seconds]", "ignored", "files are kept until deleted"),
)

# the keys of each line of an input file (read in openai_lines.py)
LINE_FIELDS = (
    Rule("custom_id", "supported", "unique in the file"),
    Rule("method", "supported", "`POST`"),
    Rule("url", "supported", "the batch's `endpoint`"),
    Rule("body", "supported", "the endpoint's request, validated by its route; "
                              "`stream: true` is refused"),
)

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
