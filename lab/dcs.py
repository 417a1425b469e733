"""Patroni's failsafe_mode on a running lab cluster (lab/patroni.py), for the DCS-outage faults
(lab/faults.py stop_etcd / start_etcd).

With failsafe_mode on, a leader that cannot reach the DCS stays primary while every member named
in the DCS's /failsafe key accepts its POST /failsafe. That key is written by the leader's own HA
loop once the mode is on, and read from the DCS by every member: it must be in every member's
view before the DCS goes away, or the leader has nobody to ask and demotes as without the mode.
So switching the mode on waits, bounded, until every member's GET /failsafe lists every member.
The same code serves Patroni 3.0.2, 4.0.7 (Debian 13) and 4.1.4: patronictl edit-config and the
REST answers used here are alike in all three (POST /failsafe read in 3.0.2's and 4.1.4's
source)."""

import time

from .patroni import LOOP_WAIT
from .procs import wait_until


def config_says(body, on):
    """True when a GET /config body (the dynamic configuration) has failsafe_mode `on` (absent
    counts as off, as Patroni reads it)."""
    return isinstance(body, dict) and bool(body.get("failsafe_mode")) == on


def lists_every_member(body, names):
    """True when a GET /failsafe body ({member name: REST API URL}) names every one of `names`."""
    return isinstance(body, dict) and set(names) <= set(body)


def failsafe_active(body):
    """True when a GET /patroni (or /primary) status body says the member runs as leader under
    failsafe: Patroni adds "failsafe_mode_is_active": true only then."""
    return isinstance(body, dict) and body.get("failsafe_mode_is_active") is True


def _every_member(cluster, path, predicate):
    for m in cluster.members():
        try:
            status, body = cluster.rest(m, path)
        except OSError:
            return False
        if status != 200 or not predicate(body):
            return False
    return True


def acts_on(status, on):
    """True when `status`, a member's answer to an empty POST /failsafe, says its HA loop runs
    with failsafe_mode `on`: Patroni checks the mode (as its HA loop last read it) before the
    body, so an empty body gets 400 with the mode on and 502 with it off, and changes nothing
    on any member (a body is applied on a replica)."""
    return status == (400 if on else 502)


def _failsafe_answer(cluster, member):
    try:
        return cluster.rest(member, "/failsafe", post={})[0]
    except OSError:
        return None


def set_failsafe(cluster, on, timeout=60):
    """Set failsafe_mode in `cluster`'s dynamic configuration (patronictl edit-config, which
    writes the DCS; the DCS must answer) and wait, bounded, until every member's GET /config
    says so and every member's HA loop acts on it, and, when on, every member's GET /failsafe
    lists every member. Then one more HA loop and a second: a replica refuses the leader's
    POST /failsafe until it has applied the mode.
    GET /config alone is not enough: it may answer from a DCS read of the REST thread's own
    while the HA loop, held up by a DCS that just came back, still acts on the mode it last
    read (a leader then stays primary through the next outage as if the mode were on)."""
    value = "true" if on else "false"
    cluster.patronictl("edit-config", "--set", f"failsafe_mode={value}", "--force", timeout=timeout)
    wait_until(lambda: _every_member(cluster, "/config", lambda b: config_says(b, on)), timeout,
               f"every member's GET /config saying failsafe_mode: {value}")
    wait_until(lambda: all(acts_on(_failsafe_answer(cluster, m), on) for m in cluster.members()),
               timeout, f"every member's HA loop acting on failsafe_mode: {value} (an empty "
               f"POST /failsafe answered {400 if on else 502})")
    if on:
        names = [m.name for m in cluster.members()]
        wait_until(lambda: _every_member(cluster, "/failsafe", lambda b: lists_every_member(b, names)),
                   timeout, f"every member's GET /failsafe listing {', '.join(names)}")
    time.sleep(LOOP_WAIT + 1)


def is_failsafe_active(cluster, member):
    """True when `member`'s GET /patroni says failsafe is active; False when it does not, or
    does not answer."""
    try:
        status, body = cluster.rest(member, "/patroni")
    except OSError:
        return False
    return status == 200 and failsafe_active(body)


def wait_failsafe_active(cluster, member, timeout=30):
    """Wait, bounded, until `member` runs as leader under failsafe (with the DCS gone: its first
    HA loop that failed to read the DCS, about retry_timeout after); returns the seconds waited."""
    t0 = time.monotonic()
    wait_until(lambda: is_failsafe_active(cluster, member), timeout,
               f"{cluster.member(member).name}'s GET /patroni saying failsafe_mode_is_active")
    return time.monotonic() - t0


def urls_naming(cluster, member):
    """Every member's REST URL, `member`'s by its address and the others' by the name localhost.
    dbcheck tells the node's own Patroni by the one configured URL on the node's host (each
    member on a host of its own, as in production); on loopback every member shares 127.0.0.1,
    and dbcheck does not take the name localhost for that address, so `member`'s URL is the
    only one on its node's host. (A replica's check then takes `member`'s Patroni for its own:
    use it for `member`'s checks.)"""
    own = cluster.member(member)
    return [m.rest_url if m == own else m.rest_url.replace("://127.0.0.1:", "://localhost:")
            for m in cluster.members()]
