"""Hosts on a private network: Linux network namespaces, each joined by a veth pair to one
bridge, with its own loopback and one address on the bridge's subnet.

The bridge lives in a namespace of its own, so nothing is added to the machine's own
network. A process started while the calling thread is ``inside`` a host runs on that host
(a child inherits the namespace of the thread that starts it), and so do the sockets the
thread opens meanwhile. Needs root and ``ip`` with ``netns``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"
PREFIX_LEN = 24


def unavailable() -> str | None:
    """Why namespaces cannot be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"b3t-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], check=False)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


@dataclass(frozen=True)
class Host:
    namespace: str
    address: str


@dataclass
class Lan:
    """A bridge and the hosts on it; ``close`` deletes every namespace made."""

    tag: str
    namespaces: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.switch = self._namespace("lan")
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")

    def _namespace(self, role: str) -> str:
        name = f"b3-{self.tag}-{role}"
        _ip("netns", "add", name)
        self.namespaces.append(name)
        _ip("-n", name, "link", "set", "lo", "up")
        return name

    def host(self, role: str, address: str) -> Host:
        """A new host at ``address``: its namespace, and a veth pair from it to the bridge."""
        name = self._namespace(role)
        ours, theirs = f"h{len(self.namespaces)}{self.tag}"[:15], \
            f"p{len(self.namespaces)}{self.tag}"[:15]
        _ip("link", "add", ours, "type", "veth", "peer", "name", theirs)
        _ip("link", "set", ours, "netns", name, "name", "eth0")
        _ip("link", "set", theirs, "netns", self.switch)
        _ip("-n", self.switch, "link", "set", theirs, "master", "br0", "up")
        _ip("-n", name, "addr", "add", f"{address}/{PREFIX_LEN}", "dev", "eth0")
        _ip("-n", name, "link", "set", "eth0", "up")
        return Host(name, address)

    def close(self) -> None:
        for name in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "delete", name], check=False, capture_output=True)
        self.namespaces.clear()


@contextmanager
def inside(host: Host) -> Iterator[None]:
    """The calling thread on ``host``'s network until the block ends."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(os.path.join(NETNS_DIR, host.namespace), os.O_RDONLY)
    try:
        _setns(target)
        yield
    finally:
        _setns(own)
        os.close(own)
        os.close(target)
