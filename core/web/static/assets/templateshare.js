// The templates' own actions in Settings: export (a download), Update
// agent (when the template's guest agent is older than the helper's), a
// developer VM of the template, and importing an archive.
import { $, h, post, report, seg, toast } from './common.js';

/** The action buttons of template t; reload refreshes the list. */
export function templateActions(t, reload) {
  const out = [];
  if (t.kind !== 'host' && t.status === 'ready') {
    out.push(h('a', { class: 'button small', href: `/api/v1/templates/${seg(t.id)}/export`, download: `${t.id}.hivecrew-template`,
      'data-template-export': t.id }, 'Export'));
  }
  if (t.agentOutdated && t.kind !== 'host') {
    const btn = h('button', { type: 'button', class: 'small primary', 'data-template-update': t.id }, 'Update agent');
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        const u = await post(`/templates/${seg(t.id)}/update-agent`);
        toast(u.status === 'setup'
          ? `${u.name} is running with the current agent kit: ${u.statusReason}`
          : `${u.name} now has guest agent ${u.agentVersion}.`);
        await reload();
      } catch (err) { btn.disabled = false; report(err); }
    });
    out.push(btn);
  }
  if (t.status === 'ready') {
    const open = h('button', { type: 'button', class: 'small', 'data-template-open': t.id }, 'Open a developer VM');
    open.addEventListener('click', async () => {
      open.disabled = true;
      try {
        const v = await post('/vms', { templateId: t.id });
        location.href = `/vms/${seg(v.id)}`;
      } catch (err) { open.disabled = false; report(err); }
    });
    out.push(open);
  }
  return h('div', { class: 'actions' }, out);
}

/** Wires the import form; reload refreshes the list. */
export function initImport(reload) {
  $('#template-import').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const file = $('#template-file').files[0];
    if (!file) return;
    const name = $('#template-import-name').value.trim();
    const btn = $('#template-import-button');
    btn.disabled = true;
    btn.textContent = 'Importing…';
    try {
      const blob = new Blob([file], { type: 'application/zstd' });
      const t = await post(`/templates/import${name ? `?name=${encodeURIComponent(name)}` : ''}`, blob);
      toast(`Imported template ${t.name}.`);
      $('#template-import').reset();
      await reload();
    } catch (err) { report(err); }
    btn.disabled = false;
    btn.textContent = 'Import';
  });
}
