"""What a frozen grant lets a worker see and do: the grant and its levels, the read, write and
search tables (policy), the reasons a refusal gives, what is hidden always, what lies beside the
grant (runtime paths, the interpreter), the deny rules and sandbox lists generated from it, the
task types' tool sets, the credentials' origins, and the paths they are judged on."""
