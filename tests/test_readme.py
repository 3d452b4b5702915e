"""README.md and docs/operator-guide.md stay true: every command in them runs.

How the documents are read:

* A fenced ```sh block is commands.  The blocks of one document run in
  order, each with ``bash -e -o pipefail`` (a failing command fails the
  test); the working directory carries over from one block to the next, shell
  variables do not.  README.md runs from the source tree; the guide's blocks
  build, run and finally remove a real project.
* A ```text block right after a ```sh block (only blank lines between) is the
  output that block must print: each line must appear, in order, in its
  stdout+stderr; ``...`` matches anything, white space runs compare equal,
  and MariaDB's table borders are ignored (the doc shows what a terminal
  shows, the test gets mysql's tab-separated batch output).
* A comment ``<!-- doc-test: ... -->`` on the line before a fence says more:
  ``same as PATH`` (the block is the source tree's file PATH),
  ``insert into FILE before TEXT`` (the block is applied to FILE, relative to
  the shell's directory, before the last TEXT), ``retry N`` (the block and
  its output are tried again until they pass, for up to N seconds).
* The documents use fixed names; the test runs them with its own:
  :data:`PLACEHOLDERS` (source tree, project root, short name = database and
  database user, port, scratch directory for ``/tmp/...``), and ``boinccmd``
  talks to a stock client of the test's own.  The guide's other hosts
  (:data:`GUIDE_HOSTS`) are namespaces with their own host name and
  /dev/shm on this machine, and ``ssh HOST COMMAND`` runs COMMAND there.
* A block that can't run here is listed in :data:`NOT_RUN` with what covers
  it elsewhere; a fenced command neither run nor listed fails the test, and
  so does a listed one the documents no longer have.
* Static checks: every ``bin/NAME`` exists (or the guide creates it), every
  option given to a boincpy tool (in blocks, ``<cmd>`` elements, inline code
  and option tables) is in that tool's ``--help``, every ``<tag>`` exists in
  the package, and the config.xml tables' defaults are the code's.
"""

import os
import re
import secrets
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field

import MySQLdb
import pytest

from conftest import TEST_BASE, drop_db_and_user, root_db_params
from tests.shared_fixtures import fixture_path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO, "README.md")
GUIDE = os.path.join(REPO, "docs", "operator-guide.md")
DOCS = (README, GUIDE)
PYTHON = os.path.join(REPO, ".venv", "bin", "python")
# The names the documents use, replaced by the test's own (see Env.substitutions).
PLACEHOLDERS = ("/opt/boincpy", "/srv/boincpy/myproj", "127.0.0.1:8080", "127.0.0.2:8080",
                "myproj", "/tmp/")
# The guide's other hosts ("When one server is not enough"), emulated here
# (tests/hosts_util.Host) and reached with an ssh stand-in on PATH.
GUIDE_HOSTS = ("backend", "web2")

# Blocks that don't run here: (exact text of the block's commands, one per
# line) -> (file, text in that file) of what covers them elsewhere.
NOT_RUN = {
    # the demo: Apache, daemons, example app, two stock clients (its own test)
    "make demo": ("tests/test_end_to_end.py", "def test_demo_command_end_to_end_with_teardown"),
    # the whole suite, which CI runs
    "make test": (".ci/run", "make test"),
    # installs Debian packages if missing; CI runs it on a fresh machine
    "sh tools/setup_system.sh": (".ci/run", "sh tools/setup_system.sh"),
    # the system Apache: the private Apache includes the same snippet
    "echo \"Include /srv/boincpy/myproj/myproj.httpd.conf\" > "
    "/etc/apache2/conf-available/myproj.conf\n"
    "a2enmod cgi\na2enconf myproj\napache2ctl graceful":
        ("tests/test_httpd.py", "def test_cgi_directory_runs_python_cgis_as_www_data"),
    # htpasswd asks for the password; make_project --ops_user writes the same file
    "htpasswd -B -c /srv/boincpy/myproj/html/ops/.htpasswd admin\n"
    "chgrp www-data /srv/boincpy/myproj/html/ops/.htpasswd\n"
    "chmod 640 /srv/boincpy/myproj/html/ops/.htpasswd":
        ("tests/test_httpd.py", "def test_ops_pages_need_the_password"),
    # BOINC's own tools/upgrade needs BOINC's built source tree; what it reads
    # is checked by the test named
    "bin/upgrade --for_boinc --yes /srv/boincpy/myproj\ncd /usr/local/src/boinc\n"
    "echo y | tools/upgrade /srv/boincpy/myproj":
        ("tests/test_upgrade.py", "def test_for_boinc_prepares_what_boincs_upgrade_reads"),
    # the operator's crontab: what the cron line runs is tested
    "crontab -l 2>/dev/null | cat - /srv/boincpy/myproj/myproj.cronjob | crontab -":
        ("tests/test_control.py", "def test_cron_restarts_a_daemon_that_died"),
}

