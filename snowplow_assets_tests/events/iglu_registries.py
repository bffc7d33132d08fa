"""Iglu registries for tests: a static registry served over real HTTP, an embedded one in a folder, and the
resolver config that names them."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from snowplow_assets.events.iglu import SchemaKey


def schema_document(uri: str) -> str:
    """A self-describing JSON Schema for `uri`, as a static registry serves it."""
    key = SchemaKey.parse(uri)
    return json.dumps(
        {
            "$schema": "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
            "self": {"vendor": key.vendor, "name": key.name, "format": key.format, "version": key.version},
            "type": "object",
        }
    )


def registry_path(uri: str) -> str:
    key = SchemaKey.parse(uri)
    return f"schemas/{key.vendor}/{key.name}/{key.format}/{key.version}"


def write_embedded_registry(root: Path, uris: list[str]) -> Path:
    for uri in uris:
        path = root / registry_path(uri)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(schema_document(uri))
    return root


@dataclass
class Registry:
    """What the HTTP registry serves (path below its root -> status and body) and the requests it saw."""

    uri: str
    # path -> (status, body), or a function that answers the request itself (a slow or odd server)
    answers: dict[str, tuple[int, str] | Callable[[BaseHTTPRequestHandler], None]] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # path, apikey header
    apikey: str | None = None  # when set, a request without it is answered 401

    def hold(self, *uris: str) -> None:
        for uri in uris:
            self.answers["/" + registry_path(uri)] = (200, schema_document(uri))


@contextmanager
def http_registry(apikey: str | None = None) -> Iterator[Registry]:
    registry = Registry("", apikey=apikey)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            registry.requests.append((self.path, self.headers.get("apikey")))
            if registry.apikey and self.headers.get("apikey") != registry.apikey:
                status, body = 401, "unauthorised"
            else:
                answer = registry.answers.get(self.path, (404, "not found"))
                if callable(answer):
                    answer(self)
                    return
                status, body = answer
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    registry.uri = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        server.shutdown()
        server.server_close()


def resolver_config(path: Path, repositories: list[dict]) -> Path:
    config = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {"cacheSize": 500, "cacheTtl": 600, "repositories": repositories},
    }
    path.write_text(json.dumps(config))
    return path


def http_repository(name: str, uri: str, priority: int = 0, prefixes: tuple[str, ...] = (), apikey=None) -> dict:
    http = {"uri": uri, **({"apikey": apikey} if apikey else {})}
    return {"name": name, "priority": priority, "vendorPrefixes": list(prefixes), "connection": {"http": http}}


def embedded_repository(name: str, path: str, priority: int = 0, prefixes: tuple[str, ...] = ()) -> dict:
    return {
        "name": name,
        "priority": priority,
        "vendorPrefixes": list(prefixes),
        "connection": {"embedded": {"path": path}},
    }
