"""A run's evidence read and sealed after the fact: the attestation (its in-toto statement over
the trace), `verify RUN_DIR` (the trace checked, the patches replayed, the signature) and the
report gathered from a run directory. It decides what a finished run proves; it changes no run.
Imports preparation/, setup/ and tracing/; run/ imports it to seal a run."""
