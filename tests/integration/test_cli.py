"""dbcheck's command line, no servers needed: a bad call is a usage error (64, EX_USAGE), told
apart from a configuration error (2, what HAProxy sees), and --help names both engines."""

import subprocess

import pytest

ENV = {"PATH": "/usr/bin:/bin"}


def _run(dbcheck_bin, *args, env=None):
    return subprocess.run([str(dbcheck_bin), *args], capture_output=True, text=True, timeout=10,
                          env=ENV if env is None else env)


@pytest.mark.parametrize("args", [
    ("--bogus",),                            # an unknown option
    ("check", "pg_write"),                   # a missing argument
    ("check", "pg_write", "10.0.0.1"),       # a node that is not HOST:PORT
    ("explain", "pg_write", "10.0.0.1:5432", "--nope"),
    ("setup-sql", "mysql"),                  # not one of the files
    ("completion", "zsh"),
    ("config-check", "--live"),              # --live needs --haproxy-config
    ("127.0.0.1", "5432"),                   # neither HAProxy's call nor a command
])
def test_a_bad_command_line_is_a_usage_error(dbcheck_bin, args):
    # The configuration does not exist: the command line is refused before it is read.
    res = _run(dbcheck_bin, "--config", "/nonexistent/dbcheck.toml", *args)
    assert res.returncode == 64, res
    assert res.stderr.strip() and not res.stdout.strip(), res


def test_a_broken_configuration_is_still_2(dbcheck_bin, tmp_path):
    missing = str(tmp_path / "missing.toml")
    assert _run(dbcheck_bin, "--config", missing, "config-check").returncode == 2
    assert _run(dbcheck_bin, "--config", missing, "check", "pg_write", "10.0.0.1:5432").returncode == 2
    # HAProxy's own call (4 arguments, HAPROXY_PROXY_NAME): whatever is wrong is configuration.
    haproxy = dict(ENV, HAPROXY_PROXY_NAME="pg_write", DBCHECK_CONFIG=missing)
    assert _run(dbcheck_bin, "NOT_USED", "NOT_USED", "10.0.0.1", "5432", env=haproxy).returncode == 2
    # A UNIX-socket server in haproxy.cfg: HAProxy's configuration, not a typo.
    res = _run(dbcheck_bin, "NOT_USED", "NOT_USED", "/run/pg.sock", "NOT_USED", env=haproxy)
    assert res.returncode == 2 and "UNIX-socket" in res.stderr, res


def test_help_names_both_engines(dbcheck_bin):
    res = _run(dbcheck_bin, "--help")
    assert res.returncode == 0, res
    first = res.stdout.split("\n\n")[0]
    for words in ("PostgreSQL under Patroni", "Redis/Valkey", "Sentinel", "64 usage error"):
        assert words in first, first
