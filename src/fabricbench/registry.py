"""One way to register the pieces of a kind: launchers, importers, applications, report sections.

A ``Registry`` knows the package its pieces live in and finds them the first time it is asked:
it imports the package's modules (the ones it is given, else every module whose name does not
start with ``_``), and each module adds its pieces, either by the ``add`` decorator while it is
imported, or by what ``collect(module)`` reads from it (``FORMAT``, ``RECIPES``, a section's
``build``). An unknown name is the registry's ``unknown`` error, naming the known ones.

    LAUNCHERS = Registry("launcher", "fabricbench.launch", modules=("mpirun", "srun", "lab"),
                         key=lambda cls: cls.name)

    @LAUNCHERS.add
    class MpirunLauncher(Launcher): ...
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, Sequence, Tuple, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str, modules: Optional[Sequence[str]] = None,
                 key: Callable[[T], str] = lambda item: item.name,  # type: ignore[attr-defined]
                 collect: Optional[Callable[[ModuleType], Iterable[T]]] = None,
                 unknown: Optional[Callable[[str, List[str]], Exception]] = None,
                 broken: Optional[Callable[[str, Exception], Iterable[T]]] = None):
        self.kind = kind
        self.package = package
        self.modules = tuple(modules) if modules is not None else None
        self.key = key
        self.collect = collect
        self.unknown = unknown
        self.broken = broken  # what a module that fails to import stands for (else the error propagates)
        self._items: Dict[str, T] = {}
        self._loaded = False

    def add(self, item: T) -> T:
        """Register `item` under its key (usable as a class decorator)."""
        self._items[self.key(item)] = item
        return item

    def _module_names(self) -> Tuple[str, ...]:
        if self.modules is not None:
            return self.modules
        package = importlib.import_module(self.package)
        return tuple(info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_"))

    def load(self) -> Dict[str, T]:
        """name -> item, every module imported once, in the modules' order."""
        if not self._loaded:
            self._loaded = True
            for name in self._module_names():
                full = f"{self.package}.{name}"
                try:
                    module = importlib.import_module(full)
                except Exception as exc:  # noqa: BLE001 - the registry says what a broken module becomes
                    if self.broken is None:
                        raise
                    for item in self.broken(name, exc):
                        self.add(item)
                    continue
                for item in (self.collect(module) if self.collect else ()):
                    self.add(item)
        return self._items

    def names(self) -> List[str]:
        return list(self.load())

    def items(self) -> List[T]:
        return list(self.load().values())

    def get(self, name: str) -> T:
        found = self.load()
        try:
            return found[name]
        except KeyError:
            if self.unknown is not None:
                raise self.unknown(name, list(found)) from None
            from fabricbench.errors import UsageError

            raise UsageError(f"unknown {self.kind} '{name}'; choose one of: {', '.join(found)}") from None


def one(attribute: str) -> Callable[[ModuleType], Iterable[Any]]:
    """collect= for modules that each hold one piece in `attribute` (an importer's FORMAT)."""
    return lambda module: [getattr(module, attribute)]


def each(attribute: str) -> Callable[[ModuleType], Iterable[Any]]:
    """collect= for modules that each hold a list of pieces in `attribute` (an app module's RECIPES)."""
    return lambda module: list(getattr(module, attribute))
