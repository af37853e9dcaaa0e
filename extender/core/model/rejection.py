"""Why a gang member is parked: the kinds of rejection the core gives, and what makes each end."""

from __future__ import annotations

from enum import StrEnum


class Rejection(StrEnum):
    """A gang member's filter said no because its gang is…"""

    INVALID = "invalid"  # …not a gang anyone can schedule (no clear size, mixed sources)
    INCOMPLETE = "incomplete"  # …missing members: fewer pods exist than its size
    NO_ROOM = "no-room"  # …complete, and fits nowhere now (or not on the nodes offered)
