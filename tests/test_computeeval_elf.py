"""The link check's rules (elf) on programs built here with cc and c++: what a real
linker writes, read by the harness's own ELF reader."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_codebench.benchmarks.computeeval.guard import elf

pytestmark = pytest.mark.skipif(not (shutil.which("cc") and shutil.which("nm")), reason="needs cc and nm")


def exports(soname: str) -> frozenset[str]:
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    paths = [line.split()[-1] for line in listing.splitlines() if line.strip().startswith(soname + " ")]
    names = subprocess.run(["nm", "-D", "--defined-only", "-P", paths[0]], capture_output=True, text=True).stdout
    return frozenset(line.split()[0].split("@", 1)[0] for line in names.splitlines() if line.strip())


def built(tmp_path: Path, source: str, *flags: str, cxx: bool = False) -> list[str]:
    """The rules ``source`` breaks once built into a program (with ``flags``)."""
    name = "main.cpp" if cxx else "main.c"
    (tmp_path / name).write_text(source)
    subprocess.run(["c++" if cxx else "cc", "-o", "test.out", name, *flags], cwd=tmp_path, check=True)
    found = list(elf.programs(tmp_path))
    assert [path.name for path, _ in found] == ["test.out"]
    return elf.violations(found[0][1], exports)


HONEST_C = '#include <stdio.h>\nint main(void) { fprintf(stdout, "ok\\n"); return 0; }\n'
HONEST_CXX = (
    "#include <iostream>\n#include <map>\n#include <string>\n#include <vector>\n"
    "void *operator new(std::size_t n) { return std::malloc(n ? n : 1); }\n"
    "void operator delete(void *p) noexcept { std::free(p); }\n"
    'int main() { std::map<std::string, std::vector<int>> m; m["a"].push_back(1);'
    " std::cout << m.size() << std::endl; return 0; }\n"
)


def test_honest_programs_break_no_rule(tmp_path):
    assert built(tmp_path, HONEST_C) == []


def test_honest_cxx_with_templates_copied_data_and_its_own_operator_new_breaks_no_rule(tmp_path):
    assert built(tmp_path, "#include <cstdlib>\n" + HONEST_CXX, cxx=True) == []


def test_a_stripped_program_is_read_on_its_dynamic_symbols(tmp_path):
    program = "#include <stdlib.h>\nvoid exit(int s) { (void)s; }\nint main(void) { exit(1); return 0; }\n"
    # -rdynamic exports the program's own exit: a stripped program still shows it in .dynsym.
    found = built(tmp_path, program, "-s", "-rdynamic")
    assert found == ["it defines exit, which libc.so.6 exports (it replaces the library's)"]


def test_a_program_searching_libraries_elsewhere_breaks_a_rule(tmp_path):
    found = built(tmp_path, HONEST_C, "-Wl,-rpath,$ORIGIN/lib")
    assert found == ["it searches for libraries in '$ORIGIN/lib' (RPATH/RUNPATH)"]


def test_a_preinit_array_breaks_a_rule(tmp_path):
    program = HONEST_C + (
        "static void first(void) {}\n"
        '__attribute__((section(".preinit_array"), used)) static void (*run_first)(void) = first;\n'
    )
    assert built(tmp_path, program) == ["it has a preinit array (code that runs before the main guard)"]


def test_files_that_are_not_dynamically_linked_programs_are_not_read(tmp_path):
    (tmp_path / "script.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "script.sh").chmod(0o755)
    (tmp_path / "lib.c").write_text("int f(void) { return 1; }\n")
    subprocess.run(["cc", "-c", "-o", "lib.o", "lib.c"], cwd=tmp_path, check=True)
    (tmp_path / "lib.o").chmod(0o755)
    (tmp_path / "link").symlink_to("/bin/ls")
    assert list(elf.programs(tmp_path)) == []


def test_a_hidden_definition_of_a_library_function_breaks_a_rule(tmp_path):
    """The linker makes a hidden global local, yet the other object files' calls bound to it."""
    (tmp_path / "solution.c").write_text('__attribute__((visibility("hidden"))) void exit(int s) { (void)s; }\n')
    program = "#include <stdlib.h>\nint main(void) { exit(1); return 0; }\n"
    found = built(tmp_path, program, "solution.c")
    assert found == ["it defines exit (hidden), which libc.so.6 exports, and calls no other"]


def test_a_static_helper_beside_the_library_function_it_shares_a_name_with_breaks_no_rule(tmp_path):
    (tmp_path / "solution.c").write_text("static void exit(int s) { (void)s; }\nvoid helper(void) { exit(0); }\n")
    program = "#include <stdlib.h>\nvoid helper(void);\nint main(void) { helper(); exit(0); }\n"
    assert built(tmp_path, program, "solution.c") == []
