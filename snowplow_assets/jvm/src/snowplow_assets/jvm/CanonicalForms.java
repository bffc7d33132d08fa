package snowplow_assets.jvm;

/**
 * Hand-written checks of the canonical forms of typed fields, so that CanonicalLine can skip the regular
 * expression of a field in the usual case.
 *
 * <p>The patterns in canonical.py stay the definition of each form; these checks only make it faster to
 * confirm. Matching the typed fields against their patterns took nearly half of CanonicalLine's time per
 * line (benchmarks/README.md): java.util.regex resets its matcher and walks a node per character, where
 * these check fixed positions. CanonicalLine runs a field's pattern whenever its form's check says no, so a
 * check that is stricter than its pattern only costs time. A check that said yes where the pattern says no
 * would let a line take the fast path it must not take; the tests compare each check with its pattern on
 * every string of a large set built around each form's edges (snowplow_assets_tests/jvm/).
 */
public final class CanonicalForms {
  private CanonicalForms() {}

  /** A check of one form over line[start, end). */
  @FunctionalInterface
  interface Check {
    boolean accepts(CharSequence text, int start, int end);
  }

  /** The check of a form, by the name canonical.py's spec gives it (a FieldType's value); null if none. */
  static Check of(String form) {
    if (form == null) return null;
    return switch (form) {
      case "uuid" -> CanonicalForms::isUuid;
      case "int" -> CanonicalForms::isInt;
      case "timestamp" -> CanonicalForms::isTimestamp;
      case "boolean" -> CanonicalForms::isBoolean;
      case "double" -> CanonicalForms::isDecimal;
      default -> null;
    };
  }

  /** Whether `text` is in the named form, for the tests' comparison with the patterns. */
  public static boolean accepts(String form, String text) {
    Check check = of(form);
    if (check == null) throw new IllegalArgumentException("no hand-written check for the form " + form);
    return check.accepts(text, 0, text.length());
  }

  /** 8-4-4-4-12 hexadecimal digits in lower case, as the full parser writes every UUID. */
  static boolean isUuid(CharSequence t, int start, int end) {
    if (end - start != 36) return false;
    for (int i = 0; i < 36; i++) {
      char c = t.charAt(start + i);
      boolean ok = (i == 8 || i == 13 || i == 18 || i == 23) ? c == '-' : isLowerHex(c);
      if (!ok) return false;
    }
    return true;
  }

  /** 0, or up to nine digits without a leading zero, optionally negative. */
  static boolean isInt(CharSequence t, int start, int end) {
    int i = start;
    if (i < end && t.charAt(i) == '-') i++;
    int digits = end - i;
    if (digits < 1 || digits > 9) return false;
    char first = t.charAt(i);
    if (first == '0') return digits == 1 && i == start;  // "0", never "-0" or "01"
    if (first < '1' || first > '9') return false;
    for (i++; i < end; i++) {
      if (!isDigit(t.charAt(i))) return false;
    }
    return true;
  }

  /** 0 or 1. */
  static boolean isBoolean(CharSequence t, int start, int end) {
    if (end - start != 1) return false;
    char c = t.charAt(start);
    return c == '0' || c == '1';
  }

  /**
   * `yyyy-MM-dd HH:mm:ss.SSS` with a year from 1000 and a day that exists in every year: 29 February
   * exists only in leap years, which the pattern cannot tell, so neither does this.
   */
  static boolean isTimestamp(CharSequence t, int s, int end) {
    if (end - s != 23) return false;
    char y = t.charAt(s);
    if (y < '1' || y > '9' || !digits(t, s + 1, s + 4)) return false;
    if (t.charAt(s + 4) != '-' || t.charAt(s + 7) != '-' || t.charAt(s + 10) != ' ') return false;
    if (t.charAt(s + 13) != ':' || t.charAt(s + 16) != ':' || t.charAt(s + 19) != '.') return false;
    int month = twoDigits(t, s + 5), day = twoDigits(t, s + 8);
    int hour = twoDigits(t, s + 11), minute = twoDigits(t, s + 14), second = twoDigits(t, s + 17);
    if (month < 1 || month > 12 || day < 1 || day > daysInEveryYear(month)) return false;
    if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
    return digits(t, s + 20, s + 23);
  }

  /**
   * A decimal number as the double pattern writes it: a sign, digits with at most one point and at least
   * one digit, then optionally an exponent of one to three digits. What it means is Double.parseDouble's.
   */
  static boolean isDecimal(CharSequence t, int start, int end) {
    int i = start;
    if (i < end && (t.charAt(i) == '+' || t.charAt(i) == '-')) i++;
    int digits = 0;
    boolean point = false;
    for (; i < end; i++) {
      char c = t.charAt(i);
      if (isDigit(c)) {
        digits++;
      } else if (c == '.' && !point) {
        point = true;
      } else {
        break;
      }
    }
    if (digits == 0) return false;
    if (i == end) return true;
    char e = t.charAt(i);
    if (e != 'e' && e != 'E') return false;
    i++;
    if (i < end && (t.charAt(i) == '+' || t.charAt(i) == '-')) i++;
    int exponent = end - i;
    return exponent >= 1 && exponent <= 3 && digits(t, i, end);
  }

  private static int daysInEveryYear(int month) {
    return switch (month) {
      case 2 -> 28;
      case 4, 6, 9, 11 -> 30;
      default -> 31;
    };
  }

  /** The number two digits at `at` make, or -1. */
  private static int twoDigits(CharSequence t, int at) {
    char tens = t.charAt(at), units = t.charAt(at + 1);
    return isDigit(tens) && isDigit(units) ? (tens - '0') * 10 + (units - '0') : -1;
  }

  private static boolean digits(CharSequence t, int from, int to) {
    for (int i = from; i < to; i++) {
      if (!isDigit(t.charAt(i))) return false;
    }
    return true;
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private static boolean isLowerHex(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'f');
  }
}
