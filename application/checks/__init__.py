"""The checks as a round validation (issue 13; seed 000 "Round validation"): the view or copy
each check runs over, its run, the gate narrowed, its check nodes. It decides a round's
validation when the caller gives none; the container plugs it in. A top room: imports runtime/."""
