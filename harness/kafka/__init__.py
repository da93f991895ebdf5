"""Apache Kafka as the harness gets it: releases from Maven Central, the config names a release defines, the
protocol frames the harness builds and reads with kio, and the one builder of the harness's Java programs.

Owns: `dist` (a release's jars into the cache), `config_names` and `config_keys` (the broker and group config names
a release defines, read from its jars; the close-name refusal), `frames` (requests framed and responses read
through kio), `jvm_build` and `maven_libs` (javac and jar over Maven Central or a release's libraries;
`java_shared/` compiled into every Java program, `java/ConfigNames.java` the config-names reader).
May import: `base`, `record`.
"""
