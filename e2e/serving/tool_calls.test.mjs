// Tool calling through the official OpenAI client (npm `openai`) against `orca serve` on
// stories260K with a real chat template, Mistral v0.3's (tools rendered as
// [AVAILABLE_TOOLS], calls written [TOOL_CALLS][...], results [TOOL_RESULTS], call ids of
// 9 characters). stories260K knows neither tools nor JSON: tool_choice "required" and
// named functions hold because the guide forces them; tool_choice "auto" is driven into
// the template's format with guided_regex, so the Mistral parser reads the model's text.
// Tool definitions cost stories260K's 512-token vocabulary many tokens: the model is
// served from a copy whose context is 2,048 positions (RoPE extends; quality is moot).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, skipOrFail, sourceDir, storiesDir, missingPrerequisite } from './orca_server.mjs';
import { referencePython, validateWithJsonschema } from './references.mjs';

const templatePath = path.join(sourceDir, 'tests/engine/chat/testdata/mistral_7b_instruct_v03.jinja');
let server;
let client;
let modelDir;

before(async () => {
  if (missingPrerequisite()) return;
  modelDir = mkdtempSync(path.join(os.tmpdir(), 'orca-stories-2k-'));
  cpSync(storiesDir, modelDir, { recursive: true });
  const config = JSON.parse(readFileSync(path.join(modelDir, 'config.json'), 'utf8'));
  writeFileSync(path.join(modelDir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 2048 }));
  server = await startServer(['--chat-template', templatePath], { modelDir });
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'orca serve exits cleanly on SIGTERM');
  if (modelDir) rmSync(modelDir, { recursive: true, force: true });
});

// Strict function tools (what the client's parse helpers insist on).
const weather = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Current weather in a city', strict: true,
    parameters: {
      type: 'object', additionalProperties: false, required: ['city', 'unit'],
      properties: { city: { type: 'string', minLength: 1, maxLength: 12 }, unit: { enum: ['celsius', 'fahrenheit'] } },
    },
  },
};
const tools = [
  weather,
  { type: 'function', function: { name: 'add', strict: true, parameters: { type: 'object', additionalProperties: false, required: ['a', 'b'], properties: { a: { type: 'integer', minimum: -100, maximum: 100 }, b: { type: 'integer', minimum: 0, maximum: 9 } } } } },
  { type: 'function', function: { name: 'set_alarm', strict: true, parameters: { type: 'object', additionalProperties: false, required: ['time', 'days'], properties: { time: { type: 'string', format: 'time' }, days: { type: 'array', items: { enum: ['mon', 'tue', 'wed'] }, minItems: 1, maxItems: 3 } } } } },
  { type: 'function', function: { name: 'stop', strict: true, parameters: { type: 'object', additionalProperties: false, properties: {} } } },
];
const schemaOf = (name) => tools.find((t) => t.function.name === name).function.parameters;
const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];

function checkCalls(t, calls) {
  const pairs = calls.map((c) => [schemaOf(c.function.name), c.function.arguments]);
  const errors = validateWithJsonschema(t, pairs);
  if (errors) assert.deepEqual(errors, pairs.map(() => null), JSON.stringify(calls));
  for (const c of calls) {
    assert.equal(c.type, 'function');
    assert.match(c.id, /^[A-Za-z0-9]{9}$/, 'Mistral templates need 9-character call ids');
    // The client's parse helpers (parse, stream) fill parsed_arguments; create does not.
    if ('parsed_arguments' in c.function) assert.deepEqual(c.function.parsed_arguments, JSON.parse(c.function.arguments));
  }
}

