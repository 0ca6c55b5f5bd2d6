"""The package layout's invariants: imports point down the floors, and every solver module is registered."""
import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import miopy
from miopy.families import FAMILIES
from miopy.solver import Solver, registries

ROOT = Path(miopy.__file__).parent

# Floors from the bottom: a module may import modules of lower floors, and modules of its own package.
# The families (miopy.families.FAMILIES) share one floor: a family imports no other family but those its entry
# in the list needs. The ONNX runner builds on every family; the CLI on everything. miopy/__init__ re-exports
# and stands above all.
FLOORS = [
    {"errors", "config", "log", "version", "lifeline", "sqlite_pages", "ptx_patch", "families"},
    {"tensor", "device"},
    {"kernel_cache", "db", "accuracy", "ptx_probe"},
    {"solver"},
    {"tiled_gemm", "pointwise", "plan"},
    {"handle"},
    {"find_compile_pool", "driver_common"},
    {"find"},
    {"tuning"},
    {f.name for f in FAMILIES},
    {"onnx", "distributed"},
    {"cli"},
]
FLOOR = {name: i for i, names in enumerate(FLOORS) for name in names}


def _top(module: str) -> str:
    """'miopy.conv.api' -> 'conv' (the first component below miopy)."""
    return module.split(".")[1] if module.count(".") else module


def _imports(path: Path, module: str) -> set[str]:
    """Absolute names of the miopy modules path imports (at any depth, lazy imports included)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names] if not node.module else [target]
            out.update(n for n in names if n.startswith("miopy."))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("miopy."))
    return out


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield path, ".".join(parts)


def test_every_top_level_module_has_a_floor():
    tops = {_top(m) for _, m in _modules() if m != "miopy"}
    assert tops <= set(FLOOR), f"modules with no floor in this test: {sorted(tops - set(FLOOR))}"


def test_imports_point_down():
    upward = []
    needs = {f.name: set(f.needs) for f in FAMILIES}
    for path, module in _modules():
        if module == "miopy":
            continue
        own = _top(module)
        for target in _imports(path, module):
            other = _top(target)
            if other == own or other not in FLOOR or other in needs.get(own, ()):
                continue
            if FLOOR[other] >= FLOOR[own]:
                upward.append(f"{module} imports {target} (floor {FLOOR[other]} >= {FLOOR[own]})")
    assert not upward, "\n".join(upward)


def test_family_needs_name_earlier_families():
    """A family needs only families listed before it, so the needs form no circle."""
    seen: set[str] = set()
    for family in FAMILIES:
        assert set(family.needs) <= seen, f"{family.name} needs {set(family.needs) - seen}, not listed before it"
        seen.add(family.name)


def test_every_solver_class_is_registered():
    """A concrete Solver defined in any module is in its family's registry (or is a base class)."""
    for info in pkgutil.walk_packages([str(ROOT)], "miopy."):
        importlib.import_module(info.name)
    registered = {type(s) for r in registries() for s in r.ALL}
    missing = []
    for cls in _subclasses(Solver):
        if inspect.isabstract(cls) or cls.__name__.startswith("_") or "id" not in cls.__dict__:
            continue   # bases (no id of their own) are not solvers
        if cls not in registered and cls.__module__.startswith("miopy."):
            missing.append(f"{cls.__module__}.{cls.__name__}")
    assert not missing, f"solver classes in no registry: {missing}"


def test_solver_ids_are_unique_across_families():
    ids = [s.id for r in registries() for s in r.ALL]
    assert len(ids) == len(set(ids))


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_top_level_names_come_from_one_place_each():
    """Each name miopy re-exports comes from one family (or the shared machinery) and hides no package."""
    seen: dict[str, str] = {}
    for family in FAMILIES:
        for name in family.exports:
            assert name not in seen, f"{name} is exported by {family.name} and {seen[name]}"
            assert name not in {f.name for f in FAMILIES}, f"{family.name} exports {name}, a family's name"
            assert getattr(miopy, name) is getattr(family.module(), name)
            seen[name] = family.name
    assert not set(seen) & (set(miopy.__all__) - set(seen)), "a family's name shadows the shared machinery's"


MAX_LINES = 800   # a module longer than this is split by concern (docs/design.md)


def test_no_module_is_too_long():
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in ROOT.rglob("*.py")}
    long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