BLOCK_TIMEOUT = 180
_MARKER_RE = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
_FENCE_RE = re.compile(r"^```\s*([\w-]*)\s*$")
_TAG_RE = re.compile(r"</?([A-Za-z_][\w]*)(?:\s[^<>]*)?/?>")
# Never run from a document, whatever the lists say: the machine's own configuration.
_SYSTEM_RE = re.compile(r"/etc/|\ba2en|\ba2dis|apache2ctl|\bcrontab\b|systemctl|apt-get|"
                        r"\bservice\b|htpasswd")
_PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


# ---------------------------------------------------------------------------
# Reading the documents

@dataclass
class Block:
    """One fenced block."""
    doc: str
    line: int                 # line of the opening fence (1-based)
    lang: str
    text: str
    marker: str = ""
    output: "Block" = None    # the ```text block showing this sh block's output
    is_output: bool = False

    def where(self):
        return "%s line %d" % (os.path.relpath(self.doc, REPO), self.line)


@dataclass
class Doc:
    path: str
    blocks: list = field(default_factory=list)
    prose: list = field(default_factory=list)     # (line number, text) outside fences


def read_doc(path):
    """Split a markdown file into fenced blocks and prose lines."""
    doc = Doc(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    last_block_end = None      # index of the line closing the previous block
    while i < len(lines):
        m = _FENCE_RE.match(lines[i])
        if not m:
            doc.prose.append((i + 1, lines[i]))
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        assert j < len(lines), "%s line %d: unclosed fence" % (path, start + 1)
        marker = ""
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            mm = _MARKER_RE.match(lines[k])
            if mm:
                marker = mm.group(1)
        block = Block(path, start + 1, m.group(1), "\n".join(lines[start + 1:j]) + "\n", marker)
        prev = doc.blocks[-1] if doc.blocks else None
        between = lines[last_block_end + 1:start] if last_block_end is not None else ["x"]
        if (block.lang == "text" and prev is not None and prev.lang == "sh"
                and not any(ln.strip() for ln in between)):
            prev.output = block
            block.is_output = True
        doc.blocks.append(block)
        last_block_end = j
        i = j + 1
    return doc


def commands(text):
    """The commands of a shell block: continuation lines joined, comments and
    blank lines dropped, a here-document kept with the command that opens it."""
    out, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        here = re.search(r"<<-?\s*'?(\w+)'?", line)
        if here:
            body = []
            while i < len(lines) and lines[i].strip() != here.group(1):
                body.append(lines[i])
                i += 1
            i += 1
            line = line + "\n" + "\n".join(body) + "\n" + here.group(1)
        out.append(line)
    return out


def load_docs():
    return [read_doc(p) for p in DOCS]


# ---------------------------------------------------------------------------
# Static checks

def _bin_tools():
    return {n for n in os.listdir(os.path.join(REPO, "bin")) if not n.startswith(".")}


def _created_scripts(docs):
    """bin/ scripts the guide itself writes (cat > bin/NAME)."""
    names = set()
    for doc in docs:
        for b in doc.blocks:
            if b.lang == "sh":
                names |= set(re.findall(r"cat > bin/([\w.-]+)", b.text))
    return names


_help_cache = {}


def _run_help(tool, *sub):
    proc = subprocess.run([PYTHON, os.path.join(REPO, tool)] + list(sub) + ["--help"],
                          capture_output=True, text=True)
    return proc.stdout + proc.stderr


def tool_help(tool):
    """--help text of a boincpy tool: 'bin/NAME' or '-m MODULE'; a tool with
    subcommands (click's "Commands:") includes each subcommand's --help."""
    if tool not in _help_cache and not tool.startswith("-m ") and " " not in tool:
        text = _run_help(tool)
        commands = re.search(r"^Commands:\n((?:  .*\n?)+)", text, re.M)
        if commands:
            for line in commands.group(1).splitlines():
                m = re.match(r"^  (\S+)", line)        # not a wrapped description
                if m:
                    text += _run_help(tool, m.group(1))
        _help_cache[tool] = text
    if tool not in _help_cache:
        if tool.startswith("-m "):
            argv = [PYTHON, "-m", tool[3:], "--help"]
        else:
            argv = [PYTHON, os.path.join(REPO, tool), "--help"]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60)
        _help_cache[tool] = proc.stdout + proc.stderr
    return _help_cache[tool]


