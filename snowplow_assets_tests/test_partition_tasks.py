from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from snowplow_assets.partition_tasks import RESULT_BATCH_ROWS, map_partitions

SCHEMA = StructType(
    [StructField("id", LongType()), StructField("twice", IntegerType()), StructField("note", StringType())]
)


def _doubled(rows):
    for row in rows:
        yield row["id"], 2 * row["id"], None if row["id"] % 2 else "even"


def test_a_tasks_tuples_come_back_as_rows_of_the_schema_over_several_batches(spark):
    ids = 2 * RESULT_BATCH_ROWS + 5  # a partition's results in more than one Arrow batch
    result = map_partitions(spark.range(0, ids, numPartitions=2), _doubled, SCHEMA)
    assert result.schema == SCHEMA
    rows = sorted(result.collect())
    assert [r.id for r in rows] == list(range(ids))
    assert all(r.twice == 2 * r.id and r.note == (None if r.id % 2 else "even") for r in rows)
