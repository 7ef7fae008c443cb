"""Pure domain: grant, policy, audit, rounds, retries, deletions, records. No I/O."""