def _words(text):
    try:
        lex = shlex.shlex(text, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        return list(lex)
    except ValueError:
        return text.split()


def tool_invocations(text, tools):
    """(tool, [words]) for each simple command in ``text`` that runs a boincpy
    tool: ``bin/NAME``, a bare NAME of bin/, ``python bin/NAME`` or
    ``python -m boincpy.X``."""
    found = []
    words = _words(text)
    segment = []
    for w in words + [";"]:
        if w in ("|", "||", "&&", ";", "&", "(", ")", ">", ">>", "<", "2>", "$(", "`"):
            if segment:
                found.append(segment)
            segment = []
            continue
        segment.append(w)
    out = []
    for seg in found:
        if seg[0].endswith(("python", "python3")) and len(seg) > 1:
            if seg[1] == "-m" and len(seg) > 2 and seg[2].startswith("boincpy."):
                out.append(("-m " + seg[2], seg[3:]))
            elif seg[1].startswith("bin/"):
                out.append((seg[1], seg[2:]))
            continue
        name = seg[0][4:] if seg[0].startswith("bin/") else seg[0]
        if name in tools:
            out.append(("bin/" + name, seg[1:]))
    return out


def check_options(tool, words, where, problems):
    """Every -opt / --opt word must be in the tool's --help."""
    help_text = tool_help(tool)
    for w in words:
        if not w.startswith("-") or w in ("-", "--") or " " in w:
            continue
        name = w.lstrip("-").split("=", 1)[0]
        if not name or name[0].isdigit():
            continue
        if not re.search(r"(?<![\w-])--?%s(?![\w-])" % re.escape(name), help_text):
            problems.append("%s: %s has no option %s" % (where, tool, w))


def _inline_spans(doc):
    """(line, span text) of the inline code outside fences."""
    for lineno, text in doc.prose:
        for m in re.finditer(r"`([^`]+)`", text):
            yield lineno, m.group(1)


def _tables(doc):
    """Markdown tables: lists of rows (lists of cell texts), with the first line."""
    tables, current = [], None
    for lineno, text in doc.prose + [(10 ** 9, "")]:
        if text.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", text.strip())[1:-1]]
            if current is None:
                current = (lineno, [])
                tables.append(current)
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current[1].append(cells)
        else:
            current = None
    return tables


def _package_text():
    chunks = []
    for dirpath, _, files in os.walk(os.path.join(REPO, "boincpy")):
        for name in files:
            if name.endswith((".py", ".sql")):
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    chunks.append(f.read())
    return "\n".join(chunks)


def test_fenced_commands_are_run_or_listed():
    """Every sh block runs or is in NOT_RUN (whole), every NOT_RUN entry is in
    a document, and what covers it exists."""
    docs = load_docs()
    seen = set()
    problems = []
    for doc in docs:
        for b in doc.blocks:
            if b.lang not in ("sh", "text", "xml"):
                problems.append("%s: fence language %r (sh, text or xml)" % (b.where(), b.lang))
            if b.lang != "sh":
                continue
            cmds = commands(b.text)
            key = "\n".join(cmds)
            listed = [c for c in cmds if any(c in k.split("\n") for k in NOT_RUN)]
            if key in NOT_RUN:
                seen.add(key)
            elif listed:
                problems.append("%s: block mixes commands in NOT_RUN with others" % b.where())
    for key, (path, needle) in NOT_RUN.items():
        if key not in seen:
            problems.append("NOT_RUN entry no longer in the documents: %r" % key)
        full = os.path.join(REPO, path)
        if not os.path.exists(full) or needle not in open(full, encoding="utf-8").read():
            problems.append("NOT_RUN %r: its cover %s (%r) doesn't exist" % (key, path, needle))
    assert not problems, "\n".join(problems)


def test_markers_and_repository_files():
    """``same as PATH`` blocks are the source tree's files; markers are known."""
    problems = []
    for doc in load_docs():
        for b in doc.blocks:
            if not b.marker:
                continue
            if b.marker.startswith("same as "):
                path = os.path.join(REPO, b.marker[len("same as "):])
                if not os.path.exists(path):
                    problems.append("%s: %s doesn't exist" % (b.where(), path))
                elif open(path, encoding="utf-8").read() != b.text:
                    problems.append("%s: differs from %s" % (b.where(), path))
            elif not re.fullmatch(r"insert into \S+ before .+|retry \d+", b.marker):
                problems.append("%s: unknown marker %r" % (b.where(), b.marker))
    assert not problems, "\n".join(problems)


def test_tools_options_and_tags_exist():
    """bin/NAME exists, options are the tools' own, <tags> exist in the package."""
    docs = load_docs()
    tools = _bin_tools()
    created = _created_scripts(docs)
    package = _package_text()
    problems = []

    def check_text(text, where):
        for name in re.findall(r"(?<![\w/.~-])bin/([\w.-]+)", text):
            if name not in tools and name not in created:
                problems.append("%s: bin/%s doesn't exist" % (where, name))
        for tool, words in tool_invocations(text, tools | created):
            if tool[4:] in created:
                continue
            check_options(tool, words, where, problems)

    def check_tags(text, where):
        for tag in _TAG_RE.findall(text):
            if not re.search(r"\b%s\b" % re.escape(tag), package):
                problems.append("%s: <%s> appears nowhere in boincpy" % (where, tag))

    for doc in docs:
        for b in doc.blocks:
            if b.is_output:
                continue
            if b.lang == "sh":
                for c in commands(b.text):
                    if "<<" not in c:
                        check_text(c, b.where())
            elif b.lang == "xml":
                check_tags(b.text, b.where())
                for cmd in re.findall(r"<cmd>(.*?)</cmd>", b.text):
                    check_text(cmd, b.where())
            else:
                for line in b.text.splitlines():
                    check_text(line, b.where())
        for lineno, span in _inline_spans(doc):
            where = "%s line %d" % (os.path.relpath(doc.path, REPO), lineno)
            check_text(span, where)
            if span.startswith("<"):
                check_tags(span, where)
            elif re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*_[a-z]+", span):
                # an identifier (option, column, log reason): the code must have it
                if not re.search(r"\b%s\b" % span, package):
                    problems.append("%s: %s appears nowhere in boincpy" % (where, span))
        for lineno, rows in _tables(doc):
            where = "%s table at line %d" % (os.path.relpath(doc.path, REPO), lineno)
            head = rows[0][0]
            m = re.search(r"`(?:bin/)?([\w.-]+)` option", head)
            for row in rows[1:]:
                spans = re.findall(r"`([^`]+)`", " ".join(row))
                first = re.findall(r"`([^`]+)`", row[0])
                if m and m.group(1) in tools:
                    for s in first:
                        check_options("bin/" + m.group(1), _words(s), where, problems)
                elif len(first) == 1 and first[0] in tools:
                    for s in spans[1:]:
                        if s.startswith("-"):
                            check_options("bin/" + first[0], _words(s), where, problems)
    assert not problems, "\n".join(problems)


def test_readme_lists_what_setup_system_installs():
    """The README's package list is tools/setup_system.sh's."""
    with open(README, encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(REPO, "tools", "setup_system.sh"), encoding="utf-8") as f:
        script = f.read()
    listed = readme.split("Debian packages:", 1)[1].split("it also starts", 1)[0]
    installed = re.search(r"for pkg in ([^;]+);", script).group(1).split()
    assert sorted(re.findall(r"`([\w.+-]+)`", listed)) == sorted(installed)


def _slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_links_resolve():
    """Relative links point at files that exist, #anchors at headings."""
    docs = load_docs()
    anchors = {}
    for doc in docs:
        anchors[doc.path] = {_slug(t.lstrip("#")) for _, t in doc.prose if t.startswith("#")}
    problems = []
    for doc in docs:
        for lineno, text in doc.prose:
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"https?:", target):
                    continue
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(os.path.dirname(doc.path), path)) \
                    if path else doc.path
                where = "%s line %d" % (os.path.relpath(doc.path, REPO), lineno)
                if not os.path.exists(full):
                    problems.append("%s: %s doesn't exist" % (where, path))
                elif anchor and anchor not in anchors.get(full, ()):
                    problems.append("%s: no heading for #%s in %s" % (where, anchor, path or
                                                                        "this file"))
    assert not problems, "\n".join(problems)


