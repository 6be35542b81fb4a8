// Input from a live screen to a VM's guest: pointer and keys on the live
// image become the takeover view's events (POST {path}/input) in guest
// points, sent in the order they happened. The agent window uses it while
// the user has taken over; a developer VM's page all the time.
import { ApiError, isKillShortcut, post, report } from './common.js';

/**
 * Sends what the user does on live (inside screen, which takes the keys)
 * to `${path}/input` while active() is true; size() is the guest's screen
 * in points ({width, height}), if known.
 */
export function attachInput({ screen, live, path, active, size }) {
  /** The guest point (logical points) under a pointer event on the live image. */
  function guestPoint(ev) {
    const r = live.getBoundingClientRect();
    const nw = live.naturalWidth || r.width;
    const nh = live.naturalHeight || r.height;
    const scr = size() || {};
    const sw = scr.width || nw;
    const sh = scr.height || nh;
    // The image's content box inside its element (letterboxed if the element's
    // aspect differs from the frame's).
    const k = Math.min(r.width / nw, r.height / nh);
    const cw = nw * k, ch = nh * k;
    const ox = r.left + (r.width - cw) / 2, oy = r.top + (r.height - ch) / 2;
    const x = ((ev.clientX - ox) / cw) * sw;
    const y = ((ev.clientY - oy) / ch) * sh;
    return {
      x: Math.min(sw - 1, Math.max(0, Math.round(x))),
      y: Math.min(sh - 1, Math.max(0, Math.round(y))),
      inside: x >= 0 && y >= 0 && x < sw && y < sh,
    };
  }

  let sendChain = Promise.resolve();

  /** Sends one input event; events reach the guest in the order they happened. */
  function sendInput(input) {
    sendChain = sendChain.then(() => post(`${path}/input`, input).catch((err) => {
      if (!(err instanceof ApiError && err.status === 409)) report(err);
    }));
    return sendChain;
  }

  const BUTTONS = ['left', 'middle', 'right'];
  let press = null; // {start point, button, dragging}
  let lastMove = 0;

  live.addEventListener('pointerdown', (ev) => {
    if (!active()) return;
    ev.preventDefault();
    screen.focus();
    const p = guestPoint(ev);
    if (!p.inside) return;
    press = { p, button: BUTTONS[ev.button] || 'left', x0: ev.clientX, y0: ev.clientY, dragging: false };
    live.setPointerCapture(ev.pointerId);
  });
  live.addEventListener('pointermove', (ev) => {
    if (!active()) return;
    if (press) {
      if (Math.hypot(ev.clientX - press.x0, ev.clientY - press.y0) > 5) press.dragging = true;
      return;
    }
    const now = Date.now();
    if (now - lastMove < 150) return;
    lastMove = now;
    const p = guestPoint(ev);
    if (p.inside) sendInput({ type: 'move', x: p.x, y: p.y });
  });
  live.addEventListener('pointerup', (ev) => {
    if (!active() || !press) return;
    ev.preventDefault();
    const p = guestPoint(ev);
    const start = press;
    press = null;
    flushText();
    if (start.dragging) sendInput({ type: 'drag', x: start.p.x, y: start.p.y, toX: p.x, toY: p.y });
    else sendInput({ type: 'click', x: start.p.x, y: start.p.y, button: start.button });
  });
  live.addEventListener('pointercancel', () => { press = null; });
  live.addEventListener('contextmenu', (ev) => { if (controlling) ev.preventDefault(); });
  let wheelAt = 0;
  live.addEventListener('wheel', (ev) => {
    if (!active()) return;
    ev.preventDefault();
    const now = Date.now();
    if (now - wheelAt < 80) return;
    wheelAt = now;
    const p = guestPoint(ev);
    const step = (d) => (d === 0 ? 0 : Math.sign(d) * Math.max(1, Math.min(10, Math.round(Math.abs(d) / 100))));
    sendInput({ type: 'scroll', x: p.x, y: p.y, deltaX: step(ev.deltaX), deltaY: step(ev.deltaY) });
  }, { passive: false });

  const KEY_NAMES = {
    Enter: 'return', Tab: 'tab', Escape: 'escape', Backspace: 'delete', Delete: 'forwarddelete', ' ': 'space',
    ArrowLeft: 'left', ArrowRight: 'right', ArrowUp: 'up', ArrowDown: 'down', Home: 'home', End: 'end',
    PageUp: 'pageup', PageDown: 'pagedown', Insert: 'insert', CapsLock: 'capslock', ContextMenu: 'menu',
  };

  let textBuf = '';
  let textTimer = null;

  function flushText() {
    clearTimeout(textTimer);
    if (textBuf) {
      sendInput({ type: 'type', text: textBuf });
      textBuf = '';
    }
  }

  screen.addEventListener('keydown', (ev) => {
    if (!active() || isKillShortcut(ev)) return;
    if (['Shift', 'Control', 'Alt', 'Meta', 'AltGraph', 'OS'].includes(ev.key)) return;
    ev.preventDefault();
    const mods = [];
    if (ev.ctrlKey) mods.push('control');
    if (ev.altKey) mods.push('option');
    if (ev.metaKey) mods.push('command');
    const printable = ev.key.length === 1 || [...ev.key].length === 1;
    if (printable && ev.key !== ' ' && mods.length === 0) {
      textBuf += ev.key;
      clearTimeout(textTimer);
      textTimer = setTimeout(flushText, 60);
      return;
    }
    if (ev.key === ' ' && mods.length === 0) {
      textBuf += ' ';
      clearTimeout(textTimer);
      textTimer = setTimeout(flushText, 60);
      return;
    }
    let key = KEY_NAMES[ev.key];
    if (!key && /^F([1-9]|1[0-9]|20)$/.test(ev.key)) key = ev.key.toLowerCase();
    if (!key && printable) key = ev.key.toLowerCase();
    if (!key) return;
    if (ev.shiftKey) mods.push('shift');
    flushText();
    sendInput({ type: 'key', key, modifiers: mods.length ? mods : undefined });
  });
}
