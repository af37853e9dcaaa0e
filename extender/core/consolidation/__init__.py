"""Consolidation: make room for a waiting job by moving movable jobs, not by killing them."""
