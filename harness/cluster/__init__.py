"""The cluster backends: real Apache Kafka in KRaft mode, N brokers each with a rack, behind Toxiproxy so that no
client bypasses it; the docker engine and the images built here; what the brokers said in their logs.

Owns: `base` (the interface and its optional abilities), `backends` (the one place a backend's class is made;
their names and abilities are data in `harness/plan/backends.py`), `local` (JVMs on loopback), `docker` (containers
through testcontainers, `docker_engine`, `docker_images`), `fake` and `fake_workload` (the runner's in-process
stand-in), `toxiproxy`, `client_path` (Toxiproxy and the request proxy in front of the brokers), `leadership`,
`event_sinks`, `broker_log`.
May import: `base`, `record`, `kafka`, `kproxy`, `plan` (the backends' names), `members` (the fake backend's
producer).
"""
