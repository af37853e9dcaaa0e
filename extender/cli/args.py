"""What every gangplank command line shares: a parser whose mistakes are one line, help that
shows each flag's default, and argument types that say what they want."""

from __future__ import annotations

import argparse
import math
import os
import select
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn


class DefaultsFormatter(
    argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter
):
    """`(default: …)` after every flag that has a default worth saying (not None, False, empty
    or suppressed, and not already in its help); descriptions keep their line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "%(default)" in text or action.default in (None, False, "", argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class ExamplesFormatter(DefaultsFormatter, argparse.RawDescriptionHelpFormatter):
    """DefaultsFormatter for a description laid out by hand (examples, paragraphs)."""


class Parser(argparse.ArgumentParser):
    """A mistake on the command line is one line naming the flag and exit code 2 (argparse's
    own prints the whole usage first); subcommands get the same class and formatter. A command
    given without its subcommand prints the subcommands' usage (on stdout), then the line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)
        self._argv: list[str] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._argv, namespace)

    def error(self, message: str) -> NoReturn:
        needed = self._subcommands_needed(message)
        if needed:
            self.print_help(sys.stdout)
            self.exit(2, f"{self.prog}: a subcommand is needed: {needed} (their usage is above)\n")
        self.exit(2, f"{self.prog}: {message} (see `{self._help_of(message)} --help`)\n")

    def _help_of(self, message: str) -> str:
        """Whose help to read: a flag the command line gives after a subcommand is reported by
        the top parser, but is that subcommand's mistake (`gangplank status --bogus`)."""
        if message.startswith("unrecognized arguments"):
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction):
                    given = [a for a in self._argv if a in action.choices]
                    if given:
                        sub = action.choices[given[0]]  # its own argv set as it parsed
                        return sub._help_of(message) if isinstance(sub, Parser) else str(sub.prog)
        return self.prog

    def _subcommands_needed(self, message: str) -> str:
        """The subcommands named as `a, b or c` when `message` is argparse's that they are
        missing, else ""."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and action.required:
                name = action.metavar or action.dest
                if message == f"the following arguments are required: {name}":
                    names = list(action.choices)
                    return " or ".join(
                        [", ".join(names[:-1]), names[-1]] if len(names) > 1 else names
                    )
        return ""


# 128 + SIGPIPE: what a shell reports for `ls | head` when `ls` outlives its reader.
CLOSED_PIPE_EXIT = 141


def quiet_when_the_reader_leaves(command: Callable[[], int]) -> int:
    """Run `command` (a whole command line); when what reads its output stops early
    (`gangplank pods | head -1`), stop quietly with 141, as `ls | head` does, not with a
    BrokenPipeError traceback. The output is flushed here, so a short answer fails here too and
    not at exit (where Python would print "Exception ignored" and exit 120)."""
    try:
        try:
            return command()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_reader_left():  # another pipe or socket broke: not ours to hide
            raise
        # Python flushes stdout again at exit: point it somewhere that takes the rest.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_PIPE_EXIT


def _stdout_reader_left() -> bool:
    """Whether stdout is a pipe whose reading end is closed (poll says POLLERR)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll, or no real stdout
        return False


def _number(kind: Callable[[str], Any], text: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def above(
    kind: Callable[[str], Any], floor: float, *, inclusive: bool = False, most: float | None = None
) -> Any:
    """An argument type: a number of `kind` above `floor` (or at it, with `inclusive`), and at
    most `most`."""

    def convert(text: str) -> Any:
        value = _number(kind, text)
        if value < floor or (value == floor and not inclusive):
            bound = f"{floor:g} or more" if inclusive else f"more than {floor:g}"
            raise argparse.ArgumentTypeError(f"{text} is too small: it must be {bound}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"{text} is too large: it must be {most:g} at most")
        return value

    convert.__name__ = kind.__name__
    return convert


positive_int = above(int, 0)
positive_float = above(float, 0)
non_negative_float = above(float, 0, inclusive=True)


def unwritable_out(flag: str, path: str) -> str | None:
    """Why `path` cannot take a run's report, or None: said before the run, not after it. A
    directory not there yet is made to be sure it can be, then taken away again (a run
    refused or stopped writes nothing)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        return f"{flag} {path}: a file, not a directory"
    missing = [p for p in (out, *out.parents) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return f"{flag} {path}: cannot create it: {err.strerror or err}"
    writable = os.access(out, os.W_OK)
    for made in missing:  # deepest first
        made.rmdir()
    return None if writable else f"{flag} {path}: cannot write there"


def port(text: str) -> int:
    value: int = _number(int, text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a TCP port (1 to 65535)")
    return value


def base_url(text: str) -> str:
    """An http(s) URL with a host: where a running gangplank answers."""
    parsed = urllib.parse.urlsplit(text)
    try:
        parsed.port  # noqa: B018  # raises on a port that is not a number
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the port is not a number") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an http:// or https:// URL (e.g. http://127.0.0.1:18888)"
        )
    return text
