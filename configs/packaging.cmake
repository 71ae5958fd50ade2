# Debian packages with CPack (`cpack -G DEB` in the build tree), one per
# install component:
#   failoverd     the daemon, failoverctl, the systemd unit (/lib/systemd/system),
#                 /etc/failoverd/failoverd.json (a conffile), fo-drill-report.py,
#                 the Pacemaker resource agent ocf:failoverd:pair
#                 (/usr/lib/ocf/resource.d/failoverd/pair, cluster/)
#   fo-heartbeat  the static in-guest agent: no Xen package needed in the guest
# The install() rules themselves live beside their targets.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME failoverd)
set(CPACK_PACKAGE_VENDOR "failoverd")
# The Maintainer field (and the changelog's trailer). Without a public
# address yet; lintian's bogus-mail-host is overridden until there is one.
set(FO_DEB_MAINTAINER "failoverd maintainers <failoverd@localhost>" CACHE STRING
  "Maintainer of the .debs, \"Name <address>\"")
set(CPACK_PACKAGE_CONTACT "${FO_DEB_MAINTAINER}")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it before each
# package's own synopsis (the first line of CPACK_DEBIAN_<PKG>_DESCRIPTION).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL failoverd fo-heartbeat)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)

set(CPACK_DEBIAN_FAILOVERD_PACKAGE_NAME failoverd)
# Extended descriptions: lines under 80 columns (lintian).
set(CPACK_DEBIAN_FAILOVERD_DESCRIPTION
  "real-time failover of active/standby Xen domains
failoverd is a dom0 daemon that keeps one domain of each pair running and
an identical one booted and paused. When the active fails (no heartbeat,
crashed, destroyed, unhealthy) it pauses it, confirms it is paused, and
only then unpauses the standby, by libxenctrl from a SCHED_FIFO thread.

This package has the daemon, failoverctl, the systemd unit, the man
pages, example Prometheus alert rules and a Grafana dashboard, and the
Pacemaker resource agent ocf:failoverd:pair for a pair across two hosts.")
# What failoverd links (readelf -d NEEDED), by owning package (dpkg -S):
# libxenctrl/libxenlight/libxlutil.so.4.17 are libxenmisc4.17; xen-utils-4.17
# brings xenstored and the xen.service the unit requires; procps is the
# unit's /bin/kill (ExecReload); libssl3 is libcrypto.so.3 (the state
# stream's HMAC and nonces, failoverd/stream/wire.c).
set(CPACK_DEBIAN_FAILOVERD_PACKAGE_DEPENDS
  "libc6 (>= 2.34), libcjson1 (>= 1.7.15), libsystemd0, libxenmisc4.17, libxenstore4, libxengnttab1, libxenevtchn1, libxencall1, libssl3, xen-utils-4.17, procps")
# The resource agent runs under Pacemaker with resource-agents' shell
# functions (which bring python3, its JSON reader).
set(CPACK_DEBIAN_FAILOVERD_PACKAGE_SUGGESTS "python3, python3-matplotlib, pacemaker, resource-agents")
# Maintainer scripts: systemd learns about the unit (daemon-reload) but the
# package never enables or starts it; removal stops it first (stopping leaves
# every domain as it is, KillMode=process); purge drops `systemctl enable`'s link.
# The scripts are configs/debian/{postinst,prerm,postrm}, in the style of
# dh_installsystemd --no-enable --no-start (deb-systemd-helper,
# deb-systemd-invoke, daemon-reload); copied with the modes dpkg wants.
set(fo_deb ${CMAKE_BINARY_DIR}/debian)
file(WRITE ${fo_deb}/conffiles "/etc/failoverd/failoverd.json\n")
file(COPY ${CMAKE_SOURCE_DIR}/configs/debian/postinst ${CMAKE_SOURCE_DIR}/configs/debian/prerm
  ${CMAKE_SOURCE_DIR}/configs/debian/postrm DESTINATION ${fo_deb}
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_FAILOVERD_PACKAGE_CONTROL_EXTRA
  "${fo_deb}/conffiles;${fo_deb}/postinst;${fo_deb}/prerm;${fo_deb}/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_FO-HEARTBEAT_PACKAGE_NAME fo-heartbeat)
set(CPACK_DEBIAN_FO-HEARTBEAT_DESCRIPTION
  "in-guest heartbeat agent for failoverd
fo-heartbeat runs inside each domain of a failoverd pair (a PV domU). It
shares a page and an event channel with dom0 and bumps a sequence number
every period, so that failoverd sees the guest alive; it carries dom0's
role and drill commands back into the guest. Statically linked: the guest
needs no Xen library. Install it in the guests, not in dom0.")
set(CPACK_DEBIAN_FO-HEARTBEAT_PACKAGE_SECTION misc)
# Both packages are built from one source, failoverd (its changelog).
set(CPACK_DEBIAN_FO-HEARTBEAT_PACKAGE_SOURCE failoverd)

# What Debian policy wants in every package's /usr/share/doc/<package>:
# a machine-readable copyright file and the changelog, gzipped -9n (a
# native package: changelog.gz). Plus the lintian overrides, each with its
# reason, and the examples an operator starts from.
find_program(FO_GZIP_PKG gzip REQUIRED)
add_custom_command(OUTPUT ${fo_deb}/changelog.gz
  COMMAND ${FO_GZIP_PKG} -9n -c ${CMAKE_SOURCE_DIR}/configs/debian/changelog > ${fo_deb}/changelog.gz
  DEPENDS ${CMAKE_SOURCE_DIR}/configs/debian/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${fo_deb}/changelog.gz)
set(fo_pkgs failoverd)
if(TARGET fo-heartbeat)
  list(APPEND fo_pkgs fo-heartbeat)
endif()
foreach(pkg IN LISTS fo_pkgs)
  install(FILES ${fo_deb}/changelog.gz DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg} COMPONENT ${pkg})
  set(cr ${CMAKE_SOURCE_DIR}/configs/debian/copyright)
  if(EXISTS ${CMAKE_SOURCE_DIR}/configs/debian/${pkg}.copyright)
    set(cr ${CMAKE_SOURCE_DIR}/configs/debian/${pkg}.copyright)
  endif()
  install(FILES ${cr} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg} RENAME copyright COMPONENT ${pkg})
  install(FILES ${CMAKE_SOURCE_DIR}/configs/debian/${pkg}.lintian-overrides
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME ${pkg} COMPONENT ${pkg})
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/configs/failoverd.json ${CMAKE_SOURCE_DIR}/configs/failoverd.schema.json
  ${CMAKE_SOURCE_DIR}/configs/failoverd-alerts.yml ${CMAKE_SOURCE_DIR}/configs/grafana-dashboard.json
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/failoverd/examples COMPONENT failoverd)

include(CPack)
