package snowplow_assets.jvm;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The shredder's fast path for one enriched line, as a Spark function (snowplow_assets/events/canonical.py).
 *
 * <p>What the line must look like comes from a spec that canonical.py builds from the Python definitions
 * (field layout, patterns, wrapper schemas, the Iglu URI pattern), so this class holds the mechanism only.
 * It returns null for every line it does not take, and the full parser (parse.py), the one definition of
 * what is valid, decides about those. It takes a line only when the result is certain to be the full
 * parser's: anything unusual (JSON that only Spark's lenient reader accepts, a repeated key, text after
 * the JSON value, a number that renders in exponent form, a U+FFFD that may stand for invalid UTF-8) is
 * left to it. The JSON fields are read and re-serialised with the Jackson that Spark's from_json uses, with
 * its limits, so an entity's data is the same text either way.
 */
public final class CanonicalLine implements UDF1<String, Row> {
  private static final long serialVersionUID = 1L;

  private static final int STRING = 0;
  private static final int PATTERN = 1;
  private static final int DOUBLE = 2;
  private static final int JSON = 3;

  // Spark's limits for from_json (JSONOptions); at or under them, Spark never fails where this succeeds.
  private static final JsonFactory JSON_FACTORY = new JsonFactoryBuilder()
      .streamReadConstraints(StreamReadConstraints.builder()
          .maxNestingDepth(1000).maxNumberLength(1000).maxStringLength(20_000_000).build())
      .build();

  private static final Object DEFER = new Object();

  private final String spec;
  private transient Spec compiled;

  public CanonicalLine(String spec) {
    this.spec = spec;
  }

  /** The spec, compiled on first use in each JVM: the function object travels to executors as its text. */
  private static final class Spec {
    final int[] kinds;
    final boolean[] required;
    final Pattern[] patterns;
    final boolean[] entityArrays;
    final int splitAt;
    final int[] picked;
    final Pattern entitySchema;

    Spec(String text) throws IOException {
      JsonNode root = new ObjectMapper().readTree(text);
      JsonNode fields = root.get("fields");
      int count = fields.size();
      kinds = new int[count];
      required = new boolean[count];
      patterns = new Pattern[count];
      entityArrays = new boolean[count];
      for (int i = 0; i < count; i++) {
        JsonNode field = fields.get(i);
        String kind = field.get("kind").asText();
        kinds[i] = switch (kind) {
          case "string" -> STRING;
          case "pattern" -> PATTERN;
          case "double" -> DOUBLE;
          case "json" -> JSON;
          default -> throw new IllegalArgumentException("unknown field kind " + kind);
        };
        required[i] = field.get("required").asBoolean();
        if (field.has("pattern")) patterns[i] = Pattern.compile(field.get("pattern").asText());
        entityArrays[i] = field.has("array") && field.get("array").asBoolean();
      }
      splitAt = root.get("split_at").asInt();
      JsonNode pick = root.get("pick");
      picked = new int[pick.size()];
      for (int i = 0; i < picked.length; i++) picked[i] = pick.get(i).asInt();
      entitySchema = Pattern.compile(root.get("entity_schema").asText());
    }
  }

  private Spec spec() throws IOException {
    if (compiled == null) compiled = new Spec(spec);
    return compiled;
  }

  @Override
  public Row call(String line) throws Exception {
    if (line == null || line.indexOf('\uFFFD') >= 0) return null;
    Spec s = spec();
    String[] fields = split(line, s.kinds.length);
    if (fields == null) return null;

    StringBuilder head = new StringBuilder(256);
    StringBuilder tail = new StringBuilder(line.length());
    List<Object> entities = new ArrayList<>(4);
    for (int i = 0; i < fields.length; i++) {
      String text = fields[i];
      Object value = text;
      if (text.isEmpty()) {
        if (s.required[i]) return null;
        if (s.kinds[i] == JSON) value = List.of();
      } else {
        switch (s.kinds[i]) {
          case PATTERN -> {
            if (!s.patterns[i].matcher(text).matches()) return null;
          }
          case DOUBLE -> value = renderDouble(text, s.patterns[i]);
          case JSON -> value = entities(text, s.patterns[i], s.entityArrays[i], s.entitySchema);
          default -> { }
        }
        if (value == DEFER) return null;
      }
      if (s.kinds[i] == JSON) {
        entities.add(value);
      } else if (i < s.splitAt) {
        head.append((String) value).append('\t');
      } else if (i > s.splitAt) {
        tail.append('\t').append((String) value);
      }
    }
    String[] picked = new String[s.picked.length];
    for (int i = 0; i < picked.length; i++) picked[i] = fields[s.picked[i]];
    return RowFactory.create(picked, head.toString(), tail.toString(), entities.toArray());
  }

