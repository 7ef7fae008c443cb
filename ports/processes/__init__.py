"""The capabilities over processes (adapters/processes): starting an agent program and following
it to its end (process), which processes live (liveness), bounding a round's processes, memory
and CPU (resources) and which version of a program is installed (program_versions)."""
