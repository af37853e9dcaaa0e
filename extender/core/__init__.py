"""The decision core: pure functions over a snapshot of the cluster.

Nothing here imports Flask, the kubernetes client or prometheus (enforced by import-linter);
everything here can be called from a test, a benchmark or an offline replay.
"""