  /** The line's fields, or null unless there are exactly `count`. */
  private static String[] split(String line, int count) {
    String[] fields = new String[count];
    int start = 0;
    for (int i = 0; i < count - 1; i++) {
      int tab = line.indexOf('\t', start);
      if (tab < 0) return null;
      fields[i] = line.substring(start, tab);
      start = tab + 1;
    }
    if (line.indexOf('\t', start) >= 0) return null;
    fields[count - 1] = line.substring(start);
    return fields;
  }

  /** A decimal number as Spark prints a double, unless Spark would print it in exponent form. */
  private static Object renderDouble(String text, Pattern pattern) {
    if (!pattern.matcher(text).matches()) return DEFER;
    double value;
    try {
      value = Double.parseDouble(text);
    } catch (NumberFormatException e) {
      return DEFER;
    }
    if (Double.isInfinite(value) || Double.isNaN(value)) return DEFER;
    String rendered = Double.toString(value);
    return rendered.indexOf('E') >= 0 ? DEFER : rendered;
  }

  /** The entities of a self-describing JSON wrapper, as rows of (schema, vendor, name, format, version, data). */
  private static Object entities(String text, Pattern wrapper, boolean isArray, Pattern entitySchema) {
    try (JsonParser parser = JSON_FACTORY.createParser(text)) {
      parser.nextToken();
      SelfDescribing document = selfDescribing(parser, (p, token) -> {
        if (!isArray) return entity(p, entitySchema);
        if (token != JsonToken.START_ARRAY) return null;
        List<Row> entities = new ArrayList<>(4);
        while (p.nextToken() != JsonToken.END_ARRAY) {
          Row entity = entity(p, entitySchema);
          if (entity == null) return null;
          entities.add(entity);
        }
        return entities;
      });
      if (document == null || parser.nextToken() != null || !wrapper.matcher(document.schema).matches()) return DEFER;
      return isArray ? document.data : List.of(document.data);
    } catch (IOException | RuntimeException e) {
      return DEFER;
    }
  }

  private static Row entity(JsonParser parser, Pattern entitySchema) throws IOException {
    SelfDescribing entity = selfDescribing(parser, (p, token) -> token == JsonToken.START_OBJECT ? copy(p) : null);
    if (entity == null || !entitySchema.matcher(entity.schema).matches()) return null;
    String schema = entity.schema;
    // A valid URI is iglu:vendor/name/format/version, and no part holds a '/'.
    int first = schema.indexOf('/');
    int second = schema.indexOf('/', first + 1);
    int third = schema.indexOf('/', second + 1);
    return RowFactory.create(
        schema,
        schema.substring("iglu:".length(), first),
        schema.substring(first + 1, second),
        schema.substring(second + 1, third),
        schema.substring(third + 1),
        entity.data);
  }

  private record SelfDescribing(String schema, Object data) {}

  private interface DataReader {
    /** The value of `data`, the parser at its first token, or null to leave the line to the full parser. */
    Object read(JsonParser parser, JsonToken token) throws IOException;
  }

  /**
   * An object with a string `schema` and a `data` that `data` accepts, each exactly once (other keys are
   * skipped, as Spark skips them); null if it is anything else.
   */
  private static SelfDescribing selfDescribing(JsonParser parser, DataReader data) throws IOException {
    if (parser.currentToken() != JsonToken.START_OBJECT) return null;
    String schema = null;
    Object value = null;
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String key = parser.currentName();
      JsonToken token = parser.nextToken();
      if (key.equals("schema")) {
        if (schema != null || token != JsonToken.VALUE_STRING) return null;
        schema = parser.getText();
      } else if (key.equals("data")) {
        if (value != null) return null;
        value = data.read(parser, token);
        if (value == null) return null;
      } else {
        parser.skipChildren();
      }
    }
    return schema == null || value == null ? null : new SelfDescribing(schema, value);
  }

  /** The current JSON value, compact, exactly as Spark's from_json renders a value it reads as a string. */
  private static String copy(JsonParser parser) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator generator = JSON_FACTORY.createGenerator(out, JsonEncoding.UTF8)) {
      generator.copyCurrentStructure(parser);
    }
    return out.toString(StandardCharsets.UTF_8);
  }
}
