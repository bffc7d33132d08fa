import re

from snowplow_assets.events.sql import literal
from snowplow_assets.patterns import END

LINE_TERMINATORS = ["\n", "\r", "\r\n", "\u0085", "\u2028", "\u2029"]


def test_end_is_the_end_of_the_value_in_python_and_in_spark(spark):
    pattern = "^abc" + END
    values = ["abc", *("abc" + t for t in LINE_TERMINATORS)]
    rows = spark.createDataFrame([(v,) for v in values], "v STRING")
    checks = rows.selectExpr(
        "v", f"v RLIKE {literal(pattern)} AS with_end", f"v RLIKE {literal('^abc$')} AS with_dollar"
    )
    spark_matches = {r.v: (r.with_end, r.with_dollar) for r in checks.collect()}

    assert spark_matches["abc"] == (True, True)
    assert [spark_matches["abc" + t][0] for t in LINE_TERMINATORS] == [False] * len(LINE_TERMINATORS)
    assert [v for v in values if re.search(pattern, v)] == ["abc"]
    # Why END exists: `$` lets a final line terminator through, in Java always and in Python a "\n".
    assert spark_matches["abc\u2028"][1] and re.search("^abc$", "abc\n")
