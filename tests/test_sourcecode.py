"""API references count only in real code: not in comments, literals or `#if 0` branches."""

from __future__ import annotations

import pytest

from pytest_codebench.benchmarks.computeeval.sourcecode import code_tokens, language_for, missing_references


def markers(source: str) -> list[str]:
    """The `live*` / `dead*` identifiers that survive, in order: enough to see what was kept."""
    return [token for token in code_tokens(source, "c") if token.startswith(("live", "dead"))]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("solution.py", "python"),
        ("stubs/kernels.pyi", "python"),
        ("RUN.PY", "python"),
        ("solution.cu", "c"),
        ("include/helpers.cuh", "c"),
        ("main.cpp", "c"),
        ("Makefile", "c"),
        ("python.txt", "c"),
    ],
)
def test_language_for(path: str, language: str) -> None:
    assert language_for(path) == language


def test_c_punctuators_are_single_tokens() -> None:
    source = "a::b->c<<<grid, block>>>(x << 2, y >> 1, ...); #define CAT(a, b) a##b"
    assert code_tokens(source, "c") == [
        "a", "::", "b", "->", "c", "<<<", "grid", ",", "block", ">>>",
        "(", "x", "<<", "2", ",", "y", ">>", "1", ",", "...", ")", ";",
        "#", "define", "CAT", "(", "a", ",", "b", ")", "a", "##", "b",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "hidden",
    [
        "/* cudaMalloc */",
        "/* several\n lines: cudaMalloc\n */",
        '"cudaMalloc"',
        '"a \\" quote, then cudaMalloc"',
        "'cudaMalloc'",
        "L'c'",
        'u8"cudaMalloc"',
        'L"cudaMalloc"',
        'U"cudaMalloc"',
        'R"(cudaMalloc)"',
        'R"x(a )" that is not the end; cudaMalloc)x"',
        'LR"(cudaMalloc)"',
        'u8R"--(cudaMalloc\n spanning lines)--"',
    ],
)
def test_comments_and_literals_are_removed(hidden: str) -> None:
    assert code_tokens(f"use({hidden});", "c") == ["use", "(", ")", ";"]


