"""Resolving a batch's schema keys against the Iglu registries of a resolver config (FORMATS.md §2, §4).

An event whose entity names a schema that no registry holds cannot be loaded (a loader builds its table from
the schema), so it becomes a `loader_iglu_error` bad row instead of good output (shred_batch.py). A batch
names a few dozen distinct schemas, so each is looked up once per run, on the driver, before deduplication:
an unresolved event is bad as an unparsable line is, and is never a duplicate nor recorded in the event
manifest, so that a copy sent again once its schema is published is loaded.

**Config.** Snowplow's resolver config, `iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-*`:
repositories with a name, a priority, vendor prefixes and a connection, `http` (`uri`, optional `apikey`)
or `embedded` (`path`). An embedded path is a local folder here, relative to the config file's folder unless
absolute, laid out as a static registry (`<path>/schemas/<vendor>/<name>/<format>/<version>`); Snowplow's
embedded repositories are on the JVM's class path, which a Python process has none of. `cacheSize` and
`cacheTtl` are read and not used: a run looks each schema up once.

**Lookup order**, per schema: the repositories whose vendor prefixes the schema's vendor starts with first,
then embedded before http, then lower priority first; the config's order breaks ties. The first repository
that holds the schema resolves it. An HTTP lookup is `GET {uri}/schemas/{vendor}/{name}/{format}/{version}`
with the `apikey` header when one is given; a schema is held when the answer is a JSON object.

**Failures.** A schema that every repository answers "not found" (HTTP 404, no file) is unresolved: its events
are bad rows, their failure each unresolved schema with every repository's answer, as Snowplow's client
reports a `ResolutionError`. A repository that cannot answer (a timeout, a 5xx after retries, a 401 for a
wrong key, a file that is no JSON) is no evidence that the schema does not exist: when no other repository
held the schema, the run fails with `IgluUnavailable` naming the repository and its error, and publishes
nothing; run it again once the registry answers. Snowplow's shredder made such events bad rows, which then
had to be recovered by hand. A repository that failed is not asked again in the same batch; the timeout
bounds a whole answer and `_LARGEST_SCHEMA` its size; redirects are not followed, since urllib would send
the `apikey` header on to whatever host they name.

**Paths.** The key's parts come from the Iglu URI pattern, whose characters cannot form a separator; a vendor
of dots alone (`.` or `..`, which the pattern allows) would still climb out of an embedded registry, or
reach another path on a server, so such a schema is unresolved without any lookup.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from snowplow_assets.events.iglu import SchemaKey

RESOLVER_CONFIG_PREFIX = "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-"
NOT_FOUND, REPO_FAILURE = "NotFound", "RepoFailure"


class IgluUnavailable(RuntimeError):
    """A registry could not answer for a schema that no other registry held; nothing was published."""


class _Config(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class HttpConnection(_Config):
    uri: str
    apikey: str | None = None

    @field_validator("uri")
    @classmethod
    def _is_a_url(cls, uri: str) -> str:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in ("http", "https") or not parts.hostname or re.search(r"[\s\x00-\x1f\x7f]", uri):
            raise ValueError(
                f"an http:// or https:// URL with a host and no spaces, e.g. http://iglucentral.com: {uri!r}"
            )
        return uri


class EmbeddedConnection(_Config):
    path: str = Field(min_length=1)


class Connection(_Config):
    http: HttpConnection | None = None
    embedded: EmbeddedConnection | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Connection:
        if (self.http is None) == (self.embedded is None):
            raise ValueError("a connection is either http or embedded")
        return self


class Repository(_Config):
    name: str
    priority: int = 0
    vendor_prefixes: list[str] = Field(default_factory=list, alias="vendorPrefixes")
    connection: Connection

    def order(self, vendor: str) -> tuple[int, int, int]:
        matched = any(vendor.startswith(prefix) for prefix in self.vendor_prefixes)
        return (0 if matched else 1, 0 if self.connection.embedded else 1, self.priority)


class _ResolverData(_Config):
    cache_size: int | None = Field(default=None, alias="cacheSize")
    cache_ttl: int | None = Field(default=None, alias="cacheTtl")
    repositories: list[Repository] = Field(min_length=1)


class ResolverConfig(_Config):
    schema_uri: str = Field(alias="schema")
    data: _ResolverData

    @model_validator(mode="after")
    def _is_a_resolver_config(self) -> ResolverConfig:
        if not self.schema_uri.startswith(RESOLVER_CONFIG_PREFIX):
            raise ValueError(f"schema is {self.schema_uri!r}, not {RESOLVER_CONFIG_PREFIX}*")
        return self


@dataclass(frozen=True)
class Answer:
    """One repository's answer for one schema: held (`error` None), NotFound or RepoFailure."""

    repository: str
    error: str | None
    message: str | None
    attempts: int
    at: datetime

    def history(self) -> dict[str, Any]:
        error = {"error": self.error, **({"message": self.message} if self.message else {})}
        return {
            "repository": self.repository,
            "errors": [error],
            "attempts": self.attempts,
            "lastAttempt": self.at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        }


