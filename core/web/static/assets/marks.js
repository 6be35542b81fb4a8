// Where an action aimed, marked on the screenshot shown for it: an SVG
// over the image (never drawn into it) whose marks sit at percentages of
// its box, so they stay on their point however the image is resized. A
// point is an activity event's data.point: x, y (toX, toY where a drag
// ends) in the pixels of a width×height image of the screen the model saw.

const SVG = 'http://www.w3.org/2000/svg';
const RADIUS = 14;

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

/** x and y of a point as percentages of its image, or null if it has no usable size. */
function percent(x, y, p) {
  if (!(p.width > 0 && p.height > 0) || !Number.isFinite(x) || !Number.isFinite(y)) return null;
  return [`${(x / p.width) * 100}%`, `${(y / p.height) * 100}%`];
}

/** A circle with a crosshair around (0, 0), in a box placed at (px, py) that shows past its edges. */
function target(px, py, cls) {
  const arm = (x1, y1, x2, y2) => svg('line', { x1, y1, x2, y2 });
  const r = RADIUS;
  return svg('svg', { x: px, y: py, overflow: 'visible', class: cls },
    svg('g', { class: 'halo' }, svg('circle', { r }), arm(-r - 8, 0, -4, 0), arm(4, 0, r + 8, 0), arm(0, -r - 8, 0, -4), arm(0, 4, 0, r + 8)),
    svg('g', { class: 'ink' }, svg('circle', { r }), arm(-r - 8, 0, -4, 0), arm(4, 0, r + 8, 0), arm(0, -r - 8, 0, -4), arm(0, 4, 0, r + 8)),
    svg('circle', { r: 2, class: 'dot' }));
}

/** The event's words next to its mark: on the side with room. */
function caption(px, py, p, words) {
  const right = p.x / p.width < 0.6;
  const below = p.y / p.height < 0.1;
  const t = svg('text', { x: right ? RADIUS + 12 : -RADIUS - 12, y: below ? RADIUS + 22 : -RADIUS - 6, 'text-anchor': right ? 'start' : 'end' });
  t.textContent = words.length > 80 ? `${words.slice(0, 79)}…` : words;
  return svg('svg', { x: px, y: py, overflow: 'visible', class: 'caption' }, t);
}

/**
 * An overlay in wrap (positioned; the image fills it). show(marks) draws
 * marks, each {point, summary}; clear() removes them.
 */
export function pointOverlay(wrap, idPrefix) {
  const arrow = `${idPrefix}-arrow`;
  const layer = svg('g');
  const el = svg('svg', { class: 'point-overlay', role: 'img', 'aria-hidden': 'true' },
    svg('defs', null, svg('marker', { id: arrow, viewBox: '0 0 10 10', refX: 8, refY: 5, markerWidth: 5, markerHeight: 5, orient: 'auto-start-reverse', markerUnits: 'strokeWidth' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z' }))),
    layer);
  wrap.append(el);
  return {
    show(marks) {
      layer.replaceChildren();
      const words = [];
      for (const { point: p, summary } of marks) {
        const at = p && percent(p.x, p.y, p);
        if (!at) continue;
        const to = p.toX !== undefined && p.toY !== undefined ? percent(p.toX, p.toY, p) : null;
        const g = svg('g', { class: to ? 'mark drag' : 'mark', 'data-x': p.x, 'data-y': p.y });
        if (to) {
          g.append(svg('line', { class: 'path halo', x1: at[0], y1: at[1], x2: to[0], y2: to[1] }),
            svg('line', { class: 'path ink', x1: at[0], y1: at[1], x2: to[0], y2: to[1], 'marker-end': `url(#${arrow})` }));
        }
        g.append(target(at[0], at[1], 'target'));
        if (summary) g.append(caption(at[0], at[1], p, summary));
        layer.append(g);
        if (summary) words.push(summary);
      }
      el.setAttribute('aria-hidden', String(words.length === 0));
      if (words.length) el.setAttribute('aria-label', `Marked on the screenshot: ${words.join('; ')}`);
      else el.removeAttribute('aria-label');
      el.classList.toggle('shown', words.length > 0 || layer.childElementCount > 0);
    },
    clear() { this.show([]); },
  };
}
