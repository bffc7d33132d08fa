"""Reading JSON text with Spark SQL's `from_json` as JSON, not as the lenient reader it is by default.

Used by the shredder's JSON fields (events/parse.py) and by CDC landings (cdc/landing.py), so that both refuse
the same things. Spark's reader, left to itself:

- reads the first JSON value of a text and ignores whatever follows it: `{A}{B}` is `{A}`, `{A} junk` too;
- takes `NaN`, `Infinity`, `-INF` and the like for numbers (`allowNonNumericNumbers`, turned off here);
- reads a number beyond a double's range as an infinity, or as 0 when it is that close to 0, and writes it as
  "Infinity" or 0.0 (beyond_double_in_json tells those from real ones).

**Exactly one value.** No function of Spark's reports where its reading stopped, but a reader inside a wrapper
must read the wrapper's closing brackets after the value. Read as `{"v": text}`, `{A} junk` fails; only a text
that goes on as the wrapper would (`{A}}…`, or `{A},"k":1…`, another member of the wrapper) gets through, and
the reader then ignores the rest. Read as `[text]`, `{A} junk` fails too, and `{A},{B}` is two elements; what
gets through is `{A}]…`. Each wrapper lets through only texts the other refuses (after the value, `}` or `,"k":`
against `]`), so a text that passes a reading in each, with one element in the array, is exactly one JSON
value, with white space around it at most. Callers make one of the two readings the one they use; the other
can skip what it reads (a `STRUCT<>`), which costs a fraction of a reading that keeps it.

A wrapper is one level of nesting: `options` raises Spark's limit by the wrapper's levels, so the text itself
may nest as deep as Spark reads any JSON (1000 levels), and as deep as the shredder's fast path reads it.
"""

from __future__ import annotations

from snowplow_assets.events.sql import literal

# Spark's limit on nesting (JSONOptions' maxNestingDepth, Jackson's StreamReadConstraints default).
MAX_NESTING_DEPTH = 1000

IN_OBJECT = ('{"v":', "}", 1)
IN_ARRAY = ("[", "]", 1)
# An array inside an object: still an object at the root, for the corrupt record column (see events/parse.py).
IN_ARRAY_IN_OBJECT = ('{"v":[', "]}", 2)


def wrapped(text: str, wrapper: tuple[str, str, int]) -> str:
    """`text` inside `wrapper` (IN_OBJECT, IN_ARRAY or IN_ARRAY_IN_OBJECT), as a Spark SQL expression."""
    opening, closing, _ = wrapper
    return f"concat({literal(opening)}, {text}, {literal(closing)})"


def options(wrapper: tuple[str, str, int] | None, **more: str) -> str:
    """`from_json`'s options for a text read as JSON, inside `wrapper` (or None), as a Spark SQL map."""
    levels = wrapper[2] if wrapper else 0
    chosen = {"allowNonNumericNumbers": "false", "maxNestingDepth": str(MAX_NESTING_DEPTH + levels), **more}
    return "map(" + ", ".join(f"{literal(k)}, {literal(v)}" for k, v in chosen.items()) + ")"


DOUBLE_RANGE = "(0, or 4.9E-324 to 1.7976931348623157E308 in magnitude)"


def beyond_double(text: str, double: str) -> str:
    """Whether the number `text`, read as the double `double`, lost its value: past the largest it becomes
    infinite, and so close to zero that it becomes 0 (a mantissa with a digit other than 0)."""
    return f"(abs({double}) = CAST('Infinity' AS DOUBLE) OR ({double} = 0 AND {text} RLIKE '^[^eE]*[1-9]'))"


# A JSON number's text: JSON's grammar, less the sign, which a double's range does not depend on.
_NUMBER = r"[0-9]++(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+"
# A mantissa with a digit other than 0, and a number with a fraction or an exponent: only such a number can be
# beyond a double's range (0e999 is 0), or, read into a STRING, be read as a double at all.
_NOT_ZERO = r"(?=[0-9.]*[1-9])"
_NOT_AN_INTEGER = r"(?=[0-9]*+[.eE])"


def _numbers(integers: bool) -> str:
    """A regular expression whose matches run through JSON text and whose group 1 holds the numbers that could
    be beyond a double's range. JSON's strings, in double or (as Spark's reader allows) single quotes, are
    matched whole, so a number in one is never captured, and so is every number (where no letter, digit or
    point comes before it), captured or not, so that no match starts inside one. Each part but the look-ahead
    over a number's mantissa is possessive, so that Java's regex neither backtracks nor recurses per character."""
    strings = r"""(?s)"[^"\\]*+(?:\\.[^"\\]*+)*+"|'[^'\\]*+(?:\\.[^'\\]*+)*+'"""
    counted = _NOT_ZERO + ("" if integers else _NOT_AN_INTEGER)
    return rf"{strings}|(?<![0-9A-Za-z.])(?:{counted}({_NUMBER})|{_NUMBER})"


# A double 0 as Spark writes it in JSON: 0.0 or -0.0, as a value.
_ZERO_IN_JSON = r"[:,\[]-?0\.0[,\]}]"


def beyond_double_in_json(text: str, *written: str, integers: bool) -> str:
    """Whether the JSON `text` held a number beyond a double's range, which Spark's reader wrote wrongly into
    `written`, JSON as Spark writes it from what it read (STRING fields, or to_json of a VARIANT).

    The reader makes a number a double where it cannot keep it otherwise, and writes one beyond the largest as
    "Infinity" and one so close to 0 that it reads as 0 as 0.0. `written` is only the output, so `text` is
    searched for such a number, outside its strings; only where `written` holds "Infinity" or a 0.0, so the
    search, a regular expression over the whole text, seldom runs: run on every text it costs several times
    the reading (use it once per text in a projection: Spark computes an expression that appears twice once
    for every row, ahead of any condition). A number a double cannot hold elsewhere in `text` (a key the
    reader skips) is then found too.
    `integers`: whether an integer counts. Read into a STRING an integer keeps its digits; into a VARIANT one
    that neither a long nor a decimal(38) holds becomes a double.

    No lambda function (`exists`): Spark generates no code for one, and a projection that holds one is
    evaluated without whole-stage code generation, every row, whether the search runs or not. The numbers
    found, none of them 0, are read as doubles at once: one is infinite or 0.
    """
    doubles = f"try_cast(regexp_extract_all({text}, {literal(_numbers(integers))}, 1) AS ARRAY<DOUBLE>)"
    in_text = f"coalesce(arrays_overlap({doubles}, array(CAST('Infinity' AS DOUBLE), CAST(0 AS DOUBLE))), false)"
    wrote = " OR ".join(
        f"contains({w}, 'Infinity\"') OR (contains({w}, '0.0') AND {w} RLIKE {literal(_ZERO_IN_JSON)})" for w in written
    )
    return f"(({wrote}) AND {in_text})"
