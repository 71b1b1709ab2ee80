"""Which addresses web_fetch may connect to: public ones only.

A name is resolved first and every address it resolves to is checked; the connection is
then made to a checked address (``fetch.py``), so a name that resolves differently the
second time (DNS rebinding) cannot lead elsewhere. Refused: loopback, private (RFC 1918,
unique local), link-local (which holds the cloud metadata services, 169.254.169.254 and
fd00:ec2::254), shared address space (CGNAT, 100.64.0.0/10, where Alibaba's metadata
lives), documentation, benchmarking, multicast, reserved and unspecified ranges, and the
IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4, Teredo), judged by that IPv4
address. The operator may allow networks of their own (``[web_fetch] allow_networks``);
a client never can.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

Address = IPv4Address | IPv6Address
Network = str
Resolver = Callable[[str, int], Awaitable[list[Address]]]
_NAT64 = ip_network("64:ff9b::/96")


class AddressRefused(Exception):
    """The address may not be fetched; the message says why."""


def embedded_v4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries, for the forms that route to it."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return address.teredo[1] if address.teredo is not None else None


def is_public(address: Address) -> bool:
    if isinstance(address, IPv6Address):
        inner = embedded_v4(address)
        if inner is not None:
            return is_public(inner)
    return address.is_global and not (address.is_multicast or address.is_reserved
                                      or address.is_unspecified)


class AddressGuard:
    def __init__(self, allow_networks: tuple[Network, ...] = (),
                 resolver: Resolver | None = None) -> None:
        self.allowed = tuple(ip_network(n, strict=False) for n in allow_networks)
        self.resolver = resolver or resolve

    def permits(self, address: Address) -> bool:
        return is_public(address) or any(address in n for n in self.allowed
                                         if n.version == address.version)

    async def check(self, host: str, port: int) -> Address:
        """The address to connect to for ``host``: every address it resolves to must be
        permitted (one bad answer refuses the name), and the first is used."""
        try:
            addresses = await self.resolver(host, port)
        except OSError as exc:
            raise AddressRefused(f"{host} could not be resolved") from exc
        if not addresses:
            raise AddressRefused(f"{host} resolves to no address")
        for address in addresses:
            if not self.permits(address):
                raise AddressRefused(f"{host} resolves to {address}, which is not a public "
                                     "address")
        return addresses[0]


async def resolve(host: str, port: int) -> list[Address]:
    """The addresses of ``host`` (an IP literal resolves to itself)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port,
                                                         type=socket.SOCK_STREAM)
    found: list[Address] = []
    for info in infos:
        address = ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found
