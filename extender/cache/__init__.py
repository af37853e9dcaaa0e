"""The cluster cache: a live, indexed view fed by list/watch, handing out snapshots to the core."""