def _format(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, (list, tuple)):
        return ""
    return str(value)


def _made_config_options():
    """config.xml options make_project writes (for a loopback URL base)."""
    from boincpy.tools import make_project
    spec = make_project.plan(["--no_db", "--url_base", "http://127.0.0.1:8080/",
                              "--project_root", "/nonexistent/myproj", "myproj"])
    return {k: _format(v) for k, v in make_project.config_options(spec).items()}


def _cxx_make_project_values():
    """The config.xml values BOINC's make_project writes (its setup_project.py,
    recorded in tests/fixtures/reference-server/cxx_make_project_config.tsv)."""
    values = {}
    with open(fixture_path("reference-server", "cxx_make_project_config.tsv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, value = line.rstrip("\n").split("\t")
                values[name] = value
    return values


def test_config_tables_are_the_codes():
    """The config.xml tables: defaults from config.py, make_project's values
    from make_project, the C++ make_project's from BOINC's source."""
    from boincpy.config import OPTIONS
    made = _made_config_options()
    cxx = _cxx_make_project_values()
    problems, checked = [], 0
    for doc in load_docs():
        for lineno, rows in _tables(doc):
            head = rows[0]
            where = "%s table at line %d" % (os.path.relpath(doc.path, REPO), lineno)
            if head[0] not in ("config.xml option", "config.xml"):
                continue
            for row in rows[1:]:
                names = re.findall(r"`<(\w+)>`", row[0])
                if len(names) != 1 or names[0] not in OPTIONS:
                    problems.append("%s: %r is not a config.xml option" % (where, row[0]))
                    continue
                name = names[0]
                checked += 1
                columns = dict(zip(head, row))
                if "Default" in columns and columns["Default"] != _format(OPTIONS[name].default):
                    problems.append("%s: <%s> default is %r, not %r" % (
                        where, name, _format(OPTIONS[name].default), columns["Default"]))
                for col in ("make_project", "boincpy"):
                    if col in columns:
                        want = made.get(name, "—")
                        if columns[col] != want:
                            problems.append("%s: make_project writes <%s> %r, not %r"
                                            % (where, name, want, columns[col]))
                if "C++ make_project" in columns:
                    got = columns["C++ make_project"].split()[0]
                    if cxx.get(name) != got:
                        problems.append("%s: BOINC's make_project writes <%s> %r, not %r"
                                        % (where, name, cxx.get(name), got))
    assert checked >= 10, "the config.xml tables were not found"
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------
# Running the blocks

class Session:
    """A shell session: blocks run one after another from a working directory."""

    def __init__(self, cwd, subst, env, scratch):
        self.cwd = cwd
        self.subst = subst
        self.env = env
        self.cwd_file = os.path.join(scratch, "cwd")
        self.trace_file = os.path.join(scratch, "trace")
        self.times = []          # (seconds, block) of each block run

    def substitute(self, text, commands=True):
        return self.subst(text, commands)

    def run(self, text, timeout=BLOCK_TIMEOUT):
        script = ("cd %s\nexec 19>%s\nBASH_XTRACEFD=19\nset -x\n%s\nset +x\npwd > %s\n"
                  % (shlex.quote(self.cwd), shlex.quote(self.trace_file), text,
                     shlex.quote(self.cwd_file)))
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=self.env,
                              timeout=timeout)
        if proc.returncode == 0:
            with open(self.cwd_file) as f:
                self.cwd = f.read().strip()
        return proc

    def trace_tail(self, n=5):
        try:
            with open(self.trace_file) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def _norm(line):
    return " ".join(line.replace("\t", " ").split())


def expected_lines(text):
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if not s or re.fullmatch(r"\+[-+]+\+", s):
            continue
        if s.startswith("|"):
            s = s.strip("|").replace("|", " ")
        out.append(_norm(s))
    return out


def output_matches(expected, actual):
    """None if every expected line appears in order in ``actual``, else the first missing."""
    lines = [_norm(a.strip("|").replace("|", " ") if a.startswith("|") else a)
             for a in actual.split("\n")]
    i = 0
    for e in expected:
        if e == "...":
            continue
        pattern = re.compile(".*".join(re.escape(p) for p in e.split("...")), re.S)
        while i < len(lines) and not pattern.fullmatch(lines[i]):
            i += 1
        if i == len(lines):
            return e
        i += 1
    return None


def _apply_insert(session, marker, text):
    m = re.fullmatch(r"insert into (\S+) before (.+)", marker)
    path = os.path.join(session.cwd, m.group(1))
    with open(path, encoding="utf-8") as f:
        content = f.read()
    at = content.rfind(m.group(2))
    assert at >= 0, "%s has no %r" % (path, m.group(2))
    with open(path, "w", encoding="utf-8") as f:
        f.write(content[:at] + text + content[at:])


def run_doc(doc, session):
    """Run a document's blocks in order; fail with the block, its output and trace."""
    ran = 0
    for b in doc.blocks:
        if b.marker.startswith("insert into "):
            _apply_insert(session, b.marker, b.text)
            continue
        if b.lang != "sh":
            continue
        if "\n".join(commands(b.text)) in NOT_RUN:
            continue
        if _SYSTEM_RE.search(b.text):
            pytest.fail("%s: a block that changes the machine (%s) must be in NOT_RUN, "
                        "whole" % (b.where(), _SYSTEM_RE.search(b.text).group(0)))
        text = session.substitute(b.text)
        expected = expected_lines(session.substitute(b.output.text, False)) if b.output else []
        retry = int(b.marker.split()[1]) if b.marker.startswith("retry ") else 0
        started = time.monotonic()
        deadline = started + retry
        while True:
            proc = session.run(text)
            missing = output_matches(expected, proc.stdout) if proc.returncode == 0 else None
            if proc.returncode == 0 and missing is None:
                break
            if time.monotonic() >= deadline:
                if proc.returncode:
                    pytest.fail("%s: exit status %d\n--- block\n%s--- output\n%s--- last "
                                "commands\n%s" % (b.where(), proc.returncode, text,
                                                  proc.stdout[-4000:], session.trace_tail()))
                pytest.fail("%s: output lacks the line\n    %s\n--- block\n%s--- output\n%s"
                            % (b.where(), missing, text, proc.stdout[-4000:]))
            time.sleep(3)
        session.times.append((time.monotonic() - started, b.where()))
        ran += 1
    return ran


def _env():
    env = {k: v for k, v in os.environ.items() if k not in _PROXIES}
    env["no_proxy"] = env["NO_PROXY"] = "127.0.0.1,localhost"
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
    env.pop("BOINC_PROJECT_DIR", None)
    return env


def make_substitution(mapping, client_cmd=None):
    """A function replacing the documents' names (longest first) in a text."""
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(k) for k in keys))

    def subst(text, commands=True):
        text = pattern.sub(lambda m: mapping[m.group(0)], text)
        if commands and client_cmd:
            text = re.sub(r"(?<![\w/-])boinccmd(?= )", client_cmd, text)
        return text
    return subst


