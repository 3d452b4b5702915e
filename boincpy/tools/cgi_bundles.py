"""The classic CGIs' bundles written: each CGI's modules compiled into one
file that :func:`boincpy.hot_path.preload` runs at the CGI's first line.

make_project and bin/upgrade call :func:`write_bundles` beside ``compileall``
(:func:`boincpy.tools.make_project.compile_package`); an operator who updated
the source tree by hand runs ``python -m boincpy.tools.cgi_bundles``.  The
lists below say what goes in each bundle; tests/test_import_budget.py checks
them against what a request really loads.  Writing is kept apart from
:mod:`boincpy.hot_path`, which every CGI imports before anything else, so
that no CGI loads the code that only make_project runs.
"""

import ast
import hashlib
import marshal
import os
import sys

from boincpy.files import atomic_write
from boincpy.hot_path import (
    PACKAGE_DIR, SITE_FAMILIES, bundle_path, interpreter_tag, on_demand_path)

# the modules every request of each CGI loads (their top-level imports within
# boincpy are added when the bundle is written)
CGIS = {
    "scheduler": (
        "boincpy.sched.handler", "boincpy.resident", "boincpy.log",
        "boincpy.parsed_config", "boincpy.shmem", "boincpy.db", "boincpy.db.wire",
        "boincpy.db.lite", "boincpy.db.connection", "boincpy.sched.hosts",
        "boincpy.sched.reply", "boincpy.db.host",
        "boincpy.db.columns"),
    "upload": (
        "boincpy.upload", "boincpy.resident", "boincpy.log",
        "boincpy.parsed_config", "boincpy.crypto"),
    # the web site's pages and RPCs: a family's module (with what its body
    # imports) per bundle, named in the page file's cgi_start; and the
    # database client every one of them opens in a classic CGI
    # (Resident.database: boincpy.db.lite over boincpy.db.wire)
    "site_master": ("boincpy.web.master", "boincpy.web.user.news", "boincpy.web.user.profile",
                    "boincpy.db.lite"),
    "site_submitter": ("boincpy.web.user.main", "boincpy.web.submitter.batches",
                       "boincpy.db.lite"),
    "web_rpc": ("boincpy.web.rpc", "boincpy.db.lite"),
    "web_submit_rpc": ("boincpy.web.submit_rpc", "boincpy.db.lite"),
    "web_job_file": ("boincpy.web.job_file", "boincpy.db.lite"),
    "web_get_output": ("boincpy.web.get_output", "boincpy.db.lite"),
    "web_server_status": ("boincpy.web.server_status", "boincpy.db.lite"),
    "ops": ("boincpy.web.ops.main", "boincpy.db.lite"),
}
# a bundle per family of html/user's pages (boincpy.hot_path.SITE_FAMILIES)
CGIS.update(("site_" + family, ("boincpy.web.user.main", "boincpy.web.user." + family,
                                "boincpy.db.lite"))
            for family in SITE_FAMILIES)

# Modules some requests of a CGI load and others don't: in its bundle too,
# with what their bodies import, but run only when a request imports them
# (the import system finds them there: no search of the path, no .pyc
# read), and unmarshalled only then.  The scheduler's: what reporting
# results and getting work load (most of a real project's requests), and
# what rarer requests need.
ON_DEMAND = {
    "scheduler": (
        "boincpy.sched.reports", "boincpy.sched.send", "boincpy.sched.edf",
        "boincpy.db.result", "boincpy.db.workunit", "boincpy.db.msg",
        "boincpy.db.host_app_version", "boincpy.doorbell", "boincpy.rand",
        # a client signing in with its weak authenticator; a user row changed
        # (new global preferences, cross-project id); config_aux.xml's job
        # limits, read when work is asked for
        "boincpy.passwords", "boincpy.db.user", "boincpy.config_specs"),
}


def _source(name):
    """(source path, is a package) of boincpy module NAME, or None."""
    base = os.path.join(os.path.dirname(PACKAGE_DIR), *name.split("."))
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py"), True
    if os.path.isfile(base + ".py"):
        return base + ".py", False
    return None


