"""Where a job's files are: input files of a workunit, output files of a result.

The back end finds files from the XML stored with each row, as BOINC does:

* a result's output files are the ``<file_ref>``s of ``result.xml_doc_in``
  (``<file_name>`` is the physical name under ``upload_dir``'s fan-out,
  ``<open_name>`` the logical name; ``<optional/>`` and ``<no_validate/>``
  flags) -- what validators and assimilators read;
* a row's deletable files are the ``<file_info>``s of ``workunit.xml_doc``
  (under ``download_dir``) or ``result.xml_doc_in`` (under ``upload_dir``),
  with ``<no_delete/>`` and ``<sticky/>`` flags -- what the file deleter reads.

The scanning is lenient like BOINC's XML_PARSER (a regular expression per
element, no well-formedness required), because these documents come from
templates and old servers, not from this code.
"""

import os

from boincpy.errors import BoincpyError
from boincpy.files import dir_hier_path, file_name_fault
from boincpy.record import Record
from boincpy.xml import xml_unescape
from boincpy.xml.scan import block, blocks, flag

# lib/error_numbers.h values the back end returns or interprets.
ERR_FOPEN = -108
ERR_UNLINK = -110
ERR_OPENDIR = -111
ERR_XML_PARSE = -112
ERR_NOT_FOUND = -161

_WS = " \t\n\r\v\f"


def _text(body, tag):
    """Stripped, entity-decoded text of ``<tag>..</tag>`` in ``body`` ("" if absent)."""
    inner = block(body, tag)
    return "" if inner is None else xml_unescape(inner.strip(_WS))


class OutputFileInfo(Record):
    """One output file of a result (BOINC's OUTPUT_FILE_INFO)."""

    FIELDS = (("phys_name", ""), ("logical_name", ""), ("path", ""), ("optional", False),
              ("no_validate", False))


class OutputFilesError(BoincpyError):
    """A result's xml_doc_in has a ``<file_ref>`` without file_name or open_name,
    or with a file_name that is not a file name."""

    code = ERR_XML_PARSE


def output_file_infos(xml_doc_in, upload_dir, fanout):
    """The output files of a result, in ``<file_ref>`` order (get_output_file_infos).

    Raises :class:`OutputFilesError` when a ``<file_ref>`` lacks a file or
    open name, as BOINC returns ERR_XML_PARSE, or names a file badly.
    """
    xml = xml_doc_in or ""
    infos = []
    for body in blocks(xml, "file_ref"):
        phys = _text(body, "file_name")
        logical = _text(body, "open_name")
        if not phys or not logical:
            raise OutputFilesError("<file_ref> without <file_name> or <open_name>")
        fault = file_name_fault(phys)
        if fault is not None:
            raise OutputFilesError("<file_ref> file_name %r: %s" % (phys, fault))
        infos.append(OutputFileInfo(phys, logical, dir_hier_path(upload_dir, phys, fanout),
                                    flag(body, "optional"), flag(body, "no_validate")))
    return infos


def output_file_paths(xml_doc_in, upload_dir, fanout):
    """Paths of a result's output files (get_output_file_paths)."""
    return [fi.path for fi in output_file_infos(xml_doc_in, upload_dir, fanout)]


class FileInfo(Record):
    """One ``<file_info>`` of a workunit or result document."""

    FIELDS = (("name", ""), ("no_delete", False), ("sticky", False))


def file_infos(xml_doc):
    """The ``<file_info>``s of a workunit's xml_doc or a result's xml_doc_in.

    Entries without a ``<name>`` are returned with name "" so callers can
    report the document as malformed, as BOINC's file deleter does.
    """
    xml = xml_doc or ""
    return [FileInfo(_text(body, "name"), flag(body, "no_delete"), flag(body, "sticky"))
            for body in blocks(xml, "file_info")]


class InputFileRef(Record):
    """One input file of a workunit: its ``<file_ref>`` and its ``<file_info>``'s URL and size."""

    FIELDS = (("phys_name", ""), ("open_name", ""), ("url", ""), ("nbytes", ""))


def input_file_refs(xml_doc):
    """A workunit's input files in ``<file_ref>`` order (the open name is the
    physical name when there is none; URL and size "" when no ``<file_info>``
    names the file)."""
    xml = xml_doc or ""
    infos = {}
    for body in blocks(xml, "file_info"):
        infos.setdefault(_text(body, "name"), (_text(body, "url"), _text(body, "nbytes")))
    start = xml.find("<workunit>")
    refs = []
    for body in blocks(xml[max(start, 0):], "file_ref"):
        phys = _text(body, "file_name")
        url, nbytes = infos.get(phys, ("", ""))
        refs.append(InputFileRef(phys, _text(body, "open_name") or phys, url, nbytes))
    return refs


def locate_in_hierarchy(root, name, fanout):
    """(status, path) of ``name`` in a fan-out tree, as the file deleter looks:

    0 the file exists; ERR_NOT_FOUND its bucket directory exists but not the
    file; ERR_OPENDIR not even the directory (a missing mount: possibly
    transient).
    """
    path = dir_hier_path(root, name, fanout)
    if os.path.lexists(path):
        return 0, path
    if os.path.isdir(os.path.dirname(path)):
        return ERR_NOT_FOUND, path
    return ERR_OPENDIR, path
