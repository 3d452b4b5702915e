"""What fits a column, from schema.sql, and rows cut to fit before they are written.

In strict mode (MariaDB's default) one value too long or too large for its
column makes the whole statement fail.  BOINC's C++ server never sends such
a value: its fixed-size buffers truncate or drop it while the request is
read.  Rows built from what a client sent go through :func:`fit_row` first:

* text longer than its column is cut (VARCHAR(N): N characters; BLOB/TEXT:
  their size in UTF-8 bytes, at a character boundary), or dropped when the
  caller says a cut would make it meaningless (an XML document);
* an integer outside its column's range, or a number that is not finite,
  is dropped (an UPDATE then keeps the stored value, an INSERT the default);
* an integer bound for a DOUBLE column is written as a float.

The limits come from schema.sql itself (read once per process, only the
tables asked for), so they cannot drift from the schema.  Standard library
only, no ``re``: the scheduler CGI uses this on every request.
"""

from boincpy.cnum import is_finite   # (not math's: a module less on a classic CGI's path)
from boincpy.hot_path import join     # not os, on a classic CGI's path

SCHEMA_FILE = join(__file__.rpartition("/")[0], "schema.sql")

_BYTES = {"tinyblob": 255, "tinytext": 255, "blob": 65535, "text": 65535,
          "mediumblob": 2 ** 24 - 1, "mediumtext": 2 ** 24 - 1}
_INTS = {"tinyint": 2 ** 7, "smallint": 2 ** 15, "integer": 2 ** 31, "int": 2 ** 31,
         "bigint": 2 ** 63}
_FLOATS = ("double", "float")

_limits = {}


def _read_table(name, path=SCHEMA_FILE):
    """{column: (kind, limit)} of one table of schema.sql."""
    cols = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if cols is None:
                if line.startswith("create table ") and line.split()[2] == name:
                    cols = {}
                continue
            if line.startswith(")"):
                break
            parts = line.split(None, 2)
            if len(parts) < 2 or not line.startswith("    "):
                continue
            kind, _, size = parts[1].rstrip(",").partition("(")
            kind = kind.lower()
            if kind in ("varchar", "char"):
                cols[parts[0]] = ("chars", int(size.rstrip(")")))
            elif kind in _BYTES:
                cols[parts[0]] = ("bytes", _BYTES[kind])
            elif kind in _INTS:
                cols[parts[0]] = ("int", _INTS[kind])
            elif kind in _FLOATS:
                cols[parts[0]] = ("float", 0)
    if cols is None:
        raise KeyError("schema.sql has no table %s" % name)
    return cols


def column_limits(table):
    """{column: (kind, limit)} of ``table``: kind "chars" (limit in
    characters), "bytes" (UTF-8 bytes), "int" (values in [-limit, limit)) or
    "float"; columns of other types are absent."""
    cols = _limits.get(table)
    if cols is None:
        cols = _limits[table] = _read_table(table)
    return cols


def cut_text(text, limit, unit="chars"):
    """``text`` cut to ``limit`` characters, or to ``limit`` UTF-8 bytes at a
    character boundary (bytes stay bytes)."""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text[:limit])
    if unit == "chars":
        return text[:limit]
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def _nbytes(value, limit):
    """The UTF-8 size of ``value``, counted only when it might exceed ``limit``."""
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if len(value) * 4 <= limit:
        return len(value)
    return len(value.encode("utf-8", "surrogatepass"))


def fit_row(table, row, drop_text=()):
    """``row`` ({column: value}) with every value made to fit its column of
    ``table`` (see the module docstring); ``drop_text`` names text columns
    whose too-long values are dropped instead of cut.  Returns (the fitted
    row, [(column, what was done)]) -- the list is empty when all fitted."""
    limits = column_limits(table)
    out, changes = {}, []
    for col, value in row.items():
        limit = limits.get(col)
        if limit is None or value is None:
            out[col] = value
            continue
        kind, size = limit
        if isinstance(value, (str, bytes, bytearray)):
            if kind == "chars" and len(value) > size:
                if col in drop_text:
                    changes.append((col, "dropped: %d characters, column holds %d"
                                    % (len(value), size)))
                    continue
                out[col] = cut_text(value, size)
                changes.append((col, "cut to %d characters" % size))
                continue
            if kind == "bytes" and _nbytes(value, size) > size:
                if col in drop_text:
                    changes.append((col, "dropped: longer than the column's %d bytes" % size))
                    continue
                out[col] = cut_text(value, size, "bytes")
                changes.append((col, "cut to %d bytes" % size))
                continue
            out[col] = value
        elif isinstance(value, float):
            if not is_finite(value):
                changes.append((col, "dropped: %r is not a number" % value))
                continue
            if kind == "int" and not -size <= value < size:
                changes.append((col, "dropped: %r is out of range" % value))
                continue
            out[col] = value
        elif isinstance(value, int) and not isinstance(value, bool):
            if kind == "int" and not -size <= value < size:
                changes.append((col, "dropped: %d is out of range" % value))
                continue
            if kind == "float":
                try:
                    value = float(value)
                except OverflowError:
                    changes.append((col, "dropped: too large"))
                    continue
            out[col] = value
        else:
            out[col] = value
    return out, changes
