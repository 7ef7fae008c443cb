"""The attestation of a run and the verification of its trace (issue 30 §4): what the in-toto
statement of a run says (its subjects, the patches and the final tree by digest, and the
predicate of our own, contract.attestation.worker-run), built from the trace read back; and what
`verify` finds wrong in a run directory — a file missing or not what its node lists, a record
that disagrees with its nodes, a chain of patches that does not lead from the starting state to
the tree the last audit saw, a statement that does not match the trace. Pure: the application
reads the files, runs Git and signs."""
