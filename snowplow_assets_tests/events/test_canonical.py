"""The fast path must agree with the full parser and shred.py on every line it takes, and leave them the rest."""

import random

import pytest

from snowplow_assets.datagen.enriched import GenerationOptions
from snowplow_assets.datagen.enriched.batch import Batch
from snowplow_assets.events import shred
from snowplow_assets.events.canonical import parse_canonical
from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FIELD_INDEX
from snowplow_assets.events.output_records import render_entities
from snowplow_assets.events.parse import parse_enriched, parse_failures
from snowplow_assets_tests.events.builders import WEB_PAGE, event_line, link_click

WRAPPER = '{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0","data":%s}'
# The longest schema URI an entity may have (iglu.py), and one character more.
LONGEST_URI = "iglu:com.acme/" + "n" * 169 + "/jsonschema/1-0-0"
TOO_LONG_URI = LONGEST_URI.replace("/jsonschema/", "n/jsonschema/")
# In an entity's data, arrays as deep as a contexts field may nest: 1000 levels, Spark's limit (four above them).
DEEPEST = "[" * 996 + "]" * 996

# Good lines whose typed fields are all in canonical form, with the corners of each form.
CANONICAL = [
    event_line(),
    event_line(txn_id="0", domain_sessionidx="-123456789", dvce_screenwidth="999999999"),
    event_line(true_tstamp="2024-12-31 23:59:59.999", dvce_sent_tstamp="1000-01-01 00:00:00.000"),
    event_line(collector_tstamp="2026-04-30 00:00:00.000", derived_tstamp="2026-01-31 12:00:00.000"),
    event_line(event_id="c6ef3124-b53a-4b13-a233-0088f79dcbcb", br_cookies="1", br_features_pdf="0"),
    event_line(event="unstruct", unstruct_event=link_click("https://shop.example.com/sale"), contexts=None),
    event_line(derived_contexts=None, event_fingerprint=None, etl_tstamp=None),
    event_line(page_title='tabs\\tand "quotes" and ünïcödé stay as written'),
    # Decimal numbers in any accepted form: re-rendered on both paths.
    event_line(geo_latitude="52.5200", geo_longitude="-74", se_value="1.5e3", tr_total="1234567.5", ti_price=".5"),
    event_line(tr_total_base="0.001", tr_tax="-0.0", ti_price_base="0.1", tr_shipping="+2."),
    # JSON in every form Jackson re-serialises: whitespace, escapes, decimals, big integers, nesting, keys
    # other than schema and data (ignored), an empty contexts array.
    event_line(
        contexts=WRAPPER
        % f'[ {{ "data" : {{"a": 1.50, "b": "\\u00e9\\/\\"", "c": [1, {{}}, null]}}, "schema": "{WEB_PAGE}", "x": 1 }} ]'
    ),
    event_line(
        contexts=WRAPPER
        % f'[{{"schema":"{WEB_PAGE}","data":{{"n":123456789012345678901234567890,"f":1e-7,"g":-0.0}}}}]'
    ),
    # Numbers a double holds, zeros written with other digits, and text that only looks like a number beyond
    # its range.
    event_line(
        contexts=WRAPPER
        % f'[{{"schema":"{WEB_PAGE}","data":{{"a":1,"b":-0.5,"c":1e10,"d":1.5e-30,"e":0.0e-5,"f":0e999,"g":-0e-999,'
        f'"h":4.9e-324,"i":1.7976931348623157e308,"j":1{"0" * 400},"1e999":"x:1e999"}},"x":[0.5,0e-999]}}]'
    ),
    event_line(contexts=WRAPPER % "[]", derived_contexts=None),
    event_line(contexts=WRAPPER % f'[{{"schema":"{LONGEST_URI}","data":{{}}}}]'),
    # JSON nested as deep as Spark reads it (the full parser reads each JSON field inside a wrapper of its own).
    event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"a":{DEEPEST}}}}}]'),
]

