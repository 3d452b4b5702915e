"""Input (workunit) and output (result) templates.

Input templates are parsed once into an ``InputTemplate`` and then applied to
any number of jobs (``create_work --stdin`` makes thousands per second), so
``process_input_template`` only joins precomputed text with the per-job file
names, checksums and command line.  The text it produces is byte-for-byte what
BOINC's ``tools/process_input_template.cpp`` writes into ``workunit.xml_doc``:

* each ``<file_info>`` becomes ``<file_info>\\n`` + the template's other
  elements (``<sticky/>``, ``<no_delete/>``...) one per line + ``    <name>``,
  ``    <url>`` [``    <gzipped_url>``, ``    <gzipped_nbytes>``],
  ``    <md5_cksum>``, ``    <nbytes>`` (``%.0f``) + ``</file_info>\\n``;
* the ``<workunit>`` becomes ``<workunit>\\n<command_line>\\nCMD\\n</command_line>\\n``
  + one ``<file_ref>`` per input file + copied elements + additional XML +
  ``</workunit>``; the ``rsc_*``, ``delay_bound``, replication, ``batch`` and
  ``size_class`` values go to database columns, not into the XML.

Template values win over create_work's options (BOINC applies the options
first and lets the template overwrite them).

The XML scanner mirrors BOINC's lenient tokenizer (``lib/parse.cpp``):
attributes are dropped, copied elements are ``<tag>`` + stripped raw contents +
``</tag>``, text values are stripped and entity-decoded; but unlike BOINC it
reports unbalanced or unterminated markup with the file and line.
"""

import os
import random
import re
import shutil
import sys
from dataclasses import dataclass, field

from boincpy import crypto
from boincpy.cnum import atof, strtod, strtol
from boincpy.errors import TemplateError
from boincpy.files import check_file_name, dir_hier_path, dir_hier_url, job_file_name, md5_file
from boincpy.xml import xml_unescape
from boincpy.xml.scan import LineCounter

BLOB_SIZE = 65536  # xml_doc / xml_doc_in are BLOBs; BOINC keeps <= 65535 bytes

# create_work's defaults when neither options nor template set a value
# (sched/sched_util.h / tools/create_work.cpp).
DEFAULT_WU_VALUES = {
    "min_quorum": 1,
    "target_nresults": 1,
    "max_error_results": 1,
    "max_total_results": 1,
    "max_success_results": 1,
    "rsc_fpops_est": 3.6e12,
    "rsc_fpops_bound": 8.64e13,
    "rsc_memory_bound": 5e8,
    "rsc_disk_bound": 1e9,
    "rsc_bandwidth_bound": 0.0,
    "delay_bound": 604800,
}

# <workunit> children that become DB columns (name -> converter kind).
_WU_DOUBLES = ("rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound",
               "rsc_bandwidth_bound", "rsc_disk_bound")
_WU_INTS = ("batch", "delay_bound", "min_quorum", "target_nresults",
            "max_error_results", "max_total_results", "max_success_results",
            "size_class")

_WS = " \t\n\r\v\f"

# <file_info> elements of an input file that are the server's to write: what
# BOINC's process_input_template.cpp writes (name, url, gzipped_url,
# md5_cksum, nbytes, gzipped_nbytes), what the client reads in their place
# (download_url, upload_url) and the signatures only the project makes.  A
# template's own are never copied after the server's: the file deleter would
# read the first <name>, the client the last.
SERVER_FILE_INFO_TAGS = frozenset((
    "name", "url", "download_url", "upload_url", "gzipped_url", "md5_cksum", "nbytes",
    "gzipped_nbytes", "xml_signature", "file_signature", "signatures"))

# The <file_info> elements of an output template that tell the client where
# to send the file.
_OUTPUT_URL_TAGS = ("url", "upload_url", "download_url", "gzipped_url")


# ---------------------------------------------------------------------------
# A small BOINC-compatible XML scanner.

