"""The CDC resource: where the models are declared and how long batches are kept (the SNOWPLOW_CDC_* settings)."""

import dagster as dg

from snowplow_assets.cdc.models import CdcModels, load_models
from snowplow_assets.settings import Settings


class CdcResource(dg.ConfigurableResource):
    """The CDC domain models file and the batch retention."""

    models_path: str
    batch_retention_hours: float = 24

    def models(self) -> CdcModels:
        return load_models(self.models_path)


def build_cdc_resource(settings: Settings) -> CdcResource:
    return CdcResource(models_path=settings.cdc_models, batch_retention_hours=settings.cdc_batch_retention_hours)
