"""The GIL is released while Tessera compiles, loads and executes, and two threads run two
Methods at once with the results a single thread gets.

The GIL tests measure no time: with the interpreter's switch interval set far beyond the
test's length, a thread gives the GIL up only when it blocks or when C++ code releases it.
Thread A marks that it is about to call Tessera and then makes the call; the main thread,
waiting for the GIL at that point, can only observe A's "started but not finished" state if the
call released the GIL. (The calls probed run for milliseconds, long enough for the waiting
thread to take the GIL once it is free.)"""

import sys
import threading

import numpy as np
import pytest

import tessera


def runs_without_the_gil(call):
    state = {"started": False, "finished": False, "error": None}

    def body():
        state["started"] = True
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - reported below
            state["error"] = e
        state["finished"] = True

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        t = threading.Thread(target=body)
        t.start()  # returns once `body` runs; `body` keeps the GIL until something releases it
        seen = (state["started"], state["finished"])
        t.join()
    finally:
        sys.setswitchinterval(old)
    if state["error"] is not None:
        raise state["error"]
    return seen == (True, False)


def test_the_probe_tells_a_held_gil_from_a_released_one():
    import time

    assert not runs_without_the_gil(lambda: sum(range(2_000_000)))  # pure Python keeps the GIL
    assert runs_without_the_gil(lambda: time.sleep(0.01))  # sleep releases it


def test_execute_releases_the_gil(mobilenet):
    _, program = mobilenet
    method = program.load_method()
    x = np.random.default_rng(0).standard_normal((4, 3, 224, 224)).astype(np.float32)
    method(x)  # the load at batch 4 happens here, not in the probed call
    assert runs_without_the_gil(lambda: method(x))


def test_load_method_releases_the_gil(mobilenet):
    _, program = mobilenet
    assert runs_without_the_gil(lambda: program.load_method())


def test_compile_releases_the_gil(deep_mlp_onnx):
    assert runs_without_the_gil(lambda: tessera.compile(deep_mlp_onnx, dims={"batch": (1, 8)}))


def test_two_threads_run_two_methods_concurrently(mobilenet, transformer):
    _, mobile_program = mobilenet
    _, encoder_program = transformer
    rng = np.random.default_rng(1)
    jobs = [
        (mobile_program.load_method(options={"xnnpack.num_threads": 1}),
         rng.standard_normal((1, 3, 224, 224)).astype(np.float32)),
        (encoder_program.load_method(), rng.standard_normal((2, 9, 64)).astype(np.float32)),
    ]
    want = [m(x)[0] for m, x in jobs]
    results = [[], []]
    errors = []
    barrier = threading.Barrier(2)

    def worker(i):
        try:
            method, x = jobs[i]
            barrier.wait()
            for _ in range(5):
                results[i].append(method(x)[0])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(2):
        assert len(results[i]) == 5
        for r in results[i]:
            np.testing.assert_array_equal(r, want[i])


def test_one_method_called_from_several_threads_is_serialised(add_program):
    program, _ = add_program
    method = program.load_method()
    errors = []

    def worker(batch):
        try:
            for k in range(50):
                x = np.full((batch, 4), float(k), np.float32)
                (out,) = method(x, x)
                assert out.shape == (batch, 4)
                np.testing.assert_array_equal(out, 2 * x)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(b,)) for b in (1, 2, 3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]


def test_reading_a_method_while_another_thread_reloads_it_for_new_shapes(add_program):
    program, _ = add_program
    method = program.load_method()
    errors = []
    stop = threading.Event()

    def caller():
        try:
            for k in range(200):
                batch = 1 + k % 8  # more shapes than the method keeps loads for
                x = np.ones((batch, 4), np.float32)
                np.testing.assert_array_equal(method(x, x)[0], 2 * x)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            stop.set()

    t = threading.Thread(target=caller)
    t.start()
    while not stop.is_set():
        assert 1 <= method.dims["batch"] <= 8
        assert method.delegates[0]["id"] == "xnnpack#0"
        assert method.policy["effective"]
    t.join()
    assert not errors, errors[:1]