test('tool_choice "required": the client parses calls whose arguments validate', async (t) => {
  if (skipOrFail(t)) return;
  const names = new Set();
  for (let seed = 0; seed < 12; ++seed) {
    const r = await client.chat.completions.parse({
      model: 'stories260K', messages: ask, tools, tool_choice: 'required', parallel_tool_calls: false,
      temperature: 1, seed, max_tokens: 200,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.equal(c.message.content, null);
    assert.equal(c.message.tool_calls.length, 1);
    checkCalls(t, c.message.tool_calls);
    names.add(c.message.tool_calls[0].function.name);
  }
  assert.ok(names.size >= 2, `the model chose among the tools: ${[...names]}`);
});

test('a named function streams its arguments as deltas; the client assembles and parses them', async (t) => {
  if (skipOrFail(t)) return;
  for (const name of ['get_weather', 'add', 'set_alarm', 'stop']) {
    const stream = client.chat.completions.stream({
      model: 'stories260K', messages: ask, tools, tool_choice: { type: 'function', function: { name } },
      temperature: 0.8, seed: 7, max_tokens: 200,
    });
    let deltas = 0;
    stream.on('tool_calls.function.arguments.delta', () => { deltas++; });
    const final = await stream.finalChatCompletion();
    const c = final.choices[0];
    assert.equal(c.finish_reason, 'stop', 'a named function ends with "stop", as OpenAI\'s');
    assert.equal(c.message.tool_calls.length, 1);
    assert.equal(c.message.tool_calls[0].function.name, name);
    checkCalls(t, c.message.tool_calls);
    if (name !== 'stop') assert.ok(deltas > 3, `${name}: arguments came in ${deltas} deltas`);
  }
});

test('runTools calls the function with parsed arguments', async (t) => {
  if (skipOrFail(t)) return;
  const got = [];
  const runner = client.chat.completions.runTools({
    model: 'stories260K', messages: ask, tool_choice: { type: 'function', function: { name: 'get_weather' } },
    temperature: 0.5, seed: 3, max_tokens: 200,
    tools: [{ type: 'function', function: { ...weather.function, parse: JSON.parse, function: (args) => { got.push(args); return 'sunny, 21 degrees'; } } }],
  });
  await runner.done();
  assert.equal(got.length, 1);
  assert.equal(typeof got[0].city, 'string');
  assert.ok(['celsius', 'fahrenheit'].includes(got[0].unit));
  const toolMsg = runner.messages.find((m) => m.role === 'tool');
  assert.equal(toolMsg.content, 'sunny, 21 degrees');
});

// Renders `context` with the template through Jinja2 as transformers does
// (tests/engine/chat/jinja_reference.py); null when python3-jinja2 is missing.
function renderWithJinja2(t, context) {
  const python = referencePython(t, 'jinja2', 'python3-jinja2');
  if (!python) return null;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orca-tools-'));
  try {
    writeFileSync(path.join(dir, 'cases.json'), JSON.stringify([{ template: readFileSync(templatePath, 'utf8'), context }]));
    execFileSync(python, [path.join(sourceDir, 'tests/engine/chat/jinja_reference.py'),
                          path.join(dir, 'cases.json'), path.join(dir, 'out.json')]);
    const [res] = JSON.parse(readFileSync(path.join(dir, 'out.json'), 'utf8'));
    assert.ok(res.ok, res.error);
    return res.output;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a round trip: call, tool result, answer — the history rendered as Jinja2 renders it', async (t) => {
  if (skipOrFail(t)) return;
  const first = await client.chat.completions.create({
    model: 'stories260K', messages: ask, tools, tool_choice: 'required', parallel_tool_calls: false,
    temperature: 0.7, seed: 11, max_tokens: 200,
  });
  const call = first.choices[0].message.tool_calls[0];
  const history = [...ask, first.choices[0].message,
                   { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21, "sky": "clear"}' }];
  const second = await client.chat.completions.create({
    model: 'stories260K', messages: history, tools, tool_choice: 'none', temperature: 0, max_tokens: 24,
  });
  const answer = second.choices[0];
  assert.equal(typeof answer.message.content, 'string');
  assert.ok(answer.message.content.length > 0);
  assert.equal(answer.message.tool_calls, undefined);
  assert.ok(['stop', 'length'].includes(answer.finish_reason));

  // The prompt of the second turn is the template's rendering of the history, with the
  // call's arguments as an object (as transformers and vLLM pass them).
  const post = async (p, body) => (await fetch(`${server.baseURL}${p}`, { method: 'POST', body: JSON.stringify(body) })).json();
  const ours = await post('/tokenize', { messages: history, tools });
  assert.equal(ours.count, second.usage.prompt_tokens);
  const asObjects = history.map((m) => (m.tool_calls ? { ...m, content: m.content ?? '', tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } })) } : m));
  const text = renderWithJinja2(t, { messages: asObjects, tools, add_generation_prompt: true, bos_token: '<s>', eos_token: '</s>' });
  if (text === null) return;
  assert.ok(text.includes(`[TOOL_CALLS] [{`) && text.includes(`"name": "${call.function.name}"`), text);
  assert.ok(text.includes(`"call_id": "${call.id}"`), text);
  const reference = await post('/tokenize', { prompt: text, add_special_tokens: false });
  assert.deepEqual(ours.tokens, reference.tokens);
});

