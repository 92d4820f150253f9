"""The developer's guide (docs/architecture.md) against the code: every rule, job verb, module
and artifact kind its tables name exists, every one that exists is named, each rule runs the
verb the guide says, and the package keeps the layering the guide draws."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from conftest import REPO

GUIDE = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "scripts" / "afbench"
NAME = re.compile(r"`([^`]+)`")


def cells(header: str) -> list[list[str]]:
    """The rows of the guide's table whose header row starts with `header`, each a list of
    its cells' text."""
    lines = GUIDE.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    assert len(starts) == 1, f"the guide has {len(starts)} tables headed {header!r}"
    rows = []
    for line in lines[starts[0] + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert rows, header
    return rows


def table(header: str) -> list[list[list[str]]]:
    """The same rows, each cell as the names written in it in backticks."""
    return [[NAME.findall(cell) for cell in row] for row in cells(header)]


STAGE_MAP = "| rule | job verb | module | kinds written |"
TARGETS = "| target | what it builds |"
DOOR_KINDS = "| command | module | kinds written |"
LAYERS = "| layer | modules | may import |"


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> dict[str, str | None]:
    """Each rule of the workflow, as Snakemake itself loads it, and the `afbench job` verb its
    shell command runs (None: a target, no command)."""
    import os

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, ResourceSettings

    here = os.getcwd()
    os.chdir(REPO)
    try:
        with SnakemakeApi() as api:
            workflow = api.workflow(
                resource_settings=ResourceSettings(),
                config_settings=ConfigSettings(configfiles=[REPO / "config" / "demo.yaml"]),
                snakefile=REPO / "workflow" / "Snakefile",
            )._workflow
            found = {}
            for rule in workflow.rules:
                verbs = re.findall(r"afbench job ([a-z-]+)", rule.shellcmd or "")
                assert len(verbs) <= 1, (rule.name, verbs)
                found[rule.name] = verbs[0] if verbs else None
    finally:
        os.chdir(here)
    return found


def test_every_rule_is_in_the_guide_with_the_verb_it_runs(rules):
    mapped = {}
    for rule, verb, *_ in table(STAGE_MAP):
        assert len(rule) == 1 and len(verb) == 1, (rule, verb)
        assert rule[0] not in mapped, f"rule {rule[0]} listed twice"
        mapped[rule[0]] = verb[0]
    targets = [names[0] for names, _ in table(TARGETS)]
    assert len(set(targets)) == len(targets)
    assert not set(targets) & set(mapped)
    assert sorted([*mapped, *targets]) == sorted(rules), "the guide's rules are not the workflow's"
    for rule, verb in mapped.items():
        assert rules[rule] == verb, f"rule {rule} runs afbench job {rules[rule]}, not {verb}"
    for target in targets:
        assert rules[target] is None, f"{target} runs a command: it belongs in the stage map"


def test_every_job_verb_is_in_the_guide_and_exists():
    from afbench.cli import build_parser
    from afbench.cli.jobs import JOBS

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    verbs = set(next(a for a in commands["job"]._actions if a.dest == "job").choices)
    assert verbs == set(JOBS)
    listed = {row[1][0] for row in table(STAGE_MAP)}
    assert listed == verbs, (
        f"in the guide, not the CLI: {sorted(listed - verbs)}; "
        f"in the CLI, not the guide: {sorted(verbs - listed)}"
    )


def test_every_artifact_kind_is_in_the_guide_and_exists():
    from afbench import kinds

    declared = {
        name for name in kinds._HOME if isinstance(getattr(kinds, name), kinds.Kind | kinds.Table)
    }
    assert {getattr(kinds, n).name for n in declared} == set(kinds.KINDS) | set(kinds.TABLES)
    listed = {name for row in table(STAGE_MAP) for name in row[3]}
    listed |= {name for row in table(DOOR_KINDS) for name in row[2]}
    assert listed == declared, (
        f"in the guide, not declared: {sorted(listed - declared)}; "
        f"declared, not in the guide: {sorted(declared - listed)}"
    )
    seed_commands = {row[0][0].removeprefix("afbench ") for row in table(DOOR_KINDS)}
    from afbench.cli.seed import COMMANDS

    assert seed_commands <= set(COMMANDS)


def _modules(root: Path = PACKAGE) -> dict[str, list[Path]]:
    """Every module of the package by its dotted name under afbench (`cli.jobs`, `report`,
    `kinds`: the kinds subpackage is one module, its files included)."""
    found: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0] == "kinds":
            name = "kinds"
        elif parts[-1] == "__init__" and len(parts) == 2 and parts[0] != "cli":
            continue  # a stage's package: its docstring only (test_stage_packages_hold_no_code)
        elif parts[-1] == "__init__":
            name = ".".join(parts[:-1]) or "__init__"
        else:
            name = ".".join(parts)
        found.setdefault(name, []).append(path)
    return found