@pytest.mark.parametrize(
    "source",
    [
        "// cudaMalloc(&p, n);\nuse();",
        "// a comment continued \\\n cudaMalloc(&p, n);\nuse();",
        "// continued with spaces after the backslash \\  \r\n cudaMalloc();\nuse();",
    ],
)
def test_line_comments_end_at_the_unspliced_newline(source: str) -> None:
    assert code_tokens(source, "c") == ["use", "(", ")", ";"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("int n = 1'000'000;", ["int", "n", "=", "1'000'000", ";"]),
        ("x = 0xFFFF'FFFFull + 'c';", ["x", "=", "0xFFFF'FFFFull", "+", ";"]),
        (
            "f(0b1010'1010, 1.5e-3f, .5, 0x1p+4);",
            ["f", "(", "0b1010'1010", ",", "1.5e-3f", ",", ".5", ",", "0x1p+4", ")", ";"],
        ),
        # Were the separators read as quotes, cudaFree would be hidden in a char literal.
        (
            "a = 1'0; cudaFree(p); b = 2'0;",
            ["a", "=", "1'0", ";", "cudaFree", "(", "p", ")", ";", "b", "=", "2'0", ";"],
        ),
    ],
)
def test_digit_separators_are_part_of_numbers(source: str, expected: list[str]) -> None:
    assert code_tokens(source, "c") == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("#if 0\ndead\n#endif\nlive", ["live"], id="if-0"),
        pytest.param("#if false\ndead\n#endif\nlive", ["live"], id="if-false"),
        pytest.param("#if (0)\ndead\n#else\nlive\n#endif", ["live"], id="parenthesised"),
        pytest.param("  #  if 0\ndead\n  # else\nlive\n#endif", ["live"], id="spaced-directives"),
        pytest.param("#if 0\ndead1\n#else\nlive1\n#endif\nlive2", ["live1", "live2"], id="else"),
        pytest.param(
            "#if 0\n#if 1\ndead1\n#else\ndead2\n#endif\ndead3\n#else\nlive\n#endif",
            ["live"],
            id="nested-else-belongs-to-the-inner-if",
        ),
        pytest.param(
            "#if 0\n#ifdef A\ndead1\n#else\ndead2\n#endif\ndead3\n#else\nlive\n#endif",
            ["live"],
            id="nested-ifdef-else-belongs-to-the-ifdef",
        ),
        pytest.param(
            "#if 0\n#ifdef A\n#ifndef B\ndead\n#endif\n#endif\n#elif defined(C)\nlive1\n#else\nlive2\n#endif",
            ["live1", "live2"],
            id="elif-with-unknown-condition",
        ),
        pytest.param("#if 0\ndead1\n#elif 0\ndead2\n#else\nlive\n#endif", ["live"], id="elif-0"),
        pytest.param("#if 1\nlive\n#else\ndead\n#endif", ["live"], id="if-1-else"),
        pytest.param("#if 0\ndead1\n#elif 1\nlive\n#else\ndead2\n#endif", ["live"], id="elif-1"),
        pytest.param("#ifdef FOO\nlive1\n#else\nlive2\n#endif", ["live1", "live2"], id="ifdef-keeps-both"),
        pytest.param(
            "#ifdef A\n#if 0\ndead\n#endif\nlive1\n#else\nlive2\n#endif",
            ["live1", "live2"],
            id="inside-ifdef",
        ),
        pytest.param("#if 0\ndon't /* \" */\n#endif\nlive", ["live"], id="apostrophe-in-dead-prose"),
        pytest.param("/* #if 0 */\nlive1\n// #if 0\nlive2", ["live1", "live2"], id="directive-in-comment"),
        pytest.param('#define S "#if 0"\nlive', ["live"], id="directive-in-string"),
        pytest.param("#if \\\n  0\ndead\n#endif\nlive", ["live"], id="continued-condition"),
        pytest.param("#if N > 0\nlive1\n#else\nlive2\n#endif", ["live1", "live2"], id="computed-condition"),
        pytest.param("#endif\n#else\nlive", ["live"], id="stray-directives"),
        pytest.param("live\n#if 0\ndead", ["live"], id="unterminated-if-0"),
    ],
)
def test_dead_preprocessor_branches_are_removed(source: str, expected: list[str]) -> None:
    assert markers(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("#include <thrust/sort.h>", ["#", "include", "<", "thrust", "/", "sort", ".", "h", ">"]),
        (
            "#if __CUDA_ARCH__ >= 800\nlive\n#endif",
            ["#", "if", "__CUDA_ARCH__", ">", "=", "800", "live", "#", "endif"],
        ),
        # The lines that open and close a dead branch are outside it.
        ("#if 0\ndead\n#else\nlive\n#endif", ["#", "if", "0", "#", "else", "live", "#", "endif"]),
    ],
)
def test_directive_lines_outside_dead_branches_count(source: str, expected: list[str]) -> None:
    assert code_tokens(source, "c") == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("int x; /* cudaMalloc", ["int", "x", ";"]),
        ('x = "cudaMalloc', ["x", "="]),
        ("x = 'c", ["x", "="]),
        ('x = R"(cudaMalloc', ["x", "="]),
        ('x = R"delim(cudaMalloc)"', ["x", "="]),
        ("x; // cudaMalloc", ["x", ";"]),
        # GCC ends an unterminated quote at the end of its line, and so do we.
        ('x = "oops\ncudaMalloc();', ["x", "=", "cudaMalloc", "(", ")", ";"]),
    ],
)
def test_unterminated_c_constructs_at_eof(source: str, expected: list[str]) -> None:
    assert code_tokens(source, "c") == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("/* " * 50_000 + "x", [], id="comment-openers"),
        pytest.param('"' * 100_001 + "x", [], id="quotes"),
        pytest.param('R"' + "d" * 16 + "(" + ")d" * 50_000 + " x", [], id="raw-string-near-misses"),
        pytest.param("#if 0\n" * 50_000 + "dead", ["#", "if", "0"], id="nested-if-0"),
    ],
)
def test_pathological_input_is_scanned_quickly(source: str, expected: list[str]) -> None:
    # Quadratic scanning would make these take minutes; linear scanning takes milliseconds.
    assert code_tokens(source, "c") == expected


