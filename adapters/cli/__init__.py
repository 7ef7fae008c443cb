"""The command line `concorde-workers`: the driving adapter, one module per job.

* main — the console script: parse, wire, dispatch; a usage error or a defect of ours as one line.
* wiring — the host environment, read once by main, and the composition root
  (concorde_workers.container), imported only when a command needs a container.
* parser — the argparse parser; a usage error becomes a refusal like any other bad input.
* commands — plan, run, show and sweep; demo — the demo command; flags — what the flags mean
  to the use cases. main imports a command's module only when that command runs.
* status — the exit statuses, in one place; output — JSON documents, refusals, records.
* display — the progress line and the end-of-run account; watch — the run in a worker thread,
  its progress shown between waits; signals — SIGINT and SIGTERM cancel a run.
"""
