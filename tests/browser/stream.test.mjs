// The model's answer streams into the agent window as it comes, from a
// provider that streams in the Chat Completions format and from one that
// streams in the Responses API's: the reasoning and the first half of the
// text show while the provider still holds the rest; then the answer is
// one llm_response in the activity, and the live box is gone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gate, slow, text } from './lib/llm.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('stream');

for (const backendMode of ['chat_completions', 'responses']) {
  test(`a ${backendMode} provider's streamed answer shows live in the agent window`, { timeout: 120000 }, async () => {
    const { helper, llm } = env;
    const providerName = backendMode === 'responses' ? 'Scripted Responses' : 'Scripted';
    if (backendMode === 'responses') {
      await helper.api('POST', '/api/v1/providers', { displayName: providerName, baseURL: llm.url, apiKey: 'sk-scripted-test', backendMode, defaultModelId: 'scripted-large' });
    }
    const M = `[[stream-${backendMode}]]`;
    const midway = gate();
    llm.script(M, [
      slow(text('The report is ready in the outbox folder.'), { reasoning: 'The user wants the report. It looks finished.', midway: midway.hold({}) }),
    ], { success: true, summary: 'The report is ready.' });
    const task = await helper.api('POST', '/api/v1/tasks', { description: `Check the report ${M}`, providerName });
    const page = await env.page(`/tasks/${task.id}`);

    await midway.reached;
    // Mid-answer: the reasoning and the first half of the text are shown.
    await page.waitForFunction(() => document.getElementById('live-text').textContent === 'The report is ready ', null, { timeout: 30000 });
    assert.equal(await page.textContent('#live-reasoning'), 'The user wants the report. It looks finished.');
    assert.equal(await page.locator('#live-answer').isVisible(), true);
    assert.match(await page.textContent('#live-answer-step'), /^Step \d+: answering/);
    assert.equal(await page.locator('#activity li[data-type="llm_response"]').count(), 0, 'no llm_response before the answer ends');

    // The request was a streamed one in the provider's format.
    const [first] = llm.bodies(M);
    const req = JSON.parse(first);
    assert.equal(req.stream, true);
    if (backendMode === 'responses') {
      assert.ok(Array.isArray(req.input) && !req.messages, 'a Responses request has input items');
      assert.equal(req.store, false);
    } else {
      assert.deepEqual(req.stream_options, { include_usage: true });
    }

    midway.release();
    await helper.waitTask(task.id, 'completion', (t) => t.status === 'completed');
    await page.waitForSelector('#activity li[data-type="llm_response"]');
    await page.waitForSelector('#live-answer', { state: 'hidden' });
    const row = page.locator('#activity li[data-type="llm_response"]').first();
    assert.equal(await row.locator('.summary').textContent(), 'The report is ready in the outbox folder.');
    // The reasoning stays with the answer, under its details.
    assert.match(await row.locator('pre').textContent(), /The user wants the report\. It looks finished\./);
    await env.done(page);
  });
}