@dataclass
class Node:
    """One element: ``tag`` without attributes; ``empty`` for ``<tag/>``;
    ``inner`` the raw text between start and end tag; ``line`` 1-based."""
    tag: str
    line: int
    empty: bool = False
    inner: str = ""
    children: list = field(default_factory=list)
    has_cdata: bool = False
    cdata: str = ""

    def raw_text(self):
        """The text of a leaf element as BOINC's parse_str returns it."""
        if self.has_cdata:
            return self.cdata
        return xml_unescape(self.inner.strip(_WS))

    def copy_text(self):
        """The element as XML_PARSER::copy_element reproduces it."""
        if self.empty:
            return "<%s/>" % self.tag
        return "<%s>%s</%s>" % (self.tag, self.inner.strip(_WS), self.tag)




def parse_xml(text, path):
    """Parse ``text`` into a synthetic root Node whose children are the
    top-level elements.  Raises TemplateError naming ``path`` and the line
    for unterminated or unbalanced markup."""
    root = Node("", 0)
    stack = [(root, 0)]  # (node, offset just after its start tag)
    i = 0

    line_of = LineCounter(text).at

    while True:
        j = text.find("<", i)
        if j < 0:
            break
        if text.startswith("<!--", j):
            k = text.find("-->", j + 4)
            if k < 0:
                raise TemplateError("%s line %d: unterminated comment" % (path, line_of(j)))
            i = k + 3
            continue
        if text.startswith("<![CDATA[", j):
            k = text.find("]]>", j + 9)
            if k < 0:
                raise TemplateError("%s line %d: unterminated CDATA section"
                                    % (path, line_of(j)))
            node = stack[-1][0]
            node.has_cdata = True
            node.cdata += text[j + 9:k]
            i = k + 3
            continue
        k = text.find(">", j + 1)
        if k < 0:
            raise TemplateError("%s line %d: unterminated tag" % (path, line_of(j)))
        body = text[j + 1:k]
        i = k + 1
        if body.startswith("?") or body.startswith("!"):
            continue  # <?xml ...?>, <!DOCTYPE ...>
        if "<" in body:
            raise TemplateError("%s line %d: '<' inside a tag" % (path, line_of(j)))
        if body.startswith("/"):
            name = body[1:].strip(_WS)
            node, start = stack[-1]
            if len(stack) == 1:
                raise TemplateError("%s line %d: unexpected end tag </%s>"
                                    % (path, line_of(j), name))
            if name != node.tag:
                raise TemplateError("%s line %d: end tag </%s> does not match <%s> (line %d)"
                                    % (path, line_of(j), name, node.tag, node.line))
            node.inner = text[start:j]
            stack.pop()
            continue
        empty = body.endswith("/")
        if empty:
            body = body[:-1]
        parts = body.split(None, 1)
        if not parts:
            raise TemplateError("%s line %d: empty tag" % (path, line_of(j)))
        tag = parts[0]
        if empty and len(parts) == 1 and tag.endswith("/"):
            tag = tag[:-1]
        node = Node(tag, line_of(j), empty=empty)
        stack[-1][0].children.append(node)
        if not empty:
            stack.append((node, i))
    if len(stack) > 1:
        node = stack[-1][0]
        raise TemplateError("%s line %d: <%s> is never closed" % (path, node.line, node.tag))
    root.inner = text
    return root


def _leaf_value(node, kind, path):
    """The value of <tag>V</tag> as BOINC's parse_int/parse_double read it."""
    if node.children:
        raise TemplateError("%s line %d: <%s> must hold a value, not elements"
                            % (path, node.line, node.tag))
    text = node.raw_text().strip(_WS)
    if text == "":
        return 0 if kind == "int" else 0.0  # <foo></foo> means 0
    value = strtol(text) if kind == "int" else strtod(text)
    if value is None:
        raise TemplateError("%s line %d: <%s>: %r is not a %snumber"
                            % (path, node.line, node.tag, text,
                               "finite " if kind != "int" else ""))
    return value


# ---------------------------------------------------------------------------
# Input templates.

@dataclass
class InputFile:
    """An input file of one job: a staged file name, or a remote file
    (``--remote_file URL NBYTES MD5``, named ``jf_<md5>``)."""
    name: str = ""
    is_remote: bool = False
    url: str = ""
    nbytes: float = 0.0
    md5: str = ""


@dataclass
class FileInfoSpec:
    """One <file_info> of an input template."""
    line: int
    extras: str = ""           # copied elements, each followed by "\n"
    gzip: bool = False
    physical_name: str = ""    # constant file
    urls: list = field(default_factory=list)
    md5_cksum: str = ""
    nbytes: float = -1.0       # > 0: file described by the template (remote)
    gzipped_nbytes: float = 0.0


