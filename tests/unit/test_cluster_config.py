"""Pure parts of the local backend's configuration."""

def test_cluster_ids_never_start_with_a_dash():
    from harness.cluster.local import new_cluster_id
    ids = [new_cluster_id() for _ in range(3000)]  # about 1 in 64 raw ids starts with '-'
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
