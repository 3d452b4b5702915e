"""boincpy.hot_path: a CGI's modules from one compiled file, only while that
file is its sources' compilation for this interpreter; the file written by
boincpy.tools.cgi_bundles."""

import contextlib
import json
import marshal
import os
import shutil
import subprocess
import sys

import pytest

from boincpy import hot_path
from boincpy.tools import cgi_bundles
from boincpy.tools.server_mode import cgi_paths
from tests.sched_env import REPO

# In a fresh interpreter as a CGI starts (python -S, site's paths given):
# preload, then what it loaded and the attributes the import system gives.
_PROBE = """
import json, sys
from boincpy.hot_path import preload
took = preload(sys.argv[1])
mods = {}
for name, m in sorted(sys.modules.items()):
    if name.startswith("boincpy") and name != "boincpy.hot_path":
        mods[name] = {"file": m.__file__, "cached": m.__cached__, "package": m.__package__,
                      "path": getattr(m, "__path__", None), "origin": m.__spec__.origin,
                      "spec_name": m.__spec__.name,
                      "parent_has_it": name.rpartition(".")[0] == "" or
                          getattr(sys.modules[name.rpartition(".")[0]],
                                  name.rpartition(".")[2], None) is m}
print(json.dumps({"took": took, "modules": mods}))
"""


def _env(root=REPO):
    return {"PATH": "/usr/bin:/bin",
            "PYTHONPATH": os.pathsep.join([root] + (cgi_paths(sys.executable) or []))}


def _probe(cgi, root=REPO):
    """CGI's preload in a fresh interpreter, with boincpy from ROOT."""
    # (run from ROOT: -c puts the working directory first on the path)
    proc = subprocess.run([sys.executable, "-S", "-c", _PROBE, cgi], env=_env(root),
                          cwd=root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    """A private copy of the boincpy package, with its bundles: the tests
    that damage a bundle damage this one, never the repository's, which
    CGIs of tests in other workers (make test runs them in parallel) read."""
    root = tmp_path_factory.mktemp("package")
    shutil.copytree(os.path.join(REPO, "boincpy"), root / "boincpy",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "boincpy.tools.cgi_bundles"], env=_env(str(root)),
                   cwd=str(root), check=True, capture_output=True, timeout=120)
    return str(root)


def _in_copy(package_copy, path):
    return os.path.join(package_copy, "boincpy", "__pycache__", os.path.basename(path))


@pytest.fixture
def bundle(package_copy):
    """The copy's scheduler bundle (path, bytes), put back after the test
    with the code of its on-demand modules."""
    path = _in_copy(package_copy, hot_path.bundle_path("scheduler"))
    more = _in_copy(package_copy, hot_path.on_demand_path("scheduler"))
    kept = {}
    for name in (path, more):
        with open(name, "rb") as f:
            kept[name] = f.read()
    yield path, kept[path]
    for name, data in kept.items():
        with open(name, "wb") as f:
            f.write(data)


def _rewrite(path, data, change):
    made_by, entries, on_demand = marshal.loads(data)
    made_by, entries = change(made_by, [list(e) for e in entries])
    with open(path, "wb") as f:
        f.write(marshal.dumps((made_by, [tuple(e) for e in entries], on_demand)))


@pytest.mark.parametrize("cgi", sorted(cgi_bundles.CGIS))
def test_preloaded_modules_are_what_an_import_gives(fresh_bundles, cgi):
    probe = _probe(cgi)
    assert probe["took"]
    names = [e[0] for e in cgi_bundles.bundle_entries(cgi)]
    assert set(probe["modules"]) == set(names)
    for name, m in probe["modules"].items():
        source = os.path.join(REPO, *name.split("."))
        package = os.path.isdir(source)
        expected = os.path.join(source, "__init__.py") if package else source + ".py"
        assert m["file"] == m["origin"] == expected
        assert m["cached"] == os.path.join(
            os.path.dirname(expected), "__pycache__",
            os.path.basename(expected)[:-3] + "." + sys.implementation.cache_tag + ".pyc")
        assert m["spec_name"] == name
        assert m["package"] == (name if package else name.rpartition(".")[0])
        assert m["path"] == ([source] if package else None)
        assert m["parent_has_it"], name


def test_every_module_comes_after_what_its_body_imports():
    """The order the bundle runs them in: a module's package first, and the
    boincpy modules its body imports (but a package's own modules, which its
    body imports itself)."""
    entries = cgi_bundles.bundle_entries("scheduler")
    position = {e[0]: i for i, e in enumerate(entries)}
    import ast
    for name, path, _sig, is_package, _code in entries:
        tree = ast.parse(open(path).read())
        for dep in cgi_bundles._top_level_imports(tree, name, is_package):
            if dep in position and not dep.startswith(name + "."):
                assert position[dep] < position[name], (name, dep)


