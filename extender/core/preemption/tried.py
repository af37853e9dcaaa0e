"""Searches for victims that found none, remembered for a while on the state they were made on.

A search costs trial plans over running jobs; kube-scheduler retries a parked pod on every pod
created, and gangplank's pass looks at the head of the line every few seconds. On the same state
(capacity, reservations, the hold, the queue book) the answer cannot differ, except that victims
become eligible with time (minRuntime): so a fruitless search is remembered for
`NO_VICTIMS_SECONDS`, with the reason it gave.
"""

from __future__ import annotations

NO_VICTIMS_SECONDS = 30.0  # a search that found none is not repeated on the same state
NO_VICTIMS_LIMIT = 10_000


class Tried:
    def __init__(self) -> None:
        self._fruitless: dict[str, tuple[object, float, str]] = {}  # job -> state, until, why
        self._prune_at = 256

    def known(self, key: str, state: object, now: float) -> str | None:
        """Why the search for job `key` found nothing on this very state a moment ago; None
        when it was not made on it (or long enough ago to try again)."""
        if state is None:
            return None
        found = self._fruitless.get(key)
        if found is not None and found[0] == state and now < found[1]:
            return found[2]
        return None

    def remember(self, key: str, state: object, now: float, why: str = "") -> None:
        """Remember a fruitless search; what has lapsed is dropped whenever the memory has
        doubled since it was last looked through."""
        if len(self._fruitless) >= self._prune_at:
            self._fruitless = {k: v for k, v in self._fruitless.items() if v[1] > now}
            if len(self._fruitless) >= NO_VICTIMS_LIMIT:
                self._fruitless.clear()
            self._prune_at = max(256, 2 * len(self._fruitless))
        self._fruitless[key] = (state, now + NO_VICTIMS_SECONDS, why)

    def found(self, key: str) -> None:
        """A plan was made for job `key`: forget its fruitless search."""
        self._fruitless.pop(key, None)

    def __len__(self) -> int:
        return len(self._fruitless)

    def __contains__(self, key: object) -> bool:
        return key in self._fruitless
