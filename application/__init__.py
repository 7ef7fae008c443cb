"""Use cases: configuration reader, dry-run planner, container, CLI."""
