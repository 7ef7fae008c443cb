"""The ground floor of the domain: the vocabulary every subject shares and none owns. The codes
and their tables, refusals and error links, the record's field types, the backends the contracts
name, run ids and the run and runtime directories' layout, path facts over a listing, and the
safety of the texts read and shown (JSON depth, control characters, a stable number's text).
It imports no other room of the domain; every room may import it."""
