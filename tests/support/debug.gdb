# How `make debug CH=NN TEST=name` starts gdb on one test: it stops where the
# test fails a check, where ThreadSanitizer reports a race (SAN=tsan), and -
# by itself - where the code crashes. A hang: press Ctrl-C.
set pagination off
set confirm off
set print thread-events off
set breakpoint pending on

# Every check of the tests (assert_*, assert_ok, ...) calls cmocka's _fail.
break _fail
commands
  silent
  printf "\n*** The test failed the check printed above. Where it failed (bt):\n"
  bt
  printf "*** frame N: go to frame N of the list; info threads, thread apply all bt: every thread; quit\n"
end

# The ThreadSanitizer build ($kit_tsan set): its runtime calls this once it
# has printed a report.
if !$_isvoid($kit_tsan)
  break __tsan_on_report
  commands
    silent
    printf "\n*** ThreadSanitizer reported the race printed above. This thread (bt):\n"
    bt
    printf "*** info threads, thread apply all bt: every thread; continue: let it exit; quit\n"
  end
end

run
