package snowplow_assets.jvm;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connect.service.SparkConnectService;
import org.apache.spark.sql.connect.service.SparkConnectService$;
import scala.Option;

/**
 * Spark's Spark Connect server (SparkConnectServer) with its sessions' artifact isolation off, so that
 * every session reuses the code Spark has generated and compiled for an earlier one.
 *
 * <p>Spark caches a compiled class by the class loader it was compiled under as well as by its code
 * (SPARK-44795). Spark's own server turns artifact isolation on, which runs each session's queries, and on a
 * local master its tasks, under a class loader of that session's own: every run then compiles all of the
 * job's generated code again, about a hundred classes and 10 CPU-seconds of a warm run at a million events
 * (benchmarks/README.md). The cost of turning it off: a jar or Python file that a client uploads
 * with addArtifacts is every session's, not its own. This project's clients upload none; its functions are
 * in the server's spark.jars. Each session keeps its own SQL settings, views and functions either way.
 */
public final class SharedCodeConnectServer {
  private SharedCodeConnectServer() {}

  public static void main(String[] args) throws InterruptedException {
    // Builder settings, as Spark's server sets its own: they win over any --conf of the same key.
    SparkSession session = SparkSession.builder()
        .config("spark.sql.artifact.isolation.enabled", false)
        .config("spark.sql.artifact.isolation.alwaysApplyClassloader", false)
        .getOrCreate();
    try {
      SparkConnectService.start(session.sparkContext());
      // server() and started() have no static forwarder on SparkConnectService, so Java reaches the object.
      SparkConnectService$.MODULE$.server().awaitTermination();
    } finally {
      if (SparkConnectService$.MODULE$.started()) {
        SparkConnectService.stop(Option.empty(), Option.empty());
      }
      session.stop();
    }
  }
}