@dataclass
class WorkunitSpec:
    """The <workunit> of an input template, precompiled.

    ``parts`` is a list of strings and ints: an int k stands for the k-th
    input file's ``    <file_name>..</file_name>\\n`` line, ``-k-1`` for the
    ``    <open_name>NAME</open_name>\\n`` line of a copy_file ref without
    open_name."""
    line: int
    parts: list = field(default_factory=list)
    n_file_refs: int = 0
    has_command_line: bool = False
    template_command_line: str = ""


@dataclass
class InputTemplate:
    """A parsed input template; reusable for any number of jobs."""
    path: str
    text: str
    items: list                 # FileInfoSpec / WorkunitSpec in template order
    values: dict                # DB columns set by the template (template wins)
    n_file_infos: int
    n_var_files: int            # file_infos that take a create_work input file

    def __post_init__(self):
        self._const_cache = {}

    @property
    def file_infos(self):
        return [x for x in self.items if isinstance(x, FileInfoSpec)]


def load_input_template(path):
    """Read and parse the input template file at ``path``."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as exc:
        raise TemplateError("can't read input template %s: %s" % (path, exc.strerror)) from None
    return parse_input_template(text, path)


def parse_input_template(text, path="<input template>", submitted=False):
    """Parse an input template (see the module docstring); TemplateError
    naming ``path`` (and the line) when it is malformed, FileNameError for a
    <physical_name> that can't be a file name.

    ``submitted``: the template came with a remote submission, so a
    <file_info> that sets a field the server writes (SERVER_FILE_INFO_TAGS)
    is refused; in an operator's template those the server doesn't read as
    create_work's instructions (<name>, <download_url> ...) are dropped."""
    root = parse_xml(text, path)
    items = []
    values = {}
    n_infos = 0
    n_var = 0
    found_workunit = False
    # BOINC's loop looks at every start tag at any depth below <input_template>
    # that is a direct target; in practice they are children of the root element.
    tops = []
    for node in root.children:
        if node.tag == "input_template" and not node.empty:
            tops.extend(node.children)
        else:
            tops.append(node)
    for node in tops:
        if node.tag == "file_info" and not node.empty:
            spec = _parse_file_info(node, path, submitted)
            items.append(spec)
            n_infos += 1
            if not spec.physical_name:
                n_var += 1
        elif node.tag == "workunit" and not node.empty:
            found_workunit = True
            items.append(_parse_workunit(node, path, n_infos, values))
    if not found_workunit:
        raise TemplateError("%s: bad input template - no <workunit>" % path)
    return InputTemplate(path=path, text=text, items=items, values=values,
                         n_file_infos=n_infos, n_var_files=n_var)


def _parse_file_info(node, path, submitted=False):
    spec = FileInfoSpec(line=node.line)
    extras = []
    for child in node.children:
        tag = child.tag
        if submitted and tag in SERVER_FILE_INFO_TAGS:
            if tag == "name" and not child.empty:
                check_file_name(child.raw_text(), "%s: file_info name" % path)
            raise TemplateError("%s line %d: <file_info> may not set <%s>: the server "
                                "writes it" % (path, child.line, tag))
        if tag == "gzip":
            spec.gzip = True if child.empty else bool(_leaf_value(child, "int", path))
        elif tag == "physical_name":
            spec.physical_name = "" if child.empty else check_file_name(
                child.raw_text(), "%s: file_info physical_name" % path)
        elif tag == "url":
            spec.urls.append("" if child.empty else child.raw_text())
        elif tag == "number":
            if not child.empty:
                _leaf_value(child, "int", path)  # read but ignored, as in BOINC
            else:
                extras.append(child.copy_text() + "\n")
        elif tag == "md5_cksum":
            spec.md5_cksum = "" if child.empty else child.raw_text()
        elif tag in ("nbytes", "gzipped_nbytes") and not child.empty:
            setattr(spec, tag, _leaf_value(child, "double", path))
        elif tag in SERVER_FILE_INFO_TAGS:
            pass        # the server writes its own (see SERVER_FILE_INFO_TAGS)
        else:
            extras.append(child.copy_text() + "\n")
    spec.extras = "".join(extras)
    if not spec.physical_name and spec.nbytes > 0:
        if not spec.md5_cksum or not spec.urls:
            raise TemplateError(
                "%s line %d: all file properties must be defined if at least one "
                "is defined (url, md5_cksum, nbytes)" % (path, node.line))
        if spec.gzip and not spec.gzipped_nbytes:
            raise TemplateError("%s line %d: must specify gzipped_nbytes"
                                % (path, node.line))
    return spec


