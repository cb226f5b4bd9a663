"""Declared tests, coverage, property-based regression and what-if replay for a team's policies."""
