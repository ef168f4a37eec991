// Package oljava holds the end-to-end test of lineageflow with the real
// OpenLineage Java client as the producer: its Kinesis transport puts
// every event through the real Kinesis Producer Library (the native
// kinesis_producer, KPL aggregation on) into kinesalite, and a real
// `lineageflow run` worker reads them back into Gremlin Server.
//
// Producer.java is the Java side (run with Java 17's source launcher on
// the classpath that `mvn dependency:build-classpath` gives for pom.xml);
// oljava_test.go starts it. The KPL speaks only HTTPS and asks STS for the
// caller's account before its first PutRecords, so the test puts a TLS
// proxy in front of kinesalite (plain HTTP) and answers STS
// GetCallerIdentity itself: every endpoint the KPL knows (Kinesis, STS,
// CloudWatch) is on 127.0.0.1.
package oljava
