"""The command line's commands, one module per command (main imports one when it runs): `run`,
`show` and `sweep` (commands), `demo`, `plan` with `--operation` (plan, operation_plan),
`doctor` and `install-agents` (doctor), `init` and `verify`. Each decides what its command
asks the use cases and which exit status it ends with; what a person sees is views/."""