LAYER_NAMES = ("door", "presentation", "stage", "foundation", "upstream stand-in")


def _layers() -> dict[str, tuple[str, set[str]]]:
    """Module -> (its layer, the layers it may import), from the guide's layer table."""
    out: dict[str, tuple[str, set[str]]] = {}
    for layer, modules, allowed_text in cells(LAYERS):
        assert layer in LAYER_NAMES, layer
        if allowed_text == "every layer":
            allowed = set(LAYER_NAMES)
        elif allowed_text.startswith("nothing"):
            allowed = set()
        else:
            allowed = {part.strip() for part in allowed_text.split(",")}
            assert allowed <= set(LAYER_NAMES), allowed_text
        for module in NAME.findall(modules):
            assert module not in out, f"{module} is in two layers"
            out[module] = (layer, allowed)
    return out


@functools.cache
def _parsed(source: str) -> ast.Module:
    """A module's syntax tree, parsed once a process for each text (the layering tests each
    read every module; a tree is only walked, never changed)."""
    return ast.parse(source)


def _imports(name: str, paths: list[Path], root: Path = PACKAGE) -> set[str]:
    """The package modules `name` imports anywhere in its source (inside functions too), by
    the same dotted names as _modules."""
    known = _modules(root)
    out = set()
    for path in paths:
        package = list(path.relative_to(root).with_suffix("").parts)[:-1]
        for node in ast.walk(_parsed(path.read_text())):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    stem = [*base, *(node.module.split(".") if node.module else [])]
                    targets = [[*stem, alias.name] for alias in node.names]
                elif node.module and node.module.split(".")[0] == "afbench":
                    stem = node.module.split(".")[1:]
                    targets = [[*stem, alias.name] for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [
                    alias.name.split(".")[1:]
                    for alias in node.names
                    if alias.name.split(".")[0] == "afbench"
                ]
            for target in targets:
                if not target:
                    continue
                if target[0] == "kinds":
                    out.add("kinds")
                    continue
                # the longest module the name starts with: `from . import say` in cli imports
                # cli.say (not the package), `from . import tell` the package cli, whose name
                # tell is
                for size in range(len(target), 0, -1):
                    dotted = ".".join(target[:size])
                    if dotted in known:
                        out.add(dotted)
                        break
    out.discard(name)
    out.discard("__init__")  # the package itself: its version
    return out


def test_every_module_is_in_one_layer_of_the_guide():
    layers = _layers()
    modules = set(_modules()) - {"__init__"}
    assert set(layers) == modules, (
        f"in the guide, not the package: {sorted(set(layers) - modules)}; "
        f"in the package, not the guide: {sorted(modules - set(layers))}"
    )
    stage_map = {name for row in table(STAGE_MAP) for name in row[2]}
    stage_map |= {name for row in table(DOOR_KINDS) for name in row[1]}
    assert {layers[m][0] for m in stage_map} <= {"stage", "presentation"}, stage_map


def test_each_layer_imports_only_what_the_guide_allows():
    layers = _layers()
    wrong = []
    for name, paths in _modules().items():
        if name == "__init__":
            continue
        layer, allowed = layers[name]
        for imported in sorted(_imports(name, paths)):
            if layers[imported][0] not in allowed:
                wrong.append(f"{name} ({layer}) imports {imported} ({layers[imported][0]})")
    assert wrong == []


def test_the_presentation_modules_import_no_stage_module():
    """The issue's own example of the layering, on its own: the report, the figures, the
    frames and the exports read artifacts; they never reach into a stage."""
    layers = _layers()
    modules = _modules()
    presentation = [m for m, (layer, _) in layers.items() if layer == "presentation"]
    assert sorted(presentation) == [
        "exports.records",
        "exports.store",
        "frames",
        "report.figures",
        "report.page",
    ]
    for name in presentation:
        stages = {m for m in _imports(name, modules[name]) if layers[m][0] == "stage"}
        assert stages == set(), f"{name} imports the stage module(s) {sorted(stages)}"


def test_the_import_reader_sees_imports_inside_functions(tmp_path):
    """The layering tests would pass vacuously if they missed the imports a module takes late
    (inside a function, for start-up time), or an absolute one: they must see them."""
    assert "core.stats" in _imports("report.page", [PACKAGE / "report" / "page.py"])  # late
    root = tmp_path / "afbench"
    (root / "cli").mkdir(parents=True)
    for name in ("runs.py", "analysis.py", "cli/__init__.py", "cli/jobs.py"):
        (root / name).write_text("")
    probe = root / "probe.py"
    probe.write_text(
        "def f():\n    from .runs import OUTCOMES\n    from . import analysis\n"
        "    import afbench.cli.jobs\n"
    )
    assert _imports("probe", [probe], root) == {"runs", "analysis", "cli.jobs"}


def _import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of `graph` (module -> the modules it imports) as [a, b, ..., a], or []."""
    done: set[str] = set()
    for start in sorted(graph):
        path, on_path = [start], {start}
        stack = [iter(sorted(graph[start]))]
        while stack:
            following = next(stack[-1], None)
            if following is None:
                stack.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
            elif following in on_path:
                return [*path[path.index(following) :], following]
            elif following not in done:
                path.append(following)
                on_path.add(following)
                stack.append(iter(sorted(graph.get(following, ()))))
    return []


def test_the_package_s_imports_have_no_cycle():
    """Each shared fact has one home, in the lower of the modules that need it: no module
    imports, at the top or inside a function, a module that imports it back."""
    graph = {name: _imports(name, paths) for name, paths in _modules().items()}
    cycle = _import_cycle(graph)
    assert cycle == [], "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle_taken_inside_a_function(tmp_path):
    root = tmp_path / "afbench"
    root.mkdir()
    (root / "low.py").write_text("from .errors import AfbenchError\n")
    (root / "errors.py").write_text("")
    (root / "high.py").write_text("from .low import x\n")
    (root / "middle.py").write_text("def f():\n    from .high import y\n")
    graph = {name: _imports(name, paths, root) for name, paths in _modules(root).items()}
    assert _import_cycle(graph) == []
    (root / "low.py").write_text("def g():\n    from . import middle\n")
    (root / "high.py").write_text("from .low import x\nfrom .middle import z\n")
    graph = {name: _imports(name, paths, root) for name, paths in _modules(root).items()}
    assert _import_cycle(graph) == ["high", "low", "middle", "high"]


MODULE_TESTS = "| module | its tests |"
WHOLE_TESTS = "| test file | what it tests |"


def _test_file(module: str) -> Path:
    """Where a module's tests are found by its name: a stage's module `runs.conformance` in
    tests/runs/test_conformance.py, a package's own (`cli`, `kinds`) in tests/cli/test_cli.py,
    a module at the top (`frames`) in tests/test_frames.py."""
    package, _, leaf = module.rpartition(".")
    if package:
        return REPO / "tests" / package / f"test_{leaf}.py"
    if (PACKAGE / module).is_dir():
        return REPO / "tests" / module / f"test_{module}.py"
    return REPO / "tests" / f"test_{module}.py"


def test_each_module_s_tests_are_found_by_its_name():
    """A newcomer changing `<module>.py` finds its tests in tests/test_<module>.py, or in the
    files the guide names for the few tested through the stage that uses them; no test file
    is named after a round: each is a module's, or a whole the guide names."""
    modules = set(_modules()) - {"__init__"}
    elsewhere = {}
    for module_names, files in table(MODULE_TESTS):
        for module in module_names:
            assert module in modules, f"the guide names {module}, no module of the package"
            assert not _test_file(module).exists(), f"{module} has its own test file"
            elsewhere[module] = [REPO / f for f in files]
            assert all(f.is_file() for f in elsewhere[module]), files
    missing = sorted(m for m in modules - set(elsewhere) if not _test_file(m).exists())
    assert missing == [], f"modules with no tests/test_<module>.py and none in the guide: {missing}"
    wholes = {REPO / f for row in table(WHOLE_TESTS) for f in row[0]}
    assert all(f.is_file() for f in wholes)
    named = {_test_file(m) for m in modules} | wholes
    unnamed = sorted(
        str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py") if p not in named
    )
    assert unnamed == [], f"test files named after no module and no whole: {unnamed}"


def test_the_report_analysis_and_the_sealed_settings_are_read_by_their_declared_names():
    """Every reader of analysis.json (and of an analysis plan's settings) reads them through a
    view of their kind (`ANALYSIS.view(analysis).leaderboard`), whose names are the declared
    fields: no string key of them anywhere in the package, where a renamed field would be a
    KeyError, or with `.get` a silent None, on some path no test takes."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(_parsed(path.read_text(encoding="utf-8"))):
            keyed = (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == "analysis"
                and isinstance(node.slice, ast.Constant)
            ) or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "analysis"
            )
            if keyed:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == [], f"analysis read by string keys: {found}"


def test_stage_packages_hold_no_code():
    """Each stage's package (afbench/<stage>/__init__.py) says what the stage is and holds
    nothing else: importing one module of a stage loads none of its siblings."""
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        if init.parent.name in ("cli", "kinds"):
            continue
        body = ast.parse(init.read_text()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), init
        assert isinstance(body[0].value, ast.Constant) and body[0].value.value.strip(), init
