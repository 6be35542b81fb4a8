// console_darwin_arm64.h: the VM's console (console_darwin_arm64.m).
#ifndef HIVECREW_CONSOLE_DARWIN_H
#define HIVECREW_CONSOLE_DARWIN_H

// hc_console_start starts the Virtualization framework's VNC server for
// the VZVirtualMachine vm, with password, on the main queue; it waits up
// to 10 s for its port. It returns NULL and sets *server and *port, or a
// malloc'd error message.
char *hc_console_start(void *vm, const char *password, void **server, int *port);
// hc_console_stop stops and releases the server.
void hc_console_stop(void *server);

#endif
