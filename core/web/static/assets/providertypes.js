// The provider types (core/llm Types), in the order a user is offered
// them, with the vendor's base URL a type gets when none is given and the
// API it uses unless told (anthropic has only its Messages API). A Go test
// keeps these in step with the helper's.
import { h } from './common.js';

export const PROVIDER_TYPES = [
  { type: 'openai-compatible', label: 'OpenAI-compatible', baseURL: '', backend: 'chat_completions' },
  { type: 'anthropic', label: 'Anthropic', baseURL: 'https://api.anthropic.com', backend: 'chat_completions' },
  { type: 'openai', label: 'OpenAI', baseURL: 'https://api.openai.com/v1', backend: 'responses' },
];

/** A type's entry; an unknown or missing type is openai-compatible. */
export const providerType = (t) => PROVIDER_TYPES.find((x) => x.type === t) || PROVIDER_TYPES[0];

/** The options of a type select, with selected chosen. */
export const typeOptions = (selected) =>
  PROVIDER_TYPES.map((t) => h('option', { value: t.type, selected: t.type === selected }, t.label));

/** What a provider's API is called, for its type and backend mode. */
export function apiLabel(p) {
  if (p.type === 'anthropic') return 'Messages API';
  return p.backendMode === 'responses' ? 'Responses' : 'Chat Completions';
}

/** What the base URL field's hint says for a type and the URL in it. */
export function baseURLHint(type, url) {
  const t = providerType(type);
  if (!t.baseURL) return 'The endpoint of any OpenAI-compatible service, such as https://openrouter.ai/api/v1 or http://localhost:11434/v1 (Ollama).';
  if (!url) return `Left empty: ${t.label}'s own API, ${t.baseURL}.`;
  if (trimURL(url) === t.baseURL) return `${t.label}'s own API, filled in for you: change it only to go through a gateway.`;
  return `A gateway to ${t.label}'s API (empty: ${t.label}'s own, ${t.baseURL}).`;
}

const trimURL = (u) => u.trim().replace(/\/+$/, '');

/**
 * Keeps a provider form in step with its type select: on a change, a base
 * URL that is empty or another vendor's becomes the new type's vendor
 * default (an address of one's own stays), the hint says which, and the API
 * select takes the type's default and is hidden for anthropic. The URL is
 * required of openai-compatible only (the others fall back to their
 * vendor's). Call it once with the form's elements; it also sets the hint
 * for the current type.
 */
export function followType({ type, url, hint, mode }) {
  const vendorURLs = PROVIDER_TYPES.map((t) => t.baseURL);
  const show = () => {
    const t = providerType(type.value);
    hint.textContent = baseURLHint(t.type, url.value);
    url.placeholder = t.baseURL || 'https://openrouter.ai/api/v1';
    url.required = !t.baseURL;
    if (mode) mode.closest('.field').hidden = t.type === 'anthropic';
  };
  type.addEventListener('change', () => {
    const t = providerType(type.value);
    if (vendorURLs.includes(trimURL(url.value))) url.value = t.baseURL;
    if (mode) mode.value = t.backend;
    show();
  });
  url.addEventListener('input', show);
  show();
}
