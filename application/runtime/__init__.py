"""A run while it lasts, below its rounds and its host: its state and the records built from it
(run_state), the events told to a watcher (events), its private runtime directory, its
cancellation, the caller's round validation as a port-like value (validation) and the error
links of a run that does not end ok (outcomes). It decides what a run is and how it ended; it
runs no round. Imports preparation/ and tracing/."""
