"""The hold: capacity kept for the gang first in line, so that it is not starved.

Only capacity that frees up *after* the hold began is kept (up to what the gang needs): what was
free already stays usable by others (backfill), so a gang that cannot fit does not idle the nodes
it cannot use yet. The gang scheduler bounds how long a hold lasts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass
class Hold:
    key: str  # the gang
    deadline: float
    needs: dict[str, int]  # the gang's total request per resource: the cap of what is held
    usable: frozenset[str]  # nodes the gang could use
    baseline: dict[str, dict[str, int]]  # free capacity per node when the hold began

    def held_on(self, node: str, free: Mapping[str, int]) -> dict[str, int]:
        """What the hold keeps on `node`, given what is `free` there for someone else."""
        if node not in self.usable:
            return {}
        base = self.baseline.setdefault(node, {})
        held: dict[str, int] = {}
        for name, cap in self.needs.items():
            if name not in free:  # a resource the asker does not need: nothing to learn
                continue
            have = free[name]
            start = base.get(name, 0)
            if have < start:  # others used capacity that was free already: fair game
                base[name] = have
            elif have > start:
                held[name] = min(have - start, cap)
        return held
