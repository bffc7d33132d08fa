"""Tables of models the models file no longer declares are named (cdc/undeclared_models.py)."""

from pathlib import Path

from snowplow_assets.cdc.undeclared_models import undeclared_model_tables
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import models


def test_the_batches_and_views_of_undeclared_models_are_named_and_no_other(lake):
    declared = models()  # customers
    folders = [
        Path(lake.cdc_batches("customers")), Path(lake.cdc_latest("customers")),
        Path(lake.cdc_batches("orders")), Path(lake.cdc_latest("orders")),
        Path(lake.uri("cdc", "latest", ".staging")), Path(lake.uri("cdc", "latest", "customers.replaced-0123abcd")),
    ]  # fmt: skip
    assert undeclared_model_tables(LocalFileSystem(), lake, declared) == [], "no cdc folder yet"
    for folder in folders:
        folder.mkdir(parents=True)
    assert undeclared_model_tables(LocalFileSystem(), lake, declared) == [
        lake.cdc_batches("orders"),
        lake.cdc_latest("orders"),
    ]
