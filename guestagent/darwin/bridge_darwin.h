// bridge_darwin.h: the C interface of the Objective-C bridge (bridge_darwin.m)
// used by driver_darwin.go. Strings returned are malloc'd UTF-8; the caller
// frees them with free().
#ifndef HIVECREW_BRIDGE_DARWIN_H
#define HIVECREW_BRIDGE_DARWIN_H

#include <stdint.h>

// Result codes of the open functions.
enum { HC_OK = 0, HC_NOT_FOUND = 1, HC_FAILED = 2 };

typedef struct {
	double width;  // logical points
	double height; // logical points
	double scale;  // pixels per point
} hc_screen;

typedef struct {
	unsigned char *pixels; // RGBA, width*height*4 bytes, malloc'd
	int width;
	int height;
	char *err; // set on failure
} hc_image;

hc_screen hc_main_screen(void);
int hc_accessibility_trusted(void);
int hc_screen_capture_allowed(void);
void hc_request_permissions(void);

hc_image hc_capture(void);

// Input. Buttons are 0 left, 1 right, 2 middle. Flags are CGEventFlags
// set on the events (0: the events' own). The functions that return int
// answer 0, or -1 when macOS made no event (CGEventCreate* returned NULL).
void hc_mouse_move(double x, double y);
// hc_mouse_move_drag moves the pointer with button held (a dragged
// event), or plainly when button is -1.
int hc_mouse_move_drag(double x, double y, int button);
int hc_mouse_click(double x, double y, int button, int count, uint64_t flags);
// hc_mouse_button presses (down) or releases button where the pointer is.
int hc_mouse_button(int button, int down);
// hc_cursor_position reads where the pointer is, in points, origin top-left.
int hc_cursor_position(double *x, double *y);
void hc_mouse_drag(double fx, double fy, double tx, double ty, int steps);
int hc_scroll(double x, double y, int dx, int dy, uint64_t flags);
void hc_key(uint16_t code, uint64_t flags);
// hc_key_event posts one key down or up; a modifier key's is a
// flags-changed event.
int hc_key_event(uint16_t code, int down, uint64_t flags);
// hc_type_key posts one key press (down, then up) of code with flags,
// carrying the text units (n of them; none when n is 0). It answers 0,
// or -1 when macOS made no event.
int hc_type_key(uint16_t code, uint64_t flags, const uint16_t *units, int n);

// HC_LAYOUT_KEYS key codes, each without and with Shift, HC_LAYOUT_UNITS
// UTF-16 units at most per key.
enum { HC_LAYOUT_KEYS = 128, HC_LAYOUT_UNITS = 4 };
// hc_layout_chars reads what each key of the current keyboard layout types
// (UCKeyTranslate on TISCopyCurrentKeyboardLayoutInputSource's 'uchr'
// data, on the main thread as TextInputSources requires): for key code c
// and shift s (0 or 1), lens[c*2+s] units at chars[(c*2+s)*HC_LAYOUT_UNITS],
// -1 for a dead key. It answers 0, -1 when the layout has no 'uchr' data,
// -2 when the main thread did not answer within 2 s.
int hc_layout_chars(uint16_t *chars, int8_t *lens);

// The open functions ask for activation (open with activation) and set
// *pid to the app that opened, or -1 when macOS does not say.
int hc_open_app(const char *name, int32_t *pid, char **err);
int hc_open_file(const char *path, const char *app, int32_t *pid, char **err);
int hc_open_url(const char *url, int32_t *pid, char **err);
// hc_frontmost_pid returns the frontmost app's pid (-1 when there is
// none) and sets *name to its name (malloc'd).
int32_t hc_frontmost_pid(char **name);
// hc_activate_cooperative asks that the app with pid be activated as if
// the frontmost app activated it (activateFromApplication:options:,
// macOS 14); hc_activate_ax sets its AXFrontmost and raises its main
// window (Accessibility). Both answer 0 when asked, or an error code
// (-1: no such app; an AXError) without saying whether it took.
int hc_activate_cooperative(int32_t pid);
int hc_activate_ax(int32_t pid);
// hc_resolve_app_json says, as JSON (protocol.ResolvedApp), what
// hc_open_app(name) (and hc_open_file with that app) would start: the
// bundle's id, name, folder and executable, links resolved.
char *hc_resolve_app_json(const char *name);
// hc_default_app_json says the same of the application hc_open_file(path,
// NULL) would open path with.
char *hc_default_app_json(const char *path);
char *hc_frontmost_app_json(void);
char *hc_running_apps_json(void);
char *hc_ax_tree_json(const char *app, int max_depth, int only_visible, int max_nodes, char **err);

char *hc_clipboard_read(void);
int hc_clipboard_write(const char *text);

// Redraws (frames_darwin.m): a ScreenCaptureKit stream of the main
// display that calls the Go functions hcFramesDrawn(token) for each frame
// whose status is complete (the screen changed) and hcFramesLost(token,
// message) if the stream stops by itself. hc_frames_start waits up to 5 s
// for the stream to run; it returns NULL and sets *handle, or a malloc'd
// error message. After hc_frames_stop returns, no call for its token comes.
char *hc_frames_start(uintptr_t token, void **handle);
void hc_frames_stop(void *handle);

void hc_run_main_loop(void);
void hc_stop_main_loop(void);

#endif