def _parse_workunit(node, path, n_infos, values):
    spec = WorkunitSpec(line=node.line)
    parts = []
    for child in node.children:
        tag = child.tag
        if tag == "file_ref" and not child.empty:
            k = spec.n_file_refs
            if k >= n_infos:
                raise TemplateError("%s line %d: too many <file_ref>s" % (path, child.line))
            parts.append("<file_ref>\n")
            parts.append(k)
            found_open = found_copy = False
            for ref in child.children:
                if ref.tag == "open_name":
                    parts.append("    <open_name>%s</open_name>\n"
                                 % ("" if ref.empty else ref.raw_text()))
                    found_open = True
                elif ref.tag == "file_number" and not ref.empty:
                    _leaf_value(ref, "int", path)  # ignored: refs are positional
                elif ref.tag == "copy_file" and ref.empty:
                    parts.append("    <copy_file/>\n")
                    found_copy = True
                elif ref.tag == "file_name":
                    pass  # BOINC ignores <file_name> in a <file_ref>
                else:
                    parts.append(ref.copy_text() + "\n")
            if not found_open:
                if not found_copy:
                    raise TemplateError(
                        "%s line %d: <file_ref> has no <open_name> and no <copy_file/>"
                        % (path, child.line))
                parts.append(-k - 1)
            parts.append("</file_ref>\n")
            spec.n_file_refs += 1
        elif tag == "command_line":
            cmd = "" if child.empty else child.raw_text()
            spec.has_command_line = True
            spec.template_command_line = cmd
            parts.append("<command_line>\n%s\n</command_line>\n" % cmd)
        elif tag in _WU_DOUBLES and not child.empty:
            values[tag] = _leaf_value(child, "double", path)
        elif tag in _WU_INTS and not child.empty:
            values[tag] = _leaf_value(child, "int", path)
        else:
            parts.append(child.copy_text() + "\n")
    if spec.n_file_refs != n_infos:
        raise TemplateError("%s line %d: #file refs != #file infos (%d <file_ref>s, %d <file_info>s)"
                            % (path, node.line, spec.n_file_refs, n_infos))
    # merge adjacent constant strings so a job joins as few pieces as possible
    merged = []
    for p in parts:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    spec.parts = merged
    return spec


class FileInfoCache:
    """Per-run cache of what a staged input file contributes (MD5, size,
    gzip size), so a file used by many jobs is looked at once."""

    def __init__(self, cfg, log=None):
        self.cfg = cfg
        self.log = log
        self._info = {}

    def local_file(self, name, gzip=False):
        """(md5, nbytes, gzipped_nbytes or None, url) of a staged file, staging
        it from the top of download_dir if needed (as BOINC does)."""
        key = (name, gzip)
        hit = self._info.get(key)
        if hit is not None:
            return hit
        cfg = self.cfg
        check_file_name(name, "input file")
        fanout = cfg.uldl_dir_fanout
        path = dir_hier_path(cfg.download_dir, name, fanout, create=True)
        if not os.path.exists(path):
            top = os.path.join(cfg.download_dir, name)
            if fanout and os.path.isfile(top):
                _copy_file(top, path)
                print("copy %s to %s" % (top, path))
            else:
                raise TemplateError(
                    "input file %s not found: no %s%s" % (
                        name, path, "" if not fanout else " and no %s" % top))
        got = read_md5_info(path) if cfg.cache_md5_info else None
        if got is None:
            try:
                md5, nbytes = md5_file(path)
            except OSError as exc:
                raise TemplateError("can't read input file %s: %s" % (path, exc.strerror)) from None
            if cfg.cache_md5_info:
                write_md5_info(path, md5, nbytes)
        else:
            md5, nbytes = got
        gz = None
        if gzip:
            try:
                gz = os.path.getsize(path + ".gz")
            except OSError:
                raise TemplateError("missing gzip file %s.gz (stage the file with --gzip)"
                                    % path) from None
        url = dir_hier_url(cfg.download_url, name, fanout)
        hit = (md5, float(nbytes), gz, url)
        self._info[key] = hit
        return hit

    def constant_file(self, name):
        """(md5, nbytes, url) of a constant file (<physical_name>); its .md5 file must exist."""
        key = ("\0const", name)
        hit = self._info.get(key)
        if hit is not None:
            return hit
        cfg = self.cfg
        path = dir_hier_path(cfg.download_dir, name, cfg.uldl_dir_fanout, create=True)
        got = read_md5_info(path)
        if got is None:
            raise TemplateError("missing MD5 info file for %s (%s.md5)" % (name, path))
        hit = (got[0], got[1], dir_hier_url(cfg.download_url, name, cfg.uldl_dir_fanout))
        self._info[key] = hit
        return hit


