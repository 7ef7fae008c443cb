"""What a person or a program sees of a run: the progress line and the end-of-run account
(display), the self-contained HTML page (report), the coloured changes (diff), the events as
JSON Lines (events) and the run watched from a worker thread (watch). It decides how worker
content is shown (every control character made visible); the commands above choose when."""