# Good lines (the full parser accepts them) whose text is not what the shredder writes: the full parser's.
OTHER_FORMS = [
    event_line(collector_tstamp="2026-03-01T10:00:00.123Z"),
    event_line(dvce_created_tstamp="2026-03-01 09:59:59"),
    event_line(true_tstamp="2026-03-01 10:00:00.5"),
    event_line(etl_tstamp="2024-02-29 10:00:00.000"),  # a real date, but a pattern cannot tell leap years
    event_line(txn_id="+5"),
    event_line(event_id="C6EF3124-B53A-4B13-A233-0088F79DCBCB"),  # written in lower case
    event_line(txn_id="007"),
    event_line(txn_id="-0"),
    event_line(domain_sessionidx="1234567890"),
    # Doubles that Spark prints in exponent form, which shred.py rewrites.
    event_line(tr_total="1e7"),
    event_line(tr_total_base="123456789012.25"),
    event_line(geo_latitude="1e30", geo_longitude="-1.5e-30", se_value="123456789012345678901234567890"),
    # A zero written with other digits: only the full parser tells it from a number too small for a double.
    event_line(tr_total="0.0e-5"),
    # JSON that only Spark's lenient reader accepts, or that it reads in a way worth no special case.
    event_line(contexts=WRAPPER.replace('"', "'") % f"[{{'schema':'{WEB_PAGE}','data':{{}}}}]"),
    event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"a":1}},"data":{{"a":2}}}}]'),
    # A number a double cannot hold where the reader skips it: it never reaches the output.
    event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{}},"x":1e999}}]'),
    event_line(derived_contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{}},"x":{{"y":1.5e-400}}}}]'),
    event_line(page_title="\ufffd may stand for bytes that were not UTF-8"),
]

BAD = [
    "no tab at all",
    "\t".join(event_line().split("\t")[:130]),
    event_line(event_id="not-a-uuid"),
    event_line(collector_tstamp=None),
    event_line(collector_tstamp="2026-02-30 10:00:00.000"),
    event_line(etl_tstamp="2026-13-01 10:00:00.000"),
    event_line(txn_id="12345678901"),
    event_line(dvce_ismobile="yes"),
    event_line(geo_latitude="north"),
    event_line(v_etl=None),
    event_line(contexts='{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0","data":[{"x":1}]}'),
    event_line(unstruct_event="{not json"),
    event_line(
        contexts=WRAPPER % '[{"schema":"iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0","data":{}}]'
    ),
    event_line(event_id="c6ef3124-b53a-4b13-a233-0088f79dcbcb\u2028"),
    event_line(br_cookies="1\u0085"),
    # Doubles beyond a double's range, entity data that is a JSON string, a schema URI too long for a folder.
    event_line(geo_latitude="1e400"),
    event_line(tr_total="1e-400"),
    event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":"{{not an object"}}]'),
    event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":"{{\\"a\\":1}}"}}]'),
    event_line(contexts=WRAPPER % f'[{{"schema":"{TOO_LONG_URI}","data":{{}}}}]'),
    # Not numbers in JSON, and numbers in JSON that a double cannot hold in an entity's data (or in a key the
    # reader skips, beside data that holds what such a number leaves there: parse.py).
    *(
        event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"n":{v}}}}}]')
        for v in ("NaN", "-Infinity", "+INF")
    ),
    *(
        event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"n":[1,{v}]}}}}]')
        for v in ("1e999", "-1E+400", "1.5e-400", "-2.4e-324", "9" * 309 + ".5", "0." + "0" * 400 + "1")
    ),
    event_line(event="unstruct", unstruct_event=link_click().replace('"targetUrl"', '"n":1e999,"targetUrl"')),
    event_line(derived_contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"z":0.0}},"x":{{"y":1.5e-400}}}}]'),
    # Text after the JSON value of a field, which Spark's reader ignored; JSON nested deeper than it reads.
    *(
        event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{}}}}]' + junk)
        for junk in (" trailing text", "}", "]", ',"x":1', "]}", " " + WRAPPER % "[]")
    ),
    event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"a":[{DEEPEST}]}}}}]'),
]


def _generated_lines(events: int) -> list[str]:
    options = GenerationOptions(events=events, seed=7)
    return [line.decode().rstrip("\n") for line in Batch(options, random.Random(options.seed)).lines()]


