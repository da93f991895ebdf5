"""Known findings: Kafka and client bugs the harness has seen, each with the marks its run's history shows, and the
rule that a failing run is excused only when every witness of every failing verdict lies inside those marks.

Owns: `registry` (the findings, `KNOWN`, and `known(run_dir)`), `evidence` (each finding's marks, read from a
history), `match` (a witness inside a mark). docs/findings.md writes each finding up.
May import: `base`, `record`, `invariants`, `plan` (a scenario's identity).
"""
