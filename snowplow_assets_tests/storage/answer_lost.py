"""A conditional PUT that S3 applied but whose answer never reached the client, for real over HTTP."""

import http.client
from collections.abc import Callable
from urllib.parse import urlparse

from botocore.exceptions import ConnectionClosedError


class AnswerLostAfterApplying:
    """A botocore handler that sends the first conditional PUT to the server itself, over HTTP, and then drops
    its answer as a broken connection would: S3 has applied the write, and the client, which never heard
    back, retries it (a retryable connection error). `meanwhile` runs between the two: another writer."""

    def __init__(self, meanwhile: Callable[[], object] = lambda: None) -> None:
        self.meanwhile = meanwhile
        self.attempts: list[str | int] = []  # per conditional PUT sent: "answer lost", or the status S3 answered

    def before_send(self, request, **_: object) -> None:
        if request.method != "PUT" or not {"If-Match", "If-None-Match"} & set(request.headers):
            return None
        if self.attempts:
            return None  # the client's retry goes to the server as usual
        url = urlparse(request.url)
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        connection.request("PUT", url.path + (f"?{url.query}" if url.query else ""), request.body, headers)
        applied = connection.getresponse()
        applied.read()
        connection.close()
        assert applied.status == 200, "S3 applied the first PUT"
        self.attempts.append("answer lost")
        self.meanwhile()
        raise ConnectionClosedError(endpoint_url=request.url)

    def answered(self, response_dict, **_: object) -> None:
        if self.attempts and response_dict is not None:
            self.attempts.append(response_dict["status_code"])

    def register(self, client) -> None:
        client.meta.events.register("before-send.s3.PutObject", self.before_send)
        client.meta.events.register("response-received.s3.PutObject", self.answered)
