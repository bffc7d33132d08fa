"""Python code over each partition of a DataFrame, in Spark's Python workers: a classic session's and a Spark
Connect server's alike.

RDDs, the classic way to run a Python function per partition, do not exist for a Spark Connect client, so
the rows travel as Arrow record batches (`mapInArrow`), which both have. A task sees the partition's rows as
dicts and returns tuples in the order of the result schema's fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

PartitionTask = Callable[[Iterator[dict[str, Any]]], Iterable[tuple]]

# Rows per Arrow batch of a task's results: small enough to hold a few of in memory whatever the rows.
RESULT_BATCH_ROWS = 10_000


def map_partitions(frame: DataFrame, task: PartitionTask, schema: StructType) -> DataFrame:
    """The rows `task` returns for each partition of `frame`, as a DataFrame of `schema`."""
    arrow_schema = to_arrow_schema(schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        results = iter(task(row for batch in batches for row in batch.to_pylist()))
        while chunk := list(islice(results, RESULT_BATCH_ROWS)):
            columns = [pa.array(values, type=field.type) for values, field in zip(zip(*chunk), arrow_schema)]
            yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)

    return frame.mapInArrow(run, schema)
