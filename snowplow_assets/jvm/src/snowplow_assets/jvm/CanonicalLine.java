package snowplow_assets.jvm;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The shredder's fast path for one enriched line, as a Spark function (snowplow_assets/events/canonical.py).
 *
 * <p>What the line must look like comes from a spec that canonical.py builds from the Python definitions
 * (field layout, patterns, wrapper schemas, the Iglu URI pattern, the templates of an entity's line and
 * folder), so this class holds the mechanism only. The spec is a resource of the jar, next to this class, so
 * that Spark can create the function by its class name alone, as a Spark Connect client registers it;
 * CanonicalLineSpec tells the client which spec that is.
 * For every line it does not take, it returns only its pending fields: the indexes of the fields it could
 * not vouch for (none when the line's shape alone makes it bad, all of them when it cannot read the line
 * as Spark does), and the full parser (parse.py), the one definition of what is valid, decides about those.
 * It vouches for a field only when the result is certain to be the full parser's: anything unusual (JSON
 * that only Spark's lenient reader accepts, a repeated key, text after the JSON value, a number that
 * renders in exponent form, a U+FFFD that may stand for invalid UTF-8) is left to it. The JSON fields are
 * read and re-serialised with the Jackson that Spark's from_json uses, with its limits, so an entity's data
 * is the same text either way. A JSON field with a number anywhere in it that a double cannot hold is left
 * to it too (checkDouble): in an entity's data Spark would write it as "Infinity" or 0.0, and the full parser
 * makes the line bad.
 */
public final class CanonicalLine implements UDF1<String, Row> {
  private static final long serialVersionUID = 1L;

  private static final int STRING = 0;
  private static final int PATTERN = 1;
  private static final int DOUBLE = 2;
  private static final int JSON = 3;

  // Spark's limits for from_json (JSONOptions); at or under them, Spark never fails where this succeeds.
  // No separator between root values: one generator per thread writes every copied value (see Worker).
  private static final JsonFactory JSON_FACTORY = new JsonFactoryBuilder()
      .streamReadConstraints(StreamReadConstraints.builder()
          .maxNestingDepth(1000).maxNumberLength(1000).maxStringLength(20_000_000).build())
      .rootValueSeparator((String) null)
      .build();

  private static final Object DEFER = new Object();
  private static final String SPEC_RESOURCE = "canonical_line_spec.json";

  private final String spec;
  private transient volatile ThreadLocal<Worker> workers;

  /** The function with the spec its jar was built with: how Spark, classic or Connect, instantiates it. */
  public CanonicalLine() throws IOException {
    this.spec = bundledSpec();
  }

