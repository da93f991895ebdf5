"""Driving many runs: repeats of one scenario, the seeded night, shrinking a failing schedule, seeds, the pool that
runs several at once and which runs may share a cluster.

Owns: `repeat`, `nightly`, `shrink`, `seeds`, `pool`, `sharing`.
May import: everything but the faces (`suite`, `cli`).
"""