def _full_parser_outputs(frame):
    """The full parser's values, and the output parts shred.py's SQL renders from them (as the shred job's
    full parser path renders them)."""
    head, tail = shred.atomic_events_parts()
    parsed = parse_enriched(frame).selectExpr(
        "*",
        f"{head} AS atomic_head",
        f"{tail} AS atomic_tail",
        f"{shred.render_timestamp('collector_tstamp')} AS root_tstamp",
    )
    return render_entities(parsed, "failure IS NULL")


@pytest.fixture(scope="module")
def both_paths(spark):
    """Per line: the fast path's row and the full parser's, with shred.py's output parts for the latter."""
    lines = [*CANONICAL, *OTHER_FORMS, *BAD, *_generated_lines(2000)]
    frame = spark.createDataFrame(list(enumerate(lines)), "row_id BIGINT, line STRING")
    full = _full_parser_outputs(frame).selectExpr(
        "row_id", "failure IS NULL AS good", "failure", "event_id", "event_fingerprint", "etl_tstamp", "collector_tstamp",
        "atomic_head", "atomic_tail", "entity_lines", "entity_types",
    )  # fmt: skip
    fast = {row.row_id: row for row in parse_canonical(frame).collect()}
    return {row.row_id: (lines[row.row_id], fast[row.row_id], row) for row in full.collect()}


COMPARED = (
    "event_id", "event_fingerprint", "etl_tstamp", "collector_tstamp", "atomic_head", "atomic_tail", "entity_lines",
    "entity_types",
)  # fmt: skip


def test_every_canonical_line_is_good_and_gives_exactly_the_full_parsers_values_and_output(both_paths):
    canonical = [(line, fast, full) for line, fast, full in both_paths.values() if fast.canonical]
    assert len(canonical) > 1900
    for line, fast, full in canonical:
        assert full.good, line
        for column in COMPARED:
            assert fast[column] == full[column], (column, line)


def test_hand_written_canonical_lines_take_the_fast_path(both_paths):
    by_line = {line: fast for line, fast, _ in both_paths.values()}
    assert [line for line in CANONICAL if not by_line[line].canonical] == []


def test_other_accepted_forms_are_good_but_left_to_the_full_parser(both_paths):
    by_line = {line: (fast, full) for line, fast, full in both_paths.values()}
    for line in OTHER_FORMS:
        fast, full = by_line[line]
        assert full.good and not fast.canonical, line
        assert all(fast[column] is None for column in COMPARED), line


def test_bad_lines_are_never_canonical(both_paths):
    bad = [(line, fast) for line, fast, full in both_paths.values() if not full.good]
    assert set(BAD) <= {line for line, _ in bad}
    assert len(bad) >= len(BAD) + 15  # the generated batch's bad lines too
    assert [line for line, fast in bad if fast.canonical] == []


def test_every_field_the_full_parser_finds_invalid_is_one_the_fast_path_left_pending(both_paths):
    """What makes judging a line by its pending fields alone exact (parse_failures)."""
    left = [(line, fast, full) for line, fast, full in both_paths.values() if not fast.canonical]
    assert all(fast.pending_fields is not None for _, fast, _ in left)
    assert all(fast.pending_fields is None for _, fast, _ in both_paths.values() if fast.canonical)
    decoding_errors = [(line, fast, full) for line, fast, full in left if full.failure and full.failure.errors]
    assert len(decoding_errors) > 20
    for line, fast, full in decoding_errors:
        pending = {ENRICHED_FIELDS[i].name for i in fast.pending_fields}
        assert {error.key for error in full.failure.errors} <= pending, line
    # A line whose shape makes it bad has no field to judge; one the function cannot read as Spark does, all.
    by_line = {line: fast for line, fast, _ in left}
    assert by_line["no tab at all"].pending_fields == []
    assert by_line[OTHER_FORMS[-1]].pending_fields == list(range(len(ENRICHED_FIELDS)))


