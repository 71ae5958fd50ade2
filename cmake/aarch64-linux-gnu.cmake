# CMake toolchain file: failoverd for arm64 (Xen on Arm dom0s and guests),
# cross-built on a Debian 12 amd64 host.
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# Compiler and libc: the host's gcc-aarch64-linux-gnu and
# libc6-dev-arm64-cross (tests/deps.sh). Everything else (Xen, cJSON,
# systemd libraries and headers, the arm64 kernel headers fo_switch.ko is
# built against) comes from arm64 .debs unpacked into the lab's cache by
# tests/lab/debroot.sh (`debroot.sh arm64-sysroot`): installing
# libxen-dev:arm64 would remove the host's libxen-dev. FO_ARM64_SYSROOT
# (cache variable or environment) names another sysroot; without it the
# lab's is fetched (first time: a few minutes of apt-get download).

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# CMake re-reads this file for try_compile without the -D values: keep the
# sysroot in the environment once found.
if(NOT FO_ARM64_SYSROOT)
  set(FO_ARM64_SYSROOT "$ENV{FO_ARM64_SYSROOT}")
endif()
if(NOT FO_ARM64_SYSROOT)
  get_filename_component(_fo_repo "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  message(STATUS "aarch64: fetching the arm64 sysroot (tests/lab/debroot.sh arm64-sysroot)")
  execute_process(COMMAND bash "${_fo_repo}/tests/lab/debroot.sh" arm64-sysroot
    OUTPUT_VARIABLE _fo_out RESULT_VARIABLE _fo_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _fo_rc EQUAL 0)
    message(FATAL_ERROR "aarch64: tests/lab/debroot.sh arm64-sysroot failed (rc ${_fo_rc})")
  endif()
  string(REGEX MATCH "[^\n]*$" FO_ARM64_SYSROOT "${_fo_out}")
endif()
if(NOT EXISTS "${FO_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig/xencontrol.pc")
  message(FATAL_ERROR "aarch64: '${FO_ARM64_SYSROOT}' is no arm64 sysroot (no xencontrol.pc)")
endif()
set(FO_ARM64_SYSROOT "${FO_ARM64_SYSROOT}" CACHE PATH "arm64 sysroot (tests/lab/debroot.sh arm64-sysroot)")
set(ENV{FO_ARM64_SYSROOT} "${FO_ARM64_SYSROOT}")

# Libraries and headers from the sysroot first, then the cross libc.
set(CMAKE_FIND_ROOT_PATH "${FO_ARM64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The sysroot's multiarch headers (OpenSSL's opensslconf.h and
# configuration.h live in usr/include/aarch64-linux-gnu, which the cross
# compiler does not search: its own is /usr/aarch64-linux-gnu/include).
set(CMAKE_C_STANDARD_INCLUDE_DIRECTORIES "${FO_ARM64_SYSROOT}/usr/include/aarch64-linux-gnu")
set(ENV{PKG_CONFIG_LIBDIR} "${FO_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${FO_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${FO_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_PATH} "")
# The arm64 libraries' own dependencies (libxenlight -> libyajl, ...) are
# found at link time without putting them on the command line.
set(CMAKE_EXE_LINKER_FLAGS_INIT
  "-Wl,-rpath-link,${FO_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu:${FO_ARM64_SYSROOT}/lib/aarch64-linux-gnu")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT}")

# kmod-switch: fo_switch.ko against Debian's arm64 kernel headers in the
# sysroot (their scripts/ are the host's linux-kbuild, amd64 programs), the
# domctl interface version from the sysroot's Xen headers.
file(GLOB _fo_kdirs "${FO_ARM64_SYSROOT}/usr/src/linux-headers-*-arm64")
if(_fo_kdirs)
  list(GET _fo_kdirs 0 _fo_kdir)
  set(FO_KMOD_KERNELDIR "${_fo_kdir}" CACHE PATH "Kernel build tree fo_switch.ko is built against")
endif()
set(FO_KMOD_MAKE_ARGS "ARCH=arm64;CROSS_COMPILE=aarch64-linux-gnu-;FO_XEN_DOMCTL_H=${FO_ARM64_SYSROOT}/usr/include/xen/domctl.h"
  CACHE STRING "Extra arguments for the module's make (a list)")
