"""The run's trace on disk, one module a job: seed 000 "Run directory and runtime directory",
"Progress file" and "Run record"; seed 002 (contract.workers.worker-run-trace,
worker-round-trace, worker-run-record). Every read and write goes through the `FileSystem` port.

* `writer`: `TraceWriter` writes one run's node folder `<parent>/workers/<run-id>/` (its
  trace.json at the moments start, update and end, each round's trace.json and stderr.log,
  grant.json, brief.md and programs.json), recording every refused write, never raising it.
* `progress`: `ProgressWriter` keeps status.json current.
* `journal`: `DeletionJournal`, the journal of deletions the host writes as it deletes, and
  `read_deletions`, which the sweep reads it back with (issue 30 §3).
* `record`: `record_of_node`, the returned run record of a worker-run node (the host's and the
  reader's).
* `reader`: `read_record` rebuilds the returned run record from the run's node folder
  (`runs.read_record` of seed 002); `read_node` and `read_progress` for the sweep,
  `read_programs` for the account that `run` and `show` print.
"""