def _copy_file(src, dst):
    tmp = dst + ".tmp_%d" % os.getpid()
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


_MD5_LINE = re.compile(r"(\S+) ([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\n\Z")


def read_md5_info(path):
    """(md5, nbytes) from PATH.md5 as BOINC's got_md5_info reads it, or None.

    The file must be exactly ``"<md5> <number>\\n"``; one older than the data
    file, or (unlike BOINC, which compares times only) giving another size
    than the file has, is deleted and ignored: a file replaced with its old
    modification time kept (``cp -p``) would otherwise keep a wrong checksum
    and every client would fail to download it."""
    md5name = path + ".md5"
    try:
        st_file = os.stat(path)
        st_md5 = os.stat(md5name)
        with open(md5name) as f:
            data = f.read(4096)
    except OSError:
        return None
    m = _MD5_LINE.match(data)
    if not m:
        print("bad MD5 cache file %s; remove it and stage file again" % md5name,
              file=sys.stderr)
        return None
    if int(st_md5.st_mtime) < int(st_file.st_mtime) or float(m.group(2)) != st_file.st_size:
        try:
            os.unlink(md5name)
        except OSError:
            pass
        return None
    return m.group(1), float(m.group(2))


def write_md5_info(path, md5, nbytes):
    """Write PATH.md5 in create_work's format ``"%s %.15e\\n"`` unless it exists."""
    md5name = path + ".md5"
    if os.path.exists(md5name):
        return
    try:
        with open(md5name, "w") as f:
            f.write("%s %.15e\n" % (md5, nbytes))
    except OSError:
        try:
            os.unlink(md5name)
        except OSError:
            pass


def process_input_template(template, infiles, cfg, command_line="",
                           additional_xml="", cache=None):
    """The workunit's xml_doc for one job.

    ``infiles``: list of InputFile (or plain names) for the template's
    non-constant <file_info>s, in order.  ``command_line`` None means no
    leading <command_line> element (BOINC's NULL); create_work always passes
    a string.  ``cache``: a FileInfoCache shared by the jobs of one run.
    Raises TemplateError naming the template file.
    """
    if cache is None:
        cache = FileInfoCache(cfg)
    path = template.path
    n_given = len(infiles)
    if n_given != template.n_var_files:
        raise TemplateError("%s: %d input files given, but template has %d"
                            % (path, n_given, template.n_var_files))
    out = []
    names = []          # all files in template order (file_refs refer to these)
    var_index = 0
    for item in template.items:
        if isinstance(item, FileInfoSpec):
            name, body = _file_info_body(item, infiles, var_index, cache, path)
            if not item.physical_name:
                var_index += 1
            names.append(name)
            out.append("<file_info>\n")
            if item.extras:
                out.append(item.extras)
            out.append(body)
            continue
        # WorkunitSpec
        if item.has_command_line and command_line:
            raise TemplateError(
                "%s: can't specify command line %s; already specified as %s"
                % (path, item.template_command_line, command_line))
        if item.n_file_refs > len(names):
            raise TemplateError("%s: too many <file_ref>s" % path)
        out.append("<workunit>\n")
        if command_line is not None:
            out.append("<command_line>\n%s\n</command_line>\n" % command_line)
        for p in item.parts:
            if p.__class__ is str:
                out.append(p)
            elif p >= 0:
                out.append("    <file_name>%s</file_name>\n" % names[p])
            else:
                out.append("    <open_name>%s</open_name>\n" % names[-p - 1])
        if additional_xml:
            out.append(additional_xml)
            out.append("\n")
        out.append("</workunit>")
    doc = "".join(out)
    if len(doc) > BLOB_SIZE - 1 and len(doc.encode()) > BLOB_SIZE - 1:
        raise TemplateError("%s: workunit XML is too long (%d bytes; max is %d)"
                            % (path, len(doc.encode()), BLOB_SIZE - 1))
    return doc


