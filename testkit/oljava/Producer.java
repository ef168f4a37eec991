// Producer sends OpenLineage events (one JSON document per line of a file)
// to a Kinesis stream with the real OpenLineage Java client and its Kinesis
// transport, which puts every event through the real Kinesis Producer
// Library (KPL, native kinesis_producer): testkit/oljava's test runs it
// against kinesalite behind a local TLS proxy.
//
// What runs is the client's own code: each line is parsed by
// OpenLineageClientUtils (runEventFromJson, or fromJson for a DatasetEvent
// or JobEvent), emitted with OpenLineageClient.emit, and the client's
// io.openlineage.client.transports.KinesisTransport (openlineage-java
// 1.23.0) picks the partition key, serialises the event with
// OpenLineageClientUtils.toJson and calls KinesisProducer.addUserRecord.
// The KPL is configured exactly as the transport's own constructor does
// (KinesisProducerConfiguration.fromProperties(properties) then
// setRegion(region); credentials from the default AWS chain, here the
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY environment), but built here and
// handed to the transport's (KinesisProducer, KinesisConfig) constructor,
// because 1.23.0's transport has no close(): nothing would flush the KPL
// before the JVM exits. The later transport's close() is flushSync() (see
// OpenLineage/OpenLineage@0594dde601065591af279d96e6a292c7b3ac2e84,
// client/java/transports-kinesis/src/main/java/io/openlineage/client/
// transports/kinesis/KinesisTransport.java): this program does the same,
// then destroy() to stop the native process.
//
// Usage (Java 17 source launcher, classpath from `mvn
// dependency:build-classpath` on pom.xml):
//
//   java -cp <classpath> Producer.java <events.ndjson> <kpl.properties> <stream> <region>
//
// The properties file holds the KPL's settings (the transport's
// `properties`). Output on stdout, one line each:
//
//   emitted <line> <kind>            the client accepted line <line> (1-based)
//   refused <line> <reason>          the client could not parse it (not sent)
//   done emitted=<n> refused=<n> outstanding=<n>
//
// Exit status 0 when every accepted event was flushed (outstanding=0), 1
// otherwise, 2 on bad usage.

import com.amazonaws.services.kinesis.producer.KinesisProducer;
import com.amazonaws.services.kinesis.producer.KinesisProducerConfiguration;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.openlineage.client.OpenLineage;
import io.openlineage.client.OpenLineageClient;
import io.openlineage.client.OpenLineageClientUtils;
import io.openlineage.client.transports.KinesisConfig;
import io.openlineage.client.transports.KinesisTransport;
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

public class Producer {
  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: Producer <events.ndjson> <kpl.properties> <stream> <region>");
      System.exit(2);
    }
    List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
    Properties props = new Properties();
    try (InputStream in = new FileInputStream(args[1])) {
      props.load(in);
    }
    KinesisConfig cfg = new KinesisConfig(args[2], args[3], null, props);

    // As KinesisTransport(KinesisConfig) builds it (roleArn unset: no STS).
    KinesisProducerConfiguration kpc = KinesisProducerConfiguration.fromProperties(cfg.getProperties());
    kpc.setRegion(cfg.getRegion());
    KinesisProducer producer = new KinesisProducer(kpc);
    KinesisTransport transport = new KinesisTransport(producer, cfg);
    OpenLineageClient client = OpenLineageClient.builder().transport(transport).build();

    ObjectMapper mapper = OpenLineageClientUtils.newObjectMapper();
    int emitted = 0;
    int refused = 0;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.isBlank()) {
        continue;
      }
      int n = i + 1;
      try {
        JsonNode tree = mapper.readTree(line);
        String kind;
        if (tree.has("run")) {
          client.emit(OpenLineageClientUtils.runEventFromJson(line));
          kind = "RunEvent";
        } else if (tree.has("dataset")) {
          client.emit(OpenLineageClientUtils.fromJson(line, new TypeReference<OpenLineage.DatasetEvent>() {}));
          kind = "DatasetEvent";
        } else if (tree.has("job")) {
          client.emit(OpenLineageClientUtils.fromJson(line, new TypeReference<OpenLineage.JobEvent>() {}));
          kind = "JobEvent";
        } else {
          throw new IllegalArgumentException("neither run, dataset nor job");
        }
        emitted++;
        System.out.println("emitted " + n + " " + kind);
      } catch (RuntimeException | java.io.IOException e) {
        refused++;
        String msg = String.valueOf(e.getMessage()).replace('\n', ' ');
        if (msg.length() > 300) {
          msg = msg.substring(0, 300) + "...";
        }
        System.out.println("refused " + n + " " + e.getClass().getSimpleName() + ": " + msg);
      }
    }
    // The later transport's close(): flushSync waits until every record
    // was put (or failed after its retries, RecordTtl).
    producer.flushSync();
    int outstanding = producer.getOutstandingRecordsCount();
    producer.destroy();
    System.out.println("done emitted=" + emitted + " refused=" + refused + " outstanding=" + outstanding);
    System.out.flush();
    System.exit(outstanding == 0 ? 0 : 1);
  }
}
