"""The package list, found rather than written: every folder with an
``__init__.py`` under the three roots, installed under one import namespace,
``memplan``, like ``xdsl.dialects`` / ``xdsl.transforms``
(``memdialect/`` is ``memplan.dialect``, ``passes/`` ``memplan.passes``,
``tools/`` ``memplan.tools``; ``memplan`` itself is an implicit namespace
package). Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import setup

ROOTS = {"memplan.dialect": "memdialect", "memplan.passes": "passes", "memplan.tools": "tools"}


def packages() -> list[str]:
    here = Path(__file__).parent
    found = []
    for package, folder in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            relative = init.parent.relative_to(here / folder).parts
            found.append(".".join((package, *relative)))
    return found


setup(packages=packages(), package_dir=ROOTS)
