"""The entry of every bin/ tool: run its main and exit as a Unix tool does.

``bin/status | head -1``: once ``head`` has read its line and gone, the next
write to stdout fails with EPIPE.  A C tool (BOINC's) dies of SIGPIPE there,
silently; Python turns it into BrokenPipeError and a traceback, then another
one while flushing stdout at exit.  :func:`run` ends the tool quietly instead,
with the status a shell shows for a tool killed by SIGPIPE (128 + 13).  The
SIGPIPE default is not restored process-wide because daemons write to
sockets (MySQL), where EPIPE must stay an error they handle.
"""

import os
import sys

EXIT_SIGPIPE = 141          # 128 + SIGPIPE, what the shell reports for a C tool


def run(main, *args):
    """Call ``main(*args)`` and return its exit status (for ``sys.exit``);
    a SystemExit from it is turned into its status.  When stdout's reader has
    gone (a pipe into ``head``), return EXIT_SIGPIPE without a traceback; any
    other broken pipe (a socket) is re-raised."""
    try:
        try:
            status = main(*args)
        except SystemExit as exc:
            status = exc.code
        sys.stdout.flush()
    except BrokenPipeError:
        if not stdout_gone():
            raise
        _discard_stdout()
        return EXIT_SIGPIPE
    return status


def stdout_gone():
    """True when stdout is a pipe nobody reads any more (poll reports POLLERR)."""
    import select
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _discard_stdout():
    # What is still buffered would fail again when Python flushes stdout at
    # exit ("Exception ignored ... BrokenPipeError"): send it to /dev/null.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def is_tty(stream):
    """True when ``stream`` is a terminal (progress bars are shown only there)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def progress(items, label, out):
    """A click progress bar over ``items`` when ``out`` is a terminal, else
    the items (a context manager either way)."""
    if is_tty(out):
        import click
        return click.progressbar(items, label=label, file=out)
    from contextlib import nullcontext
    return nullcontext(items)


class ByteProgress:
    """A ``progress(n, total)`` callback drawing a click progress bar of
    bytes on ``out`` when it is a terminal, and nothing otherwise; the bar
    is made when the total is first known.  ``close()`` ends it."""

    def __init__(self, label, out):
        self.label = label
        self.out = out
        self.shown = is_tty(out)
        self.bar = None

    def __call__(self, n, total):
        if not self.shown:
            return
        if self.bar is None:
            if not total:       # a bar needs its length
                self.shown = False
                return
            import click
            self.bar = click.progressbar(length=total, label=self.label, file=self.out)
            self.bar.__enter__()
        self.bar.update(n)

    def close(self):
        """End the bar (if one was drawn)."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def click_main(command, argv, name, usage=None, say_why=True):
    """Run a click ``command`` as bin/NAME: its exit status; click's usage
    errors and a BoincpyError are printed as one line on stderr.  With
    ``usage`` (a tool's own usage text, as BOINC's tools print it), a usage
    error prints that text after the message (only the text when not
    ``say_why``, as BOINC's crypt_prog) and exits 1."""
    import click
    from boincpy.errors import BoincpyError
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        # make_context + invoke rather than main(): main() turns a broken
        # stdout pipe into exit 1, where :func:`run` must see it
        with command.make_context(name, args) as ctx:
            return command.invoke(ctx) or 0
    except click.exceptions.Exit as exc:       # --help
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except click.UsageError as exc:
        if usage is None:
            exc.show()
            return exc.exit_code
        if say_why:
            sys.stderr.write("%s: %s\n\n" % (name, exc.format_message()))
        sys.stderr.write(usage)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        return 1
    except BoincpyError as exc:
        sys.stderr.write("%s: %s\n" % (name, exc.message))
        return exc.exit_code or 1


# ---------------------------------------------------------------------------
# Options spelled as BOINC's programs spell them.  BOINC's daemons and tools
# take ``-name`` and ``--name`` alike (``-d 3``, ``-mod N I``, ``--app``,
# ``-app``); click takes a one-dash name of several letters as a long
# option, so both spellings are declared on one click option.  Like rq's
# cli, the options many commands share are declared once here.

def names(name, *short):
    """The spellings of option ``name``: ``short`` ones (``-d``), then
    ``--name`` and ``-name``."""
    return list(short) + ["--" + name, "-" + name]


def option(name, *short, dest=None, group=None, **kwargs):
    """A click.Option spelled ``--name`` / ``-name`` (and ``short``),
    stored under ``dest`` (default: ``name``); with ``group``, one of a
    group of which at most one may be given (see :func:`resolve_groups`)."""
    import click
    opt = click.Option(names(name, *short) + [dest or name], **kwargs)
    if group is not None:
        opt.boinc_group = GroupFlag(group)
    return opt


def boinc_option(name, *short, dest=None, **kwargs):
    """The decorator form of :func:`option` for click commands."""
    import click
    return click.option(*names(name, *short), dest or name, **kwargs)


class GroupFlag:
    """Marks an option (mostly a flag) as one of a group of which at most
    one may be given.

    ``const``: with ``dest``, the value stored in ``dest`` when this flag is
    the one given (argparse's store_const in a mutually exclusive group)."""

    def __init__(self, group, dest=None, const=None):
        self.group = group
        self.dest = dest
        self.const = const


