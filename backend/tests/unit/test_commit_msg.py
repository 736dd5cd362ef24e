"""The commit-msg hook: a subject of at most 72 characters, a blank line, then the why."""

import importlib.util
from types import ModuleType

import pytest

from harness import REPO_DIR


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_commit_msg", REPO_DIR / "scripts" / "check_commit_msg.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = load_hook()


def test_a_short_subject_with_a_body_passes():
    assert hook.problems("Fetch: hand over what committed\n\nBecause a later one failed.\n") == []


def test_a_subject_over_72_characters_is_refused():
    subject = "x" * 73
    assert hook.problems(f"{subject}\n\nWhy.\n") == ["the subject has 73 characters; at most 72"]


def test_a_message_without_a_body_is_refused():
    assert hook.problems("Fetch: hand over what committed\n") == [
        "no body: say why the change is made, after a blank line"
    ]


def test_a_subject_must_be_followed_by_a_blank_line_and_not_end_in_a_full_stop():
    assert hook.problems("Fetch: one line.\nthe why on the next\n") == [
        "the subject ends with a full stop",
        "the subject is not followed by a blank line",
    ]


def test_comment_lines_and_the_scissors_part_are_not_the_message():
    message = (
        "Fetch: hand over what committed\n\n# a comment git strips\nWhy.\n"
        "# ------------------------ >8 ------------------------\n" + "y" * 100 + "\n"
    )
    assert hook.problems(message) == []


@pytest.mark.parametrize("subject", ["Merge branch 'docs'", "fixup! Fetch: x", "squash! Fetch: x"])
def test_merges_and_fixups_pass_as_git_writes_them(subject):
    assert hook.problems(subject + "\n") == []


def test_the_hook_exits_one_naming_each_problem(tmp_path, capsys):
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("z" * 80 + "\n")
    assert hook.main(["check_commit_msg.py", str(message)]) == 1
    assert capsys.readouterr().err.count("commit message:") == 2
