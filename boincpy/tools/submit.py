"""Remote job submission tools: submit_batch, submit_job, query_batch,
query_job, get_output, abort_batch, retire_batch.

One click group; bin/NAME runs its command NAME.  They work over HTTP from
any machine, with the submitter's account: ``--url`` (the project's master
URL) and ``--authenticator`` (the account key), or the environment variables
BOINC_PROJECT_URL and BOINC_AUTHENTICATOR.  Output is for people by default;
``--json`` prints one JSON document instead.  Progress bars appear on a
terminal only (on stderr).
"""

import dataclasses
import functools
import json
import os
import secrets
import sys
import time
import xml.etree.ElementTree as ElementTree

import click

from boincpy.cli import ByteProgress, progress
from boincpy.errors import BoincpyError, SubmitError
from boincpy.states import WuError
from boincpy.submit.client import (DEFAULT_TIMEOUT, BatchDesc, FileDesc, JobDesc, SubmitClient,
                                   job_file_name)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# A batch this large gets a progress bar while its request is sent.
LARGE_BATCH = 1000


@click.group(context_settings=CONTEXT)
def cli():
    """Submit jobs to a BOINC project, follow them and fetch their outputs,
    over HTTP, as a submitter (BOINC's remote job submission RPCs)."""


def pass_client(func):
    """The options every command shares (--url, --authenticator, --timeout,
    also read from BOINC_PROJECT_URL and BOINC_AUTHENTICATOR); the command
    gets a SubmitClient, and a boincpy error ends it with its message."""

    @click.option("--url", envvar="BOINC_PROJECT_URL", required=True, metavar="URL",
                  help="The project's master URL (env BOINC_PROJECT_URL).")
    @click.option("--authenticator", envvar="BOINC_AUTHENTICATOR", required=True,
                  metavar="KEY", help="Your account key (env BOINC_AUTHENTICATOR).")
    @click.option("--timeout", type=float, default=DEFAULT_TIMEOUT, show_default=True,
                  help="Seconds to wait for the server without a byte.")
    @functools.wraps(func)
    def command(url, authenticator, timeout, **kwargs):
        try:
            return func(SubmitClient(url, authenticator, timeout), **kwargs)
        except BoincpyError as exc:
            raise click.ClickException(exc.message) from None

    return command


def json_option(func):
    return click.option("--json", "as_json", is_flag=True,
                        help="Print JSON for scripts instead of text.")(func)


def templates_option(func):
    return click.option("--templates", nargs=2, type=click.Path(exists=True, dir_okay=False),
                        metavar="IN OUT",
                        help="Input and output template files sent with each job "
                             "(default: the app's templates on the server).")(func)


def _batch(value, by_name):
    """A batch argument: its id when all digits (unless --name), else its name."""
    return int(value) if value.isdigit() and not by_name else value


def _print_json(data):
    click.echo(json.dumps(data, indent=2, sort_keys=True))


def _when(t):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def _table(rows, header):
    """Rows as columns, numbers right-aligned."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = []
    for row in [header] + rows:
        cells = [str(c).rjust(w) if isinstance(c, (int, float)) else str(c).ljust(w)
                 for c, w in zip(row, widths)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _read_templates(templates):
    if not templates:
        return None, None
    texts = []
    for path in templates:
        with open(path, encoding="utf-8") as f:
            texts.append(f.read())
    return texts[0], texts[1]


def _input_file_count(client, app_name, input_template):
    """How many input files a job of the app takes: <file_info>s of the
    given input template, else of the app's template on the server."""
    if input_template is None:
        input_template = client.get_templates(app_name=app_name).input_template
    try:
        root = ElementTree.fromstring("<t>%s</t>" % input_template)
    except ElementTree.ParseError as exc:
        raise SubmitError("the input template is not well-formed XML: %s" % exc, None) from None
    return len(list(root.iter("file_info")))


def _stage(client, paths, batch_id, verbose):
    """Upload ``paths`` by content into the batch; their physical names."""
    names = []
    with progress(paths, "Hashing input files", sys.stderr) as bar:
        for path in bar:
            names.append(job_file_name(path))
    unique = dict(zip(names, paths))
    bar = ByteProgress("Uploading input files", sys.stderr)
    try:
        sent = client.upload_files(list(unique.values()), list(unique), batch_id=batch_id,
                                   progress=bar)
    finally:
        bar.close()
    if verbose:
        for name, path in unique.items():
            click.echo("%s %s as %s" % ("uploaded" if name in sent else "already on the server:",
                                        path, name))
    return names


