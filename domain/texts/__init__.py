"""The safety of the texts read and shown: JSON read with a depth bound, control characters refused
in given paths and made visible on a terminal."""
