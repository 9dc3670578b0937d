"""The storm's checker on small hand-written histories: each rule flags what it must and allows
what docs/gateway.md allows (python3 -B tests/storm/checker_test.py; ctest storm_checker_test)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402

RUN = {"ev": "run", "seed": 1, "lease": 4.0, "upstream_timeout": 2.0, "t": 0.0}


def key(name="k1", recover="off"):
    return {"ev": "key", "key": name, "recover": recover, "route": recover, "t": 0.1}


def run_(ex, t, gw="g1", mode="ok", fence=None, xrid="rid-k1", name="k1"):
    return {"ev": "exec", "key": name, "ex": ex, "t": t, "gw": gw, "mode": mode, "delay_ms": 0,
            "fence": fence, "xrid": xrid}


def answer(ex, t=5.0, client=0, status=201, body=None, name="k1", request="b1"):
    return {"ev": "answer", "key": name, "client": client, "attempt": 1, "status": status,
            "type": None, "body": body or "body%d" % ex, "ex": ex, "body_key": name,
            "request": request, "sent": request, "t": t}


def replays(ex, name="k1", status=201):
    return [{"ev": "replay", "key": name, "n": n, "status": status, "body": "body%d" % ex,
             "replayed": "true", "ex": ex, "request": "b1", "t": 50.0 + n} for n in (1, 2)]


def fault(kind, start, end, gw="g1"):
    return {"ev": "fault", "kind": kind, "gw": gw, "start": start, "end": end, "t": end}


def check(*records):
    return checker.check([RUN] + [r for rs in records for r in
                                  (rs if isinstance(rs, list) else [rs])])


class CheckerTest(unittest.TestCase):
    def test_one_run_one_answer_passes(self):
        sends = [{"ev": "send", "key": "k1", "client": 0, "attempt": a, "t": 0.5 + a}
                 for a in (1, 2)]
        v = check(key(), sends, run_(1, 1.0), answer(1), replays(1))
        self.assertEqual(v.violations, [])
        self.assertEqual((v.keys, v.requests, v.executions), (1, 2, 1))

    def test_a_second_run_without_a_fault_is_a_violation(self):
        v = check(key(), run_(1, 1.0), run_(2, 2.0), answer(2), replays(2))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("ran 2 times", v.violations[0][1])

    def test_a_second_run_after_a_dropped_answer_is_allowed(self):
        v = check(key(), run_(1, 1.0, mode="drop"), run_(2, 2.0), answer(2), replays(2))
        self.assertEqual(v.violations, [])
        self.assertEqual(len(v.allowed), 1)

    def test_a_holder_killed_allows_a_rerun_but_not_on_a_status_route(self):
        kill = fault("gw_kill", 1.5, 2.5)
        off = check(key(), run_(1, 1.0), run_(2, 3.0, gw="g2"), answer(2), replays(2), kill)
        self.assertEqual(off.violations, [])
        status = check(key(recover="status"), run_(1, 1.0), run_(2, 3.0, gw="g2"), answer(2),
                       replays(2), kill)
        self.assertEqual(len(status.violations), 1)

    def test_a_pause_longer_than_half_the_lease_allows_a_rerun_a_shorter_one_not(self):
        long_ = check(key(recover="status"), run_(1, 1.0), run_(2, 5.0, gw="g2"), answer(2),
                      replays(2), fault("gw_stop_long", 1.2, 4.0))
        self.assertEqual(long_.violations, [])
        short = check(key(recover="status"), run_(1, 1.0), run_(2, 5.0, gw="g2"), answer(2),
                      replays(2), fault("gw_stop_short", 1.2, 2.0))
        self.assertEqual(len(short.violations), 1)

    def test_a_holder_cut_off_the_network_for_half_the_lease_allows_a_rerun_a_shorter_cut_not(self):
        def rerun(cut):
            return check(key(recover="status"), run_(1, 1.0), run_(2, 5.0, gw="g2"), answer(2),
                         replays(2), cut)
        self.assertEqual(rerun(fault("net_isolate_long", 1.2, 4.0)).violations, [])
        self.assertIn("g1 was cut off the network 2.8s",
                      rerun(fault("net_isolate_long", 1.2, 4.0)).allowed[0][1])
        short = rerun(fault("net_isolate_short", 1.2, 2.0))
        self.assertEqual(len(short.violations), 1)
        self.assertIn("ran 2 times", short.violations[0][1])
        elsewhere = rerun(fault("net_isolate_long", 1.2, 4.0, gw="g3"))
        self.assertEqual(len(elsewhere.violations), 1)

    def test_a_502_not_kept_needs_a_huge_or_slow_run_or_the_gateways_own_502_line(self):
        not_kept = [{"ev": "replay", "key": "k1", "n": n, "status": 502, "body": "nk",
                     "type": "upstream-answer-not-kept", "replayed": "true", "t": 50.0 + n}
                    for n in (1, 2)]
        bare = check(key(), run_(1, 4.3, gw="g2", xrid="rid-k1-c0"), not_kept)
        self.assertEqual(len(bare.violations), 1)
        self.assertIn("neither too large nor slow", bare.violations[0][1])
        said = {"ev": "upstream_failure", "gw": "g2", "xrid": "rid-k1-c0", "status": 502,
                "at": 4.6, "start": 1.3, "t": 70.0}
        self.assertEqual(check(key(), run_(1, 4.3, gw="g2", xrid="rid-k1-c0"), not_kept,
                               said).violations, [])
        elsewhere = dict(said, gw="g1")
        self.assertEqual(len(check(key(), run_(1, 4.3, gw="g2", xrid="rid-k1-c0"), not_kept,
                                   elsewhere).violations), 1)

    def test_a_request_its_gateway_gave_up_on_may_reach_the_upstream_after_a_retry_ran(self):
        # po-1-k36: g2 answered 504 to attempt 3 at 26.4 s; the starved upstream read attempt 5's
        # request (28.8 s) before attempt 3's (29.4 s).
        gave_up = {"ev": "upstream_failure", "gw": "g2", "xrid": "rid-k1-c0-a3-b979", "status": 504,
                   "at": 26.4, "start": 22.9, "t": 70.0}
        late = check(key(recover="status"), run_(66, 28.8, gw="g2", xrid="rid-k1-c0-a5-cd4b"),
                     run_(80, 29.4, gw="g2", xrid="rid-k1-c0-a3-b979"), answer(66),
                     replays(66), gave_up)
        self.assertEqual(late.violations, [])
        self.assertIn("run 80 is a request g2 had answered 504 before run 66", late.allowed[0][1])
        # A client's fixed request id: only a run soon after the 504 (the upstream timeout and
        # 10 s) can be that request (po-11-k10 on a loaded machine: read 4.7 s after it).
        fixed = dict(gave_up, xrid="rid-k1-c1", at=14.8, start=7.9)
        soon = check(key(), run_(16, 19.0, gw="g1", xrid="rid-k1-c2"),
                     run_(27, 19.5, gw="g2", xrid="rid-k1-c1"), answer(16), replays(16), fixed)
        self.assertEqual(soon.violations, [])
        much_later = check(key(), run_(16, 40.0, gw="g1", xrid="rid-k1-c2"),
                           run_(27, 40.5, gw="g2", xrid="rid-k1-c1"), answer(16), replays(16),
                           fixed)
        self.assertIn("ran 2 times", much_later.violations[0][1])
        # Given up only after the other run: no reason.
        after = check(key(recover="status"), run_(66, 28.8, gw="g2", xrid="rid-k1-c0-a5-cd4b"),
                      run_(80, 29.4, gw="g2", xrid="rid-k1-c0-a3-b979"), answer(66), replays(66),
                      dict(gave_up, at=29.0))
        self.assertIn("ran 2 times", after.violations[0][1])

    def test_a_fixed_request_id_read_late_after_the_upstream_stalled_is_that_request(self):
        # po-4242-k13 (status route, one client's fixed request id): g2 answered 504 at 7.75 s
        # and 12.23 s; the upstream read nothing from 10.2 s to 26.05 s although g1's forward of
        # 11.0 s waited on it (answered 504 at 15.73 s), then read both of g2's requests at once,
        # 18 s after the first 504: the time it was stalled does not count against the 10 s.
        first = {"ev": "upstream_failure", "gw": "g2", "xrid": "rid-k1", "status": 504,
                 "at": 7.75, "start": 4.47, "t": 70.0}
        second = dict(first, at=12.23, start=7.36)
        waited = dict(first, gw="g1", xrid="rid-k9", at=15.73, start=11.0)
        read_before = {"ev": "arrival", "key": "k9", "gw": "g1", "t": 10.2, "xrid": "rid-k9"}
        history = [key(recover="status"), read_before, run_(17, 26.05, gw="g2"),
                   run_(21, 26.08, gw="g2"), answer(21), replays(21), first, second]
        stalled = check(*history, waited)
        self.assertEqual(stalled.violations, [])
        self.assertIn("g2 answered 504 for run 17", stalled.allowed[0][1])
        # The same silence with no forward waiting on the upstream is an idle upstream, not a
        # stalled one: runs read that long after the 504s are not those requests.
        idle = check(*history)
        self.assertIn("ran 2 times", idle.violations[0][1])
        # A 502 (refused, cut off) is no sign of an upstream that stopped reading.
        refused = check(*history, dict(waited, status=502))
        self.assertIn("ran 2 times", refused.violations[0][1])

    def test_a_key_its_draining_gateway_released_at_exit_may_run_again(self):
        # po-1-k50: g1, draining, released the key at exit (its call over without an answer).
        meta = dict(key(recover="status"), key_string="po-1-k50")
        released = {"ev": "released_at_exit", "gw": "g1", "key_sha256": "b0c1a266718703ec",
                    "at": 29.8, "t": 70.0}
        ok = check(meta, run_(76, 29.2), run_(94, 30.8, gw="g2"), answer(94), replays(94),
                   released)
        self.assertEqual(ok.violations, [])
        other = dict(released, key_sha256="df82eba059d145b2")
        self.assertEqual(len(check(meta, run_(76, 29.2), run_(94, 30.8, gw="g2"), answer(94),
                                   replays(94), other).violations), 1)

    def test_a_holder_cut_off_its_store_allows_a_rerun_but_not_on_a_status_route_nor_another(self):
        cut = fault("net_store_long", 1.2, 4.0)
        off = check(key(), run_(1, 1.0), run_(2, 5.0, gw="g2"), answer(2), replays(2), cut)
        self.assertEqual(off.violations, [])
        self.assertIn("g1, which sent run 1, was cut off its store 2.8s", off.allowed[0][1])
        status = check(key(recover="status"), run_(1, 1.0), run_(2, 5.0, gw="g2"), answer(2),
                       replays(2), cut)
        self.assertEqual(len(status.violations), 1)
        # The taker's own cut is no reason: the holder kept its lease.
        taker = check(key(), run_(1, 1.0), run_(2, 5.0, gw="g2"), answer(2), replays(2),
                      fault("net_store_long", 1.2, 4.0, gw="g2"))
        self.assertEqual(len(taker.violations), 1)

    def test_a_holder_slow_to_replay_a_recorded_key_allows_a_rerun_a_waiting_replay_not(self):
        # The storm's po-60143-k89 (seed 760143, a loaded machine): g1 ran k1, its outcome write
        # in flight, while it took 2-3.7 s to replay keys recorded long before; its lease lapsed
        # and g2 took k1 over and re-sent it.
        digest = checker.key_digest({"key": "k2"})
        recorded = dict(answer(7, t=0.5, name="k2"), replayed="true")

        def slow(start, end, gw="g1"):
            return {"ev": "slow_replay", "gw": gw, "key_sha256": digest, "start": start,
                    "at": end, "t": end}

        def rerun(meta, *stalls):
            return check(meta, key("k2"), run_(7, 0.3, name="k2", xrid="rid-k2"), recorded,
                         replays(7, name="k2"), run_(1, 1.0), run_(2, 5.0, gw="g2"), answer(2),
                         replays(2), *stalls)
        ok = rerun(key(), slow(1.5, 3.8))
        self.assertEqual(ok.violations, [])
        self.assertIn("g1, which sent run 1, took 2.3s to replay a recorded key",
                      [a[1] for a in ok.allowed if a[0] == "k1"][0])
        self.assertEqual(len(rerun(key(), slow(1.5, 3.0)).violations), 1)  # under half the lease
        self.assertEqual(len(rerun(key(), slow(1.5, 3.8, gw="g2")).violations), 1)  # the taker
        self.assertEqual(len(rerun(key(recover="status"), slow(1.5, 3.8)).violations), 1)
        # Begun before any client had k2 replayed: it may have waited for k2's holder.
        self.assertEqual(len(rerun(key(), slow(0.2, 3.8)).violations), 1)

    def test_store_faults_back_to_back_are_one_outage_faults_apart_are_not(self):
        # The storm's sq-61203-k297: a full disk 2.4 s, the write lock 1.8 s, then 2.0 s, one
        # after the other; each is shorter than half the lease (4 s here: 1.5 s each), together
        # 4.5 s.
        def rerun(*faults):
            return check(key(), run_(1, 1.0), run_(2, 7.0), answer(2), replays(2), *faults)
        together = rerun(fault("sqlite_full_short", 1.5, 3.0, gw="-"),
                         fault("sqlite_lock_short", 3.0, 4.5),
                         fault("sqlite_lock_short", 4.6, 6.0))
        self.assertEqual(together.violations, [])
        self.assertIn("the store was out 4.5s (sqlite_full_short, sqlite_lock_short, "
                      "sqlite_lock_short", together.allowed[0][1])
        apart = rerun(fault("sqlite_full_short", 1.5, 3.0, gw="-"),
                      fault("sqlite_lock_short", 4.0, 5.5))
        self.assertEqual(len(apart.violations), 1)
        status = check(key(recover="status"), run_(1, 1.0), run_(2, 7.0), answer(2), replays(2),
                       fault("sqlite_full_short", 1.5, 3.0, gw="-"),
                       fault("sqlite_lock_short", 3.0, 4.5))
        self.assertEqual(len(status.violations), 1)

    def test_the_gateways_own_504_releases_the_key(self):
        failure = {"ev": "upstream_failure", "gw": "g1", "xrid": "rid-k1-c0-a1-x", "status": 504,
                   "at": 3.0, "start": 0.9, "t": 60.0}
        v = check(key(), run_(1, 2.5, xrid="rid-k1-c0-a1-x"), run_(2, 3.5), answer(2),
                  replays(2), failure)
        self.assertEqual(v.violations, [])

    def test_two_forwards_with_one_fence_are_a_violation(self):
        v = check(key(), run_(1, 1.0, fence="7", mode="drop"), run_(2, 2.0, fence="7"),
                  answer(2), replays(2))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("fence 7", v.violations[0][1])

    def test_a_lower_fence_after_a_higher_one_is_a_violation_unless_its_holder_was_paused(self):
        failed = {"ev": "arrival", "key": "k1", "gw": "g1", "fence": "40", "mode": "fail",
                  "effect": False, "t": 1.0}
        down = check(key(), failed, run_(2, 2.0, gw="g2", fence="33"), answer(2), replays(2))
        self.assertEqual(len(down.violations), 1)
        self.assertIn("fences went down: g2 forwarded fence 33 at 2.00s after g1 forwarded fence "
                      "40", down.violations[0][1])
        paused = check(key(), failed, run_(2, 9.0, gw="g2", fence="33", mode="drop"),
                       fault("gw_stop_long", 0.5, 8.5, gw="g2"), run_(3, 10.0, fence="41"),
                       answer(3), replays(3))
        self.assertEqual(paused.violations, [])

    def test_a_client_with_another_answer_than_the_recorded_one_is_a_violation(self):
        v = check(key(), run_(1, 1.0, mode="drop"), run_(2, 2.0), answer(1, client=0),
                  answer(2, client=1), replays(2))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("recorded answer", v.violations[0][1])

    def test_an_answer_the_store_does_not_have_is_a_violation(self):
        gone = [{"ev": "replay", "key": "k1", "n": n, "status": 503, "body": "x",
                 "replayed": None, "unrecorded": True, "t": 50.0 + n} for n in (1, 2)]
        v = check(key(), run_(1, 1.0), answer(1), gone)
        self.assertTrue(any("no answer for the key" in text for _, text in v.violations))

    def test_replays_that_differ_are_a_violation(self):
        rs = replays(1)
        rs[1]["body"] = "other"
        v = check(key(), run_(1, 1.0), answer(1), rs)
        self.assertTrue(any("replays differ" in text for _, text in v.violations))

    def test_refusals_are_not_violations(self):
        refusals = [dict(answer(0, client=c), status=s, type=t, ex=None, body="p")
                    for c, (s, t) in enumerate([(409, "key-in-flight"), (422, "key-reused"),
                                                (503, "store-unavailable"),
                                                (504, "upstream-timeout")])]
        v = check(key(), run_(1, 1.0), answer(1, client=9), refusals, replays(1))
        self.assertEqual(v.violations, [])

    def test_a_store_refusal_quoting_the_stores_address_is_a_violation(self):
        quoting = dict(answer(0, client=1), status=503, type="store-unavailable", ex=None,
                       body="p", detail="cannot connect to PostgreSQL at "
                                        "postgres@127.0.0.1:41234/idem: connection refused")
        generic = dict(quoting, client=2, detail="the idempotency store did not take this "
                                                 "request's key (request id rid-k1-c2)")
        v = check(key(), run_(1, 1.0), answer(1), quoting, generic, replays(1))
        self.assertEqual(len(v.violations), 1)
        self.assertIn("client 1 attempt 1 got 503 store-unavailable quoting the store",
                      v.violations[0][1])

    def test_a_huge_answer_left_unrecorded_is_a_violation_a_dropped_one_not(self):
        gone = [{"ev": "replay", "key": "k1", "n": n, "status": 503, "body": "x",
                 "replayed": None, "unrecorded": True, "t": 50.0 + n} for n in (1, 2)]
        huge = check(key(), run_(1, 1.0, mode="huge"), gone)
        self.assertEqual(len(huge.violations), 1)
        self.assertIn("never settled: run 1's answer reached a gateway", huge.violations[0][1])
        dropped = check(key(), run_(1, 1.0, mode="drop"), gone)
        self.assertEqual(dropped.violations, [])

    def test_a_jetstream_outcome_lost_around_a_node_kill_is_the_stores_documented_loss(self):
        # na-39051-k38: run 46 answered 201 at 7.43 s, node 3 SIGKILLed at 8.25 s; after the run
        # the key had no answer (its claim was back). Also a later run, after the kill, of a key
        # whose claim came back and was taken over (na-57255-k65).
        gone = [{"ev": "replay", "key": "k1", "n": n, "status": 503, "body": "x",
                 "replayed": None, "unrecorded": True, "t": 50.0 + n} for n in (1, 2)]
        kill = fault("nats_kill", 8.25, 10.0, gw="g2")
        lost = on_nats(key(), run_(46, 7.42), answer(46, t=7.43), gone, kill)
        self.assertEqual(lost.violations, [])
        self.assertEqual(lost.unsettled, [])
        self.assertEqual(len(lost.store_lost), 1)
        self.assertIn("store lost an acknowledged write: JetStream server killed within 5s of "
                      "the write (nats_kill at 8.25s", lost.store_lost[0][1])
        self.assertIn("1 store lost an acknowledged write", checker.summary(lost, 1, {}))
        rerun = on_nats(key(), run_(85, 7.42), answer(85, t=7.43), run_(87, 12.0), replays(87),
                        kill)
        self.assertEqual(rerun.violations, [])
        self.assertEqual(len(rerun.store_lost), 1)
        # The same history on another store, or with the kill before the run, stays a violation.
        self.assertEqual(check(key(), run_(46, 7.42), answer(46, t=7.43), gone, kill).store_lost,
                         [])
        before = on_nats(key(), run_(46, 7.42), answer(46, t=7.43), gone,
                         fault("nats_kill", 7.0, 10.0, gw="g2"))
        self.assertIn("no answer for the key", before.violations[0][1])
        # A re-run before the kill is no consequence of a write lost in it.
        early = on_nats(key(), run_(85, 7.42), answer(85, t=7.43), run_(87, 8.0), replays(87),
                        kill)
        self.assertTrue(any("ran 2 times" in text for _, text in early.violations))
        self.assertEqual(early.store_lost, [])
        # Nor does a kill excuse a key's other violations (a fence forwarded twice).
        fenced = on_nats(key(), run_(46, 7.42, fence="7"), dict(run_(46, 7.5, fence="7"),
                                                               ev="arrival"),
                         answer(46, t=7.43), gone, kill)
        self.assertTrue(any("fence 7" in text for _, text in fenced.violations))
        self.assertEqual(fenced.store_lost, [])

    def test_a_jetstream_outcome_lost_with_no_node_kill_near_is_a_violation(self):
        gone = [{"ev": "replay", "key": "k1", "n": n, "status": 503, "body": "x",
                 "replayed": None, "unrecorded": True, "t": 50.0 + n} for n in (1, 2)]
        paused = fault("nats_pause", 8.0, 10.0, gw="g2")  # a pause loses nothing written
        late = fault("nats_kill", 13.0, 14.0, gw="g2")  # 5.57 s after the answer
        v = on_nats(key(), run_(46, 7.42), answer(46, t=7.43), gone, paused, late)
        self.assertEqual(v.store_lost, [])
        self.assertTrue(any("client 0 attempt 1 got 201 46 but the store has no answer for the "
                            "key" in text for _, text in v.violations))
        self.assertTrue(any("never settled" in text for _, text in v.violations))
        self.assertNotIn("store lost", checker.summary(v, 1, {}))


    def test_a_lost_outcome_is_a_violation_when_the_servers_fsync_every_write(self):
        # nats-server 2.10 with sync_interval: always keeps what it acknowledged through a
        # SIGKILL, so the kill explains nothing: the same history as above is a violation.
        gone = [{"ev": "replay", "key": "k1", "n": n, "status": 503, "body": "x",
                 "replayed": None, "unrecorded": True, "t": 50.0 + n} for n in (1, 2)]
        kill = fault("nats_kill", 8.25, 10.0, gw="g2")
        v = on_nats(key(), run_(46, 7.42), answer(46, t=7.43), gone, kill, sync="always")
        self.assertEqual(v.store_lost, [])
        self.assertTrue(any("got 201 46 but the store has no answer for the key" in text
                            for _, text in v.violations))

    def test_a_lost_outcome_read_back_from_the_store_with_no_request_after_is_the_stores(self):
        # na-8-k21: run 24 answered by g1 at 12.23 s; client 1's first request, to g2 (which had
        # not seen the key), replayed it from the store at 19.99 s; no request after; the
        # checker's read at 44 s found the claim again. Any server, fsync or not.
        gone = [{"ev": "replay", "key": "k1", "n": n, "status": 503, "body": "x",
                 "replayed": None, "unrecorded": True, "t": 44.0 + n} for n in (1, 2)]

        def send(client, t, gw):
            return {"ev": "send", "key": "k1", "client": client, "attempt": 1, "gw": gw, "t": t}

        def back(t=19.99, client=1):
            return dict(answer(24, t=t, client=client), replayed="true")
        first = [send(0, 11.19, "g1"), run_(24, 11.19), answer(24, t=12.23)]
        v = on_nats(key(), first, send(1, 19.98, "g2"), back(), gone, sync="always")
        self.assertEqual(v.violations, [])
        self.assertIn("run 24's answer 201 was read back from the store at 19.99s (g2, which had "
                      "not seen the key)", v.store_lost[0][1])
        # A request after the read-back, and the loss could be idem's.
        later = on_nats(key(), first, send(1, 19.98, "g2"), back(), send(2, 30.0, "g1"), gone,
                        sync="always")
        self.assertTrue(later.violations)
        self.assertEqual(later.store_lost, [])
        # The gateway that ran it, with a replay cache, may have answered from memory; without
        # one (the run record's cache_off) it read the store.
        cached = on_nats(key(), first, send(1, 19.98, "g1"), back(), gone, sync="always")
        self.assertEqual(cached.store_lost, [])
        uncached = on_nats(key(), first, send(1, 19.98, "g1"), back(), gone, sync="always",
                           cache_off={"g1": True})
        self.assertEqual(len(uncached.store_lost), 1)
        self.assertIn("(g1, no replay cache)", uncached.store_lost[0][1])
        # A request sent before the first answer may have waited on the run itself.
        waiter = on_nats(key(), first, send(1, 12.0, "g2"), back(t=12.3), gone, sync="always")
        self.assertEqual(waiter.store_lost, [])
        # A route with a completer writes without requests: not this rule's.
        resend = on_nats(key(recover="resend"), first, send(1, 19.98, "g2"), back(), gone,
                         sync="always")
        self.assertEqual(resend.store_lost, [])


def on_nats(*records, sync=None, cache_off=None):
    return checker.check([dict(RUN, store="nats", nats_sync=sync, cache_off=cache_off)] +
                         [r for rs in records for r in (rs if isinstance(rs, list) else [rs])])


if __name__ == "__main__":
    unittest.main()
