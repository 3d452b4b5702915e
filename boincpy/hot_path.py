"""A classic CGI's first and last steps: its modules in one compiled file, run
without the import system, and a quick exit.

A classic CGI is a new interpreter for every request, and Python's import
system spends about 250,000 instructions (50 µs here) on each module it loads
even when the module's .pyc is ready: finding it along the path, its lock, its
spec, reading and checking the file.  The scheduler loads 30 of boincpy's
modules on every request: 1.5 ms of CPU before any work.  So make_project and
bin/upgrade (:func:`write_bundles`, beside ``compileall``) write each CGI's
modules, compiled, into one file in the package's ``__pycache__``, in the
order their top-level imports need them; the CGI's first line
(:func:`cgi_start`, which calls :func:`preload`) reads it and runs each
module into ``sys.modules`` with the attributes the import system would give
it (spec, file, cached, package, path), so later ``import`` statements find
them loaded; a module its
package's body imports is left to the import system, which finds it in the
bundle too.

The bundle is taken only if, for every module, the source is the one it was
compiled from (size and modification time in nanoseconds) and the interpreter
is the one that compiled it (its bytecode magic number and optimization
level); otherwise nothing is preloaded and the import system loads the
modules as usual.  A stale bundle can cost time, never run old code.  Only
the project's owner (whoever can write the package, as for .pyc files) writes
it: nothing the web server can write is run.

The lists below are the modules every request of each CGI needs;
tests/test_import_budget.py checks them against what a request loads.
Modules only some requests need (the scheduler's reporting and job choice)
are in the bundle too, marshalled apart: run, and unmarshalled, only when a
request imports them, each checked against its source then.  The
web site's CGIs (html/user and html/ops, in classic CGI mode) have one
bundle per family of pages: a page of the volunteer site imports some 40 of
boincpy's modules, and from its bundle, with the collector off and no
interpreter shutdown, a page takes about a fifth less CPU.
"""

import gc
import marshal
import posix     # os's built-in half: see join()
import sys

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
# html/user's families of pages, each a module of boincpy.web.user
# (boincpy.web.user.main.FAMILIES)
SITE_FAMILIES = ("session", "account", "prefs", "tasks", "teams", "news", "profile", "badges",
                 "messages", "forum", "lists", "moderation", "forum_post")
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


def join(directory, *names):
    """``os.path.join`` for the modules of a CGI's request path, which use
    ``posix`` rather than ``os``: a CGI started as ``python -S`` has not
    loaded os, and importing it (with posixpath, stat and the 25 abstract
    classes of _collections_abc) costs every request 1.4 ms of CPU, a tenth
    of a no-work scheduler request.  posixpath's rule: a name that starts
    with / starts the path again."""
    path = directory
    for name in names:
        if name.startswith("/"):
            path = name
        elif not path or path.endswith("/"):
            path += name
        else:
            path += "/" + name
    return path


def getenv(name, default=None):
    """``os.environ.get`` for a CGI's request path (see :func:`join`)."""
    value = posix.environ.get(name.encode())
    return default if value is None else value.decode("utf-8", "surrogateescape")


def cgi_environ():
    """The process's environment as ``os.environ`` reads it (names and values
    decoded as UTF-8, undecodable bytes kept as surrogates), as a dict."""
    return {name.decode("utf-8", "surrogateescape"): value.decode("utf-8", "surrogateescape")
            for name, value in posix.environ.items()}


def absolute(path):
    """``os.path.abspath`` for a CGI's request path (see :func:`join`)."""
    if not path.startswith("/"):
        path = join(posix.getcwd(), path)
    parts = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def _file_type(path):
    """The S_IFMT bits of what ``path`` names (links followed), None if nothing."""
    try:
        return posix.stat(path).st_mode & 0o170000
    except (OSError, ValueError):
        return None


def exists(path):
    """``os.path.exists`` for a CGI's request path (see :func:`join`)."""
    return _file_type(path) is not None


def is_file(path):
    """``os.path.isfile`` for a CGI's request path (see :func:`join`)."""
    return _file_type(path) == 0o100000


def is_dir(path):
    """``os.path.isdir`` for a CGI's request path (see :func:`join`)."""
    return _file_type(path) == 0o040000


