import dagster as dg


@dg.definitions
def executor() -> dg.Definitions:
    # Steps of a run share one process, so they share one lazily started SparkSession.
    return dg.Definitions(executor=dg.in_process_executor)
