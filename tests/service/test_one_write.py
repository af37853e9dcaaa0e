"""An answer's headers go out with its body's first bytes, in one write; an answer without a
body still gets its headers; what follows the first write is passed on at once."""

from __future__ import annotations

from typing import Any

import pytest

from extender.service.one_write import _HeldHeaders


class Recording:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.files: list[Any] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(data)

    def sendfile(self, file: Any, offset: int = 0, count: int | None = None) -> int:
        self.files.append(file)
        return 0

    def fileno(self) -> int:
        return 7


HEADERS = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([HEADERS, b"{}"], [HEADERS + b"{}"]),
        ([HEADERS, "flush"], [HEADERS]),
        ([HEADERS, b"ab", b"cd", b"ef"], [HEADERS + b"ab", b"cd", b"ef"]),
        ([HEADERS, b"{}", "flush", "flush"], [HEADERS + b"{}"]),
    ],
    ids=[
        "headers and body in one write",
        "an answer without a body gets its headers at its end",
        "what follows the first body bytes is written as it comes",
        "nothing is written twice",
    ],
)
def test_the_headers_wait_only_for_the_bodys_first_bytes(
    steps: list[Any], expected: list[bytes]
) -> None:
    sock = Recording()
    held = _HeldHeaders(sock)
    for step in steps:
        held.flush() if step == "flush" else held.sendall(step)
    assert sock.writes == expected


def test_a_file_sent_by_the_kernel_comes_after_its_headers() -> None:
    sock = Recording()
    held = _HeldHeaders(sock)
    held.sendall(HEADERS)
    held.sendfile("the file", offset=0, count=2)
    assert sock.writes == [HEADERS] and sock.files == ["the file"]
    assert held.fileno() == 7, "the rest is the socket's own"
