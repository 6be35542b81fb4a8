#!/bin/sh
# provision.sh runs as root inside the new root filesystem of a linux-desktop
# template, after its packages are installed and before it is registered.
# HIVECREW_TEMPLATE_OPTIONS lists the build options ("full", "libreoffice").
set -eu

# A sandbox has no init system: nothing may try to start services.
# (The builder removes its own policy-rc.d afterwards.)

# The browser and the editor the agent opens for URLs and text files.
if command -v chromium >/dev/null 2>&1; then
	mkdir -p /etc/xdg
	cat >/etc/xdg/mimeapps.list <<'LIST'
[Default Applications]
x-scheme-handler/http=chromium.desktop
x-scheme-handler/https=chromium.desktop
text/html=chromium.desktop
LIST
	if command -v mousepad >/dev/null 2>&1; then
		echo 'text/plain=org.xfce.mousepad.desktop' >>/etc/xdg/mimeapps.list
	fi
	# Chromium's own sandbox needs privileges a sandboxed guest does not
	# have; the guest is the sandbox.
	mkdir -p /etc/chromium.d
	echo 'export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox --no-first-run --password-store=basic"' >/etc/chromium.d/hivecrew
fi

# An openbox menu entry per installed application, for a user who takes over.
mkdir -p /etc/xdg/openbox
menu=/etc/xdg/openbox/menu.xml
{
	echo '<?xml version="1.0" encoding="UTF-8"?>'
	echo '<openbox_menu xmlns="http://openbox.org/3.4/menu"><menu id="root-menu" label="Hivecrew">'
	for app in xterm mousepad chromium libreoffice; do
		if command -v "$app" >/dev/null 2>&1; then
			echo "<item label=\"$app\"><action name=\"Execute\"><command>$app</command></action></item>"
		fi
	done
	echo '</menu></openbox_menu>'
} >"$menu"

# Mount points the sandbox binds or covers.
mkdir -p /tmp /var/tmp /run /home /root /mnt /media /proc /dev /sys
chmod 1777 /tmp /var/tmp
