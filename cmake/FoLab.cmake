# FoLab.cmake: how a real-Xen lab test (one boot of the lab, ctest label
# `xen`) is registered. Every such test is one row of one table,
# tests/lab/scenarios.cmake, read once from the top-level CMakeLists.txt
# after every subdirectory (its rows name targets of fo-trace/ and
# tests/bench/, and tests of rt-patches/). tests/lab/test_scenario_table.py
# holds the table to the scenario files: every row names existing
# scenarios, every scenario file is a row's or listed as not a test.
#
# fo_lab_test(NAME test SCENARIOS a[+b...] TIMEOUT s
#             [RUNNER lab|systemd|two-host] [XEN stock|patched|flask]
#             [XEN_UPTO n] [ARCH x86|arm64] [OPTIONS arg...] [ENV VAR=value...]
#             [LAB_TIMEOUT s] [EXTENDED] [IF condition...] [COMMAND argv...])
#
#   SCENARIOS    what the boot runs, in order (`lab.sh run a+b`: one boot)
#   RUNNER       lab: tests/lab/lab.sh (scenarios in tests/lab/scenarios/);
#                systemd: tests/lab/systemd/sd-lab.sh, two-host:
#                tests/lab/systemd/two-host.sh (both: systemd/scenarios/)
#   XEN          stock: Debian's Xen; patched: our series (--patched-xen),
#                after its build test xen_rt_series_build[_arm64]; flask:
#                --patched-xen built by lab.sh itself with --flask (the
#                scenario's "# xen-xsm: flask" line), not the series' test
#   XEN_UPTO     --patched-xen with the series up to patch n only
#                (FO_LAB_XEN_UPTO, built by lab.sh itself)
#   ARCH         arm64: the arm64 lab (--arch arm64) on the cross-built
#                tree <build>/cross-arm64 (fixture fo_arm64_tree, test
#                cross_arm64_build); not registered in a cross build
#   OPTIONS      the runner's other arguments (after --arch, before
#                --patched-xen)
#   ENV          variables the runner reads, through `cmake -E env`
#   LAB_TIMEOUT  the runner's --timeout (the boot's), s
#   TIMEOUT      ctest's, s (above LAB_TIMEOUT: the first boot builds
#                images first)
#   EXTENDED     the extended suite (label `extended`, tests/run.sh
#                --extended) instead of the CI suite
#   IF           register only when this if() condition holds
#   COMMAND      a script of its own that boots the lab (a benchmark's
#                driver, a report made on the host): the whole command,
#                SCENARIOS then names what it boots
#
# Every row: LABELS xen (xen;extended), RUN_SERIAL (one QEMU at a time: two
# emulated machines on two cores would distort every timing the scenarios
# check), and the working directory tests/lab's build directory (no runner
# depends on it: each takes --build-dir and finds its own sources).

set(FO_LAB_SRC ${CMAKE_CURRENT_LIST_DIR}/../tests/lab)
get_filename_component(FO_LAB_SRC ${FO_LAB_SRC} ABSOLUTE)

# fo_lab_scenario_dir(RUNNER VAR): where RUNNER's scenario files are.
function(fo_lab_scenario_dir runner var)
  if(runner STREQUAL "lab")
    set(${var} ${FO_LAB_SRC}/scenarios PARENT_SCOPE)
  elseif(runner STREQUAL "systemd" OR runner STREQUAL "two-host")
    set(${var} ${FO_LAB_SRC}/systemd/scenarios PARENT_SCOPE)
  else()
    message(FATAL_ERROR "fo_lab_test: RUNNER ${runner}: not lab, systemd or two-host")
  endif()
endfunction()

