"""The command line `concorde-workers`: the driving adapter, one module per job, on floors (the
seventh layers contract of pyproject.toml).

* main — the console script: parse, wire, dispatch; a usage error or a defect of ours as one line.
  It imports a command's module (subcommands/) only when that command runs.
* subcommands/ — one module per command: run, show and sweep (commands), demo, plan and
  operation_plan, doctor (with install-agents), init, verify.
* views/ — what a person or a program sees: the end-of-run account (display), the progress
  line (progress), the plan's text (plan_text), the HTML page (report), the coloured diff, the
  events as JSON Lines, the run watched in a worker thread (watch). signals — SIGINT and
  SIGTERM cancel a run.
* wiring — the host environment, read once by main, and the composition root
  (concorde_workers.container), imported only when a command needs a container; flags — what
  the flags mean to the use cases.
* parser — the argparse parser; a usage error becomes a refusal like any other bad input;
  status — the exit statuses, in one place; output — JSON documents, refusals.
"""
