"""`dbcheck completion bash` (generated from the CLI definition) completes what dbcheck takes."""

import subprocess

import pytest


def complete(dbcheck_bin, *words):
    """COMPREPLY of the generated completion for the command line `dbcheck WORDS...` (the last
    word is the one being completed), in a plain non-interactive bash."""
    script = subprocess.run([str(dbcheck_bin), "completion", "bash"], capture_output=True, text=True,
                            timeout=10, check=True).stdout
    line = ["dbcheck", *words]
    quoted = " ".join(f"'{w}'" for w in line)
    prog = (f"{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(line) - 1}; _dbcheck; "
            "printf '%s\\n' \"${COMPREPLY[@]}\"")
    res = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=10)
    assert res.returncode == 0 and not res.stderr, res.stderr
    return sorted(w for w in res.stdout.split("\n") if w)


@pytest.mark.parametrize("words, want", [
    (("ex",), ["explain"]),
    (("",), sorted(["check", "explain", "config-check", "setup-sql", "switchover", "haproxy-state",
                    "status", "completion",
                    "--help", "-h", "--version", "--config"])),
    (("setup-sql", ""), sorted(["postgres", "redis", "sentinel", "redis-operator", "sentinel-operator",
                                "--help", "-h"])),
    (("switchover", "pg", "--d"), ["--dry-run"]),
    (("setup-sql", "postgres", ""), ["--help", "-h"]),
    (("explain", "--j"), ["--json"]),
    (("haproxy-state", "--w"), ["--write-state-file"]),
    (("status", "--w"), ["--watch"]),
    (("config-check", "--"), ["--haproxy-config", "--help", "--live"]),
])
def test_bash_completion(dbcheck_bin, words, want):
    assert complete(dbcheck_bin, *words) == want


def test_config_option_completes_file_names(dbcheck_bin, tmp_path):
    for name in ("dbcheck.toml", "dbcheck-redis.toml"):
        (tmp_path / name).write_text("")
    assert complete(dbcheck_bin, "--config", f"{tmp_path}/dbcheck") == \
        sorted([f"{tmp_path}/dbcheck.toml", f"{tmp_path}/dbcheck-redis.toml"])


def test_haproxy_config_option_completes_file_names(dbcheck_bin, tmp_path):
    (tmp_path / "haproxy.cfg").write_text("")
    assert complete(dbcheck_bin, "config-check", "--haproxy-config", f"{tmp_path}/hap") == \
        [f"{tmp_path}/haproxy.cfg"]
