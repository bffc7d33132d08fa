package snowplow_assets.jvm;

import org.apache.spark.sql.api.java.UDF0;

/**
 * The spec CanonicalLine was built with, as a Spark function: a client checks it against its own
 * definitions, since a long-lived Spark Connect server may hold a jar built from older ones.
 */
public final class CanonicalLineSpec implements UDF0<String> {
  private static final long serialVersionUID = 1L;

  @Override
  public String call() throws Exception {
    return CanonicalLine.bundledSpec();
  }
}