def _file_info_body(item, infiles, var_index, cache, path):
    """(file name, text after the copied extras) of one <file_info>."""
    if item.physical_name:
        name = item.physical_name
        md5, nbytes, url = cache.constant_file(name)
        return name, ("    <name>%s</name>\n    <url>%s</url>\n"
                      "    <md5_cksum>%s</md5_cksum>\n    <nbytes>%.0f</nbytes>\n"
                      "</file_info>\n" % (name, url, md5, nbytes))
    f = infiles[var_index]
    if f.__class__ is str:
        f = InputFile(name=f)
    if item.nbytes > 0:
        # file described by the template (already staged, possibly remotely)
        name = check_file_name(f.name, "input file")
        urls = []
        for u in item.urls:
            urls.append("    <url>%s%s</url>\n" % (u, name))
            if item.gzip:
                urls.append("    <gzipped_url>%s%s.gz</gzipped_url>\n" % (u, name))
        text = ("    <name>%s</name>\n%s    <md5_cksum>%s</md5_cksum>\n"
                "    <nbytes>%.0f</nbytes>\n" % (name, "".join(urls), item.md5_cksum,
                                                item.nbytes))
        if item.gzip:
            text += "    <gzipped_nbytes>%.0f</gzipped_nbytes>\n" % item.gzipped_nbytes
        return name, text + "</file_info>\n"
    if f.is_remote:
        name = check_file_name(job_file_name(f.md5), "remote file name")
        return name, ("    <name>%s</name>\n    <url>%s</url>\n"
                      "    <md5_cksum>%s</md5_cksum>\n    <nbytes>%.0f</nbytes>\n"
                      "</file_info>\n" % (name, f.url, f.md5, f.nbytes))
    name = f.name
    md5, nbytes, gz, url = cache.local_file(name, item.gzip)
    gz_text = ("    <gzipped_url>%s.gz</gzipped_url>\n    <gzipped_nbytes>%.0f</gzipped_nbytes>\n"
               % (url, gz)) if item.gzip else ""
    return name, ("    <name>%s</name>\n    <url>%s</url>\n%s"
                  "    <md5_cksum>%s</md5_cksum>\n    <nbytes>%.0f</nbytes>\n"
                  "</file_info>\n" % (name, url, gz_text, md5, nbytes))


def workunit_values(template, options=None):
    """DB column values of a job: BOINC's defaults, then ``options`` (from
    create_work's command line), then the template's values, then
    max_success/max_total raised to target_nresults if smaller."""
    values = dict(DEFAULT_WU_VALUES)
    if options:
        values.update(options)
    values.update(template.values)
    t = values["target_nresults"]
    if t > values["max_success_results"]:
        values["max_success_results"] = t
    if t > values["max_total_results"]:
        values["max_total_results"] = t
    return values


def check_workunit_values(values, where=""):
    """Raise TemplateError for values create_work refuses (backend_lib.cpp)."""
    prefix = where + ": " if where else ""
    for name in ("rsc_fpops_est", "rsc_fpops_bound", "rsc_disk_bound", "target_nresults",
                 "max_error_results", "max_total_results", "max_success_results"):
        if not values.get(name):
            raise TemplateError("%sno %s given; can't create job" % (prefix, name))
    if values["max_success_results"] > values["max_total_results"]:
        raise TemplateError("%smax_success_results > max_total_results; can't create job"
                            % prefix)
    if values["max_error_results"] > values["max_total_results"]:
        raise TemplateError("%smax_error_results > max_total_results; can't create job"
                            % prefix)
    if values["target_nresults"] > values["max_success_results"]:
        raise TemplateError("%starget_nresults %d > max_success_results %d; can't create job"
                            % (prefix, values["target_nresults"],
                               values["max_success_results"]))


