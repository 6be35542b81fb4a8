// Settings › Provisioning: the variables, files and setup commands VMs are
// given before their agent starts. Every change sends the whole
// configuration back (PUT /provisioning); a secret goes without its value,
// which keeps the stored one, and its input is cleared at once.
import { $, fill, get, h, put, report, toast } from './common.js';

let current = null;

const scope = (t) => (t ? `template ${t}` : 'every VM');

function removeButton(label, apply) {
  return h('button', { type: 'button', class: 'small danger', 'aria-label': label, onclick: () => change(apply, 'Removed.') }, 'Remove');
}

function render() {
  const p = current;
  const none = p.environmentVariables.length + p.injectedFiles.length + p.setupCommands.length === 0;
  if (none) {
    fill($('#provisioning-list'), h('p', { class: 'muted' }, 'Nothing is provisioned: VMs start as their template made them.'));
    return;
  }
  const lists = [];
  if (p.environmentVariables.length) {
    lists.push(h('h3', null, 'Variables'), h('ul', { class: 'plain' }, p.environmentVariables.map((v, i) => h('li', { 'data-variable': v.key },
      h('code', null, v.key), ' = ', v.secret ? h('em', null, 'secret') : h('code', null, v.value || ''), ` · ${scope(v.template)} `,
      removeButton(`Remove the variable ${v.key}`, (c) => c.environmentVariables.splice(i, 1))))));
  }
  if (p.injectedFiles.length) {
    lists.push(h('h3', null, 'Files'), h('ul', { class: 'plain' }, p.injectedFiles.map((f, i) => h('li', { 'data-file': f.guestPath },
      h('code', null, f.sourcePath), ' → ', h('code', null, f.guestPath), ` (${f.mode}) · ${scope(f.template)} `,
      removeButton(`Remove the file ${f.guestPath}`, (c) => c.injectedFiles.splice(i, 1))))));
  }
  if (p.setupCommands.length) {
    lists.push(h('h3', null, 'Setup commands, in order'), h('ol', null, p.setupCommands.map((s, i) => h('li', { 'data-setup': String(i + 1) },
      h('code', null, s.command), ` · ${scope(s.template)}${s.timeoutSeconds ? ` · ${s.timeoutSeconds} s` : ''} `,
      removeButton(`Remove setup command ${i + 1}`, (c) => c.setupCommands.splice(i, 1))))));
  }
  fill($('#provisioning-list'), ...lists);
}

/** Applies edit to a copy of the configuration and saves it whole. */
async function change(edit, done) {
  const next = structuredClone(current);
  edit(next);
  try {
    current = await put('/provisioning', next);
    render();
    toast(done);
    return true;
  } catch (err) {
    report(err);
    return false;
  }
}

async function loadTemplateNames() {
  const res = await get('/templates');
  fill($('#provisioning-templates'), res.templates.map((t) => h('option', { value: t.name })));
}

/** Loads the section and wires its forms. */
export async function initProvisioning() {
  $('#add-variable').addEventListener('submit', async (e) => {
    e.preventDefault();
    const value = $('#new-variable-value');
    const v = { key: $('#new-variable-key').value.trim(), value: value.value, secret: $('#new-variable-secret').checked,
      template: $('#new-variable-template').value.trim() };
    if (v.secret) value.value = ''; // never left in the page
    if (await change((c) => c.environmentVariables.push(v), `Added ${v.key}.`)) {
      e.target.reset();
      $('#add-variable-box').open = false;
    }
  });
  $('#new-variable-secret').addEventListener('change', (e) => { $('#new-variable-value').type = e.target.checked ? 'password' : 'text'; });
  $('#add-file').addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = { sourcePath: $('#new-file-source').value.trim(), guestPath: $('#new-file-guest').value.trim(), fileName: '',
      mode: $('#new-file-mode').value.trim(), template: $('#new-file-template').value.trim() };
    if (await change((c) => c.injectedFiles.push(f), `Added ${f.guestPath}.`)) {
      e.target.reset();
      $('#add-file-box').open = false;
    }
  });
  $('#add-setup').addEventListener('submit', async (e) => {
    e.preventDefault();
    const s = { command: $('#new-setup-command').value.trim(), timeoutSeconds: Number($('#new-setup-timeout').value) || 0,
      template: $('#new-setup-template').value.trim() };
    if (await change((c) => c.setupCommands.push(s), 'Added the setup command.')) {
      e.target.reset();
      $('#add-setup-box').open = false;
    }
  });
  current = await get('/provisioning');
  render();
  await loadTemplateNames();
}
