"""The run host (seed 000, end to end): `WorkerHost` in the spec's order (host), the run every
step shares (host_run), the proposed deletions performed, the Git metadata a worker planted, and
the end of a run in an order a kill cannot break (run_end). It decides the order of a run's
steps; the rooms below decide each step. A top room: nothing in the application imports it."""
