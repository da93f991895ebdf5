#!/bin/sh
# One KRaft node (broker and controller). /node is the node's directory on the host (bind-mounted):
# server.properties in, data/ kept across restarts and upgrades, format.log and broker.log out.
# CLUSTER_ID and KAFKA_JVM_OPTS come from the harness.
set -e
CP="/opt/kafka/libs/*"
java $KAFKA_JVM_OPTS -cp "$CP" kafka.tools.StorageTool format -t "$CLUSTER_ID" -c /node/server.properties \
  --ignore-formatted >> /node/format.log 2>&1
exec java $KAFKA_JVM_OPTS -cp "$CP" kafka.Kafka /node/server.properties >> /node/broker.log 2>&1
