"""This machine's own capabilities (adapters/machine): the host's reads and writes of local files
with their one error (filesystem), the time and the one sleep (clock), unpredictable tokens
(random) and the sealing of a run's statement (attestation). The floor every other port room
may stand on."""
