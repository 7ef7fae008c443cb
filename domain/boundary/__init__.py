"""What a frozen grant lets a worker see and do: the grant and its levels, the read, write and
search tables (their rows and the reasons a refusal gives: rules; the one interpreter of the rows;
the decisions: policy), what is hidden always, what lies beside the grant (runtime paths, the
project's Python), the deny rules and sandbox lists generated from it, the task types' tool sets,
and Claude Code's search guard."""
