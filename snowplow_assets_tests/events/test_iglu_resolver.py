"""The Iglu resolver (events/iglu_resolver.py) against a real HTTP registry and a folder: lookup order,
answers, failures, and configs that are not one."""

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from snowplow_assets.events.iglu_resolver import NOT_FOUND, IgluResolver, IgluUnavailable
from snowplow_assets_tests.events.iglu_registries import (
    embedded_repository,
    http_registry,
    http_repository,
    registry_path,
    resolver_config,
    write_embedded_registry,
)

ACME = "iglu:com.acme/checkout/jsonschema/1-0-0"
ACME_NEWER = "iglu:com.acme/checkout/jsonschema/1-0-1"
OTHER = "iglu:org.example/thing/jsonschema/2-0-0"


def resolver(tmp_path, repositories, **options) -> IgluResolver:
    config = resolver_config(tmp_path / "resolver.json", repositories)
    loaded = IgluResolver.from_file(config)
    for name, value in {"backoff": 0.0, **options}.items():
        setattr(loaded, name, value)
    return loaded


def test_held_schemas_resolve_and_the_others_fail_with_every_repositorys_answer(tmp_path):
    write_embedded_registry(tmp_path / "registry", [ACME])
    with http_registry() as registry:
        registry.hold(OTHER)
        found = resolver(
            tmp_path,
            [http_repository("Central", registry.uri), embedded_repository("Local", "registry")],
        )
        failures = found.unresolved([ACME, OTHER, ACME_NEWER, ACME])
    assert list(failures) == [ACME_NEWER]
    failure = failures[ACME_NEWER]
    assert (failure["type"], failure["schemaKey"], failure["error"]["error"]) == (
        "IgluError",
        ACME_NEWER,
        "ResolutionError",
    )
    history = failure["error"]["lookupHistory"]
    assert [(h["repository"], h["errors"], h["attempts"]) for h in history] == [
        ("Local", [{"error": NOT_FOUND}], 1),  # embedded before http
        ("Central", [{"error": NOT_FOUND}], 1),  # a 404 is an answer: not retried
    ]
    assert history[0]["lastAttempt"].endswith("Z") and json.dumps(failures)  # JSON all the way down


def test_lookup_order_is_vendor_prefixes_then_embedded_then_priority(tmp_path):
    """FORMATS.md §2; the first repository that holds a schema resolves it, and no other is asked."""
    with http_registry() as low, http_registry() as high, http_registry() as acme:
        for registry in (low, high, acme):
            registry.hold(ACME, OTHER)
        write_embedded_registry(tmp_path / "embedded", [OTHER])
        found = resolver(
            tmp_path,
            [
                http_repository("high", high.uri, priority=5),
                http_repository("low", low.uri, priority=1),
                http_repository("acme", acme.uri, priority=9, prefixes=("com.acme",)),
                embedded_repository("embedded", "embedded", priority=9),
            ],
        )
        assert found.unresolved([ACME, OTHER]) == {}
    assert [path for path, _ in acme.requests] == ["/" + registry_path(ACME)], "its prefix first, for com.acme only"
    assert low.requests == [] and high.requests == [], "com.acme found first; org.example in the embedded one"

    with http_registry() as low, http_registry() as high:
        low.hold(ACME)
        high.hold(ACME)
        found = resolver(tmp_path, [http_repository("high", high.uri, 5), http_repository("low", low.uri, 1)])
        assert found.unresolved([ACME]) == {}
    assert (len(low.requests), len(high.requests)) == (1, 0), "lower priority first"


def test_the_apikey_is_sent_and_a_wrong_one_fails_the_lookup_naming_the_registry(tmp_path):
    with http_registry(apikey="s3cret") as registry:
        registry.hold(ACME)
        assert resolver(tmp_path, [http_repository("Private", registry.uri, apikey="s3cret")]).unresolved([ACME]) == {}
        assert registry.requests[-1][1] == "s3cret"
        wrong = resolver(tmp_path, [http_repository("Private", registry.uri, apikey="nope")])
        with pytest.raises(IgluUnavailable, match=r"Private: HTTP 401 .*run the folder again once the registry"):
            wrong.unresolved([ACME])


