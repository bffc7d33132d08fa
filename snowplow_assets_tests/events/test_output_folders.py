import pytest

from snowplow_assets.events import output_folders, shred
from snowplow_assets.events.iglu import MAX_SCHEMA_URI_LENGTH, SchemaKey
from snowplow_assets.events.parse import ENTITY_TYPE
from snowplow_assets.events.sql import literal, named_struct


def test_an_entitys_folder_as_sql_renders_has_its_place_in_the_loader_layout(spark):
    entity = named_struct(
        schema=literal("iglu:com.acme/checkout/jsonschema/1-0-2"), vendor="'com.acme'", name="'checkout'",
        format="'jsonschema'", version="'1-0-2'", data="'{}'",
    )  # fmt: skip
    values = shred.entity_values(f"CAST({entity} AS {ENTITY_TYPE})", "'2026-03-01 10:00:00.000'")
    [row] = spark.sql(f"SELECT {output_folders.entity_folder_sql(values)} AS folder").collect()
    assert row.folder == "shredded-types~com.acme~checkout~jsonschema~1-0-2"
    place = output_folders.layout_folder(f"{output_folders.FOLDER}={row.folder}", "good", "bad")
    assert place == "good/shredded-types/vendor=com.acme/name=checkout/format=jsonschema/version=1-0-2"


@pytest.mark.parametrize(
    "written, place",
    [
        ("folder=atomic-events", "good/atomic-events"),
        ("folder=bad", "bad"),
        (
            "folder=shredded-types~..~evil~jsonschema~1-0-0",
            "good/shredded-types/vendor=../name=evil/format=jsonschema/version=1-0-0",
        ),
    ],
)
def test_each_written_folder_has_one_place_in_the_loader_layout(written, place):
    assert output_folders.layout_folder(written, "good", "bad") == place


@pytest.mark.parametrize(
    "written",
    [
        "folder=shredded-types~v~n~jsonschema",
        "folder=atomic-events~v~n~f~1-0-0",
        "folder=other",
        "_temporary",
        "atomic-events",
        "output=bad",
    ],
)
def test_a_folder_with_no_place_in_the_layout_stops_the_publish(written):
    with pytest.raises(RuntimeError, match="no place in the loader layout"):
        output_folders.layout_folder(written, "good", "bad")


@pytest.mark.parametrize("longest", ["vendor", "name", "format", "version"])
def test_every_folder_of_an_entity_with_the_longest_schema_uri_fits_in_a_file_name(spark, longest):
    """A file system's names are at most 255 bytes (iglu.py's MAX_SCHEMA_URI_LENGTH)."""
    parts = {"vendor": "v", "name": "n", "format": "f", "version": "1-0-1"}
    room = MAX_SCHEMA_URI_LENGTH - len(SchemaKey(**parts).uri)
    parts[longest] = parts[longest] + ("0" if longest == "version" else "x") * room
    key = SchemaKey(**parts)
    assert len(key.uri) == MAX_SCHEMA_URI_LENGTH and SchemaKey.parse(key.uri) == key
    # In ENTITY_TYPE's order: a cast from one struct to another goes by position.
    entity = named_struct(schema=literal(key.uri), **{k: literal(v) for k, v in parts.items()}, data="'{}'")
    values = shred.entity_values(f"CAST({entity} AS {ENTITY_TYPE})", "'2026-03-01 10:00:00.000'")
    [row] = spark.sql(f"SELECT {output_folders.entity_folder_sql(values)} AS folder").collect()
    written = f"{output_folders.FOLDER}={row.folder}"
    placed = output_folders.layout_folder(written, "good", "bad").split("/")
    assert max(len(name.encode()) for name in [written, *placed]) <= 255
