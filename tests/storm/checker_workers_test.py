"""The checker's rules for the library workers (workers.py) on hand-written histories: a
LeaseGuard key may run again only after its holder was killed, paused past half the lease or gave
the key up; an in-transaction key never runs twice and its answer names its one row
(python3 -B tests/storm/checker_workers_test.py; ctest storm_checker_workers_test)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402
from checker_test import RUN, answer, fault, replays, run_  # noqa: E402


def key(name="k1", route="lease"):
    return {"ev": "key", "key": name, "recover": route, "route": route, "t": 0.1}


def row(ex, t=60.0, worker="w3"):
    """A row of storm_tx_effects, as workers.py records it after the run."""
    return dict(run_(ex, t, gw=worker, xrid=None), source="storm_tx_effects")


def check(*records):
    return checker.check([RUN] + [r for rs in records for r in
                                  (rs if isinstance(rs, list) else [rs])])


class LeaseWorkerTest(unittest.TestCase):
    def test_a_second_run_without_a_fault_is_a_violation(self):
        v = check(key(), run_(1, 1.0, gw="w1", fence="5"), run_(2, 3.0, gw="w2", fence="6"),
                  answer(2), replays(2))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("ran 2 times", v.violations[0][1])

    def test_a_rerun_after_its_holder_was_killed_is_allowed(self):
        v = check(key(), run_(1, 1.0, gw="w1", fence="5"), run_(2, 6.0, gw="w2", fence="6"),
                  answer(2), replays(2), fault("wk_kill", 1.5, 2.5, gw="w1"))
        self.assertEqual(v.violations, [])
        self.assertEqual(len(v.allowed), 1)
        self.assertIn("went down (wk_kill)", v.allowed[0][1])

    def test_a_kill_of_another_worker_allows_nothing(self):
        v = check(key(), run_(1, 1.0, gw="w1", fence="5"), run_(2, 6.0, gw="w2", fence="6"),
                  answer(2), replays(2), fault("wk_kill", 1.5, 2.5, gw="w3"))
        self.assertEqual(len(v.violations), 1)

    def test_a_pause_past_half_the_lease_allows_a_rerun_a_shorter_one_not(self):
        long_ = check(key(), run_(1, 1.0, gw="w1", fence="5"), run_(2, 5.0, gw="w2", fence="6"),
                      answer(2), replays(2), fault("wk_stop_long", 1.2, 4.0, gw="w1"))
        self.assertEqual(long_.violations, [])
        short = check(key(), run_(1, 1.0, gw="w1", fence="5"), run_(2, 5.0, gw="w2", fence="6"),
                      answer(2), replays(2), fault("wk_stop_short", 1.2, 2.0, gw="w1"))
        self.assertEqual(len(short.violations), 1)

    def test_the_workers_own_504_releases_the_key(self):
        failure = {"ev": "upstream_failure", "gw": "w1", "xrid": "rid-k1-c0-a1-x", "status": 504,
                   "at": 3.0, "start": 0.9, "t": 3.0}
        v = check(key(), run_(1, 1.0, gw="w1", fence="5", xrid="rid-k1-c0-a1-x"),
                  run_(2, 3.5, gw="w2", fence="6"), answer(2), replays(2), failure)
        self.assertEqual(v.violations, [])

    def test_one_fence_on_two_runs_is_a_violation(self):
        v = check(key(), run_(1, 1.0, gw="w1", fence="5", mode="drop"),
                  run_(2, 3.0, gw="w2", fence="5"), answer(2), replays(2))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("fence 5", v.violations[0][1])


class InTransactionWorkerTest(unittest.TestCase):
    def test_one_row_named_by_the_answer_passes(self):
        v = check(key(route="tx"), row(7), answer(7), replays(7))
        self.assertEqual(v.violations, [])
        self.assertEqual((v.keys, v.executions), (1, 1))

    def test_two_rows_are_a_violation_whatever_happened_between(self):
        v = check(key(route="tx"), row(7), row(9, t=60.1), answer(9), replays(9),
                  fault("wk_kill", 1.0, 2.0, gw="w3"), fault("wk_stop_long", 3.0, 9.0, gw="w3"),
                  fault("pg_crash", 10.0, 20.0))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("ran 2 times", v.violations[0][1])
        self.assertEqual(v.allowed, [])

    def test_an_answer_whose_row_is_not_in_the_table_is_a_violation(self):
        v = check(key(route="tx"), answer(7), replays(7))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("never ran", v.violations[0][1])

    def test_a_row_without_a_stored_answer_is_a_violation(self):
        gone = [{"ev": "replay", "key": "k1", "n": n, "status": 503, "body": "x",
                 "replayed": None, "unrecorded": True, "t": 50.0 + n} for n in (1, 2)]
        v = check(key(route="tx"), row(7), gone)
        self.assertEqual(len(v.violations), 1)
        self.assertIn("never settled", v.violations[0][1])

    def test_an_answer_naming_another_row_than_the_tables_is_a_violation(self):
        v = check(key(route="tx"), row(8), answer(7), replays(7))
        self.assertTrue(any("not the last run's" in text for _, text in v.violations))


if __name__ == "__main__":
    unittest.main()
