// A developer VM: its live screen, the user's input all the time (no agent
// to take it from), sealing it into a template, removing it.
import { $, del, get, initChrome, post, report, seg, toast } from './common.js';
import { attachInput } from './screeninput.js';

initChrome();

const id = decodeURIComponent(location.pathname.split('/').pop());
const path = `/vms/${seg(id)}`;
const live = $('#live');
const screen = $('#screen');
const placeholder = $('#screen-placeholder');
let vm = null;

screen.tabIndex = 0;
screen.setAttribute('role', 'application');
screen.setAttribute('aria-label', "The developer VM's screen: your clicks and keys go to the VM");
attachInput({ screen, live, path, active: () => !!vm, size: () => vm && { width: vm.screenWidth, height: vm.screenHeight } });

let tries = 0;
function startStream() {
  live.src = `/api/v1${path}/stream?fps=4&maxWidth=1280&n=${Date.now()}`;
}
live.addEventListener('load', () => {
  tries = 0;
  live.hidden = false;
  placeholder.hidden = true;
});
live.addEventListener('error', () => {
  live.hidden = true;
  placeholder.hidden = false;
  if (++tries <= 3) {
    placeholder.textContent = 'Reconnecting to the VM…';
    setTimeout(load, 1000);
  } else {
    placeholder.textContent = 'This developer VM is gone (removed, or it stopped).';
  }
});

async function load() {
  try {
    const res = await get('/vms');
    vm = res.vms.find((v) => v.id === id && v.developer) || null;
    if (!vm) {
      placeholder.textContent = `No developer VM ${id}: it was removed, or it stopped.`;
      live.hidden = true;
      placeholder.hidden = false;
      $('#vm-remove').disabled = true;
      $('#vm-seal').disabled = true;
      return;
    }
    $('#vm-title').textContent = `Developer VM ${vm.id}`;
    $('#vm-summary').textContent = `Template ${vm.templateId} · ${vm.cpuCount} CPU · ${Math.round(vm.memoryMB / 1024 * 10) / 10} GB · ${vm.networkMode}`;
    startStream();
    screen.focus();
  } catch (err) { report(err); }
}

$('#vm-remove').addEventListener('click', async () => {
  if (!confirm(`Remove ${id}? What you changed in it goes with it.`)) return;
  try {
    await del(path);
    toast(`Removed ${id}.`);
    location.href = '/environments';
  } catch (err) { report(err); }
});

$('#vm-seal').addEventListener('click', async () => {
  const name = prompt('Name of the new template', '');
  if (name === null) return;
  try {
    const t = await post('/templates', { fromVmId: id, name: name.trim() || undefined });
    toast(`Sealing ${id} into template ${t.name}; the VM stops.`);
    location.href = '/settings#templates';
  } catch (err) { report(err); }
});

load();