def test_a_registry_that_cannot_answer_fails_the_lookup_after_its_retries_unless_another_holds_the_schema(tmp_path):
    """Not found is an answer; a 503 or no server at all is none, and no evidence that the schema is absent."""
    with http_registry() as failing, http_registry() as holding:
        failing.answers["/" + registry_path(ACME)] = (503, "busy")
        holding.hold(ACME)
        only_failing = resolver(tmp_path, [http_repository("Flaky", failing.uri)], attempts=3)
        with pytest.raises(IgluUnavailable, match=rf"no Iglu repository holds {ACME}, and 1 could not answer"):
            only_failing.unresolved([ACME])
        assert len(failing.requests) == 3, "retried"

        both = resolver(tmp_path, [http_repository("Flaky", failing.uri, 0), http_repository("Good", holding.uri, 1)])
        assert both.unresolved([ACME]) == {}

    gone = resolver(tmp_path, [http_repository("Gone", "http://127.0.0.1:9")], attempts=2, timeout=2)
    with pytest.raises(IgluUnavailable, match="Gone: .*refused"):
        gone.unresolved([ACME])


def test_a_vendor_of_dots_is_never_looked_up(tmp_path):
    """The Iglu URI pattern allows `..` as a vendor: as a path it would climb out of the embedded registry."""
    outside = "iglu:../etc/jsonschema/1-0-0"
    (tmp_path / "etc" / "jsonschema").mkdir(parents=True)
    (tmp_path / "etc" / "jsonschema" / "1-0-0").write_text("{}")  # what `registry/schemas/../etc/...` would hit
    write_embedded_registry(tmp_path / "registry", [])
    (tmp_path / "registry" / "etc" / "jsonschema").mkdir(parents=True)
    (tmp_path / "registry" / "etc" / "jsonschema" / "1-0-0").write_text("{}")
    with http_registry() as registry:
        found = resolver(tmp_path, [embedded_repository("Local", "registry"), http_repository("Web", registry.uri)])
        failures = found.unresolved([outside])
    assert list(failures) == [outside] and registry.requests == []


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{", "is no JSON"),
        (
            '{"schema": "iglu:com.acme/other/jsonschema/1-0-0", "data": {"repositories": [{"name": "x", '
            '"connection": {"embedded": {"path": "r"}}}]}}',
            "not iglu:com.snowplow",
        ),
        (
            '{"schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3", "data": {}}',
            "Field required",
        ),
        (
            '{"schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3", "data": {"repositories": '
            '[{"name": "x", "connection": {"ftp": {"uri": "ftp://x"}}}]}}',
            "either http or embedded",
        ),
        (
            '{"schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3", "data": {"repositories": '
            '[{"name": "x", "connection": {"http": {"uri": "iglucentral.com"}}}]}}',
            "an http:// or https:// URL with a host",
        ),
    ],
)
def test_a_config_that_is_not_one_says_what_is_wrong(tmp_path, text, problem):
    path = tmp_path / "resolver.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"the Iglu resolver config {re.escape(str(path))} .*{problem}"):
        IgluResolver.from_file(path)
    with pytest.raises(ValueError, match="cannot read the Iglu resolver config .*No such file"):
        IgluResolver.from_file(tmp_path / "missing.json")


def test_a_redirect_is_not_followed_so_the_apikey_never_leaves_for_another_host(tmp_path):
    with http_registry() as elsewhere, http_registry(apikey="s3cret") as private:
        elsewhere.hold(ACME)

        def moved(handler):
            handler.send_response(302)
            handler.send_header("Location", f"{elsewhere.uri}/{registry_path(ACME)}")
            handler.end_headers()

        private.answers["/" + registry_path(ACME)] = moved
        found = resolver(tmp_path, [http_repository("Private", private.uri, apikey="s3cret")])
        with pytest.raises(IgluUnavailable, match="HTTP 302 .* redirects are not followed"):
            found.unresolved([ACME])
    assert elsewhere.requests == []


