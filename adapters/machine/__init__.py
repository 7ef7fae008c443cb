"""This machine's own capabilities (ports/machine): the local filesystem over `os` (filesystem),
the clock and the cryptographic random source (system), and the DSSE envelope a run's
statement is sealed in (attestation). It decides how an operating-system failure becomes the
port's one error; nothing here starts a process."""
