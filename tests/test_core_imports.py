"""The design's layering (DESIGN §2), for every module of the package: only measure/ imports torch, only
report/ imports jinja2, only the pytest layer (plugin/) imports pytest. Checked twice: each module
imported alone in a fresh interpreter (what loading it costs), and every import statement in the
sources, those inside functions too (what calling it may load)."""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "perfguard"
HEAVY = ("pytest", "torch", "jinja2")
# Who may import what: the package (or its part) each heavy module belongs to.
OWNER = {"torch": "perfguard.measure", "jinja2": "perfguard.report", "pytest": "perfguard.plugin"}
# Import statements that stand for those: their own packages, and what only they use.
ALIASES = {"torch": ("torch", "triton"), "jinja2": ("jinja2", "markupsafe"), "pytest": ("pytest", "_pytest", "xdist")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# `python -m perfguard.cli` runs the command when imported; it is the CLI's entry point, not a module.
MODULES = sorted(module_name(p) for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")


def allowed(module: str, heavy: str) -> bool:
    owner = OWNER[heavy]
    return module == owner or module.startswith(owner + ".")


# Each module is imported in a child forked from an interpreter that has loaded none of HEAVY: as fresh
# as a new interpreter, without paying for sixty of them. The parent has loaded the light dependencies
# many modules share (numpy, scipy.stats: a second and a half each child would otherwise spend; the
# record types of perfguard.model, which nearly every module imports: 80 ms a child, 5 s in all),
# having checked that they load none of HEAVY; what a module loads beyond them is its own. The modules
# of plugin/ may load pytest: a child of the parent imports pytest (once, not once per module: 0.2 s a
# module) and forks theirs, checked for torch and jinja2 alone, and the parent goes on without pytest;
# perfguard.plugin.options stays with the others, the probe's proof that it sees pytest load. The
# modules of measure/ may load torch, so the same parent imports torch afterwards (once, not once per
# module) and forks their children then; they are checked for pytest and jinja2 alone.
SHARED = ("numpy", "scipy.stats", "perfguard.model")
CONTROL = "perfguard.plugin.options"  # probed without pytest loaded first (test_the_probe_sees_an_import_when_there_is_one)
PROBE = textwrap.dedent(
    """
    import importlib, json, os, sys

    def in_child(work, error):  # work() in a forked child, its JSON result read back; a failure: error(exc)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                out = work()
            except BaseException as exc:
                out = error(exc)
            os.write(write, json.dumps(out).encode())
            os._exit(0)
        os.close(write)
        data = b""
        while chunk := os.read(read, 65536):
            data += chunk
        os.waitpid(pid, 0)
        return json.loads(data)

    def heavy():
        return sorted(m for m in {heavy!r} if m in sys.modules)

    def loaded_by(name):
        return in_child(lambda: (importlib.import_module(name), heavy())[1], lambda exc: {{"error": repr(exc)}})

    def stage(preload, modules):
        for name in preload:
            importlib.import_module(name)
        return {{" ".join(preload): heavy(), **{{name: loaded_by(name) for name in modules}}}}

    found = {{}}
    # Stages: what the parent imports, then whose children it forks; a stage `apart` does that in a child
    # of the parent, which goes on without what that stage imported.
    for preload, modules, *apart in json.loads(sys.argv[1]):
        if apart and apart[0]:
            found.update(in_child(lambda: stage(preload, modules), lambda exc: {{" ".join(preload): repr(exc)}}))
        else:
            found.update(stage(preload, modules))
    print(json.dumps(found))
    """
)


def loaded_after_import(stages: list[tuple], tmp_path: Path) -> dict[str, list[str]]:
    """For each (preload, modules) or (preload, modules, apart) in turn: the parent (a child of it, where
    `apart`) imports `preload`, then each module is imported in a child of its own. module -> which of
    HEAVY were loaded then; also " ".join(preload) -> those loaded after that stage's preload."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), json.dumps(stages)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> dict[str, list[str]]:
    """module -> which of HEAVY importing it alone loaded (torch is reported for each module of measure/,
    pytest for each of plugin/ but CONTROL: their parents had loaded them)."""
    measure = [m for m in MODULES if allowed(m, "torch")]
    plugin = [m for m in MODULES if allowed(m, "pytest") and m != CONTROL]
    rest = [m for m in MODULES if m not in measure and m not in plugin]
    found = loaded_after_import([(SHARED, rest), (("pytest",), plugin, True), (("torch",), measure)],
                                tmp_path_factory.mktemp("imports"))
    # What the parent held when it forked: the shared dependencies load none of HEAVY; then pytest (apart), then torch.
    assert found.pop(" ".join(SHARED)) == [] and found.pop("pytest") == ["pytest"] and found.pop("torch") == ["torch"]
    return found


def test_every_module_of_the_package_is_probed(loaded):
    assert len(MODULES) > 50 and set(loaded) == set(MODULES)
    assert {"perfguard.defaults", "perfguard.options", "perfguard.cli", "perfguard.report.html", "perfguard.plugin.recorder",
            "perfguard.plugin.measurer", "perfguard.measure.lifecycle"} <= set(MODULES)
    errors = {m: r["error"] for m, r in loaded.items() if isinstance(r, dict)}
    assert not errors, errors


@pytest.mark.parametrize("heavy", HEAVY)
def test_importing_a_module_loads_a_heavy_dependency_only_in_its_layer(loaded, heavy):
    wrong = sorted(m for m, found in loaded.items() if isinstance(found, list) and heavy in found and not allowed(m, heavy))
    assert wrong == [], f"importing these loads {heavy}, which only {OWNER[heavy]} may"


def test_the_xdist_controller_lists_gpus_without_torch(tmp_path):
    # measure/ may use torch, but the controller lists GPUs before any worker starts and must not pay
    # for it, nor touch CUDA.
    assert loaded_after_import([((), ["perfguard.measure.gpus"])], tmp_path) == {"": [], "perfguard.measure.gpus": []}


def test_the_probe_sees_an_import_when_there_is_one(loaded):
    # Without this, a probe that reported nothing would pass every test above.
    assert "pytest" in loaded["perfguard.plugin.options"]
    assert "jinja2" not in loaded["perfguard.report.html"]  # jinja2 is loaded when a report is rendered, not before
    assert loaded["perfguard.analysis.stats"] == [] and loaded["perfguard.defaults"] == []


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once for the tests of this file that walk the package (read only)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def imports_in(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every import statement in a file, those inside functions included."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


@pytest.mark.parametrize("heavy", HEAVY)
def test_no_source_outside_its_layer_imports_a_heavy_dependency_even_lazily(heavy):
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if allowed(module, heavy):
            continue
        wrong += [f"{path.relative_to(ROOT)}:{line} imports {name}" for line, name in imports_in(path) if name in ALIASES[heavy]]
    assert wrong == [], f"only {OWNER[heavy]} may import {heavy}"


def test_the_shared_defaults_and_options_import_nothing_but_the_standard_library():
    # perfguard/defaults.py, the parsers and the option table serve the CLI's help, which must start
    # without numpy, scipy, torch or pytest; the defaults, in every pytest run's option table, import nothing.
    assert {name for _line, name in imports_in(PACKAGE / "defaults.py")} <= {"__future__"}
    assert {name for _line, name in imports_in(PACKAGE / "parsers.py")} <= {"__future__", "math", "typing", "perfguard"}
    assert {name for _line, name in imports_in(PACKAGE / "options.py")} <= {
        "__future__", "collections", "dataclasses", "typing", "perfguard"}  # perfguard: its defaults and parsers


def test_the_file_writing_module_stands_on_the_ground_floor():
    # perfguard/files.py serves every layer that writes (store/, measure/, report/, export/, plugin/, cli/):
    # it leans on none of them, only on the exception tree and the standard library.
    assert {name for _line, name in imported_modules((PACKAGE / "files.py").read_text(encoding="utf-8"))} == {"perfguard.errors"}
    assert {name for _line, name in imports_in(PACKAGE / "files.py")} - {"perfguard"} <= sys.stdlib_module_names


def test_the_public_names_are_a_sorted_all():
    import perfguard

    assert perfguard.__all__ == sorted(perfguard.__all__)
    for name in perfguard.__all__:
        assert hasattr(perfguard, name), name


# Who may never import whom inside the package (DESIGN §2): (importer, imported, why). A module is
# under a rule when its name is the rule's or starts with it and a dot; "perfguard" alone is the
# package's face (perfguard/__init__.py), not every module under it.
NEVER = (
    ("perfguard.store", "perfguard.analysis",
     "the store keeps files: the rule that admits runs is its caller's, known to it by model's types"),
    ("perfguard.case", "perfguard.report", "a case's declaration renders nothing"),
    ("perfguard.measure", "perfguard", "the face hands the public names on to users: measure sits below them"),
    ("perfguard.measure", "perfguard.store",
     "measuring never touches the baseline store: its caller hands it the device with the roofs stored there"),
    ("perfguard.report", "perfguard.store", "rendering never touches the baseline store: its files go through perfguard.files"),
)


PACKAGE_MODULES = frozenset(module_name(p) for p in PACKAGE.rglob("*.py"))  # __main__ modules too


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of every perfguard import statement in `source`, those inside functions and under
    TYPE_CHECKING included: `from perfguard.x import y` is perfguard.x.y where y is a module of the
    package, else perfguard.x; `import perfguard` is the face."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in PACKAGE_MODULES else node.module)
                      for a in node.names]
    return [(line, name) for line, name in found if name == "perfguard" or name.startswith("perfguard.")]


def under(module: str, rule: str) -> bool:
    return module == rule or (rule != "perfguard" and module.startswith(rule + "."))


def broken(modules: dict[str, str]) -> list[str]:
    """For sources by module name: each import that a rule of NEVER forbids, with the rule's why."""
    return [f"{module}:{line} imports {name}: {why}"
            for module, source in sorted(modules.items()) for line, name in imported_modules(source)
            for importer, imported, why in NEVER if under(module, importer) and under(name, imported)]


def test_no_module_imports_what_its_layer_must_not():
    sources = {module_name(p): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}
    assert broken(sources) == []


def test_the_layer_rules_see_an_import_where_there_is_one():
    # Without this, a reader that found no imports would pass the test above.
    assert broken({"perfguard.store.baselines": "def f():\n    from perfguard.analysis import series\n"})
    assert not broken({"perfguard.store.baselines": "from perfguard import defaults\nimport perfguard.model\n"})
    assert broken({"perfguard.case": "from perfguard.report import inert\n"})
    assert not broken({"perfguard.case": "from perfguard import inert\n"})
    assert broken({"perfguard.measure.memory": "import perfguard\n"})
    assert not broken({"perfguard.measure.memory": "from perfguard import defaults\nimport perfguard.model\n"})
    assert broken({"perfguard.report.html": "def f():\n    from perfguard import store\n"})
    assert not broken({"perfguard.report.html": "from perfguard.files import write_atomic\n"})
    real = dict(imported_modules((PACKAGE / "store" / "baselines.py").read_text(encoding="utf-8")))
    assert "perfguard.model" in real.values() and "perfguard.store.lock" in real.values()


def test_the_environment_between_ab_and_its_pytest_runs_is_one_module_both_sides_read():
    # perfguard/ab_env.py names each variable; ab sets it and the plugin reads it by that name alone.
    from perfguard import ab_env

    names = {k: v for k, v in vars(ab_env).items() if k.isupper()}
    assert names and all(v.startswith("PERFGUARD_AB_") for v in names.values())
    assert {name for _line, name in imports_in(PACKAGE / "ab_env.py")} <= {"__future__"}
    spelt, users = [], {k: set() for k in names}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = parsed(path)
        module = module_name(path)
        for node in ast.walk(tree):
            if module != "perfguard.ab_env" and isinstance(node, ast.Constant) and str(node.value).startswith("PERFGUARD_AB_"):
                spelt.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "perfguard.ab_env":
                for alias in node.names:
                    users[alias.name].add(module.split(".")[1])
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ab_env":
                users[node.attr].add(module.split(".")[1])
    assert spelt == [], "spell these through perfguard.ab_env"
    assert all(users[k] == {"ab", "plugin"} for k in names), users  # the setter and the reader


def test_where_the_run_is_comes_from_the_environment_at_the_plugins_edge_alone():
    # CI and PERFGUARD_HOST are read once, into the plugin's Options, and passed down as values: a
    # module below that read them itself could disagree with the options (CI's false words, say).
    edge = PACKAGE / "plugin" / "options.py"
    found = {name: [] for name in ("CI", "PERFGUARD_HOST")}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Constant) and node.value in found:
                found[node.value].append(path)
    assert found == {"CI": [edge], "PERFGUARD_HOST": [edge]}