def test_python_tokens_keep_names_operators_and_numbers() -> None:
    source = 'def f(x: int) -> int:  # comment\n    return x ** 2 + len("text")\n'
    assert code_tokens(source, "python") == [
        "def", "f", "(", "x", ":", "int", ")", "->", "int", ":",
        "return", "x", "**", "2", "+", "len", "(", ")",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("# torch.cuda.synchronize()\n", ["missing torch.cuda.synchronize"], id="comment"),
        pytest.param(
            '"""torch.cuda.synchronize()"""\n',
            ["missing torch.cuda.synchronize"],
            id="module-docstring",
        ),
        pytest.param(
            'def f():\n    """Calls torch.cuda.synchronize()."""\n',
            ["missing torch.cuda.synchronize"],
            id="docstring",
        ),
        pytest.param(
            'print(f"before torch.cuda.synchronize {x}")\n',
            ["missing torch.cuda.synchronize"],
            id="f-string",
        ),
        pytest.param("msg = b'torch.cuda.synchronize'\n", ["missing torch.cuda.synchronize"], id="bytes"),
        pytest.param(
            "from torch.cuda import synchronize\nsynchronize()\n",
            ["missing torch.cuda.synchronize"],
            id="other-spelling",
        ),
        pytest.param("import torch\ntorch.cuda.synchronize()\n", [], id="call"),
        pytest.param("torch . cuda.synchronize ()  # done\n", [], id="spaced-call"),
        pytest.param("wait = torch.cuda.synchronize\n", [], id="attribute"),
    ],
)
def test_python_reference_counts_only_in_code(source: str, expected: list[str]) -> None:
    assert missing_references({"solution.py": source}, "torch.cuda.synchronize") == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("x = 'torch.cuda  # unterminated\ny = 1\n", ["x", "=", "y", "=", "1"], id="quote"),
        pytest.param('x = 1\n"""torch.cuda\n', ["x", "=", "1"], id="triple-quote"),
        pytest.param(
            "f(torch.cuda,  # comment\n  'str'\n",
            ["f", "(", "torch", ".", "cuda", ","],
            id="open-bracket",
        ),
        pytest.param(
            "if x:\n    a()\n  b('s')  # c\n",
            ["if", "x", ":", "a", "(", ")", "b", "(", ")"],
            id="bad-dedent",
        ),
    ],
)
def test_python_tokenize_errors_fall_back_without_raising(source: str, expected: list[str]) -> None:
    assert code_tokens(source, "python") == expected


SOLUTION = """
#include <thrust/sort.h>
// cudaFree(buffer);  a comment does not count
void run(float* data, int n) {
    cudaMalloc(&data, n * sizeof(float));
    thrust::sort(thrust::device, data, data + n);
    puts("cub::DeviceReduce::Sum");
}
"""


