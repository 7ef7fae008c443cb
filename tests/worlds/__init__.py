"""The test worlds' common ground (issue 34 §6): what every world of the tests is made of,
declared once, importable by the fakes, the integration tests and the end-to-end tests alike
(it imports none of them)."""
