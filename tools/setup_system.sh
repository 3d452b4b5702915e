#!/bin/sh
# Install and start the system services boincpy needs on a Debian machine.
# Idempotent: packages already present are not touched.
set -eu
need=""
for pkg in mariadb-server apache2 apache2-utils libapache2-mod-fcgid boinc-client libboinc-app-dev libmariadb-dev pkg-config build-essential python3-venv python3-dev chromium chromium-driver curl; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
if [ -n "$need" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need
fi
if ! mysqladmin -uroot ping >/dev/null 2>&1 && ! sudo -n mysqladmin -uroot ping >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO mkdir -p /run/mysqld
  $SUDO chown mysql:mysql /run/mysqld
  $SUDO start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  for _ in $(seq 1 60); do mysqladmin -uroot ping >/dev/null 2>&1 && break; sleep 1; done
fi
