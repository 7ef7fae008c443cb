"""Use cases over the ports: the configuration reader, the run request, the preparation shared by
the dry-run planner and the run host, the host and its rounds (their validation: the caller's,
or the checks), the sweep of stale runtime directories, and the run's trace on disk (tracing/).
No adapter, no entry point, no os.environ."""
