# How `make debug CH=NN TEST=name` starts gdb on one test: it stops where the
# test fails a check, where ThreadSanitizer reports a race (SAN=tsan), and -
# by itself - where the code crashes. A hang: press Ctrl-C. At each stop it
# shows the frame that matters: the line of your code (or of the test) the
# thread is at, not the C library's or cmocka's.
set pagination off
set confirm off
set print thread-events off
set breakpoint pending on

# Chapter 07's tests fork worker and reaper processes and a redis-server.
# gdb stays with the test process and lets them run on their own, whatever
# an ~/.gdbinit says: a crash point kills a worker with SIGKILL and the
# paused-worker test stops one with SIGSTOP, and a followed process would
# stop the session each time. When a test forks a worker, it prints its pid
# and how to look at it: a second gdb, gdb -p PID.
set follow-fork-mode parent
set detach-on-fork on

# Every check of the tests (assert_*, assert_ok, ...) calls _fail, which the
# harness wraps (grader/harness/kit_test.c).
break __wrap__fail
commands
  silent
end

# A test on one schedule (as graded) whose threads all wait for ever, or
# that misused a mutex: the scheduler says so, then ends the test here.
break sched_end_failed_test
commands
  silent
end

# An exploration test: the schedule that failed is reported here, while
# its threads still stand where the schedule left them. They are contexts
# on one OS thread, which gdb lists once: the script lists them from the
# scheduler's model (schedule_threads, below), each at its line.
break sched_report if !sched.scheduled_test
commands
  silent
end

# The ThreadSanitizer build ($kit_tsan set): its runtime calls this once it
# has printed a report.
if !$_isvoid($kit_tsan)
  break __tsan_on_report
  commands
    silent
  end
end

python
import os
import gdb

def earlier_reference(name, program):
    """True for a file of the reference of another chapter than the one the
    test program tests (solutions/02-blocking-queue/bq.c in a chapter 03
    test): code the student did not write."""
    if "solutions/" not in name:
        return False
    chapter = os.path.basename(os.path.dirname(program))
    return ("solutions/%s/" % chapter) not in name

def kit_frame():
    """The newest frame of the stopped thread in the code under test or in
    the test itself: not the C library, cmocka, lib/, grader/ or an
    earlier chapter's reference."""
    program = gdb.current_progspace().filename
    try:
        frame = gdb.newest_frame()
    except gdb.error:
        return None
    while frame is not None:
        symtab = frame.find_sal().symtab
        if symtab is not None and symtab.objfile.filename == program and ours(symtab.filename, program):
            return frame
        frame = frame.older()
    return None

def why(event):
    """What stopped the test, in words."""
    if isinstance(event, gdb.BreakpointEvent):
        if any(b.location == "__tsan_on_report" for b in event.breakpoints):
            return "ThreadSanitizer reported the race printed above"
        if any(b.location == "sched_end_failed_test" for b in event.breakpoints):
            return "On its schedule the test can go no further (printed above)"
        if any(b.location.startswith("sched_report") for b in event.breakpoints):
            return "An explored schedule failed (its report follows when you continue)"
        return "The test failed the check printed above"
    if isinstance(event, gdb.SignalEvent):
        if event.stop_signal == "SIGINT":
            return "Stopped by Ctrl-C"
        return "The test crashed (%s)" % event.stop_signal
    return None

def is_test_file(frame):
    return frame.find_sal().symtab.filename.startswith("tests/")

def ours(filename, program):
    """A file of the test or of the student's code: not lib/, grader/, an
    earlier chapter's reference, or a system header inlined into the kit's
    code (valgrind.h's requests in the explorer's switch)."""
    return (not filename.startswith("grader/") and not filename.startswith("lib/")
            and not filename.startswith("/usr/") and not earlier_reference(filename, program))

def schedule_threads():
    """The threads of the schedule under way, from the scheduler's model
    (grader/explorer/kit_sched_internal.h): all of them are contexts on one
    OS thread, so gdb lists that thread once. Each as (number, name, the
    return addresses the scheduler read of its stack for its report - or,
    where it has none, the place of its last call - innermost first). The
    empty list off a schedule."""
    try:
        if not int(gdb.parse_and_eval("(int)'kit_sched_explore.c'::running")):
            return [] # no schedule under way: the threads are real ones
        sched = gdb.parse_and_eval("sched")
        live = int(sched["nlive"])
    except gdb.error:
        return []
    threads = []
    for i in range(live):
        t = sched["threads"][int(sched["live"][i])].dereference()
        depth = int(t["depth"])
        pcs = [int(t["stack"][k]) for k in range(depth)] or [int(t["where"])]
        threads.append((int(t["id"]) + 1, t["name"].string(), [pc for pc in pcs if pc != 0]))
    return threads

