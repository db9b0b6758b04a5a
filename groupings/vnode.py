"""VNODE: RisingWave-style virtual nodes, rescheduled by the minimal-move rule.

RisingWave hashes a row's distribution key into a fixed number of virtual nodes (vnodes) and maps
vnodes to parallel units; a `RescheduleFragment` request names the parallel units added and
removed, and the meta service computes a new vnode mapping that moves as few vnodes as possible,
applied at a barrier. The harness's VNODE is that scheme, defined exactly by
`docs/reference/rescaling.md` §2 (CRC-32 of the key's UTF-8 bytes; it does not claim
RisingWave's byte-level row hash).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from functools import partial

from groupings.base import check_int
from groupings.hashing import key_bytes
from groupings.ownership import OwnershipGrouping

DEFAULT_VNODES = 256
"""RisingWave's vnode count before 2.0 (`VirtualNode::COUNT_FOR_COMPAT`)."""

MAX_VNODES = 1 << 15
"""RisingWave's largest vnode count (`VirtualNode::MAX_COUNT`, 32768)."""


def vnode_of(key: str, vnodes: int) -> int:
    """The virtual node of `key`: CRC-32 of its UTF-8 bytes modulo V.

    Args: key: the tuple's key (an unpaired surrogate becomes `?`, as for every grouping);
        vnodes: V >= 1.
    Returns: `zlib.crc32(key.encode("utf-8", "replace")) % V`, in `[0, V)`.
    Source: rescaling.md §2 (`Turkey` -> CRC 2735251025 -> vnode 81 of 256).
    """
    return zlib.crc32(key_bytes(key)) % vnodes


def initial_owners(vnodes: int, workers: Sequence[int]) -> list[int]:
    """The first mapping: vnode v goes to the `v * n // V`-th worker (KEY_GROUP's ranges).

    Args: vnodes: V; workers: the n sorted worker ids, `n <= V`.
    Returns: the owner of each vnode, a list of length V.
    Source: rescaling.md §2.
    """
    n = len(workers)
    return [workers[v * n // vnodes] for v in range(vnodes)]


def minimal_move_owners(owners: Sequence[int], workers: Sequence[int]) -> list[int]:
    """RisingWave-style rescheduling: the new owner of every vnode, moving as few as possible.

    1. quota: every worker of B gets `V // |B|`; the `V % |B|` workers of B that hold the most
       vnodes now (ties: lowest id) get one more;
    2. every worker of B keeps its currently held vnodes, lowest-numbered first, up to its quota;
    3. the other vnodes (those of removed workers, and every surplus) go in ascending vnode order
       to the workers below quota, filling the lowest worker id first.
    It moves exactly `sum(max(0, held - quota))` over B plus every vnode held by a removed worker.

    Args: owners: the current owner of each vnode (length V); workers: B, the new worker ids,
        distinct, `1 <= |B| <= V`.
    Returns: the new owner of each vnode, a list of length V.
    Source: rescaling.md §2 (4 -> 5 workers moves 51 of 256; 2 -> 3 moves 85).
    """
    vnodes = len(owners)
    targets = sorted(workers)
    held: dict[int, list[int]] = {w: [] for w in targets}
    for v, owner in enumerate(owners):
        if owner in held:
            held[owner].append(v)  # ascending vnode order
    base, extra = divmod(vnodes, len(targets))
    by_holding = sorted(targets, key=lambda w: (-len(held[w]), w))
    quota = {w: base + (1 if rank < extra else 0) for rank, w in enumerate(by_holding)}
    new = [-1] * vnodes
    for w in targets:
        for v in held[w][: quota[w]]:
            new[v] = w
    below = iter([w for w in targets for _ in range(quota[w] - min(len(held[w]), quota[w]))])
    for v in range(vnodes):
        if new[v] < 0:
            new[v] = next(below)
    return new


class VNodeGrouping(OwnershipGrouping):
    """Key -> vnode (CRC-32 mod V) -> the vnode's owner; `reschedule` moves the fewest vnodes.

    The first mapping gives worker i the vnodes `[ceil(i*V/n), ceil((i+1)*V/n))` (as KEY_GROUP's
    ranges); every `reschedule` then applies `minimal_move_owners` to the current mapping, so the
    mapping depends on the history of reschedules, as RisingWave's does.

    Args:
        num_workers: n >= 1.
        vnodes: V, the number of virtual nodes, `n <= V <= 32768`; default 256.
        start_ms: accepted and ignored.
    Raises: ValueError: `vnodes` outside `[n, 32768]` or not an integer (named in the message);
        reschedule to more than V workers.
    Source: rescaling.md §2; RisingWave's vnode mapping and `RescheduleFragment`.
    """

    name = "VNODE"

    def __init__(self, num_workers: int, *, start_ms: int = 0, vnodes: int = DEFAULT_VNODES) -> None:
        n = check_int("num_workers", num_workers, minimum=1)
        v = check_int("vnodes", vnodes)
        if not n <= v <= MAX_VNODES:
            raise ValueError(f"vnodes must be in [num_workers, {MAX_VNODES}] = [{n}, {MAX_VNODES}], got {v}")
        self.vnodes = v
        super().__init__(n, start_ms=start_ms, groups=v)

    def group_of(self, key: str) -> int:
        """The vnode of `key`: `vnode_of(key, vnodes)`."""
        return vnode_of(key, self.vnodes)

    def _group_function(self) -> partial[int]:
        return partial(vnode_of, vnodes=self.vnodes)

    def _owners_for(self, workers: tuple[int, ...]) -> list[int]:
        return initial_owners(self.vnodes, workers)

    def _reschedule_owners(self, workers: tuple[int, ...]) -> list[int]:
        return minimal_move_owners(self._owners.tolist(), workers)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_workers={self.num_workers}, vnodes={self.vnodes}, "
            f"workers={list(self.workers)})"
        )
