"""The nemesis: every performer of the schedule's actions and faults (one per action of `harness.plan.actions`,
marked `@performs(name)`), every fault inside one `with fault(...)` bracket. It is made with the run's `RunContext`
(harness/run/context.py, built by the runner) and reads nothing else of the run.

Owns: `core` (the Nemesis: members, brokers, network), `group` (how members run: stalls, subscriptions, settings
rolls, group configs, the autoscaler), `coordinator` (the group coordinator's restart and compaction), `leaders`
(partition leadership), `requests` (faults on chosen requests), `lag` (the group's lag for the autoscaler).
May import: `base`, `record`, `kafka`, `kproxy`, `plan`, `cluster`, `members`, `kinds`.
"""
