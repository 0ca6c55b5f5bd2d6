"""Buffer planning: every run-time value gets a slot of device memory, slots are reused once the values in
them are dead (liveness over the node order), and views (Reshape, Flatten, Identity, ...) share their
input's slot. Element-wise nodes may write over an input that dies at that node, a convolution with a
fused residual add over that residual. The peak is the sum of the slots' sizes: what one inference pass
holds besides weights and workspaces.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from .graph import Node
from .passes import reads

FOREVER = 1 << 30


@dataclass
class MemoryPlan:
    """root_of: value -> the value whose slot it shares (itself unless a view); slot_of: root -> slot index;
    sizes: bytes of each slot."""

    root_of: dict[str, str]
    slot_of: dict[str, int]
    sizes: list[int]

    @property
    def peak_bytes(self) -> int:
        return sum(self.sizes)

    def slot(self, value: str) -> int:
        return self.slot_of[self.root_of[value]]


def plan_memory(nodes: Sequence[Node], shapes: Mapping[str, tuple[int, ...]], inputs: Sequence[str],
                outputs: Collection[str], itemsize: int, views: Collection[str],
                in_place: Collection[str] = ()) -> MemoryPlan:
    """Slots for the graph inputs and every node output (module docstring); the slots of graph inputs and
    outputs are never reused (a run may be repeated on inputs left on the device)."""
    root_of = {name: name for name in inputs}
    for node in nodes:
        for out in node.outputs:
            if out:
                root_of[out] = root_of[node.inputs[0]] if node.op in views else out
    last = _last_uses(nodes, root_of, [*outputs, *inputs])   # inputs stay intact: a run may reuse them
    planner = _Slots()
    for name in inputs:
        planner.take(name, _bytes(shapes[name], itemsize))
    for index, node in enumerate(nodes):
        donor = _donor(node, index, root_of, last, shapes, in_place)
        for out in (o for o in node.outputs if o and node.op not in views):
            if donor is not None:
                planner.hand_over(donor, out)
                donor = None
            else:
                planner.take(out, _bytes(shapes[out], itemsize))
        for root in {root_of[n] for n in reads(node) if n in root_of} | {root_of[o] for o in node.outputs if o}:
            if last.get(root, index) <= index and root in planner.slot_of and root in planner.live:
                planner.release(root)
    return MemoryPlan(root_of, planner.slot_of, planner.sizes)


def _bytes(shape: Sequence[int], itemsize: int) -> int:
    return max(math.prod(shape), 1) * itemsize


def _last_uses(nodes: Sequence[Node], root_of: Mapping[str, str], outputs: Collection[str]) -> dict[str, int]:
    last: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in reads(node):
            if name in root_of:
                last[root_of[name]] = index
    for name in outputs:
        if name in root_of:
            last[root_of[name]] = FOREVER
    return last


def _donor(node: Node, index: int, root_of: Mapping[str, str], last: Mapping[str, int],
           shapes: Mapping[str, tuple[int, ...]], in_place: Collection[str]) -> str | None:
    """The root of the input node may overwrite (its first input for the in_place ops, the fused residual
    of a convolution), when that input dies here, has the output's size and node reads it (or a view of it)
    only once."""
    value: str = node.fused.get("residual") or (node.inputs[0] if node.op in in_place else "")
    root = root_of.get(value)
    if root is None or last.get(root) != index or [root_of.get(n) for n in reads(node)].count(root) != 1:
        return None
    if math.prod(shapes[value]) != math.prod(shapes[node.outputs[0]]):
        return None
    return root


class _Slots:
    """Slots with the values living in them; best fit on take, growing the largest free slot if none fits."""

    def __init__(self):
        self.sizes: list[int] = []
        self.free: list[int] = []
        self.slot_of: dict[str, int] = {}
        self.live: set[str] = set()

    def take(self, root: str, nbytes: int) -> None:
        fitting = [s for s in self.free if self.sizes[s] >= nbytes]
        if fitting:
            slot = min(fitting, key=lambda s: self.sizes[s])
        elif self.free:
            slot = max(self.free, key=lambda s: self.sizes[s])
            self.sizes[slot] = nbytes
        else:
            slot = len(self.sizes)
            self.sizes.append(nbytes)
        if slot in self.free:
            self.free.remove(slot)
        self.slot_of[root] = slot
        self.live.add(root)

    def hand_over(self, donor: str, root: str) -> None:
        self.slot_of[root] = self.slot_of[donor]
        self.live.discard(donor)
        self.live.add(root)

    def release(self, root: str) -> None:
        self.live.discard(root)
        self.free.append(self.slot_of[root])
