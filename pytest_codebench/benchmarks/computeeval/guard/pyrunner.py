"""The main guard of a ComputeEval Python test (``cuda_python``): a script the harness runs in
the test's own interpreter, in place of ``python SCRIPT ARGS``, as ``python -S THIS SCRIPT ARGS``.

Copied where commands can read it (guard.main_guard); the plugin imports it only for
:func:`ending`. It uses the standard library only, whatever the interpreter.

The test imports the solution, so the solution can end the process with status 0 before the
test judged anything (``os._exit(0)`` at import, ``sys.exit(0)`` from its function or an
atexit handler). Like the C guard, this one writes a record when the script starts and one
with its exit status when it ran to its end, each with the run's nonce, to a private
duplicate of stderr; the harness trusts exit 0 only with a "return 0" record
(rules.unproven_exit). The nonce is taken out of the environment before ``site``
runs (``-S``, then ``site.main()`` here): a ``sitecustomize`` or ``.pth`` file of the
workspace runs after it is gone. A ``SystemExit`` raised through a frame of a solution file
(paths in CODEBENCH_GUARD_SOLUTION) is the solution ending the test, not the test's verdict:
status 1, and a record that says so (the item is tampered). What stays in this process's
memory, the solution can still read: see docs/untrusted-code.md.

A script that passed (status 0) ends with the status its nonce names (:func:`ending`): 0 in
the real run, a status K in a canary run (guard.pycanary), whose nonce the harness
chose to name K. Nothing else tells the two runs apart, and K is worked out only once the
script has ended: a solution that forges a pass (its own records, ``os._exit(0)``, a patched
``sys.exit``) without working it out ends the canary otherwise, and is tampered.
"""

import hashlib
import os
import sys
import tokenize
import types

NONCE_VAR = "CODEBENCH_GUARD_NONCE"
ROOT_VAR = "CODEBENCH_GUARD_ROOT"
SOLUTION_VAR = "CODEBENCH_GUARD_SOLUTION"
MARK = "codebench-guard"
SOLUTION_EXIT = "solution_exit"  # guard.main_guard.SOLUTION_EXIT
# What a passing script ends with: 0, or a canary's status, which means nothing else (not 1, a
# failure; 97, the guard's refusal; 125 and above, the shell's and the signals').
ENDINGS = [0] + [status for status in range(2, 125) if status != 97]


def _status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def ending(nonce: str) -> int:
    """The status a script that passed ends with, under the run's ``nonce``."""
    return ENDINGS[int(hashlib.sha256(nonce.encode()).hexdigest(), 16) % len(ENDINGS)]


def _through_solution(error: BaseException, solution: set[str]) -> str | None:
    """The solution file a frame of ``error``'s traceback ran in, if any."""
    tb = error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name and os.path.realpath(name) in solution:
            return name
        tb = tb.tb_next
    return None


def main() -> None:
    nonce = os.environ.pop(NONCE_VAR, "")
    root = os.environ.get(ROOT_VAR, "")
    solution = {os.path.realpath(os.path.join(root, p)) for p in os.environ.pop(SOLUTION_VAR, "").split("\n") if p}
    args = sys.argv[1:]
    if not nonce or not args or args[0].startswith("-"):
        # Not a script (-c, -m, the REPL): run as asked, vouched for by nobody.
        os.execv(sys.executable, [sys.executable, *args])
    channel = os.dup(2)  # not inherited by children (PEP 446)

    def record(event: str, value: int) -> None:
        os.write(channel, f"\n{MARK} {nonce} {os.getpid()} {event} {value}\n".encode())

    script = args[0]
    sys.argv = args
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    import site  # after the nonce is gone: site runs the workspace's sitecustomize and .pth files

    site.main()
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=script, __builtins__=__builtins__, __cached__=None)
    sys.modules["__main__"] = module
    record("start", 0)
    status = 0
    try:
        with tokenize.open(script) as source:
            code = compile(source.read(), script, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SystemExit as exc:
        status = _status(exc.code)
        culprit = _through_solution(exc, solution)
        if culprit is not None and status == 0:
            print(f"codebench: the solution ({culprit}) raised SystemExit, not the test", file=sys.stderr)
            record(SOLUTION_EXIT, 0)
            status = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    record("return", status)
    sys.exit(status or ending(nonce))


if __name__ == "__main__":
    main()
