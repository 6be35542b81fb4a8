// The one fake of the browser tests: an OpenAI-compatible provider that
// plays scripts of answers (tool calls, text, completion verdicts, answers
// held until the test releases them) and records every request. A script is
// chosen by a marker string found in the request (put it in the task's
// description); requests that match no script get a text answer, and the
// completion check ("Was the task fully accomplished") gets the script's
// verdict, or a successful one. When several markers match, a script with
// turns left is preferred. A title request (the product's title prompt,
// TITLE_PROMPT, which must stay core/llm's TitlePrompt) never plays a
// script: it gets llm.title (by default none, so the task keeps the start
// of its description) and is recorded in llm.titles.
import http from 'node:http';

/** A turn that calls one tool. */
export function tool(name, args) {
  return { message: { role: 'assistant', content: '', tool_calls: [{ id: `call-${name}-${Math.random().toString(16).slice(2, 8)}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }] } };
}

/** A turn that answers without a tool call (the agent then runs the completion check). */
export function text(s) {
  return { message: { role: 'assistant', content: s } };
}

/**
 * A turn streamed slowly, as a reasoning model's: its reasoning, then its
 * text, in pieces paceMs apart. With midway (a gate), the stream stops
 * after the reasoning and the first half of the text until the gate opens.
 */
export function slow(turn, { reasoning = '', paceMs = 30, midway = null } = {}) {
  return { ...turn, reasoning, paceMs, midway };
}

/**
 * A gate: gate.hold(turn) is a turn answered only once gate.release() is
 * called (or the agent hangs up); gate.reached resolves when the held
 * request has arrived.
 */
export function gate() {
  let release, reached;
  const opened = new Promise((r) => { release = r; });
  const arrived = new Promise((r) => { reached = r; });
  return {
    release: () => release(),
    reached: arrived,
    hold: (turn) => ({ ...turn, hold: opened, onArrive: reached }),
  };
}

const CHECK = 'Was the task fully accomplished';

/** core/llm.TitlePrompt: the system prompt of a title request. */
export const TITLE_PROMPT = 'You name tasks. Answer with a title for the task the user describes: at most eight words, one line, no quotes, no final full stop.';

export class ScriptedLLM {
  constructor() {
    this.scripts = new Map(); // marker -> {turns, next, verdict, bodies}
    this.requests = []; // every chat request: {body, auth}
    this.auths = []; // Authorization headers of every request
    this.waiters = [];
    // What GET /models lists: model ids, or entries as a provider lists
    // them ({id, supported_parameters, …}); modelsDelayMs holds the answer
    // back, modelsError ({status, message}) refuses it.
    this.models = ['scripted-large', 'scripted-small'];
    this.modelsDelayMs = 0;
    this.modelsError = null;
    this.title = ''; // the answer to title requests
    this.titles = []; // bodies of the title requests
  }

  async start() {
    this.server = http.createServer((req, res) => this.serve(req, res));
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${this.server.address().port}/v1`;
    return this;
  }

  async close() {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  /** Sets the answers to requests containing marker; verdict answers its completion check. */
  script(marker, turns, verdict = { success: true, summary: 'Done.' }) {
    this.scripts.set(marker, { turns, next: 0, verdict, bodies: [] });
  }

  /** The bodies of the chat requests that matched marker, in order (completion checks included). */
  bodies(marker) {
    return [...(this.scripts.get(marker)?.bodies || [])];
  }

  /** Resolves once marker has matched n requests. */
  waitFor(marker, n, timeoutMs = 60000) {
    return new Promise((resolve, reject) => {
      const check = () => this.bodies(marker).length >= n;
      if (check()) return resolve(this.bodies(marker));
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out waiting for request ${n} of ${marker} (have ${this.bodies(marker).length})`));
      }, timeoutMs);
      const waiter = () => {
        if (!check()) return false;
        clearTimeout(timer);
        resolve(this.bodies(marker));
        return true;
      };
      this.waiters.push(waiter);
    });
  }

  async serve(req, res) {
    this.auths.push(req.headers.authorization || '');
    const url = new URL(req.url, 'http://x');
    if (req.method === 'GET' && url.pathname.endsWith('/models')) {
      if (this.modelsDelayMs) await new Promise((r) => setTimeout(r, this.modelsDelayMs));
      if (this.modelsError) return json(res, this.modelsError.status, { error: { message: this.modelsError.message } });
      return json(res, 200, { object: 'list', data: this.models.map((m) => (typeof m === 'string' ? { id: m, object: 'model' } : { object: 'model', ...m })) });
    }
    const responses = url.pathname.endsWith('/responses');
    if (req.method !== 'POST' || !(responses || url.pathname.endsWith('/chat/completions'))) return json(res, 404, { error: { message: 'not found' } });
    let body = '';
    for await (const chunk of req) body += chunk;
    let streamed = false;
    try { streamed = JSON.parse(body).stream === true; } catch { /* answered as asked */ }
    if (body.includes(TITLE_PROMPT)) {
      this.titles.push(body);
      return answer(res, text(this.title), streamed, responses);
    }
    this.requests.push({ body, auth: req.headers.authorization || '' });
    let turn = null;
    let verdict = { success: true, summary: 'Done.' };
    let matched = null;
    for (const [marker, sc] of this.scripts) {
      if (!body.includes(marker)) continue;
      if (!matched || (matched.next >= matched.turns.length && sc.next < sc.turns.length)) matched = sc;
    }
    const isCheck = body.includes(CHECK);
    if (matched) {
      matched.bodies.push(body);
      verdict = matched.verdict;
      if (!isCheck && matched.next < matched.turns.length) turn = matched.turns[matched.next++];
    }
    this.waiters = this.waiters.filter((w) => !w());
    if (isCheck) turn = text(JSON.stringify(verdict));
    if (!turn) turn = text('Finished.');
    if (turn.onArrive) turn.onArrive();
    if (turn.hold) {
      const gone = new Promise((r) => res.on('close', r));
      await Promise.race([turn.hold, gone]);
      if (res.destroyed || res.writableEnded) return;
    }
    return answer(res, turn, streamed, responses);
  }
}

/** Answers a request with a turn, in the form it asked for. */
function answer(res, turn, streamed, responses) {
  const usage = { prompt_tokens: 1000, completion_tokens: 20, total_tokens: 1020 };
  if (streamed) return stream(res, turn, responses, usage);
  if (responses) return json(res, 200, responseObject(turn, usage));
  return json(res, 200, {
    id: 'scripted', object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: 'scripted-large',
    choices: [{ index: 0, message: turn.message, finish_reason: turn.message.tool_calls ? 'tool_calls' : 'stop' }],
    usage,
  });
}

/** Splits s into pieces of a few words, as a model's tokens come. */
function pieces(s) {
  return s.match(/\S+\s*|\s+/g) || [];
}

/** A turn as a Responses API answer object. */
function responseObject(turn, usage) {
  const output = [];
  if (turn.reasoning) output.push({ id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: turn.reasoning }] });
  if (turn.message.content) output.push({ id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: turn.message.content, annotations: [] }] });
  for (const c of turn.message.tool_calls || []) output.push({ id: `fc_${c.id}`, type: 'function_call', status: 'completed', call_id: c.id, name: c.function.name, arguments: c.function.arguments });
  return {
    id: 'resp_scripted', object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'completed', model: 'scripted-large', output,
    usage: { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens, total_tokens: usage.total_tokens },
  };
}

/**
 * Streams a turn as server-sent events, in the Chat Completions chunk
 * format or the Responses API's events: reasoning, then text, then tool
 * calls with their arguments in two pieces, then usage.
 */
async function stream(res, turn, responses, usage) {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  const send = (v) => res.write(`${responses ? `event: ${v.type}\n` : ''}data: ${typeof v === 'string' ? v : JSON.stringify(v)}\n\n`);
  const pace = () => new Promise((r) => setTimeout(r, turn.paceMs || 0));
  const chunk = (delta, finish = null) => ({ id: 'scripted', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: 'scripted-large', choices: [{ index: 0, delta, finish_reason: finish }] });
  const text = pieces(turn.message.content || '');
  const half = Math.ceil(text.length / 2);
  if (responses) send({ type: 'response.created', response: { id: 'resp_scripted', status: 'in_progress', output: [] } });
  else send(chunk({ role: 'assistant', content: '' }));
  for (const p of pieces(turn.reasoning || '')) {
    send(responses ? { type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', delta: p } : chunk({ reasoning_content: p }));
    await pace();
  }
  for (const [i, p] of text.entries()) {
    if (i === half && turn.midway) {
      const gone = new Promise((r) => res.on('close', r));
      if (turn.midway.onArrive) turn.midway.onArrive();
      await Promise.race([turn.midway.hold, gone]);
      if (res.destroyed) return;
    }
    send(responses ? { type: 'response.output_text.delta', item_id: 'msg_1', delta: p } : chunk({ content: p }));
    await pace();
  }
  const object = responseObject(turn, usage);
  for (const [i, c] of (turn.message.tool_calls || []).entries()) {
    const args = c.function.arguments;
    const cut = Math.floor(args.length / 2);
    if (responses) {
      send({ type: 'response.function_call_arguments.delta', item_id: `fc_${c.id}`, delta: args.slice(0, cut) });
      send({ type: 'response.output_item.done', item: object.output.find((o) => o.call_id === c.id) });
    } else {
      send(chunk({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.function.name, arguments: args.slice(0, cut) } }] }));
      send(chunk({ tool_calls: [{ index: i, function: { arguments: args.slice(cut) } }] }));
    }
  }
  if (responses) {
    send({ type: 'response.completed', response: object });
  } else {
    send(chunk({}, turn.message.tool_calls ? 'tool_calls' : 'stop'));
    send({ id: 'scripted', object: 'chat.completion.chunk', choices: [], usage });
    send('[DONE]');
  }
  res.end();
}

function json(res, status, v) {
  const b = JSON.stringify(v);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b) });
  res.end(b);
}
