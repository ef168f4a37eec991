// HttpProducer sends OpenLineage events (one JSON document per line of a
// file) with the real OpenLineage Java client and its HttpTransport, as
// configured by an openlineage.yml (transport type http, url, endpoint,
// compression gzip, auth api_key): collect/TestOpenLineageJavaClientHTTP
// points it at `lineageflow collect`.
//
// Each line is parsed by OpenLineageClientUtils (runEventFromJson, or
// fromJson for a DatasetEvent or JobEvent) and emitted with
// OpenLineageClient.emit; the client is made by Clients.newClient from the
// yml file, the way an application configures it.
//
// Usage (Java 17 source launcher, classpath from `mvn
// dependency:build-classpath` on pom.xml):
//
//   java -cp <classpath> HttpProducer.java <events.ndjson> <openlineage.yml>
//
// Output on stdout, one line each:
//
//   emitted <line> <kind>      the client accepted line <line> (1-based) and the server answered 2xx
//   refused <line> <reason>    the client could not parse it (not sent)
//   failed <line> <reason>     the transport failed (non-2xx answer, connection)
//   done emitted=<n> refused=<n> failed=<n>
//
// Exit status 0 when nothing failed, 1 otherwise, 2 on bad usage.

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.openlineage.client.Clients;
import io.openlineage.client.OpenLineage;
import io.openlineage.client.OpenLineageClient;
import io.openlineage.client.OpenLineageClientUtils;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

public class HttpProducer {
  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: HttpProducer <events.ndjson> <openlineage.yml>");
      System.exit(2);
    }
    List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
    Path yml = Path.of(args[1]);
    OpenLineageClient client = Clients.newClient(() -> List.of(yml));
    ObjectMapper mapper = OpenLineageClientUtils.newObjectMapper();
    int emitted = 0, refused = 0, failed = 0;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.isBlank()) {
        continue;
      }
      int n = i + 1;
      String kind;
      Runnable send;
      try {
        JsonNode tree = mapper.readTree(line);
        if (tree.has("run")) {
          OpenLineage.RunEvent ev = OpenLineageClientUtils.runEventFromJson(line);
          send = () -> client.emit(ev);
          kind = "RunEvent";
        } else if (tree.has("dataset")) {
          OpenLineage.DatasetEvent ev = OpenLineageClientUtils.fromJson(line, new TypeReference<OpenLineage.DatasetEvent>() {});
          send = () -> client.emit(ev);
          kind = "DatasetEvent";
        } else if (tree.has("job")) {
          OpenLineage.JobEvent ev = OpenLineageClientUtils.fromJson(line, new TypeReference<OpenLineage.JobEvent>() {});
          send = () -> client.emit(ev);
          kind = "JobEvent";
        } else {
          throw new IllegalArgumentException("neither run, dataset nor job");
        }
      } catch (RuntimeException | java.io.IOException e) {
        refused++;
        System.out.println("refused " + n + " " + e.getClass().getSimpleName() + ": " + brief(e));
        continue;
      }
      try {
        send.run();
        emitted++;
        System.out.println("emitted " + n + " " + kind);
      } catch (RuntimeException e) {
        failed++;
        System.out.println("failed " + n + " " + e.getClass().getSimpleName() + ": " + brief(e));
      }
    }
    client.close();
    System.out.println("done emitted=" + emitted + " refused=" + refused + " failed=" + failed);
    System.out.flush();
    System.exit(failed == 0 ? 0 : 1);
  }

  static String brief(Throwable e) {
    String msg = String.valueOf(e.getMessage()).replace('\n', ' ');
    return msg.length() > 300 ? msg.substring(0, 300) + "..." : msg;
  }
}
