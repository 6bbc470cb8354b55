"""Escapes the gate's differential fuzz found, each in several variants of our own, kept as
regression tests: judged by the real gate, and — where the kernel can show it — run for real in
the fuzz's world (a decoy beside the project, the home, the repository)."""

from __future__ import annotations

import pytest

import gatefuzz

RUNS = pytest.mark.skipif(not gatefuzz.bwrap_works(), reason="bubblewrap cannot create namespaces here")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return gatefuzz.build_template(tmp_path_factory.mktemp("holes-world"))


def judged(template, line, mode):
    return gatefuzz.judge(line, mode, template / "proj")[0]


@pytest.mark.parametrize("line", ["echo hi > -", "cat a.txt 1> -", "echo $( wc -l a.txt >> - )", "ls 2> -"])
def test_a_redirection_to_dash_is_a_file_not_standard_output(template, line):
    assert not judged(template, line, "default")  # read-only lines only; `-` here is a new file


@pytest.mark.parametrize("line", ["echo hi >&-", "ls 2>&1", "cat a.txt >&2", "ls 2>/dev/null"])
def test_descriptor_copies_and_closes_stay_read_only(template, line):
    assert judged(template, line, "default")


@pytest.mark.parametrize("line", ["mv a.txt /dev/null", "cp --remove-destination a.txt /dev/null",
                                  "touch /dev/null", "ln -sf a.txt /dev/null", "chmod 777 /dev/null",
                                  "rm -f /dev/null", "mkdir -p sub && mv sub/b.txt /dev/zero"])
def test_a_command_never_changes_a_device_node_without_asking(template, line):
    """As root and unsandboxed, each would replace or alter a device for the whole machine."""
    assert not judged(template, line, "acceptEdits")


@pytest.mark.parametrize("line", ["cp a.txt b.txt > /dev/null", "echo x > /dev/null 2>&1", "touch n1 2>/dev/null"])
def test_redirections_to_devices_stay_allowed(template, line):
    assert judged(template, line, "acceptEdits")


@RUNS
@pytest.mark.parametrize("line", ["git status", "git diff", "git status --short && git diff --stat",
                                  "git log --oneline -1"])
def test_read_only_git_leaves_the_repository_as_it_was(template, tmp_path, line):
    trial = gatefuzz.trial(line, "default", template, tmp_path)
    assert trial.allowed and trial.escaped == [], trial.output


@RUNS
def test_read_only_git_runs_without_optional_locks(template, tmp_path):
    """The index file itself is not rewritten by `git status` under the gate's environment."""
    import os
    import shutil

    world = tmp_path / "w"
    shutil.copytree(template, world, symlinks=True)
    index = world / "proj" / ".git" / "index"
    before = (index.read_bytes(), os.stat(index).st_mtime_ns)
    allowed, env = gatefuzz.judge("git status", "default", world / "proj")
    assert allowed and env.get("GIT_OPTIONAL_LOCKS") == "0"
    gatefuzz.run_in_sandbox("git status", world, env)
    assert (index.read_bytes(), os.stat(index).st_mtime_ns) == before
