"""Each chapter is stored as jupytext writes it, so opening it in JupyterLab (where it
opens as a notebook, tools/jupyterlab/) and saving leaves the file as it was: an autosave
does not rewrite the header's jupytext_version or re-wrap a caption, and `git status`
stays clean (issue 27's newcomer walk met both)."""

from __future__ import annotations

import difflib

import jupytext
import pytest
from conftest import REPO

CHAPTERS = sorted((REPO / "chapters").glob("0*.md"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_stored_as_jupytext_saves_it(path):
    stored = path.read_text(encoding="utf-8")
    saved = jupytext.writes(jupytext.reads(stored, fmt="md:myst"), fmt="md:myst")
    diff = "\n".join(difflib.unified_diff(stored.splitlines(), saved.splitlines(),
                                          "stored", "as JupyterLab saves it", lineterm="", n=0))
    assert saved == stored, (f"{path.name} changes when saved; rewrite it with "
                             f"`jupytext --to md:myst {path.relative_to(REPO)}`:\n{diff[:3000]}")


def test_there_are_seven_chapters():
    assert len(CHAPTERS) == 7, CHAPTERS
