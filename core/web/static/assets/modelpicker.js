// The new-task form's model and reasoning choices. The model list is the
// chosen provider's (GET /providers/:id/models), its default model chosen,
// and is replaced as soon as the provider changes: a list that arrives for
// a provider no longer chosen is dropped. When the provider lists no models
// or the list cannot be fetched, the model is typed, and the hint says why.
// The reasoning choice offers what the chosen model takes, as the list
// says (its reasoningCapability); for a typed model, every choice.
import { fill, get, h, seg } from './common.js';

/** reasoning_effort values in order, with their words. */
const EFFORTS = [['none', 'Off (none)'], ['minimal', 'Minimal'], ['low', 'Low'], ['medium', 'Medium'], ['high', 'High'], ['xhigh', 'Extra high']];
const WORDS = Object.fromEntries([...EFFORTS, ['off', 'Off'], ['on', 'On']]);
/** The choices for a model whose reasoning the list does not tell. */
const ANY = ['', 'off', 'low', 'medium', 'high'];

/** The reasoning choice a task made: an effort, 'off', 'on' or '' (the default). */
export function reasoningOf(t) {
  if (t.reasoningEffort) return t.reasoningEffort;
  if (t.reasoningEnabled === false) return 'off';
  if (t.reasoningEnabled === true) return 'on';
  return '';
}

/**
 * Wires the pickers: select (the listed models and "Other model…"), text
 * (the typed model id), label (the model's label), hint, reasoning (its
 * select) and reasoningHint. Answers {load, model, reasoning, focus}.
 */
export function modelPicker({ select, text, label, hint, reasoning, reasoningHint }) {
  const lists = new Map(); // provider id -> its models, once fetched
  let provider = null;
  let models = null; // the shown provider's models; null while typed
  let loads = 0; // numbers the loads: only the latest may fill the list

  /** Shows the list (typed: false), the list with a typed model ('other'), or the typed model alone (true). */
  function typed(how) {
    select.hidden = how === true;
    text.hidden = how === false;
    label.htmlFor = how === true ? text.id : select.id;
  }

  /**
   * Shows provider p's models, with want.model chosen (else its default,
   * else its first) and the reasoning choice want.reasoning if the model
   * takes it.
   */
  async function load(p, want = {}) {
    const n = ++loads;
    provider = p;
    models = null;
    hint.textContent = '';
    text.value = '';
    if (!p) {
      fill(select);
      typed(true);
      renderReasoning(want.reasoning);
      return;
    }
    let list = lists.get(p.id);
    if (!list) {
      fill(select, h('option', { value: '', disabled: true, selected: true }, `Loading ${p.displayName}'s models…`));
      select.disabled = true;
      typed(false);
      renderReasoning(want.reasoning);
      try {
        list = (await get(`/providers/${seg(p.id)}/models`)).models;
      } catch (err) {
        if (n !== loads) return;
        byHand(want, `Could not list ${p.displayName}'s models (${err.message}): type a model id.`);
        return;
      }
      lists.set(p.id, list);
      if (n !== loads) return; // another provider was chosen meanwhile
    }
    if (list.length === 0) {
      byHand(want, `${p.displayName} lists no models: type a model id.`);
      return;
    }
    models = list;
    const def = p.defaultModelId;
    const options = list.map((m) => h('option', { value: m.id },
      `${m.name && m.name !== m.id ? `${m.name} (${m.id})` : m.id}${m.id === def ? ' · default' : ''}`));
    if (def && !list.some((m) => m.id === def)) options.unshift(h('option', { value: def }, `${def} · default, not listed`));
    fill(select, options, h('option', { value: '' }, 'Other model…'));
    select.disabled = false;
    choose(want.model || def || list[0].id);
    renderReasoning(want.reasoning);
  }

  /** The model is typed: the list failed or is empty (why says so). */
  function byHand(want, why) {
    fill(select);
    select.disabled = false;
    typed(true);
    text.value = want.model || provider.defaultModelId || '';
    text.placeholder = 'Model id';
    hint.textContent = why;
    renderReasoning(want.reasoning);
  }

  /** Chooses a model: from the list if it is there, else typed as another. */
  function choose(id) {
    if (id && [...select.options].some((o) => o.value === id)) {
      select.value = id;
      typed(false);
    } else {
      select.value = '';
      text.value = id || '';
      typed('other');
    }
  }

  /** The chosen model's reasoning capability, or null when the list does not say. */
  function capability() {
    if (!models || select.hidden || !select.value) return null;
    const m = models.find((x) => x.id === select.value);
    return (m && m.reasoningCapability) || null;
  }

  /** Offers the reasoning choices of the chosen model, keeping want (else the current choice) if it is one. */
  function renderReasoning(want) {
    const before = want !== undefined ? want : reasoning.value;
    const cap = capability();
    let values = ANY;
    let def = 'Model default';
    if (cap && cap.kind === 'effort') {
      const takes = cap.supportedEfforts || [];
      values = ['', ...EFFORTS.map(([e]) => e).filter((e) => takes.includes(e))];
      if (cap.defaultEffort) def = `Model default (${cap.defaultEffort})`;
    } else if (cap && cap.kind === 'toggle') {
      values = ['', 'off', 'on'];
      def = `Model default (${cap.defaultEnabled ? 'on' : 'off'})`;
    } else if (cap) {
      values = [''];
    }
    if (provider && provider.defaultReasoningEffort && values.length > 1) def = `Provider default (${provider.defaultReasoningEffort})`;
    fill(reasoning, values.map((v) => h('option', { value: v }, v ? WORDS[v] : def)));
    reasoning.disabled = values.length === 1;
    reasoning.value = values.includes(before) ? before : '';
    if (cap && values.length === 1) reasoningHint.textContent = 'This model takes no reasoning setting.';
    else if (before && !values.includes(before)) reasoningHint.textContent = `${select.value} does not take “${WORDS[before] || before}”: it reasons as it does by default.`;
    else reasoningHint.textContent = '';
  }

  select.addEventListener('change', () => {
    choose(select.value);
    if (!select.value) text.focus();
    renderReasoning();
  });

  return {
    load,
    /** The chosen model id ('' when none). */
    model: () => (select.hidden || !select.value ? text.value.trim() : select.value),
    /** The reasoning fields of POST /tasks for the choice. */
    reasoning: () => {
      const v = reasoning.value;
      if (v === 'off' || v === 'on') return { reasoningEnabled: v === 'on' };
      return v ? { reasoningEffort: v } : {};
    },
    focus: () => (select.hidden || !select.value ? text : select).focus(),
  };
}
