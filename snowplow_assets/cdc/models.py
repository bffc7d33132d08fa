"""CDC domain models, declared in one YAML file (`SNOWPLOW_CDC_MODELS`; default `cdc/models.yaml` here).

```yaml
models:
  customers:
    id: id                       # name of the model's key column (default: id)
    topics:
      - {topic: shop.customers, contract: debezium}
      - {topic: customer_events, contract: event, id_field: customerId}
      - {topic: customers_raw, contract: partial}
    tests:
      not_null: [email]
      unique: [id]
      accepted_values: {state: [active, invited]}
```

Decisions where the issue is silent:
- `id_field` of a topic defaults to the model's `id` (itself `id` by default): the field that carries the
  key in the topic's rows, `data` objects or Debezium row images. It is a top-level field.
- A model keyed by several columns (a join table, an order's lines) lists them: `id: [order_id, line_no]`,
  and a topic whose fields are named otherwise lists as many, by position: `id_field: [orderId, lineNo]`.
  The key is then every part, each by the one-field rules (contracts.py); a record lacking any part has no
  key. `key_text` is how such a key is written in `__key`. (Until 2026-11-28 a key was one field, and a
  table keyed by two columns collapsed every row sharing the one chosen.)
- A topic feeds exactly one model, so a landed record belongs to one model or to none.
- A record of a topic no model declares is a bad row (`unknown_topic`), unless the topic fits one of
  `ignored_topics`: Kafka topic names in which `*` stands for any run of characters, such as
  `shop.inventory.*` or `__debezium-heartbeat.*`. Such records are counted as ignored and written nowhere: a
  sink that lands every table of a database, or Debezium's heartbeat and schema-change topics beside them,
  does not fill the bad rows of every landing. A declared topic is read whatever pattern it fits, so
  `shop.*` can ignore the tables no model reads yet.
- Unknown keys anywhere in the file are errors, so a misspelt `contarct` cannot silently change nothing.
- Model names name lake folders and Dagster checks, so they are plain identifiers (lake.CDC_MODEL_NAME).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from snowplow_assets.cdc.order import ORDER_VERSION
from snowplow_assets.lake import validate_cdc_model_name
from snowplow_assets.patterns import END

Contract = Literal["partial", "debezium", "event"]
CONTRACTS: tuple[str, ...] = ("partial", "debezium", "event")

# Kafka's own topic alphabet and length limit.
TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
# An ignored_topics pattern: a topic name whose `*`s stand for any run of characters.
TOPIC_PATTERN = re.compile(r"^[A-Za-z0-9._*-]{1,249}$")
IGNORED_TOPIC = "ignored"  # how ingestion reads a topic that only an ignored_topics pattern names
# Id fields and key columns end up in SQL paths and as column names: plain identifiers only.
FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,127}$")
RESERVED_PREFIX = "__"  # bookkeeping columns (__key, __timestamp, ...) use it; model columns may not
KEY_FIELDS_LIMIT = 8


def key_text(parts: Sequence[str]) -> str:
    """`__key` of a record whose key has these parts (each a scalar's text): the text itself for a one-column
    key, as it always was; for more, a JSON array of the texts, which no two different keys share and which
    Spark's `to_json(array(...))` writes alike (contracts.py)."""
    if len(parts) == 1:
        return parts[0]
    return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


def _key_fields(value: object) -> tuple[str, ...]:
    """`id: a` or `id: [a, b]`, as a tuple of names, checked: identifiers, none twice (but for case: Spark's
    columns are case-insensitive), at most KEY_FIELDS_LIMIT."""
    fields = (value,) if isinstance(value, str) else value
    if not isinstance(fields, list | tuple) or not fields or not all(isinstance(f, str) for f in fields):
        raise ValueError("expected a field name or a list of field names")
    for name in fields:
        if not FIELD_NAME.fullmatch(name):
            raise ValueError(f"not a field name (a letter or _, then letters, digits, _ or -): {name!r}")
    lowered = [name.lower() for name in fields]
    if len(set(lowered)) < len(lowered):
        raise ValueError(f"a key names a field twice (names equal but for case are one column): {list(fields)}")
    if len(fields) > KEY_FIELDS_LIMIT:
        raise ValueError(f"a key of more than {KEY_FIELDS_LIMIT} fields: {list(fields)}")
    return tuple(fields)


class ModelsFileError(ValueError):
    """The models file is missing or invalid; the message names the file and every problem in it."""


class TopicSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str
    contract: Contract
    id_field: tuple[str, ...] | None = Field(
        default=None, description="Field(s) holding the key, by position; default: the model's id."
    )

    @field_validator("topic")
    @classmethod
    def _topic_name(cls, value: str) -> str:
        if not TOPIC_NAME.fullmatch(value):
            raise ValueError(f"not a Kafka topic name (letters, digits, . _ -; at most 249): {value!r}")
        return value

    @field_validator("id_field", mode="before")
    @classmethod
    def _field_names(cls, value: object) -> object:
        return None if value is None else _key_fields(value)


AcceptedValue = str | bool | int | float


class ColumnTests(BaseModel):
    """dbt's generic column tests; see column_tests.py for exactly what each one counts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    not_null: list[str] = Field(default_factory=list)
    unique: list[str] = Field(default_factory=list)
    accepted_values: dict[str, list[AcceptedValue]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _columns_named(self) -> ColumnTests:
        named = [*self.not_null, *self.unique, *self.accepted_values]
        if any(not column for column in named):
            raise ValueError("a column test names an empty column")
        for column, values in self.accepted_values.items():
            if not values:
                raise ValueError(f"accepted_values for {column!r} lists no values")
        return self


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    id: tuple[str, ...] = ("id",)
    topics: list[TopicSpec] = Field(min_length=1)
    tests: ColumnTests = Field(default_factory=ColumnTests)

    @field_validator("name")
    @classmethod
    def _model_name(cls, value: str) -> str:
        return validate_cdc_model_name(value)

    @field_validator("id", mode="before")
    @classmethod
    def _key_columns(cls, value: object) -> object:
        fields = _key_fields(value)
        reserved = [name for name in fields if name.startswith(RESERVED_PREFIX)]
        if reserved:
            raise ValueError(f"key columns may not start with {RESERVED_PREFIX}: {reserved}")
        return fields

    @model_validator(mode="after")
    def _topics_once(self) -> ModelSpec:
        seen = [t.topic for t in self.topics]
        repeated = sorted({t for t in seen if seen.count(t) > 1})
        if repeated:
            raise ValueError(f"topics listed more than once: {repeated}")
        return self

    @model_validator(mode="after")
    def _id_fields_match_the_key(self) -> ModelSpec:
        unmatched = [t.topic for t in self.topics if t.id_field is not None and len(t.id_field) != len(self.id)]
        if unmatched:
            raise ValueError(
                f"the key has {len(self.id)} column(s) {list(self.id)}, but the id_field of {unmatched} "
                "names another number of fields"
            )
        return self

    def id_field(self, topic: TopicSpec) -> tuple[str, ...]:
        """The fields of `topic`'s records that hold the key's parts, in the order of the key columns."""
        return topic.id_field or self.id

    def keyed_elsewhere(self) -> dict[str, str]:
        """Topic -> where its records' key comes from, for every topic whose key is not the fields of its
        rows named like the model's `id` (contracts.py): a partial topic's is the Kafka key, another id field's
        is that field. In their rows, fields named like the key columns are not the key."""
        return {
            topic.topic: "the Kafka key" if topic.contract == "partial" else ", ".join(self.id_field(topic))
            for topic in sorted(self.topics, key=lambda t: t.topic)
            if topic.contract == "partial" or self.id_field(topic) != self.id
        }

    @property
    def digest(self) -> str:
        """Changes whenever what this model's state is changes (its topics, contracts and id fields, and the
        order of changes, order.ORDER_VERSION): such a change invalidates every earlier batch, so the next
        one is recomputed in full, and the latest view does not read them."""
        spec = {
            "id": _as_declared(self.id),
            "topics": sorted((t.topic, t.contract, _as_declared(self.id_field(t))) for t in self.topics),
            "order": ORDER_VERSION,
        }
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def _as_declared(fields: tuple[str, ...]) -> str | list[str]:
    """A one-column key as the name it always was, so that digests and readings of such models do not change."""
    return fields[0] if len(fields) == 1 else list(fields)


class CdcModels(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, ModelSpec] = Field(default_factory=dict)
    ignored_topics: list[str] = Field(default_factory=list)

    @field_validator("ignored_topics")
    @classmethod
    def _topic_patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not TOPIC_PATTERN.fullmatch(pattern):
                raise ValueError(
                    f"not a topic name with * for any characters (letters, digits, . _ - *; at most 249): {pattern!r}"
                )
        return patterns

    @model_validator(mode="before")
    @classmethod
    def _names_from_keys(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("models"), dict):
            models = {}
            for name, spec in data["models"].items():
                if isinstance(spec, dict) and "name" in spec and spec["name"] != name:
                    raise ValueError(f"model {name!r} declares a different name {spec['name']!r}")
                models[name] = {**spec, "name": name} if isinstance(spec, dict) else spec
            data = {**data, "models": models}
        return data

    @model_validator(mode="after")
    def _topic_feeds_one_model(self) -> CdcModels:
        owners: dict[str, list[str]] = {}
        for model in self.models.values():
            for topic in model.topics:
                owners.setdefault(topic.topic, []).append(model.name)
        shared = {topic: names for topic, names in owners.items() if len(names) > 1}
        if shared:
            raise ValueError(f"a topic may feed only one model: {shared}")
        return self

    def model(self, name: str) -> ModelSpec:
        if name not in self.models:
            known = ", ".join(sorted(self.models)) or "none"
            raise KeyError(f"no CDC model {name!r} (models: {known})")
        return self.models[name]

    def topics(self) -> dict[str, tuple[ModelSpec, TopicSpec]]:
        """Every declared topic, with its model and its declaration."""
        return {topic.topic: (model, topic) for model in self.models.values() for topic in model.topics}

    def ignored_topic_regex(self) -> str | None:
        """One regular expression that the whole of a topic name matches when an ignored_topics pattern fits
        it, for Python's `re.fullmatch` and Spark's RLIKE alike; None when nothing is ignored."""
        if not self.ignored_topics:
            return None
        alternatives = "|".join(".*".join(re.escape(part) for part in p.split("*")) for p in self.ignored_topics)
        return f"^(?:{alternatives}){END}"

    def reading(self, topic: str) -> str | None:
        """How ingestion reads `topic`: `model/contract/id fields` for a declared topic (the fields joined by
        `,`; none of the three can hold a `/` or a `,`), which decides a record's model and key; IGNORED_TOPIC
        for a topic only an ignored_topics pattern fits; None for any other, whose records are bad rows."""
        declared = self.topics().get(topic)
        if declared is not None:
            model, spec = declared
            return f"{model.name}/{spec.contract}/{','.join(model.id_field(spec))}"
        ignored = self.ignored_topic_regex()
        return IGNORED_TOPIC if ignored is not None and re.fullmatch(ignored, topic) else None


def parse_models(text: str, source: str = "<text>") -> CdcModels:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ModelsFileError(f"{source}: not valid YAML: {error}") from error
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ModelsFileError(f"{source}: expected a mapping with a `models:` key, got {type(document).__name__}")
    try:
        return CdcModels.model_validate(document)
    except ValidationError as error:
        problems = "; ".join(_problem(e) for e in error.errors(include_url=False))
        raise ModelsFileError(f"{source}: invalid CDC models: {problems}") from error


def _problem(error: dict) -> str:
    where = ".".join(str(p) for p in error["loc"]) or "(top)"
    given = error.get("input")
    shown = f" (got {given!r})" if isinstance(given, str | int | float | bool) else ""
    return f"{where}: {error['msg']}{shown}"


def load_models(path: str | Path) -> CdcModels:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise ModelsFileError(f"CDC models file not found: {path} (set SNOWPLOW_CDC_MODELS)") from error
    return parse_models(text, str(path))
