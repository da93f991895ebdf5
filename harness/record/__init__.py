"""The record of a run: its run directory and its history, the only contract between running and judging.

Owns: `rundir` (the run directory's layout, STATUS and the verdicts -> status -> exit code rule), `format` (the
history's lines and header, standard library only: every writer uses it), `history` (the merged reader the
invariants get), `columns` (numpy columns of the per-record events), `schema` and `history.schema.json` (the one
source of the history's schema; the Java header's constants and Spark's columns are generated from it), `tail`
(reading a history file as it grows).
May import: `base`.
"""
