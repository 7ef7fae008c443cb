"""A run's evidence read and sealed after the fact: the attestation (its in-toto statement over
the trace), `verify RUN_DIR` (verify: the trace checked and the patches replayed;
attestation_check: the statement and its signature; trace_reads: the bounded reads both make)
and the report gathered from a run directory. It decides what a finished run proves; it changes
no run. Imports preparation/, setup/ and tracing/; run/ imports it to seal a run."""
