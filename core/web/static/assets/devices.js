// Devices: browsers that ask to pair by a code they show (the Swift
// Hivecrew app's web client, or another client of its API), and those
// paired. The dashboard's "Waiting for you" strip lists the codes waiting
// with Approve and Deny, and this browser notifies each new one; Settings
// lists the paired devices, each with Revoke. Each shows the network
// address it asks or was paired from: its session is accepted from there
// only. A user agent is the device's own words: it only ever becomes text.
import { $, del, fill, fmtClock, fmtTime, get, h, post, report, seg, toast } from './common.js';
import { browserNotifies } from './notify.js';

/** A six-digit code as people read it: "123 456". */
export const spaced = (code) => (code.length === 6 ? `${code.slice(0, 3)} ${code.slice(3)}` : code);

/**
 * The strip's entries of the devices asking to pair (oldest first); after
 * an answer, answered() refreshes the strip.
 */
export function pairingItems(pairings, answered) {
  return pairings.map((p) => {
    const code = spaced(p.code);
    const approve = h('button', { type: 'button', class: 'small primary', 'aria-label': `Approve ${p.deviceName}, code ${code}` }, 'Approve');
    const deny = h('button', { type: 'button', class: 'small', 'aria-label': `Deny ${p.deviceName}, code ${code}` }, 'Deny');
    const answer = (verb, done) => async () => {
      approve.disabled = true;
      deny.disabled = true;
      try {
        await post(`/auth/pairings/${seg(p.code)}/${verb}`);
        toast(done);
      } catch (err) { report(err); }
      answered();
    };
    approve.addEventListener('click', answer('approve', `Approved ${p.deviceName}: it signs in within seconds.`));
    deny.addEventListener('click', answer('deny', `Refused ${p.deviceName}.`));
    return h('li', { 'data-pairing': p.code },
      h('span', { class: 'name' }, `${p.deviceName} asks to pair`),
      h('strong', { class: 'pairing-code', title: 'Approve only if the device shows this code' }, code),
      h('span', { class: 'what', title: p.userAgent }, `asked at ${fmtClock(p.createdAt)} from ${p.address} · ${p.userAgent}`),
      approve, deny);
  });
}

/**
 * A watcher of the devices asking to pair: give it each new list; it
 * notifies each new code once, when this browser may show notifications
 * (whatever notifyEvents says: the user has just asked on the device). The
 * first look only sets where it starts.
 */
export function pairingNotifier() {
  let before = null;
  return function seen(pairings) {
    const now = new Set(pairings.map((p) => p.code));
    const prev = before;
    before = now;
    if (!prev || !browserNotifies()) return;
    for (const p of pairings) {
      if (prev.has(p.code)) continue;
      new Notification(`${p.deviceName} asks to pair`, { body: `Code ${spaced(p.code)}, from ${p.address}. Approve it only if the device shows this code.`, tag: `pairing:${p.code}` });
    }
  };
}

/** Settings › Devices: the paired devices, each with Revoke. */
export async function loadDevices() {
  const { devices } = await get('/auth/devices');
  fill($('#device-rows'), devices.length === 0 ? h('tr', null, h('td', { colspan: '6', class: 'muted' }, 'No paired devices.')) : devices.map((d) =>
    h('tr', { 'data-device': d.id },
      h('td', null, d.name, d.current ? h('span', { class: 'badge' }, 'this device') : null),
      h('td', { class: 'address' }, d.address),
      h('td', { class: 'hide-narrow ua' }, d.userAgent),
      h('td', { class: 'hide-narrow' }, fmtTime(d.authorizedAt)),
      h('td', null, fmtTime(d.lastSeenAt)),
      h('td', null, h('button', { type: 'button', class: 'small danger', 'aria-label': `Revoke ${d.name}`, onclick: () => revoke(d) }, 'Revoke')))));
}

async function revoke(d) {
  if (!confirm(`Revoke ${d.name}? Its session ends at once; to use it again, pair it again.`)) return;
  try {
    await del(`/auth/devices/${seg(d.id)}`);
    toast(`Revoked ${d.name}.`);
    await loadDevices();
  } catch (err) { report(err); }
}
