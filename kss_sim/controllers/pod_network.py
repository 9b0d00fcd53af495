"""Where a simulated pod lives on the network: its node's IPs and an address of its own.

- Host IPs: the node's ``InternalIP`` addresses, else its ``ExternalIP`` ones (the first, and the first of the
  other family for a dual-stack node), as the kubelet reports its node IPs; a node without addresses gets a
  stable made-up one in 172.16.0.0/12, from its name.
- Pod IPs: one per range of the node's ``spec.podCIDRs`` (``spec.podCIDR``), from the range's third address on
  (the first is the bridge's, as with the bridge/host-local CNI plugins), the lowest free one; a node without a
  pod range gets a stable made-up one in 10.0.0.0/8 from its name (a /24, larger when the node takes more than
  250 pods). Two nodes' made-up ranges may coincide on a large cluster: addresses are unique on each node.
  ``hostNetwork`` pods take their node's IPs.
- An address a pod reports (a pod mirrored from a source cluster, whose status says which address its CNI gave
  it) wins over one this kubelet gave: the kubelet's pod holding it is given another, so addresses stay unique
  on each node whichever came first. Two reported pods with one address (only after a restart of the kubelet,
  which no longer knows which addresses it gave) are left as they are.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kss_sim.kube.quantity import parse_quantity

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Key = tuple[str, str]  # (namespace, name)

_HOST_RANGE = ipaddress.ip_network("172.16.0.0/12")
_POD_SPACE = ipaddress.ip_network("10.0.0.0/8")


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _family(address: str) -> int | None:
    try:
        return ipaddress.ip_address(address).version
    except ValueError:
        return None


def host_ips(node: Mapping[str, Any]) -> list[str]:
    """The node's IPs as the kubelet reports them for its pods' ``hostIPs`` (see the module docstring)."""
    addresses = [a for a in (node.get("status") or {}).get("addresses") or [] if isinstance(a, dict)]
    name = str((node.get("metadata") or {}).get("name") or "")
    for kind in ("InternalIP", "ExternalIP"):
        found = [str(a.get("address")) for a in addresses if a.get("type") == kind and _family(str(a.get("address")))]
        if found:
            primary = found[0]
            other = next((ip for ip in found[1:] if _family(ip) != _family(primary)), None)
            return [primary, other] if other else [primary]
    offset = 1 + _hash(name) % (_HOST_RANGE.num_addresses - 2)
    return [str(_HOST_RANGE.network_address + offset)]


def _max_pods(node: Mapping[str, Any]) -> int:
    status = node.get("status") or {}
    value = (status.get("allocatable") or {}).get("pods") or (status.get("capacity") or {}).get("pods")
    try:
        return int(parse_quantity(str(value))) if value is not None else 110
    except (ValueError, ArithmeticError):
        return 110


def pod_ranges(node: Mapping[str, Any]) -> list[Network]:
    """The node's pod ranges: ``spec.podCIDRs`` (else ``spec.podCIDR``), else a stable made-up one."""
    spec = node.get("spec") or {}
    cidrs = [str(c) for c in spec.get("podCIDRs") or [] if c] or ([str(spec["podCIDR"])] if spec.get("podCIDR") else [])
    ranges: list[Network] = []
    for cidr in cidrs[:2]:
        try:
            ranges.append(ipaddress.ip_network(cidr, strict=False))
        except ValueError:
            continue
    if ranges:
        return ranges
    name = str((node.get("metadata") or {}).get("name") or "")
    prefix = min(24, 32 - math.ceil(math.log2(_max_pods(node) + 3)))
    prefix = max(prefix, 16)
    count = 2 ** (prefix - _POD_SPACE.prefixlen)
    index = _hash(name) % count
    size = 2 ** (32 - prefix)
    return [ipaddress.ip_network((int(_POD_SPACE.network_address) + index * size, prefix))]


def _usable(network: Network) -> tuple[int, int]:
    """First and last address a pod may take: from the third address to the one before the broadcast."""
    first = int(network.network_address) + 2
    last = int(network.network_address) + network.num_addresses - 2
    return first, max(first - 1, last)


def range_text(network: Network) -> str:
    """``first-last`` as host-local IPAM names a range set in its errors (from the bridge address on)."""
    first, last = _usable(network)
    return f"{ipaddress.ip_address(first - 1)}-{ipaddress.ip_address(last)}"


class PodAddresses:
    """Which pod holds which address on each node: fed with every running pod's ``podIPs``, asked for free ones."""

    def __init__(self) -> None:
        """Nothing known."""
        self._on_node: dict[str, dict[str, Key]] = {}  # node -> ip -> pod
        self._of: dict[Key, tuple[str, tuple[str, ...]]] = {}  # pod -> (node, ips)
        self._given: set[Key] = set()  # pods holding addresses ``allocate`` gave them

    def clear(self) -> None:
        """Forget everything."""
        self._on_node.clear()
        self._of.clear()
        self._given.clear()

    def holds(self, key: Key) -> bool:
        """Whether ``key`` holds addresses."""
        return key in self._of

    def record(self, key: Key, node: str, ips: Sequence[str]) -> list[Key]:
        """``key`` runs on ``node`` with ``ips`` (as its status says). Returns the pods whose addresses
        ``allocate`` gave and that lost one of them to ``key``: they need new ones (``displaced``)."""
        held = (node, tuple(ips))
        if self._of.get(key) == held:
            return []
        self.release(key)
        self._of[key] = held
        taken = self._on_node.setdefault(node, {})
        displaced: list[Key] = []
        for ip in ips:
            holder = taken.get(ip)
            if holder is not None and holder != key and holder in self._given and holder not in displaced:
                displaced.append(holder)
            taken[ip] = key
        return displaced

    def displaced(self, key: Key) -> bool:
        """Whether one of ``key``'s addresses is now another pod's (see ``record``)."""
        held = self._of.get(key)
        if held is None:
            return False
        taken = self._on_node.get(held[0], {})
        return any(taken.get(ip) != key for ip in held[1])

    def given(self, key: Key) -> list[str] | None:
        """The addresses ``allocate`` gave ``key`` and it still holds, or None."""
        held = self._of.get(key)
        return list(held[1]) if held is not None and key in self._given else None

    def release(self, key: Key) -> str | None:
        """``key``'s addresses are free again; returns the node they were on."""
        self._given.discard(key)
        held = self._of.pop(key, None)
        if held is None:
            return None
        node, ips = held
        taken = self._on_node.get(node, {})
        for ip in ips:
            if taken.get(ip) == key:
                del taken[ip]
        if not taken:
            self._on_node.pop(node, None)
        return node

    def forget_node(self, node: str) -> None:
        """The node is gone (its pods with it)."""
        for key in list(self._on_node.pop(node, {}).values()):
            self._of.pop(key, None)
            self._given.discard(key)

    def allocate(self, key: Key, node: str, ranges: Sequence[Network]) -> list[str] | None:
        """The lowest free address of each range for ``key`` (recorded), or None when a range is full."""
        taken = self._on_node.get(node, {})
        ips: list[str] = []
        for network in ranges:
            first, last = _usable(network)
            address = next((a for a in range(first, last + 1) if str(ipaddress.ip_address(a)) not in taken), None)
            if address is None:
                return None
            ips.append(str(ipaddress.ip_address(address)))
        self.record(key, node, ips)
        self._given.add(key)
        return ips
