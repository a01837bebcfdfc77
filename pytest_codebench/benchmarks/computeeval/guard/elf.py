"""The link check: what the built test programs of a ComputeEval problem may not contain,
read by the harness from the files themselves, outside any process of the model.

The main guard (guard.main_guard) proves from inside the test program that main returned,
so code linked into that program can act around it. Calls inside an executable bind at link
time to the executable's own definitions, which no preload library can see: a solution that
defines ``__libc_start_main``, ``exit`` or ``__assert_fail`` replaces libc's for the test's
own calls (a failed assert that returns, an ``exit(1)`` that does not end). So before a test
runs, every dynamically linked program the build left under the workspace must not:

- define a symbol (in ``.symtab``, else ``.dynsym``) that a library it needs exports
  (interposition), except C++ weak or unique ``_Z`` symbols (inline functions and template
  instantiations, which libstdc++ exports too), the replaceable ``operator new``/``delete``,
  and data the linker copied from a library (a ``COPY`` relocation: ``stdout``, ``std::cout``);
  nor a local function of such a name that the program does not also import (a hidden global
  of one object file: the linker makes it local, and the other files' calls bound to it; a
  ``static`` helper of that name beside calls to the library's own is allowed);
- define an IFUNC symbol or carry an ``IRELATIVE`` relocation (a resolver runs before main and
  before the guard);
- carry a preinit array (code that runs before the guard);
- need a library by a path, or look for libraries through an RPATH/RUNPATH: the libraries it
  needs are found where the machine's own are.

An executable without ``.symtab`` (stripped by the problem's build) is checked on its
``.dynsym`` only: the test's calls into a stripped program's own definitions cannot be seen.
Statically linked programs are not checked here: the guard cannot load into them, so their
exit 0 is never proven anyway. The reader handles 64-bit little-endian ELF (x86-64, AArch64),
what CUDA builds for; any other file is not a program to check.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import stat
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
ET_EXEC, ET_DYN = 2, 3
PT_INTERP = 3
SHT_SYMTAB, SHT_RELA, SHT_DYNAMIC, SHT_DYNSYM, SHT_PREINIT_ARRAY = 2, 4, 6, 11, 16
DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_PREINIT_ARRAY = 1, 15, 29, 32
STB_WEAK, STB_GNU_UNIQUE = 2, 10
STT_FUNC, STT_GNU_IFUNC = 2, 10
SHN_UNDEF = 0
# Relocation types by machine (e_machine): (COPY, IRELATIVE).
RELOCATIONS = {62: (5, 37), 183: (1024, 1032)}  # x86-64, AArch64
# The C++ allocation functions a program may replace (the standard says so).
REPLACEABLE = ("_Znw", "_Zna", "_Zdl", "_Zda")
# Programs larger than this are not read (no test program of a real release comes close).
MAX_BYTES = 2 << 30


class NotChecked(Exception):
    """The file is not a dynamically linked 64-bit little-endian program."""


@dataclasses.dataclass(frozen=True)
class Symbol:
    name: str
    weak: bool  # weak or GNU unique binding
    ifunc: bool


@dataclasses.dataclass(frozen=True)
class Program:
    """What the check needs of one program: the symbols it defines (``.symtab``, else
    ``.dynsym``), the libraries it needs, and what runs or binds before main."""

    defined: list[Symbol]
    # Functions of local binding that the program does not also import: a hidden global of
    # one object file (the linker makes it local) that the other object files' calls bound to.
    local: list[str]
    copied: frozenset[str]  # names with a COPY relocation
    needed: list[str]
    search_paths: list[str]  # RPATH and RUNPATH
    irelative: int  # IRELATIVE relocations
    preinit: bool
    stripped: bool


def _unversioned(name: str) -> str:
    return name.split("@", 1)[0]


class _Reader:
    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        if data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
            raise NotChecked("not a 64-bit little-endian ELF file")
        self.type, self.machine = struct.unpack_from("<HH", data, 16)
        phoff, shoff = struct.unpack_from("<QQ", data, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
        self.interp = any(struct.unpack_from("<I", data, phoff + i * phentsize)[0] == PT_INTERP for i in range(phnum))
        # (type, offset, size, link, entsize) per section
        self.sections = [struct.unpack_from("<4xI16xQQI4x8xQ", data, shoff + i * shentsize) for i in range(shnum)]

    def string(self, table: int, offset: int) -> str:
        start = self.sections[table][1] + offset
        end = self.data.find(b"\0", start)
        return self.data[start:end].decode("utf-8", "replace")

    def entries(self, kind: int, fmt: str) -> Iterator[tuple[int, tuple[int, ...]]]:
        """(the string table's index, the entry) of every entry of the sections of ``kind``."""
        size = struct.calcsize(fmt)
        for section_type, offset, length, link, _ in self.sections:
            if section_type == kind:
                for at in range(offset, offset + length - size + 1, size):
                    yield link, struct.unpack_from(fmt, self.data, at)

    def symbols(self, kind: int) -> list[tuple[str, int, int, int]]:
        """(name, binding, type, section index) of each symbol of the tables of ``kind``."""
        return [
            (self.string(link, name), info >> 4, info & 0xF, shndx)
            for link, (name, info, shndx) in self.entries(kind, "<IBxH16x")
        ]


def read_program(data: mmap.mmap) -> Program:
    reader = _Reader(data)
    if reader.type not in (ET_EXEC, ET_DYN) or not reader.interp:
        raise NotChecked("not a dynamically linked program")
    copy, irelative = RELOCATIONS.get(reader.machine, (-1, -1))
    dynamic = [(link, tag, value) for link, (tag, value) in reader.entries(SHT_DYNAMIC, "<qQ")]
    dynsym = reader.symbols(SHT_DYNSYM)
    relocations = [info for _, (_, info, _) in reader.entries(SHT_RELA, "<QQq")]
    symtab = reader.symbols(SHT_SYMTAB)
    table = symtab or dynsym
    return Program(
        defined=[
            Symbol(_unversioned(name), binding in (STB_WEAK, STB_GNU_UNIQUE), kind == STT_GNU_IFUNC)
            for name, binding, kind, shndx in table
            if shndx != SHN_UNDEF and binding != 0 and name
        ],
        local=sorted(
            {
                _unversioned(name)
                for name, binding, kind, shndx in table
                if binding == 0 and kind in (STT_FUNC, STT_GNU_IFUNC) and shndx != SHN_UNDEF and name
            }
            - {_unversioned(name) for name, _, _, shndx in dynsym if shndx == SHN_UNDEF}
        ),
        copied=frozenset(
            _unversioned(dynsym[info >> 32][0])
            for info in relocations
            if info & 0xFFFFFFFF == copy and (info >> 32) < len(dynsym)
        ),
        needed=[reader.string(link, value) for link, tag, value in dynamic if tag == DT_NEEDED],
        search_paths=[reader.string(link, value) for link, tag, value in dynamic if tag in (DT_RPATH, DT_RUNPATH)],
        irelative=sum(1 for info in relocations if info & 0xFFFFFFFF == irelative),
        preinit=any(tag == DT_PREINIT_ARRAY for _, tag, _ in dynamic)
        or any(s[0] == SHT_PREINIT_ARRAY and s[2] for s in reader.sections),
        stripped=not symtab,
    )


def open_program(path: Path) -> Program:
    """``path``'s program, opened without following a link (NotChecked if it is none)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size < 64 or info.st_size > MAX_BYTES:
            raise NotChecked("not a regular file of a program's size")
        with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as data:
            try:
                return read_program(data)
            except (struct.error, IndexError, ValueError) as exc:
                raise NotChecked(f"unreadable ELF: {exc}") from None
    finally:
        os.close(fd)


def programs(workspace: Path) -> Iterator[tuple[Path, Program]]:
    """Every executable dynamically linked program under ``workspace`` (links not followed)."""
    for folder, dirs, files in os.walk(workspace):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            try:
                if not os.lstat(path).st_mode & 0o111:
                    continue
                yield path, open_program(path)
            except (NotChecked, OSError):
                continue


def violations(program: Program, exports: Callable[[str], frozenset[str]]) -> list[str]:
    """What ``program`` must not do, in words (empty when it passes); ``exports(soname)`` is
    what the library of that name exports where the test runs."""
    found = []
    for name in program.needed:
        if "/" in name:
            found.append(f"it needs the library {name!r} by a path")
    for paths in program.search_paths:
        found.append(f"it searches for libraries in {paths!r} (RPATH/RUNPATH)")
    if program.preinit:
        found.append("it has a preinit array (code that runs before the main guard)")
    ifuncs = sorted({s.name for s in program.defined if s.ifunc})
    if ifuncs or program.irelative:
        found.append(f"it has IFUNC resolvers (code that runs before main): {', '.join(ifuncs) or 'IRELATIVE'}")
    libraries = [(name, exports(name)) for name in program.needed if "/" not in name]
    for symbol in program.defined:
        if symbol.name in program.copied or symbol.name.startswith(REPLACEABLE):
            continue
        if symbol.weak and symbol.name.startswith("_Z"):
            continue
        owner = next((soname for soname, names in libraries if symbol.name in names), None)
        if owner is not None:
            found.append(f"it defines {symbol.name}, which {owner} exports (it replaces the library's)")
    for name in program.local:
        owner = next((soname for soname, names in libraries if name in names), None)
        if owner is not None:
            found.append(f"it defines {name} (hidden), which {owner} exports, and calls no other")
    return list(dict.fromkeys(found))
