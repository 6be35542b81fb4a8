// Settings › Credentials: logins the agent types without seeing them,
// added, edited (a secret left empty stays) or imported from a browser's
// password export (the file sent as it is and not kept in the page); no
// password or seed ever comes back to the page.
import { $, fill, get, h, patch, post, report, seg, toast } from './common.js';

/** Settings' remove(question, path, name, reload), set by initCredentials. */
let removeWith = null;

/** Lists the credentials; remove is Settings' confirm-and-delete. */
export function initCredentials(remove) {
  removeWith = remove;
  return loadCredentials();
}

async function loadCredentials() {
  const res = await get('/credentials');
  const list = $('#credential-list');
  if (res.credentials.length === 0) {
    fill(list, h('p', { class: 'muted' }, 'No credentials yet.'));
    return;
  }
  fill(list, h('ul', { class: 'plain' }, res.credentials.map((c) => h('li', { 'data-credential': c.name },
    h('strong', null, c.name),
    ` · ${c.username || 'no username'} · ${c.hasPassword ? 'password stored' : 'no password'}${c.hasTOTP ? ' · one-time codes' : ''}`,
    c.allowedApps.length ? ` · only while ${c.allowedApps.join(' or ')} is in front (a convenience, not a safety control)` : ' · any application',
    ' ',
    h('button', { type: 'button', class: 'small', 'aria-label': `Edit ${c.name}`, onclick: () => editCredential(c) }, 'Edit'),
    ' ',
    h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${c.name}`, onclick: () => removeWith(`Remove the credential ${c.name} and its stored secrets?`, `/credentials/${seg(c.id)}`, c.name, loadCredentials) }, 'Remove')))));
}


/** Turns the credential form into an editor of c, or back into the add form (null). */
function editCredential(c) {
  const form = $('#add-credential');
  form.reset();
  form.dataset.editing = c ? c.id : '';
  $('#credential-submit').textContent = c ? `Save ${c.name}` : 'Add credential';
  $('#credential-cancel-edit').hidden = !c;
  $('#credential-edit-hint').hidden = !c;
  if (!c) return;
  $('#new-credential-name').value = c.name;
  $('#new-credential-username').value = c.username || '';
  $('#new-credential-apps').value = c.allowedApps.join('\n');
  $('#add-credential-box').open = true;
  $('#new-credential-name').focus();
}
$('#credential-cancel-edit').addEventListener('click', () => { editCredential(null); $('#add-credential-box').open = false; });

$('#add-credential').addEventListener('submit', async (e) => {
  e.preventDefault();
  const editing = e.target.dataset.editing;
  const secretInputs = [$('#new-credential-password'), $('#new-credential-totp')];
  const body = {
    name: $('#new-credential-name').value.trim(),
    username: $('#new-credential-username').value.trim(),
    password: $('#new-credential-password').value,
    totpSeed: $('#new-credential-totp').value.trim(),
    allowedApps: $('#new-credential-apps').value.split('\n').map((l) => l.trim()).filter((l) => l),
  };
  // Editing, an empty secret field keeps the stored secret.
  if (editing && !body.password) delete body.password;
  if (editing && !body.totpSeed) delete body.totpSeed;
  for (const i of secretInputs) i.value = ''; // never left in the page
  try {
    const c = editing ? await patch(`/credentials/${seg(editing)}`, body) : await post('/credentials', body);
    toast(editing ? `Saved ${c.name}.` : `Stored ${c.name}.`);
    editCredential(null);
    $('#add-credential-box').open = false;
    await loadCredentials();
  } catch (err) { report(err); }
});

$('#import-credentials').addEventListener('submit', async (e) => {
  e.preventDefault();
  const input = $('#import-credentials-file');
  const status = $('#import-credentials-status');
  const file = input.files[0];
  if (!file) return;
  status.textContent = `Importing ${file.name}…`;
  try {
    const res = await post('/credentials/import', file);
    const n = res.credentials.length;
    status.textContent = `Imported ${n} credential${n === 1 ? '' : 's'}: ${res.credentials.map((c) => c.name).join(', ')}. Delete ${file.name} now: it holds your passwords in plain text.`;
    toast(`Imported ${n} credential${n === 1 ? '' : 's'}.`);
    await loadCredentials();
  } catch (err) {
    status.textContent = `Nothing was imported: ${err.message}`;
    report(err);
  } finally {
    input.value = ''; // the file is not kept in the page
  }
});