def _submit(client, batch):
    bar = ByteProgress("Sending %d jobs" % len(batch.jobs), sys.stderr)
    try:
        return client.submit_batch(batch, progress=bar if len(batch.jobs) >= LARGE_BATCH
                                   else None)
    finally:
        bar.close()


def _default_name(app_name):
    return "%s_%d_%s" % (app_name, time.time(), secrets.token_hex(2))


def _in_new_batch(client, app_name, batch_name, work):
    """Create a batch, run ``work(batch_id)``; if that fails, retire the empty
    batch (and so release its files) before passing the error on."""
    batch_id = client.create_batch(app_name, batch_name)
    try:
        return batch_id, work(batch_id)
    except (BoincpyError, KeyboardInterrupt):
        try:
            client.retire_batch(batch_id)
        except BoincpyError:
            pass
        raise


@cli.command("submit_job", context_settings=CONTEXT)
@click.argument("appname")
@click.argument("infiles", nargs=-1, metavar="[INFILE]...",
                type=click.Path(exists=True, dir_okay=False))
@templates_option
@click.option("--command_line", metavar="X", help="Command-line arguments of the program.")
@click.option("--target_user", type=int, metavar="ID", help="Only this user's hosts run it.")
@click.option("--target_host", type=int, metavar="ID", help="Only this host runs it.")
@click.option("--target_team", type=int, metavar="ID", help="Only this team's hosts run it.")
@click.option("--name", "job_name", help="The job's name (default: APPNAME_TIME_XXXX).")
@click.option("--batch_name", help="Its batch's name (default: the job's name).")
@click.option("--rsc_fpops_est", type=float, help="Estimated FLOPs (default: the template's).")
@click.option("--priority", type=int, help="Higher runs first.")
@click.option("--verbose", is_flag=True, help="Say what is uploaded and sent.")
@json_option
@pass_client
def submit_job(client, appname, infiles, templates, command_line, target_user, target_host,
               target_team, job_name, batch_name, rsc_fpops_est, priority, verbose, as_json):
    """Submit one job of APPNAME with the input files INFILE... (uploaded
    unless the server has them), in a batch of its own."""
    input_template, output_template = _read_templates(templates)
    expected = _input_file_count(client, appname, input_template)
    if len(infiles) != expected:
        raise click.ClickException("wrong number of input files; expected %d" % expected)
    job_name = job_name or _default_name(appname)

    def work(batch_id):
        names = _stage(client, list(infiles), batch_id, verbose)
        job = JobDesc(name=job_name, files=[FileDesc.staged(n) for n in names],
                      rsc_fpops_est=rsc_fpops_est, command_line=command_line,
                      input_template=input_template, output_template=output_template,
                      priority=priority, target_user=target_user, target_host=target_host,
                      target_team=target_team)
        if verbose:
            click.echo("submitting job %s" % job_name)
        return _submit(client, BatchDesc(appname, [job], batch_id=batch_id)), names

    batch_id, (_, names) = _in_new_batch(client, appname, batch_name or job_name, work)
    if as_json:
        _print_json({"job_name": job_name, "batch_id": batch_id,
                     "input_files": dict(zip(infiles, names))})
    else:
        click.echo("Job name: %s" % job_name)
        click.echo("Batch ID: %d" % batch_id)


