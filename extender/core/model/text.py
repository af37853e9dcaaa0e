"""Text cut to fit where a person reads it (a live view's line, an Event's message, a log line):
on one line, at a word boundary, with "…" saying that more was there."""

from __future__ import annotations

import textwrap

ELLIPSIS = "…"


def shorten(text: str, width: int) -> str:
    """`text` on one line, at most `width` characters: whole when it fits, else cut after the
    last word that fits and followed by " …"; a first word longer than `width` is cut within
    it."""
    line = " ".join(text.split())
    if len(line) <= width:
        return line
    cut = textwrap.shorten(line, width, placeholder=f" {ELLIPSIS}")
    if cut.startswith(ELLIPSIS):  # not even the first word fits
        return line[: width - 1] + ELLIPSIS
    return cut