test('tool_choice "auto": the Mistral parser turns the model\'s [TOOL_CALLS] text into calls, their arguments streamed as written', async (t) => {
  if (skipOrFail(t)) return;
  // The guide makes stories260K write some prose, then two calls in the template's format.
  const guided_regex = 'Sure[a-z ]{0,12}\\.\\[TOOL_CALLS\\]\\[\\{"name": "get_weather", "arguments": \\{"city": "[a-z]{1,8}", "unit": "celsius"\\}\\}, \\{"name": "add", "arguments": \\{"a": [1-9], "b": [0-9]\\}\\}\\]';
  const body = { model: 'stories260K', messages: ask, tools, temperature: 0.8, seed: 5, max_tokens: 200, guided_regex };
  const plain = await client.chat.completions.create(body);
  const c = plain.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.match(c.message.content, /^Sure[a-z ]*\.$/);
  assert.deepEqual(c.message.tool_calls.map((x) => x.function.name), ['get_weather', 'add']);
  checkCalls(t, c.message.tool_calls);

  const stream = client.chat.completions.stream({ ...body });
  let content = '';
  const argumentDeltas = [0, 0];
  let firstCallDone = -1;
  stream.on('content.delta', (e) => { content += e.delta; });
  stream.on('tool_calls.function.arguments.delta', (e) => {
    argumentDeltas[e.index]++;
    if (e.index === 1 && firstCallDone < 0) firstCallDone = argumentDeltas[0];
  });
  const final = await stream.finalChatCompletion();
  assert.equal(content, c.message.content, 'streamed content stops where the calls begin');
  // Each call's arguments stream as they are written, as OpenAI sends them (not one
  // delta per call once its JSON is complete).
  assert.ok(argumentDeltas[0] > 3 && argumentDeltas[1] > 3, `argument deltas per call: ${argumentDeltas}`);
  assert.equal(firstCallDone, argumentDeltas[0], 'the second call starts after the first is complete');
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(final.choices[0].message.tool_calls.map((x) => [x.function.name, x.function.arguments]),
                   c.message.tool_calls.map((x) => [x.function.name, x.function.arguments]));
});

test('bad tool requests are 400s naming the field', async (t) => {
  if (skipOrFail(t)) return;
  const cases = [
    [{ tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name'],
    [{ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { type: 'string', contentEncoding: 'base64' } } } } }], tool_choice: 'required' }, 'tools[0].function.parameters'],
    [{ tools, tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice'],
    [{ messages: [...ask, { role: 'assistant', tool_calls: [{ id: 'abcdefghi', type: 'function', function: { name: 'f', arguments: '{not json' } }] }] }, 'messages[1].tool_calls[0].function.arguments'],
  ];
  for (const [extra, param] of cases) {
    await assert.rejects(client.chat.completions.create({ model: 'stories260K', messages: ask, max_tokens: 4, ...extra }),
                         (e) => e.status === 400 && e.param === param, JSON.stringify(extra));
  }
});
