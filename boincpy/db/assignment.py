"""The assignment table's writes (BOINC's DB_ASSIGNMENT): jobs targeted at
a host, user or team, or sent to every host."""

from boincpy.db.bulk import chunks, placeholders


def insert_assignment(db, create_time, target_id, target_type, multi, workunitid, resultid):
    """INSERT an assignment of a workunit (or result) to a target."""
    return db.execute(
        "INSERT INTO assignment (create_time, target_id, target_type, multi, "
        "workunitid, resultid) VALUES (%s, %s, %s, %s, %s, %s)",
        (create_time, target_id, target_type, multi, workunitid, resultid))


def delete_assignment(db, assignment_id):
    """DELETE one assignment (its workunit is gone)."""
    return db.execute("DELETE FROM assignment WHERE id = %s", (assignment_id,))


def delete_assignments_of_workunits(db, wu_ids):
    """DELETE the assignments of these (purged) workunits."""
    for part in chunks(wu_ids):
        db.execute("DELETE FROM assignment WHERE workunitid IN (%s)"
                   % placeholders(len(part)), part)
