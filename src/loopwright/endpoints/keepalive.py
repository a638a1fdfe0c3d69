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
    no other. While a request waits for its reply the connection is idle too: a server whose
    host died mid-generation is found in `DEAD_AFTER` seconds, not at the 600 s read timeout.

    No `TCP_USER_TIMEOUT`: it would also bound a request written to a connection that died
    unnoticed (right after a laptop wakes), but Linux applies it to zero-window probing as
    well, and a busy local server that leaves a long request unread past it would have its
    connection cut.

    Each option is set only where the platform has it: Linux has all three; macOS names the
    idle time `TCP_KEEPALIVE`; elsewhere `SO_KEEPALIVE` alone keeps the system's timings
    (often two hours idle)."""
    tcp = socket.IPPROTO_TCP
    options: list[SocketOption] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    idle_option = getattr(socket, "TCP_KEEPIDLE", getattr(socket, "TCP_KEEPALIVE", None))
    for name, value in ((idle_option, KEEPALIVE_IDLE),
                        (getattr(socket, "TCP_KEEPINTVL", None), KEEPALIVE_INTERVAL),
                        (getattr(socket, "TCP_KEEPCNT", None), KEEPALIVE_COUNT)):
        if isinstance(name, int):
            options.append((tcp, name, value))
    return tuple(options)