# ---------------------------------------------------------------------------
# Output templates.

OUTFILE_MACRO = "<OUTFILE_"
UPLOAD_URL_MACRO = "<UPLOAD_URL/>"


@dataclass
class OutputTemplate:
    """A validated output template: the names (macro text) and max_nbytes of
    its file_infos and the open names of its <result>'s file_refs."""
    path: str
    text: str
    files: list           # [(name text, max_nbytes)]
    file_refs: list       # [(file_name text, open_name)]


def load_output_template(path, check_file_info_newline=True):
    """Read and validate the output template file at ``path``."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as exc:
        raise TemplateError("can't read result template %s: %s" % (path, exc.strerror)) from None
    return parse_output_template(text, path, check_file_info_newline=check_file_info_newline)


def parse_output_template(text, path="<output template>", check_file_info_newline=True,
                          upload_urls=None):
    """Validate an output (result) template.

    Every <file_info> needs exactly one <name>, a file name once its macros
    are replaced (FileNameError if not), and <max_nbytes> (the client treats a
    missing limit as 0 and fails every output; the upload certificate signs
    both); with ``upload_urls`` (a submitted template), each URL it gives
    must be ``<UPLOAD_URL/>`` or one of ``upload_urls``; <result> must exist and be followed directly by a newline (the
    scheduler inserts text after the literal ``<result>\\n``); with
    ``check_file_info_newline`` each ``<file_info>`` must be followed by a
    newline, since upload certificates are only added to those.
    """
    root = parse_xml(text, path)
    tops = []
    for node in root.children:
        if node.tag == "output_template" and not node.empty:
            tops.extend(node.children)
        else:
            tops.append(node)
    files = []
    refs = []
    result = None
    for node in tops:
        if node.tag == "file_info":
            name = max_nbytes = None
            for child in node.children:
                if child.tag == "name":
                    if name is not None:
                        raise TemplateError("%s line %d: <file_info> has more than one <name>"
                                            % (path, child.line))
                    name = "" if child.empty else child.inner.strip(_WS)
                elif child.tag == "max_nbytes" and not child.empty:
                    max_nbytes = atof(xml_unescape(child.inner))
                elif child.tag in _OUTPUT_URL_TAGS and upload_urls is not None:
                    _check_upload_url(child, upload_urls, path)
            if not name:
                raise TemplateError("%s line %d: <file_info> has no <name>" % (path, node.line))
            _check_output_name(name, "%s: file_info name" % path, path)
            if max_nbytes is None:
                raise TemplateError("%s line %d: <file_info> has no <max_nbytes>"
                                    % (path, node.line))
            files.append((name, max_nbytes))
        elif node.tag == "result":
            if result is not None:
                raise TemplateError("%s line %d: more than one <result>" % (path, node.line))
            result = node
            for ref in node.children:
                if ref.tag == "file_ref":
                    fname = oname = ""
                    for c in ref.children:
                        if c.tag == "file_name":
                            fname = c.inner.strip(_WS)
                            _check_output_name(fname, "%s: file_ref file_name" % path, path)
                        elif c.tag == "open_name":
                            oname = c.raw_text()
                    refs.append((fname, oname))
    if result is None:
        raise TemplateError("%s: no <result> element" % path)
    for m in re.finditer(r"<result>", text):
        if not text.startswith("<result>\n", m.start()):
            raise TemplateError("%s line %d: <result> must be followed by a newline"
                                % (path, text.count("\n", 0, m.start()) + 1))
    if result.empty:
        raise TemplateError("%s line %d: <result> must be followed by a newline"
                            % (path, result.line))
    if check_file_info_newline:
        for m in re.finditer(r"<file_info>", text):
            if not text.startswith("<file_info>\n", m.start()):
                raise TemplateError(
                    "%s line %d: <file_info> must be followed by a newline "
                    "(no upload certificate would be added)"
                    % (path, text.count("\n", 0, m.start()) + 1))
    return OutputTemplate(path=path, text=text, files=files, file_refs=refs)


def _check_output_name(raw, field, path):
    """An output file's <name> (or <file_name>) as written in a template must
    be a file name once the scheduler has replaced its macros; ``<OUTFILE_n/>``
    stands for a result's name, itself a file name."""
    check_file_name(xml_unescape(_substitute_macros(raw, "r_", "", path)), field)


