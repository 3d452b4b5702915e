"""server_mode.cgi_paths finds boincpy however pip installed it editable: a
``.pth`` path (setuptools' old compat mode) or an import hook (its default
mode for this flat layout, what `make venv` installs), so a CGI started as
``python -S`` with those paths imports the same boincpy."""

import os
import subprocess
import sys

import pytest

from boincpy.tools.server_mode import cgi_paths

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What setuptools' editable wheel writes in its default mode, in short: a .pth
# line that installs a finder mapping the package name to the source tree.
FINDER = '''
import importlib.util, sys
class Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "boincpy":
            return None
        init = %r
        return importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[%r])
def install():
    sys.meta_path.append(Finder)
'''


def _venv(tmp_path, files):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for name, text in files.items():
        with open(os.path.join(site, name), "w") as f:
            f.write(text)
    return str(venv / "bin" / "python"), site


def _cgi_imports(python, paths):
    code = ("import sys; sys.path += %r; import boincpy.errors; print(boincpy.__file__); "
            "print('site' in sys.modules)" % (paths,))
    return subprocess.run([python, "-S", "-c", code], capture_output=True, text=True,
                          cwd="/", env={"PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("mode", ["hook", "pth"])
def test_a_cgi_started_without_site_finds_the_editable_source(tmp_path, mode):
    if mode == "hook":
        files = {"_test_finder.py": FINDER % (os.path.join(REPO, "boincpy", "__init__.py"),
                                               os.path.join(REPO, "boincpy")),
                 "__editable__.boincpy-0.1.0.pth": "import _test_finder; _test_finder.install()\n"}
    else:
        files = {"__editable__.boincpy-0.1.0.pth": REPO + "\n"}
    python, site = _venv(tmp_path, files)
    paths = cgi_paths(python)
    assert paths == [site, REPO]
    out = _cgi_imports(python, paths)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "%s\nFalse\n" % os.path.join(REPO, "boincpy", "__init__.py")
    # without the source tree's path, python -S would not find boincpy at all
    assert _cgi_imports(python, [site]).returncode != 0


def test_an_interpreter_without_boincpy_gets_its_site_paths_only(tmp_path):
    python, site = _venv(tmp_path, {})
    assert cgi_paths(python) == [site]


def test_an_interpreter_that_does_not_run_gives_none(tmp_path):
    assert cgi_paths(str(tmp_path / "no_python")) is None