@pytest.mark.parametrize(
    ("references", "expected"),
    [
        (None, []),
        ([], []),
        ((), []),
        ({}, []),
        ({"all": [], "any": []}, []),
        ("cudaMalloc", []),
        ("cudaFree", ["missing cudaFree"]),
        (["cudaMalloc", "thrust::sort"], []),
        (
            ("cudaMalloc", "cudaFree", "cub::DeviceReduce::Sum"),
            ["missing cudaFree", "missing cub::DeviceReduce::Sum"],
        ),
        (["cudaFree", "cudaFree"], ["missing cudaFree"]),
        ({"all": ["cudaMalloc"]}, []),
        # Real releases write a key without a requirement as null (2026-1: 203 problems).
        ({"all": ["cudaMalloc"], "any": None}, []),
        ({"all": ["cudaFree"], "any": None}, ["missing cudaFree"]),
        ({"all": None, "any": ["thrust::sort", "cudaFree"]}, []),
        ({"all": None, "any": ["cudaFree"]}, ["none of cudaFree"]),
        ({"any": ["thrust::stable_sort", "thrust::sort"]}, []),
        (
            {"any": ["thrust::stable_sort", "cub::DeviceRadixSort::SortKeys"]},
            ["none of thrust::stable_sort, cub::DeviceRadixSort::SortKeys"],
        ),
        ({"all": ["cudaMalloc", "cudaFree"], "any": ["thrust::sort"]}, ["missing cudaFree"]),
        (
            {"all": ["cudaFree"], "any": ["cudaMemcpy", "cudaMemcpyAsync"]},
            ["missing cudaFree", "none of cudaMemcpy, cudaMemcpyAsync"],
        ),
    ],
)
def test_reference_shapes(references: object, expected: list[str]) -> None:
    assert missing_references({"solution.cu": SOLUTION}, references) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("references", "message"),
    [
        (42, r"references must be a list of strings, not int"),
        (b"cudaMalloc", r"references must be a list of strings, not bytes"),
        ({"cudaMalloc"}, r"references must be a list of strings, not set"),
        (["cudaMalloc", 3], r"references\[1\] must be a string, not int"),
        (["cudaMalloc", "  "], r"references\[1\] is blank"),
        ("", r"references\[0\] is blank"),
        ({"all": ["a"], "one_of": ["b"]}, r"unknown key\(s\) 'one_of'"),
        ({1: ["a"]}, r"unknown key\(s\) 1"),
        ({"all": "cudaMalloc"}, r"references\['all'\] must be a list of strings, not str"),
        ({"any": [None]}, r"references\['any'\]\[0\] must be a string, not NoneType"),
    ],
)
def test_bad_reference_shapes_raise(references: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        missing_references({"solution.cu": SOLUTION}, references)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("thrust::sort(v.begin(), v.end());", []),
        ("thrust :: sort (v.begin(), v.end());", []),
        ("using namespace thrust;\nsort(v.begin(), v.end());", ["missing thrust::sort"]),
        ("thrust::sort_by_key(k, k + n, v);", ["missing thrust::sort"]),
        ("mythrust::sort(v);", ["missing thrust::sort"]),
        ("thrust::/* sneaky */sort(v);", []),
    ],
)
def test_qualified_names_match_token_for_token(source: str, expected: list[str]) -> None:
    assert missing_references({"solution.cu": source}, "thrust::sort") == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("cudaMalloc(&p, n);", []),
        ("cudaMallocManaged(&p, n);", ["missing cudaMalloc"]),
        ("my_cudaMalloc(&p, n);", ["missing cudaMalloc"]),
        ("auto f = &cudaMalloc;", []),
    ],
)
def test_identifiers_match_whole(source: str, expected: list[str]) -> None:
    assert missing_references({"solution.cu": source}, "cudaMalloc") == expected


def test_a_reference_may_be_used_in_any_file() -> None:
    files = {
        "solution.cu": '#include "launch.cuh"\n// cudaLaunchKernelEx\nint main() { go(); }\n',
        "launch.cuh": "inline int go() { return cudaLaunchKernelEx(&config, kernel); }\n",
        "driver.py": "# thrust::sort\nimport subprocess\n",
    }
    references = {
        "all": ["cudaLaunchKernelEx"],
        "any": ["thrust::sort", "cub::DeviceRadixSort::SortKeys"],
    }
    assert missing_references(files, references) == ["none of thrust::sort, cub::DeviceRadixSort::SortKeys"]
    files["sort.cu"] = "void s() { cub::DeviceRadixSort::SortKeys(tmp, bytes, in, out, n); }\n"
    assert missing_references(files, references) == []


def test_no_files_means_everything_is_missing() -> None:
    assert missing_references({}, ["cudaMalloc", "cudaFree"]) == [
        "missing cudaMalloc",
        "missing cudaFree",
    ]


def test_literal_only_use_is_missing_in_c() -> None:
    source = """
int main() {
    printf("cudaLaunchKernelEx(&config, kernel)\\n");
#if 0
    cudaLaunchKernelEx(&config, kernel);
#endif
}
"""
    assert missing_references({"solution.cu": source}, ["cudaLaunchKernelEx"]) == ["missing cudaLaunchKernelEx"]
