"""bench/harness/report.py: the paired ratios and the set summary, on hand-made results.

Usage: /usr/bin/python3 tests/bench/report_test.py SOURCE_DIR (ctest: bench.HarnessReport)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(sys.argv.pop(1) if len(sys.argv) > 1 else ".", "bench", "harness"))
import report  # noqa: E402
import harness  # noqa: E402


def row(engine, backend, threads, rounds, bursts=None):
    """A harness row: round medians `rounds`, and per round the turns' burst medians."""
    r = {"engine": engine, "backend": backend, "threads": threads,
         "median_ms": sorted(rounds)[len(rounds) // 2], "round_medians_ms": rounds}
    if bursts is not None:
        r["burst_medians_ms"] = bursts
    return r


class BurstPairedRatio(unittest.TestCase):
    def test_pairs_the_bursts_of_each_turn_and_takes_the_median(self):
        # Round 1: the host slows from the second turn on; both engines slow alike.
        a = row("tessera-onednn", "onednn", 1, [2.0], [[1.0, 2.0, 2.0]])
        b = row("onnxruntime", "onnxruntime", 1, [2.5], [[1.25, 2.5, 2.5]])
        self.assertAlmostEqual(report.burst_paired_ratio(a, b), 0.8)

    def test_skips_turns_without_a_burst_on_either_side(self):
        a = row("tessera-onednn", "onednn", 1, [1.0, 1.0], [[1.0, None], None])
        b = row("onnxruntime", "onnxruntime", 1, [2.0, 2.0], [[2.0, 4.0], [2.0]])
        self.assertAlmostEqual(report.burst_paired_ratio(a, b), 0.5)

    def test_none_without_bursts(self):
        a = row("tessera-onednn", "onednn", 1, [1.0])
        b = row("onnxruntime", "onnxruntime", 1, [2.0], [[2.0]])
        self.assertIsNone(report.burst_paired_ratio(a, b))
        self.assertIsNone(report.burst_paired_ratio(
            row("x", "x", 1, [1.0], [[None]]), row("y", "y", 1, [1.0], [[1.0]])))

    def test_a_slow_round_on_one_side_moves_the_medians_not_the_burst_pairs(self):
        # Round medians cross (the host's stretch) while every pair of bursts reads 1.0.
        a = row("tessera-default", "default", 1, [1.0, 1.6, 1.1], [[1.0, 1.0], [1.6, 1.6], [1.1, 1.1]])
        b = row("tessera-onednn", "onednn", 1, [1.0, 1.6, 1.1], [[1.0, 1.0], [1.6, 1.6], [1.1, 1.1]])
        self.assertAlmostEqual(report.burst_paired_ratio(a, b), 1.0)


class Summary(unittest.TestCase):
    def results(self):
        rows = [
            row("tessera-onednn", "onednn", 1, [1.0, 1.0, 1.0], [[1.0, 1.0]] * 3),
            row("tessera-xnnpack", "xnnpack", 1, [1.2, 1.2, 1.2], [[1.2, 1.2]] * 3),
            row("tessera-default", "default", 1, [1.1, 1.1, 1.1], [[1.02, 1.02]] * 3),
            row("onnxruntime", "onnxruntime", 1, [2.0, 2.0, 2.0], [[2.0, 2.0]] * 3),
            row("tessera-portable", "portable", 1, [0.5, 0.5, 0.5]),  # never the best single backend
        ]
        return {"models": [{"model": "m", "rows": rows}]}

    def test_best_single_backend_default_over_it_and_the_rows_over_three_percent(self):
        text = "\n".join(report.summary(self.results()))
        self.assertIn("| m | 1 | onednn | 0.500 (0.500, 0.500) | 0.550 (0.550, 0.510) | "
                      "1.100 (1.100, 1.020) | ? |", text)  # no delegates in these results
        self.assertIn("by medians: m 1t 1.100.", text)
        self.assertIn("by round-paired: m 1t 1.100.", text)
        self.assertIn("by burst-paired: none.", text)
        self.assertIn("Geometric means at 1 thread(s), 1 models: best / ORT 0.500 (round-paired "
                      "0.500, burst-paired 0.500); default / ORT 0.550", text)

    def test_results_without_bursts_give_no_burst_verdict(self):
        res = self.results()
        for r in res["models"][0]["rows"]:
            r.pop("burst_medians_ms", None)
        text = "\n".join(report.summary(res))
        self.assertIn("1.100 (1.100, —)", text)
        self.assertNotIn("by burst-paired", text)

    def test_says_whether_the_default_engine_ran_the_best_backends_own_configuration(self):
        def delegates(backend, nodes, chosen=None):
            return [{"id": f"{backend}#0", "backend": backend, "nodes": nodes,
                     "selection": {"chosen_options": [chosen or {}]}}]
        res = self.results()
        rows = {r["engine"]: r for r in res["models"][0]["rows"]}
        best, default = rows["tessera-onednn"], rows["tessera-default"]
        best["delegates"] = delegates("onednn", 60)
        best["delegate_threads_per_round"] = [1, 1, 1]
        default["delegates"] = delegates("onednn", 60)
        default["delegate_threads_per_round"] = [1, 1, 1]
        self.assertTrue(report.runs_best_configuration(default, best))
        text = "\n".join(report.summary(res))
        self.assertIn("1.100 (1.100, 1.020) | the best's own configuration |", text)
        self.assertIn("by medians: m 1t (the best's own configuration) 1.100.", text)
        # An option the selection chose, another backend, another partition, other threads.
        default["delegates"] = delegates("onednn", 60, {"conv_algorithm": "winograd"})
        self.assertFalse(report.runs_best_configuration(default, best))
        self.assertIn("| onednn [conv_algorithm=winograd] (1 thread) |",
                      "\n".join(report.summary(res)))
        default["delegates"] = delegates("xnnpack", 60)
        self.assertFalse(report.runs_best_configuration(default, best))
        default["delegates"] = delegates("onednn", 59)
        self.assertFalse(report.runs_best_configuration(default, best))
        default["delegates"] = delegates("onednn", 60)
        default["delegate_threads_per_round"] = [2, 2, 2]
        self.assertFalse(report.runs_best_configuration(default, best))
        self.assertIn("| onednn (2 threads) |", "\n".join(report.summary(res)))
        default.pop("delegates")
        self.assertIsNone(report.runs_best_configuration(default, best))

    def test_geomean(self):
        self.assertAlmostEqual(report.geomean([0.5, 2.0, None]), 1.0)
        self.assertIsNone(report.geomean([None]))


class CandidatesInitMs(unittest.TestCase):
    def test_sums_every_measured_init_the_inits_made_again_and_the_reinits(self):
        run = {"delegates": [
            {"selection": {"cached": False, "candidates": [
                {"init_ms": 120.0, "alone_init_ms": 60.0},  # made again alone
                {"init_ms": 250.0, "alone_init_ms": 0.0},
                {"init_ms": 0.0},  # skipped
                {"init_ms": 130.0}]},  # from before alone_init_ms was written
             "method": None},
            {"selection": {"cached": True, "candidates": [{"init_ms": 999.0}]}},  # not measured
            {"selection": {"cached": False, "candidates": [{"init_ms": 5.0}],
                           "method": {"reinit_ms": 40.0}}},
        ]}
        self.assertAlmostEqual(harness.candidates_init_ms(run), 120 + 60 + 250 + 130 + 5 + 40)

    def test_zero_for_a_load_that_did_not_measure(self):
        self.assertEqual(harness.candidates_init_ms({"delegates": [{"selection": None}]}), 0)
        self.assertEqual(harness.candidates_init_ms({}), 0)


if __name__ == "__main__":
    unittest.main()
