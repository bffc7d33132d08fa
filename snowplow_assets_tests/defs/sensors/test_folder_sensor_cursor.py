"""A folder sensor's cursor as an operator may set it (`dagster sensor cursor --set`, the UI), or as another
version left it: whatever its text, the tick goes on."""

import json

import dagster as dg
import pytest

from snowplow_assets.defs.sensors.enriched_run_folders import enriched_run_folders
from snowplow_assets.defs.sensors.folder_discovery import FolderSensorCursor
from snowplow_assets_tests.conftest import write_run_folder


# fmt: off
@pytest.mark.parametrize("text", [
    "run=2026-03-04-00-00-00",  # a folder name, as someone would type it
    '"run=2026-03-04-00-00-00"', "[]", "7", "null", '{"after": 5}', '{"after": "run=x", "ticks": "many"}',
    '{"after": null, "ticks": -3}',
    '{"after": "~old", "ticks": 1}',  # a name that fits no run folder (the cursor of a version before 2026-11-27)
])
# fmt: on
def test_a_cursor_the_sensor_cannot_read_starts_a_whole_listing(text, definitions, lake):
    write_run_folder(lake, "run=2026-03-04-00-00-00", ["x"])
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(
            instance=instance, resources={"lake": definitions.resources["lake"]}, cursor=text
        ) as context:
            result = enriched_run_folders(context)
    assert [r.partition_key for r in result.run_requests] == ["run=2026-03-04-00-00-00"]
    written = json.loads(result.cursor)
    assert written["after"] == "run=2026-03-04-00-00-00" and written["ticks"] >= 1


def test_the_cursor_the_sensor_writes_reads_back():
    cursor = FolderSensorCursor("run=2026-03-04-00-00-00", 41)
    assert FolderSensorCursor.parse(cursor.dump()) == cursor
    assert FolderSensorCursor.parse(None) == FolderSensorCursor.parse("") == FolderSensorCursor()
