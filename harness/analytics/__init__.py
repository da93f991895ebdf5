"""Analytics over many run directories: a PySpark job writing Parquet tables and a trend summary.

`harness aggregate RUN_DIRS... --out DIR` runs :func:`harness.analytics.job.aggregate`; the pure
derivations (rebalances, per-partition downtime) are in :mod:`harness.analytics.derive` and need no
Spark; :mod:`harness.analytics.synth` writes synthetic run directories with known answers.
See docs/analytics.md.

May import: `base`, `record`, `invariants`.
"""
