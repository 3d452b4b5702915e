"""The package's floors (docs/design.md): imports only run downward, and no
two modules of one floor import each other.  Lazy imports inside functions
count too: they are how a cycle usually sneaks in."""

import ast
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "boincpy"

# module (or package prefix) -> floor; the longest matching prefix wins
FLOORS = {
    "boincpy": 0, "boincpy.states": 1, "boincpy.errors": 1, "boincpy.log": 1,
    "boincpy.xml": 1, "boincpy.error_numbers": 1, "boincpy.cli": 1, "boincpy.cnum": 1,
    "boincpy.proc_types": 1, "boincpy.hot_path": 1, "boincpy.rand": 1,
    "boincpy.config": 2, "boincpy.parsed_config": 2, "boincpy.crypto": 2, "boincpy.passwords": 2, "boincpy.files": 2,
    "boincpy.mail": 2,
    "boincpy.db": 3, "boincpy.db.result": 3, "boincpy.db.workunit": 3, "boincpy.db.host": 3,
    "boincpy.db.batch": 3, "boincpy.db.submit": 3, "boincpy.db.host_app_version": 3,
    "boincpy.db.credit": 3, "boincpy.db.app": 3, "boincpy.db.app_version": 3,
    "boincpy.db.user": 3, "boincpy.db.team": 3, "boincpy.db.msg": 3, "boincpy.db.assignment": 3,
    "boincpy.db.wire": 3,
    "boincpy.submit.client": 3, "boincpy.submit.gahp": 3,
    "boincpy.shmem": 4, "boincpy.doorbell": 4, "boincpy.templates": 4, "boincpy.upload": 4, "boincpy.credit": 4,
    "boincpy.jobfiles": 4, "boincpy.sizeclass": 4, "boincpy.backend_lib": 4,
    "boincpy.submit": 4, "boincpy.resident": 4, "boincpy.hrclass": 4,
    "boincpy.sched": 5, "boincpy.daemons": 5, "boincpy.web": 5,
    "boincpy.tools": 6, "boincpy.testing": 6, "boincpy.persistent": 6, "boincpy.fcgi": 6,
    "boincpy.fcgi_pool": 6,
}


def floor(module):
    best = None
    for prefix, n in FLOORS.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, n)
    return best[1]


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports():
    """{module: {imported boincpy module}} over the whole package."""
    names = {module_name(p) for p in PACKAGE.rglob("*.py")}
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module \
                    and node.module.startswith("boincpy"):
                for alias in node.names:
                    full = node.module + "." + alias.name
                    deps.add(full if full in names else node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("boincpy"))
        graph[module_name(path)] = deps - {module_name(path), "boincpy"}
    return graph


def test_imports_run_downward():
    upward = []
    for module, deps in imports().items():
        for dep in deps:
            if floor(dep) > floor(module):
                upward.append("%s (floor %d) imports %s (floor %d)"
                              % (module, floor(module), dep, floor(dep)))
    assert not upward, "\n".join(sorted(upward))


def test_no_import_cycles():
    graph = imports()
    cycles = []

    def visit(node, path, seen):
        for dep in graph.get(node, ()):
            if dep in path:
                cycles.append(" -> ".join(path[path.index(dep):] + [dep]))
            elif dep not in seen:
                seen.add(dep)
                visit(dep, path + [dep], seen)

    for start in graph:
        visit(start, [start], {start})
    assert not cycles, "\n".join(sorted(set(cycles)))


def test_every_module_has_a_floor():
    for module in imports():
        assert floor(module) is not None, module


# Where each table's writes live (docs/design.md): its module of boincpy/db/
# holds every UPDATE, INSERT, REPLACE and DELETE of it; no module outside
# boincpy/db/ writes it or hands its name to a bulk writer.
HOMES = {
    "result": "result", "workunit": "workunit", "batch": "batch", "host": "host",
    "host_deleted": "host", "host_app_version": "host_app_version",
    "app_version": "app_version", "app": "app", "platform": "app",
    "user": "user", "user_deleted": "user", "login_failure": "user",
    "forum_preferences": "user", "consent": "user", "credited_job": "user", "token": "user",
    "credit_user": "credit", "credit_team": "credit",
    "team": "team", "team_admin": "team", "team_delta": "team",
    "msg_from_host": "msg", "msg_to_host": "msg", "assignment": "assignment",
    "user_submit": "submit", "user_submit_app": "submit", "job_file": "submit",
    "batch_file_assoc": "submit",
    "private_messages": "messages", "friend": "messages", "notify": "messages",
    "category": "forum", "forum": "forum", "thread": "forum", "post": "forum",
    "banishment_vote": "forum", "banishment_votes": "forum",
    "subscriptions": "forum", "post_ratings": "forum", "forum_logging": "forum",
    "profile": "profile", "badge": "badge", "badge_user": "badge", "badge_team": "badge",
}
HOMED = tuple(HOMES)

WRITE = re.compile(r"\b(?:UPDATE|INSERT\s+(?:IGNORE\s+)?INTO|REPLACE\s+INTO|DELETE\s+FROM)"
                   r"\s+`?([a-z_]+)`?(?![a-z_])")
BULK_WRITERS = {"update_by_id", "update_ids", "insert_rows", "insert_many", "insert_row"}


def _writes(path):
    """[(line, table)] of the statements in ``path`` that write a table.

    String constants are read whole (ast joins implicitly concatenated and
    multi-line strings), so a statement split over lines is still seen; a
    bulk writer given a table's name counts too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.extend((node.lineno, m.group(1)) for m in WRITE.finditer(node.value))
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in BULK_WRITERS:
                found.extend((node.lineno, arg.value) for arg in node.args
                             if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
    return found


def test_homed_tables_are_written_only_in_db():
    stray = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent)
        if rel.parts[1] != "db":
            stray.extend("%s:%d writes %s" % (rel, line, table)
                         for line, table in _writes(path) if table in HOMED)
    assert not stray, "\n".join(stray)


def test_homed_tables_are_written_in_their_module():
    for table, module in HOMES.items():
        path = PACKAGE / "db" / (module + ".py")
        assert path.exists(), (table, module)
        if table not in ("credit_user", "credit_team"):     # named by a parameter there
            assert table in {t for _, t in _writes(path)}, (table, module)
