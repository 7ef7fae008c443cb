"""Claude Code's PreToolUse hooks, the guard of its Edit/Write, Grep/Glob and Read calls: the one
template every hook is generated from (hook_template, with `claude_path` written once), the
hooks generated with the run's policy embedded and their settings entries (hooks), and the search
hook's decision on a search rooted at an ancestor of a denied path (search_guard: Claude Code's
alone). It decides what a generated hook holds; the backend above writes it into control/."""
