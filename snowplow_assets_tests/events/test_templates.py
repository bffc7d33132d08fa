from snowplow_assets.events import shred, templates
from snowplow_assets.events.output_folders import ENTITY_FOLDER
from snowplow_assets.events.templates import Value

GREETING = ("it's ", Value("who"), " \\ ", Value("who"), "!")


def test_sql_concatenates_escaped_text_and_each_values_expression(spark):
    expression = templates.sql(GREETING, {"who": "upper(name)"})
    assert expression == "concat('it\\'s ', upper(name), ' \\\\ ', upper(name), '!')"
    [row] = spark.sql(f"SELECT {expression} AS text FROM VALUES ('ada') AS t(name)").collect()
    assert row.text == "it's ADA \\ ADA!"


def test_spec_keeps_the_pieces_in_order():
    assert templates.spec(GREETING) == [
        {"text": "it's "}, {"value": "who"}, {"text": " \\ "}, {"value": "who"}, {"text": "!"}
    ]  # fmt: skip


def test_entity_templates_name_only_an_entitys_values():
    """The fast path's function knows an entity's values by these names (CanonicalLine.ENTITY_VALUES)."""
    names = {value.name for value in shred.ENTITY_VALUES}
    for template in (shred.ENTITY_LINE_HEAD, shred.ENTITY_LINE_TAIL, ENTITY_FOLDER):
        assert {piece.name for piece in template if isinstance(piece, Value)} <= names
