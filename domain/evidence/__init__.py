"""What a run leaves and says: the records, their fields and the progress file, the error chain's
links, errors and codes, the trace's layout, run ids, the event stream, and the sweep's owner
records."""
