"""An operator runs dbcheck by hand on a HAProxy host set up as the README says: the password
file belongs to `haproxy` (mode 0600), and HAProxy runs the checks as that user. As root
`dbcheck explain` shows the diagnosis; as any other user it names the one way that works; and
following every hint dbcheck prints, word for word, leaves HAProxy's own checks passing."""

import pwd
import re
import subprocess

from lab.haproxy import render_example_for
from lab.procs import wait_until

# rise 3 x inter 1s for the writer, plus slack for a loaded machine (checks are processes).
ROUTING_TIMEOUT = 30


def run(argv, user=None):
    """argv as `user` (root when None; its own login group), a clean environment: (exit code,
    stdout + stderr)."""
    if user is not None:
        gid = pwd.getpwnam(user).pw_gid
        argv = ["setpriv", f"--reuid={user}", f"--regid={gid}", "--init-groups", "--", *argv]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                       env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    return p.returncode, p.stdout + p.stderr


def follow(hint_text, dbcheck_argv):
    """Carry out what dbcheck's message says, as an operator would: `run: COMMAND` is typed as
    it is; `sudo -u USER ...` is the same dbcheck command run as USER. Returns what was done."""
    done = []
    for command in re.findall(r"run: ([^;\n]+)", hint_text):
        subprocess.run(command, shell=True, check=True, timeout=30)
        done.append(command)
    for user in re.findall(r"sudo -u (\S+) \.\.\.", hint_text):
        rc, out = run(dbcheck_argv, user=user)
        assert rc == 0, f"the hint's way (as {user}) did not work either: {out}"
        done.append(f"sudo -u {user} {' '.join(dbcheck_argv)}")
    assert done, f"dbcheck gave no hint to follow: {hint_text}"
    return done


def test_by_hand_as_root_or_with_the_hint_and_haproxy_keeps_passing(
        pg_cluster, dbcheck_setup, dbcheck_bin, haproxy_factory, workdir):
    leader = pg_cluster.wait_healthy()
    cfg, _ = render_example_for(pg_cluster, dbcheck_setup.wrapper, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    writer_up = lambda: hap.servers_up("pg_write") == [leader.name]  # noqa: E731
    wait_until(writer_up, ROUTING_TIMEOUT, f"HAProxy's checks (as haproxy) pass {leader.name}")
    explain = [str(dbcheck_bin), "--config", str(dbcheck_setup.config), "explain", "pg_write", leader.pg_addr]
    pw = dbcheck_setup.password_file
    assert pw.stat().st_mode & 0o777 == 0o600

    # Root reads the file haproxy owns: the diagnosis, not an error about the file.
    rc, out = run(explain)
    assert rc == 0 and "password file" not in out, out

    # Any other user is told to run as root or as the owner, never to chown.
    rc, out = run(explain, user="nobody")
    assert rc == 2, out
    assert f"cannot read password file {pw}: Permission denied; it belongs to haproxy" in out, out
    assert "sudo -u haproxy ..." in out and "chown" not in out, out
    follow(out, explain)
    assert writer_up(), "HAProxy's checks failed after following the hint"

    # A file group or others may read is refused by everyone, HAProxy's checks included...
    pw.chmod(0o640)
    rc, out = run(explain)
    assert rc == 2 and f"run: chmod 600 {pw}" in out, out
    wait_until(lambda: hap.servers_up("pg_write") == [], ROUTING_TIMEOUT, "HAProxy's checks fail on it too")
    # ... and root's hint, followed word for word, brings them back.
    follow(out, explain)
    wait_until(writer_up, ROUTING_TIMEOUT, f"HAProxy's checks pass {leader.name} again")
    assert run(explain)[0] == 0
