"""How the failover proof judges one configuration in one run: the class of every lost write,
and how long HAProxy had two writers UP. Pure functions of the samples taken beside the writers
(bench/failover/watches.py: (t_sent, t_recv, value), time.monotonic()), the writer's
acknowledgements and HAProxy's own state lines.

A lost write acknowledged by node X at time t falls in exactly one class, tested in this order:

  X was the manager's primary at t (its last sample answered before t and its first sample
  asked after t both name X):
    REVERSAL    the manager later went back to a node it had named before X (Patroni 3.0.2
                re-putting an old leader key): X's history is discarded whatever else accepted
                writes, and no router following the manager avoids it;
    TWO_WRITER  else, another node may have been a primary at t (see may_be_primary()): e.g.
                Sentinel's promoted replica before it announces the switch; BEHIND_ALL
                instead (below) while no router at these settings had reacted yet;
    MANAGER     else: asynchronous replication at a promotion, no router can help.
  X was named by the manager's last sample answered before t, but not by the first sample
  asked after it: the manager changed its mind between two samples, and t lies in between:
    AT_CHANGE   whether the manager still named X when X acknowledged the write is not known
                to better than the sampling interval (100 ms): not counted against routers,
                whose checks cannot react that fast anyway; shown in its own column.
  otherwise (a routing loss, measured from the manager's last sample naming X before t, the
  earliest moment it can have stopped naming X):
    LATE        more than the configuration's detection bound B after it;
    BEHIND_ALL  within B, while every configuration of the run at the same detection settings
                (anchors and dbcheck alike: the group the gate compares) still had X UP by its
                own HAProxy's state lines: no router at these settings had reacted yet (a
                manager that moves off a healthy primary at once, as Patroni 3.0.2 does when it
                re-puts an old leader key, and the primary demotes itself within tens of
                milliseconds; a replica promoted 0.1 s after SENTINEL FAILOVER: how many writes
                a writer finished then is its timing, not its check's rule);
    TWO_WRITER  within B, while another node may have been a primary;
    WITHIN      within B.

Routing losses are every class but MANAGER, REVERSAL, AT_CHANGE and BEHIND_ALL. BEHIND_ALL is
never dropped: it has its own column, and a late loss is late whoever else was late too.
"""

from bisect import bisect_left, bisect_right

from watches import PRIMARY

TWO_WRITER, REVERSAL, MANAGER, AT_CHANGE, BEHIND_ALL, WITHIN, LATE = (
    "two_writer", "reversal", "manager", "at_change", "behind_all", "within", "late")
CLASSES = (MANAGER, REVERSAL, AT_CHANGE, BEHIND_ALL, TWO_WRITER, WITHIN, LATE)
ROUTING = (TWO_WRITER, WITHIN, LATE)


class Series:
    """Samples [(t_sent, t_recv, value)] taken one after the other, searchable by time."""

    def __init__(self, samples):
        self.samples = list(samples)
        self.sent = [s[0] for s in self.samples]
        self.recv = [s[1] for s in self.samples]

    def before(self, t):
        """Index of the last sample answered at or before t, or None."""
        i = bisect_right(self.recv, t) - 1
        return i if i >= 0 else None

    def after(self, t):
        """Index of the first sample asked at or after t, or None."""
        i = bisect_left(self.sent, t)
        return i if i < len(self.samples) else None

    def around(self, t):
        """The values of the samples around t: the last answered before it, any asked before
        and answered after it, and the first asked after it."""
        lo = self.before(t)
        hi = self.after(t)
        first = 0 if lo is None else lo
        last = len(self.samples) - 1 if hi is None else hi
        return [self.samples[i][2] for i in range(first, last + 1)]


def may_be_primary(roles, t):
    """True when the node's own role samples around t (Series.around) include PRIMARY. A sample
    with no answer within its deadline says the node was not answering then, so not
    acknowledging writes either; at a change of role both neighbours count, so a write at the
    moment a replica is promoted counts as a two-writer one."""
    return PRIMARY in roles.around(t)


