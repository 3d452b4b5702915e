"""stage_file and dir_hier_path: put input files into the download hierarchy.

    stage_file [--gzip] [--copy] [--verbose] PATH      (file, or every file of a directory)
    dir_hier_path FILENAME

stage_file follows BOINC's tools/stage_file (PHP): the file is moved (or
copied) to ``download_dir/BUCKET/NAME``, ``NAME.md5`` (``"<md5> <size>\\n"``)
is written, and with --gzip ``NAME.gz`` too.  A different file already staged
under the same name is an error (files are immutable for the clients); the
same file is fine.  Both tools run in the project directory (or take
--project_dir DIR).
"""

import gzip as gzip_module
import os
import shutil
import sys

import click

from boincpy.cli import boinc_option, click_main, progress, project_dir_option, usage_help_option
from boincpy.config import load_config
from boincpy.errors import BoincpyError, ToolError
from boincpy.files import check_download_file, check_file_name, dir_hier_path, write_md5_file

STAGE_USAGE = """usage: stage_file [--gzip] [--copy] [--verbose] path
    --gzip      make a gzipped version of file for compressed download
                (use with <gzip/> in the input template)
    --copy      copy the file (default is to move it)
    --verbose   verbose output
    path        The file to stage; if directory, stage all files in that dir
"""

DIR_HIER_USAGE = """
Usage: dir_hier_path <filename>
   Run this in a project's root directory.
   Prints the absolute path of the file in the download hierarchy,
   and creates the directory if needed.

"""


def stage_one(path, cfg, copy=False, gzip=False, verbose=False, out=None):
    """Stage one file; returns its path in the download hierarchy."""
    out = out or sys.stdout
    if not os.path.exists(path):
        raise ToolError("no such file: %s" % path)
    # a name create_work would refuse is not staged either
    name = check_file_name(os.path.basename(path), "file to stage")
    dl_path = dir_hier_path(cfg.download_dir, name, cfg.uldl_dir_fanout, create=True)
    if verbose:
        out.write("staging %s to %s\n" % (name, dl_path))
    try:
        status, md5, size = check_download_file(path, dl_path)
        if status == 0:
            if verbose:
                out.write("    file already exists as %s\n" % dl_path)
        elif status == 1:
            if copy:
                tmp = dl_path + ".tmp_%d" % os.getpid()
                shutil.copyfile(path, tmp)
                os.replace(tmp, dl_path)
                if verbose:
                    out.write("    copied file\n")
            else:
                shutil.move(path, dl_path)
                if verbose:
                    out.write("    moved file\n")
            # written after the data file so its mtime is not older (create_work
            # ignores and deletes .md5 files older than their data file)
            write_md5_file(dl_path, md5, size)
        else:
            raise ToolError(
                "Can't stage input file %s:\n"
                "There is a file in your project's download hierarchy,\n%s,\n"
                "with the same name but different contents.\n"
                "This is not allowed by BOINC." % (path, dl_path))
        if gzip:
            gz_path = dl_path + ".gz"
            if not os.path.exists(gz_path):
                tmp = gz_path + ".tmp_%d" % os.getpid()
                with open(dl_path, "rb") as src, gzip_module.open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(tmp, gz_path)
                if verbose:
                    out.write("    created .gzip file %s\n" % gz_path)
    except OSError as exc:
        raise ToolError("can't stage %s: %s" % (path, exc)) from None
    return dl_path


def _load_cfg(project_dir):
    return load_config(project_dir)


def stage_main(argv=None):
    """Entry point of bin/stage_file."""
    return click_main(_stage_command(), argv, "stage_file", STAGE_USAGE)


def _stage_command():
    @click.command(add_help_option=False)
    @usage_help_option(STAGE_USAGE, status=1, err=True)
    @boinc_option("gzip", is_flag=True)
    @boinc_option("copy", is_flag=True)
    @boinc_option("verbose", is_flag=True)
    @project_dir_option()
    @click.argument("path")
    def stage_file(gzip, copy, verbose, project_dir, path):
        return stage(path, project_dir, copy, gzip, verbose)
    return stage_file