def _top_level_imports(tree, name, is_package):
    """boincpy modules a module's body imports when it runs (not those
    imported inside functions, which run later), parents included."""
    found = []

    def visit(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Import):
                found.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = package + ("." + base if base else "")
                found.append(base)
                found.extend(base + "." + a.name for a in node.names)
            visit(ast.iter_child_nodes(node))
    visit(tree.body)
    deps = []
    for dep in found:
        parts = dep.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix.startswith("boincpy") and prefix != name and _source(prefix):
                deps.append(prefix)
    return deps


def _drop_docstrings(tree):
    """Leave the docstrings out of a module's code, as ``python -OO`` would,
    but keep its asserts: no request reads them, and they were 17% of the
    scheduler's bundle, which every request loads."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                # a constant that is not a string is no docstring, and it keeps
                # a body that held only the docstring a body
                first.value = ast.copy_location(ast.Constant(None), first.value)


def _compiled(name):
    """Module NAME's bundle entry (name, path, signature, is a package, code)
    and the boincpy modules its body needs first."""
    path, is_package = _source(name)
    st = os.stat(path)       # before the read: a change after it is seen
    with open(path, "rb") as f:
        source = f.read()
    tree = ast.parse(source, path)
    _drop_docstrings(tree)
    parent = name.rpartition(".")[0]
    deps = ([parent] if parent else []) + _top_level_imports(tree, name, is_package)
    code = compile(tree, path, "exec", dont_inherit=True)
    return (name, path, (st.st_size, st.st_mtime_ns), is_package, code), deps


def bundle_entries(cgi, compiled=None):
    """CGI's preloaded modules, compiled, in an order where each comes after
    every boincpy module its body imports (and its package).  ``compiled``: a
    dict of modules already compiled, shared by the bundles written together."""
    return _ordered(CGIS[cgi], {"boincpy.hot_path"}, compiled)


def on_demand_entries(cgi, compiled=None):
    """CGI's modules run only when imported (:data:`ON_DEMAND`, with the
    boincpy modules their bodies import that are not preloaded)."""
    preloaded = {entry[0] for entry in bundle_entries(cgi, compiled)}
    return _ordered(ON_DEMAND.get(cgi, ()), preloaded | {"boincpy.hot_path"}, compiled)


def _ordered(roots, seen, compiled):
    # (boincpy.hot_path is loaded before any bundle: a page's http.py imports exit_now)
    compiled = {} if compiled is None else compiled
    order, seen = [], set(seen)

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        if name not in compiled:
            compiled[name] = _compiled(name)
        entry, deps = compiled[name]
        for dep in deps:
            visit(dep)
        order.append(entry)

    for root in roots:
        visit(root)
    return order


def write_bundles():
    """Write every CGI's bundle, and the code of its on-demand modules
    (atomically); the paths written.  Raises OSError when the package's
    __pycache__ can't be written."""
    written = []
    os.makedirs(os.path.join(PACKAGE_DIR, "__pycache__"), exist_ok=True)
    compiled = {}
    for cgi in CGIS:
        # the on-demand modules' code in a second file, after a token that
        # the bundle names: a bundle never takes another writing's code.  The
        # token is the code's digest, so writing the same sources again (each
        # make_project does) gives the same file, and a CGI that read the
        # bundle just before still finds its own code after
        entries = on_demand_entries(cgi, compiled)
        blobs = [marshal.dumps(code) for _name, _source, _sig, _is_package, code in entries]
        token = hashlib.sha256(b"".join(blobs)).digest()[:16]
        index = {}
        offset = len(token)
        for (name, source, signature, is_package, _code), blob in zip(entries, blobs):
            index[name] = (source, is_package, signature, offset, len(blob))
            offset += len(blob)
        if index:
            atomic_write(on_demand_path(cgi), b"".join([token] + blobs))
            written.append(on_demand_path(cgi))
        atomic_write(bundle_path(cgi), marshal.dumps(
            (interpreter_tag(), bundle_entries(cgi, compiled), (token, index))))
        written.append(bundle_path(cgi))
    return written


def main():
    """python -m boincpy.tools.cgi_bundles, after updating the source tree:
    the paths written, or what stopped it (exit status 1)."""
    try:
        written = write_bundles()
    except OSError as exc:
        sys.stderr.write("cgi_bundles: can't write the CGIs' bundles: %s (run it as the "
                         "package's owner)\n" % exc)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
