package linux

import (
	"context"

	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// AT-SPI names.
const (
	atspiBusName    = "org.a11y.Bus"
	atspiRegistry   = "org.a11y.atspi.Registry"
	atspiRoot       = dbus.ObjectPath("/org/a11y/atspi/accessible/root")
	ifaceAccessible = "org.a11y.atspi.Accessible"
	ifaceComponent  = "org.a11y.atspi.Component"
	ifaceText       = "org.a11y.atspi.Text"
	ifaceValue      = "org.a11y.atspi.Value"
	// AtspiStateType bits (in the first word of GetState).
	stateShowing = 25
	stateVisible = 30
	coordScreen  = uint32(0)
)

// Tree limits.
const (
	defaultTreeDepth = 16
	maxTreeDepth     = 64
	maxTreeNodes     = 5000
	maxValueRunes    = 4000
	// parallelCalls bounds the D-Bus calls in flight for one traversal.
	parallelCalls = 32
	// callTimeout bounds one D-Bus call: a hung application must not hang
	// the whole traversal.
	callTimeout = 2 * time.Second
)

// accessibility reads the AT-SPI tree. The bus connection is opened on first
// use and reopened after it breaks.
type accessibility struct {
	log *slog.Logger
	// mu guards conn.
	mu   sync.Mutex
	conn *dbus.Conn
}

func newAccessibility(log *slog.Logger) *accessibility { return &accessibility{log: log} }

// bus returns the AT-SPI bus connection, connecting if needed: the session
// bus gives its address (org.a11y.Bus.GetAddress), and accessibility is
// switched on for toolkits that wait to be asked (org.a11y.Status.IsEnabled).
func (a *accessibility) bus(ctx context.Context) (*dbus.Conn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil && a.conn.Connected() {
		return a.conn, nil
	}
	session, err := dbus.ConnectSessionBus(dbus.WithContext(ctx))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "no D-Bus session bus: %v", err)
	}
	defer session.Close()
	conn, err := openAtspi(ctx, session)
	if err != nil {
		return nil, err
	}
	a.conn = conn
	return conn, nil
}

// openAtspi connects to the AT-SPI bus that session (the session bus)
// names, starting it and its registry if need be, and switches
// accessibility on for toolkits that wait to be asked.
func openAtspi(ctx context.Context, session *dbus.Conn) (*dbus.Conn, error) {
	busObj := session.Object(atspiBusName, "/org/a11y/bus")
	busObj.SetProperty("org.a11y.Status.IsEnabled", dbus.MakeVariant(true))
	var addr string
	if err := busObj.CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "no AT-SPI bus (is at-spi2-core installed?): %v", err)
	}
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "connect to the AT-SPI bus: %v", err)
	}
	// The registry is started on demand: accessibility is reported
	// available only once it answers.
	if err := conn.Object(atspiRegistry, atspiRoot).CallWithContext(ctx, "org.freedesktop.DBus.Peer.Ping", 0).Err; err != nil {
		conn.Close()
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the AT-SPI registry does not answer: %v", err)
	}
	return conn, nil
}

func (a *accessibility) available(ctx context.Context) error {
	_, err := a.bus(ctx)
	return err
}

func (a *accessibility) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
}

// ref is an accessible object: its bus name and path, as AT-SPI returns them.
type ref struct {
	Name string
	Path dbus.ObjectPath
}

// walk is one traversal.
type walk struct {
	conn     *dbus.Conn
	params   protocol.AccessibilityParams
	maxDepth int
	sem      chan struct{}
	// mu guards nodes.
	mu    sync.Mutex
	nodes int
}

// call runs one D-Bus method under the traversal's limits.
func (w *walk) call(ctx context.Context, r ref, method string, out any, args ...any) error {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-w.sem }()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return w.conn.Object(r.Name, r.Path).CallWithContext(ctx, method, 0, args...).Store(out)
}

func (w *walk) prop(ctx context.Context, r ref, iface, name string, out any) error {
	var v dbus.Variant
	if err := w.call(ctx, r, "org.freedesktop.DBus.Properties.Get", &v, iface, name); err != nil {
		return err
	}
	return v.Store(out)
}

// take reserves room for one more node, false once the tree is full.
func (w *walk) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nodes >= maxTreeNodes {
		return false
	}
	w.nodes++
	return true
}

