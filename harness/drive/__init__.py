"""Driving many runs: repeats of one scenario, the seeded night, shrinking a failing schedule, seeds, the pool that
runs several at once and which runs may share a cluster; exploring request interleavings and replaying one exactly.

Owns: `repeat`, `nightly`, `shrink`, `seeds`, `pool`, `sharing`, `explore`, `explore_run`, `exact`.
May import: everything but the faces (`suite`, `cli`).
"""
