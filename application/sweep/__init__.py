"""The sweep of what a killed host left: stale runtime directories (sweep), the record of a dead
host finished (sweep_finish), the account of what the sweep found and did (sweep_report) and the
checks' copies of dead hosts (copy_sweep). It decides what is stale and may go; it never
touches a live run. A top room: imports runtime/, setup/ and tracing/."""
