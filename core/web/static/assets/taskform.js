// The new-task form's fields (partials/taskform.tmpl), for the dashboard's
// new-task form and the Schedules page: the provider, its models and the
// reasoning choice, @-mentions of skills, input files by picker or drag
// and drop, the output folder, and the advanced options. taskForm() wires
// them and answers what the form says as the body of POST /tasks; it can
// also be filled from a task's configuration (a schedule's, to edit it).
import { $, fill, get, h, pairs } from './common.js';
import { modelPicker, reasoningOf } from './modelpicker.js';

/** Tools whose permission a task may override here (Settings has them all). */
const TASK_TOOLS = ['run_shell', 'open_terminal', 'write_file', 'move_file', 'open_url', 'open_app'];

// A skill the description names as @name gets its instructions into the
// agent's first message (the helper reads the mentions the same way).
const MENTION = /(?:^|[\s(])@([a-z0-9][a-z0-9-]{0,63})\b/g;

/**
 * Wires the fields. status is the element that says what is wrong;
 * advanced is the <details> holding the advanced options. Answers
 * {load, providers, settings, chosenProvider, picker, files, formTask,
 * fillFrom, reset, keepFiles}.
 */
export function taskForm({ status, advanced = $('#advanced') }) {
  const state = { providers: [], settings: null, files: [], skills: [], kept: null };
  const picker = modelPicker({
    select: $('#task-model'), text: $('#task-model-text'), label: $('#task-model-label'), hint: $('#model-hint'),
    reasoning: $('#task-reasoning'), reasoningHint: $('#reasoning-hint'),
  });

  /** The provider the form has chosen, or undefined. */
  const chosenProvider = () => state.providers.find((p) => p.displayName === $('#task-provider').value);

  /** Reads providers, settings and templates and fills the choices; answers {providers, settings}. */
  async function load() {
    const [prov, settings, templates] = await Promise.all([get('/providers'), get('/settings'), get('/templates')]);
    state.providers = prov.providers;
    state.settings = settings;
    const sel = $('#task-provider');
    fill(sel, state.providers.map((p) => h('option', { value: p.displayName, selected: p.isDefault },
      p.isDefault ? `${p.displayName} (default)` : p.displayName)));
    if (state.providers.length === 0) fill(sel, h('option', { value: '' }, 'No provider yet'));
    sel.addEventListener('change', () => picker.load(chosenProvider()));
    picker.load(chosenProvider());

    $('#task-output').placeholder = settings.outputDirectory;
    $('#task-timeout').placeholder = String(settings.defaultTimeoutMinutes);
    $('#task-max-iterations').placeholder = String(settings.defaultMaxIterations);
    fill($('#task-template'), h('option', { value: '' }, 'Default'),
      templates.templates.map((t) => h('option', { value: t.id }, t.isDefault ? `${t.name} (default)` : t.name)));
    $('#task-network option[value=""]').textContent = `Default (${settings.networkMode})`;
    fill($('#tool-policy'), TASK_TOOLS.map((tool) => {
      const policy = settings.toolPolicy || {};
      // open_terminal follows run_shell unless a policy names it.
      const def = policy[tool] || (tool === 'open_terminal' ? `as run_shell: ${policy.run_shell || 'allow'}` : 'allow');
      return h('div', { class: 'field' },
        h('label', { for: `policy-${tool}` }, tool),
        h('select', { id: `policy-${tool}`, 'data-tool': tool },
          h('option', { value: '' }, `Default (${def})`),
          ['allow', 'ask', 'deny'].map((p) => h('option', { value: p }, p))));
    }));
    loadSkills();
    return { providers: state.providers, settings };
  }

  // ---- @-mentions of skills ----------------------------------------------------

  const suggest = { items: [], active: 0, start: -1 };

  async function loadSkills() {
    try {
      state.skills = (await get('/skills')).skills.filter((s) => s.isEnabled);
    } catch {
      state.skills = []; // no completion; typing @name still works
    }
    mentionHint();
  }

  /** The @word being typed at the caret: its start and the letters so far. */
  function typedMention(ta) {
    const before = ta.value.slice(0, ta.selectionStart);
    const m = /(?:^|[\s(])@([a-z0-9-]*)$/.exec(before);
    return m && ta.selectionStart === ta.selectionEnd ? { start: before.length - m[1].length - 1, prefix: m[1] } : null;
  }

  function updateSuggestions() {
    const ta = $('#task-description');
    const typed = typedMention(ta);
    suggest.items = typed ? state.skills.filter((s) => s.name.startsWith(typed.prefix)).slice(0, 8) : [];
    suggest.start = typed ? typed.start : -1;
    suggest.active = Math.min(suggest.active, Math.max(0, suggest.items.length - 1));
    renderSuggestions();
  }

  function renderSuggestions() {
    const ta = $('#task-description');
    const list = $('#skill-suggestions');
    const open = suggest.items.length > 0;
    list.hidden = !open;
    ta.setAttribute('aria-expanded', String(open));
    if (!open) {
      ta.removeAttribute('aria-activedescendant');
      fill(list);
      return;
    }
    fill(list, suggest.items.map((s, i) => {
      const li = h('li', { id: `skill-opt-${i}`, role: 'option', 'aria-selected': String(i === suggest.active), 'data-skill': s.name },
        h('code', null, `@${s.name}`), ' ', h('span', { class: 'muted' }, s.description));
      // mousedown, not click: the textarea keeps its focus and caret.
      li.addEventListener('mousedown', (e) => { e.preventDefault(); chooseSkill(i); });
      return li;
    }));
    ta.setAttribute('aria-activedescendant', `skill-opt-${suggest.active}`);
    list.children[suggest.active]?.scrollIntoView({ block: 'nearest' });
  }

  function chooseSkill(i) {
    const ta = $('#task-description');
    const s = suggest.items[i];
    if (!s || suggest.start < 0) return;
    const end = ta.selectionStart;
    const insert = `@${s.name} `;
    ta.value = ta.value.slice(0, suggest.start) + insert + ta.value.slice(end).replace(/^ /, '');
    const caret = suggest.start + insert.length;
    ta.setSelectionRange(caret, caret);
    suggest.items = [];
    renderSuggestions();
    mentionHint();
  }

  /** Says which skills the description mentions. */
  function mentionHint() {
    const names = [...new Set([...$('#task-description').value.matchAll(MENTION)].map((m) => m[1]))]
      .filter((n) => state.skills.some((s) => s.name === n));
    const hint = $('#skill-hint');
    hint.hidden = names.length === 0;
    hint.textContent = names.length ? `The agent starts with the instructions of ${names.map((n) => `@${n}`).join(', ')}.` : '';
  }

  {
    const ta = $('#task-description');
    ta.addEventListener('input', () => { updateSuggestions(); mentionHint(); });
    ta.addEventListener('click', updateSuggestions);
    ta.addEventListener('blur', () => { suggest.items = []; renderSuggestions(); });
    ta.addEventListener('keydown', (e) => {
      if (suggest.items.length === 0) return;
      const n = suggest.items.length;
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        suggest.active = (suggest.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
        renderSuggestions();
      } else if (e.key === 'Enter' || e.key === 'Tab') {
        chooseSkill(suggest.active);
      } else if (e.key === 'Escape') {
        suggest.items = [];
        renderSuggestions();
      } else {
        return;
      }
      e.preventDefault();
    });
  }

  // ---- Input files ---------------------------------------------------------------

  function renderFiles() {
    const list = $('#file-list');
    if (state.kept) {
      fill(list, state.kept.map((f) => h('li', { 'data-kept': f.name }, h('span', null, `${f.name} (${f.size} bytes)`))));
      return;
    }
    fill(list, state.files.map((f, i) => h('li', null,
      h('span', null, `${f.name} (${f.size} bytes)`),
      h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${f.name}`, onclick: () => { state.files.splice(i, 1); renderFiles(); } }, 'Remove'))));
  }

  function addFiles(list) {
    if (state.kept) return;
    for (const f of list) {
      if (!state.files.some((x) => x.name === f.name && x.size === f.size)) state.files.push(f);
    }
    renderFiles();
  }

  {
    const input = $('#task-files');
    input.addEventListener('change', () => { addFiles(input.files); input.value = ''; });
    const zone = $('#drop-zone');
    // A file dropped anywhere else must not navigate away from the page.
    window.addEventListener('dragover', (e) => e.preventDefault());
    window.addEventListener('drop', (e) => e.preventDefault());
    zone.addEventListener('dragenter', (e) => { e.preventDefault(); zone.classList.add('over'); });
    zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (e) => {
      e.preventDefault();
      zone.classList.remove('over');
      if (e.dataTransfer && e.dataTransfer.files.length) addFiles(e.dataTransfer.files);
    });
  }

  const dropHint = $('#drop-hint').textContent;

  /**
   * With a list, the input files are those already kept (a schedule's,
   * being edited): shown, not chosen; with null, they are chosen again.
   */
  function keepFiles(list, why) {
    state.kept = list;
    state.files = [];
    $('#task-files').disabled = !!list;
    $('#drop-hint').textContent = list ? why : dropHint;
    renderFiles();
  }

  // ---- What the form says -------------------------------------------------------

  /** Says what is wrong, opens the advanced options if it is there, focuses el; answers null. */
  function problem(message, el) {
    status.textContent = message;
    if (advanced && advanced.contains(el)) advanced.open = true;
    el.focus();
    return null;
  }

  /**
   * The task the form describes, as POST /tasks takes it in JSON (without
   * its files), or null with the problem said and the field focused.
   */
  function formTask() {
    const desc = $('#task-description').value.trim();
    if (!desc) return problem('Describe the task first.', $('#task-description'));
    const task = { description: desc };
    const text = { providerName: '#task-provider', outputDirectory: '#task-output', templateId: '#task-template', networkMode: '#task-network' };
    for (const [name, sel] of Object.entries(text)) {
      const v = $(sel).value.trim();
      if (v) task[name] = v;
    }
    if (picker.model()) task.modelId = picker.model();
    Object.assign(task, picker.reasoning());
    for (const [name, sel] of Object.entries({ timeoutMinutes: '#task-timeout', maxIterations: '#task-max-iterations' })) {
      const v = $(sel).value.trim();
      if (v) task[name] = Number(v);
    }
    if ($('#task-plan-first').checked) task.planFirst = true;
    const folders = lines($('#task-folders').value);
    if (folders.length) task.hostFolders = folders;
    // The task's own provisioning (checked again by the helper, which says
    // what is wrong: a reserved name, a command too long).
    let environment;
    try {
      environment = pairs($('#task-env').value, '=', 'Environment variables');
    } catch (err) {
      return problem(err.message, $('#task-env'));
    }
    const setupCommands = lines($('#task-setup').value).map((command) => ({ command }));
    if (Object.keys(environment).length || setupCommands.length) {
      task.provisioning = {};
      if (Object.keys(environment).length) task.provisioning.environment = environment;
      if (setupCommands.length) task.provisioning.setupCommands = setupCommands;
    }
    const policy = {};
    for (const s of document.querySelectorAll('#tool-policy select')) {
      if (s.value) policy[s.dataset.tool] = s.value;
    }
    if (Object.keys(policy).length) task.toolPolicy = policy;
    return task;
  }

  /** Fills the fields from a task's configuration (a schedule's, say). */
  function fillFrom(cfg) {
    $('#task-description').value = cfg.description || '';
    const sel = $('#task-provider');
    if ([...sel.options].some((o) => o.value === cfg.providerName)) sel.value = cfg.providerName;
    picker.load(chosenProvider(), { model: cfg.modelId, reasoning: reasoningOf(cfg) });
    $('#task-output').value = cfg.outputDirectory || '';
    $('#task-template').value = cfg.templateId || '';
    $('#task-network').value = cfg.networkMode || '';
    $('#task-timeout').value = cfg.timeoutMinutes ? String(cfg.timeoutMinutes) : '';
    $('#task-max-iterations').value = cfg.maxIterations ? String(cfg.maxIterations) : '';
    $('#task-plan-first').checked = !!cfg.planFirst;
    $('#task-folders').value = (cfg.hostFolders || []).join('\n');
    const prov = cfg.provisioning || {};
    $('#task-env').value = Object.entries(prov.environment || {}).map(([k, v]) => `${k}=${v}`).join('\n');
    $('#task-setup').value = (prov.setupCommands || []).map((c) => c.command).join('\n');
    for (const s of document.querySelectorAll('#tool-policy select')) s.value = (cfg.toolPolicy || {})[s.dataset.tool] || '';
    mentionHint();
  }

  /** Empties the fields (the default provider and its default model chosen). */
  function reset() {
    const def = state.providers.find((p) => p.isDefault) || state.providers[0];
    fillFrom({ providerName: def ? def.displayName : '' });
    keepFiles(null);
    status.textContent = '';
  }

  return {
    load, picker, chosenProvider, formTask, fillFrom, reset, keepFiles,
    providers: () => state.providers,
    settings: () => state.settings,
    /** The chosen input files (File objects). */
    files: () => [...state.files],
  };
}

/** The non-blank lines of a text, trimmed. */
function lines(text) {
  return text.split('\n').map((l) => l.trim()).filter((l) => l);
}
