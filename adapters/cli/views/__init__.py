"""What a person or a program sees of a run: the end-of-run account (display), the live
progress line and its watcher (progress), the plan as text from its JSON document (plan_text),
the self-contained HTML page (report), the coloured changes (diff), the events as JSON Lines
(events) and the run watched from a worker thread (watch). It decides how worker content is
shown (every control character made visible); the commands above choose when."""