def test_the_timeout_bounds_a_whole_answer_and_its_size_is_bounded(tmp_path):
    """A server that sends a byte at a time kept each read within the socket's timeout, and the lookup waited
    for all of it; an answer of any size was read into the driver's memory."""

    def trickle(handler):
        handler.send_response(200)
        handler.end_headers()
        for byte in b'{"self": {}}':
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.3)

    def huge(handler):
        handler.send_response(200)
        handler.end_headers()
        handler.wfile.write(b'{"pad": "' + b"x" * (11 << 20) + b'"}')

    with http_registry() as registry:
        registry.answers["/" + registry_path(ACME)] = trickle
        registry.answers["/" + registry_path(OTHER)] = huge
        slow = resolver(tmp_path, [http_repository("Slow", registry.uri)], attempts=1, timeout=1.0)
        started = time.monotonic()
        with pytest.raises(IgluUnavailable, match="Slow: TimeoutError"):
            slow.unresolved([ACME])
        assert time.monotonic() - started < 2.5
        with pytest.raises(IgluUnavailable, match="answered more than 10485760 bytes"):
            resolver(tmp_path, [http_repository("Big", registry.uri)]).unresolved([OTHER])


def test_a_registry_that_cannot_answer_is_asked_once_per_batch_not_once_per_schema(tmp_path):
    schemas = [f"iglu:com.acme/thing_{n}/jsonschema/1-0-0" for n in range(4)]
    with http_registry() as failing, http_registry() as holding:
        for uri in schemas:
            failing.answers["/" + registry_path(uri)] = (503, "busy")
        holding.hold(*schemas)
        both = resolver(
            tmp_path, [http_repository("Flaky", failing.uri, 0), http_repository("Good", holding.uri, 1)], attempts=2
        )
        assert both.unresolved(schemas) == {}
    assert (len(failing.requests), len(holding.requests)) == (2, 4), "its two attempts, for the first schema only"


def test_an_embedded_folder_that_is_missing_is_no_evidence_of_a_missing_schema(tmp_path):
    """It made every event of the batch a bad row, and the run succeeded."""
    config = resolver_config(tmp_path / "resolver.json", [embedded_repository("Local", "registry")])
    with pytest.raises(ValueError, match="the embedded repository 'Local' has no folder .*registry"):
        IgluResolver.from_file(config)
    write_embedded_registry(tmp_path / "registry", [ACME])
    loaded = IgluResolver.from_file(config)
    shutil.rmtree(tmp_path / "registry")
    with pytest.raises(IgluUnavailable, match="Local: the embedded registry folder .* does not exist"):
        loaded.unresolved([ACME])


def test_a_config_that_is_a_link_starts_its_embedded_paths_from_its_own_folder(tmp_path, monkeypatch):
    """As a mounted ConfigMap is: the settings resolved the link, and looked for the registry beside its target."""
    store, conf = tmp_path / "store", tmp_path / "conf"
    store.mkdir()
    write_embedded_registry(conf / "registry", [ACME])
    target = resolver_config(store / "resolver-v3.json", [embedded_repository("Local", "registry")])
    (conf / "resolver.json").symlink_to(target)
    monkeypatch.setenv("SNOWPLOW_IGLU_RESOLVER", str(conf / "resolver.json"))
    from snowplow_assets.settings import Settings

    assert IgluResolver.from_file(Path(Settings().iglu_resolver)).unresolved([ACME]) == {}


def test_an_http_uri_that_is_no_url_is_refused_with_the_config(tmp_path):
    config = resolver_config(tmp_path / "resolver.json", [http_repository("Typo", "http://iglu.example.com ")])
    with pytest.raises(ValueError, match="an http:// or https:// URL with a host and no spaces"):
        IgluResolver.from_file(config)
