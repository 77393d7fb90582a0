"""The application catalogue: real codes with standard inputs, one small recipe module per code.

    recipe = get_recipe("lammps-lj")
    recipe.find()                                   # the program, or AppMissing naming the package
    prepared = recipe.prepare(folder, size=1, ranks=4)   # input files + serial set-up commands
    argv = recipe.argv(prepared)                    # one rank's program line (a launcher wraps it)
    result = recipe.parse(stdout, prepared)         # AppResult: fom, elapsed_s, timers, facts

Every module in MODULES exposes ``RECIPES``; see ``apps.base.Recipe`` for what a recipe
provides. Running one is ``workflows.app``'s job; a recipe starts no process.
"""
from __future__ import annotations

from typing import List

from fabricbench.apps.base import AppMissing, AppOutputError, AppResult, Figure, Prepared, Recipe
from fabricbench.errors import UsageError
from fabricbench.registry import Registry, each

MODULES = ("lammps", "espresso", "openfoam")

RECIPES: Registry[Recipe] = Registry(
    "application", "fabricbench.apps", modules=MODULES, collect=each("RECIPES"),
    unknown=lambda name, known: UsageError(f"unknown application '{name}'; the catalogue has: {', '.join(known)} "
                                           "(fabricbench app list)"))


def recipe_names() -> List[str]:
    return RECIPES.names()


def all_recipes() -> List[Recipe]:
    return RECIPES.items()


def get_recipe(name: str) -> Recipe:
    return RECIPES.get(name)


def parse_app_list(text: str) -> List[Recipe]:
    """'lammps-lj,qe-si' -> recipes (no repeats, order kept)."""
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    if not names:
        raise UsageError(f"--apps needs at least one application, e.g. --apps {','.join(recipe_names()[:2])}")
    if len(set(names)) != len(names):
        raise UsageError("--apps lists an application twice")
    return [get_recipe(n) for n in names]


__all__ = ["AppMissing", "AppOutputError", "AppResult", "Figure", "Prepared", "Recipe", "get_recipe",
           "recipe_names", "all_recipes", "parse_app_list"]
