"""The four-panel result-state summary BOINC's ops pages share
(result_summary.php, a workunit's page, a result list's summary).

Counts come from one GROUP BY over the selected results; every non-zero
count links to the list of exactly those results.
"""

from boincpy.states import Outcome, ServerState
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops.names import (CLIENT_STATES, FILE_DELETE_STATES, OUTCOMES,
                                   SERVER_STATES, VALIDATE_STATES)


def state_counts(db, where, params):
    """Counts of the results matching ``where`` by each state column.

    Returns {"total": n, "server_state": {v: n}, "outcome": {v: n} (over
    results), "validate_state": {v: n} (successes), "file_delete_state": {v: n},
    "client_state": {v: n} (client errors)}.
    """
    rows = db.query(
        "SELECT server_state, outcome, validate_state, file_delete_state, client_state, "
        "COUNT(*) AS n FROM result WHERE %s GROUP BY server_state, outcome, "
        "validate_state, file_delete_state, client_state" % where, params)
    counts = {"total": 0, "server_state": {}, "outcome": {}, "validate_state": {},
              "file_delete_state": {}, "client_state": {}}

    def add(col, value, n):
        counts[col][value] = counts[col].get(value, 0) + n

    for r in rows:
        n = int(r["n"])
        counts["total"] += n
        add("server_state", r["server_state"], n)
        add("file_delete_state", r["file_delete_state"], n)
        if r["server_state"] == ServerState.OVER:
            add("outcome", r["outcome"], n)
            if r["outcome"] == Outcome.SUCCESS:
                add("validate_state", r["validate_state"], n)
            if r["outcome"] == Outcome.CLIENT_ERROR:
                add("client_state", r["client_state"], n)
    return counts


def _panel(title, column, choices, counts, base, extra):
    rows = []
    for value, word in choices:
        n = counts[column].get(int(value), 0)
        params = dict(base, **extra)
        params[column] = int(value)
        cell = link(url("db_action.php", **params), n) if n else Markup(str(n))
        rows.append(fmt('<tr><th>{}</th><td class="num">{}</td></tr>', word, cell))
    return fmt('<table class="kv"><thead><tr><th>{}</th><th># results</th></tr></thead>'
               '<tbody>{}</tbody></table>', title, join(rows))


def summary_panels(counts, base):
    """HTML of the four panels; ``base`` = the query parameters selecting the
    results (table=result plus filters) for the count links."""
    base = dict(base, table="result")
    total = link(url("db_action.php", **base), "%d results" % counts["total"])
    over = {"server_state": int(ServerState.OVER)}
    success = dict(over, outcome=int(Outcome.SUCCESS))
    error = dict(over, outcome=int(Outcome.CLIENT_ERROR))
    cols = [
        fmt("<div><h2>{}</h2>{}</div>", total,
            _panel("Server state", "server_state", SERVER_STATES, counts, base, {})),
        fmt("<div><h2>'Over' results</h2>{}</div>",
            _panel("Outcome", "outcome", OUTCOMES, counts, base, over)),
        fmt("<div><h2>'Success' results</h2>{}{}</div>",
            _panel("Validate state", "validate_state", VALIDATE_STATES, counts, base, success),
            _panel("File delete state", "file_delete_state", FILE_DELETE_STATES,
                   counts, base, {})),
        fmt("<div><h2>'Client error' results</h2>{}</div>",
            _panel("Client state", "client_state", CLIENT_STATES, counts, base, error)),
    ]
    return fmt('<div class="cols">{}</div>', join(cols))