@cli.command("submit_batch", context_settings=CONTEXT)
@click.argument("appname")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@templates_option
@click.option("--batch_name", help="The batch's name (default: APPNAME_TIME_XXXX).")
@click.option("--command_line", metavar="X", help="Command-line arguments of every job.")
@click.option("--rsc_fpops_est", type=float, help="Estimated FLOPs of each job.")
@click.option("--priority", type=int, help="Higher runs first.")
@click.option("--verbose", is_flag=True, help="Say what is uploaded and each job's input.")
@json_option
@pass_client
def submit_batch(client, appname, directory, templates, batch_name, command_line,
                 rsc_fpops_est, priority, verbose, as_json):
    """Submit a batch of APPNAME: one job per file in DIRECTORY (in name
    order; hidden files skipped), that file its one input file.  Jobs are
    named BATCHNAME_0, BATCHNAME_1, ..."""
    paths = sorted(os.path.join(directory, e.name) for e in os.scandir(directory)
                   if not e.name.startswith("."))
    for path in paths:
        if not os.path.isfile(path):
            raise click.ClickException("%s is not a file" % path)
    if not paths:
        raise click.ClickException("no input files in %s" % directory)
    input_template, output_template = _read_templates(templates)
    expected = _input_file_count(client, appname, input_template)
    if expected != 1:
        raise click.ClickException("the app's jobs take %d input files; submit_batch gives "
                                   "each job one" % expected)
    batch_name = batch_name or _default_name(appname)
    job_names = ["%s_%d" % (batch_name, i) for i in range(len(paths))]

    def work(batch_id):
        names = _stage(client, paths, batch_id, verbose)
        jobs = [JobDesc(name=job, files=[FileDesc.staged(n)], rsc_fpops_est=rsc_fpops_est,
                        command_line=command_line, input_template=input_template,
                        output_template=output_template, priority=priority)
                for job, n in zip(job_names, names)]
        _submit(client, BatchDesc(appname, jobs, batch_id=batch_id))
        return names

    batch_id, names = _in_new_batch(client, appname, batch_name, work)
    if as_json:
        _print_json({"batch_id": batch_id, "batch_name": batch_name,
                     "jobs": [{"name": j, "input_file": p, "phys_name": n}
                              for j, p, n in zip(job_names, paths, names)]})
        return
    if verbose:
        for job, path in zip(job_names, paths):
            click.echo("%s: %s" % (job, path))
    click.echo("%d jobs submitted.  Batch ID %d" % (len(paths), batch_id))


def _batch_dict(b):
    data = dataclasses.asdict(b)
    data["state_name"] = b.state_name
    return data


@cli.command("query_batch", context_settings=CONTEXT)
@click.argument("batch", required=False)
@click.option("--name", "by_name", is_flag=True, help="BATCH is a name even if all digits.")
@click.option("--cpu_time", is_flag=True, help="Also the CPU time used.")
@json_option
@pass_client
def query_batch(client, batch, by_name, cpu_time, as_json):
    """Show batch BATCH (id or name) and its jobs, or without BATCH list
    your batches (retired ones left out)."""
    if batch is None:
        batches = client.query_batches(get_cpu_time=cpu_time)
        if as_json:
            _print_json([_batch_dict(b) for b in batches])
        elif not batches:
            click.echo("No batches.")
        else:
            click.echo(_table([[b.id, b.name, b.app_name, b.state_name, b.njobs, b.nerror_jobs,
                                "%d%%" % round(100 * b.fraction_done)] for b in batches],
                              ["id", "name", "app", "state", "jobs", "failed", "done"]))
        return
    b = client.query_batch(_batch(batch, by_name), get_cpu_time=cpu_time,
                           get_job_details=True)
    if as_json:
        _print_json(_batch_dict(b))
        return
    lines = ["Batch %d (%s), app %s" % (b.id, b.name, b.app_name),
             "   state: %s" % b.state_name,
             "   jobs: %d, %d failed, %d%% done" % (b.njobs, b.nerror_jobs,
                                                     round(100 * b.fraction_done)),
             "   created: %s" % _when(b.create_time),
             "   expires: %s" % _when(b.expire_time),
             "   completed: %s" % _when(b.completion_time),
             "   credit: %g" % b.credit_canonical]
    if b.total_cpu_time is not None:
        lines.append("   CPU time: %g s" % b.total_cpu_time)
    click.echo("\n".join(lines))
    if b.jobs:
        click.echo()
        _print_jobs(b)


def _print_jobs(b):
    click.echo(_table([[j.name, j.id, j.status or "", ", ".join(j.errors),
                        j.canonical_instance_id or ""] for j in b.jobs],
                      ["job", "id", "status", "errors", "canonical instance"]))


def _error_words(mask):
    return ", ".join(flag.name.lower() for flag in WuError if mask & flag)


@cli.command("query_job", context_settings=CONTEXT)
@click.argument("job")
@click.option("--id", "by_id", is_flag=True,
              help="JOB is a job (workunit) id: list its instances and their outputs.")
