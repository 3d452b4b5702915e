"""A classic CGI's first and last steps: its modules in one compiled file, run
without the import system, and a quick exit.

A classic CGI is a new interpreter for every request, and Python's import
system spends about 250,000 instructions (50 µs here) on each module it loads
even when the module's .pyc is ready: finding it along the path, its lock, its
spec, reading and checking the file.  The scheduler loads 30 of boincpy's
modules on every request: 1.5 ms of CPU before any work.  So make_project and
bin/upgrade (:mod:`boincpy.tools.cgi_bundles`, beside ``compileall``) write
each CGI's modules, compiled, into one file in the package's ``__pycache__``,
in the order their top-level imports need them; the CGI's first line
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

# html/user's families of pages, each a module of boincpy.web.user with a
# bundle of its own (boincpy.web.user.main.FAMILIES, boincpy.tools.cgi_bundles)
SITE_FAMILIES = ("session", "account", "prefs", "tasks", "teams", "news", "profile", "badges",
                 "messages", "forum", "lists", "moderation", "forum_post")


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


# the boincpy package's directory (its __pycache__ holds the bundles)
PACKAGE_DIR = absolute(__file__).rpartition("/")[0]
_CACHE_TAG = sys.implementation.cache_tag


def interpreter_tag():
    """What compiled code depends on: bytecode format and optimization level
    (a bundle records the tag it was written with)."""
    external = sys.modules["_frozen_importlib_external"]
    return ("boincpy hot path 3", external.MAGIC_NUMBER, sys.flags.optimize)


def bundle_path(cgi):
    """Where CGI's bundle lives: the package's __pycache__, by interpreter."""
    return join(PACKAGE_DIR, "__pycache__", "hot_path.%s.%s.bundle" % (cgi, _CACHE_TAG))


def on_demand_path(cgi):
    """Where the code of CGI's on-demand modules lives (their list:
    ``boincpy.tools.cgi_bundles.ON_DEMAND``), beside its bundle: a request
    that imports none of them does not read it."""
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
    if made_by != interpreter_tag():
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
