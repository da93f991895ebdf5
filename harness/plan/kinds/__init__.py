"""Each kind of group's settings and plan-time checks (pure): the one settings merge (`settings`), the Streams,
Connect and share settings (`streams`, `connect`, `share`), and what the plan checks of each kind (`checks`).
The kinds' running parts are `harness.kinds`.

May import: `base`, `kafka`'s pure modules (`config_keys`).
"""