def place_of(pcs, program):
    """The first of these return addresses in the test or the student's code:
    (function, file, line), or None."""
    for pc in pcs:
        sal = gdb.find_pc_line(pc - 1)
        if sal.symtab is None or sal.symtab.objfile.filename != program or not ours(sal.symtab.filename, program):
            continue
        block = gdb.block_for_pc(pc - 1)
        while block is not None and block.function is None:
            block = block.superblock
        return (block.function.name if block is not None else "??", sal.symtab.filename, sal.line)
    return None

def running_context():
    """The OS thread that runs the schedule (the runner, named "schedule")
    and the place, in the test or the student's code, where the thread of
    the schedule it runs now stands: (thread, (function, file, line)), or
    None if it is not in such code."""
    selected = gdb.selected_thread()
    found = None
    for thread in gdb.selected_inferior().threads():
        if found is None and thread.name == "schedule":
            thread.switch()
            frame = kit_frame()
            if frame is not None:
                sal = frame.find_sal()
                found = (thread, (frame.name(), sal.symtab.filename, sal.line))
    selected.switch()
    return found

def every_schedule_thread():
    """On a schedule: each of its threads at its line. The one that runs is
    on gdb's list of threads; the others wait at a switch point of the
    scheduler. Returns whether it listed them (on a schedule), and what to
    show first: the OS thread of the running one, the (name, place) of a
    waiting one, or None if no thread is in the test or the student's code."""
    program = gdb.current_progspace().filename
    threads = schedule_threads()
    if not threads:
        return False, None
    running = running_context()
    current = int(gdb.parse_and_eval("sched.current")) + 1
    print("\n*** Every thread of the schedule, at its line in the test or your code:")
    chosen = None
    for number, name, pcs in threads:
        place = place_of(pcs, program)
        runs = number == current and running is not None
        if runs:
            place = running[1]
        where = "%s() at %s:%d" % place if place else "(not in the test or your code)"
        print("  thread %d \"%s\": %s" % (number, name, where))
        if chosen is None and place is not None and not place[1].startswith("tests/"):
            chosen = running[0] if runs else (name, place)
    return True, chosen

def every_thread_on_interrupt():
    """After Ctrl-C on a hang: each thread's line in the test or your code,
    and the first thread that is in your code selected - that is where it
    waits. Returns that thread's frame (or, on a schedule, the name and
    place of a thread that waits there), or None."""
    listed, chosen = every_schedule_thread()
    if listed:
        return chosen
    print("\n*** Every thread, at its line in the test or your code:")
    interrupted = gdb.selected_thread()
    chosen = None
    for thread in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
        thread.switch()
        frame = kit_frame()
        if frame is None:
            where = "(not in the test or your code)"
        else:
            sal = frame.find_sal()
            where = "%s() at %s:%d" % (frame.name(), sal.symtab.filename, sal.line)
            if chosen is None and not is_test_file(frame):
                chosen = (thread, frame)
        print("  thread %d \"%s\": %s" % (thread.num, thread.name or "", where))
    if chosen is None:
        interrupted.switch()
        return None
    chosen[0].switch()
    return chosen[1]

def show_waiting_thread(name, place):
    """A thread of the schedule that is not running: gdb cannot select its
    frames, so its line is shown."""
    function, filename, line = place
    print("#0  %s () at %s:%d   (thread \"%s\", waiting at a switch point)" % (function, filename, line, name))
    try:
        gdb.execute("list %s:%d,%d" % (filename, line, line))
    except gdb.error:
        pass

def on_stop(event):
    reason = why(event)
    if reason is None:
        return
    if reason in ("Stopped by Ctrl-C", "On its schedule the test can go no further (printed above)",
                  "An explored schedule failed (its report follows when you continue)"):
        chosen = every_thread_on_interrupt()
        if chosen is not None:
            where = "at its line" if reason.startswith("An explored schedule") else "where it waits"
            print("*** %s. The first thread in your code, %s:" % (reason, where))
            if isinstance(chosen, tuple):
                show_waiting_thread(*chosen)
                print("*** It waits at a switch point of the scheduler, where gdb shows no frames: each thread's "
                      "line is above. continue: the report; quit")
                return
            elif isinstance(chosen, gdb.InferiorThread):
                chosen.switch()
                kit_frame().select()
                gdb.execute("frame")
            else:
                chosen.select()
                gdb.execute("frame")
            print("*** bt: every call; frame N; print x; thread N: another thread; "
                  "thread apply all bt: every thread; quit")
            return
    frame = kit_frame()
    if frame is None or frame == gdb.newest_frame():
        print("\n*** %s: at the line above." % reason)
    else:
        print("\n*** %s. Where, in the test or your code:" % reason)
        frame.select()
        gdb.execute("frame")
    print("*** bt: every call; frame N; print x; info threads; "
          "thread apply all bt: every thread; quit")

gdb.events.stop.connect(on_stop)
end

run
