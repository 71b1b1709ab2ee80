"""Reading a ``multipart/form-data`` upload with the standard library's MIME parser."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP

from ..errors import InvalidRequest


@dataclass(frozen=True)
class Part:
    name: str
    filename: str | None
    data: bytes


def parse_form(content_type: str, body: bytes) -> dict[str, Part]:
    """The form's fields by name (the first of each name); 400 for anything else."""
    if not content_type.lower().startswith("multipart/form-data") or "boundary=" not in \
            content_type:
        raise InvalidRequest("upload the file as multipart/form-data, with the fields "
                             "`file` and `purpose`")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise InvalidRequest("the multipart body could not be read")
    parts: dict[str, Part] = {}
    for item in message.iter_parts():
        part = _part(item)
        if part is not None:
            parts.setdefault(part.name, part)
    return parts


def _part(item: Message) -> Part | None:
    name = item.get_param("name", header="content-disposition")
    if not isinstance(name, str):
        return None
    filename = item.get_filename()
    payload = item.get_payload(decode=True)
    data = payload if isinstance(payload, bytes) else b""
    return Part(name, filename, data)
