"""Stop signals as exceptions, the blocks where they wait (a marker being written), and the
landing after which they no longer undo an export."""

from __future__ import annotations

import os
import signal

import pytest

from evalexport.interrupts import (
    Interrupted,
    current_landing,
    deferred,
    landed,
    landing,
    signals_raise,
)


@pytest.mark.usefixtures("signals_as_a_terminal_leaves_them")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_raises_interrupted_with_its_exit_code(signum: int) -> None:
    with signals_raise(), pytest.raises(Interrupted) as caught:
        os.kill(os.getpid(), signum)
    assert caught.value.exit_code == 128 + signum


@pytest.mark.usefixtures("signals_as_a_terminal_leaves_them")
def test_inside_deferred_a_stop_signal_is_recorded_and_the_work_finishes() -> None:
    finished = False
    with signals_raise():
        with deferred() as held:
            os.kill(os.getpid(), signal.SIGTERM)
            finished = True
        assert held.signum == signal.SIGTERM
        with pytest.raises(Interrupted):  # and outside it, signals raise again
            os.kill(os.getpid(), signal.SIGTERM)
    assert finished


def test_signals_ignored_when_we_started_stay_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_raise():
            os.kill(os.getpid(), signal.SIGHUP)  # nohup: nothing happens
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


@pytest.mark.usefixtures("signals_as_a_terminal_leaves_them")
def test_under_nohup_the_marker_write_is_still_protected_from_sigterm() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts us
    with signals_raise():
        with deferred() as held:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGHUP)  # still the user's choice: ignored
        assert held.signum == signal.SIGTERM
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


@pytest.mark.usefixtures("signals_as_a_terminal_leaves_them")
def test_a_stop_signal_raises_until_the_export_lands_and_is_recorded_after() -> None:
    with signals_raise(), landing() as delivery:
        with pytest.raises(Interrupted):  # before the landing: the export stops
            os.kill(os.getpid(), signal.SIGTERM)
        landed()
        os.kill(os.getpid(), signal.SIGINT)  # after it: recorded, the work goes on
        with deferred() as held:  # a signal held by a block is acted on as it would have been
            os.kill(os.getpid(), signal.SIGHUP)
        held.raise_held()
        assert delivery.signum == signal.SIGINT
    with signals_raise(), pytest.raises(Interrupted):  # the next export starts unlanded
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.usefixtures("signals_as_a_terminal_leaves_them")
def test_a_signal_held_outside_a_landed_export_raises_when_the_block_ends() -> None:
    with signals_raise():
        with deferred() as held:
            os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(Interrupted) as caught:
            held.raise_held()
    assert caught.value.signum == signal.SIGTERM


def test_another_threads_export_never_lands_the_main_threads() -> None:
    import threading

    seen: list[object] = []
    with landing() as delivery:
        thread = threading.Thread(target=lambda: (seen.append(current_landing()), landed()))
        thread.start()
        thread.join()
        assert seen == [None]
        assert not delivery.has_landed
