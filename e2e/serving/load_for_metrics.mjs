// Sends a short mixed load (streamed and plain completions and chats, through the
// official OpenAI client) to $ORCA_URL and prints what the clients received as JSON:
// {"requests", "prompt_tokens", "completion_tokens"}.
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: `${process.env.ORCA_URL}/v1`, apiKey: 'unused', maxRetries: 0 });
let prompt = 0, completion = 0, requests = 0;

async function one(i) {
  const max_tokens = 5 + (i * 7) % 60;
  if (i % 4 === 0) {
    const r = await client.chat.completions.create({ messages: [{ role: 'user', content: `Story number ${i}` }], max_tokens, seed: i });
    prompt += r.usage.prompt_tokens; completion += r.usage.completion_tokens;
  } else if (i % 2 === 0) {
    const r = await client.completions.create({ model: 'stories260K', prompt: `Once upon a time ${i}`, max_tokens, seed: i });
    prompt += r.usage.prompt_tokens; completion += r.usage.completion_tokens;
  } else {
    const s = await client.completions.create({ model: 'stories260K', prompt: `The dog ${i}`, max_tokens, seed: i, stream: true,
                                                stream_options: { include_usage: true } });
    for await (const chunk of s) {
      if (chunk.usage) { prompt += chunk.usage.prompt_tokens; completion += chunk.usage.completion_tokens; }
    }
  }
  requests++;
}

const N = Number(process.env.LOAD_REQUESTS ?? 60);
const inflight = [];
for (let i = 0; i < N; i++) {
  inflight.push(one(i));
  if (inflight.length >= 8) await inflight.shift();
}
await Promise.all(inflight);
console.log(JSON.stringify({ requests, prompt_tokens: prompt, completion_tokens: completion }));