function(fo_lab_test)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "EXTENDED"
    "NAME;SCENARIOS;RUNNER;XEN;XEN_UPTO;ARCH;LAB_TIMEOUT;TIMEOUT" "OPTIONS;ENV;IF;COMMAND")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fo_lab_test(${ARG_NAME}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required NAME SCENARIOS TIMEOUT)
    if(NOT ARG_${required})
      message(FATAL_ERROR "fo_lab_test(${ARG_NAME}): no ${required}")
    endif()
  endforeach()
  if(NOT ARG_RUNNER)
    set(ARG_RUNNER lab)
  endif()
  if(NOT ARG_XEN)
    set(ARG_XEN stock)
  endif()
  if(NOT ARG_ARCH)
    set(ARG_ARCH x86)
  endif()
  if(NOT ARG_XEN MATCHES "^(stock|patched|flask)$")
    message(FATAL_ERROR "fo_lab_test(${ARG_NAME}): XEN ${ARG_XEN}: not stock, patched or flask")
  endif()
  if(NOT ARG_ARCH MATCHES "^(x86|arm64)$")
    message(FATAL_ERROR "fo_lab_test(${ARG_NAME}): ARCH ${ARG_ARCH}: not x86 or arm64")
  endif()
  if(ARG_XEN_UPTO AND NOT ARG_XEN STREQUAL "patched")
    message(FATAL_ERROR "fo_lab_test(${ARG_NAME}): XEN_UPTO is a part of the patched Xen (XEN patched)")
  endif()

  # The scenarios must exist, whether or not this configure registers the
  # test: a misspelt name fails here, not in the lab after a boot.
  fo_lab_scenario_dir(${ARG_RUNNER} dir)
  string(REPLACE "+" ";" scenarios "${ARG_SCENARIOS}")
  foreach(scenario IN LISTS scenarios)
    if(NOT EXISTS ${dir}/${scenario}.sh)
      message(FATAL_ERROR "fo_lab_test(${ARG_NAME}): no scenario ${dir}/${scenario}.sh")
    endif()
  endforeach()

  if(ARG_ARCH STREQUAL "arm64" AND CMAKE_CROSSCOMPILING)
    return()
  endif()
  if(ARG_IF)
    if(${ARG_IF})
    else()
      return()
    endif()
  endif()

  set(build_dir ${CMAKE_BINARY_DIR})
  if(ARG_ARCH STREQUAL "arm64")
    set(build_dir ${CMAKE_BINARY_DIR}/cross-arm64)
  endif()
  set(env ${ARG_ENV})
  if(ARG_XEN_UPTO)
    list(PREPEND env FO_LAB_XEN_UPTO=${ARG_XEN_UPTO})
  endif()

  if(ARG_COMMAND)
    set(command ${ARG_COMMAND})
  else()
    if(NOT ARG_LAB_TIMEOUT)
      message(FATAL_ERROR "fo_lab_test(${ARG_NAME}): no LAB_TIMEOUT (the runner's --timeout)")
    endif()
    if(ARG_RUNNER STREQUAL "lab")
      set(command ${FO_LAB_SRC}/lab.sh)
    elseif(ARG_RUNNER STREQUAL "systemd")
      set(command ${FO_LAB_SRC}/systemd/sd-lab.sh)
    else()
      set(command ${FO_LAB_SRC}/systemd/two-host.sh)
    endif()
    list(APPEND command run ${ARG_SCENARIOS})
    if(ARG_ARCH STREQUAL "arm64")
      list(APPEND command --arch arm64)
    endif()
    list(APPEND command ${ARG_OPTIONS})
    if(NOT ARG_XEN STREQUAL "stock")
      list(APPEND command --patched-xen)
    endif()
    list(APPEND command --build-dir ${build_dir} --timeout ${ARG_LAB_TIMEOUT})
  endif()
  if(env)
    list(PREPEND command ${CMAKE_COMMAND} -E env ${env})
  endif()

  add_test(NAME ${ARG_NAME} COMMAND ${command}
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/tests/lab)
  set(labels xen)
  if(ARG_EXTENDED)
    set(labels "xen;extended")
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES
    LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL TRUE)
  if(ARG_XEN STREQUAL "patched" AND NOT ARG_XEN_UPTO)
    if(ARG_ARCH STREQUAL "arm64")
      set_tests_properties(${ARG_NAME} PROPERTIES DEPENDS xen_rt_series_build_arm64)
    else()
      set_tests_properties(${ARG_NAME} PROPERTIES DEPENDS xen_rt_series_build)
    endif()
  endif()
  if(ARG_ARCH STREQUAL "arm64")
    set_tests_properties(${ARG_NAME} PROPERTIES FIXTURES_REQUIRED fo_arm64_tree)
  endif()
endfunction()

# fo_lab_not_a_test(PATH REASON): a scenario file (PATH under tests/lab/)
# that no ctest test boots, and why (a helper, a benchmark's own boot).
# Nothing is registered; the file must exist and the reason be given.
function(fo_lab_not_a_test path reason)
  if(NOT EXISTS ${FO_LAB_SRC}/${path})
    message(FATAL_ERROR "fo_lab_not_a_test: no ${FO_LAB_SRC}/${path}")
  endif()
  if(reason STREQUAL "")
    message(FATAL_ERROR "fo_lab_not_a_test(${path}): no reason given")
  endif()
endfunction()
