"""``dbinfo.php``: the database's tables (rows, data and index sizes) and the
disk use of the project's file directories (download/, upload/, logs).

Row counts: InnoDB's table status gives an estimate; tables estimated below
EXACT_BELOW rows are counted exactly (cheap), bigger ones show the estimate
with a "~".  Directory sizes come from walking the directory, which stops
after WALK_SECONDS so the page stays fast on a project with millions of
files (the figures then say "at least").
"""

import os
import shutil
import time

from boincpy.web.markup import fmt, join
from boincpy.web.ops import names as N
from boincpy.web.page import PageError, num, render, sort_link, table

EXACT_BELOW = 200000
WALK_SECONDS = 2.0

SORTS = ("name", "rows", "data_size", "index_size", "total_size", "size_per_row")


def table_sizes(db):
    """One dict per table: name, rows (exact or estimated), exact, data_size,
    index_size, total_size, size_per_row."""
    out = []
    for r in db.query("SHOW TABLE STATUS"):
        if (r.get("Comment") or "") == "VIEW":
            continue
        data, index = int(r["Data_length"] or 0), int(r["Index_length"] or 0)
        rows = int(r["Rows"] or 0)
        exact = rows < EXACT_BELOW
        if exact:
            rows = int(db.query_value("SELECT COUNT(*) FROM `%s`" % r["Name"], None, 0))
        out.append({"name": r["Name"], "rows": rows, "exact": exact, "data_size": data,
                    "index_size": index, "total_size": data + index,
                    "size_per_row": int(r["Avg_row_length"] or 0)})
    return out


def dir_usage(path, seconds=WALK_SECONDS):
    """(files, bytes, complete) under ``path``; stops walking after ``seconds``."""
    deadline = time.monotonic() + seconds
    files = size = 0
    stack = [path]
    while stack:
        if time.monotonic() > deadline:
            return files, size, False
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    files += 1
                    size += e.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return files, size, True


def page(ctx):
    """``dbinfo.php?sort=COLUMN&order=asc|desc``."""
    sort = ctx.req.get("sort") or "name"
    order = ctx.req.get("order") or ("asc" if sort == "name" else "desc")
    if sort not in SORTS:
        raise PageError("sort: %r is not one of %s" % (sort, ", ".join(SORTS)))
    if order not in ("asc", "desc"):
        raise PageError("order: %r is not asc or desc" % order)
    tables = table_sizes(ctx.db)
    tables.sort(key=lambda t: t[sort], reverse=order == "desc")
    rows = [(t["name"], ("{:,}" if t["exact"] else "~{:,}").format(t["rows"]),
             N.bytes_text(t["data_size"]), N.bytes_text(t["index_size"]),
             N.bytes_text(t["total_size"]), N.bytes_text(t["size_per_row"]))
            for t in tables]
    totals = {k: sum(t[k] for t in tables) for k in ("rows", "data_size", "index_size",
                                                     "total_size")}
    rows.append((fmt("<b>Total</b>"), "{:,}".format(totals["rows"]),
                 N.bytes_text(totals["data_size"]), N.bytes_text(totals["index_size"]),
                 N.bytes_text(totals["total_size"]), ""))
    labels = dict(zip(SORTS, ("Table", "Rows", "Data size", "Index size", "Total size",
                              "Average row size")))
    by_label = {v: k for k, v in labels.items()}

    def head(label):
        return sort_link("dbinfo.php", {}, by_label[label], label, sort, order)

    cfg = ctx.cfg
    dirs = []
    for label, path in (("download/", cfg.download_dir), ("upload/", cfg.upload_dir),
                        ("logs", cfg.log_dir)):
        files, size, complete = dir_usage(path)
        try:
            fs = shutil.disk_usage(path)
            free = "%s free of %s" % (N.bytes_text(fs.free), N.bytes_text(fs.total))
        except OSError as exc:
            free = "can't read: %s" % exc.strerror
        dirs.append((label, path, ("{:,}" if complete else "at least {:,}").format(files),
                     ("%s" if complete else "at least %s") % N.bytes_text(size), free))
    body = fmt("<h2>Database {}</h2>{}"
               '<p class="muted small">Rows: exact below {} (a "~" marks InnoDB\'s '
               "estimate); sizes from SHOW TABLE STATUS.</p>"
               "<h2>Disk</h2>{}",
               cfg.db_name, table([labels[k] for k in SORTS], rows, head=head,
                                  classes=lambda i, j, c: "num" if j else ""),
               num(EXACT_BELOW),
               table(("Directory", "Path", "Files", "Size", "File system"), dirs))
    return render(ctx, "Database and disk usage", join([body]))