def _stale_source(made_by, entries):
    entries[3][2] = (entries[3][2][0] + 1, entries[3][2][1])     # another size
    return made_by, entries


def _other_time(made_by, entries):
    entries[-1][2] = (entries[-1][2][0], entries[-1][2][1] - 1)
    return made_by, entries


def _other_interpreter(made_by, entries):
    return (made_by[0], b"\x00\x00\r\n", made_by[2]), entries


def _other_optimization(made_by, entries):
    return (made_by[0], made_by[1], made_by[2] + 1), entries


def _gone_source(made_by, entries):
    entries[5][1] = entries[5][1] + ".gone"
    return made_by, entries


@pytest.mark.parametrize("change", [_stale_source, _other_time, _other_interpreter,
                                    _other_optimization, _gone_source])
def test_a_bundle_that_is_not_its_sources_is_not_run(package_copy, bundle, change):
    path, data = bundle
    assert _probe("scheduler", package_copy)["took"]
    _rewrite(path, data, change)
    probe = _probe("scheduler", package_copy)
    assert not probe["took"] and probe["modules"] == {"boincpy": probe["modules"]["boincpy"]}


@pytest.mark.parametrize("damage", [b"", b"not marshal", None])
def test_a_damaged_or_missing_bundle_is_not_run(package_copy, bundle, damage):
    path, data = bundle
    assert _probe("scheduler", package_copy)["took"]
    if damage is None:
        os.unlink(path)
    else:
        with open(path, "wb") as f:
            f.write(damage)
    assert not _probe("scheduler", package_copy)["took"]


# After the preload, the modules named imported as a request would import
# them: where each came from, and what the import system gave it.
_PROBE_IMPORTS = """
import json, sys
from boincpy.hot_path import preload
took = preload(sys.argv[1])
before = set(sys.modules)
for name in sys.argv[2:]:
    __import__(name)
mods = {}
for name, m in sorted(sys.modules.items()):
    if name.startswith("boincpy") and name not in before:
        mods[name] = {"loader": type(m.__spec__.loader).__name__, "file": m.__file__,
                      "cached": m.__cached__, "package": m.__package__,
                      "mark": getattr(m, "PROBE_MARK", None)}
print(json.dumps({"took": took, "before": sorted(before), "modules": mods}))
"""


