#!/bin/sh
# unattended.sh: what `hivecrew templates create macos-15-base --unattended`
# runs in the template's Terminal once Setup Assistant is done (it types
# the command). It reads the account's password from the kit (made by the
# helper for this template), turns on automatic login (/etc/kcpassword,
# made by the helper, and loginwindow's autoLoginUser), keeps the screen
# awake and unlocked, turns on Remote Login if macOS lets a script do it,
# and installs the guest agent (install-agent.sh). Its last line is the
# mark the helper reads on the screen: done, or failed with why.
set -u

kit=$(cd "$(dirname "$0")" && pwd)
mark="HIVECREW-SETUP-"
fail() {
	echo "${mark}FAILED: $*"
	exit 1
}
user=$(id -un)
[ "$(id -u)" != 0 ] || fail "run this as the account Setup Assistant made, not root"
[ -r "$kit/account-password" ] || fail "no account-password in $kit"
pw=$(cat "$kit/account-password")
printf '%s\n' "$pw" | sudo -S -p '' -v 2>/dev/null || fail "sudo refused the account's password"

# Automatic login: the password as loginwindow keeps it, and the user.
sudo install -m 0600 -o root -g wheel "$kit/kcpassword" /etc/kcpassword || fail "install /etc/kcpassword"
sudo defaults write /Library/Preferences/com.apple.loginwindow autoLoginUser "$user" || fail "set the automatic login"

# Awake and unlocked: no sleep, no screen saver, no password after it.
sudo pmset -a sleep 0 displaysleep 0 disksleep 0 >/dev/null 2>&1 || echo "note: pmset did not turn sleep off"
defaults -currentHost write com.apple.screensaver idleTime 0 || true
sysadminctl -screenLock off -password "$pw" >/dev/null 2>&1 || echo "note: the screen lock is still on (System Settings > Lock Screen)"

# Remote Login (ssh): systemsetup needs Full Disk Access for Terminal,
# launchctl may be refused; neither stops the setup.
if sudo systemsetup -setremotelogin on >/dev/null 2>&1 || sudo launchctl load -w /System/Library/LaunchDaemons/ssh.plist >/dev/null 2>&1; then
	echo "Remote Login: on"
else
	echo "note: Remote Login is off (System Settings > General > Sharing > Remote Login)"
fi

# The guest agent, without opening the panes (the helper opens them).
HIVECREW_UNATTENDED=1 sh "$kit/install-agent.sh" || fail "install-agent.sh failed"
echo "${mark}DONE"