def real_path(path):
    """``os.path.realpath`` of a file or directory that exists, for a CGI's
    request path (see :func:`join`): the kernel's name for it once opened
    (symbolic links resolved).  Raises OSError if it can't be opened."""
    fd = posix.open(path, posix.O_PATH | posix.O_CLOEXEC)
    try:
        return posix.readlink("/proc/self/fd/%d" % fd)
    finally:
        posix.close(fd)


_PACKAGE_DIR = absolute(__file__).rpartition("/")[0]
_CACHE_TAG = sys.implementation.cache_tag


def _interpreter():
    """What compiled code depends on: bytecode format and optimization level."""
    external = sys.modules["_frozen_importlib_external"]
    return ("boincpy hot path 3", external.MAGIC_NUMBER, sys.flags.optimize)


def bundle_path(cgi):
    """Where CGI's bundle lives: the package's __pycache__, by interpreter."""
    return join(_PACKAGE_DIR, "__pycache__", "hot_path.%s.%s.bundle" % (cgi, _CACHE_TAG))


def on_demand_path(cgi):
    """Where the code of CGI's on-demand modules lives (:data:`ON_DEMAND`),
    beside its bundle: a request that imports none of them does not read it."""
    return bundle_path(cgi)[:-len("bundle")] + "on_demand"


class _Bundle:
    """The bundle's modules as a finder and loader on ``sys.meta_path``: what
    :func:`preload` does not run itself (a module its package's body imports)
    the import system loads from here, in the order it always does."""

    def __init__(self, entries, on_demand=None, cgi=None):
        self.modules = {name: (path, is_package, code)
                        for name, path, _signature, is_package, code in entries}
        # the on-demand modules: (token, {name: (path, is_package, signature,
        # offset, length)}) of their code in the second file, opened at the
        # first import of one of them (None: not yet; False: not this
        # bundle's), each module's code read alone
        self.token, self.on_demand = on_demand or (None, {})
        self.cgi = cgi
        self.more = None

    def find_spec(self, name, path=None, target=None):
        entry = self.modules.get(name)
        if entry is None:
            entry = self._on_demand(name)
            if entry is None:
                return None
        # the spec a path import gives (importlib.util.spec_from_file_location),
        # made directly: that function's checks cost more than the module's run
        path, is_package = entry[0], entry[1]
        spec = sys.modules["_frozen_importlib"].ModuleSpec(
            name, self, origin=path, is_package=is_package)
        spec.has_location = True
        head, _, tail = path.rpartition("/")
        spec.cached = "%s/__pycache__/%s.%s.pyc" % (head, tail[:-3], _CACHE_TAG)
        if is_package:
            spec.submodule_search_locations = [head]
        return spec

    def _on_demand(self, name):
        """An on-demand module's entry, its code read now; None (the import
        system then loads its source, as without a bundle) if its source
        changed or its file is not the one this bundle was written with."""
        entry = self.on_demand.pop(name, None)
        if entry is None:
            return None
        path, is_package, signature, offset, length = entry
        try:
            st = posix.stat(path)
            if (st.st_size, st.st_mtime_ns) != signature:
                return None
            if self.more is None:
                # kept open for the next ones (the process ends with the request)
                fd = posix.open(on_demand_path(self.cgi), posix.O_RDONLY | posix.O_CLOEXEC)
                if posix.pread(fd, len(self.token), 0) == self.token:
                    self.more = fd
                else:
                    posix.close(fd)     # written with another bundle
                    self.more = False
            if self.more is False:
                return None
            data = posix.pread(self.more, length, offset)
            code = marshal.loads(data) if len(data) == length else None
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if code is None:
            return None                 # the file is cut short
        entry = self.modules[name] = (path, is_package, code)
        return entry

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(self.modules[module.__spec__.name][2], module.__dict__)


def cgi_start(cgi):
    """A classic CGI's first step: its modules from its bundle (:func:`preload`;
    True if they came from there), and no cyclic garbage collection.  The
    process lives for one request and gives its memory back as it ends; the
    collector's passes over the objects the imports make were 6% of a no-work
    scheduler request's instructions (2.8 of 47 million)."""
    gc.disable()
    return preload(cgi)


