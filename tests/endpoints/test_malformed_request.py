"""Which error bodies say the request itself is malformed (never retried unchanged)."""

from __future__ import annotations

import pytest

from loopwright.endpoints.retry import is_malformed_request

LLAMACPP = ('{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: '
            '[json.exception.parse_error.101] parse error","type":"server_error"}}')


@pytest.mark.parametrize(("status", "body"), [
    (500, LLAMACPP),
    (500, '{"error":{"code":500,"message":"Failed to parse messages: Missing content part",'
          '"type":"server_error"}}'),
    (400, '{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles '
          'must alternate between \\"user\\" and \\"assistant\\""}}'),
    (400, '{"type":"error","error":{"type":"invalid_request_error","message":"messages.3.'
          'content.0: unexpected `tool_use_id` found in `tool_result` blocks"}}'),
    (400, '{"error":{"message":"Invalid value for \'content\'","type":"invalid_request_error"}}'),
    (422, '{"error":"messages.1.content: must be a string"}'),
])
def test_bodies_naming_a_malformed_request(status: int, body: str) -> None:
    assert is_malformed_request(status, body)


@pytest.mark.parametrize(("status", "body"), [
    (500, '{"error":{"message":"Internal server error","type":"server_error"}}'),
    (503, "upstream connect error"),
    (429, '{"error":{"message":"Rate limit reached","type":"invalid_request_error"}}'),
    (404, '{"error":{"message":"The model `x` does not exist","type":"invalid_request_error"}}'),
    (401, '{"error":{"message":"bad key","type":"invalid_request_error"}}'),
    (529, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
    (400, '{"error":{"message":"bad model"}}'),
])
def test_other_failures_are_not_called_malformed(status: int, body: str) -> None:
    assert not is_malformed_request(status, body)
