"""What CONTRIBUTING.md tells a contributor to type works: each command of its shell blocks is
run here, or named with the place in the suite that runs it as written; a new command in the
file fails this test until it is one or the other."""

import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "CONTRIBUTING.md"

# Run here, in this order: cheap once the suite has run the quick tier (which builds ./build)
# and installed the packages. At the lowest CPU priority: the other lane's
# integration tests hold checks to deadlines meanwhile.
RUN_HERE = [
    './build/tests/unit/unit_tests "[lsn]"',
    "ctest --test-dir build -R lsn",
    "./scripts/install-deps --lab",
    "/usr/bin/python3 -m pytest tests/integration/test_completion.py -p no:cacheprovider -q",
]
# Run by the suite as written (scripts/test, scripts/test-debian13): each with the script that
# runs it and the line there that does (a regular expression, checked below).
RUN_ELSEWHERE = {
    "./scripts/test --quick": ("scripts/test", r"^\./scripts/test --quick$"),
    "./scripts/build-checked": ("scripts/test", r"^nice -n 19 \./scripts/build-checked "),
    "./build-asan/tests/unit/unit_tests": ("scripts/test", r"^  proof \./build-asan/tests/unit/unit_tests$"),
    './scripts/in-root "$(./scripts/trixie-root | tail -n 1)" ./scripts/build':
        ("scripts/test-debian13", r'^ *root=\$\(tail -n 1 .*trixie-root\.log\)$(?s:.*)'
                                  r'^ *"\$\{low\[@\]\}" \./scripts/in-root "\$root" \./scripts/build$'),
}
# The proof's entry point: not run here (a minute of a saturated machine); its arguments are
# checked (argparse reads them before --help, and a scenario the lab lacks is refused), and the
# suite runs the same proof, every scenario, through failover.py --reps 1.
PROOF = "bench/failover/run --engine pg --reps 1 --scenario switchover --no-results"


def documented_commands():
    """Every command line of CONTRIBUTING.md's ```sh blocks, its trailing comment dropped."""
    out = []
    for block in re.findall(r"^```sh\n(.*?)^```", DOC.read_text(), re.M | re.S):
        for line in block.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                out.append(command)
    return out


def test_every_command_is_run_here_or_by_the_suite():
    commands = documented_commands()
    assert "./scripts/test --quick" in commands
    unknown = set(commands) - set(RUN_HERE) - set(RUN_ELSEWHERE) - {PROOF}
    assert not unknown, f"CONTRIBUTING.md commands no test runs: {sorted(unknown)}"
    stale = (set(RUN_HERE) | set(RUN_ELSEWHERE) | {PROOF}) - set(commands)
    assert not stale, f"commands listed here that CONTRIBUTING.md no longer has: {sorted(stale)}"


def test_the_suite_runs_the_commands_it_is_said_to():
    for command, (script, line) in RUN_ELSEWHERE.items():
        assert re.search(line, (REPO / script).read_text(), re.M), f"{script} no longer runs {command}"


def test_the_commands_run_here_pass():
    for command in RUN_HERE:
        res = subprocess.run(["nice", "-n", "19", "bash", "-c", command], cwd=REPO, capture_output=True,
                             text=True, timeout=1800)
        assert res.returncode == 0, \
            f"{command}: exit {res.returncode}\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
        # ctest and Catch2 pass when a filter matches nothing: "No tests were found", "No test
        # cases matched".
        assert "No test" not in res.stdout + res.stderr, f"{command}: ran nothing\n{res.stdout[-2000:]}"


def test_the_proof_command_takes_its_arguments(monkeypatch):
    # The proof's modules import one another by their plain names, as its script's directory.
    monkeypatch.syspath_prepend(str(REPO / "bench" / "failover"))
    from labs import PgLab

    assert "switchover" in PgLab.scenarios
    res = subprocess.run(["bash", "-c", f"{PROOF} --help"], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0 and "--scenario" in res.stdout, res.stderr[-2000:]
    # A scenario the lab does not have is refused before any server starts.
    bad = subprocess.run(["bash", "-c", PROOF.replace("switchover", "swithcover")], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "--scenario swithcover: no such scenario here" in bad.stderr, bad.stderr


def test_quick_takes_no_other_argument():
    res = subprocess.run(["./scripts/test", "--quick", "-k", "x"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 64 and "--quick takes no other argument" in res.stderr


def test_install_deps_quick_is_the_build_set_and_the_linters():
    def listed(*args):
        res = subprocess.run(["./scripts/install-deps", "--list", *args], cwd=REPO, capture_output=True,
                             text=True, timeout=60, check=True)
        return res.stdout.split()

    # clang-format 14 is the one scripts/lint checks the layout with: Debian 12's.
    for release, linters in (("bookworm", ["flake8", "clang-format-14"]), ("trixie", ["flake8"])):
        assert sorted(listed("--quick", "--release", release)) == \
            sorted(listed("--build", "--release", release) + linters), release


def test_lint_fails_on_a_layout_drift_and_on_a_tracker_number(tmp_path):
    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)

    # nice 5: this lane waits on these lints, so they must not queue behind the other lane's
    # build (nice 10) as at nice 19; but flake8 takes both cores, and the other lane's
    # deadline-bound tests (nice 0) come first.
    def lint():
        return subprocess.run(["nice", "-n", "5", "./scripts/lint"], cwd=clone, capture_output=True,
                              text=True, timeout=600)

    assert lint().returncode == 0, "lint fails on the committed tree"
    src = clone / "common" / "util" / "duration.cpp"
    text = src.read_text()
    if shutil.which("clang-format-14"):
        src.write_text(text + "int  drifted ( ) ;\n")
        res = lint()
        assert res.returncode == 1 and "not laid out as .clang-format says" in res.stderr, res.stderr[-2000:]
        src.write_text(text)
    src.write_text(text + "// as " + "iss" + "ue 12 asked\n")
    res = lint()
    assert res.returncode == 1 and "name a tracker's issue" in res.stderr, res.stderr[-2000:]
