"""Running one scenario: the runner (set up, schedule, tear down, judge), the waits and the observer that reads the
history as it grows, progress, and the resolving that looks at the machine (Kafka releases, setting names).

Owns: `runner`, `resolve`, `waits`, `observe`, `progress`, `context` (what a kind is handed of a run), `planned`
(run_start's plan and the steps' action ids).
May import: any part below the faces and drivers: `base`, `record`, `kafka`, `kproxy`, `plan`, `cluster`,
`members`, `kinds`, `nemesis`, `invariants`.
"""
