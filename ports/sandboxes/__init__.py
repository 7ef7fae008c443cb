"""The capabilities of confined helpers (adapters/sandboxes): a run's writable space (space), the
checks over throwaway views of a tree (checks) and the worker's Bash sandbox tried for real
(sandbox_probe)."""
