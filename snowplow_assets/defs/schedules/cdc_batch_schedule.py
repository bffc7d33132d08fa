import dagster as dg

from snowplow_assets.defs.jobs.cdc import CDC_BATCH_JOB
from snowplow_assets.settings import Settings


@dg.definitions
def cdc_batch_schedule() -> dg.Definitions:
    # Built when the code location loads, so the cron follows SNOWPLOW_CDC_BATCH_CRON of that moment.
    schedule = dg.ScheduleDefinition(
        name="cdc_batch_schedule",
        job_name=CDC_BATCH_JOB,
        cron_schedule=Settings().cdc_batch_cron,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Cuts the next CDC batch of every model and refreshes the latest view (SNOWPLOW_CDC_BATCH_CRON).",
    )
    return dg.Definitions(schedules=[schedule])
