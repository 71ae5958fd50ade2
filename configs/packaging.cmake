# Debian packages with CPack (`cpack -G DEB` in the build tree), one per
# install component:
#   failoverd     the daemon, failoverctl, the systemd unit (/lib/systemd/system),
#                 /etc/failoverd/failoverd.json (a conffile), fo-drill-report.py
#   fo-heartbeat  the static in-guest agent: no Xen package needed in the guest
# The install() rules themselves live beside their targets.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME failoverd)
set(CPACK_PACKAGE_VENDOR "failoverd")
set(CPACK_PACKAGE_CONTACT "failoverd maintainers <failoverd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "real-time failover of active/standby Xen domains")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL failoverd fo-heartbeat)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)

set(CPACK_DEBIAN_FAILOVERD_PACKAGE_NAME failoverd)
set(CPACK_COMPONENT_FAILOVERD_DESCRIPTION
  "dom0 daemon that fails an active/standby pair of PV domUs over by libxenctrl: pause, confirm, unpause")
# What failoverd links (readelf -d NEEDED), by owning package (dpkg -S):
# libxenctrl/libxenlight/libxlutil.so.4.17 are libxenmisc4.17; xen-utils-4.17
# brings xenstored and the xen.service the unit requires; procps is the
# unit's /bin/kill (ExecReload).
set(CPACK_DEBIAN_FAILOVERD_PACKAGE_DEPENDS
  "libc6 (>= 2.34), libcjson1 (>= 1.7.15), libsystemd0, libxenmisc4.17, libxenstore4, libxengnttab1, libxenevtchn1, libxencall1, xen-utils-4.17, procps")
set(CPACK_DEBIAN_FAILOVERD_PACKAGE_SUGGESTS "python3, python3-matplotlib")
# Maintainer scripts: systemd learns about the unit (daemon-reload) but the
# package never enables or starts it; removal stops it first (stopping leaves
# every domain as it is, KillMode=process); purge drops `systemctl enable`'s link.
set(fo_deb ${CMAKE_BINARY_DIR}/debian)
file(WRITE ${fo_deb}/conffiles "/etc/failoverd/failoverd.json\n")
set(fo_reload "if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi\n")
file(WRITE ${fo_deb}/postinst "#!/bin/sh\nset -e\nif [ \"$1\" = configure ]; then\n  ${fo_reload}fi\nexit 0\n")
file(WRITE ${fo_deb}/prerm "#!/bin/sh\nset -e\nif [ \"$1\" = remove ] && [ -d /run/systemd/system ]; then\n  systemctl stop failoverd.service || true\nfi\nexit 0\n")
file(WRITE ${fo_deb}/postrm "#!/bin/sh\nset -e\ncase \"$1\" in\nremove)\n  ${fo_reload};;\npurge)\n  rm -f /etc/systemd/system/multi-user.target.wants/failoverd.service\n  ${fo_reload};;\nesac\nexit 0\n")
set(CPACK_DEBIAN_FAILOVERD_PACKAGE_CONTROL_EXTRA
  "${fo_deb}/conffiles;${fo_deb}/postinst;${fo_deb}/prerm;${fo_deb}/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_FO-HEARTBEAT_PACKAGE_NAME fo-heartbeat)
set(CPACK_COMPONENT_FO-HEARTBEAT_DESCRIPTION
  "failoverd's in-guest heartbeat agent (static; runs in a PV domU)")
set(CPACK_DEBIAN_FO-HEARTBEAT_PACKAGE_SECTION misc)

include(CPack)