def test_the_lines_the_fast_path_leaves_judged_by_their_pending_fields_fail_exactly_as_in_the_full_parser(
    spark, both_paths
):
    left = [(row_id, line, fast) for row_id, (line, fast, _) in both_paths.items() if not fast.canonical]
    frame = spark.createDataFrame([(row_id, line) for row_id, line, _ in left], "row_id BIGINT, line STRING")
    # As the shred job judges them: by every field any of them left pending. The U+FFFD line leaves every
    # field pending, so it is judged apart, for the others' judgement to name fewer fields.
    unreadable = frame.line == OTHER_FORMS[-1]
    fields = {i for _, line, fast in left if line != OTHER_FORMS[-1] for i in fast.pending_fields}
    assert 5 < len(fields) < 40
    judged = {row.row_id: row.failure for row in parse_failures(frame.where(~unreadable), fields).collect()}
    every_field = range(len(ENRICHED_FIELDS))
    judged |= {row.row_id: row.failure for row in parse_failures(frame.where(unreadable), every_field).collect()}
    assert sorted(judged) == sorted(row_id for row_id, _, _ in left)
    for row_id, failure in judged.items():
        line, _, full = both_paths[row_id]
        assert failure == full.failure, line
    # Judged by one field alone, a line bad in that field only gets the full parser's failure too.
    bad_day = event_line(collector_tstamp="2026-02-30 10:00:00.000")
    bad = spark.createDataFrame([(0, bad_day)], "row_id BIGINT, line STRING")
    [judged_alone] = parse_failures(bad, [FIELD_INDEX["collector_tstamp"]]).collect()
    [full] = parse_enriched(bad).collect()
    assert judged_alone.failure == full.failure and full.failure.errors[0].key == "collector_tstamp"


def test_what_one_worker_keeps_between_lines_never_changes_a_later_lines_result(spark):
    """Lines in one task share their thread's matchers, JSON copier and checked schema URIs (CanonicalLine's
    Worker): a URI accepted in one field is still checked against another field's pattern, and a copy that
    failed half-way through a value leaves nothing behind for the next line."""
    contexts_wrapper = WRAPPER.split(',"data"')[0].removeprefix('{"schema":')
    unstruct_wrapper = '"iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"'
    unknown_entity = WRAPPER % '[{"schema":"iglu:com.acme/x/jsonschema/1-0","data":{}}]'
    sequence = [
        (event_line(), True),
        # The contexts wrapper's URI, accepted just above in contexts, is no unstruct_event wrapper.
        (event_line(event="unstruct", unstruct_event=link_click().replace(unstruct_wrapper, contexts_wrapper)), False),
        # Jackson fails inside the entity's data, while copying it.
        (event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"a":[1,2}}}}]'), False),
        (event_line(), True),
        # A number beyond a double's range stops the copy half-way through a value too.
        (event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"a":[1,1e999,3]}}}}]'), False),
        (event_line(), True),
        (event_line(contexts=WRAPPER % f'[{{"schema":"{WEB_PAGE}","data":{{"b":[3,{{"c":4}}]}}}}]'), True),
        (event_line(contexts=unknown_entity), False),
        (event_line(contexts=unknown_entity), False),  # its URI is remembered as invalid
    ]
    assert unstruct_wrapper in link_click() and contexts_wrapper in sequence[1][0]
    rows = [(i, line) for i, (line, _) in enumerate(sequence)]
    frame = spark.createDataFrame(rows, "row_id BIGINT, line STRING").coalesce(1)  # one task, in this order
    outputs = ("entity_lines", "atomic_head", "atomic_tail")
    fast = sorted(parse_canonical(frame).collect(), key=lambda row: row.row_id)
    full = sorted(_full_parser_outputs(frame).select("row_id", *outputs).collect(), key=lambda row: row.row_id)

    assert [row.canonical for row in fast] == [expected for _, expected in sequence]
    for fast_row, full_row in zip(fast, full):
        if fast_row.canonical:
            for column in outputs:
                assert fast_row[column] == full_row[column], (column, fast_row.row_id)
    assert [line.head for line in fast[6].entity_lines if '"data":{"b":[3,{"c":4}]},' in line.head]
