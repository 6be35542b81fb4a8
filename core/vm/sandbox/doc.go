// Package sandbox is the Linux VM backend: each machine is a desktop in
// Linux namespaces. bubblewrap (user, pid, net, mount, ipc and uts
// namespaces, dying with the helper) runs the guest agent in session mode
// (Xvfb, a private D-Bus session with AT-SPI, openbox), which serves the
// guest protocol on a unix socket in a folder bound in from the machine's
// own folder.
//
// Isolation: the host's user data (/home, /root, /tmp, /run, /var/tmp, /mnt,
// /media and the Hivecrew data directory) is masked; a machine sees only its
// own shared folder (at /mnt/shared) and a private home. A helper running as
// root never runs a sandbox as root: it uses a dedicated unprivileged
// account, created on first use, so files the guest writes are that
// account's. Templates of kind host run the host's root filesystem
// read-only; kind rootfs runs a template root filesystem under a per-machine
// overlay upper directory (the copy-on-write clone). Networks: offline
// (loopback only) or internet (slirp4netns NAT under an egress policy,
// slirp4netns itself jailed; see slirp). Memory and CPU caps use cgroup v2 where its controllers are
// available to the helper, cgroup v1 on hybrid hosts, rlimits otherwise;
// Status.Limits says which. On cgroup v1 the machines' parent cgroup is
// weighed up beside the host's programs while a machine starts, and only
// then (cpuweight_linux.go argues why); each machine's CPU quota holds
// throughout.
//
// A cold start runs what does not wait on another step side by side:
// the guest agent's desktop starts Xvfb (without GLX) and the session bus
// together, openbox and AT-SPI beside each other, each readiness read from
// the program's own notice; the helper learns of the agent's socket from
// an inotify watch, not a poll.
package sandbox