@pytest.mark.slow
def test_readme_commands(tmp_path):
    """README.md's runnable blocks run from the source tree."""
    doc = read_doc(README)
    subst = make_substitution({"/opt/boincpy": REPO})
    session = Session(REPO, subst, _env(), str(tmp_path))
    assert run_doc(doc, session) >= 1


@pytest.fixture
def guide_env():
    """Names for the guide's walk-through, a stock client, and the cleanup."""
    pytest.importorskip("MySQLdb")
    if os.geteuid() != 0:
        pytest.skip("the guide runs as root (Apache's children as www-data)")
    for program in ("boinc", "boinccmd", "apache2", "mysql", "curl", "g++"):
        if not shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin"):
            pytest.skip("%s is not installed (tools/setup_system.sh)" % program)
    from boincpy.testing.client import StockClient
    from boincpy.tools.httpd import PrivateApache, free_port
    os.makedirs(TEST_BASE, exist_ok=True)
    os.chmod(TEST_BASE, 0o755)
    short = "dt" + secrets.token_hex(4)
    base = os.path.join(TEST_BASE, "guide-" + short)
    os.makedirs(os.path.join(base, "tmp"))
    os.chmod(base, 0o755)
    root = os.path.join(base, short)
    port = free_port()
    from hosts_util import Host, can_unshare, write_ssh_exec
    if not can_unshare():
        pytest.skip("the guide's other hosts need namespaces (unshare, as root)")
    hosts_dir = os.path.join(base, "hosts")
    os.makedirs(hosts_dir)
    write_ssh_exec(os.path.join(hosts_dir, "ssh"), hosts_dir)
    hosts = [Host(name, os.path.join(hosts_dir, name + ".pid")) for name in GUIDE_HOSTS]
    client = StockClient()
    client.start()
    client_cmd = "boinccmd --host 127.0.0.1:%d --passwd %s" % (client.port, client.gui_password)
    mapping = {"/opt/boincpy": REPO, "/srv/boincpy/myproj": root,
               "127.0.0.1:8080": "127.0.0.1:%d" % port, "127.0.0.2:8080": "127.0.0.2:%d" % port,
               "myproj": short, "/tmp/": os.path.join(base, "tmp") + "/"}
    assert set(mapping) == set(PLACEHOLDERS)
    try:
        yield {"base": base, "root": root, "short": short, "port": port,
               "subst": make_substitution(mapping, client_cmd), "client": client,
               "path": hosts_dir}
    finally:
        client.close()
        if os.path.exists(os.path.join(root, "config.xml")):
            subprocess.run([os.path.join(root, "bin", "stop"), "-q", "--stop-timeout=10"],
                           cwd=root, capture_output=True, timeout=60,
                           env=dict(os.environ, PATH=hosts_dir + ":" + os.environ["PATH"]))
            PrivateApache(root).stop()
            PrivateApache(root, run_dir=os.path.join(root, "httpd_web2")).stop()
        for host in hosts:
            host.close()
        drop_db_and_user(root_db_params(), short, short)
        conn = MySQLdb.connect(**root_db_params())
        try:
            conn.cursor().execute("DROP USER IF EXISTS %s@'%%'", (short + "_ro",))
        finally:
            conn.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_operator_guide_walkthrough(guide_env):
    """The guide's blocks, in order: create the project, add the example app,
    submit jobs, run the daemons, a stock client runs the jobs, troubleshoot,
    stop and remove the project."""
    doc = read_doc(GUIDE)
    env = _env()
    env["PATH"] = guide_env["path"] + ":" + env["PATH"]      # ssh to the emulated hosts
    session = Session(guide_env["base"], guide_env["subst"], env,
                      os.path.join(guide_env["base"], "tmp"))
    ran = run_doc(doc, session)
    print("slowest blocks:", ", ".join("%s %.1fs" % (w, t) for t, w in
                                       sorted(session.times, reverse=True)[:5]))
    assert ran >= 20
    # The last blocks removed the project: directory, database and user are gone.
    assert not os.path.exists(guide_env["root"])
    conn = MySQLdb.connect(**root_db_params())
    try:
        cur = conn.cursor()
        cur.execute("SHOW DATABASES LIKE %s", (guide_env["short"],))
        assert cur.fetchone() is None
        cur.execute("SELECT COUNT(*) FROM mysql.user WHERE User IN (%s, %s)",
                    (guide_env["short"], guide_env["short"] + "_ro"))
        assert cur.fetchone()[0] == 0
    finally:
        conn.close()
