"""The ground every part stands on: errors, child processes, tools on the machine, the CLI's stdio manners,
versions (the one parser and comparer, and every version gate as a named constant), the vocabulary (kinds,
protocols and their assignors, member programs, commit modes, self-tests: each word defined once) and the one table
of steps (every action's name, parameters and bounds, effects and proof, read by the plan, the nemesis and the
invariants).

Owns: `errors` (the one exception tree: bad input apart from an indeterminate outcome), `procs` (child processes in
their own process group, ended at exit and on signals), `tools` (what the machine has, the cache), `stdio` (a reader
that leaves early ends nothing), `blas` (one OpenBLAS thread for the CLI), `versions`,
`vocabulary`, `steps` (the table of steps: pure data, it imports only `vocabulary`), `near` (the one "did you mean").
May import: nothing of the harness outside `base`. `versions` and `vocabulary` import nothing at all beyond the
standard library: the invariants and the members run as scripts import them.
"""
