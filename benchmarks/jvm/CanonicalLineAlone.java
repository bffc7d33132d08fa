import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Function1;
import snowplow_assets.jvm.CanonicalLine;

/**
 * The fast path's function called in a loop, without Spark: what it costs by itself, so that the parse pass's
 * time in Spark can be split into the function and Spark's interface to it (benchmarks/canonical_line_alone.py
 * runs this).
 *
 * <p>Arguments: a run folder's part file, how many of its lines to hold in memory, the threads, the rounds,
 * and the steps: {@code function} calls the function on each line held as a Java string; {@code spark} holds
 * the lines as Spark holds them (UTF-8) and takes the steps Spark takes around a Java function: decoding the
 * line into a string, converting the returned row into Spark's (its converter for the result type, the
 * sixth argument, a struct type as Spark SQL writes it), and writing that into an UnsafeRow. Each thread has a function object of its own,
 * as each Spark task has, and takes every n-th line. Prints one line per round: {@code round threads lines
 * seconds}.
 */
public final class CanonicalLineAlone {
  public static void main(String[] args) throws Exception {
    List<String> lines = new ArrayList<>();
    int wanted = Integer.parseInt(args[1]);
    try (BufferedReader reader = Files.newBufferedReader(Path.of(args[0]))) {
      for (String line = reader.readLine(); line != null && lines.size() < wanted; line = reader.readLine()) {
        lines.add(line);
      }
    }
    int threads = Integer.parseInt(args[2]);
    int rounds = Integer.parseInt(args[3]);
    boolean spark = switch (args[4]) {
      case "function" -> false;
      case "spark" -> true;
      default -> throw new IllegalArgumentException("steps: function or spark, not " + args[4]);
    };
    List<UTF8String> encoded = new ArrayList<>();
    if (spark) {
      for (String line : lines) encoded.add(UTF8String.fromString(line));
    }
    StructType resultType = spark ? (StructType) DataType.fromDDL(args[5]) : null;
    Step[] steps = new Step[threads];
    for (int t = 0; t < threads; t++) steps[t] = spark ? new SparkSteps(resultType) : new FunctionStep();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 1; round <= rounds; round++) {
        long started = System.nanoTime();
        List<Future<Integer>> parts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int first = t;
          parts.add(pool.submit(() -> {
            int returned = 0;
            for (int i = first; i < lines.size(); i += threads) {
              if (steps[first].run(spark ? encoded.get(i) : lines.get(i))) returned++;
            }
            return returned;
          }));
        }
        int returned = 0;
        for (Future<Integer> part : parts) returned += part.get();
        if (returned != lines.size()) throw new IllegalStateException("the function returned nothing for a line");
        System.out.printf("%d %d %d %.4f%n", round, threads, returned, (System.nanoTime() - started) / 1e9);
      }
    } finally {
      pool.shutdown();
    }
  }

  private interface Step {
    boolean run(Object line) throws Exception;
  }

  private static final class FunctionStep implements Step {
    private final CanonicalLine function = new CanonicalLine();

    FunctionStep() throws Exception {}

    @Override
    public boolean run(Object line) throws Exception {
      return function.call((String) line) != null;
    }
  }

  private static final class SparkSteps implements Step {
    private final CanonicalLine function = new CanonicalLine();
    private final Function1<Object, Object> toSpark;
    private final UnsafeProjection toUnsafeRow;

    SparkSteps(StructType resultType) throws Exception {
      toSpark = CatalystTypeConverters.createToCatalystConverter(resultType);
      toUnsafeRow = UnsafeProjection.create(new StructType().add("result", resultType));
    }

    @Override
    public boolean run(Object line) throws Exception {
      Row result = function.call(line.toString());
      Object converted = toSpark.apply(result);
      return toUnsafeRow.apply(new GenericInternalRow(new Object[] {converted})).getSizeInBytes() > 0;
    }
  }
}
