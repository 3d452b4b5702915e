"""Small data records for the classic CGIs' paths, without the cost of ``dataclasses``.

Every scheduler request and every page of the web site in classic CGI mode
is a new process, and ``import dataclasses`` pulls in ``inspect``, ``ast``
and ``dis`` (about 10 ms, as long as a whole no-work scheduler request;
making 16 table rows with it took another 8 ms of each page).  So the
scheduler's records, the tables' rows (:mod:`boincpy.db.rows`) and the
web's request and response are records of this kind.  A record class
lists its fields once as ``FIELDS = (("name", default), ...)``; a default
that is a class (``list``, ``dict``, another record) or a :class:`factory`
is called for each instance, as ``field(default_factory=...)`` would be.  Instances take
positional or keyword arguments in field order, compare equal field by
field and print like dataclasses, so code written against the former
dataclasses keeps working.
"""


class factory:
    """Marks a default as a function to call for each new instance."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make

    def __call__(self):
        return self.make()


class RecordMeta(type):
    """Derives ``__slots__`` and the defaults table from ``FIELDS``.  A
    subclass keeps its base's fields; one that adds fields lists them after
    the base's (``FIELDS = Base.FIELDS + (...)``)."""

    def __new__(mcs, name, bases, ns):
        inherited = next((b.FIELDS for b in bases if isinstance(b, RecordMeta)), ())
        fields = ns.get("FIELDS", inherited)
        if fields[:len(inherited)] != inherited:
            raise TypeError("%s: FIELDS must start with its base's" % name)
        # one pass over the fields: a classic CGI makes every record class
        # of its request path (HostInfo has 90 fields) on every request, and
        # a pass per table was a third of the scheduler's request module's body
        names, plain_names, plain_values, factories = [], [], [], []
        for entry in fields:
            field, default = entry[0], entry[1]
            names.append(field)
            if isinstance(default, (type, factory)):
                factories.append((field, default))
            else:
                plain_names.append(field)
                plain_values.append(default)
        ns.setdefault("__slots__", tuple(names[len(inherited):]))
        cls = super().__new__(mcs, name, bases, ns)
        cls._names = tuple(names)
        cls._name_set = frozenset(names)
        cls._factories = tuple(factories)
        # the plain defaults as two columns, for Record.__init__'s map()
        cls._plain_names = tuple(plain_names)
        cls._plain_values = tuple(plain_values)
        return cls


class Record(metaclass=RecordMeta):
    """Base of every record (see the module docstring)."""

    __slots__ = ()
    FIELDS = ()

    def __init__(self, *args, **kwargs):
        setter = object.__setattr__
        # the defaults set in C (map, consumed by any): a persistent scheduler
        # builds dozens of records a request; a Python loop per field was 7%
        # of its CPU, this is 40% less.  any() runs the whole map, since
        # setattr returns None: no module to import for it (deque's,
        # _collections, cost every CGI 230,000 instructions)
        names = self._plain_names
        # (the instance repeated as a tuple, not itertools.repeat: one import
        # less for every CGI, the same speed)
        any(map(setter, (self,) * len(names), names, self._plain_values))
        for name, factory in self._factories:
            if name not in kwargs:
                setter(self, name, factory())
        if args:
            if len(args) > len(self._names):
                raise TypeError("%s takes at most %d arguments" % (
                    type(self).__name__, len(self._names)))
            for name, value in zip(self._names, args):
                if name in kwargs:
                    raise TypeError("%s got two values for %r" % (type(self).__name__, name))
                setter(self, name, value)
        for name, value in kwargs.items():
            if name not in self._name_set:
                raise TypeError("%s has no field %r" % (type(self).__name__, name))
            setter(self, name, value)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._names)

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (n, getattr(self, n)) for n in self._names))