def _check_upload_url(node, upload_urls, path):
    """A URL of a submitted output template's <file_info>: the project's
    upload handler (``<UPLOAD_URL/>``, or one of ``upload_urls``) and no other,
    so a submitter can't send volunteers' results to a host of their choosing."""
    raw = "" if node.empty else node.inner.strip(_WS)
    if raw == UPLOAD_URL_MACRO or (raw and xml_unescape(raw) in upload_urls):
        return
    raise TemplateError("%s line %d: file_info %s '%s' is not this project's upload URL "
                        "(use <UPLOAD_URL/>)" % (path, node.line, node.tag, raw))


def _substitute_macros(text, base, upload_url, path):
    out = []
    i = 0
    while True:
        p = text.find(OUTFILE_MACRO, i)
        if p < 0:
            break
        q = p + len(OUTFILE_MACRO)
        end = text.find("/>", q)
        if end < 0 or text.find(">", q) != end + 1:
            raise TemplateError("%s: malformed <OUTFILE_n/> macro" % path)
        out.append(text[i:p])
        out.append(base)
        out.append(text[q:end])
        i = end + 2
    out.append(text[i:])
    text = "".join(out)
    if UPLOAD_URL_MACRO in text:
        text = text.replace(UPLOAD_URL_MACRO, upload_url)
    return text


def add_upload_certificates(xml, key, path="<result template>"):
    """Insert an <xml_signature> at the end of every <file_info> that starts
    with ``<file_info>\\n`` (BOINC's add_signatures)."""
    out = []
    i = 0
    start_tag = "<file_info>\n"
    while True:
        p = xml.find(start_tag, i)
        if p < 0:
            break
        q1 = p + len(start_tag)
        q2 = xml.find("</file_info>", q1)
        if q2 < 0:
            raise TemplateError("%s: malformed XML: <file_info> without </file_info>" % path)
        body = xml[q1:q2]
        m = re.search(r"<name[^>]*>([^<]*)<", body)
        if not m:
            raise TemplateError("%s: <file_info> has no <name>" % path)
        name = xml_unescape(m.group(1).strip(_WS))
        k = body.find("<max_nbytes>")
        if k < 0:
            raise TemplateError("%s: <file_info> %s has no <max_nbytes>" % (path, name))
        max_nbytes = atof(body[k + len("<max_nbytes>"):])
        sig = crypto.sign_upload_certificate(name, max_nbytes, key)
        out.append(xml[i:q1])
        out.append(body)
        out.append("<xml_signature>\n%s</xml_signature>\n" % sig)
        i = q2
    out.append(xml[i:])
    return "".join(out)


def process_result_template(template_text, result_name, cfg, upload_private_key=None,
                            rand=None, path="<result template>"):
    """A result's xml_doc_in from its output template (BOINC's
    process_result_template): ``<OUTFILE_n/>`` -> ``RESULT_r<rand>_n``,
    ``<UPLOAD_URL/>`` -> cfg.upload_url, upload certificates unless
    cfg.dont_generate_upload_certificates (key: ``upload_private_key`` or
    KEY_DIR/upload_private), enclosing <output_template> removed, trimmed.

    ``rand``: the random part of output file names (lrand48-like when None).
    """
    if rand is None:
        rand = random.getrandbits(31)
    base = "%s_r%d_" % (result_name, rand)
    text = _substitute_macros(template_text, base, cfg.upload_url, path)
    if not getattr(cfg, "dont_generate_upload_certificates", False):
        key = upload_private_key
        if key is None:
            key = crypto.read_key(os.path.join(cfg.key_dir, "upload_private"))
        text = add_upload_certificates(text, key, path)
    p = text.find("<output_template>")
    if p >= 0:
        text = text[p + len("<output_template>"):]
        q = text.find("</output_template>")
        if q >= 0:
            text = text[:q]
    text = text.strip(_WS)
    if len(text.encode()) > BLOB_SIZE - 1:
        raise TemplateError("%s: result XML doc is too long: %d bytes, max is %d"
                            % (path, len(text.encode()), BLOB_SIZE - 1))
    return text
