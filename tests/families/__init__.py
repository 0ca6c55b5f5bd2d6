"""Each family's test data for the tests that run over every family (miopy.families.FAMILIES): one module per
family, named as the family (tests/families/<name>.py); common.py holds what several of them share.

A family module holds:

==================  ==========================================================================================
``PUBLIC_CALLS``    name -> builder(queue) of a valid descriptor-API call (common.Call), each argument saying its
                    kind so that it is spoiled in kind (tests/reliability/test_bad_input_fuzz.py)
``FUNCTIONAL``      name -> common.Functional: the function, its array shapes, valid keyword arguments (the same
                    test, on the functional layer)
``WARM``            name -> common.Warm: a memoised call path given a good value, then a bool in its place
                    (tests/reliability/test_validation.py)
``DRIVER``          miopy-driver command -> common.Driver: seed flags, the flags of an input too big for the
                    device, whether it takes -i; one entry for each name in the family's ``driver.COMMANDS``
==================  ==========================================================================================

An empty table is fine (a family with no functional layer); a missing module or table fails the test that
checks that every family brought its data (``missing``).
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from miopy.families import FAMILIES, Family

PARTS = ("PUBLIC_CALLS", "FUNCTIONAL", "WARM", "DRIVER")


def load(family: Family) -> ModuleType | None:
    """tests.families.<family.name>, or None when the family has no module here."""
    name = f"{__name__}.{family.name}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def missing(parts: tuple[str, ...] = PARTS) -> list[str]:
    """What the families did not bring: a module here, one of its tables, or a name two families both use."""
    problems, owner = [], {}
    for family in FAMILIES:
        module = load(family)
        if module is None:
            problems.append(f"family {family.name!r} has no test data: a new family brings "
                            f"tests/families/{family.name}.py ({', '.join(parts)}; see tests/families/__init__.py)")
            continue
        for part in parts:
            if not hasattr(module, part):
                problems.append(f"tests/families/{family.name}.py has no {part}")
                continue
            for name in getattr(module, part):
                if (part, name) in owner:
                    problems.append(f"{part} {name!r} is in both {owner[part, name]} and {family.name}")
                owner[part, name] = family.name
    return problems


def table(part: str) -> dict[str, Any]:
    """Every family's ``part`` in one dict, in the order of FAMILIES (what a family lacks is left out here, and
    reported by ``missing``)."""
    merged: dict[str, Any] = {}
    for family in FAMILIES:
        module = load(family)
        merged.update(getattr(module, part, {}) if module is not None else {})
    return merged

