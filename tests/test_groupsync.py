"""Group commit (issue 32 item 3): the loops of one process hand their transcripts' fsyncs to one
thread, which fsyncs every log waiting at once in a batch, each once, and wakes each loop."""

import asyncio
import os
import threading

import pytest

from loopwright.session.groupsync import GroupSync


class Log:
    """A DeferredSync that counts its fsyncs; `hold` keeps its sync waiting until released."""

    def __init__(self, name, *, fail=None, hold=None):
        self.name, self.fail, self.hold = name, fail, hold
        self.syncs, self.started = 0, threading.Event()

    def sync(self):
        self.started.set()
        if self.hold is not None:
            assert self.hold.wait(10), "the test never released the sync"
        self.syncs += 1
        if self.fail is not None:
            raise self.fail


async def waiting(group, log):
    task = asyncio.ensure_future(group.sync(log))
    await asyncio.sleep(0)  # queued before the next one
    return task


async def busy(group):
    """The group's thread held in a first log's sync, so what is queued next waits as one batch;
    (that sync's task, the event that releases it, the log)."""
    release = threading.Event()
    first = Log("first", hold=release)
    head = await waiting(group, first)
    await asyncio.to_thread(first.started.wait, 10)
    return head, release, first


def test_logs_waiting_together_are_synced_in_one_batch_each_once_and_every_loop_wakes():
    async def main():
        group = GroupSync()
        head, release, first = await busy(group)
        a, b = Log("a"), Log("b")
        tasks = [await waiting(group, a), await waiting(group, b), await waiting(group, a)]
        assert (a.syncs, b.syncs) == (0, 0) and not any(t.done() for t in tasks)
        release.set()
        await asyncio.wait_for(asyncio.gather(head, *tasks), 10)
        return first.syncs, a.syncs, b.syncs

    assert asyncio.run(main()) == (1, 1, 1)


def test_a_failing_fsync_is_raised_to_its_own_waiters_only():
    async def main():
        group = GroupSync()
        head, release, _ = await busy(group)
        bad, good = Log("bad", fail=OSError(28, "No space left on device")), Log("good")
        failing, fine = await waiting(group, bad), await waiting(group, good)
        release.set()
        await asyncio.wait_for(asyncio.gather(head, fine), 10)
        with pytest.raises(OSError, match="No space left"):
            await failing
        return good.syncs

    assert asyncio.run(main()) == 1


def test_a_cancelled_waiter_leaves_the_others_waking_and_the_thread_serving():
    async def main():
        group = GroupSync()
        head, release, _ = await busy(group)
        gone_log = Log("gone")
        gone, kept = await waiting(group, gone_log), await waiting(group, Log("kept"))
        gone.cancel()
        await asyncio.sleep(0.05)
        assert not gone.done()  # a cancelled caller still waits for its fsync, not yet done
        release.set()
        await asyncio.wait_for(asyncio.gather(head, kept), 10)
        await asyncio.wait([gone], timeout=10)
        assert gone.cancelled() and gone_log.syncs == 1
        later = Log("later")
        await asyncio.wait_for(group.sync(later), 10)  # the thread still serves
        return later.syncs

    assert asyncio.run(main()) == 1


def test_a_log_whose_sync_raises_anything_fails_its_waiter_and_the_thread_serves_on():
    async def main():
        group = GroupSync()
        with pytest.raises(ValueError, match="not a file"):
            await asyncio.wait_for(group.sync(Log("odd", fail=ValueError("not a file"))), 10)
        after = Log("after")
        await asyncio.wait_for(group.sync(after), 10)
        return after.syncs

    assert asyncio.run(main()) == 1


def test_the_thread_ends_when_idle_and_the_next_sync_starts_another():
    async def main():
        group = GroupSync(idle=0.01)
        one = Log("one")
        await asyncio.wait_for(group.sync(one), 10)
        while any(t.name == "loopwright-fsync" for t in threading.enumerate()):
            await asyncio.sleep(0.01)
        two = Log("two")
        await asyncio.wait_for(group.sync(two), 10)
        return one.syncs, two.syncs

    assert asyncio.run(main()) == (1, 1)


def test_loops_on_two_threads_each_wake_on_their_own_event_loop():
    group = GroupSync()
    logs = [Log(f"l{i}") for i in range(8)]

    def loop_thread(mine):
        async def main():
            await asyncio.wait_for(asyncio.gather(*(group.sync(log) for log in mine)), 10)

        asyncio.run(main())

    threads = [threading.Thread(target=loop_thread, args=(logs[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert [log.syncs for log in logs] == [1] * 8


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_syncs_though_the_parents_thread_was_not_copied():
    group = GroupSync(idle=60)  # the parent's thread stays up across the fork
    asyncio.run(group.sync(Log("parent")))
    pid = os.fork()
    if pid == 0:
        try:
            log = Log("child")
            asyncio.run(asyncio.wait_for(group.sync(log), 5))
            os._exit(0 if log.syncs == 1 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_under_trio_a_log_is_synced_on_a_worker_thread_and_a_failure_reaches_its_caller():
    trio = pytest.importorskip("trio")
    seen = {}

    class Where(Log):
        def sync(self):
            seen[self.name] = threading.current_thread() is threading.main_thread()
            super().sync()

    async def main():
        group = GroupSync()
        ok, bad = Where("ok"), Where("bad", fail=OSError(28, "No space left on device"))
        await group.sync(ok)
        with pytest.raises(OSError, match="No space left"):
            await group.sync(bad)
        return ok.syncs, bad.syncs

    assert trio.run(main) == (1, 1)
    assert seen == {"ok": False, "bad": False}  # never on the event loop's thread
