#!/bin/sh
# install-agent.sh installs the Hivecrew guest agent in a macOS template.
# Run it inside the guest, as the auto-login user, from the shared folder:
#
#   sh "/Volumes/My Shared Files/hivecrew/install/install-agent.sh"
#
# It copies hivecrew-guestagent (next to this script) to /usr/local/bin
# (asking for the administrator password once), allows it to shut the guest
# down cleanly (/etc/sudoers.d/hivecrew-guestagent: `shutdown -h now` only),
# installs its LaunchAgent in
# ~/Library/LaunchAgents, loads it in this GUI session, and opens the
# Privacy & Security panes where the agent must be allowed (Screen
# Recording, Accessibility, and Files and Folders if macOS asks for the
# shared folder's volume). Running it again updates the agent.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
agent="$here/hivecrew-guestagent"
plist="$here/com.hivecrew.guestagent.plist"
label=com.hivecrew.guestagent
dest=/usr/local/bin/hivecrew-guestagent

[ "$(uname -s)" = Darwin ] || { echo "install-agent.sh: run this inside the macOS guest" >&2; exit 1; }
[ -x "$agent" ] && [ -f "$plist" ] || { echo "install-agent.sh: $agent or $plist is missing" >&2; exit 1; }
[ "$(id -u)" != 0 ] || { echo "install-agent.sh: run this as the auto-login user, not root" >&2; exit 1; }

echo "Installing the guest agent ($("$agent" --version 2>/dev/null || echo unknown)) to $dest"
# TCC keeps a grant for the agent's designated requirement. Signed with a
# certificate (make build SIGN_IDENTITY=...), that is its identifier and
# the certificate: a rebuilt agent keeps its grants. Signed ad hoc (or not
# at all) it is the binary's hash: every new agent must be allowed again.
sig=$(codesign -dv "$agent" 2>&1 || true)
case "$sig" in
*"Signature=adhoc"* | *"not signed"*)
	echo "Note: this agent is signed ad hoc: after an update, allow it again under Screen Recording,"
	echo "Accessibility and Files and Folders (sign it with a certificate to keep the grants: see docs/macos.md in Hivecrew)." ;;
esac
sudo mkdir -p /usr/local/bin /Users/Shared/Hivecrew
sudo install -m 0755 "$agent" "$dest"
sudo chmod 1777 /Users/Shared/Hivecrew
# Downloaded from a shared folder: no quarantine for a binary we installed.
sudo xattr -d com.apple.quarantine "$dest" 2>/dev/null || true

# A clean shutdown from the host (templates setup --finish, seal) goes
# through the agent: this rule lets the auto-login user run exactly
# `/sbin/shutdown -h now` as root without a password (the agent runs
# `sudo -n /sbin/shutdown -h now`), which needs no Automation permission.
rule="$(id -un) ALL=(root) NOPASSWD: /sbin/shutdown -h now"
tmp=$(mktemp)
printf '%s\n' "$rule" >"$tmp"
sudo visudo -cf "$tmp" >/dev/null
sudo install -m 0440 -o root -g wheel "$tmp" /etc/sudoers.d/hivecrew-guestagent
rm -f "$tmp"

# macOS 15 asks about once a month whether an app may keep recording the
# screen, with an alert over the whole screen (it would sit in front of
# the agent in every clone): record this agent's approval far ahead, in
# replayd's approvals (health_check reports it when missing or due).
defaults write "$HOME/Library/Group Containers/group.com.apple.replayd/ScreenCaptureApprovals" "$dest" -date "3024-01-01 00:00:00 +0000" || true

mkdir -p "$HOME/Library/LaunchAgents"
install -m 0644 "$plist" "$HOME/Library/LaunchAgents/$label.plist"
domain="gui/$(id -u)"
launchctl bootout "$domain/$label" 2>/dev/null || true
launchctl bootstrap "$domain" "$HOME/Library/LaunchAgents/$label.plist"
launchctl enable "$domain/$label"
launchctl kickstart -k "$domain/$label"

# The unattended setup opens the panes itself (unattended.sh).
[ "${HIVECREW_UNATTENDED:-}" = 1 ] && exit 0
echo "Allow hivecrew-guestagent under Screen Recording and under Accessibility, and, if macOS"
echo "asks whether it may access files on a volume (the shared folder), allow that too"
echo "(Files and Folders). Then log out and back in once; health_check reports each grant."
open "x-apple.systempreferences:com.apple.preference.security?Privacy_ScreenCapture" || true
sleep 1
open "x-apple.systempreferences:com.apple.preference.security?Privacy_Accessibility" || true
sleep 1
open "x-apple.systempreferences:com.apple.preference.security?Privacy_FilesAndFolders" || true
