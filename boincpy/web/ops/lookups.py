"""The small tables (app, platform, app_version) loaded once per page, and the
names other rows link to (users, hosts)."""

from boincpy.web.markup import Markup, fmt, link, url
from boincpy.web.ops.names import ANON_VERSIONS, version_text


class Catalog:
    """Apps, platforms and app versions by id (a few hundred rows at most)."""

    def __init__(self, db):
        self.apps = {r["id"]: r for r in db.query(
            "SELECT id, name, user_friendly_name, deprecated FROM app ORDER BY id")}
        self.platforms = {r["id"]: r for r in db.query(
            "SELECT id, name, user_friendly_name, deprecated FROM platform ORDER BY id")}
        self.versions = {r["id"]: r for r in db.query(
            "SELECT id, appid, version_num, platformid, plan_class, deprecated, beta "
            "FROM app_version ORDER BY id")}

    def app_name(self, appid):
        app = self.apps.get(appid)
        return app["name"] if app else "app %d (missing)" % appid

    def app_choices(self):
        """(id, name) of every app, for a select."""
        return [(a["id"], a["name"]) for a in self.apps.values()]

    def platform_name(self, platformid):
        p = self.platforms.get(platformid)
        return p["name"] if p else "platform %d (missing)" % platformid

    def version_desc(self, avid):
        """``example_app 1.00 x86_64-pc-linux-gnu [plan]`` (or BOINC's anonymous words)."""
        avid = int(avid or 0)
        if avid in ANON_VERSIONS:
            return ANON_VERSIONS[avid]
        if avid <= 0:
            return "unknown (%d)" % avid
        av = self.versions.get(avid)
        if av is None:
            return "app version %d (missing)" % avid
        text = "%s %s %s" % (self.app_name(av["appid"]), version_text(av["version_num"]),
                             self.platform_name(av["platformid"]))
        if av["plan_class"]:
            text += " [%s]" % av["plan_class"]
        return text

    def current_versions(self, appid):
        """The app's versions clients get now: not deprecated, and the highest
        version number of each platform, plan class and beta flag (BOINC's
        latest_avs_app)."""
        best = {}
        for av in self.versions.values():
            if av["appid"] != appid or av["deprecated"]:
                continue
            key = (av["platformid"], av["plan_class"], av["beta"])
            if key not in best or av["version_num"] > best[key]["version_num"]:
                best[key] = av
        return sorted(best.values(), key=lambda av: av["id"])

    def version_link(self, avid):
        """The app version's description linking to its detail page (if it exists)."""
        if int(avid or 0) > 0 and int(avid) in self.versions:
            return link(url("db_action.php", table="app_version", id=avid),
                        self.version_desc(avid))
        return Markup(fmt("{}", self.version_desc(avid)))


def names_by_id(db, table, column, ids):
    """id -> ``column`` for the given ids of ``table`` (user or host)."""
    ids = sorted({int(i) for i in ids if i})
    if not ids:
        return {}
    assert table in ("user", "host", "workunit", "team") and column.isidentifier()
    marks = ", ".join(["%s"] * len(ids))
    rows = db.query("SELECT id, %s AS label FROM %s WHERE id IN (%s)" % (column, table, marks),
                    ids)
    return {r["id"]: r["label"] for r in rows}
