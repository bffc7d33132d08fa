import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import snowplow_assets.jvm.CanonicalLine;

/**
 * The fast path's function called in a loop, without Spark: what it costs by itself, so that the parse pass's
 * time in Spark can be split into the function and Spark's interface to it (benchmarks/canonical_line_alone.py
 * runs this).
 *
 * <p>Arguments: a run folder's part file, how many of its lines to hold in memory, the threads, the rounds.
 * Each thread has a function object of its own, as each Spark task has, and takes every n-th line. Prints
 * one line per round: {@code round threads lines seconds}.
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
    CanonicalLine[] functions = new CanonicalLine[threads];
    for (int t = 0; t < threads; t++) functions[t] = new CanonicalLine();
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
              if (functions[first].call(lines.get(i)) != null) returned++;
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
}
