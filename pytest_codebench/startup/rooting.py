"""Where a run is rooted: the rootdir and ini file follow where the user runs pytest, never where
the data lies.

pytest picks the rootdir and ini file from the command line's paths before it loads plugins
from their entry points, so it does not know yet that ``/data/x`` in
``--codebench-dataset /data/x`` is an option's value: it takes it for a path to test. The
rootdir then moves to where the dataset lies (or to a common parent of it and the invocation
directory), the run folder and ``.pytest_cache`` are written there, and another project's ini
file, addopts included, applies. Once this plugin is loaded (``pytest_load_initial_conftests``)
pytest has parsed the command line again with every option known; the setup is decided again
from the real paths and, where it differs, replaces the one pytest chose.

pytest offers no public way to do this: :func:`reroot` uses its ``determine_setup`` and the
config's fields it fills (``tests/test_run_files.py`` fails if pytest changes them). What the wrong
ini file did before this plugin was loaded (its ``-p`` plugins, its ``minversion``) cannot be
undone.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import pytest
from _pytest.config.findpaths import determine_setup


def reroot(config: pytest.Config, args: list[str]) -> None:
    """Decide the rootdir and ini file from the real paths of the command line; where they
    differ from pytest's first guess, swap them, and the wrong ini file's addopts in ``args``
    (pytest's final parse reads them) for the right one's."""
    namespace: Any = config.known_args_namespace
    given = {
        "inifile": namespace.inifilename,
        "override_ini": namespace.override_ini,  # pytest 9 reads -o here; 8.4 in getini
        "args": namespace.file_or_dir,
        "rootdir_cmd_arg": namespace.rootdir or None,
        "invocation_dir": config.invocation_params.dir,
    }
    accepted = inspect.signature(determine_setup).parameters
    rootpath, inipath, inicfg, *ignored = determine_setup(**{k: v for k, v in given.items() if k in accepted})
    if (rootpath, inipath) == (config.rootpath, config.inipath):
        return
    wrong_addopts: list[str] = list(config.getini("addopts"))
    wrong_pythonpath = [str(path) for path in config.getini("pythonpath")]
    confcutdir_was_derived = namespace.confcutdir == str(config.inipath.parent if config.inipath else config.rootpath)
    config._rootpath = rootpath
    config._inipath = inipath
    config._inicfg = inicfg
    if ignored:
        config._ignored_config_files = ignored[0]
    config._inicache.clear()
    config._parser.extra_info["rootdir"] = str(rootpath)
    config._parser.extra_info["inifile"] = str(inipath)
    if wrong_addopts and args[: len(wrong_addopts)] == wrong_addopts:
        del args[: len(wrong_addopts)]
    args[:0] = list(config.getini("addopts"))
    # The wrong ini file's pythonpath was put first on sys.path: another project's modules
    # would shadow this one's.
    for path in wrong_pythonpath:
        if path in sys.path:
            sys.path.remove(path)
    for path in reversed(config.getini("pythonpath")):
        sys.path.insert(0, str(path))
    if confcutdir_was_derived:
        namespace.confcutdir = str(inipath.parent if inipath else rootpath)
