"""Use cases over the ports, in rooms on floors (issue 34 §2; pyproject.toml's "The application's
rooms on floors" contract): a room imports only the floors below it.

    run/  sweep/  checks/      the host end to end; the sweep of dead hosts; the checks
    rounds/                    each round: agent process, claim judged, audit, validation called
    runtime/  evidence/        a run while it lasts; what a finished run proves
    preparation/               everything settled before round 1, and the dry-run planner
    setup/                     the machine and the configuration files, doctor, init
    tracing/                   the run's trace on disk

No adapter, no entry point, no os.environ."""
