"""The self-tests a run can ask for (`--misbehave`): one member breaks the rules on purpose and the checkers
must fail the run."""

#: --misbehave: each self-test and what it does (the checkers must fail the run)
MISBEHAVE_HELP = {
    "process-after-revoke": "slot 0 goes on reading partitions after they were revoked",
    "claim-extra": "slot 0 claims a partition the group never gave it", "forget-offsets":
    "it reads every partition given after its first assignment from the start", "rejoin-storm":
    "it leaves and rejoins as a new member every second for 20 s, a storm convergence must catch",
    "keep-after-leave": "slot 0, when stopped, leaves the group and goes on reading its partitions for 22 s as if it "
    "still owned them (a member that took its unanswered LeaveGroup for one that did not count)",
    "defeat-warmup": "(streams-*) every instance runs with a recovery lag that switches warmups off",
    "fake-eos": "(streams-eos-kill) the instances run at_least_once while they record exactly_once_v2",
    "forget-state": "(streams-*) the first instance starts each task on an emptied store",
    "thread-churn": "(streams-*) the first instance adds a stream thread and removes it again every second: each a "
    "consumer joining or leaving, the group never settles (group_settled must fail the run)",
    "zombie-task": "(connect-*) a source task goes on producing after it was stopped", "wrong-delay":
    "(connect-*) judged with another scheduled.rebalance.max.delay.ms than the workers ran",
    "ack-unheld": "(share-*) slot 0 waits past its records' locks once, then accepts records it no longer holds",
    "process-expired": "(share-*) slot 0 waits past its records' locks once, then processes them without "
    "acquiring them again"}
