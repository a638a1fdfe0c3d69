"""The kind and listing caches are kept per base URL and key (issue 31), so a long-lived `serve`
whose clients each send their own key would add an entry per key for ever: each keeps the
`KEPT_KEYS` pairs used last, and a key in use keeps what it found."""

from __future__ import annotations

from loopwright.endpoints.servers import KEPT_KEYS, fetch_listing, known_kind
from loopwright.testing import FakeModelServer


def key(number: int) -> dict[str, str]:
    return {"authorization": f"Bearer client-{number}"}


def listings_asked(server: FakeModelServer) -> int:
    return sum(request.path.endswith("/models") for request in server.requests)


async def test_a_thousand_keys_leave_at_most_the_bound() -> None:
    with FakeModelServer() as server:
        for number in range(1_000):
            await fetch_listing(server.base_url, headers=key(number))
        known = [number for number in range(1_000)
                 if known_kind(server.base_url, key(number)) is not None]
        # the last ones used are kept, so asking with one of them again is not a new request
        asked = listings_asked(server)
        await fetch_listing(server.base_url, headers=key(999))
        assert listings_asked(server) == asked
        # the first ones went: asking with one of them again asks the server
        await fetch_listing(server.base_url, headers=key(0))
        assert listings_asked(server) == asked + 1
    assert known == list(range(1_000 - KEPT_KEYS, 1_000))


async def test_a_key_in_use_keeps_its_kind_while_others_come_and_go() -> None:
    with FakeModelServer(flavor="vllm") as server:
        await fetch_listing(server.base_url, headers=key(-1))
        for number in range(1_000):
            await fetch_listing(server.base_url, headers=key(number))
            if number % (KEPT_KEYS // 2) == 0:  # the live client's requests, now and then
                assert known_kind(server.base_url, key(-1)) == "vllm"
        assert known_kind(server.base_url, key(-1)) == "vllm"


async def test_up_to_the_bound_every_key_keeps_its_kind_and_listing() -> None:
    with FakeModelServer() as server:
        for number in range(KEPT_KEYS):
            await fetch_listing(server.base_url, headers=key(number))
        asked = listings_asked(server)
        for number in range(KEPT_KEYS):
            await fetch_listing(server.base_url, headers=key(number))
        assert listings_asked(server) == asked == KEPT_KEYS
        assert all(known_kind(server.base_url, key(number)) is not None
                   for number in range(KEPT_KEYS))
