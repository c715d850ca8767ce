"""Test worker body: reports the SDK it imported and echoes its payload. Stdlib + tinysdk."""

import os
import sys

_FINALIZED_AT_IMPORT = []


class _ImportCycle:  # garbage the body's import leaves in a cycle, with a finalizer
    def __del__(self):
        _FINALIZED_AT_IMPORT.append(True)


_cycle = _ImportCycle()
_cycle.me = _cycle
del _cycle


def run(payload, progress=None):
    import tinysdk

    behaviour = payload.get("behaviour", "echo")
    if behaviour == "slow_start":  # nothing reported for a while (an SDK slow to start)
        import time

        time.sleep(payload["seconds"])
        progress(0, 1)
        progress(1, 1)
    if behaviour == "slow_step":  # a step that reports nothing for a while (a big artifact)
        import time

        progress(0, 2)
        progress(1, 2)
        time.sleep(payload["seconds"])
        progress(2, 2)
    if behaviour.startswith("detach"):  # a helper in a session of its own, as wandb-core is
        import subprocess

        helper = subprocess.Popen(["sleep", "300"], start_new_session=True)
        with open(payload["note_path"], "w") as note:
            note.write(str(helper.pid))
        behaviour = behaviour.removeprefix("detach_")
    if behaviour == "sleep":
        import time

        time.sleep(600)
    if behaviour == "segfault":
        import signal

        sys.stdout.write("about to crash\n")
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if behaviour == "crash_printing_token":  # an SDK that prints its credential as it dies
        sys.stderr.write(f"connecting with token {os.environ.get('ECHO_TOKEN')}\n")
        sys.stderr.flush()
        os._exit(1)
    if behaviour == "no_result":
        sys.stderr.write("partial output before leaving\n")
        sys.stderr.flush()
        os._exit(0)
    if behaviour == "leave_garbage":  # what the runner's quick exit must still finish
        import atexit
        import gc

        note_path = payload["note_path"]

        class Cycle:  # garbage only a cyclic collection finds, with a finalizer that writes
            def __del__(self):
                with open(note_path, "w") as note:
                    note.write("finalized")

        cycle = Cycle()
        cycle.me = cycle
        del cycle

        def frozen():
            with open(note_path + ".frozen", "w") as note:
                note.write(str(gc.get_freeze_count()))

        atexit.register(frozen)
    if behaviour == "note_the_collector":  # how the runner left the cyclic collector
        import gc

        with open(payload["note_path"], "w") as note:
            note.write(f"{gc.isenabled()} {gc.get_freeze_count()} {bool(_FINALIZED_AT_IMPORT)}")
    if behaviour == "raise":
        raise ValueError("the SDK said no")
    if behaviour == "misspelled":  # a typed key written wrong
        return {"status": "succeeded", "exit_code": 0, "message": "m", "details": {}, "run_ID": "x"}
    if behaviour == "typed":  # the protocol's typed keys, as today's bodies return them
        return {
            "status": "skipped",
            "exit_code": 0,
            "message": "already stored",
            "details": {"state": "deduped"},
            "run_id": "echo-typed",
            "skip_reason": "deduped",
            "notices": ["a notice for the user"],
        }
    if behaviour == "legacy_receipt":  # as bodies of the 0.1 guide returned a receipt
        return {
            "status": "succeeded",
            "exit_code": 0,
            "message": f"stored with the SDK's own credential {payload['note_path']}",
            "details": {"upload_token": "upl-echo-1"},
        }
    if behaviour == "exit_code":
        return {
            "status": "failed",
            "exit_code": payload["exit_code"],
            "message": "worker verdict",
            "details": {},
        }
    return {
        "status": "succeeded",
        "exit_code": 0,
        "message": "echo",
        "details": {
            "run_id": "echo-1",
            "payload": payload,
            "sdk_origin": tinysdk.ORIGIN,
            "sdk_file": tinysdk.__file__,
            "sdk_version": tinysdk.__version__,
            "sys_path": sys.path,
            "token_seen": bool(os.environ.get("TINYSDK_TOKEN")),
        },
    }