def _probe_imports(cgi, names, root=REPO):
    proc = subprocess.run([sys.executable, "-S", "-c", _PROBE_IMPORTS, cgi] + list(names),
                          env=_env(root), cwd=root, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_on_demand_modules_run_only_when_imported_and_come_from_the_bundle(fresh_bundles):
    """The scheduler's reporting and job choice: not run by the preload,
    served from the bundle's second file when a request imports them."""
    on_demand = [e[0] for e in cgi_bundles.on_demand_entries("scheduler")]
    assert {"boincpy.sched.send", "boincpy.sched.reports", "boincpy.sched.choose",
            "boincpy.doorbell", "boincpy.rand"} <= set(on_demand)
    assert not set(on_demand) & {e[0] for e in cgi_bundles.bundle_entries("scheduler")}
    probe = _probe_imports("scheduler", ["boincpy.sched.send", "boincpy.sched.reports",
                                         "boincpy.doorbell"])
    assert probe["took"] and not set(on_demand) & set(probe["before"])
    assert {"boincpy.sched.send", "boincpy.sched.reports", "boincpy.sched.choose"} \
        <= set(probe["modules"])
    for name, m in probe["modules"].items():
        assert m["loader"] == "_Bundle", name
        source = os.path.join(REPO, *name.split(".")) + ".py"
        assert m["file"] == source and m["package"] == name.rpartition(".")[0]
        assert m["cached"] == os.path.join(os.path.dirname(source), "__pycache__",
                                           name.rpartition(".")[2] + "."
                                           + sys.implementation.cache_tag + ".pyc")


@contextlib.contextmanager
def _marked(package_copy, module):
    """The copy's source of MODULE with a line PROBE_MARK = 'new' added;
    put back as it was after (its text and its modification time, which the
    copy's bundle records)."""
    source = os.path.join(package_copy, *module.split(".")) + ".py"
    st = os.stat(source)
    with open(source) as f:
        text = f.read()
    try:
        with open(source, "a") as f:
            f.write("\nPROBE_MARK = 'new'\n")
        yield
    finally:
        with open(source, "w") as f:
            f.write(text)
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_changed_on_demand_module_is_imported_from_its_source(package_copy, bundle):
    with _marked(package_copy, "boincpy.sched.send"):
        probe = _probe_imports("scheduler", ["boincpy.sched.send"], package_copy)
    assert probe["took"]                    # the preloaded modules did not change
    send = probe["modules"]["boincpy.sched.send"]
    assert send["loader"] == "SourceFileLoader" and send["mark"] == "new"
    # the others it imports still come from the bundle
    assert probe["modules"]["boincpy.sched.choose"]["loader"] == "_Bundle"


def test_writing_the_same_sources_again_keeps_the_on_demand_code(package_copy, bundle):
    """Each make_project writes the bundles again: with the sources unchanged
    the second file is the same (its token is its code's digest), so a CGI
    that read its bundle just before the writing still finds its own code."""
    more = _in_copy(package_copy, hot_path.on_demand_path("scheduler"))
    with open(more, "rb") as f:
        before = f.read()
    subprocess.run([sys.executable, "-m", "boincpy.tools.cgi_bundles"], env=_env(package_copy),
                   cwd=package_copy, check=True, capture_output=True, timeout=120)
    with open(more, "rb") as f:
        assert f.read() == before
    # and changed code gets another token, and is what the bundle serves
    with _marked(package_copy, "boincpy.sched.reports"):
        subprocess.run([sys.executable, "-m", "boincpy.tools.cgi_bundles"], env=_env(package_copy),
                       cwd=package_copy, check=True, capture_output=True, timeout=120)
        with open(more, "rb") as f:
            assert f.read()[:16] != before[:16]
        reports = _probe_imports("scheduler", ["boincpy.sched.reports"], package_copy)[
            "modules"]["boincpy.sched.reports"]
        assert (reports["loader"], reports["mark"]) == ("_Bundle", "new")


@pytest.mark.parametrize("damage", ["token", "missing", "truncated"])
def test_on_demand_code_not_the_bundles_own_is_not_run(package_copy, bundle, damage):
    """The second file of another writing (its token), missing or cut short:
    the modules are imported from their sources, and work."""
    more = _in_copy(package_copy, hot_path.on_demand_path("scheduler"))
    with open(more, "rb") as f:
        data = f.read()
    if damage == "missing":
        os.unlink(more)
    else:
        with open(more, "wb") as f:
            f.write(bytes(16) + data[16:] if damage == "token" else data[:len(data) // 2])
    probe = _probe_imports("scheduler", ["boincpy.sched.send", "boincpy.sched.reports"],
                           package_copy)
    assert probe["took"]
    loaders = {name: m["loader"] for name, m in probe["modules"].items()}
    if damage == "truncated":
        # what lies before the cut is whole and the bundle's: only the rest is refused
        assert "SourceFileLoader" in loaders.values(), loaders
    else:
        assert set(loaders.values()) == {"SourceFileLoader"}, loaders


def test_a_traceback_from_a_preloaded_module_shows_its_source(fresh_bundles):
    env = _env()
    code = ("from boincpy.hot_path import preload; assert preload('scheduler'); "
            "from boincpy.sched import request; request.parse_request(b'<x')")
    proc = subprocess.run([sys.executable, "-S", "-c", code], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert 'boincpy/sched/request.py", line' in proc.stderr
    assert "def parse_request" not in proc.stderr       # the line, not the def
    lines = [line for line in proc.stderr.splitlines() if line.startswith("    ")]
    assert lines and all(line.strip() for line in lines)   # each frame shows its line


def test_the_bundle_leaves_docstrings_out_and_keeps_asserts():
    """Docstrings are code no request reads (17% of the scheduler's bundle);
    asserts are checks, and stay as an import would run them."""
    import ast
    tree = ast.parse('"""module doc"""\n'
                     'class C:\n    """class doc"""\n'
                     'def only_doc():\n    """nothing else"""\n'
                     'def checked(x):\n    "doc"\n    assert x > 0, "x"\n    return x\n')
    cgi_bundles._drop_docstrings(tree)
    namespace = {}
    exec(compile(tree, "<probe>", "exec"), namespace)
    assert namespace.get("__doc__") is None
    assert namespace["C"].__doc__ is None and namespace["only_doc"].__doc__ is None
    assert namespace["only_doc"]() is None and namespace["checked"](2) == 2
    with pytest.raises(AssertionError):
        namespace["checked"](0)
    # and in the bundle as written: none of its sources' docstrings is left
    def strings(code):
        for const in code.co_consts:
            if isinstance(const, str):
                yield const
            elif hasattr(const, "co_consts"):
                yield from strings(const)
    for name, path, _sig, _is_package, code in cgi_bundles.bundle_entries("scheduler"):
        with open(path) as f:
            source = ast.parse(f.read())
        docstrings = {ast.get_docstring(node, clean=False) for node in ast.walk(source)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))}
        docstrings.discard(None)
        assert docstrings, name
        assert not docstrings & set(strings(code)), name


def test_make_project_writes_the_bundles_and_goes_on_when_it_cannot(monkeypatch):
    from boincpy.tools import make_project
    # each bundle replaced by a new file (not removed first: other workers'
    # CGIs read them meanwhile)
    before = {cgi: os.stat(hot_path.bundle_path(cgi)).st_ino
              for cgi in cgi_bundles.CGIS if os.path.exists(hot_path.bundle_path(cgi))}
    assert make_project.compile_package() is not False
    assert all(os.path.isfile(hot_path.bundle_path(cgi)) for cgi in cgi_bundles.CGIS)
    assert all(os.stat(hot_path.bundle_path(cgi)).st_ino != ino for cgi, ino in before.items())
    assert _probe("scheduler")["took"]

    def refused():
        raise PermissionError(13, "Permission denied", hot_path.bundle_path("scheduler"))
    monkeypatch.setattr(cgi_bundles, "write_bundles", refused)
    said = []
    assert make_project.compile_package(lambda level, text: said.append(text)) is False
    assert said and "python -m boincpy.tools.cgi_bundles" in said[0]


def test_python_m_cgi_bundles_says_what_stopped_it(monkeypatch, capsys):
    def refused():
        raise PermissionError(13, "Permission denied", hot_path.bundle_path("upload"))
    monkeypatch.setattr(cgi_bundles, "write_bundles", refused)
    assert cgi_bundles.main() == 1
    err = capsys.readouterr().err
    assert "can't write the CGIs' bundles" in err and "Permission denied" in err
    assert "Traceback" not in err


# -- the os.path and os.environ stand-ins of a CGI's request path -----------

@pytest.mark.parametrize("parts", [
    ("a", "b"), ("a/", "b"), ("", "b"), ("a", ""), ("a", "/b"), ("/a", "b", "c"), ("a",),
    ("/a/b", "../c"), ("a", "b/", "c"), ("/", "x"), ("a", "/b", "c"),
])
def test_join_is_os_path_join(parts):
    assert hot_path.join(*parts) == os.path.join(*parts)


@pytest.mark.parametrize("path", [".", "..", "../..", "a/./b/../c", "/x/../y", "/", "a//b/",
                                  "/../..", "x/../../y"])
def test_absolute_is_os_path_abspath(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hot_path.absolute(path) == os.path.abspath(path)


def test_the_file_tests_and_real_path_are_os_paths(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "to_f").symlink_to(tmp_path / "f")
    (tmp_path / "to_d").symlink_to(tmp_path / "d")
    (tmp_path / "broken").symlink_to(tmp_path / "missing")
    for name in ("f", "d", "to_f", "to_d", "broken", "missing", "f/x", "bad\0name"):
        path = str(tmp_path / name)
        assert hot_path.is_file(path) == os.path.isfile(path), name
        assert hot_path.is_dir(path) == os.path.isdir(path), name
        assert hot_path.exists(path) == os.path.exists(path), name
    for name in ("f", "d", "to_f", "to_d", "to_d/../to_f"):
        path = str(tmp_path / name)
        assert hot_path.real_path(path) == os.path.realpath(path), name
    with pytest.raises(OSError):
        hot_path.real_path(str(tmp_path / "missing"))


def test_the_environment_reads_as_os_environ_does(monkeypatch):
    monkeypatch.setenv("BOINCPY_TEST_VALUE", "caf\u00e9 ok")
    os.environb[b"BOINCPY_TEST_BYTES"] = b"not \xff utf-8"
    try:
        env = hot_path.cgi_environ()
        assert env == dict(os.environ)
        assert hot_path.getenv("BOINCPY_TEST_VALUE") == "caf\u00e9 ok"
        assert hot_path.getenv("BOINCPY_TEST_BYTES") == os.environ["BOINCPY_TEST_BYTES"]
        assert hot_path.getenv("BOINCPY_NOT_SET", "d") == "d"
    finally:
        del os.environb[b"BOINCPY_TEST_BYTES"]
