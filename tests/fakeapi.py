"""The fake API server lives in the package (the demo runs gangplank against it)."""

from extender.sim.apiserver import KIND_PATHS, LIST_KINDS, Event, FakeApiServer, WatchFaults

__all__ = ["KIND_PATHS", "LIST_KINDS", "Event", "FakeApiServer", "WatchFaults"]