class IgluResolver:
    """The repositories of a resolver config, looked up in FORMATS.md's order (module docstring)."""

    def __init__(
        self,
        config: ResolverConfig,
        base: Path,
        timeout_seconds: float = 10.0,
        attempts: int = 3,
        backoff_seconds: float = 0.5,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self.repositories = config.data.repositories
        self.base = base  # the folder relative embedded paths start from
        self.timeout, self.attempts, self.backoff = timeout_seconds, max(attempts, 1), backoff_seconds
        self.clock = clock

    @classmethod
    def from_file(cls, path: Path) -> IgluResolver:
        """The resolver of the config at `path`; ValueError saying what is wrong with it."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ValueError(f"cannot read the Iglu resolver config {path}: {error.strerror or error}") from None
        try:
            config = ResolverConfig.model_validate(json.loads(text))
        except json.JSONDecodeError as error:
            raise ValueError(f"the Iglu resolver config {path} is no JSON: {error}") from None
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in error.errors()
            )
            raise ValueError(f"the Iglu resolver config {path} is not one: {problems}") from None
        resolver = cls(config, path.parent)
        for repository in resolver.repositories:
            if repository.connection.embedded is not None and not resolver.embedded_root(repository).is_dir():
                raise ValueError(
                    f"the Iglu resolver config {path}: the embedded repository {repository.name!r} has no folder "
                    f"{resolver.embedded_root(repository)}"
                )
        return resolver

    def embedded_root(self, repository: Repository) -> Path:
        assert repository.connection.embedded is not None
        path = Path(repository.connection.embedded.path)
        return path if path.is_absolute() else self.base / path

    def unresolved(self, schema_uris: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The schemas of `schema_uris` that no repository holds, each with its failure (an element of a
        `loader_iglu_error`'s failure array). IgluUnavailable when a repository could not answer for a schema
        that no other held."""
        failures: dict[str, dict[str, Any]] = {}
        down: dict[int, Answer] = {}  # repositories (by id) that could not answer, not asked again in this call
        for uri in sorted(set(schema_uris)):
            key = SchemaKey.parse(uri)
            answers = self.answers(key, down)
            if any(answer.error is None for answer in answers):
                continue
            if failed := [answer for answer in answers if answer.error == REPO_FAILURE]:
                named = "; ".join(f"{answer.repository}: {answer.message}" for answer in failed)
                raise IgluUnavailable(
                    f"no Iglu repository holds {uri}, and {len(failed)} could not answer ({named}); nothing "
                    "was published: run the folder again once the registry answers"
                )
            history = [answer.history() for answer in answers]
            failures[uri] = {
                "type": "IgluError",
                "schemaKey": uri,
                "error": {"error": "ResolutionError", "lookupHistory": history},
            }
        return failures

    def answers(self, key: SchemaKey, down: dict[int, Answer] | None = None) -> list[Answer]:
        """Each repository's answer in lookup order, up to the first that holds the schema. A repository in
        `down` (by `id`; names may repeat) is not asked again: its failure stands, so that a hung registry costs its timeouts once
        per batch, not once per schema; one that fails now is added to it."""
        if key.vendor.strip(".") == "":
            return [Answer("(none)", NOT_FOUND, f"vendor {key.vendor!r} names no registry path", 0, self.clock())]
        down = {} if down is None else down
        answers = []
        for repository in sorted(self.repositories, key=lambda r: r.order(key.vendor)):
            answer = down.get(id(repository)) or self._ask(repository, key)
            if answer.error == REPO_FAILURE:
                down[id(repository)] = answer
            answers.append(answer)
            if answer.error is None:
                break
        return answers

    def _ask(self, repository: Repository, key: SchemaKey) -> Answer:
        path = f"schemas/{key.vendor}/{key.name}/{key.format}/{key.version}"
        if repository.connection.embedded is not None:
            root = self.embedded_root(repository)
            if not root.is_dir():  # a registry gone is no evidence that a schema does not exist
                error, message = REPO_FAILURE, f"the embedded registry folder {root} does not exist"
            else:
                error, message = _held_in_file(root / path)
            return Answer(repository.name, error, message, 1, self.clock())
        http = repository.connection.http
        assert http is not None
        headers = {"apikey": http.apikey} if http.apikey else {}
        request = urllib.request.Request(f"{http.uri.rstrip('/')}/{path}", headers=headers)
        attempt = 1
        while True:
            error, message, retry = _held_at(request, self.timeout)
            if not retry or attempt >= self.attempts:
                return Answer(repository.name, error, message, attempt, self.clock())
            time.sleep(self.backoff * 2 ** (attempt - 1))
            attempt += 1


def _held_in_file(path: Path) -> tuple[str | None, str | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return NOT_FOUND, None
    except OSError as error:
        return REPO_FAILURE, f"cannot read {path}: {error.strerror or error}"
    except UnicodeDecodeError:
        return REPO_FAILURE, f"{path} is not UTF-8"
    return _schema_or_failure(text, str(path))


def _held_at(request: urllib.request.Request, timeout: float) -> tuple[str | None, str | None, bool]:
    """(error, message, whether to retry) of one GET, which `timeout` bounds whole, not each read."""
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            body = _read_within(response, time.monotonic() + timeout)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return NOT_FOUND, None, False
        if 300 <= error.code < 400:
            where = error.headers.get("Location", "elsewhere")
            message = f"HTTP {error.code} from {request.full_url} to {where}: redirects are not followed (the apikey "
            return REPO_FAILURE, message + "would go with them); give the registry's own URI", False
        return REPO_FAILURE, f"HTTP {error.code} {error.reason} from {request.full_url}", error.code in _RETRIED
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as error:
        return REPO_FAILURE, f"{getattr(error, 'reason', None) or error!r} for {request.full_url}", True
    except _TooLarge:
        return REPO_FAILURE, f"{request.full_url} answered more than {_LARGEST_SCHEMA} bytes", False
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return REPO_FAILURE, f"{request.full_url} answered no UTF-8", False
    return (*_schema_or_failure(text, request.full_url), False)


_RETRIED = {429, 500, 502, 503, 504}
_LARGEST_SCHEMA = 10 << 20  # bytes; a schema is a few kilobytes, and the answer is held in the driver


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect becomes the 3xx it is: urllib would follow it with every header, the apikey to another host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


class _TooLarge(Exception):
    pass


def _read_within(response: Any, deadline: float) -> bytes:
    """The body, read as it arrives (a server may send a byte a second, each read within the socket's timeout)
    until `deadline`, and at most `_LARGEST_SCHEMA` bytes."""
    chunks, size = [], 0
    while chunk := response.read1(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > _LARGEST_SCHEMA:
            raise _TooLarge
        if time.monotonic() > deadline:
            raise TimeoutError("the answer took longer than the timeout")
    return b"".join(chunks)


def _schema_or_failure(text: str, where: str) -> tuple[str | None, str | None]:
    try:
        schema = json.loads(text)
    except json.JSONDecodeError:
        return REPO_FAILURE, f"{where} holds no JSON schema"
    return (None, None) if isinstance(schema, dict) else (REPO_FAILURE, f"{where} holds no JSON schema")