@click.option("--stderr", "show_stderr", is_flag=True, help="Also print the job's stderr.")
@json_option
@pass_client
def query_job(client, job, by_id, show_stderr, as_json):
    """Show job JOB by name: its outcome (exit status, times, stderr).  As
    BOINC's query_job, JOB all digits is a batch id: the state of each of its
    jobs.  With --id, JOB is a job id: its instances."""
    if by_id:
        instances = client.query_job(int(job))
        if as_json:
            _print_json([dataclasses.asdict(i) for i in instances])
        elif not instances:
            click.echo("Job %s has no instances yet." % job)
        else:
            click.echo(_table([[i.name, i.id, i.state,
                                " ".join(str(s) for s in i.outfile_sizes) or "-"]
                               for i in instances],
                              ["instance", "id", "state", "output sizes"]))
        return
    if job.isdigit():
        b = client.query_batch(int(job), get_job_details=True)
        if as_json:
            _print_json([dataclasses.asdict(j) for j in b.jobs])
        elif not b.jobs:
            click.echo("Batch %s has no jobs." % job)
        else:
            _print_jobs(b)
        return
    done = client.query_completed_job(job)
    if as_json:
        _print_json(dataclasses.asdict(done))
        return
    if done.canonical_resultid:
        click.echo("Job %s: completed (canonical instance %d)" % (job, done.canonical_resultid))
    elif done.error_mask:
        click.echo("Job %s: failed (%s)" % (job, _error_words(done.error_mask)))
    else:
        click.echo("Job %s: not completed yet" % job)
    if done.canonical_resultid or done.error_resultid:
        click.echo("   exit status: %d" % done.exit_status)
        click.echo("   elapsed time: %g s, CPU time: %g s" % (done.elapsed_time, done.cpu_time))
    if show_stderr and done.stderr_out:
        click.echo(done.stderr_out.rstrip("\n"))


def _safe_part(name):
    """A server-given name usable as part of a local file name."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return cleaned.lstrip(".") or "file"


@cli.command("get_output", context_settings=CONTEXT)
@click.argument("job", required=False)
@click.option("--batch", help="Fetch this batch's outputs (id or name) as one zip.")
@click.option("--file_num", type=int, help="Only this output file of JOB (0 = the first).")
@click.option("-d", "--dir", "directory", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Where to put the files.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="With --batch: the zip's path (default: DIR/batch_ID.zip).")
@json_option
@pass_client
def get_output(client, job, batch, file_num, directory, output, as_json):
    """Download the output files of job JOB's canonical instance (saved as
    JOB__OPENNAME; the files its app's output template names, --file_num for
    others), or with --batch a zip of every finished job's outputs."""
    if (job is None) == (batch is None):
        raise click.UsageError("give a JOB or --batch BATCH")
    os.makedirs(directory, exist_ok=True)
    written = []
    bar = ByteProgress("Downloading", sys.stderr)
    try:
        if batch is not None:
            ref = _batch(batch, False)
            batch_id = ref if isinstance(ref, int) else client.query_batch(ref).id
            dest = output or os.path.join(directory, "batch_%d.zip" % batch_id)
            written.append(client.get_batch_outputs(batch_id, dest, progress=bar))
        else:
            names = client.get_templates(job_name=job).output_open_names
            if not names and file_num is None:
                raise SubmitError("the output template of %s's app names no files" % job, None)
            numbers = [file_num] if file_num is not None else range(len(names))
            for n in numbers:
                label = names[n] if 0 <= n < len(names) else "file_%d" % n
                dest = os.path.join(directory, "%s__%s" % (_safe_part(job), _safe_part(label)))
                written.append(client.get_job_output(job, n, dest, progress=bar))
    finally:
        bar.close()
    if as_json:
        _print_json(written)
    else:
        for path in written:
            click.echo(path)


@cli.command("abort_batch", context_settings=CONTEXT)
@click.argument("batch")
@click.option("--name", "by_name", is_flag=True, help="BATCH is a name even if all digits.")
@pass_client
def abort_batch(client, batch, by_name):
    """Abort batch BATCH (id or name): its unsent jobs are never sent, and
    hosts running the others are told to abort them."""
    client.abort_batch(_batch(batch, by_name))
    click.echo("Batch %s aborted." % batch)


@cli.command("retire_batch", context_settings=CONTEXT)
@click.argument("batch")
@click.option("--name", "by_name", is_flag=True, help="BATCH is a name even if all digits.")
@pass_client
def retire_batch(client, batch, by_name):
    """Retire batch BATCH (id or name) once you have its outputs: it leaves
    your list, and its files may be deleted."""
    client.retire_batch(_batch(batch, by_name))
    click.echo("Batch %s retired." % batch)


def main(name, argv=None):
    """Entry point of bin/NAME: run that command of the group."""
    command = cli.commands[name]
    return command.main(args=argv, prog_name=name, standalone_mode=True)


if __name__ == "__main__":
    cli()