  /** The spec canonical.py wrote into the jar (snowplow_assets/jvm/__init__.py builds the jar with it). */
  static String bundledSpec() throws IOException {
    try (InputStream in = CanonicalLine.class.getResourceAsStream(SPEC_RESOURCE)) {
      if (in == null) throw new IOException("the jar has no " + SPEC_RESOURCE);
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** The spec, compiled on first use of each function object: it travels to executors as its text. */
  private static final class Spec {
    final int[] kinds;
    final boolean[] required;
    final Pattern[] patterns;
    final CanonicalForms.Check[] forms;  // a faster check of the pattern's form, where there is one
    final boolean[] entityArrays;
    final int splitAt;
    final int[] picked;
    final Pattern entitySchema;
    final int entitySchemaMaxLength;
    final Object[] allFields;  // the pending fields of a line the function cannot read as Spark does
    final int[] entityFields;  // the JSON fields whose entities the output carries, in shredding order
    final String[] entityKinds;  // and the kind of each one's entities
    final int rootTstamp;  // the field whose text is every entity's root_tstamp
    final Template entityFolder;
    final Template entityHead;
    final Template entityTail;

    Spec(String text) throws IOException {
      JsonNode root = new ObjectMapper().readTree(text);
      JsonNode fields = root.get("fields");
      int count = fields.size();
      kinds = new int[count];
      required = new boolean[count];
      patterns = new Pattern[count];
      forms = new CanonicalForms.Check[count];
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
        if (field.has("form")) forms[i] = CanonicalForms.of(field.get("form").asText());
        entityArrays[i] = field.has("array") && field.get("array").asBoolean();
      }
      splitAt = root.get("split_at").asInt();
      JsonNode pick = root.get("pick");
      picked = new int[pick.size()];
      for (int i = 0; i < picked.length; i++) picked[i] = pick.get(i).asInt();
      entitySchema = Pattern.compile(root.get("entity_schema").asText());
      entitySchemaMaxLength = root.get("entity_schema_max_length").asInt();
      allFields = new Object[count];
      for (int i = 0; i < count; i++) allFields[i] = i;
      JsonNode order = root.get("entity_fields");
      entityFields = new int[order.size()];
      entityKinds = new String[order.size()];
      for (int i = 0; i < entityFields.length; i++) {
        entityFields[i] = order.get(i).get("field").asInt();
        entityKinds[i] = order.get(i).get("kind").asText();
      }
      rootTstamp = root.get("root_tstamp").asInt();
      entityFolder = new Template(root.get("entity_folder"));
      entityHead = new Template(root.get("entity_line").get("head"));
      entityTail = new Template(root.get("entity_line").get("tail"));
    }
  }

  // An entity's values, by the names templates.py gives them: where each is in an entity's array.
  private static final List<String> ENTITY_VALUES =
      List.of("schema", "vendor", "name", "format", "version", "data", "root_tstamp");
  private static final int SCHEMA = ENTITY_VALUES.indexOf("schema");
  private static final int DATA = ENTITY_VALUES.indexOf("data");
  private static final int ROOT_TSTAMP = ENTITY_VALUES.indexOf("root_tstamp");

  /** An output text as its pieces in order, each fixed text or one of an entity's values (templates.py). */
  private static final class Template {
    final String[] texts;  // the piece's text, or null where the piece is a value
    final int[] values;  // where the piece is a value: its index in ENTITY_VALUES

    Template(JsonNode pieces) {
      texts = new String[pieces.size()];
      values = new int[pieces.size()];
      for (int i = 0; i < texts.length; i++) {
        JsonNode piece = pieces.get(i);
        if (piece.has("text")) {
          texts[i] = piece.get("text").asText();
        } else {
          values[i] = ENTITY_VALUES.indexOf(piece.get("value").asText());
          if (values[i] < 0) throw new IllegalArgumentException("unknown template value " + piece);
        }
      }
    }

    String render(String[] entity, StringBuilder text) {
      text.setLength(0);
      for (int i = 0; i < texts.length; i++) text.append(texts[i] != null ? texts[i] : entity[values[i]]);
      return text.toString();
    }
  }

  // Distinct schema URIs a worker remembers; a batch has a few dozen, and past this many it starts afresh.
  private static final int SCHEMA_CACHE_LIMIT = 10_000;
  private static final String[] NOT_A_SCHEMA = new String[0];

  /**
   * What one thread keeps from line to line: a matcher per pattern, the JSON copier, and the schema URIs
   * it has checked. A batch's entities name the same few schemas over and over, and matching a URI against
   * the Iglu pattern takes about a microsecond, as long as reading the whole entity, so each distinct URI
   * is matched once per field. A task runs on one thread, but nothing promises that one function object
   * serves one task, hence one worker per thread.
   */
  private static final class Worker {
    final Spec spec;
    final Matcher[] fields;
    final Matcher entitySchema;
    final int[] bounds;
    final ByteArrayOutputStream copied = new ByteArrayOutputStream(1024);
    final StringBuilder rendered = new StringBuilder(1024);
    final Object[] entities;  // a line's entities by JSON field, each a List<String[]>
    private JsonGenerator copier;
    private final Map<String, String[]> entitySchemas = new HashMap<>();
    private final List<Map<String, Boolean>> wrapperSchemas = new ArrayList<>();  // by field

    Worker(Spec spec) {
      this.spec = spec;
      bounds = new int[spec.kinds.length + 1];
      entities = new Object[spec.kinds.length];
      fields = new Matcher[spec.patterns.length];
      for (int i = 0; i < fields.length; i++) {
        if (spec.patterns[i] != null) fields[i] = spec.patterns[i].matcher("");
        wrapperSchemas.add(spec.kinds[i] == JSON ? new HashMap<>() : null);
      }
      entitySchema = spec.entitySchema.matcher("");
    }

    boolean matches(int field, String text) {
      return fields[field].reset(text).matches();
    }

    /**
     * Whether line[start, end) matches the field's pattern: its form's check first, and the pattern itself
     * when that says no (CanonicalForms). The region's bounds are opaque, so the patterns' anchors and their
     * end-of-value lookahead see the field as if it were the whole text.
     */
    boolean matches(int field, String line, int start, int end) {
      CanonicalForms.Check form = spec.forms[field];
      if (form != null && form.accepts(line, start, end)) return true;
      return fields[field].reset(line).region(start, end).matches();
    }

    /** A wrapper's schema URI matches its field's pattern. */
    boolean isWrapperSchema(int field, String schema) {
      return remembered(wrapperSchemas.get(field), schema, uri -> matches(field, uri));
    }

    /**
     * An entity's schema URI and its parts (vendor, name, format, version), or null if it is not valid or
     * longer than the spec allows.
     */
    String[] entitySchema(String schema) {
      String[] parts = remembered(entitySchemas, schema, uri -> {
        if (uri.length() > spec.entitySchemaMaxLength) return NOT_A_SCHEMA;
        Matcher match = entitySchema.reset(uri);
        // The Iglu URI pattern's groups are the parts, as in iglu.py's SchemaKey.parse.
        return match.matches() ? new String[] {uri, match.group(1), match.group(2), match.group(3), match.group(4)} : NOT_A_SCHEMA;
      });
      return parts == NOT_A_SCHEMA ? null : parts;
    }

    /** What `check` said of a schema URI, checked once per distinct URI (at most SCHEMA_CACHE_LIMIT kept). */
    private static <V> V remembered(Map<String, V> seen, String schema, Function<String, V> check) {
      V known = seen.get(schema);
      if (known == null) {
        if (seen.size() >= SCHEMA_CACHE_LIMIT) seen.clear();
        known = check.apply(schema);
        seen.put(schema, known);
      }
      return known;
    }

    /**
     * The current JSON value, compact, exactly as Spark's from_json renders a value it reads as a string;
     * throws BeyondDouble where one of its numbers is beyond a double's range (checkDouble).
     */
    String copy(JsonParser parser) throws IOException {
      if (copier == null) copier = JSON_FACTORY.createGenerator(copied, JsonEncoding.UTF8);
      try {
        walk(parser, copier);
        copier.flush();
        return copied.toString(StandardCharsets.UTF_8);
      } catch (IOException | RuntimeException e) {
        copier = null;  // a generator stopped inside a value cannot start the next one
        throw e;
      } finally {
        copied.reset();
      }
    }
  }

  private Worker worker() throws IOException {
    if (workers == null) {
      Spec compiled = new Spec(spec);
      workers = ThreadLocal.withInitial(() -> new Worker(compiled));
    }
    return workers.get();
  }

  @Override
  public Row call(String line) throws Exception {
    Worker w = worker();
    Spec s = w.spec;
    if (line == null || line.indexOf('\uFFFD') >= 0) return pending(s.allFields);
    // Fields are read where they lie in the line: only values the result holds become strings of their own.
    int[] bounds = w.bounds;
    if (!split(line, bounds)) return pending(new Object[0]);  // its shape alone makes it bad

    // Once a field is pending the line is not taken, but the other fields are still checked, so that the
    // result names every field the fast path cannot vouch for.
    List<Object> pending = null;
    StringBuilder head = new StringBuilder(256);
    StringBuilder tail = new StringBuilder(line.length());
    Object[] entities = w.entities;
    for (int i = 0; i < s.kinds.length; i++) {
      int start = bounds[i], end = bounds[i + 1] - 1;
      String value = null;  // the field's rendering when it is not the field's own text
      boolean vouched = true;
      if (start == end) {
        if (s.required[i]) vouched = false;
        else if (s.kinds[i] == JSON) entities[i] = List.of();
      } else {
        switch (s.kinds[i]) {
          case PATTERN -> vouched = w.matches(i, line, start, end);
          case DOUBLE -> {
            value = renderDouble(w, i, line, start, end);
            vouched = value != null;
          }
          case JSON -> {
            Object found = entities(w, i, line.substring(start, end));
            vouched = found != DEFER;
            if (vouched) entities[i] = found;
          }
          default -> { }
        }
      }
      if (!vouched) {
        if (pending == null) pending = new ArrayList<>(2);
        pending.add(i);
      }
      if (pending != null || s.kinds[i] == JSON) continue;
      if (i < s.splitAt) {
        append(head, value, line, start, end).append('\t');
      } else if (i > s.splitAt) {
        append(tail.append('\t'), value, line, start, end);
      }
    }
    if (pending != null) return pending(pending.toArray());
    String[] picked = new String[s.picked.length];
    for (int i = 0; i < picked.length; i++) {
      int field = s.picked[i];
      picked[i] = line.substring(bounds[field], bounds[field + 1] - 1);
    }
    String rootTstamp = line.substring(bounds[s.rootTstamp], bounds[s.rootTstamp + 1] - 1);
    List<Row> lines = new ArrayList<>(4);
    List<Row> types = new ArrayList<>(4);
    for (int k = 0; k < s.entityFields.length; k++) {
      @SuppressWarnings("unchecked")
      List<String[]> found = (List<String[]>) entities[s.entityFields[k]];
      for (String[] entity : found) {
        entity[ROOT_TSTAMP] = rootTstamp;
        StringBuilder text = w.rendered;
        lines.add(RowFactory.create(
            s.entityFolder.render(entity, text), s.entityHead.render(entity, text), s.entityTail.render(entity, text)));
        types.add(RowFactory.create(entity[SCHEMA], s.entityKinds[k]));
      }
    }
    return RowFactory.create(picked, head.toString(), tail.toString(), lines.toArray(), types.toArray(), null);
  }

  /** The result for a line the fast path does not take: the indexes of the fields it could not vouch for. */
  private static Row pending(Object[] fields) {
    return RowFactory.create(null, null, null, null, null, fields);
  }

  private static StringBuilder append(StringBuilder to, String value, String line, int start, int end) {
    return value != null ? to.append(value) : to.append(line, start, end);
  }

  /**
   * Where the line's fields start: field i is line[bounds[i], bounds[i + 1] - 1). False unless the line has
   * exactly bounds.length - 1 fields.
   */
  private static boolean split(String line, int[] bounds) {
    int count = bounds.length - 1;
    bounds[0] = 0;
    for (int i = 1; i < count; i++) {
      int tab = line.indexOf('\t', bounds[i - 1]);
      if (tab < 0) return false;
      bounds[i] = tab + 1;
    }
    if (line.indexOf('\t', bounds[count - 1]) >= 0) return false;
    bounds[count] = line.length() + 1;
    return true;
  }

  /**
   * A decimal number as Spark prints a double; null unless Spark prints it that way, not in exponent form,
   * and the double holds its value: a number beyond a double's range reads as an infinity or, below the
   * smallest, as 0, and the full parser makes its line bad.
   */
  private static String renderDouble(Worker w, int field, String line, int start, int end) {
    if (!w.matches(field, line, start, end)) return null;
    double value;
    try {
      value = Double.parseDouble(line.substring(start, end));
    } catch (NumberFormatException e) {
      return null;
    }
    if (Double.isInfinite(value) || Double.isNaN(value)) return null;
    if (value == 0 && !onlyZeros(line, start, end)) return null;  // maybe so small it became 0
    String rendered = Double.toString(value);
    return rendered.indexOf('E') >= 0 ? null : rendered;
  }

  /** Whether line[start, end) has no digit but 0 (an exponent's digits count: the check only needs to be safe). */
  private static boolean onlyZeros(String line, int start, int end) {
    for (int i = start; i < end; i++) {
      char c = line.charAt(i);
      if (c >= '1' && c <= '9') return false;
    }
    return true;
  }

  /** The entities of a self-describing JSON wrapper, each its values (ENTITY_VALUES) but root_tstamp. */
  private static Object entities(Worker w, int field, String text) {
    boolean isArray = w.spec.entityArrays[field];
    try (JsonParser parser = JSON_FACTORY.createParser(text)) {
      parser.nextToken();
      SelfDescribing document = selfDescribing(parser, (p, token) -> {
        if (!isArray) return entity(w, p);
        if (token != JsonToken.START_ARRAY) return null;
        List<String[]> entities = new ArrayList<>(4);
        while (p.nextToken() != JsonToken.END_ARRAY) {
          String[] entity = entity(w, p);
          if (entity == null) return null;
          entities.add(entity);
        }
        return entities;
      });
      if (document == null || parser.nextToken() != null || !w.isWrapperSchema(field, document.schema)) return DEFER;
      return isArray ? document.data : List.of(document.data);
    } catch (IOException | RuntimeException e) {
      return DEFER;
    }
  }

  /**
   * Reads the current JSON value to its end, checking each number with a fraction or an exponent
   * (checkDouble), and copies it to `to` unless that is null. The copy is Jackson's copyCurrentStructure,
   * event by event (the same writes, so the same text), so the check costs a comparison per token and a
   * test of each such number's double, which the copy reads anyway: no second pass over the text.
   */
  private static void walk(JsonParser parser, JsonGenerator to) throws IOException {
    JsonToken token = parser.currentToken();
    int depth = 0;
    while (true) {
      if (token == null) throw new JsonParseException(parser, "unexpected end of the JSON value");
      if (token == JsonToken.VALUE_NUMBER_FLOAT) checkDouble(parser);
      if (to != null) to.copyCurrentEvent(parser);
      if (token.isStructStart()) depth++;
      else if (token.isStructEnd()) depth--;
      if (depth == 0) return;
      token = parser.nextToken();
    }
  }

  /**
   * Throws BeyondDouble unless the double the current number reads as holds its value: past the largest
   * it reads as an infinity, and so close to 0 as 0 though its digits are not all 0, and Spark would write
   * "Infinity" or 0.0 for it in an entity's data (parse.py makes its line bad). The double is the one the
   * copy writes, read once; only a 0 has its digits looked at.
   */
  private static void checkDouble(JsonParser parser) throws IOException {
    double value = parser.getDoubleValue();
    if (Double.isInfinite(value)) throw new BeyondDouble(parser);
    if (value == 0) {
      char[] text = parser.getTextCharacters();
      for (int i = parser.getTextOffset(), end = i + parser.getTextLength(); i < end; i++) {
        char c = text[i];
        if (c == 'e' || c == 'E') return;
        if (c >= '1' && c <= '9') throw new BeyondDouble(parser);
      }
    }
  }

  /** A number that a double cannot hold: the line is left to the full parser. */
  private static final class BeyondDouble extends JsonParseException {
    private static final long serialVersionUID = 1L;

    BeyondDouble(JsonParser parser) {
      super(parser, "a number is out of the range of a double");
    }
  }

  private static String[] entity(Worker w, JsonParser parser) throws IOException {
    SelfDescribing entity = selfDescribing(parser, (p, token) -> token == JsonToken.START_OBJECT ? w.copy(p) : null);
    String[] schema = entity == null ? null : w.entitySchema(entity.schema);
    if (schema == null) return null;
    String[] values = new String[ENTITY_VALUES.size()];
    System.arraycopy(schema, 0, values, 0, schema.length);  // the URI and its parts, in ENTITY_VALUES' order
    values[DATA] = (String) entity.data;
    return values;
  }

  private record SelfDescribing(String schema, Object data) {}

  private interface DataReader {
    /** The value of `data`, the parser at its first token, or null to leave the line to the full parser. */
    Object read(JsonParser parser, JsonToken token) throws IOException;
  }

  /**
   * An object with a string `schema` and a `data` that `data` accepts, each exactly once (other keys are
   * skipped, as Spark skips them, but their numbers checked: the full parser searches the field's whole text
   * for a number a double cannot hold, parse.py); null if it is anything else.
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
        walk(parser, null);
      }
    }
    return schema == null || value == null ? null : new SelfDescribing(schema, value);
  }
}
