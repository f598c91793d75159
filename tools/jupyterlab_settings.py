"""Install the course's JupyterLab settings for learners into a Python environment.

The settings live in ``tools/jupyterlab/`` (one place; ``make venv`` and Binder's
``binder/postBuild`` both run this script):

- ``overrides.json``: Markdown files (the chapters, MyST notebooks) open as notebooks with
  jupytext's JupyterLab extension ("Jupytext Notebook"), not in the text editor. Installed
  as ``{prefix}/share/jupyter/lab/settings/overrides.d/attention-course.json``, so that a
  ``overrides.json`` of the environment's own stays the user's, and wins. Also: no
  "Would you like to get notified about official Jupyter news?" prompt and no update check
  (``@jupyterlab/apputils-extension:notification``): the learner came for the course.
- ``page_config.json``: nbgrader's JupyterLab extension, ``@jupyter/nbgrader``, disabled:
  all its plugins, ``@jupyter/nbgrader:menu`` (the Nbgrader menu), ``:formgrader``,
  ``:assignment-list``, ``:course-list``, ``:create-assignment`` (the property inspector
  with editable points) and ``:validate-assignment`` (a Validate button that runs only the
  notebook's visible tests: its "Success!" would disagree with the course's check, which
  also runs the hidden ones). Locked too, as JupyterLab 4.1+ locks what was disabled before
  it (so the Plugin Manager does not offer it). Merged into
  ``{prefix}/etc/jupyter/labconfig/page_config.json``, the file ``jupyter labextension
  disable`` writes; an entry already there is kept, so an instructor's
  ``jupyter labextension enable @jupyter/nbgrader`` outlives a reinstall.

nbgrader's server extensions stay on: formgrader at /formgrader and ``nbgrader`` commands
work as before; only the learners' menus and panels are gone.

    python tools/jupyterlab_settings.py [--prefix PREFIX]   # default: this Python's sys.prefix

Uses the standard library only (Binder runs it before anything else is importable).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SETTINGS = Path(__file__).resolve().parent / "jupyterlab"
OVERRIDES_NAME = "attention-course.json"


def overrides_path(prefix: Path) -> Path:
    return prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / OVERRIDES_NAME


def page_config_path(prefix: Path) -> Path:
    return prefix / "etc" / "jupyter" / "labconfig" / "page_config.json"


def _read(path: Path) -> dict:
    if not path.is_file() or not path.read_text(encoding="utf-8").strip():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds {type(data).__name__}, not a JSON object")
    return data


def install(prefix: Path) -> list[Path]:
    """Write the course's settings under ``prefix``; return the files written.

    Raises ValueError when an existing page_config.json is not a JSON object."""
    prefix = Path(prefix)
    overrides = overrides_path(prefix)
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text((SETTINGS / "overrides.json").read_text(encoding="utf-8"), encoding="utf-8")

    page_config = page_config_path(prefix)
    config = _read(page_config)
    ours = _read(SETTINGS / "page_config.json")
    for key, entries in ours.items():
        have = config.setdefault(key, {})
        if isinstance(have, list):  # the list form JupyterLab also reads
            have = config[key] = {name: True for name in have}
        for name, value in entries.items():
            have.setdefault(name, value)
    page_config.parent.mkdir(parents=True, exist_ok=True)
    page_config.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return [overrides, page_config]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=Path(sys.prefix),
                        help="the environment to configure (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in install(args.prefix):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
