"""Use cases over the ports: the configuration reader, the preparation, the dry-run planner, the
run host and its rounds, the sweep, tracing. No adapter, no entry point, no os.environ."""
