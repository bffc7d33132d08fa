import pytest

from snowplow_assets.events.iglu import SchemaKey


def test_a_uri_parses_into_its_parts_and_back():
    key = SchemaKey.parse("iglu:com.acme/checkout_step/jsonschema/1-0-2")
    assert (key.vendor, key.name, key.format, key.version, key.model) == (
        "com.acme",
        "checkout_step",
        "jsonschema",
        "1-0-2",
        1,
    )
    assert key.uri == "iglu:com.acme/checkout_step/jsonschema/1-0-2"


@pytest.mark.parametrize(
    "uri",
    [
        "iglu:com.acme/x/jsonschema/1-0-0\n",
        "iglu:com.acme/x/jsonschema/1-0-0\u2028",
        "iglu:com.acme/../jsonschema/1-0-0",
        "iglu:com.acme/x/jsonschema/0-1-0",
        "iglu:com.acme/x/jsonschema/1-0",
    ],
)
def test_anything_but_a_whole_valid_uri_is_rejected(uri):
    with pytest.raises(ValueError, match="not a valid Iglu URI"):
        SchemaKey.parse(uri)
