"""TCP keepalive for the shared client's connections: how a connection that died silently is
found without an idle limit that replaces working ones."""

from __future__ import annotations

import functools
import socket

KEEPALIVE_IDLE = 30
"""Seconds a connection sends and receives nothing before the kernel probes the peer. Under the
idle timeouts of the NATs and load balancers a flow may cross (AWS's NAT gateway 350 s, Azure's
load balancer 4 minutes by default), so the probes also keep the flow remembered there."""

KEEPALIVE_INTERVAL = 10
"""Seconds between unanswered probes."""

KEEPALIVE_COUNT = 3
"""Unanswered probes after which the kernel gives the connection up."""

DEAD_AFTER = KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * KEEPALIVE_COUNT
"""Seconds of silence from a dead peer before its connection errors out: 60."""

SocketOption = tuple[int, int, int]


@functools.cache
def keepalive_socket_options() -> tuple[SocketOption, ...]:
    """`setsockopt` arguments for every connection the shared client opens.

    With them, the kernel probes an idle connection and, when `KEEPALIVE_COUNT` probes go
    unanswered (a NAT or firewall forgot the flow, the network changed, the server's host is
    gone), closes it with an error pending. httpcore checks an idle connection's socket before
    it reuses it (`has_expired`: a readable idle socket is one the server closed, and `poll`
    reports a socket with a pending error as readable), so it replaces that one connection and
    no other. `TCP_USER_TIMEOUT` bounds what keepalive cannot see: a request written to a dead
    connection (right after a laptop wakes, before a probe is due) fails after `DEAD_AFTER`
    seconds without an acknowledgement instead of waiting out the 600 s read timeout, and the
    retry layer sends it again on a new connection. It counts only unacknowledged data: a long
    generation, with the request acknowledged and the server's kernel answering the probes, is
    not cut.

    Each option is set only where the platform has it: Linux has all four; macOS names the idle
    time `TCP_KEEPALIVE` and has no user timeout; elsewhere `SO_KEEPALIVE` alone keeps the
    system's defaults (often two hours idle)."""
    tcp = socket.IPPROTO_TCP
    options: list[SocketOption] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    idle_option = getattr(socket, "TCP_KEEPIDLE", getattr(socket, "TCP_KEEPALIVE", None))
    for name, value in ((idle_option, KEEPALIVE_IDLE),
                        (getattr(socket, "TCP_KEEPINTVL", None), KEEPALIVE_INTERVAL),
                        (getattr(socket, "TCP_KEEPCNT", None), KEEPALIVE_COUNT),
                        (getattr(socket, "TCP_USER_TIMEOUT", None), DEAD_AFTER * 1000)):
        if isinstance(name, int):
            options.append((tcp, name, value))
    return tuple(options)