def group_flag(name, group, dest=None, const=None, **kwargs):
    """A flag (``--name``/``-name``) of which ``group`` allows one: see
    :func:`resolve_groups`."""
    opt = option(name, is_flag=True, **kwargs)
    opt.boinc_group = GroupFlag(group, dest, const)
    return opt


def resolve_groups(params, values):
    """Check that at most one option of each group is set in ``values``
    (click.UsageError otherwise) and store each group's ``dest`` (the
    const of the flag given, or None)."""
    import click
    chosen = {}
    dests = {}
    for param in params:
        mark = getattr(param, "boinc_group", None)
        if mark is None:
            continue
        if mark.dest:
            dests.setdefault(mark.dest, None)
        if values.get(param.name):
            if mark.group in chosen:
                raise click.UsageError("-%s and -%s can't be given together"
                                       % (chosen[mark.group].name, param.name))
            chosen[mark.group] = param
            if mark.dest:
                dests[mark.dest] = mark.const
    values.update(dests)
    return values


class Placed:
    """What one occurrence of a :func:`placed_option` gave, found among the
    positional arguments at the place it stood."""

    __slots__ = ("option", "value")

    def __init__(self, option, value):
        self.option = option
        self.value = value

    def convert(self, ctx):
        """The value converted by the option's type (click.BadParameter if bad)."""
        return self.option.type_cast_value(ctx, self.value)

    def __repr__(self):
        return "Placed(%s, %r)" % (self.option.name, self.value)


def placed_option(name, *short, **kwargs):
    """An option (``--name``/``-name``) whose values keep their place among
    the positional arguments: each occurrence becomes a :class:`Placed` in
    the command's positional argument (declare one with ``nargs=-1``), in
    command-line order, and the option's own value stays unset.

    BOINC's create_work takes input files both as names and as
    ``--remote_file URL NBYTES MD5``, and their order is the job's file
    order; click gathers positional arguments apart from options, so the
    place of an option among them would be lost.  The option is parsed by
    click as usual (spellings, the number of values, errors); only where
    its values go differs: its entry in the command's parser puts them
    among the positional arguments seen so far instead of storing them."""
    import click

    class PlacedOption(click.Option):
        def add_to_parser(self, parser, ctx):
            super().add_to_parser(parser, ctx)
            # click's parser keeps one entry per spelling; process() is
            # what it calls with the values of one occurrence
            entries = [entry for table in (parser._long_opt, parser._short_opt)
                       for entry in table.values() if entry.obj is self]
            if not entries:
                raise RuntimeError("placed_option: click's parser has no entry for --%s"
                                   % self.name)

            def place(value, state):
                state.largs.append(Placed(self, value))
            for entry in entries:
                entry.process = place

    return PlacedOption(names(name, *short) + [name], **kwargs)


class LineParser:
    """Parses many short command lines with the params of one click
    ``command`` (create_work --stdin: a line per job, thousands a second):
    click's parser, then each given value through its param's type, each
    param's callback, and :func:`resolve_groups`; a param not given is None
    (an argument of ``nargs=-1``: an empty tuple).  ``parse`` raises click's
    usage errors as ``Command.make_context`` does.

    ``make_context`` would build a context and a parser for every line and
    put each of the params through click's default handling: about 0.3 ms
    a line for nine options, fifty times the parse itself.  So the parser is
    built once, only options taking values and arguments are allowed (no
    flags or ``multiple``), and no defaults are applied."""

    def __init__(self, command):
        import click
        for param in command.params:
            if getattr(param, "is_flag", False) or getattr(param, "count", False) \
                    or param.multiple:
                raise ValueError("LineParser: --%s is a flag or multiple" % param.name)
        self.command = command
        self.ctx = click.Context(command, info_name=command.name)
        self.parser = command.make_parser(self.ctx)
        self.params = {param.name: param for param in command.params}
        self.unset = {param.name: () if param.nargs == -1 else None
                      for param in command.params}
        self.callbacks = [param for param in command.params if param.callback is not None]

    def parse(self, args):
        """The values of the command line ``args`` (a list of words), by name."""
        import click
        opts, extra, _ = self.parser.parse_args(list(args))
        if extra:
            raise click.UsageError("unexpected argument '%s'" % extra[0], self.ctx)
        values = dict(self.unset)
        for name, raw in opts.items():
            if isinstance(raw, (str, tuple, list)):     # else click's UNSET: not given
                values[name] = self.params[name].type_cast_value(self.ctx, raw)
        for param in self.callbacks:
            values[param.name] = param.callback(self.ctx, param, values[param.name])
        return resolve_groups(self.command.params, values)


def project_dir_option(**kwargs):
    """``--project_dir DIR``, which every tool that reads config.xml takes."""
    kwargs.setdefault("help", "project directory (default: found as BOINC finds it)")
    return boinc_option("project_dir", default=None, metavar="DIR", **kwargs)


def usage_help_option(usage, status=0, err=False):
    """``-h``/``--help``/``-help`` printing a tool's own ``usage`` text (on
    stderr with ``err``) and ending with ``status``, as BOINC's tools do."""
    import click

    def show(ctx, param, value):
        if value and not ctx.resilient_parsing:
            (sys.stderr if err else sys.stdout).write(usage)
            ctx.exit(status)
    return click.option("-h", "--help", "-help", "show_help", is_flag=True, is_eager=True,
                        expose_value=False, callback=show, help="show this help")
