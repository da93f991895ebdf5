"""The pytest face: the plugin (registered through the `pytest11` entry point; options under `--harness-`), the
pool its scenario tests run on, and known findings in a suite (xfail with the finding named).

Owns: `plugin`, `pool`, `known`.
May import: everything but `cli`; nothing imports it.
"""
