"""The benchmark's minimal HTTP/1.1 client against a real socket server (no model)."""

from __future__ import annotations

import asyncio

import pytest

from bench.wire import Connection, WireError


async def _serve(replies: list[bytes], seen: list[bytes]) -> asyncio.Server:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for reply in replies:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            seen.append(head + await reader.readexactly(length))
            writer.write(reply)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "127.0.0.1", 0)


def _reply(status: str, body: bytes, extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


def test_one_connection_carries_several_exchanges():
    async def run() -> tuple[list[tuple[int, bytes]], list[bytes]]:
        seen: list[bytes] = []
        server = await _serve([_reply("200 OK", b'{"a": 1}'),
                               _reply("429 Too Many Requests", b"{}", "retry-after: 1\r\n")],
                              seen)
        port = server.sockets[0].getsockname()[1]
        async with server, Connection(f"http://127.0.0.1:{port}/v1/x",
                                      {"Authorization": "Bearer k"}) as connection:
            request = connection.request(b'{"model": "m"}')
            return [await connection.exchange(request) for _ in range(2)], seen

    replies, seen = asyncio.run(run())
    assert replies == [(200, b'{"a": 1}'), (429, b"{}")]
    assert seen[0].startswith(b"POST /v1/x HTTP/1.1\r\n")
    assert b"Authorization: Bearer k\r\n" in seen[0] and seen[0].endswith(b'{"model": "m"}')


def test_a_chunked_reply_is_refused_by_name():
    async def run() -> None:
        chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"
        server = await _serve([chunked], [])
        port = server.sockets[0].getsockname()[1]
        async with server, Connection(f"http://127.0.0.1:{port}/", {}) as connection:
            await connection.exchange(connection.request(b"{}"))

    with pytest.raises(WireError, match="chunked"):
        asyncio.run(run())
