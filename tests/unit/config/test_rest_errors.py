"""The REST API's error bodies, as Connect's tools read them: a failure of the service itself is
a 500 that says where to look, never what the exception said (which may quote a config, a path
or a secret)."""

from __future__ import annotations

import json

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from headrace.config.rest import BadRequest, errors


async def test_a_server_error_answers_500_without_the_exception_s_text() -> None:
    async def failing(request: web.Request) -> web.StreamResponse:
        raise RuntimeError("cannot open /etc/headrace/tokens: password=hunter2")

    response = await errors(make_mocked_request("GET", "/connectors"), failing)
    assert isinstance(response, web.Response) and response.status == 500
    assert response.text is not None
    body = json.loads(response.text)
    assert body["error_code"] == 500 and "incident" in body["message"]
    assert "hunter2" not in response.text and "tokens" not in response.text


async def test_bad_input_is_a_400_that_says_what_is_wrong() -> None:
    async def refusing(request: web.Request) -> web.StreamResponse:
        raise BadRequest("the body must be a JSON object")

    response = await errors(make_mocked_request("POST", "/connectors"), refusing)
    assert isinstance(response, web.Response) and response.text is not None
    assert json.loads(response.text) == {
        "error_code": 400,
        "message": "the body must be a JSON object",
    }
