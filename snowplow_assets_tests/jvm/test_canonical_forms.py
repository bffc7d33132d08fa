"""CanonicalForms.java's hand-written checks against the patterns they stand in for (canonical.py).

CanonicalLine trusts a check's yes and asks the pattern on a no, so a check may never accept what its
pattern rejects (a line would take the fast path it must not take), and should reject nothing its pattern
accepts (or such values pay for the regular expression). Both are checked on every string of a set built
around each form's edges: canonical values, each with every single-character change, deletion and
insertion from an alphabet of the characters that matter to the form, and every short string over it.
"""

import itertools
import re

import pytest

from snowplow_assets.events import parse
from snowplow_assets.events.canonical import CANONICAL_PATTERNS, function_spec
from snowplow_assets.events.enriched_schema import FieldType


def _edits(value: str, alphabet: str) -> set[str]:
    """The value, and every string one substitution, deletion or insertion of a character away from it."""
    found = {value}
    for i in range(len(value) + 1):
        found.add(value[:i] + value[i + 1 :])
        for c in alphabet:
            found.add(value[:i] + c + value[i + 1 :])
            found.add(value[:i] + c + value[i:])
    return found


def _short(alphabet: str, longest: int) -> set[str]:
    return {"".join(p) for n in range(longest + 1) for p in itertools.product(alphabet, repeat=n)}


# Beyond each form's own characters: a line terminator (which `$` would let through before the end), a
# space, a letter and a non-ASCII digit.
_OTHERS = "\n \u0661x"

_TIMESTAMPS = (
    "2026-03-01 10:00:00.000",
    "1000-12-31 23:59:59.999",
    "9999-01-28 00:00:00.000",
    "2024-02-28 12:34:56.789",
)
# Every month and day from 00 to 13 and 32, and times around each limit: the ranges a pattern spells out.
_DATES_AND_TIMES = {
    *(f"2026-{m:02d}-{d:02d} 10:00:00.000" for m in range(14) for d in range(33)),
    *(f"2026-06-15 {h:02d}:{m:02d}:{m:02d}.000" for h in range(26) for m in (0, 9, 10, 59, 60, 61, 99)),
}
_UUIDS = (
    "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
    "C6EF3124-B53A-4B13-A233-0088F79DCBCB",
    "00000000-0000-0000-0000-00000000000f",
)
_INTS = ("0", "7", "-7", "10", "999999999", "-999999999", "1000000000", "-1000000000", "123456789", "0123", "-0")
_DOUBLES = ("0", "52.52", "52.5200", "-0.5", "+3", "5.", ".5", "1e3", "5.252E1", "1e-308", "1E+999", "1e1000", "-.5e-7")

CORPUS: dict[FieldType, set[str]] = {
    FieldType.TIMESTAMP: _DATES_AND_TIMES.union(*(_edits(t, "0123456789-: .TZ+" + _OTHERS) for t in _TIMESTAMPS)),
    FieldType.UUID: set().union(*(_edits(u, "0aAfFgG-" + _OTHERS) for u in _UUIDS)),
    FieldType.INT: _short("-+0129" + _OTHERS, 3).union(*(_edits(i, "-+059" + _OTHERS) for i in _INTS)),
    FieldType.BOOLEAN: _short("012-" + _OTHERS, 2),
    FieldType.DOUBLE: _short("09.+-eE" + _OTHERS, 3).union(*(_edits(d, "09.+-eE" + _OTHERS) for d in _DOUBLES)),
}
PATTERNS = {**CANONICAL_PATTERNS, FieldType.DOUBLE: parse.DOUBLE_PATTERN}


@pytest.mark.parametrize("form", list(CORPUS), ids=lambda form: form.value)
def test_each_check_accepts_exactly_what_its_pattern_accepts(spark, form):
    check = spark.sparkContext._jvm.snowplow_assets.jvm.CanonicalForms
    pattern = re.compile(PATTERNS[form])
    strings = sorted(CORPUS[form])
    disagree = [s for s in strings if check.accepts(form.value, s) != (pattern.match(s) is not None)]
    assert not disagree, f"{len(disagree)} of {len(strings)} strings, e.g. {disagree[:10]}"
    accepted = sum(pattern.match(s) is not None for s in strings)
    assert 0 < accepted < len(strings), "the set has strings on both sides of the pattern"


def test_the_spec_names_a_checked_form_for_every_typed_field_it_matches():
    import json

    fields = json.loads(function_spec())["fields"]
    matched = [f for f in fields if f["kind"] in ("pattern", "double")]
    assert matched and all(f["form"] in {form.value for form in CORPUS} for f in matched)
