"""How a run's rounds go and end: the Rounds table, retries, the audit, deletions, the worker
result, the agent's report and output, the checks' judgement, each round's change kept, and the
brief the worker is given."""
