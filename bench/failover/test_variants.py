"""The proof's configurations: dbcheck's example config without its read backend."""

import re

from lab.haproxy import EXAMPLE_CFG, REDIS_EXAMPLE_CFG
from variants import without_proxies

SECTION = re.compile(r"^(global|defaults|frontend|backend|listen)\b.*$", re.M)


def test_the_example_without_its_read_backend_keeps_everything_else():
    for path, gone, kept in ((EXAMPLE_CFG, "pg_read", "pg_write"),
                             (REDIS_EXAMPLE_CFG, "redis_read", "redis_write")):
        text = path.read_text()
        out = without_proxies(text, {gone})
        assert SECTION.findall(out) == ["global", "defaults", "frontend", "backend"], path
        assert f"backend {kept}" in out and f"frontend {kept}" in out
        # Nothing but comments names the read backend any more.
        assert not [line for line in out.splitlines() if gone in line.split("#", 1)[0]], path
        # The write backend's lines are all there, in order.
        block = text[text.index(f"backend {kept}"):].split("\n\n")[0]
        assert block in out


def test_only_the_named_sections_go():
    cfg = "global\n    nbthread 1\n\nbackend a # the one to drop\n    server x 1.2.3.4:5\n# note\n" \
          "server y 1.2.3.4:6\nbackend ab\n    server z 1.2.3.4:7\n  listen a\n    bind :1\n"
    # An unindented line inside a section stays in it; a `listen` of the same name stays.
    assert without_proxies(cfg, {"a"}) == \
        "global\n    nbthread 1\n\nbackend ab\n    server z 1.2.3.4:7\n  listen a\n    bind :1\n"
