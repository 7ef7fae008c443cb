"""Contracts of seed 002 and our own, as JSON files, with a loader."""