def exit_now(status=0):
    """A classic CGI's last step, once its reply is written: flush stdout and
    stderr and leave with ``_exit``, skipping the interpreter's shutdown
    (freeing every module and object: 5 million instructions, a quarter of
    the interpreter's own start and end).  Call it only when every file that
    matters is closed (logs, the database connection)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    posix._exit(status)


def _new_module(spec):
    """``importlib.util.module_from_spec`` for a spec of :meth:`_Bundle.find_spec`:
    the same attributes, set directly.  That function first asks the new
    module for each one, and every miss formats an AttributeError: 47,000
    instructions a module, 33,000 more than this, for each of the 30 modules
    every scheduler request loads."""
    module = _ModuleType(spec.name)
    module.__loader__ = spec.loader
    module.__package__ = spec.parent
    module.__spec__ = spec
    if spec.submodule_search_locations is not None:
        module.__path__ = spec.submodule_search_locations
    module.__file__ = spec.origin
    module.__cached__ = spec.cached
    return module


_ModuleType = type(sys)


def preload(cgi):
    """Run CGI's modules from its bundle into ``sys.modules``; True if it did,
    False (nothing loaded) when there is no bundle or it is not the sources'.
    An exception a module raises propagates, as its import would."""
    try:
        with open(bundle_path(cgi), "rb") as f:
            data = f.read()
        made_by, entries, on_demand = marshal.loads(data)
    except (OSError, EOFError, ValueError, TypeError):
        return False
    if made_by != _interpreter():
        return False
    for name, path, signature, is_package, code in entries:
        try:
            st = posix.stat(path)
        except OSError:
            return False
        if (st.st_size, st.st_mtime_ns) != signature:
            return False
    bundle = _Bundle(entries, on_demand, cgi)
    sys.meta_path.insert(0, bundle)
    modules = sys.modules
    for name, path, signature, is_package, code in entries:
        parent, _, child = name.rpartition(".")
        if name in modules or (parent and parent not in modules):
            continue                # loaded already, or by its package's body
        # what the import system would do now, less its search and locks:
        # nothing is half-run here, every module in sys.modules is complete
        module = _new_module(bundle.find_spec(name))
        modules[name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            del modules[name]
            raise
        if parent:
            setattr(modules[parent], child, module)
    return True


# ---------------------------------------------------------------------------
# Writing (make_project, bin/upgrade)

def _source(name):
    """(source path, is a package) of boincpy module NAME, or None."""
    import os
    base = os.path.join(os.path.dirname(_PACKAGE_DIR), *name.split("."))
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py"), True
    if os.path.isfile(base + ".py"):
        return base + ".py", False
    return None


def _top_level_imports(tree, name, is_package):
    """boincpy modules a module's body imports when it runs (not those
    imported inside functions, which run later), parents included."""
    import ast
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
    import ast
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
    import ast
    path, is_package = _source(name)
    st = posix.stat(path)       # before the read: a change after it is seen
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


def _write_atomically(path, data):
    # files.atomic_write's job, written here: this module sits below
    # boincpy.files (tests/test_layering.py), being the first a CGI loads
    import os
    tmp = "%s.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_bundles():
    """Write every CGI's bundle, and the code of its on-demand modules
    (atomically); the paths written.  Raises OSError when the package's
    __pycache__ can't be written."""
    import hashlib
    import os
    written = []
    os.makedirs(os.path.join(_PACKAGE_DIR, "__pycache__"), exist_ok=True)
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
            _write_atomically(on_demand_path(cgi), b"".join([token] + blobs))
            written.append(on_demand_path(cgi))
        _write_atomically(bundle_path(cgi), marshal.dumps(
            (_interpreter(), bundle_entries(cgi, compiled), (token, index))))
        written.append(bundle_path(cgi))
    return written


def main():
    """python -m boincpy.hot_path, after updating the source tree: the paths
    written, or what stopped it (exit status 1)."""
    try:
        written = write_bundles()
    except OSError as exc:
        sys.stderr.write("hot_path: can't write the CGIs' bundles: %s (run it as the "
                         "package's owner)\n" % exc)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
