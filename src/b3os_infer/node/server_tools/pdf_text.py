"""The text of a PDF, for web_fetch: its pages' text in order (pypdf, pure Python), and its
title from the document's metadata. A PDF is read only up to ``MAX_PAGES`` pages; one that
cannot be read is ``None`` (the fetch then says the document's kind cannot be read)."""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader
from pypdf.errors import PyPdfError

MAX_PAGES = 100
log = logging.getLogger(__name__)


def pdf_text(data: bytes) -> tuple[str | None, str] | None:
    """(title, text) of the PDF in ``data``, or None where it cannot be read."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            return None
        pages = [page.extract_text() or "" for page in reader.pages[:MAX_PAGES]]
        title = reader.metadata.title if reader.metadata is not None else None
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        log.info("a fetched PDF could not be read: %s", exc)
        return None
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    return (str(title) if title else None), text
