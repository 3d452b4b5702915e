"""Locality scheduling's triggers: the scheduler's link to the work generator
(BOINC's DB_FILESET, DB_SCHED_TRIGGER and DB_FILESET_SCHED_TRIGGER_ITEM_SET).

A *fileset* is a sticky data file whose jobs are named ``FILE__...``; each has
one ``sched_trigger`` row of four flags:

``work_available``
    set by the work generator: jobs can be made for this file.  The files
    with it set are the *working set* the scheduler draws new files from.
``need_work``
    set by the scheduler when a host could use more jobs of the file and none
    are unsent; the generator makes some and clears it.
``no_work_available``
    set by the generator when it can make no more jobs of the file: the
    scheduler stops asking ("no more jobs for this file").
``working_set_removal``
    set by the scheduler when the file has no unsent job left and the
    generator has none to make: the generator may drop it from the working set.

The scheduler's side is :func:`trigger`, :func:`set_state` and
:func:`working_set`; a work generator uses :func:`add_fileset`,
:func:`set_state` and :func:`filesets_with`.  Every statement is one row (or
one INSERT pair in a transaction), so no caller leaves a fileset without its
trigger.
"""

STATES = ("need_work", "work_available", "no_work_available", "working_set_removal")

_SELECT = ("SELECT fs.id AS fileset_id, fs.name, t.id, t.need_work, t.work_available, "
           "t.no_work_available, t.working_set_removal FROM fileset fs "
           "JOIN sched_trigger t ON fs.id = t.fileset_id")


def _column(state):
    if state not in STATES:
        raise ValueError("no trigger state %r (one of %s)" % (state, ", ".join(STATES)))
    return state


def trigger(db, name):
    """The trigger of fileset ``name`` (a dict with the four flags and ``id``),
    or None if there is none (select_unique_by_fileset_name)."""
    return db.query_one(_SELECT + " WHERE fs.name = %s", (name,))


def set_state(db, trigger_id, state, value=True):
    """Set one flag of a trigger (update_single_state)."""
    db.execute("UPDATE sched_trigger SET %s = %%s WHERE id = %%s" % _column(state),
               (1 if value else 0, trigger_id))


def working_set(db, pattern=None):
    """Names of the filesets whose work_available is set, optionally only
    those matching the SQL REGEXP ``pattern`` (select_by_name_state)."""
    sql = _SELECT + " WHERE t.work_available = 1"
    params = ()
    if pattern is not None:
        sql += " AND fs.name REGEXP %s"
        params = (pattern,)
    return [r["name"] for r in db.query(sql + " ORDER BY fs.id", params)]


def filesets_with(db, state, value=True):
    """Names of the filesets whose flag ``state`` is ``value`` (for a work
    generator: ``filesets_with(db, "need_work")``)."""
    return [r["name"] for r in db.query(
        _SELECT + " WHERE t.%s = %%s ORDER BY fs.id" % _column(state), (1 if value else 0,))]


def add_fileset(db, name, work_available=True):
    """Register a data file with the scheduler (the work generator's first
    step); returns its trigger id.  Adding one that exists changes nothing."""
    found = trigger(db, name)
    if found is not None:
        return found["id"]
    with db.transaction():
        fsid = db.insert("INSERT INTO fileset (name) VALUES (%s)", (name,))
        return db.insert("INSERT INTO sched_trigger (fileset_id, work_available) "
                         "VALUES (%s, %s)", (fsid, 1 if work_available else 0))
