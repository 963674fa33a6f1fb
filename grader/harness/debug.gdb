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
# its threads still stand where the schedule left them.
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
    frame = gdb.newest_frame()
    while frame is not None:
        symtab = frame.find_sal().symtab
        if symtab is not None and symtab.objfile.filename == program:
            name = symtab.filename
            if not name.startswith("grader/") and not name.startswith("lib/") and not earlier_reference(name, program):
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

def every_thread_on_interrupt():
    """After Ctrl-C on a hang: each thread's line in the test or your code,
    and the first thread that is in your code selected - that is where it
    waits. Returns that thread's frame, or None."""
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

def on_stop(event):
    reason = why(event)
    if reason is None:
        return
    if reason in ("Stopped by Ctrl-C", "On its schedule the test can go no further (printed above)",
                  "An explored schedule failed (its report follows when you continue)"):
        frame = every_thread_on_interrupt()
        if frame is not None:
            where = "at its line" if reason.startswith("An explored schedule") else "where it waits"
            print("*** %s. The first thread in your code, %s:" % (reason, where))
            frame.select()
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
