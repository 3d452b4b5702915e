"""The ops page that finds accounts made from one address
(``accounts_by_address.php``, boincpy's).

BOINC keeps no address of an account: the user table has none, and its
create_account pages record none.  What it keeps are its computers'
addresses (host.last_ip_addr, as the scheduler saw it, and
host.external_ip_addr, as the client reported it); its ops botnet.php only
counts hosts per account.  This page groups the accounts by those host
addresses, and shows beside them the failed logins boincpy counts per
client address (login_failure rows ``addr:ADDRESS``):

* ``accounts_by_address.php?min=N``: the addresses shared by at least N
  accounts (2 by default), most accounts first;
* ``accounts_by_address.php?addr=A``: the accounts with a computer at A,
  each linking its management page (manage_user.php: ban, delete).
"""

from boincpy.web.markup import fmt, link, url
from boincpy.web.ops import names as N
from boincpy.web.page import PageError, num, render, table, text_input

LIMIT = 200
ADDR_MAX = 256

_ADDRESSES = ("SELECT addr, COUNT(DISTINCT userid) AS accounts, COUNT(DISTINCT id) AS hosts "
              "FROM (SELECT id, userid, last_ip_addr AS addr FROM host WHERE userid <> 0 "
              "UNION SELECT id, userid, external_ip_addr FROM host WHERE userid <> 0) h "
              "WHERE addr <> '' GROUP BY addr HAVING accounts >= %s "
              "ORDER BY accounts DESC, addr LIMIT %s")


def _login_failures(db, addrs):
    if not addrs:
        return {}
    rows = db.query_if_table("SELECT name, nfail FROM login_failure WHERE name IN (%s)"
                             % ", ".join(["%s"] * len(addrs)), ["addr:" + a for a in addrs])
    return {r["name"][5:]: r["nfail"] for r in rows}


def accounts_by_address(ctx):
    db = ctx.rdb
    addr = ctx.req.get("addr")
    if addr:
        if len(addr) > ADDR_MAX:
            raise PageError("parameter addr: at most %d characters" % ADDR_MAX)
        users = db.query(
            "SELECT u.id, u.name, u.email_addr, u.create_time, u.total_credit, u.teamid, "
            "COUNT(h.id) AS hosts FROM user u JOIN host h ON h.userid = u.id "
            "WHERE h.last_ip_addr = %s OR h.external_ip_addr = %s GROUP BY u.id "
            "ORDER BY u.create_time, u.id LIMIT %s", (addr, addr, LIMIT))
        rows = [(link(url("manage_user.php", userid=u["id"]), u["id"]), u["name"],
                 u["email_addr"], N.time_text(u["create_time"]), num(u["total_credit"]),
                 u["teamid"] or "",
                 u["hosts"]) for u in users]
        body = fmt("<p>Accounts with a computer at {} (failed logins from it in the current "
                   "window: {}).</p>{}<p>{}</p>", addr,
                   _login_failures(db, [addr]).get(addr, 0),
                   table(("ID", "Name", "E-mail", "Created", "Credit", "Team", "Hosts there"),
                         rows, empty="No account has a computer at this address."),
                   link("accounts_by_address.php", "All shared addresses"))
        return render(ctx, "Accounts at an address", body)
    least = ctx.int_arg("min", 2, minimum=1, maximum=1000000)
    found = db.query(_ADDRESSES, (least, LIMIT))
    fails = _login_failures(db, [r["addr"] for r in found])
    rows = [(link(url("accounts_by_address.php", addr=r["addr"]), r["addr"]), r["accounts"],
             r["hosts"], fails.get(r["addr"], 0)) for r in found]
    body = fmt('<form class="inline" method="get" action="accounts_by_address.php">'
               '<label for="min">At least this many accounts</label> {} '
               '<button type="submit">Show</button></form>'
               "<p>Addresses of computers (as the scheduler saw them and as the clients "
               "reported them) shared by several accounts, most first (at most {}).  The "
               "user table keeps no address of its own.</p>{}",
               text_input("min", least, 5, "number"), LIMIT,
               table(("Address", "Accounts", "Computers", "Failed logins"), rows,
                     empty="No address is shared by that many accounts."))
    return render(ctx, "Accounts by address", body)
