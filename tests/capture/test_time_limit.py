"""The budget of an optional capture retry (``capture/time_limit.py``)."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from onnxport.capture.time_limit import OutOfTime, time_limit


def test_a_spent_budget_interrupts_a_python_loop_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGALRM)
    start = time.perf_counter()
    with pytest.raises(OutOfTime, match="stopped after 0 s"), time_limit(0.2):
        while True:  # a pure-Python loop, as sympy's simplify
            sum(range(100))
    assert 0.15 < time.perf_counter() - start < 5
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_a_body_within_budget_is_untouched() -> None:
    with time_limit(5):
        value = sum(range(1000))
    assert value == 499500 and signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_off_the_main_thread_there_is_no_budget() -> None:
    done: list[bool] = []

    def body() -> None:
        with time_limit(0.05):
            time.sleep(0.2)
        done.append(True)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert done == [True]
