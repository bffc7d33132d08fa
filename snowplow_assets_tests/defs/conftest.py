import dagster as dg
import pytest

from snowplow_assets.lake import Lake


@pytest.fixture
def definitions(lake: Lake, monkeypatch) -> dg.Definitions:
    """The project's Definitions, with resources built from settings that point at a temporary lake."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    from snowplow_assets.definitions import defs

    return defs()


@pytest.fixture
def instance():
    with dg.instance_for_test() as test_instance:
        yield test_instance