class ManagerView:
    """The manager's samples (value: the primary's name or None), with the questions the
    classes ask of them; `silent`: the sent times of the samples the manager did not answer."""

    def __init__(self, samples, silent=()):
        self.s = Series(samples)
        self.silent = set(silent)
        self.named = {}  # name -> sent times of the samples naming it
        for ts, _, p in self.s.samples:
            if p is not None:
                self.named.setdefault(p, []).append(ts)
        self._next_other = {}

    def primary_at(self, node, t):
        """True when the last sample answered before t and the first asked after t name node."""
        lo, hi = self.s.before(t), self.s.after(t)
        return (lo is not None and hi is not None and self.s.samples[lo][2] == node
                and self.s.samples[hi][2] == node)

    def changed_around(self, node, t):
        """True when the last sample answered before t names node and the first asked after t
        does not: the manager stopped naming node somewhere between, t included."""
        lo, hi = self.s.before(t), self.s.after(t)
        return (lo is not None and hi is not None and self.s.samples[lo][2] == node
                and self.s.samples[hi][2] != node)

    def last_named_before(self, node, t):
        """Sent time of the last sample asked before t naming node (the earliest moment the
        manager can have stopped naming it), or of the last unanswered one right after it (a
        manager that did not answer, an etcd that is down, may still have named node: only an
        answer names another); the first sample's time when none did."""
        times = self.named.get(node, [])
        i = bisect_left(times, t) - 1
        if i < 0:
            return self.s.sent[0] if self.s.sent else t
        j = bisect_left(self.s.sent, times[i])
        while j + 1 < len(self.s.sent) and self.s.sent[j + 1] < t and self.s.sent[j + 1] in self.silent:
            j += 1
        return self.s.sent[j]

    def reversed_after(self, node, t):
        """True when the next primary the manager names after t, other than node, is one it had
        already named before t: it went back on naming node."""
        i = self.s.after(t)
        if i is None:
            return False
        if (i, node) not in self._next_other:
            nxt = next((p for _, _, p in self.s.samples[i:] if p not in (None, node)), None)
            self._next_other[(i, node)] = nxt
        nxt = self._next_other[(i, node)]
        return nxt is not None and bool(self.named.get(nxt)) and self.named[nxt][0] < t


def classify(node, t, manager, roles, bound, no_router_reacted=None):
    """The class of a write acknowledged by `node` (a name) at t and lost (module docstring).
    manager: ManagerView; roles: {name: Series of that node's role samples}; bound: B in s;
    no_router_reacted(node, t): True when every configuration of the run still had node UP at t
    (behind_every_router()), None when that is not known (never BEHIND_ALL)."""
    others = any(may_be_primary(r, t) for name, r in roles.items() if name != node)
    behind_all = no_router_reacted is not None and no_router_reacted(node, t)
    if manager.primary_at(node, t):
        if manager.reversed_after(node, t):
            return REVERSAL
        if not others:
            return MANAGER
        # The promoted replica may be a primary while the manager still names X: a router that
        # reacts before the manager (a failover in progress) avoids these writes, so they are
        # routing -- unless no router at these settings had reacted yet.
        return BEHIND_ALL if behind_all else TWO_WRITER
    if manager.changed_around(node, t):
        return AT_CHANGE
    if t - manager.last_named_before(node, t) > bound:
        return LATE
    if behind_all:
        return BEHIND_ALL
    return TWO_WRITER if others else WITHIN


def up_intervals(events, servers, t_from, t_to):
    """HAProxy's state lines of a backend [(t, server, 'UP'|'DOWN')], every server UP when
    HAProxy started (as it starts them without a state file) -> (the sorted UP servers at
    t_from, the intervals [(start, end)] within [t_from, t_to] during which two or more servers
    were UP)."""
    up = set(servers)
    at_from, intervals, open_at = None, [], None
    for t, server, state in sorted(events, key=lambda e: e[0]):
        if t >= t_to:
            break
        if t >= t_from and at_from is None:
            at_from = sorted(up)
            open_at = t_from if len(up) >= 2 else None
        (up.add if state == "UP" else up.discard)(server)
        if t < t_from:
            continue
        if len(up) >= 2 and open_at is None:
            open_at = t
        elif len(up) < 2 and open_at is not None:
            intervals.append((open_at, t))
            open_at = None
    if at_from is None:  # no line during the window
        at_from = sorted(up)
        open_at = t_from if len(up) >= 2 else None
    if open_at is not None:
        intervals.append((open_at, t_to))
    return at_from, intervals


class UpTimeline:
    """One HAProxy's write backend: which servers were UP when, from its state lines
    [(t, server, 'UP'|'DOWN')], every server UP when HAProxy started (as up_intervals() assumes)."""

    def __init__(self, events, servers):
        self.servers = set(servers)
        self.events = sorted(events, key=lambda e: e[0])
        self.times = [e[0] for e in self.events]

    def is_up(self, server, t):
        """True when the last state line for server at or before t says UP, or there is none."""
        for _, srv, state in reversed(self.events[:bisect_right(self.times, t)]):
            if srv == server:
                return state == "UP"
        return server in self.servers


def behind_every_router(node, t, timelines, server_of):
    """True when every configuration's HAProxy in `timelines` had `node` UP at t (the caller
    passes those of one detection setting). timelines: {key: UpTimeline}; server_of: {key:
    {node name: that configuration's server name}}."""
    return all(tl.is_up(server_of[k][node], t) for k, tl in timelines.items())
