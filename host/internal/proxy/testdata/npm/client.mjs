// Drives sextant's recording proxy with the official openai client, as an
// agent's own test suite would: node client.mjs BASE_URL MODE, where MODE
// is "calls" (three calls, the third streamed), "miss" (one call no
// recording answers) or "one" (one call, its answer or its error).
// The API key is $SEXTANT_TEST_API_KEY when set. Prints what the client
// saw as one JSON document.
import OpenAI from "openai";

const [baseURL, mode] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: process.env.SEXTANT_TEST_API_KEY || "sk-not-a-real-key", maxRetries: 0 });
const task = { headers: { "X-Sextant-Task": "npm-suite" } };

async function main() {
  if (mode === "miss" || mode === "one") {
    try {
      const r = await client.chat.completions.create(
        { model: "gpt-4o-mini", messages: [{ role: "user", content: mode === "one" ? "What is 2+2?" : "never recorded" }] }, task);
      return mode === "one" ? { text: r.choices[0].message.content } : { unexpected: "answered" };
    } catch (e) {
      return { status: e.status, type: e.type, code: e.code, message: e.message, name: e.constructor.name };
    }
  }
  const out = [];
  const first = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "system", content: "Answer briefly." }, { role: "user", content: "What is 2+2?" }],
  }, task);
  out.push({ id: first.id, created: first.created, model: first.model, text: first.choices[0].message.content,
    finish: first.choices[0].finish_reason, usage: first.usage });
  const second = await client.chat.completions.create({
    model: "gpt-4o-mini", temperature: 0, max_tokens: 50,
    messages: [{ role: "user", content: [{ type: "text", text: "Name a colour." }] }],
  }, task);
  out.push({ id: second.id, created: second.created, model: second.model, text: second.choices[0].message.content,
    finish: second.choices[0].finish_reason, usage: second.usage });
  const stream = await client.chat.completions.create({
    model: "gpt-4o-mini", stream: true, stream_options: { include_usage: true },
    messages: [{ role: "user", content: "Tell me a short story." }],
  }, task);
  let text = "", id = "", finish = null, usage = null, chunks = 0, created = 0, model = "";
  for await (const chunk of stream) {
    chunks++;
    id = chunk.id; created = chunk.created; model = chunk.model;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta && c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  out.push({ id, created, model, text, finish, usage, streamed: chunks > 2 });
  return out;
}

main().then(
  (v) => { process.stdout.write(JSON.stringify(v)); },
  (e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); },
);
