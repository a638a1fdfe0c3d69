"""Which addresses `web_fetch` may connect to (no SSRF).

The host of every URL (and of every redirect) is resolved here, off the event loop, and each
address it resolves to is checked; the fetch then connects to exactly the address that was
checked, so a DNS answer that changes between the check and the connection (rebinding) cannot
redirect it. Any spelling of a host resolves to the address the system would use (decimal
`2130706433`, octal `0177.0.0.1`, hex `0x7f.1`, percent-encoding), and IPv6 forms that carry an
IPv4 address (mapped, compatible, 6to4, Teredo, NAT64) are judged by that IPv4 address.

Always refused: cloud metadata endpoints, unspecified (`0.0.0.0`, `::`), multicast, broadcast
and reserved addresses. Refused unless the user opts in (`web_allow_private = true`, or a list
of addresses / networks that may be reached): loopback, private, link-local, shared (CGNAT),
unique-local and every other address that is not globally routable.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from loopwright.errors import ToolError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
WEB_ACCESS_SERVICE = "web_allow_private"
"""`ToolContext.services` key: the `web_allow_private` setting (bool or list of networks)."""

_METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean…
    "169.254.170.2",  # AWS ECS task credentials
    "fd00:ec2::254",  # AWS over IPv6
    "100.100.100.200",  # Alibaba Cloud
    "168.63.129.16",  # Azure wire server
    "192.0.0.192",  # Oracle Cloud
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


@dataclass(frozen=True)
class WebAccess:
    """What the user allowed beyond public addresses."""

    allow_private: bool = False
    allowed: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def from_setting(cls, value: object) -> WebAccess:
        """`True` / `False`, or a list of addresses and networks (`["127.0.0.1", "10.0.0.0/8"]`)
        that may be reached although private."""
        if isinstance(value, bool) or value is None:
            return cls(allow_private=bool(value))
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, Sequence):
            raise ToolError(f"web_allow_private must be true, false or a list of networks, "
                            f"not {value!r}")
        try:
            networks = tuple(ipaddress.ip_network(str(item), strict=False) for item in value)
        except ValueError as exc:
            raise ToolError(f"web_allow_private: {exc}") from exc
        return cls(allowed=networks)

    def permits_private(self, address: IPAddress) -> bool:
        return self.allow_private or any(address in network for network in self.allowed)


def refusal(address: IPAddress, access: WebAccess) -> str | None:
    """Why `address` may not be fetched, or None when it may."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = refusal(embedded, access)
        return f"{reason} (written as {address})" if reason else None
    if address in _METADATA:
        return f"{address} is a cloud metadata address"
    if address.is_unspecified:
        return f"{address} is the unspecified address (it reaches this machine)"
    if address.is_multicast:
        return f"{address} is a multicast address"
    if isinstance(address, ipaddress.IPv4Address) and address == ipaddress.IPv4Address(
            "255.255.255.255"):
        return f"{address} is the broadcast address"
    if address.is_global and not address.is_reserved:
        return None
    if access.permits_private(address):
        return None
    return f"{address} is {_kind(address)}"


def _kind(address: IPAddress) -> str:
    if address.is_loopback:
        return "a loopback address (this machine)"
    if address.is_link_local:
        return "a link-local address"
    if isinstance(address, ipaddress.IPv6Address) and address in ipaddress.ip_network("fc00::/7"):
        return "a unique-local address (a private network)"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if address.is_private:
        return "a private-network address"
    return "not a public internet address"


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, 6to4, Teredo, NAT64, compatible)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        server, client = address.teredo
        return client if client.is_global else server
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64_LOCAL:
        return ipaddress.IPv4Address("127.0.0.1")  # local-use translation: treat as local
    return None


def url_host(raw_host: str) -> str:
    """The host to resolve, as the system will read it (percent-decoding, no zone brackets)."""
    return unquote(raw_host).strip("[]")


async def resolve_checked(host: str, port: int, access: WebAccess) -> IPAddress:
    """The address to connect to for `host`: resolved off the event loop, every answer
    checked; `ToolError` naming the reason when any answer is refused."""
    try:
        answers = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise ToolError(f"cannot resolve host {host!r}: {exc}") from exc
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in answers:
        literal = str(sockaddr[0]).split("%", 1)[0]
        address = ipaddress.ip_address(literal)
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise ToolError(f"cannot resolve host {host!r}: no addresses")
    for address in addresses:
        reason = refusal(address, access)
        if reason:
            where = host if host == str(address) else f"{host} (it resolves to {address})"
            raise ToolError(
                f"refused to fetch from {where}: {reason}. web_fetch only reaches public "
                "internet addresses; the user can allow local ones with the web_allow_private "
                "setting.")
    return addresses[0]