def stage(path, project_dir=None, copy=False, gzip=False, verbose=False):
    """Stage a file, or each file of a directory; returns the exit status."""
    try:
        cfg = _load_cfg(project_dir)
        if not cfg.uldl_dir_fanout:
            raise ToolError("can't find <uldl_dir_fanout> in config.xml")
        if os.path.isdir(path):
            for entry in sorted(os.listdir(path)):
                p = os.path.join(path, entry)
                if os.path.isfile(p):
                    stage_one(p, cfg, copy, gzip, verbose)
        else:
            stage_one(path, cfg, copy, gzip, verbose)
    except BoincpyError as exc:
        sys.stderr.write("stage_file: ERROR: %s\n" % exc.message)
        return exc.exit_code or 1
    return 0


def dir_hier_path_main(argv=None):
    """Entry point of bin/dir_hier_path."""
    return click_main(_dir_hier_path_command(), argv, "dir_hier_path", DIR_HIER_USAGE)


def _dir_hier_path_command():
    @click.command(add_help_option=False)
    @usage_help_option(DIR_HIER_USAGE, status=1, err=True)
    @project_dir_option()
    @click.argument("filename")
    def dir_hier_path_cmd(project_dir, filename):
        try:
            cfg = _load_cfg(project_dir)
            path = dir_hier_path(cfg.download_dir, filename, cfg.uldl_dir_fanout, create=True)
        except BoincpyError as exc:
            sys.stderr.write("dir_hier_path: ERROR: %s\n" % exc.message)
            return exc.exit_code or 1
        except OSError as exc:
            sys.stderr.write("dir_hier_path: ERROR: %s\n" % exc)
            return 1
        sys.stdout.write(path + "\n")
        return 0
    return dir_hier_path_cmd


DIR_HIER_MOVE_USAGE = """Usage: dir_hier_move SRC_DIR DST_DIR FANOUT

Moves the files of SRC_DIR (flat) into DST_DIR (hierarchical) with the
given FANOUT (config.xml's uldl_dir_fanout, 1024 for make_project's
projects): each goes to DST_DIR/BUCKET/NAME as the download hierarchy wants
it.  Nothing is moved if a file's place is taken by another file.
"""


def dir_hier_move(src_dir, dst_dir, fanout, out=None):
    """Move every file of ``src_dir`` into ``dst_dir``'s hierarchy (BOINC's
    dir_hier_move); returns the number moved.  Checks every destination
    first: if one is already a different file, nothing is moved."""
    if not os.path.isdir(src_dir):
        raise ToolError("%s is not a directory" % src_dir)
    if not os.path.isdir(dst_dir):
        raise ToolError("%s is not a directory" % dst_dir)
    names = sorted(e.name for e in os.scandir(src_dir) if e.is_file(follow_symlinks=False))
    moves = [(os.path.join(src_dir, n), dir_hier_path(dst_dir, n, fanout)) for n in names]
    taken = [dst for src, dst in moves if os.path.exists(dst) and not os.path.samefile(src, dst)]
    if taken:
        raise ToolError("%d destination(s) already exist, e.g. %s: nothing was moved"
                        % (len(taken), taken[0]))
    def move(todo):
        for src, dst in todo:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.rename(src, dst)

    with progress(moves, "moving", out or sys.stderr) as todo:
        move(todo)
    return len(moves)


def dir_hier_move_main(argv=None):
    """Entry point of bin/dir_hier_move."""
    return click_main(_dir_hier_move_command(), argv, "dir_hier_move", DIR_HIER_MOVE_USAGE)


def _dir_hier_move_command():
    @click.command(add_help_option=False)
    @usage_help_option(DIR_HIER_MOVE_USAGE)
    @click.argument("src_dir")
    @click.argument("dst_dir")
    @click.argument("fanout")
    def dir_hier_move_cmd(src_dir, dst_dir, fanout):
        try:
            number = int(fanout)
        except ValueError:
            number = 0
        if number < 1:
            sys.stderr.write("dir_hier_move: FANOUT must be a number above 0, not %r\n%s"
                             % (fanout, DIR_HIER_MOVE_USAGE))
            return 1
        try:
            n = dir_hier_move(src_dir, dst_dir, number, sys.stderr)
        except BoincpyError as exc:
            sys.stderr.write("dir_hier_move: %s\n" % exc.message)
            return exc.exit_code or 1
        except OSError as exc:
            sys.stderr.write("dir_hier_move: %s\n" % exc)
            return 1
        sys.stdout.write("moved %d file(s) into %s\n" % (n, dst_dir))
        return 0
    return dir_hier_move_cmd


main = stage_main