// AccessibilityTree implements server.Driver.
func (d *Driver) AccessibilityTree(ctx context.Context, p protocol.AccessibilityParams) (protocol.AccessibilityResult, error) {
	conn, err := d.a11y.bus(ctx)
	if err != nil {
		return protocol.AccessibilityResult{}, err
	}
	depth := p.MaxDepth
	if depth == 0 {
		depth = defaultTreeDepth
	}
	w := &walk{conn: conn, params: p, maxDepth: min(depth, maxTreeDepth), sem: make(chan struct{}, parallelCalls)}
	var apps []ref
	if err := w.call(ctx, ref{atspiRegistry, atspiRoot}, ifaceAccessible+".GetChildren", &apps); err != nil {
		if !conn.Connected() {
			d.a11y.close()
		}
		return protocol.AccessibilityResult{}, protocol.Errorf(protocol.CodeUnavailable, "list accessible applications: %v", err)
	}
	nodes := w.children(ctx, apps, 1, true)
	if p.App != "" && len(nodes) == 0 {
		return protocol.AccessibilityResult{}, protocol.Errorf(protocol.CodeNotFound, "no accessible application named %q", p.App)
	}
	if err := ctx.Err(); err != nil {
		return protocol.AccessibilityResult{}, err
	}
	return protocol.AccessibilityResult{Nodes: nodes}, nil
}

// children reads refs concurrently, keeping their order and dropping the ones
// that fail, are filtered out or do not fit.
func (w *walk) children(ctx context.Context, refs []ref, depth int, apps bool) []protocol.Node {
	out := make([]*protocol.Node, len(refs))
	var wg sync.WaitGroup
	for i, r := range refs {
		if r.Name == "" || r.Path == "/org/a11y/atspi/null" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = w.node(ctx, r, depth, apps)
		}()
	}
	wg.Wait()
	nodes := make([]protocol.Node, 0, len(refs))
	for _, n := range out {
		if n != nil {
			nodes = append(nodes, *n)
		}
	}
	return nodes
}

// node reads one accessible and, within the depth, its children. Its calls
// are issued together.
func (w *walk) node(ctx context.Context, r ref, depth int, app bool) *protocol.Node {
	var (
		name   string
		role   string
		state  []uint32
		ifaces []string
		kids   []ref
		errs   [5]error
		wg     sync.WaitGroup
	)
	run := func(i int, f func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	run(0, func() error { return w.prop(ctx, r, ifaceAccessible, "Name", &name) })
	run(1, func() error { return w.call(ctx, r, ifaceAccessible+".GetRoleName", &role) })
	run(2, func() error { return w.call(ctx, r, ifaceAccessible+".GetState", &state) })
	run(3, func() error { return w.call(ctx, r, ifaceAccessible+".GetInterfaces", &ifaces) })
	if depth < w.maxDepth {
		run(4, func() error { return w.call(ctx, r, ifaceAccessible+".GetChildren", &kids) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		return nil // gone, or not answering
	}
	if !app && w.params.OnlyVisible && !hasState(state, stateShowing, stateVisible) {
		return nil
	}
	if !w.take() {
		return nil
	}
	n := &protocol.Node{ID: r.Name + string(r.Path), Role: role, Name: name}
	if slices.Contains(ifaces, ifaceComponent) {
		var ext struct{ X, Y, W, H int32 }
		if w.call(ctx, r, ifaceComponent+".GetExtents", &ext, coordScreen) == nil {
			n.Frame = protocol.Rect{X: float64(ext.X), Y: float64(ext.Y), W: float64(ext.W), H: float64(ext.H)}
		}
	}
	if v, ok := w.value(ctx, r, ifaces); ok {
		n.Value = &v
	}
	if errs[4] == nil && len(kids) > 0 {
		n.Children = w.children(ctx, kids, depth+1, false)
	}
	if app && w.params.App != "" && !appMatches(*n, w.params.App) {
		return nil
	}
	return n
}

// appMatches reports whether an application node is the one a filter names:
// by its name (the program name on Linux) or a window title, ignoring case.
func appMatches(n protocol.Node, filter string) bool {
	if strings.EqualFold(n.Name, filter) {
		return true
	}
	f := strings.ToLower(filter)
	for _, win := range n.Children {
		if strings.Contains(strings.ToLower(win.Name), f) {
			return true
		}
	}
	return false
}

// value is a text widget's text or a value widget's number.
func (w *walk) value(ctx context.Context, r ref, ifaces []string) (string, bool) {
	if slices.Contains(ifaces, ifaceText) {
		var text string
		if w.call(ctx, r, ifaceText+".GetText", &text, int32(0), int32(maxValueRunes)) == nil {
			return text, true
		}
	}
	if slices.Contains(ifaces, ifaceValue) {
		var v float64
		if w.prop(ctx, r, ifaceValue, "CurrentValue", &v) == nil {
			return strconv.FormatFloat(v, 'g', -1, 64), true
		}
	}
	return "", false
}

func hasState(words []uint32, bits ...int) bool {
	for _, b := range bits {
		if b/32 >= len(words) || words[b/32]&(1<<(b%32)) == 0 {
			return false
		}
	}
	return true
}
